"""wire: the protocol between Python and the front-end.

The graph payload codec (binary buffers, string tables) and ONE table of messages (name ->
validator, handler, reply) and state keys; `js/src/protocol.js` lists the same names. Imports the
layers below it.
"""

__all__: list[str] = []
