"""The pytest plugin, exercised through generated test files run by ``pytester`` in child processes.

Child processes because AscendCL is initialised once per process: the
children choose their own backend and device.
"""

import json

import pytest

FIXTURES_TEST = '''
import os
import sys

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim

import conftest

SEEN = {}


def test_backend_option_was_applied_before_conftest_loaded():
    assert conftest.BACKEND_AT_IMPORT == "sim"
    assert os.environ["ASCEND_ENGINE_BACKEND"] == "sim"
    assert ae.backend().name == "sim"


def test_device_is_open_for_the_session(ae_device):
    assert isinstance(ae_device, ae.Device)
    assert ae_device.id == 1 and not ae_device.closed
    SEEN["device"] = ae_device


def test_same_device_and_a_fresh_stream(ae_device, ae_stream):
    assert ae_device is SEEN["device"]
    assert isinstance(ae_stream, ae.Stream) and ae_stream.device is ae_device
    SEEN["stream"] = ae_stream


def test_models_from_a_graph_and_a_callable(ae_model_factory, ae_stream, tmp_path):
    assert SEEN["stream"].closed and ae_stream is not SEEN["stream"]
    g = sim.Graph("double")
    g.output("y", g.add(g.input("x", "float32", (-1, 3)), g.input("z", "float32", (-1, 3))))
    m1 = ae_model_factory(g)
    m2 = ae_model_factory(lambda gr: gr.output("y", gr.relu(gr.input("x", "float32", (2, 4)))),
                          name="relu", latency_us=100)
    assert m1.batch_sizes == (1, 2, 4, 8) and m2.batch_sizes == ()
    assert m1.device_id == 1 and m2.device_id == 1
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(m1(x=x, z=x)["y"], 2 * x)
    v = np.array([[-1, 2, -3, 4], [5, -6, 7, -8]], np.float32)
    np.testing.assert_array_equal(m2(x=v)["y"], np.maximum(v, 0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["double-0.om", "relu-1.om"]
    assert ae_model_factory.paths == [str(tmp_path / "double-0.om"), str(tmp_path / "relu-1.om")]
    SEEN["models"] = (m1, m2)


def test_models_were_closed_after_their_test():
    assert all(m.closed for m in SEEN["models"])


@pytest.mark.ascend_hardware
def test_needs_a_real_npu():
    raise AssertionError("must not run on the simulator")
'''

CONFTEST = '''
import os

# what the backend variable holds when conftest files load: --ae-backend must be applied already
BACKEND_AT_IMPORT = os.environ.get("ASCEND_ENGINE_BACKEND")
'''


def test_fixtures_marker_and_options(pytester, monkeypatch):
    monkeypatch.setenv("ASCEND_ENGINE_BACKEND", "acl")    # the option must win over the environment
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fixtures=FIXTURES_TEST)
    result = pytester.runpytest_subprocess("--ae-backend", "sim", "--ae-device", "1", "-rs",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] test_fixtures.py:*: needs real Ascend hardware: running on the AscendCL simulator "
        "(backend 'sim'; ASCEND_ENGINE_BACKEND=sim)",
    ])


def test_help_lists_the_options_and_the_marker(pytester):
    # in process: neither listing touches AscendCL
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["ascend-engine devices and benchmarks:", "*--ae-backend={auto,acl,sim}*",
                                 "*--ae-device=ID*"])
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.ascend_hardware: the test needs a real Ascend NPU*"])


def test_runs_that_do_not_use_the_plugin_never_load_ascendcl(pytester, monkeypatch):
    # a backend value that fails as soon as anything loads AscendCL
    monkeypatch.setenv("ASCEND_ENGINE_BACKEND", "bogus")
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n",
                        test_marked=("import pytest\n\n@pytest.mark.ascend_hardware\n"
                                     "def test_hw():\n    pass\n"))
    result = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    # a marked test makes the plugin ask for the backend: the skip says why it failed
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED * needs real Ascend hardware: AscendCL could not be loaded (BackendError: "
        "ASCEND_ENGINE_BACKEND='bogus' is not a backend; allowed values: auto, acl, sim)",
    ])


BENCH_TEST = '''
import numpy as np

import ascend_engine as ae


def test_model_execution(device_benchmark, ae_device, ae_stream, ae_model_factory):
    model = ae_model_factory(lambda g: g.output("y", g.relu(g.input("x", "float32", (2, 8)))),
                             name="slow", latency_us=2000)
    x = ae.DeviceBuffer(ae_device, model.inputs[0].nbytes)
    y = ae.DeviceBuffer(ae_device, model.outputs[0].nbytes)
    x.copy_from(np.ones((2, 8), np.float32))
    result = device_benchmark(model.execute_async, [x], [y], ae_stream, stream=ae_stream,
                              rounds=4, warmup_rounds=1)
    assert result is None
    assert len(device_benchmark.device_ms) == 4
    assert all(ms >= 2.0 * 0.95 for ms in device_benchmark.device_ms)
    np.testing.assert_array_equal(y.copy_to(dtype=np.float32, nbytes=64), np.ones(16, np.float32))
'''


