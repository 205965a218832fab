"""``import ascend_engine`` changes no environment variable: the simulator's
ONNX Runtime library (ASCEND_SIM_ORT_LIB) is set when the simulator backend
is loaded, and only then (sim/ort_library.py)."""

import importlib.util
import json
import os

import pytest
from helpers import simlib

CODE = """
    import json, os
    before = dict(os.environ)
    import ascend_engine as ae
    import ascend_engine.pipeline, ascend_engine.spec, ascend_engine.serving
    after_import = dict(os.environ)
    name = ae.backend().name if os.environ.get("LOAD") else None
    print(json.dumps({"before": before, "after_import": after_import, "backend": name,
                      "after_load": dict(os.environ)}))
"""


def run(**env):
    base = {k: v for k, v in os.environ.items() if k != "ASCEND_SIM_ORT_LIB"}
    out = simlib.run_python(CODE, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), base


def without_ort(env):
    return {k: v for k, v in env.items() if k != "ASCEND_SIM_ORT_LIB"}


def test_importing_the_package_changes_no_environment_variable(monkeypatch):
    monkeypatch.delenv("ASCEND_SIM_ORT_LIB", raising=False)
    got, _ = run()
    assert got["after_import"] == got["before"]
    assert "ASCEND_SIM_ORT_LIB" not in got["after_import"]


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs the onnxruntime wheel")
def test_loading_the_simulator_points_it_at_the_onnxruntime_wheel(monkeypatch):
    monkeypatch.delenv("ASCEND_SIM_ORT_LIB", raising=False)
    got, _ = run(LOAD="1", ASCEND_ENGINE_BACKEND="sim")
    assert got["backend"] == "sim"
    assert got["after_import"] == got["before"]
    assert os.path.basename(got["after_load"]["ASCEND_SIM_ORT_LIB"]).startswith("libonnxruntime.so")
    assert without_ort(got["after_load"]) == got["before"]


def test_a_value_the_user_set_is_kept_even_empty(monkeypatch):
    for value in ("", "/opt/ort/libonnxruntime.so.1"):
        monkeypatch.setenv("ASCEND_SIM_ORT_LIB", value)
        got, _ = run(LOAD="1", ASCEND_ENGINE_BACKEND="sim")
        assert got["after_load"]["ASCEND_SIM_ORT_LIB"] == value
        assert got["after_load"] == got["before"]
