"""Development and benchmark tools: the local control plane, the benchmark harness and commands.

Nothing in the production layers (``api`` … ``entry``) imports this package; an import-linter
contract keeps it so. The ``dev``, ``up`` and ``bench`` commands reach the ``berth`` command line
through the ``berth.commands`` entry-point group (``commands``). Tests and ``scripts/`` use the
control plane (``devcluster``) directly.
"""
