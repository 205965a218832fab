"""``ascend-engine bench --model m.om ...``: the options, summary and output files of ais_bench.

A script written for ais_bench (``python3 -m ais_bench --model m.om --loop 100
--device 0,1 --output out --outfmt NPY``) runs unchanged with ``ascend-engine
bench`` in its place, on a model file or a pipeline spec (docs/cli.md, "The
ais_bench options").  What each option means is ais_bench's:

* ``--loop N`` timed requests after ``--warmup_count`` (default 1) untimed ones;
* ``--device 0,1``: one engine per device, run side by side, a summary each and
  the sum of their throughputs;
* ``--dymBatch N`` / ``--dymHW H,W`` / ``--dymDims`` / ``--dymShape`` choose the
  batch, gear or shapes; ``--dymShape_range`` runs every shape of its ranges in turn;
* ``--pure_data_type zero|random`` is the data without ``--input`` (zeros by default);
* ``--batchsize`` only enters the throughput (1000 x batch size / mean NPU compute time);
* ``--output DIR`` writes each output as ``<name>_<index>.<npy|bin|txt>`` (``<name>``:
  ``pure_infer_data`` without ``--input``, else the first input's file name) in
  ``DIR/<date-time>/`` (``--output_dirname`` names the folder instead), and the
  summary as ``DIR/<date-time>_summary.json``.

The run is the bench's own, with timing events on (``--profile``): the NPU
compute time of a request is the device time of its models, H2D and D2H its
copies.  The wall-clock throughput of the run is printed beside ais_bench's.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import threading
import time

import numpy as np

from ascend_engine.cli_args import PROG, UsageError, writable_folder

from .summary import summarize

PERCENTILE = 99                  # ais_bench's percentile(99%)
PURE_NAME = "pure_infer_data"    # what ais_bench names the outputs of a run without --input
FORMATS = {"NPY": "npy", "BIN": "bin", "TXT": "txt"}
RULE = "------------------------------------------------------"
SUMMARY_HEAD = "-----------------Performance Summary------------------"
# the options only the ais_bench mode takes (their argparse names), and its defaults (ais_bench's)
AIS_ONLY = ("loop", "warmup_count", "dymBatch", "dymHW", "dymDims", "dymShape", "dymShape_range", "outfmt",
            "output_dirname", "pure_data_type", "batchsize", "display_all_summary")
DEFAULTS = {"loop": 1, "warmup_count": 1, "outfmt": "BIN", "pure_data_type": "zero",
            "display_all_summary": False}


# ---- the options ------------------------------------------------------------------------------


def _range_values(token, where):
    """``224~226`` -> [224, 225, 226]; ``224-230`` -> [224, 230]; ``3`` -> [3]."""
    try:
        if "~" in token:
            low, high = (int(v) for v in token.split("~"))
            if low > high:
                raise ValueError
            return list(range(low, high + 1))
        return [int(v) for v in token.split("-")]
    except ValueError:
        raise UsageError(f"--dymShape_range {where}: expected a size, LOW~HIGH or A-B-C for each dimension, "
                         f"got {token!r}") from None


def shape_range_list(text) -> list:
    """Every shape set of ``--dymShape_range`` (``x:1,3,224,224~226;y:1,4``), in ais_bench's order."""
    per_input = []
    for part in text.split(";"):
        name, sep, dims = part.strip().partition(":")
        if not sep or not name or not dims:
            raise UsageError(f"--dymShape_range: expected NAME:D,D,...[;NAME:...] with D a size, LOW~HIGH or "
                             f"A-B-C, got {part!r}")
        choices = [_range_values(d.strip(), name) for d in dims.split(",")]
        per_input.append((name.strip(), [tuple(s) for s in itertools.product(*choices)]))
    names = [n for n, _ in per_input]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(s for _, s in per_input))]


def _hw_shapes(target, device, hw):
    """--dymHW H,W as shapes: each input's -1 height and width (its last two -1 dimensions) set."""
    import ascend_engine as ae

    with ae.Model.load(target, device=device) as m:
        shapes = {}
        for spec in m.inputs:
            dims = list(spec.shape)
            free = [i for i, d in enumerate(dims) if d == -1]
            if len(free) >= 2:
                dims[free[-2]], dims[free[-1]] = hw
                shapes[spec.name] = tuple(dims)
    if not shapes:
        raise UsageError(f"--dymHW: {target} has no input with a dynamic height and width")
    return shapes


