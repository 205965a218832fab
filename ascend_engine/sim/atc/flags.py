"""ATC's command line: its flags, their spelling and ATC's rules between them.

:func:`parse` turns ``atc`` arguments (``--name=value`` or ``--name value``)
into an :class:`AtcOptions`, checking every rule ATC checks before it reads
the model: the framework, one dynamic mechanism at most, the batch in the
first dimension, 2..100 profiles, ``--dynamic_dims`` with ND, every ``-1``
covered by the mechanism, shape ranges (``lo~hi`` and an unprofiled ``-1``
in ``--input_shape``, or ``--input_shape_range``) with low <= high and no
gear flag.  A violation raises :class:`AtcError` with an
ATC-style message (``E10001: Value [...] for parameter [--...] is invalid.
Reason: ...``).  Unknown flags are refused, never ignored.  The rules and
their sources: docs/simulator.md, "sim atc".
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ascend_engine.errors import AtcError

__all__ = ["AtcOptions", "parse", "FLAGS"]

MIN_PROFILES, MAX_PROFILES = 2, 100
MAX_GEAR_VALUE = 1 << 20
INT64_MAX = (1 << 63) - 1   # a dimension, and an input's element count, as ATC stores them
FRAMEWORKS = {"0": "Caffe", "1": "MindSpore", "3": "TensorFlow", "5": "ONNX"}
LOG_LEVELS = ("debug", "info", "warning", "error", "null")
OUTPUT_TYPES = {"FP32": "float32", "FP16": "float16", "UINT8": "uint8"}
INPUT_FORMATS = ("NCHW", "NHWC", "ND")
PRECISION_MODES = (
    "force_fp16",
    "allow_fp32_to_fp16",
    "must_keep_origin_dtype",
    "allow_mix_precision",
    "force_fp32",
    "cube_fp16in_fp32out",
)
DYNAMIC_FLAGS = ("dynamic_batch_size", "dynamic_image_size", "dynamic_dims", "input_shape_range")

# every flag this stand-in takes, with a one-line help
FLAGS = {
    "model": "the ONNX model file",
    "framework": "5 (ONNX); the only framework the simulator converts",
    "output": "where to write the model: <output>.om",
    "soc_version": "the Ascend SoC the model is built for (sets the device-time model)",
    "input_format": "NCHW (default), NHWC or ND",
    "input_shape": "name:d,d,...;name2:... (-1: a dynamic dimension; lo~hi: a shape range)",
    "dynamic_batch_size": "batch profiles, e.g. 1,2,4,8 (the -1 in the first dimension)",
    "dynamic_image_size": "image size profiles, e.g. 224,224;448,448 (H,W of NCHW / NHWC inputs)",
    "dynamic_dims": "dims profiles, e.g. 1,16;1,32 (one value per -1, input_format ND)",
    "input_shape_range": "deprecated form of shape ranges: name:[lo~hi,d,-1];name2:[...]",
    "output_type": "FP32, FP16 or UINT8 for every output, or node:index:type;...",
    "out_nodes": "the outputs to keep: node:index;node2:index",
    "insert_op_conf": "static AIPP configuration file (aipp_op blocks; dynamic AIPP is refused)",
    "precision_mode": "accepted; the simulator computes in the ONNX graph's dtypes (see docs/simulator.md)",
    "log": "debug, info, warning, error or null",
    "mode": "0: convert (default); 1: dump a converted model's description as JSON",
    "om": "--mode=1: the model to describe",
    "json": "--mode=1: where to write the JSON",
    "sim_latency_us": "device time per execution in microseconds, one value or one per profile "
    "(default: estimated from the graph and --soc_version)",
    "help": "this help",
}


def invalid(flag, value, reason):
    """An AtcError in ATC's words for an invalid value."""
    return AtcError(f"E10001: Value [{value}] for parameter [--{flag}] is invalid. Reason: {reason}")


