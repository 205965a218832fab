# cython: language_level=3
"""Cython interface of ascend_engine._memory (device and pinned host buffers).

    from ascend_engine._memory cimport DeviceBuffer, HostBuffer, buffer_ptr

``buffer_ptr(b)`` -- the device pointer of an open DeviceBuffer,
ObjectClosedError (before any AscendCL call) for a closed one: other modules
take it only through this, never from ``_ptr``.
"""

from ascend_engine._runtime cimport Device, Resource


cdef class DeviceBuffer(Resource):
    cdef void *_ptr
    cdef readonly size_t nbytes
    cdef readonly Device device
    cdef size_t _offset_of(self, offset) except? 0


cdef class HostBuffer(Resource):
    cdef void *_ptr
    cdef readonly size_t nbytes
    cdef readonly Device device
    cdef int _exports
    cdef Py_ssize_t _shape[1]
    cdef Py_ssize_t _strides[1]
    cdef object _own_device       # a Device(0) opened implicitly for this buffer, or None


cdef void *buffer_ptr(DeviceBuffer buf) except NULL
