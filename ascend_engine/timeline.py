"""Chrome trace-event JSON from the executor's timeline rows (docs/executor.md,
"Profiling and timelines").

A profile engine records one row per completed request (``Engine._timeline_begin``
/ ``_timeline_end``): millisecond offsets laid out as ``AE_TRACE_COLUMNS`` in
executor.h -- H2D start and end, then (wait, start, end) for each node in plan
order, then (wait, start, end) of the D2H copy; -1 where a time could not be
read.  This module turns such rows into a trace-event document: one process
per device, one lane (``tid``) per stream -- lane 0 the copy-in stream, lane
``s + 1`` compute stream ``s``, the last lane the copy-out stream (with one
stream for everything: lane 0 the copies, lane 1 the work).  Perfetto and
chrome://tracing open it.
"""

from __future__ import annotations

import json
from typing import NamedTuple

# a wait shorter than this (ms) is not drawn
MIN_WAIT_MS = 1e-3


class NodeLanes(NamedTuple):
    """What the timeline needs of one plan node."""

    name: str
    kind: str         # "model", "host" or "copy"
    streams: tuple    # its stream, or one stream per instance (request r runs on r % len)
    device: int       # index into Layout.devices


class Layout:
    """Where a plan's spans go: device ids, node lanes and the copy lanes."""

    def __init__(self, nodes, devices, n_streams, single_stream):
        self.nodes = [NodeLanes(*n) for n in nodes]
        self.devices = list(devices)
        self.single_stream = bool(single_stream)
        self.copy_in = 0
        self.copy_out = 1 if single_stream else n_streams + 1

    @classmethod
    def of(cls, plan):
        """The layout of a compiled plan (:class:`ascend_engine.planner.plan.Plan`)."""
        nodes = [(n.name, n.kind, tuple(n.streams or (n.stream,)), n.device) for n in plan.nodes]
        return cls(nodes, plan.devices or (plan.device,), plan.n_streams, plan.single_stream)

    @property
    def pid(self):
        """The process of the copy lanes: the plan's first device."""
        return self.devices[0]

    def lane(self, k, request=0):
        """The lane node k runs ``request`` on: an instanced node runs request
        r on the stream of instance r % instances."""
        if self.single_stream:
            return 1
        streams = self.nodes[k].streams
        return streams[request % len(streams)] + 1

    def pid_of(self, k):
        return self.devices[self.nodes[k].device]

    def lane_names(self):
        """{(pid, lane): name}: the copy lanes, and each stream with the nodes on it."""
        names = {(self.pid, self.copy_in): "stream 0 (copies)" if self.single_stream else "copy-in (H2D)",
                 (self.pid, self.copy_out): "copy-out (D2H)"}
        for k, node in enumerate(self.nodes):
            for j, stream in enumerate(node.streams):
                lane = (self.pid_of(k), self.lane(k, j))
                what = {"host": " host step ", "image": " image node "}.get(node.kind, " ") + node.name
                if len(node.streams) > 1 and not self.single_stream:
                    what += f" (instance {j})"
                names[lane] = names.get(lane, f"stream {stream}") + what
        return names


def trace_events(layout, table, request_ids):
    """Chrome trace events from timeline rows: "M" events naming every
    process and lane, then per request an "X" span (microseconds) for its
    H2D copy, each node's wait and execution, and its D2H copy."""
    events = [{"name": "thread_name", "ph": "M", "pid": p, "tid": tid, "args": {"name": label}}
              for (p, tid), label in sorted(layout.lane_names().items())]
    events += [{"name": "process_name", "ph": "M", "pid": d, "tid": 0,
                "args": {"name": f"ascend-engine device {d}"}} for d in layout.devices]

    def span(name, cat, tid, start, end, request, on=layout.pid):
        if start < 0 or end < 0 or end < start:   # a time that could not be read
            return
        events.append({"name": name, "cat": cat, "ph": "X", "pid": on, "tid": tid,
                       "ts": round(start * 1000.0, 3), "dur": round((end - start) * 1000.0, 3),
                       "args": {"request": request}})

    n_nodes = len(layout.nodes)
    for row, request in zip(table, request_ids, strict=True):
        span("H2D", "copy", layout.copy_in, row[0], row[1], request)
        for k, node in enumerate(layout.nodes):
            wait, start, end = row[2 + 3 * k], row[3 + 3 * k], row[4 + 3 * k]
            lane, pid = layout.lane(k, request), layout.pid_of(k)
            if start - wait > MIN_WAIT_MS:
                span(f"wait {node.name}", "wait", lane, wait, start, request, pid)
            span(node.name, "execute", lane, start, end, request, pid)
        wait, start, end = row[2 + 3 * n_nodes], row[3 + 3 * n_nodes], row[4 + 3 * n_nodes]
        if start - wait > MIN_WAIT_MS:
            span("wait outputs", "wait", layout.copy_out, wait, start, request)
        span("D2H", "copy", layout.copy_out, start, end, request)
    return events


def write_trace(path, layout, table, request_ids, other):
    """Write the trace-event document of these rows to ``path`` (``other``:
    its otherData); returns the summary ``Engine.trace`` returns."""
    events = trace_events(layout, table, request_ids)
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}, f)
    spans = [e for e in events if e["ph"] == "X"]
    return {"path": str(path), "requests": len(table), "events": len(spans),
            "lanes": sorted({e["tid"] for e in spans})}
