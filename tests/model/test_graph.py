"""sim.Graph and sim.reference on their own: build-time checks, the file layout, the oracle."""

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from ascend_engine import sim
from ascend_engine.sim import GraphError


def test_graph_module_is_pure_python():
    """The builder (graph.py and the modules it imports) needs only numpy: sim imported with no
    ascend_engine native module importable."""
    import ascend_engine.sim.graph as mod

    root = os.path.dirname(os.path.dirname(os.path.dirname(mod.__file__)))
    code = (
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "for n in ('ascend_engine._runtime', 'ascend_engine._model', 'ascend_engine._executor'):\n"
        "    sys.modules[n] = None\n"
        "import ascend_engine.sim.graph as m\n"
        f"assert m.__file__ == {mod.__file__!r}, m.__file__\n"
        "g = m.Graph('g'); x = g.input('x', 'float32', (2,)); g.output('y', g.relu(x))\n"
        "print(len(g.to_bytes()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) > 136


def test_header_layout():
    g = sim.Graph("layout")
    x = g.input("x", "float32", (-1, 3))
    g.output("y", g.add(x, g.const(np.ones(3, np.float32))))
    blob = g.to_bytes(batch_sizes=(4, 1, 2), latency_us=12.5, latency_per_item_us=3)
    magic, version, header, size = struct.unpack_from("<8sIIQ", blob)
    assert magic == b"AESIMMDL" and version == 1 and header == 136 and size == len(blob)
    n_t, n_o, n_in, n_out, n_g = struct.unpack_from("<5I", blob, 24)
    assert (n_t, n_o, n_in, n_out, n_g) == (3, 1, 1, 1, 3)
    gear_off = struct.unpack_from("<Q", blob, 80)[0]
    assert struct.unpack_from("<3Q", blob, gear_off) == (1, 2, 4)  # sorted
    data_off = struct.unpack_from("<Q", blob, 104)[0]
    assert data_off % 64 == 0
    assert struct.unpack_from("<2d", blob, 120) == (12.5, 3.0)
    assert np.frombuffer(blob, np.float32, 3, data_off).tolist() == [1, 1, 1]


@pytest.mark.parametrize(
    "build, msg",
    [
        (lambda g, x: g.matmul(x, g.const(np.ones((5, 2), np.float32))), "inner dimensions differ"),
        (lambda g, x: g.add(x, g.const(np.ones((3,), np.float32))), "do not broadcast"),
        (lambda g, x: g.add(x, g.const(np.ones((4,), np.int32))), "same dtype"),
        (lambda g, x: g.softmax(x, axis=0), "batch axis"),
        (lambda g, x: g.softmax(x, axis=2), "out of range"),
        (lambda g, x: g.reshape(x, (2, 2)), "batch first"),
        (lambda g, x: g.reshape(x, (-1, 3)), "cannot reshape"),
        (lambda g, x: g.transpose(x, (1, 0)), "the batch stays first"),
        (lambda g, x: g.concat([x, x], axis=0), "batch"),
        (lambda g, x: g.mean(x, axes=0), "batch axis"),
        (lambda g, x: g.argmax(x, axis=0), "batch axis"),
        (lambda g, x: g.relu(g.cast(x, "int32")), "float32 or float16"),
        (lambda g, x: g.cast(x, "float64"), "unsupported dtype"),
        (lambda g, x: g.layernorm(x, gamma=np.ones(3, np.float32)), r"gamma must be float32 of shape \(4,\)"),
        (lambda g, x: g.add(x, sim.Graph("other").input("z", "float32", (4,))), "belongs to graph"),
        (lambda g, x: g.add(g.const(np.ones((3, 1, 4), np.float32)), x), "moves the batch"),
    ],
)
def test_build_errors_name_the_op(build, msg):
    g = sim.Graph("errs")
    x = g.input("x", "float32", (-1, 4))
    with pytest.raises(GraphError, match=msg):
        build(g, x)


def test_save_checks():
    g = sim.Graph("s")
    x = g.input("x", "float32", (-1, 4))
    with pytest.raises(GraphError, match="no outputs"):
        g.to_bytes(batch_sizes=(1,))
    g.output("y", x)
    with pytest.raises(GraphError, match="batch_sizes"):
        g.to_bytes()
    with pytest.raises(GraphError, match="batch_sizes"):
        g.to_bytes(batch_sizes=(0, 2))
    with pytest.raises(GraphError, match="already exists"):
        g.output("y", x)
    with pytest.raises(GraphError, match="reserved"):
        g.input("ascend_mbatch_shape_data", "int64", (1,))
    with pytest.raises(GraphError, match="already used"):
        g.input("x", "float32", (1,))
    with pytest.raises(GraphError, match="control characters"):
        g.input("bad\nname", "float32", (1,))
    s = sim.Graph("static")
    s.output("y", s.relu(s.input("x", "float32", (2,))))
    with pytest.raises(GraphError, match="no input has a -1"):
        s.to_bytes(batch_sizes=(1, 2))


def test_reference_checks_feeds():
    g = sim.Graph("r")
    x = g.input("x", "float32", (-1, 4))
    m = g.input("m", "float32", (-1, 4))
    g.output("y", g.add(x, m))
    with pytest.raises(GraphError, match="missing input 'm'"):
        sim.reference(g, {"x": np.zeros((1, 4), np.float32)})
    with pytest.raises(GraphError, match="must be float32, got float64"):
        sim.reference(g, {"x": np.zeros((1, 4)), "m": np.zeros((1, 4), np.float32)})
    with pytest.raises(GraphError, match="with batch 2"):
        sim.reference(g, {"x": np.zeros((2, 4), np.float32), "m": np.zeros((3, 4), np.float32)})


def test_reference_math():
    g = sim.Graph("math")
    x = g.input("x", "float32", (2, 3))
    g.output("gelu", g.gelu(x))
    g.output("ln", g.layernorm(x))
    g.output("sm", g.softmax(x))
    a = np.array([[0.0, 1.0, -1.0], [2.0, 3.0, 4.0]], np.float32)
    out = sim.reference(g, {"x": a})
    np.testing.assert_allclose(out["gelu"][0], [0.0, 0.841192, -0.158808], atol=1e-5)  # tanh approximation
    np.testing.assert_allclose(out["sm"].sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out["ln"][1], [-1.2247356, 0.0, 1.2247356], atol=1e-4)
