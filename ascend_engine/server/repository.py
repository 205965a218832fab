"""The model repository: a folder of pipeline specs, one model per spec (docs/serve.md, "Repository").

Layout::

    models/
      demo.yaml              model "demo", version 1
      detector/              model "detector"
        1/pipeline.yaml      version 1
        2/pipeline.yaml      version 2 (the latest: what a request without a version gets)

      resnet/                model "resnet", as a Triton user lays it out
        config.pbtxt         Triton's model configuration (server/triton_config.py)
        1/model.om           version 1

A version folder holds one spec file (``pipeline.yaml``/``.yml``/``.json``, or
the only spec file there).  Every version is compiled into its own engine when
the server starts; a spec that fails to load stops the start with its error.
A folder with a ``config.pbtxt`` serves its model file as a one-model pipeline
with the config's batching, instances and versions; a config that cannot be read
or that contradicts its model leaves that model UNAVAILABLE, with the reason in
the repository index, and the server serves the others (as Triton does).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ascend_engine import spec as specs
from ascend_engine._checks import MAX_TIMEOUT_MS
from ascend_engine.errors import InferenceServerError, ModelConfigError, PipelineError
from ascend_engine.server import protocol, triton_config

PLATFORM = "ascend_engine_pipeline"
MODEL_PLATFORM = "ascend_engine_om"        # a Triton folder's model.om
SPEC_NAMES = tuple("pipeline" + suffix for suffix in specs.SPEC_SUFFIXES)
MAX_TIMEOUT_US = MAX_TIMEOUT_MS // 1000 * 1_000_000   # a request's queue timeout, as the engine takes it


class TensorInfo:
    """A model input or output as the protocol describes it: name, numpy dtype, shape (-1: any)."""

    __slots__ = ("name", "dtype", "shape", "datatype", "max_bytes")

    def __init__(self, name, dtype, shape, max_bytes=0):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.datatype = protocol.datatype_of(dtype)
        self.max_bytes = max_bytes         # a bytes input's longest string (BYTES, one per request)

    @classmethod
    def bytes_input(cls, name, max_bytes):
        """A pipeline's bytes input: one BYTES element per request (a JPEG), as Triton's clients send it."""
        return cls(name, protocol.BYTES_DTYPE, (-1, 1), max_bytes)

    def metadata(self) -> dict:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


class Model:
    """One version of one model: its compiled engine and what the protocol says about it."""

    def __init__(self, name: str, version: str, path: str, engine, inputs, outputs, compile_kwargs,
                 served=None):
        self.name = name
        self.version = version
        self.path = path
        # one engine per device the model is served on (a list), the first answering for the plan
        self.engines = list(engine) if isinstance(engine, (list, tuple)) else [engine]
        self.engine = self.engines[0]
        self.engine_in_flight = [0] * len(self.engines)
        self._next = 0                     # where the search for the least busy engine starts
        self.inputs = inputs               # [TensorInfo]
        self.outputs = outputs
        self.input_names = {t.name: t for t in inputs}
        self.output_names = {t.name: t for t in outputs}
        self.compile_kwargs = compile_kwargs
        self.served = served               # triton_config.ServedModel of a Triton folder, else None
        self.in_flight = 0                 # inferences admitted on this version, not yet answered
        # {name: (model's shape, client's shape)} where a config's reshape makes them differ
        self.batched = served is None or served.max_batch_size > 0
        self.reshape_in, self.reshape_out = {}, {}
        if served is not None:
            for tensors, into in ((served.inputs, self.reshape_in), (served.outputs, self.reshape_out)):
                for t in tensors:
                    if t.shape != t.model_shape:
                        into[t.name] = (t.model_shape, t.shape)

    @property
    def max_batch(self) -> int:
        return self.engine.max_batch

    @property
    def devices(self) -> list:
        """The device of each engine, in order."""
        return [engine.plan.devices[0] for engine in self.engines]

    @property
    def closed(self) -> bool:
        return all(engine.closed for engine in self.engines)

    def pick(self) -> int:
        """The index of the open engine with the fewest requests in flight (ties taken in turn)."""
        n = len(self.engines)
        best = None
        for k in range(self._next, self._next + n):
            k %= n
            if not self.engines[k].closed and (best is None
                                               or self.engine_in_flight[k] < self.engine_in_flight[best]):
                best = k
        self._next = (self._next + 1) % n
        return 0 if best is None else best

    def serving_stats(self) -> dict:
        """The engines' ``stats(percentiles=False)["serving"]`` added up: counts and totals (what the
        statistics and metrics endpoints read; no percentile is computed)."""
        figures = [engine.stats(percentiles=False)["serving"] for engine in self.engines if not engine.closed]
        if len(figures) <= 1:
            return figures[0] if figures else {}
        return _summed(figures)

    def close(self):
        for engine in self.engines:
            engine.close()

    @property
    def platform(self) -> str:
        return PLATFORM if self.served is None else MODEL_PLATFORM

    def metadata(self, versions) -> dict:
        return {"name": self.name, "versions": list(versions), "platform": self.platform,
                "inputs": [t.metadata() for t in self.inputs],
                "outputs": [t.metadata() for t in self.outputs]}

    def config(self) -> dict:
        """The model configuration, as Triton's ``/v2/models/{m}/config`` words it."""
        first = 1 if self.batched else 0      # dims leave out the batch dimension, when there is one

        def tensor(t, dims_key):
            type_name = "TYPE_STRING" if t.datatype == protocol.BYTES else "TYPE_" + t.datatype
            return {"name": t.name, "data_type": type_name, dims_key: list(t.shape[first:])}

        plan = self.engine.plan
        served = self.served
        max_batch = self.max_batch if served is None else served.max_batch_size
        count = 1 if served is None else served.instances
        group = {"name": self.name, "kind": "KIND_MODEL", "count": count}
        if len(self.engines) > 1 or (served is not None and served.devices):
            group.update(kind="KIND_GPU", gpus=self.devices)
        config = {"name": self.name, "platform": self.platform, "backend": "ascend-engine",
                  "max_batch_size": max_batch,
                  "input": [tensor(t, "dims") for t in self.inputs],
                  "output": [tensor(t, "dims") for t in self.outputs],
                  "instance_group": [group],
                  "parameters": {"depth": {"string_value": str(plan.depth)},
                                 "max_queue": {"string_value": str(plan.max_queue)}}}
        policy = {"timeout_action": plan.timeout_action.upper(), "allow_timeout_override": True,
                  "max_queue_size": plan.max_queue}
        if plan.queue_timeout_ms >= 0:
            policy["default_timeout_microseconds"] = plan.queue_timeout_ms * 1000
        preferred = plan.preferred_batch_sizes or plan.gears or (plan.max_batch,)
        batching = {"preferred_batch_size": list(preferred),
                    "max_queue_delay_microseconds": int(round(plan.max_delay_ms * 1000)),
                    "default_queue_policy": policy}
        if plan.priority_levels > 1:
            batching["priority_levels"] = plan.priority_levels
            batching["default_priority_level"] = plan.default_priority
        config["dynamic_batching"] = batching
        return config

    def queue_parameters(self, parameters: dict):
        """(priority, queue timeout in seconds or None) from a request's parameters."""
        priority = parameters.get("priority", 0)
        levels = self.engine.plan.priority_levels
        if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= levels:
            raise protocol.bad_request(f"parameter 'priority' must be an integer from 0 (the default) to "
                                       f"{levels} (model '{self.name}' has {levels} priority levels), "
                                       f"got {priority!r}")
        timeout_us = parameters.get("timeout")
        if timeout_us is not None and (isinstance(timeout_us, bool) or not isinstance(timeout_us, int)
                                       or not 1000 <= timeout_us <= MAX_TIMEOUT_US):
            raise protocol.bad_request(f"parameter 'timeout' must be microseconds, from 1000 to "
                                       f"{MAX_TIMEOUT_US} (the engine's longest timeout), got {timeout_us!r}")
        return priority or None, None if timeout_us is None else timeout_us / 1e6

    def feeds(self, tensors: dict) -> dict:
        """The engine's feeds from the request's input arrays ({name: array}), checked
        against the model's inputs: names, datatypes, shapes and rows."""
        unknown = sorted(set(tensors) - set(self.input_names))
        if unknown:
            raise protocol.bad_request(f"unexpected inference input '{unknown[0]}' for model '{self.name}' "
                                       f"(its inputs: {', '.join(self.input_names)})")
        missing = [n for n in self.input_names if n not in tensors]
        if missing:
            raise protocol.bad_request(f"expected {len(self.inputs)} inputs but got {len(tensors)} inputs "
                                       f"for model '{self.name}': input '{missing[0]}' is missing")
        rows, feeds = None, dict(tensors)      # the request's own arrays stay as they came
        for name, array in tensors.items():
            want = self.input_names[name]
            if want.max_bytes:
                feeds[name] = self._one_string(name, array, want.max_bytes)
                rows = rows or 1
                continue
            if array.dtype != want.dtype:
                raise protocol.bad_request(
                    f"input '{name}': datatype {protocol.datatype_of(array.dtype)}, but model "
                    f"'{self.name}' expects {want.datatype}")
            if len(array.shape) != len(want.shape) or any(
                    w != -1 and w != g for w, g in zip(want.shape, array.shape, strict=True)):
                raise protocol.bad_request(f"input '{name}': unexpected shape {list(array.shape)}, model "
                                           f"'{self.name}' expects {list(want.shape)}")
            batch = array.shape[0] if array.shape else 1
            if not self.batched:
                continue                      # no batch dimension: the shape check above is the whole check
            if not 1 <= batch <= self.max_batch:
                raise protocol.bad_request(f"input '{name}': batch size {batch}, model '{self.name}' takes "
                                           f"1 to {self.max_batch} (its max_batch_size)")
            if rows is not None and batch != rows:
                raise protocol.bad_request(f"input '{name}': batch size {batch} differs from the other "
                                           f"inputs' {rows}")
            rows = batch
        for name, (model_shape, _) in self.reshape_in.items():
            feeds[name] = self._reshaped(feeds[name], model_shape)
        return feeds

    def _one_string(self, name, array, max_bytes):
        """A bytes input's one byte string: a BYTES tensor of one element, or (as before BYTES) a
        UINT8 tensor of shape [n] or [1, n] at the string's own length."""
        if array.dtype == protocol.BYTES_DTYPE:
            if array.size != 1:
                raise protocol.bad_request(f"input '{name}': one BYTES element per request (a JPEG), got "
                                           f"{array.size} (shape {list(array.shape)}); send one request "
                                           f"per picture")
            value = array.reshape(-1)[0]
        elif array.dtype == np.uint8 and (array.ndim == 1 or (array.ndim == 2 and array.shape[0] == 1)):
            value = array.reshape(-1)
        else:
            raise protocol.bad_request(f"input '{name}': datatype {protocol.datatype_of(array.dtype)} shape "
                                       f"{list(array.shape)}, but model '{self.name}' takes one BYTES "
                                       f"element (or UINT8 [1, n]) per request")
        if not 1 <= len(value) <= max_bytes:
            raise protocol.bad_request(f"input '{name}': {len(value)} bytes; model '{self.name}' takes 1 to "
                                       f"{max_bytes} bytes per picture")
        return value

    def _reshaped(self, array, shape):
        return array.reshape(array.shape[:1] + tuple(shape[1:]) if self.batched else tuple(shape))

    def results(self, outputs: dict) -> dict:
        """The engine's outputs as the config's dims give them (its ``reshape``)."""
        for name, (_, dims) in self.reshape_out.items():
            if name in outputs:
                outputs[name] = self._reshaped(outputs[name], dims)
        return outputs


