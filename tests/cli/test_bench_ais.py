"""``ascend-engine bench --model``: ais_bench's options, its summary and its output files.

The summary is read with a parser written from ais_bench's documented output
(its "Performance Summary" block: ``NAME (ms): min = …, max = …, mean = …,
median = …, percentile(99%) = …`` for H2D_latency, NPU_compute_time and
D2H_latency, then ``throughput 1000*batchsize.mean(B)/NPU_compute_time.mean(M): T``),
and its field names are compared with ais_bench's.  The simulator models
declare their device time, so the figures are checked against it.
"""

import json
import re

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli

from ascend_engine import sim

# ais_bench's summary, as its documentation shows it
AIS_FIGURES = ["H2D_latency", "NPU_compute_time", "D2H_latency"]
AIS_KEYS = ["min", "max", "mean", "median", "percentile(99%)"]
NUMBER = r"([0-9.e+-]+)"
FIGURE_LINE = re.compile(r"^\[INFO\] (\w+) \(ms\): " + ", ".join(
    re.escape(k) + " = " + NUMBER for k in AIS_KEYS) + "$")
THROUGHPUT_LINE = re.compile(r"^\[INFO\] throughput 1000\*batchsize\.mean\(" + NUMBER +
                             r"\)/NPU_compute_time\.mean\(" + NUMBER + r"\): " + NUMBER + "$")
HEAD = "[INFO] -----------------Performance Summary------------------"


def parse_summaries(stdout):
    """Every summary block: {"figures": {name: {key: value}}, "batchsize", "mean", "throughput"}."""
    blocks, current = [], None
    for line in stdout.splitlines():
        if line == HEAD:
            current = {"figures": {}}
            blocks.append(current)
        elif current is not None and (m := FIGURE_LINE.match(line)):
            current["figures"][m.group(1)] = dict(zip(AIS_KEYS, map(float, m.groups()[1:]), strict=True))
        elif current is not None and (m := THROUGHPUT_LINE.match(line)):
            current.update(batchsize=float(m.group(1)), mean=float(m.group(2)), throughput=float(m.group(3)))
            current = None
    return blocks


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("ais")
    rng = np.random.default_rng(3)
    g = sim.Graph("dense")
    w = rng.standard_normal((8, 4)).astype(np.float32)
    g.output("y", g.relu(g.matmul(g.input("x", "float32", (-1, 8)), g.const(w))))
    g.save(str(d / "dense.om"), batch_sizes=(1, 2, 4), latency_us=1000, latency_per_item_us=500)
    g = sim.Graph("hw")
    x = g.input("image", "float32", (1, 3, "h", "w"), format="NCHW")
    g.output("energy", g.sum(g.relu(x), axes=1))
    g.save(str(d / "hw.om"), hw_sizes=[(8, 8), (16, 24)], latency_us=2000)
    g = sim.Graph("rows")
    g.output("y", g.relu(g.matmul(g.input("x", "float32", ("n", 8)), g.const(w))))
    g.save(str(d / "rows.om"), shape_ranges={"n": (1, 16)}, latency_us=500, latency_per_item_us=100)
    return {"dir": d, "dense": d / "dense.om", "hw": d / "hw.om", "rows": d / "rows.om", "w": w}


def ais(*args):
    return ok(run_cli("bench", *map(str, args)))


def test_the_summary_has_ais_bench_fields_and_its_throughput(models):
    proc = ais("--model", models["dense"], "--loop", 20)
    [block] = parse_summaries(proc.stdout)
    assert list(block["figures"]) == AIS_FIGURES
    npu = block["figures"]["NPU_compute_time"]
    # 1 ms + 0.5 ms x 1 row; above it only what a loaded machine adds (never below)
    assert 1.5 * 0.99 <= npu["min"] <= npu["median"] <= 1.5 * 2 + 0.5, npu
    assert npu["min"] <= npu["mean"] <= npu["max"] and npu["median"] <= npu["percentile(99%)"] <= npu["max"]
    assert block["batchsize"] == 1 and block["mean"] == npu["mean"]
    assert block["throughput"] == pytest.approx(1000 * 1 / npu["mean"])
    assert re.search(r"^\[INFO\] ascend-engine wall clock on device 0: [\d.]+ requests/s, [\d.]+ rows/s "
                     r"\(20 requests, depth 4, latency p50 [\d.]+ ms\)$", proc.stdout, re.M)


