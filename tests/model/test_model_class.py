"""ascend_engine.Model: load, describe, run synchronously and asynchronously."""

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim

WIDTH = 12


def two_in_two_out(seed=0):
    rng = np.random.default_rng(seed)
    g = sim.Graph("two")
    a = g.input("a", "float32", (-1, WIDTH))
    b = g.input("b", "float32", (-1, WIDTH))
    w = rng.standard_normal((WIDTH, 5)).astype(np.float32)
    g.output("sum", g.relu(g.add(a, b)))
    g.output("proj", g.matmul(g.mul(a, b), g.const(w)))
    return g


@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory):
    g = two_in_two_out()
    path = tmp_path_factory.mktemp("mc") / "two.om"
    g.save(str(path), batch_sizes=(1, 2, 4, 8))
    with ae.Model.load(path, device=0) as m:
        yield g, m


def feeds(rows, seed=1):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal((rows, WIDTH)).astype(np.float32) for n in ("a", "b")}


def test_description(dynamic_model):
    _, m = dynamic_model
    assert [s.name for s in m.inputs] == ["a", "b"]
    assert [s.name for s in m.outputs] == ["sum", "proj"]
    a = m.inputs[0]
    assert a.dtype == np.float32 and a.shape == (-1, WIDTH) and a.format == "ND"
    # the descriptor's size: exact bytes at the largest gear, as CANN reports them
    assert a.nbytes == 8 * WIDTH * 4
    assert m.outputs[1].shape == (-1, 5)
    assert m.batch_sizes == (1, 2, 4, 8) and m.max_batch == 8
    assert m.dynamic_index == 2 and m.dynamic_nbytes == 8
    assert m.gear_for(3) == 4 and m.gear_for(8) == 8
    with pytest.raises(ValueError, match="batch 9 exceeds the largest gear 8"):
        m.gear_for(9)
    assert "gears=[1, 2, 4, 8]" in repr(m) and "a:float32(batch, 12)" in repr(m)


@pytest.mark.parametrize("rows", [1, 3, 4, 7, 8, 9, 21])
def test_call_matches_reference_splitting_above_the_largest_gear(dynamic_model, rows):
    g, m = dynamic_model
    f = feeds(rows, seed=rows)
    out = m(**f)
    ref = sim.reference(g, f)
    for name in ("sum", "proj"):
        assert out[name].shape == ref[name].shape
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-5, atol=1e-5)


def test_wrong_feeds_name_the_input(dynamic_model):
    _, m = dynamic_model
    f = feeds(2)
    with pytest.raises(ValueError, match=r"missing \['b'\], unexpected \['c'\]"):
        m(a=f["a"], c=f["b"])
    with pytest.raises(ValueError, match="input 'b': expected dtype float32, got int32"):
        m(a=f["a"], b=f["b"].astype(np.int32))
    with pytest.raises(ValueError, match=r"input 'a': expected shape \(batch, 12\), got \(2, 11\)"):
        m(a=f["a"][:, :11], b=f["b"])
    with pytest.raises(ValueError, match="input 'b': batch 1 differs from the other inputs' 2"):
        m(a=f["a"], b=f["b"][:1])


def test_execute_async_on_device_buffers(dynamic_model):
    g, m = dynamic_model
    f = feeds(3, seed=9)
    with ae.Device(0) as dev:
        stream = ae.Stream(dev)
        ins = [ae.DeviceBuffer(dev, s.nbytes) for s in m.inputs]
        outs = [ae.DeviceBuffer(dev, s.nbytes) for s in m.outputs]
        for buf, name in zip(ins, ("a", "b"), strict=True):
            buf.copy_from(f[name])
        assert m.execute_async(ins, outs, stream, batch=3) == 4
        stream.synchronize()
        ref = sim.reference(g, f)
        got = outs[1].copy_to(np.empty((3, 5), np.float32), nbytes=3 * 5 * 4)
        np.testing.assert_allclose(got, ref["proj"], rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match="pass batch="):
            m.execute_async(ins, outs, stream)
        small = ae.DeviceBuffer(dev, 16)
        with pytest.raises(ValueError, match=r"tensor 'a': the buffer holds 16 bytes, the model needs \d+"):
            m.execute_async([small, ins[1]], outs, stream, batch=1)
        # one byte short of the descriptor's size is short all the same
        need = m.inputs[0].nbytes
        short = ae.DeviceBuffer(dev, need - 1)
        with pytest.raises(ValueError,
                           match=f"tensor 'a': the buffer holds {need - 1} bytes, the model needs {need}$"):
            m.execute_async([short, ins[1]], outs, stream, batch=1)


