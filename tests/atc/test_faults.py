"""Faults of converted models: each a clear error at conversion or load, never a crash,
and the simulator stays usable."""

import ctypes
import os
import struct

import numpy as np
import pytest
from helpers import acl, mdl, onnx_nets, simlib
from onnx import TensorProto as T
from onnx import helper as h

from ascend_engine.errors import AtcError

STATIC = "--input_shape=x:1,3,16,16"


@pytest.fixture(scope="module")
def static_om(nets, tmp_path_factory):
    return onnx_nets.convert(nets["resnet"], tmp_path_factory.mktemp("f") / "r", STATIC)


def load_rc(lib, blob):
    mid = ctypes.c_uint32()
    rc = lib.aclmdlLoadFromMem(blob, len(blob), ctypes.byref(mid))
    if rc == 0:
        lib.aclmdlUnload(mid.value)
    return rc, simlib.recent_error(lib)


def still_works(lib, om):
    with open(om, "rb") as f:
        m = mdl.load_bytes(lib, f.read())
    b = mdl.Buffers(m)
    try:
        b.feed({"x": np.ones((1, 3, 16, 16), np.float32)})
        b.execute()
        assert abs(float(b.fetch()["probs"].sum()) - 1.0) < 1e-5  # a softmax row
    finally:
        b.close()
        m.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_corrupt_onnx_is_refused_at_conversion(nets, tmp_path, damage):
    raw = open(nets["resnet"], "rb").read()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes({"truncated": raw[: len(raw) // 2], "garbage": b"\x0a\xff" * 100, "empty": b""}[damage])
    with pytest.raises(
        AtcError, match=r"\[--model\] is invalid. Reason: (not a readable ONNX model|not an ONNX mod)"
    ):
        onnx_nets.convert(str(bad), tmp_path / "o", STATIC)
    assert not (tmp_path / "o.om").exists()


@onnx_nets.throws_in_ort_python
def test_unsupported_op_is_refused_at_conversion(tmp_path):
    g = h.make_graph(
        [h.make_node("FancyOp", ["x"], ["y"], domain="custom.example")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("custom.example", 1)])
    m.ir_version = 8
    path = onnx_nets.save(m, tmp_path, "custom")
    with pytest.raises(AtcError, match="ONNX Runtime cannot build the graph .*FancyOp"):
        onnx_nets.convert(path, tmp_path / "o")


@onnx_nets.throws_in_ort_python
def test_profile_onnx_runtime_rejects_is_refused_at_conversion(nets, tmp_path):
    with pytest.raises(AtcError, match="ONNX Runtime rejects the model at profile 4,8"):
        onnx_nets.convert(
            nets["crnn"],
            tmp_path / "c",
            "--input_format=ND",
            "--input_shape=seq:1,-1,32;mask:1,-1",
            "--dynamic_dims=4,8;8,8",
        )


def test_unsupported_dtypes_and_unknown_inputs(tmp_path, nets):
    g = h.make_graph(
        [h.make_node("Not", ["x"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", T.BOOL, [4])],
        [h.make_tensor_value_info("y", T.BOOL, [4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(AtcError, match="input 'x' is bool: the simulator's tensors are float32, float16"):
        onnx_nets.convert(onnx_nets.save(m, tmp_path, "b"), tmp_path / "o")
    with pytest.raises(AtcError, match="the model has no input 'img'; its inputs: x"):
        onnx_nets.convert(nets["resnet"], tmp_path / "o", "--input_shape=img:1,3,16,16")
    with pytest.raises(AtcError, match="input 'x' has dynamic dimensions in the ONNX graph \\(n,3,16,16\\)"):
        onnx_nets.convert(nets["resnet"], tmp_path / "o")
    with pytest.raises(AtcError, match="input 'x' dimension 1 is fixed to 3 in the ONNX graph, got 4"):
        onnx_nets.convert(nets["resnet"], tmp_path / "o", "--input_shape=x:1,4,16,16")


def test_corrupt_graph_inside_the_model_fails_the_load(lib, static_om):
    blob = bytearray(open(static_om, "rb").read())
    data_off, data_size = struct.unpack_from("<QQ", blob, 104)
    blob[data_off : data_off + data_size] = b"\x08" + b"\xff" * (data_size - 1)
    rc, msg = load_rc(lib, bytes(blob))
    assert rc == acl.ACL_ERROR_PARSE_MODEL
    assert "aclmdlLoadFromMem: model 'r': ONNX Runtime cannot load its ONNX graph:" in msg
    still_works(lib, static_om)


def test_truncated_model_file_fails_the_load(lib, static_om):
    blob = open(static_om, "rb").read()
    rc, msg = load_rc(lib, blob[:-10])
    assert rc == acl.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID and "truncated or corrupted" in msg


def test_output_table_onnx_runtime_rejects_fails_the_execution(lib, nets, tmp_path):
    om = onnx_nets.convert(
        nets["resnet"], tmp_path / "r", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2"
    )
    good = open(om, "rb").read()
    shape_off = struct.unpack_from("<Q", good, 168)[0]  # probs: (1, 10) at gear 0, (2, 10) at gear 1
    out_dims = struct.unpack_from("<Q", good, 56)[0] + 104 + 24  # the output's tensor record, its dims
    blob = bytearray(good)
    struct.pack_into("<q", blob, shape_off + 8, 5)  # gear 0: (1, 5)
    rc, msg = load_rc(lib, bytes(blob))
    assert rc == acl.ACL_ERROR_PARSE_MODEL
    assert "output 'probs' at gear 0: dimension 1 is 5 where the tensor record says 10" in msg
    # with -1 in the record the table is accepted; ONNX Runtime rejects the shape when it runs
    struct.pack_into("<q", blob, out_dims + 8, -1)
    m = mdl.load_bytes(lib, bytes(blob))
    b = mdl.Buffers(m)
    try:
        b.set_batch(1)
        b.feed({"x": np.ones((2, 3, 16, 16), np.float32)})
        with pytest.raises(mdl.AclFailed) as exc:
            b.execute()
        assert exc.value.code == acl.ACL_ERROR_RT_MODEL_EXECUTE
        assert "aclmdlExecute: model 'r': ONNX Runtime failed to execute the graph:" in exc.value.msg
        b.set_batch(2)
        b.execute()  # the same model at its other gear: still usable
        probs = b.fetch(shapes={"probs": (2, 10)})["probs"]
        np.testing.assert_allclose(probs.sum(axis=1), [1, 1], rtol=1e-5)
    finally:
        b.close()
        m.close()


def test_missing_onnx_runtime_says_what_to_install(static_om):
    code = f"""
        import ascend_engine as ae
        try:
            ae.Model.load({static_om!r})
        except ae.AclError as exc:
            print("CODE", exc.code)
            print(exc)
    """
    out = simlib.run_python(code, env={"ASCEND_SIM_ORT_LIB": "/nonexistent/libonnxruntime.so"})
    assert out.returncode == 0, out.stderr
    assert "CODE 200006" in out.stdout
    assert "ASCEND_SIM_ORT_LIB='/nonexistent/libonnxruntime.so' cannot be loaded" in out.stdout
    assert "pip install ascend-engine[onnx]" in out.stdout
    # the variable empty (the library path only) and no library there: the same advice
    out = simlib.run_python(
        code.replace(
            "import ascend_engine as ae",
            "import os, ascend_engine as ae\n        os.environ['ASCEND_SIM_ORT_LIB'] = ''",
        )
    )
    assert "CODE 200006" in out.stdout and "pip install ascend-engine[onnx]" in out.stdout, out.stderr


def test_more_onnx_runtime_threads_compute_the_same(static_om, nets):
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(os.path.join(os.path.dirname(static_om), "x.npy"), x)
    out = simlib.run_python(
        f"""
        import os, numpy as np, ascend_engine as ae
        x = np.load(os.path.join({os.path.dirname(static_om)!r}, "x.npy"))
        with ae.Model.load({static_om!r}) as m:
            np.save(os.path.join({os.path.dirname(static_om)!r}, "y.npy"), m(x=x)["probs"])
        """,
        env={"ASCEND_SIM_ORT_THREADS": "2"},
    )
    assert out.returncode == 0, out.stderr
    got = np.load(os.path.join(os.path.dirname(static_om), "y.npy"))
    np.testing.assert_allclose(
        got, onnx_nets.ort_run(nets["resnet"], {"x": x})["probs"], rtol=1e-5, atol=1e-6
    )


def test_thread_count_is_checked(static_om):
    out = simlib.run_python(
        f"""
        import ascend_engine as ae
        try:
            ae.Model.load({static_om!r})
        except ae.AclError as exc:
            print(exc)
        """,
        env={"ASCEND_SIM_ORT_THREADS": "0"},
    )
    assert "ASCEND_SIM_ORT_THREADS='0' is invalid: expected a thread count in 1..256" in out.stdout, (
        out.stderr
    )


def test_compute_skip_writes_zeros_and_says_so(static_om):
    out = simlib.run_python(
        f"""
        import numpy as np, ascend_engine as ae
        with ae.Model.load({static_om!r}) as m:
            y = m(x=np.ones((1, 3, 16, 16), np.float32))["probs"]
        print("SUM", float(np.abs(y).sum()), y.shape)
        """,
        env={"ASCEND_SIM_COMPUTE": "skip"},
    )
    assert out.returncode == 0, out.stderr
    assert "SUM 0.0 (1, 10)" in out.stdout
    assert (
        "ASCEND_SIM_COMPUTE=skip: model 'r' is NOT computed; its outputs are zeros (timing only)"
        in out.stderr
    )


def test_names_the_graph_does_not_have_fail_the_load(lib, static_om):
    blob = bytearray(open(static_om, "rb").read())
    tensor_off = struct.unpack_from("<Q", blob, 56)[0]
    str_off = struct.unpack_from("<Q", blob, 88)[0]
    for record, was, now, what in (
        (0, b"x", b"z", "input 0 'z'"),
        (1, b"probs", b"probz", "output 0 'probz'"),
    ):
        bad = bytearray(blob)
        name_off, name_len = struct.unpack_from("<II", bad, tensor_off + 104 * record)
        assert bad[str_off + name_off : str_off + name_off + name_len] == was
        bad[str_off + name_off : str_off + name_off + name_len] = now
        rc, msg = load_rc(lib, bytes(bad))
        assert rc == acl.ACL_ERROR_PARSE_MODEL
        assert f"model 'r': {what} is not an {what.split()[0]} of its ONNX graph" in msg
    still_works(lib, static_om)