def _runs(args) -> list:
    """The shapes of each run (None: the model's own or --dymBatch's batch)."""
    from ascend_engine.bench.shapes import ShapesError, parse

    chosen = [o for o, v in (("--dymBatch", args.dymBatch), ("--dymHW", args.dymHW),
                             ("--dymDims", args.dymDims), ("--dymShape", args.dymShape),
                             ("--dymShape_range", args.dymShape_range)) if v is not None]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)}: give one of them (each chooses the gear or shapes)")
    if args.dymHW is not None:
        return [_hw_shapes(args.model, args.devices[0], args.dymHW)]
    for option, text in (("--dymDims", args.dymDims), ("--dymShape", args.dymShape)):
        if text is not None:
            try:
                return [parse(text)]
            except ShapesError as exc:
                raise UsageError(f"{option}: {exc}") from None
    if args.dymShape_range is not None:
        return shape_range_list(args.dymShape_range)
    return [None]


# the load sweep's options (bench/perf.py, bench/load.py): with --model, the bench's own sweep runs
SWEEP_OPTIONS = (("--concurrency", "concurrency"), ("--rate", "rate"),
                 ("--concurrency-range", "concurrency_range"), ("--request-rate-range", "request_rate_range"),
                 ("--measurement-interval", "measurement_interval"), ("-f", "perf_csv"))


def sweep_option(args):
    """The first load-sweep option given (``--concurrency-range`` ...), or None."""
    return next((option for option, name in SWEEP_OPTIONS if getattr(args, name, None)), None)


def as_sweep(args):
    """``--model M`` with a load sweep: the bench's sweep of M (ais_bench has none to follow).

    Each point runs the bench's number of requests (``--loop`` when given, else --requests or its
    default), not ais_bench's single loop; ``--warmup_count`` is the warm-up.  The options that
    choose ais_bench's gears, data and files are refused, naming the bench's own.
    """
    sweep = sweep_option(args)
    if args.target is not None:
        raise UsageError(f"--model {args.model} and {args.target}: give the model or spec once")
    for option in AIS_ONLY:
        if option not in ("loop", "warmup_count") and getattr(args, option, None) is not None:
            raise UsageError(f"--{option} does not go with {sweep}: a load sweep is the bench's own "
                             f"({PROG} help bench: --batch, --shapes, --input)")
    if args.devices and len(args.devices) > 1:
        listed = ",".join(map(str, args.devices))
        raise UsageError(f"--device {listed} does not go with {sweep}: a load sweep runs one engine")
    if args.loop is not None:
        if args.requests is not None:
            raise UsageError(f"--loop {args.loop} and --requests {args.requests}: give one "
                             "(requests per point)")
        args.requests = args.loop
    if args.warmup_count is not None:
        args.warmup = args.warmup_count
    args.target, args.model, args.loop, args.warmup_count = args.model, None, None, None


def check(args):
    """Refuse what does not go with --model before anything runs."""
    if args.target is not None:
        raise UsageError(f"--model {args.model} and {args.target}: give the model or spec once")
    given = {"--requests": args.requests is not None, "--duration": args.duration is not None,
             "--repeat": args.repeat != 1, "--concurrency": bool(args.concurrency), "--rate": bool(args.rate),
             "--compare": args.compare is not None, "--shapes": args.shapes is not None,
             "--batch": args.batch is not None, "--output-format": args.output_format != "npy",
             "--json": args.json is not None, "--export-times": args.export_times is not None,
             "--check": args.check is not None}
    for option, is_given in given.items():
        if is_given:
            raise UsageError(f"{option} does not go with --model (ais_bench's options): use --loop, "
                             "--dymBatch, --dymHW, --dymDims, --dymShape, --outfmt and the summary --output "
                             "writes")
    if args.output_dirname and not args.output:
        raise UsageError("--output_dirname needs --output (the folder it is made in), as in ais_bench")


# ---- one run on each device --------------------------------------------------------------------


def _bench_on(args, device, shapes):
    """(figures, samples) of the bench on ``device`` at ``shapes``, through the bench's own run."""
    from ascend_engine.bench.command import cmd_bench

    run = copy.copy(args)
    run.model, run.target, run.devices = None, args.model, [device]
    run.requests, run.warmup, run.duration, run.repeat = args.loop, args.warmup_count, None, 1
    run.shapes = shapes
    run.batch = args.dymBatch
    run.profile, run.no_progress = True, True
    run.zeros = args.pure_data_type == "zero"
    for option in AIS_ONLY:   # translated above: the run is the bench's own
        setattr(run, option, None)
    run.output = run.check = run.json = run.export_times = run.compare = None
    run.collect = []
    cmd_bench(run)
    return run.collect[0]


