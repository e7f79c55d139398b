"""What every job kind is built on (Kueue's ``pkg/controller/jobframework``).

``protocol``: the ``Integration`` every kind answers and the optional capabilities some do;
``workload_body``: the Workload a job makes and how an admission runs it; ``podsets``: a pod
template placed on its flavors; ``merge``: JSON merge patches; ``placement``: the pod side of
topology placement.
"""
