"""``ascend-engine bench``: a spec or a model file run on random or given inputs and measured
(docs/cli.md).  ``trace`` is in :mod:`.trace`, the ais_bench mode in :mod:`.ais`, perf_analyzer's
options in :mod:`.perf`."""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np

from ascend_engine.bench import clocks
from ascend_engine.cli_args import (
    DEFAULT_REQUESTS,
    FEED_POOL,
    MAX_OPEN_LOOP_SECONDS,
    PROG,
    UsageError,
    check_device,
    existing_file,
    writable,
    writable_folder,
)

# ---- bench ----------------------------------------------------------------------------------


SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def check_target(path):
    """Refuse, naming what is wrong, a SPEC_OR_MODEL that is missing or a folder.

    A folder gets the spec and model files in it named (``bench demo`` after
    ``sim make-demo demo`` means ``bench demo/pipeline.yaml``); a missing
    ``demo`` gets the command that writes it.
    """
    if os.path.isdir(path):
        try:
            names = sorted(os.listdir(path))
        except OSError:
            names = []
        specs = [os.path.join(path, n) for n in names if n.endswith(SPEC_SUFFIXES)]
        models = [os.path.join(path, n) for n in names if n.endswith(".om")]
        if specs or models:
            found = ", ".join(specs or models)
            raise UsageError(f"{path} is a folder, not a spec or model file; it holds {found}: "
                             f"{PROG} bench {(specs or models)[0]}")
        raise UsageError(f"{path} is a folder, not a spec or model file, and holds neither a spec "
                         f"({', '.join(SPEC_SUFFIXES)}) nor a model (.om)")
    if not os.path.exists(path) and os.path.basename(os.path.normpath(path)) == "demo":
        raise UsageError(f"spec or model file not found: {path}; {PROG} sim make-demo {path} writes the demo "
                         f"models and {os.path.join(path, 'pipeline.yaml')}")
    existing_file(path, "spec or model file")
    if path.lower().endswith(".onnx"):
        stem = os.path.splitext(os.path.basename(path))[0] or "model"
        raise UsageError(f"{path} is an ONNX model, not a model file the engine runs (.om): convert it "
                         "first, "
                         f"{PROG} sim atc --model={path} --framework=5 --output={stem} --soc_version=SOC, "
                         f"then {PROG} bench {stem}.om (docs/simulator.md, \"ONNX models\")")


def _node_name(target, in_specs):
    """A model file's node name: its file name without the suffix (not clashing with an input)."""
    node = os.path.splitext(os.path.basename(target))[0] or "model"
    return node + "_model" if node in {s.name for s in in_specs} else node


def _code_allowed(args):
    """Refuse a spec with host steps (Python code it would import) unless --allow-code was given.

    Checked before anything runs; parsing a spec imports nothing.
    """
    from ascend_engine import spec

    if args.allow_code or not spec.is_spec_path(args.target):
        return
    parsed = spec.parse(spec.read(args.target), os.path.dirname(os.path.abspath(args.target)), args.target)
    if parsed.host_code:
        steps = ", ".join(f"{h.name} ({h.function})" for h in parsed.host_code)
        raise UsageError(f"{args.target}: the spec's host step(s) {steps} name Python code that running it "
                         "would import and run; pass --allow-code if you trust this spec and the modules "
                         "beside it")


def _pipeline_for(target, device, allow_code=False):
    """(pipeline, compile kwargs, description) for a spec file or a single model file."""
    import ascend_engine as ae
    from ascend_engine import spec

    if spec.is_spec_path(target):
        pipe, kw = spec.load(target, device=device, allow_code=allow_code)
        return pipe, kw, "spec"
    dev = 0 if device is None else device
    with ae.Model.load(target, device=dev) as m:
        in_specs, out_specs = list(m.inputs), list(m.outputs)
    pipe = ae.Pipeline(device=dev)
    handles = [pipe.input(s.name, s.dtype, s.shape) for s in in_specs]
    out = pipe.model(target, *handles, name=_node_name(target, in_specs))
    for s, h in zip(out_specs, out if isinstance(out, tuple) else (out,), strict=True):
        pipe.output(s.name, h)
    return pipe, {}, "model"


