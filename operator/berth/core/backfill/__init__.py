"""The Backfill queueing strategy (Berth's own; Slurm's backfill, which Kueue has no equivalent of).

``planning`` places a reservation for each blocked holder at its earliest start and tests whether
a later workload would delay one; ``reservations`` builds and keeps those plans for a cycle;
``estimates`` predicts how long admitted work runs. Pure, like the rest of ``core``.
"""
