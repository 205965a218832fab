"""Engine.trace: Chrome trace-event timelines from device timing events."""

import json

import numpy as np
import pytest
from helpers.pipelines import WIDTH, compile_chain, dense

import ascend_engine as ae


@pytest.fixture(scope="module")
def models(build):
    return [build(dense(90 + i), f"trace{i}", latency_us=lat) for i, lat in enumerate((1500, 2500, 800))]


def spans(path):
    with open(path) as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e)
    return [e for e in events if e["ph"] == "X"], [e for e in events if e["ph"] == "M"]


def test_pipelined_timeline_overlaps_across_streams(models, tmp_path):
    path = tmp_path / "trace.json"
    with compile_chain(models, depth=4, profile=True) as engine:
        summary = engine.trace(path, requests=8, batch_size=4)
    assert summary["requests"] == 8 and summary["lanes"] == [0, 1, 2, 3, 4]
    xs, meta = spans(path)
    names = {m["args"]["name"] for m in meta if m["name"] == "thread_name"}
    assert {"copy-in (H2D)", "copy-out (D2H)"} <= names
    execs = [e for e in xs if e.get("cat") == "execute"]
    assert len(execs) == 8 * 3 and all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    # every execution lasts at least its model's declared device time
    minimum = {"m0": 1500, "m1": 2500, "m2": 800}
    assert all(e["dur"] >= minimum[e["name"]] * 0.99 for e in execs)
    # spans on different streams overlap in time: requests are pipelined
    overlaps = 0
    for a in execs:
        for b in execs:
            if a["tid"] < b["tid"] and a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]:
                overlaps += 1
    assert overlaps >= 5
    # on one lane, executions never overlap (a stream runs in order)
    for lane in (1, 2, 3):
        on_lane = sorted((e["ts"], e["ts"] + e["dur"]) for e in execs if e["tid"] == lane)
        assert all(prev[1] <= nxt[0] + 1e-3 for prev, nxt in zip(on_lane, on_lane[1:], strict=False))


def test_single_stream_timeline_is_sequential(models, tmp_path):
    path = tmp_path / "single.json"
    with compile_chain(models, depth=4, profile=True, streams="single") as engine:
        engine.trace(path, requests=4, feeds={"x": np.ones((16, WIDTH), np.float32)}, batch_size=4)
    xs, _ = spans(path)
    execs = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if e.get("cat") == "execute")
    assert len(execs) == 12
    assert all(prev[1] <= nxt[0] + 1e-3 for prev, nxt in zip(execs, execs[1:], strict=False))


def test_trace_needs_a_profiled_engine(models, tmp_path):
    with compile_chain(models, depth=2) as engine:
        with pytest.raises(ae.EngineError, match="compile the pipeline with profile=True"):
            engine.trace(tmp_path / "t.json")
