"""The demo simulator models and the pipeline spec that chains them.

Three dense models with fixed device times -- an encoder (64 -> 128, 2 ms),
a mixer (128 -> 128, 3 ms) and a head (128 -> 10, softmax, 1 ms) -- each
built with :class:`ascend_engine.sim.Graph` for batch gears 1, 2, 4 and 8.
``python -m ascend_engine.demo`` runs them; ``ascend-engine sim make-demo DIR``
writes them with a ``pipeline.yaml`` that ``ascend-engine bench`` runs.

``sim make-demo DIR --shapes`` writes the dynamic-shape pair of docs/cli.md
("Pipelines with dynamic shapes") instead: an image-size text detector
``det.om`` (image sizes 8x16, 16x16, 24x32) feeding a dims-gear recognizer
``rec.om``, wired by ``ocr.yaml``.  Both graphs work per pixel, so padding a
request up to a gear never reaches the values kept (the tests rely on it).
"""

from __future__ import annotations

import os

import numpy as np

# (name, input width, output width, device time in microseconds)
DEMO_SPECS = (("encoder", 64, 128, 2000), ("mixer", 128, 128, 3000), ("head", 128, 10, 1000))
DEMO_GEARS = (1, 2, 4, 8)
SPEC_NAME = "pipeline.yaml"


def demo_graph(name: str, n_in: int, n_out: int, rng) -> object:
    """One demo model: ``gelu(x @ W + b)``, or ``softmax(...)`` for the head."""
    from ascend_engine import sim

    g = sim.Graph(name)
    x = g.input("x", "float32", (-1, n_in))
    w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
    h = g.add(g.matmul(x, g.const(w)), g.const(rng.standard_normal(n_out).astype(np.float32)))
    g.output("y", g.softmax(h) if name == "head" else g.gelu(h))
    return g


def _demo_models(folder):
    """Write the three demo models into ``folder``; returns [(name, path, graph)] in chain order."""
    rng = np.random.default_rng(1)   # fixed weights: the same files on every machine
    models = []
    for name, n_in, n_out, latency in DEMO_SPECS:
        g = demo_graph(name, n_in, n_out, rng)
        path = os.path.join(folder, f"{name}.om")
        g.save(path, batch_sizes=DEMO_GEARS, latency_us=latency)
        models.append((name, path, g))
    return models


DEMO_SPEC_TEXT = """\
# The demo pipeline: x -> encoder (2 ms) -> mixer (3 ms) -> head (1 ms) -> probs.
# Run it with:  ascend-engine bench {spec}
# Model paths are relative to this file's folder.  Schema: docs/pipeline-spec.md
device: 0
inputs:
  x: {{dtype: float32, shape: [-1, 64]}}    # -1: the batch dimension
models:
  - {{name: encoder, path: encoder.om, inputs: [x]}}
  - {{name: mixer, path: mixer.om, inputs: [encoder]}}
  - {{name: head, path: head.om, inputs: [mixer.y]}}
outputs:
  probs: head
compile:
  depth: 8
  streams: per-model
"""


def write_demo(folder) -> dict:
    """Write the demo models and ``pipeline.yaml`` into ``folder`` (created if needed).

    Returns ``{"spec": path, "models": {name: path}}``.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    models = _demo_models(folder)
    spec_path = os.path.join(folder, SPEC_NAME)
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(DEMO_SPEC_TEXT.format(spec=SPEC_NAME))
    return {"spec": spec_path, "models": {name: path for name, path, _ in models}}


# ---- the dynamic-shape pair (sim make-demo DIR --shapes) ------------------------------------------

SHAPED_DETECTOR_HW = [(8, 16), (16, 16), (24, 32)]
SHAPED_RECOGNIZER_DIMS = [[8, 16], [16, 16], [24, 32]]   # one per detector gear: every map is a gear input
SHAPED_DETECTOR_US = 300
SHAPED_RECOGNIZER_US = 200
SHAPED_SPEC_NAME = "ocr.yaml"
SHAPED_BENCH_SHAPE = (1, 3, 10, 12)


def shaped_detector_graph():
    """Scale each channel, relu, project 3 -> 2 channels per pixel (NHWC), and sum them."""
    from ascend_engine import sim

    rng = np.random.default_rng(31)
    g = sim.Graph("textdet")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    y = g.relu(g.mul(x, rng.standard_normal((1, 3, 1, 1)).astype(np.float32)))
    feat = g.matmul(g.transpose(y, (0, 2, 3, 1)), g.const(rng.standard_normal((3, 2)).astype(np.float32)))
    g.output("map", feat, format="NHWC")
    g.output("energy", g.sum(feat, axes=3))
    return g


def shaped_recognizer_graph():
    """Per pixel: a 2 -> 3 projection and the softmax over the three classes."""
    from ascend_engine import sim

    rng = np.random.default_rng(32)
    g = sim.Graph("textrec")
    f = g.input("map", "float32", (1, "h", "w", 2))
    g.output("classes", g.softmax(g.matmul(f, g.const(rng.standard_normal((2, 3)).astype(np.float32))),
                                  axis=-1))
    return g


SHAPED_SPEC_TEXT = """\
device: 0
inputs:
  image: {{dtype: float32, shape: [1, 3, -1, -1]{bench}}}
models:
  - {{name: det, path: det.om, inputs: [image]}}
  - {{name: rec, path: rec.om, inputs: [det.map]}}
outputs:
  energy: det.energy
  classes: rec.classes
compile: {{depth: 3}}
"""


def shaped_spec_text(bench_shape=SHAPED_BENCH_SHAPE) -> str:
    """The spec of the pair; ``bench_shape`` (or None) is the image's ``inputs.image.bench_shape``."""
    return SHAPED_SPEC_TEXT.format(bench="" if bench_shape is None else f", bench_shape: {list(bench_shape)}")


def write_shaped_demo(folder, spec_name=SHAPED_SPEC_NAME, bench_shape=SHAPED_BENCH_SHAPE) -> dict:
    """Write det.om, rec.om and the spec wiring them into ``folder`` (created if needed).

    Returns ``{"spec": path, "models": {name: path}}``, as :func:`write_demo`.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    det, rec = os.path.join(folder, "det.om"), os.path.join(folder, "rec.om")
    shaped_detector_graph().save(det, hw_sizes=SHAPED_DETECTOR_HW, latency_us=SHAPED_DETECTOR_US)
    shaped_recognizer_graph().save(rec, dims=SHAPED_RECOGNIZER_DIMS, latency_us=SHAPED_RECOGNIZER_US)
    spec_path = os.path.join(folder, spec_name)
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(shaped_spec_text(bench_shape))
    return {"spec": spec_path, "models": {"det": det, "rec": rec}}
