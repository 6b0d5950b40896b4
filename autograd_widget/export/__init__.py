"""export: outside the notebook. The standalone HTML page (`html`): a walkthrough of the whole
run, walked through the protocol by a Session of its own; every rank's run in one page for a rank
group (`rankpage`); and the plotly figure (`figure`).
"""

__all__: list[str] = []
