"""Per-step device times from the engine's timeline rows.

A profile engine records timing events around every step of an execution
(one submitted request of at most ``max_batch`` rows); ``Engine._timeline_begin``
/ ``_timeline_end`` hand back one row per execution, laid out as
``AE_TRACE_COLUMNS`` in executor.h: copy-in start and end, per node the start of
its wait, its execution start and end, then the copy-out wait start, start
and end (milliseconds, -1 where a time could not be read).

So that the breakdown adds up to a request's latency, each execution is
followed along its critical path: from the copy-out back through the latest
producer of each step to the copy-in.  On that path every millisecond is one
of: H2D, a step's run, **queued** (ready to run -- its inputs done -- but its
stream still busy with earlier requests, or catching the event), D2H.  A
request's latency adds, in front, the time from its submit to its copy-in
(host enqueue, waiting for a free slot) and, behind, the time from its last
copy-out to the caller holding the result.

A bench request above ``max_batch`` rows runs as several executions; its
figures are the sums over its executions (its device span runs from the
first copy-in to the last copy-out).
"""

from __future__ import annotations

from dataclasses import dataclass

from .summary import summarize


@dataclass(frozen=True)
class StepLayout:
    """The steps of a plan, as the breakdown names and follows them."""

    names: tuple              # node names, in plan order (the timeline's column order)
    labels: tuple             # what each step is: "model X", "host step X", "copy ..."
    producers: tuple          # per node: the nodes whose outputs it reads (-1: a pipeline input)
    output_producers: tuple   # the nodes whose outputs the copy-out takes (-1: a pipeline input)


def step_label(kind, name) -> str:
    """A step named as what it is: a model, a host step, an image step or a copy between devices."""
    if kind == "host":
        return f"host step {name}"
    if kind == "copy":
        return name                      # "copy TENSOR to device D"
    if kind == "image":
        return f"image step {name}"
    return f"model {name}"


def step_layout(plan) -> StepLayout:
    """The :class:`StepLayout` of a compiled plan."""
    def producers(tensor_ids):
        return tuple(sorted({plan.tensors[t].producer for t in tensor_ids if t >= 0}))

    return StepLayout(
        names=tuple(n.name for n in plan.nodes),
        labels=tuple(step_label(n.kind, n.name) for n in plan.nodes),
        producers=tuple(producers(n.inputs) or (-1,) for n in plan.nodes),
        output_producers=producers(t for _, t in plan.outputs) or (-1,),
    )


def single_model_layout(node) -> StepLayout:
    """The layout of one model between its copies (a model file run on its own streams)."""
    return StepLayout(names=(node,), labels=(step_label("model", node),), producers=((-1,),),
                      output_producers=(0,))


def _queued_on_path(row, layout) -> float:
    """Milliseconds the execution's critical path spent ready but not running."""
    n = len(layout.names)

    def done_of(k):
        return row[1] if k < 0 else row[4 + 3 * k]

    def latest(producers):
        return max(producers, key=done_of)

    queued = row[3 + 3 * n] - done_of(latest(layout.output_producers))   # D2H ready -> D2H start
    k = latest(layout.output_producers)
    seen = set()
    while k >= 0 and k not in seen:        # a plan is acyclic; ``seen`` guards a corrupt row
        seen.add(k)
        before = latest(layout.producers[k])
        queued += row[3 + 3 * k] - done_of(before)
        k = before
    return queued


def execution_steps(row, layout) -> dict | None:
    """The step durations (ms) of one timeline row, or None when a time is missing.

    Returns ``{"h2d", "compute": {node}, "wait": {node, "outputs"}, "queue",
    "d2h", "start", "end"}``.  ``wait`` is how long a stream sat blocked on
    events of other streams (its producers) before the step could start --
    time that overlaps its producers' own runs; ``queue`` is the critical
    path's time between a step's inputs being done and the step starting.
    """
    if any(v < 0 for v in row):
        return None
    nodes = layout.names
    n = len(nodes)
    compute = {name: row[4 + 3 * k] - row[3 + 3 * k] for k, name in enumerate(nodes)}
    wait = {name: row[3 + 3 * k] - row[2 + 3 * k] for k, name in enumerate(nodes)}
    wait["outputs"] = row[3 + 3 * n] - row[2 + 3 * n]
    return {
        "h2d": row[1] - row[0],
        "compute": compute,
        "wait": wait,
        "queue": max(0.0, _queued_on_path(row, layout)),
        "d2h": row[4 + 3 * n] - row[3 + 3 * n],
        "start": row[0],
        "end": row[4 + 3 * n],
    }


