"""What the plot tests check of a PNG: a real size, and drawn on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import image as mpimg


def assert_drawn(png: Path) -> None:
    img = mpimg.imread(png)
    h, w = img.shape[:2]
    assert w >= 500 and h >= 350, f"{png.name} is only {w}x{h}"
    rgb = img[..., :3]
    assert rgb.std() > 0.05, f"{png.name} looks blank"
    # more than a frame and some text: a real share of the pixels is not background
    non_white = np.mean(np.any(rgb < 0.9, axis=-1))
    assert non_white > 0.03, f"{png.name}: only {non_white:.1%} of pixels drawn"
