"""A differential campaign: many generated cases through both schedulers, triaged and reported.

``run`` draws the cases of ``seed``, ``seed + 1``, ... (``generate``), plays each through Berth's
simulator (``berth_run``) and, ``parallel`` at a time with their names prefixed, through
minimalkueue on one API server (``kueue_run.Session``, started again every ``per_session``
cases so etcd stays small), and compares the traces (``compare``). Each diverging case is then
triaged:
1. it runs on Kueue ``repeats`` more times; if Kueue's own traces differ, the case is *timing
   dependent*: Kueue decided it in more than one way, and the report says whether Berth's trace
   is one of Kueue's. Such a case is counted apart, never as agreeing;
2. otherwise it is shrunk (``shrink``, at most ``shrink_per_class`` cases per class) and the
   minimal Kueue and Berth YAML written to ``out/seed-<seed>/`` with the divergence.

`Report.markdown` is the table for docs/benchmarks.md. Called by ``command`` and the CI test.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import shutil
import time
from pathlib import Path

from berth.devtools.differential import (
    berth_run,
    case,
    compare,
    generate,
    kueue_run,
    observation,
    shrink,
)


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """How a campaign runs."""

    cases: int
    seed: int = 1
    parallel: int = 12
    """Cases played at once on Kueue's server."""
    per_session: int = 300
    repeats: int = 2
    shrink_per_class: int = 3
    shrink_budget: int = 60
    out: Path | None = None
    """Where the minimal pairs go (none written without it)."""
    work: Path = Path("/tmp/berth-differential")  # noqa: S108 - a scratch folder, overridable


@dataclasses.dataclass(slots=True)
class Finding:
    """One diverging case and what triage made of it."""

    seed: int
    divergence: compare.Divergence
    timing_dependent: bool = False
    berth_matches_a_kueue_run: bool = False
    minimal: case.Case | None = None
    minimal_divergence: compare.Divergence | None = None


@dataclasses.dataclass(slots=True)
class Report:
    """What a campaign ran and found."""

    cases: int = 0
    steps: int = 0
    seconds: float = 0.0
    findings: list[Finding] = dataclasses.field(default_factory=list)

    def by_class(self) -> collections.Counter[str]:
        """Deterministic divergences by class of their first divergence."""
        return collections.Counter(
            f.divergence.kind.value for f in self.findings if not f.timing_dependent
        )

    @property
    def timing_dependent(self) -> int:
        """Cases Kueue itself decided in more than one way."""
        return sum(1 for f in self.findings if f.timing_dependent)

    def markdown(self) -> str:
        """The report as Markdown."""
        lines = [
            f"cases: {self.cases}; steps: {self.steps}; wall: {self.seconds:.0f} s",
            "",
            "| class | cases |",
            "| --- | --- |",
        ]
        classes = self.by_class()
        lines += [f"| {c.value} | {classes.get(c.value, 0)} |" for c in compare.DivergenceClass]
        lines.append(f"| Kueue timing-dependent (not a divergence) | {self.timing_dependent} |")
        for f in self.findings:
            tag = "timing-dependent" if f.timing_dependent else f.divergence.kind.value
            lines.append("")
            lines.append(f"- seed {f.seed} ({tag}): {f.divergence}")
            if f.timing_dependent:
                lines.append(
                    "  Berth's trace is one of Kueue's"
                    if f.berth_matches_a_kueue_run
                    else "  Berth's trace is none of Kueue's"
                )
            if f.minimal is not None and f.minimal_divergence is not None:
                lines.append(
                    f"  shrunk to {shrink.size(f.minimal)} (from "
                    f"{shrink.size(generate.generate(f.seed))}): {f.minimal_divergence}"
                )
        return "\n".join(lines)


