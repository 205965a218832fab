"""The ``ascend-engine`` command, run in a child process as a user would run it."""

import json
import os
import pathlib
import platform
import pty
import re
import subprocess
import sys

import numpy as np
import pytest
from cli_run import CHILD_ENV, error_line, ok, run_cli

import ascend_engine as ae
from ascend_engine import sim, spec
from ascend_engine.bench import compare

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

LIB = os.path.join(os.path.dirname(ae.__file__), "_lib", "libascendcl_sim.so")


# ---- info --------------------------------------------------------------------------------------


def test_info_text_lists_backend_devices_and_versions():
    proc = ok(run_cli("info", env={"ASCEND_SIM_DEVICE_COUNT": "2", "ASCEND_SIM_DEVICE_MEMORY": "2GiB"}))
    lines = proc.stdout.splitlines()
    assert lines[0] == (f"ascend-engine {ae.__version__}  (Python {platform.python_version()}, "
                        f"numpy {np.__version__})")
    assert lines[1] == f"backend : sim  {LIB}"
    assert lines[2] == "devices : 2"
    assert re.fullmatch(r"\s+id\s+soc\s+free\s+total", lines[3])
    for i, line in enumerate(lines[4:6]):
        assert re.fullmatch(rf"\s+{i}\s+Ascend910B-sim\s+2\.0 GiB\s+2\.0 GiB", line), line
    assert len(lines) == 6


def test_info_json_parses_with_devices():
    proc = ok(run_cli("info", "--json", env={"ASCEND_SIM_DEVICE_COUNT": "3"}))
    data = json.loads(proc.stdout)
    assert data["package"] == {"name": "ascend-engine", "version": ae.__version__}
    assert data["python"] == platform.python_version()
    assert data["numpy"] == np.__version__
    assert data["backend"] == {"name": "sim", "library": LIB}
    assert data["device_count"] == 3
    assert [d["id"] for d in data["devices"]] == [0, 1, 2]
    for d in data["devices"]:
        assert d["soc"] == "Ascend910B-sim"
        assert 0 < d["memory_free"] <= d["memory_total"]


def test_installed_script_runs():
    proc = ok(run_cli("info", "--json", script=True))
    assert json.loads(proc.stdout)["backend"]["name"] == "sim"
    assert ok(run_cli("--version", script=True)).stdout.strip() == f"ascend-engine {ae.__version__}"


# ---- sim ---------------------------------------------------------------------------------------


def test_make_demo_writes_models_and_a_spec(demo):
    folder = demo["dir"]
    assert demo["stdout"].splitlines() == [
        f"model     : {folder / 'encoder.om'}  (encoder)",
        f"model     : {folder / 'mixer.om'}  (mixer)",
        f"model     : {folder / 'head.om'}  (head)",
        f"spec      : {folder / 'pipeline.yaml'}",
        f"run it    : ascend-engine bench {folder / 'pipeline.yaml'}",
    ]
    pipe, kw = spec.load(demo["spec"])
    assert kw == {"depth": 8, "streams": "per-model"}
    assert [n.name for n in pipe.plan().nodes] == ["encoder", "mixer", "head"]


def test_lib_path_prints_the_simulator_library():
    proc = ok(run_cli("sim", "lib-path"))
    assert proc.stdout == LIB + "\n"
    assert os.path.isfile(proc.stdout.strip())
    missing = run_cli("sim", "lib-path", env={"ASCEND_ENGINE_SIM_LIBRARY": "/nonexistent/libsim.so"})
    assert missing.returncode == 1
    assert error_line(missing) == ("ascend-engine: error: RuntimeError: the simulator library is missing: "
                                   "/nonexistent/libsim.so (rebuild with pip install -e .)")


def test_env_lines_set_up_a_shell(tmp_path):
    proc = ok(run_cli("sim", "env"))
    libdir = os.path.dirname(LIB)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"# AscendCL simulator: {LIB}"
    assert "export ASCEND_ENGINE_BACKEND=sim" in lines
    assert any(f"-L{libdir} -lascendcl_sim -Wl,-rpath,{libdir}" in ln for ln in lines)
    # the lines work when a shell evaluates them
    script = tmp_path / "env.sh"
    script.write_text(proc.stdout)
    shell = subprocess.run(["bash", "-c", f'LD_LIBRARY_PATH=/opt/x; . {script}; echo "$LD_LIBRARY_PATH"; '
                                          'echo "$ASCEND_ENGINE_BACKEND"'],
                           capture_output=True, text=True, check=True)
    assert shell.stdout.splitlines() == [f"{libdir}:/opt/x", "sim"]


