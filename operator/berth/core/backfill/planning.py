"""Reservations for blocked heads, and the backfill test a later workload must pass.

Berth's own ``Backfill`` queueing strategy (Slurm's backfill; Kueue has no equivalent). Within
one quota tree, the first ``reservationDepth`` blocked workloads of each Backfill ClusterQueue
hold a *reservation*: the flavors they would get and the earliest time they fit, computed from
the expected ends of running work (``estimates``). A workload behind a reservation holder is
admitted only if it does not delay that reservation: it ends (by its estimate) before the
reservation starts, or the reservation still fits at its start with the workload running.

The plan (``Plan``) is computed from the snapshot:

1. **Releases**: every admitted workload of the tree ends at ``reserved_at + estimate``; one
   running past its estimate is expected to run as long again (``expected_end``), which moves
   the reservations later and never breaks them; a workload being evicted ends now.
2. **Reservations** are placed one holder at a time, in holder order (``ordering.queue_key``
   across queues). A placed reservation occupies its quota from now until its end, so a later
   holder never starts inside an earlier one's room (conservative backfill when the depth is
   more than 1). A holder's start is the earliest release time at which its flavor assignment
   fits; capacity only grows with time, so that time is found by bisection, tried first where
   the last plan placed the holder (``hints``: usually it has not moved, and two assignments
   confirm it).
   A plan takes in work started after it was made (``Plan.started``) and holders that join
   (``Plan.insert``), placing again only the reservations that may have moved, and is taken on
   to a later instant when no running work was due to end in between (``Plan.moved_to``).
3. **The test** (``delayed_by``): for each reservation whose holder is ahead of the candidate
   (same ClusterQueue, or any queue of the tree when the candidate borrows), and that starts
   before the candidate's expected end (its runtime limit's end, when the reservation's queue
   lets only limits run ahead: ``aheadOfReservations: RuntimeLimit``), the reservation's usage
   must still fit at its start with the candidate's usage added. A candidate within its own
   nominal quota never takes what another queue's reservation counts on, except what that queue
   would borrow, which a lender may always take back in Kueue's model too.

Pure and deterministic. Built and consulted by ``core.cycle``; the holders come from
``state.queues`` and the estimates from ``state.runtimes``.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Sequence

from berth.api import clusterqueue, names
from berth.core import ordering, resources, snapshot, workload
from berth.core.backfill import estimates

Fits = Callable[
    [names.ClusterQueueName, workload.WorkloadInfo], resources.FlavorResourceAmounts | None
]
"""The usage of a workload's flavor assignment if it fits in the snapshot as it stands."""


@dataclasses.dataclass(frozen=True, slots=True)
class Release:
    """Usage that comes back to a ClusterQueue's quota at ``end``."""

    end: float
    cluster_queue: names.ClusterQueueName
    usage: resources.FlavorResourceAmounts


@dataclasses.dataclass(frozen=True, slots=True)
class Holder:
    """A blocked workload that may hold a reservation, with its estimate."""

    info: workload.WorkloadInfo
    cluster_queue: names.ClusterQueueName
    estimate: estimates.Estimate


_Question = tuple[int, names.ClusterQueueName, tuple[tuple[resources.FlavorResource, int], ...]]
"""A backfill test: a reservation's identity, and a candidate's queue and usage."""


