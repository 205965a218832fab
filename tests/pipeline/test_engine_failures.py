"""Failures counted one by one: two failed requests in a row are two failures.

``stats()["failures"]`` counts requests lost to errors; after each failure the
engine recovers and the count of completed requests is unchanged.
"""

import numpy as np
import pytest
from helpers.pipelines import WIDTH, chain_reference, compile_chain, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(600 + i), f"fail{i}") for i in range(2)]


def test_two_device_failures_in_a_row_count_twice(models, sim_faults):
    x = np.random.default_rng(1).standard_normal((4, WIDTH)).astype(np.float32)
    with compile_chain(models, depth=1) as engine:
        engine.run({"x": x})
        for k in (1, 2):
            # the next execution fails on the device
            sim_faults("task:execute@1=507011")
            with pytest.raises(ae.DeviceError) as info:
                engine.run({"x": x})
            assert info.value.code == 507011
            stats = engine.stats()
            assert (stats["failures"], stats["requests"], stats["in_flight"]) == (k, 1, 0)
        sim_faults(None)
        out = engine.run({"x": x})["y"]
        np.testing.assert_allclose(out, chain_reference(models, x), rtol=1e-4, atol=1e-5)
        assert (engine.stats()["failures"], engine.stats()["requests"]) == (2, 2)


def test_two_enqueue_failures_in_a_row_count_twice(models, sim_faults):
    x = np.random.default_rng(2).standard_normal((4, WIDTH)).astype(np.float32)
    with compile_chain(models, depth=2) as engine:
        for k in (1, 2):
            # the next aclmdlExecuteAsync call is refused while enqueueing
            sim_faults("aclmdlExecuteAsync@1=507000")
            with pytest.raises(ae.AclError) as info:
                engine.run({"x": x})
            err = info.value
            assert (err.function, err.code, err.node) == ("aclmdlExecuteAsync", 507000, "m0")
            assert (engine.stats()["failures"], engine.stats()["requests"]) == (k, 0)
        sim_faults(None)
        out = engine.run({"x": x})["y"]
        np.testing.assert_allclose(out, chain_reference(models, x), rtol=1e-4, atol=1e-5)
        assert (engine.stats()["failures"], engine.stats()["requests"]) == (2, 1)
