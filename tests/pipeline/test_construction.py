"""One construction path: an Engine whose construction fails after its
devices were opened releases everything it took -- no ResourceWarning, no
device memory, no device left open -- and raises the failure itself."""

import gc
import warnings

import numpy as np
import pytest
from helpers import simlib
from helpers.pipelines import WIDTH, dense

import ascend_engine as ae
from ascend_engine import requests


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(40 + i), f"construct{i}") for i in range(2)]


def planted(plan):
    raise RuntimeError("planted failure after the devices were opened")


def pipeline(models, devices):
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    for i, m in enumerate(models):
        h = pipe.model(m.path, h, name=f"m{i}", device=devices[i % len(devices)])
    pipe.output("y", h)
    return pipe


def memory_of(devices):
    out = []
    for d in devices:
        with ae.Device(d) as dev:
            out.append(dev.memory_info().free)
    return out


@pytest.mark.parametrize("devices", [(0,), (0, 1)])
def test_a_failed_construction_leaks_and_warns_nothing(models, monkeypatch, devices):
    pipe = pipeline(models, devices)
    with pipe.compile(depth=2):      # the models described and loaded once before
        pass
    before = memory_of(devices)
    monkeypatch.setattr(requests, "for_plan", planted)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="planted failure"):
            pipe.compile(depth=2)
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert memory_of(devices) == before
    monkeypatch.undo()
    with pipe.compile(depth=2) as engine:     # and the next compile works
        out = engine.run({"x": np.ones((3, WIDTH), np.float32)})
        assert out["y"].shape[0] == 3


def test_a_compile_the_device_refuses_leaks_and_warns_nothing(models):
    code = f"""
        import gc, warnings
        import ascend_engine as ae
        from helpers.pipelines import compile_chain
        from types import SimpleNamespace
        models = [SimpleNamespace(path=p) for p in {[m.path for m in models]!r}]
        with ae.Device(0) as dev:
            before = dev.memory_info().free
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    compile_chain(models, depth=200)
                except ae.OutOfMemoryError as exc:
                    print("OOM", exc.function)
                gc.collect()
            print("WARNINGS", [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)])
            print("SAME", dev.memory_info().free == before)
    """
    proc = simlib.run_python(code, env={"ASCEND_SIM_DEVICE_MEMORY": "200KiB", "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stderr
    assert "OOM aclrtMalloc" in proc.stdout
    assert "WARNINGS []" in proc.stdout and "SAME True" in proc.stdout, proc.stdout
