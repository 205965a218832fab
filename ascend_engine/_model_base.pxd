# cython: language_level=3
"""Cython interface of ascend_engine._model_base (the loaded, described Model),
for ascend_engine._model, whose dynamic kinds (subclasses of ``_Kind``) run it.

    from ascend_engine._model_base cimport Model, _Kind, _DatasetPair, register_kind, ...
"""

from libc.stdint cimport uint32_t

from ascend_engine._acl cimport aclmdlDataset, aclmdlDesc
from ascend_engine._runtime cimport Device, Resource, Stream
from ascend_engine._memory cimport DeviceBuffer


cdef class _DatasetPair:
    cdef aclmdlDataset *inputs
    cdef aclmdlDataset *outputs
    cdef list buffers          # aclDataBuffer* as ints, destroyed with the pair
    cdef DeviceBuffer dynamic  # the dynamic-batch input's buffer, or None
    cdef list keep             # device buffers the datasets point into
    cdef bint owns             # destroy() closes the buffers in keep
    cdef int add(self, aclmdlDataset *dataset, DeviceBuffer buf) except -1
    cdef destroy(self, bint from_finalizer=*)


cdef class Model(Resource):
    cdef uint32_t _id
    cdef aclmdlDesc *_desc
    cdef readonly Device device
    cdef readonly str path
    cdef readonly tuple inputs
    cdef readonly tuple outputs
    cdef readonly tuple batch_sizes
    cdef readonly tuple hw_sizes
    cdef readonly tuple dims_gears
    cdef readonly dict shape_ranges
    cdef readonly str dynamic_kind
    cdef _Kind _kind           # the dynamic_kind's strategy, chosen once at load
    cdef readonly int dynamic_index
    cdef object _follow
    cdef public object range_output_nbytes
    cdef readonly size_t dynamic_nbytes
    cdef object _own_device
    cdef object _lock
    cdef _DatasetPair _sync
    cdef dict _async_sets
    cdef object _weights       # _SharedWeights when the weights are caller-placed, else None


cdef class _Kind:
    cdef readonly str name
    cdef readonly bint has_gears      # image-size or dims gears: gear_shapes, gear_io_shapes, output_follow
    cdef readonly bint has_tensor     # the model has the dynamic-mechanism input (ACL_DYNAMIC_TENSOR_NAME)
    cdef describe(self, Model m, size_t gear_count)
    cdef call(self, Model m, feeds)
    cdef execute_async(self, Model m, list inputs, list outputs, Stream stream, batch, gear, shapes)
    cdef gear_shapes(self, Model m, feeds)
    cdef gear_io_shapes(self, Model m)


cdef int register_kind(str name, type cls) except -1
cdef _DatasetPair _staging_pair(Model self)
cdef _DatasetPair _async_pair(Model self, list inputs, list outputs)
cdef _DatasetPair _make_pair(Model self, list ins, list outs, bint owns=*)
cdef _describe_dims(Model self, size_t count)
cdef _describe_ranges(Model self)
