"""Devices and contexts: the current context is per thread."""

import ctypes
import threading

from simrt_util import run_child

NO_CONTEXT_MSG = (
    "aclrtCreateStream: this thread has no current context; call aclrtSetDevice or "
    "aclrtSetCurrentContext on this thread first (the current context is per thread)"
)


def in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the test thread
            out["error"] = exc

    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    assert not t.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_device_queries(sim, lib):
    n = ctypes.c_uint32()
    sim.ok(lib.aclrtGetDeviceCount(ctypes.byref(n)))
    assert n.value == 8
    d = ctypes.c_int32(-1)
    sim.ok(lib.aclrtGetDevice(ctypes.byref(d)))
    assert d.value == 0
    mode = ctypes.c_int(-1)
    sim.ok(lib.aclrtGetRunMode(ctypes.byref(mode)))
    assert mode.value == 1  # ACL_HOST
    assert lib.aclrtGetSocName() == b"Ascend910B-sim"
    assert lib.aclrtGetDeviceCount(None) == 100000
    assert sim.err() == "aclrtGetDeviceCount: count is NULL; pass the address of a uint32_t"


def test_bad_device_id(sim, lib):
    assert lib.aclrtSetDevice(8) == 107001
    assert sim.err() == (
        "aclrtSetDevice: deviceId 8 is out of range: the simulator has 8 device(s), ids 0..7 (ASCEND_SIM_DEVICE_COUNT)"  # noqa: E501
    )
    assert lib.aclrtSetDevice(-1) == 107001
    ctx = ctypes.c_void_p()
    assert lib.aclrtCreateContext(ctypes.byref(ctx), 99) == 107001


def test_thread_without_context_gets_107002(sim, lib):
    def probe():
        s = ctypes.c_void_p()
        rc = lib.aclrtCreateStream(ctypes.byref(s))
        d = ctypes.c_int32()
        rc2 = lib.aclrtGetDevice(ctypes.byref(d))
        return rc, sim.err(), rc2

    rc, msg, rc2 = in_thread(probe)
    assert rc == 107002
    assert msg.replace("aclrtGetDevice", "aclrtCreateStream") == NO_CONTEXT_MSG
    assert rc2 == 107002
    # the main thread still has its context: per-thread state
    s = sim.stream()
    sim.ok(lib.aclrtDestroyStream(s))


def test_context_can_be_shared_with_another_thread(sim, lib):
    ctx = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(ctx)))

    def worker():
        assert lib.aclrtSetCurrentContext(ctx) == 0, sim.err()
        got = ctypes.c_void_p()
        assert lib.aclrtGetCurrentContext(ctypes.byref(got)) == 0
        d = ctypes.c_int32(-1)
        assert lib.aclrtGetDevice(ctypes.byref(d)) == 0
        return got.value, d.value

    assert in_thread(worker) == (ctx.value, 0)


def test_explicit_context_lifecycle(sim, lib):
    main = ctypes.c_void_p()
    sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(main)))
    ctx = ctypes.c_void_p()
    sim.ok(lib.aclrtCreateContext(ctypes.byref(ctx), 1))
    try:
        cur = ctypes.c_void_p()
        sim.ok(lib.aclrtGetCurrentContext(ctypes.byref(cur)))
        assert cur.value == ctx.value  # a new context becomes current
        d = ctypes.c_int32()
        sim.ok(lib.aclrtGetDevice(ctypes.byref(d)))
        assert d.value == 1
        s = sim.stream()  # a stream of device 1
        sim.ok(lib.aclrtSetCurrentContext(main))
        assert lib.aclrtSynchronizeStream(s) == 107003
        assert "belongs to device 1 but this thread's current context is on device 0" in sim.err()
        # default contexts cannot be destroyed (CANN 9.1: 107002, "primary context")
        assert lib.aclrtDestroyContext(main) == 107002
        assert "is the default context of device 0, created by aclrtSetDevice" in sim.err()
    finally:
        sim.ok(lib.aclrtDestroyContext(ctx))  # also destroys its stream
    assert lib.aclrtDestroyContext(ctx) == 107002  # CANN 9.1
    assert "is not a live context" in sim.err()
    assert lib.aclrtSetCurrentContext(ctx) == 107000  # CANN 9.1
    assert lib.aclrtSetCurrentContext(None) == 100000


def test_destroyed_context_leaves_threads_without_one():
    run_child(
        """
        assert lib.aclInit(None) == 0
        ctx = ctypes.c_void_p(); s = ctypes.c_void_p()
        assert lib.aclrtCreateContext(ctypes.byref(ctx), 0) == 0
        assert lib.aclrtDestroyContext(ctx) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 107002, err()
        # reset: reference counted; the last reset drops the default context
        assert lib.aclrtSetDevice(1) == 0 and lib.aclrtSetDevice(1) == 0
        assert lib.aclrtResetDevice(1) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0, err()
        assert lib.aclrtResetDevice(1) == 0  # waits for the queue, destroys the stream too
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 107002
        assert lib.aclrtDestroyStream(s) == 107002
        assert lib.aclrtResetDevice(1) == 507007, err()  # CANN 9.1: ACL_ERROR_RT_CONTEXT_RELEASE_ERROR
        assert "device 1 is not set" in err(), err()
        assert lib.aclFinalize() == 0
        """
    )


def test_saturation_mode_needs_no_context():
    """aclrtSetDeviceSatMode right after aclInit, before any aclrtSetDevice, as benchmark tools
    call it.  Since CANN 8.0 the documentation says it sets the mode of the current Device
    (no context mentioned); without a current context it sets the process default that each
    device reports until it is given its own."""
    run_child(
        """
        import threading
        SAT, INFNAN = 0, 1
        mode = ctypes.c_int(-1)
        assert lib.aclInit(None) == 0, err()
        assert lib.aclrtSetDeviceSatMode(SAT) == 0, err()
        assert lib.aclrtGetDeviceSatMode(ctypes.byref(mode)) == 0 and mode.value == SAT, err()
        assert lib.aclrtSetDeviceSatMode(7) == 100000
        assert err() == ("aclrtSetDeviceSatMode: mode 7: expected ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                         "ACL_RT_OVERFLOW_MODE_INFNAN (1)"), err()
        assert lib.aclrtSetDevice(0) == 0, err()
        assert lib.aclrtGetDeviceSatMode(ctypes.byref(mode)) == 0 and mode.value == SAT  # inherited
        assert lib.aclrtSetDeviceSatMode(INFNAN) == 0, err()   # device 0 only
        assert lib.aclrtGetDeviceSatMode(ctypes.byref(mode)) == 0 and mode.value == INFNAN
        assert lib.aclrtSetDevice(1) == 0, err()
        assert lib.aclrtGetDeviceSatMode(ctypes.byref(mode)) == 0 and mode.value == SAT
        seen = []
        t = threading.Thread(target=lambda: seen.append(
            (lib.aclrtGetDeviceSatMode(ctypes.byref(mode)), mode.value)))
        t.start(); t.join()
        assert seen == [(0, SAT)], seen   # a thread without a context reads the process default
        assert lib.aclrtGetDeviceSatMode(None) == 100000 and err() == "aclrtGetDeviceSatMode: mode is NULL"
        """
    )
