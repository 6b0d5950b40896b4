"""Read by the type checker, not run: a `Stepper` and a `Replay` each ARE a `Stepping`.

`mypy --strict` checks the return below against engine/interface.py's `Stepping` protocol
member by member (names, signatures, property types), so a member added to the interface
and forgotten in one class, or a signature that drifts, fails the type check. The behaviour
behind the signatures is held by test_interface_contract.py.

Run: `python -m mypy --strict --follow-imports=silent autograd_widget/engine/interface.py
tests/engine/step/typecheck_stepping.py autograd_widget/__init__.py`
"""

from __future__ import annotations

from autograd_widget.engine.interface import Stepping
from autograd_widget.engine.record.replay import Replay
from autograd_widget.engine.step.stepper import Stepper

__all__: list[str] = []


def _conforms(stepper: Stepper, replay: Replay) -> tuple[Stepping, Stepping]:
    return stepper, replay