def test_dym_batch_and_batchsize_set_the_gear_and_the_throughput(models):
    [block] = parse_summaries(ais("--model", models["dense"], "--loop", 12, "--dymBatch", 4).stdout)
    npu = block["figures"]["NPU_compute_time"]
    assert 3.0 * 0.99 <= npu["min"] and npu["median"] <= 3.0 * 2 + 0.5, npu  # 1 ms + 0.5 ms x 4 rows
    assert block["batchsize"] == 4 and block["throughput"] == pytest.approx(4000 / npu["mean"])
    [block] = parse_summaries(ais("--model", models["dense"], "--loop", 6, "--batchsize", 8).stdout)
    assert block["batchsize"] == 8 and block["throughput"] == pytest.approx(8000 / block["mean"])


def test_dym_hw_runs_the_image_size(models):
    [block] = parse_summaries(ais("--model", models["hw"], "--loop", 6, "--dymHW", "16,24").stdout)
    assert 2.0 * 0.99 <= block["figures"]["NPU_compute_time"]["median"] <= 2.0 * 2 + 0.5


def test_dym_shape_range_runs_every_shape_in_turn(models):
    proc = ais("--model", models["rows"], "--loop", 5, "--dymShape_range", "x:2~4,8")
    blocks = parse_summaries(proc.stdout)
    assert [ln for ln in proc.stdout.splitlines() if ln.startswith("[INFO] shapes ")] == [
        "[INFO] shapes x:2,8", "[INFO] shapes x:3,8", "[INFO] shapes x:4,8"]
    for rows, block in zip((2, 3, 4), blocks, strict=True):
        declared = 0.5 + 0.1 * rows
        assert declared * 0.99 <= block["figures"]["NPU_compute_time"]["min"], (rows, block)
        assert block["figures"]["NPU_compute_time"]["median"] <= declared * 2 + 0.5, (rows, block)
        assert block["batchsize"] == rows


def test_several_devices_run_one_engine_each_and_add_up(models):
    proc = ais("--model", models["dense"], "--loop", 10, "--device", "0,1")
    blocks = parse_summaries(proc.stdout)
    assert len(blocks) == 2
    assert "ascend-engine wall clock on device 0:" in proc.stdout
    assert "ascend-engine wall clock on device 1:" in proc.stdout
    per_device = [float(v) for v in re.findall(r"^i:\d device_\d throughput:([\d.e+-]+) ", proc.stdout, re.M)]
    assert per_device == [b["throughput"] for b in blocks]
    total = float(re.search(r"^\[INFO\] summary throughput:([\d.e+-]+)$", proc.stdout, re.M).group(1))
    assert total == pytest.approx(sum(per_device))


def test_output_files_are_named_as_ais_bench_names_them(models, tmp_path):
    out = tmp_path / "out"
    proc = ais("--model", models["dense"], "--loop", 3, "--output", out, "--outfmt", "NPY")
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    assert re.fullmatch(r"\d{4}_\d\d_\d\d-\d\d_\d\d_\d\d", folder.name)
    assert sorted(p.name for p in folder.iterdir()) == ["pure_infer_data_0.npy"]
    # zeros in (ais_bench's default data): relu(0 @ W) is zeros
    np.testing.assert_array_equal(np.load(folder / "pure_infer_data_0.npy"), np.zeros((1, 4), np.float32))
    summary = json.loads((out / f"{folder.name}_summary.json").read_text())
    for name in AIS_FIGURES:
        assert list(summary[name]) == [*AIS_KEYS, "count"] and summary[name]["count"] == 3
    assert summary["throughput"] == pytest.approx(1000 / summary["NPU_compute_time"]["mean"])
    assert len(summary["npu_compute_time_list"]) == 3
    assert f"output file(s) in {folder}" in proc.stdout