def _summed(figures: list):
    """Several engines' serving figures as one: numbers added, ``max`` the largest, ``mean`` from
    the sums, percentiles dropped (they do not add)."""
    first = figures[0]
    if isinstance(first, dict):
        keys = dict.fromkeys(k for f in figures for k in f)
        merged = {k: _summed([f[k] for f in figures if k in f]) for k in keys
                  if k not in ("p50", "p90", "p95", "p99")}
        if "mean" in merged and merged.get("added"):
            merged["mean"] = merged["total"] / merged["added"]
        if "max" in merged:
            merged["max"] = max(f.get("max", 0) for f in figures)
        return merged
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return sum(figures)
    return first


def _spec_in(folder: str) -> str | None:
    """The spec file of a version folder, or None when it has none; refused when it has
    several ``pipeline`` specs, or no ``pipeline`` spec and several others."""
    named = [os.path.join(folder, n) for n in SPEC_NAMES if os.path.isfile(os.path.join(folder, n))]
    if len(named) > 1:
        raise InferenceServerError(500, f"{named[0]} and {named[1]} are both the spec of one model version: "
                                        f"keep one")
    if named:
        return named[0]
    found = sorted(f for f in os.listdir(folder) if specs.is_spec_path(f))
    if len(found) > 1:
        raise InferenceServerError(500, f"{folder} holds several spec files ({', '.join(found)}): name the "
                                        f"one to serve pipeline.yaml")
    return os.path.join(folder, found[0]) if found else None


