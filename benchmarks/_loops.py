"""The hand-written loops the engine's host cost is measured against.

Both issue, per request, the AscendCL calls described in
benchmarks/native/chain_loop.c (a chain of models, one stream each, a
copy-in and a copy-out stream, ``depth`` slots):

* :func:`build_c_loop` / :func:`run_c_loop`: that C file, compiled for the
  benchmark against our acl.h and the simulator;
* :class:`CtypesChain`: the same calls from Python through ctypes (how
  pyACL-style scripts drive the NPU).

``ring_wait`` picks how a busy slot is waited for: False, on the slot's
previous request (``depth`` requests ago) before every request; True, the
engine's way (see aex_make_room in ascend_engine/csrc/complete.c).
"""

import ctypes
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from helpers import simlib  # noqa: E402

DYNAMIC_TENSOR = b"ascend_mbatch_shape_data"


def compile_loop(folder, name):
    """Compile native/NAME.c against the simulator into ``folder``; returns the library's path."""
    out = os.path.join(str(folder), f"{name}.so")
    libdir = os.path.dirname(simlib.library_path())
    subprocess.run(
        ["gcc", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-I", os.path.join(REPO, "include"),
         os.path.join(HERE, "native", f"{name}.c"), "-o", out,
         f"-L{libdir}", "-lascendcl_sim", f"-Wl,-rpath,{libdir}"],
        check=True,
    )
    return out


def build_c_loop(folder):
    """Compile native/chain_loop.c into ``folder`` and load it."""
    compile_loop(folder, "chain_loop")
    return load_c_loop(folder)


def load_c_loop(folder):
    """The C loop build_c_loop compiled into ``folder``."""
    lib = ctypes.CDLL(os.path.join(str(folder), "chain_loop.so"))
    lib.chain_loop.restype = ctypes.c_longlong
    lib.chain_loop.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return lib


def run_c_loop(lib, paths, depth, n, batch, ring_wait=False):
    """Thread CPU seconds per request of the C loop over ``n`` requests."""
    arr = (ctypes.c_char_p * len(paths))(*[p.encode() for p in paths])
    ns = lib.chain_loop(arr, len(paths), depth, n, batch, int(ring_wait))
    assert ns >= 0, "chain_loop failed (its message is on stderr)"
    return ns / 1e9 / n


def build_sync_loop(folder):
    """Compile native/sync_loop.c (one model, synchronous H2D / aclmdlExecute / D2H) into ``folder``
    and load it."""
    lib = ctypes.CDLL(compile_loop(folder, "sync_loop"))
    lib.sync_loop.restype = ctypes.c_longlong
    lib.sync_loop.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return lib


def run_sync_loop(lib, path, n):
    """Process CPU seconds per request (every thread) of the synchronous C loop over ``n`` requests."""
    ns = lib.sync_loop(path.encode(), n)
    assert ns >= 0, "sync_loop failed (its message is on stderr)"
    return ns / 1e9 / n


