"""Running the requests and timing each one from submit to result.

Three passes, by what the plan allows:

* the lean pass (profiling off, one execution per request, a plan without
  host steps or dynamic shapes) is ``Engine.run_batch(times=)``: the bench's
  feeds, in turn, laid end to end once before the pass (whole copies of the
  pool, up to ``LEAN_CHUNK_BYTES`` of inputs), then run by one GIL-free call
  per chunk that records each request's enqueue time and the time its result
  was in the output arrays (docs/executor.md, "Timing run_batch's
  requests").  The bench then costs the host exactly what ``run_batch``
  does; the host enqueue time is the growth of the engine's counter over the
  whole pass, shared out evenly.
* the streamed pass (profiling off, one execution per request, any other
  plan) is ``Engine.run_many(times=)``: the executor records each request's
  enqueue time and the time its result was in the output arrays, as
  ``run_batch(times=)`` does (docs/executor.md, "Timing run_many's
  requests").  ``run_many`` pulls a feed before it waits for the oldest
  result and submits it only on the next call, so a feed's pull time is not
  its submit time: on a full window it is a whole request too early.
* the counted pass (``--profile``, or requests split over several
  executions) reads ``Engine.stats()`` after every result: it says how many
  requests have been submitted so far, so the requests submitted during one
  call are known, and their host enqueue time is the growth of the enqueue
  counter over that call.

A request's latency runs from its submit time to the moment its result is
handed back.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .breakdown import causal_base, group_rows, request_steps, step_layout, summarize_breakdown
from .summary import spread_percent, summarize

MAX_TIMELINE_EXECUTIONS = 200_000   # rows kept for a --duration run (about 100 bytes each per model)
LEAN_CHUNK_BYTES = 64 << 20   # inputs one run_batch call of the lean pass takes (the outputs as many again)
LEAN_FIRST_CHUNK_DEPTHS = 4   # a --duration lean pass starts with this many depths of requests
# without timing events, a calling thread busy this share of the wall time is what limits the run
HOST_BUSY_BOUND = 0.9


def executions_per_request(batch, max_batch) -> int:
    """How many executions a request of ``batch`` rows runs as (split above ``max_batch``)."""
    return max(1, math.ceil(batch / max_batch))


def _submitted(stats) -> int:
    return stats["requests"] + stats["failures"] + stats["in_flight"]


def timed_pass(engine, pool, requests=None, duration=None, progress=None, executions=1) -> dict:
    """Run ``requests`` feeds (or as many as ``duration`` seconds allow) from ``pool`` in turn.

    Returns ``{"submit", "done"}`` (``time.perf_counter()`` seconds per
    request), ``"enqueue_ms"`` per request, ``"cpu_seconds"`` (the process's
    and the calling thread's CPU time over the pass) and, on a profile
    engine, the timeline ``"ids"``, ``"rows"``, ``"base"`` of its executions
    and ``"base_s"``, the host time its millisecond offsets count from.
    """
    profile = engine.plan.profile
    timeline = {"ids": [], "rows": [], "base": 0, "base_s": 0.0}
    if profile:
        capacity = MAX_TIMELINE_EXECUTIONS if requests is None else requests * executions
        timeline["base"] = engine._timeline_begin(capacity)
        # the base event has completed when _timeline_begin returns: the offsets count from about now
        timeline["base_s"] = time.perf_counter()
    lean = not profile and executions == 1
    laid = _laid_out(engine, pool, requests) if lean else None
    cpu0, thread0 = time.process_time(), time.thread_time()
    try:
        if laid is not None:
            times = _lean_pass(engine, laid, len(pool), requests, duration, progress)
        else:
            pass_ = _streamed_pass if lean else _counted_pass
            times = pass_(engine, pool, requests, duration, progress, executions)
    finally:
        if profile:
            timeline["ids"], timeline["rows"] = engine._timeline_end()
    times["cpu_seconds"] = {"process": time.process_time() - cpu0, "thread": time.thread_time() - thread0}
    return {**times, **timeline}


def _feeds(pool, requests, duration, pulled):
    """The feeds of a pass, in turn from ``pool``; ``pulled`` gets the time each one was taken."""
    clock, size = time.perf_counter, len(pool)
    if duration is None:
        for i in range(requests):
            pulled.append(clock())
            yield pool[i % size]
        return
    i = 0
    while requests is None or i < requests:
        now = clock()
        if pulled and now - pulled[0] >= duration:
            return
        pulled.append(now)
        yield pool[i % size]
        i += 1


def _laid_out(engine, pool, requests):
    """The pool's feeds end to end, whole copies of the pool up to
    ``LEAN_CHUNK_BYTES`` (at least one; no more than ``requests`` need), as
    ``(arrays, rows per feed)``; None when the lean pass cannot run them
    (a plan that runs through submit, or feeds of unlike names or rows)."""
    from ascend_engine.requests import for_plan

    if not pool or not for_plan(engine.plan).direct:
        return None
    names = set(pool[0])
    rows = {len(a) for feeds in pool for a in feeds.values()}
    if len(rows) != 1 or any(set(feeds) != names for feeds in pool):
        return None
    pool_bytes = sum(np.asarray(a).nbytes for feeds in pool for a in feeds.values())
    copies = max(1, LEAN_CHUNK_BYTES // max(1, pool_bytes))
    if requests is not None:
        copies = min(copies, -(-requests // len(pool)))
    arrays = {name: np.concatenate([np.asarray(feeds[name]) for feeds in pool] * copies) for name in names}
    return arrays, rows.pop()


def _lean_pass(engine, laid, pool_size, requests, duration, progress) -> dict:
    """A pass of ``run_batch(times=)`` calls over the laid-out feeds (see the module docstring).

    Each call starts the pool over, so a chunk is whole copies of the pool
    but for the last one of a ``requests`` pass.  A ``duration`` pass sizes
    each chunk by the rate so far, to end near the deadline.
    """
    arrays, batch = laid
    laid_requests = len(next(iter(arrays.values()))) // batch
    enqueued_s = engine.stats()["enqueue_seconds"]
    if duration is None:
        chunk = laid_requests
    else:
        chunk = pool_size * -(-LEAN_FIRST_CHUNK_DEPTHS * engine.plan.depth // pool_size)
    parts, n = [], 0
    while requests is None or n < requests:
        size = min(chunk, laid_requests, requests - n) if requests is not None else min(chunk, laid_requests)
        times = np.empty((size, 2), np.int64)
        engine.run_batch({name: a[:size * batch] for name, a in arrays.items()}, batch_size=batch,
                         times=times)
        parts.append(times)
        n += size
        if progress is not None:
            progress.update(n)
        if duration is not None:
            spent = (times[-1, 1] - parts[0][0, 0]) / 1e9
            if spent >= duration:
                break
            # whole copies of the pool, enough for the time left at the rate so far
            wanted = math.ceil((duration - spent) * n / spent) if spent > 0 else laid_requests
            chunk = pool_size * -(-wanted // pool_size)
    # seconds on the monotonic clock, as time.perf_counter counts
    times = np.concatenate(parts) / 1e9 if parts else np.empty((0, 2))
    share = (engine.stats()["enqueue_seconds"] - enqueued_s) * 1e3 / n if n else 0.0
    return {"submit": times[:, 0].tolist(), "done": times[:, 1].tolist(), "enqueue_ms": [share] * n}


def _streamed_pass(engine, pool, requests, duration, progress, executions) -> dict:
    """A pass of ``run_many(times=)`` (see the module docstring)."""
    pulled, stamps = [], []
    enqueued_s = engine.stats()["enqueue_seconds"]
    results = engine.run_many(_feeds(pool, requests, duration, pulled), times=stamps)
    try:
        for n, _ in enumerate(results, 1):
            if progress is not None:
                progress.update(n)
    finally:
        results.close()
    n = len(stamps)
    # seconds on the monotonic clock, as time.perf_counter counts
    seconds = np.asarray(stamps, np.float64).reshape(n, 2) / 1e9
    share = (engine.stats()["enqueue_seconds"] - enqueued_s) * 1e3 / n if n else 0.0
    return {"submit": seconds[:, 0].tolist(), "done": seconds[:, 1].tolist(), "enqueue_ms": [share] * n}


def _counted_pass(engine, pool, requests, duration, progress, executions) -> dict:
    """A pass that reads ``Engine.stats()`` after every result (see the module docstring)."""
    pulled = []
    submit, done, enqueue_ms = [], [], []
    before = engine.stats()
    enqueued_s = before["enqueue_seconds"]
    first = _submitted(before)
    results = engine.run_many(_feeds(pool, requests, duration, pulled))
    try:
        while True:
            call = time.perf_counter()
            try:
                next(results)
            except StopIteration:
                break
            now = time.perf_counter()
            s = engine.stats()
            submitted = (_submitted(s) - first) // executions
            new = range(len(submit), submitted)
            if len(new):
                share = (s["enqueue_seconds"] - enqueued_s) * 1e3 / len(new)
                for k in new:
                    submit.append(max(call, pulled[k]))
                    enqueue_ms.append(share)
            enqueued_s = s["enqueue_seconds"]
            done.append(now)
            if progress is not None:
                progress.update(len(done))
    finally:
        results.close()
    return {"submit": submit[:len(done)], "done": done, "enqueue_ms": enqueue_ms[:len(done)]}


def run_cold(engine, feeds) -> float:
    """Run one request alone on a fresh engine; returns its latency in ms (first executions, first copies)."""
    t0 = time.perf_counter()
    engine.run(feeds)
    return (time.perf_counter() - t0) * 1e3


def run_bench(engine, pool, batch, cold_ms, requests=None, duration=None, warmup=10, repeat=1,
              progress=None) -> dict:
    """Time ``engine`` on the feeds in ``pool`` (every feed carries ``batch`` rows).

    ``cold_ms`` is the first request's latency (:func:`run_cold`).  ``warmup``
    untimed requests come first, then ``repeat`` timed passes of ``requests``
    requests (or ``duration`` seconds) each.  Latency percentiles and the
    breakdown pool the samples of every pass; throughput is the median pass,
    and ``"repeat"`` keeps each pass's figures and their spread.
    """
    layout = step_layout(engine.plan)
    executions = executions_per_request(batch, engine.plan.max_batch)
    if warmup:
        for _ in engine.run_many(pool[i % len(pool)] for i in range(warmup)):
            pass
    passes = []
    for r in range(repeat):
        if progress is not None:
            progress.restart(f"pass {r + 1}/{repeat}" if repeat > 1 else "")
        passes.append(timed_pass(engine, pool, requests, duration, progress, executions))
        if progress is not None:
            progress.finish(len(passes[-1]["done"]))

    def steps_of(p):
        grouped = group_rows(p["ids"], p["rows"], p["base"], executions, layout)
        return lambda k: grouped.get(k) if grouped.get(k) and len(grouped[k]) == executions else None

    return report_passes(passes, batch, cold_ms, repeat, layout, executions, steps_of)


def report_passes(passes, batch, cold_ms, repeat, layout, executions, steps_of) -> dict:
    """The figures of timed passes (each: "submit", "done", "enqueue_ms" per
    request; "base_s", the host time the step times count from; "cpu_seconds"
    when known): latency percentiles and the breakdown over every pass,
    throughput of the median pass, each pass's figures and their spread.
    ``layout`` is the steps' :class:`~.breakdown.StepLayout`; ``steps_of(pass)``
    gives a function from a request's index to its timed executions' steps
    (None where they could not be read, or were not timed)."""
    nodes = layout.names
    latencies, enqueue, per_request, per_execution, samples = [], [], [], [], []
    per_pass = {"requests_per_s": [], "rows_per_s": [], "p50": [], "p90": [], "p99": []}
    walls, cpu, thread = [], 0.0, 0.0
    timed_cpu = all("cpu_seconds" in p for p in passes)   # the shaped-model loop does not time its CPU
    for p in passes:
        lat = [(d - s) * 1e3 for s, d in zip(p["submit"], p["done"], strict=True)]
        wall = p["done"][-1] - p["submit"][0] if p["done"] else 0.0
        walls.append(wall)
        n = len(lat)
        per_pass["requests_per_s"].append(n / wall if wall > 0 else 0.0)
        per_pass["rows_per_s"].append(n * batch / wall if wall > 0 else 0.0)
        pct = summarize(lat) or {"p50": 0.0, "p90": 0.0, "p99": 0.0}
        for key in ("p50", "p90", "p99"):
            per_pass[key].append(pct[key])
        cpu += p.get("cpu_seconds", {}).get("process", 0.0)
        thread += p.get("cpu_seconds", {}).get("thread", 0.0)
        steps_for = steps_of(p)
        t0 = p["submit"][0] if p["submit"] else 0.0
        timed = [steps_for(k) for k in range(n)]
        base = p.get("base_s")
        if base is not None:
            base = causal_base(base, ((p["submit"][k], p["done"][k], min(ex["start"] for ex in steps),
                                       max(ex["end"] for ex in steps))
                                      for k, steps in enumerate(timed) if steps))
        for k, ms in enumerate(lat):
            steps = timed[k]
            sums = None
            if steps:
                on_clock = {} if base is None else {"submit_ms": (p["submit"][k] - base) * 1e3,
                                                    "done_ms": (p["done"][k] - base) * 1e3}
                sums = request_steps(steps, nodes, **on_clock)
            if sums is not None:
                per_request.append(sums)
                per_execution.extend(steps)
            samples.append(_sample(len(samples), p["submit"][k] - t0, p["done"][k] - t0, ms,
                                   p["enqueue_ms"][k], sums))
        latencies.extend(lat)
        enqueue.extend(p["enqueue_ms"])

    median = sorted(range(len(passes)), key=lambda i: per_pass["rows_per_s"][i])[len(passes) // 2]
    n = len(latencies)
    breakdown = summarize_breakdown(per_request, per_execution, enqueue, latencies, layout, executions)
    req = breakdown["per_request"]
    wall = sum(walls)
    busy = thread / wall if wall > 0 else 0.0
    host_bound = breakdown["host_bound"] if breakdown["measured"] else busy >= HOST_BUSY_BOUND
    device = ({name: (req["compute"][name] or {}).get("mean", 0.0) for name in nodes}
              if breakdown["measured"] else {})
    slowest_node = max(device, key=device.get) if device else None
    return {
        "requests": n,
        "rows": n * batch,
        "wall_seconds": sum(walls),
        "throughput": {"requests_per_s": per_pass["requests_per_s"][median],
                       "rows_per_s": per_pass["rows_per_s"][median]},
        "latency_ms": {"cold": cold_ms, **(summarize(latencies) or {})},
        "latency_per_row_ms": {k: v / batch for k, v in (summarize(latencies) or {}).items()
                               if k != "count"},
        "host": {"enqueue_ms_per_request": (req["enqueue"] or {}).get("mean", 0.0),
                 **({"cpu_ms_per_request": cpu * 1e3 / n if n else 0.0,
                     "thread_cpu_ms_per_request": thread * 1e3 / n if n else 0.0,
                     "calling_thread_busy": busy} if timed_cpu else {})},
        "device_time": {"ms_per_request": device, "slowest_node": slowest_node},
        "host_bound": host_bound,
        "breakdown": breakdown,
        "repeat": {"count": repeat, "passes": per_pass,
                   "spread_percent": {k: spread_percent(v) for k, v in per_pass.items()}},
        "samples": samples,
    }


def _sample(index, submit_s, done_s, latency_ms, enqueue_ms, steps) -> dict:
    """One request's raw times (what ``--export-times`` writes); ms from its pass's first submit."""
    sample = {"request": index, "submit_ms": submit_s * 1e3, "done_ms": done_s * 1e3,
              "latency_ms": latency_ms, "enqueue_ms": enqueue_ms}
    if steps is not None:
        sample.update(executions=steps["executions"], h2d_ms=steps["h2d"], compute_ms=steps["compute"],
                      wait_ms=steps["wait"], queue_ms=steps["queue"], d2h_ms=steps["d2h"],
                      device_span_ms=steps["device_span"])
        for key in ("before_device", "after_device"):
            if key in steps:
                sample[f"{key}_ms"] = steps[key]
    return sample
