"""``bench`` and ``trace`` of a spec with dynamic shapes: an image-size detector feeding a dims-gear
recognizer.

The request shape comes from ``--shapes`` or the spec's ``bench_shape``; the
gear each model node ran is what the run reports, and it is checked here
against the simulator's call log (``ASCEND_SIM_LOG``): the image size the
detector was set to before each execution, and the bytes copied in and out
(the image padded to the detector's gear, the outputs at the recognizer's
gear).  Shapes that cannot run, and options that do not apply, are usage
errors (status 2) naming what is wrong.
"""

import json
import re

import numpy as np
import pytest
from cli_run import error_line, ok, run_cli
from helpers import shaped
from helpers.numerics import assert_matches_reference

BENCH_SHAPE = (1, 3, 10, 12)
OTHER_SHAPE = (1, 3, 7, 14)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("shapedcli")
    spec = shaped.build(d, bench_shape=BENCH_SHAPE)
    bare = shaped.write_spec(d / "bare.yaml")        # the same pipeline without a bench_shape
    return {"dir": d, "spec": spec, "bare": bare}


def shapes_arg(shape):
    return "image:" + ",".join(map(str, shape))


def calls(log):
    """(image sizes the detector was set to, H2D byte counts, D2H byte counts) of the executed models."""
    text = log.read_text()
    executed = {int(i) for i in re.findall(r"aclmdlExecuteAsync\(id (\d+) ", text)}
    sets = re.findall(r"aclmdlSetDynamicHWSize\(id (\d+) index \d+ (\d+)x(\d+)\) = 0", text)
    hw = [(int(h), int(w)) for i, h, w in sets if int(i) in executed]
    copies = re.findall(r"aclrtMemcpyAsync\([^\n]*count=(\d+), kind=(\w+)", text)
    h2d = [int(n) for n, kind in copies if kind == "ACL_MEMCPY_HOST_TO_DEVICE"]
    d2h = [int(n) for n, kind in copies if kind == "ACL_MEMCPY_DEVICE_TO_HOST"]
    return hw, h2d, d2h


def expected_gears(shape):
    """The node_gears a request of ``shape`` must report (the recognizer reads the detector's output unpadded,
    so its dims gear is the one of the detector's image size)."""
    h, w = shaped.gear_of(shape[2], shape[3])
    return {"det": {"kind": "hw", "gear": [h, w], "inputs": {"image": [1, 3, h, w]}},
            "rec": {"kind": "dims", "gear": shaped.RECOGNIZER_DIMS.index([h, w]),
                    "inputs": {"map": [1, h, w, 2]}}}


def usage_error(*args):
    proc = run_cli(*map(str, args))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    return error_line(proc).removeprefix("ascend-engine: error: ")


@pytest.mark.parametrize("shape, given", [(BENCH_SHAPE, False), (OTHER_SHAPE, True)],
                         ids=["bench_shape", "--shapes"])
def test_bench_runs_the_gears_the_shape_picks(folder, tmp_path, shape, given):
    out, log = tmp_path / "b.json", tmp_path / "calls.log"
    requests, warmup = 6, 2
    extra = ["--shapes", shapes_arg(shape)] if given else []
    proc = ok(run_cli("bench", str(folder["spec"]), *extra, "--requests", str(requests), "--warmup",
                      str(warmup), "--no-progress", "--profile", "--json", str(out),
                      env={"ASCEND_SIM_LOG": str(log)}))
    fig = json.loads(out.read_text())
    want = expected_gears(shape)
    h, w = want["det"]["gear"]
    assert h * w < 24 * 32            # both shapes run below the largest gear: its choice is no default
    assert fig["node_gears"] == want
    assert fig["config"]["shapes"] == {"image": list(shape)}
    assert fig["config"]["shapes_chosen"] == ("given" if given else "bench_shape")
    assert fig["config"]["batch"] == 1 and fig["pipeline"]["shapes"] == {"image": list(shape)}
    assert fig["requests"] == requests and fig["rows"] == requests
    assert fig["throughput"]["requests_per_s"] > 0
    # the per-node breakdown: each node's device time at least what the model declares, less the
    # rounding of the event offsets (float milliseconds, as aclrtEventElapsedTime gives them)
    device = fig["device_time"]["ms_per_request"]
    rounding_ms = 1e-3
    assert device["det"] >= shaped.DETECTOR_US / 1e3 - rounding_ms, device
    assert device["rec"] >= shaped.RECOGNIZER_US / 1e3 - rounding_ms, device
    assert fig["breakdown"]["per_request"]["compute"]["det"]["count"] == requests
    chosen = "chosen with --shapes" if given else "the spec's bench_shape"
    assert f"shapes    : {shapes_arg(shape)} ({chosen})\n" in proc.stdout
    dims = want["rec"]["gear"]
    assert (f"gears     : det image size {h}x{w}, rec dims gear {dims} (map:1,{h},{w},2)\n") in proc.stdout

    runs = 1 + warmup + requests       # the cold request, the warm-up, the timed ones
    hw, h2d, d2h = calls(log)
    assert hw == [(h, w)] * runs
    assert h2d == [3 * h * w * 4] * runs                       # the image padded to the detector's gear
    assert sorted(set(d2h)) == sorted({h * w * 4, h * w * 3 * 4})   # energy and classes at the gear
    assert len(d2h) == 2 * runs


