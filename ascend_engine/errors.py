"""AscendCL errors as Python exceptions, with the full code table and hints.

Every failing AscendCL call made by ascend-engine raises an :class:`AclError`
subclass chosen by the code's family (see :func:`error_class`).  The
exception carries:

* ``function`` -- the AscendCL function that failed (``"aclrtMemcpy"``);
* ``code`` -- the numeric ``aclError``;
* ``name`` -- its symbolic name (``"ACL_ERROR_RT_CONTEXT_NULL"``);
* ``message`` -- ``aclGetRecentErrMsg()`` read on the failing thread right
  after the call (what the runtime itself says: the call, the argument, what
  it expected);
* ``hint`` -- one line on what usually causes this and what to do.

The code table follows the CANN headers (:mod:`ascend_engine.error_codes`,
one home for it); the conformance tests check it against them.  The hints come from field
experience, corrected where popular write-ups are wrong: there is no error
code 201001 (a driver/CANN mismatch shows as 207004, 500004 or 507899), no
``ASCEND_RT_MEM_POOL_SIZE`` variable, and ``ASCEND_GLOBAL_LOG_LEVEL=0`` (not 1)
is DEBUG.
"""

from __future__ import annotations

from ascend_engine.error_codes import ERROR_CODES, error_description, error_name

__all__ = [
    "AclError",
    "InvalidParamError",
    "NotInitializedError",
    "ResourceError",
    "OutOfMemoryError",
    "DeviceError",
    "InternalError",
    "AclTimeoutError",
    "ModelError",
    "BackendError",
    "ObjectClosedError",
    "EngineError",
    "EngineBusy",
    "ForkedProcessError",
    "InferenceServerError",
    "ModelConfigError",
    "PipelineError",
    "ReplicaError",
    "ServerUnreachable",
    "SpecError",
    "ToolkitError",
    "AippError",
    "AtcError",
    "ERROR_CODES",
    "TROUBLESHOOTING",
    "error_name",
    "error_description",
    "error_class",
    "hint_for",
    "raise_for",
]

# ---------------------------------------------------------------------------
# Exception classes
# ---------------------------------------------------------------------------


class AclError(Exception):
    """An AscendCL call failed.

    Attributes: ``function``, ``code``, ``name``, ``message`` (the runtime's
    recent error message, possibly empty) and ``hint`` (possibly empty).
    """

    def __init__(self, function: str, code: int, message: str = "", hint: str | None = None):
        self.function = function
        self.code = int(code)
        self.name = error_name(code)
        self.message = " ".join((message or "").split())  # one line
        self.hint = hint_for(self.code, function) if hint is None else hint
        super().__init__(function, self.code, self.message, self.hint)

    def __str__(self) -> str:
        text = f"{self.function} failed: {self.name} ({self.code})"
        desc = error_description(self.code)
        if self.message:
            text += f": {self.message}"
        elif desc:
            text += f": {desc}"
        if self.hint:
            text += f" -- hint: {self.hint}"
        return text

    def __reduce__(self):
        # Rebuild with the same class and fields (pickling across processes).
        return (self.__class__, (self.function, self.code, self.message, self.hint))


class InvalidParamError(AclError, ValueError):
    """The call was wrong: a rejected argument, handle, or a call in the wrong state
    (codes 100000-100045 outside the model codes, 107xxx, 148xxx)."""


class NotInitializedError(AclError):
    """AscendCL used before ``aclInit`` or after ``aclFinalize`` (100001)."""


class ResourceError(AclError):
    """A resource ran out or does not match (2xxxxx, 3xxxxx): streams, events, handles."""


class OutOfMemoryError(ResourceError, MemoryError):
    """Device (or host) memory exhausted (200000, 207001, 207018, 245000)."""


class DeviceError(AclError):
    """The device or the runtime failed while doing the work (5xxxxx, 507xxx)."""


