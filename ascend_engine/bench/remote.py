"""``bench --url``: the load of :mod:`.load` sent to a running KServe v2 server (docs/cli.md,
"Against a server: --url").

perf_analyzer's spellings: ``-u/--url HOST:PORT`` (default ``localhost:8000``
over HTTP, ``localhost:8001`` over gRPC), ``-i/--protocol http|grpc``
(default http), ``-m/--model-name``, ``-x/--model-version``, ``--shape
NAME:D,D`` for an input's dimensions without the batch one (the batch is
``-b/--batch`` when the model batches), ``--input-data random|zero|DIR``
(perf_analyzer's: a folder holding one file per input, named as the input:
its raw little-endian tensor, or for a ``BYTES`` input the element itself, a
JPEG for a pipeline's bytes input).  A ``BYTES`` input (one JPEG per request)
is sent as one element at the JPEG's own length: random JPEGs of 640 x 480
unless a folder gives one.

The server is asked, before any load, whether it is live, what models it
has, the model's metadata (its inputs) and configuration (whether its first
dimension is the batch).  Requests go through tritonclient's asyncio
clients (HTTP with the binary tensor extension, or gRPC) from the same
closed and open loops the in-process bench runs: :class:`RemoteTarget` is
the loops' target.  The server-side figures of each point are the
differences of the model's statistics (Triton's statistics extension,
``GET v2/models/NAME/stats``) over its timed requests.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ascend_engine.cli_args import FEED_POOL, UsageError
from ascend_engine.errors import ServerUnreachable

PROTOCOLS = ("http", "grpc")
DEFAULT_URLS = {"http": "localhost:8000", "grpc": "localhost:8001"}
CONNECTIONS = 1024          # the HTTP client's connection limit: never below the callers of a point
NUMPY_OF = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
            "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
            "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
STAT_KEYS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")
BYTES = "BYTES"                  # one byte string per element: a JPEG for a pipeline's bytes input
RANDOM_JPEG = (640, 480)         # the random JPEGs sent to a BYTES input
MAX_INPUT_FILE = 1 << 30         # an --input-data file is read whole: at most 1 GiB


def address(url, protocol) -> str:
    """``HOST:PORT`` for tritonclient: the default of the protocol, or ``url`` without a scheme."""
    if not url:
        return DEFAULT_URLS[protocol]
    for scheme in ("http://", "grpc://"):
        if url.startswith(scheme):
            url = url[len(scheme):]
    return url.rstrip("/")


def client_modules(protocol):
    """(the sync client module, the asyncio one) of ``protocol``; a UsageError naming the extra
    that installs tritonclient when it (or its transport) is missing."""
    import importlib

    from ascend_engine.cli_args import need_extra

    names = (f"tritonclient.{protocol}", f"tritonclient.{protocol}.aio")
    need_extra(f"bench -m/--url ({protocol.upper()})", "client", names)
    return tuple(importlib.import_module(name) for name in names)


def _as_json(protocol):
    return {"as_json": True} if protocol == "grpc" else {}


def connect(url, protocol):
    """A sync client of a server that answered it is live; ServerUnreachable names what was tried."""
    sync, _ = client_modules(protocol)
    where = address(url, protocol)
    tried = f"{protocol.upper()} at {where}" + ("" if url else " (the default URL of -i " + protocol + ")")
    try:
        client = sync.InferenceServerClient(where)
    except Exception as exc:     # a malformed address is refused before any connection
        raise UsageError(f"-u {url}: not a HOST:PORT address tritonclient takes ({exc})") from None
    try:
        live = client.is_server_live()
    except Exception as exc:
        client.close()
        other = "grpc" if protocol == "http" else "http"
        raise ServerUnreachable(f"no KServe v2 server answered {tried}: {_reason(exc)}; is `serve` "
                                f"(or Triton) "
                                f"running there, and does it speak {protocol.upper()} on that port "
                                f"(-i {other} for the other protocol)?") from None
    if not live:
        client.close()
        raise ServerUnreachable(f"the server at {where} ({protocol.upper()}) says it is not live")
    return client


def _reason(exc) -> str:
    """A client exception in one line (tritonclient's exceptions carry theirs in ``message()``)."""
    text = exc.message() if callable(getattr(exc, "message", None)) else str(exc)
    return " ".join((text or type(exc).__name__).split())[:300]


def _models(client, protocol) -> list:
    """The (name, version) pairs the server's repository index lists."""
    index = client.get_model_repository_index(**_as_json(protocol))
    entries = index.get("models", []) if isinstance(index, dict) else index
    return [(m.get("name"), m.get("version", "")) for m in entries]


def describe(client, protocol, model, version) -> dict:
    """The model's inputs and outputs and whether it batches; UsageError naming the server's models."""
    from tritonclient.utils import InferenceServerException

    try:
        meta = client.get_model_metadata(model, version or "", **_as_json(protocol))
        config = client.get_model_config(model, version or "", **_as_json(protocol))
    except InferenceServerException as exc:
        names = sorted({f"{n}" + (f" (version {v})" if v else "") for n, v in _models(client, protocol)})
        asked = f"'{model}'" + (f" version {version}" if version else "")
        raise UsageError(f"-m {model}: the server has no model {asked} ({_reason(exc)}); it has: "
                         f"{', '.join(names) or 'none'}") from None
    config = config.get("config", config)
    return {"name": meta["name"], "versions": meta.get("versions", []),
            "inputs": [(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in meta["inputs"]],
            "outputs": [t["name"] for t in meta.get("outputs", [])],
            "max_batch_size": int(config.get("max_batch_size", 0) or 0)}


def request_shapes(info, batch, shapes=None, shape=None) -> dict:
    """Each input's request shape: ``--shapes`` (every dimension), else the metadata's with the batch
    first (when the model batches) and ``--shape`` (the others, perf_analyzer's form) where they are -1."""
    inputs = {name: dims for name, _, dims in info["inputs"]}
    kinds = {name: datatype for name, datatype, _ in info["inputs"]}
    batches = info["max_batch_size"] > 0
    for option, given in (("--shapes", shapes or {}), ("--shape", shape or {})):
        for name in given:
            if name not in inputs:
                raise UsageError(f"{option} {name}: model '{info['name']}' has no input {name} "
                                 f"(its inputs: {', '.join(inputs)})")
    out = {}
    for name, dims in inputs.items():
        if kinds[name] == BYTES:
            out[name] = (1, 1) if batches else (1,)     # one element per request, whatever its length
            continue
        if shapes and name in shapes:
            chosen = tuple(shapes[name])
        else:
            lead, rest = (dims[:1], dims[1:]) if batches else ([], dims)
            if shape and name in shape:
                if len(shape[name]) != len(rest):
                    raise UsageError(f"--shape {name}: {len(shape[name])} dimension(s) given, input {name} "
                                     f"has "
                                     f"{len(rest)} besides {'the batch' if batches else 'none'} "
                                     f"(its shape {dims})")
                rest = list(shape[name])
            chosen = tuple([batch] * len(lead) + list(rest))
        if len(chosen) != len(dims) or any(d < 0 for d in chosen) or any(
                want >= 0 and got != want for want, got in zip(dims, chosen, strict=False)):
            fixed = ",".join(str(d) for d in (dims[1:] if batches else dims)).replace("-1", "D")
            told = "" if -1 in chosen and not (shape and name in shape) else \
                f"the shape {list(chosen)} does not fit it; "
            raise UsageError(f"input {name} of model '{info['name']}' has the shape {dims}: {told}give its "
                             f"dimensions with --shape {name}:{fixed}"
                             + (" (without the batch, which is -b)" if batches else ""))
        out[name] = chosen
    return out


def random_pool(info, shapes, zeros=False, count=FEED_POOL, seed=0) -> list:
    """``count`` feeds dicts of random (or zero) data of the request shapes (a random JPEG for a
    BYTES input)."""
    from ascend_engine.bench.jpegs import random_jpeg

    rng = np.random.default_rng(seed)
    pool = []
    for _ in range(count):
        feeds = {}
        for name, datatype, _dims in info["inputs"]:
            if datatype == BYTES:
                if zeros:
                    raise UsageError(f"--input-data zero: input {name} is BYTES (one JPEG per request): "
                                     f"give --input-data random, or a folder holding a file {name}")
                feeds[name] = random_jpeg(rng, *RANDOM_JPEG)
                continue
            if datatype not in NUMPY_OF:
                raise UsageError(f"input {name} is {datatype}: bench --url sends numeric tensors and BYTES")
            dtype = np.dtype(NUMPY_OF[datatype])
            shape = shapes[name]
            if zeros:
                a = np.zeros(shape, dtype)
            elif dtype.kind == "f":
                a = rng.standard_normal(shape).astype(dtype)
            elif dtype.kind == "b":
                a = rng.integers(0, 2, shape).astype(dtype)
            else:
                a = rng.integers(0, 100, shape).astype(dtype)
            feeds[name] = a
        pool.append(feeds)
    return pool


def folder_pool(info, shapes, folder) -> list:
    """One feeds dict from perf_analyzer's input folder: the file named as each input holds its raw
    little-endian tensor of the request shape, or, for a BYTES input, the element itself."""
    import os

    feeds = {}
    for name, datatype, _dims in info["inputs"]:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise UsageError(f"--input-data {folder}: no file {name} for input {name} (the folder holds one "
                             f"file per input, named as the input)")
        size = os.path.getsize(path)
        if size > MAX_INPUT_FILE:
            raise UsageError(f"--input-data {path}: {size} bytes, more than {MAX_INPUT_FILE}")
        with open(path, "rb") as f:
            raw = f.read()
        if datatype == BYTES:
            if not raw:
                raise UsageError(f"--input-data {path}: empty; input {name} takes one JPEG per request")
            feeds[name] = raw
            continue
        if datatype not in NUMPY_OF:
            raise UsageError(f"input {name} is {datatype}: bench --url sends numeric tensors and BYTES")
        dtype = np.dtype(NUMPY_OF[datatype]).newbyteorder("<")
        want = int(np.prod(shapes[name])) * dtype.itemsize
        if len(raw) != want:
            raise UsageError(f"--input-data {path}: {len(raw)} bytes, but input {name} of shape "
                             f"{list(shapes[name])} ({datatype}) takes {want}")
        feeds[name] = np.frombuffer(raw, dtype).reshape(shapes[name]).astype(dtype.newbyteorder("="))
    return [feeds]


def _delta(after, before, key):
    a, b = after.get(key, {}), before.get(key, {})
    return int(a.get("count", 0)) - int(b.get("count", 0)), int(a.get("ns", 0)) - int(b.get("ns", 0))


class RemoteTarget:
    """The loops' target for a server: ``run_async`` is one inference through an asyncio client."""

    generator = "asyncio tasks awaiting tritonclient's asyncio client"

    def __init__(self, url, protocol, info, version="", sync_client=None):
        self.url, self.protocol, self.info = address(url, protocol), protocol, info
        self.model, self.version = info["name"], version or ""
        self.sync_client = sync_client
        self.client = None
        self.backlog_limit = None      # the server's queue bounds itself (it answers 503 past it)
        self.statistics = True         # False once the server said it has no statistics
        self.shapes = {}               # each input's request shape (a BYTES input's: one element)

    def requests(self, pool) -> list:
        """The pool as tritonclient inputs, encoded once (binary tensors over HTTP)."""
        _, aio = client_modules(self.protocol)
        out = []
        for feeds in pool:
            inputs = []
            for name, datatype, _ in self.info["inputs"]:
                value = feeds[name]
                if datatype == BYTES:
                    value = np.empty(self.shapes[name], dtype=object)
                    value.reshape(-1)[0] = feeds[name]
                tensor = aio.InferInput(name, list(value.shape), datatype)
                if self.protocol == "http":
                    tensor.set_data_from_numpy(value, binary_data=True)
                else:
                    tensor.set_data_from_numpy(value)
                inputs.append(tensor)
            out.append(inputs)
        if self.protocol == "http":
            self.outputs = [aio.InferRequestedOutput(n, binary_data=True) for n in self.info["outputs"]]
        else:
            self.outputs = None
        return out

    async def run_async(self, inputs):
        return await self.client.infer(self.model, inputs, model_version=self.version, outputs=self.outputs)

    @contextlib.asynccontextmanager
    async def session(self):
        """An asyncio client on the running event loop (each phase of the load runs its own loop)."""
        _, aio = client_modules(self.protocol)
        kwargs = {"conn_limit": CONNECTIONS} if self.protocol == "http" else {}
        self.client = aio.InferenceServerClient(self.url, **kwargs)
        try:
            await self.client.is_server_live()     # connected before the first timed request
            yield self
        finally:
            await self.client.close()
            self.client = None

    def _stats(self):
        """The model's inference_stats, summed over the versions the server reports; None without them."""
        if not self.statistics:
            return None
        try:
            doc = self.sync_client.get_inference_statistics(self.model, self.version,
                                                            **_as_json(self.protocol))
        except Exception:       # a server without the statistics extension: the client figures only
            self.statistics = False
            return None
        total = {key: {"count": 0, "ns": 0} for key in STAT_KEYS}
        total["execution_count"] = total["inference_count"] = 0
        for entry in doc.get("model_stats", []):
            for key in STAT_KEYS:
                fig = entry.get("inference_stats", {}).get(key, {})
                total[key]["count"] += int(fig.get("count", 0))
                total[key]["ns"] += int(fig.get("ns", 0))
            total["execution_count"] += int(entry.get("execution_count", 0))
            total["inference_count"] += int(entry.get("inference_count", 0))
        return total

    def begin(self, requests, batch):
        return self._stats()

    def abandon(self, before):
        pass

    def end(self, before, n) -> dict:
        """The server's figures of the timed requests: means (ms) of the statistics' differences."""
        after = self._stats()
        figures = {"queue_ms": None, "service_ms": None, "device_ms": None, "stage_ms": {},
                   "stage_mean_ms": {},
                   "enqueue_ms": None, "slowest_stage": None, "executions": None, "batch_rows": {},
                   "mean_batch_rows": None, "server": None}
        if before is None or after is None:
            return figures
        server = {}
        for key in STAT_KEYS:
            count, ns = _delta(after, before, key)
            server[key] = {"count": count, "mean_ms": ns / count / 1e6 if count > 0 else None}
        executions = after["execution_count"] - before["execution_count"]
        rows = after["inference_count"] - before["inference_count"]
        server["execution_count"], server["inference_count"] = executions, rows
        infer = [server[k]["mean_ms"] for k in ("compute_input", "compute_infer", "compute_output")]
        figures.update(queue_ms=server["queue"]["mean_ms"], server=server, executions=executions,
                       service_ms=sum(v for v in infer if v is not None) if any(v is not None for v in infer)
                       else None,
                       mean_batch_rows=rows / executions if executions > 0 else None)
        return figures


# ---- the command ----------------------------------------------------------------------------

# bench's options that need the pipeline in this process, refused with --url
ENGINE_ONLY = (("--depth", "depth"), ("--streams", "streams"), ("--profile", "profile"), ("--input", "input"),
               ("--output", "output"), ("--check", "check"), ("--compare", "compare"),
               ("--device", "devices"),
               ("--max-delay-ms", "max_delay_ms"), ("--gear-policy", "gear_policy"),
               ("--max-queue", "max_queue"), ("--allow-code", "allow_code"),
               ("--fail-on-regression", "fail_on_regression"), ("--model", "model"))


def check_args(args):
    """Refuse, before connecting, what does not go with --url (UsageError)."""
    if args.target is not None:
        raise UsageError(f"--url sends the load to a server: name its model with -m (-m NAME), not "
                         f"SPEC_OR_MODEL ({args.target})")
    for option, dest in ENGINE_ONLY:
        if getattr(args, dest, None):
            raise UsageError(f"{option} does not go with --url: it configures the pipeline in this process; "
                             "the server's spec configures the served one")
    if args.repeat > 1:
        raise UsageError("--repeat does not go with --url: it repeats the in-process measurement")
    if not args.model_name:
        raise UsageError("--url needs -m/--model-name: the model on the server to send the load to")
    if args.shapes and args.shape:
        raise UsageError("--shapes and --shape: give one (--shapes: every dimension; --shape: "
                         "perf_analyzer's, "
                         "without the batch)")


def run(args) -> int:
    """``bench --url``: the load sweep against a server, reported as the in-process one is."""
    import json

    from ascend_engine import __version__
    from ascend_engine.bench import load as loadgen
    from ascend_engine.bench import perf, report
    from ascend_engine.bench.command import Progress, _check_open_loop_length
    from ascend_engine.cli_args import DEFAULT_REQUESTS, PROG, writable

    check_args(args)
    perf.translate(args)
    if not (args.concurrency or args.rate):
        args.concurrency = [1]                       # perf_analyzer's default: one caller
    for option, path in (("--json", args.json), ("--export-times", args.export_times), ("-f", args.perf_csv)):
        if path:
            writable(path, option)
    if args.rate:
        _check_open_loop_length(args)
    mode, values = ("closed", args.concurrency) if args.concurrency else ("open", args.rate)
    protocol = args.protocol or "http"
    client = connect(args.url, protocol)
    try:
        info = describe(client, protocol, args.model_name, args.model_version)
        batch = args.batch or 1
        if batch > 1 and info["max_batch_size"] == 0:
            raise UsageError(f"-b {batch}: model '{info['name']}' does not batch (its max_batch_size is 0)")
        shapes = request_shapes(info, batch, args.shapes, dict(args.shape or []))
        data = getattr(args, "input_data", None)
        folder = data if data not in (None, "random", "zero") else None
        zeros = data == "zero" or getattr(args, "pure_data_type", None) == "zero"
        target = RemoteTarget(args.url, protocol, info, args.model_version, client)
        target.shapes = shapes
        feeds = folder_pool(info, shapes, folder) if folder else random_pool(info, shapes, zeros)
        pool = target.requests(feeds)
        requests = None if args.duration else (args.requests or DEFAULT_REQUESTS)
        progress = Progress(total=requests, duration=args.duration, enabled=not args.no_progress)
        if args.measurement_interval is not None:
            points = perf.stable_sweep(target, pool, batch, mode, values, args, args.warmup, progress)
        else:
            points = loadgen.sweep(target, pool, batch, mode, values, requests=requests,
                                   duration=args.duration,
                                   warmup=args.warmup, progress=progress,
                                   distribution=args.request_distribution or "poisson",
                                   until=perf.over_threshold(args))
        server = client.get_server_metadata(**_as_json(protocol))
    finally:
        client.close()
    key = "concurrency" if mode == "closed" else "offered_per_s"
    samples = [{key: pt[key], **s} for pt in points for s in pt.pop("samples")]
    figures = {
        "tool": f"{PROG} bench", "version": __version__, "target": f"{target.url}/{info['name']}",
        "kind": "remote", "url": target.url, "protocol": protocol, "model": info["name"],
        "model_version": args.model_version or "", "server": {"name": server.get("name"),
                                                               "version": server.get("version")},
        "statistics": target.statistics,
        "config": {"batch": batch, "requests": requests, "duration": args.duration, "warmup": args.warmup,
                   "shapes": {n: list(s) for n, s in shapes.items()}},
        "inputs": {"kind": "files" if folder else "zero" if zeros else "random", "requests": len(pool),
                   "description": (f"the files of {folder}" if folder else 'zeros' if zeros else 'random')
                                  + f", {len(pool)} distinct requests used in turn "
                                  f"({'; '.join(f'{n} {list(s)}' for n, s in shapes.items())})"},
        "load": {"mode": mode, "generator": target.generator, key: values,
                 "distribution": (args.request_distribution or
                                  ("constant" if args.measurement_interval is not None else "poisson"))
                 if mode == "open" else None,
                 "windows": perf.windows_config(args), **perf.client_config(args, points, values),
                 "points": points},
    }
    report.print_load(figures)
    note = perf.threshold_note(figures["load"])
    if note:
        print(note)
    if args.perf_csv:
        perf.write_csv(args.perf_csv, points, mode)
        print(f"csv       : {args.perf_csv} (perf_analyzer's columns, microseconds)")
    for path, document, label in ((args.json, figures, "json"), (args.export_times, samples, "times")):
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(document, f, indent=1)
                f.write("\n")
            print(f"{label:<10}: {path}")
    return 0
