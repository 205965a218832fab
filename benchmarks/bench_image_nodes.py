"""Image nodes: the all-device detector -> classifier against the host-crop version, side by side.

Run:  python -m pytest benchmarks/bench_image_nodes.py -o python_files='bench_*.py' --benchmark-only -q -s

Both run the same static-AIPP models (examples/detector_classifier.py,
``build_image_models``: detector DETECTOR_US, classifier CLASSIFIER_US per
crop) on the same 640 x 480 JPEGs, one per request, through ``run_many`` at
the same depth:

* **all-device**: JPEG -> jpeg_decode -> resize -> detector -> host NMS
  (boxes only) -> crop_resize -> classifier (docs/executor.md, "Image nodes");
  only the JPEG goes to the device and only boxes and labels come back.
* **host-crop**: the caller decodes each JPEG with Pillow and resizes it to
  the detector's NV12 picture on the host (Pillow's bilinear filter, in C); the host step gets the picture
  back, cuts and resizes the crops in numpy and hands them to the classifier.

Figures, interleaved over ROUNDS passes (medians), so a noisy moment hits both:

* host CPU per request: the process's CPU time (``time.process_time()``: the
  caller, the host-step workers and the completion thread) over a pass, per
  request; and the same less the simulator's stream threads (the simulated
  device's kernels, copies and DVPP pixel work, which an NPU does in
  hardware).  Goal: all-device <= 0.5 x host-crop.
* throughput against the all-device pipeline's bound 1 / (slowest stage): each
  device node's time per request measured with timing events in a
  ``profile=True`` pass (``Engine.stats()["device_ms_per_node"]``), the host
  step's as the wall time of its function's calls.  Goal: >= 0.95.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import io
import os
import statistics
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)

import _images  # noqa: E402
import detector_classifier as dc  # noqa: E402
from _report import report  # noqa: E402

import ascend_engine as ae  # noqa: E402

DETECTOR_US = 3000
CLASSIFIER_US = 200
JPEG_SIZE = (640, 480)
N_JPEGS = 64                # distinct JPEGs, used in turn
REQUESTS = 300
DEPTH = 8
ROUNDS = 3


def host_picture(jpeg):
    """The host-crop version's decode and resize, as a user would write them: Pillow's decode
    and bilinear resize (its own filter, so its pictures differ a little from the VPC's), then
    NV12 in numpy."""
    from PIL import Image

    w, h = dc.PICTURE
    img = Image.open(io.BytesIO(jpeg)).convert("YCbCr").resize((w, h), Image.BILINEAR)
    ycc = np.asarray(img)
    chroma = ycc[:, :, 1:].reshape(h // 2, 2, w // 2, 2, 2).mean(axis=(1, 3)).round().astype(np.uint8)
    return np.concatenate([ycc[:, :, 0], chroma.reshape(h // 2, w)]).reshape(1, h * 3 // 2, w, 1)


class Timed:
    """A host step function that adds up the wall time of its calls (its stage time)."""

    def __init__(self, fn):
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, *args):
        t0 = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1


def host_crops(picture, scores, boxes):
    """The host-crop version's host step: the boxes, then each crop cut and resized in numpy."""
    pw, ph = dc.PICTURE
    cw, ch = dc.CROP
    kept = dc.pixel_boxes(scores, boxes)
    crops = [_images.crop_resize(picture, b, pw, ph, cw, ch) for b in kept]
    return (np.asarray(crops, np.uint8).reshape(-1, ch * 3 // 2, cw, 1), kept)


def host_pipeline(models):
    pw, ph = dc.PICTURE
    cw, ch = dc.CROP
    pipe = ae.Pipeline(device=0)
    picture = pipe.input("picture", "uint8", (1, ph * 3 // 2, pw, 1))
    scores, boxes = pipe.model(models["detector"].path, picture, name="detector")
    crops, kept = pipe.host(host_crops, picture, scores, boxes, name="nms", rows="any",
                            max_rows=dc.CANDIDATES,
                            outputs=[("crops", "uint8", (-1, ch * 3 // 2, cw, 1)),
                                     ("boxes", "int32", (-1, 4))])
    probs, label = pipe.model(models["classifier"].path, crops, name="classifier")
    pipe.output("boxes", kept)
    pipe.output("label", label)
    return pipe


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    models = dc.build_image_models(str(tmp_path_factory.mktemp("image_bench")), detector_us=DETECTOR_US,
                                   classifier_us=CLASSIFIER_US)
    rng = np.random.default_rng(0)
    jpegs = [_images.random_jpeg(rng, *JPEG_SIZE) for _ in range(N_JPEGS)]
    return models, jpegs


def simulated_device_cpu():
    """CPU seconds so far of the simulator's stream threads (named ``ae-sim-stream``,
    docs/simulator.md "Streams"): the simulated device's copies, kernels and DVPP pixel work."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() != "ae-sim-stream":
                    continue
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:     # a thread that ended meanwhile
            continue
        total += int(fields[11]) + int(fields[12])   # utime, stime
    return total / tick


def timed(engine, feeds):
    """(requests/s, process CPU ms per request, the same less the simulated device's threads,
    outputs) of one run_many pass over ``feeds``."""
    cpu0, dev0, t0 = time.process_time(), simulated_device_cpu(), time.perf_counter()
    outs = list(engine.run_many(feeds))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    host = cpu - (simulated_device_cpu() - dev0)
    return len(outs) / seconds, cpu * 1000 / len(outs), host * 1000 / len(outs), outs


def test_all_device_against_host_crops(benchmark, setup):
    models, jpegs = setup
    order = [jpegs[k % N_JPEGS] for k in range(REQUESTS)]
    # the bound: each stage's time per request, device nodes measured with timing events
    step = Timed(dc.pixel_boxes)
    with dc.build_device_pipeline(models, debug=False, step=step).compile(depth=DEPTH,
                                                                         profile=True) as engine:
        for _ in engine.run_many({"jpeg": j} for j in order[:16]):
            pass
        before = engine.stats()["device_ms_per_node"]
        step.seconds = step.calls = 0
        for _ in engine.run_many({"jpeg": j} for j in order):
            pass
        after = engine.stats()["device_ms_per_node"]
    stage_ms = {n: (after[n] - before[n]) / REQUESTS for n in after if n != "nms"}
    stage_ms["nms"] = step.seconds * 1000 / step.calls
    slowest = max(stage_ms, key=stage_ms.get)
    bound = 1000 / stage_ms[slowest]

    device = dc.build_device_pipeline(models, debug=False).compile(depth=DEPTH)
    host = host_pipeline(models).compile(depth=DEPTH)
    try:
        for _ in device.run_many({"jpeg": j} for j in order[:16]):    # warm-up
            pass
        for _ in host.run_many({"picture": host_picture(j)} for j in order[:16]):
            pass
        dev, hst = [], []
        for _ in range(ROUNDS):
            dev.append(timed(device, ({"jpeg": j} for j in order)))
            hst.append(timed(host, ({"picture": host_picture(j)} for j in order)))
        # how often both find the same boxes (Pillow's resize filter is not the VPC's)
        same = sum(np.array_equal(a["boxes"], b["boxes"])
                   for a, b in zip(dev[-1][3], hst[-1][3], strict=True))
        benchmark.pedantic(lambda: list(device.run_many({"jpeg": j} for j in order[:50])), rounds=2,
                           iterations=1)
    finally:
        device.close()
        host.close()
    dev_rate, dev_cpu, dev_host = (statistics.median(run[k] for run in dev) for k in range(3))
    hst_rate, hst_cpu, hst_host = (statistics.median(run[k] for run in hst) for k in range(3))
    report(benchmark, f"JPEG {JPEG_SIZE[0]}x{JPEG_SIZE[1]} -> detector ({DETECTOR_US} us) -> NMS -> crops -> "
                      f"classifier ({CLASSIFIER_US} us per crop), depth {DEPTH}, {REQUESTS} requests", {
        **{f"stage_ms_{n}": v for n, v in stage_ms.items()},
        "slowest_stage": slowest, "bound_req_s": bound,
        "device_req_s": dev_rate, "device_over_bound": dev_rate / bound,
        "host_crop_req_s": hst_rate, "host_crop_over_bound": hst_rate / bound,
        "device_cpu_ms_per_req": dev_cpu, "host_crop_cpu_ms_per_req": hst_cpu,
        "device_cpu_over_host_crop": dev_cpu / hst_cpu,
        "device_host_cpu_ms_per_req": dev_host, "host_crop_host_cpu_ms_per_req": hst_host,
        "device_over_host_crop_without_simulated_device": dev_host / hst_host,
        "same_boxes_fraction": same / REQUESTS,
        "load_avg_1min": os.getloadavg()[0], "cpus": os.cpu_count(),
    })
