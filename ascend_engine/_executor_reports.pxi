# Included by _executor.pyx, after Engine: the bodies of what the engine reports -- stats()
# (its counters), memory() (its arena and pinned bytes), trace() and the timeline rows the bench
# command takes around the requests it measures (ascend_engine/timeline.py lays them out;
# executor.h's AE_TRACE_COLUMNS is a row).  The functions take the engine as self.


cdef dict _stats(Engine self):
    """The body of Engine.stats (see there)."""
    cdef ae_stats s
    cdef double ms[256]
    self._refuse_reentry("stats()")
    with self._lock:
        self._ensure_open()
        ae_engine_get_stats(self._engine, &s)
        per_node = {}
        if self.plan.profile and len(self.plan.nodes) <= 256:
            ae_engine_node_device_ms(self._engine, ms)
            per_node = {n.name: ms[i] for i, n in enumerate(self.plan.nodes)}
    return {
        "requests": s.requests,
        "failures": s.failures,
        "in_flight": s.in_flight,
        "in_flight_high_water": s.in_flight_high_water,
        "enqueue_seconds": s.enqueue_ns / 1e9,
        "wait_seconds": s.wait_ns / 1e9,
        "device_ms_per_node": per_node,
        "serving": self._server.stats(),
    }


cdef dict _memory(Engine self):
    """The body of Engine.memory (see there)."""
    self._refuse_reentry("memory()")
    report = self.plan.memory_report()
    with self._lock:
        self._ensure_open()
        report["arena_bytes"] = ae_engine_arena_bytes(self._engine)
        report["host_pinned_bytes"] = ae_engine_host_bytes(self._engine)
    return report


cdef object _trace(Engine self, path, requests, feeds, batch_size):
    """The body of Engine.trace (see there)."""
    self._refuse_reentry("trace()")
    with self._lock:
        self._ensure_open()
    if not self.plan.profile:
        raise EngineError("timelines need timing events: compile the pipeline with profile=True")
    requests = positive_int(requests, "requests", 1 << 20)
    batch = self.plan.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
    batch = min(batch, self.plan.max_batch)
    if self.plan.fixed_batch:
        batch = self.plan.fixed_batch
    work, other = self._requests.trace_requests(feeds, int(requests), batch)
    self._timeline_begin(requests)
    try:
        for _ in _submitted_results(self, work):
            pass
    finally:
        request_ids, table = self._timeline_end()
    return _timeline.write_trace(path, _timeline.Layout.of(self.plan), table, request_ids,
                                 {"engine": repr(self), **other})


cdef tuple _take_timeline(Engine self):
    """Stop recording timeline rows; returns (request numbers, rows) (lock held by the caller)."""
    cdef const double *rows_ptr
    cdef const uint64_t *ids_ptr
    cdef size_t n_rows = ae_engine_trace_end(self._engine, &rows_ptr, &ids_ptr)
    columns = AE_TRACE_COLUMNS(len(self.plan.nodes))
    table = [[rows_ptr[r * columns + c] for c in range(columns)] for r in range(n_rows)]
    return [int(ids_ptr[r]) for r in range(n_rows)], table


cdef object _timeline_begin(Engine self, max_requests):
    """The body of Engine._timeline_begin (see there)."""
    cdef ae_error err
    cdef size_t cap = positive_int(max_requests, "max_requests", 1 << 24)
    if not self.plan.profile:
        raise EngineError("timelines need timing events: compile the pipeline with profile=True")
    with self._lock:
        self._ensure_open()
        self._flush_others()
        if ae_engine_trace_begin(self._engine, cap, &err) != 0:
            _raise_error(&err)
        return int(ae_engine_submitted(self._engine))
