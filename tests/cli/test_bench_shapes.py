"""``bench --shapes`` and ``trace --shapes``: dynamic image size, dims gears and shape ranges.

The simulator models declare their device time (``latency_us`` plus
``latency_per_item_us`` x dimension 0 of the first input when that dimension
is dynamic), so the device time bench reports at each gear is checked
against that formula: never below it (the simulator holds the stream at
least that long), and within a loose bound above it.  Output shapes follow
the gear; malformed values and shapes outside the gears or ranges are usage
errors (status 2) naming what is allowed.
"""

import json

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli

from ascend_engine import sim

HW_GEARS = [(16, 24), (32, 32), (24, 16)]
HW_US = 3000                                  # every image size: 3 ms (dimension 0 of the image is fixed)
DIMS_GEARS = [[1, 4], [2, 8], [4, 16]]        # (rows, sequence length) of tokens
DIMS_US, DIMS_ITEM_US = 1000, 1000            # 1 ms + 1 ms per row
RANGE_US, RANGE_ITEM_US = 500, 100            # 0.5 ms + 0.1 ms per row
LOOSE_MS = 25.0                               # above the formula: scheduling on a busy machine, never less


def hw_graph(rng):
    g = sim.Graph("hw")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    y = g.relu(g.mul(x, rng.standard_normal((1, 3, 1, 1)).astype(np.float32)))
    g.output("feat", y, format="NCHW")
    g.output("energy", g.sum(y, axes=1))
    return g


def dims_graph(rng):
    g = sim.Graph("seq")
    x = g.input("tokens", "float32", (-1, "seq", 8))
    g.output("probs", g.softmax(g.matmul(x, g.const(rng.standard_normal((8, 5)).astype(np.float32)))))
    return g


def range_graph(rng):
    g = sim.Graph("rows")
    x = g.input("x", "float32", ("n", 16))
    g.output("y", g.relu(g.matmul(x, g.const(rng.standard_normal((16, 8)).astype(np.float32)))))
    return g


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("shapes")
    rng = np.random.default_rng(5)
    graphs = {"hw": hw_graph(rng), "dims": dims_graph(rng), "range": range_graph(rng)}
    graphs["hw"].save(str(d / "hw.om"), hw_sizes=HW_GEARS, latency_us=HW_US)
    graphs["dims"].save(str(d / "seq.om"), dims=DIMS_GEARS, latency_us=DIMS_US,
                        latency_per_item_us=DIMS_ITEM_US)
    graphs["range"].save(str(d / "rows.om"), shape_ranges={"n": (1, 64)}, latency_us=RANGE_US,
                         latency_per_item_us=RANGE_ITEM_US)
    return {"dir": d, "graphs": graphs, "hw": str(d / "hw.om"), "dims": str(d / "seq.om"),
            "range": str(d / "rows.om")}


