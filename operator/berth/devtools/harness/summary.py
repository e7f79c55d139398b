"""The harness's figures, computed from what the runner recorded; no I/O.

Definitions, following Kueue's recorder (``runner/recorder``) where it has one:

- *wall*: from the start of arrivals to the last Workload seen finished.
- *time to admission* of a Workload: from its create being sent to its first admission seen;
  per class the average and the 95th percentile. Beside it Kueue's recorder's own definition,
  which ``--against kueue`` compares: from the Workload's first watch event to its last
  admission seen (a Workload evicted and admitted again counts its whole wait), averaged.
- *usage* of a ClusterQueue class: request x time admitted, summed over the class's Workloads,
  divided by the class's nominal quota x wall — the average fraction of nominal quota in use.
  (Kueue integrates the queues' reported ``flavorsUsage`` instead; Berth's status writer reports
  at most twice a second, so the admissions themselves are the finer record.)
- *capacity bound*: per cohort, the work it receives (request x runtime) over its nominal quota,
  or the last arrival if that is later; the largest over cohorts.
- *arrivals*: when the last arrival was due, when the last create returned, and how late
  creates were sent after their due time (they wait for one of the harness's 64 create slots, so
  a lag means the API server took creates more slowly than the config makes them).
- *the harness's own delays*: how long after a Workload's runtime was over the harness saw it
  Finished (``finishLagSeconds``), and how much later its watch delivered each of its own
  writes than the write's answer came (``watchLagSeconds``, the API server's watch latency as a
  client sees it); with its resourceVersion conflicts. Large values mean the harness, or the API
  server feeding it, and not the scheduler, held quota busy.
- *webhook latency*: per admission webhook, its calls and their latency as the API server
  measured it (``apiserver_admission_webhook_admission_duration_seconds``); every Workload
  create waits for Berth's mutating and validating webhooks.
- *API requests per admission*: the API server's ``apiserver_request_total`` increase over the
  run divided by admissions, whole and without the harness's own requests.
"""

from __future__ import annotations

import collections
import math
import re
import statistics
from collections.abc import Iterable
from typing import Any

from berth.devtools.harness import generator, runner

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def counter(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of one metric in Prometheus text format, keyed by its sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = _SAMPLE.match(line)
        if m is None or m.group("name") != name:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group("labels") or "")))
        out[labels] = float(m.group("value"))
    return out


def requests_between(
    before: dict[tuple[tuple[str, str], ...], float],
    after: dict[tuple[tuple[str, str], ...], float],
) -> dict[str, int]:
    """Requests counted between two scrapes of ``apiserver_request_total``, by verb and resource."""
    out: collections.Counter[str] = collections.Counter()
    for labels, value in after.items():
        delta = value - before.get(labels, 0.0)
        if delta <= 0:
            continue
        d = dict(labels)
        resource = d.get("resource") or "other"
        if d.get("subresource"):
            resource += "/" + d["subresource"]
        out[f"{d.get('verb', '?')} {resource}"] += round(delta)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def webhook_latency(before: str, after: str) -> dict[str, dict[str, float]]:
    """Per admission webhook: its calls between two scrapes, and their latency as the server saw.

    From ``apiserver_admission_webhook_admission_duration_seconds``: the count, the mean, and
    the p95 as the upper bound of the bucket that holds it (the histogram keeps no more).
    """
    metric = "apiserver_admission_webhook_admission_duration_seconds"

    def delta(suffix: str) -> dict[tuple[tuple[str, str], ...], float]:
        old = counter(before, metric + suffix)
        return {k: v - old.get(k, 0.0) for k, v in counter(after, metric + suffix).items()}

    counts, sums, buckets = delta("_count"), delta("_sum"), delta("_bucket")
    calls: dict[str, float] = collections.defaultdict(float)
    total: dict[str, float] = collections.defaultdict(float)
    cumulative: dict[str, dict[float, float]] = collections.defaultdict(
        lambda: collections.defaultdict(float)
    )
    for labels, n in counts.items():
        calls[dict(labels).get("name", "?")] += n
    for labels, seconds in sums.items():
        total[dict(labels).get("name", "?")] += seconds
    for labels, n in buckets.items():
        d = dict(labels)
        cumulative[d.get("name", "?")][float(d.get("le", "inf"))] += n
    out: dict[str, dict[str, float]] = {}
    for name, n in sorted(calls.items()):
        if n <= 0:
            continue
        bounds = sorted(cumulative[name].items())
        p95 = next((le for le, c in bounds if c >= 0.95 * n), math.inf)
        out[name] = {
            "calls": round(n),
            "meanMs": _round(1000 * total[name] / n, 1),
            "p95AtMostMs": _round(1000 * p95, 1) if math.isfinite(p95) else -1.0,
        }
    return out


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def spread(values: list[float]) -> dict[str, float]:
    """p50, p95 and max of some durations in seconds (all 0 for none)."""
    return {
        "p50": _round(percentile(values, 50)),
        "p95": _round(percentile(values, 95)),
        "max": _round(max(values, default=0.0)),
    }


