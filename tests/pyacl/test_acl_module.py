"""ascend_engine.acl itself: names and namespaces, pyACL's return conventions,
the functions that answer "not supported", argument errors that name the
function and argument, and the pointer helpers' refusals (docs/pyacl.md)."""

import ctypes
import re
import textwrap

import numpy as np
import pytest
from helpers.pyacl import run_code

import ascend_engine.acl as acl

ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_RT_PARAM_INVALID = 107000      # CANN 9.1: freeing an unknown pointer (docs/simulator.md, row 30)
ACL_ERROR_API_NOT_SUPPORT = 200001        # a function the loaded library lacks
ACL_ERROR_FEATURE_UNSUPPORTED = 200006    # a feature not simulated (video, single operators, profiling)


def test_namespaces_hold_pyacl_names():
    for ns in ("rt", "mdl", "media", "util", "op", "prof"):
        assert getattr(acl, ns).__name__ == f"ascend_engine.acl.{ns}"
    for name in ("acl.init", "acl.finalize", "acl.create_data_buffer", "acl.get_data_buffer_size_v2",
                 "acl.rt.set_context", "acl.rt.malloc_host", "acl.rt.subscribe_report",
                 "acl.rt.process_report",
                 "acl.mdl.get_dynamic_hw", "acl.mdl.set_input_dynamic_dims", "acl.util.ptr_to_bytes",
                 "acl.media.dvpp_vpc_crop_async", "acl.media.dvpp_jpeg_decode_async",
                 "acl.media.dvpp_vpc_batch_crop_async", "acl.media.dvpp_vpc_batch_crop_and_paste_async",
                 "acl.media.dvpp_vpc_batch_crop_resize_paste_async", "acl.op.execute_v2",
                 "acl.prof.start", "acl.media.vdec_send_frame"):
        assert name in acl.function_names(), name
    assert len(acl.function_names()) > 250
    # every generated function says what it calls, and the hand-written ones what they do
    assert "aclrtMalloc" in acl.rt.malloc.__doc__
    assert acl.rt.malloc.__doc__.startswith("acl.rt.malloc(size, policy) -> (dev_ptr, ret)")


def test_unsupported_functions_answer_feature_unsupported():
    names = acl.unsupported_names()
    assert {"acl.op.execute_v2", "acl.prof.init", "acl.media.vdec_create_channel",
            "acl.media.venc_send_frame"} <= set(names)
    for name in names:
        _, ns, leaf = name.split(".") if name.count(".") == 2 else ("acl", "", name.split(".")[1])
        fn = getattr(getattr(acl, ns) if ns else acl, leaf)
        params = fn.__doc__.split("(")[1].split(")")[0]
        nargs = len(params.split(",")) if params else 0
        result = fn(*([None] * nargs))
        kind = fn.__doc__.split("-> ")[1].split(":")[0]
        expected = {"ret": ACL_ERROR_FEATURE_UNSUPPORTED, "handle": 0, "value": 0}.get(
            kind, (0, ACL_ERROR_FEATURE_UNSUPPORTED))
        assert result == expected, (name, result)
    assert "acl.prof.start exists in CANN but is not simulated" in (acl.prof.start(0) and
                                                                      acl.get_recent_err_msg())


