"""Simulator graphs with dynamic shapes, shared by the pipeline tests.

Every graph works per pixel (or per row of pixels), so padding an input up
to a gear never reaches the values that are kept: a pipeline's result must
equal running the ``Model`` objects by hand, exactly.
"""

import numpy as np

from ascend_engine import sim

DET_GEARS = [(8, 8), (16, 16), (16, 32), (32, 32)]
REC_GEARS = [[8, 8], [8, 16], [16, 16], [16, 32], [32, 32]]   # every detector output shape, and one more
LINE_WIDTHS = [8, 16, 32]                                      # the line reader's width gears


def detector():
    """Per-channel scale and shift, relu, then a 3 -> 4 projection per pixel (NHWC) and its channel sum."""
    rng = np.random.default_rng(21)
    g = sim.Graph("det")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    y = g.relu(g.add(g.mul(x, rng.standard_normal((1, 3, 1, 1)).astype(np.float32)),
                     rng.standard_normal((1, 3, 1, 1)).astype(np.float32)))
    feat = g.matmul(g.transpose(y, (0, 2, 3, 1)), g.const(rng.standard_normal((3, 4)).astype(np.float32)))
    g.output("feat", feat, format="NHWC")
    g.output("energy", g.sum(feat, axes=3))
    return g


def recognizer(name="rec"):
    """Per pixel: a 4 -> 5 projection, softmax over the classes, and the logits' sum."""
    rng = np.random.default_rng(22)
    g = sim.Graph(name)
    f = g.input("feat", "float32", (1, "h", "w", 4))
    logits = g.matmul(f, g.const(rng.standard_normal((4, 5)).astype(np.float32)))
    g.output("probs", g.softmax(logits, axis=-1))
    g.output("score", g.sum(logits, axes=3))
    return g


def line_reader(rows=1):
    """A text-line recognizer: crops of 8 x width x 4, ``rows`` per execution
    (-1: a dims gear), the width a dims gear; per pixel a 4 -> 5 projection
    and softmax, and the logits' sum per pixel."""
    rng = np.random.default_rng(23)
    g = sim.Graph("line")
    c = g.input("crop", "float32", ("n" if rows == -1 else rows, 8, "w", 4))
    logits = g.matmul(c, g.const(rng.standard_normal((4, 5)).astype(np.float32)))
    g.output("probs", g.softmax(logits, axis=-1))
    g.output("score", g.sum(logits, axes=3))
    return g


def image(rng, h, w):
    """A random (1, 3, h, w) float32 image."""
    return rng.standard_normal((1, 3, h, w)).astype(np.float32)
