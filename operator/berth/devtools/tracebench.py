"""Public GPU traces replayed through the simulator, and the figures ``berth bench trace`` prints.

Two traces (``shared/traces``; their READMEs give origin and licence):

- **Philly** (``philly-pollux/philly.csv``): arrival, duration and GPUs of 82,247 jobs, and the
  virtual cluster that submitted each one, read as its team.
- **ITP** (``itp-elasticflow/raw/clusterNN.csv``): submission time, duration and GPUs of 69,351
  jobs on ten clusters. There is no team column: each cluster's file stands for one team, a
  synthetic mapping.

The queue configuration (``scenario``), as ``docs/benchmarks.md`` states it: one ResourceFlavor
``gpu``; one Cohort; per team one ClusterQueue in that cohort and one LocalQueue. A team's
``nominalQuota`` of ``nvidia.com/gpu`` is its share of the replayed jobs' GPU-seconds, of the
whole capacity (largest remainders, so the quotas sum to the capacity); no borrowing limit;
``reclaimWithinCohort: Any`` (a lender gets its quota back) and ``withinClusterQueue: Never``
(the traces carry no priorities). The capacity is ``--gpus``, or by default the smallest multiple
of 8 GPUs that the jobs' average demand over their arrival window fills to ``--load`` (0.9).
Each job is one Workload of pods of at most 8 GPUs that runs its traced duration once admitted;
a preempted job starts over, or with ``Settings.checkpoint_every`` resumes from its last
checkpoint.

``bound``: the same jobs in one ClusterQueue holding the whole capacity, BestEffortFIFO, no team
quotas: a greedy scheduler that never leaves a GPU idle while a job that fits waits, the
work-conserving reference for utilisation. With ``Settings.fair_usage_half_life`` that queue
orders the teams' LocalQueues by usage-based admission fair sharing.

Figures (``Figures``): GPU utilisation while the jobs arrive (GPU-seconds held by admitted jobs
over capacity x that window), the share of GPU-seconds lost to runs a preemption cut short, time
queued per gang-size bucket (mean and p95), the longest, preemptions, under Backfill how far each
admission's start was from the start first estimated for it, and jobs per CPU-second of the
simulator; ``plot_waits`` draws the waits as a PNG. ``replay_each`` runs several replays side by
side in worker processes, each measuring its own CPU; ``Figures.shares`` is each team's 7-day
share of GPU-hours against its weighted share (``devtools.teamshares``). ``Goal`` measures a
policy against Backfill's goal: the p95 time queued of jobs of at least ``GOAL_GANG`` GPUs at
most ``GOAL_RATIO`` times that of 1-GPU jobs, with utilisation within ``GOAL_POINTS`` points of
BestEffortFIFO's. Used by ``berth bench trace``.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import enum
import math
import multiprocessing
import signal
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import yaml

from berth.api import base, duration, names
from berth.api.clusterqueue import PreemptionPolicy, QueueingStrategy
from berth.devtools import teamshares
from berth.sim import documents, engine
from berth.sim.workloads import saved_by

FLAVOR = "gpu"
RESOURCE = "nvidia.com/gpu"
GPUS_PER_NODE = 8
"""The node size the traces' own simulators assume (Helios: 8 GPUs per node)."""


class TraceName(enum.Enum):
    """The public traces the benchmark reads."""

    PHILLY = "philly"
    ITP = "itp"


STRATEGIES = (
    QueueingStrategy.BEST_EFFORT_FIFO,
    QueueingStrategy.STRICT_FIFO,
    QueueingStrategy.BACKFILL,
)
"""The queueing strategies the benchmark replays, in the order it prints them."""


@dataclasses.dataclass(frozen=True, slots=True)
class TraceJob:
    """One traced job: when it arrived (seconds after the first), how long it ran, its gang."""

    arrival: float
    duration: float
    gpus: int
    team: str


@dataclasses.dataclass(frozen=True, slots=True)
class Bucket:
    """A gang-size bucket: jobs of ``low`` to ``high`` GPUs."""

    name: str
    low: int
    high: float


BUCKETS = (Bucket("1", 1, 1), Bucket("2-4", 2, 4), Bucket("5-8", 5, 8), Bucket(">8", 9, math.inf))


