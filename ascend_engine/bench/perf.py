"""perf_analyzer's load options and its ``-f`` CSV (docs/cli.md, "The perf_analyzer options").

* ``--concurrency-range START:END:STEP`` and ``--request-rate-range START:END:STEP``
  sweep the closed and the open loop of :mod:`.load` (END defaults to START,
  STEP to 1); ``--request-distribution constant|poisson`` spaces the open
  loop's arrivals (perf_analyzer's default: constant).
* ``--measurement-interval MS`` measures each point in windows of MS
  milliseconds until it is stable as perf_analyzer defines it: over the last
  three windows, the largest over the smallest throughput, and the largest
  over the smallest latency, are within ``--stability-percentage`` (default
  10), at most ``--max-trials`` windows (default 10).  The latency compared is
  the average, or the ``--percentile=N`` one.  The point's figures are those
  of the last three windows together.
* ``-f FILE`` writes perf_analyzer's CSV: one row per point, sorted by
  throughput, times in microseconds.
"""

from __future__ import annotations

import csv
import sys

import numpy as np

from ascend_engine.cli_args import MAX_CALLERS, MAX_RATE, MAX_SWEEP_POINTS, UsageError

from .summary import summarize

CSV_COLUMNS = ("Concurrency", "Inferences/Second", "Client Send", "Network+Server Send/Recv",
               "Server Queue", "Server Compute Input", "Server Compute Infer", "Server Compute Output",
               "Client Recv", "p50 latency", "p90 latency", "p95 latency", "p99 latency")
RATE_COLUMN = "Request Rate"      # the first column of an open-loop sweep
STABLE_WINDOWS = 3
DEFAULT_STABILITY = 10.0
DEFAULT_TRIALS = 10


