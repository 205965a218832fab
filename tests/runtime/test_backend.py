"""Backend selection, backend() and devices() through the public API."""

import os

from helpers import simlib

import ascend_engine as ae


def test_backend_is_simulator():
    info = ae.backend()
    assert isinstance(info, ae.BackendInfo)
    assert info.name == "sim"
    assert info.library.endswith("libascendcl_sim.so")
    assert os.path.isfile(info.library)


def test_devices_on_simulator():
    devs = ae.devices()
    assert len(devs) == ae.device_count() >= 1
    for i, d in enumerate(devs):
        assert isinstance(d, ae.DeviceInfo)
        assert d.id == i
        assert d.soc and "sim" in d.soc.lower()
        assert d.memory_total > 0
        assert 0 <= d.memory_free <= d.memory_total


def test_device_count_and_memory_from_environment():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        devs = ae.devices()
        print(len(devs), devs[0].memory_total)
        """,
        env={"ASCEND_SIM_DEVICE_COUNT": "3", "ASCEND_SIM_DEVICE_MEMORY": "64MiB"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", str(64 << 20)]


def test_devices_restores_current_context(dev):
    ctx = ae.Context(dev)
    ctx.make_current()
    ae.devices()
    lib = simlib.load()
    import ctypes

    cur = ctypes.c_void_p()
    assert lib.aclrtGetCurrentContext(ctypes.byref(cur)) == 0
    assert cur.value == ctx.handle


def test_acl_backend_missing_lists_every_path_searched():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        try:
            ae.backend()
        except ae.BackendError as exc:
            print(exc)
        else:
            print("NO ERROR")
        """,
        env={
            "ASCEND_ENGINE_BACKEND": "acl",
            "ASCEND_HOME_PATH": "/nonexistent/home-path",
            "ASCEND_TOOLKIT_HOME": "/nonexistent/toolkit-home",
            "LD_LIBRARY_PATH": "/nonexistent/ldpath-a:/nonexistent/ldpath-b",
        },
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "NO ERROR" not in out
    for path in [
        "/nonexistent/home-path/lib64/libascendcl.so",
        "/nonexistent/home-path/runtime/lib64/libascendcl.so",
        "/nonexistent/toolkit-home/lib64/libascendcl.so",
        "/nonexistent/ldpath-a/libascendcl.so",
        "/nonexistent/ldpath-b/libascendcl.so",
        "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so",
        "/usr/local/Ascend/ascend-toolkit/latest/runtime/lib64/libascendcl.so",
        "/usr/local/Ascend/latest/lib64/libascendcl.so",
        "libascendcl.so (dynamic linker search)",
    ]:
        assert path in out, f"{path} missing from:\n{out}"
    assert "ASCEND_ENGINE_BACKEND=sim" in out


def test_unknown_backend_names_allowed_values():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        try:
            ae.Device(0)
        except ae.BackendError as exc:
            print(exc)
        """,
        env={"ASCEND_ENGINE_BACKEND": "cuda"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "'cuda'" in proc.stdout and "auto, acl, sim" in proc.stdout


def test_auto_falls_back_to_simulator_and_says_so_once():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        print(ae.backend().name)
        ae.devices(); ae.Device(0).close(); print(ae.backend().name)
        """,
        env={"ASCEND_ENGINE_BACKEND": "auto", "LD_LIBRARY_PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["sim", "sim"]
    assert proc.stderr.count("using the AscendCL simulator") == 1, proc.stderr
    # one line, not the whole search report
    assert len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1, proc.stderr


def test_shutdown_closes_objects_and_finalizes():
    proc = simlib.run_python(
        """
        import ascend_engine as ae
        from helpers import simlib
        dev = ae.Device(0)
        buf = ae.DeviceBuffer(dev, 1024)
        s = ae.Stream(dev)
        ae.shutdown()
        print(buf.closed, s.closed, dev.closed)
        # AscendCL is finalized: a second aclFinalize reports ACL_ERROR_REPEAT_FINALIZE
        print(simlib.load().aclFinalize())
        try:
            ae.Device(0)
        except ae.BackendError as exc:
            print("refused:", "shutdown" in str(exc))
        ae.shutdown()  # idempotent
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["True True True", "100037", "refused: True"]


def test_simulator_toolkit_copy_is_not_taken_for_real_cann(tmp_path):
    # a toolkit folder holds the simulator under CANN's library name
    import shutil

    from helpers import simlib

    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    shutil.copy(simlib.library_path(), lib64 / "libascendcl.so")
    code = """
        import ascend_engine as ae
        info = ae.backend()
        print("BACKEND", info.name, info.library.endswith("_lib/libascendcl_sim.so"))
    """
    env = {"ASCEND_HOME_PATH": str(tmp_path), "ASCEND_ENGINE_BACKEND": "auto"}
    proc = simlib.run_python(code, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "BACKEND sim True" in proc.stdout
    proc = simlib.run_python(code, env={**env, "ASCEND_ENGINE_BACKEND": "acl"})
    assert proc.returncode != 0
    assert f"{lib64 / 'libascendcl.so'}: the ascend-engine AscendCL simulator" in proc.stderr
