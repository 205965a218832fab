# cython: language_level=3
"""The lowered plan as the device queue (``_executor.pyx``) cimports it."""

from libc.stdint cimport uint64_t

from ascend_engine._executor_api cimport ae_node_plan, ae_plan, ae_tensor_plan


cdef class LoweredPlan:
    cdef ae_plan p                 # what ae_engine_create reads (and copies)
    cdef ae_tensor_plan *tensors
    cdef ae_node_plan *nodes
    cdef int *ints
    cdef uint64_t *gears
    cdef void *dev_arrays          # contexts, device ids, slot bytes, stream devices (one block)
    cdef list keep                 # arrays the C plan points into, until C has copied them
    cdef readonly list builtins    # (node index, BuiltinStep name): host functions the queue binds
    cdef void free(self)
