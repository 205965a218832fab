"""What every ``ascend-engine`` subcommand shares: the usage error, the argument converters
(their limits from the table of compile options, ascend_engine/options.py) and the checks made
before anything runs (docs/cli.md)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ascend_engine.options import OPTIONS

PROG = "ascend-engine"
DEFAULT_REQUESTS = 200
DEFAULT_WARMUP = 10
FEED_POOL = 4                 # distinct random feeds cycled through, so generating data costs nothing


class UsageError(Exception):
    """A bad argument found after parsing (a missing file, a conflicting option): exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are a pointer to ``--help`` and the one error line, last.

    argparse prints the whole usage before its error; a subcommand with dozens of options buries the
    one line that matters under it (docs/cli.md, exit status).
    """

    def error(self, message):
        sys.stderr.write(f"{self.prog} --help lists the options\n{self.prog}: error: {message}\n")
        sys.exit(2)


SWITCHES = ("1", "0", "true", "false")


def debug_switches(argv) -> list:
    """``argv`` with ais_bench's ``--debug 1|0|true|false`` (and ``--debug=V``) as this command's
    ``--debug`` switch: on for 1/true, dropped for 0/false (docs/cli.md, "The ais_bench options").

    The arguments of ``sim atc`` are ATC's and are left as they are.
    """
    out, k = [], 0
    while k < len(argv):
        arg = argv[k]
        if arg == "atc" and out[-1:] == ["sim"]:
            return out + list(argv[k:])
        value = None
        if arg.startswith("--debug="):
            value = arg.partition("=")[2]
        elif arg == "--debug" and k + 1 < len(argv) and argv[k + 1].strip().lower() in SWITCHES:
            value, k = argv[k + 1], k + 1
        if value is None:
            out.append(arg)
        elif value.strip().lower() not in SWITCHES:
            raise UsageError(f"--debug={value}: expected --debug alone, or ais_bench's "
                             "--debug 1|0|true|false")
        elif value.strip().lower() in ("1", "true"):
            out.append("--debug")
        k += 1
    return out


def need_extra(what, extra, modules):
    """Import ``modules``; a missing one is a UsageError naming the extra that installs it."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = exc.name or name
            if missing.split(".")[0] == "ascend_engine":   # our own breakage: not a missing extra
                raise
            raise UsageError(f"{what} needs the {extra} extra ({missing} is missing): "
                             f"pip install 'ascend-engine[{extra}]'") from None


# ---- small helpers -------------------------------------------------------------------


