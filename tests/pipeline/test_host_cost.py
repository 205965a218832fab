"""What run_batch costs the host per request, pinned without timing: the
AscendCL calls it makes (counted in the simulator's call log) and the
statistics it keeps while checking the context once per call."""

import collections
import json
import re
import signal
import time

import numpy as np
import pytest
from helpers import simlib

import ascend_engine as ae
from ascend_engine import sim

WIDTH = 16
DEPTH = 8
REQUESTS = 400
MODELS = 3

# The child builds a chain of static (1, WIDTH) models, warms the engine up,
# then runs REQUESTS one-row requests on a thread of its own (no Ctrl-C poll
# there), between two calls of aclrtGetRunMode, which the engine never makes.
CHILD = """
import ctypes, json, threading
import numpy as np
import ascend_engine as ae
from ascend_engine import sim
from helpers import simlib

paths = []
for i in range({models}):
    g = sim.Graph(f"static{{i}}")
    x = g.input("x", "float32", (1, {width}))
    w = np.full(({width}, {width}), 0.01 * (i + 1), np.float32)
    g.output("y", g.relu(g.matmul(x, g.const(w))))
    paths.append(f"{folder}/s{{i}}.om")
    g.save(paths[-1])
pipe = ae.Pipeline(device=0)
h = pipe.input("x", "float32", (1, {width}))
for i, p in enumerate(paths):
    h = pipe.model(p, h, name=f"m{{i}}")
pipe.output("y", h)
engine = pipe.compile(depth={depth})
x = np.ones(({requests}, {width}), np.float32)
engine.run_batch({{"x": x[:{depth} * 2]}}, batch_size=1)
lib = simlib.load()
mode = ctypes.c_int()
seen = {{}}

def measured():
    seen["tid"] = threading.get_native_id()
    assert lib.aclrtGetRunMode(ctypes.byref(mode)) == 0
    seen["y"] = float(engine.run_batch({{"x": x}}, batch_size=1{timed})["y"].sum())
    assert lib.aclrtGetRunMode(ctypes.byref(mode)) == 0

t = threading.Thread(target=measured)
t.start()
t.join()
engine.close()
print(json.dumps(seen))
"""

CALL = re.compile(r"^\[ascend-sim\s+[\d.]+ tid=(\d+)\] (\w+)\(")


def calls_between_markers(log_text, tid):
    """Count of each AscendCL function thread `tid` called between its two aclrtGetRunMode calls."""
    counts, inside, marks = collections.Counter(), False, 0
    for line in log_text.splitlines():
        m = CALL.match(line)
        if not m or int(m.group(1)) != tid:
            continue
        if m.group(2) == "aclrtGetRunMode":
            inside, marks = not inside, marks + 1
        elif inside:
            counts[m.group(2)] += 1
    assert marks == 2, f"expected the two markers of thread {tid} in the log, found {marks}"
    return counts


