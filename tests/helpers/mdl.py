"""ctypes helpers for the simulator model tests: load a Graph, describe it, run
it; and the whole models several tests build (an MLP, a transformer block).

Everything goes through the public AscendCL API of the simulator library
(helpers.simlib), the way a C program or the Model class would use it.
"""

import ctypes

import numpy as np

from ascend_engine import sim
from helpers import simlib
from helpers.acl import (
    ACL_DTYPES,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_SUCCESS,
    DYNAMIC_NAME,
)


class IODims(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 128), ("dimCount", ctypes.c_size_t), ("dims", ctypes.c_int64 * 128)]


class Batch(ctypes.Structure):
    _fields_ = [("batchCount", ctypes.c_size_t), ("batch", ctypes.c_uint64 * 128)]


class HW(ctypes.Structure):
    _fields_ = [("hwCount", ctypes.c_size_t), ("hw", (ctypes.c_uint64 * 2) * 128)]


class IODimsRange(ctypes.Structure):
    _fields_ = [("rangeCount", ctypes.c_size_t), ("range", (ctypes.c_int64 * 2) * 128)]


def io_dims(values):
    """An aclmdlIODims holding ``values``."""
    d = IODims()
    d.dimCount = len(values)
    for i, v in enumerate(values):
        d.dims[i] = v
    return d


class AclFailed(AssertionError):
    def __init__(self, what, code, msg):
        super().__init__(f"{what} -> {code}: {msg}")
        self.code = code
        self.msg = msg


def check(lib, rc, what):
    if rc != ACL_SUCCESS:
        raise AclFailed(what, rc, simlib.recent_error(lib))


class Loaded:
    """A model loaded in the simulator, with its descriptor."""

    def __init__(self, lib, model_id):
        self.lib = lib
        self.id = model_id
        self.desc = lib.aclmdlCreateDesc()
        check(lib, lib.aclmdlGetDesc(self.desc, model_id), "aclmdlGetDesc")
        self.n_in = lib.aclmdlGetNumInputs(self.desc)
        self.n_out = lib.aclmdlGetNumOutputs(self.desc)
        self.inputs = [self._io(i, True) for i in range(self.n_in)]
        self.outputs = [self._io(i, False) for i in range(self.n_out)]
        b = Batch()
        check(lib, lib.aclmdlGetDynamicBatch(self.desc, ctypes.byref(b)), "aclmdlGetDynamicBatch")
        self.gears = [b.batch[i] for i in range(b.batchCount)]

    def _io(self, i, is_in):
        lib = self.lib
        d = IODims()
        fn = lib.aclmdlGetInputDims if is_in else lib.aclmdlGetOutputDims
        check(lib, fn(self.desc, i, ctypes.byref(d)), "dims")
        name = (lib.aclmdlGetInputNameByIndex if is_in else lib.aclmdlGetOutputNameByIndex)(
            self.desc, i
        ).decode()
        return dict(
            name=name,
            dims=tuple(d.dims[k] for k in range(d.dimCount)),
            dtype=(lib.aclmdlGetInputDataType if is_in else lib.aclmdlGetOutputDataType)(self.desc, i),
            format=(lib.aclmdlGetInputFormat if is_in else lib.aclmdlGetOutputFormat)(self.desc, i),
            size=(lib.aclmdlGetInputSizeByIndex if is_in else lib.aclmdlGetOutputSizeByIndex)(self.desc, i),
            dims_name=d.name.decode(),
        )

    def close(self):
        self.lib.aclmdlDestroyDesc(self.desc)
        check(self.lib, self.lib.aclmdlUnload(self.id), "aclmdlUnload")


def load_bytes(lib, blob):
    mid = ctypes.c_uint32()
    check(lib, lib.aclmdlLoadFromMem(blob, len(blob), ctypes.byref(mid)), "aclmdlLoadFromMem")
    return Loaded(lib, mid.value)