def _version_of(folder: str, entry: str) -> str:
    """The version a numeric subfolder ``entry`` of a model folder stands for ("01" is "1");
    refused unless it is written in ASCII digits."""
    if not (entry.isascii() and entry.isdecimal()):
        raise InferenceServerError(500, f"{folder}: a version folder is named by ASCII digits (1, 2, ...), "
                                        f"got {entry!r}")
    return str(int(entry))


def scan(root: str) -> dict:
    """{model name: {version: path}} of a repository folder (nothing is loaded): a spec file, or a
    Triton folder's model file.  A Triton folder whose config cannot be read is left out: see
    :func:`scan_all`, which also says why."""
    found, failed = scan_all(root)
    if not found and not failed:
        raise InferenceServerError(500, f"the model repository {root} holds no pipeline spec and no model "
                                        f"folder (one model per NAME.yaml, NAME/VERSION/pipeline.yaml, or "
                                        f"NAME/config.pbtxt with NAME/VERSION/model.om)")
    return found


def scan_all(root: str) -> tuple:
    """``(found, failed)``: ``found`` {model name: {version: path}}, versions in ascending order;
    ``failed`` {model name: reason} for the Triton folders whose config cannot be read or names no
    model file.

    Two specs that would be one model version (``demo.yaml`` and ``demo/1/pipeline.yaml``,
    ``demo.yaml`` and ``demo.yml``, folders ``1`` and ``01``) are refused, naming both."""
    if not os.path.isdir(root):
        raise InferenceServerError(500, f"the model repository {root} is not a folder")
    found, failed, triton = {}, {}, {}

    def add(name, version, path):
        if name in triton:
            raise InferenceServerError(500, f"{triton[name]} and {path} are both model '{name}': keep one")
        other = found.get(name, {}).get(version)
        if other is not None:
            raise InferenceServerError(500, f"{other} and {path} are both model '{name}' version {version}: "
                                            f"keep one (a repository serves one spec per model version)")
        found.setdefault(name, {})[version] = path

    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if os.path.isfile(path) and specs.is_spec_path(entry):
            add(os.path.splitext(entry)[0], "1", path)
        elif os.path.isdir(path) and not entry.startswith("."):
            if os.path.isfile(os.path.join(path, triton_config.CONFIG_NAME)):
                if entry in found or entry in failed:
                    raise InferenceServerError(500, f"{path} and {next(iter(found[entry].values()))} are "
                                                    f"both model '{entry}': keep one")
                triton[entry] = path
                try:
                    found[entry] = _triton_versions(path)
                except ModelConfigError as exc:
                    failed[entry] = str(exc)
                continue
            for v in sorted(os.listdir(path)):
                folder = os.path.join(path, v)
                if not v.isdigit() or not os.path.isdir(folder):
                    continue
                version = _version_of(path, v)
                spec = _spec_in(folder)
                if spec is not None:
                    add(entry, version, spec)
    found = {name: dict(sorted(versions.items(), key=lambda item: int(item[0])))
             for name, versions in found.items()}
    return found, failed


