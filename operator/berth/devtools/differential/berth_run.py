"""A case through Berth: its Kueue YAML converted as ``berth import`` does, then ``berth simulate``.

`berth_documents` converts every Kueue document with ``api.kueue_convert`` (the conversion
``berth import`` runs) and appends one Berth Configuration with ``waitForPodsReady: null``:
minimalkueue runs Kueue's scheduler with an empty Configuration, so the reference has
waitForPodsReady off, while Berth's default has it on. `run` plays the documents in the
simulator and reads its JSON lines into an ``observation.Trace``: step ``k`` is the simulator's
instant ``k`` seconds, settled (SIMULATE.md: cycles run until one changes nothing). A finished
workload is one deleted at its step (``sim.berth.dev/delete-at``); deletion writes no event, so
the trace drops it from the admitted set at that step. Called by ``campaign`` and ``shrink``.
"""

from __future__ import annotations

import io
from typing import Any

import yaml

from berth.api import base, kueue_convert
from berth.devtools.differential import case, observation
from berth.sim import documents, engine

GENERIC_REASONS = frozenset({"Pending", "PendingEvaluation"})
"""Pending reasons that say nothing about a decision: Kueue's job integrations (and its harness's
runner) write ``Pending`` when they clear an evicted admission, and ``PendingEvaluation`` is a
workload not looked at yet. Compared only when both sides give a decision's reason."""


def berth_documents(c: case.Case) -> list[dict[str, Any]]:
    """The case as Berth YAML: ``berth import`` of its Kueue YAML, plus the Configuration."""
    out = [kueue_convert.convert(doc)[0] for doc in case.kueue_documents(c)]
    out.append(
        {
            "apiVersion": base.API_VERSION,
            "kind": "Configuration",
            "metadata": {"name": "differential"},
            "waitForPodsReady": None,
        }
    )
    return out


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream."""
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)


def _pod_sets(raw: list[dict[str, Any]]) -> tuple[observation.PodSetAdmission, ...]:
    return tuple(
        (str(ps["name"]), int(ps["count"]), tuple(sorted(ps["flavors"].items()))) for ps in raw
    )


def _key(workload: str) -> str:
    return workload.split("/", 1)[1]


class _Seen:
    """The simulator's events so far: who is admitted where, each one's last pending reason."""

    def __init__(self) -> None:
        self.admitted: dict[str, observation.Admission] = {}
        self.reasons: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def event(self, e: dict[str, Any]) -> observation.Preemption | None:
        """Take in one event; a preemption is returned."""
        name = _key(e["workload"])
        kind = e["event"]
        if kind == "Admitted":
            self.admitted[name] = observation.Admission(
                str(e["clusterQueue"]), _pod_sets(e["podSets"])
            )
            self.reasons.pop(name, None)
            self.messages.pop(name, None)
        elif kind in {"Evicted", "Finished"}:
            self.admitted.pop(name, None)
        elif kind == "Preempted":
            return observation.Preemption(name, str(e["reason"]), _key(str(e["by"])))
        elif kind == "Pending":
            self.reasons[name] = str(e["reason"])
            self.messages[name] = str(e.get("message") or "")
        return None


def trace(c: case.Case, events: list[dict[str, Any]]) -> observation.Trace:
    """The simulator's events read as one point per step."""
    finishes = {
        i: s.workload for i, s in enumerate(c.steps, start=1) if s.kind == case.StepKind.FINISH
    }
    arrived: set[str] = set()
    arrivals = {
        i: s.workload for i, s in enumerate(c.steps, start=1) if s.kind == case.StepKind.ARRIVE
    }
    gone: set[str] = set()
    seen = _Seen()
    points = []
    by_step: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e["event"] != "Summary":
            by_step.setdefault(round(float(e["t"])), []).append(e)
    for step in range(len(c.steps) + 1):
        if step in finishes:
            gone.add(finishes[step])
            seen.admitted.pop(finishes[step], None)
        if step in arrivals:
            arrived.add(arrivals[step])
        preemptions = [p for e in by_step.get(step, []) if (p := seen.event(e)) is not None]
        admitted, reasons = seen.admitted, seen.reasons
        waiting = arrived - gone - admitted.keys()
        pending = {n: r for n, r in reasons.items() if n in waiting and r not in GENERIC_REASONS}
        messages = {n: m for n, m in seen.messages.items() if n in waiting and m}
        points.append(
            observation.Point(dict(admitted), tuple(sorted(preemptions)), pending, messages)
        )
    return observation.Trace(tuple(points))


def run(c: case.Case) -> observation.Trace:
    """Play the case through the simulator; an invalid input is a trace with its error."""
    text = to_yaml(berth_documents(c))
    try:
        docs = documents.read_streams([("case", io.StringIO(text))])
        events = engine.Simulator(docs).run()
    except (documents.ScenarioError, engine.UnsettledError) as err:
        return observation.Trace((), error=f"{type(err).__name__}: {err}")
    return trace(c, events)
