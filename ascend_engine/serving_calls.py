"""The serving's calls (docs/executor.md, "Serving"): a caller's request
(:class:`Call`), its pieces in the queue (:class:`Piece`), the future it
gets (:class:`ServingFuture`) and the figures kept per call (:class:`Samples`).
The admission queue, the batcher and the engine threads that move them are
ascend_engine/serving.py."""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future

import numpy as np

from ascend_engine._signals import MAIN_THREAD, SIGNAL_SLICE, THREAD, hold_signals, release_signals, settle
from ascend_engine.errors import EngineError

SAMPLES = 100_000   # latency samples kept per figure (the most recent ones)


class ServingFuture(Future):
    """The ``concurrent.futures.Future`` of one submitted call.

    Waiting for it from one of its engine's done-callbacks is refused (the
    thread running the callback is the one that would resolve it).  On the
    main thread its waits hold signals in slices of ``SIGNAL_SLICE``, so a
    Ctrl-C never lands inside the future's own lock (which the completer
    needs to resolve it) yet still interrupts the wait at once."""

    def __init__(self, server):
        super().__init__()
        self._server = server

    def result(self, timeout=None):
        self._wait("result()", timeout)
        return super().result(0)

    def exception(self, timeout=None):
        self._wait("exception()", timeout)
        return super().exception(0)

    def cancel(self):
        hold_signals()
        try:
            return super().cancel()
        finally:
            release_signals()

    def add_done_callback(self, fn):
        hold_signals()
        try:
            super().add_done_callback(fn)
        finally:
            release_signals()

    def _wait(self, what, timeout):
        if THREAD.resolving is self._server and not self.done():
            raise EngineError(f"Future.{what} of a request still running was called from a done-callback "
                              f"of the same engine: {CALLBACK_WHY}")
        if threading.get_ident() != MAIN_THREAD:
            super().exception(timeout)
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = SIGNAL_SLICE if deadline is None else min(SIGNAL_SLICE,
                                                             max(0.0, deadline - time.monotonic()))
            hold_signals()
            try:
                try:
                    super().exception(left)
                    return
                except TimeoutError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
            finally:
                release_signals()


# why a call from a done-callback that would wait is refused (ServingFuture and the Engine say it)
CALLBACK_WHY = ("done-callbacks run on the thread that resolves the future (usually the engine's "
                "completer, which completes the engine's requests), so it would wait for itself for ever. "
                "From a callback, submit with block=False (or use run_async), or hand the work to another "
                "thread")


class Call:
    """One caller's request: its future, inputs, outputs and progress.

    A request of a pipeline with dynamic shapes carries its ``shape`` (a
    ``RequestShape``): its inputs are padded to its gears, its outputs arrive
    at the gears' shapes and are cut back to the request's size when it is
    done.  Such a call is never split or merged with others."""

    __slots__ = ("future", "inputs", "outputs", "rows", "deadline", "submitted", "dispatched",
                 "pieces_left", "failed", "names", "parts", "shape", "pieces", "dropped", "level", "delayed",
                 "times")

    def __init__(self, future, inputs, outputs, rows, deadline, names, shape=None, level=None,
                 submitted=None):
        self.future = future
        self.inputs = inputs
        self.outputs = outputs
        self.rows = rows
        self.deadline = deadline        # monotonic seconds by which it must start, or None
        # the clock reading its deadline was counted from, so a timeout's message says the timeout given
        self.submitted = time.monotonic() if submitted is None else submitted
        self.dispatched = None
        self.pieces_left = 0
        self.failed = False
        self.names = names
        # outputs whose rows a host step sets (None in outputs): (row, array) per piece
        self.parts = {}
        # a request of a pipeline with dynamic shapes: its RequestShape (padded inputs of other
        # sizes share gears, not cuts)
        self.shape = shape
        self.pieces = ()        # its Pieces while it has some in the queue
        self.dropped = False    # left the queue without running (cancelled, expired, closed)
        self.level = level      # its priority's line in the queue (0: the highest); None: the default
        self.delayed = False    # its queue timeout passed under timeout_action="delay"
        # a timed call (Engine.run_many(times=)): [enqueued, done] in time.monotonic_ns(), its first
        # device request's enqueue and its last one's delivery, as the executor recorded them; else None
        self.times = None

    def fail(self, exc):
        if not self.failed:
            self.failed = True
            if not self.future.done():
                settle(self.future.set_exception, exc)

    def piece_done(self):
        self.pieces_left -= 1
        if self.pieces_left == 0 and not self.failed and not self.future.done():
            settle(self.future.set_result, dict(zip(self.names, self._finished_outputs(), strict=True)))

    def _finished_outputs(self):
        if self.shape is None:
            return [np.concatenate([a for _, a in sorted(self.parts[k], key=lambda part: part[0])])
                    if o is None else o for k, o in enumerate(self.outputs)]
        # one piece; None: an output known only once the request ran (its only part is final)
        return [self.parts[k][0][1] if o is None else o if cut is None else np.ascontiguousarray(o[cut])
                for k, (o, cut) in enumerate(zip(self.outputs, self.shape.cuts, strict=True))]


def note_times(times, device):
    """A timed call's [enqueued, done] given one more of its device requests'
    executor times: the earliest enqueue, the latest delivery."""
    enqueued, done = int(device[0]), int(device[1])
    times[0] = enqueued if times[0] is None else min(times[0], enqueued)
    times[1] = done if times[1] is None else max(times[1], done)


class Piece:
    """Rows [lo, hi) of a call, waiting in the queue."""

    __slots__ = ("call", "lo", "hi")

    def __init__(self, call, lo, hi):
        self.call, self.lo, self.hi = call, lo, hi

    @property
    def rows(self):
        return self.hi - self.lo


class Samples:
    """The most recent values of one figure, with percentiles."""

    def __init__(self):
        self.values = collections.deque(maxlen=SAMPLES)
        self.total = 0.0        # every value ever added, summed (a Prometheus counter reads it)
        self.added = 0          # how many values were ever added (the statistics endpoint's count)

    def add(self, value):
        self.values.append(value)
        self.total += value
        self.added += 1

    def summary(self, percentiles=True):
        """The recent values' count, mean and percentiles; ``total`` and ``added`` cover every value
        ever added.  ``percentiles=False``: the count, ``total`` and ``added`` alone, read without
        touching the values (what a server's counters need, on every scrape)."""
        if not percentiles or not self.values:
            return {"count": len(self.values), "total": self.total, "added": self.added}
        a = np.fromiter(self.values, dtype=np.float64)
        p50, p90, p99 = np.percentile(a, [50, 90, 99])
        return {"count": int(a.size), "mean": float(a.mean()), "p50": float(p50), "p90": float(p90),
                "p99": float(p99), "max": float(a.max()), "total": self.total, "added": self.added}
