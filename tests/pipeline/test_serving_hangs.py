"""Serving off the happy path: nothing hangs (ascend_engine/serving.py, the
rules in its docstring).  A close() while a call split into pieces is partly
on the device, a done-callback or a host step calling into its own engine, a
storm of SIGINTs during a flood of submit(), and the queue work of draining
many queued calls.  The scenarios that hung run in a child process, bounded
by a timeout, so a regression fails instead of hanging the suite."""

import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import CancelledError

import numpy as np
import pytest
from helpers.pipelines import WIDTH, dense

from ascend_engine import serving, serving_calls
from ascend_engine.errors import EngineError

PRELUDE = """
import os, signal, sys, threading, time
import numpy as np
import ascend_engine as ae
signal.signal(signal.SIGINT, signal.default_int_handler)

def one_model(path, **kw):
    pipe = ae.Pipeline(0)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(path, x, name="m"))
    return pipe.compile(**kw)

np.random.default_rng(0)   # numpy imports it lazily: not under a SIGINT storm (the import lock)

def rows(n, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)}
"""


def run_child(script, timeout=90, **paths):
    """Run ``script`` (after PRELUDE) in a child process; its stdout lines."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", PYTHONPATH=os.path.dirname(tests))
    code = PRELUDE + textwrap.dedent(script).format(**paths)
    try:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                                env=env)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(f"the child hung (killed after {timeout} s); its output: {out[-2000:]}")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def slow(build):
    return build(dense(700, width_in=WIDTH, width_out=WIDTH), "hang_slow", latency_us=20000)


@pytest.fixture(scope="module")
def quick(build):
    return build(dense(701, width_in=WIDTH, width_out=WIDTH), "hang_quick", latency_us=300)


# ---- 1. close() while a call larger than max_batch is partly dispatched ---------------------------


def test_close_with_a_split_call_partly_on_the_device_ends_it(slow):
    """24 rows at max_batch 8: three pieces; the first is on the device when
    close() comes.  The call fails as not completed (it did not hang), and
    the thread waiting for it returns."""
    lines = run_child("""
        engine = one_model({path!r}, depth=1)
        call = engine.submit(rows(24))      # its first piece goes on the device at once
        got = []
        def waiter():
            try:
                call.result()
                got.append("ran")
            except ae.EngineError as exc:
                got.append("EngineError: " + str(exc))
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        time.sleep(0.005)              # the first piece is on the device, two are queued
        engine.close()
        t.join(10)
        print("hung" if t.is_alive() else got[0])
    """, path=slow.path, timeout=60)
    assert lines[0].startswith("EngineError: the engine was closed before the request completed"), lines


def test_a_cancelled_record_still_ends_its_call():
    """A device request cancelled by close (the executor could not deliver
    it) still ends its calls: the records' owners hear of every end."""
    server = FakeEngine(max_batch=8, max_queue=4).server
    call = serving_calls.Call(serving_calls.ServingFuture(server), [np.ones((2, WIDTH), np.float32)],
                        [np.empty((2, WIDTH), np.float32)], 2, None, ["y"])
    server.admit(call, True)
    record = server.fake.records[0]
    record.error = EngineError("request 0: the engine was closed before the request completed")
    record.on_done(record)
    with pytest.raises(EngineError, match="closed before the request completed"):
        call.future.result(timeout=1)


# ---- 2. a done-callback calling into its own engine ---------------------------------------------------


def test_a_done_callback_calling_run_is_refused_and_the_engine_goes_on(slow):
    # a 20 ms model: each callback is added while its request is still on the device, so it runs
    # on the completer (added to a done future, it would run at once on the main thread)
    lines = run_child("""
        engine = one_model({path!r}, depth=2, max_queue=1, timeout=5)
        got = []
        def report(what):
            def callback(f):
                try:
                    what()
                    got.append("ran")
                except Exception as exc:
                    got.append(type(exc).__name__ + ": " + str(exc))
            return callback
        f = engine.submit(rows(1))
        f.add_done_callback(report(lambda: engine.run(rows(1))))
        f.result(timeout=10)
        g = engine.submit(rows(1))
        g.add_done_callback(report(lambda: engine.submit(rows(1)).result()))
        g.result(timeout=10)
        # a chained submit without waiting works from a callback
        chained = []
        h = engine.submit(rows(1))
        h.add_done_callback(lambda f: chained.append(engine.submit(rows(1, 3), block=False)))
        h.result(timeout=10)
        deadline = time.monotonic() + 10
        while (len(got) < 2 or not chained) and time.monotonic() < deadline:
            time.sleep(0.01)
        print(got[0])
        print(got[1])
        print("chained", chained[0].result(timeout=10)["y"].shape)
        print("next", engine.run(rows(2))["y"].shape)
        engine.close()
        print("closed")
    """, path=slow.path, timeout=60)
    assert lines[0].startswith("EngineError: run() was called from a done-callback of one of this "
                               "engine's"), lines
    assert lines[1].startswith("EngineError: Future.result() of a request still running was called from a "
                               "done-callback"), lines
    assert lines[2:] == ["chained (1, 16)", "next (2, 16)", "closed"]


