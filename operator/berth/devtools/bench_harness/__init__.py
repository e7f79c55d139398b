"""``berth bench harness``: the scheduler performance harness on a real control plane.

``command`` parses the options and runs the pieces of ``berth.devtools.benchharness`` in order.
"""