GOAL_GANG = 8
"""Jobs of at least this many GPUs are the big gangs the goal protects."""
GOAL_RATIO = 2.0
"""Their p95 time queued may be at most this multiple of 1-GPU jobs'."""
GOAL_POINTS = 2.0
"""With utilisation at most this many percentage points from BestEffortFIFO's."""


def bucket_of(gpus: int) -> Bucket:
    """The bucket of a gang of ``gpus`` GPUs."""
    return next(b for b in BUCKETS if b.low <= gpus <= b.high)


# Reading the traces -----------------------------------------------------------------------------


def read_philly(path: Path) -> list[TraceJob]:
    """Philly's jobs in arrival order (ties in file order); GPU-less rows are skipped."""
    rows = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(float(row["num_gpus"]))
            if gpus > 0:
                when = dt.datetime.fromisoformat(row["timestamp"]).timestamp()
                rows.append((when, float(row["duration"]), gpus, row["cluster"]))
    return _relative(rows)


def read_itp(directory: Path) -> list[TraceJob]:
    """ITP's jobs of every cluster file (the file is the team), in arrival order."""
    rows = []
    for path in sorted(directory.glob("cluster*.csv")):
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                gpus = int(float(row["num_gpu"]))
                if gpus > 0:
                    rows.append(
                        (float(row["submission_time"]), float(row["duration"]), gpus, path.stem)
                    )
    return _relative(rows)


def _relative(rows: list[tuple[float, float, int, str]]) -> list[TraceJob]:
    if not rows:
        return []
    ordered = sorted(enumerate(rows), key=lambda r: (r[1][0], r[0]))
    start = ordered[0][1][0]
    return [TraceJob(when - start, dur, gpus, team) for _, (when, dur, gpus, team) in ordered]


def read(trace: TraceName, traces_dir: Path) -> list[TraceJob]:
    """The jobs of one trace under ``traces_dir`` (the ``shared/traces`` folder)."""
    if trace is TraceName.PHILLY:
        return read_philly(traces_dir / "philly-pollux" / "philly.csv")
    return read_itp(traces_dir / "itp-elasticflow" / "raw")


# The queue configuration ------------------------------------------------------------------------


def default_capacity(jobs: Sequence[TraceJob], load: float) -> int:
    """The smallest multiple of 8 GPUs that the jobs' average demand fills to ``load``.

    The demand is their GPU-seconds over the window in which they arrive.

    Never smaller than the largest gang, which could not run at all otherwise.
    """
    if not jobs:
        return GPUS_PER_NODE
    window = max(j.arrival for j in jobs)  # the jobs arrive over this window: their load
    demand = sum(j.gpus * j.duration for j in jobs) / max(window, 1.0)
    largest = max(j.gpus for j in jobs)
    needed = max(demand / load, largest)
    return GPUS_PER_NODE * max(1, math.ceil(needed / GPUS_PER_NODE))


def quotas(jobs: Iterable[TraceJob], capacity: int) -> dict[str, int]:
    """Each team's nominal quota: its share of the GPU-seconds, by largest remainders.

    The quotas sum to ``capacity``; remainders tie-break by team name.
    """
    work: dict[str, float] = {}
    for j in jobs:
        work[j.team] = work.get(j.team, 0.0) + j.gpus * j.duration
    total = sum(work.values())
    if total <= 0:
        return dict.fromkeys(sorted(work), 0)
    exact = {team: capacity * w / total for team, w in work.items()}
    out = {team: math.floor(x) for team, x in exact.items()}
    left = capacity - sum(out.values())
    for team in sorted(exact, key=lambda t: (-(exact[t] - out[t]), t))[:left]:
        out[team] += 1
    return out


