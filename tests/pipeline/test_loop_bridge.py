"""run_async's results reach the caller's event loop in bursts
(ascend_engine/loop_bridge.py): one wake-up of the loop for every call
finished while it was busy, errors and cancellation as asyncio gives them."""

import asyncio
import time

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense

import ascend_engine as ae
from ascend_engine import loop_bridge


@pytest.fixture(scope="module")
def fast(build):
    return build(dense(660), "bridge_fast")


@pytest.fixture(scope="module")
def slow(build):
    return build(dense(661), "bridge_slow", latency_us=20000)


def feeds_for(seed):
    return {"x": np.random.default_rng(seed).standard_normal((1, WIDTH)).astype(np.float32)}


def test_calls_finished_while_the_loop_was_busy_wake_it_once(fast):
    n = 12

    async def main(engine):
        tasks = [asyncio.ensure_future(engine.run_async(feeds_for(k))) for k in range(n)]
        await asyncio.sleep(0)          # every task has submitted and waits on the bridge
        bridge = loop_bridge._BRIDGES[asyncio.get_running_loop()]
        time.sleep(0.3)                 # the loop is busy: every request finishes meanwhile
        assert bridge.handed == 0 and len(bridge.ready) == n and bridge.wakeups == 1
        return await asyncio.gather(*tasks), bridge

    with compile_chain([fast], depth=4, max_queue=n) as engine:
        outs, bridge = asyncio.run(main(engine))
    assert (bridge.wakeups, bridge.handed, bridge.ready, bridge.scheduled) == (1, n, [], False)
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out["y"], fast.ref(x=feeds_for(k)["x"]), rtol=1e-5, atol=1e-6)


def test_a_failed_request_raises_its_own_error_in_the_awaiting_task(fast, sim_faults):
    async def main(engine):
        first = await engine.run_async(feeds_for(0))
        sim_faults("task:execute@1=507011")          # the next execution fails
        with pytest.raises(ae.DeviceError, match="injected fault") as failed:
            await engine.run_async(feeds_for(1))
        after = await engine.run_async(feeds_for(2))  # the engine goes on
        return first, failed.value, after

    with compile_chain([fast], depth=2) as engine:
        first, error, after = asyncio.run(main(engine))
    assert error.code == 507011
    np.testing.assert_allclose(first["y"], fast.ref(x=feeds_for(0)["x"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after["y"], fast.ref(x=feeds_for(2)["x"]), rtol=1e-5, atol=1e-6)


def test_cancelling_the_task_cancels_a_request_not_started(slow):
    async def main(engine):
        running = asyncio.ensure_future(engine.run_async(feeds_for(0)))
        await asyncio.sleep(0.005)
        queued = asyncio.ensure_future(engine.run_async(feeds_for(1)))   # waits for the only slot
        await asyncio.sleep(0)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        return await running

    with compile_chain([slow], depth=1) as engine:
        out = asyncio.run(main(engine))
        stats = engine.stats()
    np.testing.assert_allclose(out["y"], slow.ref(x=feeds_for(0)["x"]), rtol=1e-5, atol=1e-6)
    # the cancelled one never ran: it was not put into the slot the first one freed
    assert (stats["requests"], stats["in_flight"], stats["serving"]["queued"]) == (1, 0, 0)


def test_a_loop_closed_before_its_results_came_loses_nothing_else(slow):
    with compile_chain([slow], depth=2) as engine:
        loop = asyncio.new_event_loop()
        task = loop.create_task(engine.run_async(feeds_for(0)))
        loop.run_until_complete(asyncio.sleep(0.001))    # submitted; its result comes later
        task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        time.sleep(0.05)                                 # the request finishes: the loop is gone
        out = engine.run(feeds_for(1))                   # the engine goes on
    np.testing.assert_allclose(out["y"], slow.ref(x=feeds_for(1)["x"]), rtol=1e-5, atol=1e-6)
