"""Serving: many callers, one pipelined engine (docs/executor.md, "Serving").

``Engine.submit`` admits a *call* (one caller's request) into a bounded queue
and returns a ``concurrent.futures.Future``.  Calls leave the queue as
*device requests* (what the executor runs in one slot): one call, a piece of
a call larger than ``max_batch``, or - with the dynamic batcher - several
small calls merged.  Two engine threads keep things moving:

* the **completer** waits for the oldest request on the device with the GIL
  released (the executor's done event), delivers it, resolves the futures of
  the calls in it, and puts queued work into the freed slot;
* the **dispatcher** wakes when a call arrives that could not go straight to
  a free slot, when a batch's waiting time is up, or when a queued call's
  deadline passes.

Submitters put a call straight on the device when a slot is free and nobody
holds the engine, so at low load a request costs no thread hand-over.  Every
executor call happens under the engine's lock (the executor is not
re-entrant); the queue has its own lock, always taken after the engine's.

Three rules keep every admitted call ending exactly once, with no hang:

* **signals held**: Python runs a signal handler on the main thread between
  any two bytecodes, so a Ctrl-C could land inside a critical section and
  leave a lock held or the queue half updated.  On the main thread every
  critical section runs between :func:`hold_signals` and
  :func:`release_signals`: SIGINT is noted meanwhile and raised again once
  the section is over, outside every lock;
* **no waiting on oneself**: a future's done-callbacks run on the thread that
  resolves it (the completer, usually), and a Python host
  step runs on an engine worker thread; a call from either that would wait
  for the engine is refused at once (:data:`THREAD` says where a thread is);
* **queue work per call, not per queue**: cancelled and expired calls leave
  the queue at once (an ordered dict of pieces), deadlines wait in a heap
  with lazy deletion; ``Server.examined`` counts the entries looked at.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
import weakref
from concurrent.futures import Future, InvalidStateError
from typing import Protocol

import numpy as np

# where a thread is and SIGINT held (ascend_engine/_signals.py); THREAD and
# resolving_for stay importable from here, where the Engine imports them
from ascend_engine._signals import (
    MAIN_THREAD,
    SIGNAL_SLICE,
    THREAD,
    hold_signals,
    release_signals,
    signal_arrived,
)
from ascend_engine._signals import resolving_for as resolving_for
from ascend_engine.errors import EngineBusy, EngineError
from ascend_engine.queue_policy import LevelQueue, PolicyFigures, batch_ready, choose_batch, level_index
from ascend_engine.serving_calls import CALLBACK_WHY, Piece, Samples, note_times

_GONE = object()


class DeviceQueue(Protocol):
    """What the server calls on the engine it serves: the device queue's
    typed interface (``ascend_engine._executor.DeviceQueue``), and nothing
    else of the engine.  The engine calls the server's public methods only
    (admit, dispatch_locked, hand_over, idle, ...): no underscore calls
    either way.  Calls marked "lock held" run under the engine's lock (the
    ``lock`` a Server is built with)."""

    plan: object
    closed: bool

    def free_slots(self) -> int:
        """Slots free for a new device request (lock held)."""

    def free_slots_hint(self) -> int:
        """free_slots() read without the lock."""

    def in_flight(self) -> int:
        """Device requests not yet completed (lock held)."""

    def oldest(self) -> int:
        """The number of the oldest device request not yet completed (lock held)."""

    def wait_request(self, ticket: int) -> int:
        """Wait for device request ``ticket`` without the lock or the GIL; its code."""

    def complete_waited(self, ticket: int, wait_rc: int) -> None:
        """Complete request ``ticket`` and what else is over (lock held)."""

    def enqueue(self, inputs, outputs, rows: int, on_done, shape=None, timed: bool = False) -> None:
        """Put one device request on the device; a slot is free (lock held)."""


class Server:
    """The admission queue, the batcher and the two engine threads of one engine."""

    def __init__(self, engine: DeviceQueue, lock):
        plan = engine.plan
        # a weak reference: the engine threads hold the engine only while it has work on the device
        self.engine_ref = weakref.ref(engine, self._engine_gone)
        self.gone = False                             # the engine was collected
        self.handed = 0                               # device requests handed to the completer, ever
        # the idle completer waits on a lock of its own: it holds neither the engine nor its lock
        self.work = threading.Condition(threading.Lock())
        self.max_batch = plan.max_batch
        self.max_queue = plan.max_queue
        self.delay = plan.max_delay_ms / 1000.0
        self.gears = tuple(plan.gears) or (plan.max_batch,)
        self.policy = plan.gear_policy
        self.names = [name for name, _ in plan.outputs]
        # Triton's queue policy (ascend_engine/queue_policy.py)
        self.levels = plan.priority_levels
        self.default_level = plan.default_priority - 1
        self.queue_timeout = plan.queue_timeout_ms / 1000.0 if plan.queue_timeout_ms >= 0 else None
        self.delays = plan.timeout_action == "delay"
        self.preferred = frozenset(plan.preferred_batch_sizes)
        self.cv = threading.Condition(lock)          # the engine's lock: executor state
        self.qlock = threading.Lock()                # the queue (taken after the engine's lock)
        self.qcv = threading.Condition(self.qlock)
        # Pieces in arrival order (an ordered set: a call that will not run leaves it in O(1)); one
        # per priority line when the policy needs lines (a LevelQueue costs ~2.7x an OrderedDict per piece)
        self.queue = (LevelQueue(self.levels) if self.levels > 1 or self.delays
                      else collections.OrderedDict())
        self.queued_rows = 0                          # rows of the queued pieces
        self.queued_calls = 0                         # calls with a piece still queued
        self.with_deadline = 0                        # queued calls that have a deadline
        self.deadlines = []                           # heap of (deadline, seq, call); stale entries skipped
        self.deadline_seq = itertools.count()
        self.expired = []                             # calls past their deadline, to fail outside the lock
        self.examined = 0                             # queue and heap entries looked at (stays O(calls))
        self.space_waiters = collections.deque()      # futures of run_async callers waiting for room
        self.closing = False
        self.threads = []
        self.queue_ms = Samples()
        self.service_ms = Samples()
        self.latency_ms = Samples()                   # per call: admitted to result (engine-side)
        self.dispatch_wait_ms = Samples()             # per device request: due (and a slot free) to put on
        self.batch_rows = collections.Counter()
        # per priority line: queue and compute time per call, rejections (queue full or timed out), delays
        self.by_priority = PolicyFigures(self.levels, Samples)
        self.dispatched_by = collections.Counter()    # which thread put device requests on the device
        self.room_at = 0.0                            # when a full engine last got a free slot (monotonic)
        self.due_pending = False                      # a submitter left due work for the engine's holder
        self.completer_turn = False                   # the completer holds the engine lock

    # ---- admission (any thread) --------------------------------------------------

    def admit(self, call, block):
        """Queue ``call`` (split into pieces of at most max_batch rows), and
        put it on the device from the caller's thread when it is due now and
        a slot is free.

        Other threads are woken only when they have something to do: the
        dispatcher when a batch starts (to time its delay), when a deadline
        is set, or when due work could not be put on the device here.
        """
        call.pieces = [Piece(call, lo, min(call.rows, lo + self.max_batch))
                       for lo in range(0, call.rows, self.max_batch)]
        if call.level is None:
            call.level = self.default_level
        if call.deadline is None and self.queue_timeout is not None:
            call.deadline = call.submitted + self.queue_timeout     # the default queue timeout
        while True:
            hold_signals()
            try:
                if self._admit_held(call, block):
                    return
            finally:
                release_signals()   # a Ctrl-C that came meanwhile is raised here, outside every lock
            # a Ctrl-C came while waiting for room and its handler did not raise: wait on

    def _admit_held(self, call, block):
        """admit() with signals held: False when a SIGINT arrived while it
        waited for room (nothing was queued)."""
        waits = block and threading.get_ident() == MAIN_THREAD
        with self.qcv:
            if self.closing:
                raise EngineError("the engine is closed")
            while self.queued_calls >= self.max_queue:
                if not block:
                    self.by_priority.rejected[call.level] += 1
                    raise EngineBusy(f"the engine's admission queue is full ({self.max_queue} requests "
                                     "waiting for a slot): retry later, or submit with block=True")
                if THREAD.resolving is self:
                    raise EngineError("submit() would wait for room in the admission queue, from a "
                                      f"done-callback of the same engine: {CALLBACK_WHY}")
                self.qcv.wait(SIGNAL_SLICE if waits else None)
                if self.closing:
                    raise EngineError("the engine is closed")
                if waits and signal_arrived():
                    return False
            starts_batch = not self.queue
            for piece in call.pieces:
                self.queue[piece] = None
            self.queued_rows += call.rows
            call.pieces_left = len(call.pieces)
            self.queued_calls += 1
            if call.deadline is not None:
                self.with_deadline += 1
                heapq.heappush(self.deadlines, (call.deadline, next(self.deadline_seq), call))
            self._start_threads()
            # without a delay every call is due at once; with one, when a full (or preferred) batch is queued
            due = not self.delay or batch_ready(self.queue, self.queued_rows, self.max_batch, self.preferred)
            if (self.delay and starts_batch) or call.deadline is not None:
                self.qcv.notify_all()   # the dispatcher: a batch to time, or a deadline
        if not due:
            return True
        # due now: straight onto the device without a thread hand-over
        self.due_pending = True
        if self.cv.acquire(blocking=False):
            try:
                self.dispatch_locked("caller")
            finally:
                self.cv.release()
        # Not placed yet.  When the completer holds the engine, it looks at
        # due_pending right after letting go (dispatch_pending): no other
        # thread needs waking, which would cost a GIL hand-over.  Otherwise
        # the dispatcher (or the completer, once a slot frees) will.
        if call.dispatched is None and not self.completer_turn:
            with self.qcv:
                self.qcv.notify_all()
        return True

    def idle(self):
        """Nothing queued, no batch being timed and nothing on the device: a lone
        caller's run() may put its request on and wait for it itself (a read
        without locks: a call that comes meanwhile queues and goes on after it)."""
        engine = self.engine_ref()
        return not self.queue and not self.delay and engine is not None and engine.in_flight() == 0

    def note_alone(self, rows, started, ended):
        """The figures of a run() that ran alone (Engine._run_alone), as a call
        served through the queue records them: no time queued, its device
        requests put on by its caller."""
        ms = (ended - started) * 1000.0
        level = self.default_level
        for figure in (self.queue_ms, self.by_priority.queue_ms[level], self.dispatch_wait_ms):
            figure.add(0.0)
        for figure in (self.service_ms, self.latency_ms, self.by_priority.compute_ms[level]):
            figure.add(ms)
        full, rest = divmod(rows, self.max_batch)
        if full:
            self.batch_rows[self.max_batch] += full
        if rest or not full:
            self.batch_rows[rest] += 1
        self.dispatched_by["alone"] += full + bool(rest or not full)

    def level_of(self, priority):
        """The queue line of a request's ``priority`` (None or 0: the default); EngineError out of range."""
        return level_index(priority, self.levels, self.default_level + 1)

    def space_future(self):
        """A future resolved when the queue has room (for run_async)."""
        f = Future()
        hold_signals()
        try:
            with self.qcv:
                if self.queued_calls < self.max_queue or self.closing:
                    f.set_result(None)
                else:
                    self.space_waiters.append(f)
        finally:
            release_signals()
        return f

    def _wake_for_room(self):
        # qlock held: wake as many run_async waiters as there are free places
        n = self.max_queue - self.queued_calls
        while n > 0 and self.space_waiters:
            f = self.space_waiters.popleft()
            if not f.done():
                f.set_result(None)
                n -= 1

    def _room_made(self, n):
        # qlock held: n calls left the queue
        self.queued_calls -= n
        self.qcv.notify_all()
        # one waiter per place made (waking them all would have all but one
        # find the queue full again)
        while n > 0 and self.space_waiters:
            f = self.space_waiters.popleft()
            if not f.done():
                f.set_result(None)
                n -= 1

    # ---- dispatch (engine lock held) -----------------------------------------------

    def _take(self, now):
        """Pieces for the next device request (qlock held); [] if none is due.
        Calls found cancelled on the way leave the queue and are skipped."""
        if self.with_deadline:
            self._expire(now)
        while True:
            taken = self._take_due(now)
            if taken or taken is None or not self.queue:
                return taken or []

    def _take_due(self, now):
        # one try of _take: None when nothing is due, [] when all it took was cancelled
        queue = self.queue
        if not queue:
            return None
        if self.delay:
            waited_out = now - next(iter(queue)).call.submitted >= self.delay
            count = choose_batch(queue, self.max_batch, self.gears, self.policy, waited_out, self.preferred)
            if not count:
                return None
            self.dispatch_wait_ms.add(max(0.0, now - self._ready_at()) * 1000.0)
        else:
            count = 1
            ready = max(next(iter(queue)).call.submitted, self.room_at)
            self.dispatch_wait_ms.add(max(0.0, now - ready) * 1000.0)
        taken = []
        for _ in range(count):
            if not queue:
                break
            piece = queue.popitem(last=False)[0]
            self.examined += 1
            self.queued_rows -= piece.rows
            call = piece.call
            if call.dispatched is None:
                if not call.future.set_running_or_notify_cancel():
                    self._drop_call(call)         # cancelled while queued: never runs
                    continue
                call.dispatched = now
                if call.deadline is not None:
                    self._deadline_gone()
                self.queue_ms.add((now - call.submitted) * 1000.0)
                self.by_priority.queue_ms[call.level].add((now - call.submitted) * 1000.0)
            taken.append(piece)
            if piece.hi == call.rows:
                call.pieces = ()                  # out of the queue (and no Call <-> Piece cycle for the GC)
                self._room_made(1)
        return taken

    def _ready_at(self):
        """When the batch at the front of the queue became due with a slot
        free (qlock held): once full (when the piece that filled it arrived,
        or the first one that did not fit), or once the oldest piece had
        waited max_delay_ms, whichever came first; and not before the engine
        last got a free slot."""
        rows, full_at = 0, None
        for piece in self.queue:
            if rows + piece.rows > self.max_batch:
                full_at = piece.call.submitted
                break
            rows += piece.rows
            if rows == self.max_batch:
                full_at = piece.call.submitted
                break
        due = next(iter(self.queue)).call.submitted + self.delay
        if full_at is not None:
            due = min(due, full_at)
        return max(due, self.room_at)

    def _drop_call(self, call):
        """Take every queued piece of a call that will not run out of the
        queue (qlock held): O(its pieces), whatever the queue holds."""
        for piece in call.pieces:
            if self.queue.pop(piece, _GONE) is not _GONE:
                self.queued_rows -= piece.rows
                self.examined += 1
        call.dropped = True
        call.pieces = ()
        if call.deadline is not None:
            self._deadline_gone()
        self._room_made(1)

    def _deadline_gone(self):
        # qlock held: a queued call with a deadline started or left the queue
        self.with_deadline -= 1
        if not self.with_deadline:
            self.deadlines.clear()                # every entry left is stale
        elif len(self.deadlines) > 2 * self.with_deadline + 64:
            # more stale entries than live ones: rebuild (O(1) per call, amortized)
            self.examined += len(self.deadlines)
            self.deadlines = [e for e in self.deadlines if self._waiting(e[2])]
            heapq.heapify(self.deadlines)

    @staticmethod
    def _waiting(call):
        """A queued call that has not started (its deadline still counts)."""
        return call.dispatched is None and not call.dropped

    def _earliest_deadline(self):
        """The earliest deadline of a call still waiting, or None (qlock held);
        stale heap entries on top are dropped on the way."""
        heap = self.deadlines
        while heap and not self._waiting(heap[0][2]):
            heapq.heappop(heap)
            self.examined += 1
        return heap[0][0] if heap else None

    def _expire(self, now):
        """Take the queued calls whose deadline passed before they started
        out of the queue (qlock held); they are failed by _fail_expired,
        outside the lock (their callbacks may call the engine)."""
        while True:
            deadline = self._earliest_deadline()
            if deadline is None or not now > deadline:
                return
            call = heapq.heappop(self.deadlines)[2]
            self.examined += 1
            if self.delays:
                # timeout_action="delay": it stays queued, behind every call that did not time out
                self.queue.delay(call, call.pieces)
                call.deadline = None
                self._deadline_gone()
                self.by_priority.delayed[call.level] += 1
                continue
            self._drop_call(call)
            self.expired.append(call)

    def _fail_expired(self):
        """Fail the calls _expire took out (qlock not held)."""
        while self.expired:
            call = self.expired.pop()
            if call.future.set_running_or_notify_cancel():
                self.by_priority.rejected[call.level] += 1
                waited = call.deadline - call.submitted
                self._resolve(call.fail, TimeoutError(f"the request was not started within its timeout of "
                                                      f"{waited:.3f} s (it never ran)"))

    def _resolve(self, end, *args):
        """Run ``end`` (a Call's fail) marking this thread as resolving this
        server's futures: calls from their callbacks that would wait are refused."""
        here = THREAD
        outer, here.resolving = here.resolving, self
        try:
            end(*args)
        finally:
            here.resolving = outer

    def dispatch_locked(self, who):
        """Put queued work on the device while slots are free (engine lock held).

        ``who`` names the thread doing it (caller, completer, dispatcher, or
        exclusive after a run_batch / run_many call), counted in stats()."""
        self.due_pending = False
        engine = self.engine_ref()
        if engine is None:
            return
        hold_signals()
        try:
            while engine.free_slots() > 0:
                with self.qlock:
                    pieces = self._take(time.monotonic())
                    if not pieces and self.queue:
                        self.qcv.notify_all()   # a batch not due yet: the dispatcher times it
                if self.expired:
                    self._fail_expired()
                if not pieces:
                    return
                self.dispatched_by[who] += 1
                self._run_pieces(engine, pieces)
        finally:
            release_signals()

    def _run_pieces(self, engine, pieces):
        rows = sum(p.rows for p in pieces)
        self.batch_rows[rows] += 1
        if len(pieces) == 1:
            p = pieces[0]
            inputs = [a[p.lo:p.hi] for a in p.call.inputs]
            outputs = [None if a is None else a[p.lo:p.hi] for a in p.call.outputs]
        else:
            inputs = [np.concatenate([p.call.inputs[k][p.lo:p.hi] for p in pieces])
                      for k in range(len(pieces[0].call.inputs))]
            outputs = [np.empty((rows,) + a.shape[1:], a.dtype) for a in pieces[0].call.outputs]
        started = time.monotonic()
        timed = any(p.call.times is not None for p in pieces)

        def done(record, pieces=pieces, outputs=outputs, started=started):
            now = time.monotonic()
            self.service_ms.add((now - started) * 1000.0)
            at = 0
            here = THREAD
            hold_signals()
            outer, here.resolving = here.resolving, self
            try:
                for p in pieces:
                    if record.error is not None:
                        p.call.fail(record.error)
                    else:
                        if len(pieces) > 1:
                            for dst, src in zip(p.call.outputs, outputs, strict=True):
                                dst[p.lo:p.hi] = src[at:at + p.rows]
                        for k, o in enumerate(p.call.outputs):
                            if o is None:   # rows set by a host step (never merged with other calls)
                                p.call.parts.setdefault(k, []).append((p.lo, record.outputs[k]))
                        if p.call.times is not None:
                            # before piece_done: its caller may read them as soon as the future is resolved
                            note_times(p.call.times, record.times)
                        p.call.piece_done()
                        if p.call.pieces_left == 0:
                            self.latency_ms.add((now - p.call.submitted) * 1000.0)
                            self.by_priority.compute_ms[p.call.level].add((now - p.call.dispatched) * 1000.0)
                    at += p.rows
            finally:
                here.resolving = outer
                release_signals()

        try:
            engine.enqueue(inputs, outputs, rows, done, pieces[0].call.shape, timed)
        except BaseException as exc:   # this device request could not be enqueued
            for p in pieces:
                self._resolve(p.call.fail, exc)
            if not isinstance(exc, Exception):
                raise

    # ---- the engine threads --------------------------------------------------------

    def _start_threads(self):
        if self.threads:
            return
        for target, name in ((self._complete_loop, "completer"), (self._dispatch_loop, "dispatcher")):
            t = threading.Thread(target=target, name=f"ascend-engine-{name}", daemon=True)
            self.threads.append(t)
            t.start()

    def _engine_gone(self, ref):
        # the weak reference's callback, on whatever thread dropped the engine: no lock may be taken
        self.gone = True

    def hand_over(self):
        """Tell the completer that requests were put on the device (engine lock held)."""
        with self.work:
            self.handed += 1
            self.work.notify()

    def _await_work(self, seen):
        """The idle completer: wait until requests are handed over (or the
        engine closes or is gone) holding no reference to the engine and not
        its lock, so a caller's drop is the engine's last and closes it at
        once.  Returns the engine and the hand-over count, or None."""
        with self.work:
            while self.handed == seen and not self.closing and not self.gone:
                self.work.wait(0.5)
            seen = self.handed
        if self.closing or self.gone:
            return None, seen
        return self.engine_ref(), seen

    def _complete_loop(self):
        # The completer holds the engine only while the engine has work: it
        # resolves the futures of what it delivered after letting go of the
        # lock and, when nothing more is in flight or queued, of the engine.
        # A caller that drops the engine once its result is in then drops the
        # last reference, and the engine is released at once on its thread.
        engine = None
        seen = 0            # self.handed when the completer last looked at the engine
        here = THREAD
        while True:
            looked = engine is None
            if looked:
                engine, seen = self._await_work(seen)
                if engine is None:
                    return
            with self.cv:
                self.completer_turn = True
                try:
                    if engine.closed:
                        return
                    if looked:
                        self.dispatch_locked("completer")
                    ticket = engine.oldest() if engine.in_flight() > 0 else None
                finally:
                    self.completer_turn = False
            # calls that became due while this thread held the engine (their
            # submitters could not take it): on the device before waiting
            self.dispatch_pending("completer")
            if ticket is None:
                engine = None
                continue
            rc = engine.wait_request(ticket)      # the GIL is released while it waits
            settled = []
            with self.cv:
                self.completer_turn = True
                try:
                    if engine.closed:
                        return
                    was_full = engine.free_slots() == 0
                    here.deferred = settled
                    try:
                        engine.complete_waited(ticket, rc)
                    finally:
                        here.deferred = None
                    if was_full:
                        self.room_at = time.monotonic()
                    # queued work into the freed slots before any Python of the callers runs: the
                    # device never waits for their futures' callbacks
                    self.dispatch_locked("completer")
                    busy = engine.in_flight() > 0 or bool(self.queue)
                finally:
                    self.completer_turn = False
            if not busy:
                engine = None      # let go before the callers hear
            self._settle_deferred(settled)
            if engine is None:
                self.dispatch_pending("completer")

    def _settle_deferred(self, settled):
        """Resolve the futures the completer delivered (no lock held); their
        done-callbacks run here, marked as this server's (no waiting on oneself)."""
        here = THREAD
        hold_signals()
        outer, here.resolving = here.resolving, self
        try:
            for end, value in settled:
                try:
                    end(value)
                except InvalidStateError:   # resolved meanwhile (close() failed it): that end stands
                    pass
        finally:
            here.resolving = outer
            release_signals()

    def dispatch_pending(self, who):
        """Put due work on the device if a submitter left it for the engine's holder."""
        while self.due_pending and self.cv.acquire(blocking=False):
            try:
                self.dispatch_locked(who)
            finally:
                self.cv.release()

    def _dispatch_loop(self):
        while True:
            with self.qcv:
                if self.closing:
                    return
                wake = self._next_wake(time.monotonic())
                if wake is None or wake > 0:
                    self.qcv.wait(0.5 if wake is None else min(wake, 0.5))
                if self.closing:
                    return
                if self.with_deadline:
                    self._expire(time.monotonic())    # deadlines hold even while every slot is busy
                # a woken run_async caller that was cancelled before it submitted
                # leaves its place unused: hand such places on
                self._wake_for_room()
                queued = bool(self.queue)
            if self.expired:
                self._fail_expired()
            if not queued:
                continue
            engine = self.engine_ref()
            if engine is None:
                return
            with self.cv:
                if engine.closed:
                    return
                self.dispatch_locked("dispatcher")
            del engine

    def _next_wake(self, now):
        """Seconds until the dispatcher has something to do (None: nothing queued)."""
        if not self.queue:
            return None
        times = []
        deadline = self._earliest_deadline() if self.with_deadline else None
        if deadline is not None:
            times.append(deadline - now)
        room = self._engine_has_room()
        if not room:
            times.append(0.5)      # the completer dispatches when a slot frees
        elif not self.delay or batch_ready(self.queue, self.queued_rows, self.max_batch, self.preferred):
            times.append(0.0)      # a request, or a full (or preferred) batch, is ready now
        else:
            times.append(next(iter(self.queue)).call.submitted + self.delay - now)
        return max(0.0, min(times))

    def _engine_has_room(self):
        engine = self.engine_ref()
        return engine is not None and engine.free_slots_hint() > 0

    # ---- shutting down -------------------------------------------------------------

    def close(self):
        """Fail queued calls, stop the dispatcher, let the completer finish what is in flight.

        Every call with a piece still queued ends here: one that never
        started fails as not started; one split into pieces, some already
        on the device, fails as not completed (its pieces on the device
        finish, their rows are dropped)."""
        hold_signals()
        try:
            with self.qcv:
                self.closing = True
                calls = {id(p.call): p.call for p in self.queue}
                for call in calls.values():
                    call.dropped = True
                    call.pieces = ()
                self.queue.clear()
                self.queued_rows = 0
                self.queued_calls = 0
                self.with_deadline = 0
                self.deadlines.clear()
                for f in self.space_waiters:
                    if not f.done():
                        f.set_result(None)
                self.space_waiters.clear()
                self.qcv.notify_all()
            self._fail_expired()
            for call in calls.values():
                if call.dispatched is not None:
                    self._resolve(call.fail, EngineError(
                        "the engine was closed before the request completed: some of its pieces (it has more "
                        "rows than max_batch) had not started"))
                elif call.future.set_running_or_notify_cancel():
                    self._resolve(call.fail, EngineError("the engine was closed before the request started"))
        finally:
            release_signals()
        with self.work:
            self.work.notify_all()   # the completer, if idle
        for t in self.threads:
            if t is not threading.current_thread():
                t.join()

    def stats(self, percentiles=True):
        """The serving figures; ``percentiles=False`` leaves out every mean, maximum and percentile
        (Samples.summary), which cost a pass over up to SAMPLES values per figure."""
        return {"queue_ms": self.queue_ms.summary(percentiles),
                "service_ms": self.service_ms.summary(percentiles),
                "latency_ms": self.latency_ms.summary(percentiles),
                "dispatch_wait_ms": self.dispatch_wait_ms.summary(percentiles),
                "batch_rows": dict(sorted(self.batch_rows.items())),
                "dispatched_by": dict(sorted(self.dispatched_by.items())), "queued": self.queued_calls,
                **self.by_priority.summary(percentiles)}
