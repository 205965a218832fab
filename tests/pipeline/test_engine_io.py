"""Pipelines with several inputs and several outputs, end to end on the simulator.

Two inputs are staged into their own buffers and must carry the same rows;
outputs from independent branches are each copied out only after their own
producer finished; a pipeline input can be an output (pass-through).
"""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, dense, joiner
from helpers.planning import check_memory_plan
from helpers.scale import scaled

import ascend_engine as ae


def two_inputs(build, latency_us=0):
    join = build(joiner(400), "io-join", latency_us=latency_us)
    pipe = ae.Pipeline(device=0)
    left = pipe.input("l", "float32", (-1, WIDTH))
    right = pipe.input("r", "float32", (-1, WIDTH))
    pipe.output("y", pipe.model(join.path, left, right, name="J"))
    return pipe, join


@pytest.mark.parametrize("depth", [1, 4])
def test_two_inputs_are_staged_separately(build, depth):
    pipe, join = two_inputs(build, latency_us=100)
    rng = np.random.default_rng(depth)
    feeds = []
    for _ in range(scaled(30)):
        rows = int(rng.integers(1, 9))
        feeds.append({"l": rng.standard_normal((rows, WIDTH)).astype(np.float32),
                      "r": rng.standard_normal((rows, WIDTH)).astype(np.float32)})
    with pipe.compile(depth=depth) as engine:
        plan = engine.plan
        offsets = {plan.tensors[t].offset for _, t in plan.inputs}
        assert len(offsets) == 2
        check_memory_plan(plan)
        results = list(engine.run_many(feeds))
        big_l = np.concatenate([f["l"] for f in feeds])
        big_r = np.concatenate([f["r"] for f in feeds])
        batched = engine.run_batch({"l": big_l, "r": big_r}, batch_size=3)
    for feed, out in zip(feeds, results, strict=True):
        np.testing.assert_allclose(out["y"], join.ref(**feed), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(batched["y"], join.ref(l=big_l, r=big_r), rtol=1e-4, atol=1e-5)


def test_two_inputs_survive_a_slow_copy_in(build, sim_faults):
    # While the first H2D copy is held on its stream, the host stages the
    # second input: each input needs its own pinned staging and device bytes.
    pipe, join = two_inputs(build)
    rng = np.random.default_rng(3)
    left = rng.standard_normal((5, WIDTH)).astype(np.float32)
    right = rng.standard_normal((5, WIDTH)).astype(np.float32)
    with pipe.compile(depth=1) as engine:
        engine.run({"l": np.zeros_like(left), "r": np.zeros_like(right)})
        sim_faults("stall:memcpy@1=30")
        out = engine.run({"l": left, "r": right})
    np.testing.assert_allclose(out["y"], join.ref(l=left, r=right), rtol=1e-4, atol=1e-5)


def test_two_inputs_with_unequal_rows_are_rejected(build):
    pipe, _ = two_inputs(build)
    rng = np.random.default_rng(2)
    left = rng.standard_normal((3, WIDTH)).astype(np.float32)
    right = rng.standard_normal((5, WIDTH)).astype(np.float32)
    with pipe.compile(depth=2) as engine:
        for call in (lambda f: engine.run(f), lambda f: engine.run_batch(f, batch_size=2),
                     lambda f: list(engine.run_many([f]))):
            with pytest.raises(ValueError, match="input 'r': batch 5 differs from the other inputs' 3"):
                call({"l": left, "r": right})
        assert engine.stats()["requests"] == 0
        # the engine is untouched by the rejected feeds
        out = engine.run({"l": left, "r": right[:3]})
    assert out["y"].shape == (3, WIDTH)


def branches(build, latencies):
    """x -> A -> a ; x -> B -> b ; x passed through: three outputs, two producers.

    B's output is narrower than its input, so rows of different sizes are
    copied out side by side.
    """
    a = build(dense(410, act="tanh"), "branch0", latency_us=latencies[0])
    b = build(dense(411, width_out=8, act="tanh"), "branch1-narrow", latency_us=latencies[1])
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.output("a", pipe.model(a.path, x, name="A"))
    pipe.output("b", pipe.model(b.path, x, name="B"))
    pipe.output("x", x)
    return pipe, a, b


@pytest.mark.parametrize("latencies", [(3000, 0), (0, 3000)])
def test_outputs_of_independent_branches_wait_for_their_own_producer(build, latencies):
    # Whichever branch is slow, its output is copied out only once it is written.
    pipe, a, b = branches(build, latencies)
    rng = np.random.default_rng(latencies[0])
    data = [rng.standard_normal((int(rng.integers(1, 9)), WIDTH)).astype(np.float32) for _ in range(6)]
    with pipe.compile(depth=2) as engine:
        check_memory_plan(engine.plan)
        outs = [engine.run({"x": d}) for d in data]
        whole = np.concatenate(data)
        batched = engine.run_batch({"x": whole}, batch_size=3)
    for d, out in zip(data + [whole], outs + [batched], strict=True):
        assert out["b"].shape == (len(d), 8)
        np.testing.assert_allclose(out["a"], a.ref(x=d), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out["b"], b.ref(x=d), rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(out["x"], d)


def test_pass_through_only_output_waits_for_the_copy_in(build, sim_faults):
    # The only output is the input itself (the model's output is unused): the
    # copy-out must wait for the copy-in even though no model output is copied.
    side = build(dense(420), "side", latency_us=0)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.model(side.path, x, name="S")
    pipe.output("x", x)
    rng = np.random.default_rng(4)
    data = rng.standard_normal((8, WIDTH)).astype(np.float32)
    with pipe.compile(depth=1) as engine:
        engine.run({"x": np.zeros_like(data)})
        # the next copy (the next request's H2D) holds its stream 30 ms
        sim_faults("stall:memcpy@1=30")
        out = engine.run({"x": data})
    np.testing.assert_array_equal(out["x"], data)


def test_a_model_reading_an_input_waits_for_the_copy_in(build, sim_faults):
    # The H2D copy is held 30 ms on the copy-in stream; the model must read
    # this request's rows, not what the slot held before.
    model = build(dense(421), "reads-input", latency_us=0)
    pipe = ae.Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, WIDTH))
    pipe.output("y", pipe.model(model.path, x, name="M"))
    data = np.random.default_rng(6).standard_normal((8, WIDTH)).astype(np.float32)
    with pipe.compile(depth=1) as engine:
        engine.run({"x": np.zeros_like(data)})
        sim_faults("stall:memcpy@1=30")
        out = engine.run({"x": data})
    np.testing.assert_allclose(out["y"], model.ref(x=data), rtol=1e-4, atol=1e-5)


