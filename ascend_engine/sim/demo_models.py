"""The demo simulator models and the pipeline spec that chains them.

Three dense models with fixed device times -- an encoder (64 -> 128, 2 ms),
a mixer (128 -> 128, 3 ms) and a head (128 -> 10, softmax, 1 ms) -- each
built with :class:`ascend_engine.sim.Graph` for batch gears 1, 2, 4 and 8.
``python -m ascend_engine.demo`` runs them; ``ascend-engine sim make-demo DIR``
writes them with a ``pipeline.yaml`` that ``ascend-engine bench`` runs.
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
