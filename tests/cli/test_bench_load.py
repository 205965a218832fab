"""``bench --concurrency`` and ``bench --rate`` against models whose device times are known.

The simulator runs a model for exactly the time it declares, so the load
figures can be checked against the truth: one caller waits only for its own
request, four callers keep a depth-4 chain as busy as its slowest model
allows, an open loop below capacity waits only for the device and one above
it is reported as not keeping up, and the batcher's options change the rows
each execution carries.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli

from ascend_engine import sim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(path, latency_us, gears=(1, 2, 4, 8), width=16, seed=0):
    """``relu(x @ W)`` taking ``latency_us`` of device time per execution."""
    rng = np.random.default_rng(seed)
    g = sim.Graph(path.stem)
    x = g.input("x", "float32", (-1, width))
    w = (rng.standard_normal((width, width)) / 4).astype(np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    g.save(str(path), batch_sizes=gears, latency_us=latency_us)
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A 20 ms model, a 2 ms model with gears up to 16, and the 2 / 3 / 1 ms chain with its spec."""
    folder = tmp_path_factory.mktemp("load")
    out = {"slow": model(folder / "slow.om", 20000),
           "batchable": model(folder / "batchable.om", 2000, gears=(1, 2, 4, 8, 16))}
    for i, (name, us) in enumerate((("encoder", 2000), ("mixer", 3000), ("head", 1000))):
        model(folder / f"{name}.om", us, seed=i)
    spec = folder / "chain.yaml"
    spec.write_text("inputs: {x: {dtype: float32, shape: [-1, 16]}}\n"
                    "models:\n"
                    "  - {name: encoder, path: encoder.om, inputs: [x]}\n"
                    "  - {name: mixer, path: mixer.om, inputs: [encoder]}\n"
                    "  - {name: head, path: head.om, inputs: [mixer]}\n"
                    "outputs: {y: head}\n"
                    "compile: {depth: 4}\n")
    out["chain"] = str(spec)
    return out


def bench(*args):
    """Run bench quietly with --json and --export-times; returns (process, figures, request records)."""
    with tempfile.TemporaryDirectory() as tmp:
        out, times = f"{tmp}/b.json", f"{tmp}/t.json"
        proc = ok(run_cli("bench", *map(str, args), "--no-progress", "--profile", "--json", out,
                          "--export-times", times))
        with open(out) as f, open(times) as g:
            return proc, json.load(f), json.load(g)


def best_of_three(args, score, good):
    """bench(*args) up to three times, until ``good(figures)``; the run of the highest ``score``.

    Other processes on a shared machine can only ever slow a run down, so the
    best of a few runs is the fairest estimate of what the engine does.
    """
    runs = []
    for _ in range(3):
        runs.append(bench(*args))
        if good(runs[-1][1]):
            break
    return max(runs, key=lambda run: score(run[1]))


# ---- closed loop ---------------------------------------------------------------------------------


def test_one_caller_waits_only_for_its_own_request(models):
    def within(fig):
        pt = fig["load"]["points"][0]
        return pt["latency_ms"]["p50"] <= 1.10 * pt["device_ms"]["p50"]

    _, fig, records = best_of_three(
        (models["slow"], "--concurrency", "1", "--requests", "20", "--warmup", "2", "--depth", "4"),
        lambda fig: -fig["load"]["points"][0]["latency_ms"]["p50"], within)
    assert fig["load"]["mode"] == "closed" and fig["load"]["concurrency"] == [1]
    [pt] = fig["load"]["points"]
    device = pt["device_ms"]["p50"]                  # H2D + the model + D2H of one execution
    assert 20.0 * 0.99 <= device <= 20.0 * 1.05 + 0.1, device
    lat = pt["latency_ms"]
    # submit to result: its own device time (copies included), not another request's
    assert pt["device_ms"]["min"] <= lat["min"] and device <= lat["p50"] <= 1.10 * device, (lat, device)
    # one caller: requests follow one another, so throughput is one over the mean latency
    assert pt["throughput"]["requests_per_s"] == pytest.approx(1e3 / lat["mean"], rel=0.10)
    # every timed request is one execution of one row; the warm-up is not in the figures
    assert pt["requests"] == 20 and pt["executions"] == 20 and pt["batch_rows"] == {"1": 20}
    assert pt["mean_batch_rows"] == 1.0 and pt["device_ms"]["count"] == 20
    # nothing waits in the admission queue: what is not device time is the engine's own service
    assert pt["queue_ms"] + pt["service_ms"] <= lat["mean"]
    assert pt["service_ms"] >= 20.0 * 0.99
    # the exported times are every timed request, latency = result - submit
    assert sorted(r["request"] for r in records) == list(range(20))
    for r in records:
        assert r["concurrency"] == 1
        assert r["latency_ms"] == pytest.approx(r["done_ms"] - r["submit_ms"])
    assert sorted(r["latency_ms"] for r in records) == sorted(pt["latency_samples_ms"])


