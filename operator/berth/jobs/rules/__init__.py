"""The webhooks' and the job controller's decisions about jobs, pure and kind-independent.

``managed`` (which jobs Berth manages), ``unqueued`` (work naming no queue where only queued
work runs), ``job_updates`` (what an update of a managed job may change), ``job_sync`` (how a
job and its Workload drift apart, and the equivalence of a running job with its admission),
``child_jobs`` (a parent's children), ``workload_updates`` (what an update of a Workload may
change).
"""
