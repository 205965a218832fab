"""The ``ascend-engine`` command (also ``python -m ascend_engine``); see docs/cli.md.

Subcommands: ``help`` (the manual, docs/cli.md), ``info`` (backend, devices,
versions), ``bench`` (throughput, latency percentiles, host vs device time and
memory of a pipeline spec or a single model on random or given inputs; outputs
dumped and checked against references; comparison with a saved run; ais_bench's
and perf_analyzer's options), ``trace`` (a Chrome trace-event timeline),
and ``sim`` (``make-demo``, ``lib-path``, ``env``, ``toolkit``, ``headers``: the
AscendCL simulator and the real CANN headers programs build against).

Exit status: 0 on success, 2 for usage errors (bad options, missing files),
1 for failures at run time (AscendCL, engine, pipeline and spec errors), with
one ``ascend-engine: error: ...`` line on stderr; ``--debug`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import traceback

from ascend_engine.bench.command import cmd_bench
from ascend_engine.bench.compare import DEFAULT_TOLERANCE
from ascend_engine.bench.report import human_bytes
from ascend_engine.bench.trace import cmd_trace
from ascend_engine.cli_args import (
    DEFAULT_REQUESTS,
    DEFAULT_WARMUP,
    MAX_REQUESTS,
    MAX_TRACE_REQUESTS,
    PROG,
    Parser,
    UsageError,
    add_serve_arguments,
    at_most,
    check_serve_args,
    concurrency_list,
    debug_switches,
    device_list,
    hw_arg,
    input_data_arg,
    need_extra,
    non_negative_float_arg,
    non_negative_int_arg,
    option_arg,
    percentile_arg,
    positive_float_arg,
    positive_int_arg,
    rate_list,
    shape_arg,
    shapes_arg,
    switch_arg,
)
from ascend_engine.options import GEAR_POLICIES, STREAM_MODES


def _toolkit_module():
    """``ascend_engine.toolkit`` when this build has it (``sim toolkit``), else None."""
    try:
        if importlib.util.find_spec("ascend_engine.toolkit") is None:
            return None
    except (ImportError, ValueError):
        return None
    import ascend_engine.toolkit as toolkit

    return toolkit



# ---- info ----------------------------------------------------------------------------------


def info_data() -> dict:
    """Backend, devices and versions as a dict (what ``info --json`` prints)."""
    import numpy as np

    import ascend_engine as ae

    backend = ae.backend()
    devices = ae.devices()
    return {
        "package": {"name": "ascend-engine", "version": ae.__version__},
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "backend": {"name": backend.name, "library": backend.library},
        "device_count": len(devices),
        "devices": [
            {"id": d.id, "soc": d.soc, "memory_free": d.memory_free, "memory_total": d.memory_total}
            for d in devices
        ],
    }


def cmd_info(args) -> int:
    data = info_data()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"ascend-engine {data['package']['version']}  (Python {data['python']}, numpy {data['numpy']})")
    print(f"backend : {data['backend']['name']}  {data['backend']['library']}")
    print(f"devices : {data['device_count']}")
    if data["devices"]:
        print(f"  {'id':>3}  {'soc':<20} {'free':>12} {'total':>12}")
        for d in data["devices"]:
            print(f"  {d['id']:>3}  {d['soc'] or '?':<20} {human_bytes(d['memory_free']):>12} "
                  f"{human_bytes(d['memory_total']):>12}")
    return 0



# ---- sim ----------------------------------------------------------------------------------------


def sim_library_path() -> str:
    """The simulator library this package loads (honours ASCEND_ENGINE_SIM_LIBRARY)."""
    from ascend_engine._runtime import _sim_library_path

    path = _sim_library_path()
    if not os.path.isfile(path):
        raise RuntimeError(f"the simulator library is missing: {path} (rebuild with pip install -e .)")
    return path


def cmd_sim_make_demo(args) -> int:
    from ascend_engine.sim.demo_models import write_demo, write_shaped_demo

    if os.path.exists(args.dir) and not os.path.isdir(args.dir):
        raise UsageError(f"not a folder: {args.dir}")
    written = (write_shaped_demo if args.shapes else write_demo)(args.dir)
    for name, path in written["models"].items():
        print(f"model     : {path}  ({name})")
    print(f"spec      : {written['spec']}")
    print(f"run it    : {PROG} bench {written['spec']}")
    return 0


SERVE_MODULES = ("httptools", "ascend_engine.server")


def cmd_serve(args) -> int:
    check_serve_args(args)
    need_extra("serve", "serve", SERVE_MODULES + (("grpc", "google.protobuf") if args.grpc_port >= 0 else ()))
    from ascend_engine.server import run

    return run(args.model_repository, host=args.host, http_port=args.http_port,
               grpc_port=None if args.grpc_port < 0 else args.grpc_port,
               metrics_port=None if args.metrics_port < 0 else args.metrics_port, device=args.device,
               allow_code=args.allow_code, drain_seconds=args.drain_seconds, mode=args.model_control_mode,
               startup=tuple(args.load_model or ()), devices=args.devices or ())


def cmd_sim_lib_path(args) -> int:
    print(sim_library_path())
    return 0


def env_lines() -> list:
    """Shell lines that make an AscendCL program link and run against the simulator."""
    import shlex

    lib = sim_library_path()
    libdir = os.path.dirname(lib)
    q = shlex.quote(libdir)
    lines = [
        f"# AscendCL simulator: {lib}",
        "export ASCEND_ENGINE_BACKEND=sim",
        f'export LD_LIBRARY_PATH={q}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
        "# Link an AscendCL C/C++ program (written against the CANN headers, acl/acl.h) to the simulator:",
        f"#   cc app.c -I\"$CANN_INCLUDE\" -L{q} -lascendcl_sim -Wl,-rpath,{q} -o app",
    ]
    if _toolkit_module() is not None:
        lines.append("# Or build against a folder laid out like a CANN toolkit (libascendcl.so, headers):")
        lines.append(f"#   {PROG} sim toolkit DIR && cc app.c -IDIR/include -LDIR/lib64 -lascendcl")
    return lines


def cmd_sim_env(args) -> int:
    from ascend_engine import sim_env  # pyACL's `import acl` (ascend_engine.acl)

    print("\n".join(env_lines() + sim_env.pyacl_lines(args.pyacl)))
    return 0


def cmd_sim_toolkit(args) -> int:
    toolkit = _toolkit_module()
    argv = [args.dir] + (["--headers", args.headers] if args.headers else [])
    rc = toolkit.main(argv)
    return 0 if rc is None else int(rc)


def cmd_help(args) -> int:
    """Print docs/cli.md's section on a command (the introduction and the topics without one)."""
    from ascend_engine import cli_help

    try:
        text = cli_help.topic_text(args.topic)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    print(text.rstrip("\n"))
    if args.topic is None:
        print(f"\nMore: {PROG} help TOPIC, one of {', '.join(cli_help.topics())}")
    return 0


