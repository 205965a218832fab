"""Load generation: many callers of one engine, the way a server meets it.

``bench --concurrency N`` is a *closed loop*: N callers, each sending its
next request as soon as its last one is answered, so N requests are always
in the engine (in its admission queue or on the device).  ``bench --rate R``
is an *open loop*: requests arrive on their own schedule, a Poisson process
of R requests per second, whether or not the engine has answered the earlier
ones; when the engine is slower than the arrivals the backlog grows, and the
report says so.  A list of values (``--concurrency 1,4,16``) sweeps: one
point per value, each with its own warm-up.

The callers are asyncio tasks on one event loop in the calling thread, each
awaiting ``Engine.run_async``.  A waiting caller costs no thread and no core:
the engine's completer thread resolves the request's future and the loop
wakes the one task that waited for it.  With threads calling ``submit``
instead, every caller would be an OS thread contending for the GIL, and a
sweep to 64 callers would put 64 threads on a two-core machine, measuring
the generator rather than the engine.

Every timed request gets a latency sample: in a closed loop from the moment
the caller submits it to the moment the caller has its result; in an open
loop from its *scheduled* arrival, so the time it spent waiting for the
engine (or for the generator itself, reported apart as ``lag``) counts.  The
warm-up requests of each point run first, to completion, and are not timed.
The engine's own figures for the timed requests complete the picture: the
time each spent in the admission queue and on the device until delivered
(``engine.stats()["serving"]``), the device work of each execution (timing
events) and the rows each execution carried (the batcher's merged batches).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import numpy as np

from ascend_engine.serving_calls import SAMPLES

from .breakdown import execution_steps, step_layout
from .measure import MAX_TIMELINE_EXECUTIONS, executions_per_request
from .summary import summarize

KEEP_UP = 0.95            # an open loop keeps up when it completes at least this share of the offered rate
BACKLOG_SLOTS = 10        # an open loop stops its arrivals once this many times (depth + max_queue) wait
DEFAULT_SEED = 0          # the arrival schedule of an open loop: the same on every run


class _Run:
    """The shared state of one phase: its requests' times, its failures, its progress."""

    def __init__(self, first, progress):
        self.first = first            # requests below this number are warm-up
        self.times = []               # (number, scheduled or None, submitted, done)
        self.failure = None
        self.progress = progress
        self.completed = 0
        self.stopped_at = None        # an open loop's arrivals stopped early: the backlog then

    def done(self, k, scheduled, submitted, finished):
        self.completed += 1
        if k >= self.first:
            self.times.append((k, scheduled, submitted, finished))
            if self.progress is not None:
                self.progress.update(len(self.times))

    def fail(self, exc):
        if self.failure is None:
            self.failure = exc


async def closed_loop(engine, pool, callers, count, duration, run):
    """``callers`` tasks, each submitting its next request when its last one is answered.

    Requests are numbered as they are sent; the phase ends after ``count``
    requests, or after ``duration`` seconds of sending.
    """
    numbers = iter(range(count if count is not None else 1 << 62))
    start = time.monotonic()

    async def caller():
        while run.failure is None:
            if duration is not None and time.monotonic() - start >= duration:
                return
            k = next(numbers, None)
            if k is None:
                return
            feeds = pool[k % len(pool)]
            sent = time.monotonic()
            try:
                await engine.run_async(feeds)
            except Exception as exc:     # the first failure stops every caller; bench reports it
                run.fail(exc)
                return
            run.done(k, None, sent, time.monotonic())

    await asyncio.gather(*(caller() for _ in range(callers)))


