"""A short runtime demo: ``python -m ascend_engine.demo``.

Prints the backend and the devices, then moves data host -> device -> host
through a stream, with timing events around the work, and checks the result.
Runs on the AscendCL simulator anywhere, and unchanged on an Ascend machine.
"""

import sys

import numpy as np

import ascend_engine as ae


def main(nbytes: int = 64 << 20) -> int:
    """Run the demo; returns the process exit status."""
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
