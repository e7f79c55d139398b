"""Checks a simulation's events against a scenario's ``.expect.yaml``.

The format is described in shared/scenarios/README.md.
``check(events, expect)`` returns a list of human-readable mismatches (empty when the run matches).
Keys in an expectation name a Workload (``ns/name``) or, in Job scenarios, the Job, matched
through the ``job`` field of the events.
"""

from __future__ import annotations

from typing import Any

_TOLERANCE = 0.0005  # "at must match to a millisecond"


class _Run:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = [e for e in events if e["event"] != "Summary"]
        summaries = [e for e in events if e["event"] == "Summary"]
        self.summary = summaries[-1] if summaries else {}
        self.job_of: dict[str, str] = {}
        for e in self.events:
            if "job" in e:
                self.job_of[e["workload"]] = e["job"]

    def matches(self, event: dict[str, Any], key: str) -> bool:
        return event["workload"] == key or event.get("job") == key

    def named(self, key: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind and self.matches(e, key)]

    def alias(self, workload: str) -> set[str]:
        out = {workload}
        if workload in self.job_of:
            out.add(self.job_of[workload])
        return out


def _time_ok(spec: dict[str, Any], t: float) -> bool:
    if "at" in spec and abs(float(spec["at"]) - t) > _TOLERANCE:
        return False
    if "after" in spec and t < float(spec["after"]) - _TOLERANCE:
        return False
    return not ("before" in spec and t > float(spec["before"]) + _TOLERANCE)


def _admission_problems(key: str, spec: dict[str, Any], event: dict[str, Any]) -> list[str]:
    out = []
    if not _time_ok(spec, event["t"]):
        out.append(f"{key}: admitted at {event['t']}, want {_when(spec)}")
    if "clusterQueue" in spec and event["clusterQueue"] != spec["clusterQueue"]:
        out.append(f"{key}: admitted in {event['clusterQueue']}, want {spec['clusterQueue']}")
    if "flavors" in spec:
        union: dict[str, str] = {}
        for ps in event["podSets"]:
            union.update(ps["flavors"])
        if union != spec["flavors"]:
            out.append(f"{key}: flavors {union}, want {spec['flavors']}")
    for name, want in (spec.get("podSets") or {}).items():
        out += _pod_set_problems(key, name, want, event)
    return out


def _pod_set_problems(
    key: str, name: str, want: dict[str, Any], event: dict[str, Any]
) -> list[str]:
    got = next((ps for ps in event["podSets"] if ps["name"] == name), None)
    if got is None:
        return [f"{key}: no pod set {name} in the admission"]
    out = []
    if "count" in want and got["count"] != want["count"]:
        out.append(f"{key}: pod set {name} count {got['count']}, want {want['count']}")
    if "flavors" in want and got["flavors"] != want["flavors"]:
        out.append(f"{key}: pod set {name} flavors {got['flavors']}, want {want['flavors']}")
    placed = got.get("topologyAssignment")
    if "topologyAssignment" in want and placed != want["topologyAssignment"]:
        out.append(
            f"{key}: pod set {name} topology assignment {placed}, want {want['topologyAssignment']}"
        )
    return out


def _when(spec: dict[str, Any]) -> str:
    parts = [f"{k} {spec[k]}" for k in ("at", "after", "before") if k in spec]
    return ", ".join(parts) or "any time"


def _summary_keys(run: _Run, section: str) -> set[str]:
    out: set[str] = set()
    for item in run.summary.get(section, []):
        workload = item["workload"] if isinstance(item, dict) else item
        out |= run.alias(workload)
        if isinstance(item, dict) and "job" in item:
            out.add(item["job"])
    return out


def check(events: list[dict[str, Any]], expect: dict[str, Any]) -> list[str]:
    """Return every way ``events`` differ from ``expect``, in the README's order of keys."""
    run = _Run(events)
    problems: list[str] = []
    if not run.summary:
        problems.append("the run did not end with a Summary line")
    problems += _admitted_problems(run, expect)
    problems += _preempted_problems(run, expect)
    problems += _evicted_problems(run, expect)
    problems += _final_list_problems(run, expect)
    problems += _final_pending_problems(run, expect)
    problems += _weighted_share_problems(run, expect)
    return problems


