"""wire: the widget protocol. The graph payload codec (`payload`), the one table of messages,
state keys and trait names (`protocol`), how a refused message is quoted in its warning
(`quoting`), the `Session` its handlers act on (`session`) and a watched training run's payloads
(`trainpayload`: the timeline, op rows, gains); a rank group's selector and rank switch
(`rankswitch`).
Imports view and below.
"""

__all__: list[str] = []
