"""run_many keeps ``depth`` device requests in flight when its requests are
above ``max_batch`` rows too: a split request's parts go on the device beside
the other requests' instead of draining the window and running alone."""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense


@pytest.fixture(scope="module")
def chain(build):
    # gears up to 4: max_batch 4; a device latency keeps requests on the device a while
    return [build(dense(300 + i), f"split{i}", batch_sizes=(1, 2, 4), latency_us=3000) for i in range(2)]


def reference(chain, x):
    for m in chain:
        x = m.ref(x=x)
    return x


def feeds(k, rows):
    return {"x": np.random.default_rng(k).standard_normal((rows, WIDTH)).astype(np.float32)}


@pytest.mark.parametrize("rows", [10, 12])
def test_split_requests_keep_depth_device_requests_in_flight(chain, rows):
    depth = 6
    with compile_chain(chain, depth=depth) as engine:
        assert engine.max_batch == 4
        times = []
        outs = list(engine.run_many((feeds(k, rows) for k in range(8)), times=times))
        stats = engine.stats()
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out["y"], reference(chain, feeds(k, rows)["x"]), rtol=1e-4, atol=1e-5)
    # 8 requests of 3 device requests each, on the device side by side up to depth
    assert stats["in_flight_high_water"] == depth
    assert len(times) == 8 and all(0 < a <= b for a, b in times)


def test_a_split_request_between_small_ones_does_not_drain_the_window(chain):
    depth = 4
    sizes = [1, 2, 9, 1, 3, 10, 2, 1]      # 9 and 10 rows: 3 device requests each
    with compile_chain(chain, depth=depth) as engine:
        outs = list(engine.run_many(feeds(k, r) for k, r in enumerate(sizes)))
        stats = engine.stats()
    for k, (out, r) in enumerate(zip(outs, sizes, strict=True)):
        assert out["y"].shape == (r, WIDTH)
        np.testing.assert_allclose(out["y"], reference(chain, feeds(k, r)["x"]), rtol=1e-4, atol=1e-5)
    assert stats["in_flight_high_water"] == depth