class InternalError(DeviceError):
    """An internal runtime, driver or graph-engine error (500000, 500001, 507000, 545000...)."""


class AclTimeoutError(AclError, TimeoutError):
    """A wait ran out of time (507046 stream sync, 507047 event sync, 107019, 107020, 100036...)."""


class ModelError(AclError):
    """Loading, describing or executing a model failed (145xxx graph-engine codes, 545xxx, the documented
    100003-100019 model/file codes)."""


class BackendError(RuntimeError):
    """No usable AscendCL backend: the library is missing, incomplete, or the request is invalid."""


class ObjectClosedError(ValueError):
    """A Device, Stream, Event or buffer was used after close()."""


class EngineError(RuntimeError):
    """The engine could not do what was asked: it is closed, a request was
    cancelled because another one failed, or the plan cannot run."""


class HostStepError(EngineError):
    """A host step failed for one request: its function raised (the original
    exception is ``__cause__``; the message carries its traceback), or it
    returned outputs of the wrong dtype, shape or number of rows.  Only that
    request fails; the engine goes on with the others.

    ``step`` is the host step's name, ``request`` the request's number.
    """

    def __init__(self, message, step=None, request=None):
        super().__init__(message)
        self.step = step
        self.request = request


class PipelineError(ValueError):
    """A pipeline graph that cannot be compiled; the message names the node and tensor."""


