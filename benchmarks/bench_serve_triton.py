"""What a Triton user brings, served: a model on four devices against one, a JPEG pipeline through
tritonclient against the same pipeline in process, and JPEGs sent as BYTES against a client that
decodes them and sends the tensor.  Every figure is a ratio measured side by side in one run; the
servers run in processes of their own, the clients in this one.

Run:  python -m pytest benchmarks/bench_serve_triton.py -o python_files='bench_*.py' --benchmark-only -q -s

* devices: a Triton folder (config.pbtxt + 1/model.om) whose model takes 20 ms of device time per
  request, served with ``--devices 0`` and ``--devices 0,1,2,3``; 32 tritonclient asyncio gRPC
  callers of one row each.  Target (issue): four devices >= 3.6 x one.
* JPEGs: the detector pipeline (JPEG decode and resize on the device, AIPP in the model), 8
  callers: tritonclient asyncio gRPC sending each JPEG as one BYTES element against
  ``run_async`` in process with 8 tasks.  Target: >= 0.9.
* BYTES against a decoded tensor: the same callers, one sending the JPEG (BYTES), the other
  decoding it with Pillow, resizing it to the model's 64 x 48 and sending the NV12 tensor the
  model reads; requests/s, bytes on the wire per request and client CPU per request.

Nothing is asserted.
"""

import asyncio
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, "examples"))

import detector_classifier as dc  # noqa: E402
from _report import report  # noqa: E402
from helpers.dvpp import jpeg_bytes, nv12_from_planes, sample_image  # noqa: E402
from helpers.servers import ServerProcess  # noqa: E402
from helpers.triton_repo import JPEG_SPEC  # noqa: E402

from ascend_engine import sim, spec  # noqa: E402

DEVICE_MS = 20
CALLERS = 32
REQUESTS = 640
IMAGE_CALLERS = 8
IMAGE_REQUESTS = 400

CONFIG = """\
name: "slow"
max_batch_size: 1
input [ { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 16 ] } ]
parameters { key: "depth" value: { string_value: "8" } }
"""


TENSOR_SPEC = """\
inputs:
  image: {dtype: uint8, shape: [1, 72, 64, 1]}
models:
  - {name: detector, path: detector_nv12.om, inputs: [image]}
outputs: {scores: detector.scores, boxes: detector.boxes}
compile: {depth: 8}
"""


def slow_repository(root):
    g = sim.Graph("slow")
    x = g.input("x", "float32", (1, 16))
    g.output("y", g.relu(x))
    os.makedirs(os.path.join(root, "slow", "1"))
    g.save(os.path.join(root, "slow", "1", "model.om"), latency_us=DEVICE_MS * 1000)
    with open(os.path.join(root, "slow", "config.pbtxt"), "w", encoding="utf-8") as f:
        f.write(CONFIG)
    return root