@dataclasses.dataclass(frozen=True, slots=True)
class Ends:
    """When a candidate is expected to end, and when its runtime limit ends it at the latest."""

    expected: float
    """Now plus its estimate."""
    bounded: float
    """Now plus its runtime limit (infinity without one)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Reservation:
    """Quota held for a blocked workload from ``start`` to ``end``."""

    holder: Holder
    usage: resources.FlavorResourceAmounts
    start: float
    end: float
    passed: int = dataclasses.field(default=0, compare=False)
    """How many releases of its plan's timeline (running work's and those of the reservations
    ahead of it) it waits for: the fewest after which it fits."""


def expected_end(started: float, estimate: float, now: float) -> float:
    """When work started at ``started`` is expected to end, seen at ``now``.

    Its estimate, and for work already past it the estimate doubled as often as needed to lie
    ahead (a job twice over its estimate is likelier to run long still than to end this
    instant). The reservations behind it move later, and never start before it ends.
    """
    end = started + estimate
    if estimate <= 0:
        return max(end, now)
    span = estimate
    while end <= now:
        span *= 2
        end = started + span
    return end


def holder_key(info: workload.WorkloadInfo) -> tuple[int, float, str]:
    """Order of holders across the queues of a tree: ``ordering.queue_key`` without stickiness."""
    return ordering.queue_key(info)[1:]


class Plan:
    """The reservations of one quota tree at ``now``, and the backfill test against them."""

    def __init__(
        self,
        snap: snapshot.Snapshot,
        now: float,
        releases: Sequence[Release],
        holders: Sequence[Holder],
        fits: Fits,
        *,
        hints: dict[names.WorkloadKey, float] | None = None,
    ) -> None:
        self.snap = snap
        self.now = now
        self.fits = fits
        self.hints: dict[names.WorkloadKey, float] = {} if hints is None else hints
        """Where plans placed holders' reservations: a placement searches there first, and
        notes where it placed one. Only where the search starts: a start is the same without."""
        self.releases = sorted(releases, key=_release_key)
        self._sums: _Sums | None = None
        """Running totals of ``releases``, made on the first placement."""
        self.reservations: list[Reservation] = []
        """Reservations placed so far, in holder order."""
        self._tried: list[Holder] = []
        """Holders taken from the waiting ones so far, in holder order (placed or not)."""
        self._waiting = sorted(holders, key=lambda h: holder_key(h.info), reverse=True)
        """Holders not placed yet, the next one last. A holder's reservation depends only on
        those before it, so holders are placed only as far as a question needs."""
        self._squeezed: dict[_Question, tuple[Reservation, bool]] = {}
        """Whether a reservation would no longer fit at its start beside the usage of a
        candidate of that queue, by the reservation's identity: a reservation placed again is
        a new object, and one depends only on those before it. Workloads of one shape ask the
        same question of a plan one after another, in one cycle and in the next ones that take
        the plan over (the tree's usage unchanged)."""

    def _place_before(self, key: tuple[int, float, str] | None, *, including: bool = False) -> None:
        """Place every waiting holder ahead of ``key`` (or at it; all of them for None)."""
        waiting = self._waiting
        while waiting:
            next_key = holder_key(waiting[-1].info)
            if key is not None and (next_key > key if including else next_key >= key):
                return
            holder = waiting.pop()
            self._tried.append(holder)
            placed = self._place(holder, self.fits)
            if placed is not None:
                self.reservations.append(placed)

    def placed(self) -> list[Reservation]:
        """Every holder's reservation, in holder order (holders that never fit hold none)."""
        self._place_before(None)
        return list(self.reservations)

    def reservation_of(self, info: workload.WorkloadInfo) -> Reservation | None:
        """The reservation ``info`` holds, if it is a holder that could be placed."""
        self._place_before(holder_key(info), including=True)
        return next((r for r in self.reservations if r.holder.info.key == info.key), None)

    def _timeline(self, extra: Sequence[Reservation]) -> _Timeline:
        """Releases of running work and of ``extra`` reservations, in time order."""
        if self._sums is None:
            self._sums = _Sums(self.releases)
        return _Timeline(self.releases, self._sums, extra)

    @contextlib.contextmanager
    def _ahead(self, earlier: Sequence[Reservation]) -> Iterator[_Timeline]:
        """The snapshot with ``earlier`` reservations counted from now, and the timeline.

        The timeline holds the releases of running work and of those reservations; the
        snapshot is as it was once the block ends.
        """
        with self.snap.what_if():
            for r in earlier:
                self.snap.add_usage(r.holder.cluster_queue, r.usage)
            yield self._timeline(earlier)

    def _place(self, holder: Holder, fits: Fits) -> Reservation | None:
        """The holder's reservation at its earliest start, or None if waiting cannot make it fit.

        Placed where the running work's releases, and those of the reservations placed before
        it, first leave it room (``_Search``); the search starts where the last plan placed it.
        """
        key = holder.info.key
        with self._ahead(self.reservations) as timeline:
            search = _Search(self.snap, timeline, lambda: fits(holder.cluster_queue, holder.info))
            found = search.earliest(self.hints.get(key))
        if found is None:
            self.hints[key] = math.inf  # not even once everything ahead of it has ended
            return None
        passed, usage = found
        start = self.now if passed == 0 else max(self.now, timeline.releases[passed - 1].end)
        self.hints[key] = start
        return Reservation(holder, usage, start, start + holder.estimate.seconds, passed)

    def add(self, holder: Holder) -> Reservation | None:
        """Place one more holder, behind every other holder; return its reservation."""
        self._place_before(None)
        self._tried.append(holder)
        placed = self._place(holder, self.fits)
        if placed is not None:
            self.reservations.append(placed)
        return placed

    def insert(self, holder: Holder) -> None:
        """Take in one more holder at its place in holder order.

        The holders ahead of it keep their reservations (a reservation depends only on those
        before it); those behind it wait to be placed again, as in a plan made with it.
        """
        self._place_again(holder_key(holder.info), holder)

    def _place_again(self, key: tuple[int, float, str], *joining: Holder) -> None:
        """Send the holders from ``key`` on back to wait for their placement, with ``joining``."""
        behind = [h for h in self._tried if holder_key(h.info) >= key]
        self._tried = [h for h in self._tried if holder_key(h.info) < key]
        self.reservations = [r for r in self.reservations if holder_key(r.holder.info) < key]
        self._waiting = sorted(
            [*self._waiting, *behind, *joining], key=lambda h: holder_key(h.info), reverse=True
        )

    def started(self, release: Release) -> None:
        """Running work joined the tree now, to give its quota back at ``release``'s end.

        Its usage is counted in the snapshot already. The reservations it cannot have moved
        stay as a plan made now would place them, and the first that may have moved and those
        behind it wait to be placed again. Capacity only grows with time: a reservation whose
        releases include the new one (it ends before) still fits after them and not before, one
        more release on; one that starts while the new work runs stays if it still fits there
        with the same flavors (``_fits_after``), and cannot fit any sooner.
        """
        new = _release_key(release)
        pos = bisect.bisect_right(self.releases, new, key=_release_key)
        self.releases.insert(pos, release)
        self._sums = None
        self._squeezed.clear()
        ahead = 0
        """Releases of the reservations checked so far that come before the new one."""
        for i, r in enumerate(self.reservations):
            if pos + ahead < r.passed:
                self.reservations[i] = dataclasses.replace(r, passed=r.passed + 1)
            elif self._fits_after(i, r.passed) != r.usage:
                self._place_again(holder_key(r.holder.info))
                return
            ahead += (r.end, r.holder.cluster_queue) < new

    def _fits_after(self, i: int, passed: int) -> resources.FlavorResourceAmounts | None:
        """The usage of reservation ``i``'s holder if it fits after ``passed`` releases."""
        r = self.reservations[i]
        with self._ahead(self.reservations[:i]) as timeline:
            timeline.release(self.snap, 0, passed)
            return self.fits(r.holder.cluster_queue, r.holder.info)

    def moved_to(self, now: float) -> bool:
        """Take the plan on to a later ``now``, if it is the plan that would be made then.

        It is when no running work was expected to end by then (an end passed is moved later,
        ``expected_end``) and no reservation starts at the plan's own instant; the releases and
        the reservations placed then stand as they are.
        """
        if self.releases and self.releases[0].end <= now:
            return False
        if any(r.passed == 0 for r in self.reservations):
            return False
        self.now = now
        return True

    def last_key(self) -> tuple[int, float, str] | None:
        """The order of the last holder (None when there is none)."""
        if self._waiting:
            return holder_key(self._waiting[0].info)
        return holder_key(self.reservations[-1].holder.info) if self.reservations else None

    def delayed_by(
        self,
        info: workload.WorkloadInfo,
        cq: names.ClusterQueueName,
        usage: resources.FlavorResourceAmounts,
        ends: Ends,
        *,
        borrows: bool,
    ) -> Reservation | None:
        """The first reservation admitting ``info`` now (until it ``ends``) would delay, if any.

        Its end is the one the reservation's queue goes by (``by_limit``).
        """
        key = holder_key(info)
        self._place_before(key)  # only reservations of workloads ahead of it bind it
        for i, r in enumerate(self.reservations):
            if r.holder.info.key == info.key or holder_key(r.holder.info) >= key:
                continue  # placed earlier for a question about a workload further back
            if r.holder.cluster_queue != cq and not borrows:
                continue
            end = ends.bounded if self.by_limit(r) else ends.expected
            if end <= r.start:
                continue  # it is gone before the reservation starts
            if self._squeezed_by(i, cq, usage):
                return r
        return None

    def by_limit(self, r: Reservation) -> bool:
        """Tell whether only a runtime limit, not an estimate, lets a workload run ahead of ``r``.

        As the reservation's queue says (``aheadOfReservations``).
        """
        cq = self.snap.cluster_queues.get(r.holder.cluster_queue)
        return (
            cq is not None
            and cq.backfill is not None
            and cq.backfill.ahead_of_reservations == clusterqueue.AheadOfReservations.RUNTIME_LIMIT
        )

    def _squeezed_by(
        self, i: int, cq: names.ClusterQueueName, usage: resources.FlavorResourceAmounts
    ) -> bool:
        """Tell whether reservation ``i`` no longer fits at its start with ``usage`` in ``cq``."""
        r = self.reservations[i]
        key = (id(r), cq, tuple(sorted(usage.items())))
        known = self._squeezed.get(key)
        if known is not None and known[0] is r:
            return known[1]
        snap = self.snap
        with self._ahead(self.reservations[:i]) as timeline:
            snap.add_usage(cq, usage)
            started = bisect.bisect_right(timeline.releases, r.start, key=_release_end)
            timeline.release(snap, 0, started)
            node = snap.node(r.holder.cluster_queue)
            squeezed = any(node.available(fr) < amount for fr, amount in r.usage.items())
        self._squeezed[key] = (r, squeezed)
        return squeezed


class _Search:
    """The fewest releases of a timeline after which a holder fits, on the snapshot.

    Whether it fits after the first ``k`` releases only turns from no to yes as ``k`` grows, so
    one ``k`` where it does not and ``k + 1`` where it does settle the answer. Releases are
    applied in time order and undone by rolling the journal back to the last ``k`` found not to
    fit, so a search costs a few assignments and about the releases it passes, twice at most.
    """

    def __init__(
        self,
        snap: snapshot.Snapshot,
        timeline: _Timeline,
        fits: Callable[[], resources.FlavorResourceAmounts | None],
    ) -> None:
        self.snap = snap
        self.timeline = timeline
        self.fits = fits
        self.applied = 0
        """Releases applied to the snapshot."""
        self.no = -1
        """The most releases known not to be enough (-1: none known)."""
        self.no_mark = snap.journal.checkpoint()
        """The snapshot after ``max(no, 0)`` releases."""

    def earliest(self, hint: float | None) -> tuple[int, resources.FlavorResourceAmounts] | None:
        """How many releases make it fit and its usage then, or None if all of them do not.

        ``hint``: where an earlier search placed it (infinity: nowhere). Tried first, as the
        releases before that time and those up to it; then a gallop onwards (1, 2, 4, ...
        releases) from what is known, and a bisection of the last step.
        """
        releases = self.timeline.releases
        n = len(releases)
        yes: tuple[int, resources.FlavorResourceAmounts] | None = None
        if hint is not None:
            before = bisect.bisect_left(releases, hint, key=_release_end)
            upto = bisect.bisect_right(releases, hint, key=_release_end)
            for k in (before, upto) if upto > before else (before,):
                if (usage := self._try(k)) is not None:
                    yes = (k, usage)
                    break
        if yes is None:
            if self.no == n:
                return None
            k, step = self.no + 1, 1
            while (usage := self._try(k)) is None:
                if k == n:
                    return None
                k, step = min(n, k + step), step * 2
            yes = (k, usage)
        while yes[0] - self.no > 1:
            mid = (self.no + yes[0]) // 2
            if (usage := self._try(mid)) is not None:
                yes = (mid, usage)
        return yes

    def _try(self, k: int) -> resources.FlavorResourceAmounts | None:
        """Its usage if it fits after the first ``k`` releases (``k`` greater than ``no``)."""
        journal = self.snap.journal
        if k < self.applied:
            journal.rollback(self.no_mark)
            self.applied = max(self.no, 0)
        self.timeline.release(self.snap, self.applied, k)
        self.applied = k
        usage = self.fits()
        if usage is None:
            self.no, self.no_mark = k, journal.checkpoint()
        return usage


def _release_key(r: Release) -> tuple[float, str]:
    return (r.end, r.cluster_queue)


def _release_end(r: Release) -> float:
    return r.end


class _Sums:
    """Running totals of sorted releases, per ClusterQueue and flavor-resource.

    A placement passes a prefix of the releases, and then one or a few more, many times over:
    the totals give what any stretch of them gives back in a subtraction per queue and resource,
    not a walk over its releases.
    """

    def __init__(self, releases: Sequence[Release]) -> None:
        self.keys = [_release_key(r) for r in releases]
        steps: dict[tuple[names.ClusterQueueName, resources.FlavorResource], list[int]] = {}
        for i, rel in enumerate(releases):
            for fr, amount in rel.usage.items():
                if amount:
                    into = steps.get((rel.cluster_queue, fr))
                    if into is None:
                        into = steps[(rel.cluster_queue, fr)] = [0] * len(releases)
                    into[i] += amount
        self.totals = {
            pair: list(itertools.accumulate(amounts, initial=0)) for pair, amounts in steps.items()
        }
        """By queue and resource: what the first ``i`` releases give back, at index ``i``."""

    def between(
        self, a: int, b: int
    ) -> dict[names.ClusterQueueName, dict[resources.FlavorResource, int]]:
        """What releases ``a`` to ``b`` (not included) give back, per ClusterQueue."""
        out: dict[names.ClusterQueueName, dict[resources.FlavorResource, int]] = {}
        for (cq, fr), totals in self.totals.items():
            amount = totals[b] - totals[a]
            if amount:
                out.setdefault(cq, {})[fr] = amount
        return out


class _Timeline:
    """The releases of running work merged with those of a few reservations, in time order.

    Ties keep the running work's releases first and the reservations' in holder order, as
    inserting each reservation's release after its equals would.
    """

    def __init__(
        self, running: Sequence[Release], sums: _Sums, extra: Sequence[Reservation]
    ) -> None:
        self.sums = sums
        added = [Release(r.end, r.holder.cluster_queue, r.usage) for r in extra]
        added.sort(key=_release_key)  # stable: equal ends stay in holder order
        self.added = added
        self.at = [bisect.bisect_right(sums.keys, _release_key(r)) + j for j, r in enumerate(added)]
        """Where each of ``added`` stands in ``releases``."""
        releases = list(running)
        for pos, rel in zip(self.at, added, strict=True):
            releases.insert(pos, rel)
        self.releases = releases

    def release(self, snap: snapshot.Snapshot, a: int, b: int) -> None:
        """Stop counting the usage of releases ``a`` to ``b`` (not included).

        Summed per ClusterQueue first: removing usage is additive (what a queue passes up to its
        cohort is the part beyond its local quota, ``quota.QuotaNode.remove_usage``), so one
        removal of the sum leaves the tree as the releases one by one would, walking it once
        per queue instead of once per release.
        """
        if b <= a:
            return
        at = self.at
        i, j = bisect.bisect_left(at, a), bisect.bisect_left(at, b)
        summed = self.sums.between(a - i, b - j)
        for rel in self.added[i:j]:
            into = summed.setdefault(rel.cluster_queue, {})
            for fr, amount in rel.usage.items():
                into[fr] = into.get(fr, 0) + amount
        for cq, usage in summed.items():
            snap.remove_usage(cq, usage)