def step_labels(plan) -> dict:
    """{node: what it is} ("model X", "host step X", "copy ..."), as the report names the steps."""
    from ascend_engine.bench.breakdown import step_layout

    layout = step_layout(plan)
    return dict(zip(layout.names, layout.labels, strict=True))


SHAPED_KINDS = ("hw", "dims", "range")   # run outside pipelines (ascend_engine.bench.direct)


def _model_facts(target, device, shapes):
    """For a model file: its gears, and for a dynamic-shape model the execution ``--shapes`` chooses.

    Returns None for a spec file, else ``{"gears", "resolved", "node"}``
    (``resolved`` None for static and dynamic-batch models, which run in a
    pipeline).  A --shapes value that fits no gear or range is a usage error.
    """
    import ascend_engine as ae
    from ascend_engine import spec
    from ascend_engine.bench import shapes as sh

    if spec.is_spec_path(target):
        return None
    with ae.Model.load(target, device=0 if device is None else device) as m:
        facts = {"gears": sh.model_gears(m), "resolved": None, "node": _node_name(target, m.inputs)}
        if m.dynamic_kind in SHAPED_KINDS:
            try:
                facts["resolved"] = sh.resolve(m, shapes)
            except sh.ShapesError as exc:
                raise UsageError(str(exc)) from None
    return facts


def _spec_shapes(target):
    """The ``bench_shape`` of each input of a spec file ({} when none, or for a model file)."""
    from ascend_engine import spec

    if not spec.is_spec_path(target):
        return {}
    parsed = spec.parse(spec.read(target), os.path.dirname(os.path.abspath(target)), target)
    return {i.name: i.bench_shape for i in parsed.inputs if i.bench_shape}


def _batch_from_shapes(args, plan):
    """The batch --shapes (or the spec's bench_shape) gives a pipeline run; None when neither is set."""
    from ascend_engine.bench import shapes as sh

    given = args.shapes or _spec_shapes(args.target)
    if not given:
        return None, None
    source = "--shapes" if args.shapes else "the spec's bench_shape"
    specs = [(name, plan.tensors[t].dtype, (-1, *plan.tensors[t].shape[1:])) for name, t in plan.inputs]
    if plan.fixed_batch:
        specs = [(name, dt, (plan.fixed_batch, *shape[1:])) for name, dt, shape in specs]
    try:
        batch = sh.batch_of(given, specs)
    except sh.ShapesError as exc:
        raise UsageError(str(exc).replace("--shapes", source, 1)) from None
    if args.batch is not None and args.batch != batch:
        raise UsageError(f"--batch {args.batch}: {source} {sh.text(given)} gives a batch of {batch}")
    return batch, given


def bench_feeds(target, plan, batch, count=FEED_POOL) -> list:
    """The random feeds of a bench or trace: JPEGs for a pipeline's bytes inputs (bench/jpegs.py, at
    the spec's ``bench_size``), random arrays otherwise."""
    if not plan.byte_inputs:
        return random_feeds(plan, batch, count)
    from ascend_engine import spec
    from ascend_engine.bench import jpegs

    sizes = {}
    if spec.is_spec_path(target):
        parsed = spec.parse(spec.read(target), os.path.dirname(os.path.abspath(target)), target)
        sizes = {i.name: i.bench_size for i in parsed.inputs if i.bench_size}
    return jpegs.feeds(plan, sizes, count)


def random_feeds(plan, batch, count=FEED_POOL, seed=0) -> list:
    """``count`` feeds dicts of random data with the pipeline's input dtypes and shapes.

    A ``--batch`` whose feeds could not fit in the host's free memory is a
    usage error here, before anything is allocated.
    """
    from ascend_engine._feeds import random_feeds as generate

    specs = [(name, plan.tensors[t].dtype, plan.tensors[t].shape[1:]) for name, t in plan.inputs]
    # each array is drawn in float64 (or int64) and then cast: count both
    need = count * batch * sum(math.prod(trailing) * (8 + dtype.itemsize) for _, dtype, trailing in specs)
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if need > free:
        raise UsageError(f"--batch {batch}: {count} random feeds of {batch} rows need about "
                         f"{need / 2**30:.1f} GiB of host memory, more than the {free / 2**30:.1f} GiB free; "
                         "use a smaller --batch")
    return generate(specs, batch, count, seed)