def bench(*args, requests=12):
    """Run bench quietly with --json; returns (process, figures)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/b.json"
        proc = ok(run_cli("bench", *map(str, args), "--requests", str(requests), "--warmup", "1",
                          "--depth", "2", "--no-progress", "--json", out))
        with open(out) as f:
            return proc, json.load(f)


def usage_error(*args):
    """Run a command expected to fail with a usage error; returns its error line."""
    proc = run_cli(*map(str, args), "--no-progress") if args[0] == "bench" else run_cli(*map(str, args))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stderr.strip().splitlines()[-1]


def device_ms(fig, node):
    return fig["breakdown"]["per_execution"]["compute"][node]


def check_device_time(fig, node, declared_ms):
    d = device_ms(fig, node)
    assert d["min"] >= declared_ms * 0.999, (d, declared_ms)
    assert d["p50"] <= declared_ms + LOOSE_MS, (d, declared_ms)


# ---- each gear, each shape ---------------------------------------------------------------------


@pytest.mark.parametrize("h,w", HW_GEARS)
def test_hw_model_runs_at_the_chosen_image_size(models, h, w):
    proc, fig = bench(models["hw"], "--shapes", f"image:1,3,{h},{w}")
    assert fig["config"]["shapes"] == {"image": [1, 3, h, w]} and fig["config"]["gear"] == [h, w]
    assert fig["config"]["shapes_chosen"] == "given"
    assert fig["outputs"]["shapes"] == {"feat": [1, 3, h, w], "energy": [1, h, w]}
    assert fig["requests"] == 12 and fig["pipeline"]["shapes"] == {"image": [1, 3, h, w]}
    check_device_time(fig, "hw", HW_US / 1e3)
    assert (f"shapes    : image:1,3,{h},{w} (chosen with --shapes); "
            f"outputs feat:1,3,{h},{w};energy:1,{h},{w}") in proc.stdout
    assert "run       : the model alone, outside a pipeline" in proc.stdout


@pytest.mark.parametrize("rows,seq", [tuple(g) for g in DIMS_GEARS])
def test_dims_model_device_time_follows_the_rows_of_each_gear(models, rows, seq):
    _, fig = bench(models["dims"], "--shapes", f"tokens:{rows},{seq},8")
    assert fig["config"]["gear"] == DIMS_GEARS.index([rows, seq])
    assert fig["outputs"]["shapes"] == {"probs": [rows, seq, 5]}
    assert fig["config"]["batch"] == rows and fig["rows"] == 12 * rows
    check_device_time(fig, "seq", (DIMS_US + DIMS_ITEM_US * rows) / 1e3)


def test_dims_device_time_grows_with_the_gear(models):
    _, small = bench(models["dims"], "--shapes", "tokens:1,4,8")
    _, large = bench(models["dims"], "--shapes", "tokens:4,16,8")
    # 2 ms against 5 ms of declared device time: the medians are 3 ms apart, give or take scheduling
    assert device_ms(large, "seq")["p50"] - device_ms(small, "seq")["p50"] >= 3.0 * 0.9


@pytest.mark.parametrize("n", [1, 9, 64])
def test_range_model_runs_inside_its_range(models, n):
    _, fig = bench(models["range"], "--shapes", f"x:{n},16")
    assert fig["config"]["shapes"] == {"x": [n, 16]} and fig["config"]["gear"] is None
    assert fig["outputs"]["shapes"] == {"y": [n, 8]}
    check_device_time(fig, "rows", (RANGE_US + RANGE_ITEM_US * n) / 1e3)


def test_default_is_the_largest_gear(models):
    proc, fig = bench(models["hw"])
    assert fig["config"]["shapes"] == {"image": [1, 3, 32, 32]}
    assert fig["config"]["shapes_chosen"] == "default"
    assert "shapes    : image:1,3,32,32 (the largest gear; choose one with --shapes)" in proc.stdout


def test_throughput_is_bounded_by_the_device_time(models):
    # one model executes one request at a time: requests/s cannot beat 1 / device time
    _, fig = bench(models["dims"], "--shapes", "tokens:4,16,8", requests=20)
    assert fig["throughput"]["requests_per_s"] <= 1e3 / ((DIMS_US + 4 * DIMS_ITEM_US) / 1e3) * 1.001


@pytest.mark.parametrize("kind,gear,shapes", [
    ("dims", 1, {"tokens": (2, 8, 8)}),
    ("hw", (16, 24), {"image": (1, 3, 16, 24)}),   # not the largest gear: its channel planes are smaller
    ("range", None, {"x": (7, 16)}),
])
def test_the_stream_loop_computes_what_the_reference_does(models, kind, gear, shapes):
    from ascend_engine.bench import direct

    resolved = {"gear": gear, "shapes": shapes, "chosen": "given"}
    with direct.ShapedRun(models[kind], 0, resolved, kind, depth=2, pool=3, seed=4) as run:
        run._pass(requests=5)   # requests 3 and 4 are the last on slots 1 and 0: feeds 0 and 1
        for slot, feed in ((run._slots[1], 0), (run._slots[0], 1)):
            ref = sim.reference(models["graphs"][kind], run.pool[feed])
            got = run.outputs(slot)
            assert sorted(got) == sorted(ref)
            for name in ref:
                np.testing.assert_allclose(got[name], ref[name], rtol=1e-5, atol=1e-5, err_msg=name)


# ---- gears in the header and the JSON ------------------------------------------------------------


def test_header_and_json_list_every_kind_of_gear(models, tmp_path):
    proc, fig = bench(models["dims"], "--shapes", "tokens:2,8,8")
    assert "gears     : dynamic dims tokens:1,4,8 | tokens:2,8,8 | tokens:4,16,8" in proc.stdout
    assert fig["gears"] == {"kind": "dims", "batch_sizes": [], "hw_sizes": [],
                            "dims_gears": [{"tokens": [1, 4, 8]}, {"tokens": [2, 8, 8]},
                                           {"tokens": [4, 16, 8]}],
                            "shape_ranges": {}}
    proc, fig = bench(models["hw"], "--shapes", "image:1,3,16,24")
    assert "gears     : dynamic image size (height x width) 16x24, 32x32, 24x16" in proc.stdout
    assert fig["gears"]["hw_sizes"] == [[16, 24], [32, 32], [24, 16]]
    proc, fig = bench(models["range"], "--shapes", "x:3,16")
    assert "gears     : shape ranges x: [1..64, 16]" in proc.stdout
    assert fig["gears"]["shape_ranges"] == {"x": [[1, 64], [16, 16]]}
    g = sim.Graph("b")
    g.output("y", g.relu(g.input("x", "float32", (-1, 4))))
    g.save(str(tmp_path / "b.om"), batch_sizes=(1, 2, 8))
    proc, fig = bench(tmp_path / "b.om", "--shapes", "x:2,4")
    assert "gears     : dynamic batch 1, 2, 8" in proc.stdout and fig["gears"]["batch_sizes"] == [1, 2, 8]
    assert fig["config"]["batch"] == 2 and fig["config"]["shapes"] == {"x": [2, 4]}   # through the pipeline


# ---- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value,message", [
    ("x", "'x': 'x' is not NAME:D,D,...; expected NAME:D,D,...[;NAME:D,...] (such as x:1,3,640,480)"),
    ("x:1,,16", "'x:1,,16': input 'x': dimension '' is not a positive integer"),
    ("x:1,0", "'x:1,0': input 'x': dimension '0' is not a positive integer"),
    ("x:1x16", "'x:1x16': input 'x': dimension '1x16' is not a positive integer"),
    ("x:1,16;", "'x:1,16;': an empty entry between semicolons"),
    ("x:1;x:2", "'x:1;x:2': input 'x' is given twice"),
    (":1,2", "':1,2': ':1,2' is not NAME:D,D,..."),
])
def test_malformed_shapes_are_usage_errors(models, value, message):
    line = usage_error("bench", models["range"], "--shapes", value)
    assert line.startswith(f"ascend-engine bench: error: argument --shapes: {message}"), line


def test_a_shape_that_is_not_a_gear_lists_the_gears(models):
    assert usage_error("bench", models["hw"], "--shapes", "image:1,3,20,20") == (
        "ascend-engine: error: --shapes image:1,3,20,20: not one of the model's image sizes; an image-size "
        "model runs only at its gears: image:1,3,16,24 | image:1,3,32,32 | image:1,3,24,16")
    assert usage_error("bench", models["dims"], "--shapes", "tokens:2,4,8") == (
        "ascend-engine: error: --shapes tokens:2,4,8: not one of the model's dims gears; a dims-gear model "
        "runs only at its gears: tokens:1,4,8 | tokens:2,8,8 | tokens:4,16,8")


def test_shapes_outside_the_range_name_the_range(models):
    assert usage_error("bench", models["range"], "--shapes", "x:65,16") == (
        "ascend-engine: error: --shapes x:65,16: input 'x' dimension 0 is 65, outside the model's range "
        "1..64 (x: [1..64, 16])")
    assert usage_error("bench", models["range"]) == (
        f"ascend-engine: error: model {models['range']!r} has shape ranges (x: [1..64, 16]): choose the "
        "shapes to run with --shapes NAME:D,D,...[;NAME:D,...] (such as x:1,3,640,480)")


def test_wrong_names_ranks_and_fixed_dimensions(models):
    assert usage_error("bench", models["range"], "--shapes", "y:3,16") == (
        "ascend-engine: error: --shapes: the model has no input 'y'; its inputs: x")
    assert usage_error("bench", models["range"], "--shapes", "x:3,15") == (
        "ascend-engine: error: --shapes: input 'x' takes shape (-1, 16) (-1: dynamic), got (3, 15)")
    assert usage_error("bench", models["hw"], "--shapes", "image:3,32,32") == (
        "ascend-engine: error: --shapes: input 'image' takes shape (1, 3, -1, -1) (-1: dynamic), "
        "got (3, 32, 32)")


def test_options_that_need_a_pipeline_are_refused(models):
    assert usage_error("bench", models["hw"], "--batch", "2") == (
        f"ascend-engine: error: --batch does not go with {models['hw']}: a model with dynamic image size is "
        "benchmarked alone, outside a pipeline, at the shapes --shapes chooses; choose the shapes with "
        "--shapes")
    assert usage_error("bench", models["dims"], "--shapes", "tokens:1,4,8", "--concurrency", "2").startswith(
        f"ascend-engine: error: --concurrency does not go with {models['dims']}: a model with dynamic dims")


def test_compare_refuses_other_shapes_before_running(models, tmp_path):
    base = tmp_path / "base.json"
    ok(run_cli("bench", models["hw"], "--shapes", "image:1,3,16,24", "--requests", "8", "--warmup", "1",
               "--no-progress", "--json", str(base)))
    proc = run_cli("bench", models["hw"], "--shapes", "image:1,3,24,16", "--requests", "8", "--no-progress",
                   "--compare", str(base))
    assert proc.returncode == 2 and proc.stdout == ""          # refused before the run, nothing printed
    assert error_line(proc) == (
        f"ascend-engine: error: cannot compare with {base}: it ran at the input shapes image:1,3,16,24, this "
        "run at image:1,3,24,16; runs at different shapes (gears) are different configurations: compare runs "
        "at the same --shapes")
    proc = ok(run_cli("bench", models["hw"], "--shapes", "image:1,3,16,24", "--requests", "8",
                      "--warmup", "1", "--no-progress", "--compare", str(base)))
    assert "verdict   : " in proc.stdout and "device hw" in proc.stdout


# ---- specs and pipelines: the batch -------------------------------------------------------------------


def test_spec_shapes_and_bench_shape_set_the_batch(demo, tmp_path):
    _, fig = bench(demo["spec"], "--shapes", "x:3,64")
    assert fig["config"]["batch"] == 3 and fig["config"]["shapes"] == {"x": [3, 64]}
    spec = tmp_path / "p.yaml"
    with_shape = "{dtype: float32, shape: [-1, 64], bench_shape: [5, 64]}"
    spec.write_text(demo["spec"].read_text().replace("{dtype: float32, shape: [-1, 64]}", with_shape)
                    .replace("encoder.om", str(demo["dir"] / "encoder.om"))
                    .replace("mixer.om", str(demo["dir"] / "mixer.om"))
                    .replace("head.om", str(demo["dir"] / "head.om")))
    _, fig = bench(spec)
    assert fig["config"]["batch"] == 5 and fig["config"]["shapes"] == {"x": [5, 64]}
    assert usage_error("bench", demo["spec"], "--shapes", "x:3,32") == (
        "ascend-engine: error: --shapes: input 'x' takes shape (-1, 64) (-1: dynamic), got (3, 32)")
    assert usage_error("bench", demo["spec"], "--shapes", "x:3,64", "--batch", "2") == (
        "ascend-engine: error: --batch 2: --shapes x:3,64 gives a batch of 3")


def test_spec_bench_shape_is_checked(demo, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("inputs: {x: {dtype: float32, shape: [-1, 64], bench_shape: [2, 63]}}\n"
                    f"models: [{{name: enc, path: {demo['dir'] / 'encoder.om'}, inputs: [x]}}]\n"
                    "outputs: {y: enc}\n")
    proc = run_cli("bench", str(spec), "--no-progress")
    assert proc.returncode == 1
    assert error_line(proc).endswith("inputs.x.bench_shape: expected the input's shape [-1, 64] with a size "
                                     "in place of each -1, got [2, 63]")


# ---- trace --------------------------------------------------------------------------------------------


def test_trace_records_the_chosen_gear(models, tmp_path):
    out = tmp_path / "t.json"
    proc = ok(run_cli("trace", models["dims"], "--out", str(out), "--shapes", "tokens:4,16,8",
                      "--requests", "6", "--depth", "2"))
    with open(out) as f:
        data = json.load(f)
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    execs = [e for e in spans if e["cat"] == "execute"]
    assert len(execs) == 6 and {e["name"] for e in execs} == {"seq"}
    assert [e["name"] for e in spans].count("H2D") == 6 and [e["name"] for e in spans].count("D2H") == 6
    declared_us = (DIMS_US + 4 * DIMS_ITEM_US)
    assert min(e["dur"] for e in execs) >= declared_us * 0.999
    # one model executes one request at a time: its spans never overlap
    execs.sort(key=lambda e: e["ts"])
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(execs, execs[1:], strict=False))
    assert data["otherData"]["shapes"] == {"tokens": [4, 16, 8]}
    assert "(6 requests at tokens:4,16,8; the model alone on 2 stream(s))" in proc.stdout
    assert usage_error("trace", models["dims"], "--out", str(out), "--shapes", "tokens:3,16,8").startswith(
        "ascend-engine: error: --shapes tokens:3,16,8: not one of the model's dims gears")


def test_trace_of_a_spec_takes_the_batch_from_shapes(demo, tmp_path):
    out = tmp_path / "t.json"
    proc = ok(run_cli("trace", str(demo["spec"]), "--out", str(out), "--shapes", "x:2,64", "--requests", "4"))
    with open(out) as f:
        assert json.load(f)["otherData"]["batch"] == 2
    assert "(4 requests at x:2,64)" in proc.stdout
