# cython: language_level=3, embedsignature=True
"""The AscendCL runtime's memory: device (DeviceBuffer) and pinned host
(HostBuffer) buffers, and the host buffer views the copies read and write.

A cimportable module (``_memory.pxd``) on top of ``_runtime`` (devices,
contexts, streams; the rules in its docstring hold here too): it cimports the
runtime, the runtime never cimports it.  ``ascend_engine._runtime`` re-exports
both classes under their names.
"""

import numbers

import numpy

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uintptr_t

from ascend_engine._checks import byte_count, tensor_array, tensor_dtype
from ascend_engine._acl cimport *
from ascend_engine._runtime cimport *


cdef struct _view:
    void *ptr
    size_t nbytes


cdef object _host_view(object obj, bint writable, _view *out):
    """A memoryview on obj (kept by the caller while the copy runs) and its pointer."""
    cdef Py_buffer buf
    cdef int flags = PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"expected a buffer (numpy array, bytes, HostBuffer...), got {type(obj).__name__}")
    try:
        PyObject_GetBuffer(mv, &buf, flags)
    except BufferError as exc:
        what = "writable C-contiguous" if writable else "C-contiguous"
        raise ValueError(f"need a {what} buffer (numpy.ascontiguousarray helps): {exc}") from None
    out.ptr = buf.buf
    out.nbytes = <size_t>buf.len
    PyBuffer_Release(&buf)   # mv itself keeps the export alive
    return mv