# ---- bench -------------------------------------------------------------------------------------


def test_bench_spec_prints_and_saves_the_figures(bench_json, demo):
    proc, data, _path = bench_json
    out = proc.stdout
    assert f"target    : {demo['spec']} (spec) on sim device 0 (Ascend910B-sim)" in out
    assert ("pipeline  : 3 steps (model encoder, model mixer, model head) on 3 stream(s), depth 8, "
            "batch 2") in out
    assert "requests  : 24 timed in " in out and "after 1 cold + 2 warm-up" in out
    tput = re.search(r"throughput: ([\d.]+) requests/s, ([\d.]+) rows/s", out)
    assert float(tput.group(2)) == pytest.approx(2 * float(tput.group(1)), rel=0.01)
    assert "inputs    : random, 4 distinct feeds used in turn" in out
    assert re.search(r"latency   : cold [\d.]+ ms \(first request\); submit to result p50 [\d.]+ ms, "
                     r"p90 [\d.]+, p95 [\d.]+, p99 [\d.]+, max [\d.]+, mean [\d.]+$", out, re.M)
    for step in ("end-to-end", "submit to H2D", "H2D", "model encoder", "model mixer", "model head",
                 "queued, behind earlier", "D2H", "D2H to result", "host enqueue", "device span",
                 "model mixer waited", "D2H waited"):
        assert re.search(rf"^  {step}\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out,
                         re.M), step
    assert "  per execution " not in out and "split     :" not in out
    assert re.search(r"bound     : device-bound: host enqueue [\d.]+ ms per execution \(p50\) is below the "
                     r"slowest stage \(model mixer, [\d.]+ ms\)", out)
    assert "memory    : device arena " in out

    assert data["kind"] == "spec" and data["backend"] == "sim" and data["device"] == 0
    assert data["nodes"] == ["encoder", "mixer", "head"]
    assert data["config"] == {"batch": 2, "depth": 8, "streams": "per-model", "requests": 24,
                              "duration": None, "warmup": 2, "repeat": 1, "profile": True}
    assert data["pipeline"]["gears"] == {"encoder": [1, 2, 4, 8], "mixer": [1, 2, 4, 8], "head": [1, 2, 4, 8]}
    assert len(data["latency_samples_ms"]) == 24
    assert data["requests"] == 24 and data["rows"] == 48
    t = data["throughput"]
    assert t["requests_per_s"] == pytest.approx(24 / data["wall_seconds"])
    assert data["latency_ms"]["p50"] == pytest.approx(float(np.percentile(data["latency_samples_ms"], 50)))
    assert t["rows_per_s"] == pytest.approx(2 * t["requests_per_s"])
    # a 3 ms stage bounds a pipelined run at ~333 requests/s
    assert 50 < t["requests_per_s"] < 345
    lat = data["latency_ms"]
    assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["cold"] >= 6.0 * 0.95       # one request crosses 2 + 3 + 1 ms of device time
    assert lat["min"] >= 6.0 * 0.95
    dev = data["device_time"]["ms_per_request"]
    assert set(dev) == {"encoder", "mixer", "head"}
    for name, ms in (("encoder", 2.0), ("mixer", 3.0), ("head", 1.0)):
        assert ms * 0.95 <= dev[name] <= ms * 2
    assert data["device_time"]["slowest_node"] == "mixer"
    assert 0 < data["host"]["enqueue_ms_per_request"] < dev["mixer"]
    assert data["host_bound"] is False
    mem = data["memory"]
    assert mem["depth"] == 8
    assert mem["arena_bytes"] == mem["slot_bytes"] * 8 > 0
    assert mem["recommended_pool_bytes"] >= mem["peak_working_set"] > 0
    assert set(mem["per_node_bytes"]) == {"encoder", "mixer", "head"}
    # not a terminal: plain progress lines, never a carriage return
    assert "\r" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("progress: done, 24 requests in ")