class Progress:
    """A progress line on stderr: redrawn in place on a terminal, plain lines (one a second) otherwise."""

    def __init__(self, total=None, duration=None, stream=None, enabled=True):
        self.total, self.duration = total, duration
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.perf_counter()
        self.last = self.start   # the first line after one interval: short runs print none
        self.interval = 0.1 if self.tty else 1.0
        self.label = ""

    def restart(self, label=""):
        """Start counting again (one timed pass of several); ``label`` prefixes the line."""
        self.label = f"{label}: " if label else ""
        self.start = self.last = time.perf_counter()

    def _text(self, done, elapsed):
        rate = done / elapsed if elapsed > 0 else 0.0
        if self.total:
            frac, what = done / self.total, f"{done}/{self.total} requests"
        else:
            frac = min(elapsed / self.duration, 1.0)
            what = f"{done} requests, {elapsed:.1f}/{self.duration:g} s"
        return frac, f"{self.label}{what}, {rate:.1f} requests/s"

    def update(self, done):
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < self.interval:
            return
        self.last = now
        frac, text = self._text(done, now - self.start)
        if self.tty:
            bar = "#" * int(frac * 24)
            self.stream.write(f"\r[{bar:<24}] {text}\x1b[K")
        else:
            self.stream.write(f"progress: {text}\n")
        self.stream.flush()

    def finish(self, done):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if self.tty:
            self.stream.write("\r\x1b[K")
        else:
            self.stream.write(f"progress: done, {done} requests in {elapsed:.2f} s\n")
        self.stream.flush()


def _read_baseline(path):
    existing_file(path, "baseline file")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"baseline file {path} is not a bench JSON file: {exc}") from None
    if not isinstance(data, dict) or "throughput" not in data:
        raise UsageError(f"baseline file {path} is not a bench JSON file (no 'throughput' figures)")
    return data






def _pure_data(args, pool):
    """The random pool, or zeros of its shapes with ais_bench's --pure_data_type zero."""
    if not getattr(args, "zeros", False):
        return pool
    if any(isinstance(v, bytes) for v in pool[0].values()):
        raise UsageError("--pure_data_type zero: a bytes input takes JPEGs, which cannot be zeros")
    return [{name: np.zeros_like(a) for name, a in feeds.items()} for feeds in pool]


def _check_baseline(plan, baseline, baseline_name, shapes=None):
    """Refuse a --compare baseline of another pipeline (UsageError), from the plan, before any run.

    ``shapes``: the request shapes of a pipeline with dynamic shapes."""
    from ascend_engine.bench import compare as cmp

    identity = {**cmp.pipeline_identity(plan), **({"shapes": shapes} if shapes else {})}
    try:
        cmp.check_comparable({"pipeline": identity, "nodes": identity["nodes"]}, baseline, baseline_name)
    except cmp.IncomparableError as exc:
        raise UsageError(str(exc)) from None


def _output_options(args):
    """Check --output, --check and their tolerances before anything runs."""
    for option, value in (("--output", args.output), ("--check", args.check)):
        if value and not args.input:
            raise UsageError(f"{option} needs --input: outputs are named after the input files")
    if args.output:
        writable_folder(args.output, "--output")
    if args.check and not os.path.isdir(args.check):
        raise UsageError(f"--check: no folder {args.check}")


def _verify(engine, requests, args):
    """Run every --input request once in order; write its outputs and check them.

    Returns a summary line; raises CheckError naming the first value that differs.
    """
    from ascend_engine.bench import data

    written = checked = 0
    pool = [feeds for _, feeds in requests]
    for k, out in enumerate(engine.run_many(pool)):
        stem = requests[k][0]
        if args.output:
            written += len(data.write_outputs(args.output, stem, out, args.output_format))
        if args.check:
            checked += data.check_outputs(args.check, stem, out, k, args.atol, args.rtol)
    parts = []
    if args.output:
        parts.append(f"{written} output file(s) of {len(requests)} request(s) written to {args.output}")
    if args.check:
        parts.append(f"{checked} values of {len(requests)} request(s) match {args.check} "
                     f"(atol {args.atol:g}, rtol {args.rtol:g})")
    return "; ".join(parts)