def _queue(
    name: str,
    cohort: str | None,
    nominal: int,
    policy: QueueingStrategy,
    reclaim: PreemptionPolicy = PreemptionPolicy.ANY,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": policy.value,
        "preemption": {"reclaimWithinCohort": reclaim.value, "withinClusterQueue": "Never"},
        "resourceGroups": [
            {
                "coveredResources": [RESOURCE],
                "flavors": [
                    {"name": FLAVOR, "resources": [{"name": RESOURCE, "nominalQuota": nominal}]}
                ],
            }
        ],
    }
    if cohort is not None:
        spec["cohortName"] = cohort
    return {
        "apiVersion": base.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def pod_shape(gpus: int) -> tuple[int, int]:
    """Pods and GPUs per pod of a gang: pods of at most 8 GPUs, all the same size."""
    pods = math.ceil(gpus / GPUS_PER_NODE)
    while gpus % pods:
        pods += 1
    return pods, gpus // pods


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a replay varies beside its queueing strategy."""

    bound: bool = False
    """One ClusterQueue of the whole capacity, no cohort (the work-conserving bound)."""
    protection: float = 0.0
    """Seconds each admitted job is protected from reclaim
    (``preemptionProtection.reclaimWithinCohort``; 0: none)."""
    reclaim: PreemptionPolicy = PreemptionPolicy.ANY
    """The teams' ``reclaimWithinCohort`` (Never: a lender waits for what it lent to come back)."""
    checkpoint_every: float | None = None
    """Every job saves a checkpoint this often while it runs (``sim.berth.dev/checkpoint-every``):
    a preempted one loses only the work since the last and resumes from it. None: it starts
    over."""
    fair_usage_half_life: float | None = None
    """With ``bound`` (the teams' LocalQueues in one ClusterQueue): admission fair sharing with
    this ``usageHalfLifeTime`` (``UsageBasedAdmissionFairSharing``). None: by arrival."""


def scenario(
    jobs: Sequence[TraceJob],
    policy: QueueingStrategy,
    capacity: int,
    settings: Settings = Settings(),
) -> list[documents.Document]:
    """The replay's documents: the queue configuration at t=0, then each job at its arrival."""
    bound, protection, reclaim = settings.bound, settings.protection, settings.reclaim
    raws: list[dict[str, Any]] = [
        {"apiVersion": base.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    ]
    config: dict[str, Any] = {}
    if protection > 0:
        window = {"minAdmitDuration": duration.format(protection)}
        config["preemptionProtection"] = {"reclaimWithinCohort": window}
    half_life = settings.fair_usage_half_life if bound else None
    if half_life is not None:
        config["admissionFairSharing"] = {"usageHalfLifeTime": duration.format(half_life)}
    if config:
        meta = {"apiVersion": base.API_VERSION, "kind": "Configuration"}
        raws.insert(0, {**meta, "metadata": {"name": "config"}, **config})
    team_queue = {}
    if bound:
        shared = _queue("all", None, capacity, QueueingStrategy.BEST_EFFORT_FIFO)
        if half_life is not None:
            shared["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        raws.append(shared)
        team_queue = {j.team: "all" for j in jobs}
    else:
        raws.append({"apiVersion": base.API_VERSION, "kind": "Cohort", "metadata": {"name": "all"}})
        for team, nominal in sorted(quotas(jobs, capacity).items()):
            raws.append(_queue(f"team-{team}", "all", nominal, policy, reclaim))
            team_queue[team] = f"team-{team}"
    for team, cq in sorted(team_queue.items()):
        raws.append(
            {
                "apiVersion": base.API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": f"team-{team}"},
                "spec": {"clusterQueue": cq},
            }
        )
    docs = [documents.generated(raw, i) for i, raw in enumerate(raws)]
    for i, job in enumerate(jobs):
        pods, per_pod = pod_shape(job.gpus)
        raw = {
            "apiVersion": base.API_VERSION,
            "kind": "Workload",
            "metadata": {"name": f"job-{i}", "namespace": f"team-{job.team}"},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": pods,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {RESOURCE: per_pod}}}
                                ]
                            }
                        },
                    }
                ],
            },
        }
        docs.append(
            documents.generated(
                raw,
                len(docs),
                at=job.arrival,
                run_for=job.duration,
                checkpoint_every=settings.checkpoint_every,
            )
        )
    return docs


