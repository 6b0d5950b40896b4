"""wire: the widget protocol. The graph payload codec (`payload`), the one table of messages,
state keys and trait names (`protocol`), what a message is made of and the argument checks its
families share (`message`), the handlers by family: stepping (`stepmessages`), drawing
(`drawmessages`), inspection (`inspectmessages`), editing (`editmessages`) and a watch
(`watchmessages`); the host's own messages, the front-end bundle and its loader
(`hostmessages`); how a refused message is quoted in its warning (`quoting`), the `Session`
its handlers act on (`session`), what `aw.explore()` was given resolved into the run a Session
shows (`opening`) and a watched training run's payloads (`trainpayload`: the timeline, op rows,
gains); a rank group's selector and rank switch (`rankswitch`).
Imports view and below.
"""

__all__: list[str] = []
