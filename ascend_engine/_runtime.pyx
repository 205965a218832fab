# cython: language_level=3, embedsignature=True
"""The AscendCL runtime layer: devices, contexts, streams, events and buffers.

Everything here reaches AscendCL through the loader's function table (see
``include/ascend_engine/loader.h``).  The rules this module keeps, which the
model and executor layers rely on:

* One place checks return codes: :func:`check` raises the
  :mod:`ascend_engine.errors` class for the code, with the runtime's recent
  error message read on the failing thread; the generated ``checked_<name>``
  wrappers (``_acl_checked.pxi``, see ``_runtime.pxd``) call it for every
  AscendCL call checked at once, and raise :func:`missing_function`'s error
  for an optional function the backend lacks.
* AscendCL is initialised once per process, on first use, and finalised at
  interpreter exit after every object this module created has been closed.
* Every object remembers the context it was created in and makes it current
  on the calling thread before each use, so any Python thread may use any
  object (AscendCL's current context is per thread).
* Every call that may block (synchronize, synchronous copies) runs with the
  GIL released.
* Objects keep their device alive; closing a device (or context) first closes
  everything created from it, newest first.  ``close()`` is idempotent and a
  closed object raises :class:`~ascend_engine.errors.ObjectClosedError`.
"""

import atexit
import collections
import logging
import os
import threading
import warnings
import weakref

import numpy

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, uint32_t, uintptr_t

from ascend_engine import errors as _errors
from ascend_engine._checks import byte_count, tensor_array, tensor_dtype, timeout_ms
from ascend_engine._acl cimport *

_log = logging.getLogger("ascend_engine")

BackendInfo = collections.namedtuple("BackendInfo", "name library")
BackendInfo.__doc__ = "The loaded AscendCL backend: name ('acl' or 'sim') and the library's path."
DeviceInfo = collections.namedtuple("DeviceInfo", "id soc memory_total memory_free")
DeviceInfo.__doc__ = "One device: id, SoC name, device memory total and free (bytes)."
MemoryInfo = collections.namedtuple("MemoryInfo", "free total")
MemoryInfo.__doc__ = "Device memory of one device in bytes: free and total (aclrtGetMemInfo, HBM)."

BACKENDS = ("auto", "acl", "sim")

# ---------------------------------------------------------------------------
# Process state.  `_state_lock` guards the one-time load + aclInit and the
# shutdown; `_api_ptr` is published only once both are done.  The device
# reference counts below change only with the GIL held.
# ---------------------------------------------------------------------------

cdef const ae_acl_api *_api_ptr = NULL
_state_lock = threading.RLock()
_owns_init = False      # this module (or the loader) called aclInit and must finalize
_shut_down = False
_live = {}              # serial -> weakref of every open Resource, in creation order
_serial_counter = 0

# Set in a child process forked after AscendCL was initialised: CANN state
# (threads, device handles) does not survive fork(), so every call there
# raises ForkedProcessError and nothing is released at exit.
cdef bint _forked = False

DEF MAX_DEVICES = 1024
cdef int _dev_refs[MAX_DEVICES]          # open Device objects per id
cdef aclrtContext _dev_ctx[MAX_DEVICES]  # the device's default context while refs > 0


def _sim_library_path():
    # ASCEND_ENGINE_SIM_LIBRARY points at another build of the simulator
    # (a sanitizer or debug build, say); by default the one in the package.
    return os.environ.get("ASCEND_ENGINE_SIM_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "_lib", "libascendcl_sim.so"
    )


def _requested_backend():
    value = os.environ.get("ASCEND_ENGINE_BACKEND", "").strip().lower() or "auto"
    if value not in BACKENDS:
        raise _errors.BackendError(
            f"ASCEND_ENGINE_BACKEND={os.environ.get('ASCEND_ENGINE_BACKEND')!r} is not a backend; "
            f"allowed values: {', '.join(BACKENDS)}"
        )
    return value