def test_bench_a_single_model_file(demo, tmp_path):
    out = tmp_path / "one.json"
    proc = ok(run_cli("bench", str(demo["dir"] / "head.om"), "--requests", "10", "--warmup", "1",
                      "--depth", "2", "--streams", "single", "--json", str(out), "--no-progress",
                      "--profile"))
    assert proc.stderr == ""
    data = json.loads(out.read_text())
    assert data["kind"] == "model" and data["nodes"] == ["head"]
    assert data["config"]["batch"] == 1 and data["config"]["depth"] == 2
    assert data["config"]["streams"] == "single"
    assert data["requests"] == 10
    assert 0.95 <= data["device_time"]["ms_per_request"]["head"] <= 2.0
    assert "pipeline  : 1 step (model head) on 1 stream(s), depth 2, batch 1" in proc.stdout
    assert proc.stdout.splitlines()[-1] == f"json      : {out}"


def test_bench_for_a_duration(demo, tmp_path):
    out = tmp_path / "d.json"
    ok(run_cli("bench", str(demo["spec"]), "--duration", "0.25", "--warmup", "0", "--json", str(out)))
    data = json.loads(out.read_text())
    assert data["config"]["duration"] == 0.25 and data["config"]["requests"] is None
    assert data["wall_seconds"] >= 0.25
    assert data["requests"] >= 10


def test_bench_compare_prints_changes_and_a_verdict(bench_json, demo, tmp_path):
    _, base, base_path = bench_json
    proc = ok(run_cli("bench", str(demo["spec"]), "--requests", "24", "--warmup", "2", "--batch", "2",
                      "--profile", "--compare", str(base_path)))
    lines = proc.stdout.splitlines()
    start = lines.index(f"compare   : against {base_path}")
    assert lines[start + 1].split() == ["figure", "baseline", "new", "unit", "change"]
    table = lines[start + 2:]
    names = [re.match(r"  (\S.*?)\s{2,}", ln).group(1) for ln in table[:-1]]
    assert names == ["throughput", "throughput (rows)", "cold latency", "p50 latency", "p90 latency",
                     "p99 latency", "max latency", "host enqueue", "device arena", "device encoder",
                     "device mixer", "device head"]
    arena = next(ln for ln in table if ln.startswith("  device arena"))
    assert re.search(r"x1\.000\s+\+0\.0%\s+same$", arena), arena
    for ln in table[:-1]:
        assert re.search(r" -> .* x\d+\.\d{3}\s+[+-]\d+\.\d%\s+(better|worse|same)(  \(not gated: .*\))?$",
                         ln), ln
    gated = [ln for ln in table[:-1] if "not gated" not in ln]
    assert [re.match(r"  (\S.*?)\s{2,}", ln).group(1) for ln in gated] == [
        "throughput", "p50 latency", "p90 latency", "p99 latency", "device arena"]
    assert table[-1].startswith("verdict   : ")

    # a baseline twice as fast as anything possible here: a throughput regression
    fast = dict(base, throughput={"requests_per_s": base["throughput"]["requests_per_s"] * 10,
                                  "rows_per_s": base["throughput"]["rows_per_s"] * 10})
    fast_path = tmp_path / "fast.json"
    fast_path.write_text(json.dumps(fast))
    args = ("bench", str(demo["spec"]), "--requests", "12", "--warmup", "0", "--batch", "2",
            "--compare", str(fast_path))
    proc = ok(run_cli(*args))
    verdict = proc.stdout.splitlines()[-1]
    assert re.fullmatch(r"verdict   : REGRESSION beyond 10%: throughput -\d\d\.\d%.*", verdict), verdict
    gated = run_cli(*args, "--fail-on-regression", "--json", str(tmp_path / "cmp.json"))
    assert gated.returncode == 1
    cmp = json.loads((tmp_path / "cmp.json").read_text())["comparison"]
    assert cmp["baseline"] == str(fast_path)
    assert cmp["regressions"][0].startswith("throughput -")
    row = cmp["figures"][0]
    assert row["name"] == "throughput" and row["change"] == "worse"
    assert row["ratio"] == pytest.approx(row["current"] / row["baseline"])
    assert row["percent"] == pytest.approx((row["ratio"] - 1) * 100)


