"""view: what is drawn. Module paths (`modules`), repeated blocks (`repeats`), the visible graph
(`visible`), the layout (`layout`), the step-state arrays (`state`), labels (`labels`), the
`Scene` that owns folds + visible graph + layout + state (`scene`), and inspector data as
functions of (scene, stepper) (`inspect`). Torch-free; imports only engine/core/util.
"""

__all__: list[str] = []
