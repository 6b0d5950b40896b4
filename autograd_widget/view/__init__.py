"""view: what is drawn, computed from records and the stepper's state (no torch calls).

Module paths and folds, repeated blocks, the visible graph, the layered layout, the Scene that
owns them, the step-state arrays and the inspector's data. Imports `engine`, `core`, `util`.
"""

__all__: list[str] = []
