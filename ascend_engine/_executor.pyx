# cython: language_level=3
"""The device queue: the native layer under :class:`ascend_engine.Engine`.

A :class:`DeviceQueue` owns the C engine (executor.h, ``ae_engine``): it takes
a plan lowered once (:class:`ascend_engine._lowering.LoweredPlan`, freed as
soon as ``ae_engine_create`` has copied it), and offers the calls the layers
above make -- submit a request record, wait for one, complete what is done,
and the GIL-free ``run_batch`` fast path -- plus its counters and timelines.
It is a root of the runtime's ownership tree (``_runtime.Resource``): closing
it (or the exit hook) releases the executor, then its models and devices.

Who calls what (docs/executor.md, "The rooms"): ``ascend_engine/engine.py``
(``Engine``, plain Python, a subclass) runs requests through the public calls
below; the serving code (``ascend_engine/serving.py``) puts its device
requests on it and completes them through the typed interface its
``DeviceQueue`` protocol names (``free_slots``, ``in_flight``, ``oldest``,
``wait_request``, ``complete_waited``, ``enqueue``).  Nothing here calls up.

Requests and failures: every request on the executor has a record
(:class:`ascend_engine.requests.DeviceRequest`) that the queue keeps until
the executor is done with it.  The record owns the output arrays the
executor writes into, so a caller that abandons a run_many() generator
(break, an exception, Ctrl-C) never leaves the executor writing into freed
memory; and the record carries the request's own outcome, so each caller
gets its own result or error: the request that failed raises the AscendCL
error (naming the node), the others in flight at that moment raise
EngineError saying they were cancelled and why.
"""

import collections
import time
import threading
import traceback

import logging

import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset, strncpy

from ascend_engine._acl cimport *
from ascend_engine._executor_api cimport *
from ascend_engine._lowering cimport LoweredPlan
from ascend_engine._runtime cimport (api, check_not_forked, close_from_finalizer, Resource, Device, dvpp_api,
                                     shutting_down)

from ascend_engine import errors as _errors
from ascend_engine import requests as _requests
from ascend_engine._checks import positive_int, times_array
from ascend_engine.errors import EngineBusy, EngineError, HostStepError
from ascend_engine._gears import chunk_plan, chunk_span  # noqa: F401  (importable from here as before)
from ascend_engine._lowering import PyStep
from ascend_engine.native_step import NativeStep
from ascend_engine.requests import DeviceRequest
from ascend_engine.serving import THREAD as _THREAD, Server, resolving_for
from ascend_engine.serving_calls import CALLBACK_WHY

_log = logging.getLogger("ascend_engine")
cnp.import_array()

# executor errors and Ctrl-C polling; the executor's own native steps, a
# request's array pointers and what a closed queue could not release yet
include "_executor_errors.pxi"
include "_queue_memory.pxi"