def cmd_sim_atc(args) -> int:
    """ATC's command line, converting an ONNX model into a simulator model (ascend_engine.sim.atc)."""
    from ascend_engine.sim import atc

    return atc.main(args.atc_args)


def cmd_sim_headers(args) -> int:
    """Fetch the real CANN headers into the cache ``sim toolkit`` reads; print their include folder."""
    from ascend_engine import cann_headers

    # CannHeadersUnavailable (no network, pip failure) is a run-time failure: status 1.
    print(cann_headers.ensure_headers(args.cache, quiet=args.print_include))
    return 0


# ---- the parser -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``ascend-engine`` command."""
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand's --debug must not reset one given before the subcommand
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of a failure (ais_bench's --debug 1|0 is taken too)")

    parser = Parser(
        prog=PROG, description="Multi-model inference pipelines on Ascend NPUs (and the AscendCL simulator).",
        epilog=f"Exit status: 0 success, 1 failure at run time, 2 usage error. The manual: {PROG} help "
               "[COMMAND] (docs/cli.md).")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of a failure (ais_bench's --debug 1|0 is taken too)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("info", parents=[common], help="backend, devices, memory and versions",
                       description="Backend and library path, devices (SoC, free/total memory), versions.")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("help", parents=[common], help="the manual of a command (docs/cli.md)",
                       description="Print the manual (docs/cli.md, shipped in the package): the section of "
                                   "TOPIC, or the introduction and the list of topics.")
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a command: info, bench, trace, serve, sim")
    p.set_defaults(func=cmd_help)

    p = sub.add_parser("bench", parents=[common], help="benchmark a pipeline spec or a model file",
                       epilog=f"Every figure and option explained: {PROG} help bench",
                       description="Run a pipeline spec (.yaml/.yml/.json) or a single model file on random "
                                   "inputs and report throughput, latency, host vs device time and memory; "
                                   "with --concurrency or --rate, under the load of many callers.")
    p.add_argument("target", metavar="SPEC_OR_MODEL", nargs="?",
                   help="a pipeline spec file or a model file (or --model, as ais_bench takes it)")
    p.add_argument("--allow-code", action="store_true",
                   help="run a spec whose host steps name Python functions: they are imported and run "
                        "with your rights, so only for a spec you trust")
    p.add_argument("-b", "--batch", type=positive_int_arg,
                   help="rows per request (default: 1, or the fixed batch)")
    p.add_argument("--shapes", type=shapes_arg, metavar="NAME:D,D,...[;NAME:...]",
                   help="the input shapes to run at, as ais_bench's --dymShape (x:1,3,640,480;y:1,16): "
                        "one of the gears of a dynamic image size or dims model, shapes inside the ranges "
                        "of a shape-range model; for other models and specs the first dimension is the batch")
    p.add_argument("--depth", type=option_arg("depth"),
                   help="requests in flight (default: the spec's, else 4)")
    how_long = p.add_mutually_exclusive_group()
    how_long.add_argument("--requests", type=at_most(MAX_REQUESTS, "the timeline of a profiled run"),
                          help=f"timed requests (default {DEFAULT_REQUESTS})")
    how_long.add_argument("--duration", type=positive_float_arg, metavar="SECONDS",
                          help="run for this many seconds instead of a number of requests")
    p.add_argument("--warmup", type=non_negative_int_arg, default=DEFAULT_WARMUP,
                   help=f"untimed requests after the cold one (default {DEFAULT_WARMUP})")
    p.add_argument("--device", type=device_list, dest="devices", metavar="ID[,ID...]",
                   help="device id (overrides the spec); with --model, several: one engine on each")
    p.add_argument("--streams", choices=STREAM_MODES, help="one stream per model, or one in all")
    p.add_argument("--repeat", type=positive_int_arg, default=1, metavar="N",
                   help="timed passes (default 1); throughput is the median pass, the spread goes in "
                        "the JSON")
    p.add_argument("--input", metavar="DIR_OR_FILES",
                   help="real inputs instead of random ones: one .npy/.bin file or folder per pipeline "
                        "input, comma-separated, one file per request")
    p.add_argument("--output", metavar="DIR", help="write every output of every --input request to DIR")
    p.add_argument("--output-format", choices=("npy", "bin"), default="npy",
                   help="file format of --output (default npy)")
    p.add_argument("--check", metavar="REF_DIR",
                   help="compare every output with REF_DIR/<input stem>_<output>.npy (or .bin); fail on the "
                        "first mismatch")
    p.add_argument("--atol", type=non_negative_float_arg, default=1e-5, help="absolute tolerance of --check")
    p.add_argument("--rtol", type=non_negative_float_arg, default=1e-3, help="relative tolerance of --check")
    p.add_argument("--json", metavar="OUT", help="also write the figures to this JSON file")
    p.add_argument("--export-times", metavar="FILE",
                   help="write every timed request's times (submit, result, latency, each step) as JSON")
    p.add_argument("--compare", metavar="BASELINE.json", help="show the change against a saved --json run")
    p.add_argument("--tolerance", type=positive_float_arg, default=DEFAULT_TOLERANCE, metavar="PERCENT",
                   help=f"how much worse a gated figure may get before the verdict flags it "
                        f"(default {DEFAULT_TOLERANCE:g})")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit with status 1 when --compare finds a regression")
    p.add_argument("--no-progress", action="store_true", help="no progress output on stderr")
    p.add_argument("--profile", action="store_true",
                   help="time every step of every request with device events and print the breakdown "
                        "(H2D, each step, queueing, D2H); costs host time per request, so off by default")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=concurrency_list, metavar="N[,N...]",
                      help="closed loop: N callers, each sending its next request when its last one is "
                           "answered; a list sweeps (one row per value)")
    load.add_argument("--rate", type=rate_list, metavar="R[,R...]",
                      help="open loop: Poisson arrivals at R requests/s, answered or not; says when the "
                           "engine cannot keep up; a list sweeps")
    p.add_argument("--max-delay-ms", type=option_arg("max_delay_ms"), metavar="MS",
                   help="with --concurrency/--rate: the dynamic batcher's longest wait for more rows "
                        "(compile(max_delay_ms=); 0 turns it off)")
    p.add_argument("--gear-policy", choices=GEAR_POLICIES,
                   help="with --concurrency/--rate: the gear merged rows run at when they fall between gears")
    p.add_argument("--max-queue", type=option_arg("max_queue"), metavar="N",
                   help="with --concurrency/--rate: requests that may wait for a free slot "
                        "(default 4 x depth)")
    _ais_bench_options(p)
    _perf_analyzer_options(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("trace", parents=[common], help="record a Chrome trace-event timeline",
                       epilog=f"More: {PROG} help trace",
                       description="Run requests through a pipeline spec or a model file and write every "
                                   "stream's copies, executions and waits as Chrome trace events (Perfetto, chrome://tracing).")
    p.add_argument("target", metavar="SPEC_OR_MODEL", help="a pipeline spec file or a model file")
    p.add_argument("--allow-code", action="store_true",
                   help="run a spec whose host steps name Python functions: they are imported and run "
                        "with your rights, so only for a spec you trust")
    p.add_argument("--out", required=True, metavar="TRACE.json", help="the trace file to write")
    p.add_argument("--requests", type=at_most(MAX_TRACE_REQUESTS, "Engine.trace's"), default=16,
                   help="requests to record (default 16)")
    p.add_argument("-b", "--batch", type=positive_int_arg,
                   help="rows per request, at most the largest batch (default: the largest batch)")
    p.add_argument("--shapes", type=shapes_arg, metavar="NAME:D,D,...[;NAME:...]",
                   help="the input shapes to run at (as for bench): a gear or shapes inside the ranges of a "
                        "dynamic-shape model; the batch as the first dimension otherwise")
    p.add_argument("--depth", type=option_arg("depth"), help="requests in flight (default: the spec's)")
    p.add_argument("--device", type=non_negative_int_arg, help="device id (overrides the spec)")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("serve", parents=[common], help="serve a folder of pipeline specs over KServe v2",
                       description="Serve a model repository (a folder of pipeline specs: NAME.yaml, or "
                                   "NAME/VERSION/pipeline.yaml) over the KServe v2 protocol, HTTP and gRPC, "
                                   "with Prometheus metrics; SIGTERM or SIGINT shuts down gracefully. "
                                   "See docs/serve.md.")
    add_serve_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sim", parents=[common],
                       help="the AscendCL simulator: demo models, library, environment",
                       description="The AscendCL simulator that runs on any CPU.")
    simsub = p.add_subparsers(dest="sim_command", metavar="SIM_COMMAND", required=True)
    q = simsub.add_parser("make-demo", parents=[common], help="write the demo models and pipeline.yaml",
                          description="Write three demo simulator models and a pipeline.yaml "
                                      "that chains them.")
    q.add_argument("dir", metavar="DIR", help="folder to write into (created if needed)")
    q.add_argument("--shapes", action="store_true",
                   help="write the dynamic-shape pair instead: an image-size detector det.om feeding a "
                        "dims-gear recognizer rec.om, and ocr.yaml (docs/cli.md)")
    q.set_defaults(func=cmd_sim_make_demo)
    q = simsub.add_parser("lib-path", parents=[common], help="print the simulator library's path",
                          description="Print the path of the AscendCL simulator library this package loads "
                                      "(ASCEND_ENGINE_SIM_LIBRARY overrides it), to link or preload "
                                      "programs against.")
    q.set_defaults(func=cmd_sim_lib_path)
    q = simsub.add_parser("env", parents=[common],
                          help="shell lines to run and link AscendCL programs against the simulator",
                          description="Print shell lines (export ASCEND_ENGINE_BACKEND, LD_LIBRARY_PATH) "
                                      "and the compile line that make an AscendCL C/C++ program run "
                                      "against the simulator: eval \"$(ascend-engine sim env)\".")
    q.add_argument("--pyacl", choices=("auto", "shim", "off"), default="auto",
                   help="make `import acl` the simulator's pyACL (auto: unless another acl is importable)")
    q.set_defaults(func=cmd_sim_env)
    # every argument goes to atc as it is: ATC's own flags (--model=..., --help), not this parser's
    q = simsub.add_parser("atc", add_help=False, prefix_chars="\0",
                          help="convert an ONNX model with ATC's flags into a simulator model (atc --help)")
    q.add_argument("atc_args", nargs=argparse.REMAINDER)
    q.set_defaults(func=cmd_sim_atc)
    if _toolkit_module() is not None:
        q = simsub.add_parser("toolkit", parents=[common],
                              help="lay out a CANN-like toolkit folder backed by the simulator",
                              description="Write DIR laid out like a CANN toolkit install, whose "
                                          "libascendcl.so is the simulator, with its headers and an env.sh "
                                          "(set_env.sh), so that programs written for CANN build and run "
                                          "with no change to their sources or build files "
                                          "(docs/toolkit.md).")
        q.add_argument("dir", metavar="DIR", help="folder to write the toolkit into")
        q.add_argument("--headers", metavar="PATH", help="CANN include folder to copy in")
        q.set_defaults(func=cmd_sim_toolkit)
    from ascend_engine import cann_headers

    q = simsub.add_parser("headers", parents=[common],
                          help="fetch the real CANN headers (torch-npu wheel) into the cache",
                          description="Download the torch-npu wheel with pip, keep only its CANN headers "
                                      "in a cache outside any source tree, and print the include folder "
                                      "(the parent of acl/). `sim toolkit` and the conformance tests "
                                      "read the same cache; AE_CANN_HEADERS=DIR names an existing folder.")
    cann_headers.add_arguments(q)
    q.set_defaults(func=cmd_sim_headers)
    return parser