@pytest.mark.parametrize("call, error, message", [
    (lambda: acl.rt.malloc("64", 0), TypeError, "acl.rt.malloc: argument 'size' must be an int, got str"),
    (lambda: acl.rt.malloc(1.5, 0), TypeError, "acl.rt.malloc: argument 'size' must be an int, got float"),
    (lambda: acl.rt.malloc(-2, 0), OverflowError, "acl.rt.malloc: argument 'size' = -2 is out of range"),
    (lambda: acl.rt.set_device(2**31), OverflowError,
     "acl.rt.set_device: argument 'device_id' = 2147483648 is out of range (-2147483648 to 2147483647)"),
    (lambda: acl.mdl.get_desc(0, 2**32), OverflowError,
     "acl.mdl.get_desc: argument 'model_id' = 4294967296 is out of range (0 to 4294967295, or -1)"),
    (lambda: acl.rt.memcpy("p", 4, 0, 4, 1), TypeError,
     "acl.rt.memcpy: argument 'dst' must be a pointer or handle (an int), got str"),
    (lambda: acl.rt.free(-1), OverflowError, "acl.rt.free: argument 'dev_ptr' = -1 is not a pointer"),
    (lambda: acl.mdl.load_from_file(7), TypeError,
     "acl.mdl.load_from_file: argument 'model_path' must be a str"),
    (lambda: acl.mdl.load_from_file("a\0b"), ValueError, "argument 'model_path' holds a NUL character"),
    (lambda: acl.mdl.set_aipp_dtc_pixel_min(0, "x", 0, 0, 0, 0), TypeError,
     "acl.mdl.set_aipp_dtc_pixel_min: argument 'dtc_pixel_min_chn0' must be a float, got str"),
    (lambda: acl.rt.launch_callback(3, None, 1, 0), TypeError,
     "acl.rt.launch_callback: argument 'fn' must be callable, got int"),
    (lambda: acl.mdl.set_input_dynamic_dims(0, 0, 0, [1, 2]), TypeError,
     "acl.mdl.set_input_dynamic_dims: argument 'dims' must be a dict with 'dims'"),
    (lambda: acl.create_tensor_desc(0, 5, 0), TypeError,
     "acl.create_tensor_desc: argument 'dims' must be a list of ints, got int"),
    (lambda: acl.media.dvpp_vpc_batch_crop_async(0, 0, 3, 0, [], 0), TypeError,
     "acl.media.dvpp_vpc_batch_crop_async: argument 'roi_nums_list' must be a list of ints, got int"),
    (lambda: acl.media.dvpp_vpc_batch_crop_async(0, 0, [-2], 0, [], 0), OverflowError,
     "acl.media.dvpp_vpc_batch_crop_async: argument 'roi_nums_list[0]' = -2 is out of range"),
    (lambda: acl.media.dvpp_vpc_batch_crop_and_paste_async(0, 0, [1], 0, [0], ["x"], 0), TypeError,
     "acl.media.dvpp_vpc_batch_crop_and_paste_async: argument 'paste_area_list[0]' must be a pointer"),
    (lambda: acl.media.dvpp_vpc_batch_crop_resize_paste_async(0, 0, [1], 0, 5, [], 0, 0), TypeError,
     "acl.media.dvpp_vpc_batch_crop_resize_paste_async: argument 'crop_area_list' must be a list of region"),
    (lambda: acl.util.start_thread(None, []), TypeError,
     "acl.util.start_thread: argument 'fn' must be callable"),
])
def test_wrong_arguments_raise_naming_function_and_argument(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert message in str(e.value)


def test_numpy_and_bytes_pointers():
    a = np.arange(8, dtype=np.int32)
    assert acl.util.numpy_to_ptr(a) == a.ctypes.data
    with pytest.raises(TypeError, match="acl.util.numpy_to_ptr: argument 'array' must be a numpy.ndarray, "
                                        "got list"):
        acl.util.numpy_to_ptr([1, 2])
    with pytest.raises(ValueError, match="not C-contiguous"):
        acl.util.numpy_to_ptr(a[::2])
    data = b"pyACL bytes"
    p = acl.util.bytes_to_ptr(data)
    assert ctypes.string_at(p, len(data)) == data   # the object's own buffer, no copy
    assert acl.util.ptr_to_bytes(p, 5) == b"pyACL"
    with pytest.raises(TypeError, match="acl.util.bytes_to_ptr: argument 'data' must be bytes, got str"):
        acl.util.bytes_to_ptr("text")


def test_ptr_to_numpy_is_a_view_of_the_memory():
    a = np.arange(12, dtype=np.float32)
    view = acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(a), (3, 4), 11)   # NPY_FLOAT32
    assert view.shape == (3, 4) and view.dtype == np.float32
    a[5] = 99.0
    assert view[1, 1] == 99.0
    assert acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(a), (2,), 7).dtype == np.int64   # NPY_INT64
    with pytest.raises(ValueError, match="npy_type 1234 is not a numeric numpy type number"):
        acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(a), (2,), 1234)
    with pytest.raises(TypeError, match="argument 'shape' must be a tuple of ints, got str"):
        acl.util.ptr_to_numpy(acl.util.numpy_to_ptr(a), "3,4", 11)


