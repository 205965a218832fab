"""The simulator pins the memory of a model execution when it is enqueued, not
when it starts (docs/simulator.md, "Memory"): an input buffer freed while the
execution still waits behind a blocking host callback leaves the table at
once, keeps its bytes reserved, and the execution fails on the device with
ACL_ERROR_RT_MODEL_EXECUTE naming the freed buffer, without touching memory.

Run in a child process: a simulator that got this wrong would run the model
on freed memory, which must not take the test process down with it."""

import os

from simrt_util import STREAM_WITH_REPORTER, run_child

FREE_WHILE_QUEUED = """
import threading
import numpy as np
from ascend_engine import sim
from helpers.mdl import Buffers, load_bytes
""" + STREAM_WITH_REPORTER + """
gate = threading.Event()
HOLD = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: gate.wait(60))

def mem_free():
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0, err()
    return free.value

g = sim.Graph("pinned")
g.output("y", g.matmul(g.input("x", "float32", (64, 64)), g.const(np.eye(64, dtype=np.float32))))
model = load_bytes(lib, g.to_bytes())
bufs = Buffers(model)
x_ptr, y_ptr = bufs.in_ptrs[0], bufs.out_ptrs[0]
bufs.feed({"x": np.ones((64, 64), np.float32)})
N = 64 * 64 * 4
try:
    assert lib.aclrtLaunchCallback(HOLD, None, 1, s) == 0, err()     # BLOCK: the stream waits here
    assert lib.aclmdlExecuteAsync(model.id, bufs.input, bufs.output, s) == 0, err()
    before = mem_free()
    assert lib.aclrtFree(x_ptr) == 0, err()          # at once: nothing waits for the held stream
    bufs.ptrs.remove(x_ptr)
    assert lib.aclrtFree(x_ptr) == 107000  # CANN 9.1: the driver refuses it, the runtime answers 107000
    assert err() == f"aclrtFree: devPtr 0x{x_ptr:x} was already freed", err()
    assert mem_free() - before == (N + 31) // 32 * 32 + 32, "the freed capacity is returned at once"
    # the freed address is not handed out again while the queued execution pins it
    fresh = []
    for _ in range(64):
        p = ctypes.c_void_p(); assert lib.aclrtMalloc(ctypes.byref(p), N, 0) == 0, err()
        fresh.append(p.value)
    assert x_ptr not in fresh, "a freed input address was reused under a queued execution"
finally:
    gate.set()
rc = lib.aclrtSynchronizeStream(s)
msg = err()
assert rc == 507011, (rc, msg)
assert msg.startswith("aclrtSynchronizeStream: "), msg
expected = (f"aclmdlExecuteAsync: model {model.id}: the buffer of input 0 ('x'), allocation 0x{x_ptr:x}, "
            "was freed while the execution was queued")
assert expected in msg, msg
# the failed execution touched nothing: the output is still new memory's junk
out = (ctypes.c_uint8 * N)()
assert lib.aclrtMemcpy(out, N, y_ptr, N, 2) == 0, err()
assert bytes(out) == b"\\xef\\xbe\\xad\\xff" * (N // 4), "the execution wrote its output"
assert lib.aclrtSynchronizeStream(s) == 0, err()     # reported once, then cleared
for p in fresh:
    assert lib.aclrtFree(p) == 0, err()
bufs.close()
model.close()
assert lib.aclrtUnSubscribeReport(rep.tid, s) == 0, err()
rep.close()
print("OK")
"""


def test_an_input_freed_while_its_execution_is_queued_fails_the_execution():
    here = os.path.dirname(os.path.abspath(__file__))
    proc = run_child(f"sys.path.insert(0, {here!r})\n" + FREE_WHILE_QUEUED)
    assert proc.stdout.strip().endswith("OK")
