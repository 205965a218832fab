"""Padding and instances pinned against numpy and the simulator's call log:
chunks after a rows="any" host step padded within the step's max_rows, gear
padding that is zeros, and each instance's executions on its own stream."""

import collections
import os
import re

import numpy as np
import pytest
from helpers import simlib
from helpers.pipelines import WIDTH, dense

import ascend_engine as ae
from ascend_engine import sim

# ---- chunks after a rows="any" step: sized from the step's max_rows ---------------------------

FEAT = 64                  # 256 bytes a row: a chunk's padding cannot hide in a buffer's alignment slack
STEP_MAX_ROWS = 21         # upper gears (1, 2, 4, 8): 21 rows run as 8 + 8 + 8 (5 rows and 3 of padding)


def repeat_first_row(h):
    """The host step: int(h[0, 0]) rows, row i = h[0] + i (independent of the request's batch)."""
    n = int(h[0, 0])
    return np.ascontiguousarray(h[:1] + np.arange(n, dtype=np.float32)[:, None])


@pytest.fixture(scope="module")
def after_step(build):
    """x (-1, 64) -> identity model (gears 1, 2, 4) -> repeat_first_row -> dense (gears 1, 2, 4, 8)."""
    g = sim.Graph("identity64")
    g.output("h", g.matmul(g.input("x", "float32", (-1, FEAT)), g.const(np.eye(FEAT, dtype=np.float32))))
    first = build(g, "pins_identity64", batch_sizes=(1, 2, 4))
    second = build(dense(940, width_in=FEAT, width_out=FEAT), "pins_after_step")
    return first, second


def test_chunks_after_a_step_are_padded_within_buffers_sized_from_its_max_rows(after_step):
    """A step returning more rows than the largest gear (8) and than the
    pipeline's batch (4): 21 rows run at gear 8 three times, the last chunk
    padded to 24 rows.  The results equal numpy and the second model's
    buffers hold the 24 rows, not the pipeline's 4 or the step's 21."""
    first, second = after_step
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, FEAT))
    rows = pipe.host(repeat_first_row, pipe.model(first.path, x, name="first"),
                     outputs=[("rows", "float32", (-1, FEAT))], rows="any", max_rows=STEP_MAX_ROWS,
                     name="repeat")
    pipe.output("y", pipe.model(second.path, rows, name="second"))
    rng = np.random.default_rng(3)
    with pipe.compile(depth=2, gear_policy="upper") as engine:
        assert engine.plan.max_batch == 4
        assert engine.memory()["per_node_bytes"]["second"] >= 24 * FEAT * 4
        for n in (STEP_MAX_ROWS, 9, 16, 0, 1, 19, STEP_MAX_ROWS, 13):
            for batch in (1, 2):
                xs = rng.standard_normal((batch, FEAT)).astype(np.float32)
                xs[0, 0] = n
                got = engine.run({"x": xs})["y"]
                want = second.ref(x=repeat_first_row(xs)) if n else np.zeros((0, FEAT), np.float32)
                assert got.shape == (n, FEAT)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{n} rows")
        assert engine.stats()["failures"] == 0


# ---- padding up to a gear is zeros ----------------------------------------------------------------

SEQ_GEARS = [[1, 2], [2, 4], [4, 8]]      # (rows, seq) per gear


def sequence_mixer():
    """y[b] = x[b] @ (x[b]^T @ x[b]): every position of a row depends on every
    other position of it, padding included (zero padding adds nothing to the
    Gram matrix; any other value does)."""
    g = sim.Graph("mixer")
    x = g.input("x", "float32", (-1, "seq", 4))
    gram = g.matmul(g.transpose(x, (0, 2, 1)), x)
    g.output("y", g.matmul(x, gram))
    return g


def zero_padded(a, shape):
    out = np.zeros(shape, a.dtype)
    out[tuple(slice(0, n) for n in a.shape)] = a
    return out


