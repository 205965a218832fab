"""Real AscendCL programs run unchanged on the simulator (issue 6).

* the simulator exports every function of the API list real clients call
  (checked against ``nm -D --defined-only``), and its DVPP companion exports
  acldvppMalloc/acldvppFree;
* ``make_toolkit`` lays out a CANN-toolkit-shaped folder whose env.sh lets an
  unmodified CMake project find the real headers and link ``-lascendcl``;
* four C++ programs in ``samples/`` (built once per session through that
  folder) run on simulator models and are checked against numpy
  (``sim.reference``): (a) synchronous float16 classifier with caller-owned
  work/weight memory, (b) the same asynchronous with host callbacks on a
  report thread, (c) dynamic batch chosen through ACL_DYNAMIC_TENSOR_NAME,
  (d) every listed function resolved at link/load time plus the tensor
  description, AIPP, dynamic HW/dims and exception-callback paths;
* (h) a DVPP program written against CANN's documented API alone
  (``samples/jpeg_resize.cpp``: JPEG decode -> VPC resize -> file) runs
  unchanged and matches Pillow's decode resized by half-pixel bilinear.
"""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from ascend_engine import sim, toolkit

pytestmark = pytest.mark.conformance

# The issue's list, as real clients (Ascend samples, ais_bench, ACLLite) call it.
ISSUE_API = """
aclInit aclFinalize aclGetRecentErrMsg aclDataTypeSize aclFloat16ToFloat aclFloatToFloat16
aclCreateDataBuffer aclDestroyDataBuffer aclUpdateDataBuffer aclGetDataBufferAddr aclGetDataBufferSizeV2
aclCreateTensorDesc aclDestroyTensorDesc aclGetTensorDescType aclGetTensorDescFormat aclGetTensorDescSize
aclGetTensorDescNumDims aclGetTensorDescDimV2 aclGetTensorDescAddress aclGetTensorDescByIndex
aclrtSetDevice aclrtResetDevice aclrtGetDeviceCount aclrtGetRunMode aclrtSetDeviceSatMode
aclrtCreateContext aclrtDestroyContext aclrtSetCurrentContext aclrtGetCurrentContext
aclrtCreateStream aclrtDestroyStream aclrtSynchronizeStream aclrtMalloc aclrtFree aclrtMallocHost
aclrtFreeHost aclrtMemcpy aclrtMemset aclrtSubscribeReport aclrtUnSubscribeReport aclrtLaunchCallback
aclrtProcessReport aclrtSetExceptionInfoCallback aclrtGetDeviceIdFromExceptionInfo
aclrtGetStreamIdFromExceptionInfo aclrtGetTaskIdFromExceptionInfo aclmdlQuerySize aclmdlLoadFromFile
aclmdlLoadFromFileWithMem aclmdlUnload aclmdlExecute aclmdlExecuteAsync aclmdlCreateDesc aclmdlGetDesc
aclmdlDestroyDesc aclmdlGetNumInputs aclmdlGetNumOutputs aclmdlGetInputSizeByIndex aclmdlGetOutputSizeByIndex
aclmdlGetInputDims aclmdlGetOutputDims aclmdlGetCurOutputDims aclmdlGetInputDataType aclmdlGetOutputDataType
aclmdlGetInputFormat aclmdlGetOutputFormat aclmdlGetInputNameByIndex aclmdlGetOutputNameByIndex
aclmdlGetInputIndexByName aclmdlCreateDataset aclmdlDestroyDataset aclmdlAddDatasetBuffer
aclmdlGetDatasetBuffer aclmdlGetDatasetNumBuffers aclmdlGetDatasetTensorDesc aclmdlSetDatasetTensorDesc
aclmdlGetDynamicBatch aclmdlSetDynamicBatchSize aclmdlGetDynamicHW aclmdlSetDynamicHWSize
aclmdlGetInputDynamicDims aclmdlGetInputDynamicGearCount aclmdlSetInputDynamicDims aclmdlCreateAIPP
aclmdlDestroyAIPP aclmdlSetAIPPInputFormat aclmdlSetAIPPCscParams aclmdlSetAIPPRbuvSwapSwitch
aclmdlSetAIPPAxSwapSwitch aclmdlSetAIPPSrcImageSize aclmdlSetAIPPCropParams aclmdlSetAIPPPaddingParams
aclmdlSetAIPPDtcPixelMean aclmdlSetAIPPDtcPixelMin aclmdlSetAIPPPixelVarReci aclmdlSetInputAIPP
aclmdlGetAippType aclmdlCreateAndGetOpDesc
""".split()
DVPP_API = ["acldvppMalloc", "acldvppFree"]