@pytest.mark.parametrize("timed", [False, True], ids=["plain", "times="])
def test_run_batch_issues_the_hand_written_loops_calls_and_checks_the_context_once(tmp_path, timed):
    # run_batch(times=) reads the clock twice more per request and makes no other call
    log = tmp_path / "calls.log"
    code = CHILD.format(folder=str(tmp_path), width=WIDTH, depth=DEPTH, requests=REQUESTS, models=MODELS,
                        timed=f", times=np.empty(({REQUESTS}, 2), np.int64)" if timed else "")
    proc = simlib.run_python(code, env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["y"] > 0
    counts = calls_between_markers(log.read_text(), seen["tid"])
    n = REQUESTS
    # per request: the copy in and out; a record after the copy-in, after
    # each model and after the copy-out; a wait before each model and before
    # the copy-out; one execution per model.  Static models: no gear calls.
    # Waits: once every slot is busy, one wait for the request half the ring
    # ahead then one per request delivered (5 per 4 requests at depth 8),
    # and one per request left in flight at the end.
    bursts = (n - DEPTH) // (DEPTH // 2)
    expected = {
        "aclrtMemcpyAsync": 2 * n,
        "aclrtRecordEvent": (MODELS + 2) * n,
        "aclrtStreamWaitEvent": (MODELS + 1) * n,
        "aclmdlExecuteAsync": MODELS * n,
        "aclrtSynchronizeEventWithTimeout": bursts * (DEPTH // 2 + 1) + DEPTH,
        # the context: checked when run_batch starts and when it flushes, not
        # per request; made current once (the thread had none)
        "aclrtGetCurrentContext": 2,
        "aclrtSetCurrentContext": 1,
    }
    assert dict(counts) == expected


def static_chain(tmp_path, n_models, latency_us=0, **compile_kw):
    """A chain of static (1, WIDTH) models, model i multiplying by i + 2."""
    paths = []
    for i in range(n_models):
        g = sim.Graph(f"stat{i}")
        x = g.input("x", "float32", (1, WIDTH))
        g.output("y", g.relu(g.matmul(x, g.const(np.eye(WIDTH, dtype=np.float32) * (i + 2)))))
        paths.append(str(tmp_path / f"stat{i}-{latency_us}.om"))
        g.save(paths[-1], latency_us=latency_us)
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (1, WIDTH))
    for i, p in enumerate(paths):
        h = pipe.model(p, h, name=f"m{i}")
    pipe.output("y", h)
    return pipe.compile(depth=DEPTH, **compile_kw)


def test_statistics_of_run_batch_count_every_request_and_split_its_time(tmp_path):
    """Enqueue time is now taken once per call, less the waits inside it:
    the two are disjoint parts of the call, so they add up to no more than
    its wall time, and every request counts once."""
    x = np.arange(REQUESTS * WIDTH, dtype=np.float32).reshape(REQUESTS, WIDTH) / REQUESTS
    with static_chain(tmp_path, 2) as engine:
        before = engine.stats()
        t0 = time.perf_counter()
        out = engine.run_batch({"x": x}, batch_size=1)
        wall = time.perf_counter() - t0
        after = engine.stats()
        np.testing.assert_allclose(out["y"], x * 6, rtol=1e-6)
        assert after["requests"] - before["requests"] == REQUESTS
        assert after["failures"] == 0 and after["in_flight"] == 0
        assert after["in_flight_high_water"] == DEPTH
        enqueue = after["enqueue_seconds"] - before["enqueue_seconds"]
        wait = after["wait_seconds"] - before["wait_seconds"]
        assert enqueue > 0 and wait > 0
        assert enqueue + wait <= wall
        # one request through submit() still counts its own enqueue
        engine.run({"x": x[:1]})
        last = engine.stats()
        assert last["requests"] == after["requests"] + 1
        assert last["enqueue_seconds"] > after["enqueue_seconds"]


def test_a_device_bound_run_batch_counts_its_time_as_waiting(tmp_path):
    """With 1 ms of device time per request and microseconds of enqueueing,
    nearly all of run_batch is waiting for slots (the bursts of aex_make_room)
    and for the last requests: the statistics say so."""
    x = np.ones((40, WIDTH), np.float32)
    with static_chain(tmp_path, 1, latency_us=1000) as engine:
        engine.run_batch({"x": x}, batch_size=1)
        s = engine.stats()
    assert s["requests"] == 40
    assert s["wait_seconds"] > 2 * s["enqueue_seconds"] > 0


def test_a_burst_of_completions_keeps_the_plans_timeout(tmp_path, sim_faults):
    """run_batch frees slots a burst at a time under one deadline (aex_make_room):
    a request stalled on the device still ends the call with the timeout."""
    x = np.ones((6 * DEPTH, WIDTH), np.float32)
    with static_chain(tmp_path, 2, timeout=0.2) as engine:
        sim_faults(f"stall:execute@{DEPTH + 3}=1500")   # a request the third burst waits for
        with pytest.raises(ae.AclTimeoutError, match="did not complete within 200 ms"):
            engine.run_batch({"x": x}, batch_size=1)
        sim_faults(None)
        for _attempt in range(100):   # usable again once the stall is over
            try:
                out = engine.run_batch({"x": x}, batch_size=1)
                break
            except ae.AclTimeoutError as exc:
                assert "abandoned after a timeout" in str(exc)
        np.testing.assert_allclose(out["y"], x * 6, rtol=1e-6)


def test_a_signal_handler_switching_contexts_mid_call_leaves_run_batch_on_its_own(tmp_path):
    """run_batch checks the context once per call; the Ctrl-C poll runs Python's
    signal handlers in the middle of it (main thread, every 20 ms of waiting).
    A handler that makes another device's context current must not move the
    rest of the call there: the poll makes the engine's context current again."""
    other = ae.Device(1)
    switched = []

    def handler(signum, frame):
        other.make_current()
        switched.append(signum)

    x = np.ones((80, WIDTH), np.float32)
    with static_chain(tmp_path, 1, latency_us=1000) as engine:
        previous = signal.signal(signal.SIGALRM, handler)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            out = engine.run_batch({"x": x}, batch_size=1)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert switched == [signal.SIGALRM]
        np.testing.assert_allclose(out["y"], x * 2, rtol=1e-6)