def _add_options(group, options):
    """Add ``options`` to ``group``: (flag or flags, keyword arguments of add_argument) each."""
    for flags, kwargs in options:
        group.add_argument(*((flags,) if isinstance(flags, str) else flags), **kwargs)


# perf_analyzer's options besides the two ranges, as perf_analyzer spells them (bench/perf.py)
_PERF_ANALYZER_OPTIONS = (
    ("--request-distribution", dict(choices=("constant", "poisson"),
                                    help="the gaps between arrivals of an open loop "
                                         "(perf_analyzer's default: constant)")),
    (("-p", "--measurement-interval"), dict(type=positive_float_arg, metavar="MS",
                                           help="measure each point in windows of MS ms until stable")),
    (("-s", "--stability-percentage"), dict(type=positive_float_arg, metavar="PERCENT",
                                    help="stable: the last 3 windows' throughput and latency within PERCENT "
                                         "(default 10)")),
    (("-r", "--max-trials"), dict(type=positive_int_arg, metavar="N", help="at most N windows (default 10)")),
    ("--percentile", dict(type=percentile_arg, metavar="N",
                          help="judge stability on the pN latency instead of the average")),
    ("-f", dict(dest="perf_csv", metavar="FILE",
                help="write perf_analyzer's CSV (one row per point, microseconds)")),
    (("-l", "--latency-threshold"), dict(type=positive_float_arg, metavar="MS",
                                 help="stop the sweep after the first point whose latency (the average, or "
                                      "the --percentile one) is above MS")),
    (("-v", "--verbose"), dict(action="count", default=0,
                               help="print each point (and each window of --measurement-interval) on "
                                    "stderr")),
    ("--max-threads", dict(type=positive_int_arg, metavar="N",
                           help="accepted for perf_analyzer's scripts: the callers are asyncio tasks on "
                                "one thread, there are no client threads to bound")),
)