def _load_and_init():
    """Load the backend and call aclInit once per process (thread-safe)."""
    global _api_ptr, _owns_init, _init_pid
    cdef char err[16384]
    cdef bytes req
    cdef bytes sim
    cdef const ae_acl_api *t
    cdef aclError rc
    with _state_lock:
        if _api_ptr is not NULL:
            return
        if _shut_down:
            raise _errors.BackendError(
                "ascend_engine.shutdown() already finalized AscendCL in this process; it cannot be used again"
            )
        req = _requested_backend().encode()
        sim = os.fsencode(_sim_library_path())
        err[0] = 0
        if ae_load_backend(req, sim, err, sizeof(err)) != 0:
            raise _errors.BackendError(err.decode("utf-8", "replace"))
        note = ae_backend_note().decode("utf-8", "replace")
        if note:
            first, _, rest = note.partition("\n")
            _log.warning("%s", first)
            _log.debug("libascendcl.so search:\n%s", rest)
        t = ae_api()
        if ae_backend_initialized():
            _owns_init = True
        else:
            rc = t.aclInit(NULL)
            if rc == ACL_SUCCESS:
                _owns_init = True
            elif rc == ACL_ERROR_REPEAT_INITIALIZE:
                # Someone else in this process initialised AscendCL (another
                # library, or test code through ctypes): use it, and leave the
                # matching aclFinalize to them.
                _owns_init = False
            else:
                _raise(t, rc, b"aclInit")
        atexit.register(shutdown)
        _init_pid = os.getpid()
        _api_ptr = t


cdef int check_not_forked() except -1:
    """Raise ForkedProcessError in a child forked after AscendCL was initialised."""
    if _forked:
        raise _errors.ForkedProcessError(
            f"this process (pid {os.getpid()}) was forked from pid {_init_pid} after AscendCL was "
            "initialised there: CANN does not support using devices, streams, models or engines across "
            "fork(). Use the 'spawn' or 'forkserver' start method, or fork before the first AscendCL call"
        )
    return 0


_init_pid = None   # the process that initialised AscendCL


def _after_fork_in_child():
    """os.register_at_fork hook: forget the parent's AscendCL state in the child.

    Objects inherited from the parent are marked unusable without touching
    AscendCL (their handles belong to the parent), so the child neither uses
    them nor releases them at exit.
    """
    global _forked, _api_ptr, _shut_down
    if _api_ptr is NULL:
        return   # nothing was initialised before the fork: the child may start afresh
    _forked = True
    _shut_down = True
    _api_ptr = NULL
    for ref in list(_live.values()):
        obj = ref()
        if obj is not None:
            (<Resource>obj)._closed = True
    _live.clear()
    for i in range(MAX_DEVICES):
        _dev_refs[i] = 0
        _dev_ctx[i] = NULL


os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child():
    """True in a child process forked after AscendCL was initialised."""
    return bool(_forked)


cdef bint runtime_usable() noexcept:
    """AscendCL is up in this process (not yet loaded, finalized or inherited by fork: False)."""
    return _api_ptr is not NULL


cdef bint shutting_down() noexcept:
    """shutdown() (at exit, or called) has begun: it closes what is still open next."""
    return _shut_down


cdef const ae_acl_api *api() except NULL:
    """The AscendCL function table; loads and initialises on first use."""
    if _forked:
        check_not_forked()
    if _api_ptr is NULL:
        _load_and_init()
    return _api_ptr


cdef const ae_acl_api *api_nogil() except NULL nogil:
    """api() without the GIL, for the checked wrappers: the GIL is taken only
    while the table is not published (to load it, or to raise why it cannot be)."""
    cdef const ae_acl_api *t = _api_ptr
    if t is not NULL:
        return t
    with gil:
        return api()


cdef int _raise(const ae_acl_api *t, aclError rc, const char *fn) except -1:
    cdef const char *msg = NULL
    if t is not NULL and t.aclGetRecentErrMsg is not NULL:
        msg = t.aclGetRecentErrMsg()
    _errors.raise_for(rc, fn.decode(), msg.decode("utf-8", "replace") if msg is not NULL else "")
    return -1


