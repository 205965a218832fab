"""Per-call host cost of ascend_engine.acl (pyACL's API) against the engine's runtime
layer and a ctypes loop over the same simulator library.

Run:  python benchmarks/bench_pyacl.py [--calls N] [--rounds R]

Three calls, each timed with the thread CPU clock over N calls, best of R
interleaved rounds, in ns per call:

* a synchronous 64-byte host-to-device copy: ``acl.rt.memcpy`` /
  ``DeviceBuffer.copy_from`` / ``aclrtMemcpy`` through ctypes;
* a synchronize of an idle stream: ``acl.rt.synchronize_stream`` /
  ``Stream.synchronize`` / ``aclrtSynchronizeStream``;
* a call with an out-parameter: ``acl.rt.get_context`` / (none in the runtime
  layer) / ``aclrtGetCurrentContext``.

The ctypes loop is the floor to beat (every argument typed with argtypes).
Ratios are printed; nothing is asserted.  Results: benchmarks/RESULTS.md.
"""

import argparse
import ctypes
import os
import sys
import time

import numpy as np

os.environ.setdefault("ASCEND_ENGINE_BACKEND", "sim")

import ascend_engine as ae  # noqa: E402
import ascend_engine.acl as acl  # noqa: E402

ACL_MEMCPY_HOST_TO_DEVICE = 1


def per_call_ns(fn, calls):
    t0 = time.thread_time_ns()
    fn(calls)
    return (time.thread_time_ns() - t0) / calls


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ctx, ret = acl.rt.create_context(0)
    stream, ret = acl.rt.create_stream()
    dev, ret = acl.rt.malloc(64, 0)
    host = np.arange(16, dtype=np.float32)
    hptr = acl.util.numpy_to_ptr(host)

    lib = ctypes.CDLL(acl._pyacl.loaded_library())
    lib.aclrtMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_int]
    lib.aclrtSynchronizeStream.argtypes = [ctypes.c_void_p]
    lib.aclrtGetCurrentContext.argtypes = [ctypes.c_void_p]
    out = ctypes.c_void_p()

    device = ae.Device(0)
    rt_stream = ae.Stream(device)
    rt_buf = ae.DeviceBuffer(device, 64)
    acl.rt.set_context(ctx)

    def module_memcpy(n):
        memcpy = acl.rt.memcpy
        for _ in range(n):
            memcpy(dev, 64, hptr, 64, ACL_MEMCPY_HOST_TO_DEVICE)

    def runtime_memcpy(n):
        copy = rt_buf.copy_from
        for _ in range(n):
            copy(host)

    def ctypes_memcpy(n):
        memcpy = lib.aclrtMemcpy
        for _ in range(n):
            memcpy(dev, 64, hptr, 64, ACL_MEMCPY_HOST_TO_DEVICE)

    def module_sync(n):
        sync = acl.rt.synchronize_stream
        for _ in range(n):
            sync(stream)

    def runtime_sync(n):
        sync = rt_stream.synchronize
        for _ in range(n):
            sync()

    def ctypes_sync(n):
        sync = lib.aclrtSynchronizeStream
        for _ in range(n):
            sync(stream)

    def module_out(n):
        get = acl.rt.get_context
        for _ in range(n):
            get()

    def ctypes_out(n):
        get, ref = lib.aclrtGetCurrentContext, ctypes.byref(out)
        for _ in range(n):
            get(ref)

    cases = {
        "memcpy 64 B H2D": (module_memcpy, runtime_memcpy, ctypes_memcpy),
        "synchronize idle stream": (module_sync, runtime_sync, ctypes_sync),
        "get_context (out-param)": (module_out, None, ctypes_out),
    }
    best = {k: [float("inf")] * 3 for k in cases}
    for _ in range(args.rounds):
        for name, fns in cases.items():
            for i, fn in enumerate(fns):
                if fn is not None:
                    acl.rt.set_context(ctx)
                    best[name][i] = min(best[name][i], per_call_ns(fn, args.calls))
    print(f"{'call':26} {'acl module':>11} {'runtime':>9} {'ctypes':>8}   module/ctypes  module/runtime")
    for name, (m, r, c) in best.items():
        rt = f"{r:9.0f}" if r != float("inf") else f"{'-':>9}"
        ratio_rt = f"{m / r:14.2f}" if r != float("inf") else f"{'-':>14}"
        print(f"{name:26} {m:11.0f} {rt} {c:8.0f}   {m / c:13.2f}  {ratio_rt}")
    rt_buf.close()
    rt_stream.close()
    device.close()
    acl.rt.free(dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
