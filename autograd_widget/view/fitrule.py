"""THE rule of "the whole graph fits": a layout's extent, a drawing's pixels, legible labels.

A layout is measured in layout units (one unit = one line of label text, `placement`); the
front-end draws it at one scale for both axes, `ppu` pixels per unit, and a label's font is
`FONT_PER_UNIT * ppu` px. Fit (js/src/camera.js `fitView`) shows the whole layout inside the
plotting area (the drawing less `MARGIN`, less `FIT_PAD` on every side) at the largest scale up
to `MAX_FIT_PPU`; the labels are legible when the font is at least `LEGIBLE_PX`. collapse="auto"
(`autofold`) asks the same question of a candidate fold: does its layout fit the drawing at a
legible scale? Both sides use these numbers (tests/view/test_fitrule.py reads them out of
camera.js and geometry.js and compares).

Until the front-end has told Python its size (the first render, a saved notebook, the
standalone page), the drawing is assumed to be `DEFAULT_WIDTH` wide and as tall as the widget's
height less its toolbars (`CHROME_PX`); with `height=None` the drawing may take
`AUTO_HEIGHT_FRACTION` of a typical window (`TYPICAL_WINDOW_PX`), the widget at least
`MIN_AUTO_HEIGHT`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AUTO_HEIGHT_FRACTION",
    "CHROME_PX",
    "DEFAULT_WIDTH",
    "FIT_PAD",
    "FONT_PER_UNIT",
    "LEGIBLE_PPU",
    "LEGIBLE_PX",
    "MARGIN",
    "MAX_FIT_PPU",
    "MIN_AUTO_HEIGHT",
    "TYPICAL_WINDOW_PX",
    "Viewport",
    "default_viewport",
    "fit_scale",
]

#: The smallest label font (CSS px) Fit shows (camera.js LEGIBLE_PX).
LEGIBLE_PX = 11.0
#: Label font per layout unit (camera.js FONT_PER_UNIT).
FONT_PER_UNIT = 0.78
#: Pixels per layout unit at which labels reach `LEGIBLE_PX` (camera.js LEGIBLE_PPU).
LEGIBLE_PPU = LEGIBLE_PX / FONT_PER_UNIT + 1e-6
#: Fit never spreads a small graph further than this (camera.js MAX_FIT_PPU).
MAX_FIT_PPU = 19.0
#: Room (px) Fit leaves around the graph inside the plotting area (camera.js FIT_PAD).
FIT_PAD = 14.0
#: The drawing's margins (px): left, right (the colour bar), top, bottom (geometry.js MARGIN).
MARGIN = (8.0, 64.0, 8.0, 8.0)
#: The drawing's width (px) assumed before the front-end measured it: a JupyterLab notebook
#: cell at 1280 px with the file browser open.
DEFAULT_WIDTH = 820.0
#: The widget's rows above and below the drawing (toolbars, status, legend), in px.
CHROME_PX = 150.0
#: `height=None`: the drawing takes at most this fraction of the window's height...
AUTO_HEIGHT_FRACTION = 0.7
#: ...of a window this tall, before the front-end said how tall its window is...
TYPICAL_WINDOW_PX = 900.0
#: ...and the widget at least this many px.
MIN_AUTO_HEIGHT = 420.0


@dataclass(frozen=True)
class Viewport:
    """The drawing's size in CSS px (the canvas: plotting area plus margins).

    Example:
        >>> Viewport(800, 450).width
        800
    """

    width: float
    height: float


def default_viewport(height: int | None = None) -> Viewport:
    """The drawing's size before the front-end measured it: `DEFAULT_WIDTH` wide, the widget's
    `height` less `CHROME_PX` tall (`height=None`: `AUTO_HEIGHT_FRACTION` of
    `TYPICAL_WINDOW_PX`, what the drawing may grow to).

    Example:
        >>> default_viewport(600), default_viewport(None).height
        (Viewport(width=820.0, height=450.0), 630.0)
    """
    if height is None:
        return Viewport(DEFAULT_WIDTH, max(MIN_AUTO_HEIGHT - CHROME_PX,
                                           AUTO_HEIGHT_FRACTION * TYPICAL_WINDOW_PX))
    return Viewport(DEFAULT_WIDTH, max(120.0, float(height) - CHROME_PX))


def fit_scale(width_units: float, height_units: float, viewport: Viewport) -> float:
    """The scale (px per unit) at which Fit shows a layout of this extent whole in `viewport`,
    before the `MAX_FIT_PPU` cap: the whole graph is legible iff it is >= `LEGIBLE_PPU`.

    Guaranteed: the same number js/src/camera.js `fitView` computes for the same bounds and
    size (uncapped).

    Example:
        >>> round(fit_scale(10, 5, Viewport(800, 400)), 2)  # (800-72-28)/10, (400-16-28)/5
        70.0
        >>> fit_scale(100, 40, Viewport(800, 400)) >= LEGIBLE_PPU
        False
    """
    ml, mr, mt, mb = MARGIN
    w = max(20.0, max(40.0, viewport.width - ml - mr) - 2 * FIT_PAD)
    h = max(20.0, max(40.0, viewport.height - mt - mb) - 2 * FIT_PAD)
    return min(w / max(width_units, 1e-6), h / max(height_units, 1e-6))
