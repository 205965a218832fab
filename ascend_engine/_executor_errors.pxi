# Included by _executor.pyx: executor errors as exceptions, and Ctrl-C while
# the executor waits without the GIL.


cdef object _error_of(ae_error *err):
    """The exception for an executor error (an AclError subclass when AscendCL failed)."""
    function = err.function.decode("utf-8", "replace")
    node = err.node.decode("utf-8", "replace")
    message = err.message.decode("utf-8", "replace")
    if function == "ae_host_step":
        request = None if err.request == AE_NO_REQUEST else int(err.request)
        return HostStepError(f"request {request}: {message}", step=node, request=request)
    where = f"node {node!r}: " if node else ""
    if err.code != 0:
        exc = _errors.error_class(err.code)(function, err.code, where + message)
        exc.node = node or None
        return exc
    return EngineError(where + message)


cdef object _raise_error(ae_error *err):
    raise _error_of(err)


# Ctrl-C during a long GIL-free call: the executor asks this function every
# 20 ms while the main thread waits for the device.  The exception a signal
# handler raised (KeyboardInterrupt) is kept here until the call returns,
# drains what was in flight and re-raises it.  Only the main thread runs
# signal handlers, so only its calls set the function (see _arm_poll).
_pending_signal = None
_MAIN_THREAD = threading.main_thread().ident


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef int _poll_signals(void *ctx) noexcept nogil:
    global _pending_signal
    with gil:
        try:
            PyErr_CheckSignals()
        except BaseException as exc:
            _pending_signal = exc
            return 1
    return 0



def _take_pending_signal():
    global _pending_signal
    exc, _pending_signal = _pending_signal, None
    return exc if exc is not None else KeyboardInterrupt()
