"""Pods as topology-aware admission sees them: others' usage per node, and pods placed by Berth.

Every Pod event passes through ``PlacedPods.take``:

- A pod bound to a node (``spec.nodeName``) and not finished, without ``berth.dev/tas``, is
  someone else's usage there (DaemonSets, pods of other schedulers, Berth's pods that are not
  placed by topology): its requests are summed per node and handed to the cache, which takes them
  off the room of that node's domain (Kueue's ``pod_usage_controller`` and non-TAS pod cache).
- A pod with ``berth.dev/tas`` belongs to a pod set Berth placed by topology; it is kept by the
  uid of the job that placed it, and a pod waiting at the topology gate asks the ungater
  (``operator.ungater``) to pin it to its domain.

Requests are read once per pod (they do not change while it lives). Called by ``world.World``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import pydantic

from berth.api import bodies, pod, quantity, topology
from berth.api.bodies import Body
from berth.core import resources
from berth.jobs.framework import pod_placement
from berth.state import cache as cache_mod

log = logging.getLogger(__name__)

_DONE = frozenset({"Succeeded", "Failed"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Bound:
    node: str
    requests: resources.Requests


class PlacedPods:
    """Others' usage per node (fed to the cache), and Berth's placed pods by their job."""

    def __init__(self, cache: cache_mod.Cache) -> None:
        self.cache = cache
        self._bound: dict[str, _Bound] = {}
        """Pods counted as others' usage, by uid."""
        self._per_node: dict[str, resources.Requests] = {}
        self.by_job: dict[str, dict[str, Body]] = {}
        """Placed pods by the uid of the job that placed them, then by namespace/name."""
        self._gated: dict[str, set[str]] = {}
        """Of those, the ones waiting at the topology gate (a pod event asks in O(1))."""

    def take(
        self, body: Body, *, deleted: bool, known: Callable[[str], bool] = lambda _uid: True
    ) -> tuple[str | None, bool]:
        """Take in one pod event.

        ``known`` tells whether the job uid ``berth.dev/tas`` names is the pod's own job: a pod
        whose label names another (a label anyone may write) is someone else's usage like any
        other pod, so a forged label can neither hide a pod's requests nor take a job's place.

        Returns the uid of the job whose placed pods changed (the ungater looks at it), and
        whether room was freed on a topology-aware node (pending workloads try again).
        """
        meta = bodies.meta(body)
        labels = meta.get("labels") or {}
        placed_by = labels.get(topology.PLACED_LABEL)
        if placed_by is not None and not known(str(placed_by)):
            placed_by = None
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        status = body.get("status") if isinstance(body.get("status"), dict) else {}
        done = deleted or (status or {}).get("phase") in _DONE
        freed = self._count(uid, body, gone=done or placed_by is not None)
        if placed_by is None:
            return None, freed
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        pods = self.by_job.setdefault(str(placed_by), {})
        gated = self._gated.setdefault(str(placed_by), set())
        if deleted:
            pods.pop(key, None)
        else:
            pods[key] = body
        if not deleted and pod_placement.is_gated(body):
            gated.add(key)
        else:
            gated.discard(key)
        if not gated:
            del self._gated[str(placed_by)]
        if not pods:
            del self.by_job[str(placed_by)]
        return str(placed_by), freed

    def waiting(self, job_uid: str) -> bool:
        """Tell whether some placed pod of this job waits at the topology gate."""
        return job_uid in self._gated

    def _count(self, uid: str, body: Body, *, gone: bool) -> bool:
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        node = str((spec or {}).get("nodeName") or "")
        known = self._bound.get(uid)
        if gone or not node:
            if known is None:
                return False
            del self._bound[uid]
            return self._move(known.node, known.requests, -1)
        if known is not None:
            return False  # bound once; a pod never moves to another node
        requests = _requests(spec or {})
        self._bound[uid] = _Bound(node, requests)
        self._move(node, requests, 1)
        return False  # taking room frees none

    def _move(self, node: str, requests: resources.Requests, sign: int) -> bool:
        total = self._per_node.setdefault(node, {})
        for res, amount in requests.items():
            total[res] = total.get(res, 0) + sign * amount
            if not total[res]:
                del total[res]
        if not total:
            del self._per_node[node]
        return self.cache.set_other_usage(node, dict(total))


def _requests(spec: Body) -> resources.Requests:
    """One pod's requests as Kubernetes counts them, plus the pod itself."""
    try:
        requests = dict(pod.PodSpec.model_validate(spec).pod_requests())
    except pydantic.ValidationError as e:  # a pod the API server took: count what can be read
        log.warning("pod requests unreadable, counted as one pod: %s", e)
        requests = {}
    requests[quantity.PODS] = requests.get(quantity.PODS, 0) + 1
    return requests
