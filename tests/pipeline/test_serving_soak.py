"""A soak of the serving path (ascend_engine/serving.py): submit() from
threads, run_async() from an asyncio loop, run() on the main thread, with
random cancels, deadlines, closes and a SIGINT storm, round after round.
Every future must resolve exactly once (its done-callbacks run once), every
engine must close, and the device's free memory must come back to the byte.
CI runs a short version; AE_STRESS_SCALE multiplies the rounds."""

import os
import subprocess
import sys
import textwrap

import pytest
from helpers.pipelines import WIDTH, dense
from helpers.scale import scaled

SOAK_SCRIPT = """
import asyncio, os, random, signal, sys, threading, time
from concurrent.futures import CancelledError
import numpy as np
import ascend_engine as ae
signal.signal(signal.SIGINT, signal.default_int_handler)
random.seed({seed})

def compile_engine(rng):
    pipe = ae.Pipeline(0)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model({path!r}, x, name="m"))
    return pipe.compile(depth=rng.choice([1, 2, 4]), max_queue=rng.choice([4, 16, 64]),
                        max_delay_ms=rng.choice([0, 0, 1]))

def feeds(rng):
    return {{"x": np.ones((rng.randint(1, 20), 16), np.float32)}}

free_before = ae.devices()[0].memory_free
ends = {{}}                # id(future) -> callbacks run
ends_lock = threading.Lock()
futures = []
interrupts = 0

def track(f):
    with ends_lock:
        ends[id(f)] = 0
        futures.append(f)
    def ended(f):
        with ends_lock:
            ends[id(f)] += 1
    f.add_done_callback(ended)

for round_ in range({rounds}):
    rng = random.Random(round_)
    engine = compile_engine(rng)
    stop = threading.Event()
    main = threading.main_thread().ident

    def flood(seed):
        r = random.Random(seed)
        while not stop.is_set():
            try:
                f = engine.submit(feeds(r), timeout=r.choice([None, None, 0.001, 1.0]),
                                  block=r.random() < 0.7)
            except (ae.EngineBusy, ae.EngineError):
                if stop.is_set():
                    return
                continue
            track(f)
            if r.random() < 0.2:
                f.cancel()

    def loop_thread(seed):
        r = random.Random(seed)
        async def one():
            return await engine.run_async(feeds(r), timeout=r.choice([None, 0.5]))
        async def main_():
            tasks = []
            while not stop.is_set():
                t = asyncio.ensure_future(one())
                tasks.append(t)
                if r.random() < 0.2:
                    await asyncio.sleep(0)
                    t.cancel()
                await asyncio.sleep(0.0005)
            for t in tasks:
                try:
                    await t
                except (asyncio.CancelledError, ae.EngineError, TimeoutError):
                    pass
        asyncio.run(main_())

    def closer():
        time.sleep(rng.uniform(0.05, 0.3))
        if rng.random() < 0.5:
            engine.close()           # mid-flood, from another thread
        stop.set()

    def storm():
        while not stop.is_set():
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.001)

    workers = [threading.Thread(target=flood, args=(round_ * 10 + k,)) for k in range(3)]
    workers.append(threading.Thread(target=loop_thread, args=(round_,)))
    for w in workers:
        w.start()
    go = [threading.Thread(target=closer)]
    if round_ % 2:
        go.append(threading.Thread(target=storm))
    started = False
    while True:
        try:
            if not started:
                started = True
                for t in go:
                    t.start()
            while not stop.is_set():
                try:
                    engine.run(feeds(rng))
                except (ae.EngineError, TimeoutError):
                    pass
            for t in go + workers:
                t.join()
            break
        except KeyboardInterrupt:
            interrupts += 1
    time.sleep(0.01)       # the storm's last signal lands here
    engine.close()

bad = 0
for f in futures:
    try:
        f.result(timeout=30)
    except (CancelledError, ae.EngineError, TimeoutError):
        pass
    except Exception as exc:
        bad += 1
        print("unexpected", type(exc).__name__, exc)
time.sleep(0.05)
print("futures", len(futures) > 0, "unresolved", sum(not f.done() for f in futures), "bad", bad)
print("ends", sorted(set(ends.values())))
print("memory back", ae.devices()[0].memory_free == free_before)
"""


@pytest.mark.stress
def test_serving_soak_every_future_ends_once_and_memory_comes_back(build):
    m = build(dense(710, width_in=WIDTH, width_out=WIDTH), "soak", latency_us=400)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", PYTHONPATH=os.path.dirname(tests))
    rounds = scaled(4)
    code = textwrap.dedent(SOAK_SCRIPT.format(path=m.path, rounds=rounds, seed=1))
    try:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=60 + 30 * rounds, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the soak hung: {exc.stdout!r}"[-2000:])
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-3:] == ["futures True unresolved 0 bad 0", "ends [1]", "memory back True"], lines