def exported(path):
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is required"
    out = subprocess.run(
        [nm, "-D", "--defined-only", path], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def dynamic_entries(path, tag):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(rf"\({tag}\)\s+.*\[(.+?)\]", out)


# ---------------------------------------------------------------------------
# symbols and the folder
# ---------------------------------------------------------------------------


def test_issue_list_is_complete():
    assert len(ISSUE_API) == len(set(ISSUE_API)) == 98


def test_simulator_exports_every_listed_function():
    have = exported(os.path.join(toolkit.LIB_DIR, toolkit.SIM_LIBRARY))
    missing = sorted(set(ISSUE_API) - have)
    assert not missing, f"not exported by {toolkit.SIM_LIBRARY}: {missing}"


def test_dvpp_library_exports_its_functions():
    path = os.path.join(toolkit.LIB_DIR, toolkit.DVPP_LIBRARY)
    assert set(DVPP_API) <= exported(path)
    assert dynamic_entries(path, "SONAME") == ["libacl_dvpp.so"]


def test_toolkit_layout(toolkit_dir):
    for folder in toolkit.LIB_FOLDERS:
        for name in ("libascendcl.so", "libacl_dvpp.so"):
            path = os.path.join(toolkit_dir, folder, name)
            assert os.path.exists(path), path
    for inc in ("runtime/include", "include"):
        assert os.path.exists(os.path.join(toolkit_dir, inc, "acl", "acl.h"))
    acl = os.path.join(toolkit_dir, "runtime", "lib64", "libascendcl.so")
    # programs linked through the toolkit depend on libascendcl.so, as with CANN
    assert dynamic_entries(acl, "SONAME") == ["libascendcl.so"]
    assert set(ISSUE_API) <= exported(acl)


def test_env_sh_exports_the_cann_variables(toolkit_dir, toolkit_env):
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "DDK_PATH", "CANN_PATH"):
        assert toolkit_env[var] == toolkit_dir
    assert toolkit_env["NPU_HOST_LIB"] == os.path.join(toolkit_dir, "runtime", "lib64", "stub")
    assert toolkit_env["LD_LIBRARY_PATH"].split(":")[0] == os.path.join(toolkit_dir, "runtime", "lib64")
    assert (
        open(os.path.join(toolkit_dir, "set_env.sh")).read()
        == open(os.path.join(toolkit_dir, "env.sh")).read()
    )


def test_make_toolkit_is_repeatable_and_takes_the_acl_folder(tmp_path, cann_headers):
    dest = tmp_path / "tk"
    toolkit.make_toolkit(str(dest), headers=os.path.join(cann_headers, "acl"))
    toolkit.make_toolkit(str(dest), headers=cann_headers)  # refresh in place
    assert (dest / "include" / "acl" / "acl_mdl.h").exists()


def test_main_reports_bad_headers(tmp_path, capsys):
    assert toolkit.main([str(tmp_path / "tk"), "--headers", str(tmp_path)]) == 2
    assert "no acl/acl.h" in capsys.readouterr().err


def test_set_soname_refuses_a_longer_name(tmp_path):
    lib = tmp_path / "lib.so"
    shutil.copyfile(os.path.join(toolkit.LIB_DIR, toolkit.DVPP_LIBRARY), lib)
    with pytest.raises(toolkit.ToolkitError, match="longer"):
        toolkit.set_soname(str(lib), "libacl_dvpp_but_longer.so")
    assert toolkit.set_soname(str(lib), "libx.so") == "libacl_dvpp.so"
    assert dynamic_entries(str(lib), "SONAME") == ["libx.so"]