def test_four_callers_keep_a_depth_4_chain_as_busy_as_its_slowest_model(models):
    bound = 1e3 / 3.0                                # the 3 ms mixer sets the pace

    def four_callers(fig):
        return fig["load"]["points"][1]["throughput"]["requests_per_s"]

    proc, fig, records = best_of_three(
        (models["chain"], "--concurrency", "1,4", "--requests", "150", "--warmup", "8"),
        four_callers, lambda fig: four_callers(fig) >= 0.9 * bound)
    one, four = fig["load"]["points"]
    assert (one["concurrency"], four["concurrency"]) == (1, 4)
    assert fig["config"]["depth"] == 4
    # one caller: 2 + 3 + 1 ms per request one after the other
    assert one["throughput"]["requests_per_s"] <= 1e3 / 6.0 * 1.02
    assert one["latency_ms"]["p50"] >= 6.0
    # four callers at depth 4: the chain is pipelined up to the mixer's pace.  The simulated device
    # shares the machine's cores, so a busy machine may stretch its 3 ms a little: the pace is the
    # mixer's time per execution as the timing events measured it in this very run.
    assert four["slowest_stage"] == "model mixer"
    pace = four["stage_ms"]["model mixer"]
    assert 3.0 * 0.99 <= pace and four["stage_ms"]["model encoder"] >= 2.0 * 0.99
    achieved = four["throughput"]["requests_per_s"]
    assert 0.9 * 1e3 / pace <= achieved <= 1.02 * bound, (achieved, pace)
    assert four["latency_ms"]["p50"] >= 6.0
    # a caller's wait is the engine's queue and service time of this point's requests (the engine's
    # figures of the one-caller point before are not mixed in)
    assert four["queue_ms"] + four["service_ms"] == pytest.approx(four["latency_ms"]["mean"], rel=0.10)
    assert four["requests"] == one["requests"] == 150
    assert len(records) == 300 and {r["concurrency"] for r in records} == {1, 4}
    # one text row per point, first column the callers
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.split()[:1] in (["1"], ["4"])]
    assert [r[0] for r in rows] == ["1", "4"]
    assert float(rows[1][1]) == pytest.approx(four["throughput"]["requests_per_s"], abs=0.05)


# ---- open loop ------------------------------------------------------------------------------------


def test_an_open_loop_below_capacity_waits_for_the_device_and_one_above_is_not_kept_up(models):
    # depth 4 on one 20 ms model: at most 50 requests/s.  At 8 requests/s it is busy a sixth of
    # the time, so about one Poisson arrival in six finds it busy and waits (the median does not).
    def within(fig):
        pt = fig["load"]["points"][0]
        return pt["latency_ms"]["p50"] <= 1.10 * pt["device_ms"]["p50"] + pt["lag_ms"]["p50"]

    proc, fig, records = best_of_three(
        (models["slow"], "--rate", "8,200", "--requests", "20", "--warmup", "2", "--depth", "4"),
        lambda fig: -fig["load"]["points"][0]["latency_ms"]["p50"], within)
    below, above = fig["load"]["points"]
    assert (below["offered_per_s"], above["offered_per_s"]) == (8.0, 200.0)
    device = below["device_ms"]["p50"]
    lat, lag = below["latency_ms"], below["lag_ms"]
    # from the scheduled arrival: the device time, plus the generator's own lag (reported apart)
    # (a quarter over the device time on a loaded machine; waiting behind one request is 2x)
    assert device <= lat["p50"] <= 1.25 * device + lag["p50"], (lat, device, lag)
    assert below["kept_up"] is True and below["verdict"] == "kept up"
    assert below["achieved_per_s"] >= 0.95 * below["offered_drawn_per_s"]
    # above capacity: answers at the device's pace, arrivals far faster, the backlog grows
    assert above["kept_up"] is False
    assert above["achieved_per_s"] <= 50.0 * 1.05
    assert above["offered_drawn_per_s"] >= 2 * above["achieved_per_s"]
    assert above["backlog_growth_per_s"] > 0.5 * (above["offered_drawn_per_s"] - 50.0)
    assert above["verdict"].startswith(f"NOT KEPT UP: answered {above['achieved_per_s']:.1f} of the "
                                       f"{above['offered_drawn_per_s']:.1f} requests/s that arrived")
    # requests waited for room, and that wait counts: the last arrivals wait for all before them
    assert above["latency_ms"]["max"] >= 0.9 * 20 * 20.0 * (1 - above["achieved_per_s"]
                                                            / above["offered_drawn_per_s"])
    assert "at 200/s offered: NOT KEPT UP" in proc.stdout
    assert "kept up at 8 requests/s offered" in proc.stdout
    # latency runs from the scheduled arrival, which the request is never sent before
    for r in records:
        assert r["submit_ms"] >= r["scheduled_ms"]
        assert r["latency_ms"] == pytest.approx(r["done_ms"] - r["scheduled_ms"])