# perf_analyzer's options this bench does not take, and why (docs/cli.md, "The perf_analyzer options")
_PERF_ANALYZER_REFUSED = (
    ("--binary-search", "the sweep is linear; list the points to run with --concurrency 1,2,4,8"),
    ("--measurement-mode", "the windows are time windows, -p MS"),
    ("--measurement-request-count", "the windows are time windows, -p MS"),
    ("--request-intervals", "the arrivals are constant or Poisson gaps, --request-distribution"),
    ("--periodic-concurrency-range", "the callers of a point stay fixed; sweep with --concurrency-range"),
    ("--streaming", "requests go through ModelInfer, not a stream"),
    ("--shared-memory", "the inputs are sent in the requests (no shared-memory regions)"),
)


class _Refused(argparse.Action):
    """A perf_analyzer option bench does not take: a usage error saying why, not "unrecognized"."""

    def __init__(self, option_strings, dest, why="", **kwargs):
        self.why = why
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} (perf_analyzer's) is not taken: {self.why}")


# ais_bench's options, as ais_bench spells them (ascend_engine/bench/ais.py)
_AIS_BENCH_OPTIONS = (
    ("--model", dict(metavar="MODEL_OR_SPEC",
                     help="run as ais_bench does: its summary, its output files, one engine per --device")),
    ("--loop", dict(type=at_most(MAX_REQUESTS, "the timeline of the run"),
                    help="timed requests (default 1)")),
    ("--warmup_count", dict(type=non_negative_int_arg, help="untimed requests first (default 1)")),
    ("--dymBatch", dict(type=positive_int_arg, metavar="N", help="the batch of a dynamic-batch model")),
    ("--dymHW", dict(type=hw_arg, metavar="H,W", help="the image size of a dynamic image-size model")),
    ("--dymDims", dict(metavar="NAME:D,D,...[;...]", help="the gear of a dynamic-dims model")),
    ("--dymShape", dict(metavar="NAME:D,D,...[;...]", help="the shapes of a shape-range model")),
    ("--dymShape_range", dict(metavar="NAME:D,LOW~HIGH,A-B,...[;...]",
                              help="run every shape of these ranges in turn, a summary each")),
    ("--outfmt", dict(choices=("NPY", "BIN", "TXT"), help="file format of the --output files (default BIN)")),
    ("--output_dirname", dict(metavar="NAME",
                              help="with --output: write into OUTPUT/NAME instead of a date-time folder")),
    ("--pure_data_type", dict(choices=("zero", "random"),
                              help="the inputs without --input: zeros (the default) or random data")),
    ("--batchsize", dict(type=positive_int_arg, metavar="N",
                         help="the batch size the throughput counts (default: the rows of a request)")),
    ("--display_all_summary", dict(type=switch_arg, metavar="1|0",
                                   help="accepted for ais_bench's scripts; H2D and D2H are always shown")),
)


def _perf_analyzer_options(p):
    """perf_analyzer's load options and CSV, spelled as perf_analyzer spells them (bench/perf.py)."""
    g = p.add_argument_group("perf_analyzer's options (docs/cli.md, \"The perf_analyzer options\")")
    ranges = g.add_mutually_exclusive_group()
    ranges.add_argument("--concurrency-range", metavar="START:END:STEP",
                        help="closed loop at START, START+STEP, ... END callers")
    ranges.add_argument("--request-rate-range", metavar="START:END:STEP",
                        help="open loop at START ... END requests/s")
    _add_options(g, _PERF_ANALYZER_OPTIONS)
    for flag, why in _PERF_ANALYZER_REFUSED:
        g.add_argument(flag, action=_Refused, why=why, help=argparse.SUPPRESS)
    client = g.add_mutually_exclusive_group()
    for flags in (("-a", "--async"), ("--sync",)):
        flag = flags[-1]
        client.add_argument(*flags, dest="client_api", action="store_const", const=flag[2:],
                            help=f"accepted for perf_analyzer's scripts ({flag[2:]} client API): the load "
                                 "is the same, each caller keeps one request outstanding")
    u = p.add_argument_group("against a server, perf_analyzer's spellings (docs/cli.md, \"Against a server: "
                             "--url\")")
    u.add_argument("-u", "--url", metavar="HOST:PORT",
                   help="send the load to this KServe v2 server (default localhost:8000 for HTTP, "
                        "localhost:8001 for gRPC, with -i or -m)")
    u.add_argument("-i", "--protocol", type=str.lower, choices=("http", "grpc"),
                   help="the server's protocol (default http)")
    u.add_argument("-m", "--model-name", metavar="NAME", help="the model on the server")
    u.add_argument("-x", "--model-version", metavar="VERSION", default="",
                   help="its version (default: the server's choice, the latest)")
    u.add_argument("--shape", type=shape_arg, action="append", metavar="NAME:D,D,...",
                   help="an input's dimensions besides the batch (for -1 dimensions; once per input)")
    u.add_argument("--input-data", type=input_data_arg, metavar="random|zero|DIR",
                   help="the data sent: random (the default), zero, or a folder holding one file per "
                        "input named as the input (its raw tensor; a BYTES input's JPEG), as perf_analyzer "
                        "reads it")


def _ais_bench_options(p):
    """ais_bench's options, spelled as ais_bench spells them (ascend_engine/bench/ais.py)."""
    g = p.add_argument_group("ais_bench's options (docs/cli.md, \"The ais_bench options\")")
    _add_options(g, _AIS_BENCH_OPTIONS)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ascend-engine")
    except Exception:   # not installed as a distribution: say so rather than fail --version
        return "unknown"


def _where(exc) -> str:
    """The error's name, saying where it happened when a wrapper hides it.

    Building a pipeline wraps a failed model load (an AscendCL error: out of
    device memory, a bad model file) in a PipelineError or SpecError naming
    the node; the name shown is then the AscendCL error's, "while loading".
    """
    from ascend_engine.errors import AclError, PipelineError

    name = type(exc).__name__
    if isinstance(exc, PipelineError):
        cause, seen = exc.__cause__ or exc.__context__, set()
        while cause is not None and id(cause) not in seen:
            seen.add(id(cause))
            if isinstance(cause, AclError):
                return f"{type(cause).__name__} while loading the pipeline"
            cause = cause.__cause__ or cause.__context__
    return name


def _one_line(exc) -> str:
    text = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ == "HostStepError" and "its max_rows is" in text:
        text += " (max_rows bounds the rows of one request: a smaller --batch gives the step fewer)"
    if type(exc).__name__ == "BackendError":
        # the places searched and the fix are the point of a backend error: always shown
        return f"{type(exc).__name__}: " + text.replace("\n", "\n  ")
    first, _, rest = text.partition("\n")
    more = " (more with --debug)" if rest.strip() else ""
    return f"{_where(exc)}: {first}{more}"


def main(argv=None) -> int:
    """Run the command; returns the exit status (0 ok, 1 run-time failure, 2 usage error)."""
    parser = build_parser()
    try:
        argv = debug_switches(sys.argv[1:] if argv is None else list(argv))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        rc = args.func(args)
        sys.stdout.flush()   # a closed pipe shows up here, not at exit
        return rc
    except BrokenPipeError:
        # the reader went away (`| head`): no message, and no second error when Python flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:   # every run-time failure becomes one line (and status 1)
        if debug:
            traceback.print_exc()
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

