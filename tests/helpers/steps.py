"""Models for the native steps' tests (ascend_engine/steps/): a detector head
whose boxes a yolox decoder reads, and a classifier of crops, as sim.Graphs."""

import numpy as np

from ascend_engine import sim

SIDE = 32
STRIDES = (8, 16)
BOXES = sum((SIDE // s) ** 2 for s in STRIDES)      # 16 + 4 yolox cells
CLASSES = 3
CROP = (8, 6)                                        # (width, height)
LABELS = 10
MAX_IMAGES = 4
MAX_BOXES = 5


def head_graph(seed=0):
    """A detector head on (rows, 32, 32) images: yolox raw (rows, 20, 6), each value in (0, 1), and
    scores (rows, 20, 3)."""
    rng = np.random.default_rng(seed)
    g = sim.Graph("head")
    x = g.reshape(g.input("image", "float32", (-1, SIDE, SIDE)), (-1, SIDE * SIDE))
    w_raw = (rng.standard_normal((SIDE * SIDE, BOXES * 6)) * 0.01).astype(np.float32)
    w_sc = (rng.standard_normal((SIDE * SIDE, BOXES * CLASSES)) * 0.05).astype(np.float32)
    # offsets in (0, 1): every box's centre lies in its cell, so clipping never leaves an empty box
    g.output("raw", g.reshape(g.sigmoid(g.matmul(x, g.const(w_raw))), (-1, BOXES, 6)))
    g.output("scores", g.reshape(g.sigmoid(g.matmul(x, g.const(w_sc))), (-1, BOXES, CLASSES)))
    return g


def classifier_graph(seed=1):
    rng = np.random.default_rng(seed)
    g = sim.Graph("cls")
    x = g.reshape(g.input("crop", "float32", (-1, CROP[1], CROP[0])), (-1, CROP[0] * CROP[1]))
    w = rng.standard_normal((CROP[0] * CROP[1], LABELS)).astype(np.float32)
    g.output("logits", g.matmul(x, g.const(w)))
    return g