def test_bench_progress_redraws_one_line_on_a_terminal(demo):
    parent, child = pty.openpty()
    env = dict(os.environ, **CHILD_ENV)
    proc = subprocess.Popen([sys.executable, "-m", "ascend_engine", "bench", str(demo["spec"]),
                             "--duration", "0.4", "--warmup", "0"],
                            stdout=subprocess.PIPE, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(parent, 4096)
        except OSError:      # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    os.close(parent)
    tty = b"".join(chunks).decode()
    assert re.search(r"\r\[#*\s*\] \d+ requests, [\d.]+/0\.4 s, [\d.]+ requests/s", tty), repr(tty)
    assert "\n" not in tty.replace("\r\n", "")  # redrawn in place, no scrolling lines
    assert "progress:" not in tty


def test_host_bound_is_reported(tmp_path):
    # zero device time: the host's enqueue is the slower side
    g = sim.Graph("tiny")
    g.output("y", g.relu(g.input("x", "float32", (-1, 4))))
    path = g.save(str(tmp_path / "tiny.om"), batch_sizes=(1, 2))
    out = tmp_path / "tiny.json"
    proc = ok(run_cli("bench", path, "--requests", "30", "--json", str(out), "--no-progress", "--profile"))
    data = json.loads(out.read_text())
    assert data["host_bound"] is True and data["breakdown"]["host_bound"] is True
    per_execution = data["breakdown"]["per_execution"]
    assert per_execution["enqueue"]["p50"] > per_execution["compute"]["tiny"]["p50"]
    assert per_execution["enqueue"]["p50"] > data["breakdown"]["slowest_stage_ms"]
    assert "bound     : HOST-BOUND: host enqueue " in proc.stdout


# ---- trace -------------------------------------------------------------------------------------


def test_trace_writes_chrome_trace_events_that_overlap_across_streams(demo, tmp_path):
    if not hasattr(ae.Engine, "trace"):
        pytest.skip("Engine.trace is not in this build yet (the executor's timeline API)")
    out = tmp_path / "trace.json"
    proc = ok(run_cli("trace", str(demo["spec"]), "--out", str(out), "--requests", "12"))
    assert re.match(rf"trace     : {re.escape(str(out))}: \d+ spans on \d+ lanes over [\d.]+ ms "
                    r"\(12 requests\)", proc.stdout)
    data = json.loads(out.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = [e for e in events if e.get("ph") == "X"]
    assert spans
    for e in spans:
        assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0
    lanes = {}
    for e in spans:
        lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    assert len(lanes) >= 3
    overlaps = 0
    keys = sorted(lanes)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            overlaps += sum(1 for s1, e1 in lanes[a] for s2, e2 in lanes[b] if s1 < e2 and s2 < e1)
    assert overlaps > 0, "a pipelined run shows work on different streams at the same time"


# ---- usage errors (2) and run-time failures (1) -----------------------------------------------------


def test_no_command_and_unknown_command_are_usage_errors():
    proc = run_cli()
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == ("ascend-engine: error: the following arguments are required: "
                                            "COMMAND")
    proc = run_cli("frobnicate")
    assert proc.returncode == 2
    assert "ascend-engine: error: argument COMMAND: invalid choice: 'frobnicate'" in proc.stderr
    proc = run_cli("sim", "nope")
    assert proc.returncode == 2
    assert "invalid choice: 'nope'" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (("bench", "SPEC", "--requests", "0"), "argument --requests: expected a positive integer, got '0'"),
    (("bench", "SPEC", "--requests", "3", "--duration", "1"),
     "argument --duration: not allowed with argument --requests"),
    (("bench", "SPEC", "--streams", "many"), "argument --streams: invalid choice: 'many'"),
    (("trace", "SPEC"), "the following arguments are required: --out"),
])
def test_bad_options_are_usage_errors(demo, args, message):
    proc = run_cli(*[str(demo["spec"]) if a == "SPEC" else a for a in args])
    assert proc.returncode == 2
    assert message in proc.stderr.splitlines()[-1]


def test_missing_files_are_usage_errors_naming_the_path(demo, tmp_path):
    missing = tmp_path / "nowhere" / "pipe.yaml"
    proc = run_cli("bench", str(missing))
    assert proc.returncode == 2
    assert error_line(proc) == f"ascend-engine: error: spec or model file not found: {missing}"
    proc = run_cli("trace", str(missing), "--out", str(tmp_path / "t.json"))
    assert proc.returncode == 2
    assert error_line(proc) == f"ascend-engine: error: spec or model file not found: {missing}"
    proc = run_cli("bench", str(demo["spec"]), "--compare", str(tmp_path / "base.json"))
    assert proc.returncode == 2
    assert error_line(proc) == f"ascend-engine: error: baseline file not found: {tmp_path / 'base.json'}"
    proc = run_cli("bench", str(demo["spec"]), "--json", str(tmp_path / "no" / "out.json"))
    assert proc.returncode == 2
    assert error_line(proc) == (f"ascend-engine: error: --json: cannot write {tmp_path / 'no' / 'out.json'}: "
                                f"no folder {tmp_path / 'no'}")


