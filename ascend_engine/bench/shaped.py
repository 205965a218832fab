"""``bench`` and ``trace`` of a pipeline with dynamic shapes (a *shaped* plan).

In such a pipeline some model picks its gear (an image size, a dims gear)
from each request's shapes, so a run needs the shape of its requests: every
input whose trailing dimensions change per request (``(1, 3, -1, -1)``) must
be given one, with ``--shapes`` or the spec's ``bench_shape``.  The shape is
checked against the models' gears before anything runs (the engine's own
check, :class:`ascend_engine.shapes.ShapedRequests`), and the run reports
the gear each model node ran at that shape.
"""

from __future__ import annotations

import json

from .shapes import ShapesError, _dims, text


def shaped_inputs(plan) -> list:
    """``[(name, shape)]`` of the pipeline inputs whose trailing dimensions change per request."""
    return [(name, tuple(plan.tensors[t].shape)) for name, t in plan.inputs if plan.tensors[t].shaped]


def example(shape) -> str:
    """A shape in the ``--shapes`` syntax with ``D`` for each dimension left to choose (``1,3,D,D``)."""
    return ",".join("D" if d == -1 else str(d) for d in shape)


def missing_text(plan, given, source) -> str:
    """Why a run cannot start without shapes: the shaped inputs ``given`` lacks and how to give them."""
    lacking = [(n, s) for n, s in shaped_inputs(plan) if n not in (given or {})]
    listed = ", ".join(f"{n} {_dims(s)}" for n, s in lacking)
    how = ";".join(f"{n}:{example(s)}" for n, s in lacking)
    spec_keys = ", ".join(f"inputs.{n}.bench_shape" for n, _ in lacking)
    head = (f"{source} {text(given)} gives no shape for" if given else "no shape given for")
    return (f"{head} the input(s) {listed}: this pipeline has dynamic shapes (its models pick their gear "
            f"from each request's shapes), so a run needs the request shape of every input with a -1 after "
            f"the first dimension; give it with --shapes {how} or in the spec ({spec_keys})")


def request_shapes(plan, given, source) -> dict:
    """The shape of every pipeline input for one request, from ``given`` ({name: shape}).

    ``source`` names where ``given`` came from in messages (``--shapes``,
    ``the spec's bench_shape``).  Every name must be a pipeline input, of
    its rank, with its fixed dimensions; every shaped input must be given;
    all carry the same rows.  Inputs left out (fixed trailing shape) get the
    rows of the others.  ShapesError says what is wrong.
    """
    given = dict(given or {})
    inputs = {name: tuple(plan.tensors[t].shape) for name, t in plan.inputs}
    for name, shape in given.items():
        if name not in inputs:
            raise ShapesError(f"{source} {text(given)}: the pipeline has no input {name!r}; its inputs: "
                              f"{', '.join(inputs)}")
        want = inputs[name]
        if len(shape) != len(want) or any(w not in (-1, g) for g, w in zip(shape, want, strict=True)):
            raise ShapesError(f"{source} {text(given)}: input {name!r} takes shape {_dims(want)} "
                              f"(-1: any size), got {_dims(shape)}")
    if any(n not in given for n, _ in shaped_inputs(plan)):
        raise ShapesError(missing_text(plan, given, source))
    rows = {shape[0] for shape in given.values()}
    if len(rows) > 1:
        raise ShapesError(f"{source} {text(given)}: the inputs' first dimensions (the rows) differ; every "
                          "input of a request carries the same rows")
    n = rows.pop() if rows else (plan.fixed_batch or 1)
    return {name: tuple(given.get(name, (n, *want[1:]))) for name, want in inputs.items()}


def resolve(plan, shapes, source) -> dict:
    """The gear each model node runs for requests of ``shapes``: ``{node: gear}``.

    The engine's own choice (``ShapedRequests.resolve``); a shape that no gear
    holds is a ShapesError carrying the engine's message (the model node, the
    input and its gears).
    """
    from ascend_engine.shapes import ShapedRequests

    try:
        chosen = ShapedRequests(plan).resolve([shapes[name] for name, _ in plan.inputs])
    except ValueError as exc:
        raise ShapesError(f"{source} {text(shapes)}: {exc}") from None
    return dict(chosen.gears)


def node_gears(plan, gears) -> dict:
    """The gears as plain data for the JSON: ``{node: {"kind", "gear", "inputs"}}``.

    ``gear`` is ``[height, width]`` for an image-size node, the index in the
    model's dims gears for a dims-gear node; ``inputs`` holds the shapes the
    node's inputs take at that gear (the request's, padded).
    """
    out = {}
    for node in plan.nodes:
        if node.name not in gears:
            continue
        gear = gears[node.name]
        ins = next(i for g, i, _o in node.gear_io if g == gear)
        names = [s.name for s in node.model.inputs]
        out[node.name] = {"kind": node.shape_kind,
                          "gear": list(gear) if isinstance(gear, tuple) else int(gear),
                          "inputs": {n: list(s) for n, s in zip(names, ins, strict=True)}}
    return out


def gears_line(node_gears_figure) -> str:
    """One line for the report: ``det image size 16x16, rec dims gear 1 (map:1,16,16,2)``."""
    parts = []
    for name, g in node_gears_figure.items():
        if g["kind"] == "hw":
            parts.append(f"{name} image size {g['gear'][0]}x{g['gear'][1]}")
        else:
            shapes = text({n: tuple(s) for n, s in g["inputs"].items()})
            parts.append(f"{name} dims gear {g['gear']} ({shapes})")
    return ", ".join(parts)


def random_pool(plan, shapes, count, seed=0) -> list:
    """``count`` feeds dicts of random data, every input at its shape in ``shapes``."""
    from ascend_engine._feeds import random_feeds

    specs = [(name, plan.tensors[t].dtype, shapes[name][1:]) for name, t in plan.inputs]
    rows = next(iter(shapes.values()))[0]
    return random_feeds(specs, rows, count, seed)


def trace(engine, path, pool, requests, shapes, node_gears_figure, extra=None) -> dict:
    """Run ``requests`` requests from ``pool`` (``depth`` in flight) and write their timeline.

    :meth:`Engine.trace` runs them (one feeds dict per request) and writes
    the Chrome trace events; here every span also gets the request's
    ``shapes`` (``--shapes`` syntax) in its args, and a model node's
    execution the gear it ran (from :func:`node_gears`).  Returns
    ``{"path", "requests", "events"}``.
    """
    summary = engine.trace(path, requests=requests, feeds=pool)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    at = text(shapes)
    gear_of = {name: gears_line({name: g}).removeprefix(f"{name} ") for name, g in node_gears_figure.items()}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            e["args"]["shapes"] = at
            if e["cat"] == "execute" and e["name"] in gear_of:
                e["args"]["gear"] = gear_of[e["name"]]
    doc["otherData"].update(extra or {})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return {"path": summary["path"], "requests": summary["requests"], "events": summary["events"]}