def test_programs_link_against_libascendcl(samples_build):
    needed = dynamic_entries(os.path.join(samples_build, "classify_sync"), "NEEDED")
    assert "libascendcl.so" in needed and "libascendcl_sim.so" not in needed
    assert "libacl_dvpp.so" in dynamic_entries(os.path.join(samples_build, "api_coverage"), "NEEDED")


# ---------------------------------------------------------------------------
# the programs
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """float16 NCHW 1x3x224x224 -> float32 1x1000, plus images and their numpy answers."""
    rng = np.random.default_rng(2024)
    g = sim.Graph("classifier")
    x = g.input("data", "float16", (1, 3, 224, 224), format="NCHW")
    feat = g.cast(g.mean(x, axes=(2, 3)), "float32")
    w = rng.standard_normal((3, 1000)).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    g.output("prob", g.softmax(g.add(g.matmul(feat, g.const(w)), g.const(b))))
    folder = tmp_path_factory.mktemp("classifier")
    model = folder / "classifier.om"
    g.save(str(model))
    images, answers = [], []
    for i in range(3):
        img = (rng.random((1, 3, 224, 224)) * 2 - 1 + 0.25 * i).astype(np.float16)
        path = folder / f"image{i}.bin"
        img.tofile(path)
        images.append(path)
        answers.append(sim.reference(g, {"data": img})["prob"][0])
    config = folder / "acl.json"
    config.write_text("{}\n")
    return model, images, answers, config


def parse_top(stdout, label):
    m = re.search(rf"^{label} top5:((?: \d+:[-\d.e+]+){{5}})$", stdout, re.M)
    assert m, f"no '{label} top5' line in:\n{stdout}"
    pairs = [p.split(":") for p in m.group(1).split()]
    return [int(c) for c, _ in pairs], np.array([float(s) for _, s in pairs])


def check_top5(stdout, label, want):
    classes, scores = parse_top(stdout, label)
    order = np.argsort(-want, kind="stable")[:5]
    assert classes == [int(c) for c in order], f"{label}: {classes} vs numpy {list(order)}"
    np.testing.assert_allclose(scores, want[order], rtol=1e-4, atol=1e-6)


def test_a_classifier_sync_with_caller_memory(run_sample, classifier):
    model, images, answers, config = classifier
    proc = run_sample("classify_sync", model, images[0], config)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input data: dtype 1 format 0 dims 1x3x224x224" in proc.stdout  # float16, NCHW
    assert "output prob: dtype 0 format 2 dims 1x1000" in proc.stdout  # float32, ND
    check_top5(proc.stdout, "image", answers[0])
    assert "classify_sync: OK" in proc.stdout


def test_b_classifier_async_with_callbacks(run_sample, classifier):
    model, images, answers, _ = classifier
    proc = run_sample("classify_async", model, *images)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i, want in enumerate(answers):
        check_top5(proc.stdout, f"image {i}", want)
    # blocking callbacks run in stream order
    labels = re.findall(r"^image (\d+) top5", proc.stdout, re.M)
    assert labels == [str(i) for i in range(len(images))]
    assert f"classify_async: OK ({len(images)} images)" in proc.stdout


@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory):
    rng = np.random.default_rng(11)
    g = sim.Graph("dynamic")
    x = g.input("x", "float32", (-1, 16))
    h = g.relu(g.matmul(x, g.const(rng.standard_normal((16, 8)).astype(np.float32))))
    g.output("y", g.softmax(g.matmul(h, g.const(rng.standard_normal((8, 4)).astype(np.float32)))))
    folder = tmp_path_factory.mktemp("dynamic")
    model = folder / "dynamic.om"
    g.save(str(model), batch_sizes=(1, 2, 4, 8))
    return g, model, folder, rng


