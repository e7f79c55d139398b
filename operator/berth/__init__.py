"""Berth: admission control and queueing for GPU batch work on Kubernetes.

The package is layered; each layer imports only from the layers below it (checked by
import-linter, see ``pyproject.toml``):

- ``berth.api``: typed models of the ``berth.dev/v1beta1`` kinds, names, quantities, validation.
- ``berth.core``: the pure scheduling core (quota tree, flavors, queueing order, preemption).
- ``berth.state``: the cache and per-ClusterQueue queues fed by events; snapshots for the core.
- ``berth.adapters``: Kubernetes, the history database, metrics and the local control plane.
- ``berth.sim``: the simulator that drives ``state`` and ``core`` on a virtual clock.
- ``berth.entry``: the CLI, kopf handlers, webhooks, the scheduler loop; the composition root.
"""

__version__ = "0.1.0"
