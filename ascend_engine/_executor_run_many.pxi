# Included by _executor.pyx, after Engine: the two generators behind run_many() -- through
# submit() (plans with host steps, dynamic shapes or image nodes) and straight to the executor
# (plain plans: the least host CPU per request) -- and run_batch() of the former.  The functions
# take the engine as self.


def _submitted_results(Engine self, feeds_iterable, times=None):
    """run_many through submit(): each feeds dict one request, ``depth``
    in flight.  An abandoned generator cancels what has not started; what
    has runs to the end into arrays its request owns."""
    pending = collections.deque()
    timed = times is not None
    try:
        for feeds in feeds_iterable:
            if len(pending) >= self.plan.depth:
                yield _call_result(pending.popleft(), times)
            pending.append(self._admit(feeds, None, True, None, timed))
        while pending:
            yield _call_result(pending.popleft(), times)
    finally:
        for call in pending:
            call.future.cancel()


def _call_result(call, times):
    """A submitted call's result, its times appended to ``times`` when they are kept."""
    result = call.future.result()
    if times is not None:
        times.append(tuple(call.times))
    return result


def _direct_results(Engine self, feeds_iterable, times=None):
    """run_many of a plain plan: each request's records go to the executor
    from this thread, and this thread completes them (no server hand-over:
    the least host CPU per request).  A request above ``max_batch`` rows is
    split into device requests of ``max_batch`` rows writing into row
    ranges of its result arrays; ``depth`` device requests stay in flight
    across requests, split or not (docs/executor.md, "run_many")."""
    mine = collections.deque()   # this generator's requests, oldest first: (records, outputs)
    requests = self._requests
    cdef int depth = self.plan.depth
    cdef uint64_t max_batch = self.plan.max_batch
    cdef uint64_t lo, hi, rows
    cdef int held = 0            # records of ``mine`` not yet collected (device requests in flight)
    cdef _Arrays ins
    try:
        for feeds in feeds_iterable:
            arrays, rows = requests.prepare(feeds)
            requests.check_fixed(rows, min(rows, max_batch))
            outs = requests.outputs_for(rows)
            records = []
            mine.append((records, outs))
            lo = 0
            while True:
                hi = min(rows, lo + max_batch)
                # keep ``depth`` device requests in flight: deliver the oldest
                # request once it is wholly on the device
                while held >= depth and mine[0][0] is not records:
                    held -= len(mine[0][0])
                    yield _collect(self, mine.popleft(), times)
                record = DeviceRequest([o[lo:hi] for o in outs] if hi - lo < rows else outs)
                if times is not None:
                    record.times = np.zeros(2, np.int64)
                ins = _Arrays([a[lo:hi] for a in arrays] if hi - lo < rows else arrays)
                with self._lock:
                    self._submit(record, ins, hi - lo)
                records.append(record)
                held += 1
                lo = hi
                if lo >= rows:
                    break
        while mine:
            yield _collect(self, mine.popleft(), times)
    finally:
        # abandoned with requests on the device: the completer delivers
        # them in the background (unless another thread holds the engine,
        # which then frees their slots as it needs them)
        if mine and self._engine is not NULL and self._lock.acquire(blocking=False):
            try:
                self._server.hand_over()
            finally:
                self._lock.release()


def _collect(Engine self, request, times=None):
    """A request of _direct_results once every record of it is done (waiting
    for them under the lock if need be): its outputs, its first record's
    enqueue time and its last one's done time appended to ``times``."""
    records, outs = request
    for record in records:
        if not record.done:
            with self._lock:
                self._wait_for(record)
        elif record.error is not None:
            raise record.error
    if times is not None:
        times.append((int(records[0].times[0]), int(records[-1].times[1])))
    return self._requests.result(outs)