@pytest.mark.parametrize("helper", ["ptr_to_bytes", "ptr_to_numpy"])
def test_pointer_helpers_refuse_memory_that_cannot_be_read(helper):
    def call(ptr, n):
        if helper == "ptr_to_bytes":
            return acl.util.ptr_to_bytes(ptr, n)
        return acl.util.ptr_to_numpy(ptr, (n,), 2)   # NPY_UINT8
    with pytest.raises(ValueError, match=f"acl.util.{helper}: ptr is NULL"):
        call(0, 4)
    unreadable = f"acl.util.{helper}: ptr 0x10 \\+ 64 bytes is not memory this process can read"
    with pytest.raises(ValueError, match=unreadable):
        call(16, 64)
    a = np.zeros(16, np.uint8)
    with pytest.raises(ValueError, match="is not memory this process can read"):
        call(acl.util.numpy_to_ptr(a), 1 << 40)   # runs far past the mapping
    with pytest.raises(ValueError, match="wraps around the address space"):
        call(2**64 - 8, 64)


def test_simulator_memory_freed_or_overrun_is_refused():
    proc = run_code(textwrap.dedent("""
        import acl
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        dev, ret = acl.rt.malloc(256, 0)
        host, ret = acl.rt.malloc_host(128)
        assert acl.rt.memset(dev, 256, 7, 256) == 0
        assert acl.util.ptr_to_bytes(dev, 256) == bytes([7]) * 256    # the simulator's device memory
        for call in (lambda: acl.util.ptr_to_bytes(host, 129),
                     lambda: acl.util.ptr_to_numpy(dev + 8, (1 << 20,), 2)):
            try:
                call()
            except ValueError as e:
                print(e)
        assert acl.rt.free(dev) == 0
        try:
            acl.util.ptr_to_bytes(dev, 4)
        except ValueError as e:
            print(e)
        print("free again", acl.rt.free(dev))     # codes, not exceptions
    """))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    host = lines[0].split()[1]
    assert lines[0] == (f"acl.util.ptr_to_bytes: {host} + 129 bytes runs 1 bytes past the end of a 128-byte "
                        f"pinned host allocation at {host}")
    assert re.fullmatch(r"acl.util.ptr_to_numpy: 0x\w+ \+ 1048576 bytes runs \d+ bytes past the end of a "
                        r"\d+-byte device allocation at 0x\w+", lines[1]), lines[1]
    assert lines[2].startswith("acl.util.ptr_to_bytes: 0x") and lines[2].endswith(
        "points into device memory that was already freed")
    assert lines[3] == f"free again {ACL_ERROR_RT_PARAM_INVALID}"


def test_return_conventions_and_codes_in_a_program(tmp_path):
    proc = run_code(textwrap.dedent(f"""
        import acl, acl.rt
        from acl import mdl
        assert acl.rt is acl.rt and mdl is acl.mdl
        print(acl.__name__)
        print(acl.init(), acl.init())                       # the second is ACL_ERROR_REPEAT_INITIALIZE
        print(acl.rt.set_device(0))
        ctx, ret = acl.rt.create_context(0); print(ctx != 0, ret)
        print(acl.rt.get_context() == (ctx, 0))
        print(acl.rt.get_device_count(), acl.rt.get_run_mode(), acl.get_soc_name())
        print(acl.mdl.load_from_file({str(tmp_path / 'missing.om')!r}))
        print(acl.mdl.get_num_inputs(0), acl.create_data_buffer(0, 0) != 0)
        print(acl.util.stop_thread(12345))
        done = []
        tid, ret = acl.util.start_thread(done.append, ["args"])
        print(ret, acl.util.stop_thread(tid), done)
        print(acl.rt.destroy_context(ctx), acl.rt.reset_device(0), acl.finalize(), acl.finalize())
    """))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "ascend_engine.acl"
    assert out[1] == "0 100002"
    assert out[2:4] == ["0", "True 0"]
    assert out[4] == "True"
    assert out[5] == "(8, 0) (1, 0) Ascend910B-sim"
    model_id, code = eval(out[6])
    assert model_id == 0 and code != 0
    assert out[7] == "0 True"
    assert out[8] == str(ACL_ERROR_INVALID_PARAM)
    assert out[9] == "0 0 [['args']]"
    assert out[10] == "0 0 0 100037"


