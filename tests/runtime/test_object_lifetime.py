"""The lifetime of runtime objects: what happens to a handle nobody closed,
and to an operation on an object that was closed.

* An object dropped without ``close()`` releases its handle when it is
  collected and says so with a ``ResourceWarning`` (as files, sockets and
  uvloop's handles do).  Device memory goes back to its level.
* Objects the package allocates for itself (a model's staging buffers, the
  datasets ``execute_async`` caches) are released by the package, never left
  to the collector.
* An operation on a closed stream, event or buffer raises ObjectClosedError
  before any AscendCL call: a destroyed handle never reaches AscendCL.
"""

import ctypes
import gc
import json
import os
import re
import warnings

import numpy as np
import pytest
from helpers import simlib

import ascend_engine as ae
from ascend_engine import sim

PACKAGE = os.path.dirname(os.path.abspath(ae.__file__))
MiB = 1 << 20


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    """A dynamic-batch model y = relu(x) + 1 on 16 float32 columns, gears 1, 2, 4."""
    g = sim.Graph("lifetime")
    x = g.input("x", "float32", (-1, 16))
    g.output("y", g.add(g.relu(x), g.const(np.ones(16, np.float32))))
    path = tmp_path_factory.mktemp("lifetime") / "m.om"
    g.save(str(path), batch_sizes=(1, 2, 4))
    return str(path)


def collected(make, count=1):
    """Call ``make()`` ``count`` times, drop the results, collect; returns the ResourceWarnings."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        for _ in range(count):
            make()
        gc.collect()
    return [w for w in log if issubclass(w.category, ResourceWarning)]


def test_dropped_device_buffers_return_their_memory(dev):
    before = dev.memory_info().free
    found = collected(lambda: ae.DeviceBuffer(dev, MiB), count=10)
    assert dev.memory_info().free == before   # was 10,486,080 bytes short
    assert len(found) == 10
    text = str(found[0].message)
    assert text.startswith("unclosed <ascend_engine.DeviceBuffer device=0 nbytes=1048576 ptr=0x")
    assert "call close() or use a with block" in text


def _freed_twice(kind, handle):
    """Release ``handle`` again behind the package's back: the simulator's return code."""
    lib = simlib.load()
    free = {"Stream": lib.aclrtDestroyStream, "Event": lib.aclrtDestroyEvent,
            "Context": lib.aclrtDestroyContext, "HostBuffer": lib.aclrtFreeHost}[kind]
    return free(ctypes.c_void_p(handle))


@pytest.mark.parametrize("kind", ["Stream", "Event", "Context", "HostBuffer"])
def test_dropped_objects_release_their_handle(dev, kind):
    handles = []

    def make():
        obj = {"Stream": lambda: ae.Stream(dev), "Event": lambda: ae.Event(dev),
               "Context": lambda: ae.Context(dev), "HostBuffer": lambda: ae.HostBuffer(4096, dev)}[kind]()
        handles.append(obj.ptr if kind == "HostBuffer" else obj.handle)

    found = collected(make)
    dev.make_current()   # a dropped Context leaves the thread on the device's context
    assert [str(w.message).split(" ")[1] for w in found] == [f"<ascend_engine.{kind}"]
    # released once already: a second release is refused, not performed
    assert _freed_twice(kind, handles[0]) != 0


def test_dropped_model_is_unloaded_with_its_buffers(dev, model_path):
    ids = []
    before = dev.memory_info().free

    def make():
        m = ae.Model.load(model_path, dev)
        m(x=np.ones((2, 16), np.float32))
        ids.append(m.model_id)

    found = collected(make)
    assert [str(w.message).split(" ")[1] for w in found] == ["<ascend_engine.Model"]
    assert dev.memory_info().free == before
    assert simlib.load().aclmdlUnload(ids[0]) != 0   # already unloaded


def test_model_calls_release_their_staging_buffers(dev, model_path):
    before = dev.memory_info().free

    def cycle():
        m = ae.Model.load(model_path, dev)
        np.testing.assert_array_equal(m(x=np.full((3, 16), -2.0, np.float32))["y"], np.ones((3, 16)))
        m.close()

    # the staging buffers were dropped, not closed: 1,152 bytes per cycle of
    # this model stayed allocated (or were left to the collector)
    assert collected(cycle, count=20) == []
    assert dev.memory_info().free == before


def test_execute_async_with_fresh_buffers_does_not_grow(dev, model_path):
    m = ae.Model.load(model_path, dev)
    s = ae.Stream(dev)
    x = np.arange(32, dtype=np.float32).reshape(2, 16) - 8

    def call():
        i, o = ae.DeviceBuffer(dev, m.inputs[0].nbytes), ae.DeviceBuffer(dev, m.outputs[0].nbytes)
        i.copy_from(x)
        assert m.execute_async([i], [o], s, batch=2) == 2
        s.synchronize()
        np.testing.assert_array_equal(o.copy_to(dtype=np.float32)[:32].reshape(2, 16), np.maximum(x, 0) + 1)
        i.close()
        o.close()

    call()
    level = dev.memory_info().free
    for _ in range(30):
        call()
    assert dev.memory_info().free == level   # each call kept 96 bytes until the model was closed
    m.close()
    s.close()


def test_execute_async_cache_is_bounded(dev, model_path):
    from ascend_engine import _model

    m = ae.Model.load(model_path, dev)
    s = ae.Stream(dev)
    bufs = [(ae.DeviceBuffer(dev, m.inputs[0].nbytes), ae.DeviceBuffer(dev, m.outputs[0].nbytes))
            for _ in range(_model.ASYNC_DATASETS_CACHED + 8)]
    for i, o in bufs:
        i.fill(0)
        m.execute_async([i], [o], s, batch=1)
    s.synchronize()
    level = dev.memory_info().free
    for i, o in bufs:   # every set again: each evicts the least recently used one
        m.execute_async([i], [o], s, batch=1)
    s.synchronize()
    assert dev.memory_info().free == level
    np.testing.assert_array_equal(bufs[0][1].copy_to(dtype=np.float32)[:16], np.ones(16))
    m.close()
    s.close()


CLOSED_OPERATIONS = """
import json, os
import numpy as np
import ascend_engine as ae

