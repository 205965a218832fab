# cython: language_level=3
"""Engine: a compiled pipeline, run by the C executor with the GIL released.

Build one with ``Pipeline.compile()``.  ``run`` executes one request,
``run_batch`` many (split along the first axis, pipelined, in one GIL-free
call), ``run_many`` streams requests from an iterable keeping ``depth`` in
flight.

Threads: an Engine may be shared by several Python threads.  Each call takes
the engine's lock for as long as it talks to the executor (enqueueing or
waiting), so calls are serialized, while the GIL stays free for other Python
work.  Requests are numbered; a caller waits until its own request is done,
whoever completes it, so run(), run_batch() and run_many() from different
threads interleave safely.  For parallel throughput, compile the pipeline
into several engines (on several devices, for data parallelism).

One request path: run(), submit(), run_async() and trace() -- and run_many()
and run_batch() of a plan with host steps or dynamic shapes -- admit calls
into the server (ascend_engine/serving.py), which puts them on the device.
A plan with neither keeps two fast paths: run_batch() is one GIL-free call
into the executor, and run_many() hands its requests to the executor
directly.  What a request is for the plan's kind (its feeds, output arrays
and delivery) is answered by ascend_engine/requests.py, chosen once.

Requests and failures: every request on the executor has a record
(:class:`ascend_engine.requests.DeviceRequest`) that the engine keeps until
the executor is done with it.  The record owns the output arrays the
executor writes into, so a caller that abandons a run_many() generator
(break, an exception, Ctrl-C) never leaves the executor writing into freed
memory; and the record carries the request's own outcome, so each caller
gets its own result or error: the request that failed raises the AscendCL
error (naming the node), the others in flight at that moment raise
EngineError saying they were cancelled and why.
"""

import asyncio
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
from ascend_engine._runtime cimport (api, check_not_forked, close_from_finalizer, Resource, Device, dvpp_api,
                                     shutting_down)

from ascend_engine import errors as _errors
from ascend_engine import requests as _requests
from ascend_engine import timeline as _timeline
from ascend_engine._checks import positive_int, timeout_ms, times_array
from ascend_engine.errors import EngineBusy, EngineError, HostStepError
from ascend_engine._gears import chunk_plan, chunk_span  # noqa: F401  (importable from here as before)
from ascend_engine.native_step import NativeStep
from ascend_engine.requests import DeviceRequest
from ascend_engine.loop_bridge import wait_on_loop
from ascend_engine.serving import THREAD as _THREAD, Server, resolving_for
from ascend_engine.serving_calls import CALLBACK_WHY, Call, ServingFuture
from ascend_engine.shapes import pad_to

_log = logging.getLogger("ascend_engine")
cnp.import_array()

# executor errors and Ctrl-C polling; the Python host-step trampoline; the
# plan handed to C and the memory kept for it
include "_executor_errors.pxi"
include "_host_steps.pxi"
include "_plan_marshal.pxi"


