"""The pure scheduling core: given a snapshot, the queue heads and ``now``, decide.

Owns the quota tree over ClusterQueues and Cohorts, flavor assignment, gang and partial admission,
ordering of entries within and across ClusterQueues, preemption and fair sharing, and the
explanations attached to every pending workload. Synchronous and deterministic; decisions are
returned as data. Called by ``berth.state`` drivers: the operator's scheduler loop and the
simulator.
"""
