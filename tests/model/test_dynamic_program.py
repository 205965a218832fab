"""A C program written against the real CANN headers drives a dynamic-image-size and a dims-gear model.

tests/conformance/programs/dynamic_check.c learns the gears from the
descriptor, sizes its buffers from it (the largest gear), and runs every gear
the way CANN applications do; the expected outputs come from sim.reference.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

import ascend_engine
from ascend_engine import sim

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(REPO, "tests", "conformance", "programs", "dynamic_check.c")


@pytest.fixture(scope="module")
def dynamic_check(tmp_path_factory, cann_include):
    include = cann_include
    gcc = shutil.which("gcc")
    assert gcc, "gcc is required"
    libdir = os.path.join(os.path.dirname(ascend_engine.__file__), "_lib")
    exe = str(tmp_path_factory.mktemp("dynamic_check") / "dynamic_check")
    cmd = [gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", include, PROGRAM, "-o", exe, "-L", libdir,
           "-lascendcl_sim", f"-Wl,-rpath,{libdir}", "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return exe


def run(exe, model, data):
    env = dict(os.environ)
    env.pop("ASCEND_SIM_FAULTS", None)
    return subprocess.run([exe, str(model), str(data)], capture_output=True, text=True, env=env, timeout=60)


def test_hw_model_every_gear(dynamic_check, tmp_path):
    rng = np.random.default_rng(3)
    g = sim.Graph("det")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    w = g.const(rng.standard_normal((3, 2)).astype(np.float32))
    feat = g.matmul(g.transpose(g.relu(x), (0, 2, 3, 1)), w)
    g.output("feat", g.sigmoid(feat), format="NHWC")
    gears = [(8, 12), (16, 16), (12, 8)]
    g.save(str(tmp_path / "hw.om"), hw_sizes=gears)
    blob = b""
    for h, w in gears:
        xv = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        blob += xv.tobytes() + sim.reference(g, {"image": xv})["feat"].tobytes()
    (tmp_path / "hw.bin").write_bytes(blob)
    proc = run(dynamic_check, tmp_path / "hw.om", tmp_path / "hw.bin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "dynamic image size: 3 gears",
        "gear 0: input 288 values, output 192 values, values match",
        "gear 1: input 768 values, output 512 values, values match",
        "gear 2: input 288 values, output 192 values, values match",
    ]
    # a wrong expectation is caught: the program compares for real
    (tmp_path / "bad.bin").write_bytes(blob[:-4] + np.float32(9).tobytes())
    proc = run(dynamic_check, tmp_path / "hw.om", tmp_path / "bad.bin")
    assert proc.returncode == 1 and "gear 2: input 288 values, output 192 values, MISMATCH" in proc.stdout


def test_dims_model_every_gear(dynamic_check, tmp_path):
    rng = np.random.default_rng(4)
    g = sim.Graph("rec")
    x = g.input("feats", "float32", (1, "t", 6))
    w = g.const(rng.standard_normal((6, 4)).astype(np.float32))
    g.output("probs", g.softmax(g.matmul(x, w), axis=-1))
    gears = [[8], [16], [32]]
    g.save(str(tmp_path / "dims.om"), dims=gears)
    blob = b""
    for (t,) in gears:
        xv = rng.standard_normal((1, t, 6)).astype(np.float32)
        blob += xv.tobytes() + sim.reference(g, {"feats": xv})["probs"].tobytes()
    (tmp_path / "dims.bin").write_bytes(blob)
    proc = run(dynamic_check, tmp_path / "dims.om", tmp_path / "dims.bin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "dynamic dims: 3 gears",
        "gear 0: input 48 values, output 32 values, values match",
        "gear 1: input 96 values, output 64 values, values match",
        "gear 2: input 192 values, output 128 values, values match",
    ]