class Buffers:
    """Device buffers and datasets for one model: inputs/outputs sized by the descriptor."""

    def __init__(self, model, in_sizes=None, out_sizes=None):
        self.model = model
        lib = self.lib = model.lib
        self.ptrs = []
        self.bufs = []
        self.input = lib.aclmdlCreateDataset()
        self.output = lib.aclmdlCreateDataset()
        in_sizes = in_sizes or [io["size"] for io in model.inputs]
        out_sizes = out_sizes or [io["size"] for io in model.outputs]
        self.in_ptrs = [self._add(self.input, n) for n in in_sizes]
        self.out_ptrs = [self._add(self.output, n) for n in out_sizes]

    def _add(self, ds, n):
        lib = self.lib
        p = ctypes.c_void_p()
        check(lib, lib.aclrtMalloc(ctypes.byref(p), max(n, 1), 0), "aclrtMalloc")
        self.ptrs.append(p.value)
        b = lib.aclCreateDataBuffer(p.value, n)
        self.bufs.append(b)
        check(lib, lib.aclmdlAddDatasetBuffer(ds, b), "aclmdlAddDatasetBuffer")
        return p.value

    def set_batch(self, batch):
        idx = ctypes.c_size_t()
        check(
            self.lib,
            self.lib.aclmdlGetInputIndexByName(self.model.desc, DYNAMIC_NAME.encode(), ctypes.byref(idx)),
            "aclmdlGetInputIndexByName",
        )
        check(
            self.lib,
            self.lib.aclmdlSetDynamicBatchSize(self.model.id, self.input, idx.value, batch),
            "aclmdlSetDynamicBatchSize",
        )

    def dynamic_index(self):
        idx = ctypes.c_size_t()
        check(
            self.lib,
            self.lib.aclmdlGetInputIndexByName(self.model.desc, DYNAMIC_NAME.encode(), ctypes.byref(idx)),
            "aclmdlGetInputIndexByName",
        )
        return idx.value

    def set_hw(self, h, w):
        rc = self.lib.aclmdlSetDynamicHWSize(self.model.id, self.input, self.dynamic_index(), h, w)
        check(self.lib, rc, "aclmdlSetDynamicHWSize")

    def set_dims(self, values):
        d = io_dims(values)
        check(self.lib, self.lib.aclmdlSetInputDynamicDims(self.model.id, self.input, self.dynamic_index(),
                                                           ctypes.byref(d)), "aclmdlSetInputDynamicDims")

    def describe_inputs(self, shapes):
        """aclmdlSetDatasetTensorDesc for each input: shapes maps input index -> shape."""
        lib = self.lib
        for i, shape in shapes.items():
            io = self.model.inputs[i]
            arr = (ctypes.c_int64 * len(shape))(*shape)
            desc = lib.aclCreateTensorDesc(io["dtype"], len(shape), arr, io["format"])
            assert desc
            check(lib, lib.aclmdlSetDatasetTensorDesc(self.input, desc, i), "aclmdlSetDatasetTensorDesc")
            lib.aclDestroyTensorDesc(desc)

    def output_shape(self, i):
        """The shape aclmdlGetDatasetTensorDesc reports for output i (after an execution)."""
        lib = self.lib
        desc = lib.aclmdlGetDatasetTensorDesc(self.output, i)
        assert desc, simlib.recent_error(lib)
        dims = []
        for k in range(lib.aclGetTensorDescNumDims(desc)):
            v = ctypes.c_int64()
            check(lib, lib.aclGetTensorDescDimV2(desc, k, ctypes.byref(v)), "aclGetTensorDescDimV2")
            dims.append(v.value)
        return tuple(dims)

    def feed(self, feeds):
        """Copy host arrays into the input buffers (by input name)."""
        for i, io in enumerate(self.model.inputs):
            if io["name"] == DYNAMIC_NAME:
                continue
            a = np.ascontiguousarray(feeds[io["name"]])
            check(
                self.lib,
                self.lib.aclrtMemcpy(
                    self.in_ptrs[i], self.lib.aclGetDataBufferSizeV2(self.bufs[i]), a.ctypes.data, a.nbytes,
                    ACL_MEMCPY_HOST_TO_DEVICE,
                ),
                "aclrtMemcpy H2D",
            )

    def fetch(self, batch=None, shapes=None):
        """Output arrays (batch rows for batched outputs, or the given shapes by output name)."""
        res = {}
        for i, io in enumerate(self.model.outputs):
            shape = tuple(batch if d == -1 else d for d in io["dims"])
            if shapes is not None:
                shape = tuple(shapes[io["name"]])
            a = np.empty(shape, ACL_DTYPES[io["dtype"]])
            check(
                self.lib,
                self.lib.aclrtMemcpy(
                    a.ctypes.data, a.nbytes, self.out_ptrs[i], a.nbytes, ACL_MEMCPY_DEVICE_TO_HOST
                ),
                "aclrtMemcpy D2H",
            )
            res[io["name"]] = a
        return res

    def execute(self, stream=None):
        if stream is None:
            check(self.lib, self.lib.aclmdlExecute(self.model.id, self.input, self.output), "aclmdlExecute")
        else:
            check(
                self.lib,
                self.lib.aclmdlExecuteAsync(self.model.id, self.input, self.output, stream),
                "aclmdlExecuteAsync",
            )

    def close(self):
        lib = self.lib
        lib.aclmdlDestroyDataset(self.input)
        lib.aclmdlDestroyDataset(self.output)
        for b in self.bufs:
            lib.aclDestroyDataBuffer(b)
        for p in self.ptrs:
            lib.aclrtFree(p)


