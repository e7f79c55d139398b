"""Berth's admission webhooks: what each answers, how they are served, and how they are registered.

- ``reviews``: the AdmissionReview answer shapes every decision returns (allow, patch, deny).
- ``job_admission``: jobs of every integrated kind, their child jobs, and their ``scale``.
- ``pod_admission``: pod groups' members and pods placed by topology.
- ``unqueued_admission``: what a namespace Berth closes to unqueued work refuses.
- ``berth_admission``: Berth's own kinds (defaults and validation).
- ``routes``: the aiohttp application mapping each path to its decision.
- ``server``: one replica's TLS endpoint, and the local configurations it registers.
- ``certificates``: where the serving certificate comes from (local or a shared Secret).
- ``configurations``: the Mutating- and ValidatingWebhookConfiguration objects — names, paths,
  rules, selectors, policies — that the operator registers and ``berth manifests`` writes.

Called by ``berth.entry.operator_main``, ``berth.entry.run_cmd`` and ``berth.entry.manifests_cmd``.
"""