def cmd_bench(args) -> int:
    from ascend_engine.bench import data

    if args.url is not None or args.model_name or args.protocol:     # perf_analyzer's -u, -m, -i
        from ascend_engine.bench import remote

        return remote.run(args)
    server_only = (("-x", args.model_version), ("--shape", args.shape), ("--input-data", args.input_data))
    for option, given in server_only:
        if given:
            raise UsageError(f"{option} goes with -m NAME: bench against a server (--url, docs/cli.md)")
    if getattr(args, "model", None):
        from ascend_engine.bench import ais

        if ais.sweep_option(args) is None:
            return ais.run(args)
        ais.as_sweep(args)   # --model with --concurrency-range ...: the bench's own sweep of the model
    if args.target is None:
        raise UsageError("give a spec or model file (SPEC_OR_MODEL, or --model as in ais_bench)")
    from ascend_engine.bench.ais import AIS_ONLY

    for option in AIS_ONLY:
        if getattr(args, option, None) is not None:
            raise UsageError(f"--{option} is one of ais_bench's options: it goes with --model "
                             f"({PROG} bench --model {args.target} --{option} ...)")
    devices = args.devices or []
    if len(devices) > 1:
        listed = ",".join(map(str, devices))
        raise UsageError(f"--device {listed}: several devices go with --model (ais_bench's mode, one engine "
                         "per device); a spec's models name their devices")
    args.device = devices[0] if devices else None
    check_target(args.target)
    _code_allowed(args)
    from ascend_engine.bench import perf

    perf.translate(args)
    baseline = _read_baseline(args.compare) if args.compare else None
    for option, path in (("--json", args.json), ("--export-times", args.export_times), ("-f", args.perf_csv)):
        if path:
            writable(path, option)
    _output_options(args)
    load = _load_mode(args)

    import ascend_engine as ae

    check_device(args.device)
    facts = _model_facts(args.target, args.device, args.shapes)
    if facts is not None and facts["resolved"] is not None:
        return _bench_shaped(args, facts, baseline)
    pipe, kw, kind = _pipeline_for(args.target, args.device, args.allow_code)
    if args.depth is not None:
        kw["depth"] = args.depth
    if args.streams is not None:
        kw["streams"] = args.streams
    for option in ("max_queue", "max_delay_ms", "gear_policy"):    # the serving options
        if getattr(args, option) is not None:
            kw[option] = getattr(args, option)
    # timing events around every step cost host time per request: only when the breakdown is asked
    # for (--profile, or the spec's compile.profile)
    kw["profile"] = bool(args.profile or kw.get("profile") or args.perf_csv)   # -f: the server columns
    plan = pipe.plan(**kw)
    if baseline is not None and load is None and not plan.shaped:   # refused before the run
        _check_baseline(plan, baseline, args.compare)
    if plan.shaped:
        return _bench_shaped_pipeline(args, pipe, kw, kind, plan, baseline, load)
    requests_in = None
    if args.input and args.shapes:
        raise UsageError("--shapes does not go with --input: the shapes are those of the --input files")
    shape_batch, given_shapes = (None, None) if args.input else _batch_from_shapes(args, plan)
    if args.input:
        try:
            requests_in = data.load_inputs(args.input, plan)
        except data.DataError as exc:
            raise UsageError(str(exc)) from None
        rows = 1 if plan.byte_inputs else next(iter(requests_in[0][1].values())).shape[0]
        if args.batch is not None and args.batch != rows:
            raise UsageError(f"--batch {args.batch}: the --input files carry {rows} row(s) per request")
    batch = rows if requests_in else (shape_batch or args.batch or plan.fixed_batch or 1)
    if plan.byte_inputs and batch != 1:
        raise UsageError(f"--batch {batch}: a pipeline with a bytes input runs one JPEG per request "
                         "(--batch 1)")
    if plan.fixed_batch and batch != plan.fixed_batch:
        source = "the --input files carry" if requests_in else f"--batch {batch}:"
        raise UsageError(f"{source} {batch} row(s) per request, but this pipeline takes a fixed batch of "
                         f"{plan.fixed_batch} (a static model or input)")
    pool = [f for _, f in requests_in] if requests_in else _pure_data(args, bench_feeds(args.target, plan,
                                                                                         batch))
    requests = None if args.duration else (args.requests or DEFAULT_REQUESTS)
    soc = next((d.soc for d in ae.devices() if d.id == plan.device), "")
    progress = Progress(total=requests, duration=args.duration, enabled=not args.no_progress)
    if load is not None:
        return _bench_load(args, load, pipe, kw, kind, pool, batch, requests, requests_in, soc, progress)

    config = ({"shapes": {name: [batch, *plan.tensors[t].shape[1:]] for name, t in plan.inputs},
               "shapes_chosen": "given"} if given_shapes else {})
    return _run_pipeline_bench(args, pipe, kw, kind, plan, baseline, pool, batch, requests, requests_in, soc,
                               progress, config=config, extra={"gears": facts["gears"]} if facts else {})


