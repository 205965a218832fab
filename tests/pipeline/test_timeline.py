"""ascend_engine.timeline: trace events from hand-made timeline rows (no device)."""

import json
from types import SimpleNamespace

import pytest

from ascend_engine import timeline

# two models on streams 0 and 1, then a host step on stream 2 with two
# instances (streams 2 and 3); one device
NODES = [("enc", "model", (0,), 0), ("head", "model", (1,), 0), ("crop", "host", (2, 3), 0)]

# one row per request: H2D start, end; (wait, start, end) per node; (wait, start, end) of D2H
ROWS = [
    [0.0, 0.5, 0.5, 0.5, 2.5, 3.0, 3.0, 4.0, 4.0, 4.0, 4.25, 4.25, 4.25, 4.75],
    [0.5, 1.0, 1.0, 2.5, 4.5, 4.5, 4.5, 5.5, 5.5, 5.75, 6.0, 6.0, 6.5, 7.0],
]


def spans(events):
    return [e for e in events if e["ph"] == "X"]


def by_name(events, request):
    return {e["name"]: e for e in spans(events) if e["args"]["request"] == request}


def test_each_request_has_its_copies_waits_and_executions():
    layout = timeline.Layout(NODES, devices=(3,), n_streams=4, single_stream=False)
    events = timeline.trace_events(layout, ROWS, [7, 8])
    first = by_name(events, 7)
    # no wait span where a node started as soon as it could (request 7's enc, head and crop)
    assert sorted(first) == ["D2H", "H2D", "crop", "enc", "head"]
    second = by_name(events, 8)
    assert sorted(second) == ["D2H", "H2D", "crop", "enc", "head", "wait crop", "wait enc", "wait outputs"]
    assert all(e["pid"] == 3 for e in spans(events))


def test_spans_are_in_microseconds_on_their_stream_lanes():
    layout = timeline.Layout(NODES, devices=(0,), n_streams=4, single_stream=False)
    events = timeline.trace_events(layout, ROWS, [7, 8])
    first, second = by_name(events, 7), by_name(events, 8)
    assert (first["H2D"]["tid"], first["H2D"]["ts"], first["H2D"]["dur"]) == (0, 0.0, 500.0)
    assert (first["enc"]["tid"], first["enc"]["ts"], first["enc"]["dur"]) == (1, 500.0, 2000.0)
    assert (first["head"]["tid"], first["head"]["ts"], first["head"]["dur"]) == (2, 3000.0, 1000.0)
    assert (first["D2H"]["tid"], first["D2H"]["ts"], first["D2H"]["dur"]) == (5, 4250.0, 500.0)
    # an instanced node runs request r on the stream of instance r % 2
    assert first["crop"]["tid"] == 4 and second["crop"]["tid"] == 3
    wait = second["wait enc"]
    assert (wait["tid"], wait["ts"], wait["dur"]) == (1, 1000.0, 1500.0)
    assert (second["wait crop"]["ts"], second["wait crop"]["dur"]) == (5500.0, 250.0)
    assert (second["wait outputs"]["tid"], second["wait outputs"]["dur"]) == (5, 500.0)
    assert [e["cat"] for e in spans(events)[:3]] == ["copy", "execute", "execute"]


def test_lanes_are_named_after_their_streams_and_nodes():
    layout = timeline.Layout(NODES, devices=(0,), n_streams=4, single_stream=False)
    events = timeline.trace_events(layout, ROWS, [7, 8])
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {0: "copy-in (H2D)", 1: "stream 0 enc", 2: "stream 1 head",
                     3: "stream 2 host step crop (instance 0)", 4: "stream 3 host step crop (instance 1)",
                     5: "copy-out (D2H)"}
    processes = [e for e in events if e["name"] == "process_name"]
    assert [(e["pid"], e["args"]["name"]) for e in processes] == [(0, "ascend-engine device 0")]


def test_one_stream_puts_every_node_on_lane_one():
    layout = timeline.Layout(NODES, devices=(0,), n_streams=1, single_stream=True)
    events = timeline.trace_events(layout, ROWS, [7, 8])
    lanes = {e["name"]: e["tid"] for e in spans(events)}
    assert lanes == {"H2D": 0, "enc": 1, "head": 1, "crop": 1, "D2H": 1,
                     "wait enc": 1, "wait crop": 1, "wait outputs": 1}
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names[0] == "stream 0 (copies)"
    assert names[1] == "copy-out (D2H) enc head host step crop host step crop"


def test_times_that_could_not_be_read_are_left_out():
    layout = timeline.Layout(NODES[:1], devices=(0,), n_streams=1, single_stream=False)
    rows = [[0.0, 1.0, 1.0, -1.0, 2.0, 2.0, 2.5, 3.0], [0.0, -1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.5]]
    events = timeline.trace_events(layout, rows, [0, 1])
    assert sorted(by_name(events, 0)) == ["D2H", "H2D", "wait outputs"]
    assert sorted(by_name(events, 1)) == ["enc"]   # H2D ends at -1; D2H ends before it starts


def test_nodes_on_another_device_go_to_its_process():
    nodes = [("a", "model", (0,), 0), ("b", "model", (1,), 1)]
    layout = timeline.Layout(nodes, devices=(2, 5), n_streams=2, single_stream=False)
    events = timeline.trace_events(layout, [[0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4]], [0])
    pids = {e["name"]: e["pid"] for e in spans(events)}
    assert pids == {"H2D": 2, "a": 2, "b": 5, "D2H": 2}
    assert sorted(e["pid"] for e in events if e["name"] == "process_name") == [2, 5]


def test_layout_of_a_plan():
    node = SimpleNamespace(name="m", kind="model", streams=(), stream=2, device=0)
    plan = SimpleNamespace(nodes=[node], devices=(), device=1, n_streams=3, single_stream=False)
    layout = timeline.Layout.of(plan)
    assert layout.devices == [1] and layout.copy_out == 4 and layout.lane(0, request=5) == 3


@pytest.mark.parametrize("other", [{"engine": "e", "batch": 4}, {}])
def test_write_trace_writes_the_document_and_sums_it_up(tmp_path, other):
    layout = timeline.Layout(NODES, devices=(0,), n_streams=4, single_stream=False)
    path = tmp_path / "t.json"
    summary = timeline.write_trace(path, layout, ROWS, [7, 8], other)
    doc = json.loads(path.read_text())
    assert doc["displayTimeUnit"] == "ms" and doc["otherData"] == other
    assert doc["traceEvents"] == timeline.trace_events(layout, ROWS, [7, 8])
    assert summary == {"path": str(path), "requests": 2, "events": 13, "lanes": [0, 1, 2, 3, 4, 5]}
