"""The operator: kopf handlers feeding state, the scheduler loop, the Job controller, webhooks.

``world`` holds what the handlers learn (no API calls); ``handlers`` registers them with kopf;
``scheduler`` and ``jobcontroller`` run on the leader and write through ``berth.adapters.kube``;
``statuses`` writes queue statuses; ``webhooks`` serves admission over TLS; ``main`` wires it all.
"""