def read_file(flag, path, limit, what="the file"):
    """The bytes of the regular file ``path`` a flag names, at most ``limit`` of them: a
    device, a FIFO or a larger file is refused (E10001 naming the flag), never read whole.
    Opened without blocking, so a FIFO with no writer is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise invalid(flag, path, f"cannot read {what}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise invalid(flag, path, f"not a regular file: {what} must be a file on disk, not a device "
                                      "or a pipe")
        if info.st_size > limit:
            raise invalid(flag, path, f"the file is {info.st_size} bytes; at most {limit} are read")
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise invalid(flag, path, f"cannot read {what}: {exc.strerror}") from None
    if len(data) > limit:      # it grew while being read
        raise invalid(flag, path, f"the file is more than {limit} bytes; at most {limit} are read")
    return data


@dataclass
class AtcOptions:
    """The parsed command line (values as given, lists parsed)."""

    raw: dict = field(default_factory=dict)  # flag -> text, as given
    mode: int = 0
    model: str | None = None
    output: str | None = None
    soc_version: str | None = None
    input_format: str = "NCHW"
    input_shape: dict = field(default_factory=dict)  # name -> [dims], -1 dynamic
    dynamic: str = "static"  # static, batch, hw, dims or range
    profiles: list = field(default_factory=list)  # rows of ints
    ranges: dict = field(default_factory=dict)  # range models: (name, dim) -> (lo, hi); hi -1: unbounded
    output_type: object = None  # None, a dtype, or {(node, index): dtype}
    out_nodes: list = field(default_factory=list)  # [(node, index)]
    insert_op_conf: str | None = None  # the AIPP configuration file
    log: str = "error"
    latency_us: list = field(default_factory=list)
    om: str | None = None
    json: str | None = None
    help: bool = False


def _split_args(argv):
    """[(flag, value)] from --flag=value / --flag value; refuses anything else."""
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            out.append(("help", ""))
            i += 1
            continue
        if not arg.startswith("--") or arg == "--":
            raise AtcError(f"E10001: unexpected argument [{arg}]: ATC takes --name=value options only")
        name, eq, value = arg[2:].partition("=")
        if name not in FLAGS:
            raise AtcError(
                f"E10001: unknown option [--{name}]: this ATC stand-in takes "
                + ", ".join(f"--{f}" for f in FLAGS)
            )
        if not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                raise invalid(name, "", "the option needs a value (--name=value)")
            value = argv[i + 1]
            i += 1
        if any(f == name for f, _ in out):
            raise invalid(name, value, f"--{name} is given twice")
        out.append((name, value))
        i += 1
    return out


def _int(flag, text, lo=None):
    try:
        v = int(text.strip())
    except ValueError:
        raise invalid(flag, text, f"{text.strip()!r} is not an integer") from None
    if lo is not None and v < lo:
        raise invalid(flag, text, f"{v} is below {lo}")
    return v


def _range(flag, text, name, k, dim):
    """(lo, hi) of one ``lo~hi`` dimension; hi -1 means unbounded."""
    lo_t, _, hi_t = dim.partition("~")
    lo, hi = _int(flag, lo_t), _int(flag, hi_t)
    where = f"input {name!r} dimension {k} ({dim.strip()})"
    if lo < 1:
        raise invalid(flag, text, f"{where}: the low end is {lo}; expected >= 1")
    if hi != -1 and hi < lo:
        raise invalid(flag, text, f"{where}: the low end {lo} is above the high end {hi}")
    if max(lo, hi) > MAX_GEAR_VALUE:
        raise invalid(flag, text, f"{where}: a range end above {MAX_GEAR_VALUE}")
    return lo, hi


def _input_shape(text, flag="input_shape"):
    """name -> dims (-1 for every dynamic dimension) and (name, dim) -> (lo, hi) of the lo~hi ones."""
    shapes, ranges = {}, {}
    for part in text.strip().strip('"').split(";"):
        if not part.strip():
            continue
        name, colon, dims = part.rpartition(":")
        if not colon or not name:
            example = "x:[1~8,3,224,224]" if flag == "input_shape_range" else "x:1,3,224,224"
            raise invalid(flag, text, f'{part!r} is not name:d,d,... (for example "{example}")')
        if flag == "input_shape_range":
            body = dims.strip()
            if not (body.startswith("[") and body.endswith("]")):
                raise invalid(
                    flag, text, f"input {name!r}: the shape must be in brackets, [d,d,...], got {body!r}"
                )
            dims = body[1:-1]
        vals = []
        for k, d in enumerate([] if not dims.strip() else dims.split(",")):
            if "~" in d:
                ranges[(name, k)] = _range(flag, text, name, k, d)
                vals.append(-1)
                continue
            v = _int(flag, d)
            if v == 0 or v < -1:
                raise invalid(flag, text, f"input {name!r}: dimension {v}; expected >= 1, -1 or lo~hi")
            if v > INT64_MAX:
                raise invalid(flag, text, f"input {name!r}: dimension {v} is above {INT64_MAX} (int64)")
            vals.append(v)
        elements = 1
        for v in vals:
            elements *= max(v, 1)
        if elements > INT64_MAX:
            raise invalid(flag, text, f"input {name!r} has more than {INT64_MAX} elements (int64)")
        if name in shapes:
            raise invalid(flag, text, f"input {name!r} is given twice")
        shapes[name] = vals
    if not shapes:
        raise invalid(flag, text, "no input shape given")
    return shapes, ranges


def _set_ranges(o, explicit):
    """A shape-range model: every -1 of the shapes is a range (1~-1 unless lo~hi says otherwise)."""
    o.dynamic = "range"
    o.ranges = {
        (n, k): explicit.get((n, k), (1, -1))
        for n, dims in o.input_shape.items()
        for k, d in enumerate(dims)
        if d == -1
    }


def _profiles(flag, text, width):
    """Rows of ints from "a,b;c,d" (width values per row, or None: one row of any length)."""
    rows = []
    body = text.strip().strip('"')
    parts = body.split(",") if flag == "dynamic_batch_size" else body.split(";")
    for part in parts:
        if flag == "dynamic_batch_size":
            rows.append([_int(flag, part, 1)])
        else:
            rows.append([_int(flag, v, 1) for v in part.split(",")])
    if not MIN_PROFILES <= len(rows) <= MAX_PROFILES:
        raise invalid(flag, text, f"{len(rows)} profile(s); ATC takes {MIN_PROFILES} to {MAX_PROFILES}")
    for r in rows:
        if width is not None and len(r) != width:
            raise invalid(
                flag,
                text,
                f"profile {','.join(map(str, r))} has {len(r)} value(s), "
                f"--input_shape has {width} -1 dimension(s) to fill",
            )
        if any(v > MAX_GEAR_VALUE for v in r):
            raise invalid(flag, text, f"a profile value above {MAX_GEAR_VALUE}")
    if len({tuple(r) for r in rows}) != len(rows):
        raise invalid(flag, text, "a profile is given twice")
    return rows


def _check_dynamic(o, flag, text):
    """The one dynamic mechanism against --input_shape's -1 dimensions."""
    minus = [(n, k) for n, dims in o.input_shape.items() for k, d in enumerate(dims) if d == -1]
    if not o.input_shape:
        raise invalid(flag, text, f"--{flag} needs --input_shape with -1 for the dynamic dimensions")
    if not minus:
        raise invalid(flag, text, "--input_shape has no -1 dimension for it to set")
    if flag == "dynamic_batch_size":
        bad = [f"{n}[{k}]" for n, k in minus if k != 0]
        if bad:
            raise invalid(
                flag,
                text,
                f"the batch must be the first dimension; -1 at {', '.join(bad)} "
                "(use --dynamic_dims for other dimensions)",
            )
        o.dynamic, o.profiles = "batch", _profiles(flag, text, None)
    elif flag == "dynamic_image_size":
        if o.input_format not in ("NCHW", "NHWC"):
            raise invalid(
                flag, text, f"--dynamic_image_size needs --input_format NCHW or NHWC, got {o.input_format}"
            )
        hw = (2, 3) if o.input_format == "NCHW" else (1, 2)
        for n, dims in o.input_shape.items():
            pos = tuple(k for k, d in enumerate(dims) if d == -1)
            if pos and (len(dims) != 4 or pos != hw):
                raise invalid(
                    flag,
                    text,
                    f"input {n!r}: -1 must be exactly H and W of a 4-dimensional "
                    f"{o.input_format} shape (dimensions {hw[0]} and {hw[1]}), got "
                    f"{','.join(map(str, dims))}",
                )
        o.dynamic, o.profiles = "hw", _profiles(flag, text, 2)
    else:
        if o.input_format != "ND":
            raise invalid(flag, text, f"--dynamic_dims needs --input_format=ND, got {o.input_format}")
        o.dynamic, o.profiles = "dims", _profiles(flag, text, len(minus))