def test_a_done_callback_blocking_on_a_full_queue_is_refused(slow):
    lines = run_child("""
        engine = one_model({path!r}, depth=1, max_queue=1)
        got = []
        def callback(f):
            # the queued call is in the freed slot by now: fill the queue again, then wait for room
            try:
                got.append(engine.submit(rows(1), block=False))
                engine.submit(rows(1))          # the queue is full: this would wait for ever
                got.append("submitted")
            except Exception as exc:
                got.append(type(exc).__name__ + ": " + str(exc))
        running = engine.submit(rows(1))
        time.sleep(0.005)
        queued = engine.submit(rows(1))         # fills the queue
        running.add_done_callback(callback)
        running.result(timeout=10)
        queued.result(timeout=10)
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        got[0].result(timeout=10)               # the call the callback queued runs
        print(got[1])
        engine.close()
        print("closed")
    """, path=slow.path, timeout=60)
    assert lines[0].startswith("EngineError: submit() would wait for room in the admission queue, from a "
                               "done-callback"), lines
    assert lines[1] == "closed"


# ---- 3. a Python host step calling run() on its own engine ------------------------------------------


@pytest.mark.parametrize("timeout", [None, 5])
def test_a_host_step_calling_its_own_engine_is_refused_at_once(quick, timeout):
    """With or without compile(timeout=), the refusal comes at once, names
    the step and says why; the engine still closes."""
    lines = run_child(_HOST_STEP_SCRIPT.replace("TIMEOUT", repr(timeout)), path=quick.path, timeout=60)
    assert lines[0] == "HostStepError 0", lines
    assert "host step 'again' called run() on its own engine: the step runs on one of the engine's worker " \
           "threads" in lines[1], lines
    assert lines[-1] == "closed"


_HOST_STEP_SCRIPT = """
pipe = ae.Pipeline(0)
x = pipe.input("x", "float32", (-1, 16))
engine = None
def again(t):
    engine.run({{"x": np.asarray(t)}})      # its own engine, from its worker thread
    return t.copy()
h = pipe.host(again, pipe.model({path!r}, x, name="m"), outputs=[("h", "float32", (-1, 16))], name="again")
pipe.output("y", h)
engine = pipe.compile(depth=2, timeout=TIMEOUT)
t0 = time.monotonic()
try:
    engine.run(rows(1))
    print("ran")
except ae.HostStepError as exc:
    print("HostStepError", round(time.monotonic() - t0))
    print(str(exc).splitlines()[0])
engine.close()
print("closed")
"""


# ---- 4. a storm of SIGINTs during a flood of submit() ----------------------------------------------

STORM_SCRIPT = """
from concurrent.futures import CancelledError
engine = one_model({path!r}, depth=4, max_queue=64)
futures, lock = [], threading.Lock()
stop = threading.Event()
main = threading.main_thread().ident

def flood(seed):
    k = 0
    while not stop.is_set():
        f = engine.submit(rows(1 + k % 12, seed), timeout=None if k % 3 else 5.0)
        with lock:
            futures.append(f)
        k += 1

go = threading.Event()

def storm():
    go.wait()
    t_end = time.monotonic() + {seconds}
    while time.monotonic() < t_end:
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.0003)
    stop.set()

threads = [threading.Thread(target=flood, args=(s,)) for s in range(3)]
for t in threads:
    t.start()
sender = threading.Thread(target=storm)
sender.start()
interrupts = 0

def main_loop():
    global interrupts
    k = 0
    while not stop.is_set():
        try:
            go.set()                  # the storm starts once the main thread is in here
            if k % 4 == 0:
                engine.run(rows(3, k))
            else:
                f = engine.submit(rows(1 + k % 20, k))
                with lock:
                    futures.append(f)
            k += 1
        except KeyboardInterrupt:
            interrupts += 1

while True:
    try:
        main_loop()
        break
    except KeyboardInterrupt:
        interrupts += 1
while True:
    try:
        sender.join()
        for t in threads:
            t.join()
        break
    except KeyboardInterrupt:
        interrupts += 1
time.sleep(0.05)     # the last signals land here
bad = 0
for f in futures:
    try:
        f.result(timeout=30)
    except CancelledError:
        pass
    except Exception as exc:
        bad += 1
        print("failed:", type(exc).__name__, exc)
stats = engine.stats()
engine.close()
print("interrupted", interrupts > 0)
print("futures", len(futures) > 0, "bad", bad, "queued", stats["serving"]["queued"])
print("closed")
"""