async def open_loop(engine, pool, rate, count, duration, run, seed=DEFAULT_SEED, backlog_limit=None,
                    distribution="poisson"):
    """Requests arriving as a Poisson process of ``rate`` per second, answered or not.

    The gaps between arrivals are exponential, drawn from ``seed``; with
    ``distribution="constant"`` (perf_analyzer's default) every gap is
    ``1 / rate``.  A timer
    thread waits for each arrival time (a thread's timed wait wakes within
    tens of microseconds; the event loop rounds its timers up to the
    millisecond, which would add up to a millisecond of lag to every request)
    and hands the arrival to the loop, which starts its task; arrivals that
    fell due together are handed over together, so a slow moment never
    stretches the schedule.  Returns the backlog (requests sent and not yet answered) at
    each timed arrival: ``[(scheduled time, backlog)]``.

    Once the backlog passes ``backlog_limit`` the engine has plainly not
    kept up, and answering every arrival of a long run would take far longer
    than the run: the arrivals stop there (``run.stopped_at``), and the
    requests already sent are answered and counted.
    """
    loop = asyncio.get_running_loop()
    finished = loop.create_future()
    tasks, backlog = [], []
    stop = threading.Event()
    sent = 0

    async def request(k, scheduled):
        submitted = time.monotonic()
        try:
            await engine.run_async(pool[k % len(pool)])
        except Exception as exc:     # the first failure stops the arrivals; bench reports it
            run.fail(exc)
            stop.set()
            return
        run.done(k, scheduled, submitted, time.monotonic())

    def arrive(due):                 # on the loop
        nonlocal sent
        for scheduled in due:
            if sent >= run.first:
                backlog.append((scheduled, sent - run.completed))
            tasks.append(loop.create_task(request(sent, scheduled)))
            sent += 1

    poisson = distribution == "poisson"

    def timer():                     # on the timer thread
        rng = np.random.default_rng(seed)
        start = at = time.monotonic()
        n = 0

        def more():
            return (count is None or n < count) and (duration is None or at - start < duration)

        try:
            while not stop.is_set() and more():
                if backlog_limit is not None and n - run.completed > backlog_limit:
                    run.stopped_at = n - run.completed     # read across threads: a snapshot is enough
                    break
                due = []
                now = time.monotonic()
                while more() and at <= now:
                    due.append(at)
                    n += 1
                    at += rng.exponential(1.0 / rate) if poisson else 1.0 / rate
                if due:
                    loop.call_soon_threadsafe(arrive, due)
                if more():
                    stop.wait(max(0.0, at - time.monotonic()))
        except Exception as exc:       # reported as the run's failure, never as an engine that kept up
            run.fail(exc)
        finally:
            loop.call_soon_threadsafe(lambda: finished.done() or finished.set_result(None))

    thread = threading.Thread(target=timer, name="ascend-engine-bench-arrivals", daemon=True)
    thread.start()
    try:
        await finished
        while True:                  # tasks started by the last hand-over run too
            pending = [t for t in tasks if not t.done()]
            if not pending:
                break
            await asyncio.gather(*pending)
    finally:
        stop.set()
        thread.join()
    return backlog


def _serving_totals(stats):
    """(count, sum) of the queue and service samples, and the batch histogram, from ``stats()``."""
    s = stats["serving"]
    totals = {}
    for key in ("queue_ms", "service_ms"):
        fig = s[key]
        totals[key] = (fig["count"], fig["count"] * fig.get("mean", 0.0))
    return totals, dict(s["batch_rows"])


def _mean_between(before, after):
    """The mean of the samples added between two ``(count, sum)`` totals.

    The engine keeps the most recent SAMPLES values of each figure; once it
    holds that many, the older ones (the warm-up first) have been dropped and
    the mean of what it holds stands for the timed requests.
    """
    (n0, s0), (n1, s1) = before, after
    if n1 >= SAMPLES:
        return s1 / n1
    return (s1 - s0) / (n1 - n0) if n1 > n0 else None


def _device_figures(ids, rows, layout):
    """From timeline rows: each execution's device work (H2D + every step + D2H, ms), the p50 of
    each stage (``{"H2D", "model NAME", "host step NAME", ..., "D2H"}``), whose largest sets the
    pace, and each stage's mean."""
    busy = []
    stages = {"H2D": [], **{label: [] for label in layout.labels}, "D2H": []}
    for row in rows:
        steps = execution_steps(row, layout)
        if steps is None:
            continue
        busy.append(steps["h2d"] + sum(steps["compute"].values()) + steps["d2h"])
        stages["H2D"].append(steps["h2d"])
        stages["D2H"].append(steps["d2h"])
        for n, label in zip(layout.names, layout.labels, strict=True):
            stages[label].append(steps["compute"][n])
    stage_p50 = {name: float(np.percentile(v, 50)) for name, v in stages.items() if v}
    stage_mean = {name: float(np.mean(v)) for name, v in stages.items() if v}
    return summarize(busy), stage_p50, stage_mean