cdef int check(aclError rc, const char *fn) except -1:
    """Raise the AclError subclass for a non-zero AscendCL return code."""
    if rc == ACL_SUCCESS:
        return 0
    return _raise(ae_api(), rc, fn)


cdef int missing_function(const char *name) except -1:
    """Raise the BackendError for an optional function the loaded backend lacks."""
    raise _errors.BackendError(ae_missing_function_message(name).decode("utf-8", "replace"))


cdef int make_current(aclrtContext ctx) except -1:
    """Make ctx the calling thread's current context unless it already is."""
    cdef const ae_acl_api *t = api()
    cdef aclrtContext cur = NULL
    if t.aclrtGetCurrentContext(&cur) != ACL_SUCCESS or cur != ctx:
        checked_aclrtSetCurrentContext(ctx)
    return 0


def _check(int rc, str function):
    """Python-level check(): raise the AclError for a non-zero code (used by tests)."""
    check(rc, function.encode())


def shutdown():
    """Close every open object (newest first), reset devices and finalise AscendCL.

    Runs automatically at interpreter exit.  After it, this process cannot use
    AscendCL again (a CANN rule: aclInit once per process).  Idempotent.
    """
    global _shut_down, _api_ptr
    cdef const ae_acl_api *t
    cdef int i
    with _state_lock:
        if _shut_down:
            return
        _shut_down = True
        if _api_ptr is NULL:
            return
        _close_at_exit()
        t = _api_ptr
        for i in range(MAX_DEVICES):
            if _dev_refs[i] > 0:
                _dev_refs[i] = 0
                t.aclrtResetDevice(i)
        if _owns_init:
            t.aclFinalize()
        _api_ptr = NULL


def _closing_order(dict refs):
    """The open objects of a serial -> weakref map in the order they close:
    streams first, then the rest, newest first.

    Streams go first because closing one waits for its queued work: after
    that no copy can still be reading or writing a buffer that is freed next.
    Newest first closes what was made from an object (a model from its
    device) before that object.
    """
    objs = []
    for serial in sorted(refs, reverse=True):
        ref = refs.get(serial)
        obj = ref() if ref is not None else None
        if obj is not None and not (<Resource>obj)._closed:
            objs.append(obj)
    objs.sort(key=lambda o: not isinstance(o, Stream))   # stable: keeps newest-first order
    return objs


def _close_all(dict refs):
    """Close the objects of a serial -> weakref map (see :func:`_closing_order`)."""
    for obj in _closing_order(refs):
        obj.close()


def _close_at_exit():
    """Close every open object (see :func:`_closing_order`), the newest again
    first whenever closing one opened another.

    An engine whose device still runs work abandoned after a timeout leaves
    its remains (the executor, with the models and devices it uses): they are
    released next, waiting for the device, before those models and devices,
    not left open until the devices are reset.  A failure is reported and the
    others are closed all the same.
    """
    tried = set()
    while True:
        opened = _serial_counter
        objs = [o for o in _closing_order(_live) if (<Resource>o)._serial not in tried]
        if not objs:
            return
        for obj in objs:
            if (<Resource>obj)._closed:   # closed with its owner
                continue
            tried.add((<Resource>obj)._serial)
            try:
                obj.close()
            except Exception as exc:   # at exit: report and keep going
                _log.warning("ascend_engine: closing %r at exit failed: %s", obj, exc)
            if _serial_counter != opened:
                break   # the close opened something: choose again


def backend():
    """The loaded backend as ``BackendInfo(name, library)``; loads it on first use.

    The backend is chosen by ``ASCEND_ENGINE_BACKEND``: ``auto`` (default: the
    real libascendcl.so when it reports a device, else the simulator), ``acl``
    or ``sim``.
    """
    api()
    return BackendInfo(ae_backend_name().decode(), os.fsdecode(ae_backend_library()))


def device_count():
    """Number of devices AscendCL reports."""
    cdef uint32_t n = 0
    checked_aclrtGetDeviceCount(&n)
    return int(n)


