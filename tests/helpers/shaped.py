"""Simulator graphs with dynamic shapes, shared by the tests.

Every graph works per pixel (or per row of pixels), so padding an input up
to a gear never reaches the values that are kept: a pipeline's result must
equal running the ``Model`` objects (or ``sim.reference``) by hand, exactly.

For the pipeline tests: ``detector`` (image sizes ``DET_GEARS``), ``recognizer``
(dims ``REC_GEARS``) and ``line_reader`` (width gears ``LINE_WIDTHS``).

For the CLI and spec tests, a pipeline with dynamic shapes: an image-size
("hw") text detector feeding a dims-gear recognizer, saved as simulator
model files next to a spec that wires them.

The detector takes images (1, 3, H, W) at the image sizes ``DETECTOR_HW``
and gives a per-pixel map (1, H, W, 2) and its channel sum (1, H, W); the
recognizer reads that map at the dims gears ``RECOGNIZER_DIMS`` (one for
every detector gear, so every detector output is one of its gear inputs)
and gives per-pixel class scores.  ``build(folder)`` writes both models and
``pipeline.yaml``; ``reference(image)`` is what the pipeline must return,
computed with ``sim.reference`` on the graphs at the request's own size (the
graphs work per pixel, so the padding a gear adds never reaches the kept
values).
"""

import numpy as np

from ascend_engine import sim
from ascend_engine.sim.demo_models import SHAPED_DETECTOR_HW as DETECTOR_HW
from ascend_engine.sim.demo_models import SHAPED_DETECTOR_US as DETECTOR_US  # noqa: F401
from ascend_engine.sim.demo_models import SHAPED_RECOGNIZER_DIMS as RECOGNIZER_DIMS  # noqa: F401
from ascend_engine.sim.demo_models import SHAPED_RECOGNIZER_US as RECOGNIZER_US  # noqa: F401
from ascend_engine.sim.demo_models import SHAPED_SPEC_TEXT as SPEC  # noqa: F401
from ascend_engine.sim.demo_models import shaped_detector_graph as detector_graph
from ascend_engine.sim.demo_models import shaped_recognizer_graph as recognizer_graph
from ascend_engine.sim.demo_models import shaped_spec_text, write_shaped_demo


def write_spec(path, bench_shape=None):
    """Write the spec (``bench_shape``: the image's ``inputs.image.bench_shape``, or none)."""
    path.write_text(shaped_spec_text(bench_shape))
    return path


def build(folder, bench_shape=None):
    """Save det.om, rec.om and pipeline.yaml in ``folder`` (``sim make-demo --shapes``'s files, the
    spec named pipeline.yaml); returns the spec's path."""
    return type(folder)(write_shaped_demo(folder, "pipeline.yaml", bench_shape)["spec"])


def gear_of(height, width):
    """The detector gear a request of this image size runs (the smallest holding it), None if none does."""
    fits = [(h, w) for h, w in DETECTOR_HW if h >= height and w >= width]
    return min(fits, key=lambda hw: hw[0] * hw[1]) if fits else None


def reference(image):
    """The pipeline's outputs for one (1, 3, H, W) image, from the graphs at its own size."""
    det = sim.reference(detector_graph(), {"image": image})
    rec = sim.reference(recognizer_graph(), {"map": det["map"]})
    return {"energy": det["energy"], "classes": rec["classes"]}


# ---- graphs of the pipeline tests ------------------------------------------------

DET_GEARS = [(8, 8), (16, 16), (16, 32), (32, 32)]
REC_GEARS = [[8, 8], [8, 16], [16, 16], [16, 32], [32, 32]]   # every detector output shape, and one more
LINE_WIDTHS = [8, 16, 32]                                      # the line reader's width gears


def detector(h="h", w="w", name="det"):
    """Per-channel scale and shift, relu, then a 3 -> 4 projection per pixel (NHWC) and its channel sum
    (``h``, ``w``: sizes for the same graph at one fixed size)."""
    rng = np.random.default_rng(21)
    g = sim.Graph(name)
    x = g.input("image", "float32", (1, 3, h, w), format="NCHW")
    y = g.relu(g.add(g.mul(x, rng.standard_normal((1, 3, 1, 1)).astype(np.float32)),
                     rng.standard_normal((1, 3, 1, 1)).astype(np.float32)))
    feat = g.matmul(g.transpose(y, (0, 2, 3, 1)), g.const(rng.standard_normal((3, 4)).astype(np.float32)))
    g.output("feat", feat, format="NHWC")
    g.output("energy", g.sum(feat, axes=3))
    return g


def recognizer(name="rec", h="h", w="w"):
    """Per pixel: a 4 -> 5 projection, softmax over the classes, and the logits' sum."""
    rng = np.random.default_rng(22)
    g = sim.Graph(name)
    f = g.input("feat", "float32", (1, h, w, 4))
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


def crops_of(feat):
    """A host step cutting (h + w) % 5 crops of 8 x w x 4 from a detector's features
    (1, h, w, 4): none for some sizes, each crop i the features resized and scaled by i + 1."""
    _, h, w, _ = feat.shape
    n = (h + w) % 5
    out = np.zeros((n, 8, w, 4), np.float32)
    for i in range(n):
        out[i] = np.resize(feat[0], (8, w, 4)) * (i + 1)
    return out


def image(rng, h, w):
    """A random (1, 3, h, w) float32 image."""
    return rng.standard_normal((1, 3, h, w)).astype(np.float32)
