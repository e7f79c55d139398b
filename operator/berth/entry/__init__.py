"""Entry points and the composition root: the ``berth`` CLI, and later the operator's handlers.

Wires adapters, state and core together for each command. Nothing below this layer imports it.
"""
