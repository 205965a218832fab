"""Benchmarks of the simulator's DVPP: the modelled device time, measured side by side in one run.

Run:  python -m pytest benchmarks/bench_dvpp.py -o python_files='bench_*.py' --benchmark-only -q -s

A DVPP task holds its stream for its modelled device time (docs/simulator.md,
"DVPP": per SoC, e.g. on the default Ascend910B JPEGD 1080p at 512 frames/s a
channel and the VPC at 1440; ASCEND_SIM_SOC_VERSION picks another).  The pixel
work itself runs on the stream's worker thread, so the model holds only while
the host does that work faster than the modelled time.

* (a) JPEGD: 1920 x 1080 JPEG decodes queued on one stream; wall time per
  decode against the modelled time (1.0 when the model holds, above 1 when
  the host's libjpeg is slower than the hardware), and the host CPU time per
  decode against the modelled time.
* (b) the same decodes split over two channels on two streams, against one
  stream: hardware channels run in parallel, so the ratio approaches 2 when
  the host has the cores to spare.
* (c) VPC: 1920 x 1080 NV12 resized to 224 x 224 on one stream; wall time per
  resize against the modelled time.

Ratios go to the benchmark's extra_info and are printed; none is asserted.
"""

import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "sim")]

import pytest  # noqa: E402
from _report import report  # noqa: E402
from helpers import simlib  # noqa: E402
from helpers.dvpp import NV12, Dvpp, jpeg_bytes, sample_image  # noqa: E402
from simrt_util import Sim  # noqa: E402

W, H = 1920, 1080
# soc.c: 20 us a task plus one 1080p frame at the SoC's rate (JPEGD, VPC frames/s)
RATES = {"Ascend310": (128, 360), "Ascend310P3": (128, 360), "Ascend910B": (512, 1440)}
COUNT = 16
ROUNDS = 3


@pytest.fixture(scope="module")
def dvpp():
    return Dvpp(Sim(simlib.session()))


@pytest.fixture(scope="module")
def model_s(dvpp):
    """Modelled seconds of one 1080p JPEGD decode and one 1080p VPC task on the simulator's SoC."""
    soc = dvpp.acl.aclrtGetSocName().decode().removesuffix("-sim")
    jpegd, vpc = RATES[soc]
    return 20e-6 + 1 / jpegd, 20e-6 + 1 / vpc


def spread(values):
    return f"{min(values):.3f} .. {max(values):.3f}"


class Decoder:
    """COUNT decodes of one 1080p JPEG, spread over `lanes` channels and streams."""

    def __init__(self, dvpp, lanes):
        self.d, self.lanes = dvpp, lanes
        data = jpeg_bytes(sample_image(W, H), quality=85)
        self.src, self.n = dvpp.put(data)
        need = ctypes.c_uint32()
        buf = ctypes.create_string_buffer(data, len(data))
        dvpp.ok(dvpp.lib.acldvppJpegPredictDecSize(buf, len(data), NV12, ctypes.byref(need)))
        self.outs = [dvpp.malloc(need.value) for _ in range(lanes)]
        self.descs = [dvpp.pic(o, need.value, NV12) for o in self.outs]
        self.channels = [dvpp.channel() for _ in range(lanes)]
        self.streams = [dvpp.sim.stream() for _ in range(lanes)]

    def run(self):
        for i in range(COUNT):
            k = i % self.lanes
            self.d.ok(
                self.d.lib.acldvppJpegDecodeAsync(
                    self.channels[k], self.src, self.n, self.descs[k], self.streams[k]
                )
            )
        for s in self.streams:
            self.d.sim.ok(self.d.sim.lib.aclrtSynchronizeStream(s))

    def close(self):
        for c in self.channels:
            self.d.close_channel(c)
        for s in self.streams:
            self.d.sim.ok(self.d.sim.lib.aclrtDestroyStream(s))
        for desc in self.descs:
            self.d.ok(self.d.lib.acldvppDestroyPicDesc(desc))
        for p in self.outs + [self.src]:
            self.d.ok(self.d.lib.acldvppFree(p))


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def test_jpegd_device_time(benchmark, dvpp, model_s):
    jpegd_s = model_s[0]
    one, two = Decoder(dvpp, 1), Decoder(dvpp, 2)
    try:
        walls1, cpus1, walls2 = [], [], []
        for _ in range(ROUNDS):  # interleaved: both see the same machine load
            w, c = timed(one.run)
            walls1.append(w / COUNT / jpegd_s)
            cpus1.append(c / COUNT / jpegd_s)
            w2, _ = timed(two.run)
            walls2.append(w / w2)
        report(
            benchmark,
            f"JPEGD 1920 x 1080 (modelled {jpegd_s * 1e3:.2f} ms a decode)",
            {
                "(a) wall per decode / modelled, one stream": statistics.median(walls1),
                "(a) range": spread(walls1),
                "(a) host CPU per decode / modelled": statistics.median(cpus1),
                "(b) two channels on two streams / one, throughput": statistics.median(walls2),
                "(b) range": spread(walls2),
            },
        )
        benchmark.pedantic(one.run, rounds=1, iterations=1)
    finally:
        one.close()
        two.close()


def test_vpc_device_time(benchmark, dvpp, model_s):
    vpc_s = model_s[1]
    import numpy as np

    y = np.full((H, W), 100, np.uint8)
    uv = np.full((H // 2, W // 2), 128, np.uint8)
    src, sptr = dvpp.nv12_pic(y, uv, uv)
    out, optr, _ = dvpp.out_pic(224, 224)
    cfg = dvpp.lib.acldvppCreateResizeConfig()
    channel, stream = dvpp.channel(), dvpp.sim.stream()

    def run():
        for _ in range(COUNT):
            dvpp.ok(dvpp.lib.acldvppVpcResizeAsync(channel, src, out, cfg, stream))
        dvpp.sim.ok(dvpp.sim.lib.aclrtSynchronizeStream(stream))

    try:
        walls, cpus = [], []
        for _ in range(ROUNDS):
            w, c = timed(run)
            walls.append(w / COUNT / vpc_s)
            cpus.append(c / COUNT / vpc_s)
        report(
            benchmark,
            f"VPC resize 1920 x 1080 -> 224 x 224 (modelled {vpc_s * 1e3:.2f} ms)",
            {
                "(c) wall per resize / modelled": statistics.median(walls),
                "(c) range": spread(walls),
                "(c) host CPU per resize / modelled": statistics.median(cpus),
            },
        )
        benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        dvpp.close_channel(channel)
        dvpp.sim.ok(dvpp.sim.lib.aclrtDestroyStream(stream))
        dvpp.ok(dvpp.lib.acldvppDestroyResizeConfig(cfg))
        for d in (src, out):
            dvpp.ok(dvpp.lib.acldvppDestroyPicDesc(d))
        for p in (sptr, optr):
            dvpp.ok(dvpp.lib.acldvppFree(p))
