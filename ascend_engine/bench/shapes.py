"""``--shapes``: the input shapes a bench or trace runs at, checked against a model's gears.

The syntax is ais_bench's ``--dymShape``: ``NAME:D,D,...`` for each input,
inputs separated by semicolons (``image:1,3,640,480;mask:1,640``).  What a
shape may be depends on the model's dynamic mechanism:

* image-size (HW) and dims-gear models run at one of their gears: the shapes
  given must be a gear's shapes exactly (inputs left out are taken from the
  one gear that matches the others);
* shape-range models run at any shape inside their ranges: every input with
  a dynamic dimension must be given;
* static and dynamic-batch models (and pipeline specs): the first dimension
  is the batch (rows per request), the others must equal the input's.

:func:`model_gears` describes every mechanism's gears for the header and the
JSON of a bench run.
"""

from __future__ import annotations

import math

SYNTAX = "NAME:D,D,...[;NAME:D,...] (such as x:1,3,640,480)"


class ShapesError(ValueError):
    """A ``--shapes`` value that is malformed or does not fit the model (a usage error)."""


def parse(text) -> dict:
    """``"x:1,3,640,480;y:1,16"`` -> ``{"x": (1, 3, 640, 480), "y": (1, 16)}``.

    ShapesError names the part that is wrong and the syntax expected (the
    caller says which option or key the text came from).
    """
    if not isinstance(text, str) or not text.strip():
        raise ShapesError(f"expected {SYNTAX}, got an empty value")
    shapes = {}
    for part in text.split(";"):
        entry = part.strip()
        if not entry:
            raise ShapesError(f"{text!r}: an empty entry between semicolons; expected {SYNTAX}")
        name, colon, dims = entry.rpartition(":")
        name = name.strip()
        if not colon or not name:
            raise ShapesError(f"{text!r}: {entry!r} is not NAME:D,D,...; expected {SYNTAX}")
        if name in shapes:
            raise ShapesError(f"{text!r}: input {name!r} is given twice")
        values = []
        for d in dims.split(","):
            d = d.strip()
            if not (d.isascii() and d.isdigit()) or int(d) < 1:
                raise ShapesError(f"{text!r}: input {name!r}: dimension {d!r} is not a positive "
                                  f"integer; expected {SYNTAX}")
            values.append(int(d))
        shapes[name] = tuple(values)
    return shapes


def text(shapes) -> str:
    """The ``--shapes`` form of ``{name: shape}`` (the inverse of :func:`parse`)."""
    return ";".join(f"{name}:{','.join(str(d) for d in shape)}" for name, shape in shapes.items())