log = os.environ["ASCEND_SIM_LOG"]
dev = ae.Device(0)
model = ae.Model.load({model!r}, dev)
ins, outs = ae.DeviceBuffer(dev, 1024), ae.DeviceBuffer(dev, 1024)
live_stream, live_event, live_buf = ae.Stream(dev), ae.Event(dev), ae.DeviceBuffer(dev, 64)
stream, event, buf = ae.Stream(dev), ae.Event(dev), ae.DeviceBuffer(dev, 64)
for obj in (stream, event, buf):
    obj.close()
host = np.zeros(64, np.uint8)
cases = {{
    "execute_async on a closed stream": lambda: model.execute_async([ins], [outs], stream, batch=1),
    "execute_async with a closed buffer": lambda: model.execute_async([buf], [outs], live_stream, batch=1),
    "copy_from on a closed stream": lambda: live_buf.copy_from(host, stream=stream),
    "copy_from a closed buffer": lambda: live_buf.copy_from(buf),
    "copy_to on a closed stream": lambda: live_buf.copy_to(host, stream=stream),
    "fill on a closed stream": lambda: live_buf.fill(1, stream=stream),
    "record on a closed stream": lambda: live_event.record(stream),
    "reset on a closed stream": lambda: live_event.reset(stream),
    "wait on a closed event": lambda: live_stream.wait_event(event),
    "elapsed time of a closed event": lambda: ae.Event.elapsed_ms(event, live_event),
    "synchronize a closed stream": lambda: stream.synchronize(),
    "copy into a closed buffer": lambda: buf.copy_from(host),
}}
out = {{}}
for name, op in cases.items():
    with open(log) as f:
        before = len(f.readlines())
    try:
        op()
        got = "no error"
    except Exception as exc:
        got = f"{{type(exc).__name__}}: {{exc}}"
    with open(log) as f:
        out[name] = [got, f.readlines()[before:]]
print(json.dumps(out))
"""


def test_operations_on_closed_objects_fail_before_any_ascendcl_call(model_path, tmp_path):
    log = tmp_path / "calls.log"
    proc = simlib.run_python(CLOSED_OPERATIONS.format(model=model_path), env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert len(results) == 12
    expected = {
        "execute_async with a closed buffer": "ObjectClosedError: tensor 'x': the DeviceBuffer is closed",
        "copy_from a closed buffer": "ObjectClosedError: DeviceBuffer is closed",
        "copy into a closed buffer": "ObjectClosedError: DeviceBuffer is closed",
        "wait on a closed event": "ObjectClosedError: Event is closed",
        "elapsed time of a closed event": "ObjectClosedError: Event is closed",
    }
    for name, (got, calls) in results.items():
        assert got == expected.get(name, "ObjectClosedError: Stream is closed"), name
        assert calls == [], f"{name}: AscendCL was called: {calls}"


FORKED_CHILD_DROPS = """
import gc, os
import ascend_engine as ae

log = os.environ["ASCEND_SIM_LOG"]
dev = ae.Device(0)
objs = [ae.DeviceBuffer(dev, 4096), ae.Stream(dev), ae.Event(dev), ae.HostBuffer(64, dev)]
with open(log) as f:
    before = len(f.readlines())
pid = os.fork()
if pid == 0:
    # the handles belong to the parent: dropping them here must not release them
    del objs, dev
    gc.collect()
    os._exit(0)
os.waitpid(pid, 0)
with open(log) as f:
    print(len(f.readlines()) - before)
"""


def test_objects_dropped_in_a_forked_child_make_no_call(tmp_path):
    log = tmp_path / "calls.log"
    proc = simlib.run_python(FORKED_CHILD_DROPS, env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["0"]
    assert "unclosed" not in proc.stderr


def test_other_modules_take_handles_only_through_checked_accessors():
    # _handle and _ptr are the runtime's own (_runtime, and _memory for the
    # buffers): elsewhere they could be a closed object's (NULL or destroyed)
    # handle.  The files _runtime.pyx includes are that module's own too.
    with open(os.path.join(PACKAGE, "_runtime.pyx")) as f:
        runtime_includes = set(re.findall(r'^include "([^"]+)"', f.read(), re.MULTILINE))
    offenders = []
    for name in sorted(os.listdir(PACKAGE)):
        if (name.endswith((".pyx", ".pxd", ".pxi")) and not name.startswith(("_runtime.", "_memory."))
                and name not in runtime_includes):
            with open(os.path.join(PACKAGE, name)) as f:
                for n, line in enumerate(f, 1):
                    if re.search(r"\._(handle|ptr)\b", line):
                        offenders.append(f"{name}:{n}: {line.strip()}")
    assert offenders == []