def test_an_open_loop_far_above_capacity_stops_its_arrivals_once_the_backlog_is_plain(models):
    # depth 1 and a queue of 1 on a 20 ms model: arrivals stop once more than 10 x (1 + 1) wait
    _, fig, records = bench(models["slow"], "--rate", "500", "--requests", "200", "--warmup", "1",
                            "--depth", "1", "--max-queue", "1")
    [pt] = fig["load"]["points"]
    assert pt["stopped_early"] is True and pt["kept_up"] is False
    assert 20 < pt["requests"] < 200 and len(records) == pt["requests"]
    stopped = re.search(r"; arrivals stopped after (\d+) requests, with (\d+) waiting$", pt["verdict"])
    assert stopped and int(stopped[1]) == pt["requests"], pt["verdict"]
    assert 20 < int(stopped[2]) <= pt["requests"]           # past the limit of 20
    # every request sent was answered, one after another at the model's pace
    assert pt["achieved_per_s"] <= 50.0 * 1.05


# ---- the batcher ----------------------------------------------------------------------------------


def test_the_batcher_options_change_the_rows_each_execution_carries(models):
    common = (models["batchable"], "--concurrency", "16", "--requests", "160", "--warmup", "16",
              "--depth", "2")
    _, plain, _ = bench(*common)
    _, merged, _ = bench(*common, "--max-delay-ms", "5")
    _, lower, _ = bench(*common, "--max-delay-ms", "5", "--gear-policy", "lower", "--max-queue", "24")
    [p], [m], [low] = (f["load"]["points"] for f in (plain, merged, lower))
    # without the batcher every request is one execution of its one row
    assert p["batch_rows"] == {"1": 160} and p["mean_batch_rows"] == 1.0
    # with it, 16 callers of one row share executions: every row is run once, in fewer executions
    for pt in (m, low):
        assert sum(int(r) * c for r, c in pt["batch_rows"].items()) == 160
        assert pt["executions"] == sum(pt["batch_rows"].values()) < 160
        assert pt["mean_batch_rows"] == pytest.approx(160 / pt["executions"])
        assert pt["mean_batch_rows"] >= 4.0
    # the lower policy runs only whole gears
    assert set(map(int, low["batch_rows"])) <= {1, 2, 4, 8, 16}
    cfg = lower["config"]
    assert (cfg["max_delay_ms"], cfg["gear_policy"], cfg["max_queue"]) == (5.0, "lower", 24)
    assert (plain["config"]["max_delay_ms"], plain["config"]["gear_policy"]) == (0.0, "upper")
    # a 2 ms execution of many rows instead of one per row
    assert m["throughput"]["requests_per_s"] >= 2 * p["throughput"]["requests_per_s"]


def test_the_spec_compile_section_sets_the_batcher(models, tmp_path):
    spec = tmp_path / "batched.yaml"
    spec.write_text(f"inputs: {{x: {{dtype: float32, shape: [-1, 16]}}}}\n"
                    f"models: [{{name: m, path: {models['batchable']}, inputs: [x]}}]\n"
                    "outputs: {y: m}\n"
                    "compile: {depth: 2, max_delay_ms: 5, gear_policy: lower}\n")
    _, fig, _ = bench(spec, "--concurrency", "8", "--requests", "64", "--warmup", "8")
    [pt] = fig["load"]["points"]
    assert (fig["config"]["max_delay_ms"], fig["config"]["gear_policy"]) == (5.0, "lower")
    assert pt["mean_batch_rows"] > 1.0 and set(map(int, pt["batch_rows"])) <= {1, 2, 4, 8, 16}
    # --max-delay-ms 0 on the command line turns the spec's batcher off
    _, fig, _ = bench(spec, "--concurrency", "8", "--requests", "32", "--warmup", "8", "--max-delay-ms", "0")
    assert fig["load"]["points"][0]["batch_rows"] == {"1": 32}