cdef _device_info(const ae_acl_api *t, int i):
    cdef size_t free_b = 0, total_b = 0
    cdef const char *soc = NULL
    checked_aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b)
    if t.aclrtGetSocName is not NULL:
        soc = t.aclrtGetSocName()
    return DeviceInfo(i, soc.decode("utf-8", "replace") if soc is not NULL else "", int(total_b), int(free_b))


def devices():
    """One ``DeviceInfo(id, soc, memory_total, memory_free)`` per device.

    Devices not opened by this process are opened briefly to query them; the
    calling thread's current context is restored afterwards.
    """
    cdef const ae_acl_api *t = api()
    cdef aclrtContext saved = NULL
    cdef int i, n = device_count()
    cdef bint had_ctx = t.aclrtGetCurrentContext(&saved) == ACL_SUCCESS and saved is not NULL
    out = []
    try:
        for i in range(n):
            if i < MAX_DEVICES and _dev_refs[i] > 0:
                make_current(_dev_ctx[i])
                out.append(_device_info(t, i))
            else:
                checked_aclrtSetDevice(i)
                try:
                    out.append(_device_info(t, i))
                finally:
                    t.aclrtResetDevice(i)
    finally:
        if had_ctx:
            t.aclrtSetCurrentContext(saved)
    return out


# ---------------------------------------------------------------------------
# Resource: what every object shares
# ---------------------------------------------------------------------------

cdef class Resource:
    """Base of every runtime object: context tracking, close(), context manager."""

    def __cinit__(self):
        self._closed = True   # until the subclass has created its handle
        self._children = {}

    cdef int _ensure_open(self) except -1:
        if self._closed:
            check_not_forked()
            raise _errors.ObjectClosedError(f"{type(self).__name__} is closed")
        return 0

    cdef int _activate(self) except -1:
        if self._closed:
            check_not_forked()
            raise _errors.ObjectClosedError(f"{type(self).__name__} is closed")
        make_current(self._ctx)
        return 0

    cdef int _register(self, Resource owner) except -1:
        """Mark open and record self under its owner and in the process registry."""
        global _serial_counter
        _serial_counter += 1
        self._serial = _serial_counter
        self._closed = False
        self.owner = owner
        ref = weakref.ref(self)
        _live[self._serial] = ref
        if owner is not None:
            owner._children[self._serial] = ref
        return 0

    cdef int _release(self) except -1:
        return 0

    cdef int _close_dropped(self) except -1:
        """How __del__ closes this object (an Engine first lets what it admitted finish)."""
        return close_from_finalizer(self)

    def __del__(self):
        # Dropped without close(): release the handle now, as files and
        # sockets do, and say so.  This is a PEP 442 finalizer (tp_finalize),
        # not __dealloc__: it runs while the whole object is intact, so the
        # ordinary release path runs (a subclass's fields, such as the device
        # a HostBuffer opened, are not yet cleared, and are released after
        # the handle that needs them).  After shutdown() or in a forked child
        # the runtime is gone and nothing is called.
        if self._closed or _api_ptr is NULL:
            return
        what = repr(self)
        self._close_dropped()
        warnings.warn(f"unclosed {what}: released when it was garbage-collected; call close() or use "
                      "a with block", ResourceWarning, source=self)

    def close(self):
        """Release the AscendCL resource (and, first, everything created from it). Idempotent."""
        if self._closed:
            return
        _close_all(self._children)
        self._children.clear()
        try:
            if _api_ptr is not NULL:
                make_current(self._ctx)
            self._release()
        finally:
            self._closed = True
            _live.pop(self._serial, None)
            if self.owner is not None:
                (<Resource>self.owner)._children.pop(self._serial, None)

    @property
    def closed(self):
        """True once close() has run."""
        return self._closed

    @property
    def context_handle(self):
        """The AscendCL context this object uses, as an int (0 when closed)."""
        return 0 if self._closed else <uintptr_t>self._ctx

    def __enter__(self):
        self._ensure_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


