"""wire: the widget protocol. The graph payload codec (`payload`), the one table of messages,
state keys and trait names (`protocol`) and the `Session` its handlers act on (`session`).
Imports view and below.
"""

__all__: list[str] = []