def _bench_devices(args, shapes) -> list:
    """One engine per device, side by side (as ais_bench runs one process per device)."""
    results, errors = [None] * len(args.devices), []

    def one(k, device):
        try:
            results[k] = _bench_on(args, device, shapes)
        except BaseException as exc:   # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(k, d), name=f"bench-device-{d}")
               for k, d in enumerate(args.devices)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [(r, start) for r in results]


# ---- the summary ---------------------------------------------------------------------------------


def _figure(values) -> dict:
    """ais_bench's figure of a list of ms: min, max, mean, median, percentile(99%), count."""
    s = summarize(values)
    if s is None:
        return {"min": 0.0, "max": 0.0, "mean": 0.0, "median": 0.0, f"percentile({PERCENTILE}%)": 0.0,
                "count": 0}
    return {"min": s["min"], "max": s["max"], "mean": s["mean"], "median": s["p50"],
            f"percentile({PERCENTILE}%)": float(np.percentile(list(values), PERCENTILE)), "count": s["count"]}


def summary(figures, samples, batchsize=None) -> dict:
    """The summary ais_bench writes (its field names), from a bench run's samples, and ours beside it."""
    models = [n for n, label in (figures.get("step_labels") or {n: "model" for n in figures["nodes"]}).items()
              if label.startswith("model")] or list(figures["nodes"])
    timed = [s for s in samples if "compute_ms" in s]
    compute = [sum(s["compute_ms"][n] for n in models) for s in timed]
    batch = batchsize or figures["config"]["batch"]
    npu = _figure(compute)
    return {
        "NPU_compute_time": npu,
        "H2D_latency": _figure([s["h2d_ms"] for s in timed]),
        "D2H_latency": _figure([s["d2h_ms"] for s in timed]),
        "throughput": 1000.0 * batch / npu["mean"] if npu["mean"] else 0.0,
        "batchsize": batch,
        "npu_compute_time_list": compute,
        "wall_clock": {"requests_per_s": figures["throughput"]["requests_per_s"],
                       "rows_per_s": figures["throughput"]["rows_per_s"],
                       "latency_ms": figures["latency_ms"], "depth": figures["config"]["depth"],
                       "loop": figures["requests"]},
    }


def _line(name, fig):
    return (f"[INFO] {name} (ms): min = {fig['min']}, max = {fig['max']}, mean = {fig['mean']}, "
            f"median = {fig['median']}, percentile({PERCENTILE}%) = {fig[f'percentile({PERCENTILE}%)']}")


def print_summary(s, device, out=None):
    """The summary block as ais_bench prints it, and the wall-clock line of ours after it."""
    wall = s["wall_clock"]
    lines = [f"[INFO] {SUMMARY_HEAD}", _line("H2D_latency", s["H2D_latency"]),
             _line("NPU_compute_time", s["NPU_compute_time"]), _line("D2H_latency", s["D2H_latency"]),
             f"[INFO] throughput 1000*batchsize.mean({s['batchsize']})/NPU_compute_time.mean("
             f"{s['NPU_compute_time']['mean']}): {s['throughput']}",
             f"[INFO] {RULE}",
             f"[INFO] {PROG} wall clock on device {device}: {wall['requests_per_s']:.1f} requests/s, "
             f"{wall['rows_per_s']:.1f} rows/s ({wall['loop']} requests, depth {wall['depth']}, latency p50 "
             f"{wall['latency_ms']['p50']:.3f} ms)"]
    print("\n".join(lines), file=out)


# ---- the output files ------------------------------------------------------------------------------


def _write_array(path, a, fmt):
    if fmt == "npy":
        np.save(path, a)
    elif fmt == "bin":
        np.ascontiguousarray(a).tofile(path)
    else:
        np.savetxt(path, a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(-1, 1))


def write_outputs(folder, requests, outputs, fmt) -> list:
    """``<name>_<index>.<fmt>`` per output of each request: (name, outputs dict) pairs."""
    paths = []
    for (name, _), out in zip(requests, outputs, strict=True):
        for index, a in enumerate(out.values()):
            path = os.path.join(folder, f"{name}_{index}.{fmt}")
            _write_array(path, np.asarray(a), fmt)
            paths.append(path)
    return paths


