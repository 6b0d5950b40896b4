"""export: the drawing outside a live kernel.

A standalone, offline HTML page that replays a recorded run with the same front-end, and a plotly
figure of the current state. Imports the layers below it, never the widget.
"""

__all__: list[str] = []