@pytest.mark.parametrize("batch", [1, 4, 8])
def test_c_dynamic_batch_by_tensor_name(run_sample, dynamic_model, batch):
    g, model, folder, rng = dynamic_model
    rows = rng.standard_normal((batch, 16)).astype(np.float32)
    path = folder / f"rows{batch}.bin"
    rows.tofile(path)
    proc = run_sample("dynamic_batch", model, path, batch)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gears: 1 2 4 8" in proc.stdout
    assert "ascend_mbatch_shape_data is input 1" in proc.stdout
    assert f"output dims {batch}x4" in proc.stdout
    values = np.array(re.search(r"^values:(.*)$", proc.stdout, re.M).group(1).split(), dtype=np.float32)
    want = sim.reference(g, {"x": rows})["y"]
    np.testing.assert_allclose(values.reshape(batch, 4), want, rtol=1e-5, atol=1e-6)


def test_c_dynamic_batch_rejects_a_batch_that_is_not_a_gear(run_sample, dynamic_model):
    _, model, folder, rng = dynamic_model
    path = folder / "rows3.bin"
    rng.standard_normal((3, 16)).astype(np.float32).tofile(path)
    proc = run_sample("dynamic_batch", model, path, 3)
    assert proc.returncode == 1
    assert "145013" in proc.stderr and "not a gear" in proc.stderr