def _requests(args, plan_or_model, shapes):
    """(name, feeds) of the requests whose outputs --output writes: the --input files, else one request."""
    from ascend_engine.bench import data

    if args.input:
        try:
            return data.load_inputs(args.input, plan_or_model)
        except data.DataError as exc:
            raise UsageError(str(exc)) from None
    return None


def _run_outputs(args, shapes):
    """Run the requests --output writes once (device of the first run); returns (requests, outputs)."""
    import ascend_engine as ae
    from ascend_engine.bench.command import _pipeline_for, random_feeds

    device = args.devices[0]
    resolved = shapes is not None and _is_shaped(args.model, device)
    if resolved:
        with ae.Model.load(args.model, device=device) as m:
            from ascend_engine.bench.direct import random_inputs

            feeds = random_inputs(m, shapes, 1)[0]
            if args.pure_data_type == "zero":
                feeds = {k: np.zeros_like(v) for k, v in feeds.items()}
            return [(PURE_NAME, feeds)], [m(**feeds)]
    pipe, kw, _ = _pipeline_for(args.model, device, args.allow_code)
    plan = pipe.plan(**kw)
    requests = _requests(args, plan, shapes)
    if requests is None:
        batch = args.dymBatch or (next(iter(shapes.values()))[0] if shapes else plan.fixed_batch or 1)
        feeds = random_feeds(plan, batch, count=1)[0]
        if args.pure_data_type == "zero":
            feeds = {k: np.zeros_like(v) for k, v in feeds.items()}
        requests = [(PURE_NAME, feeds)]
    with pipe.compile(**kw) as engine:
        outputs = list(engine.run_many(f for _, f in requests))
    return requests, outputs


def _is_shaped(target, device) -> bool:
    from ascend_engine import spec

    if spec.is_spec_path(target):
        return False
    import ascend_engine as ae
    from ascend_engine.bench.command import SHAPED_KINDS

    with ae.Model.load(target, device=device) as m:
        return m.dynamic_kind in SHAPED_KINDS


def _output_folder(args, stamp):
    folder = os.path.join(args.output, args.output_dirname or stamp)
    os.makedirs(folder, exist_ok=True)
    return folder


# ---- the command --------------------------------------------------------------------------------------


def run(args) -> int:
    """``bench --model``: ais_bench's runs, summaries and files (see the module docstring)."""
    from ascend_engine.bench.command import check_target

    for option, value in DEFAULTS.items():
        if getattr(args, option) is None:
            setattr(args, option, value)
    args.devices = args.devices or [0]
    check(args)
    check_target(args.model)
    if args.output:
        writable_folder(args.output, "--output")
    fmt = FORMATS[args.outfmt]
    runs = _runs(args)
    for shapes in runs:
        if shapes is not None and len(runs) > 1:
            from ascend_engine.bench.shapes import text

            print(f"[INFO] shapes {text(shapes)}")
        results = _bench_devices(args, shapes)
        summaries = []
        for ((figures, samples), start), device in zip(results, args.devices, strict=True):
            s = summary(figures, samples, args.batchsize)
            summaries.append((device, s, start))
            print_summary(s, device)
        if len(args.devices) > 1:
            for k, (device, s, start) in enumerate(summaries):
                print(f"i:{k} device_{device} throughput:{s['throughput']} start_time:{start}")
            print(f"[INFO] summary throughput:{sum(s['throughput'] for _, s, _ in summaries)}")
        if args.output:
            stamp = time.strftime("%Y_%m_%d-%H_%M_%S")
            folder = _output_folder(args, stamp)
            requests, outputs = _run_outputs(args, shapes)
            written = write_outputs(folder, requests, outputs, fmt)
            prefix = os.path.join(args.output, args.output_dirname or stamp)
            with open(prefix + "_summary.json", "w", encoding="utf-8") as f:
                one = summaries[0][1] if len(summaries) == 1 else \
                    {"devices": {str(d): s for d, s, _ in summaries}}
                json.dump({**one, "filesinfo": {str(k): {"outfiles": written} for k in range(1)},
                           "args": {k: v for k, v in vars(args).items() if k != "func"}}, f, indent=1,
                          default=str)
                f.write("\n")
            print(f"[INFO] {len(written)} output file(s) in {folder}; summary {prefix}_summary.json")
    return 0
