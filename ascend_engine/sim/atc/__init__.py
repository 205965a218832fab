"""``ascend-engine sim atc``: an ATC stand-in that converts ONNX models for the simulator.

It takes ATC's flags with ATC's spelling and rules (flags.py) and writes
``<output>.om``: a version-3 simulator model (om_file.py) that carries the
ONNX graph, its inputs and outputs, gears and sizes as AscendCL describes a
real ``.om`` converted with those flags, and a device time per profile
(cost.py).  The simulator runs it with ONNX Runtime on its stream workers.
``--mode=1 --om=x.om --json=x.json`` writes a converted model's description.
docs/simulator.md ("sim atc") says what it models of ATC and what not.
"""

from __future__ import annotations

import json
import shlex
import sys

from ascend_engine.errors import AtcError

from . import flags

__all__ = ["main", "convert_file"]

SUCCESS = "ATC run success, welcome to the next use."
FAILURE = "ATC run failed, Please check the detail log, Try 'atc --help' for more information"


def _help():
    lines = [
        "usage: atc --model=MODEL.onnx --framework=5 --output=NAME --soc_version=SOC [options]",
        "       atc --mode=1 --om=MODEL.om --json=OUT.json",
        "",
        "options:",
    ]
    lines += [f"  --{name:<20} {text}" for name, text in flags.FLAGS.items()]
    return "\n".join(lines)


def convert_file(argv) -> str:
    """Run one conversion command line (without the program name); returns the .om path written."""
    from . import convert, om_file

    opts = flags.parse(argv)
    if opts.help or opts.mode != 0:
        raise AtcError("convert_file converts (--mode=0) only")
    model = convert.convert(opts, command=shlex.join(["atc", *argv]))
    path = convert._om_path(opts.output)
    try:
        return om_file.save(model, path)
    except OSError as exc:
        raise flags.invalid("output", opts.output, f"cannot write {path}: {exc.strerror}") from None


def _dump(opts):
    from . import om_file

    try:
        with open(opts.om, "rb") as f:
            blob = f.read()
    except OSError as exc:
        raise flags.invalid("om", opts.om, f"cannot read the file: {exc.strerror}") from None
    try:
        desc = om_file.describe(blob)
    except ValueError as exc:
        raise flags.invalid("om", opts.om, str(exc)) from None
    try:
        with open(opts.json, "w") as f:
            json.dump(desc, f, indent=2)
            f.write("\n")
    except OSError as exc:
        raise flags.invalid("json", opts.json, f"cannot write the file: {exc.strerror}") from None


def main(argv=None) -> int:
    """The ``atc`` command: 0 on success, 1 when ATC would fail (message on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = flags.parse(argv)
        if opts.help:
            print(_help())
            return 0
        if opts.mode == 1:
            _dump(opts)
        else:
            if "precision_mode" in opts.raw and opts.log != "null":
                print(
                    f"W: --precision_mode={opts.raw['precision_mode']}: the simulator computes in the ONNX "
                    "graph's dtypes, not in the NPU's; numbers are ONNX Runtime's",
                    file=sys.stderr,
                )
            path = convert_file(argv)
            if opts.log in ("info", "debug"):
                print(f"I: wrote {path}", file=sys.stderr)
        print(SUCCESS)
        return 0
    except AtcError as exc:
        print(FAILURE, file=sys.stderr)
        print(str(exc), file=sys.stderr)
        return 1