def positive_int_arg(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# Bounds of the run's size, the engine's own (docs/cli.md): a larger count is a usage error here rather
# than a ValueError from the engine after the pipeline was built.
MAX_REQUESTS = 1 << 24         # timed requests of a bench (Engine._timeline_begin keeps one row each)
MAX_TRACE_REQUESTS = 1 << 20   # requests of a trace (Engine.trace)
MAX_CALLERS = 1 << 16          # callers of a closed loop (one asyncio task each)
MAX_SWEEP_POINTS = 256         # points of a --concurrency-range / --request-rate-range sweep


def at_most(limit, why):
    """An argparse type: a positive integer of at most ``limit`` (``why`` says whose limit it is)."""

    def convert(text):
        value = positive_int_arg(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected at most {limit} ({why}), got {text!r}")
        return value

    convert.__name__ = "positive_int_arg"   # argparse names the type in its message
    return convert


def non_negative_int_arg(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def positive_float_arg(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def non_negative_float_arg(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def option_arg(name):
    """An argparse type for compile option ``name``: the limits of options.py, as a usage error."""
    option = OPTIONS[name]
    base = {"int": positive_int_arg, "ms": non_negative_float_arg}[option.kind]

    def convert(text):
        value = base(text)
        if value > option.maximum:
            raise argparse.ArgumentTypeError(f"expected at most {option.maximum}, got {text!r}")
        return value

    convert.__name__ = base.__name__   # argparse names the type in its message
    return convert


def value_list(text, convert, what):
    """A comma-separated list of values for a sweep (``1,4,16``), each checked by ``convert``."""
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected {what} separated by commas (such as 1,4,16), "
                                         f"got {text!r}")
    values = []
    for part in parts:
        try:
            values.append(convert(part))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} in {text!r}") from None
    return values


def concurrency_list(text):
    return value_list(text, at_most(MAX_CALLERS, "callers"), "numbers of callers")


MAX_RATE = 1e6                # requests/s: far beyond what one engine answers
MAX_OPEN_LOOP_SECONDS = 3600  # an open loop expected to take longer is surely a typo in --rate


def rate_arg(text):
    value = positive_float_arg(text)
    if not value <= MAX_RATE:       # also inf (nan is not > 0)
        raise argparse.ArgumentTypeError(f"expected a finite rate of at most {MAX_RATE:g} requests/s, "
                                         f"got {text!r}")
    return value


def rate_list(text):
    return value_list(text, rate_arg, "rates in requests/s")


def device_list(text):
    """``--device 0`` or ais_bench's ``--device 0,1``: device ids."""
    return value_list(text, non_negative_int_arg, "device ids")


def hw_arg(text):
    """ais_bench's ``--dymHW H,W``: an image size."""
    values = value_list(text, positive_int_arg, "a height and a width")
    if len(values) != 2:
        raise argparse.ArgumentTypeError(f"expected a height and a width, H,W (such as 224,224), "
                                         f"got {text!r}")
    return tuple(values)


def percentile_arg(text):
    """perf_analyzer's ``--percentile=N``: 1 to 99."""
    value = positive_int_arg(text)
    if value > 99:
        raise argparse.ArgumentTypeError(f"expected a percentile from 1 to 99, got {text!r}")
    return value


def switch_arg(text):
    """ais_bench's ``1``/``0``/``true``/``false`` switches."""
    value = text.strip().lower()
    if value not in ("1", "0", "true", "false"):
        raise argparse.ArgumentTypeError(f"expected 1, 0, true or false, got {text!r}")
    return value in ("1", "true")


def shapes_arg(text):
    """``--shapes NAME:D,D,...[;NAME:...]`` (ais_bench's --dymShape form) as {name: shape}."""
    from ascend_engine.bench.shapes import ShapesError, parse

    try:
        return parse(text)
    except ShapesError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def shape_arg(text):
    """perf_analyzer's ``--shape NAME:D,D,...``: one input's dimensions, as (name, shape)."""
    from ascend_engine.bench.shapes import ShapesError, parse

    try:
        shapes = parse(text)
    except ShapesError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if len(shapes) != 1:
        raise argparse.ArgumentTypeError(f"expected one NAME:D,D,... (give --shape once per input), "
                                         f"got {text!r}")
    return next(iter(shapes.items()))


def existing_file(path, what):
    if not os.path.exists(path):
        raise UsageError(f"{what} not found: {path}")
    if not os.path.isfile(path):
        raise UsageError(f"{what} is not a file: {path}")
    return path



def writable(path, option):
    """Refuse, before the run, a file the run could not write at its end."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: cannot write {path}: no folder {folder}")
    if os.path.isdir(path):
        raise UsageError(f"{option}: cannot write {path}: it is a folder; name a file in it")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{option}: cannot write {path}: permission denied")
    # os.access answers yes to root everywhere, also where nothing can be created (/proc, a read-only
    # mount): open the file as the run will, keeping what it holds, and remove it if it was not there
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path}: {(exc.strerror or str(exc)).lower()}") from None
    if not existed:
        os.unlink(path)


def writable_folder(path, option):
    """Make the folder ``path`` (and its parents) for the run's files; refuse one that cannot be made
    or written in, before the run."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{option}: not a folder: {path}")
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".{PROG}-write-test-{os.getpid()}")
        with open(probe, "wb"):
            pass
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{option}: cannot write in {path}: {(exc.strerror or str(exc)).lower()}") from None


def check_device(device, flag="--device"):
    """A --device beyond the backend's devices is a usage error naming the ids there are."""
    if device is None:
        return
    import ascend_engine as ae

    count = len(ae.devices())
    if device >= count:
        ids = f"ids 0 to {count - 1}" if count else "none"
        raise UsageError(f"{flag} {device}: the {ae.backend().name} backend has {count} device(s) ({ids})")


# ---- serve ---------------------------------------------------------------------------


def port_arg(text):
    """A TCP port: 0 lets the system choose, -1 turns that port off."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not -1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 (or -1: off), got {text!r}")
    return value


def input_data_arg(text: str) -> str:
    """``--input-data``: random, zero, or a folder of one file per input (perf_analyzer's)."""
    if text in ("random", "zero") or os.path.isdir(text):
        return text
    raise argparse.ArgumentTypeError(f"random, zero, or a folder holding one file per input; {text!r} is "
                                     f"{'a file, not a folder' if os.path.exists(text) else 'not found'}")


def device_list_arg(text: str) -> tuple:
    """``0,1,2,3``: distinct device ids."""
    parts = text.split(",")
    if not all(p.strip().isdigit() and p.strip().isascii() for p in parts):
        raise argparse.ArgumentTypeError(f"a comma-separated list of device ids (0,1,2,3), got {text!r}")
    ids = tuple(int(p) for p in parts)
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"device ids must be distinct, got {text!r}")
    return ids


def add_serve_arguments(p):
    """The options of ``ascend-engine serve`` (tritonserver's names where it has one)."""
    p.add_argument("model_repository", metavar="MODEL_REPOSITORY",
                   help="a folder of pipeline specs (NAME.yaml, or NAME/VERSION/pipeline.yaml)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--http-port", type=port_arg, default=8000, help="HTTP/REST port (default 8000)")
    p.add_argument("--grpc-port", type=port_arg, default=8001, help="gRPC port (default 8001; -1: off)")
    p.add_argument("--metrics-port", type=port_arg, default=8002,
                   help="Prometheus metrics port (default 8002; -1: off)")
    p.add_argument("--device", type=non_negative_int_arg,
                   help="device id for every model (overrides the specs)")
    p.add_argument("--devices", type=device_list_arg, metavar="IDS",
                   help="serve every model on each of these devices, e.g. 0,1,2,3: one engine per device, "
                        "requests balanced to the least busy (a config's instance_group gpus come first)")
    p.add_argument("--allow-code", action="store_true",
                   help="serve specs whose host steps name Python functions (they run with your rights)")
    p.add_argument("--drain-seconds", type=positive_float_arg, default=30.0,
                   help="on SIGTERM/SIGINT, how long admitted requests may take to finish (default 30)")
    p.add_argument("--model-control-mode", choices=("none", "explicit"), default="none",
                   help="none: serve every model of the folder, unchanged (default); explicit: load and "
                        "unload models by name through the repository API (docs/serve.md)")
    p.add_argument("--load-model", action="append", metavar="NAME", default=None,
                   help="with --model-control-mode=explicit: a model to load at the start (repeat it; "
                        "'*' loads every model); none by default")


def check_serve_args(args):
    if not os.path.isdir(args.model_repository):
        raise UsageError(f"the model repository is not a folder: {args.model_repository}")
    if args.http_port < 0:
        raise UsageError("--http-port -1: the HTTP port cannot be turned off")
    if args.devices and args.device is not None:
        raise UsageError("--device and --devices: give one (--devices 0 serves on device 0 alone)")
    for device in args.devices or ():
        check_device(device, "--devices")
    if args.load_model and args.model_control_mode != "explicit":
        raise UsageError("--load-model takes effect with --model-control-mode=explicit only (in mode none "
                         "every model is loaded)")
    check_device(args.device)