def parse(argv) -> AtcOptions:
    """The options of one ``atc`` command line; raises AtcError on any violation."""
    o = AtcOptions()
    pairs = _split_args(list(argv))
    o.raw = dict(pairs)
    r = o.raw
    if "help" in r:
        o.help = True
        return o
    if "mode" in r:
        if r["mode"] not in ("0", "1"):
            raise invalid("mode", r["mode"], "the simulator supports 0 (convert) and 1 (model to JSON)")
        o.mode = int(r["mode"])
    if "log" in r:
        if r["log"] not in LOG_LEVELS:
            raise invalid("log", r["log"], f"expected one of {', '.join(LOG_LEVELS)}")
        o.log = r["log"]
    if o.mode == 1:
        extra = sorted(set(r) - {"mode", "om", "json", "log", "framework", "soc_version"})
        if extra:
            raise invalid(extra[0], r[extra[0]], "--mode=1 takes --om and --json only")
        for flag in ("om", "json"):
            if not r.get(flag):
                raise invalid(flag, "", f"--mode=1 needs --{flag}")
        o.om, o.json = r["om"], r["json"]
        return o
    for flag in ("om", "json"):
        if flag in r:
            raise invalid(flag, r[flag], f"--{flag} belongs to --mode=1")
    for flag in ("model", "framework", "output", "soc_version"):
        if not r.get(flag):
            raise invalid(flag, "", f"--{flag} is required to convert a model")
    if r["framework"] not in FRAMEWORKS:
        raise invalid(
            "framework", r["framework"], "expected 0 (Caffe), 1 (MindSpore), 3 (TensorFlow) or 5 (ONNX)"
        )
    if r["framework"] != "5":
        raise invalid(
            "framework",
            r["framework"],
            f"the simulator converts ONNX models only (--framework=5), not {FRAMEWORKS[r['framework']]}",
        )
    o.model, o.output, o.soc_version = r["model"], r["output"], r["soc_version"]
    if "insert_op_conf" in r:
        if not r["insert_op_conf"]:
            raise invalid("insert_op_conf", "", "expected the path of an AIPP configuration file")
        o.insert_op_conf = r["insert_op_conf"]  # read and checked with the model (atc/aipp_config.py)
    if "input_format" in r:
        if r["input_format"] not in INPUT_FORMATS:
            raise invalid("input_format", r["input_format"], f"expected one of {', '.join(INPUT_FORMATS)}")
        o.input_format = r["input_format"]
    explicit = {}
    if "input_shape" in r:
        o.input_shape, explicit = _input_shape(r["input_shape"])
    given = [f for f in DYNAMIC_FLAGS if f in r]
    if len(given) > 1:
        raise invalid(
            given[1],
            r[given[1]],
            f"--{given[0]} and --{given[1]} are mutually exclusive: choose one dynamic mechanism",
        )
    if given and given[0] == "input_shape_range":
        if "input_shape" in r:
            raise invalid(
                "input_shape_range",
                r["input_shape_range"],
                "--input_shape_range and --input_shape both give the input shapes: use one "
                "(--input_shape takes ranges too: name:lo~hi,d,-1)",
            )
        o.input_shape, explicit = _input_shape(r["input_shape_range"], "input_shape_range")
        _set_ranges(o, explicit)
    elif given:
        if explicit:
            (n, k), (lo, hi) = next(iter(explicit.items()))
            raise invalid(
                given[0],
                r[given[0]],
                f"--input_shape gives a shape range ({n!r} dimension {k}: {lo}~{hi}) and --{given[0]} "
                "gives profiles: shape ranges and profiles are mutually exclusive",
            )
        _check_dynamic(o, given[0], r[given[0]])
    elif any(d == -1 for dims in o.input_shape.values() for d in dims):
        _set_ranges(o, explicit)  # ATC: -1 or lo~hi without profiles is a shape-range model
    if "precision_mode" in r and r["precision_mode"] not in PRECISION_MODES:
        raise invalid("precision_mode", r["precision_mode"], f"expected one of {', '.join(PRECISION_MODES)}")
    if "output_type" in r:
        o.output_type = _output_type(r["output_type"])
    if "out_nodes" in r:
        o.out_nodes = _out_nodes(r["out_nodes"])
    if "sim_latency_us" in r:
        o.latency_us = _latencies(r["sim_latency_us"], len(o.profiles))
    return o