def _run_pipeline_bench(args, pipe, kw, kind, plan, baseline, pool, batch, requests, requests_in, soc,
                        progress, config, extra, identity_extra=None) -> int:
    """Compile, run the closed-loop bench over ``pool`` and report it: the figures of a pipeline's bench,
    ``config`` and ``extra`` added to the JSON's ``config`` and top level."""
    import ascend_engine as ae
    from ascend_engine.bench import compare as cmp
    from ascend_engine.bench import measure

    with pipe.compile(**kw) as engine:
        cold_ms = measure.run_cold(engine, pool[0])
        verified = _verify(engine, requests_in, args) if (args.output or args.check) else None
        fig = measure.run_bench(engine, pool, batch, cold_ms, requests=requests, duration=args.duration,
                                warmup=args.warmup, repeat=args.repeat, progress=progress)
        memory = engine.memory()
        files = clocks.plan_model_files(engine.plan)
        identity = {**cmp.pipeline_identity(engine.plan), **(identity_extra or {})}
    samples = fig.pop("samples")
    figures = {
        "tool": f"{PROG} bench",
        "version": ae.__version__,
        "target": args.target,
        "kind": kind,
        "backend": ae.backend().name,
        "device": plan.device,
        "soc": soc,
        "nodes": identity["nodes"],
        "step_labels": step_labels(plan),
        "pipeline": identity,
        "streams_used": plan.n_streams,
        **extra,
        "config": {"batch": batch, "depth": plan.depth,
                   "streams": "single" if plan.single_stream else "per-model",
                   "requests": requests, "duration": args.duration, "warmup": args.warmup,
                   "repeat": args.repeat, "profile": plan.profile, **config},
        "inputs": _inputs_figure(args, requests_in, pool),
        **fig,
        "memory": memory,
    }
    figures["clocks"] = clocks.figure(files, figures["breakdown"], batch)
    return _finish_bench(args, figures, samples, baseline, verified)


def _finish_bench(args, figures, samples, baseline, verified=None) -> int:
    """Print a bench run, compare it with the baseline, write --json and --export-times."""
    from ascend_engine.bench import compare as cmp
    from ascend_engine.bench import report

    if getattr(args, "collect", None) is not None:   # the ais_bench mode prints its own summary
        args.collect.append((figures, samples))
        return 0
    report.print_bench(figures)
    if verified:
        print(f"outputs   : {verified}")
    if baseline is not None:
        try:
            result = cmp.compare(figures, baseline, args.tolerance, baseline_name=args.compare)
        except cmp.IncomparableError as exc:
            raise UsageError(str(exc)) from None
        report.print_comparison(result, args.compare)
        figures["comparison"] = {"baseline": args.compare, "tolerance_percent": args.tolerance, **result}
    figures["latency_samples_ms"] = [s["latency_ms"] for s in samples]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
        print(f"json      : {args.json}")
    if args.export_times:
        with open(args.export_times, "w", encoding="utf-8") as f:
            json.dump(samples, f, indent=1)
            f.write("\n")
        print(f"times     : {args.export_times} ({len(samples)} requests)")
    if baseline is not None and args.fail_on_regression and figures["comparison"]["regressions"]:
        return 1
    return 0