cdef int close_from_finalizer(Resource obj) except -1:
    """Close ``obj`` from a finalizer: a failure is logged, not raised, and the
    calling thread's current context is put back afterwards.

    A finalizer runs wherever the garbage collector happens to run, possibly
    between another object's context switch and its AscendCL call; that call
    must still find its context current (unless closing destroyed it).
    """
    cdef aclrtContext saved = NULL
    cdef aclrtContext now = NULL
    cdef aclrtContext gone = obj._ctx if isinstance(obj, (Device, Context)) else NULL
    if obj._closed or _api_ptr is NULL:
        return 0
    if _api_ptr.aclrtGetCurrentContext(&saved) != ACL_SUCCESS:
        saved = NULL
    try:
        obj.close()
    except Exception as exc:
        _log.warning("ascend_engine: releasing %s failed: %s", type(obj).__name__, exc)
    finally:
        if saved is not NULL and saved != gone and _api_ptr is not NULL:
            if _api_ptr.aclrtGetCurrentContext(&now) != ACL_SUCCESS or now != saved:
                _api_ptr.aclrtSetCurrentContext(saved)
    return 0


cdef Device _device_of(object where):
    if isinstance(where, Device):
        return <Device>where
    if isinstance(where, Context):
        return (<Context>where).device
    raise TypeError(f"expected a Device or a Context, got {type(where).__name__}")


# ---------------------------------------------------------------------------
# Device, Context
# ---------------------------------------------------------------------------

cdef class Device(Resource):
    """An NPU device: ``aclrtSetDevice`` on open, ``aclrtResetDevice`` on close.

    ``with ae.Device(0) as dev: ...``.  Several Device objects for one id share
    the device (it is reset when the last one closes).  The device's default
    context is made current on whichever thread uses the object.
    """

    def __init__(self, int id=0):
        cdef const ae_acl_api *t = api()
        cdef aclrtContext ctx = NULL
        if id < 0 or id >= MAX_DEVICES:
            raise ValueError(f"device id {id} out of range")
        if _dev_refs[id] == 0:
            checked_aclrtSetDevice(id)
            rc = t.aclrtGetCurrentContext(&ctx)
            if rc != ACL_SUCCESS:
                t.aclrtResetDevice(id)
                check(rc, b"aclrtGetCurrentContext")
            _dev_ctx[id] = ctx
        self.id = id
        self._ctx = _dev_ctx[id]
        _dev_refs[id] += 1
        self._register(None)

    cdef int _release(self) except -1:
        _dev_refs[self.id] -= 1
        if _dev_refs[self.id] == 0:
            _dev_ctx[self.id] = NULL
            if _api_ptr is not NULL:
                checked_aclrtResetDevice(self.id)
        return 0

    def make_current(self):
        """Make this device's default context current on the calling thread."""
        self._activate()

    def synchronize(self):
        """Wait (GIL released) for all work queued on this device's streams created here
        and on the default stream."""
        api()
        self._activate()
        for ref in list(_live.values()):
            obj = ref()
            if isinstance(obj, Stream) and not (<Stream>obj)._closed and (<Stream>obj).device is self:
                obj.synchronize()
        with nogil:
            checked_aclrtSynchronizeStream(NULL)

    def memory_info(self):
        """Device memory as ``MemoryInfo(free, total)`` in bytes."""
        cdef size_t free_b = 0, total_b = 0
        self._activate()
        checked_aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b)
        return MemoryInfo(int(free_b), int(total_b))

    @property
    def soc(self):
        """The SoC name AscendCL reports ('' when unavailable)."""
        cdef const char *s
        self._activate()
        if _api_ptr.aclrtGetSocName is NULL:
            return ""
        s = _api_ptr.aclrtGetSocName()
        return s.decode("utf-8", "replace") if s is not NULL else ""

    def can_access_peer(self, other):
        """Whether this device and ``other`` (a Device or a device id) have a
        peer-to-peer link (``aclrtDeviceCanAccessPeer``).

        False means tensors between them must travel through host memory.  The
        same device twice raises InvalidParamError: a device is not its own peer.
        """
        cdef int32_t can = 0
        cdef int32_t peer = _peer_id(other)
        self._activate()
        checked_aclrtDeviceCanAccessPeer(&can, self.id, peer)
        return can == 1

    def enable_peer_access(self, other):
        """Let this device's memory be copied straight to ``other``'s
        (``aclrtDeviceEnablePeerAccess`` with this device current).

        Access is one-way: it opens the direction self -> other only; call
        ``other.enable_peer_access(self)`` for the way back.  Enabling twice is
        harmless.  A pair without a link (``can_access_peer`` False) raises
        ResourceError with code 207000 (ACL_ERROR_RT_FEATURE_NOT_SUPPORT).
        """
        cdef int32_t peer = _peer_id(other)
        self._activate()
        checked_aclrtDeviceEnablePeerAccess(peer, 0)

    def disable_peer_access(self, other):
        """Close the direction self -> other again (``aclrtDeviceDisablePeerAccess``)."""
        cdef int32_t peer = _peer_id(other)
        self._activate()
        checked_aclrtDeviceDisablePeerAccess(peer)

    def __repr__(self):
        return f"<ascend_engine.Device id={self.id}{' closed' if self._closed else ''}>"