def image_repository(root):
    dc.build_image_models(root, detector_us=2000, classifier_us=0)
    for name, text in (("jpegs.yaml", JPEG_SPEC), ("tensors.yaml", TENSOR_SPEC)):
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def grpc_rate(address, model, make_inputs, callers, requests):
    """Requests per second of ``callers`` asyncio gRPC callers, each making its inputs per request
    (``make_inputs(client_module)``), and the client's CPU seconds per request."""
    import tritonclient.grpc.aio as client_module

    async def main():
        client = client_module.InferenceServerClient(address)

        async def caller(n):
            for _ in range(n):
                await client.infer(model, make_inputs(client_module))

        try:
            await caller(10)
            cpu0, t0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*(caller(requests // callers) for _ in range(callers)))
            done = (requests // callers) * callers
            return done / (time.perf_counter() - t0), (time.process_time() - cpu0) / done
        finally:
            await client.close()

    return asyncio.run(main())


def test_four_devices_against_one(benchmark):
    figures = {}
    x = np.ones((1, 16), np.float32)

    def inputs(module):
        tensor = module.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(x)
        return [tensor]

    with tempfile.TemporaryDirectory() as tmp:
        repo = slow_repository(tmp)

        def run():
            rates = {}
            for devices in ("0", "0,1,2,3"):
                server = ServerProcess(repo, "--devices", devices)
                try:
                    rates[devices], _ = grpc_rate(server.grpc, "slow", inputs, CALLERS, REQUESTS)
                finally:
                    server.stop()
            figures["bound per device, requests/s"] = 1000.0 / DEVICE_MS
            figures["one device, requests/s"] = rates["0"]
            figures["four devices, requests/s"] = rates["0,1,2,3"]
            figures["one device / its bound"] = rates["0"] / (1000.0 / DEVICE_MS)
            figures["four devices / one device"] = rates["0,1,2,3"] / rates["0"]

        benchmark.pedantic(run, rounds=1, iterations=1)
    report(benchmark, f"serve --devices: a {DEVICE_MS} ms model, {CALLERS} gRPC callers", figures)


def nv12_of(jpeg):
    """What a client that decodes would send: the picture resized to 64 x 48, as NV12 (1, 72, 64, 1)."""
    import io

    from PIL import Image

    w, h = dc.PICTURE
    ycbcr = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB").resize((w, h)).convert("YCbCr"))
    y, u, v = (ycbcr[..., k] for k in range(3))
    u2, v2 = u[::2, ::2], v[::2, ::2]
    return np.frombuffer(nv12_from_planes(y, u2, v2, w, h), np.uint8).reshape(1, h * 3 // 2, w, 1)


def test_jpegs_as_bytes(benchmark):
    figures = {}
    pictures = [jpeg_bytes(sample_image(640, 480, seed=k)) for k in range(8)]
    with tempfile.TemporaryDirectory() as tmp:
        repo = image_repository(tmp)
        pipeline, kwargs = spec.load(os.path.join(repo, "jpegs.yaml"))
        engine = pipeline.compile(**kwargs)
        server = ServerProcess(repo)
        turn = iter(range(1 << 30))

        def jpeg_inputs(module):
            jpeg = pictures[next(turn) % len(pictures)]
            tensor = module.InferInput("jpeg", [1], "BYTES")
            tensor.set_data_from_numpy(np.array([jpeg], dtype=object))
            return [tensor]

        def tensor_inputs(module):
            picture = nv12_of(pictures[next(turn) % len(pictures)])
            tensor = module.InferInput("image", list(picture.shape), "UINT8")
            tensor.set_data_from_numpy(picture)
            return [tensor]

        def in_process():
            async def main():
                async def caller(n):
                    for _ in range(n):
                        await engine.run_async({"jpeg": pictures[next(turn) % len(pictures)]})

                t0 = time.perf_counter()
                await asyncio.gather(*(caller(IMAGE_REQUESTS // IMAGE_CALLERS) for _ in range(IMAGE_CALLERS)))
                return (IMAGE_REQUESTS // IMAGE_CALLERS) * IMAGE_CALLERS / (time.perf_counter() - t0)

            return asyncio.run(main())

        try:
            def run():
                local = in_process()
                jpegs, jpeg_cpu = grpc_rate(server.grpc, "jpegs", jpeg_inputs, IMAGE_CALLERS, IMAGE_REQUESTS)
                tensors, tensor_cpu = grpc_rate(server.grpc, "tensors", tensor_inputs, IMAGE_CALLERS,
                                                IMAGE_REQUESTS)
                figures["in-process run_async requests/s (8 tasks)"] = local
                figures["gRPC BYTES JPEG requests/s (8)"] = jpegs
                figures["gRPC BYTES JPEG / in-process"] = jpegs / local
                figures["gRPC client-decoded NV12 requests/s (8)"] = tensors
                figures["BYTES JPEG / client-decoded tensor, requests/s"] = jpegs / tensors
                figures["JPEG bytes per request (mean)"] = float(np.mean([len(p) for p in pictures]))
                figures["NV12 tensor bytes per request"] = float(nv12_of(pictures[0]).nbytes)
                figures["client CPU ms/request, BYTES JPEG"] = jpeg_cpu * 1e3
                figures["client CPU ms/request, decode + tensor"] = tensor_cpu * 1e3

            benchmark.pedantic(run, rounds=1, iterations=1)
        finally:
            engine.close()
            server.stop()
    report(benchmark, "JPEGs as BYTES (640 x 480 JPEGs, detector 2 ms, 8 gRPC callers)", figures)
