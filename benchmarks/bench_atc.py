"""Benchmarks of models converted by sim atc: the simulator's execution against ONNX Runtime's own.

Run:  python -m pytest benchmarks/bench_atc.py -o python_files='bench_*.py' --benchmark-only -q -s

The simulator runs a converted model's ONNX graph with ONNX Runtime's C API
on its stream worker; the question is what it adds on top of ONNX Runtime.
Two networks from tests/helpers/onnx_nets.py: ``yolo`` at 256x320 (compute
dominates: ~10 ms per run) and ``resnet`` at batch 8 (small: ~1 ms, overhead
shows).  Each converted with ``--sim_latency_us=0`` (no modelled device time),
run with one ONNX Runtime thread on both sides, on the same inputs, in
alternating rounds:

* ``aclmdlExecute`` through ctypes on the calling thread (the buffers already
  on the device): ONNX Runtime's C API as the simulator calls it, against
  ``InferenceSession.run``, single calls alternating.
* ``Model.__call__`` (H2D copy, execution, D2H copy, Python around it)
  against ``InferenceSession.run``, single calls alternating, medians
  compared: goal <= 1.1.
* a pipeline of the model, ``run_batch`` at depth 2, time per request against
  ``InferenceSession.run`` per request.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
Outputs are checked against ONNX Runtime's before timing.
"""

import os
import statistics
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402

onnx_nets = pytest.importorskip("helpers.onnx_nets", reason="sim atc needs onnx and onnxruntime")

from helpers import mdl, simlib  # noqa: E402

import ascend_engine as ae  # noqa: E402

ROUNDS = 7


def session(path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def median_time(fn, n):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


CASES = {
    "yolo": (onnx_nets.yolo, "img", (1, 3, 256, 320), "--input_shape=img:1,3,256,320", 20),
    "resnet": (onnx_nets.resnet, "x", (8, 3, 16, 16), "--input_shape=x:8,3,16,16", 200),
}


@pytest.mark.parametrize("case", list(CASES))
def test_simulator_against_onnx_runtime(benchmark, tmp_path, case):
    build, name, shape, flag, n = CASES[case]
    src = onnx_nets.save(build(), tmp_path, case)
    om = onnx_nets.convert(src, tmp_path / case, flag, "--sim_latency_us=0")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    sess = session(src)
    out_names = [o.name for o in sess.get_outputs()]
    want = dict(zip(out_names, sess.run(out_names, {name: x}), strict=True))
    model = ae.Model.load(om)
    pipe = ae.Pipeline(device=0)
    inp = pipe.input(name, "float32", shape)
    outs = pipe.model(om, inp, name="m")
    for o, h in zip(out_names, outs if isinstance(outs, tuple) else (outs,), strict=True):
        pipe.output(o, h)
    engine = pipe.compile(depth=2)
    lib = simlib.session()
    with open(om, "rb") as f:
        loaded = mdl.load_bytes(lib, f.read())
    bufs = mdl.Buffers(loaded)
    bufs.feed({name: x})
    batch = np.concatenate([x] * n) if shape[0] > 1 else np.repeat(x, n, axis=0)
    try:
        got = model(**{name: x})
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
        # single calls alternate (ONNX Runtime, the simulator, ...) so that bursts of load on the
        # shared machine hit both sides alike; the medians of the per-call times are compared
        t_ort, t_call, t_exec = [], [], []
        for _ in range(ROUNDS * n):
            t0 = time.perf_counter()
            sess.run(out_names, {name: x})
            t1 = time.perf_counter()
            model(**{name: x})
            t2 = time.perf_counter()
            bufs.execute()
            t_exec.append(time.perf_counter() - t2)
            t_call.append(t2 - t1)
            t_ort.append(t1 - t0)
        ratios_batch = []
        for _ in range(ROUNDS):
            t_o = median_time(lambda: sess.run(out_names, {name: x}), n)
            t0 = time.perf_counter()
            engine.run_batch({name: batch}, batch_size=shape[0])
            ratios_batch.append((time.perf_counter() - t0) / n / t_o)
        benchmark.pedantic(lambda: model(**{name: x}), rounds=3, iterations=1)
        report(
            benchmark,
            f"{case} {shape}: simulator execution against InferenceSession.run (1 thread each)",
            {
                "ort_run_ms": statistics.median(t_ort) * 1e3,
                "acl_execute_over_ort": statistics.median(t_exec) / statistics.median(t_ort),
                "model_call_ms": statistics.median(t_call) * 1e3,
                "model_call_over_ort": statistics.median(t_call) / statistics.median(t_ort),
                "run_batch_per_request_over_ort": statistics.median(ratios_batch),
            },
        )
    finally:
        bufs.close()
        loaded.close()
        engine.close()
        model.close()


@pytest.mark.parametrize("case", list(CASES))
def test_range_model_against_the_static_model(benchmark, tmp_path, case):
    """What a shape-range conversion costs per execution against a static one of the same network.

    Both through ``aclmdlExecute`` on the calling thread (ctypes), alternating, at the same shape:
    the range model also takes its shapes from the input's tensor description, lets ONNX Runtime
    allocate the open outputs and copies them into the buffers (docs/simulator.md, "Shape-range
    models").
    """
    build, name, shape, flag, n = CASES[case]
    src = onnx_nets.save(build(), tmp_path, case)
    static = onnx_nets.convert(src, tmp_path / f"{case}_s", flag, "--sim_latency_us=0")
    dims = ",".join(["1~-1", *map(str, shape[1:])]) if case == "resnet" else "1,3,16~512,16~512"
    ranged = onnx_nets.convert(
        src, tmp_path / f"{case}_r", f"--input_shape={name}:{dims}", "--sim_latency_us=0"
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    lib = simlib.session()
    models, sets = [], []
    try:
        for path in (static, ranged):
            with open(path, "rb") as f:
                models.append(mdl.load_bytes(lib, f.read()))
        s_sizes = [o["size"] for o in models[0].outputs]
        sets.append(mdl.Buffers(models[0]))
        sets.append(mdl.Buffers(models[1], in_sizes=[x.nbytes], out_sizes=s_sizes))
        sets[1].describe_inputs({0: shape})
        for b in sets:
            b.feed({name: x})
            b.execute()
        shapes = {o["name"]: o["dims"] for o in models[0].outputs}
        ref, got = sets[0].fetch(shapes=shapes), sets[1].fetch(shapes=shapes)
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k])
        t_static, t_range = [], []
        for _ in range(ROUNDS * n):
            t0 = time.perf_counter()
            sets[0].execute()
            t1 = time.perf_counter()
            sets[1].execute()
            t_range.append(time.perf_counter() - t1)
            t_static.append(t1 - t0)
        benchmark.pedantic(sets[1].execute, rounds=3, iterations=1)
        report(
            benchmark,
            f"{case} {shape}: aclmdlExecute of the range model against the static model",
            {
                "static_execute_ms": statistics.median(t_static) * 1e3,
                "range_execute_ms": statistics.median(t_range) * 1e3,
                "range_over_static": statistics.median(t_range) / statistics.median(t_static),
            },
        )
    finally:
        for b in sets:
            b.close()
        for m in models:
            m.close()
