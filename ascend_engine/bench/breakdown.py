"""Per-step device times from the engine's timeline rows.

A profile engine records timing events around every step of an execution
(one submitted request of at most ``max_batch`` rows); ``Engine._timeline_begin``
/ ``_timeline_end`` hand back one row per execution, laid out as
``AE_TRACE_COLUMNS`` in executor.h: copy-in start and end, per node the start of
its wait, its execution start and end, then the copy-out wait start, start
and end (milliseconds, -1 where a time could not be read).

A bench request above ``max_batch`` rows runs as several executions; its
figures are the sums over its executions (its device span runs from the
first copy-in to the last copy-out).
"""

from __future__ import annotations

from .summary import summarize


def execution_steps(row, nodes) -> dict | None:
    """The step durations (ms) of one timeline row, or None when a time is missing.

    Returns ``{"h2d", "compute": {node}, "wait": {node, "outputs"}, "d2h",
    "start", "end"}``.  ``wait`` is how long a stream sat blocked on events
    of other streams (its producers) before the step could start.
    """
    if any(v < 0 for v in row):
        return None
    n = len(nodes)
    compute = {name: row[4 + 3 * k] - row[3 + 3 * k] for k, name in enumerate(nodes)}
    wait = {name: row[3 + 3 * k] - row[2 + 3 * k] for k, name in enumerate(nodes)}
    wait["outputs"] = row[3 + 3 * n] - row[2 + 3 * n]
    return {
        "h2d": row[1] - row[0],
        "compute": compute,
        "wait": wait,
        "d2h": row[4 + 3 * n] - row[3 + 3 * n],
        "start": row[0],
        "end": row[4 + 3 * n],
    }


def request_steps(executions, nodes) -> dict:
    """Sum the steps of one request's executions (see :func:`execution_steps`)."""
    total = {"h2d": 0.0, "d2h": 0.0, "compute": dict.fromkeys(nodes, 0.0),
             "wait": dict.fromkeys([*nodes, "outputs"], 0.0)}
    for ex in executions:
        total["h2d"] += ex["h2d"]
        total["d2h"] += ex["d2h"]
        for name, ms in ex["compute"].items():
            total["compute"][name] += ms
        for name, ms in ex["wait"].items():
            total["wait"][name] += ms
    total["device_span"] = max(ex["end"] for ex in executions) - min(ex["start"] for ex in executions)
    total["executions"] = len(executions)
    return total


def group_rows(ids, rows, base, executions_per_request, nodes) -> dict:
    """{request index: [execution steps]} from timeline rows numbered from ``base``.

    Executions are numbered in submission order, so execution ``base + i``
    belongs to request ``i // executions_per_request``.  Rows with a missing
    time are left out.
    """
    grouped = {}
    for exec_id, row in zip(ids, rows, strict=True):
        steps = execution_steps(row, nodes)
        if steps is None or exec_id < base:
            continue
        grouped.setdefault((exec_id - base) // executions_per_request, []).append(steps)
    return grouped


def _figures(records, nodes) -> dict:
    """Percentile summaries of each step over ``records`` (request or execution steps)."""
    out = {
        "h2d": summarize(r["h2d"] for r in records),
        "compute": {n: summarize(r["compute"][n] for r in records) for n in nodes},
        "wait": {n: summarize(r["wait"][n] for r in records) for n in [*nodes, "outputs"]},
        "d2h": summarize(r["d2h"] for r in records),
    }
    if records and "device_span" in records[0]:
        out["device_span"] = summarize(r["device_span"] for r in records)
    return out


def summarize_breakdown(per_request, per_execution, enqueue_ms, end_to_end_ms, nodes,
                        executions_per_request) -> dict:
    """The breakdown figures of a run.

    ``per_request``: request step sums (:func:`request_steps`); ``per_execution``:
    execution steps; ``enqueue_ms``: host enqueue time of each request;
    ``end_to_end_ms``: each request's submit-to-result latency.  The run is
    host-bound when the host's enqueue time per execution (p50) exceeds the
    slowest pipeline stage per execution (p50 of H2D, each model, D2H): the
    device then waits for the host.
    """
    e = max(1, executions_per_request)
    req = _figures(per_request, nodes)
    req["enqueue"] = summarize(enqueue_ms)
    req["end_to_end"] = summarize(end_to_end_ms)
    exe = _figures(per_execution, nodes)
    exe["enqueue"] = summarize(ms / e for ms in enqueue_ms)
    stages = {"H2D": exe["h2d"], **{f"model {n}": exe["compute"][n] for n in nodes}, "D2H": exe["d2h"]}
    stages = {name: s["p50"] for name, s in stages.items() if s is not None}
    slowest = max(stages, key=stages.get) if stages else None
    enqueue_p50 = exe["enqueue"]["p50"] if exe["enqueue"] else 0.0
    return {
        "executions_per_request": e,
        "per_request": req,
        "per_execution": exe,
        "slowest_stage": slowest,
        "slowest_stage_ms": stages.get(slowest, 0.0),
        "host_bound": bool(slowest is not None and enqueue_p50 > stages[slowest]),
    }
