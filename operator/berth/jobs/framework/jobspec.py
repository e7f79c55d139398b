"""A ``batch/v1`` JobSpec, read alike wherever it is embedded: a Job's, a JobSet's jobs'.

``pod_count`` is the pods it runs at once (``parallelism``, default 1, bounded by ``completions``);
``spec_problems`` what keeps it from making a pod set. Used by ``jobs.batchjob`` and
``jobs.jobset`` (and, through the JobSet, ``jobs.trainjob``).
"""

from __future__ import annotations

from typing import Any

from berth.api import errors


def pod_count(spec: dict[str, Any]) -> int:
    """Pods a JobSpec runs at once: ``parallelism`` (default 1), bounded by ``completions``."""
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    if completions is not None:
        count = min(count, int(completions))
    return count


def spec_problems(spec: dict[str, Any]) -> list[errors.FieldError]:
    """What keeps a JobSpec from making a pod set: bad sizes, no template (paths from spec)."""
    problems: list[errors.FieldError] = []
    for field in ("parallelism", "completions"):
        value = spec.get(field)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            problems.append(errors.FieldError(f"spec.{field}", "must be a non-negative integer"))
    if "template" not in spec:
        problems.append(errors.FieldError("spec.template", "required; give the Job a pod template"))
    return problems