PASS_THROUGH = """
import os
import numpy as np
import ascend_engine as ae
from ascend_engine import sim

g = sim.Graph("m")
g.output("y", g.relu(g.input("x", "float32", (-1, 4096))))
path = os.path.join(os.environ["FOLDER"], "m.om")
g.save(path, batch_sizes=[1, 2, 4])
pipe = ae.Pipeline()
x = pipe.input("x", "float32", (-1, 4096))
pipe.output("y", pipe.model(path, x, name="m"))
pipe.output("echo", x)
wrong = 0
with pipe.compile(depth=4) as engine:
    feeds = [np.full((4, 4096), k + 1, np.float32) for k in range(12)]
    for k, f in enumerate([engine.submit({"x": a}) for a in feeds]):
        wrong += not (f.result(timeout=60)["echo"] == k + 1).all()
print("WRONG", wrong)
"""


def test_a_pass_through_output_waits_for_the_copy_in(tmp_path):
    """The copy-out of an output that is a pipeline input must come after that
    input's H2D copy: with slow H2D copies (64 KiB at 0.02 GB/s: about 3 ms)
    it would otherwise copy out what the slot held before.  (The copy-out's
    own wait on the copy-in is redundant while a model reads an input -- every
    pipeline has one -- since it also waits on that model; this checks the
    ordering, whichever wait gives it.)"""
    from helpers import simlib

    proc = simlib.run_python(PASS_THROUGH, env={"FOLDER": str(tmp_path), "ASCEND_SIM_H2D_GBPS": "0.02",
                                                "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WRONG 0" in proc.stdout, proc.stdout
