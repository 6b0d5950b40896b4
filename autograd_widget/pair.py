"""Two recordings side by side: `aw.side_by_side(a, b)`.

Two replay widgets of two recordings of the same program (two ranks of a distributed job, two
runs), each drawing the edges whose gradients differ from the other's in their own colour
(`explore(a, compare_to=b)`), stepped together: a step, Back, Run or Reset in either moves the
other to the same position (the engine may have run the nodes in another order on the other
side: the other side then shows the same number of steps).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import ipywidgets

from .engine.record.recording import Recording
from .engine.record.replay import recording_name
from .export.html import save_pair_html, start_step
from .widget import AutogradWidget

__all__ = ["RecordingPair", "side_by_side"]


class RecordingPair(ipywidgets.HBox):
    """Two linked replay widgets in one row (`left`, `right`); `differences` lists the edge ids
    whose gradients differ (`aw.compare_recordings`)."""

    left: AutogradWidget
    right: AutogradWidget

    def __init__(self, a: Recording, b: Recording, *, names: tuple[str, str] | None = None,
                 **options: Any) -> None:
        left = AutogradWidget(a, compare_to=b, **options)
        right = AutogradWidget(b, compare_to=a, **options)
        na, nb = names or (_name(a, "first"), _name(b, "second"))
        super().__init__([
            ipywidgets.VBox([ipywidgets.HTML(f"<b>{_escape(na)}</b>"), left]),
            ipywidgets.VBox([ipywidgets.HTML(f"<b>{_escape(nb)}</b>"), right]),
        ])
        self.left, self.right = left, right
        #: The two sides' titles.
        self.names: tuple[str, str] = (na, nb)
        self.differences: list[str] = left.differences
        self._moving = False
        left.stepper.add_listener(self._follow_left)
        right.stepper.add_listener(self._follow_right)

    def _follow(self, source: AutogradWidget, target: AutogradWidget) -> None:
        if self._moving:
            return
        self._moving = True
        try:
            src, dst = source.stepper, target.stepper
            pos = min(src.position, len(dst.order))
            with dst.batch():
                # a replay undoes a step in O(1): Back, not a reset and a walk from the start
                if dst.failure is not None:
                    dst.back()
                while dst.position > pos:
                    dst.back()
                while dst.position < pos:
                    rec = dst.step()
                    if rec is None or rec.error is not None:
                        break
        finally:
            self._moving = False

    def _follow_left(self, _st: Any) -> None:
        self._follow(self.left, self.right)

    def _follow_right(self, _st: Any) -> None:
        self._follow(self.right, self.left)

    def save_html(
        self, path: str | os.PathLike[str], title: str | None = None,
        description: str | None = None, *, start: int | Literal["current"] = 0,
    ) -> Path:
        """Write both recordings as one self-contained, offline page: side by side, each titled
        by its name, the edges that differ in their own colour, stepped together (a move in
        either brings the other to the same number of steps, as here).

        Args:
            path: the .html file to write (its folder is created).
            title: the page's title (None: the left recording's default title).
            description: a paragraph under the title, plain text (None: none).
            start: the step both sides open at: a step number, or "current" (where the left
                side is now).

        Returns:
            The path written.

        Example:
            >>> import tempfile, pathlib
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as a:
            ...     loss.backward(retain_graph=True)
            >>> with aw.record(loss) as b:
            ...     loss.backward()
            >>> pair = aw.side_by_side(a, b, names=("run 1", "run 2"))
            >>> with tempfile.TemporaryDirectory() as d:
            ...     pair.save_html(pathlib.Path(d) / "pair.html").name
            'pair.html'
        """
        return save_pair_html(self.left, self.right, path, names=self.names, title=title,
                              description=description,
                              start=start_step(self.left.stepper, start))

    def close(self) -> None:
        """Close both widgets and the row.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as a:
            ...     loss.backward(retain_graph=True)
            >>> with aw.record(loss) as b:
            ...     loss.backward()
            >>> pair = aw.side_by_side(a, b); pair.close(); pair.left.graph.is_live
            False
        """
        for side in (getattr(self, "left", None), getattr(self, "right", None)):
            if side is not None:  # None: construction failed before (e.g. graphs that differ)
                side.close()
        super().close()


def _name(rec: Recording, default: str) -> str:
    name = recording_name(rec)
    return default + " recording" if name == "the compared recording" else name


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def side_by_side(a: Recording, b: Recording, *, names: tuple[str, str] | None = None,
                 **options: Any) -> RecordingPair:
    """Show recordings `a` and `b` side by side, stepped together, the edges whose gradients
    differ drawn in their own colour on both (options as `aw.explore`: collapse, orientation,
    height). `names` titles the two sides (default: "rank N" from the recordings).

    Guarantees: ValueError (naming the first structural difference) when the graphs differ.

    Example:
        >>> w = torch.ones(2, requires_grad=True)
        >>> loss = (w * 3).sum()
        >>> with aw.record(loss) as a:
        ...     loss.backward(retain_graph=True)
        >>> with aw.record(loss) as b:
        ...     loss.backward()
        >>> pair = aw.side_by_side(a, b); pair.differences
        []
        >>> _ = pair.left.stepper.step(); pair.right.stepper.position
        1
    """
    return RecordingPair(a, b, names=names, **options)
