"""Input feeds: the one check of a feeds dict against the inputs it is for,
shared by Model (``model(x=...)``) and Engine (``run``, ``submit``,
``run_batch``...), and the one way shapes are written in messages.

Pure Python, importable without the native build.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def shape_text(shape, dynamic: str = "batch") -> str:
    """A shape as messages write it: ``(batch, 16)``.

    -1 is a dynamic dimension.  With ``dynamic="batch"`` it is written
    ``batch`` (row-based tensors: only the first dimension is dynamic); with
    ``dynamic="-1"`` it is left as -1 (image-size, dims-gear and shape-range
    models, where any dimension may be dynamic).
    """
    dims = [dynamic if d == -1 else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def check_names(feeds, names, owner: str) -> None:
    """``feeds`` is a mapping holding exactly the inputs ``names`` (TypeError or ValueError naming
    what is missing and what is not an input)."""
    if not isinstance(feeds, Mapping):
        raise TypeError(f"feeds must be a dict of input name -> array, got {type(feeds).__name__}")
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in names]
    if missing or extra:
        raise ValueError(f"{owner} inputs are {names}: missing {missing}, unexpected {extra}")


def check_feeds(feeds, specs, owner: str, batched: bool = True):
    """Check ``feeds`` (input name -> array) against ``specs`` before anything runs.

    ``specs``: ``(name, dtype, shape)`` per input, in input order; -1 in a
    shape is a dynamic dimension.  ``owner`` names who takes the inputs in
    messages (``"model 'm.om'"``, ``"pipeline"``).

    With ``batched`` (row-based inputs: the first dimension is the batch) the
    trailing dimensions must match exactly, a fixed first dimension is a
    static batch, and every input must carry the same number of rows; returns
    ``(arrays, rows)``.  Otherwise each fixed dimension must match and the
    dynamic ones may be anything but 0; returns ``(arrays, None)``.

    Names must match exactly and dtypes too (no silent casts).  The arrays
    come back in input order, C-contiguous (copied only when they were not).
    """
    check_names(feeds, [name for name, _, _ in specs], owner)
    arrays, rows = [], None
    for name, dtype, shape in specs:
        a = feeds[name]
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
        if a.dtype != dtype:
            raise ValueError(f"input {name!r}: expected dtype {dtype}, got {a.dtype} "
                             f"(convert with .astype(np.{dtype}))")
        if batched:
            if a.ndim != len(shape) or tuple(a.shape[1:]) != tuple(shape[1:]):
                raise ValueError(f"input {name!r}: expected shape {shape_text(shape)}, got {tuple(a.shape)}")
            if shape[0] != -1 and a.shape[0] != shape[0]:
                raise ValueError(f"input {name!r}: the {owner} is static with batch {shape[0]}, "
                                 f"got {a.shape[0]}")
            if rows is None:
                rows = a.shape[0]
            elif a.shape[0] != rows:
                raise ValueError(f"input {name!r}: batch {a.shape[0]} differs from the other inputs' {rows}")
        elif a.ndim != len(shape) or 0 in a.shape or any(
                d not in (-1, n) for d, n in zip(shape, a.shape, strict=True)):
            raise ValueError(f"input {name!r}: expected shape {shape_text(shape, '-1')} (-1: dynamic), "
                             f"got {tuple(a.shape)}")
        arrays.append(np.ascontiguousarray(a))
    if batched and not rows:
        raise ValueError("the inputs have no rows")
    return arrays, rows


def random_feeds(specs, rows: int, count: int = 1, seed: int = 0) -> list:
    """``count`` feeds dicts of random data, ``rows`` rows each.

    ``specs``: ``(name, dtype, trailing shape)`` per input.  Floats are
    standard normal; booleans 0/1; integers small and non-negative (0..100),
    which every integer dtype holds and ids or tokens accept.  The same seed
    gives the same data.
    """
    rng = np.random.default_rng(seed)
    pool = []
    for _ in range(count):
        feeds = {}
        for name, dtype, trailing in specs:
            shape = (rows,) + tuple(trailing)
            dt = np.dtype(dtype)
            if dt.kind == "f":
                feeds[name] = rng.standard_normal(shape).astype(dt)
            elif dt.kind == "b":
                feeds[name] = rng.integers(0, 2, shape).astype(dt)
            else:
                feeds[name] = rng.integers(0, min(100, np.iinfo(dt).max) + 1, shape).astype(dt)
        pool.append(feeds)
    return pool