class EngineTarget:
    """The in-process side of the load loop: an :class:`~ascend_engine.Engine` and what it reports.

    The loops (:func:`closed_loop`, :func:`open_loop`) await ``run_async``
    of a *target*; :func:`run_point` asks it for its ``backlog_limit``, opens
    its ``session`` on each phase's event loop, and takes its own figures of
    the timed requests with ``begin``/``end``.  ``bench --url`` drives a
    server through the same loops with :class:`ascend_engine.bench.remote.RemoteTarget`.
    """

    generator = "asyncio tasks awaiting Engine.run_async"

    def __init__(self, engine):
        self.engine = engine
        self.backlog_limit = BACKLOG_SLOTS * (engine.plan.depth + engine.plan.max_queue)

    def run_async(self, feeds):
        return self.engine.run_async(feeds)

    @contextlib.asynccontextmanager
    async def session(self):
        """Nothing to open in-process."""
        yield self

    def begin(self, requests, batch):
        """Before the timed requests: the engine's counters (and its timeline, when profiled)."""
        engine = self.engine
        if engine.plan.profile:
            capacity = MAX_TIMELINE_EXECUTIONS if requests is None else \
                requests * executions_per_request(batch, engine.plan.max_batch)
            engine._timeline_begin(capacity)
        return engine.stats()

    def abandon(self, stats0):
        """The timed requests failed: stop the timeline."""
        if self.engine.plan.profile:
            self.engine._timeline_end()

    def end(self, stats0, n) -> dict:
        """The engine's figures of the ``n`` timed requests since :meth:`begin`."""
        engine = self.engine
        timeline = engine._timeline_end() if engine.plan.profile else ([], [])
        stats1 = engine.stats()
        before, hist0 = _serving_totals(stats0)
        after, hist1 = _serving_totals(stats1)
        hist = {r: hist1.get(r, 0) - hist0.get(r, 0) for r in hist1 if hist1.get(r, 0) > hist0.get(r, 0)}
        executions = sum(hist.values())
        device, stages, means = _device_figures(*timeline, step_layout(engine.plan))
        return {
            "queue_ms": _mean_between(before["queue_ms"], after["queue_ms"]),
            "service_ms": _mean_between(before["service_ms"], after["service_ms"]),
            "device_ms": device,
            "stage_ms": stages,
            "stage_mean_ms": means,
            "enqueue_ms": (stats1["enqueue_seconds"] - stats0["enqueue_seconds"]) * 1e3 / n if n else None,
            "slowest_stage": max(stages, key=stages.get) if stages else None,
            "executions": executions,
            "batch_rows": dict(sorted(hist.items())),
            "mean_batch_rows": (sum(r * c for r, c in hist.items()) / executions) if executions else None,
        }


def as_target(engine):
    """``engine`` as a load target: an Engine wrapped in :class:`EngineTarget`, a target as it is."""
    return engine if hasattr(engine, "session") else EngineTarget(engine)


def _phase(target, pool, mode, value, count, duration, first, progress, seed, distribution="poisson"):
    run = _Run(first, progress)

    async def phase():
        async with target.session():
            if mode == "closed":
                return await closed_loop(target, pool, value, count, duration, run)
            return await open_loop(target, pool, value, count, duration, run, seed, target.backlog_limit,
                                   distribution)

    backlog = asyncio.run(phase())
    if run.failure is not None:
        raise run.failure
    return run.times, backlog or [], run.stopped_at


def _backlog_growth(backlog):
    """Requests per second by which the backlog grew over the timed arrivals (least squares)."""
    if len(backlog) < 3:
        return 0.0
    t = np.array([b[0] for b in backlog])
    n = np.array([b[1] for b in backlog], dtype=np.float64)
    if t[-1] <= t[0]:
        return 0.0
    return float(np.polyfit(t - t[0], n, 1)[0])


def run_point(engine, pool, batch, mode, value, requests=None, duration=None, warmup=10, progress=None,
              seed=DEFAULT_SEED, distribution="poisson") -> dict:
    """One point of a sweep: ``value`` callers (``mode="closed"``) or requests/s (``"open"``).

    ``engine``: an Engine, or a load target (:class:`EngineTarget`'s methods,
    such as a server's :class:`ascend_engine.bench.remote.RemoteTarget`).

    ``warmup`` requests run first, untimed, to completion; then ``requests``
    timed requests (or as many as ``duration`` seconds send).  Returns the
    point's figures (see docs/cli.md) with its ``"samples"``.
    """
    target = as_target(engine)
    if warmup:
        _phase(target, pool, mode, value, warmup, None, warmup, None, seed + 1, distribution)
    snapshot = target.begin(requests, batch)
    cpu0, wall0 = time.process_time(), time.monotonic()
    gen0 = time.thread_time()
    try:
        times, backlog, stopped_at = _phase(target, pool, mode, value, requests, duration, 0, progress, seed,
                                            distribution)
    except BaseException:
        target.abandon(snapshot)
        raise
    wall = time.monotonic() - wall0
    cpu, gen = time.process_time() - cpu0, time.thread_time() - gen0
    times.sort()
    n = len(times)
    scheduled = [t[1] for t in times]
    submitted = np.array([t[2] for t in times])
    finished = np.array([t[3] for t in times])
    origin = scheduled if mode == "open" else submitted
    latency = (finished - np.asarray(origin)) * 1e3
    point = {
        "mode": mode,
        ("concurrency" if mode == "closed" else "offered_per_s"): value,
        "requests": n,
        "rows": n * batch,
        "latency_ms": summarize(latency),
        **target.end(snapshot, n),
        "host_cpu_cores": cpu / wall if wall > 0 else 0.0,
        "generator_cpu_cores": gen / wall if wall > 0 else 0.0,
    }
    if mode == "closed":
        span = finished.max() - submitted.min() if n else 0.0
        point["wall_seconds"] = float(span)
        point["throughput"] = {"requests_per_s": n / span if span > 0 else 0.0,
                               "rows_per_s": n * batch / span if span > 0 else 0.0}
    else:
        point.update(_open_figures(value, scheduled, submitted, finished, backlog, batch, stopped_at))
    point["samples"] = _samples(times, mode, latency)
    point["latency_samples_ms"] = [float(v) for v in latency]
    return point