def _triton_versions(folder: str) -> dict:
    """{version: model file} that a Triton folder's version_policy serves."""
    served = triton_config.read(os.path.join(folder, triton_config.CONFIG_NAME))
    files = {}
    for v in sorted(os.listdir(folder)):
        if v.isdigit() and os.path.isdir(os.path.join(folder, v)):
            version = _version_of(folder, v)
            if version in files:
                raise InferenceServerError(500, f"{files[version]} and {os.path.join(folder, v)} are both "
                                                f"model '{os.path.basename(folder)}' version {version}: "
                                                f"keep one")
            files[version] = triton_config.model_file(folder, v, served)
    available = [v for v, f in files.items() if os.path.isfile(f)]
    if not available:
        filename = served.config.default_model_filename or triton_config.DEFAULT_MODEL_FILENAME
        raise ModelConfigError(f"{folder}: no version folder holds a model file {filename} (expected "
                               f"{folder}{os.sep}1{os.sep}{filename})")
    return {v: files[v] for v in triton_config.versions_served(served, available)}


def load_model(name: str, version: str, path: str, device=None, allow_code=False, devices=()) -> Model:
    """Build and compile one spec, or one Triton folder's model file, into a :class:`Model`: one
    engine on ``device`` (None: the spec's), or one per device of ``devices``."""
    if not specs.is_spec_path(path):
        return _load_triton_model(name, version, path, device, devices)
    parsed = specs._parse_any(path)
    kwargs = dict(parsed.compile)
    engines = _compiled(lambda d: specs.build(parsed, device=d, allow_code=allow_code), kwargs,
                        devices or (device,))
    plan = engines[0].plan
    inputs = [TensorInfo.bytes_input(i.name, i.max_bytes) if i.max_bytes
              else TensorInfo(i.name, i.dtype, i.shape) for i in parsed.inputs]
    outputs = [TensorInfo(n, plan.tensors[k].dtype, plan.tensors[k].shape) for n, k in plan.outputs]
    return Model(name, version, path, engines, inputs, outputs, kwargs)


