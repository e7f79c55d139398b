import collections
import csv
import importlib.util
import io
import json
import math
import pathlib
import struct
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from berth.api import duration, quantity
from berth.entry import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ("config/samples/queues.yaml", "config/samples/jobs.yaml")

Cell = tuple[str, str]


def _docs(path: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / path).read_text()) if d]


def _jobs() -> dict[str, dict[str, Any]]:
    """Per job: creation time, LocalQueue, and what one pod requests (canonical units)."""
    out: dict[str, dict[str, Any]] = {}
    for job in _docs(SAMPLES[1]):
        meta = job["metadata"]
        per_pod: dict[str, int] = collections.Counter()
        for container in job["spec"]["template"]["spec"]["containers"]:
            for res, value in container["resources"]["requests"].items():
                per_pod[res] += quantity.parse(res, value)
        out[f"{meta['namespace']}/{meta['name']}"] = {
            "created": duration.parse(meta["annotations"]["sim.berth.dev/at"]),
            "lq": f"{meta['namespace']}/{meta['labels']['berth.dev/queue-name']}",
            "per_pod": per_pod,
        }
    return out


def _nominal() -> dict[str, dict[Cell, int]]:
    out: dict[str, dict[Cell, int]] = {}
    for doc in _docs(SAMPLES[0]):
        if doc["kind"] != "ClusterQueue":
            continue
        cells = out.setdefault(doc["metadata"]["name"], {})
        for group in doc["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    cells[(flavor["name"], res["name"])] = quantity.parse(
                        res["name"], res["nominalQuota"]
                    )
    return out


def _nearest_rank(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _integrate(
    running: dict[str, tuple[str, str, dict[Cell, int]]],
    nominal: dict[str, dict[Cell, int]],
    fig: Callable[[str], dict[str, Any]],
    dt: float,
) -> None:
    """Add ``dt`` seconds of the running workloads' usage (and borrowing) to the figures."""
    totals: dict[tuple[str, Cell], int] = collections.Counter()
    for cq, lq, usage in running.values():
        for cell, amount in usage.items():
            totals[(cq, cell)] += amount
            for name in (cq, lq):
                fig(name)["used"][cell] = fig(name)["used"].get(cell, 0) + amount * dt
    for (cq, cell), amount in totals.items():
        over = max(0, amount - nominal[cq].get(cell, 0)) * dt
        fig(cq)["over"][cell] = fig(cq)["over"].get(cell, 0) + over


def _independent(
    lines: list[dict[str, Any]], start: float, end: float
) -> dict[str, dict[str, Any]]:
    """Every figure of the report, from the simulate events and the scenario files alone."""
    jobs, nominal = _jobs(), _nominal()
    figs: dict[str, dict[str, Any]] = {}

    def fig(name: str) -> dict[str, Any]:
        return figs.setdefault(
            name,
            {"admitted": 0, "finished": 0, "preempted": 0, "waits": [], "used": {}, "over": {}},
        )

    running: dict[str, tuple[str, str, dict[Cell, int]]] = {}
    requeued: dict[str, float] = {}
    last = start
    for line in [*lines[:-1], {"t": end, "event": "End"}]:
        t = min(max(line["t"], start), end)
        _integrate(running, nominal, fig, t - last)
        last = t
        inside = start <= line["t"] <= end
        wl: str = line.get("workload", "")  # every event but the closing End names one
        if line["event"] == "Admitted":
            job = jobs[line["job"]]
            usage = {
                (flavor, res): job["per_pod"][res] * ps["count"]
                for ps in line["podSets"]
                for res, flavor in ps["flavors"].items()
            }
            running[wl] = (line["clusterQueue"], job["lq"], usage)
            if inside:
                for name in (line["clusterQueue"], job["lq"]):
                    fig(name)["admitted"] += 1
                    # Kueue's QueuedWaitTime: since the latest requeue, else since creation.
                    fig(name)["waits"].append(line["t"] - requeued.get(wl, job["created"]))
        elif line["event"] == "Requeued":
            requeued[wl] = line["t"]
        elif line["event"] in ("Evicted", "Finished") and wl in running:
            cq, lq, _ = running.pop(wl)
            if inside and line["event"] == "Finished":
                fig(cq)["finished"] += 1
                fig(lq)["finished"] += 1
        elif line["event"] == "Preempted" and inside:
            cq, lq, _ = running[wl]
            fig(cq)["preempted"] += 1
            fig(lq)["preempted"] += 1
    return figs


def _cq_of_lq(lines: list[dict[str, Any]]) -> dict[str, str]:
    jobs = _jobs()
    return {
        jobs[line["job"]]["lq"]: line["clusterQueue"]
        for line in lines
        if line["event"] == "Admitted"
    }


def _want(lines: list[dict[str, Any]], start: float, end: float) -> dict[str, dict[str, Any]]:
    """The report's JSON fields per queue, computed independently."""
    nominal, lq_cq = _nominal(), _cq_of_lq(lines)
    span = end - start
    out = {}
    for name, f in _independent(lines, start, end).items():
        cq = name if name in nominal else lq_cq[name]
        utilisation = {
            cell: f["used"].get(cell, 0) / (n * span)
            for cell, n in sorted(nominal[cq].items())
            if n > 0
        }
        borrowing = (
            {cell: f["over"][cell] / used for cell, used in f["used"].items() if used > 0}
            if name in nominal
            else {}
        )
        out[name] = {
            "admitted": f["admitted"],
            "finished": f["finished"],
            "waitP50": _nearest_rank(f["waits"], 50),
            "waitP95": _nearest_rank(f["waits"], 95),
            "waitMax": max(f["waits"], default=None),
            "preemptionsPer100Admissions": (
                100 * f["preempted"] / f["admitted"] if f["admitted"] else None
            ),
            "utilisation": utilisation,
            "borrowing": borrowing,
        }
    return out


def _got(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "admitted": item["admitted"],
        "finished": item["finished"],
        "waitP50": item["waitP50"],
        "waitP95": item["waitP95"],
        "waitMax": item["waitMax"],
        "preemptionsPer100Admissions": item["preemptionsPer100Admissions"],
        "utilisation": {(c["flavor"], c["resource"]): c["fraction"] for c in item["utilisation"]},
        "borrowing": {(c["flavor"], c["resource"]): c["fraction"] for c in item["borrowing"]},
    }


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("since", "want_start"),
    [
        pytest.param(None, 0.0, id="whole run"),
        pytest.param("5m", 330.0, id="last 5 minutes of a 10m30s run"),
    ],
)
def test_report_figures_match_the_simulated_events(
    database_url: str, since: str | None, want_start: float
) -> None:
    lines = [
        json.loads(x)
        for x in _invoke(["simulate", *SAMPLES, "--record", database_url]).splitlines()
    ]
    end = lines[-1]["t"]
    args = ["report", "--db", database_url, "--format", "json"]
    if since is not None:
        args += ["--since", since]
    report = json.loads(_invoke(args))
    got = {item["name"]: _got(item) for item in report}
    want = _want(lines, want_start, end)
    assert set(got) == set(want) == {"team-a", "team-b", "team-a/training", "team-b/training"}
    # The whole run exercises every figure: preemptions and borrowing included.
    assert since is not None or any(f["preemptionsPer100Admissions"] for f in want.values())
    assert any(v for f in want.values() for v in f["borrowing"].values())
    for name, figures in want.items():
        for key in ("utilisation", "borrowing"):
            assert got[name].pop(key) == pytest.approx(figures.pop(key)), (name, key)
        assert got[name] == pytest.approx(figures), name


