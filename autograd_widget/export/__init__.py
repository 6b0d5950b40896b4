"""export: outside the notebook. The standalone HTML page (`html`): a walkthrough of the whole
run, walked through the protocol by a Session of its own; and the plotly figure (`figure`).
"""

__all__: list[str] = []
