"""Each LocalQueue's decayed usage for admission fair sharing, sampled and charged over time.

Kueue keeps it in its LocalQueue reconciler (``localqueue_controller.go``: a sample every
``usageSamplingInterval``) and settles a workload's entry penalty when it is admitted
(``workload_controller.go``). Berth admits in one step, so an admission decays the usage to
now, with the admitted workload counted, and adds its penalty at once (``charge``). The
arithmetic is ``core.fair_usage``'s.

Only LocalQueues of ClusterQueues whose ``admissionScope`` asks for it are tracked, and only
while the Configuration has ``admissionFairSharing``; all are sampled together, at every
multiple of ``usageSamplingInterval`` on the clock. The operator writes each LocalQueue's
usage to its status and seeds it from there after a restart (``restore``, with the clock at the
restart as Kueue does: the downtime does not decay it). Called by ``state.lifecycle`` and the
queues (``score``); sampled by the operator's lifecycle task and the simulator's timer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from berth.api import configuration, names
from berth.core import fair_usage

LocalQueueKey = names.WorkloadKey
"""A LocalQueue's namespace and name."""


@dataclasses.dataclass(slots=True)
class Entry:
    """One LocalQueue's decayed usage and when it was last brought up to date."""

    usage: fair_usage.Usage = dataclasses.field(default_factory=dict)
    last: float = 0.0


class UsageLedger:
    """The decayed usage of every tracked LocalQueue."""

    def __init__(self) -> None:
        self.config: configuration.AdmissionFairSharing | None = None
        self.entries: dict[LocalQueueKey, Entry] = {}
        self._next_tick = 0.0
        """When the next sample is due: the next multiple of the interval after the last."""

    @property
    def enabled(self) -> bool:
        """Tell whether the Configuration turns admission fair sharing on."""
        return self.config is not None

    def configure(self, config: configuration.AdmissionFairSharing | None) -> None:
        """Take the Configuration's settings (None: off, and every usage forgotten)."""
        self.config = config
        if config is None:
            self.entries = {}
        self._next_tick = 0.0

    def restore(
        self, lq: LocalQueueKey, usage: Mapping[names.ResourceName, float], now: float
    ) -> None:
        """Seed a LocalQueue seen for the first time from the usage its status kept."""
        if lq not in self.entries:
            self.entries[lq] = Entry(dict(usage), now)

    def track(self, lqs: Iterable[LocalQueueKey], now: float) -> None:
        """Start tracking LocalQueues not tracked yet (from no usage), and forget the others."""
        wanted = set(lqs)
        for lq in wanted - self.entries.keys():
            self.entries[lq] = Entry(last=now)
        for lq in self.entries.keys() - wanted:
            del self.entries[lq]

    def due(self, now: float) -> bool:
        """Tell whether a sample is due at ``now`` (a tick passed since the last sample)."""
        return self.config is not None and bool(self.entries) and now >= self._next_tick

    def next_sample(self) -> float | None:
        """When the next sample is due (None: none tracked, or off)."""
        if self.config is None or not self.entries:
            return None
        return self._next_tick

    def sample(
        self, now: float, held: Mapping[LocalQueueKey, fair_usage.Usage]
    ) -> list[LocalQueueKey]:
        """Decay the usage of every tracked LocalQueue with what it ``held`` now.

        Every LocalQueue at the same instants, each ``usageSamplingInterval`` on the clock
        (Kueue samples each on a timer of its own; the decay counts the time since each one's
        last update, so only the phase differs). Returns those sampled.
        """
        cfg = self.config
        if cfg is None:
            return []
        interval = cfg.usage_sampling_interval
        self._next_tick = (now // interval + 1) * interval
        for lq, entry in self.entries.items():
            entry.usage = fair_usage.decayed(
                entry.usage, held.get(lq, {}), now - entry.last, cfg.usage_half_life_time
            )
            entry.last = now
        return list(self.entries)

    def charge(
        self,
        lq: LocalQueueKey,
        held: fair_usage.Usage,
        requests: fair_usage.Usage,
        now: float,
    ) -> None:
        """Charge an admission in ``lq``: decay to now, and add its entry penalty.

        ``held``: what the LocalQueue's admitted workloads hold, the new one included;
        ``requests``: what the new one holds.
        """
        cfg = self.config
        entry = self.entries.get(lq)
        if cfg is None or entry is None:
            return
        half_life = cfg.usage_half_life_time
        usage = fair_usage.decayed(entry.usage, held, now - entry.last, half_life)
        entry.usage = fair_usage.added(
            usage, fair_usage.penalty(requests, cfg.usage_sampling_interval, half_life)
        )
        entry.last = now

    def score(self, lq: LocalQueueKey, weight: float) -> float:
        """``lq``'s weighted usage per unit of its ``weight`` (0 for one not tracked)."""
        cfg = self.config
        entry = self.entries.get(lq)
        if cfg is None or entry is None:
            return fair_usage.score({}, {}, weight)
        return fair_usage.score(entry.usage, cfg.resource_weights, weight)

    def usage(self, lq: LocalQueueKey) -> tuple[fair_usage.Usage, float] | None:
        """``lq``'s decayed usage and when it was last brought up to date, if tracked."""
        entry = self.entries.get(lq)
        return None if entry is None else (dict(entry.usage), entry.last)
