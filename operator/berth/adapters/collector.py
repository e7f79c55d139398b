"""Python's cyclic garbage collector, paused where it only costs; used by the simulator's run.

The cyclic collector exists for garbage that reference counting cannot free: objects that refer
to each other in a cycle. A full collection walks every tracked container the process holds, so
a heap of tens of thousands of workloads (each a tree of models, dicts and sets) costs hundreds of
milliseconds per walk. In a simulator run nothing is ever cyclic garbage: on both shapes of
``berth bench core`` the collector found none in 4,500 collections, while its walks took about a
quarter of the run's CPU and its pauses made the slowest scheduling cycles (1.7 s of a 1.8 s
cycle at 1,000 ClusterQueues). ``paused`` switches automatic collection off for a block; garbage
that is not cyclic is freed at once as always, and any cyclic garbage made meanwhile is found by
the first automatic collection after the block.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Run the block without automatic cyclic collections (restored as they were after it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