class CtypesChain:
    """The C loop's calls, issued from Python through ctypes."""

    def __init__(self, paths, depth, batch, in_row_bytes, out_row_bytes, ring_wait=False):
        L = self.lib = simlib.load()
        self.depth, self.batch, self.ring_wait = depth, batch, ring_wait
        self.ids, self.descs, self.dyn = [], [], []
        for p in paths:
            mid = ctypes.c_uint32()
            assert L.aclmdlLoadFromFile(p.encode(), ctypes.byref(mid)) == 0
            d = L.aclmdlCreateDesc()
            assert L.aclmdlGetDesc(d, mid.value) == 0
            idx = ctypes.c_size_t()
            has_gears = L.aclmdlGetInputIndexByName(d, DYNAMIC_TENSOR, ctypes.byref(idx)) == 0
            self.ids.append(mid.value)
            self.descs.append(d)
            self.dyn.append(idx.value if has_gears else None)
        self.copy_in, self.copy_out = self._stream(), self._stream()
        self.streams = [self._stream() for _ in self.ids]
        self.in_bytes, self.out_bytes = in_row_bytes * batch, out_row_bytes * batch
        self.slots = [self._slot() for _ in range(depth)]
        self.user_in = np.zeros(self.in_bytes, np.uint8)
        self.user_out = np.zeros(self.out_bytes, np.uint8)

    def _stream(self):
        s = ctypes.c_void_p()
        assert self.lib.aclrtCreateStream(ctypes.byref(s)) == 0
        return s.value

    def _malloc(self, n):
        p = ctypes.c_void_p()
        assert self.lib.aclrtMalloc(ctypes.byref(p), n, 0) == 0
        return p.value

    def _event(self):
        e = ctypes.c_void_p()
        assert self.lib.aclrtCreateEventWithFlag(ctypes.byref(e), 1) == 0
        return e.value

    def _slot(self):
        L = self.lib
        tensors = [self._malloc(L.aclmdlGetInputSizeByIndex(self.descs[0], 0))]
        ins, outs, node_done, gears = [], [], [], []
        for m, d in enumerate(self.descs):
            tensors.append(self._malloc(L.aclmdlGetOutputSizeByIndex(d, 0)))
            i_set, o_set = L.aclmdlCreateDataset(), L.aclmdlCreateDataset()
            buffers = [(i_set, tensors[m], L.aclmdlGetInputSizeByIndex(d, 0))]
            if self.dyn[m] is not None:
                dyn_size = L.aclmdlGetInputSizeByIndex(d, self.dyn[m])
                gears.append(self._malloc(dyn_size))
                buffers.append((i_set, gears[-1], dyn_size))
            buffers.append((o_set, tensors[m + 1], L.aclmdlGetOutputSizeByIndex(d, 0)))
            for ds, ptr, size in buffers:
                assert L.aclmdlAddDatasetBuffer(ds, L.aclCreateDataBuffer(ptr, size)) == 0
            ins.append(i_set)
            outs.append(o_set)
            node_done.append(self._event())
        host_in, host_out = ctypes.c_void_p(), ctypes.c_void_p()
        assert L.aclrtMallocHost(ctypes.byref(host_in), self.in_bytes) == 0
        assert L.aclrtMallocHost(ctypes.byref(host_out), self.out_bytes) == 0
        return dict(t=tensors, gears=gears, ins=ins, outs=outs, node_done=node_done, ready=self._event(),
                    done=self._event(), host_in=host_in.value, host_out=host_out.value, busy=False)

    def close(self):
        """Release every object the chain made (the simulator has a limit of events per device)."""
        L = self.lib
        for s in self.slots:
            for ds in s["ins"] + s["outs"]:
                for b in range(L.aclmdlGetDatasetNumBuffers(ds)):
                    L.aclDestroyDataBuffer(L.aclmdlGetDatasetBuffer(ds, b))
                L.aclmdlDestroyDataset(ds)
            for ev in s["node_done"] + [s["ready"], s["done"]]:
                L.aclrtDestroyEvent(ev)
            for ptr in s["t"] + s["gears"]:
                L.aclrtFree(ptr)
            L.aclrtFreeHost(s["host_in"])
            L.aclrtFreeHost(s["host_out"])
        for st in self.streams + [self.copy_in, self.copy_out]:
            L.aclrtDestroyStream(st)
        for mid, d in zip(self.ids, self.descs, strict=True):
            L.aclmdlDestroyDesc(d)
            L.aclmdlUnload(mid)
        self.slots = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, n):
        """Thread CPU seconds per request for n requests."""
        L, depth, slots = self.lib, self.depth, self.slots
        memmove = ctypes.memmove
        user_in, user_out = self.user_in.ctypes.data, self.user_out.ctypes.data
        in_bytes, out_bytes, batch = self.in_bytes, self.out_bytes, self.batch
        chain = list(zip(self.ids, self.streams, self.dyn, range(len(self.ids)), strict=True))

        def deliver(s):
            assert L.aclrtSynchronizeEvent(s["done"]) == 0
            memmove(user_out, s["host_out"], out_bytes)
            s["busy"] = False

        start = time.thread_time()
        for r in range(n):
            s = slots[r % depth]
            if s["busy"] and self.ring_wait:
                ahead = max(depth // 2 - 1, 0)
                assert L.aclrtSynchronizeEvent(slots[(r + ahead) % depth]["done"]) == 0
                for k in range(ahead + 1):
                    deliver(slots[(r + k) % depth])
            elif s["busy"]:
                deliver(s)
            memmove(s["host_in"], user_in, in_bytes)
            assert L.aclrtMemcpyAsync(s["t"][0], in_bytes, s["host_in"], in_bytes, 1, self.copy_in) == 0
            assert L.aclrtRecordEvent(s["ready"], self.copy_in) == 0
            for mid, st, dyn, m in chain:
                assert L.aclrtStreamWaitEvent(st, s["ready"] if m == 0 else s["node_done"][m - 1]) == 0
                if dyn is not None:
                    assert L.aclmdlSetDynamicBatchSize(mid, s["ins"][m], dyn, batch) == 0
                assert L.aclmdlExecuteAsync(mid, s["ins"][m], s["outs"][m], st) == 0
                assert L.aclrtRecordEvent(s["node_done"][m], st) == 0
            assert L.aclrtStreamWaitEvent(self.copy_out, s["node_done"][-1]) == 0
            assert L.aclrtMemcpyAsync(s["host_out"], out_bytes, s["t"][-1], out_bytes, 2, self.copy_out) == 0
            assert L.aclrtRecordEvent(s["done"], self.copy_out) == 0
            s["busy"] = True
        for k in range(depth):
            s = slots[(n + k) % depth]
            if s["busy"]:
                deliver(s)
        return (time.thread_time() - start) / n
