"""The development and benchmark subcommands, plugged into ``berth`` by entry point.

``berth.entry.cli`` loads this table through the ``berth.commands`` entry-point group
(``pyproject.toml``); each module defines ``command`` and is imported only when invoked.
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "dev": (
        "berth.devtools.dev_cmd",
        "Start, stop or print the environment of a local control plane with fake GPU nodes.",
    ),
    "bench": (
        "berth.devtools.bench_cmd",
        "Benchmarks that print figures: the scheduling core at Kueue's performance shapes.",
    ),
    "up": (
        "berth.devtools.up_cmd",
        "Start a local GPU cluster, the operator and the sample queues; run the demo Jobs.",
    ),
}
"""Name: (module, one-line help shown by ``berth --help``)."""