def request_steps(executions, nodes, submit_ms=None, done_ms=None) -> dict:
    """Sum the steps of one request's executions (see :func:`execution_steps`).

    ``submit_ms`` / ``done_ms``: the request's submit and result times on the
    timeline's clock, when known; they give ``before_device`` and
    ``after_device``.
    """
    total = {"h2d": 0.0, "d2h": 0.0, "queue": 0.0, "compute": dict.fromkeys(nodes, 0.0),
             "wait": dict.fromkeys([*nodes, "outputs"], 0.0)}
    for ex in executions:
        total["h2d"] += ex["h2d"]
        total["d2h"] += ex["d2h"]
        total["queue"] += ex.get("queue", 0.0)
        for name, ms in ex["compute"].items():
            total["compute"][name] += ms
        for name, ms in ex["wait"].items():
            total["wait"][name] += ms
    start = min(ex["start"] for ex in executions)
    end = max(ex["end"] for ex in executions)
    total["device_span"] = end - start
    total["executions"] = len(executions)
    if submit_ms is not None and done_ms is not None:
        total["before_device"] = max(0.0, start - submit_ms)
        total["after_device"] = max(0.0, done_ms - end)
    return total


def causal_base(base_s, requests) -> float:
    """The host time (s) the timeline's offsets count from, lined up by causality.

    ``base_s`` is the host clock read just after the base event completed; a
    thread that is descheduled between the two reads it late, and every
    request would then seem to end on the device after the caller held its
    result.  ``requests`` gives ``(submit_s, done_s, start_ms, end_ms)`` per
    request: a request's device work starts after its submit and ends before
    its result is held, so the base lies in ``[max(submit - start),
    min(done - end)]``; ``base_s`` is moved into that interval (and kept
    where the rows leave no interval).
    """
    lo, hi = float("-inf"), float("inf")
    for submit_s, done_s, start_ms, end_ms in requests:
        lo = max(lo, submit_s - start_ms / 1e3)
        hi = min(hi, done_s - end_ms / 1e3)
    if lo > hi:
        return base_s
    return min(max(base_s, lo), hi)


def group_rows(ids, rows, base, executions_per_request, layout) -> dict:
    """{request index: [execution steps]} from timeline rows numbered from ``base``.

    Executions are numbered in submission order, so execution ``base + i``
    belongs to request ``i // executions_per_request``.  Rows with a missing
    time are left out.
    """
    grouped = {}
    for exec_id, row in zip(ids, rows, strict=True):
        steps = execution_steps(row, layout)
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
        "queue": summarize(r.get("queue", 0.0) for r in records),
        "d2h": summarize(r["d2h"] for r in records),
    }
    if records and "device_span" in records[0]:
        out["device_span"] = summarize(r["device_span"] for r in records)
    for key in ("before_device", "after_device"):
        if records and key in records[0]:
            out[key] = summarize(r[key] for r in records)
    return out


def summarize_breakdown(per_request, per_execution, enqueue_ms, end_to_end_ms, layout,
                        executions_per_request) -> dict:
    """The breakdown figures of a run.

    ``per_request``: request step sums (:func:`request_steps`); ``per_execution``:
    execution steps; ``enqueue_ms``: host enqueue time of each request;
    ``end_to_end_ms``: each request's submit-to-result latency.  The run is
    host-bound when the host's enqueue time per execution (p50) exceeds the
    slowest pipeline stage per execution (p50 of H2D, each step, D2H): the
    device then waits for the host.
    """
    nodes = layout.names
    e = max(1, executions_per_request)
    req = _figures(per_request, nodes)
    req["enqueue"] = summarize(enqueue_ms)
    req["end_to_end"] = summarize(end_to_end_ms)
    exe = _figures(per_execution, nodes)
    exe["enqueue"] = summarize(ms / e for ms in enqueue_ms)
    stages = {"H2D": exe["h2d"], **{label: exe["compute"][n] for n, label in zip(nodes, layout.labels,
                                                                                   strict=True)},
              "D2H": exe["d2h"]}
    stages = {name: s["p50"] for name, s in stages.items() if s is not None}
    slowest = max(stages, key=stages.get) if stages else None
    enqueue_p50 = exe["enqueue"]["p50"] if exe["enqueue"] else 0.0
    return {
        "measured": bool(per_request),
        "executions_per_request": e,
        "labels": dict(zip(nodes, layout.labels, strict=True)),
        "per_request": req,
        "per_execution": exe,
        "slowest_stage": slowest,
        "slowest_stage_ms": stages.get(slowest, 0.0),
        "host_bound": bool(slowest is not None and enqueue_p50 > stages[slowest]),
    }
