"""The version-3 simulator model file: an ONNX graph with its AscendCL description.

:func:`to_bytes` lays out what ``sim atc`` converted (``docs/sim-model-format.md``,
"Version 3: ONNX models"): the inputs with their formats and symbolic
dimensions, the outputs with their shape at every gear, the gear table, one
device time per gear, the conversion command, and the ONNX graph itself as the
data section.  :func:`describe` reads such a file back for ``--mode=1``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from .. import aipp as aipp_settings
from ..graph_common import _DTYPES, _FORMATS, MAX_NAME, MAX_RANK

MAGIC = b"AESIMMDL"
VERSION = 3
VERSION_AIPP = 4  # version 3 plus the AIPP table (docs/sim-model-format.md, "Version 4: AIPP")
HEADER_SIZE = 192
HEADER_SIZE_AIPP = 208
TENSOR_RECORD = 104
IO_RECORD = 16
DATA_ALIGN = 64
KIND_INPUT, KIND_GRAPH = 0, 3
EXEC_ONNX = 1
# dynamic mechanisms (docs/sim-model-format.md, "Symbolic dimensions and the dynamic section")
DYN_KINDS = {"static": 0, "batch": 1, "hw": 2, "dims": 3, "range": 4}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_FORMAT_NAMES = {v: k for k, v in _FORMATS.items()}
_KIND_NAMES = {v: k for k, v in DYN_KINDS.items()}


@dataclass
class IoSpec:
    """One model input or output as AscendCL describes it.

    ``dims``: an input's dims use ``-1 - s`` for symbol ``s``; an output's use
    -1 where the dimension changes with the gear.  ``gear_dims``: an output's
    shape at each gear (gear models only).
    """

    name: str
    dtype: str
    format: str
    dims: tuple
    gear_dims: list = field(default_factory=list)


@dataclass
class ConvertedModel:
    """Everything a version-3 file holds."""

    name: str
    onnx: bytes
    inputs: list
    outputs: list
    kind: str = "static"  # static, batch, hw, dims or range
    gears: list = field(default_factory=list)  # rows of symbol values
    n_syms: int = 0
    sym_ranges: list = field(default_factory=list)  # range models: (lo, hi) per symbol, hi -1 unbounded
    gear_latency_us: list = field(default_factory=list)
    latency_us: float = 0.0
    latency_per_item_us: float = 0.0
    command: str = ""
    aipp: dict = field(default_factory=dict)  # input index -> resolved static AIPP settings (sim/aipp.py)
    work_bytes: int = 0  # the work memory aclmdlQuerySize reports (cost.work_bytes)


def _check_name(what, name):
    raw = name.encode()
    if not 1 <= len(raw) <= MAX_NAME or any(c < 0x20 or c == 0x7F for c in raw):
        raise ValueError(
            f"{what} name {name!r} must be 1..{MAX_NAME} bytes of text without control characters"
        )


def to_bytes(m: ConvertedModel) -> bytes:
    """The file's bytes."""
    _check_name("model", m.name)
    for io in m.inputs + m.outputs:
        _check_name("input/output", io.name)
        if len(io.dims) > MAX_RANK:
            raise ValueError(f"{io.name!r} has rank {len(io.dims)}; the simulator supports up to {MAX_RANK}")
    strings = bytearray()

    def string(s):
        b = s.encode()
        off = len(strings)
        strings.extend(b)
        return off, len(b)

    name_ref = string(m.name)
    cmd_ref = string(m.command)
    tensors = [(io, KIND_INPUT) for io in m.inputs] + [(io, KIND_GRAPH) for io in m.outputs]
    t_names = [string(io.name) for io, _ in tensors]
    n_gears = len(m.gears)
    n_out_dims = sum(len(io.dims) for io in m.outputs)
    header_size = HEADER_SIZE_AIPP if m.aipp else HEADER_SIZE
    tensor_off = header_size
    io_off = tensor_off + len(tensors) * TENSOR_RECORD
    gear_off = io_off + len(tensors) * IO_RECORD
    shape_off = gear_off + 8 * m.n_syms * n_gears
    latency_off = shape_off + 8 * n_out_dims * n_gears
    range_off = latency_off + (8 * n_gears if m.gear_latency_us else 0)
    aipp_off = range_off + 16 * len(m.sym_ranges)
    str_off = aipp_off + aipp_settings.RECORD_SIZE * len(m.aipp)
    data_off = (str_off + len(strings) + DATA_ALIGN - 1) // DATA_ALIGN * DATA_ALIGN
    file_size = data_off + len(m.onnx)

    out = bytearray()
    out += struct.pack(
        "<8sIIQIIIIIIII QQQQQQQQ dd",
        MAGIC,
        VERSION_AIPP if m.aipp else VERSION,
        header_size,
        file_size,
        len(tensors),
        0,
        len(m.inputs),
        len(m.outputs),
        n_gears,
        name_ref[0],
        name_ref[1],
        0,
        tensor_off,
        0,
        io_off,
        gear_off,
        str_off,
        len(strings),
        data_off,
        len(m.onnx),
        float(m.latency_us),
        float(m.latency_per_item_us),
    )
    out += struct.pack("<IIQQ", DYN_KINDS[m.kind], m.n_syms, range_off if m.sym_ranges else 0, m.work_bytes)
    out += struct.pack(
        "<IIQQII",
        EXEC_ONNX,
        0,
        shape_off if n_gears else 0,
        latency_off if n_gears and m.gear_latency_us else 0,
        cmd_ref[0],
        cmd_ref[1],
    )
    if m.aipp:
        out += struct.pack("<QII", aipp_off, len(m.aipp), 0)
    assert len(out) == header_size
    for (io, kind), (noff, nlen) in zip(tensors, t_names, strict=True):
        dims = list(io.dims) + [0] * (MAX_RANK - len(io.dims))
        out += struct.pack(
            "<IIiiII8qQQ", noff, nlen, _DTYPES[io.dtype], _FORMATS[io.format], kind, len(io.dims), *dims, 0, 0
        )
    for i, ((io, _), (noff, nlen)) in enumerate(zip(tensors, t_names, strict=True)):
        out += struct.pack("<IIIi", i, noff, nlen, _FORMATS[io.format])
    for row in m.gears:
        out += struct.pack(f"<{len(row)}Q", *row)
    if n_gears:
        for io in m.outputs:
            for row in io.gear_dims:
                out += struct.pack(f"<{len(row)}q", *row)
        for us in m.gear_latency_us:
            out += struct.pack("<d", float(us))
    for lo, hi in m.sym_ranges:
        out += struct.pack("<qq", lo, hi)
    for index in sorted(m.aipp):
        out += aipp_settings.record(index, m.aipp[index])
    out += strings
    out += b"\0" * (data_off - len(out))
    out += m.onnx
    assert len(out) == file_size
    return bytes(out)


