"""Merge patches, the way Berth writes a job, applied as the API server applies them.

``merge_patch`` applies a JSON merge patch (RFC 7386) to a body: the simulator's view of a write,
the webhooks' view of a suspension, the test fake's store. ``strategic_merge_patch`` applies a
Kubernetes strategic merge patch as far as Berth sends or reads one: a TrainJob's runtime patches
over its runtime's JobSet, a pod group member's patch in the test fake. ``suspended_spec`` is a
job's spec once its kind's stop patch is applied.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from berth.api.bodies import Body
from berth.jobs.framework.protocol import Integration


def merge_patch(target: Any, patch: Any) -> Any:  # noqa: ANN401 - JSON values
    """``target`` with the JSON merge patch ``patch`` applied (RFC 7386), as a new value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def suspended_spec(integration: Integration, job: Body) -> Body:
    """The job's spec once suspended, wherever its kind keeps the switch (the webhook writes it)."""
    spec: Body = merge_patch(job, integration.stop_patch(job)).get("spec") or {}
    return spec


def strategic_merge_patch(
    target: Any,  # noqa: ANN401 - JSON values
    patch: Any,  # noqa: ANN401 - JSON values
    merge_keys: Mapping[str, str],
    *,
    drop_empty_lists: bool = False,
) -> Any:  # noqa: ANN401 - JSON values
    """``target`` with the strategic merge patch ``patch`` applied, as a new value.

    Maps merge as in a merge patch (None removes a field); a list under a key of ``merge_keys``
    merges item by item on that key (``$patch: delete`` removes one); any other list is
    replaced; ``$deleteFromPrimitiveList/<field>`` removes values from a list of strings.
    ``drop_empty_lists``: a list left empty goes, as the API server stores a Pod.
    """
    return _strategic(target, patch, None, merge_keys, drop_empty_lists)


def _strategic(
    target: Any,  # noqa: ANN401 - JSON values
    patch: Any,  # noqa: ANN401 - JSON values
    key: str | None,
    merge_keys: Mapping[str, str],
    drop: bool,
) -> Any:  # noqa: ANN401 - JSON values
    if isinstance(patch, dict):
        out = dict(target) if isinstance(target, dict) else {}
        for name, value in patch.items():
            field = name.removeprefix("$deleteFromPrimitiveList/")
            if field != name:
                out[field] = [v for v in out.get(field) or [] if v not in value]
            elif value is None:
                out.pop(name, None)
            else:
                out[name] = _strategic(out.get(name), value, name, merge_keys, drop)
            if drop and out.get(field) == []:
                del out[field]
        return out
    merge_key = merge_keys.get(key or "")
    if merge_key and isinstance(patch, list) and isinstance(target, list | None):
        return _by_key(target or [], patch, merge_key, merge_keys, drop)
    return copy.deepcopy(patch)


def _by_key(
    target: list[Any],
    patch: list[Any],
    merge_key: str,
    merge_keys: Mapping[str, str],
    drop: bool,
) -> list[Any]:
    """A list merged item by item on ``merge_key``; ``$patch: delete`` removes an item."""
    merged = [copy.deepcopy(t) for t in target]
    for item in patch:
        ident = item.get(merge_key) if isinstance(item, dict) else None
        at = next(
            (i for i, t in enumerate(merged) if isinstance(t, dict) and t.get(merge_key) == ident),
            None,
        )
        if isinstance(item, dict) and item.get("$patch") == "delete":
            if at is not None:
                del merged[at]
        elif at is None:
            merged.append(copy.deepcopy(item))
        else:
            merged[at] = _strategic(merged[at], item, None, merge_keys, drop)
    return merged
