"""A real Kubernetes control plane on loopback, for development and for the integration tiers.

The binaries are built from their Go modules by ``scripts/build-control-plane`` into a per-user
cache (``binaries``); ``launcher.ControlPlane`` starts etcd and kube-apiserver with their own PKI
(``pki``), optionally kube-controller-manager, kube-scheduler and kwok with fake GPU nodes
(``kwok``), as supervised processes (``processes``). ``berth dev`` and the pytest fixtures in
``tests/conftest.py`` are its callers.
"""
