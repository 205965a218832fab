"""aclInit / aclFinalize, configuration from the environment (child processes)."""

from simrt_util import run_child


def test_repeat_init_and_finalize_codes():
    """CANN 9.1: no init gate on the runtime, aclFinalize without aclInit runs, a repeated
    aclInit counts a reference (docs/simulator.md, "Fidelity to CANN 9.1")."""
    run_child(
        """
        assert lib.aclrtSetDevice(0) == 0, err()       # the runtime starts on first use
        assert lib.aclrtGetSocName() == b"Ascend910B-sim"
        assert lib.aclInit(None) == 0, err()           # and aclInit keeps it
        assert lib.aclInit(None) == 100002
        assert err().startswith("aclInit: AscendCL is already initialized in this process (2 aclInit"), err()
        assert lib.aclInit(b"") == 100002
        assert lib.aclFinalize() == 0                   # ignores the count
        assert lib.aclFinalize() == 100037
        assert err() == "aclFinalize: AscendCL was already finalized"
        assert lib.aclrtSetDevice(0) == 0, err()       # the runtime starts again
        assert lib.aclInit(None) == 0
        assert lib.aclrtSetDevice(0) == 0
        assert lib.aclFinalize() == 0
        """
    )


def test_finalize_releases_everything_and_reinit_is_clean():
    run_child(
        """
        assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
        p = ctypes.c_void_p(); s = ctypes.c_void_p(); e = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), 1000, 0) == 0
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 0
        assert lib.aclrtCreateEvent(ctypes.byref(e)) == 0
        assert lib.aclrtMemsetAsync(p, 1000, 1, 1000, s) == 0
        assert lib.aclFinalize() == 0
        assert lib.aclInit(None) == 0
        # the old thread-local context is gone with the old runtime
        assert lib.aclrtCreateStream(ctypes.byref(s)) == 107002, err()
        assert lib.aclrtSetDevice(0) == 0
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
        assert free.value == total.value == 8 << 30
        assert lib.aclrtFree(p) == 107000 and "was not allocated by aclrtMalloc" in err(), err()
        assert lib.aclrtDestroyEvent(e) == 107017, err()
        assert lib.aclFinalize() == 0
        """
    )


def test_config_file(tmp_path):
    good = tmp_path / "acl.json"
    good.write_text('{"dump": {"dump_list": [], "mode": "off", "n": -1.5e3, "ok": true}}')
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    trailing = tmp_path / "trailing.json"
    trailing.write_text("{} x")
    missing = tmp_path / "missing.json"
    run_child(
        f"""
        assert lib.aclInit({str(missing)!r}.encode()) == 100003
        assert err().startswith("aclInit: configPath '{missing}' cannot be opened"), err()
        assert lib.aclInit({str(bad)!r}.encode()) == 100006
        assert "does not hold a JSON object" in err(), err()
        assert lib.aclInit({str(trailing)!r}.encode()) == 100006
        assert "parse error near byte 3" in err(), err()
        assert lib.aclInit({str(good)!r}.encode()) == 0, err()
        assert lib.aclFinalize() == 0
        """
    )


def test_environment_configuration():
    run_child(
        """
        assert lib.aclInit(None) == 0, err()
        n = ctypes.c_uint32()
        assert lib.aclrtGetDeviceCount(ctypes.byref(n)) == 0 and n.value == 3
        assert lib.aclrtSetDevice(2) == 0
        assert lib.aclrtSetDevice(3) == 107001
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
        assert total.value == 64 * 1024 * 1024
        assert lib.aclFinalize() == 0
        """,
        env={"ASCEND_SIM_DEVICE_COUNT": "3", "ASCEND_SIM_DEVICE_MEMORY": "64MiB"},
    )


def test_memory_size_suffixes():
    cases = {"512MB": 512_000_000, "8GiB": 8 << 30, "1048576": 1 << 20, "2K": 2048, "1.5GB": 1_500_000_000}
    code = "\n".join(
        f"""
os.environ["ASCEND_SIM_DEVICE_MEMORY"] = {value!r}
assert lib.aclInit(None) == 0, err()
assert lib.aclrtSetDevice(0) == 0
assert lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)) == 0
assert total.value == {expected}, ({value!r}, total.value)
assert lib.aclFinalize() == 0
"""
        for value, expected in cases.items()
    )
    run_child("import os\nfree, total = ctypes.c_size_t(), ctypes.c_size_t()\n" + code)


def test_malformed_environment_fails_init():
    bad = {
        "ASCEND_SIM_DEVICE_COUNT": ("zero", "an integer in 1..1024"),
        "ASCEND_SIM_DEVICE_MEMORY": ("12 parsecs", "a positive size"),
        "ASCEND_SIM_MAX_STREAMS": ("-4", "an integer in 1..1000000"),
        "ASCEND_SIM_MAX_EVENTS": ("1e3", "an integer in 1..1000000"),
        "ASCEND_SIM_H2D_GBPS": ("fast", "a bandwidth in GB/s"),
        "ASCEND_SIM_D2H_GBPS": ("-1", "a bandwidth in GB/s"),
        "ASCEND_SIM_D2D_GBPS": ("1 GB/s", "a bandwidth in GB/s"),
    }
    for name, (value, expected) in bad.items():
        run_child(
            f"""
            assert lib.aclInit(None) == 100000
            prefix = "aclInit: environment variable {name}='{value}' is invalid: expected "
            assert err().startswith(prefix), err()
            assert {expected!r} in err(), err()
            # the runtime's own start (any aclrt* call) reads the same settings
            assert lib.aclrtSetDevice(0) == 100000
            assert err().startswith("aclrtSetDevice: environment variable {name}='{value}' is invalid"), err()
            """,
            env={name: value},
        )


def test_bad_faults_environment_fails_init():
    run_child(
        """
        assert lib.aclInit(None) == 100000
        assert err().startswith("aclInit: ASCEND_SIM_FAULTS='aclrtMalloc@0=1' is invalid: "), err()
        assert "must be an integer >= 1, got '0'" in err()
        """,
        env={"ASCEND_SIM_FAULTS": "aclrtMalloc@0=1"},
    )