def run(lib, graph, feeds, batch_sizes=None, stream=None, **save_kw):
    """Save `graph`, load it, run it on `feeds` (padding to the gear) and return the outputs."""
    model = load_bytes(lib, graph.to_bytes(batch_sizes=batch_sizes, **save_kw))
    try:
        return run_loaded(model, feeds, stream=stream)
    finally:
        model.close()


def run_loaded(model, feeds, stream=None):
    """Run a loaded model on feeds: picks the smallest gear >= the batch, pads, slices."""
    lib = model.lib
    batch = None
    gear = None
    if model.gears:
        for io in model.inputs:
            if io["dims"] and io["dims"][0] == -1:
                batch = np.asarray(feeds[io["name"]]).shape[0]
                break
        gear = min(g for g in model.gears if g >= batch)
        padded = {}
        for io in model.inputs:
            if io["name"] == DYNAMIC_NAME:
                continue
            a = np.asarray(feeds[io["name"]])
            if io["dims"] and io["dims"][0] == -1 and gear > batch:
                a = np.concatenate([a, np.zeros((gear - batch,) + a.shape[1:], a.dtype)])
            padded[io["name"]] = a
        feeds = padded
    bufs = Buffers(model)
    try:
        bufs.feed(feeds)
        if gear is not None:
            bufs.set_batch(gear)
        bufs.execute(stream)
        if stream is not None:
            check(lib, lib.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream")
        out = bufs.fetch(gear)
    finally:
        bufs.close()
    if gear is not None:
        out = {k: (v[:batch] if v.ndim and _batched(model, k) else v) for k, v in out.items()}
    return out


def _batched(model, name):
    for io in model.outputs:
        if io["name"] == name:
            return bool(io["dims"]) and io["dims"][0] == -1
    return False


def mlp(rng, dtype="float32", d_in=32, hidden=64, d_out=10):
    g = sim.Graph("mlp")
    x = g.input("x", dtype, (-1, d_in))
    w1 = g.const((rng.standard_normal((d_in, hidden)) / np.sqrt(d_in)).astype(dtype))
    b1 = g.const(rng.standard_normal(hidden).astype(dtype) * 0.1)
    w2 = g.const((rng.standard_normal((hidden, d_out)) / np.sqrt(hidden)).astype(dtype))
    h = g.gelu(g.add(g.matmul(x, w1), b1))
    logits = g.matmul(h, w2)
    g.output("logits", logits)
    g.output("probs", g.softmax(logits))
    g.output("label", g.argmax(logits))
    return g


def transformer_block(rng, seq=8, d=16, heads=2, dtype="float32"):
    """Pre-norm attention block + MLP with residuals, batch first."""
    dh = d // heads

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(dtype)

    g = sim.Graph("block")
    x = g.input("x", dtype, (-1, seq, d))
    h = g.layernorm(x, gamma=np.ones(d, dtype), beta=np.zeros(d, dtype))

    def heads_of(t):  # (-1, seq, d) -> (-1, heads, seq, dh)
        return g.transpose(g.reshape(t, (-1, seq, heads, dh)), (0, 2, 1, 3))

    q = heads_of(g.matmul(h, g.const(w(d, d))))
    k = heads_of(g.matmul(h, g.const(w(d, d))))
    v = heads_of(g.matmul(h, g.const(w(d, d))))
    scores = g.mul(g.matmul(q, g.transpose(k, (0, 1, 3, 2))), np.array(1 / np.sqrt(dh), dtype))
    att = g.matmul(g.softmax(scores, axis=-1), v)  # (-1, heads, seq, dh)
    att = g.reshape(g.transpose(att, (0, 2, 1, 3)), (-1, seq, d))
    x1 = g.add(x, g.matmul(att, g.const(w(d, d))))
    h2 = g.layernorm(x1)
    ff = g.matmul(
        g.gelu(g.add(g.matmul(h2, g.const(w(d, 4 * d))), g.const(np.zeros(4 * d, dtype)))),
        g.const(w(4 * d, d)),
    )
    out = g.add(x1, ff)
    g.output("y", out)
    g.output("pooled", g.mean(out, axes=1))
    return g