def save(m: ConvertedModel, path: str) -> str:
    """Write the file (atomically: a reader never sees half of it)."""
    blob = to_bytes(m)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except OSError as exc:
        # the error names the file asked for, never the temporary one, which goes
        if os.path.exists(tmp):
            os.remove(tmp)
        raise OSError(exc.errno, exc.strerror, path) from None
    return path


def describe(blob: bytes) -> dict:
    """What ``--mode=1`` prints of a version-3 file: inputs, outputs, gears, times, the command.

    Raises ValueError naming what is wrong when ``blob`` is not such a file.
    """
    if len(blob) < HEADER_SIZE or blob[:8] != MAGIC:
        raise ValueError("not a model converted by sim atc (no simulator model magic)")
    version, header_size, file_size = struct.unpack_from("<IIQ", blob, 8)
    want_header = {VERSION: HEADER_SIZE, VERSION_AIPP: HEADER_SIZE_AIPP}.get(version)
    if header_size != want_header or file_size != len(blob) or len(blob) < header_size:
        raise ValueError(
            f"not a version-3 or -4 simulator model of {len(blob)} bytes (version {version}, "
            f"header {header_size}, size field {file_size}): only sim atc output can be dumped"
        )
    n_t, _n_ops, n_in, n_out, n_gears, name_off, name_len = struct.unpack_from("<IIIIIII", blob, 24)
    tensor_off, _op, io_off, gear_off, str_off, _str_size, _data_off, data_size = struct.unpack_from(
        "<8Q", blob, 56
    )
    latency_us, per_item_us = struct.unpack_from("<dd", blob, 120)
    kind, n_syms, range_off = struct.unpack_from("<IIQ", blob, 136)
    shape_off, latency_off, cmd_off, cmd_len = struct.unpack_from("<QQII", blob, 168)

    def text(off, n):
        return blob[str_off + off : str_off + off + n].decode()

    ios = []
    for i in range(n_in + n_out):
        t, noff, nlen, fmt = struct.unpack_from("<IIIi", blob, io_off + i * IO_RECORD)
        rec = tensor_off + t * TENSOR_RECORD
        dtype, _f, _k, rank = struct.unpack_from("<iiII", blob, rec + 8)
        dims = struct.unpack_from(f"<{rank}q", blob, rec + 24)
        ios.append(
            {
                "name": text(noff, nlen),
                "dtype": _DTYPE_NAMES[dtype],
                "format": _FORMAT_NAMES[fmt],
                "dims": [-1 if d < 0 else d for d in dims],
            }
        )
    gears = [list(struct.unpack_from(f"<{n_syms}Q", blob, gear_off + g * 8 * n_syms)) for g in range(n_gears)]
    at = shape_off
    for o in ios[n_in:]:
        rank = len(o["dims"])
        if n_gears:
            o["gear_dims"] = [
                list(struct.unpack_from(f"<{rank}q", blob, at + 8 * rank * g)) for g in range(n_gears)
            ]
            at += 8 * rank * n_gears
    times = (
        [struct.unpack_from("<d", blob, latency_off + 8 * g)[0] for g in range(n_gears)]
        if latency_off
        else []
    )
    ranges = []
    if _KIND_NAMES.get(kind) == "range":
        ranges = [list(struct.unpack_from("<qq", blob, range_off + 16 * s)) for s in range(n_syms)]
        for io in ios[:n_in]:  # an input's range dims as ATC writes them: lo~hi (hi -1: unbounded)
            rec_dims = _input_symbols(blob, tensor_off, io_off, ios.index(io))
            io["ranges"] = [None if d >= 0 else ranges[-1 - d] for d in rec_dims]
    if version == VERSION_AIPP:
        aipp_off, n_aipp = struct.unpack_from("<QI", blob, 192)
        formats = {v: k for k, v in aipp_settings.INPUT_FORMATS.items()}
        for k in range(n_aipp):
            at = aipp_off + k * aipp_settings.RECORD_SIZE
            index, mode, fmt, w, h = struct.unpack_from("<IIiIi", blob, at)
            ios[index]["aipp"] = (
                {"aipp_mode": "dynamic", "max_src_image_size": w}
                if mode == 2
                else {"input_format": formats.get(fmt, str(fmt)), "src_image_size_w": w,
                      "src_image_size_h": h}
            )
    return {
        "name": text(name_off, name_len),
        "dynamic": _KIND_NAMES.get(kind, str(kind)),
        "inputs": ios[:n_in],
        "outputs": ios[n_in:],
        "gears": gears,
        "device_time_us": times or [latency_us],
        **({"shape_ranges": ranges, "device_time_per_item_us": per_item_us} if ranges else {}),
        "onnx_bytes": data_size,
        "command": text(cmd_off, cmd_len),
        "n_tensors": n_t,
    }


def _input_symbols(blob, tensor_off, io_off, i):
    """The raw dims of input ``i``'s tensor record (-1 - s for symbol s)."""
    t = struct.unpack_from("<I", blob, io_off + i * IO_RECORD)[0]
    rec = tensor_off + t * TENSOR_RECORD
    rank = struct.unpack_from("<I", blob, rec + 20)[0]
    return struct.unpack_from(f"<{rank}q", blob, rec + 24)
