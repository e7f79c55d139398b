"""Printing a simulation: JSON lines (the stable contract), a timeline table, per-queue figures.

Called by ``berth simulate``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from berth.api import duration, quantity
from berth.sim import engine, workloads


def jsonl(lines: list[dict[str, Any]]) -> str:
    """One JSON object per line, keys in event order."""
    return "".join(json.dumps(line) + "\n" for line in lines)


_MAX_DETAILS = 160


def _details(line: dict[str, Any], jobs: dict[str, str]) -> str:
    text = _describe(line, jobs)
    return text if len(text) <= _MAX_DETAILS else text[: _MAX_DETAILS - 3] + "..."


def _describe(line: dict[str, Any], jobs: dict[str, str]) -> str:
    event = line["event"]
    if event == "Admitted":
        flavors = sorted({f for ps in line["podSets"] for f in ps["flavors"].values()})
        counts = ", ".join(f"{ps['name']}x{ps['count']}" for ps in line["podSets"])
        return f"{line['clusterQueue']} [{counts}] on {', '.join(flavors) or '-'}"
    if event == "Preempted":
        return f"{line['reason']} by {jobs.get(line['by'], line['by'])}"
    if event == "Pending":
        return f"{line['reason']}: {line['message']}"
    return str(line.get("reason", ""))


def table(lines: list[dict[str, Any]]) -> str:
    """A human timeline: time, event, workload (or job) and what happened, cut to a line."""
    rows = [("TIME", "EVENT", "WORKLOAD", "DETAILS")]
    summary = None
    jobs = {line["workload"]: line["job"] for line in lines if "job" in line}
    for line in lines:
        if line["event"] == "Summary":
            summary = line
            continue
        who = line.get("job") or line["workload"]
        rows.append((duration.format(line["t"]), line["event"], who, _details(line, jobs)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    out = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip()
        for r in rows
    ]
    if summary is not None:
        out.append("")
        out.append(
            f"at {duration.format(summary['t'])}: {len(summary['running'])} running, "
            f"{len(summary['pending'])} pending, {len(summary['finished'])} finished"
        )
        for entry in summary["pending"]:
            who = entry.get("job") or entry["workload"]
            out.append(f"  pending {who}: {entry['reason']}: {entry['message']}")
    return "\n".join(out) + "\n"


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
    return ordered[rank]


def summary(sim: engine.Simulator) -> str:
    """Per-ClusterQueue figures: admissions, finishes, wait percentiles, use of nominal quota.

    START ERROR: in a Backfill queue, the mean distance between an admission's start and the
    start first estimated for it, over the admissions that had an estimate.
    """
    end = sim.now
    rows = [
        (
            "CLUSTERQUEUE",
            "ADMITTED",
            "FINISHED",
            "PENDING",
            "WAIT P50",
            "WAIT P95",
            "WAIT MAX",
            "START ERROR",
            "UTILISATION OF NOMINAL",
        )
    ]
    snap = sim.cache.snapshot
    for name in sorted(snap.cluster_queues):
        waits: list[float] = []
        errors: list[float] = []
        admitted = finished = pending = 0
        for wl in sim.workloads.values():
            if sim.cache.cluster_queue_for(wl.info) != name:
                continue
            waits.extend(wl.waited)
            errors.extend(abs(e) for e in wl.start_errors)
            admitted += len(wl.waited)
            finished += wl.state == workloads.Phase.FINISHED
            pending += wl.state == workloads.Phase.PENDING
        node = snap.cq_nodes[name]
        parts = []
        for fr in sorted(node.quotas):
            nominal = node.quotas[fr].nominal
            if nominal <= 0 or end <= 0:
                continue
            used = sim.usage_tracker.used_time(name, fr, end)
            parts.append(
                f"{fr.flavor}/{fr.resource} {100 * used / (nominal * end):.1f}% of "
                f"{quantity.format(fr.resource, nominal)}"
            )
        rows.append(
            (
                name,
                str(admitted),
                str(finished),
                str(pending),
                duration.format(_percentile(waits, 50)),
                duration.format(_percentile(waits, 95)),
                duration.format(max(waits, default=0.0)),
                f"{duration.format(sum(errors) / len(errors))} (n={len(errors)})"
                if errors
                else "-",
                "; ".join(parts) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(r[:-1])) + "  " + r[-1]
        for r in rows
    ]
    return "\n".join(lines) + f"\n\nvirtual time: {duration.format(end)}\n"
