"""The fit rule is ONE rule: the numbers Python folds by (view/fitrule.py) are the numbers the
front-end's Fit uses (js/src/camera.js, geometry.js, canvas.js, sizing.js), and Python's scale
is camera.js's `fitView` scale."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograd_widget.view import clusters, fitrule
from autograd_widget.view.fitrule import Viewport, default_viewport, fit_scale

JS = Path(__file__).resolve().parents[2] / "js" / "src"


def js_number(file: str, name: str) -> float:
    m = re.search(rf"export const {name} = ([0-9.]+)", (JS / file).read_text(encoding="utf-8"))
    assert m, f"{name} not found in {file}"
    return float(m.group(1))


def test_python_and_the_front_end_share_the_fit_numbers():
    assert js_number("camera.js", "LEGIBLE_PX") == fitrule.LEGIBLE_PX
    assert js_number("camera.js", "FONT_PER_UNIT") == fitrule.FONT_PER_UNIT
    assert js_number("camera.js", "MAX_FIT_PPU") == fitrule.MAX_FIT_PPU
    assert js_number("camera.js", "FIT_PAD") == fitrule.FIT_PAD
    assert js_number("canvas.js", "FRAME_TITLE") == clusters.FRAME_TITLE
    assert js_number("sizing.js", "AUTO_FRACTION") == fitrule.AUTO_HEIGHT_FRACTION
    assert js_number("sizing.js", "MIN_AUTO_PX") == fitrule.MIN_AUTO_HEIGHT
    m = re.search(r"MARGIN = Object\.freeze\(\{ l: (\d+), r: (\d+), t: (\d+), b: (\d+) \}\)",
                  (JS / "geometry.js").read_text(encoding="utf-8"))
    assert m and tuple(float(v) for v in m.groups()) == fitrule.MARGIN


@pytest.mark.parametrize("w,h,vw,vh", [(10, 5, 800, 400), (100, 3, 820, 450), (3, 90, 600, 900)])
def test_fit_scale_is_camera_fitview(w, h, vw, vh):
    # camera.js fitView: area = size less MARGIN, less FIT_PAD each side; ppu = min(w, h ratios)
    ml, mr, mt, mb = fitrule.MARGIN
    want = min((vw - ml - mr - 2 * fitrule.FIT_PAD) / w, (vh - mt - mb - 2 * fitrule.FIT_PAD) / h)
    assert fit_scale(w, h, Viewport(vw, vh)) == pytest.approx(want)


def test_default_viewport_before_the_front_end_measures():
    assert default_viewport(600) == Viewport(fitrule.DEFAULT_WIDTH, 600 - fitrule.CHROME_PX)
    assert default_viewport(None).height == pytest.approx(
        fitrule.AUTO_HEIGHT_FRACTION * fitrule.TYPICAL_WINDOW_PX)