cdef int32_t _peer_id(object other) except? -1:
    """The device id of a peer given as a Device or an int."""
    if isinstance(other, Device):
        return (<Device>other).id
    if isinstance(other, int) and not isinstance(other, bool):
        return <int32_t>other
    raise TypeError(f"expected a Device or a device id, got {type(other).__name__}")


cdef class Context(Resource):
    """An explicit AscendCL context on a device (``aclrtCreateContext``).

    Streams, events and buffers may be created from a Context instead of a
    Device; they then run in this context.
    """

    def __init__(self, Device device not None):
        cdef aclrtContext ctx = NULL
        device._activate()
        checked_aclrtCreateContext(&ctx, device.id)
        self.device = device
        self._ctx = ctx
        self._register(device)

    cdef int _release(self) except -1:
        cdef aclrtContext ctx = self._ctx
        # Leave this thread on the device's default context, not on a dead one.
        make_current((<Resource>self.device)._ctx)
        self._ctx = NULL
        checked_aclrtDestroyContext(ctx)
        return 0

    def make_current(self):
        """Make this context current on the calling thread."""
        self._activate()

    @property
    def handle(self):
        """The aclrtContext as an int."""
        return 0 if self._closed else <uintptr_t>self._ctx

    def __repr__(self):
        return f"<ascend_engine.Context device={self.device.id}{' closed' if self._closed else ''}>"


# ---------------------------------------------------------------------------
# Stream, Event
# ---------------------------------------------------------------------------

cdef class Stream(Resource):
    """An ordered queue of device work (``aclrtCreateStream``).

    Work queued on one stream runs in order; different streams run
    concurrently.  ``Stream(device_or_context)``.
    """

    def __init__(self, where not None):
        cdef aclrtStream s = NULL
        cdef Resource owner = where
        self.device = _device_of(where)
        owner._activate()
        checked_aclrtCreateStream(&s)
        self._handle = s
        self._ctx = owner._ctx
        self._pending = []
        self._register(owner)

    cdef int _release(self) except -1:
        cdef aclError rc
        cdef aclrtStream s = self._handle
        self._handle = NULL
        # CANN: synchronize before destroying.
        with nogil:
            rc = _api_ptr.aclrtSynchronizeStream(s)
        self._pending = []
        rc2 = _api_ptr.aclrtDestroyStream(s)
        check(rc, b"aclrtSynchronizeStream")
        check(rc2, b"aclrtDestroyStream")
        return 0

    def synchronize(self, timeout=None):
        """Block until every task queued so far has finished (GIL released).

        ``timeout`` in seconds (None: wait forever); raises AclTimeoutError when
        it runs out.  A device-side failure of any queued task is raised here.
        """
        cdef int ms = timeout_ms(timeout)
        cdef aclrtStream s
        self._activate()
        s = self._handle
        with nogil:
            # forever (ms < 0) or up to ms milliseconds (the bounded call is optional in CANN)
            if ms < 0:
                checked_aclrtSynchronizeStream(s)
            else:
                checked_aclrtSynchronizeStreamWithTimeout(s, ms)
        self._pending = []

    def query(self):
        """True when every task queued so far has finished (does not block)."""
        cdef aclrtStreamStatus st = ACL_STREAM_STATUS_NOT_READY
        self._activate()
        checked_aclrtStreamQuery(self._handle, &st)
        if st == ACL_STREAM_STATUS_COMPLETE:
            self._pending = []
            return True
        return False

    def wait_event(self, Event event not None):
        """Make later work on this stream wait until ``event`` completes (device-side)."""
        cdef aclrtEvent e = event_handle(event)
        self._activate()
        checked_aclrtStreamWaitEvent(self._handle, e)

    def record(self, Event event not None):
        """Record ``event`` on this stream; same as ``event.record(self)``."""
        event.record(self)

    cdef _keep(self, obj):
        """Hold a host object an async task still uses, until the stream is synchronized."""
        self._pending.append(obj)

    @property
    def handle(self):
        """The aclrtStream as an int."""
        return 0 if self._closed else <uintptr_t>self._handle

    def __repr__(self):
        state = " closed" if self._closed else f" handle=0x{<uintptr_t>self._handle:x}"
        return f"<ascend_engine.Stream device={self.device.id}{state}>"


