"""Real inputs, dumped outputs and reference checks for ``bench``.

Inputs follow the ais_bench convention: one entry per pipeline input, in the
pipeline's input order, separated by commas; an entry is a file (one request)
or a folder whose ``.npy``/``.bin`` files, in name order, are that input's
data for one request each.  A ``.npy`` file must hold the input's dtype and
shape ``(rows, *trailing)`` (or just ``trailing`` for one row); a ``.bin`` file
is raw data of the input's dtype, a whole number of rows.  An input whose
sizes change per request (-1 after the first dimension, a pipeline with
dynamic shapes) takes ``.npy`` files only: a raw file carries no shape.

Outputs are written, and references looked up, as ``<stem>_<output>.npy``
(or ``.bin``), where ``<stem>`` is the name of the request's first input file
without its suffix.
"""

from __future__ import annotations

import math
import os

import numpy as np

SUFFIXES = (".npy", ".bin")


class DataError(ValueError):
    """An input, output or reference file that does not fit the pipeline (a usage error)."""


class CheckError(RuntimeError):
    """An output differs from its reference file, or the reference is missing."""


def _specs(plan, which):
    return [(name, np.dtype(plan.tensors[t].dtype), tuple(plan.tensors[t].shape[1:]))
            for name, t in getattr(plan, which)]


def _shape_text(trailing):
    return "(rows, " + ", ".join(str(d) for d in trailing) + ")" if trailing else "(rows,)"


def _fits(shape, trailing) -> bool:
    """``shape`` is (rows, *trailing), with any positive size where ``trailing`` has -1."""
    return (len(shape) == len(trailing) + 1 and shape[0] >= 1
            and all(d >= 1 if w == -1 else d == w for d, w in zip(shape[1:], trailing, strict=True)))


def files_of(entry, name, suffixes=SUFFIXES, what="input"):
    """The files an ``--input`` entry names for input ``name``: the file, or a folder's files
    ending in ``suffixes``, in name order; ``what`` says which kind of input in messages."""
    kinds = " or ".join(suffixes)
    if os.path.isdir(entry):
        files = sorted(os.path.join(entry, f) for f in os.listdir(entry) if f.lower().endswith(suffixes))
        if not files:
            raise DataError(f"--input folder {entry} ({what} {name!r}) holds no {kinds} files")
        return files
    if not os.path.isfile(entry):
        raise DataError(f"--input: no file or folder {entry} (input {name!r})")
    if not entry.lower().endswith(suffixes):
        raise DataError(f"--input file {entry} ({what} {name!r}): expected a {kinds} file")
    return [entry]


def _load_npy(path, error):
    """A ``.npy`` file's array, or ``error`` naming the file.

    The file is mapped first, so a header claiming more data than the file
    holds (or a size no memory holds) is refused before anything is
    allocated; an empty or truncated file is refused too.
    """
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or os.path.getsize(path) == 0:
            detail = "the file is empty or cut short"
        elif "mmap length" in detail:
            detail = _claimed_size(path) or detail
        raise error(f"{path}: not a readable .npy file: {detail}") from None
    return np.array(a) if isinstance(a, np.memmap) else a