@pytest.mark.parametrize("batch, error, message", [
    (2.7, ValueError, "batch must be an integer, got 2.7 (float)"),
    ("4", ValueError, "batch must be an integer, got '4' (str)"),
    (True, ValueError, "batch must be an integer, got True (bool)"),
    (0, ValueError, "batch must be between 1 and 4611686018427387904, got 0"),
    (-1, ValueError, "batch must be between 1 and 4611686018427387904, got -1"),
], ids=["float", "str", "bool", "zero", "negative"])
def test_execute_async_refuses_a_batch_that_is_not_a_row_count(dynamic_model, batch, error, message):
    _, m = dynamic_model
    with ae.Device(0) as dev:
        stream = ae.Stream(dev)
        ins = [ae.DeviceBuffer(dev, s.nbytes) for s in m.inputs]
        outs = [ae.DeviceBuffer(dev, s.nbytes) for s in m.outputs]
        with pytest.raises(error) as info:
            m.execute_async(ins, outs, stream, batch=batch)
        assert str(info.value) == f"model {m.path!r}: {message}"
        assert m.execute_async(ins, outs, stream, batch=np.int64(2)) == 2   # a numpy integer is a row count
        stream.synchronize()


def test_load_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.om"
    with pytest.raises(ae.AclError) as info:
        ae.Model.load(missing, device=0)
    assert str(missing) in str(info.value) and info.value.function == "aclmdlLoadFromFile"
    assert info.value.code == 145002  # ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, as CANN 9.1
    not_a_model = tmp_path / "real.om"
    not_a_model.write_bytes(b"IMOD" + bytes(200))
    with pytest.raises(ae.AclError) as info:
        ae.Model.load(not_a_model, device=0)
    assert info.value.code == 145006 and "acl" in str(info.value) and str(not_a_model) in str(info.value)


def test_static_model_and_close(tmp_path):
    g = sim.Graph("static")
    x = g.input("x", "float32", (2, WIDTH))
    g.output("y", g.tanh(x))
    path = tmp_path / "s.om"
    g.save(str(path))
    m = ae.Model.load(path, device=0)
    assert m.batch_sizes == () and m.dynamic_index == -1 and m.max_batch == 2
    x = np.linspace(-1, 1, 2 * WIDTH, dtype=np.float32).reshape(2, WIDTH)
    np.testing.assert_allclose(m(x=x)["y"], np.tanh(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="static with batch 2, got 3"):
        m(x=np.zeros((3, WIDTH), np.float32))
    m.close()
    m.close()
    assert m.closed and "closed" in repr(m)
    with pytest.raises(ae.ObjectClosedError):
        _ = m.model_id


def table_model(tmp_path):
    """A dynamic-batch model with a per-row output and a fixed-shape one (a
    constant table, as class tables and anchor grids are)."""
    g = sim.Graph("table")
    x = g.input("x", "float32", (-1, 3))
    g.output("y", g.relu(x))
    table = np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5
    g.output("fixed", g.const(table))
    path = tmp_path / "table.om"
    g.save(str(path), batch_sizes=(1, 2, 4))
    return g, path, table


@pytest.mark.parametrize("rows", [1, 3, 4, 11])
def test_fixed_shape_outputs_of_a_dynamic_model_come_back_whole(tmp_path, rows):
    g, path, table = table_model(tmp_path)
    x = np.random.default_rng(rows).standard_normal((rows, 3)).astype(np.float32)
    with ae.Model.load(path, device=0) as m:
        assert [m.output_has_batch(k) for k in range(2)] == [True, False]
        out = m(x=x)
    assert out["fixed"].shape == (2, 3)
    np.testing.assert_array_equal(out["fixed"], table)          # no rows of garbage
    np.testing.assert_allclose(out["y"], sim.reference(g, {"x": x})["y"])

