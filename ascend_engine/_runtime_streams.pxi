# Included by _runtime.pyx: streams (ordered queues of device work) and the
# events recorded on them (Stream, Event).


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
