"""Engine: a compiled pipeline, in plain Python over the native device queue.

Build one with ``Pipeline.compile()``.  ``run`` executes one request,
``run_batch`` many (split along the first axis, pipelined, in one GIL-free
call), ``run_many`` streams requests from an iterable keeping ``depth`` in
flight; ``submit`` and ``run_async`` serve callers one request each.

The rooms (docs/executor.md): :class:`Engine` is the calling surface.  It
composes what a request is for the plan's kind (``ascend_engine/requests.py``,
chosen once), the server (``ascend_engine/serving.py``: admission queue,
batcher, engine threads) and the device queue it is built on
(:class:`ascend_engine._executor.DeviceQueue`, Cython: the C engine, the
request records, the GIL-free calls).  Calls go one way: the Engine calls
the server's and the queue's public methods; the server calls the queue's
typed interface (``serving.DeviceQueue``); the queue calls neither.

Threads: an Engine may be shared by several Python threads.  Each call takes
the queue's lock for as long as it talks to the executor (enqueueing or
waiting), so calls are serialized, while the GIL stays free for other Python
work.  Requests are numbered; a caller waits until its own request is done,
whoever completes it, so run(), run_batch() and run_many() from different
threads interleave safely.  For parallel throughput, compile the pipeline
into several engines (on several devices, for data parallelism).

One request path: run(), submit(), run_async() and trace() -- and run_many()
and run_batch() of a plan with host steps or dynamic shapes -- admit calls
into the server, which puts them on the device.  A plan with neither keeps
two fast paths: run_batch() is one GIL-free call into the executor, and
run_many() hands its requests to the queue directly.
"""

from __future__ import annotations

import asyncio
import collections
import time

import numpy as np

from ascend_engine import timeline as _timeline
from ascend_engine._checks import positive_int, timeout_ms
from ascend_engine._executor import DeviceQueue
from ascend_engine.errors import EngineBusy, EngineError
from ascend_engine.loop_bridge import wait_on_loop
from ascend_engine.requests import DeviceRequest
from ascend_engine.serving_calls import Call, ServingFuture