def scenario_yaml(docs: Sequence[documents.Document]) -> str:
    """The replay as ``berth simulate`` input: each document with its timing annotations."""
    out = []
    for doc in docs:
        raw = dict(doc.raw)
        notes = {}
        if doc.at:
            notes["sim.berth.dev/at"] = duration.format(doc.at)
        if doc.duration is not None:
            notes["sim.berth.dev/duration"] = duration.format(doc.duration)
        if notes:
            raw["metadata"] = {**raw["metadata"], "annotations": notes}
        out.append(raw)
    return yaml.dump_all(out, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


# The figures ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Waits:
    """Time queued of one bucket's jobs."""

    jobs: int
    mean: float
    p95: float


@dataclasses.dataclass(frozen=True, slots=True)
class Figures:
    """What one replay measured."""

    label: str
    jobs: int
    capacity: int
    utilisation: float
    """GPU-seconds held by admitted jobs while jobs arrive / (capacity x that window)."""
    lost: float
    """The share of all GPU-seconds held that went to runs a preemption cut short."""
    waits: dict[str, Waits]
    """By bucket name; time queued is the sum of a job's waits before each admission."""
    longest_wait: float
    never_admitted: int
    preemptions: int
    preempted_jobs: int
    """Jobs preempted at least once."""
    peak_pending: int
    """The most jobs waiting at once (each queued job is nominated again after every release in
    its cohort, so this drives the simulator's cost)."""
    cpu_seconds: float
    """CPU time of the replay itself (reading the trace and building documents excluded)."""
    estimate_errors: tuple[float, ...] = ()
    """Backfill: for each admission after a reservation, its start minus the start first
    estimated for it (negative: earlier than estimated)."""
    big_gangs: Waits = Waits(0, 0.0, 0.0)
    """Time queued of the jobs of at least ``GOAL_GANG`` GPUs (across buckets)."""
    shares: teamshares.Shares | None = None
    """Each team's 7-day share of GPU-hours against its weighted share (``teamshares``)."""

    @property
    def estimate_error(self) -> float | None:
        """The mean absolute error of the first estimated starts (None without estimates)."""
        errors = self.estimate_errors
        return statistics.fmean(abs(e) for e in errors) if errors else None

    @property
    def preempted_share(self) -> float:
        """The share of the jobs preempted at least once."""
        return self.preempted_jobs / self.jobs if self.jobs else 0.0

    @property
    def preemptions_per_job(self) -> float:
        """Preemptions per job ever admitted."""
        admitted = self.jobs - self.never_admitted
        return self.preemptions / admitted if admitted else 0.0

    @property
    def jobs_per_cpu_second(self) -> float:
        """Replayed jobs per CPU-second of the simulator."""
        return self.jobs / self.cpu_seconds if self.cpu_seconds > 0 else math.inf


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)])


def replay(
    label: str,
    jobs: Sequence[TraceJob],
    policy: QueueingStrategy,
    capacity: int,
    settings: Settings = Settings(),
) -> Figures:
    """Replay ``jobs`` under ``policy`` on ``capacity`` GPUs and measure it."""
    docs = scenario(jobs, policy, capacity, settings)
    sim = engine.Simulator(docs)
    started = time.process_time()
    events = sim.run()
    cpu = time.process_time() - started
    by_bucket: dict[str, list[float]] = {b.name: [] for b in BUCKETS}
    big: list[float] = []
    never = 0
    for i, job in enumerate(jobs):
        wl = sim.workloads.get(_key(job, i))
        if wl is None or not wl.waited:
            never += 1
            continue
        by_bucket[bucket_of(job.gpus).name].append(sum(wl.waited))
        if job.gpus >= GOAL_GANG:
            big.append(sum(wl.waited))
    window = max(j.arrival for j in jobs) if jobs else 0.0
    gpus = {str(_key(j, i)): j.gpus for i, j in enumerate(jobs)}
    held, lost, done = gpu_seconds(events, gpus, window, settings.checkpoint_every)
    window = window if window > 0 else sim.now
    all_waits = [w for values in by_bucket.values() for w in values]
    return Figures(
        label=label,
        jobs=len(jobs),
        capacity=capacity,
        utilisation=held / (capacity * window) if window > 0 else 0.0,
        lost=lost / (lost + done) if lost + done > 0 else 0.0,
        waits={name: _waits(v) for name, v in by_bucket.items()},
        longest_wait=max(all_waits, default=0.0),
        never_admitted=never,
        preemptions=sum(1 for e in events if e["event"] == "Preempted"),
        preempted_jobs=len({e["workload"] for e in events if e["event"] == "Preempted"}),
        peak_pending=_peak_pending(events, jobs),
        cpu_seconds=cpu,
        estimate_errors=tuple(
            float(e["t"]) - float(e["estimatedStart"])
            for e in events
            if e["event"] == "Admitted" and "estimatedStart" in e
        ),
        big_gangs=_waits(big),
        shares=teamshares.measure(
            events,
            [
                teamshares.Job(str(_key(j, i)), j.team, j.arrival, j.gpus)
                for i, j in enumerate(jobs)
            ],
            window,
        ),
    )


