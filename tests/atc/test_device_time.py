"""The device time of converted models: the roofline estimate (cost.py), the
--sim_latency_us override per profile, and an execution that holds its stream
at least that long (max of modelled and real compute time)."""

import json
import time

import numpy as np
import pytest
from helpers import onnx_nets, simlib
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import ascend_engine as ae
from ascend_engine.sim import atc
from ascend_engine.sim.atc import cost


def matmul_model(k=1024):
    w = nh.from_array(np.zeros((k, k), np.float32), "w")
    g = h.make_graph(
        [h.make_node("MatMul", ["x", "w"], ["y"])],
        "mm",
        [h.make_tensor_value_info("x", T.FLOAT, [1, k])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, k])],
        [w],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_roofline_of_a_memory_bound_matmul():
    k = 1024
    soc = cost.SOCS["Ascend310"]
    us, unknown = cost.estimate_us(matmul_model(k), soc)
    weights = k * k * 2  # float16 on the NPU
    moved = weights + 2 * (k * 2) + k * 2  # + the output written and read, the input read
    assert unknown == 0
    assert us == pytest.approx(moved / (soc.mem_gbps * 1e9) * 1e6 + soc.launch_us)
    flops_us = 2 * k * k / (soc.fp16_tflops * 1e12) * 1e6
    assert flops_us < us - soc.launch_us  # memory-bound: bandwidth, not compute, sets the time


def test_roofline_of_a_compute_bound_conv():
    model = onnx_nets.resnet(batch=64)
    soc = cost.SOCS["Ascend310P3"]
    us, unknown = cost.estimate_us(model, soc)
    # the two 3x3 convolutions dominate: 2 * out elements * Cin * 9
    conv_flops = 2 * (64 * 8 * 16 * 16) * 3 * 9 + 2 * (64 * 8 * 16 * 16) * 8 * 9
    assert unknown == 0 and us > conv_flops / (soc.fp16_tflops * 1e12) * 1e6 + soc.launch_us
    assert cost.estimate_us(model, cost.SOCS["Ascend310"])[0] > us  # a smaller SoC takes longer


def test_device_time_grows_with_the_profile(nets, tmp_path):
    om = onnx_nets.convert(
        nets["resnet"], tmp_path / "r", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,8"
    )
    atc.main(["--mode=1", f"--om={om}", f"--json={tmp_path / 'r.json'}"])
    t1, t8 = json.loads((tmp_path / "r.json").read_text())["device_time_us"]
    assert t8 > t1 > cost.SOCS["Ascend310P3"].launch_us


def test_sim_latency_us_per_profile_holds_the_stream(nets, tmp_path):
    om = onnx_nets.convert(
        nets["resnet"],
        tmp_path / "r",
        "--input_shape=x:-1,3,16,16",
        "--dynamic_batch_size=1,4",
        "--sim_latency_us=2000,40000",
    )
    with ae.Model.load(om) as m:
        x = np.ones((4, 3, 16, 16), np.float32)
        m(x=x)
        t0 = time.perf_counter()
        m(x=x)  # gear 4: 40 ms of device time
        assert time.perf_counter() - t0 >= 0.040


def test_the_log_says_what_bound_each_execution(nets, tmp_path):
    om = onnx_nets.convert(
        nets["resnet"], tmp_path / "r", "--input_shape=x:1,3,16,16", "--sim_latency_us=30000"
    )
    out = simlib.run_python(
        f"""
        import numpy as np, ascend_engine as ae
        with ae.Model.load({om!r}) as m:
            m(x=np.ones((1, 3, 16, 16), np.float32))
        """,
        env={"ASCEND_SIM_LOG": "stderr"},
    )
    assert out.returncode == 0, out.stderr
    assert "modelled device time 30000.0 us: bound by the modelled device time" in out.stderr
