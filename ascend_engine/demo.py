"""The demo: ``python -m ascend_engine.demo``.

Prints the backend and the devices, moves data host -> device -> host through
two streams chained by an event, then builds three simulator models (an
encoder, a mixer and a head with 2, 3 and 1 ms of device time), chains them
into a pipeline and runs 200 requests through the engine: results checked
against the numpy reference, throughput against one stream and against the
bound set by the slowest model, and the memory plan.  Runs on the AscendCL
simulator anywhere.
"""

import sys
import tempfile
import time

import numpy as np

import ascend_engine as ae
from ascend_engine.sim.demo_models import _demo_models


def runtime_demo(nbytes: int = 64 << 20) -> bool:
    """Backend, devices and a timed H2D/D2H round trip; returns True when the data matches."""
    info = ae.backend()
    print(f"backend : {info.name}  ({info.library})")
    for d in ae.devices():
        free, total = d.memory_free / 2**30, d.memory_total / 2**30
        print(f"device {d.id}: {d.soc}, {free:.2f} GiB free of {total:.2f} GiB")

    data = np.random.default_rng(0).standard_normal(nbytes // 4, dtype=np.float32)
    with ae.Device(0) as dev:
        upload, download = ae.Stream(dev), ae.Stream(dev)
        t0, uploaded, t1 = ae.Event(dev, timing=True), ae.Event(dev, timing=True), ae.Event(dev, timing=True)
        staging = ae.HostBuffer(data.nbytes, dev)  # pinned host memory
        staging.as_array("float32")[:] = data
        result = ae.HostBuffer(data.nbytes, dev)
        buf = ae.DeviceBuffer(dev, data.nbytes)

        t0.record(upload)
        buf.copy_from(staging, stream=upload)  # H2D on the upload stream
        uploaded.record(upload)
        download.wait_event(uploaded)  # download waits for the upload, on the device
        buf.copy_to(result, stream=download)  # D2H on the download stream
        t1.record(download)
        download.synchronize()  # GIL released while waiting

        ok = np.array_equal(result.as_array("float32"), data)
        h2d = ae.Event.elapsed_ms(t0, uploaded)
        total = ae.Event.elapsed_ms(t0, t1)
        mib = data.nbytes / 2**20
        print(f"copied  : {mib:.0f} MiB host -> device -> host, data {'OK' if ok else 'MISMATCH'}")
        print(f"timing  : H2D {h2d:.2f} ms, H2D+D2H {total:.2f} ms (device time from timing events)")
        print(f"memory  : {dev.memory_info().free / 2**30:.2f} GiB free on device 0 while the buffer lives")
    return ok


def pipeline_demo(requests: int = 200, batch: int = 4) -> bool:
    """Build, compile and run the three-model pipeline; returns True when results match."""
    from ascend_engine import sim

    with tempfile.TemporaryDirectory() as folder:
        models = _demo_models(folder)
        pipe = ae.Pipeline(device=0)
        h = pipe.input("x", "float32", (-1, 64))
        for name, path, _ in models:
            h = pipe.model(path, h, name=name)
        pipe.output("probs", h)

        data = np.random.default_rng(2).standard_normal((requests * batch, 64)).astype(np.float32)
        expected = data
        for _, _, g in models:
            expected = sim.reference(g, {"x": expected})["y"]

        rates = {}
        for label, streams in (("one stream", "single"), ("pipelined", "per-model")):
            with pipe.compile(depth=8, streams=streams) as engine:
                engine.run_batch({"x": data[: 8 * batch]}, batch_size=batch)   # warm-up
                t0 = time.perf_counter()
                out = engine.run_batch({"x": data}, batch_size=batch)
                rates[label] = requests / (time.perf_counter() - t0)
                ok = np.allclose(out["probs"], expected, rtol=1e-4, atol=1e-6)
                if label == "pipelined":
                    print(f"\nengine  : {engine!r}")
                    mem = engine.memory()
                    print(f"memory  : arena {mem['arena_bytes']} B = {mem['depth']} slots x "
                          f"{mem['slot_bytes']} B (unshared {mem['unshared_slot_bytes']} B); "
                          f"recommended pool {mem['recommended_pool_bytes']} B")
            verdict = "OK" if ok else "MISMATCH"
            print(f"{label:<11}: {rates[label]:7.1f} requests/s of {batch} rows, results {verdict}")
            if not ok:
                return False
        bound = 1 / 3e-3
        speedup = rates["pipelined"] / rates["one stream"]
        print(f"bound      : {bound:7.1f} requests/s (the 3 ms mixer); pipelined reaches "
              f"{rates['pipelined'] / bound:.0%} of it, {speedup:.1f}x one stream")
    return True


def main() -> int:
    """Run the demo; returns the process exit status."""
    ok = runtime_demo(16 << 20)
    ok = pipeline_demo() and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