def _claimed_size(path):
    """What a .npy header claims, against the bytes the file holds (None if the header is unreadable)."""
    try:
        with open(path, "rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if major == 1
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(f)
            start = f.tell()
    except Exception:
        return None
    claimed = math.prod(shape) * dtype.itemsize
    held = os.path.getsize(path) - start
    return f"its header claims {dtype} {tuple(shape)} ({claimed} bytes), the file holds {held} bytes of data"


def read_array(path, dtype, trailing, what) -> np.ndarray:
    """Read a ``.npy`` or ``.bin`` file as ``(rows, *trailing)`` of ``dtype``.

    A DataError names the file, what the input expects and what the file holds.
    """
    if path.lower().endswith(".npy"):
        a = _load_npy(path, DataError)
        if a.dtype != dtype:
            raise DataError(f"{path}: {what} expects dtype {dtype}, the file holds {a.dtype}")
        if a.ndim == len(trailing) and _fits((1, *a.shape), trailing):
            a = a.reshape((1, *a.shape))
        if not _fits(a.shape, trailing):
            dynamic = " (-1: any size)" if -1 in trailing else ""
            raise DataError(f"{path}: {what} expects shape {_shape_text(trailing)}{dynamic}, the file holds "
                            f"{tuple(a.shape)}")
        return a
    if -1 in trailing:
        raise DataError(f"{path}: {what} has sizes that change per request {_shape_text(trailing)}, and a "
                        ".bin file carries no shape: give .npy files")
    row_items = math.prod(trailing)
    size = os.path.getsize(path)
    row_bytes = row_items * dtype.itemsize
    if size == 0 or row_bytes == 0 or size % row_bytes:
        raise DataError(f"{path}: {size} bytes is not a whole number of rows of {what} "
                        f"({row_bytes} bytes each: {dtype} x {_shape_text(trailing)})")
    return np.fromfile(path, dtype=dtype).reshape((size // row_bytes,) + trailing)


def load_inputs(argument, plan) -> list:
    """The requests named by ``--input``: ``[(stem, feeds dict)]``, all with the same number of rows."""
    specs = _specs(plan, "inputs")
    entries = [e for e in argument.split(",") if e]
    names = ", ".join(n for n, _, _ in specs)
    if len(entries) != len(specs):
        raise DataError(f"--input: expected one file or folder per pipeline input ({names}), in that order, "
                        f"separated by commas; got {len(entries)}")
    from ascend_engine.bench import jpegs

    byte_names = set(jpegs.byte_input_names(plan))   # one JPEG file per request
    files = [jpegs.files_of(entry, name) if name in byte_names else files_of(entry, name)
             for entry, (name, _, _) in zip(entries, specs, strict=True)]
    counts = {len(f) for f in files}
    if len(counts) > 1:
        detail = ", ".join(f"{name}: {len(f)}" for (name, _, _), f in zip(specs, files, strict=True))
        raise DataError(f"--input: every input needs the same number of files (one per request); "
                        f"got {detail}")
    requests, rows = [], None
    for k in range(len(files[0])):
        feeds = {}
        for (name, dtype, trailing), f in zip(specs, files, strict=True):
            if name in byte_names:
                feeds[name] = jpegs.read(f[k], name, trailing[0])
                continue
            a = read_array(f[k], dtype, trailing, f"input {name!r}")
            if rows is None:
                rows, first = a.shape[0], f[k]
            elif a.shape[0] != rows:
                raise DataError(f"{f[k]}: {a.shape[0]} rows, but {first} has {rows}; every request of a "
                                "bench run carries the same number of rows")
            feeds[name] = a
        stem = os.path.splitext(os.path.basename(files[0][k]))[0]
        requests.append((stem, feeds))
    return requests


def write_outputs(folder, stem, outputs, fmt="npy") -> list:
    """Write each output as ``folder/<stem>_<name>.<fmt>`` (npy or raw bin); returns the paths."""
    paths = []
    for name, a in outputs.items():
        path = os.path.join(folder, f"{stem}_{name}.{fmt}")
        if fmt == "npy":
            np.save(path, a)
        else:
            np.ascontiguousarray(a).tofile(path)
        paths.append(path)
    return paths


def _reference(folder, stem, name, index, like, request):
    """The reference of output ``name`` (at position ``index``): ``<stem>_<name>`` as --output writes
    it, else ``<stem>_<index>`` as ais_bench names its outputs; .npy or .bin."""
    for suffix in SUFFIXES:
        path = next((p for p in (os.path.join(folder, f"{stem}_{key}{suffix}") for key in (name, index))
                     if os.path.isfile(p)), None)
        if path is not None:
            break
    else:
        raise CheckError(f"request {request} ({stem}): no reference for output {name!r}: expected "
                         f"{os.path.join(folder, f'{stem}_{name}.npy')} or .bin (or {stem}_{index}.npy/.bin, "
                         "as ais_bench names its outputs)")
    if suffix == ".npy":
        ref = _load_npy(path, CheckError)
    else:
        ref = np.fromfile(path, dtype=like.dtype)
        if ref.size == like.size:
            ref = ref.reshape(like.shape)
    if ref.shape != like.shape:
        raise CheckError(f"output {name!r} of request {request} ({stem}) has shape {tuple(like.shape)}, "
                         f"the reference {path} {tuple(ref.shape)}")
    return path, ref


def _num(v) -> str:
    return f"{v:.7g}" if isinstance(v, float) else str(v)


def check_outputs(folder, stem, outputs, request, atol, rtol) -> int:
    """Compare each output with its reference (|got - expected| <= atol + rtol x |expected|).

    Returns the number of values checked; raises CheckError naming the first
    value that differs (its output, request, index, both values, the bound)
    and how many values differ in that output.
    """
    checked = 0
    for index, (name, got) in enumerate(outputs.items()):
        path, ref = _reference(folder, stem, name, index, got, request)
        ok = np.isclose(got, ref, atol=atol, rtol=rtol, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)
            at = tuple(int(i) for i in bad[0])
            g, e = got[at].item(), ref[at].item()
            diff = abs(float(g) - float(e))
            bound = atol + rtol * abs(float(e))
            raise CheckError(f"output {name!r} of request {request} ({stem}) differs from {path} at "
                             f"{list(at)}: got {_num(g)}, expected {_num(e)}; |difference| {diff:.6g} > "
                             f"atol {atol:g} + rtol {rtol:g} x |expected| = {bound:.6g}; "
                             f"{len(bad)} of {ok.size} values differ")
        checked += ok.size
    return checked
