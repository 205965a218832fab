"""JPEG feeds for the bytes inputs of a pipeline with image nodes (docs/cli.md, "Image steps").

``bench`` and ``trace`` feed a bytes input one JPEG per request: random
pictures encoded with Pillow at the input's ``bench_size`` (spec files), else
at the size of the decode reading it (its ``max_size``, each side capped at
:data:`DEFAULT_CAP`), or the ``--input`` JPEG files.  The other inputs of such
a pipeline get random arrays of one row, as every request carries one image.
"""

from __future__ import annotations

import io
import os

import numpy as np

from ascend_engine.cli_args import UsageError

JPEG_SUFFIXES = (".jpg", ".jpeg")
DEFAULT_CAP = (1920, 1080)     # the default picture when no bench_size is given: at most 1080p


def byte_input_names(plan) -> list:
    """The names of the plan's bytes inputs, in input order."""
    return [plan.inputs[k][0] for k in getattr(plan, "byte_inputs", ())]


def default_size(plan, name) -> tuple:
    """(width, height) of the JPEGs fed to bytes input ``name``: its decode's max_size, capped."""
    tensor = dict(plan.inputs)[name]
    for node in plan.nodes:
        if node.kind == "image" and node.image["op"] == "decode" and node.inputs[0] == tensor:
            w, h = node.image["size"]
            return min(w, DEFAULT_CAP[0]), min(h, DEFAULT_CAP[1])
    return DEFAULT_CAP


def encode(rgb, quality=90) -> bytes:
    """An (h, w, 3) uint8 picture as a baseline 4:2:0 JPEG (Pillow)."""
    try:
        from PIL import Image
    except ImportError:
        raise UsageError("random JPEG feeds for a bytes input are encoded with Pillow, which is not "
                         "installed: pip install Pillow, or give JPEG files with --input") from None
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, "JPEG", quality=quality, subsampling=2)
    return out.getvalue()


def random_jpeg(rng, w, h) -> bytes:
    """A JPEG of w x h: smooth colour ramps with noise, so it compresses like a photograph."""
    y, x = np.mgrid[0:h, 0:w]
    phase = rng.uniform(0, 255, 3)
    ramps = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 2], axis=-1) + phase
    noise = rng.integers(-10, 11, (h, w, 3))
    return encode(((ramps + noise) % 256).astype(np.uint8))


def feeds(plan, sizes, count, seed=0) -> list:
    """``count`` feeds dicts: a random JPEG for each bytes input (at ``sizes[name]``, else
    :func:`default_size`) and one random row for every other input."""
    from ascend_engine._feeds import random_feeds

    names = byte_input_names(plan)
    others = [(name, plan.tensors[t].dtype, plan.tensors[t].shape[1:]) for name, t in plan.inputs
              if name not in names]
    arrays = random_feeds(others, 1, count, seed) if others else [{} for _ in range(count)]
    rng = np.random.default_rng(seed)
    pool = []
    for k in range(count):
        f = dict(arrays[k])
        for name in names:
            w, h = sizes.get(name) or default_size(plan, name)
            f[name] = random_jpeg(rng, w, h)
        pool.append({name: f[name] for name, _ in plan.inputs})
    return pool


def files_of(entry, name) -> list:
    """The JPEG files an ``--input`` entry names for bytes input ``name`` (a file, or a folder's
    .jpg/.jpeg files in name order)."""
    from ascend_engine.bench.data import files_of as input_files

    return input_files(entry, name, JPEG_SUFFIXES, "bytes input")


def read(path, name, max_bytes) -> bytes:
    """One JPEG file's bytes, refused (naming it) when empty or above the input's ``max_bytes``."""
    from ascend_engine.bench.data import DataError

    size = os.path.getsize(path)
    if not 1 <= size <= max_bytes:
        raise DataError(f"{path}: {size} bytes; bytes input {name!r} takes 1 to {max_bytes}")
    with open(path, "rb") as f:
        return f.read()