def test_a_bad_spec_fails_naming_the_key_path(demo, tmp_path):
    text = demo["spec"].read_text().replace("inputs: [encoder]", "inputs: [encoderr]")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("encoder.om", str(demo["dir"] / "encoder.om"))
                   .replace("mixer.om", str(demo["dir"] / "mixer.om"))
                   .replace("head.om", str(demo["dir"] / "head.om")))
    proc = run_cli("bench", str(bad))
    assert proc.returncode == 1
    assert error_line(proc) == (f"ascend-engine: error: SpecError: {bad}: models[1].inputs[0]: unknown "
                                "tensor 'encoderr': expected an input (x), a model (encoder, mixer, head) or "
                                "model.output")


def test_a_runtime_failure_is_one_line_and_debug_shows_the_traceback(demo):
    faults = {"ASCEND_SIM_FAULTS": "task:execute@5=507011"}
    proc = run_cli("bench", str(demo["spec"]), "--requests", "10", "--no-progress", env=faults)
    assert proc.returncode == 1
    line = error_line(proc)
    assert line.startswith("ascend-engine: error: DeviceError: aclmdlExecuteAsync failed: "
                           "ACL_ERROR_RT_MODEL_EXECUTE (507011): node '")
    assert "(injected fault)" in line
    assert proc.stderr.strip() == line

    proc = run_cli("bench", str(demo["spec"]), "--requests", "10", "--no-progress", "--debug", env=faults)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert 'ascend_engine/cli.py", line' in proc.stderr
    # the same one line closes the output (which node's execution fails first depends on timing)
    assert proc.stderr.splitlines()[-1].startswith(line[:line.index("node '")])
    assert proc.stderr.splitlines()[-1].endswith(line[line.index("(injected fault)"):])


def test_a_backend_failure_shows_the_places_searched_and_the_fix():
    proc = run_cli("info", env={"ASCEND_ENGINE_BACKEND": "acl", "ASCEND_HOME_PATH": "/nonexistent",
                                "LD_LIBRARY_PATH": ""})
    if proc.returncode == 0:
        pytest.skip("a real libascendcl.so is installed here")
    assert proc.returncode == 1
    assert error_line(proc).startswith("ascend-engine: error: BackendError: ASCEND_ENGINE_BACKEND=acl: "
                                       "no usable libascendcl.so")
    lines = proc.stderr.splitlines()
    # without --debug: every path tried, then the fix
    assert "    /nonexistent/lib64/libascendcl.so: not found" in lines
    assert "    /usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so: not found" in lines
    assert lines[-1] == ("  Install CANN and source its set_env.sh (which sets ASCEND_HOME_PATH), or use "
                         "ASCEND_ENGINE_BACKEND=sim for the simulator.")
    assert "more with --debug" not in proc.stderr


def test_the_fallback_warning_says_why():
    proc = ok(run_cli("info", env={"ASCEND_ENGINE_BACKEND": "auto", "ASCEND_HOME_PATH": "/nonexistent",
                                   "LD_LIBRARY_PATH": ""}))
    if "backend : acl" in proc.stdout:
        pytest.skip("a real Ascend device is present")
    warning = proc.stderr.splitlines()[0]
    if os.path.exists("/usr/local/Ascend"):   # a CANN install in a default place: found, but no device
        assert re.match(r"ascend-engine: no usable Ascend device: (CANN's libascendcl.so \(.*\) loaded, but "
                        r"|libascendcl.so found but not usable)", warning), warning
        return
    assert warning.startswith("ascend-engine: no usable Ascend device: no libascendcl.so found (CANN is not "
                              "installed, or its set_env.sh was not sourced); using the AscendCL simulator ")


# ---- in-process: the comparison arithmetic --------------------------------------------------------


