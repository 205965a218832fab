"""Model instances sharing one copy of the weights (aclmdlLoad*WithMem with a
caller's weight address): k model ids, weights counted once in
aclrtGetMemInfo, each id with its own work memory, ids free to run at once."""

import ctypes

import numpy as np
import pytest
from helpers import acl, mdl, simlib
from helpers.numerics import assert_matches_reference

import ascend_engine as ae
from ascend_engine import sim

WIDTH = 32


def dense(seed=7, latency_us=0):
    rng = np.random.default_rng(seed)
    g = sim.Graph(f"dense{seed}")
    x = g.input("x", "float32", (-1, WIDTH))
    w = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32)
    b = rng.standard_normal(WIDTH).astype(np.float32)
    g.output("y", g.relu(g.add(g.matmul(x, g.const(w)), g.const(b))))
    return g


def mem_free(lib):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(lib, lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)), "aclrtGetMemInfo")
    return free.value


def malloc_bytes(n):
    """What aclrtMalloc(n) takes from the device (rounded up to 32, plus 32 bytes)."""
    return (n + 31) // 32 * 32 + 32


def query(lib, path):
    work, weight = ctypes.c_size_t(), ctypes.c_size_t()
    mdl.check(lib, lib.aclmdlQuerySize(str(path).encode(), ctypes.byref(work), ctypes.byref(weight)), "query")
    return work.value, weight.value


def device_alloc(lib, n):
    p = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtMalloc(ctypes.byref(p), n, 0), "aclrtMalloc")
    return p.value


@pytest.fixture
def model_file(tmp_path):
    g = dense()
    path = tmp_path / "dense.om"
    g.save(str(path), batch_sizes=(1, 4, 8), latency_us=40000)
    return g, path


def test_k_loads_on_one_weight_allocation_count_the_weights_once(lib, model_file):
    g, path = model_file
    work, weight = query(lib, path)
    assert weight == WIDTH * WIDTH * 4 + WIDTH * 4
    free0 = mem_free(lib)
    wptr = device_alloc(lib, weight)
    ids = []
    for _ in range(3):
        mid = ctypes.c_uint32()
        rc = lib.aclmdlLoadFromFileWithMem(str(path).encode(), ctypes.byref(mid), None, 0, wptr, weight)
        mdl.check(lib, rc, "load with weights")
        ids.append(mid.value)
    assert len(set(ids)) == 3
    # one copy of the weights (the caller's allocation), a work region per id
    assert free0 - mem_free(lib) == malloc_bytes(weight) + 3 * work
    models = [mdl.Loaded(lib, i) for i in ids]
    x = np.random.default_rng(1).standard_normal((3, WIDTH)).astype(np.float32)
    want = sim.reference(g, {"x": x})["y"]
    for m in models:
        assert_matches_reference(mdl.run_loaded(m, {"x": x})["y"], want)
    for m in models:
        m.close()
    assert free0 - mem_free(lib) == malloc_bytes(weight)   # unloading leaves the caller's memory alone
    mdl.check(lib, lib.aclrtFree(wptr), "aclrtFree")
    assert mem_free(lib) == free0

    # for comparison: three plain loads hold three copies
    plain = []
    for _ in range(3):
        mid = ctypes.c_uint32()
        mdl.check(lib, lib.aclmdlLoadFromFile(str(path).encode(), ctypes.byref(mid)), "load")
        plain.append(mid.value)
    assert free0 - mem_free(lib) == 3 * (work + weight)
    for i in plain:
        mdl.check(lib, lib.aclmdlUnload(i), "unload")


def test_load_from_mem_with_mem(lib, model_file):
    g, path = model_file
    blob = path.read_bytes()
    work, weight = query(lib, path)
    wptr, kptr = device_alloc(lib, weight), device_alloc(lib, work)
    free0 = mem_free(lib)
    mid = ctypes.c_uint32()
    mdl.check(lib, lib.aclmdlLoadFromMemWithMem(blob, len(blob), ctypes.byref(mid), kptr, work, wptr, weight),
              "aclmdlLoadFromMemWithMem")
    assert mem_free(lib) == free0   # both regions are the caller's: nothing more is reserved
    m = mdl.Loaded(lib, mid.value)
    x = np.random.default_rng(2).standard_normal((4, WIDTH)).astype(np.float32)
    assert_matches_reference(mdl.run_loaded(m, {"x": x})["y"], sim.reference(g, {"x": x})["y"])
    m.close()
    # the same checks as the file variant
    rc = lib.aclmdlLoadFromMemWithMem(blob, len(blob), ctypes.byref(mid), None, 0, wptr, weight - 1)
    assert rc == acl.ACL_ERROR_GE_PARAM_INVALID
    assert "aclmdlLoadFromMemWithMem" in simlib.recent_error(lib) and "weightSize" in simlib.recent_error(lib)
    assert lib.aclmdlLoadFromMemWithMem(None, 0, ctypes.byref(mid), None, 0, wptr, weight) == \
        acl.ACL_ERROR_INVALID_PARAM
    assert "model is NULL" in simlib.recent_error(lib)
    lib.aclrtFree(wptr)
    lib.aclrtFree(kptr)


def _new_stream(lib):
    s = ctypes.c_void_p()
    mdl.check(lib, lib.aclrtCreateStream(ctypes.byref(s)), "aclrtCreateStream")
    return s.value


