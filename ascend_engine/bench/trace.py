"""``ascend-engine trace``: a spec or a model file run and recorded as a Chrome trace-event timeline
(docs/cli.md, "trace")."""

from __future__ import annotations

import json

from ascend_engine.cli_args import FEED_POOL, UsageError, check_device, writable

from .command import (
    _batch_from_shapes,
    _code_allowed,
    _model_facts,
    _pipeline_for,
    _shaped_request,
    bench_feeds,
    check_target,
)


def summarize_trace(path) -> dict:
    """Events, streams (pid/tid pairs) and span of a Chrome trace-event file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = [e for e in events if e.get("ph") == "X"]
    lanes = {(e.get("pid"), e.get("tid")) for e in spans}
    if spans:
        start = min(e["ts"] for e in spans)
        end = max(e["ts"] + e.get("dur", 0) for e in spans)
    else:
        start = end = 0
    return {"events": len(events), "spans": len(spans), "lanes": len(lanes), "span_ms": (end - start) / 1e3}


def cmd_trace(args) -> int:
    check_target(args.target)
    _code_allowed(args)
    writable(args.out, "--out")
    from ascend_engine import Engine

    if not hasattr(Engine, "trace"):
        raise RuntimeError("this build of ascend_engine has no Engine.trace (timelines); upgrade the package")
    check_device(args.device)
    facts = _model_facts(args.target, args.device, args.shapes)
    if facts is not None and facts["resolved"] is not None:
        return _trace_shaped(args, facts)
    pipe, kw, _kind = _pipeline_for(args.target, args.device, args.allow_code)
    if args.depth is not None:
        kw["depth"] = args.depth
    kw["profile"] = True   # timelines come from the per-node timing events
    plan = pipe.plan(**kw)
    if plan.shaped:
        return _trace_shaped_pipeline(args, pipe, kw, plan)
    shape_batch, given = _batch_from_shapes(args, plan)
    if shape_batch is not None:
        args.batch = shape_batch
    batch_note = ""
    if args.batch is None:
        args.batch, batch_note = default_trace_batch(plan)
    if args.batch > plan.max_batch:
        raise UsageError(f"--batch {args.batch}: the largest batch one execution of this pipeline takes is "
                         f"{plan.max_batch}, and a trace records one execution per request; use --batch "
                         f"{plan.max_batch} or less (bench times larger, split requests)")
    if plan.fixed_batch and args.batch != plan.fixed_batch:
        if batch_note:
            args.batch, batch_note = plan.fixed_batch, ""
        else:
            raise UsageError(f"--batch {args.batch}: this pipeline takes a fixed batch of {plan.fixed_batch} "
                             "(a static model or input)")
    trace_feeds = {}
    if plan.byte_inputs:   # one JPEG per request (bench/jpegs.py)
        trace_feeds = {"feeds": bench_feeds(args.target, plan, 1, count=min(args.requests, FEED_POOL))}
    with pipe.compile(**kw) as engine:
        done = engine.trace(args.out, requests=args.requests, batch_size=args.batch, **trace_feeds)
    s = summarize_trace(args.out)
    requests = done.get("requests", args.requests) if isinstance(done, dict) else args.requests
    at = f" at {shapes_text(given)}" if given else ""
    print(f"trace     : {args.out}: {s['spans']} spans on {s['lanes']} lanes over {s['span_ms']:.2f} ms "
          f"({requests} requests{at}{batch_note})")
    print("open it in Perfetto or chrome://tracing")
    return 0


def default_trace_batch(plan) -> tuple:
    """(rows per traced request, a note saying why) when --batch is not given.

    The largest batch one execution takes -- unless a host step returns any
    number of rows: its ``max_rows`` bounds what one request may yield, and a
    spec sizes it for the one row per request bench runs by default, so the
    trace runs one row per request too.  A pipeline with a bytes input takes
    one JPEG per request.
    """
    if plan.byte_inputs:
        return 1, "; one JPEG per request"
    steps = [n.name for n in plan.nodes if n.kind == "host" and n.rows_any]
    if steps:
        return 1, (f"; 1 row per request: the max_rows of host step {', '.join(steps)} bounds the rows "
                   "one request yields; --batch for more")
    return plan.max_batch, ""


def _trace_shaped_pipeline(args, pipe, kw, plan) -> int:
    """trace of a pipeline with dynamic shapes: ``--requests`` random requests of one shape (--shapes or
    the spec's bench_shape), each model node at the gear that shape picks."""
    from ascend_engine.bench import shaped

    shapes, chosen, gears = _shaped_request(args, plan, "trace")
    figure = shaped.node_gears(plan, gears)
    extra = {"target": args.target, "shapes": {name: list(s) for name, s in shapes.items()},
             "shapes_chosen": chosen, "node_gears": figure}
    pool = shaped.random_pool(plan, shapes, FEED_POOL)
    with pipe.compile(**kw) as engine:
        done = shaped.trace(engine, args.out, pool, args.requests, shapes, figure, extra)
    s = summarize_trace(args.out)
    print(f"gears     : {shaped.gears_line(figure)}")
    print(f"trace     : {args.out}: {s['spans']} spans on {s['lanes']} lanes over {s['span_ms']:.2f} ms "
          f"({done['requests']} requests at {shapes_text(shapes)}, depth {plan.depth})")
    print("open it in Perfetto or chrome://tracing")
    return 0


def _trace_shaped(args, facts) -> int:
    """trace of an image-size, dims-gear or shape-range model file: its own streams, at the chosen shapes."""
    from ascend_engine.bench import direct
    from ascend_engine.bench.shapes import gears_text

    if args.batch is not None:
        raise UsageError(f"--batch does not go with {args.target}: a model with dynamic shapes runs at the "
                         "shapes --shapes chooses")
    resolved = facts["resolved"]
    depth = args.depth or direct.DEFAULT_DEPTH
    dev = 0 if args.device is None else args.device
    at = shapes_text(resolved["shapes"])
    extra = {"target": args.target, "shapes": {k: list(v) for k, v in resolved["shapes"].items()},
             "gears": facts["gears"], "how": direct.HOW.format(depth=depth)}
    with direct.ShapedRun(args.target, dev, resolved, facts["node"], depth=depth, pool=FEED_POOL) as run:
        done = run.trace(args.out, requests=args.requests, extra=extra)
    s = summarize_trace(args.out)
    chosen = "" if resolved["chosen"] == "given" else ", the largest gear"
    print(f"gears     : {gears_text(facts['gears'])}")
    print(f"trace     : {args.out}: {s['spans']} spans on {s['lanes']} lanes over {s['span_ms']:.2f} ms "
          f"({done['requests']} requests at {at}{chosen}; the model alone on {depth} stream(s))")
    print("open it in Perfetto or chrome://tracing")
    return 0


def shapes_text(shapes) -> str:
    """``{"x": (1, 3, 32, 32)}`` in the --shapes syntax (``x:1,3,32,32``)."""
    from ascend_engine.bench.shapes import text

    return text(shapes)


