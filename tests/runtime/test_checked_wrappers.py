"""The generated AscendCL wrappers (ascend_engine/_acl_checked.pxi, see ascend_engine/_runtime.pxd).

An optional function the loaded library lacks raises one BackendError naming
it, whether it is called through its checked_ wrapper (with the GIL, or
inside ``with nogil:``) or announced by its require_ wrapper; an optional
function with a fallback still falls back.  A library lacking a function is
made here by clearing its slot of the loader's table in a child process.
"""

from helpers import simlib

# Prints one line per case: the exception class and message, or "ok".
CHILD = """
import ctypes
import os

import ascend_engine as ae
from ascend_engine import _runtime
from helpers import repo_tools

GEN = repo_tools.load("gen_acl_pxd")
with open(os.path.join(repo_tools.REPO, GEN.HEADER)) as f:
    NAMES = [fn.name for fn in GEN.parse(f.read())]

ae_api = ctypes.CDLL(_runtime.__file__).ae_api
ae_api.restype = ctypes.c_void_p


def drop(name):
    # The table is one function pointer per acl_functions.h entry, in order.
    slot = ae_api() + NAMES.index(name) * ctypes.sizeof(ctypes.c_void_p)
    ctypes.c_void_p.from_address(slot).value = None


def case(call):
    try:
        call()
        print("ok")
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")


print(ae.backend().library)
dev = ae.Device(0)
stream = ae.Stream(dev)
event = ae.Event(dev)
event.record(stream)
for name in ["aclrtStreamQuery", "aclrtSynchronizeStreamWithTimeout", "aclrtSynchronizeEventWithTimeout",
             "aclrtDeviceCanAccessPeer", "aclmdlQuerySize", "aclrtCreateEventWithFlag"]:
    drop(name)
case(stream.query)                                     # checked_, GIL held
case(lambda: stream.synchronize(timeout=5))            # checked_, inside with nogil
case(lambda: event.synchronize(timeout=5))
case(lambda: dev.can_access_peer(1))
case(lambda: ae.Model.query_size("no-such-model.om"))  # require_, before the file is read
case(stream.synchronize)                               # the required, unbounded wait still works
case(lambda: ae.Event(dev).close())                    # falls back to aclrtCreateEvent
"""


def test_a_missing_optional_function_raises_one_error_naming_it():
    proc = simlib.run_python(CHILD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    library, *lines = proc.stdout.splitlines()

    def missing(name):
        return (f"BackendError: AscendCL function {name} is not exported by {library} (backend 'sim'); "
                "this feature needs a CANN version (or simulator build) that provides it")

    assert lines == [
        missing("aclrtStreamQuery"),
        missing("aclrtSynchronizeStreamWithTimeout"),
        missing("aclrtSynchronizeEventWithTimeout"),
        missing("aclrtDeviceCanAccessPeer"),
        missing("aclmdlQuerySize"),
        "ok",
        "ok",
    ]
