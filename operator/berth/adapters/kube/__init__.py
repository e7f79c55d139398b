"""The Kubernetes adapter: the only package that talks to the API server (aiohttp, raw JSON).

``kubeconfig`` reads where the server is and who we are, ``credentials`` keeps that identity
fresh, ``client`` opens a session and sends raw requests; ``workloads``, ``jobs``,
``queues_status`` and ``events`` are the writes the operator makes; ``leader`` runs a task only
while this replica holds a Lease; ``errors`` is the error tree every call raises.
"""
