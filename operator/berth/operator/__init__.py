"""The operator's tasks: one of the two drivers of ``berth.state`` (the other is ``berth.sim``).

``world`` holds what the watch handlers learn (no API calls); ``handlers`` registers them with
kopf; ``scheduler``, ``jobcontroller``, ``lifecycle``, ``statuses`` and ``finalizers`` run on the
leader and write through ``berth.adapters.kube``; the ``webhooks`` package decides, serves
and registers admission over TLS. ``berth.entry.operator_main`` (the composition root) wires
them together.
"""
