"""The pod integration: plain Pods admitted as a group (Kueue's ``pkg/controller/jobs/pod``).

``group`` assembles and reads a group from its members, ``integration`` is its ``Integration``
(every patch a patch per member), ``rules`` are the Pod webhooks' rules.
"""