def _bench_shaped(args, facts, baseline) -> int:
    """bench of an image-size, dims-gear or shape-range model file (ascend_engine.bench.direct)."""
    import ascend_engine as ae
    from ascend_engine.bench import compare as cmp
    from ascend_engine.bench import direct

    what = {"hw": "dynamic image size", "dims": "dynamic dims",
            "range": "shape ranges"}[facts["gears"]["kind"]]
    for option, given in (("--batch", args.batch is not None), ("--input", args.input),
                          ("--streams", args.streams), ("--concurrency", args.concurrency),
                          ("--rate", args.rate)):
        if given:
            hint = "; choose the shapes with --shapes" if option == "--batch" else ""
            raise UsageError(f"{option} does not go with {args.target}: a model with {what} is benchmarked "
                             f"alone, outside a pipeline, at the shapes --shapes chooses{hint}")
    resolved, node = facts["resolved"], facts["node"]
    if baseline is not None:   # refused before the run, not after it
        try:
            cmp.check_shapes({"shapes": {k: list(v) for k, v in resolved["shapes"].items()}}, baseline,
                             args.compare)
        except cmp.IncomparableError as exc:
            raise UsageError(str(exc)) from None
    depth = args.depth or direct.DEFAULT_DEPTH
    dev = 0 if args.device is None else args.device
    requests = None if args.duration else (args.requests or DEFAULT_REQUESTS)
    progress = Progress(total=requests, duration=args.duration, enabled=not args.no_progress)
    with direct.ShapedRun(args.target, dev, resolved, node, depth=depth, pool=FEED_POOL,
                          zeros=getattr(args, "zeros", False)) as run:
        cold_ms = run.run_cold()
        fig = run.bench(cold_ms, requests=requests, duration=args.duration, warmup=args.warmup,
                        repeat=args.repeat, progress=progress)
        memory = run.memory()
        rows = run.rows
        dtypes = {s.name: str(s.dtype) for s in run.model.inputs}
        output_shapes = {name: list(shape) for name, shape in run.output_shapes.items()}
    samples = fig.pop("samples")
    shapes = {name: list(shape) for name, shape in resolved["shapes"].items()}
    gear = resolved["gear"]
    identity = {"nodes": [node], "gears": {node: facts["gears"]},
                "inputs": {name: [dtypes[name], shape] for name, shape in shapes.items()},
                "shapes": shapes, "max_batch": rows}
    soc = next((d.soc for d in ae.devices() if d.id == dev), "")
    figures = {
        "tool": f"{PROG} bench",
        "version": ae.__version__,
        "target": args.target,
        "kind": "model",
        "backend": ae.backend().name,
        "device": dev,
        "soc": soc,
        "nodes": [node],
        "pipeline": identity,
        "streams_used": depth,
        "gears": facts["gears"],
        "how": direct.HOW.format(depth=depth),
        "config": {"batch": rows, "depth": depth, "streams": "one per request in flight",
                   "requests": requests, "duration": args.duration, "warmup": args.warmup,
                   "profile": True,   # its own loop times every step with events, --profile or not
                   "repeat": args.repeat, "shapes": shapes, "shapes_chosen": resolved["chosen"],
                   "gear": list(gear) if isinstance(gear, tuple) else gear},
        "inputs": {"kind": "random", "requests": FEED_POOL,
                   "description": f"random, {FEED_POOL} distinct feeds used in turn"},
        "outputs": {"shapes": output_shapes},
        **fig,
        "memory": memory,
    }
    figures["clocks"] = clocks.figure({node: args.target}, figures["breakdown"], rows)
    return _finish_bench(args, figures, samples, baseline)


def _shaped_request(args, plan, command, requests_in=None):
    """For a pipeline with dynamic shapes: (shapes of every input, where they came from, {node: gear}).

    The shapes come from the --input files (``requests_in``, all of one
    shape), else --shapes, else the spec's bench_shape; refused (UsageError)
    when a shaped input has none or no gear holds them.
    """
    from ascend_engine.bench import shaped
    from ascend_engine.bench.shapes import ShapesError, text

    if args.batch is not None:
        raise UsageError(f"--batch does not go with {args.target}: this pipeline has dynamic shapes, and "
                         "the rows of a request are the first dimension of its shapes; choose them with "
                         "--shapes or the spec's bench_shape")
    if requests_in:
        stem, feeds = requests_in[0]
        given = {name: tuple(a.shape) for name, a in feeds.items()}
        for other, more in requests_in[1:]:
            theirs = {name: tuple(a.shape) for name, a in more.items()}
            if theirs != given:
                raise UsageError(f"--input: request {other} has the shapes {text(theirs)}, request {stem} "
                                 f"{text(given)}; a run of a pipeline with dynamic shapes times requests of "
                                 "one shape: give the files of each shape to a run of their own")
        source, chosen = f"--input request {stem}", "files"
    else:
        given = args.shapes or _spec_shapes(args.target)
        source, chosen = ("--shapes", "given") if args.shapes else ("the spec's bench_shape", "bench_shape")
    try:
        shapes = shaped.request_shapes(plan, given, source)
        gears = shaped.resolve(plan, shapes, source)
    except ShapesError as exc:
        raise UsageError(f"{command} {args.target}: {exc}") from None
    return shapes, chosen, gears


