# cython: language_level=3
"""Models: load a model file and describe its tensors; the Model class.

``Model.load(path, device=0)`` loads with ``aclmdlLoadFromFile`` (or, with
``weights=``, ``aclmdlLoadFromFileWithMem`` on a caller-placed weight
allocation; ``Model.load_instances`` loads k copies sharing one) and reads
every tensor's name, dtype, dims and size from the model's descriptor, and
its dynamic mechanism: batch gears, image-size (HW) gears, dims gears or
shape ranges.  ``model(x=array)`` runs once synchronously: it picks the gear
from the arrays' shapes (padding up to it and slicing the outputs back), or
describes a shape-range model's inputs; ``execute_async`` queues an execution
on device buffers (at a batch, a gear or input shapes).

This module loads and describes; how each dynamic kind runs (its strategy
object, and the executions) is ``ascend_engine._model``'s, which cimports this
module (``_model_base.pxd``) and is never cimported by it.  The kind classes
are registered there, and looked up here once per load (``_new_kind``).
"""

from collections import namedtuple
import math
import os
import threading

import numpy as np

from libc.stdint cimport uint32_t, uintptr_t
from libc.string cimport memset
from cpython.mem cimport PyMem_Malloc, PyMem_Free

from ascend_engine._acl cimport *
# api(), check(), the checked_<name> / require_<name> AscendCL wrappers, and the
# runtime's classes and handle accessors (see ascend_engine/_runtime.pxd).
from ascend_engine._runtime cimport *
from ascend_engine._memory cimport DeviceBuffer, buffer_ptr

from ascend_engine import errors as _errors
from ascend_engine._feeds import shape_text
from ascend_engine._checks import positive_int
from ascend_engine.shapes import holding_gear

# Each include is one job of Model's (docs/executor.md, "Where each job lives"); the class
# below holds the model's state and its public methods, which call into them and into its kind.
include "_model_describe.pxi"
include "_model_load.pxi"
include "_model_datasets.pxi"


# The dynamic kinds' classes by name, registered by ascend_engine._model (register_kind).
cdef dict _kind_classes = {}


cdef int register_kind(str name, type cls) except -1:
    """Make ``cls`` (a _Kind subclass) the strategy of models whose dynamic kind is ``name``."""
    if not issubclass(cls, _Kind):
        raise TypeError(f"a dynamic kind's class must subclass _Kind, got {cls.__name__}")
    _kind_classes[name] = cls
    return 0


cdef _Kind _new_kind(str name):
    """The strategy object of a model of kind ``name``."""
    if not _kind_classes:
        import ascend_engine._model  # noqa: F401  (registers the kinds)
    return _kind_classes[name]()


cdef class _Kind:
    """The strategy of one dynamic kind: what differs between the kinds, chosen once at load.

    The kinds themselves (static, batch, hw, dims, range) are ascend_engine._model's
    subclasses; this base says what each answers.
    """

    def __cinit__(self):
        self.name = "static"

    cdef describe(self, Model m, size_t gear_count):
        """Read the kind's gears or ranges from the descriptor (inputs already described;
        ``gear_count``: the dims gears aclmdlGetInputDynamicGearCount reported, else 0)."""
        return None

    cdef call(self, Model m, feeds):
        """Run once synchronously on numpy feeds (the body of Model.__call__)."""
        raise NotImplementedError(self.name)

    cdef execute_async(self, Model m, list inputs, list outputs, Stream stream, batch, gear, shapes):
        """Queue one execution on device buffers (the body of Model.execute_async)."""
        raise NotImplementedError(self.name)

    cdef gear_shapes(self, Model m, feeds):
        raise ValueError(f"model {m.path!r} has {self.name} shapes, not image-size or dims gears")

    cdef gear_io_shapes(self, Model m):
        raise ValueError(f"model {m.path!r} has {self.name} shapes, not image-size or dims gears")