def _compiled(build, kwargs, devices) -> list:
    """One engine per device (``build(device)`` makes its pipeline); all closed if one fails."""
    engines = []
    try:
        for device in devices:
            engines.append(build(device).compile(**kwargs))
    except BaseException:
        for engine in engines:
            engine.close()
        raise
    return engines


def _load_triton_model(name: str, version: str, path: str, device=None, devices=()) -> Model:
    """A Triton folder's model file served as a one-model pipeline, its config checked against it:
    on the config's ``instance_group`` NPUs, else the server's."""
    from ascend_engine import Model as LoadedModel  # the runtime, only when a model is served
    from ascend_engine import Pipeline

    served = triton_config.read(os.path.join(os.path.dirname(os.path.dirname(path)),
                                             triton_config.CONFIG_NAME))
    model = LoadedModel.load(path, device=0 if device is None else device)
    try:
        checked = triton_config.check(served, name, model)
        output_order = [t.name for t in model.outputs]
    finally:
        model.close()

    def build(on):
        pipe = Pipeline(device=0 if on is None else on)
        handles = [pipe.input(t.name, t.dtype, t.model_shape) for t in checked.inputs]
        produced = pipe.model(path, *handles, name=name, instances=checked.instances)
        produced = produced if isinstance(produced, tuple) else (produced,)
        by_name = dict(zip(output_order, produced, strict=True))
        for t in checked.outputs:
            pipe.output(t.name, by_name[t.name])
        return pipe

    kwargs = dict(checked.compile_kwargs)
    engines = _compiled(build, kwargs, checked.devices or devices or (device,))
    inputs = [TensorInfo(t.name, t.dtype, t.shape) for t in checked.inputs]
    outputs = [TensorInfo(t.name, t.dtype, t.shape) for t in checked.outputs]
    for ignored in checked.ignored:
        warnings.warn(f"model '{name}': {served.path}: {ignored} is not read by this server (ignored)",
                      stacklevel=2)
    return Model(name, version, path, engines, inputs, outputs, kwargs, served=checked)


MODEL_CONTROL_MODES = ("none", "explicit")