def _bench_shaped_pipeline(args, pipe, kw, kind, plan, baseline, load) -> int:
    """bench of a pipeline whose models pick their gear from each request's shapes: random requests of
    one shape (--shapes or the spec's bench_shape), ``depth`` in flight."""
    import ascend_engine as ae
    from ascend_engine.bench import data, shaped

    requests_in = None
    if args.input:
        if args.shapes:
            raise UsageError("--shapes does not go with --input: the shapes are those of the --input files")
        try:
            requests_in = data.load_inputs(args.input, plan)
        except data.DataError as exc:
            raise UsageError(str(exc)) from None
    shapes, chosen, gears = _shaped_request(args, plan, "bench", requests_in)
    listed = {name: list(s) for name, s in shapes.items()}
    if baseline is not None:   # refused before the run, not after it
        _check_baseline(plan, baseline, args.compare, shapes=listed)
    rows = next(iter(shapes.values()))[0]
    pool = [f for _, f in requests_in] if requests_in else \
        _pure_data(args, shaped.random_pool(plan, shapes, FEED_POOL))
    requests = None if args.duration else (args.requests or DEFAULT_REQUESTS)
    soc = next((d.soc for d in ae.devices() if d.id == plan.device), "")
    progress = Progress(total=requests, duration=args.duration, enabled=not args.no_progress)
    if load is not None:
        return _bench_load(args, load, pipe, kw, kind, pool, rows, requests, requests_in, soc, progress,
                           shaped_config={"shapes": listed, "shapes_chosen": chosen,
                                          "node_gears": shaped.node_gears(plan, gears)})
    return _run_pipeline_bench(args, pipe, kw, kind, plan, baseline, pool, rows, requests, requests_in, soc,
                               progress, config={"shapes": listed, "shapes_chosen": chosen},
                               extra={"node_gears": shaped.node_gears(plan, gears)},
                               identity_extra={"shapes": listed})


def _inputs_figure(args, requests_in, pool) -> dict:
    """What the requests carried: the --input files or random feeds (the JSON's ``inputs``)."""
    if requests_in:
        return {"kind": "files", "source": args.input, "requests": len(requests_in),
                "description": f"{len(requests_in)} request(s) from {args.input}, used in turn"}
    return {"kind": "random", "requests": len(pool),
            "description": f"random, {len(pool)} distinct feeds used in turn"}


def _check_open_loop_length(args):
    """Refuse a --rate so low that its arrivals would not come in any reasonable time."""
    for rate in args.rate:
        if args.duration is not None:
            if rate * args.duration < 1:
                expected = rate * args.duration
                raise UsageError(f"--rate {rate:g}: a {args.duration:g} s run expects {expected:.3g} "
                                 "arrivals, fewer than one; raise the rate or the --duration")
            continue
        count = args.warmup + (args.requests or DEFAULT_REQUESTS)
        seconds = count / rate
        if seconds > MAX_OPEN_LOOP_SECONDS:
            raise UsageError(f"--rate {rate:g}: {count} requests (warm-up included) arrive over about "
                             f"{seconds:.3g} s at that rate, more than {MAX_OPEN_LOOP_SECONDS} s; raise the "
                             "rate, or give fewer --requests or a --duration")