cdef class Engine(Resource):
    """A compiled pipeline (see :meth:`ascend_engine.Pipeline.compile`).

    ``engine.run({"x": a})`` -> ``{"y": array}``;
    ``engine.run_batch({"x": big}, batch_size=4)``; ``for out in
    engine.run_many(feeds_iterable): ...``; ``stats()``, ``memory()``,
    ``close()``, and ``with pipe.compile() as engine:``.
    """

    cdef ae_engine *_engine
    cdef readonly object plan
    cdef Device _device
    cdef object _lock
    cdef dict _pending         # ticket -> DeviceRequest, in submission order, until the executor is done
    cdef object _server        # admission queue, batcher and engine threads (ascend_engine.serving)
    cdef object _requests      # what a request is for the plan's kind (ascend_engine.requests)
    cdef list _owned_models    # models loaded for this engine, unloaded by close()
    cdef dict _py_steps        # name -> _PyStep: the Python host steps (their ctx pointers live here)
    cdef list _keep            # what native host steps need alive, and plan arrays until create copies them
    # C copies of the plan, alive as long as the engine
    cdef ae_tensor_plan *_tensors
    cdef ae_node_plan *_nodes
    cdef int *_ints
    cdef uint64_t *_gears
    cdef list _other_devices   # Device objects of the plan's devices after the first
    cdef void *_dev_arrays     # contexts, device ids, slot bytes, stream devices (one block)

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
        cdef ae_plan p
        cdef ae_error err
        cdef ae_engine *engine = NULL
        cdef int rc
        self._server = Server(self, self._lock)
        self._device = Device(plan.device)
        for d in plan.devices[1:]:
            self._other_devices.append(Device(d))
        self._requests = _requests.for_plan(plan)
        for node in plan.nodes:
            if node.kind == "host" and not isinstance(node.fn, NativeStep):
                self._py_steps[node.name] = _PyStep(
                    node.name, node.fn, [(plan.tensors[t_].dtype, tuple(plan.tensors[t_].shape[1:]))
                                         for t_ in node.inputs],
                    node.output_specs, node.rows_any, self._requests.shapes, plan.nodes.index(node))
            elif node.kind == "host":
                self._keep.append(node.fn)
        memset(&p, 0, sizeof(p))   # fields a plan does not use stay 0
        _fill_plan(self, &p)
        if any(node.kind == "image" for node in plan.nodes):
            p.dvpp = dvpp_api()   # image nodes: DVPP's table, or a BackendError naming what is missing
        p.unsafe_skip_waits = 1 if skip_waits else 0
        (<Resource>self._device)._activate()
        with nogil:
            rc = ae_engine_create(t, &p, &engine, &err)
        if rc != 0:
            _raise_error(&err)
        self._engine = engine

    cdef _abort_construction(self):
        """Release what a failed construction took (the one cleanup path of __init__)."""
        _free_plan(self)
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
        self._refuse_reentry("close()")
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
            engine = self._engine
            with nogil:
                rc = ae_engine_close(engine, &err)
            self._engine = NULL
            self._cancel_pending("the engine was closed before the request completed")
            if rc == 1:
                if not shutting_down():   # else shutdown() releases the remains next, waiting for the device
                    _log.warning("ascend_engine: %s; its memory is released once the device finishes "
                                 "(at the latest when the device is closed)", _error_of(&err).message)
                # the other devices stay open until the remains are released
                _Remains.keep(engine, self._owned_models + self._other_devices, self._device, self._tensors,
                              self._nodes, self._ints, self._gears)
                self._other_devices = []
                self._tensors = self._nodes = NULL
                self._ints = NULL
                self._gears = NULL
                self._owned_models = []
                return 0
            if rc != 0:
                problems.append(_error_of(&err))
            _free_plan(self)
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
        while (self._server.queued_calls or self._in_flight()) and time.monotonic() < deadline:
            time.sleep(0.002)
        close_from_finalizer(self)

    def __dealloc__(self):
        # The plan's C copies are host memory of this object.  An executor
        # never closed (in a child forked from this process: it belongs to
        # the parent) may still point into them: they stay then.
        if self._engine is NULL:
            _free_plan(self)

    @property
    def depth(self):
        """Requests that may be in flight at once."""
        return self.plan.depth

    @property
    def max_batch(self):
        """Rows one request carries at most (larger requests are split)."""
        return self.plan.max_batch

    def __repr__(self):
        state = "closed" if self._closed else f"depth={self.plan.depth}"
        nodes = ", ".join(f"{n.name}@stream{n.stream}" for n in self.plan.nodes)
        return (f"<ascend_engine.Engine device={self.plan.device} {state} max_batch={self.plan.max_batch} "
                f"nodes=[{nodes}]>")

    # ---- the executor's requests (engine lock held) -----------------------------

    cdef int _ensure_open(self) except -1:
        # closed, or in a child forked from this process (the executor is the parent's)
        if self._engine is NULL or self._closed:
            check_not_forked()
            raise EngineError("the engine is closed")
        return 0

    cdef int _refuse_reentry(self, str what, bint waits=True) except -1:
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
        return 0

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
            self._ensure_open()
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
            self._ensure_open()
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

    # ---- running -----------------------------------------------------------------

    def run(self, feeds, *, timeout=None):
        """Run one request; returns {output name: array}.

        ``submit(feeds).result()``: concurrent run() calls from several
        threads are pipelined like run_batch.  A run() that finds nothing
        queued and nothing on the device puts its request on and waits for
        it on its own thread, as run_batch does (``dispatched_by["alone"]``
        in ``stats()["serving"]``).  A request larger than
        ``max_batch`` rows is split and run pipelined.  Ctrl-C while waiting
        raises KeyboardInterrupt at once; the request is dropped (cancelled
        if it had not started).
        """
        self._refuse_reentry("run()")
        if self._requests.direct and self._server.idle():
            return self._run_alone(feeds)
        future = self.submit(feeds, timeout=timeout)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def submit(self, feeds, *, timeout=None, block=True, priority=None):
        """Admit one request and return a ``concurrent.futures.Future`` of its
        outputs dict (or of its own error).  Callable from any thread.

        The request waits in the admission queue (``compile(max_queue=)``)
        until a slot is free; when the queue is full, ``submit`` blocks, or
        with ``block=False`` raises :class:`EngineBusy`.  ``timeout``
        (seconds): a request not started by then fails with TimeoutError and
        never runs.  ``Future.cancel()`` works until the request is put on the
        device.  With ``compile(max_delay_ms=...)`` small requests are merged
        into device requests of up to ``max_batch`` rows (each caller gets
        back exactly its own rows).  A pipeline with dynamic shapes takes a
        request of any shape its gears hold, of at most ``max_batch`` rows.
        ``priority``: 1 (served first) to ``compile(priority_levels=)``, or
        None for the default; ``timeout`` overrides ``compile(queue_timeout=)``
        and what passing it does is ``compile(timeout_action=)``'s.
        """
        self._refuse_reentry("submit()", False)
        return self._admit(feeds, timeout, block, priority).future

    def _admit(self, feeds, timeout, block, priority, timed=False):
        """submit()'s work: the admitted Call.  ``timed``: its device
        requests record when they went in and came out (Call.times)."""
        level = self._server.level_of(priority)
        inputs, outputs, rows, shape = self._requests.request(feeds)
        submitted = time.monotonic()
        deadline = None if timeout is None else submitted + timeout_ms(timeout) / 1000.0
        self._ensure_open()
        call = Call(ServingFuture(self._server), inputs, outputs, rows, deadline, self._requests.names, shape,
                    level, submitted)
        if timed:
            call.times = [None, None]
        self._server.admit(call, bool(block))
        return call

    async def run_async(self, feeds, *, timeout=None, priority=None, wait_for_room=True):
        """``await engine.run_async(feeds)``: run one request without blocking
        the event loop (no thread per request: the engine's completer resolves
        the future, which wakes the caller's loop).  Works with any running
        loop (asyncio, uvloop) and from several loops in several threads.
        When the admission queue is full it waits for room without blocking
        the loop (with ``wait_for_room=False`` it raises :class:`EngineBusy`,
        as a server turning requests away does).  ``timeout`` and
        ``priority``: as for :meth:`submit`.  Cancelling the task cancels the
        request if it had not started."""
        while True:
            try:
                future = self.submit(feeds, timeout=timeout, block=False, priority=priority)
                break
            except EngineBusy:
                if not wait_for_room:
                    raise
                await asyncio.wrap_future(self._server.space_future())
        return await wait_on_loop(future)    # one wake-up of this loop per burst of results

    def run_batch(self, feeds, batch_size=None, *, times=None):
        """Split the feeds along their first axis into requests of ``batch_size``
        rows and run them pipelined in one call with the GIL released.

        The last request may be smaller; requests above ``max_batch`` are split.
        Default batch_size: ``max_batch``.  Returns the outputs concatenated
        in order -- except outputs whose rows a host step with rows="any"
        sets: each of those is a list with one array per request (of
        ``batch_size`` rows, the last maybe smaller), since a request's rows
        there need not match its input rows.  A pipeline with dynamic shapes
        takes arrays of one shape past the first axis.

        ``times``: a caller-owned int64 array of shape ``(requests, 2)``
        (``requests`` = rows / ``batch_size`` rounded up; C-contiguous,
        writable) that receives, per request, the ``time.monotonic_ns()``
        clock when it was enqueued (after any wait for a free slot) and when
        its outputs were in the result arrays.  Only plans without host
        steps or dynamic shapes (their ``run_batch`` is one call into the
        executor) take it.  Left None, no clock is read per request.
        """
        self._refuse_reentry("run_batch()")
        batch = self.plan.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        if not self._requests.direct:   # host steps or dynamic shapes: requests through submit
            if times is not None:
                raise ValueError("run_batch(times=) times the executor's own loop: a plan with host steps or "
                                 "dynamic shapes runs its requests through submit(); time those instead")
            requests, join = self._requests.batches(feeds, batch)
            return join(list(_submitted_results(self, requests)))
        arrays, rows = self._requests.prepare(feeds)
        self._requests.check_fixed(rows, min(batch, self.plan.max_batch))
        return self._run_direct(arrays, rows, batch, times)

    def _run_alone(self, feeds):
        """run() when nothing is queued or on the device (Server.idle): the
        request is enqueued and waited for on the calling thread, as
        run_batch runs its requests, instead of through the completer and a
        future (two thread hand-overs).  Callers that come meanwhile queue
        and go on as it returns."""
        arrays, rows = self._requests.prepare(feeds)
        batch = max(1, min(rows, self.plan.max_batch))   # as submit() splits it
        self._requests.check_fixed(rows, batch)
        started = time.monotonic()
        outputs = self._run_direct(arrays, rows, batch, None)
        self._server.note_alone(rows, started, time.monotonic())
        return outputs

    def _run_direct(self, arrays, rows, batch, times):
        """run_batch's one GIL-free executor call over checked feeds."""
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
            self._ensure_open()
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

    def run_many(self, feeds_iterable, *, times=None):
        """Yield the outputs of each feeds dict in order, keeping up to ``depth``
        requests in flight.  Each feeds dict is one request (split if above
        ``max_batch``).

        The generator may be abandoned at any point (break, an exception in
        the loop or in the iterable, close()): requests already on the device
        complete in the background and their results are dropped.

        ``times``: a list that gets, before each result is yielded, that
        request's ``(enqueued, done)`` on the ``time.monotonic_ns()`` clock,
        as ``run_batch(times=)`` records them: when the executor took its
        first execution (after any wait for a free slot) and when its last
        execution's outputs were in the result arrays.  Left None, no clock
        is read per request.
        """
        self._refuse_reentry("run_many()")
        if times is not None and not isinstance(times, list):
            raise TypeError(f"run_many(times=) takes a list to append to, got {type(times).__name__}")
        if self._requests.direct:
            return _direct_results(self, feeds_iterable, times)
        return _submitted_results(self, feeds_iterable, times)

    # ---- the serving protocol (ascend_engine.serving; engine lock held unless said) ----

    def _free_slots(self):
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def _free_slots_unlocked(self):
        # a hint read without the lock (an int of the executor)
        return 0 if self._engine is NULL else ae_engine_free_slots(self._engine)

    def _in_flight(self):
        return 0 if self._engine is NULL else ae_engine_in_flight(self._engine)

    def _oldest(self):
        return ae_engine_completed(self._engine)

    def _wait_request(self, uint64_t ticket):
        """Wait for request ``ticket`` without the lock and without the GIL."""
        cdef aclError rc
        cdef ae_engine *engine = self._engine
        if engine is NULL:
            return 0
        with nogil:
            rc = ae_engine_wait_request(engine, ticket)
        return rc

    def _complete_waited(self, uint64_t ticket, aclError wait_rc):
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

    def _enqueue_device(self, list inputs, list outputs, uint64_t rows, on_done, shape=None, timed=False):
        """Put one device request on the device (a free slot is known to exist).
        Where a host step sets an output's rows, ``outputs`` holds None (see
        Requests.device_request).  ``shape``: the request's RequestShape in a
        plan with dynamic shapes.  ``timed``: the executor records its times
        (DeviceRequest.times)."""
        record = self._requests.device_request(inputs, outputs, rows, on_done, shape, timed)
        cdef _Arrays ins = _Arrays(inputs)
        self._submit(record, ins, rows)
        self._server.hand_over()     # the completer

    # ---- reporting -----------------------------------------------------------------

    def stats(self):
        """Counters: requests, failures, in flight (and high-water mark), host
        enqueue and wait seconds, and device milliseconds per node when the
        pipeline was compiled with ``profile=True``."""
        return _stats(self)

    def memory(self):
        """Device and pinned host bytes: the arena, per slot, per node, the peak
        working set and the recommended pool size (peak + 15 %)."""
        return _memory(self)

    # ---- timelines (their bodies: _executor_reports.pxi) -----------------------------

    def trace(self, path, requests=16, feeds=None, batch_size=None):
        """Run ``requests`` requests and write their timeline to ``path`` as
        Chrome trace-event JSON (open it in Perfetto or chrome://tracing).

        One lane per stream: copy-in, each compute stream, copy-out; every
        copy, wait and model execution is a span timed by device timing
        events.  Needs an engine compiled with ``profile=True``.  ``feeds``
        (whole arrays, split like run_batch) default to random inputs of
        ``batch_size`` rows per request (default: max_batch).  A pipeline
        with dynamic shapes takes ``feeds`` as one feeds dict per request
        (a list, cycled) or one dict for every request.  Returns a summary
        dict.
        """
        return _trace(self, path, requests, feeds, batch_size)

    def _timeline_begin(self, max_requests):
        """Keep one timeline row for each of the next ``max_requests`` completed
        requests, whichever call runs them (profile engines only; the rows are
        the ones :meth:`trace` writes, ascend_engine/timeline.py).  Completes
        what is in flight first.  Returns the number the next submitted
        request will get.  Used by the ``bench`` command to time every step of
        the requests it measures."""
        return _timeline_begin(self, max_requests)

    def _timeline_end(self):
        """Stop recording; returns ``(request numbers, rows)``: one row of
        millisecond offsets per completed request, laid out as
        ``AE_TRACE_COLUMNS`` in executor.h (-1 where a time could not be read)."""
        with self._lock:
            self._ensure_open()
            return _take_timeline(self)


# What the engine reports: its counters, its memory, its timelines.
include "_executor_reports.pxi"
include "_executor_run_many.pxi"
