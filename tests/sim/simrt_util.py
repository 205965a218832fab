"""Shared helpers for the simulator runtime tests (ctypes over helpers.simlib)."""

import ctypes
import textwrap
import threading

from helpers import simlib

ACL_SUCCESS = 0
ACL_ERROR_REPEAT_INITIALIZE = 100002
H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Sim:
    """Thin helpers over the ctypes library: every call checks its code."""

    def __init__(self, lib):
        self.lib = lib
        lib.aeSimSetFaults.argtypes = [ctypes.c_char_p]
        lib.aeSimSetFaults.restype = ctypes.c_int

    def err(self):
        return simlib.recent_error(self.lib)

    def ok(self, rc):
        assert rc == ACL_SUCCESS, f"code {rc}: {self.err()}"

    def stream(self):
        s = ctypes.c_void_p()
        self.ok(self.lib.aclrtCreateStream(ctypes.byref(s)))
        return s

    def event(self, flag=None):
        e = ctypes.c_void_p()
        if flag is None:
            self.ok(self.lib.aclrtCreateEvent(ctypes.byref(e)))
        else:
            self.ok(self.lib.aclrtCreateEventWithFlag(ctypes.byref(e), flag))
        return e

    def malloc(self, size, policy=0):
        p = ctypes.c_void_p()
        self.ok(self.lib.aclrtMalloc(ctypes.byref(p), size, policy))
        return p.value

    def malloc_host(self, size):
        p = ctypes.c_void_p()
        self.ok(self.lib.aclrtMallocHost(ctypes.byref(p), size))
        return p.value

    def mem_info(self, attr=1):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.ok(self.lib.aclrtGetMemInfo(attr, ctypes.byref(free), ctypes.byref(total)))
        return free.value, total.value

    def read(self, dev_ptr, n):
        buf = (ctypes.c_uint8 * n)()
        self.ok(self.lib.aclrtMemcpy(buf, n, dev_ptr, n, D2H))
        return bytes(buf)

    def write(self, dev_ptr, data):
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        self.ok(self.lib.aclrtMemcpy(dev_ptr, len(data), buf, len(data), H2D))

    def faults(self, spec):
        rc = self.lib.aeSimSetFaults(spec.encode() if spec is not None else None)
        self.ok(rc)


def run_child(code, env=None, timeout=60):
    """Run a snippet in a fresh process; fail with its output if it fails."""
    prelude = (
        "import ctypes, sys\n"
        "from helpers import simlib\n"
        "lib = simlib.load()\n"
        "err = lambda: simlib.recent_error(lib)\n"
        "lib.aeSimSetFaults.argtypes = [ctypes.c_char_p]\n"
    )
    proc = simlib.run_python(prelude + textwrap.dedent(code), env=env, timeout=timeout)
    assert proc.returncode == 0, f"child failed:\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


# For run_child snippets: AscendCL up on device 0, a stream `s`, and a report thread `rep`
# subscribed to it (the asynchronous sample pattern, for aclrtLaunchCallback).
STREAM_WITH_REPORTER = """
from simrt_util import Reporter
assert lib.aclInit(None) == 0, err()
assert lib.aclrtSetDevice(0) == 0, err()
s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0, err()
rep = Reporter(lib)
assert lib.aclrtSubscribeReport(rep.tid, s) == 0, err()
"""


def stress_iterations():
    """The suite-wide stress multiplier, tests/conftest.py:stress_scale()."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py")
    spec = importlib.util.spec_from_file_location("_ae_root_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.stress_scale()


class Reporter:
    """A thread looping on aclrtProcessReport, as the Ascend samples do."""

    def __init__(self, lib):
        self.lib = lib
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.codes = []
        self.thread = threading.Thread(target=self._run, daemon=True)  # a failing test must not hang
        self.thread.start()
        self.ready.wait(10)

    def _run(self):
        self.tid = threading.get_ident()  # pthread_self() on Linux
        self.ready.set()
        while not self.stop.is_set():
            rc = self.lib.aclrtProcessReport(20)
            self.codes.append(rc)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()
