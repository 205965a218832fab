# Included by _runtime.pyx: the devices (Device, each with its default context)
# and explicit contexts (Context), and the device queries device_count() and devices().


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


cdef Device _device_of(object where):
    if isinstance(where, Device):
        return <Device>where
    if isinstance(where, Context):
        return (<Context>where).device
    raise TypeError(f"expected a Device or a Context, got {type(where).__name__}")


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