class Repository:
    """Every loaded model version, by name and version, and the folder they come from.

    ``mode`` is Triton's model control mode: ``"none"`` loads every model at the
    start and never changes them; ``"explicit"`` loads the ``startup`` models (or
    every one for ``"*"``) and then loads and unloads on request
    (:meth:`build`, :meth:`install`, :meth:`remove`, driven by the service).
    """

    def __init__(self, models: dict, failed: dict | None = None, root: str | None = None, device=None,
                 allow_code: bool = False, mode: str = "none", devices=()):
        self.models = models                # {name: {version: Model}}, versions in ascending order
        self.failed = failed or {}          # {name: {version: reason}} of models that did not load
        self.unloaded = {}                  # {name: reason}: in the folder, not loaded (explicit mode)
        self.root, self.device, self.allow_code, self.mode = root, device, allow_code, mode
        self.devices = tuple(devices)       # every model on each of these devices (serve --devices)

    @classmethod
    def load(cls, root: str, device=None, allow_code=False, mode: str = "none",
             startup=("*",), devices=()) -> Repository:
        """Load the model versions of ``root`` (in explicit mode only those ``startup`` names).  A
        spec that fails stops the load with its error; a Triton folder that fails is recorded in
        ``failed`` and the others are served."""
        if mode not in MODEL_CONTROL_MODES:
            modes = ", ".join(MODEL_CONTROL_MODES)
            raise InferenceServerError(500, f"model control mode must be one of {modes}, got {mode!r}")
        repository = cls({}, {}, root, device, allow_code, mode, devices)
        try:
            found, unreadable = scan_all(root)
            wanted = set(found) | set(unreadable) if mode == "none" or "*" in startup else set(startup)
            missing = sorted(wanted - set(found) - set(unreadable))
            if missing:
                raise InferenceServerError(500, f"the model repository {root} has no model '{missing[0]}' "
                                                f"(its models: {', '.join(sorted(found)) or 'none'})")
            if mode == "none" and not found and not unreadable:
                scan(root)                  # raises: nothing to serve
            for name in sorted(set(found) | set(unreadable)):
                if name not in wanted:
                    repository.unloaded[name] = "not loaded (explicit model control: load it by name)"
                elif name in unreadable:
                    repository.failed[name] = {"": unreadable[name]}
                else:
                    repository._load_versions(name, found[name])
            if mode == "none" and not repository.models:
                reasons = "; ".join(r for v in repository.failed.values() for r in v.values())
                raise InferenceServerError(500, f"the model repository {root} has no model that loads: "
                                                f"{reasons}")
        except BaseException:
            repository.close()
            raise
        return repository

    def _load_versions(self, name: str, versions: dict):
        """Compile every version of ``name`` into ``models``; a Triton folder's failures go to ``failed``."""
        self.models[name] = {}
        for version in sorted(versions, key=int):
            try:
                self.models[name][version] = load_model(name, version, versions[version], self.device,
                                                        self.allow_code, self.devices)
            except ModelConfigError as exc:
                self.failed.setdefault(name, {})[version] = str(exc)
        if not self.models[name]:
            del self.models[name]

    # ---- explicit model control: the service builds off the event loop, then swaps on it ------

    def build(self, name: str) -> dict:
        """{version: Model} of ``name`` compiled afresh from the folder (blocking: call it off the event
        loop).  Raises InferenceServerError 400 naming why nothing can be served."""
        found, unreadable = scan_all(self.root)
        if name in unreadable:
            raise InferenceServerError(400, f"failed to load '{name}': {unreadable[name]}")
        if name not in found:
            known = sorted(set(found) | set(unreadable))
            raise InferenceServerError(400, f"failed to load '{name}': no model of that name in the "
                                            f"repository {self.root} (its models: "
                                            f"{', '.join(known) or 'none'})")
        built, reasons = {}, []
        try:
            for version in sorted(found[name], key=int):
                try:
                    built[version] = load_model(name, version, found[name][version], self.device,
                                                self.allow_code, self.devices)
                except (ModelConfigError, PipelineError, OSError) as exc:
                    reasons.append(f"version {version}: {exc}")
        except BaseException:
            for model in built.values():
                model.close()
            raise
        if reasons:
            for model in built.values():
                model.close()
            raise InferenceServerError(400, f"failed to load '{name}': {'; '.join(reasons)}")
        return built

    def install(self, name: str, versions: dict) -> dict:
        """Serve ``versions`` as ``name`` from now on; returns the versions it replaces (to retire)."""
        old = self.models.get(name, {})
        self.models[name] = versions
        self.failed.pop(name, None)
        self.unloaded.pop(name, None)
        return old

    def remove(self, name: str) -> dict:
        """Stop serving ``name``; returns its versions (to retire once their requests are answered)."""
        old = self.models.pop(name, {})
        self.failed.pop(name, None)
        self.unloaded[name] = "unloaded"
        return old

    def problems(self) -> list:
        """One line per model version that failed to load, for the server's start-up output."""
        return [f"model '{name}'{f' version {version}' if version else ''} UNAVAILABLE: {reason}"
                for name, versions in self.failed.items() for version, reason in versions.items()]

    def get(self, name: str, version: str = "") -> Model:
        """The model version a request names (the latest for ``""``); 404 when there is none."""
        versions = self.models.get(name)
        if versions is None and name in self.unloaded:
            raise InferenceServerError(404, f"Request for unknown model: '{name}' is not loaded "
                                            f"({self.unloaded[name]})")
        if versions is None and name in self.failed:
            reasons = "; ".join(self.failed[name].values())
            raise InferenceServerError(404, f"Request for unknown model: '{name}' has no available versions "
                                            f"(it failed to load: {reasons})")
        if versions is None:
            raise InferenceServerError(404, f"Request for unknown model: '{name}' is not found "
                                            f"(models: {', '.join(self.models) or 'none'})")
        if not version:
            return versions[max(versions, key=int)]
        model = versions.get(version)
        if model is None:
            raise InferenceServerError(404, f"Request for unknown model: '{name}' version {version} is not "
                                            f"found (versions: {', '.join(versions)})")
        return model

    def versions(self, name: str) -> list:
        """The versions of model ``name``, ascending; 404 when there is no such model."""
        self.get(name)
        return list(self.models[name])

    def all(self):
        for versions in self.models.values():
            yield from versions.values()

    def close(self):
        for model in self.all():
            model.close()
