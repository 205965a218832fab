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
    """run_many of a plain plan: each request's record goes to the
    executor from this thread, and this thread completes it (no server
    hand-over: the least host CPU per request)."""
    mine = collections.deque()   # this generator's records, oldest first
    requests = self._requests
    cdef _Arrays ins
    try:
        for feeds in feeds_iterable:
            arrays, rows = requests.prepare(feeds)
            if rows > self.plan.max_batch:
                # rare: deliver ours, then run this one split
                while mine:
                    yield _collect(self, mine.popleft(), times)
                split_times = None if times is None else np.zeros((1, 2), np.int64)
                result = self.run_batch(feeds, batch_size=rows, times=split_times)
                if times is not None:
                    times.append((int(split_times[0, 0]), int(split_times[0, 1])))
                yield result
                continue
            requests.check_fixed(rows, rows)
            record = DeviceRequest(requests.outputs_for(rows))
            if times is not None:
                record.times = np.zeros(2, np.int64)
            ins = _Arrays(arrays)
            if len(mine) >= self.plan.depth:
                yield _collect(self, mine.popleft(), times)
            with self._lock:
                self._submit(record, ins, rows)
            mine.append(record)
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


def _collect(Engine self, record, times=None):
    """A record of _direct_results once done (waiting for it under the lock if need be)."""
    if not record.done:
        with self._lock:
            self._wait_for(record)
    elif record.error is not None:
        raise record.error
    if times is not None:
        times.append((int(record.times[0]), int(record.times[1])))
    return self._requests.result(record.outputs)
