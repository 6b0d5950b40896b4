"""export: outside the notebook. The standalone HTML page (`html`: the whole step-through,
driven through the protocol by a Session of its own, replayable with no kernel) and the plotly
figure (`figure`).
"""

__all__: list[str] = []
