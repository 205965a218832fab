# cython: language_level=3
"""Cython interface of ascend_engine._runtime, for other Cython modules.

    from ascend_engine._acl cimport *
    from ascend_engine._runtime cimport api, checked_aclrtMalloc, make_current, Device, Stream, ...

* ``checked_<name>(...)`` -- call AscendCL function <name> (one that returns
  aclError) and raise the matching AclError for a non-zero code, or the
  BackendError of ``missing_function()`` for an optional function the backend
  lacks; ``require_<name>()`` -- that BackendError alone, for an optional
  function called through the table.  Generated from
  include/ascend_engine/acl_functions.h into ``_acl_checked.pxi`` (included
  below; its header says which functions have no checked_ wrapper and why).
  They need no GIL: call the blocking ones inside ``with nogil:``.
* ``api()`` -- the loaded AscendCL function table; loads the backend and
  initialises AscendCL on first use.  Never NULL on return.
* ``api_nogil()`` -- the same without the GIL (it takes the GIL only to load).
* ``api_loaded()`` -- the table with the backend loaded but AscendCL not
  initialised: for ``ascend_engine.acl``, whose programs call ``acl.init()``.
* ``check(rc, "aclFoo")`` -- raise the matching AclError for a non-zero code
  (reads aclGetRecentErrMsg on the calling thread, so call it on the thread
  that made the failing call, right after it): for a code read before it is
  checked; a call checked at once goes through its checked_ wrapper.
* ``missing_function("aclFoo")`` -- raise the BackendError for an optional
  function the loaded backend lacks.
* ``make_current(ctx)`` -- make ``ctx`` the calling thread's current context
  if it is not already (one cheap aclrtGetCurrentContext otherwise).
* ``Resource._activate()`` -- raise if closed, then make the object's
  context current on the calling thread: call it before touching the handle.
* ``Resource._release()`` -- what a subclass frees when close() runs (its
  children closed first, its context current); ``Resource._close_dropped()``
  -- how __del__ closes an object dropped without close() (it then emits the
  ResourceWarning): ``close_from_finalizer`` unless a subclass needs more.
* ``runtime_usable()`` -- AscendCL is loaded and initialised and neither
  finalized nor inherited through fork(): a finalizer may release handles.
* ``close_from_finalizer(obj)`` -- close ``obj`` from a finalizer (failures
  logged, the thread's current context put back).
* ``_device_of(where)`` -- the Device of a Device or a Context (TypeError else).
* ``stream_handle(s)``, ``event_handle(e)`` (and ``_memory``'s ``buffer_ptr(b)``) -- the native
  handle of an open object, ObjectClosedError (before any AscendCL call) for
  a closed one.  Other modules take handles only through these, never from
  ``_handle`` / ``_ptr``: a closed object's handle is NULL, or was destroyed.
"""

from ascend_engine._acl cimport *


cdef const ae_acl_api *api() except NULL
cdef const ae_acl_api *api_nogil() except NULL nogil
cdef const ae_acl_api *api_loaded() except NULL
cdef const ae_dvpp_api *dvpp_api() except NULL
cdef int check(aclError rc, const char *fn) except -1
cdef int missing_function(const char *name) except -1
cdef int make_current(aclrtContext ctx) except -1
cdef int check_not_forked() except -1
cdef bint runtime_usable() noexcept
cdef bint shutting_down() noexcept

# The checked wrappers, generated from include/ascend_engine/acl_functions.h by
# tools/gen_acl_pxd.py (setup.py runs it on every build); after the functions they call.
include "_acl_checked.pxi"


cdef class Resource:
    cdef aclrtContext _ctx        # context made current before every use
    cdef bint _closed
    cdef readonly object owner    # Device or Context this object needs alive (None for a Device)
    cdef dict _children           # serial -> weakref, in creation order
    cdef long long _serial
    cdef object __weakref__
    cdef int _ensure_open(self) except -1
    cdef int _activate(self) except -1
    cdef int _register(self, Resource owner) except -1
    cdef int _release(self) except -1
    cdef int _close_dropped(self) except -1


cdef class Device(Resource):
    cdef readonly int id


cdef class Context(Resource):
    cdef readonly Device device


cdef class Stream(Resource):
    cdef aclrtStream _handle
    cdef readonly Device device
    cdef list _pending            # host objects an async copy still reads or writes
    cdef _keep(self, obj)


cdef class Event(Resource):
    cdef aclrtEvent _handle
    cdef readonly Device device
    cdef readonly bint timing


cdef aclrtStream stream_handle(object stream) except? NULL
cdef aclrtEvent event_handle(Event event) except NULL
cdef int close_from_finalizer(Resource obj) except -1
cdef Device _device_of(object where)