@dataclasses.dataclass(frozen=True)
class Replay:
    """One replay ``berth bench trace`` asks for: a strategy, or the bound."""

    label: str
    policy: QueueingStrategy
    settings: Settings = Settings()


_LONGEST_FIRST = {QueueingStrategy.BACKFILL: 0, QueueingStrategy.BEST_EFFORT_FIFO: 1}
"""Which replays take longest (``docs/benchmarks.md``: on the whole Philly trace Backfill about
twice BestEffortFIFO, which takes about twice StrictFIFO, four times the bound); started first,
they end about when the shorter ones queued behind them do."""


def _cost_rank(r: Replay) -> tuple[int, bool]:
    return (_LONGEST_FIRST.get(r.policy, 2), r.settings.bound)


def replay_each(
    jobs: Sequence[TraceJob], capacity: int, replays: Sequence[Replay], *, workers: int
) -> list[Figures]:
    """The figures of each replay, in the order given.

    With ``workers`` above 1, side by side in that many processes (longest first); a replay is
    deterministic and measures the CPU of its own process, so each figure is what it would be
    alone, bar the noise of a busy machine in the CPU column.
    """
    if workers <= 1 or len(replays) <= 1:
        return [_replay_of(r, jobs, capacity) for r in replays]
    order = sorted(range(len(replays)), key=lambda i: _cost_rank(replays[i]))
    # A fresh interpreter per worker: forking a process that may hold threads is unsafe.
    context = multiprocessing.get_context("spawn")
    # Ctrl-C reaches the whole process group. Workers start with it ignored (an ignored signal
    # stays ignored in the interpreter they start), so that none prints a traceback, not even
    # one still starting; the command stops them when it is interrupted. Blocked meanwhile, an
    # interrupt is not lost but waits (Linux never discards a blocked signal) until they run.
    resource_tracker.ensure_running()  # started first: starting, it unblocks SIGINT again
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # The jobs go to each worker once, as it starts, and a task names only its replay:
        # a task too large for the pipe could keep the pool from stopping on Ctrl-C.
        pool = context.Pool(
            min(workers, len(replays)), initializer=_receive, initargs=(jobs, capacity)
        )
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if interrupt is None else interrupt)
    with pool:  # leaving the block, normally or on Ctrl-C, stops the workers
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        running = {i: pool.apply_async(_replay_received, (replays[i],)) for i in order}
        return [running[i].get() for i in range(len(replays))]


_received: list[tuple[Sequence[TraceJob], int]] = []
"""In a worker process of ``replay_each``: the jobs and the capacity of its replays."""


def _receive(jobs: Sequence[TraceJob], capacity: int) -> None:
    _received[:] = [(jobs, capacity)]


def _replay_received(r: Replay) -> Figures:
    jobs, capacity = _received[0]
    return _replay_of(r, jobs, capacity)


def _replay_of(r: Replay, jobs: Sequence[TraceJob], capacity: int) -> Figures:
    return replay(r.label, jobs, r.policy, capacity, r.settings)


def _waits(values: Sequence[float]) -> Waits:
    return Waits(len(values), statistics.fmean(values) if values else 0.0, percentile(values, 95))