def _admitted_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``admitted``, ``admissions``, ``admission_count`` and ``never_admitted``."""
    problems: list[str] = []
    for key, spec in (expect.get("admitted") or {}).items():
        got = run.named(key, "Admitted")
        if not got:
            problems.append(f"{key}: never admitted, want admitted ({_when(spec or {})})")
            continue
        problems += _admission_problems(key, spec or {}, got[0])
    for key, specs in (expect.get("admissions") or {}).items():
        got = run.named(key, "Admitted")
        if len(got) < len(specs):
            problems.append(f"{key}: {len(got)} admissions, want at least {len(specs)}")
        for spec, event in zip(specs, got, strict=False):
            problems += _admission_problems(key, spec, event)
    for key, count in (expect.get("admission_count") or {}).items():
        times = len(run.named(key, "Admitted"))
        if times != count:
            problems.append(f"{key}: admitted {times} times, want exactly {count}")
    for key in expect.get("never_admitted") or []:
        if run.named(key, "Admitted"):
            problems.append(f"{key}: admitted at {run.named(key, 'Admitted')[0]['t']}, want never")
    return problems


def _preempted_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``preempted`` and ``not_preempted``."""
    problems: list[str] = []
    for spec in expect.get("preempted") or []:
        key = spec["workload"]
        found = [
            e
            for e in run.named(key, "Preempted")
            if e["reason"] == spec["reason"]
            and _time_ok(spec, e["t"])
            and ("by" not in spec or spec["by"] in run.alias(e["by"]))
        ]
        if not found:
            seen = [(e["t"], e["reason"], e["by"]) for e in run.named(key, "Preempted")]
            problems.append(f"{key}: no Preempted event like {spec}; saw {seen}")
    problems.extend(
        f"{key}: preempted, want not preempted"
        for key in expect.get("not_preempted") or []
        if run.named(key, "Preempted")
    )
    return problems


def _evicted_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``evicted``, ``not_evicted`` and ``deactivated``."""
    problems: list[str] = []
    for spec in expect.get("evicted") or []:
        key = spec["workload"]
        with_reason = [e for e in run.named(key, "Evicted") if e["reason"] == spec["reason"]]
        if "count" in spec and len(with_reason) != spec["count"]:
            problems.append(
                f"{key}: evicted {len(with_reason)} times for {spec['reason']}, "
                f"want {spec['count']}"
            )
        if spec.get("count") != 0 and not any(_time_ok(spec, e["t"]) for e in with_reason):
            seen = [(e["t"], e["reason"]) for e in run.named(key, "Evicted")]
            problems.append(f"{key}: no Evicted event like {spec}; saw {seen}")
    problems.extend(
        f"{key}: evicted, want not evicted"
        for key in expect.get("not_evicted") or []
        if run.named(key, "Evicted")
    )
    for item in expect.get("deactivated") or []:
        spec = item if isinstance(item, dict) else {"workload": item}
        key = spec["workload"]
        if not any(_time_ok(spec, e["t"]) for e in run.named(key, "Deactivated")):
            problems.append(f"{key}: no Deactivated event like {spec}")
    return problems


def _final_list_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``final_pending``, ``final_running`` and ``final_finished`` against the summary."""
    problems: list[str] = []
    for section, name in (
        ("pending", "final_pending"),
        ("running", "final_running"),
        ("finished", "final_finished"),
    ):
        have = _summary_keys(run, section)
        problems.extend(
            f"{key}: not in the summary's {section} list"
            for key in expect.get(name) or []
            if key not in have
        )
    return problems


def _final_pending_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``pending_reason`` against the summary's pending list."""
    problems: list[str] = []
    pending_by_key: dict[str, dict[str, Any]] = {}
    for item in run.summary.get("pending", []):
        for alias in run.alias(item["workload"]) | ({item["job"]} if "job" in item else set()):
            pending_by_key[alias] = item
    for key, reason in (expect.get("pending_reason") or {}).items():
        item = pending_by_key.get(key)
        if item is None:
            problems.append(f"{key}: not pending at the end, want pending with {reason}")
        elif item["reason"] != reason:
            problems.append(
                f"{key}: pending with {item['reason']} ({item['message']}), want {reason}"
            )
    return problems


def _weighted_share_problems(run: _Run, expect: dict[str, Any]) -> list[str]:
    """Check ``weighted_share`` against the summary's ClusterQueues."""
    problems: list[str] = []
    for cq, share in (expect.get("weighted_share") or {}).items():
        got = run.summary.get("clusterQueues", {}).get(cq, {}).get("weightedShare")
        if got is None or abs(got - share) > 1:
            problems.append(f"{cq}: weightedShare {got}, want {share} (+-1)")
    return problems