@pytest.mark.parametrize("shape, given", [(BENCH_SHAPE, False), (OTHER_SHAPE, True)],
                         ids=["bench_shape", "--shapes"])
def test_trace_has_a_span_per_node_per_request_at_the_shape(folder, tmp_path, shape, given):
    out, log = tmp_path / "t.json", tmp_path / "calls.log"
    requests = 5
    extra = ["--shapes", shapes_arg(shape)] if given else []
    proc = ok(run_cli("trace", str(folder["spec"]), *extra, "--requests", str(requests), "--out", str(out),
                      env={"ASCEND_SIM_LOG": str(log)}))
    want = expected_gears(shape)
    h, w = want["det"]["gear"]
    data = json.loads(out.read_text())
    assert data["otherData"]["shapes"] == {"image": list(shape)}
    assert data["otherData"]["node_gears"] == want
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["shapes"] for e in spans} == {shapes_arg(shape)}
    gear_text = {"det": f"image size {h}x{w}", "rec": f"dims gear {want['rec']['gear']} (map:1,{h},{w},2)"}
    for node in ("det", "rec"):
        execs = [e for e in spans if e["cat"] == "execute" and e["name"] == node]
        assert sorted(e["args"]["request"] for e in execs) == list(range(requests)), node
        assert {e["args"]["gear"] for e in execs} == {gear_text[node]}
    for name in ("H2D", "D2H"):
        assert sorted(e["args"]["request"] for e in spans if e["name"] == name) == list(range(requests))
    assert f"({requests} requests at {shapes_arg(shape)}, depth 3)" in proc.stdout
    assert f"gears     : det image size {h}x{w}, " in proc.stdout
    hw, h2d, _ = calls(log)
    assert hw == [(h, w)] * requests
    assert h2d == [3 * h * w * 4] * requests


def test_a_load_sweep_runs_at_the_shape(folder, tmp_path):
    out = tmp_path / "load.json"
    proc = ok(run_cli("bench", str(folder["spec"]), "--shapes", shapes_arg(OTHER_SHAPE), "--concurrency",
                      "1,2", "--requests", "6", "--warmup", "1", "--no-progress", "--json", str(out)))
    fig = json.loads(out.read_text())
    assert fig["node_gears"] == expected_gears(OTHER_SHAPE)
    assert fig["config"]["shapes"] == {"image": list(OTHER_SHAPE)}
    assert [p["concurrency"] for p in fig["load"]["points"]] == [1, 2]
    assert all(p["requests"] == 6 for p in fig["load"]["points"])
    assert f"shapes    : {shapes_arg(OTHER_SHAPE)} (chosen with --shapes)" in proc.stdout