def _figures(batch=4, depth=8, rps=100.0, p50=5.0, p99=8.0, arena=1000, spread=None):
    """A minimal bench JSON for the comparison arithmetic."""
    return {"nodes": ["a"], "pipeline": {"nodes": ["a"], "gears": {"a": [1, 2, 4, 8]},
                                         "inputs": {"x": ["float32", [-1, 4]]}},
            "throughput": {"requests_per_s": rps, "rows_per_s": rps * batch},
            "latency_ms": {"cold": 10.0, "p50": p50, "p90": 6.0, "p99": p99, "max": 9.0},
            "latency_per_row_ms": {"p50": p50 / batch, "p90": 6.0 / batch, "p99": p99 / batch},
            "host": {"enqueue_ms_per_request": 0.1}, "memory": {"arena_bytes": arena},
            "breakdown": {"per_execution": {"compute": {"a": {"p50": 2.0}}}},
            "repeat": {"count": 3 if spread else 1, "spread_percent": spread or {}},
            "config": {"batch": batch, "depth": depth}}


def test_compare_arithmetic_and_verdict():
    base = _figures()
    same = compare.compare(base, base)
    assert same["regressions"] == [] and all(r["change"] == "same" for r in same["figures"])
    assert same["verdict"] == ("no regression beyond 10% in throughput, p50 latency, p90 latency, "
                               "p99 latency, device arena (0 better, 0 worse)")
    cur = _figures(rps=80.0, p99=8.4)      # throughput 20 % worse; p99 5 % worse: inside the tolerance
    cur["latency_ms"]["cold"] = 20.0        # not gated
    res = compare.compare(cur, base, tolerance=10)
    rows = {r["name"]: r for r in res["figures"]}
    assert rows["throughput"]["ratio"] == pytest.approx(0.8)
    assert rows["throughput"]["percent"] == pytest.approx(-20.0)
    assert rows["throughput"]["change"] == "worse" and rows["throughput"]["gated"]
    assert rows["p99 latency"]["percent"] == pytest.approx(5.0) and rows["p99 latency"]["change"] == "worse"
    assert rows["cold latency"]["change"] == "worse" and not rows["cold latency"]["gated"]
    assert rows["device a"]["change"] == "same" and rows["device a"]["unit"] == "ms/execution"
    assert res["regressions"] == ["throughput -20.0%"]
    assert res["verdict"] == "REGRESSION beyond 10%: throughput -20.0%"
    assert res["notes"] == []


def test_compare_across_batches_gates_on_rows_and_per_row_latency():
    base = _figures(batch=4, rps=100.0, p50=5.0)          # 400 rows/s, 1.25 ms per row
    cur = _figures(batch=8, rps=50.5, p50=9.0)            # 404 rows/s, 1.125 ms per row
    res = compare.compare(cur, base)
    rows = {r["name"]: r for r in res["figures"]}
    # requests/s halved, but it is not a like figure across batches: shown, not gated
    assert rows["throughput"]["percent"] == pytest.approx(-49.5) and not rows["throughput"]["gated"]
    assert rows["throughput"]["why"] == "batch differs"
    assert rows["throughput (rows)"]["percent"] == pytest.approx(1.0) and rows["throughput (rows)"]["gated"]
    assert rows["p50 latency per row"]["baseline"] == pytest.approx(1.25)
    assert rows["p50 latency per row"]["current"] == pytest.approx(1.125)
    assert rows["p50 latency per row"]["change"] == "better" and rows["p50 latency per row"]["gated"]
    assert not rows["p50 latency"]["gated"]
    assert res["regressions"] == []
    assert res["verdict"].startswith("no regression beyond 10% in throughput (rows), p50 latency per row, "
                                     "p90 latency per row, p99 latency per row, device arena")
    assert "the baseline ran with batch 4, this run with 8" in res["notes"]
    # the other way round, fewer rows per second is a regression
    res = compare.compare(base, _figures(batch=8, rps=100.0, p50=5.0))
    assert res["regressions"][0] == "throughput (rows) -50.0%"


def test_compare_refuses_different_pipelines_and_gears():
    base = _figures()
    other = _figures()
    other["nodes"] = other["pipeline"]["nodes"] = ["b"]
    with pytest.raises(compare.IncomparableError,
                       match=r"cannot compare with base.json: it ran the models \['a'\], this run \['b'\] "
                             r"\(a different pipeline\)"):
        compare.compare(other, base, baseline_name="base.json")
    geared = _figures()
    geared["pipeline"]["gears"] = {"a": [1, 2, 4]}
    with pytest.raises(compare.IncomparableError,
                       match=r"the batch gears differ \(a: \[1, 2, 4, 8\] then, \[1, 2, 4\] now\)"):
        compare.compare(geared, base)


