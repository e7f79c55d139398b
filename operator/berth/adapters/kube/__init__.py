"""The Kubernetes adapter: the only package that talks to the API server (kubernetes_asyncio).

``client`` opens a session from a kubeconfig and sends raw requests; ``workloads``, ``jobs``,
``queues_status`` and ``events`` are the writes the operator makes; ``leader`` runs a task only
while this replica holds a Lease; ``errors`` is the error tree every call raises.
"""