cdef class DeviceQueue(Resource):
    """The C engine of one compiled plan and the records of its requests
    (the module's docstring); :class:`ascend_engine.Engine` is the calling
    surface built on it.  The calls marked "lock held" expect the caller to
    hold ``_lock``; the others take it."""

    cdef ae_engine *_engine
    cdef readonly object plan
    cdef Device _device
    cdef public object _lock           # the queue's lock: executor state (serving.Server shares it)
    cdef dict _pending                 # ticket -> DeviceRequest, in submission order, until the executor is done
    cdef public object _server         # admission queue, batcher and engine threads (ascend_engine.serving)
    cdef public object _requests       # what a request is for the plan's kind (ascend_engine.requests)
    cdef list _owned_models            # models loaded for this engine, unloaded by close()
    cdef dict _py_steps                # name -> PyStep: the Python host steps (the C plan points at them)
    cdef list _keep                    # what native host steps need alive
    cdef list _other_devices           # Device objects of the plan's devices after the first

    def __cinit__(self):
        self._engine = NULL

    def __init__(self, plan, *, owned_models=(), bint _unsafe_skip_waits=False):
        # One construction path: whatever fails below, _abort_construction
        # releases exactly what was taken so far (the plan's C copies, the
        # devices opened), so a failed construction leaks and warns nothing;
        # the models stay with compile(), which loaded them.
        self.plan = plan
        self._owned_models = list(owned_models)
        self._lock = threading.Lock()
        self._pending = {}
        self._other_devices = []
        self._py_steps = {}
        self._keep = []
        try:
            self._construct(plan, _unsafe_skip_waits)
        except BaseException:
            self._abort_construction()
            raise
        # A root of the ownership tree, as a model that opened its own device
        # is: close() releases its models and devices after the executor, and
        # the exit hook closes it (newest first) before the devices are reset
        # and AscendCL finalized.
        self._ctx = (<Resource>self._device)._ctx
        self._register(None)

    cdef _construct(self, plan, bint skip_waits):
        cdef const ae_acl_api *t = api()
        cdef ae_error err
        cdef ae_engine *engine = NULL
        cdef int rc
        cdef LoweredPlan lowered
        self._server = Server(self, self._lock)
        self._device = Device(plan.device)
        for d in plan.devices[1:]:
            self._other_devices.append(Device(d))
        self._requests = _requests.for_plan(plan)
        for node in plan.nodes:
            if node.kind == "host" and not isinstance(node.fn, NativeStep):
                self._py_steps[node.name] = PyStep(
                    node.name, node.fn, [(plan.tensors[t_].dtype, tuple(plan.tensors[t_].shape[1:]))
                                         for t_ in node.inputs],
                    node.output_specs, node.rows_any, self._requests.shapes, plan.nodes.index(node))
            elif node.kind == "host":
                self._keep.append(node.fn)
        # the plan lowered once; C copies it in ae_engine_create, and it is freed right after
        lowered = LoweredPlan(plan, [self._device] + self._other_devices, self._py_steps)
        try:
            for n, name in lowered.builtins:
                lowered.nodes[n].host.fn = _builtin_step(name)
            if any(node.kind == "image" for node in plan.nodes):
                lowered.p.dvpp = dvpp_api()   # image nodes: DVPP's table, or a BackendError naming what is missing
            lowered.p.unsafe_skip_waits = 1 if skip_waits else 0
            (<Resource>self._device)._activate()
            with nogil:
                rc = ae_engine_create(t, &lowered.p, &engine, &err)
        finally:
            lowered.free()
        if rc != 0:
            _raise_error(&err)
        self._engine = engine

    cdef _abort_construction(self):
        """Release what a failed construction took (the one cleanup path of __init__)."""
        devices = ([self._device] if self._device is not None else []) + self._other_devices
        self._device = None
        self._other_devices = []
        for d in devices:
            d.close()

    # ---- lifetime (the scaffolding of every native object: _runtime.Resource) ----

    def close(self):
        """Wait for the work in flight, deliver it, then release every stream,
        event, buffer and model of the engine.  Idempotent.

        Everything that can be released is released even when some release
        fails; the failures are then reported in one EngineError.  If the
        device is still running requests abandoned after a timeout, the
        engine is closed at once but its device memory, streams and models
        are released only when the device is done with them (at the latest
        when the process exits): until then the device may still write into
        that memory.
        """
        self.refuse_reentry("close()")
        if not self._closed:
            self._server.close()     # queued requests fail; in-flight ones complete
        Resource.close(self)         # _release, with the device's context current

    cdef int _release(self) except -1:
        cdef ae_engine *engine
        cdef ae_error err
        cdef int rc
        problems = []
        with self._lock:
            if self._engine is NULL:   # closed by another thread meanwhile
                return 0
            # deliver what is in flight to its requests (their owners may still collect)
            rc = AE_REQUEST_FAILED
            while rc == AE_REQUEST_FAILED:   # one request's host step failed: go on with the others
                with nogil:
                    rc = ae_engine_flush(self._engine, &err)
                self._settle(rc, &err)
            # NULL before the engine is freed: the lock-free readers of the serving
            # interface (in_flight(), free_slots_hint(), read with the GIL held) then
            # see a closed queue, never an engine being freed without the GIL
            engine = self._engine
            self._engine = NULL
            with nogil:
                rc = ae_engine_close(engine, &err)
            self._cancel_pending("the engine was closed before the request completed")
            if rc == 1:
                if not shutting_down():   # else shutdown() releases the remains next, waiting for the device
                    _log.warning("ascend_engine: %s; its memory is released once the device finishes "
                                 "(at the latest when the device is closed)", _error_of(&err).message)
                # the other devices stay open until the remains are released
                _Remains.keep(engine, self._owned_models + self._other_devices, self._device)
                self._other_devices = []
                self._owned_models = []
                return 0
            if rc != 0:
                problems.append(_error_of(&err))
            for m in self._owned_models:
                try:
                    m.close()
                except Exception as exc:
                    problems.append(exc)
            self._owned_models = []
            for d in [self._device] + self._other_devices:
                try:
                    d.close()
                except Exception as exc:
                    problems.append(exc)
            self._other_devices = []
        if problems:
            text = "; ".join(f"{type(p).__name__}: {p}" for p in problems)
            raise EngineError(f"close() released everything it could, but {len(problems)} release(s) "
                              f"failed: {text}") from problems[0]
        return 0

    cdef int _close_dropped(self) except -1:
        # Resource.__del__ (dropped without close(); the whole engine is still
        # intact): the orderly close runs -- the requests already admitted
        # complete and their futures resolve, then models and devices are
        # released.  The engine's lock may be held by the thread that dropped
        # the last reference (a done-callback run while that thread delivered
        # requests under the lock): then the close runs on a thread of its own
        # once the lock is free.
        if self._lock.acquire(blocking=False):
            self._lock.release()
            self._close_after_admitted()
        else:
            threading.Thread(target=self._close_after_admitted, name="ascend-engine-close", daemon=True).start()
        return 0

    def _close_after_admitted(self):
        # What was admitted still runs: its callers may hold its futures.
        # Bounded by the plan's timeout in all; what is left then fails clearly.
        timeout = self.plan.timeout_ms / 1000.0 if self.plan.timeout_ms >= 0 else 60.0
        deadline = time.monotonic() + timeout
        while (self._server.queued_calls or self.in_flight()) and time.monotonic() < deadline:
            time.sleep(0.002)
        close_from_finalizer(self)

    # ---- the executor's requests (engine lock held) -----------------------------

    def ensure_open(self):
        """Raise EngineError when the queue is closed (or ForkedProcessError in
        a child forked from this process: the executor is the parent's)."""
        if self._engine is NULL or self._closed:
            check_not_forked()
            raise EngineError("the engine is closed")

    def refuse_reentry(self, str what, bint waits=True):
        """Refuse at once a call into this engine that could only wait for
        the engine itself (serving.py, "no waiting on oneself"): any call
        from one of its Python host steps (they run on an engine worker
        thread, inside a request the engine is running), and a call that
        waits (``waits``) from a done-callback of one of its futures."""
        step = _THREAD.step
        if step is not None and step in self._py_steps.values():
            raise EngineError(
                f"host step {step.name!r} called {what} on its own engine: the step runs on one of the "
                "engine's worker threads, in the middle of a request on the device, and the engine cannot "
                "finish a request of its own while that step waits (it would wait for ever, or until its "
                "timeout). Do the work inside the step, or call another engine")
        if waits and resolving_for(self._server):
            raise EngineError(f"{what} was called from a done-callback of one of this engine's futures: "
                              f"{CALLBACK_WHY}")

    cdef object _settle(self, int rc, ae_error *err):
        """Bring the request records up to date after an executor call (lock held).

        Every record below the executor's completion mark is done: cancelled
        if the call failed and cancelled it (the one that failed gets the
        call's own error), else delivered.  Returns the call's error as an
        exception (None when it succeeded).
        """
        cdef uint64_t begin = 0, end = 0
        cdef uint64_t completed = ae_engine_completed(self._engine) if self._engine is not NULL else 2**64 - 1
        failure = None
        failed = None
        if rc != 0:
            failure = _error_of(err)
            failed = None if err.request == AE_NO_REQUEST else int(err.request)
            failure.request = failed
            ae_engine_last_cancelled(self._engine, &begin, &end)
        pending = self._pending
        if isinstance(failure, HostStepError):
            step = self._py_steps.get(failure.step)
            cause = step.take_error(failed) if step is not None else None
            if cause is not None:
                failure.__cause__ = cause
        while pending:
            ticket = next(iter(pending))
            if ticket >= completed:
                break
            record = pending.pop(ticket)
            record.done = True
            self._requests.forget(ticket)
            if not (rc != 0 and begin <= ticket < end):
                record.outputs = self._requests.deliver(record)
            if rc != 0 and begin <= ticket < end:
                if rc == AE_INTERRUPTED:
                    record.error = EngineError(f"request {ticket} was cancelled: the caller waiting for "
                                               f"request {failed} was interrupted (Ctrl-C)")
                elif ticket == failed:
                    record.error = failure
                else:
                    cause = "timed out" if isinstance(failure, _errors.AclTimeoutError) else "failed"
                    record.error = EngineError(
                        f"request {ticket} was cancelled because request {failed} {cause} while it was "
                        f"in flight: {failure}")
            self._record_over(ticket, record)
        return failure

    cdef _record_over(self, ticket, record):
        """The executor is done with ``record`` (delivered or failed): its
        owner hears of it, whatever ended it."""
        if record.on_done is not None:
            try:
                record.on_done(record)
            except Exception:
                _log.exception("ascend_engine: delivering request %d failed", ticket)

    cdef _arm_poll(self):
        """Let the main thread's waits notice Ctrl-C (lock held); others wait plainly."""
        if threading.get_ident() == _MAIN_THREAD:
            ae_engine_set_poll(self._engine, _poll_signals, NULL, 20)
        else:
            ae_engine_set_poll(self._engine, NULL, NULL, 20)

    cdef _cancel_pending(self, str why):
        pending, self._pending = self._pending, {}
        self._requests.forget_all()
        for ticket, record in pending.items():
            record.done = True
            record.error = EngineError(f"request {ticket}: {why}")
            self._record_over(ticket, record)   # a served call ends here too

    cdef _submit(self, record, _Arrays ins, uint64_t n_rows):
        """Enqueue one request for ``record`` (lock held).

        If completing an older request fails on the way (to free a slot),
        that failure belongs to the older request's caller and this request
        was not enqueued: try again (the engine has drained, so it goes in).
        """
        cdef ae_error err
        cdef int rc
        cdef _Arrays outp = _Arrays(record.outputs)
        cdef uint64_t *out_rows = NULL
        cdef cnp.ndarray rows_array
        cdef ae_request_shape req
        cdef const ae_request_shape *req_ptr = NULL
        cdef cnp.ndarray row_bytes, gear_dims, gear_at, gear_count
        cdef cnp.ndarray times_held
        cdef int64_t *times_at = NULL
        shape = record.shape
        if shape is not None:
            # the executor copies these into the slot before submit returns
            row_bytes, gear_dims = shape.row_bytes, shape.gear_dims
            gear_at, gear_count = shape.gear_at, shape.gear_count
            req.row_bytes = <const size_t *>cnp.PyArray_DATA(row_bytes)
            req.gear_dims = <const int64_t *>cnp.PyArray_DATA(gear_dims)
            req.gear_at = <const int *>cnp.PyArray_DATA(gear_at)
            req.gear_count = <const int *>cnp.PyArray_DATA(gear_count)
            req_ptr = &req
        if record.out_rows is not None:
            rows_array = record.out_rows
            out_rows = <uint64_t *>cnp.PyArray_DATA(rows_array)
        if record.times is not None:
            # the record owns the array until the executor is done with it
            times_held = record.times
            times_at = <int64_t *>cnp.PyArray_DATA(times_held)
        while True:
            self.ensure_open()
            self._arm_poll()
            ticket = ae_engine_submitted(self._engine)
            self._requests.track(ticket, record)   # its host steps may run before submit returns
            with nogil:
                rc = ae_engine_submit_timed(self._engine, ins.ptrs, n_rows, <void *const *>outp.ptrs, out_rows,
                                            req_ptr, times_at, &err)
            if rc != 0:
                self._requests.forget(ticket)
            failure = self._settle(rc, &err)
            if rc == 0:
                record.ticket = ticket
                self._pending[ticket] = record
                return
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if err.request == AE_NO_REQUEST or err.request == ticket:
                raise failure

    cdef _wait_for(self, record):
        """Complete requests until ``record`` is done (lock held); raise its own error."""
        cdef ae_error err
        cdef int rc
        while not record.done:
            self.ensure_open()
            self._arm_poll()
            with nogil:
                rc = ae_engine_complete_one(self._engine, &err)
            failure = self._settle(rc, &err)
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if rc != 0 and rc != AE_REQUEST_FAILED and not record.done:
                raise failure
        if record.error is not None:
            raise record.error

    cdef _flush_others(self):
        """Complete every request in flight (lock held).  Their failures go to
        their own records; only a failure that belongs to no request raises."""
        cdef ae_error err
        cdef int rc = AE_REQUEST_FAILED
        self._arm_poll()
        while rc == AE_REQUEST_FAILED:   # a request whose host step failed: its own record has it
            with nogil:
                rc = ae_engine_flush(self._engine, &err)
            failure = self._settle(rc, &err)
        if rc == AE_INTERRUPTED:
            raise _take_pending_signal()
        if rc != 0 and err.request == AE_NO_REQUEST:
            raise failure

    # ---- the serving interface (serving.DeviceQueue; lock held unless said) ----------

    def free_slots(self):
        """Slots free for a new device request."""
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def free_slots_hint(self):
        """free_slots() read without the lock: a hint (an int of the executor)."""
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def in_flight(self):
        """Device requests on the device, not yet completed."""
        return 0 if self._engine is NULL else ae_engine_in_flight(self._engine)

    def oldest(self):
        """The number of the oldest device request not yet completed."""
        return ae_engine_completed(self._engine)

    def wait_request(self, uint64_t ticket):
        """Wait for request ``ticket`` without the lock and without the GIL."""
        cdef aclError rc
        cdef ae_engine *engine = self._engine
        if engine is NULL:
            return 0
        with nogil:
            rc = ae_engine_wait_request(engine, ticket)
        return rc

    def complete_waited(self, uint64_t ticket, aclError wait_rc):
        """Complete request ``ticket`` after wait_request() returned ``wait_rc``,
        and whatever else is over already; the records hear of it."""
        cdef ae_error err
        cdef int rc
        if self._engine is NULL:
            return
        self._arm_poll()
        with nogil:
            rc = ae_engine_complete_waited(self._engine, ticket, wait_rc, &err)
        failure = self._settle(rc, &err)
        if rc in (0, AE_REQUEST_FAILED) and ae_engine_in_flight(self._engine) > 0:
            # more may be over already: deliver them in the same turn.  Without
            # the GIL: delivering a failed one drains the engine, which waits
            # for the host-step workers, and a Python step needs the GIL
            with nogil:
                rc = ae_engine_complete_ready(self._engine, &err)
            failure = self._settle(rc if rc < 0 else 0, &err)
        if rc < 0 and err.request == AE_NO_REQUEST:
            _log.warning("ascend_engine: completing requests failed: %s", failure)

    def enqueue(self, list inputs, list outputs, uint64_t rows, on_done, shape=None, timed=False):
        """Put one device request on the device (a free slot is known to exist).
        Where a host step sets an output's rows, ``outputs`` holds None (see
        Requests.device_request).  ``shape``: the request's RequestShape in a
        plan with dynamic shapes.  ``timed``: the executor records its times
        (DeviceRequest.times)."""
        record = self._requests.device_request(inputs, outputs, rows, on_done, shape, timed)
        cdef _Arrays ins = _Arrays(inputs)
        self._submit(record, ins, rows)
        self._server.hand_over()     # the completer

    # ---- the engine's calls ----------------------------------------------------------

    def run_direct(self, arrays, rows, batch, times):
        """run_batch's one GIL-free executor call over checked feeds: ``rows``
        rows of ``arrays`` in requests of ``batch`` rows; ``times``: None or
        the caller's (requests, 2) int64 array (docs/executor.md)."""
        cdef int64_t *times_at = NULL
        cdef cnp.ndarray times_held
        if times is not None:
            times_held = times_array(times, -(-rows // batch))
            times_at = <int64_t *>cnp.PyArray_DATA(times_held)
        outs = self._requests.outputs_for(rows)
        cdef _Arrays ins = _Arrays(arrays)
        cdef _Arrays outp = _Arrays(outs)
        cdef ae_error err
        cdef int rc
        cdef uint64_t total = rows, b = batch
        with self._lock:
            self.ensure_open()
            # other callers' requests first, so that a failure of theirs is
            # theirs, and every failure inside the call below is ours
            self._flush_others()
            self._arm_poll()
            try:
                with nogil:
                    rc = ae_engine_run_batch_timed(self._engine, ins.ptrs, total, b, <void *const *>outp.ptrs,
                                                   times_at, &err)
                failure = self._settle(rc, &err)
            finally:
                # serving calls that queued up while this call held every slot
                # go on now, not when the dispatcher next looks
                self._server.dispatch_locked("exclusive")
            if rc == AE_INTERRUPTED:
                raise _take_pending_signal()
            if rc != 0:
                raise failure
        return self._requests.result(outs)

    def submit_record(self, record, list inputs, uint64_t rows):
        """Enqueue one device request for ``record`` (a DeviceRequest owning
        its output arrays) reading ``rows`` rows of ``inputs``; waits for a
        free slot, completing older requests."""
        cdef _Arrays ins = _Arrays(inputs)
        with self._lock:
            self._submit(record, ins, rows)

    def wait_record(self, record):
        """Complete requests until ``record`` is done; raise its own error."""
        if not record.done:
            with self._lock:
                self._wait_for(record)
        elif record.error is not None:
            raise record.error

    def release_abandoned(self):
        """Records left on the device by an abandoned caller: the completer
        delivers them in the background (unless another thread holds the
        queue, which then frees their slots as it needs them)."""
        if self._engine is not NULL and self._lock.acquire(blocking=False):
            try:
                self._server.hand_over()
            finally:
                self._lock.release()

    # ---- what the queue reports (Engine.stats, memory, trace; the bench) ----------

    def counters(self):
        """The executor's counters (Engine.stats without the serving figures)."""
        cdef ae_stats s
        cdef double ms[256]
        with self._lock:
            self.ensure_open()
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
        }

    def arena_bytes(self):
        """(device arena bytes, pinned host bytes) the executor holds."""
        with self._lock:
            self.ensure_open()
            return ae_engine_arena_bytes(self._engine), ae_engine_host_bytes(self._engine)

    def _timeline_begin(self, max_requests):
        """Keep one timeline row for each of the next ``max_requests`` completed
        requests, whichever call runs them (profile engines only; the rows are
        the ones :meth:`Engine.trace` writes, ascend_engine/timeline.py).
        Completes what is in flight first.  Returns the number the next
        submitted request will get.  Used by the ``bench`` command to time
        every step of the requests it measures."""
        cdef ae_error err
        cdef size_t cap = positive_int(max_requests, "max_requests", 1 << 24)
        if not self.plan.profile:
            raise EngineError("timelines need timing events: compile the pipeline with profile=True")
        with self._lock:
            self.ensure_open()
            self._flush_others()
            if ae_engine_trace_begin(self._engine, cap, &err) != 0:
                _raise_error(&err)
            return int(ae_engine_submitted(self._engine))

    def _timeline_end(self):
        """Stop recording; returns ``(request numbers, rows)``: one row of
        millisecond offsets per completed request, laid out as
        ``AE_TRACE_COLUMNS`` in executor.h (-1 where a time could not be read)."""
        cdef const double *rows_ptr
        cdef const uint64_t *ids_ptr
        cdef size_t n_rows
        with self._lock:
            self.ensure_open()
            n_rows = ae_engine_trace_end(self._engine, &rows_ptr, &ids_ptr)
            columns = AE_TRACE_COLUMNS(len(self.plan.nodes))
            table = [[rows_ptr[r * columns + c] for c in range(columns)] for r in range(n_rows)]
            return [int(ids_ptr[r]) for r in range(n_rows)], table