def test_compare_refuses_another_shape_and_takes_the_same(folder, tmp_path):
    base = tmp_path / "base.json"
    common = ["--requests", "4", "--warmup", "1", "--no-progress"]
    ok(run_cli("bench", str(folder["spec"]), *common, "--json", str(base)))
    assert usage_error("bench", folder["spec"], "--shapes", shapes_arg(OTHER_SHAPE), "--compare", base,
                       *common) == (
        f"cannot compare with {base}: it ran at the input shapes {shapes_arg(BENCH_SHAPE)}, this run at "
        f"{shapes_arg(OTHER_SHAPE)}; runs at different shapes (gears) are different configurations: compare "
        "runs at the same --shapes")
    proc = ok(run_cli("bench", str(folder["spec"]), "--shapes", shapes_arg(BENCH_SHAPE), "--compare",
                      str(base), *common))
    assert "verdict   : " in proc.stdout


@pytest.mark.parametrize("command", ["bench", "trace"])
def test_a_shaped_input_without_a_shape_is_refused(folder, tmp_path, command):
    out = ["--out", str(tmp_path / "t.json")] if command == "trace" else []
    assert usage_error(command, folder["bare"], *out) == (
        f"{command} {folder['bare']}: no shape given for the input(s) image (1, 3, -1, -1): this pipeline "
        "has dynamic shapes (its models pick their gear from each request's shapes), so a run needs the "
        "request shape of every input with a -1 after the first dimension; give it with --shapes "
        "image:1,3,D,D or in the spec (inputs.image.bench_shape)")
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("command", ["bench", "trace"])
def test_a_shape_no_gear_holds_names_the_node_and_the_gears(folder, tmp_path, command):
    out = ["--out", str(tmp_path / "t.json")] if command == "trace" else []
    assert usage_error(command, folder["spec"], "--shapes", "image:1,3,40,8", *out) == (
        f"{command} {folder['spec']}: --shapes image:1,3,40,8: model node 'det': no gear holds the input "
        "shapes {'image': (1, 3, 40, 8)} with 1 row(s); its gears: image sizes "
        "(height x width) 8x16, 16x16, 24x32")


def test_a_bench_shape_no_gear_holds_names_its_source(folder, tmp_path):
    spec = shaped.write_spec(folder["dir"] / "too_tall.yaml", bench_shape=(1, 3, 25, 4))
    assert usage_error("bench", spec) == (
        f"bench {spec}: the spec's bench_shape image:1,3,25,4: model node 'det': no gear holds the input "
        "shapes {'image': (1, 3, 25, 4)} with 1 row(s); its gears: image sizes "
        "(height x width) 8x16, 16x16, 24x32")


@pytest.mark.parametrize("shapes, message", [
    ("image:2,3,8,8", "input 'image' takes shape (1, 3, -1, -1) (-1: any size), got (2, 3, 8, 8)"),
    ("image:1,4,8,8", "input 'image' takes shape (1, 3, -1, -1) (-1: any size), got (1, 4, 8, 8)"),
    ("image:1,3,8", "input 'image' takes shape (1, 3, -1, -1) (-1: any size), got (1, 3, 8)"),
    ("img:1,3,8,8", "the pipeline has no input 'img'; its inputs: image"),
])
def test_shapes_that_do_not_fit_the_input(folder, shapes, message):
    assert usage_error("bench", folder["spec"], "--shapes", shapes) == \
        f"bench {folder['spec']}: --shapes {shapes}: {message}"


def test_options_that_do_not_apply_are_refused(folder, tmp_path):
    assert usage_error("bench", folder["spec"], "--batch", "2") == (
        f"--batch does not go with {folder['spec']}: this pipeline has dynamic shapes, and the rows of a "
        "request are the first dimension of its shapes; choose them with --shapes or the spec's bench_shape")
    assert usage_error("trace", folder["spec"], "--batch", "1", "--out", tmp_path / "t.json").startswith(
        f"--batch does not go with {folder['spec']}: this pipeline has dynamic shapes")
    image = tmp_path / "image.npy"
    np.save(image, np.zeros((1, 3, 8, 8), np.float32))
    assert usage_error("bench", folder["spec"], "--input", image, "--shapes", "image:1,3,8,8") == (
        "--shapes does not go with --input: the shapes are those of the --input files")
    proc = run_cli("bench", str(folder["spec"]), "--concurrency", "2", "--max-delay-ms", "2")
    assert proc.returncode == 1
    assert error_line(proc) == (
        "ascend-engine: error: PipelineError: max_delay_ms: the dynamic batcher merges requests of one "
        "shape, but model node(s) 'det', 'rec' pick their gear from each request's shapes: compile with "
        "max_delay_ms=0")