def _load_mode(args):
    """("closed", callers) for --concurrency, ("open", rates) for --rate, else None.

    Also refuses the options that do not go with the mode chosen.
    """
    if args.concurrency:
        load = ("closed", args.concurrency)
    elif args.rate:
        load = ("open", args.rate)
    else:
        for option, value in (("--max-delay-ms", args.max_delay_ms), ("--gear-policy", args.gear_policy),
                              ("--max-queue", args.max_queue)):
            if value is not None:
                raise UsageError(f"{option} needs --concurrency or --rate: without them bench runs its "
                                 "requests through Engine.run_many, which neither queues nor batches")
        return None
    option = "--concurrency" if args.concurrency else "--rate"
    if args.rate:
        _check_open_loop_length(args)
    for other, given in (("--compare", args.compare), ("--repeat", args.repeat > 1),
                         ("--fail-on-regression", args.fail_on_regression)):
        if given:
            raise UsageError(f"{other} does not go with {option}: it compares or repeats the default "
                             "measurement (requests through Engine.run_many), not a load sweep")
    return load


def _bench_load(args, load, pipe, kw, kind, pool, batch, requests, requests_in, soc, progress,
                shaped_config=None) -> int:
    """bench --concurrency / --rate: a load sweep (ascend_engine.bench.load), one row per point.

    ``shaped_config``: for a pipeline with dynamic shapes, ``{"shapes", "shapes_chosen", "node_gears"}``
    of its requests."""
    import ascend_engine as ae
    from ascend_engine.bench import compare as cmp
    from ascend_engine.bench import load as loadgen
    from ascend_engine.bench import measure, perf, report

    mode, values = load
    with pipe.compile(**kw) as engine:
        cold_ms = measure.run_cold(engine, pool[0])
        verified = _verify(engine, requests_in, args) if (args.output or args.check) else None
        if args.measurement_interval is not None:   # perf_analyzer's stability windows
            points = perf.stable_sweep(engine, pool, batch, mode, values, args, args.warmup, progress)
        else:
            distribution = args.request_distribution or "poisson"
            points = loadgen.sweep(engine, pool, batch, mode, values, requests=requests,
                                   duration=args.duration, warmup=args.warmup, progress=progress,
                                   distribution=distribution, until=perf.over_threshold(args))
        memory = engine.memory()
        plan = engine.plan
        identity = cmp.pipeline_identity(plan)
    if shaped_config:
        identity["shapes"] = shaped_config["shapes"]
    key = "concurrency" if mode == "closed" else "offered_per_s"
    samples = []
    for point in points:
        samples.extend({key: point[key], **s} for s in point.pop("samples"))
    figures = {
        "tool": f"{PROG} bench",
        "version": ae.__version__,
        "target": args.target,
        "kind": kind,
        "backend": ae.backend().name,
        "device": plan.device,
        "soc": soc,
        "nodes": identity["nodes"],
        "step_labels": step_labels(plan),
        "pipeline": identity,
        "streams_used": plan.n_streams,
        "config": {"batch": batch, "depth": plan.depth,
                   "streams": "single" if plan.single_stream else "per-model",
                   "requests": requests, "duration": args.duration, "warmup": args.warmup,
                   "profile": plan.profile, "max_queue": plan.max_queue, "max_delay_ms": plan.max_delay_ms,
                   "gear_policy": plan.gear_policy,
                   **({k: shaped_config[k] for k in ("shapes", "shapes_chosen")} if shaped_config else {})},
        **({"node_gears": shaped_config["node_gears"]} if shaped_config else {}),
        "inputs": _inputs_figure(args, requests_in, pool),
        "latency_ms": {"cold": cold_ms},
        "load": {"mode": mode, "generator": "asyncio tasks awaiting Engine.run_async", key: values,
                 "distribution": (args.request_distribution or
                                  ("constant" if args.measurement_interval is not None else "poisson"))
                 if mode == "open" else None,
                 "windows": perf.windows_config(args),
                 **perf.client_config(args, points, values),
                 "points": points},
        "memory": memory,
    }
    report.print_load(figures)
    note = perf.threshold_note(figures["load"])
    if note:
        print(note)
    if verified:
        print(f"outputs   : {verified}")
    if args.perf_csv:
        perf.write_csv(args.perf_csv, points, mode)
        print(f"csv       : {args.perf_csv} (perf_analyzer's columns, microseconds)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
        print(f"json      : {args.json}")
    if args.export_times:
        with open(args.export_times, "w", encoding="utf-8") as f:
            json.dump(samples, f, indent=1)
            f.write("\n")
        print(f"times     : {args.export_times} ({len(samples)} requests)")
    return 0