def test_compare_counts_a_change_within_the_spread_as_noise():
    spread = {"requests_per_s": 8.0, "rows_per_s": 8.0, "p50": 1.0, "p90": 1.0, "p99": 1.0}
    base = _figures(rps=100.0, spread=spread)
    res = compare.compare(_figures(rps=86.0, spread=spread), base)    # -14 %, noise 8 + 8 = 16 %
    assert res["regressions"] == []
    assert res["verdict"].endswith("; within the runs' spread: throughput -14.0%")
    assert {r["name"]: r for r in res["figures"]}["throughput"]["noise_percent"] == pytest.approx(16.0)
    res = compare.compare(_figures(rps=80.0, spread=spread), base)    # -20 %: beyond the noise
    assert res["regressions"] == ["throughput -20.0%"]


def test_sim_toolkit_is_listed_only_when_the_toolkit_module_exists():
    import importlib.util

    help_text = ok(run_cli("sim", "--help")).stdout
    if importlib.util.find_spec("ascend_engine.toolkit") is None:
        assert "toolkit" not in help_text
        assert run_cli("sim", "toolkit", "x").returncode == 2
    else:
        assert re.search(r"^\s+toolkit\s+lay out a CANN-like toolkit folder", help_text, re.M)
        proc = run_cli("sim", "toolkit")
        assert proc.returncode == 2
        assert proc.stderr.splitlines()[-1] == ("ascend-engine sim toolkit: error: the following arguments "
                                                "are required: DIR")


# ---- the files the README and the manual name, and the commands that write them -----------------------


def readme_block(heading):
    """The first ```python block after ``heading`` in the README."""
    text = (REPO_ROOT / "README.md").read_text()
    after = text[text.index(heading):]
    start = after.index("```python\n") + len("```python\n")
    return after[start:after.index("```", start)]


def test_the_readme_ten_line_pipeline_runs_where_make_demo_wrote_demo(tmp_path):
    """The README's ten lines named encoder.om and head.om: they ran only from inside demo/."""
    ok(run_cli("sim", "make-demo", "demo", cwd=str(tmp_path)))
    code = readme_block("## A pipeline in ten lines")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                          env=dict(os.environ, ASCEND_ENGINE_BACKEND="sim"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "'requests': 250" in proc.stdout         # 1000 rows at batch 4


def test_make_demo_shapes_writes_the_manuals_det_rec_and_ocr_yaml(tmp_path):
    """docs/cli.md ran det.om and ocr.yaml that no command wrote."""
    proc = ok(run_cli("sim", "make-demo", str(tmp_path), "--shapes"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["det.om", "ocr.yaml", "rec.om"]
    assert proc.stdout.splitlines()[-1] == f"run it    : ascend-engine bench {tmp_path / 'ocr.yaml'}"
    out = ok(run_cli("bench", str(tmp_path / "ocr.yaml"), "--requests", "4", "--no-progress")).stdout
    assert "shapes    : image:1,3,10,12 (the spec's bench_shape)" in out
    out = ok(run_cli("bench", str(tmp_path / "det.om"), "--requests", "4", "--no-progress")).stdout
    assert "gears     : dynamic image size (height x width) 8x16, 16x16, 24x32" in out


def test_the_detector_classifier_example_writes_the_readmes_models_and_spec(tmp_path):
    """The README's host-step pipeline named detector.om and classifier.om that no command wrote."""
    script = REPO_ROOT / "examples" / "detector_classifier.py"
    proc = subprocess.run([sys.executable, str(script), "--write-models", str(tmp_path)],
                          capture_output=True, text=True, env=dict(os.environ, ASCEND_ENGINE_BACKEND="sim"),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classifier.om", "detector.om",
                                                          "detector_classifier.yaml"]
    spec = (tmp_path / "detector_classifier.yaml").read_text()
    readme = (REPO_ROOT / "README.md").read_text()
    for line in ("  - {name: detector, path: detector.om, inputs: [image]}",
                 "    function: detector_classifier:select",
                 "outputs: {boxes: nms.boxes, label: classifier.label}"):
        assert line in spec and line in readme
    env = {"PYTHONPATH": os.pathsep.join([str(script.parent), os.environ.get("PYTHONPATH", "")])}
    out = ok(run_cli("bench", str(tmp_path / "detector_classifier.yaml"), "--allow-code", "--requests", "4",
                     "--no-progress", env=env)).stdout
    assert "3 steps (model detector, host step nms, model classifier)" in out
