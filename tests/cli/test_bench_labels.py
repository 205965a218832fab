"""What bench prints says what happened: a breakdown whose rows add up to the latency, a
baseline of another pipeline refused before anything runs, errors named by where they happened,
a folder or a missing demo named as such, and every ``sim`` subcommand described."""

import json

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli

from ascend_engine import sim


def dense(path, n_in, n_out, latency_us, seed):
    rng = np.random.default_rng(seed)
    g = sim.Graph(path.stem)
    w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
    g.output("y", g.relu(g.matmul(g.input("x", "float32", (-1, n_in)), g.const(w))))
    g.save(str(path), batch_sizes=(1, 2, 4), latency_us=latency_us)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A 2 ms -> 4 ms chain: at depth 4 a request waits behind three others on the 4 ms stage."""
    folder = tmp_path_factory.mktemp("labels")
    dense(folder / "first.om", 16, 16, 2000, 1)
    dense(folder / "second.om", 16, 8, 4000, 2)
    spec = folder / "chain.yaml"
    spec.write_text("inputs: {x: {dtype: float32, shape: [-1, 16]}}\n"
                    "models:\n"
                    "  - {name: first, path: first.om, inputs: [x]}\n"
                    "  - {name: second, path: second.om, inputs: [first]}\n"
                    "outputs: {y: second}\n")
    return spec


def bench_json(tmp_path, *args):
    out = tmp_path / "b.json"
    proc = ok(run_cli("bench", *map(str, args), "--no-progress", "--json", str(out)))
    return proc, json.loads(out.read_text())


ADDING_UP = ("before_device", "h2d", "queue", "d2h", "after_device")


@pytest.mark.parametrize("depth", [1, 4])
def test_the_breakdown_adds_up_to_the_latency(chain, tmp_path, depth):
    proc, fig = bench_json(tmp_path, chain, "--profile", "--depth", depth, "--requests", 40, "--warmup", 4)
    req = fig["breakdown"]["per_request"]
    e2e = req["end_to_end"]["mean"]
    rows = {key: req[key]["mean"] for key in ADDING_UP}
    rows.update({f"model {n}": req["compute"][n]["mean"] for n in ("first", "second")})
    assert sum(rows.values()) == pytest.approx(e2e, rel=0.05), (rows, e2e)
    assert fig["latency_ms"]["mean"] == pytest.approx(e2e)
    # the queue row is the wait behind earlier requests: none at depth 1; at depth 4 the 4 ms stage
    # sets the pace, a request is answered 4 x 4 ms after its submit, 6 ms of it its own runs
    if depth == 1:
        assert rows["queue"] < 0.5, rows
    else:
        # (the host resubmits each slot as its result comes back: a late host leaves a slot empty
        # for a while, so the queue is under the full figure, never over it)
        assert (4 * 4.0 - 6.0) * 0.5 <= rows["queue"] <= (4 * 4.0 - 6.0) * 1.1, rows
    # the host's ends of the latency are a small part of it: the device clock is lined up with the host's
    # (a base off by the run would put the whole latency there, or nothing)
    assert 0 < rows["before_device"] + rows["after_device"] < 0.25 * e2e, rows
    assert "  queued, behind earlier " in proc.stdout
    assert "  the rows above add up to " in proc.stdout
    assert "p95" in req["end_to_end"] and fig["latency_ms"]["p95"] <= fig["latency_ms"]["p99"]


def test_without_profile_nothing_is_timed_per_step_and_the_report_says_so(chain, tmp_path):
    proc, fig = bench_json(tmp_path, chain, "--requests", 20, "--warmup", 2)
    assert fig["config"]["profile"] is False and fig["breakdown"]["measured"] is False
    assert fig["device_time"]["ms_per_request"] == {}
    assert 0 < fig["host"]["calling_thread_busy"] < 0.9 and fig["host_bound"] is False
    assert ("breakdown : not measured: --profile times every step with device events (at a host cost "
            "per request)") in proc.stdout
    assert "bound     : not host-bound: the calling thread was busy " in proc.stdout
    assert "pipeline  : 2 steps (model first, model second) on " in proc.stdout
    assert ", p95 " in proc.stdout and ", mean " in proc.stdout


def test_compare_refuses_another_pipeline_before_anything_runs(chain, demo, tmp_path):
    base = tmp_path / "base.json"
    ok(run_cli("bench", str(demo["spec"]), "--requests", "4", "--warmup", "0", "--no-progress",
               "--json", str(base)))
    log = tmp_path / "calls.log"
    proc = run_cli("bench", str(chain), "--compare", str(base), "--no-progress",
                   env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert error_line(proc) == (f"ascend-engine: error: cannot compare with {base}: it ran the models "
                                "['encoder', 'mixer', 'head'], this run ['first', 'second'] (a different "
                                "pipeline)")
    assert "aclmdlExecute" not in (log.read_text() if log.exists() else "")


def test_out_of_memory_at_load_is_named_as_such(demo):
    proc = run_cli("bench", str(demo["spec"]), "--no-progress",
                   env={"ASCEND_SIM_FAULTS": "aclmdlLoadFromFile@1+=207001"})
    assert proc.returncode == 1
    line = error_line(proc)
    assert line.startswith("ascend-engine: error: OutOfMemoryError while loading the pipeline: "
                           f"{demo['spec']}: models[0]: model node 'encoder': aclmdlLoadFromFile failed: "
                           "ACL_ERROR_RT_MEMORY_ALLOCATION (207001)"), line


def test_a_spec_error_stays_a_spec_error(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("inputs: {x: {dtype: float32, shape: [-1, 4]}}\nmodels: []\noutputs: {}\n")
    proc = run_cli("bench", str(spec), "--no-progress")
    assert proc.returncode == 1
    assert error_line(proc).startswith(f"ascend-engine: error: SpecError: {spec}: models: ")


def test_a_folder_is_named_with_the_files_it_holds(demo, tmp_path):
    for command in ("bench", "trace"):
        extra = ["--out", str(tmp_path / "t.json")] if command == "trace" else []
        proc = run_cli(command, str(demo["dir"]), *extra)
        assert proc.returncode == 2
        assert error_line(proc) == (f"ascend-engine: error: {demo['dir']} is a folder, not a spec or model "
                                    f"file; it holds {demo['spec']}: ascend-engine bench {demo['spec']}")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert error_line(run_cli("bench", str(empty))) == (
        f"ascend-engine: error: {empty} is a folder, not a spec or model file, and holds neither a spec "
        "(.yaml, .yml, .json) nor a model (.om)")


def test_a_missing_demo_names_the_command_that_writes_it(tmp_path):
    proc = run_cli("bench", "demo", cwd=str(tmp_path))
    assert proc.returncode == 2
    assert error_line(proc) == ("ascend-engine: error: spec or model file not found: demo; ascend-engine sim "
                                "make-demo demo writes the demo models and demo/pipeline.yaml")


@pytest.mark.parametrize("command, words", [("lib-path", "Print the path of the AscendCL simulator library"),
                                            ("env", "Print shell lines"),
                                            ("toolkit", "laid out like a CANN toolkit install")])
def test_every_sim_subcommand_is_described(command, words):
    proc = ok(run_cli("sim", command, "--help"))
    assert words in " ".join(proc.stdout.split())


def test_the_queue_follows_the_critical_path_of_a_graph():
    from ascend_engine.bench.breakdown import StepLayout, execution_steps

    # a and b read the input side by side; c reads both; the copy-out takes c
    layout = StepLayout(names=("a", "b", "c"), labels=("model a", "model b", "model c"),
                        producers=((-1,), (-1,), (0, 1)), output_producers=(2,))
    row = [0.0, 1.0,            # copy-in
           1.0, 1.0, 3.0,       # a: 2 ms
           1.0, 1.0, 6.0,       # b: 5 ms, the later producer of c
           1.0, 8.0, 9.0,       # c: its inputs done at 6, its stream free at 8
           9.0, 9.5, 10.0]      # copy-out: ready at 9, started at 9.5
    steps = execution_steps(row, layout)
    assert steps["queue"] == pytest.approx(2.0 + 0.5)
    on_path = steps["h2d"] + steps["compute"]["b"] + steps["compute"]["c"] + steps["queue"] + steps["d2h"]
    assert on_path == pytest.approx(steps["end"] - steps["start"])


def test_a_copy_between_devices_is_named_as_a_copy(chain, tmp_path):
    spec = tmp_path / "two.yaml"
    spec.write_text(chain.read_text().replace("{name: second, path: second.om,",
                                              "{name: second, device: 1, path: second.om,")
                    .replace("path: first.om", f"path: {chain.parent / 'first.om'}")
                    .replace("path: second.om", f"path: {chain.parent / 'second.om'}"))
    proc, fig = bench_json(tmp_path, spec, "--profile", "--requests", 6, "--warmup", 1)
    copies = {n: label for n, label in fig["step_labels"].items() if label.startswith("copy ")}
    assert copies and all(label == n and "to device" in n for n, label in copies.items()), fig["step_labels"]
    assert fig["step_labels"]["first"] == "model first"
    for label in copies.values():
        assert f"  {label} " in proc.stdout          # a breakdown row of its own


def test_a_base_read_late_is_lined_up_by_causality():
    from ascend_engine.bench.breakdown import causal_base

    # two requests: submitted at 10.000 s and 10.004 s, their device work at 1-5 ms and 5-9 ms of
    # the timeline, their results held at 10.006 s and 10.010 s: the base lies in [9.999, 10.001]
    requests = [(10.000, 10.006, 1.0, 5.0), (10.004, 10.010, 5.0, 9.0)]
    assert causal_base(10.0005, requests) == pytest.approx(10.0005)     # inside: kept
    assert causal_base(10.0030, requests) == pytest.approx(10.001)      # read late: no result before its end
    assert causal_base(9.9950, requests) == pytest.approx(9.999)        # too early: no run before its submit
    assert causal_base(10.0030, []) == 10.0030                          # nothing timed: kept
    # rows that leave no interval (a clock that jumped) keep the reading
    assert causal_base(10.0, [(10.0, 10.001, 0.0, 5.0)]) == 10.0
