"""Entry points and the composition root: the ``berth`` CLI and the operator's start-up.

``cli`` is the ``berth`` command, which loads one ``*_cmd`` module per command when it runs;
``operator_main`` wires the operator's adapters, ``World``, tasks and webhooks together for
``berth run``; ``live_state`` is the live source of ``berth explain`` and ``berth queues``.
Nothing below this layer imports it; ``berth.devtools`` adds its commands through an entry point.
"""