def capacity_bound(config: generator.Config) -> float:
    """The shortest wall any scheduler could reach: the busiest cohort's work over its quota."""
    queues = generator.queues(config)
    work: dict[str, float] = collections.defaultdict(float)
    quota: collections.Counter[str] = collections.Counter()
    for q in queues:
        quota[q.cohort] += q.spec.nominal_milli
    last = 0.0
    for a in generator.arrivals(config):
        work[a.queue.cohort] += a.template.milli * a.template.runtime_ms / 1000
        last = max(last, a.at)
    bound = max((work[c] / quota[c] for c in quota if quota[c]), default=0.0)
    return max(bound, last)


def _round(x: float, digits: int = 2) -> float:
    return round(x, digits)


def summarize(
    config: generator.Config, records: Iterable[runner.Record], wall: float
) -> dict[str, Any]:
    """Wall, per-class time to admission, per-ClusterQueue-class usage and counts."""
    recs = list(records)
    waits: dict[str, list[float]] = collections.defaultdict(list)
    kueue_waits: dict[str, list[float]] = collections.defaultdict(list)
    counts: collections.Counter[str] = collections.Counter()
    evicted: collections.Counter[str] = collections.Counter()
    busy: dict[str, float] = collections.defaultdict(float)
    admissions = evictions = finished = created = 0
    create_latency: list[float] = []
    create_lag: list[float] = []
    arrivals_end = scheduled_end = 0.0
    for r in recs:
        cls = r.arrival.template.class_name
        counts[cls] += 1
        scheduled_end = max(scheduled_end, r.arrival.at)
        if r.created is not None:
            created += 1
            create_lag.append(max(0.0, r.created - r.arrival.at))
        if r.create_latency is not None and r.created is not None:
            create_latency.append(r.create_latency)
            arrivals_end = max(arrivals_end, r.created + r.create_latency)
        if r.admitted is not None and r.created is not None:
            waits[cls].append(max(0.0, r.admitted - r.created))
        starts = [start for start, _ in r.intervals]
        if r.running_since is not None:
            starts.append(r.running_since)
        if starts and r.seen is not None:
            kueue_waits[cls].append(max(0.0, max(starts) - r.seen))
        if r.finished is not None:
            finished += 1
        admissions += r.admissions
        evictions += r.evictions
        evicted[cls] += r.evictions
        spans = list(r.intervals)
        if r.running_since is not None:
            spans.append((r.running_since, wall))
        busy[r.queue.class_name] += r.arrival.template.milli * sum(
            max(0.0, min(end, wall) - start) for start, end in spans
        )
    nominal: collections.Counter[str] = collections.Counter()
    queue_counts: collections.Counter[str] = collections.Counter()
    for q in generator.queues(config):
        nominal[q.class_name] += q.spec.nominal_milli
        queue_counts[q.class_name] += 1
    bound = capacity_bound(config)
    return {
        "workloads": len(recs),
        "created": created,
        "admitted": sum(1 for r in recs if r.admitted is not None),
        "finished": finished,
        "admissions": admissions,
        "evictions": evictions,
        "wallSeconds": _round(wall),
        "capacityBoundSeconds": _round(bound),
        "wallOverCapacityBound": _round(wall / bound if bound else 0.0),
        "admissionsPerSecond": _round(admissions / wall if wall else 0.0),
        "createLatencyMs": {
            "p50": _round(1000 * percentile(create_latency, 50), 1),
            "p95": _round(1000 * percentile(create_latency, 95), 1),
        },
        "arrivals": {
            "scheduledEndSeconds": _round(scheduled_end),
            "endSeconds": _round(arrivals_end),
            "lagSecondsP95": _round(percentile(create_lag, 95)),
            "lagSecondsMax": _round(max(create_lag, default=0.0)),
        },
        "workloadClasses": {
            cls: {
                "count": counts[cls],
                "admitted": len(waits.get(cls, [])),
                "evictions": evicted[cls],
                "averageTimeToAdmissionSeconds": _round(
                    statistics.fmean(waits[cls]) if waits.get(cls) else 0.0
                ),
                "p95TimeToAdmissionSeconds": _round(percentile(waits.get(cls, []), 95)),
                "averageSeenToLastAdmissionSeconds": _round(
                    statistics.fmean(kueue_waits[cls]) if kueue_waits.get(cls) else 0.0
                ),
            }
            for cls in sorted(counts)
        },
        "clusterQueueClasses": {
            cls: {
                "queues": queue_counts[cls],
                "usagePercent": _round(
                    100 * busy[cls] / (nominal[cls] * wall) if nominal[cls] and wall else 0.0, 1
                ),
            }
            for cls in sorted(nominal)
        },
    }
