"""Berth's label and annotation keys on jobs and pods: one vocabulary every layer reads.

The keys a user or Berth writes on a job, its pod templates and its pods (Kueue's
``kueue.x-k8s.io/*`` twins, read under ``honorKueueLabels``); the keys on Workloads and of
topology placement live beside their models (``api.workload``, ``api.topology``), and a
framework's own labels beside its kind (``jobs.jobset.NAME_LABEL``, ...).
"""

from __future__ import annotations

from berth.api import workload

QUEUE_LABEL = "berth.dev/queue-name"
"""On a job: the LocalQueue it is submitted to."""
PRIORITY_LABEL = "berth.dev/priority-class"
"""On a job: the WorkloadPriorityClass it names."""
MIN_PARALLELISM = "berth.dev/job-min-parallelism"
"""On a Job: the fewest pods worth starting (partial admission)."""
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
JOB_UID_LABEL = workload.JOB_UID_LABEL
"""On a Workload and on a started job's pod templates: the job's uid."""
POD_SET_LABEL = "berth.dev/podset"
"""Put on the pod template of a started job: the pod set its pods belong to."""
UNSUPPORTED_OWNER_LABEL = "berth.dev/unsupported-owner"
"""On the Workload of a child job whose controller is a kind Berth does not integrate."""