def _output_type(text):
    t = text.strip()
    if t in OUTPUT_TYPES:
        return OUTPUT_TYPES[t]
    per = {}
    for part in t.split(";"):
        bits = part.split(":")
        if len(bits) != 3 or bits[2] not in OUTPUT_TYPES:
            raise invalid(
                "output_type",
                text,
                f"expected FP32, FP16 or UINT8, or node:index:type;... (type FP32/FP16/UINT8), got {part!r}",
            )
        per[(bits[0], _int("output_type", bits[1], 0))] = OUTPUT_TYPES[bits[2]]
    return per


def _out_nodes(text):
    nodes = []
    for part in text.strip().split(";"):
        node, colon, index = part.rpartition(":")
        if not colon or not node:
            raise invalid("out_nodes", text, f"expected node:index;..., got {part!r}")
        nodes.append((node, _int("out_nodes", index, 0)))
    if len(set(nodes)) != len(nodes):
        raise invalid("out_nodes", text, "an output is named twice")
    return nodes


def _latencies(text, n_profiles):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise invalid(
            "sim_latency_us", text, "expected microseconds: one number or one per profile"
        ) from None
    if any(not (0 <= v <= 60e6) for v in vals):
        raise invalid("sim_latency_us", text, "each value must be within 0..6e7 microseconds")
    if len(vals) != 1 and len(vals) != n_profiles:
        raise invalid(
            "sim_latency_us", text, f"{len(vals)} values: give one, or one per profile ({n_profiles})"
        )
    return vals