@dataclasses.dataclass(frozen=True, slots=True)
class Goal:
    """One replay against Backfill's goal, beside BestEffortFIFO's replay of the same jobs."""

    ratio: float | None
    """p95 time queued of jobs of at least ``GOAL_GANG`` GPUs over that of 1-GPU jobs; None
    when either group is empty or 1-GPU jobs never queued (the ratio is undefined)."""
    points: float | None
    """Utilisation minus BestEffortFIFO's, in percentage points (None: not replayed)."""

    @property
    def met(self) -> bool:
        """Both parts of the goal hold (an undefined ratio does not)."""
        # The points are a difference of two shares: allow for its rounding at the boundary.
        return (
            self.ratio is not None
            and self.ratio <= GOAL_RATIO
            and self.points is not None
            and abs(self.points) <= GOAL_POINTS + 1e-9
        )


def goal(figures: Figures, best_effort: Figures | None) -> Goal:
    """How ``figures`` stands against the goal, ``best_effort`` being BestEffortFIFO's replay."""
    one, big = figures.waits[BUCKETS[0].name], figures.big_gangs
    ratio = big.p95 / one.p95 if one.jobs and big.jobs and one.p95 > 0 else None
    if best_effort is None:
        return Goal(ratio, None)
    return Goal(ratio, 100 * (figures.utilisation - best_effort.utilisation))


def gpu_seconds(
    events: Sequence[dict[str, Any]],
    gpus: Mapping[str, int],
    window: float,
    checkpoint_every: float | None = None,
) -> tuple[float, float, float]:
    """GPU-seconds held until ``window``, lost to runs cut short, of work kept.

    ``gpus``: each workload's GPUs, by ``namespace/name``. A run cut short keeps what its
    checkpoints saved (``sim.workloads.saved_by``) and loses the rest.
    """
    started: dict[str, float] = {}
    held = lost = done = 0.0
    for e in events:
        name = str(e.get("workload") or "")
        if e["event"] == "Admitted":
            started[name] = float(e["t"])
        elif e["event"] in {"Evicted", "Finished"} and name in started:
            begin, end = started.pop(name), float(e["t"])
            amount = gpus.get(name, 0)
            if window > 0:
                held += amount * (min(end, window) - min(begin, window))
            else:
                held += amount * (end - begin)
            ran = end - begin
            kept = ran if e["event"] == "Finished" else saved_by(ran, checkpoint_every)
            lost += amount * (ran - kept)
            done += amount * kept
    return held, lost, done


def _peak_pending(events: list[dict[str, Any]], jobs: Sequence[TraceJob]) -> int:
    """The most jobs waiting at once: arrived or requeued, not admitted again yet."""
    changes = [(j.arrival, 1) for j in jobs]
    changes += [(float(e["t"]), -1) for e in events if e["event"] == "Admitted"]
    changes += [(float(e["t"]), 1) for e in events if e["event"] == "Requeued"]
    pending = peak = 0
    for _, step in sorted(changes):  # at one instant arrivals (+1) come after admissions (-1)
        pending += step
        peak = max(peak, pending)
    return peak


def _key(job: TraceJob, index: int) -> names.WorkloadKey:
    return names.WorkloadKey(f"team-{job.team}", f"job-{index}")


def plot_waits(rows: Sequence[Figures], title: str, path: Path) -> None:
    """Draw mean (bars) and p95 (markers) wait per gang-size bucket, one colour per row, as PNG."""
    import matplotlib as mpl  # noqa: PLC0415 - heavy; only --plot needs it

    mpl.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415 - after choosing the backend

    fig, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(rows), 1)
    for i, f in enumerate(rows):
        xs = [b + (i - (len(rows) - 1) / 2) * width for b in range(len(BUCKETS))]
        means = [f.waits[b.name].mean / 3600 for b in BUCKETS]
        p95s = [f.waits[b.name].p95 / 3600 for b in BUCKETS]
        bars = axes.bar(xs, means, width, label=f"{f.label} mean")
        axes.scatter(xs, p95s, marker="_", s=400, color=bars.patches[0].get_facecolor())
    axes.set_xticks(range(len(BUCKETS)), [f"{b.name} GPUs" for b in BUCKETS])
    axes.set_ylabel("wait (hours); bars: mean, dashes: p95")
    axes.set_title(title)
    axes.grid(visible=True, axis="y", alpha=0.3)
    axes.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