class Engine(DeviceQueue):
    """A compiled pipeline (see :meth:`ascend_engine.Pipeline.compile`).

    ``engine.run({"x": a})`` -> ``{"y": array}``;
    ``engine.run_batch({"x": big}, batch_size=4)``; ``for out in
    engine.run_many(feeds_iterable): ...``; ``submit``, ``run_async``;
    ``stats()``, ``memory()``, ``trace()``, ``close()``, and
    ``with pipe.compile() as engine:``.
    """

    @property
    def depth(self):
        """Requests that may be in flight at once."""
        return self.plan.depth

    @property
    def max_batch(self):
        """Rows one request carries at most (larger requests are split)."""
        return self.plan.max_batch

    def __repr__(self):
        state = "closed" if self.closed else f"depth={self.plan.depth}"
        nodes = ", ".join(f"{n.name}@stream{n.stream}" for n in self.plan.nodes)
        return (f"<ascend_engine.Engine device={self.plan.device} {state} max_batch={self.plan.max_batch} "
                f"nodes=[{nodes}]>")

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
        self.refuse_reentry("run()")
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
        self.refuse_reentry("submit()", False)
        return self._admit(feeds, timeout, block, priority).future

    def _admit(self, feeds, timeout, block, priority, timed=False):
        """submit()'s work: the admitted Call.  ``timed``: its device
        requests record when they went in and came out (Call.times)."""
        level = self._server.level_of(priority)
        inputs, outputs, rows, shape = self._requests.request(feeds)
        submitted = time.monotonic()
        deadline = None if timeout is None else submitted + timeout_ms(timeout) / 1000.0
        self.ensure_open()
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
        self.refuse_reentry("run_batch()")
        batch = self.plan.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        if not self._requests.direct:   # host steps or dynamic shapes: requests through submit
            if times is not None:
                raise ValueError("run_batch(times=) times the executor's own loop: a plan with host steps or "
                                 "dynamic shapes runs its requests through submit(); time those instead")
            requests, join = self._requests.batches(feeds, batch)
            return join(list(self._submitted_results(requests)))
        arrays, rows = self._requests.prepare(feeds)
        self._requests.check_fixed(rows, min(batch, self.plan.max_batch))
        return self.run_direct(arrays, rows, batch, times)

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
        outputs = self.run_direct(arrays, rows, batch, None)
        self._server.note_alone(rows, started, time.monotonic())
        return outputs

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
        self.refuse_reentry("run_many()")
        if times is not None and not isinstance(times, list):
            raise TypeError(f"run_many(times=) takes a list to append to, got {type(times).__name__}")
        if self._requests.direct:
            return self._direct_results(feeds_iterable, times)
        return self._submitted_results(feeds_iterable, times)

    def _submitted_results(self, feeds_iterable, times=None):
        """run_many through submit(): each feeds dict one request, ``depth``
        in flight.  An abandoned generator cancels what has not started; what
        has runs to the end into arrays its request owns."""
        pending = collections.deque()
        timed = times is not None
        try:
            for feeds in feeds_iterable:
                if len(pending) >= self.plan.depth:
                    yield self._call_result(pending.popleft(), times)
                pending.append(self._admit(feeds, None, True, None, timed))
            while pending:
                yield self._call_result(pending.popleft(), times)
        finally:
            for call in pending:
                call.future.cancel()


    @staticmethod
    def _call_result(call, times):
        """A submitted call's result, its times appended to ``times`` when they are kept."""
        result = call.future.result()
        if times is not None:
            times.append(tuple(call.times))
        return result

    def _direct_results(self, feeds_iterable, times=None):
        """run_many of a plain plan: each request's records go to the queue
        from this thread, and this thread completes them (no server
        hand-over: the least host CPU per request).  A request above
        ``max_batch`` rows is split into device requests of ``max_batch``
        rows writing into row ranges of its result arrays; ``depth`` device
        requests stay in flight across requests, split or not
        (docs/executor.md, "Timing run_many's requests")."""
        mine = collections.deque()   # this generator's requests, oldest first: (records, outputs)
        requests = self._requests
        depth = self.plan.depth
        max_batch = self.plan.max_batch
        held = 0                     # records of ``mine`` not yet collected (device requests in flight)
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
                        yield self._collect(mine.popleft(), times)
                    whole = hi - lo == rows
                    record = DeviceRequest(outs if whole else [o[lo:hi] for o in outs])
                    if times is not None:
                        record.times = np.zeros(2, np.int64)
                    self.submit_record(record, arrays if whole else [a[lo:hi] for a in arrays], hi - lo)
                    records.append(record)
                    held += 1
                    lo = hi
                    if lo >= rows:
                        break
            while mine:
                yield self._collect(mine.popleft(), times)
        finally:
            if mine:   # abandoned with requests on the device
                self.release_abandoned()

    def _collect(self, request, times=None):
        """A request of _direct_results once every record of it is done: its
        outputs; its first record's enqueue time and its last one's done
        time appended to ``times``."""
        records, outs = request
        for record in records:
            self.wait_record(record)
        if times is not None:
            times.append((int(records[0].times[0]), int(records[-1].times[1])))
        return self._requests.result(outs)

    # ---- reporting -----------------------------------------------------------------

    def stats(self, percentiles=True):
        """Counters: requests, failures, in flight (and high-water mark), host
        enqueue and wait seconds, and device milliseconds per node when the
        pipeline was compiled with ``profile=True``.

        ``percentiles=False`` gives the same counters with each serving
        figure's running totals alone (``count``, ``total``, ``added``): no
        mean, max or percentile is computed over the recent values, so a
        server scraping it on every request pays for no sort."""
        self.refuse_reentry("stats()")
        return {**self.counters(), "serving": self._server.stats(percentiles)}

    def memory(self):
        """Device and pinned host bytes: the arena, per slot, per node, the peak
        working set and the recommended pool size (peak + 15 %)."""
        self.refuse_reentry("memory()")
        report = self.plan.memory_report()
        report["arena_bytes"], report["host_pinned_bytes"] = self.arena_bytes()
        return report


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
        self.refuse_reentry("trace()")
        with self._lock:
            self.ensure_open()
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
            for _ in self._submitted_results(work):
                pass
        finally:
            request_ids, table = self._timeline_end()
        return _timeline.write_trace(path, _timeline.Layout.of(self.plan), table, request_ids,
                                     {"engine": repr(self), **other})