def test_ids_sharing_weights_run_at_once_one_id_may_not(lib, model_file, stream):
    g, path = model_file
    _work, weight = query(lib, path)
    wptr = device_alloc(lib, weight)
    loaded = []
    for _ in range(2):
        mid = ctypes.c_uint32()
        rc = lib.aclmdlLoadFromFileWithMem(str(path).encode(), ctypes.byref(mid), None, 0, wptr, weight)
        mdl.check(lib, rc, "load")
        loaded.append(mdl.Loaded(lib, mid.value))
    s2 = _new_stream(lib)
    a, b = mdl.Buffers(loaded[0]), mdl.Buffers(loaded[1])
    same = mdl.Buffers(loaded[0])
    try:
        x = np.random.default_rng(3).standard_normal((8, WIDTH)).astype(np.float32)
        want = sim.reference(g, {"x": x})["y"]
        for bufs in (a, b, same):
            bufs.feed({"x": x})
            bufs.set_batch(8)
        # two ids on two streams, back to back (each takes 40 ms on the device): both run
        a.execute(stream)
        b.execute(s2)
        mdl.check(lib, lib.aclrtSynchronizeStream(stream), "sync")
        mdl.check(lib, lib.aclrtSynchronizeStream(s2), "sync")
        assert_matches_reference(a.fetch(8)["y"], want)
        assert_matches_reference(b.fetch(8)["y"], want)
        # one id on two streams the same way: whichever starts second fails on the device
        a.execute(stream)
        same.execute(s2)
        codes, messages = [], []
        for s in (stream, s2):
            codes.append(lib.aclrtSynchronizeStream(s))
            messages.append(simlib.recent_error(lib) if codes[-1] else "")
        assert sorted(codes) == [0, acl.ACL_ERROR_RT_MODEL_EXECUTE]
        assert f"model {loaded[0].id} is already executing" in "".join(messages)
    finally:
        for bufs in (a, b, same):
            bufs.close()
        for m in loaded:
            m.close()
        lib.aclrtDestroyStream(s2)
        lib.aclrtFree(wptr)


# ---- the Model class ----------------------------------------------------------------


def device_free():
    return ae.devices()[0].memory_free


def test_load_instances_shares_one_weight_buffer(model_file):
    g, path = model_file
    work, weight = ae.Model.query_size(path)
    with ae.Device(0) as dev:
        free0 = device_free()
        models = ae.Model.load_instances(path, 3, device=dev)
        assert len({m.model_id for m in models}) == 3
        assert free0 - device_free() == malloc_bytes(weight) + 3 * work
        buf = models[0].weights
        assert isinstance(buf, ae.DeviceBuffer) and buf.nbytes == weight
        assert all(m.weights is buf for m in models) and models[0].weight_sharers == 3
        # the weights live as long as any instance
        models[0].close()
        models[1].close()
        assert not buf.closed and models[2].weight_sharers == 1
        assert free0 - device_free() == malloc_bytes(weight) + work
        models[2].close()
        assert buf.closed and device_free() == free0

        models = ae.Model.load_instances(path, 2, device=dev)
        x = np.random.default_rng(4).standard_normal((5, WIDTH)).astype(np.float32)
        want = sim.reference(g, {"x": x})["y"]
        for m in models:
            assert_matches_reference(m(x=x)["y"], want)
        models[0].close()
        assert_matches_reference(models[1](x=x)["y"], want)
    assert models[1].closed   # closing the device unloads the instance, then frees the weights


def test_load_with_weights_of_another_instance(model_file, tmp_path):
    g, path = model_file
    first = ae.Model.load_instances(path, 1, device=0)[0]
    second = ae.Model.load(path, device=0, weights=first)
    try:
        assert second.weights is first.weights and first.weight_sharers == 2
        x = np.ones((1, WIDTH), np.float32)
        assert_matches_reference(second(x=x)["y"], sim.reference(g, {"x": x})["y"])
    finally:
        buf = first.weights
        first.close()
        assert not buf.closed   # still used by the second
        second.close()
        assert buf.closed

    plain = ae.Model.load(path, device=0)
    other = tmp_path / "other.om"
    dense(seed=8).save(str(other), batch_sizes=(1,))
    inst = ae.Model.load_instances(path, 1, device=0)[0]
    try:
        assert plain.weights is None and plain.weight_sharers == 1
        with pytest.raises(ValueError, match="runtime-managed memory"):
            ae.Model.load(path, device=0, weights=plain)
        with pytest.raises(ValueError, match="instances share weights only when they load the same file"):
            ae.Model.load(other, device=0, weights=inst)
        with pytest.raises(TypeError, match="weights must be None, a DeviceBuffer or a Model, got int"):
            ae.Model.load(path, device=0, weights=123)
        with pytest.raises(ValueError, match="instances must be an integer, got 2.0"):
            ae.Model.load_instances(path, 2.0)
    finally:
        plain.close()
        inst.close()


def test_load_with_a_caller_buffer(model_file):
    g, path = model_file
    _work, weight = ae.Model.query_size(path)
    with ae.Device(0) as dev:
        small = ae.DeviceBuffer(dev, weight - 4)
        with pytest.raises(ae.AclError) as info:
            ae.Model.load(path, device=dev, weights=small)
        assert info.value.code == acl.ACL_ERROR_GE_PARAM_INVALID
        assert info.value.function == "aclmdlLoadFromFileWithMem"
        assert f"weightSize {weight - 4} is smaller than the {weight} bytes" in str(info.value)
        buf = ae.DeviceBuffer(dev, weight)
        a = ae.Model.load(path, device=dev, weights=buf)
        b = ae.Model.load(path, device=dev, weights=buf)
        x = np.full((2, WIDTH), 0.5, np.float32)
        want = sim.reference(g, {"x": x})["y"]
        assert_matches_reference(a(x=x)["y"], want)
        assert_matches_reference(b(x=x)["y"], want)
        a.close()
        b.close()
        assert not buf.closed   # the caller's buffer stays the caller's
        buf.close()