def _open_figures(rate, scheduled, submitted, finished, backlog, batch, stopped_at=None) -> dict:
    """Offered against achieved rate, backlog growth, generator lag, and whether the engine kept up.

    The offered rate actually drawn is the timed arrivals over their span;
    the achieved rate is the answers over theirs (the same number of
    requests, so the two are like figures: a queue that keeps growing shows
    up as answers spread over a longer time than the arrivals).
    """
    n = len(scheduled)
    out = {"lag_ms": summarize((submitted - np.asarray(scheduled)) * 1e3)}
    if n < 2:
        out.update(offered_drawn_per_s=None, achieved_per_s=None, backlog_growth_per_s=0.0, kept_up=True,
                   stopped_early=False, backlog_end=0,
                   wall_seconds=0.0, throughput={"requests_per_s": 0.0, "rows_per_s": 0.0},
                   verdict="too few requests to judge (fewer than 2)")
        return out
    arrival_span = max(scheduled) - min(scheduled)
    answer_span = float(finished.max() - finished.min())
    offered = (n - 1) / arrival_span if arrival_span > 0 else float("inf")
    achieved = (n - 1) / answer_span if answer_span > 0 else float("inf")
    growth = _backlog_growth(backlog)
    short = achieved < KEEP_UP * offered
    growing = growth > (1.0 - KEEP_UP) * offered
    kept_up = not (short or growing or stopped_at is not None)
    if kept_up:
        verdict = "kept up"
    else:
        verdict = (f"NOT KEPT UP: answered {achieved:.1f} of the {offered:.1f} requests/s that arrived; "
                   f"the backlog grew by {growth:.1f} requests/s")
        if stopped_at is not None:
            verdict += f"; arrivals stopped after {n} requests, with {stopped_at} waiting"
    wall = float(finished.max() - min(scheduled))
    out.update(offered_drawn_per_s=offered, achieved_per_s=achieved, backlog_growth_per_s=growth,
               stopped_early=stopped_at is not None,
               backlog_end=int(backlog[-1][1]) if backlog else 0, kept_up=kept_up, verdict=verdict,
               wall_seconds=wall,
               throughput={"requests_per_s": achieved, "rows_per_s": achieved * batch})
    return out


def _samples(times, mode, latency):
    """One record per timed request (``--export-times``), ms from the point's first send."""
    if not times:
        return []
    origin = min(t[1] if mode == "open" else t[2] for t in times)
    out = []
    for (k, scheduled, submitted, finished), ms in zip(times, latency, strict=True):
        rec = {"request": k, "submit_ms": (submitted - origin) * 1e3, "done_ms": (finished - origin) * 1e3,
               "latency_ms": float(ms)}
        if mode == "open":
            rec["scheduled_ms"] = (scheduled - origin) * 1e3
        out.append(rec)
    return out


def sweep(engine, pool, batch, mode, values, requests=None, duration=None, warmup=10, progress=None,
          distribution="poisson", until=None) -> list:
    """Run :func:`run_point` for each value in turn; returns the points.

    ``until(point)`` true ends the sweep after that point (perf_analyzer's --latency-threshold).
    """
    points = []
    for value in values:
        if progress is not None:
            what = f"{value:g} callers" if mode == "closed" else f"{value:g} requests/s offered"
            progress.restart(what)
        point = run_point(engine, pool, batch, mode, value, requests, duration, warmup, progress,
                          distribution=distribution)
        if progress is not None:
            progress.finish(point["requests"])
        points.append(point)
        if until is not None and until(point):
            break
    return points
