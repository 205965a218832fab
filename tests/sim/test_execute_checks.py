"""aclmdlExecuteAsync's buffer checks and task name, whose text the passing
path no longer formats (docs/simulator.md, "Host cost of a call"): a failing
check must still name the argument exactly as before, a failed execution must
still name its task "execute model <id>", and a model's reused execution plan
must not carry anything over from the call before it.

Run in a child process, as the other simulator tests that free memory do."""

import os

from simrt_util import run_child

CHECKS = """
import numpy as np
from ascend_engine import sim
from helpers.mdl import Buffers, load_bytes
assert lib.aclInit(None) == 0, err()
assert lib.aclrtSetDevice(0) == 0, err()
s = ctypes.c_void_p(); assert lib.aclrtCreateStream(ctypes.byref(s)) == 0, err()

g = sim.Graph("checked")
g.output("y", g.matmul(g.input("x", "float32", (4, 4)), g.const(np.eye(4, dtype=np.float32))))
blob = g.to_bytes()
models = [load_bytes(lib, blob) for _ in range(12)]
for m in models[:-1]:
    m.close()
model = models[-1]
assert model.id >= 10, model.id      # a two-digit id: the hand-written task name has to get both digits right
N = 64

def device(n):
    p = ctypes.c_void_p(); assert lib.aclrtMalloc(ctypes.byref(p), n, 0) == 0, err()
    return p.value

def dataset(*pairs):
    ds = lib.aclmdlCreateDataset()
    for ptr, size in pairs:
        assert lib.aclmdlAddDatasetBuffer(ds, lib.aclCreateDataBuffer(ptr, size)) == 0, err()
    return ds

good_x, good_y = device(N), device(N)

# an input in pinned host memory
h = ctypes.c_void_p(); assert lib.aclrtMallocHost(ctypes.byref(h), N) == 0, err()
rc = lib.aclmdlExecuteAsync(model.id, dataset((h.value, N)), dataset((good_y, N)), s)
assert rc == 100000, rc
assert err() == (f"aclmdlExecuteAsync: input 0 ('x') 0x{h.value:x} is pinned host memory from "
                 "aclrtMallocHost, not device memory"), err()

# an input already freed
freed = device(N)
assert lib.aclrtFree(freed) == 0, err()
rc = lib.aclmdlExecuteAsync(model.id, dataset((freed, N)), dataset((good_y, N)), s)
assert rc == 100000, rc
assert err() == (f"aclmdlExecuteAsync: input 0 ('x') 0x{freed:x} points into device memory that was "
                 "already freed"), err()

# an output that runs past the end of its allocation (64 bytes: 96 usable, see test_enqueue_pinning)
base = device(N)
rc = lib.aclmdlExecuteAsync(model.id, dataset((good_x, N)), dataset((base + 48, N)), s)
assert rc == 100000, rc
assert err() == (f"aclmdlExecuteAsync: output 0 ('y') 0x{base + 48:x} + 64 bytes is out of bounds by 16 "
                 f"bytes: it starts at offset 48 of a 96-byte device allocation at 0x{base:x}"), err()

# a NULL output address
rc = lib.aclmdlExecuteAsync(model.id, dataset((good_x, N)), dataset((None, N)), s)
assert rc == 100000, rc
assert err() == "aclmdlExecuteAsync: output 0 ('y') is NULL", err()

# the plans of the calls that failed above are reused: the next executions see only their own buffers
outs = []
for value in (2.0, 3.0):
    bufs = Buffers(model)
    bufs.feed({"x": np.full((4, 4), value, np.float32)})
    assert lib.aclmdlExecuteAsync(model.id, bufs.input, bufs.output, s) == 0, err()
    assert lib.aclrtSynchronizeStream(s) == 0, err()
    outs.append(bufs.fetch()["y"].copy())
    bufs.close()
assert (outs[0] == 2.0).all() and (outs[1] == 3.0).all(), outs

# a failed execution names its task
assert lib.aeSimSetFaults(b"task:execute@1=507011") == 0, err()
bufs = Buffers(model)
assert lib.aclmdlExecuteAsync(model.id, bufs.input, bufs.output, s) == 0, err()
rc = lib.aclrtSynchronizeStream(s)
msg = err()
assert rc == 507011, (rc, msg)
assert f"task 'execute model {model.id}' on stream " in msg, msg
assert lib.aeSimSetFaults(b"") == 0, err()
bufs.close()
model.close()
print("OK")
"""


def test_execute_async_check_messages_task_name_and_plan_reuse():
    here = os.path.dirname(os.path.abspath(__file__))
    proc = run_child(f"sys.path.insert(0, {here!r})\n" + CHECKS)
    assert proc.stdout.strip().endswith("OK")