def _dims(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


# ---- a model's gears ------------------------------------------------------------------------


def gear_candidates(model) -> list:
    """Every gear of an image-size or dims-gear model: ``[(gear, {input name: shape})]``.

    ``gear`` is ``(height, width)`` for image sizes, the index in
    ``model.dims_gears`` for dims gears (what ``Model.execute_async`` takes).
    """
    if model.dynamic_kind == "hw":
        out = []
        for hw in model.hw_sizes:
            shapes = {}
            for spec in model.inputs:
                sub = iter(hw)
                shapes[spec.name] = tuple(next(sub) if d == -1 else d for d in spec.shape)
            out.append((tuple(hw), shapes))
        return out
    if model.dynamic_kind == "dims":
        return [(k, {name: tuple(s) for name, s in g.items()}) for k, g in enumerate(model.dims_gears)]
    return []


def model_gears(model) -> dict:
    """A model's dynamic mechanism and gears as plain data (the JSON's ``gears``)."""
    return {
        "kind": model.dynamic_kind,
        "batch_sizes": list(model.batch_sizes),
        "hw_sizes": [list(hw) for hw in model.hw_sizes],
        "dims_gears": [{name: list(s) for name, s in g.items()} for g in model.dims_gears],
        "shape_ranges": {name: [list(r) for r in ranges] for name, ranges in model.shape_ranges.items()},
    }


def _range_text(lo, hi) -> str:
    return str(lo) if lo == hi else f"{lo}..{'any' if hi == -1 else hi}"


def ranges_text(ranges) -> str:
    """``{"x": ((1, -1), (16, 16))}`` -> ``"x: [1..any, 16]"``."""
    return "; ".join(f"{name}: [{', '.join(_range_text(lo, hi) for lo, hi in r)}]"
                     for name, r in ranges.items())


def gears_text(gears) -> str:
    """One line for the bench header from :func:`model_gears`."""
    kind = gears["kind"]
    if kind == "static":
        return "static (no dynamic dimension)"
    if kind == "batch":
        return "dynamic batch " + ", ".join(str(b) for b in gears["batch_sizes"])
    if kind == "hw":
        return "dynamic image size (height x width) " + ", ".join(f"{h}x{w}" for h, w in gears["hw_sizes"])
    if kind == "dims":
        return "dynamic dims " + " | ".join(text({n: tuple(s) for n, s in g.items()})
                                            for g in gears["dims_gears"])
    return "shape ranges " + ranges_text({n: [tuple(r) for r in v] for n, v in gears["shape_ranges"].items()})


# ---- checking a --shapes value ---------------------------------------------------------------


def _check_names_and_fixed(shapes, specs, allow_first=False):
    """Every name is an input, ranks agree, fixed dimensions are the input's (the first one too unless
    ``allow_first``)."""
    by_name = {s.name: s for s in specs}
    for name, shape in shapes.items():
        if name not in by_name:
            raise ShapesError(f"--shapes: the model has no input {name!r}; its inputs: "
                              f"{', '.join(by_name) or 'none'}")
        want = by_name[name].shape
        ok = len(shape) == len(want) and all(w == -1 or g == w or (allow_first and k == 0)
                                             for k, (g, w) in enumerate(zip(shape, want, strict=True)))
        if not ok:
            raise ShapesError(f"--shapes: input {name!r} takes shape {_dims(want)} (-1: dynamic), got "
                              f"{_dims(shape)}")


def resolve(model, shapes) -> dict:
    """The execution a dynamic-shape model runs at for ``--shapes`` (None: the default).

    Returns ``{"gear", "shapes": {input: shape}, "chosen": "given"|"default"}``
    where ``gear`` is what ``Model.execute_async`` takes (None for shape
    ranges).  Image-size and dims-gear models default to their largest gear;
    shape-range models have no default.  ShapesError lists the allowed
    gears, or names the range a dimension falls outside of.
    """
    kind = model.dynamic_kind
    if kind == "range":
        return _resolve_range(model, shapes)
    if kind not in ("hw", "dims"):
        raise ShapesError(f"model {model.path!r} has {kind} shapes: resolve() is for image-size, dims-gear "
                          "and shape-range models")
    candidates = gear_candidates(model)
    allowed = " | ".join(text(s) for _, s in candidates)
    what, label = ("image sizes", "an image-size") if kind == "hw" else ("dims gears", "a dims-gear")
    if shapes is None:
        gear, chosen = max(candidates, key=lambda c: sum(math.prod(s) for s in c[1].values()))
        return {"gear": gear, "shapes": chosen, "chosen": "default"}
    _check_names_and_fixed(shapes, model.inputs)
    matches = [(g, s) for g, s in candidates if all(s[name] == shape for name, shape in shapes.items())]
    if not matches:
        raise ShapesError(f"--shapes {text(shapes)}: not one of the model's {what}; {label} model runs only "
                          f"at its gears: {allowed}")
    if len(matches) > 1:
        raise ShapesError(f"--shapes {text(shapes)}: {len(matches)} gears have these shapes; name every "
                          f"input to choose one: {' | '.join(text(s) for _, s in matches)}")
    gear, full = matches[0]
    return {"gear": gear, "shapes": full, "chosen": "given"}


def _resolve_range(model, shapes):
    ranges = model.shape_ranges
    needed = [s.name for s in model.inputs if -1 in s.shape]
    if shapes is None:
        raise ShapesError(f"model {model.path!r} has shape ranges ({ranges_text(ranges)}): choose the shapes "
                          f"to run with --shapes {SYNTAX}")
    _check_names_and_fixed(shapes, model.inputs)
    missing = [n for n in needed if n not in shapes]
    if missing:
        raise ShapesError(f"--shapes {text(shapes)}: give every input with a dynamic dimension; missing "
                          f"{', '.join(missing)} (ranges {ranges_text(ranges)})")
    for name, shape in shapes.items():
        for k, (n, (lo, hi)) in enumerate(zip(shape, ranges[name], strict=True)):
            if n < lo or (hi != -1 and n > hi):
                raise ShapesError(f"--shapes {text(shapes)}: input {name!r} dimension {k} is {n}, outside "
                                  f"the model's range {_range_text(lo, hi)} ({name}: "
                                  f"[{', '.join(_range_text(a, b) for a, b in ranges[name])}])")
    full = {s.name: tuple(shapes.get(s.name, s.shape)) for s in model.inputs}
    return {"gear": None, "shapes": full, "chosen": "given"}


def batch_of(shapes, specs) -> int:
    """The batch (rows per request) ``--shapes`` gives a static or batch model or a pipeline spec.

    ``specs``: (name, dtype, shape) of the inputs, the first dimension -1 for
    a dynamic batch.  The first dimension of each shape is the batch; the
    others must be the input's; every shape given must carry the same batch.
    """
    class _Spec:
        def __init__(self, name, shape):
            self.name, self.shape = name, tuple(shape)

    _check_names_and_fixed(shapes, [_Spec(n, s) for n, _, s in specs], allow_first=True)
    fixed = {n: s[0] for n, _, s in specs if s and s[0] != -1}
    for name, shape in shapes.items():
        if name in fixed and shape[0] != fixed[name]:
            raise ShapesError(f"--shapes: input {name!r} takes a fixed batch of {fixed[name]}, "
                              f"got {shape[0]}")
    batches = {shape[0] for shape in shapes.values()}
    if len(batches) > 1:
        raise ShapesError(f"--shapes {text(shapes)}: the inputs' first dimensions (the batch) differ; every "
                          "input of a request carries the same rows")
    return batches.pop()