def test_device_benchmark_stores_device_figures_in_the_json(pytester):
    pytester.makepyfile(test_bench=BENCH_TEST)
    storage = pytester.path / "bench-store"
    result = pytester.runpytest_subprocess("--ae-backend", "sim", "--benchmark-json", "out.json",
                                           "--benchmark-autosave", f"--benchmark-storage=file://{storage}",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out.json").read_text())
    (bench,) = data["benchmarks"]
    info = bench["extra_info"]
    assert info["backend"] == "sim"
    assert info["device_rounds"] == 4 and bench["stats"]["rounds"] == 4
    assert info["device_ms_min"] <= info["device_ms_median"] <= info["device_ms_max"]
    assert info["device_ms_min"] <= info["device_ms_mean"] <= info["device_ms_max"]
    assert info["device_ms_min"] >= 2.0 * 0.95          # the model occupies the stream 2 ms
    assert info["device_ms_stddev"] >= 0
    # host time (pytest-benchmark's own figures) includes the device time it waited for
    assert bench["stats"]["min"] * 1e3 >= info["device_ms_min"] * 0.99

    # --benchmark-compare reads the autosaved run back: the device figures travel with it
    (saved,) = storage.rglob("*.json")
    assert json.loads(saved.read_text())["benchmarks"][0]["extra_info"]["device_rounds"] == 4
    again = pytester.runpytest_subprocess("--ae-backend", "sim", "--benchmark-compare",
                                          f"--benchmark-storage=file://{storage}", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)
    again.stderr.fnmatch_lines(["Comparing against benchmarks from: *0001_*.json"])


def device_rows(stdout):
    """{test name: [the row's fields]} of the device-time table the plugin prints after the run."""
    lines = stdout.splitlines()
    start = next(k for k, ln in enumerate(lines) if "ascend-engine device_benchmark: device time" in ln)
    assert lines[start + 1].split()[:10] == ["Name", "(device", "time", "in", "ms)", "Min", "Max", "Mean",
                                             "Median", "Stddev"]
    rows = {}
    for line in lines[start + 3:]:
        if not line.startswith("test_"):
            break
        fields = line.split()
        rows[fields[0]] = fields[1:]
    return rows, lines[start + 1]


def test_the_device_time_is_shown_in_the_terminal_and_compared(pytester):
    """pytest-benchmark's table and --benchmark-compare showed host time only; the device time stayed in
    the JSON. A table after theirs shows it, and the compared run's device mean beside it."""
    pytester.makepyfile(test_bench=BENCH_TEST)
    storage = pytester.path / "bench-store"
    first = pytester.runpytest_subprocess("--ae-backend", "sim", "--benchmark-autosave",
                                          f"--benchmark-storage=file://{storage}", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    rows, head = device_rows(first.stdout.str())
    figures = [float(v) for v in rows["test_model_execution"][:5]]
    assert figures[0] >= 2.0 * 0.95 and figures[0] <= figures[2] <= figures[1]   # 2 ms on the stream
    assert rows["test_model_execution"][5] == "4" and "Compared" not in head
    (saved,) = storage.rglob("*.json")
    info = json.loads(saved.read_text())["benchmarks"][0]["extra_info"]
    assert figures[2] == float(f"{info['device_ms_mean']:.4f}")
    again = pytester.runpytest_subprocess("--ae-backend", "sim", "--benchmark-compare",
                                          f"--benchmark-storage=file://{storage}", "-p", "no:cacheprovider")
    rows, head = device_rows(again.stdout.str())
    assert head.split()[-3:] == ["Compared", "mean", "Change"]
    mean, compared, change = (float(rows["test_model_execution"][k].rstrip("%")) for k in (2, 6, 7))
    assert compared == float(f"{info['device_ms_mean']:.4f}")
    assert abs(change - (mean / compared - 1) * 100) < 0.2      # the figures are shown rounded
    again.stdout.fnmatch_lines([f"compared with {saved.name}"])


def test_device_benchmark_without_pytest_benchmark_skips(pytester):
    pytester.makepyfile(test_nb="def test_nb(device_benchmark):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:benchmark", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * device_benchmark needs pytest-benchmark (pip install "
                                 "pytest-benchmark)"])


@pytest.fixture(autouse=True)
def _quiet_simulator(monkeypatch):
    # children get their backend from the test; the parent's fault rules must not leak in
    monkeypatch.delenv("ASCEND_SIM_FAULTS", raising=False)