cdef class Model(Resource):
    """A model loaded on a device.

    ``Model.load(path, device=0)``; ``inputs`` / ``outputs`` are lists of
    :class:`TensorSpec`.  The dynamic mechanism (``dynamic_kind``: "static",
    "batch", "hw", "dims" or "range") and its gears: ``batch_sizes`` (batch
    gears), ``hw_sizes`` ((height, width) gears), ``dims_gears`` (one dict
    {input name: shape} per gear), ``shape_ranges`` ({input name: ((min,
    max), ...) per dimension}, max -1 unbounded); each is empty unless it is
    the model's mechanism.  One loaded model executes one request at a time:
    calls from several threads are serialized.  To run one model on several
    streams at once, load it several times: ``Model.load_instances(path, k)``
    gives k models that share one copy of the weights on the device.
    """

    def __init__(self):
        raise TypeError("use Model.load(path, device=...)")

    # ---- loading and unloading (_model_load.pxi) -----------------------------------

    @staticmethod
    def query_size(path):
        """``(work_bytes, weight_bytes)`` a model file needs on the device (``aclmdlQuerySize``)."""
        return _query_size(path)

    @staticmethod
    def load_instances(path, instances, device=0):
        """Load a model file ``instances`` times sharing one copy of its weights.

        Returns a tuple of Models: distinct model ids (each may run on its
        own stream, concurrently with the others), each with its own work
        memory, all reading one weight allocation made here
        (``aclmdlQuerySize``, ``aclrtMalloc``, ``aclmdlLoadFromFileWithMem``),
        which is freed when the last of them is closed.
        """
        return _load_instances(path, instances, device)

    @staticmethod
    def load(path, device=0, weights=None):
        """Load a model file on ``device`` (an id, a Device or a Context).

        ``weights`` places the model's weights in memory the caller chose
        (``aclmdlLoadFromFileWithMem``): a DeviceBuffer of at least
        ``Model.query_size(path)[1]`` bytes on the same device (the caller's:
        it must stay open while the model lives), or a Model loaded that way
        from the same file, whose weight memory is then shared.  The model
        keeps that memory referenced; work memory is the model's own.
        """
        return _load_model(path, device, weights)

    cdef int _release(self) except -1:
        return _unload(self)

    def close(self):
        """Unload the model and free what it holds. Idempotent."""
        own, self._own_device = self._own_device, None
        try:
            Resource.close(self)
        finally:
            if own is not None:
                own.close()

    # ---- description ----------------------------------------------------------

    @property
    def model_id(self):
        """The AscendCL model id."""
        self._ensure_open()
        return self._id

    @property
    def device_id(self):
        """Id of the device the model is loaded on."""
        return self.device.id

    @property
    def weights(self):
        """The DeviceBuffer holding the weights when they are caller-placed
        (``weights=`` or ``load_instances``), else None (runtime-managed)."""
        return None if self._weights is None else self._weights.buffer

    @property
    def weight_sharers(self):
        """How many loaded models use this model's weight memory (1 when it is its own)."""
        return 1 if self._weights is None else self._weights.users

    @property
    def max_batch(self):
        """Largest batch one execution takes (the largest gear, or the static batch)."""
        if self.batch_sizes:
            return self.batch_sizes[-1]
        return int(self.inputs[0].shape[0]) if self.inputs else 1

    def output_has_batch(self, index):
        """Whether output ``index`` carries one row per batch item.

        In a dynamic-batch model the batch dimension is reported as -1; an
        output without it (a class table, an anchor grid) has a fixed shape
        and is returned whole.  In a static model every output is whole.
        """
        return self.dynamic_index >= 0 and len(self.outputs[index].shape) > 0 \
            and self.outputs[index].shape[0] == -1

    def gear_for(self, rows):
        """The smallest gear holding ``rows`` rows (ValueError above the largest)."""
        found = holding_gear([(g, ((g,),)) for g in self.batch_sizes], ((rows,),))
        if found is not None:
            return found[0]
        raise ValueError(f"batch {rows} exceeds the largest gear {self.max_batch} of {self.path!r}")

    def __repr__(self):
        if self._closed:
            return f"<ascend_engine.Model {self.path!r} closed>"
        ins = ", ".join(f"{s.name}:{s.dtype}{shape_text(s.shape)}" for s in self.inputs)
        outs = ", ".join(f"{s.name}:{s.dtype}{shape_text(s.shape)}" for s in self.outputs)
        gears = f" gears={list(self.batch_sizes)}" if self.batch_sizes else ""
        return f"<ascend_engine.Model {self.path!r} id={self._id} device={self.device.id} [{ins}] -> [{outs}]{gears}>"

    # ---- execution (ascend_engine._model's kinds) ---------------------------------------------

    def __call__(self, **feeds):
        """Run once synchronously on numpy inputs; returns {output name: array}.

        A dynamic-batch model runs each chunk of up to the largest gear at the
        smallest gear that holds it (padding, then slicing the outputs).  An
        image-size or dims-gear model runs at the smallest gear holding every
        input's shape: the inputs are padded with zeros up to it (after the
        data, at the end of each dimension) and every output dimension that
        follows an input dimension across the gears is sliced back to the
        request's size; the others keep the gear's size.  A shape-range model
        gets its inputs' shapes as tensor descriptions, and each output comes
        back with the shape the execution reports (``range_output_nbytes``,
        if set, is the first capacity tried for each output buffer).
        """
        api()
        return self._kind.call(self, feeds)

    def execute_async(self, inputs, outputs, Stream stream not None, batch=None, *, gear=None, shapes=None):
        """Queue one execution on ``stream`` with device buffers.

        ``inputs`` / ``outputs``: DeviceBuffers in the model's order, each at
        least the TensorSpec's ``nbytes``.  A dynamic-batch model needs
        ``batch`` (rows); it runs at the smallest gear holding them, which is
        returned.  An image-size model needs ``gear=(height, width)``, one of
        ``hw_sizes``; a dims-gear model ``gear=`` the gear's index in
        ``dims_gears``; a shape-range model ``shapes=`` one shape per input
        (inside ``shape_ranges``), with output buffers large enough for what
        those shapes produce.  Read the outputs only after the stream is
        synchronized.
        """
        api()
        stream_handle(stream)   # a closed stream stops here, before any AscendCL call
        if batch is not None:   # rows, never truncated or parsed: 2.7, '4' and True are refused
            batch = positive_int(batch, f"model {self.path!r}: batch")
        return self._kind.execute_async(self, list(inputs), list(outputs), stream, batch, gear, shapes)

    # ---- image-size and dims gears (ascend_engine._model's kinds) --------------------------------

    def gear_shapes(self, feeds):
        """The gear a call with these feeds runs at: (gear, {input name: padded shape}).

        ``gear`` is (height, width) for an image-size model, the gear's index in
        ``dims_gears`` for a dims-gear model.  ValueError when no gear holds them.
        """
        return self._kind.gear_shapes(self, feeds)

    def gear_io_shapes(self):
        """Every gear's input and output shapes: {gear: (input shapes, output shapes)}.

        For an image-size or dims-gear model: ``gear`` as in :meth:`gear_shapes`
        ((height, width), or the index in ``dims_gears``); the input shapes in
        input order, the output shapes as ``aclmdlGetCurOutputDims`` reports
        them with that gear set (what a buffer of the gear holds).  ValueError
        for other models.
        """
        return self._kind.gear_io_shapes(self)

    @property
    def output_follow(self):
        """Per output, per dimension: the (input index, dimension) it follows
        across the gears, or None (it keeps the gear's size).  An output sliced
        back to a request's size cuts exactly the dimensions that follow an
        input.  Image-size and dims-gear models only (else None)."""
        if not self._kind.has_gears:
            return None
        if self._follow is None:
            self.gear_io_shapes()
        return tuple(tuple(dims) for dims in self._follow)
