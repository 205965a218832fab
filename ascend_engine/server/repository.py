"""The model repository: a folder of pipeline specs, one model per spec (docs/serve.md, "Repository").

Layout::

    models/
      demo.yaml              model "demo", version 1
      detector/              model "detector"
        1/pipeline.yaml      version 1
        2/pipeline.yaml      version 2 (the latest: what a request without a version gets)

A version folder holds one spec file (``pipeline.yaml``/``.yml``/``.json``, or
the only spec file there).  Every version is compiled into its own engine when
the server starts; a spec that fails to load stops the start with its error.
"""

from __future__ import annotations

import os

from ascend_engine import spec as specs
from ascend_engine._checks import MAX_TIMEOUT_MS
from ascend_engine.errors import InferenceServerError
from ascend_engine.server import protocol

PLATFORM = "ascend_engine_pipeline"
SPEC_NAMES = tuple("pipeline" + suffix for suffix in specs.SPEC_SUFFIXES)
MAX_TIMEOUT_US = MAX_TIMEOUT_MS // 1000 * 1_000_000   # a request's queue timeout, as the engine takes it


class TensorInfo:
    """A model input or output as the protocol describes it: name, numpy dtype, shape (-1: any)."""

    __slots__ = ("name", "dtype", "shape", "datatype")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.datatype = protocol.datatype_of(dtype)

    def metadata(self) -> dict:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


class Model:
    """One version of one model: its compiled engine and what the protocol says about it."""

    def __init__(self, name: str, version: str, path: str, engine, inputs, outputs, compile_kwargs):
        self.name = name
        self.version = version
        self.path = path
        self.engine = engine
        self.inputs = inputs               # [TensorInfo]
        self.outputs = outputs
        self.input_names = {t.name: t for t in inputs}
        self.output_names = {t.name: t for t in outputs}
        self.compile_kwargs = compile_kwargs

    @property
    def max_batch(self) -> int:
        return self.engine.max_batch

    def metadata(self, versions) -> dict:
        return {"name": self.name, "versions": list(versions), "platform": PLATFORM,
                "inputs": [t.metadata() for t in self.inputs],
                "outputs": [t.metadata() for t in self.outputs]}

    def config(self) -> dict:
        """The model configuration, as Triton's ``/v2/models/{m}/config`` words it."""
        def tensor(t, dims_key):
            return {"name": t.name, "data_type": "TYPE_" + t.datatype, dims_key: list(t.shape[1:])}

        plan = self.engine.plan
        config = {"name": self.name, "platform": PLATFORM, "backend": "ascend-engine",
                  "max_batch_size": self.max_batch,
                  "input": [tensor(t, "dims") for t in self.inputs],
                  "output": [tensor(t, "dims") for t in self.outputs],
                  "instance_group": [{"name": self.name, "kind": "KIND_MODEL", "count": 1}],
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
        rows = None
        for name, array in tensors.items():
            want = self.input_names[name]
            if array.dtype != want.dtype:
                raise protocol.bad_request(
                    f"input '{name}': datatype {protocol.datatype_of(array.dtype)}, but model "
                    f"'{self.name}' expects {want.datatype}")
            if len(array.shape) != len(want.shape) or any(
                    w != -1 and w != g for w, g in zip(want.shape, array.shape, strict=True)):
                raise protocol.bad_request(f"input '{name}': unexpected shape {list(array.shape)}, model "
                                           f"'{self.name}' expects {list(want.shape)}")
            batch = array.shape[0] if array.shape else 1
            if not 1 <= batch <= self.max_batch:
                raise protocol.bad_request(f"input '{name}': batch size {batch}, model '{self.name}' takes "
                                           f"1 to {self.max_batch} (its max_batch_size)")
            if rows is not None and batch != rows:
                raise protocol.bad_request(f"input '{name}': batch size {batch} differs from the other "
                                           f"inputs' {rows}")
            rows = batch
        return tensors


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
    """{model name: {version: spec path}} of a repository folder (nothing is loaded).

    Two specs that would be one model version (``demo.yaml`` and ``demo/1/pipeline.yaml``,
    ``demo.yaml`` and ``demo.yml``, folders ``1`` and ``01``) are refused, naming both."""
    if not os.path.isdir(root):
        raise InferenceServerError(500, f"the model repository {root} is not a folder")
    found = {}

    def add(name, version, path):
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
            for v in sorted(os.listdir(path)):
                folder = os.path.join(path, v)
                if not v.isdigit() or not os.path.isdir(folder):
                    continue
                version = _version_of(path, v)
                spec = _spec_in(folder)
                if spec is not None:
                    add(entry, version, spec)
    if not found:
        raise InferenceServerError(500, f"the model repository {root} holds no pipeline spec (one model per "
                                        f"NAME.yaml, or NAME/VERSION/pipeline.yaml)")
    return {name: dict(sorted(versions.items(), key=lambda item: int(item[0])))
            for name, versions in found.items()}


def load_model(name: str, version: str, path: str, device=None, allow_code=False) -> Model:
    """Build and compile one spec into a :class:`Model`."""
    parsed = specs._parse_any(path)
    pipeline = specs.build(parsed, device=device, allow_code=allow_code)
    kwargs = dict(parsed.compile)
    engine = pipeline.compile(**kwargs)
    plan = engine.plan
    inputs = [TensorInfo(i.name, i.dtype, i.shape) for i in parsed.inputs]
    outputs = [TensorInfo(n, plan.tensors[k].dtype, plan.tensors[k].shape) for n, k in plan.outputs]
    return Model(name, version, path, engine, inputs, outputs, kwargs)


class Repository:
    """Every loaded model version, by name and version."""

    def __init__(self, models: dict):
        self.models = models                # {name: {version: Model}}, versions in ascending order

    @classmethod
    def load(cls, root: str, device=None, allow_code=False) -> Repository:
        models = {}
        try:
            for name, versions in scan(root).items():
                models[name] = {}
                for version in sorted(versions, key=int):
                    models[name][version] = load_model(name, version, versions[version], device, allow_code)
        except BaseException:
            cls(models).close()
            raise
        return cls(models)

    def get(self, name: str, version: str = "") -> Model:
        """The model version a request names (the latest for ``""``); 404 when there is none."""
        versions = self.models.get(name)
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
            model.engine.close()