cdef aclrtStream stream_handle(object stream) except? NULL:
    """The handle of an open Stream; None gives NULL (the current context's default stream).

    TypeError for anything else, ObjectClosedError for a closed Stream: checked
    before any AscendCL call, so a destroyed handle never reaches AscendCL.
    """
    if stream is None:
        return NULL
    if not isinstance(stream, Stream):
        raise TypeError(f"stream must be a Stream or None, got {type(stream).__name__}")
    (<Stream>stream)._ensure_open()
    return (<Stream>stream)._handle


cdef class Event(Resource):
    """A marker in a stream (``aclrtCreateEventWithFlag``).

    ``Event(device_or_context, timing=False)``; pass ``timing=True`` to use it
    with :meth:`elapsed_ms`.  Every event can be waited on by other streams.
    """

    def __init__(self, where not None, bint timing=False):
        cdef aclrtEvent e = NULL
        cdef Resource owner = where
        cdef unsigned int flags = ACL_EVENT_SYNC | (ACL_EVENT_TIME_LINE if timing else 0)
        self.device = _device_of(where)
        owner._activate()
        if _api_ptr.aclrtCreateEventWithFlag is not NULL:
            checked_aclrtCreateEventWithFlag(&e, flags)
        else:
            # A plain event supports both synchronisation and timing.
            checked_aclrtCreateEvent(&e)
        self._handle = e
        self.timing = timing
        self._ctx = owner._ctx
        self._register(owner)

    cdef int _release(self) except -1:
        cdef aclrtEvent e = self._handle
        self._handle = NULL
        checked_aclrtDestroyEvent(e)
        return 0

    def record(self, stream=None):
        """Record this event on ``stream`` (None: the context's default stream)."""
        self._ensure_open()
        cdef aclrtStream s = stream_handle(stream)
        make_current(self._ctx)
        checked_aclrtRecordEvent(self._handle, s)

    def reset(self, stream=None):
        """Reset the event on ``stream`` (a stream task), so it can be recorded afresh."""
        self._ensure_open()
        cdef aclrtStream s = stream_handle(stream)
        make_current(self._ctx)
        checked_aclrtResetEvent(self._handle, s)

    def synchronize(self, timeout=None):
        """Block until the event has completed (GIL released); ``timeout`` in seconds."""
        cdef int ms = timeout_ms(timeout)
        cdef aclrtEvent e
        self._activate()
        e = self._handle
        with nogil:
            # forever (ms < 0) or up to ms milliseconds (the bounded call is optional in CANN)
            if ms < 0:
                checked_aclrtSynchronizeEvent(e)
            else:
                checked_aclrtSynchronizeEventWithTimeout(e, ms)

    def query(self):
        """True when the event has completed (does not block)."""
        cdef aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY
        self._activate()
        checked_aclrtQueryEventStatus(self._handle, &st)
        return st == ACL_EVENT_RECORDED_STATUS_COMPLETE

    @staticmethod
    def elapsed_ms(Event start not None, Event end not None):
        """Device time in milliseconds between two completed timing events."""
        cdef float ms = 0
        cdef aclrtEvent e0 = event_handle(start)
        cdef aclrtEvent e1 = event_handle(end)
        make_current(end._ctx)
        checked_aclrtEventElapsedTime(&ms, e0, e1)
        return float(ms)

    @property
    def handle(self):
        """The aclrtEvent as an int."""
        return 0 if self._closed else <uintptr_t>self._handle

    def __repr__(self):
        state = " closed" if self._closed else f" handle=0x{<uintptr_t>self._handle:x}"
        return f"<ascend_engine.Event device={self.device.id} timing={bool(self.timing)}{state}>"


