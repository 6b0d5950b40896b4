"""wire: the widget protocol. The graph payload codec (`payload`), the one table of messages,
state keys and trait names (`protocol`), the `Session` its handlers act on (`session`) and a
watched training run's payloads (`trainpayload`: the timeline, op rows, gains).
Imports view and below.
"""

__all__: list[str] = []