def test_process_report_releases_the_gil_while_it_waits():
    """A thread waits in process_report(-1) (no timeout) before anything is launched: the
    launch on the main thread can only happen if the wait released the GIL."""
    proc = run_code(textwrap.dedent("""
        import threading, time, acl
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        ctx, _ = acl.rt.create_context(0)
        stream, _ = acl.rt.create_stream()
        subscribed, got = threading.Event(), []
        def serve(args):
            acl.rt.set_context(ctx)
            subscribed.wait()
            got.append(acl.rt.process_report(-1))
        tid, _ = acl.util.start_thread(serve, None)
        assert acl.rt.subscribe_report(tid, stream) == 0
        subscribed.set()
        time.sleep(0.2)   # lets the thread enter its wait first (the order the test is about)
        assert acl.rt.launch_callback(got.append, "ran", 1, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        assert acl.util.stop_thread(tid) == 0
        print(got)
    """), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['ran', 0]"


def test_a_failing_callback_is_reported_and_the_others_run():
    proc = run_code(textwrap.dedent("""
        import acl
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        ctx, _ = acl.rt.create_context(0)
        stream, _ = acl.rt.create_stream()
        stop, seen = [], []
        def serve(args):
            acl.rt.set_context(ctx)
            while not stop:
                acl.rt.process_report(10)
        tid, _ = acl.util.start_thread(serve, None)
        acl.rt.subscribe_report(tid, stream)
        acl.rt.launch_callback(lambda a: 1 / 0, None, 1, stream)
        acl.rt.launch_callback(seen.append, "second", 1, stream)
        print(acl.rt.synchronize_stream(stream))
        stop.append(1)
        acl.util.stop_thread(tid)
        print(seen)
    """))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0", "['second']"]
    assert "exception in a callback of acl.rt.launch_callback" in proc.stderr
    assert "ZeroDivisionError" in proc.stderr


def test_docs_list_every_function():
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "pyacl.md")
    docs = open(path, encoding="utf-8").read()
    listed = docs.split("## The function list")[1].split("## How it is built")[0]
    for name in acl.function_names():
        ns, _, leaf = name[len("acl."):].rpartition(".")
        line = next(ln for ln in listed.splitlines() if ln.startswith(f"- **acl{'.' + ns if ns else ''}**")
                    and ("(not supported)" in ln) == (name in acl.unsupported_names()))
        assert f"`{leaf}`" in line, name


def test_without_a_dvpp_library_media_answers_not_supported(tmp_path):
    """A simulator library with no libacl_dvpp.so beside it (nor on the linker's path): every
    media function answers ACL_ERROR_API_NOT_SUPPORT and says which paths were tried."""
    import shutil

    from ascend_engine import _runtime

    lonely = tmp_path / "libascendcl_sim.so"
    shutil.copy(_runtime._sim_library_path(), lonely)
    proc = run_code(textwrap.dedent("""
        import acl
        from ascend_engine import _pyacl
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        print(acl.media.dvpp_create_channel_desc(), acl.media.dvpp_malloc(64),
              acl.media.dvpp_jpeg_get_image_info(0, 0), acl.media.dvpp_get_pic_desc_width(0))
        print(_pyacl.media_error())
    """), ASCEND_ENGINE_SIM_LIBRARY=str(lonely), LD_LIBRARY_PATH="")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == f"0 (0, {ACL_ERROR_API_NOT_SUPPORT}) (0, 0, 0, {ACL_ERROR_API_NOT_SUPPORT}) 0"
    assert second == f"{tmp_path}/libacl_dvpp.so: cannot be loaded; libacl_dvpp.so: cannot be loaded"