class Campaign:
    """Runs cases on one Kueue session at a time; its ``check`` is the shrinker's oracle."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.session: kueue_run.Session | None = None
        self._serial = 0
        self._session_cases = 0

    async def _kueue(self, c: case.Case) -> observation.Trace:
        assert self.session is not None  # noqa: S101 - inside run
        self._serial += 1
        self._session_cases += 1
        return await self.session.run(c, f"d{self._serial}-")

    async def _restart_if_due(self) -> None:
        if self.session is not None and self._session_cases < self.settings.per_session:
            return
        if self.session is not None:
            await self.session.__aexit__(None, None, None)
        work = self.settings.work / f"session-{self._serial}"
        # A new server each session: an earlier campaign's etcd data there would hold its names.
        shutil.rmtree(work, ignore_errors=True)
        self.session = kueue_run.Session(work)
        await self.session.__aenter__()
        self._session_cases = 0

    async def kueue_traces(self, cases: list[case.Case]) -> list[observation.Trace]:
        """Kueue's traces of the cases, ``parallel`` at a time."""
        await self._restart_if_due()
        slots = asyncio.Semaphore(self.settings.parallel)

        async def one(c: case.Case) -> observation.Trace:
            async with slots:
                return await self._kueue(c)

        return list(await asyncio.gather(*(one(c) for c in cases)))

    async def check(self, cases: list[case.Case]) -> list[compare.Divergence | None]:
        """The first divergence of each case (None where both agree)."""
        traces = await self.kueue_traces(cases)
        return [
            compare.first(compare.divergences(k, berth_run.run(c)))
            for c, k in zip(cases, traces, strict=True)
        ]

    async def _triage(
        self,
        finding: Finding,
        first_kueue: observation.Trace,
        shrunk: collections.Counter[compare.DivergenceClass],
    ) -> None:
        c = generate.generate(finding.seed)
        berth = berth_run.run(c)
        again = await self.kueue_traces([c] * self.settings.repeats)
        runs = [first_kueue, *again]
        # Kueue disagrees with itself only where the comparison would see it: its pending
        # messages change at every attempt of some heads and are not compared, so two runs
        # that differ only there decided the same.
        if any(compare.divergences(first_kueue, r) for r in again):
            finding.timing_dependent = True
            finding.berth_matches_a_kueue_run = any(not compare.divergences(r, berth) for r in runs)
            return
        kind = finding.divergence.kind
        if kind == compare.DivergenceClass.KUEUE_ERROR:
            return
        if shrunk[kind] >= self.settings.shrink_per_class:
            return
        shrunk[kind] += 1
        minimal, found, _ = await shrink.shrink(
            c, kind, self.check, budget=self.settings.shrink_budget, batch=self.settings.parallel
        )
        finding.minimal = minimal
        finding.minimal_divergence = found or finding.divergence
        if self.settings.out is not None:
            write_pair(
                self.settings.out / f"seed-{finding.seed}", minimal, finding.minimal_divergence
            )

    async def run(self) -> Report:
        """The whole campaign."""
        report = Report()
        started = time.monotonic()
        shrunk: collections.Counter[compare.DivergenceClass] = collections.Counter()
        seeds = list(range(self.settings.seed, self.settings.seed + self.settings.cases))
        chunk = max(self.settings.parallel * 4, 1)
        try:
            for start in range(0, len(seeds), chunk):
                batch = seeds[start : start + chunk]
                cases = [generate.generate(s) for s in batch]
                traces = await self.kueue_traces(cases)
                for c, k in zip(cases, traces, strict=True):
                    report.cases += 1
                    report.steps += len(c.steps)
                    d = compare.first(compare.divergences(k, berth_run.run(c)))
                    if d is not None:
                        finding = Finding(c.seed, d)
                        report.findings.append(finding)
                        await self._triage(finding, k, shrunk)
        finally:
            if self.session is not None:
                await self.session.__aexit__(None, None, None)
                self.session = None
            report.seconds = time.monotonic() - started
        return report


def write_pair(folder: Path, c: case.Case, divergence: compare.Divergence) -> None:
    """The minimal case as Kueue YAML, as Berth YAML (``berth import``'s), and what diverged."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kueue.yaml").write_text(berth_run.to_yaml(case.kueue_documents(c)))
    (folder / "berth.yaml").write_text(berth_run.to_yaml(berth_run.berth_documents(c)))
    (folder / "divergence.txt").write_text(f"{divergence}\n{c!r}\n")


async def run(settings: Settings) -> Report:
    """Run a campaign with these settings."""
    return await Campaign(settings).run()