def test_input_files_name_the_outputs_and_output_dirname_names_the_folder(models, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    rng = np.random.default_rng(0)
    arrays = {stem: rng.standard_normal((1, 8)).astype(np.float32) for stem in ("cat", "dog")}
    for stem, a in arrays.items():
        np.save(inputs / f"{stem}.npy", a)
    out = tmp_path / "out"
    ais("--model", models["dense"], "--loop", 2, "--input", inputs, "--output", out,
        "--output_dirname", "run1", "--outfmt", "BIN")
    assert sorted(p.name for p in (out / "run1").iterdir()) == ["cat_0.bin", "dog_0.bin"]
    assert (out / "run1_summary.json").is_file()
    for stem, a in arrays.items():
        got = np.fromfile(out / "run1" / f"{stem}_0.bin", dtype=np.float32)
        np.testing.assert_allclose(got, np.maximum(a @ models["w"], 0).reshape(-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args, message", [
    (["--loop", "5"], "--loop is one of ais_bench's options: it goes with --model"),
    (["--model", "M", "--requests", "5"], "--requests does not go with --model (ais_bench's options)"),
    (["--model", "M", "--dymBatch", "2", "--dymShape", "x:2,8"],
     "--dymBatch and --dymShape: give one of them"),
    (["--model", "M", "--output_dirname", "x"], "--output_dirname needs --output"),
    (["--device", "0,1"], "--device 0,1: several devices go with --model"),
])
def test_options_that_do_not_go_together_are_refused(models, args, message):
    args = [str(models["dense"]) if a == "M" else a for a in args]
    if "--model" not in args:
        args = [str(models["dense"]), *args]
    proc = run_cli("bench", *args)
    assert proc.returncode == 2
    assert message in error_line(proc)


def test_an_ais_bench_output_folder_is_a_check_reference(models, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for k in range(3):
        np.save(inputs / f"img{k}.npy", np.full((1, 8), k - 1.0, np.float32))
    out = tmp_path / "out"
    ais("--model", models["dense"], "--loop", 2, "--input", inputs, "--output", out,
        "--output_dirname", "ref", "--outfmt", "NPY")
    proc = ais(models["dense"], "--input", inputs, "--check", out / "ref", "--requests", 3, "--warmup", 0,
               "--no-progress")
    assert f"12 values of 3 request(s) match {out / 'ref'}" in proc.stdout
    np.save(out / "ref" / "img1_0.npy", np.ones((1, 4), np.float32))        # a wrong reference
    proc = run_cli("bench", str(models["dense"]), "--input", str(inputs), "--check", str(out / "ref"),
                   "--requests", "3", "--no-progress")
    assert proc.returncode == 1 and f"differs from {out / 'ref' / 'img1_0.npy'}" in error_line(proc)


def test_model_with_a_concurrency_range_runs_the_sweep_many_requests_a_point(models, tmp_path):
    """--model X.om --concurrency-range 1:8:2 -f perf.csv ran one request per point, wrote the CSV, then
    died with an IndexError (exit 1): the sweep is the bench's own, --loop requests at each point."""
    csv_path, js = tmp_path / "perf.csv", tmp_path / "b.json"
    proc = ais("--model", models["dense"], "--concurrency-range", "1:8:2", "-f", csv_path, "--loop", 12,
               "--warmup_count", 0, "--json", js, "--no-progress")
    assert "Traceback" not in proc.stderr
    points = json.loads(js.read_text())["load"]["points"]
    assert [p["concurrency"] for p in points] == [1, 3, 5, 7]
    assert [p["requests"] for p in points] == [12, 12, 12, 12]
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith("Concurrency,Inferences/Second,")
    assert sorted(int(r.split(",")[0]) for r in rows[1:]) == [1, 3, 5, 7]
    proc = ais("--model", models["dense"], "--concurrency-range", "2", "--json", js, "--no-progress")
    [point] = json.loads(js.read_text())["load"]["points"]
    assert point["requests"] == 200         # the bench's default, not ais_bench's single loop


@pytest.mark.parametrize("args, message", [
    (["--dymBatch", "2"], "--dymBatch does not go with --concurrency-range: a load sweep is the bench's own"),
    (["--device", "0,1"], "--device 0,1 does not go with --concurrency-range: a load sweep runs one engine"),
    (["--loop", "3", "--requests", "4"], "--loop 3 and --requests 4: give one (requests per point)"),
])
def test_model_with_a_sweep_refuses_what_only_ais_bench_runs(models, args, message):
    proc = run_cli("bench", "--model", str(models["dense"]), "--concurrency-range", "1:2", *args)
    assert proc.returncode == 2
    assert message in error_line(proc)


@pytest.mark.parametrize("switch, traceback", [("1", True), ("true", True), ("0", False), ("False", False)])
def test_ais_bench_debug_switch_is_taken_as_ours(models, switch, traceback):
    """ais_bench's --debug 1 once became the SPEC_OR_MODEL: a traceback, then "give the model or spec
    once"."""
    proc = run_cli("bench", "--model", str(models["dense"]), "--debug", switch, "--dymHW", "8,8")
    assert proc.returncode == 2
    assert ("Traceback" in proc.stderr) is traceback
    assert proc.stderr.rstrip("\n").splitlines()[-1] == (
        f"ascend-engine: error: --dymHW: {models['dense']} has no input with a dynamic height and width")
    ok(run_cli("bench", "--model", str(models["dense"]), "--loop", "2", f"--debug={switch}"))


def test_a_debug_value_that_is_no_switch_is_a_usage_error():
    proc = run_cli("--debug=2", "info")
    assert proc.returncode == 2
    assert error_line(proc) == ("ascend-engine: error: --debug=2: expected --debug alone, or ais_bench's "
                                "--debug 1|0|true|false")