def test_split_requests_count_every_piece_and_every_row(models):
    # 20 rows with gears up to 16: every request runs as 16 + 4 rows
    _, fig, _ = bench(models["batchable"], "--concurrency", "2", "--batch", "20", "--requests", "10",
                      "--warmup", "2", "--depth", "4")
    [pt] = fig["load"]["points"]
    assert pt["batch_rows"] == {"16": 10, "4": 10}
    assert pt["executions"] == 20 and pt["rows"] == 200
    assert pt["throughput"]["rows_per_s"] == pytest.approx(20 * pt["throughput"]["requests_per_s"])
    assert pt["device_ms"]["count"] == 20


def test_a_duration_sends_for_that_long_and_times_what_it_sent(models):
    _, fig, records = bench(models["batchable"], "--concurrency", "2", "--duration", "0.3", "--warmup", "2")
    [pt] = fig["load"]["points"]
    assert fig["config"]["duration"] == 0.3 and fig["config"]["requests"] is None
    # two callers of a 2 ms model for 0.3 s: requests were sent until the time was up, then answered
    assert pt["requests"] == len(records) == len(pt["latency_samples_ms"]) > 10
    assert max(r["submit_ms"] for r in records) <= 300.0
    assert pt["batch_rows"] == {"1": pt["requests"]}


# ---- failures and usage ---------------------------------------------------------------------------


def test_a_device_failure_under_load_fails_the_command_with_its_error(models):
    proc = run_cli("bench", models["batchable"], "--concurrency", "4", "--requests", "40", "--warmup", "0",
                   "--no-progress", env={"ASCEND_SIM_FAULTS": "task:execute@6=507011"})
    assert proc.returncode == 1
    line = error_line(proc)
    assert "507011" in line and "aclmdlExecuteAsync" in line, line


@pytest.mark.parametrize("mode", [("--concurrency", "8"), ("--rate", "1000")])
def test_ctrl_c_stops_a_load_sweep_and_says_so(models, mode):
    code = ("import signal, sys, runpy; signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"sys.argv = ['ascend-engine', 'bench', {models['slow']!r}, *{mode!r}, '--duration', '60', "
            "'--warmup', '0']; runpy.run_module('ascend_engine', run_name='__main__')")
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", PYTHONPATH=ROOT)
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr.readline().startswith("progress: ")   # the timed requests are running
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)                    # a guard against a hang, not a figure
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert err.rstrip().endswith("ascend-engine: interrupted"), err


@pytest.mark.parametrize("args, message", [
    (("--concurrency", "1,x"), "argument --concurrency: expected a positive integer, got 'x' in '1,x'"),
    (("--concurrency", "4,0"), "argument --concurrency: expected a positive integer, got '0' in '4,0'"),
    (("--concurrency", "1,,4"), "argument --concurrency: expected numbers of callers separated by commas "
                                "(such as 1,4,16), got '1,,4'"),
    (("--rate", "100,-5"), "argument --rate: expected a positive number, got '-5' in '100,-5'"),
    (("--concurrency", "2", "--rate", "5"), "argument --rate: not allowed with argument --concurrency"),
    (("--max-delay-ms", "-1", "--concurrency", "2"),
     "argument --max-delay-ms: expected a number >= 0, got '-1'"),
    (("--gear-policy", "up", "--concurrency", "2"), "argument --gear-policy: invalid choice: 'up'"),
])
def test_bad_load_options_are_usage_errors(models, args, message):
    proc = run_cli("bench", models["slow"], *args)
    assert proc.returncode == 2
    assert message in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, message", [
    (("--max-delay-ms", "2"), "--max-delay-ms needs --concurrency or --rate: without them bench runs its "
                              "requests through Engine.run_many, which neither queues nor batches"),
    (("--max-queue", "8"), "--max-queue needs --concurrency or --rate"),
    (("--rate", "10", "--repeat", "2"),
     "--repeat does not go with --rate: it compares or repeats the default measurement (requests through "
     "Engine.run_many), not a load sweep"),
    (("--concurrency", "2", "--compare", "{base}"), "--compare does not go with --concurrency"),
])
def test_options_that_do_not_go_with_a_load_sweep_are_refused(models, tmp_path, args, message):
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"throughput": {}}))
    proc = run_cli("bench", models["slow"], *(a.format(base=base) for a in args))
    assert proc.returncode == 2
    assert error_line(proc).startswith(f"ascend-engine: error: {message}"), proc.stderr
