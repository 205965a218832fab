# Included by _model_base.pyx: loading a model file and unloading it, with its weights in
# runtime-managed memory or in one device allocation that several instances share
# (Model.load, Model.load_instances).  The functions are Model's methods' bodies.


class _SharedWeights:
    """One device allocation holding a model file's weights, used by every
    instance loaded on it.  An allocation the engine made (``owned``) is
    freed when the last instance is unloaded, with the Device opened for it;
    a caller's DeviceBuffer stays the caller's."""

    __slots__ = ("buffer", "path", "owned", "own_device", "users")

    def __init__(self, buffer, path, owned, own_device=None):
        self.buffer = buffer
        self.path = path
        self.owned = owned
        self.own_device = own_device
        self.users = 0

    def release(self):
        self.users -= 1
        if self.users == 0 and self.owned:
            try:
                self.buffer.close()
            finally:
                if self.own_device is not None:
                    self.own_device.close()


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


cdef _query_size(path):
    """The body of Model.query_size (see there)."""
    cdef const ae_acl_api *t = api()
    cdef size_t work = 0, weight = 0
    cdef aclError rc
    require_aclmdlQuerySize()
    bpath = str(path).encode()
    cdef const char *cpath = bpath
    with nogil:
        rc = t.aclmdlQuerySize(cpath, &work, &weight)
    if rc != ACL_SUCCESS:
        msg = t.aclGetRecentErrMsg()
        text = msg.decode("utf-8", "replace") if msg is not NULL else ""
        raise _errors.error_class(rc)("aclmdlQuerySize", rc, f"model file {str(path)!r}: {text}")
    return int(work), int(weight)


cdef _load_instances(path, instances, device):
    """The body of Model.load_instances (see there)."""
    cdef Resource owner
    instances = positive_int(instances, "instances", 1024)
    _work, weight = Model.query_size(path)
    own_device = None
    if isinstance(device, (Device, Context)):
        owner = device
    else:
        own_device = Device(int(device))
        owner = own_device
    try:
        buf = DeviceBuffer(owner, max(weight, 1))
    except BaseException:
        if own_device is not None:
            own_device.close()
        raise
    shared = _SharedWeights(buf, str(path), True, own_device)
    models = []
    try:
        for _ in range(instances):
            models.append(_load_one(path, device, shared))
    except BaseException:
        for m in reversed(models):
            m.close()
        if not models:
            shared.users = 1
            shared.release()
        raise
    return tuple(models)


cdef _load_model(path, device, weights):
    """The body of Model.load (see there)."""
    if weights is None:
        return _load_one(path, device, None)
    if isinstance(weights, Model):
        shared = (<Model>weights)._weights
        if shared is None:
            raise ValueError(f"weights: model {weights.path!r} holds its weights in runtime-managed memory; "
                             "only a model loaded with weights= or by Model.load_instances can share its own")
        if not _same_file(shared.path, str(path)):
            raise ValueError(f"weights: the weights of {shared.path!r} cannot serve model file {str(path)!r}; "
                             "instances share weights only when they load the same file")
        if not isinstance(shared.buffer, DeviceBuffer) or shared.buffer.closed:
            raise ValueError(f"weights: the weight memory of {shared.path!r} has been freed")
    elif isinstance(weights, DeviceBuffer):
        if weights.closed:
            raise ValueError("weights: the DeviceBuffer is closed")
        shared = _SharedWeights(weights, str(path), False)
    else:
        raise TypeError(f"weights must be None, a DeviceBuffer or a Model, got {type(weights).__name__}")
    return _load_one(path, device, shared)


cdef _load_one(path, device, shared):
    """Load one Model from a model file, its weights in ``shared`` (a _SharedWeights) or,
    for None, in runtime-managed memory."""
    cdef Model m = Model.__new__(Model)
    cdef Resource owner
    cdef const ae_acl_api *t = api()
    cdef uint32_t model_id = 0
    cdef aclError rc
    cdef bytes bpath
    cdef void *wptr = NULL
    cdef size_t wsize = 0
    if shared is not None:
        require_aclmdlLoadFromFileWithMem()
    m.path = str(path)
    m._lock = threading.Lock()
    m._async_sets = {}
    if isinstance(device, (Device, Context)):
        owner = device
        m._own_device = None
    else:
        owner = Device(int(device))
        m._own_device = owner
    m.device = owner if isinstance(owner, Device) else (<Context>owner).device
    owner._activate()
    bpath = m.path.encode()
    cdef const char *cpath = bpath
    fn = "aclmdlLoadFromFile"
    if shared is not None:
        fn = "aclmdlLoadFromFileWithMem"
        wptr = buffer_ptr(<DeviceBuffer>shared.buffer)   # checked: the weights are open
        wsize = (<DeviceBuffer>shared.buffer).nbytes
    with nogil:
        if wptr is NULL:
            rc = t.aclmdlLoadFromFile(cpath, &model_id)
        else:
            rc = t.aclmdlLoadFromFileWithMem(cpath, &model_id, NULL, 0, wptr, wsize)
    if rc != ACL_SUCCESS:
        msg = t.aclGetRecentErrMsg()
        text = msg.decode("utf-8", "replace") if msg is not NULL else ""
        if m._own_device is not None:
            m._own_device.close()
        # a file that is not there is a wrong path, not a model of another kind
        hint = None if os.path.exists(m.path) else (
            "no file at this path (a relative path starts from the current folder)")
        raise _errors.error_class(rc)(fn, rc, f"model file {m.path!r}: {text}", hint)
    m._id = model_id
    if shared is not None:
        m._weights = shared
        shared.users += 1
    m._ctx = owner._ctx
    # A model that opened its own Device is a root object and closes that
    # device after unloading; otherwise the caller's device owns it.
    m._register(None if m._own_device is not None else owner)
    try:
        _describe(m)
    except BaseException:
        m.close()
        raise
    return m


cdef int _unload(Model self) except -1:
    """The body of Model._release: unload the model (see there)."""
    cdef const ae_acl_api *t = api()
    if self._sync is not None:
        self._sync.destroy()
        self._sync = None
    for pair in self._async_sets.values():
        (<_DatasetPair>pair).destroy()
    self._async_sets = {}
    if self._desc is not NULL:
        t.aclmdlDestroyDesc(self._desc)
        self._desc = NULL
    shared, self._weights = self._weights, None
    try:
        checked_aclmdlUnload(self._id)
    finally:
        if shared is not None:
            shared.release()   # after the unload: the last instance frees the weights
    return 0