def test_inputs_padded_up_to_a_gear_are_padded_with_zeros(tmp_path):
    """Requests whose rows and sequence length fall between two gears (3 rows
    and 5 positions run the 4 x 8 gear): the pipeline's result, and Model's,
    equal numpy on the inputs zero-padded to the gear, cut back."""
    graph = sequence_mixer()
    path = graph.save(str(tmp_path / "mixer.om"), dims=SEQ_GEARS)
    pipe = ae.Pipeline(device=0)
    pipe.output("y", pipe.model(path, pipe.input("x", "float32", (-1, -1, 4)), name="mixer"))
    rng = np.random.default_rng(11)
    cases = [(3, 5, (4, 8)), (2, 3, (2, 4)), (1, 2, (1, 2)), (4, 7, (4, 8)), (3, 3, (4, 4))]
    with pipe.compile(depth=2) as engine, ae.Model.load(path, device=0) as model:
        for rows, seq, gear in cases:
            x = (rng.standard_normal((rows, seq, 4)) + 1).astype(np.float32)
            padded = sim.reference(graph, {"x": zero_padded(x, gear + (4,))})["y"]
            want = padded[:rows, :seq]
            got = engine.run({"x": x})["y"]
            assert got.shape == (rows, seq, 4)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3, err_msg=f"{rows} x {seq}")
            np.testing.assert_allclose(model(x=x)["y"], want, rtol=1e-4, atol=1e-3,
                                       err_msg=f"Model {rows} x {seq}")


# ---- instances: each execution on its own instance's stream -------------------------------------

INSTANCE_LOG = """
import os, sys
import numpy as np
import ascend_engine as ae
paths = sys.argv[1:] or os.environ["PATHS"].split(os.pathsep)
pipe = ae.Pipeline(device=0)
h = pipe.input("x", "float32", (-1, {width}))
h = pipe.model(paths[0], h, name="first")
h = pipe.model(paths[1], h, name="slow", instances=2)
pipe.output("y", pipe.model(paths[2], h, name="last"))
rng = np.random.default_rng(4)
with pipe.compile(depth=4) as engine:
    feeds = [{{"x": rng.standard_normal((2, {width})).astype(np.float32)}} for _ in range({requests})]
    futures = [engine.submit(f) for f in feeds]
    outs = [f.result(timeout=60)["y"] for f in futures]
    outs += [out["y"] for out in engine.run_many(feeds)]
print("RAN", len(outs), flush=True)
"""

REQUESTS = 12


def test_each_instance_executes_on_a_stream_of_its_own(build, tmp_path):
    """instances=2: in the call log the instanced node's executions alternate
    between its two model ids, and each id always executes on one stream,
    a different one for each id (and neither is another node's stream)."""
    chain = [build(dense(950), "pins_first", latency_us=200), build(dense(951), "pins_inst", latency_us=900),
             build(dense(952), "pins_last", latency_us=100)]
    log = tmp_path / "calls.log"
    proc = simlib.run_python(INSTANCE_LOG.format(width=WIDTH, requests=REQUESTS),
                             env={"ASCEND_SIM_LOG": str(log), "ASCEND_ENGINE_BACKEND": "sim",
                                  "PATHS": os.pathsep.join(m.path for m in chain)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["RAN", str(2 * REQUESTS)]
    executions = [(int(m.group(1)), m.group(2)) for m in
                  re.finditer(r"aclmdlExecuteAsync\(id (\d+) stream (0x[0-9a-f]+)\) = 0", log.read_text())]
    per_id = collections.Counter(mid for mid, _ in executions)
    # the single-instance nodes execute every request, each instance every other one
    assert sorted(per_id.values()) == [REQUESTS, REQUESTS, 2 * REQUESTS, 2 * REQUESTS], per_id
    instanced = [mid for mid, count in per_id.items() if count == REQUESTS]
    order = [mid for mid, _ in executions if mid in instanced]
    assert order == [order[0], order[1]] * REQUESTS and order[0] != order[1], order
    streams = {mid: {st for m, st in executions if m == mid} for mid in per_id}
    assert all(len(s) == 1 for s in streams.values()), streams
    assert streams[instanced[0]] != streams[instanced[1]], streams
    others = set().union(*(streams[mid] for mid in per_id if mid not in instanced))
    assert not (streams[instanced[0]] | streams[instanced[1]]) & others, streams
