"""A C program written against the real CANN headers runs a simulator model.

tests/conformance/programs/model_check.c is compiled with the genuine
``acl/acl.h`` (from the torch-npu wheel) and linked against the simulator
library; it loads a model built here with sim.Graph, sets a dynamic batch,
executes asynchronously and checks the numbers against sim.reference.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

import ascend_engine
from ascend_engine import sim

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(REPO, "tests", "conformance", "programs", "model_check.c")


@pytest.fixture(scope="module")
def model_check(tmp_path_factory, cann_include):
    include = cann_include
    gcc = shutil.which("gcc")
    assert gcc, "gcc is required"
    libdir = os.path.join(os.path.dirname(ascend_engine.__file__), "_lib")
    exe = str(tmp_path_factory.mktemp("model_check") / "model_check")
    cmd = [
        gcc,
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-I",
        include,
        PROGRAM,
        "-o",
        exe,
        "-L",
        libdir,
        "-lascendcl_sim",
        f"-Wl,-rpath,{libdir}",
        "-lm",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return exe


@pytest.mark.parametrize("batch", [1, 4])
def test_c_program_runs_a_simulator_model(model_check, tmp_path, batch):
    rng = np.random.default_rng(batch)
    g = sim.Graph("conformance")
    x = g.input("x", "float32", (-1, 12))
    h = g.relu(
        g.add(
            g.matmul(x, g.const(rng.standard_normal((12, 16)).astype(np.float32))),
            g.const(rng.standard_normal(16).astype(np.float32)),
        )
    )
    g.output("y", g.softmax(g.matmul(h, g.const(rng.standard_normal((16, 5)).astype(np.float32)))))
    model = tmp_path / "model.om"
    g.save(str(model), batch_sizes=(1, 2, 4), latency_us=1000)
    xv = rng.standard_normal((batch, 12)).astype(np.float32)
    want = sim.reference(g, {"x": xv})["y"]
    expected = tmp_path / "expected.bin"
    expected.write_bytes(xv.tobytes() + want.tobytes())
    env = dict(os.environ)
    env.pop("ASCEND_SIM_FAULTS", None)
    proc = subprocess.run(
        [model_check, str(model), str(expected), str(batch)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "values match" in proc.stdout