def test_report_table_and_csv_carry_the_same_queues(tmp_path: pathlib.Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    _invoke(["simulate", *SAMPLES, "--record", db])
    table = _invoke(["report", "--db", db]).splitlines()
    assert table[0] == "window: 0s to 10m30s after the run started"
    assert table[2].split()[:4] == ["CLUSTERQUEUE", "ADMITTED", "FINISHED", "WAIT"]
    assert table[3].startswith("team-a ")
    rows = list(csv.DictReader(io.StringIO(_invoke(["report", "--db", db, "--format", "csv"]))))
    report = json.loads(_invoke(["report", "--db", db, "--format", "json"]))
    assert len(rows) == sum(len(item["utilisation"]) or 1 for item in report)
    assert {r["name"] for r in rows} == {item["name"] for item in report}


def test_report_plot_is_a_png(tmp_path: pathlib.Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    _invoke(["simulate", *SAMPLES, "--record", db])
    png = tmp_path / "report.png"
    _invoke(["report", "--db", db, "--plot", str(png)])
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1000, 600)
    assert len(data) > 10_000


def test_report_on_an_empty_store_says_so(tmp_path: pathlib.Path) -> None:
    result = CliRunner().invoke(cli.main, ["report", "--db", f"sqlite:///{tmp_path / 'h.db'}"])
    assert result.exit_code == 1
    assert "no run recorded" in result.output


def test_report_plot_without_matplotlib_says_which_extra_to_install(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # matplotlib is the extra berth[plot]: the image and a plain install do not have it.
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )
    png = tmp_path / "report.png"
    result = CliRunner().invoke(
        cli.main, ["report", "--db", f"sqlite:///{tmp_path / 'h.db'}", "--plot", str(png)]
    )
    assert result.exit_code == 2
    assert "pip install 'berth[plot]'" in result.output
    assert not png.exists()
