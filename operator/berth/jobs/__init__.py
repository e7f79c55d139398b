"""The job kinds Berth queues, beside the scheduling core (Kueue's ``jobframework``, ``jobs/*``).

``framework`` is what every kind is built on (the ``Integration`` protocol and its optional
capabilities, the Workload body a job makes, pod-set placement, merge patches); one module per
kind holds that kind's reading of its foreign schema and its ``Integration`` (``batchjob``,
``jobset``, ``kubeflow``, ``trainjob``, ``ray``, ``pod``); ``registry`` is the only module that
names every kind; ``rules`` are the webhooks' and the job controller's decisions about jobs.
Pure, like ``core`` (which never imports this package); ``state`` and ``jobs`` never import
each other. The drivers (``operator``, ``sim``) reach kinds only through ``framework`` and
``registry``.
"""