cdef aclrtEvent event_handle(Event event) except NULL:
    """The handle of an open Event (ObjectClosedError when closed, before any AscendCL call)."""
    event._ensure_open()
    return event._handle


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------

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

    cdef int _offset_ok(self, size_t offset) except -1:
        if offset >= self.nbytes:
            raise ValueError(f"offset {offset} outside the buffer ({self.nbytes} bytes)")
        return 0

    def copy_from(self, src, stream=None, *, size_t offset=0):
        """Copy all of ``src`` (host buffer or DeviceBuffer) into this buffer at ``offset``.

        The runtime checks the bounds: a source larger than the space left
        raises InvalidParamError.  Returns self.
        """
        cdef _view v
        cdef aclrtMemcpyKind kind
        cdef aclrtStream s = NULL
        cdef void *dst
        cdef size_t dmax
        cdef DeviceBuffer other
        self._ensure_open()
        s = stream_handle(stream)
        self._offset_ok(offset)
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
        dst = <char *>self._ptr + offset
        dmax = self.nbytes - offset
        if stream is None:
            with nogil:
                checked_aclrtMemcpy(dst, dmax, v.ptr, v.nbytes, kind)
        else:
            checked_aclrtMemcpyAsync(dst, dmax, v.ptr, v.nbytes, kind, s)
            (<Stream>stream)._keep(keep)
            (<Stream>stream)._keep(self)
        return self

    def copy_to(self, out=None, stream=None, *, size_t offset=0, nbytes=None, dtype=None):
        """Copy this buffer (from ``offset``, ``nbytes`` bytes, default: the rest) to the host.

        ``out``: a writable buffer to fill (it must be large enough, or the
        runtime rejects the copy); None allocates a numpy array of ``dtype``
        (default uint8).  Returns ``out`` as a numpy array.  With a stream, the
        array is filled only once the stream is synchronized.
        """
        cdef _view v
        cdef aclrtStream s = NULL
        cdef size_t count
        cdef const void *src
        self._ensure_open()
        s = stream_handle(stream)
        self._offset_ok(offset)
        count = self.nbytes - offset if nbytes is None else <size_t>nbytes
        if out is None:
            dt = tensor_dtype(dtype if dtype is not None else numpy.uint8, "copy_to: dtype", TypeError)
            if count % dt.itemsize:
                raise ValueError(f"{count} bytes is not a whole number of {dt} items")
            out = numpy.empty(count // dt.itemsize, dtype=dt)
        elif isinstance(out, numpy.ndarray):   # the device's bytes land as they are: no PyObject pointers
            tensor_array(out, "copy_to: out")
        keep = _host_view(out, True, &v)
        src = <const char *>self._ptr + offset
        if isinstance(out, HostBuffer):
            keep = out
        make_current(self._ctx)
        if stream is None:
            with nogil:
                checked_aclrtMemcpy(v.ptr, v.nbytes, src, count, ACL_MEMCPY_DEVICE_TO_HOST)
        else:
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

    def __init__(self, size_t nbytes, device=None):
        cdef void *p = NULL
        cdef Resource owner
        own = None
        if nbytes == 0:
            raise ValueError("nbytes must be > 0")
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