def write_images(folder, sizes, seed=0):
    """One .npy image file per size in ``folder``, and their reference outputs; returns the images."""
    folder.mkdir()
    rng = np.random.default_rng(seed)
    images = []
    for k, (h, w) in enumerate(sizes):
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        np.save(folder / f"img{k}.npy", x)
        images.append(x)
    return images


def test_input_files_are_run_checked_and_written(folder, tmp_path):
    """--input: requests of the files' shape (one shape for all), --output writes each request's outputs
    at its own size, --check compares them with references computed on the graphs."""
    images = write_images(tmp_path / "in", [(7, 14)] * 3)
    refs, outs = tmp_path / "ref", tmp_path / "out"
    refs.mkdir()
    for k, x in enumerate(images):
        for name, value in shaped.reference(x).items():
            np.save(refs / f"img{k}_{name}.npy", value)
    out = tmp_path / "b.json"
    proc = ok(run_cli("bench", str(folder["spec"]), "--input", str(tmp_path / "in"), "--check", str(refs),
                      "--output", str(outs), "--requests", "4", "--warmup", "1", "--no-progress",
                      "--json", str(out)))
    fig = json.loads(out.read_text())
    assert fig["config"]["shapes"] == {"image": [1, 3, 7, 14]} and fig["config"]["shapes_chosen"] == "files"
    assert fig["node_gears"] == expected_gears((1, 3, 7, 14))
    assert fig["inputs"]["kind"] == "files" and fig["inputs"]["requests"] == 3
    values = 3 * (7 * 14 + 7 * 14 * 3)
    assert (f"outputs   : 6 output file(s) of 3 request(s) written to {outs}; {values} values of 3 "
            f"request(s) match {refs} (atol 1e-05, rtol 0.001)") in proc.stdout
    for k, x in enumerate(images):
        want = shaped.reference(x)
        for name in ("energy", "classes"):
            got = np.load(outs / f"img{k}_{name}.npy")
            assert got.shape == want[name].shape
            assert_matches_reference(got, want[name])
    # a reference that differs is found
    bad = np.load(refs / "img1_classes.npy")
    bad[0, 6, 13, 2] += 0.5
    np.save(refs / "img1_classes.npy", bad)
    proc = run_cli("bench", str(folder["spec"]), "--input", str(tmp_path / "in"), "--check", str(refs),
                   "--requests", "2", "--no-progress")
    assert proc.returncode == 1
    assert error_line(proc).startswith(f"ascend-engine: error: CheckError: output 'classes' of request 1 "
                                       f"(img1) differs from {refs / 'img1_classes.npy'} at [0, 6, 13, 2]: ")


def test_input_files_that_cannot_run(folder, tmp_path):
    write_images(tmp_path / "mixed", [(10, 12), (7, 14)])
    assert usage_error("bench", folder["spec"], "--input", tmp_path / "mixed") == (
        "--input: request img1 has the shapes image:1,3,7,14, request img0 image:1,3,10,12; a run of a "
        "pipeline with dynamic shapes times requests of one shape: give the files of each shape to a run of "
        "their own")
    write_images(tmp_path / "tall", [(30, 8)])
    assert usage_error("bench", folder["spec"], "--input", tmp_path / "tall") == (
        f"bench {folder['spec']}: --input request img0 image:1,3,30,8: model node 'det': no gear holds the "
        "input shapes {'image': (1, 3, 30, 8)} with 1 row(s); its gears: image "
        "sizes (height x width) 8x16, 16x16, 24x32")
    raw = tmp_path / "image.bin"
    np.zeros((1, 3, 8, 8), np.float32).tofile(raw)
    assert usage_error("bench", folder["spec"], "--input", raw) == (
        f"{raw}: input 'image' has sizes that change per request (rows, 3, -1, -1), and a .bin file carries "
        "no shape: give .npy files")
    four = tmp_path / "four.npy"
    np.save(four, np.zeros((1, 4, 8, 8), np.float32))
    assert usage_error("bench", folder["spec"], "--input", four) == (
        f"{four}: input 'image' expects shape (rows, 3, -1, -1) (-1: any size), the file holds (1, 4, 8, 8)")
