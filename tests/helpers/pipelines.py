"""Models and pipelines for the executor tests: dense and joiner graphs, built
model files with their numpy oracle, and chains compiled from them."""

import numpy as np

import ascend_engine as ae
from ascend_engine import sim

WIDTH = 16
GEARS = (1, 2, 4, 8)


def dense(seed, width_in=WIDTH, width_out=WIDTH, act="relu"):
    """A one-layer model y = act(x @ W + b) with weights drawn from `seed`."""
    rng = np.random.default_rng(seed)
    g = sim.Graph(f"dense{seed}")
    x = g.input("x", "float32", (-1, width_in))
    w = (rng.standard_normal((width_in, width_out)) / np.sqrt(width_in)).astype(np.float32)
    b = rng.standard_normal(width_out).astype(np.float32)
    y = g.add(g.matmul(x, g.const(w)), g.const(b))
    g.output("y", g.relu(y) if act == "relu" else g.tanh(y))
    return g


def joiner(seed):
    """Two inputs -> tanh(l @ W + r)."""
    rng = np.random.default_rng(seed)
    g = sim.Graph("join")
    left = g.input("l", "float32", (-1, WIDTH))
    right = g.input("r", "float32", (-1, WIDTH))
    w = (rng.standard_normal((WIDTH, WIDTH)) / 4).astype(np.float32)
    g.output("y", g.tanh(g.add(g.matmul(left, g.const(w)), right)))
    return g


class Built:
    """A saved model file with its graph (the numpy oracle)."""

    def __init__(self, graph, path):
        self.graph = graph
        self.path = str(path)

    def ref(self, **feeds):
        out = sim.reference(self.graph, feeds)
        return next(iter(out.values())) if len(out) == 1 else out


def chain_reference(models, x):
    for m in models:
        x = m.ref(x=x)
    return x


def compile_chain(models, depth=4, **kw):
    """x -> models[0] -> models[1] -> ... -> y, compiled (nodes named m0, m1, ...)."""
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, m in enumerate(models):
        h = pipe.model(m.path, h, name=f"m{i}")
    pipe.output("y", h)
    return pipe.compile(depth=depth, **kw)