def test_a_sigint_storm_during_a_submit_flood_hangs_nothing(quick):
    """Three threads flood submit() while the main thread submits and runs,
    receiving a SIGINT every ~0.3 ms: every future resolves, the engine
    closes and the child exits."""
    for _ in range(2):
        lines = run_child(STORM_SCRIPT, path=quick.path, seconds=1.5, timeout=120)
        assert lines[-3:] == ["interrupted True", "futures True bad 0 queued 0", "closed"], lines


# ---- 5. queue work stays linear in the calls --------------------------------------------------------


class FakeRecord:
    def __init__(self, on_done):
        self.on_done, self.error, self.outputs = on_done, None, None


class FakeExecutor:
    """The device queue as the server sees it (serving.DeviceQueue), without a
    device: slots are free only when the test says so, a device request is
    done at once."""

    def __init__(self):
        self.slots = 0
        self.records = []
        self.closed = False

    def free_slots(self):
        return self.slots

    free_slots_hint = free_slots

    def in_flight(self):
        return 0

    def enqueue(self, inputs, outputs, rows, on_done, shape=None, timed=False):
        record = FakeRecord(on_done)
        record.outputs = outputs
        self.records.append(record)
        if self.slots > 1:
            on_done(record)


class FakePlan:
    def __init__(self, max_batch, max_queue, delay_ms=0):
        self.max_batch, self.max_queue, self.max_delay_ms = max_batch, max_queue, delay_ms
        self.gears, self.gear_policy, self.outputs = (), "upper", [("y", 0)]
        # the queue policy's defaults (one priority level, no queue timeout)
        self.priority_levels, self.default_priority, self.queue_timeout_ms = 1, 1, -1
        self.timeout_action, self.preferred_batch_sizes = "reject", ()


class FakeEngine:
    def __init__(self, max_batch=8, max_queue=100_000, delay_ms=0):
        self.fake = FakeExecutor()
        self.fake.plan = FakePlan(max_batch, max_queue, delay_ms)
        self.lock = threading.Lock()
        self.server = serving.Server(self.fake, self.lock)
        self.server.fake = self.fake
        self.server._start_threads = lambda: None      # no engine threads: the test dispatches
        self.fake.slots = 1                             # admit hands one request on


def drained_work(n, deadlines, cancel_every):
    """Queue ``n`` one-row calls behind a busy device, cancel some, then
    drain them; the entries the server looked at per call."""
    engine = FakeEngine()
    server, fake = engine.server, engine.fake
    fake.slots = 0
    calls = []
    for _ in range(n):
        call = serving_calls.Call(serving_calls.ServingFuture(server), [np.ones((1, 2), np.float32)],
                            [np.empty((1, 2), np.float32)], 1, 1e12 if deadlines else None, ["y"])
        server.admit(call, True)
        calls.append(call)
    for call in calls[::cancel_every] if cancel_every else ():
        assert call.future.cancel()
    before = server.examined
    fake.slots = 2          # room, and every device request is done at once
    with engine.lock:
        server.dispatch_locked("caller")
    assert server.queued_calls == 0 and not server.queue
    assert all(c.future.done() for c in calls)
    return (server.examined - before) / n


@pytest.mark.parametrize("deadlines, cancel_every", [(False, 0), (True, 0), (True, 2), (False, 2)])
def test_draining_the_queue_looks_at_each_call_a_bounded_number_of_times(deadlines, cancel_every):
    """The entries the server looks at per call do not grow with the queue
    (the former scans looked at the whole queue per dispatch)."""
    small = drained_work(1000, deadlines, cancel_every)
    large = drained_work(8000, deadlines, cancel_every)
    assert large <= 4 and large <= small * 1.2 + 0.1, (small, large)


def test_expired_calls_leave_a_long_queue_at_linear_cost():
    engine = FakeEngine()
    server, fake = engine.server, engine.fake
    fake.slots = 0
    calls = []
    for k in range(4000):
        call = serving_calls.Call(serving_calls.ServingFuture(server), [np.ones((1, 2), np.float32)],
                            [np.empty((1, 2), np.float32)], 1, 0.0 if k % 2 else 1e12, ["y"])
        server.admit(call, True)
        calls.append(call)
    with engine.lock:
        with server.qlock:
            server._expire(1.0)
        server._fail_expired()
    assert server.examined <= 3 * 4000
    assert server.queued_calls == 2000 and len(server.queue) == 2000
    for call in calls[1::2]:
        with pytest.raises(TimeoutError, match="not started within its timeout"):
            call.future.result(timeout=1)
    assert not any(c.future.done() for c in calls[::2])
    for f in calls[::2]:
        assert f.future.cancel()
    with pytest.raises(CancelledError):
        calls[0].future.result(timeout=1)