def test_d_every_function_resolves_and_the_wider_api_behaves(run_sample, classifier):
    model, _, _, config = classifier
    proc = run_sample(
        "api_coverage",
        model,
        config,
        extra_env={"ASCEND_SIM_FAULTS": "task:execute@1=507011", "LD_BIND_NOW": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"resolved {len(ISSUE_API) + len(DVPP_API)} functions" in proc.stdout
    m = re.search(r"exception: device 0 stream (\d+) task (\d+) code 507011", proc.stdout)
    assert m, proc.stdout
    assert "failed op 'classifier': 1 inputs, 1 outputs" in proc.stdout
    assert proc.stdout.count("aclmdlSetInputAIPP(modelId, input, 0, aipp) -> 100000") == 3
    no_aipp = "no dynamic AIPP input: aclmdlSetInputAIPP: model 1 ('classifier') has no dynamic AIPP input"
    assert no_aipp in proc.stdout
    assert "exceeds the 256 x 256 source image" in proc.stdout
    assert "api_coverage: OK" in proc.stdout


def test_d_program_without_the_fault_fails_loudly(run_sample, classifier):
    # Without the injected fault the program's exception check must fail:
    # the test above is not passing by accident.
    model, _, _, config = classifier
    proc = run_sample("api_coverage", model, config)
    assert proc.returncode == 1
    assert "aclrtSynchronizeStream(stream) returned 0, expected 507011" in proc.stderr


# ---------------------------------------------------------------------------
# client-style programs: what real clients do with descriptor sizes
# ---------------------------------------------------------------------------


def test_companion_libraries_and_own_dvpp_header(toolkit_dir):
    for folder in toolkit.LIB_FOLDERS:
        assert os.path.exists(os.path.join(toolkit_dir, folder, "libacl_cblas.so"))
        # the driver's HAL link stub, as CANN toolkits ship it (CMake files link -lascend_hal)
        assert os.path.exists(os.path.join(toolkit_dir, folder, "libascend_hal.so"))
    cblas = exported(os.path.join(toolkit_dir, "runtime", "lib64", "libacl_cblas.so"))
    assert {"aclblasGemmEx", "aclblasHgemm", "aclblasGemvEx", "aclblasCreateHandleForGemmEx"} <= cblas
    header = os.path.join(toolkit_dir, "include", "acl", "ops", "acl_dvpp.h")
    assert open(header).read() == open(os.path.join(toolkit.OWN_HEADERS, toolkit.DVPP_HEADER)).read()
    info = open(os.path.join(toolkit_dir, "sim_toolkit.info")).read()
    assert "acl_dvpp.h=ascend-engine (own declarations)" in info and "libacl_cblas=" in info
    assert "libascend_hal=" in info


@pytest.fixture(scope="module")
def batch_classifier(tmp_path_factory):
    """A static model with a batch of 3 images: float32 NCHW 3x3x8x8 -> 3x10 and 3x1 outputs."""
    rng = np.random.default_rng(77)
    g = sim.Graph("batch3")
    x = g.input("images", "float32", (3, 3, 8, 8), format="NCHW")
    feat = g.mean(x, axes=(2, 3))
    w = rng.standard_normal((3, 10)).astype(np.float32)
    g.output("scores", g.softmax(g.matmul(feat, g.const(w))))
    g.output("energy", g.sum(g.mul(feat, feat), axes=(1,), keepdims=True))
    folder = tmp_path_factory.mktemp("batch3")
    model = folder / "batch3.om"
    g.save(str(model))
    images = rng.standard_normal((3, 3, 8, 8)).astype(np.float32)
    path = folder / "images.bin"
    images.tofile(path)
    return g, model, path, images


def parse_rows(stdout, output):
    block = re.search(rf"^output {output}: (\d+) floats, batch (\d+)\n((?:row \d+:.*\n)+)", stdout, re.M)
    assert block, stdout
    rows = [line.split(":", 1)[1].split() for line in block.group(3).splitlines()]
    return int(block.group(1)), int(block.group(2)), np.array(rows, dtype=np.float32)


def test_e_client_checks_files_and_reads_exact_output_sizes(run_sample, batch_classifier):
    g, model, path, images = batch_classifier
    proc = run_sample("client_files", model, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"input size {images.nbytes} matches the file" in proc.stdout
    want = sim.reference(g, {"images": images})
    count, batch, rows = parse_rows(proc.stdout, "scores")
    assert (count, batch) == (30, 3)  # size / sizeof(float): no padding floats to read
    np.testing.assert_allclose(rows, want["scores"], rtol=1e-5, atol=1e-7)
    count, batch, rows = parse_rows(proc.stdout, "energy")
    assert (count, batch) == (3, 3)
    np.testing.assert_allclose(rows, want["energy"], rtol=1e-5, atol=1e-7)
    # what the simulator does not model says so, through aclGetRecentErrMsg
    assert re.search(r"^acldvppCreateChannel -> channel \d+$", proc.stdout, re.M), proc.stdout
    assert "aclblasGemmEx -> 200001: aclblasGemmEx: aclblasGemmEx exists in CANN but is not simulated" in (
        proc.stdout
    )
    assert "client_files: OK" in proc.stdout


def test_e_client_refuses_a_file_of_the_wrong_size(run_sample, batch_classifier, tmp_path):
    _, model, _, images = batch_classifier
    short = tmp_path / "short.bin"
    images[:2].tofile(short)
    proc = run_sample("client_files", model, short)
    assert proc.returncode == 3
    assert f"holds {images[:2].nbytes} bytes, the model's input 0 needs {images.nbytes}" in proc.stderr


def test_f_client_runs_every_gear_with_buffers_sized_per_gear(run_sample, dynamic_model):
    g, model, folder, rng = dynamic_model
    rows = rng.standard_normal((8, 16)).astype(np.float32)
    path = folder / "rows_all_gears.bin"
    rows.tofile(path)
    proc = run_sample("client_gears", model, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sizes: input 512 output 128 dynamic 8, max gear 8" in proc.stdout
    for gear in (1, 2, 4, 8):
        line = re.search(rf"^gear {gear}:(.*)$", proc.stdout, re.M)
        assert line, proc.stdout
        got = np.array(line.group(1).split(), dtype=np.float32)
        want = sim.reference(g, {"x": rows[:gear]})["y"]
        assert got.size == want.size == gear * 4
        np.testing.assert_allclose(got.reshape(gear, 4), want, rtol=1e-5, atol=1e-6)
    assert "client_gears: OK" in proc.stdout


def test_g_callbacks_free_the_memory_they_consumed(run_sample, classifier):
    model, images, answers, _ = classifier
    proc = run_sample("client_async_free", model, *images, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i, want in enumerate(answers):
        check_top5(proc.stdout, f"image {i}", want)
    assert f"client_async_free: OK ({len(images)} images, buffers freed in callbacks)" in proc.stdout


def test_h_dvpp_sample_decodes_and_resizes_like_pillow(run_sample, tmp_path):
    """A program written against CANN's documented DVPP API alone runs unchanged: decode -> resize -> file."""
    from PIL import Image

    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:120, 0:200]
    rgb = np.stack([xx * 255 // 199, yy * 255 // 119, (xx + yy) % 256], -1)
    rgb = np.clip(rgb + rng.integers(-6, 7, rgb.shape), 0, 255).astype(np.uint8)
    jpeg = tmp_path / "in.jpg"
    Image.fromarray(rgb).save(jpeg, quality=92)
    out = tmp_path / "out.yuv"
    proc = run_sample("jpeg_resize", jpeg, out, 96, 64)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "jpeg: 200 x 120, 3 components" in proc.stdout
    # JPEGD's 64 x 16 output alignment (the default SoC, Ascend910B)
    assert "decoded: 200 x 120, stride 256 x 128, 49152 bytes" in proc.stdout
    assert "resized: 96 x 64, stride 96 x 64, 9216 bytes written" in proc.stdout
    yuv = np.fromfile(out, np.uint8)
    assert yuv.size == 96 * 64 * 3 // 2
    # the luma against Pillow's own decode, resized with half-pixel bilinear (no antialiasing)
    img = Image.open(jpeg)
    img.draft("YCbCr", img.size)
    luma = np.asarray(img)[..., 0].astype(float)
    fx = np.clip((np.arange(96) + 0.5) * 200 / 96 - 0.5, 0, 199)
    fy = np.clip((np.arange(64) + 0.5) * 120 / 64 - 0.5, 0, 119)
    x0, y0 = fx.astype(int), fy.astype(int)
    x1, y1 = np.minimum(x0 + 1, 199), np.minimum(y0 + 1, 119)
    wx, wy = fx - x0, (fy - y0)[:, None]
    top = luma[y0][:, x0] * (1 - wx) + luma[y0][:, x1] * wx
    bottom = luma[y1][:, x0] * (1 - wx) + luma[y1][:, x1] * wx
    want = np.rint(top * (1 - wy) + bottom * wy)
    assert np.abs(yuv[: 96 * 64].reshape(64, 96) - want).max() <= 1
    assert "jpeg_resize: OK" in proc.stdout


def test_j_acllite_style_program_shares_init_logs_and_copies_host_to_host(run_sample, classifier):
    """An ACLLite-style program (samples/acllite_style.cpp): two components aclInit and give their
    references back with aclFinalizeReference, log through aclAppLog, read the output size with
    aclGetDataBufferSize and copy device -> host with a synchronous aclrtMemcpy named
    ACL_MEMCPY_HOST_TO_HOST, which CANN 9.1 runs by address (docs/simulator.md, row 35)."""
    model, images, answers, config = classifier
    proc = run_sample(
        "acllite_style",
        model,
        images[1],
        config,
        extra_env={"ASCEND_SLOG_PRINT_TO_STDOUT": "1", "ASCEND_GLOBAL_LOG_LEVEL": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_top5(proc.stdout, "image", answers[1])
    assert proc.stdout.count("references left: ") == 2
    assert "references left: 1\nreferences left: 0\n" in proc.stdout
    line = r"^\[INFO\] APP\(\d+\):acllite_style\.cpp:\d+ Init: resource ready, run mode 1$"
    assert re.search(line, proc.stdout, re.M), proc.stdout
    assert "[INFO] APP(" in proc.stdout and "AscendCL already initialized by another component" in proc.stdout
    assert re.search(r"model \d+ loaded, input 301056 bytes, output 4000 bytes", proc.stdout)
    assert "acllite_style: OK" in proc.stdout
    # the default level (error) keeps only error lines, on stderr unless ASCEND_SLOG_PRINT_TO_STDOUT=1
    quiet = run_sample("acllite_style", model, images[1], config)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "[INFO]" not in quiet.stdout + quiet.stderr
    line = r"^\[ERROR\] APP\(\d+\):acllite_style\.cpp:\d+ main: acllite_style finished"
    assert re.search(line, quiet.stderr, re.M), quiet.stderr