cdef class DeviceBuffer(Resource):
    """Device memory (``aclrtMalloc``) of ``nbytes`` bytes on a device.

    Copies from and to host buffers (numpy arrays, bytes, HostBuffer) and other
    DeviceBuffers; ``stream=None`` copies synchronously with the GIL released,
    a Stream queues the copy (the host object is kept alive until the stream is
    synchronized; read the result only after that).
    """

    def __init__(self, where not None, nbytes):
        cdef void *p = NULL
        cdef Resource owner = where
        nbytes = byte_count(nbytes, "DeviceBuffer nbytes")
        self.device = _device_of(where)
        owner._activate()
        checked_aclrtMalloc(&p, nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
        self._ptr = p
        self.nbytes = nbytes
        self._ctx = owner._ctx
        self._register(owner)

    cdef int _release(self) except -1:
        cdef void *p = self._ptr
        self._ptr = NULL
        checked_aclrtFree(p)
        return 0

    cdef size_t _offset_of(self, offset) except? 0:
        """``offset`` checked: an integer inside the buffer (a TypeError or ValueError naming
        it, never an OverflowError)."""
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise TypeError(f"offset must be an integer, got {type(offset).__name__}")
        if not 0 <= offset < self.nbytes:
            raise ValueError(f"offset {offset} outside the buffer ({self.nbytes} bytes)")
        return <size_t>offset

    def copy_from(self, src, stream=None, *, offset=0):
        """Copy all of ``src`` (host buffer or DeviceBuffer) into this buffer at ``offset``.

        The runtime checks the bounds: a source larger than the space left
        raises InvalidParamError.  With a stream and a source that is not
        pinned (not a HostBuffer), CANN 8.5+ makes the copy synchronous: the
        call returns once the stream's earlier work and the copy are done.
        Returns self.
        """
        cdef _view v
        cdef aclrtMemcpyKind kind
        cdef aclrtStream s = NULL
        cdef void *dst
        cdef size_t dmax
        cdef DeviceBuffer other
        self._ensure_open()
        s = stream_handle(stream)
        cdef size_t off = self._offset_of(offset)
        keep = None
        if isinstance(src, DeviceBuffer):
            other = src
            v.ptr = buffer_ptr(other)
            v.nbytes = other.nbytes
            kind = ACL_MEMCPY_DEVICE_TO_DEVICE
            keep = other
        else:
            if isinstance(src, numpy.ndarray):   # its bytes are copied as they are: no PyObject pointers
                tensor_array(src, "copy_from: src")
            keep = _host_view(src, False, &v)
            kind = ACL_MEMCPY_HOST_TO_DEVICE
            if isinstance(src, HostBuffer):
                keep = src   # an object, not a view: close() stays possible once streams are done
        make_current(self._ctx)
        dst = <char *>self._ptr + off
        dmax = self.nbytes - off
        if stream is None:
            with nogil:
                checked_aclrtMemcpy(dst, dmax, v.ptr, v.nbytes, kind)
        else:
            with nogil:   # pageable memory makes it wait for the stream
                checked_aclrtMemcpyAsync(dst, dmax, v.ptr, v.nbytes, kind, s)
            (<Stream>stream)._keep(keep)
            (<Stream>stream)._keep(self)
        return self

    def copy_to(self, out=None, stream=None, *, offset=0, nbytes=None, dtype=None):
        """Copy this buffer (from ``offset``, ``nbytes`` bytes, default: the rest) to the host.

        ``out``: a writable buffer to fill (it must be large enough, or the
        runtime rejects the copy); None allocates a numpy array of ``dtype``
        (default uint8).  Returns ``out`` as a numpy array.  With a stream, a
        HostBuffer ``out`` is filled only once the stream is synchronized; any
        other (pageable) ``out`` is filled before the call returns, as CANN
        8.5+ does.
        """
        cdef _view v
        cdef aclrtStream s = NULL
        cdef size_t count
        cdef const void *src
        self._ensure_open()
        s = stream_handle(stream)
        cdef size_t off = self._offset_of(offset)
        if nbytes is None:
            count = self.nbytes - off
        elif isinstance(nbytes, numbers.Integral) and not isinstance(nbytes, bool) and nbytes == 0:
            count = 0       # nothing to copy (an open dimension of 0): a valid, empty copy
        else:
            count = byte_count(nbytes, "copy_to: nbytes")
        if out is None:
            dt = tensor_dtype(dtype if dtype is not None else numpy.uint8, "copy_to: dtype", TypeError)
            if count % dt.itemsize:
                raise ValueError(f"{count} bytes is not a whole number of {dt} items")
            out = numpy.empty(count // dt.itemsize, dtype=dt)
        elif isinstance(out, numpy.ndarray):   # the device's bytes land as they are: no PyObject pointers
            tensor_array(out, "copy_to: out")
        keep = _host_view(out, True, &v)
        src = <const char *>self._ptr + off
        if isinstance(out, HostBuffer):
            keep = out
        make_current(self._ctx)
        if stream is None:
            with nogil:
                checked_aclrtMemcpy(v.ptr, v.nbytes, src, count, ACL_MEMCPY_DEVICE_TO_HOST)
        else:
            with nogil:   # pageable memory makes it wait for the stream
                checked_aclrtMemcpyAsync(v.ptr, v.nbytes, src, count, ACL_MEMCPY_DEVICE_TO_HOST, s)
            (<Stream>stream)._keep(keep)
            (<Stream>stream)._keep(self)
        return out if isinstance(out, numpy.ndarray) else numpy.asarray(out)

    def fill(self, int value, stream=None):
        """Set every byte to ``value`` (0-255); with a stream, queued."""
        cdef aclrtStream s = NULL
        cdef void *p
        cdef size_t n = self.nbytes
        if not 0 <= value <= 255:
            raise ValueError("fill value must be a byte (0-255)")
        self._ensure_open()
        s = stream_handle(stream)
        make_current(self._ctx)
        p = self._ptr
        if stream is None:
            with nogil:
                checked_aclrtMemset(p, n, value, n)
        else:
            checked_aclrtMemsetAsync(p, n, value, n, s)
            (<Stream>stream)._keep(self)
        return self

    @property
    def ptr(self):
        """The device address as an int (0 when closed)."""
        return <uintptr_t>self._ptr

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        state = " closed" if self._closed else f" ptr=0x{<uintptr_t>self._ptr:x}"
        return f"<ascend_engine.DeviceBuffer device={self.device.id} nbytes={self.nbytes}{state}>"


cdef void *buffer_ptr(DeviceBuffer buf) except NULL:
    """The device address of an open DeviceBuffer (ObjectClosedError when closed, before any AscendCL call)."""
    buf._ensure_open()
    return buf._ptr


cdef class HostBuffer(Resource):
    """Pinned host memory (``aclrtMallocHost``) with the buffer protocol.

    ``numpy.asarray(hb)`` and ``memoryview(hb)`` view the memory without a
    copy; :meth:`as_array` gives a typed, shaped view.  Close it only when no
    view is left (close() raises BufferError otherwise).
    """

    def __init__(self, nbytes, device=None):
        cdef void *p = NULL
        cdef Resource owner
        own = None
        nbytes = byte_count(nbytes, "HostBuffer nbytes")
        if device is None:
            # Pinned memory needs a device context: hold a reference to device 0.
            own = device = Device(0)
        self.device = _device_of(device)
        owner = device
        try:
            owner._activate()
            checked_aclrtMallocHost(&p, nbytes)
        except BaseException:
            if own is not None:
                own.close()
            raise
        self._ptr = p
        self.nbytes = nbytes
        self._shape[0] = <Py_ssize_t>nbytes
        self._strides[0] = 1
        self._ctx = owner._ctx
        # An implicitly opened device belongs to this buffer alone: the buffer
        # closes it, so it is not registered as the buffer's owner.
        self._own_device = own
        self._register(None if own is not None else owner)

    cdef int _release(self) except -1:
        cdef void *p = self._ptr
        if self._exports > 0:
            raise BufferError(f"HostBuffer has {self._exports} live view(s) (numpy arrays/memoryviews); "
                              "drop them before close()")
        self._ptr = NULL
        try:
            checked_aclrtFreeHost(p)
        finally:
            dev, self._own_device = self._own_device, None
            if dev is not None:
                dev.close()
        return 0

    def close(self):
        """Free the pinned memory. Idempotent; raises BufferError while views exist."""
        if self._exports > 0 and not self._closed:
            raise BufferError(f"HostBuffer has {self._exports} live view(s) (numpy arrays/memoryviews); "
                              "drop them before close()")
        Resource.close(self)

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        self._ensure_open()
        buffer.buf = self._ptr
        buffer.obj = self
        buffer.len = <Py_ssize_t>self.nbytes
        buffer.readonly = 0
        buffer.itemsize = 1
        if flags & PyBUF_FORMAT:
            buffer.format = "B"
        else:
            buffer.format = NULL
        buffer.ndim = 1
        buffer.shape = self._shape
        buffer.strides = self._strides
        buffer.suboffsets = NULL
        buffer.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *buffer):
        self._exports -= 1

    def as_array(self, dtype="uint8", shape=None):
        """A numpy view of the memory with ``dtype`` and ``shape`` (default: 1-D, all of it)."""
        self._ensure_open()
        arr = numpy.frombuffer(self, dtype=dtype)
        return arr if shape is None else arr.reshape(shape)

    @property
    def ptr(self):
        """The host address as an int (0 when closed)."""
        return <uintptr_t>self._ptr

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        state = " closed" if self._closed else f" ptr=0x{<uintptr_t>self._ptr:x}"
        return f"<ascend_engine.HostBuffer nbytes={self.nbytes}{state}>"
