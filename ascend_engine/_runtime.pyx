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

from libc.stdint cimport int32_t, uint32_t, uintptr_t

from ascend_engine import errors as _errors
from ascend_engine._checks import timeout_ms
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
_backend_loaded = False  # ae_load_backend succeeded (aclInit may not have run: api_loaded())
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


def _load_backend():
    """Load the backend once per process (thread-safe), without aclInit; the note
    on why "auto" chose the simulator is logged once."""
    global _backend_loaded
    cdef char err[16384]
    cdef bytes req
    cdef bytes sim
    with _state_lock:
        if _backend_loaded:
            return
        req = _requested_backend().encode()
        sim = os.fsencode(_sim_library_path())
        err[0] = 0
        if ae_load_backend(req, sim, err, sizeof(err)) != 0:
            raise _errors.BackendError(err.decode("utf-8", "replace"))
        if ae_backend_name() == b"sim":
            # the simulator runs sim atc models with the onnxruntime wheel's library
            # (set here, with the simulator, never on import nor for the real AscendCL)
            from ascend_engine.sim import ort_library
            ort_library.set_default()
        note = ae_backend_note().decode("utf-8", "replace")
        if note:
            first, _, rest = note.partition("\n")
            _log.warning("%s", first)
            _log.debug("libascendcl.so search:\n%s", rest)
        _backend_loaded = True


cdef const ae_acl_api *api_loaded() except NULL:
    """The AscendCL function table, loading the backend without calling aclInit."""
    if _forked:
        check_not_forked()
    if not _backend_loaded:
        _load_backend()
    return ae_api()


def _loaded_backend():
    """(library path, whether the loader called aclInit itself) of the loaded backend; loads it."""
    api_loaded()
    return os.fsdecode(ae_backend_library()), bool(ae_backend_initialized())


def _load_and_init():
    """Load the backend and call aclInit once per process (thread-safe)."""
    global _api_ptr, _owns_init, _init_pid
    cdef const ae_acl_api *t
    cdef aclError rc
    with _state_lock:
        if _api_ptr is not NULL:
            return
        if _shut_down:
            raise _errors.BackendError(
                "ascend_engine.shutdown() already finalized AscendCL in this process; it cannot be used again"
            )
        _load_backend()
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


cdef const ae_dvpp_api *dvpp_api() except NULL:
    """DVPP's function table (libacl_dvpp.so beside the AscendCL library),
    loaded on first use by an engine with image nodes; BackendError if the
    backend has none."""
    api()
    cdef char err[12288]
    cdef const ae_dvpp_api *t = ae_load_dvpp(err, sizeof(err))
    if t is NULL:
        from ascend_engine.errors import BackendError
        raise BackendError(err.decode("utf-8", "replace"))
    return t


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
        # sockets do, and say so.  This is a finalizer (tp_finalize),
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


# The runtime objects, one include per job; their cdef declarations are in _runtime.pxd.
include "_runtime_devices.pxi"   # Device, Context; device_count(), devices()
include "_runtime_streams.pxi"   # Stream, Event

# The buffers live in their own module, which cimports this one (docs/executor.md, "Where each
# job lives"); re-exported here so ascend_engine._runtime keeps every public name.
from ascend_engine._memory import DeviceBuffer, HostBuffer
