"""Differential testing against real Kueue: random inputs through both schedulers, compared.

``case`` is one input (queues, priority classes, workloads, steps) and its Kueue YAML;
``generate`` draws cases from a seed; ``berth_run`` and ``kueue_run`` play a case through Berth's
simulator and through minimalkueue on a real API server; ``observation`` is what each saw at
every quiescent point and ``compare`` the divergences between them; ``shrink`` reduces a
failing case; ``campaign`` runs many and reports; ``command`` is ``berth bench differential``.
"""
