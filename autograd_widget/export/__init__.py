"""export: outside the notebook. The standalone HTML page of a recorded run (`html`), driven
through the protocol by a Session of its own, and the plotly figure (`figure`).
"""

__all__: list[str] = []