def range_values(text, convert, what, limit=None, option="the range") -> list:
    """``START[:END[:STEP]]`` -> the values from START to END (inclusive) by STEP.

    At most MAX_SWEEP_POINTS values (each point runs the whole measurement) and an END of at most
    ``limit``: a larger sweep is a usage error naming the count, before any list is built.
    """
    parts = text.split(":")
    if not 1 <= len(parts) <= 3 or not all(p.strip() for p in parts):
        raise UsageError(f"expected START[:END[:STEP]] of {what} (such as 1:16:4), got {text!r}")
    try:
        start, end, step = ([convert(p) for p in parts] + [None, None])[:3]
    except ValueError:
        raise UsageError(f"expected START[:END[:STEP]] of {what} (such as 1:16:4), got {text!r}") from None
    end = start if end is None else end
    step = 1 if step is None else step
    if not (start > 0 and step > 0 and end >= start):     # nan is refused too
        raise UsageError(f"{text!r}: expected 0 < START <= END and STEP > 0 ({what})")
    if limit is not None and not end <= limit:
        raise UsageError(f"{option} {text}: expected an END of at most {limit:g} {what}")
    count = int((end - start) // step) + 1
    if count > MAX_SWEEP_POINTS:
        raise UsageError(f"{option} {text}: {count} points of {what}, more than {MAX_SWEEP_POINTS}, "
                         "each running the whole measurement; raise STEP or narrow the range")
    values, v = [], start
    while v <= end + 1e-9:
        values.append(v)
        v += step
    return values


def translate(args):
    """Turn the ranges into bench's --concurrency / --rate lists; refuse what does not go together."""
    ranges = [(o, v) for o, v in (("--concurrency-range", args.concurrency_range),
                                  ("--request-rate-range", args.request_rate_range)) if v]
    if len(ranges) > 1:
        raise UsageError("--concurrency-range and --request-rate-range: give one (a closed or an open loop)")
    if ranges and (args.concurrency or args.rate):
        raise UsageError(f"{ranges[0][0]} and --concurrency/--rate: give one of them")
    if args.concurrency_range:
        args.concurrency = range_values(args.concurrency_range, int, "callers", MAX_CALLERS,
                                         "--concurrency-range")
    if args.request_rate_range:
        args.rate = range_values(args.request_rate_range, float, "requests/s", MAX_RATE,
                                 "--request-rate-range")
    if args.request_distribution and not args.rate:
        raise UsageError("--request-distribution needs --request-rate-range (or --rate): it spaces arrivals")
    windows = {"--stability-percentage": args.stability_percentage, "--max-trials": args.max_trials,
               "--percentile": args.percentile}
    for option, value in windows.items():
        if value is not None and args.measurement_interval is None:
            raise UsageError(f"{option} needs --measurement-interval (the windows it judges)")
    if args.measurement_interval is not None and not (args.concurrency or args.rate):
        raise UsageError("--measurement-interval needs --concurrency-range or --request-rate-range")
    if args.measurement_interval is not None and (args.requests or args.duration):
        raise UsageError("--measurement-interval does not go with --requests or --duration: the windows "
                         "decide how long each point runs")
    if args.perf_csv and not (args.concurrency or args.rate):
        raise UsageError("-f needs --concurrency-range or --request-rate-range (one row per point)")
    for option, given in (("--latency-threshold", args.latency_threshold is not None), ("-v", args.verbose)):
        if given and not (args.concurrency or args.rate):
            raise UsageError(f"{option} needs --concurrency-range or --request-rate-range (it acts on the "
                             "points of a sweep)")


def client_config(args, points, values) -> dict:
    """The JSON's ``load`` entries of perf_analyzer's client options: the threshold (and the
    point it stopped at), --async/--sync and --max-threads as given."""
    out = {"client_api": getattr(args, "client_api", None),
           "max_threads": getattr(args, "max_threads", None)}
    threshold = getattr(args, "latency_threshold", None)
    if threshold is not None:
        stopped = points[-1] if points and len(points) < len(values) else None
        out["latency_threshold"] = {
            "ms": threshold, "figure": f"p{args.percentile}" if args.percentile else "average",
            "stopped_after": None if stopped is None else
            stopped["concurrency" if stopped["mode"] == "closed" else "offered_per_s"],
            "skipped": list(values[len(points):])}
    return out


def threshold_note(load) -> str | None:
    """The report's line when --latency-threshold ended the sweep early."""
    t = load.get("latency_threshold")
    if not t or t["stopped_after"] is None:
        return None
    unit = "callers" if load["mode"] == "closed" else "requests/s"
    return (f"threshold : the {t['figure']} latency at {t['stopped_after']:g} {unit} passed "
            f"--latency-threshold {t['ms']:g} ms; not run: {', '.join(f'{v:g}' for v in t['skipped'])}")


def point_latency(point, percentile=None) -> float:
    """The latency --latency-threshold compares, ms: the average, or the pN one."""
    samples = point.get("latency_samples_ms") or []
    return _latency_figure(samples, percentile) if samples else 0.0


def _point_line(point, percentile) -> str:
    unit = "callers" if point["mode"] == "closed" else "requests/s"
    value = point["concurrency" if point["mode"] == "closed" else "offered_per_s"]
    figure = f"p{percentile}" if percentile else "average"
    return (f"  {value:g} {unit}: {point['throughput']['requests_per_s']:.1f} requests/s, latency "
            f"{point_latency(point, percentile):.3f} ms ({figure})")


def over_threshold(args):
    """``until(point)`` for a sweep, called after each point: with -v it prints the point on stderr;
    it is true once the point's latency passes --latency-threshold (perf_analyzer ends its search
    there).  None when neither is given."""
    if args.latency_threshold is None and not args.verbose:
        return None

    def until(point):
        if args.verbose:
            print(_point_line(point, args.percentile), file=sys.stderr)
        return args.latency_threshold is not None and \
            point_latency(point, args.percentile) > args.latency_threshold

    return until


def windows_config(args) -> dict | None:
    """The stability windows of a run (the JSON's ``load.windows``), or None without them."""
    if args.measurement_interval is None:
        return None
    return {"interval_ms": args.measurement_interval,
            "stability_percent": DEFAULT_STABILITY if args.stability_percentage is None
            else args.stability_percentage,
            "max_trials": args.max_trials or DEFAULT_TRIALS,
            "figure": f"p{args.percentile}" if args.percentile else "average"}


def _latency_figure(latencies, percentile):
    a = np.asarray(latencies, dtype=np.float64)
    return float(np.percentile(a, percentile)) if percentile else float(a.mean())


def is_stable(windows, percent, percentile=None) -> bool:
    """perf_analyzer's test over the last three windows: max / min of throughput and of latency
    within ``percent``."""
    if len(windows) < STABLE_WINDOWS:
        return False
    last = windows[-STABLE_WINDOWS:]
    bound = 1.0 + percent / 100.0
    tput = [w["throughput"]["requests_per_s"] for w in last]
    lat = [_latency_figure(w["latency_samples_ms"], percentile) for w in last if w["latency_samples_ms"]]
    if min(tput) <= 0 or len(lat) < STABLE_WINDOWS or min(lat) <= 0:
        return False
    return bool(max(tput) / min(tput) <= bound and max(lat) / min(lat) <= bound)


def _pooled(windows, percentile) -> dict:
    """The last window's figures, with latency and throughput over the last three windows together."""
    last = windows[-STABLE_WINDOWS:]
    point = dict(last[-1])
    samples = [ms for w in last for ms in w["latency_samples_ms"]]
    point["latency_ms"] = summarize(samples)
    point["latency_samples_ms"] = samples
    point["requests"] = sum(w["requests"] for w in last)
    point["rows"] = sum(w["rows"] for w in last)
    point["samples"] = [s for w in last for s in w["samples"]]
    point["throughput"] = {key: float(np.mean([w["throughput"][key] for w in last]))
                           for key in ("requests_per_s", "rows_per_s")}
    return point


def stable_sweep(engine, pool, batch, mode, values, args, warmup, progress=None) -> list:
    """Each point measured in windows until stable (see the module docstring)."""
    from .load import run_point

    seconds = args.measurement_interval / 1e3
    percent = DEFAULT_STABILITY if args.stability_percentage is None else args.stability_percentage
    trials = args.max_trials or DEFAULT_TRIALS
    distribution = args.request_distribution or "constant"
    until = over_threshold(args)
    points = []
    for value in values:
        windows = []
        while len(windows) < max(trials, STABLE_WINDOWS):
            windows.append(run_point(engine, pool, batch, mode, value, duration=seconds,
                                     warmup=warmup if not windows else 0, distribution=distribution))
            if args.verbose:
                print(f"{_point_line(windows[-1], args.percentile)}, window {len(windows)}", file=sys.stderr)
            if is_stable(windows, percent, args.percentile):
                break
        point = _pooled(windows, args.percentile)
        point["stability"] = {"windows": len(windows), "stable": is_stable(windows, percent, args.percentile),
                              "percent": percent, "interval_ms": args.measurement_interval,
                              "figure": f"p{args.percentile}" if args.percentile else "average"}
        points.append(point)
        if until is not None and until(point):
            break
    return points


def _us(ms):
    return 0 if ms is None else int(round(ms * 1e3))


def _columns(pt) -> list:
    """Client Send ... Client Recv of one point, ms.

    In-process: the host's enqueue is the send, the engine's queue and the
    profile's H2D / models / D2H the server's part, the rest of the mean
    latency the receive.  Against a server (``bench --url``): the server's
    statistics give queue and compute input / infer / output, and the rest of
    the mean latency is the network and the server's own send and receive
    (the client's own time is not told apart from it)."""
    lat = pt["latency_ms"] or {}
    mean = lat.get("mean", 0.0) if lat else 0.0
    server = pt.get("server")
    if server is not None:
        parts = [server[k]["mean_ms"] or 0.0 for k in ("queue", "compute_input", "compute_infer",
                                                       "compute_output")]
        return [0.0, max(0.0, mean - sum(parts)), *parts, 0.0]
    stages = pt.get("stage_mean_ms") or {}
    infer = sum(v for k, v in stages.items() if k not in ("H2D", "D2H"))
    engine_side = (pt["queue_ms"] or 0.0) + (pt["service_ms"] or 0.0)
    recv = max(0.0, mean - engine_side) if lat else 0.0
    return [pt.get("enqueue_ms"), 0.0, pt["queue_ms"], stages.get("H2D"), infer, stages.get("D2H"), recv]


def csv_rows(points, mode) -> list:
    """perf_analyzer's rows (microseconds), sorted by throughput; the header first."""
    header = [RATE_COLUMN if mode == "open" else CSV_COLUMNS[0], *CSV_COLUMNS[1:]]
    rows = []
    for pt in points:
        lat = pt["latency_ms"] or {}
        first = pt["concurrency"] if mode == "closed" else pt["offered_per_s"]
        rows.append([f"{first:g}", f"{pt['throughput']['rows_per_s']:.1f}", *(_us(v) for v in _columns(pt)),
                     *(_us(lat.get(k)) for k in ("p50", "p90", "p95", "p99"))])
    rows.sort(key=lambda r: float(r[1]))
    return [header, *rows]


def write_csv(path, points, mode):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(csv_rows(points, mode))