class SpecError(PipelineError):
    """A spec that does not follow the schema, or whose models cannot be wired.

    ``key`` is the key path of the offending value (``models[1].inputs[0]``,
    ``''`` for the whole document) and ``source`` the spec file, if any.
    """

    def __init__(self, key: str, message: str, source: str | None = None):
        self.key = key
        self.source = source
        self.detail = message
        where = ": ".join(p for p in (source, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


class ModelConfigError(PipelineError):
    """A Triton ``config.pbtxt`` that cannot be read, or that contradicts its model file
    (docs/serve.md, "A Triton model repository"): the message names the file, the field,
    what the model has and what the config says."""


class ToolkitError(RuntimeError):
    """The toolkit folder could not be made; the message says why."""


class AtcError(ValueError):
    """``sim atc`` refused a command line or a model; the message is ATC-style and says why."""


class AippError(ValueError):
    """Static AIPP settings that break one of ATC's rules; the message names the field and the rule."""


class EngineBusy(EngineError):
    """The engine's admission queue is full (``Engine.submit(..., block=False)``)."""


class ReplicaError(EngineError):
    """A replica could not serve a request: it died while the request was
    pending, or it could not start.  ``replica`` is its index in the handle."""

    def __init__(self, message: str, replica: int | None = None):
        super().__init__(message)
        self.replica = replica


class InferenceServerError(Exception):
    """A request ``ascend-engine serve`` answers with a KServe v2 error (docs/serve.md, "Errors").

    ``status`` is the HTTP status (400 bad request, 404 unknown model or
    route, 503 unavailable, 500 internal); ``grpc_code`` the gRPC status
    name the gRPC front end answers with for the same error."""

    GRPC_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED", 411: "INVALID_ARGUMENT",
                  413: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def grpc_code(self) -> str:
        return self.GRPC_CODES.get(self.status, "UNKNOWN")


class ServerUnreachable(ConnectionError):
    """``bench --url``: no KServe v2 server answered at the address and protocol given; the message
    names both and what to check."""


class ForkedProcessError(RuntimeError):
    """AscendCL was used in a process forked from the one that initialised it.

    CANN does not support using a device across ``fork()``: the child must
    not touch the parent's devices, streams, models or engines.  Start worker
    processes with the ``spawn`` (or ``forkserver``) start method, or fork
    before the first AscendCL call."""


_TIMEOUT_CODES = frozenset({100036, 107019, 107020, 207020, 507012, 507046, 507047, 545601})
_OOM_CODES = frozenset({200000, 207001, 207018, 245000})
_NOT_INIT_CODES = frozenset({100001})
_MODEL_CODES = frozenset(
    {100003, 100005, 100011, 100012, 100013, 100014, 100015, 100016, 100017, 100018, 100019}
)
_INTERNAL_CODES = frozenset({500000, 500001, 500002, 500003, 507000, 507001, 507899, 507900, 545000})


def error_class(code: int) -> type[AclError]:
    """The :class:`AclError` subclass that represents ``code``."""
    code = int(code)
    if code in _TIMEOUT_CODES:
        return AclTimeoutError
    if code in _OOM_CODES:
        return OutOfMemoryError
    if code in _NOT_INIT_CODES:
        return NotInitializedError
    if code in _MODEL_CODES or 145000 <= code < 146000:
        return ModelError
    if code in _INTERNAL_CODES:
        return InternalError
    if 545000 <= code < 546000:
        return ModelError if 545001 <= code <= 545009 else InternalError
    family = code // 100000
    if family == 1:
        return InvalidParamError
    if family in (2, 3):
        return ResourceError
    if family == 5:
        return DeviceError
    return AclError


# ---------------------------------------------------------------------------
# Troubleshooting
# ---------------------------------------------------------------------------

_MEMORY_HINT = (
    "device memory exhausted: allocate buffers once at start-up and reuse them (allocation on the hot "
    "path makes memory grow), size your pool at peak working set + 10-20%, check Device.memory_info()"
)
_MODEL_FILE_HINT = (
    "the file is not a model this backend can read: the simulator reads only models saved by "
    "ascend_engine.sim.Graph; a real .om from ATC needs ASCEND_ENGINE_BACKEND=acl on an Ascend machine, "
    "compiled for this SoC"
)
_TIMEOUT_HINT = (
    "the work did not finish in time: a task upstream may be stalled, or the stream waits on an event "
    "that a stalled stream has yet to record; synchronize the producer streams and read the message"
)
_DRIVER_HINT = (
    "driver problem: check that `npu-smi info` works and that the CANN toolkit matches the installed "
    "driver and firmware versions"
)

# code -> hint.  Keep each to one line: it ends the exception's str().
_HINTS: dict[int, str] = {
    100000: "an argument was rejected (see the message)",
    107000: "an argument was rejected (see the message)",
    100001: "AscendCL is not initialized (or already finalized): let ascend_engine initialise it on "
    "first use and do not call aclFinalize yourself",
    100002: "aclInit may run once per process; another library in this process already initialized AscendCL",
    100037: "aclFinalize (or the last aclFinalizeReference) already ran: call aclInit again first, with the "
    "same config file contents as the first aclInit",
    107001: "device id out of range: ascend_engine.devices() lists the valid ids "
    "(ASCEND_SIM_DEVICE_COUNT sets the simulator's count)",
    200002: "device id out of range: ascend_engine.devices() lists the valid ids "
    "(ASCEND_SIM_DEVICE_COUNT sets the simulator's count)",
    107002: "no current context on this thread: contexts are per thread; make the device's context current "
    "on this thread first (Device.make_current() / aclrtSetCurrentContext)",
    107003: "the stream belongs to another context than this thread's current one: make the stream's "
    "context current first",
    107004: "the model belongs to another context than this thread's current one: make the model's "
    "context current first",
    107006: "elapsed time needs two timing events (Event(dev, timing=True)), both recorded and completed",
    107007: "the end event completed before the start event: pass (start, end) in that order (CANN 9.1 "
    "returns a negative time instead)",
    107008: "address not aligned: buffers carved from one allocation should start on 64-byte boundaries "
    "(aclrtMalloc's own alignment)",
    200003: "address not aligned: buffers carved from one allocation should start on 64-byte boundaries "
    "(aclrtMalloc's own alignment)",
    107015: "no thread is subscribed to this stream's callbacks: call aclrtSubscribeReport first and keep a "
    "thread calling aclrtProcessReport",
    107011: "stream subscription: a stream takes exactly one report thread (unsubscribe the old one first), "
    "and only a subscribed stream can be unsubscribed",
    107012: "thread subscription: call aclrtProcessReport / aclrtUnSubscribeReport in the thread that "
    "aclrtSubscribeReport named",
    507012: "no callback became due within the aclrtProcessReport timeout: is work still queued ahead of the "
    "callback?",
    507007: "releasing the context failed: aclrtResetDevice was called more often than aclrtSetDevice for "
    "that device",
    145001: "the model executor is not initialized: call aclInit before loading or executing models",
    # older CANN releases; the API reference marks them as to be dropped
    100034: "no thread is subscribed to this stream's callbacks: call aclrtSubscribeReport first and keep a "
    "thread calling aclrtProcessReport",
    100035: "this thread is not subscribed to any stream: call aclrtProcessReport in the subscribed thread",
    100033: "a stream takes exactly one report thread: unsubscribe the old one first",
    100036: "no callback became due within the timeout: is work still queued ahead of the callback?",
    107017: "invalid handle: it was destroyed already, belongs to a reset device, or was never created",
    200005: "invalid handle: it was destroyed already, belongs to a reset device, or was never created",
    107019: _TIMEOUT_HINT,
    107020: _TIMEOUT_HINT,
    507046: _TIMEOUT_HINT,
    507047: _TIMEOUT_HINT,
    200000: _MEMORY_HINT,
    207001: _MEMORY_HINT,
    207018: _MEMORY_HINT,
    245000: _MEMORY_HINT,
    207002: "freeing failed: the pointer was freed already or did not come from aclrtMalloc",
    207004: "no device visible: ASCEND_RT_VISIBLE_DEVICES names no device (it takes physical ids in "
    "ascending order, comma-separated, no spaces), or a " + _DRIVER_HINT,
    500004: _DRIVER_HINT,
    507899: _DRIVER_HINT,
    207007: "event budget exhausted (about 1023 per device on inference cards): create events once and "
    "reuse them (ASCEND_SIM_MAX_EVENTS sets the simulator's budget)",
    207008: "stream budget exhausted: create streams once and reuse them "
    "(ASCEND_SIM_MAX_STREAMS sets the simulator's budget)",
    100003: _MODEL_FILE_HINT,
    100005: _MODEL_FILE_HINT,
    100012: _MODEL_FILE_HINT,
    100013: _MODEL_FILE_HINT,
    100014: _MODEL_FILE_HINT,
    100015: _MODEL_FILE_HINT,
    545001: _MODEL_FILE_HINT,
    145000: "the graph engine refused an argument: for aclmdlLoadFromFileWithMem, workSize and weightSize "
    "must be at least what aclmdlQuerySize reports",
    145002: "the model file cannot be opened: check the path and its permissions",
    145003: "unknown model id: the model was never loaded or was unloaded already",
    145006: _MODEL_FILE_HINT,
    145012: "the buffer the value goes into is too small: aclmdlGetInputSizeByIndex of the dynamic input "
    "(ascend_mbatch_shape_data), or aclmdlGetAippDataSize for the AIPP parameters",
    145013: "the gear is not one of the model's (or none was set, or the model is static): use a batch "
    "size aclmdlGetDynamicBatch lists, an image size aclmdlGetDynamicHW lists, or dims "
    "aclmdlGetInputDynamicDims lists",
    500002: "the graph engine refused the execution: one buffer per model input and output, each at most 64 "
    "bytes smaller than aclmdlGetInputSizeByIndex / aclmdlGetOutputSizeByIndex (the selected gear's bytes)",
    507011: "the model failed on the device: read the message; the stream's error stays until synchronize "
    "reports it, and later work that depends on it fails too",
}

# Hints for a function when its code has none of its own.
_FUNCTION_HINTS: dict[str, str] = {
    "aclrtSetDevice": "the device may be held by another process (look for leftover inference processes "
    "with `npu-smi info`), or the id is not valid",
    "aclInit": "AscendCL could not start: " + _DRIVER_HINT,
    "aclrtSynchronizeStream": "the stream's queued work failed: the message names the task that failed",
}

# Symptom-based troubleshooting (no error code), for documentation and the CLI:
# (symptom, usual cause, what to do).
TROUBLESHOOTING: tuple[tuple[str, str, str], ...] = (
    (
        "outputs are all zeros or random",
        "the output was read before the stream that produced it finished",
        "synchronize the stream (Stream.synchronize()) or the event recorded after the work before reading",
    ),
    (
        "device memory keeps growing",
        "allocation (aclrtMalloc) on the hot path, not freed or fragmenting",
        "allocate at start-up and reuse buffers in the loop; size the pool at peak working set + 10-20%",
    ),
    (
        "aclrtSetDevice fails / device busy",
        "another process holds the device and has not released it",
        "find leftover inference processes (npu-smi info); check how devices are assigned to processes",
    ),
    (
        "aclInit fails at start",
        "driver missing or CANN and driver versions do not match (codes 207004, 500004, 507899)",
        "install matching driver, firmware and CANN versions; `npu-smi info` must work first",
    ),
    (
        "occasional segmentation fault",
        "buffer too small for the model (shape x dtype instead of the size AscendCL reports), or threads "
        "sharing a context without making it current",
        "size buffers with aclmdlGet{Input,Output}SizeByIndex; make the context current per thread",
    ),
    (
        "first execution is slow",
        "lazy initialization and large dynamic-shape ranges",
        "warm up once after loading; compile few discrete batch gears (1, 2, 4, 8) rather than a wide range",
    ),
    (
        "need more detail",
        "the runtime logs little by default",
        "ASCEND_GLOBAL_LOG_LEVEL=0 is DEBUG (1 is INFO); on the simulator, ASCEND_SIM_LOG logs every call",
    ),
)


# Functions whose failures are host allocations: a code-based hint about
# device memory would send the reader the wrong way.
_HOST_ALLOCATION_HINT = (
    "this allocates host memory (a descriptor, not device memory): the process is out of host memory, "
    "or the runtime's handle limit was reached; release unused datasets and data buffers"
)
_HOST_ALLOCATORS = frozenset({"aclCreateDataBuffer", "aclmdlCreateDataset", "aclmdlCreateDesc",
                              "aclCreateTensorDesc"})


# A rejected argument (100000, 107000) means different things in different calls.
_INVALID_PARAM_CODES = (100000, 107000)
_COPY_HINT = ("an argument was rejected (see the message): destMax is the destination's capacity and must "
              "be >= count, and the copy kind must match where the pointers live")
_INIT_HINT = ("aclInit rejected its configuration (see the message); the simulator reads its ASCEND_SIM_* "
              "environment variables here: docs/simulator.md lists each one and the values it takes")


def hint_for(code: int, function: str | None = None) -> str:
    """The troubleshooting hint for ``code`` (raised by ``function``), or ''."""
    if function in _HOST_ALLOCATORS:
        return _HOST_ALLOCATION_HINT
    if int(code) in _INVALID_PARAM_CODES and function:
        if function.startswith("aclrtMemcpy"):
            return _COPY_HINT
        if function == "aclInit":
            return _INIT_HINT
    hint = _HINTS.get(int(code))
    if hint is None and function:
        hint = _FUNCTION_HINTS.get(function)
    return hint or ""


def raise_for(code: int, function: str, message: str | None = None) -> None:
    """Raise the :class:`AclError` subclass for ``code``; do nothing when ``code`` is 0.

    ``message`` should be ``aclGetRecentErrMsg()`` read on the failing thread;
    the Cython runtime layer passes it.
    """
    if int(code) == 0:
        return
    raise error_class(code)(function, code, message or "")
