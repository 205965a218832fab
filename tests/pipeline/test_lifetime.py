"""Engines in the ownership tree: dropped without close() they give back
everything, and at exit they are closed before AscendCL is finalized."""

import gc
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def chain(build):
    return [build(dense(500 + i), f"life{i}") for i in range(2)]


def free_bytes():
    with ae.Device(0) as dev:
        return dev.memory_info().free


def test_engines_dropped_without_close_return_all_device_memory(chain):
    before = free_bytes()
    for _ in range(20):
        engine = compile_chain(chain, depth=2)
        engine.run({"x": np.ones((2, WIDTH), np.float32)})
        del engine
        gc.collect()
    assert free_bytes() == before



def test_the_completer_lets_go_of_the_engine_before_its_callers_hear(build):
    """A caller woken by its result holds the last reference to the engine:
    the completer resolved the future only after letting go of it, so the
    caller's ``del`` releases the engine at once, on the caller's thread."""
    slow = build(dense(530), "letgo", latency_us=20000)
    engine = compile_chain([slow], depth=2)
    engine.run({"x": np.ones((1, WIDTH), np.float32)})   # the engine threads are up
    ref = weakref.ref(engine)
    base = sys.getrefcount(engine)          # the references of this test (and the argument)
    seen = []

    def when_done(future):
        held = ref()
        # this frame's `held` and the argument besides the test's own references
        seen.append((threading.current_thread().name, sys.getrefcount(held) - 1))

    future = engine.submit({"x": np.ones((1, WIDTH), np.float32)})
    future.add_done_callback(when_done)
    future.result(timeout=30)
    assert seen == [("ascend-engine-completer", base)]
    engine.close()


def test_an_engine_dropped_right_after_its_result_is_released_before_del_returns(chain):
    before = free_bytes()
    for _ in range(20):
        engine = compile_chain(chain, depth=2)
        engine.submit({"x": np.ones((2, WIDTH), np.float32)}).result(timeout=30)
        closed = []
        weak = weakref.finalize(engine, closed.append, True)
        del engine
        gc.collect()
        # The engine thread that resolved the future a moment ago may still be finishing its turn
        # when this thread drops the engine (seen under ASan, and once in a normal run on a loaded
        # machine): the engine must then be released by that thread's last reference, soon.
        deadline = time.monotonic() + 5
        while not closed and time.monotonic() < deadline:
            time.sleep(0.001)
            gc.collect()
        assert closed == [True] and not weak.alive
    assert free_bytes() == before

EXIT_SCRIPT = """
import numpy as np
import ascend_engine as ae
pipe = ae.Pipeline(0)
x = pipe.input("x", "float32", (-1, 16))
pipe.output("y", pipe.model({path!r}, x, name="m"))
engine = pipe.compile(depth=2)            # never closed: the exit hook must do it
stream = ae.Stream(ae.Device(0))
engine.run({{"x": np.ones((2, 16), np.float32)}})
print("ran", flush=True)
"""


def test_at_exit_engines_are_closed_before_aclfinalize(chain, tmp_path):
    log = tmp_path / "calls.log"
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", ASCEND_SIM_LOG=str(log),
               PYTHONPATH=os.path.dirname(tests))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(EXIT_SCRIPT.format(path=chain[0].path))],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0 and result.stdout == "ran\n", result.stderr[-2000:]
    calls = [re.sub(r"^\[ascend-sim +[\d.]+ tid=\d+\] ", "", line) for line in log.read_text().splitlines()]
    calls = [c for c in calls if not c.startswith("note:")]
    final = max(i for i, c in enumerate(calls) if c.startswith("aclFinalize("))
    assert calls[final].endswith("= 0")
    assert calls[final + 1:] == [], calls[final + 1:final + 5]
    # the engine's model was unloaded and its arena freed, before the device reset
    unload = max(i for i, c in enumerate(calls) if c.startswith("aclmdlUnload("))
    reset = max(i for i, c in enumerate(calls) if c.startswith("aclrtResetDevice("))
    assert unload < reset < final
    assert not any(" = 100001" in c or "finalized" in c for c in calls)


def test_an_engine_dropped_with_requests_in_flight_closes_and_says_so(build):
    """Dropped without close(): a ResourceWarning names the engine, the
    requests in flight still resolve with their outputs, and every byte of
    device memory comes back."""
    import time
    import warnings

    slow = [build(dense(520), "drop0", latency_us=3000), build(dense(521), "drop1", latency_us=1000)]
    before = free_bytes()
    x = np.ones((2, WIDTH), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = compile_chain(slow, depth=4)
        futures = [engine.submit({"x": x + k}) for k in range(6)]
        del engine
        gc.collect()
        for k, f in enumerate(futures):
            expected = slow[1].ref(x=slow[0].ref(x=x + k))
            np.testing.assert_allclose(f.result(timeout=30)["y"], expected, rtol=1e-5, atol=1e-5)
        deadline = time.monotonic() + 30   # the close may run on a thread of its own
        while free_bytes() != before and time.monotonic() < deadline:
            time.sleep(0.02)
    assert free_bytes() == before
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert any(m.startswith("unclosed <ascend_engine.Engine device=0") and "call close()" in m
               for m in messages)
