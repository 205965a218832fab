"""A Triton model folder: ``config.pbtxt`` read with protobuf's text format and checked against the .om.

Layout (docs/serve.md, "A Triton model repository")::

    models/
      resnet/
        config.pbtxt         Triton's ModelConfig, text format
        1/model.om           version 1 (default_model_filename names another file)
        2/model.om

The config is parsed by protobuf's own text-format parser into the ModelConfig
message of kserve_v2.proto (the fields a Triton user writes, with Triton's
numbers).  Triton fields the server does not serve are named: those that change
what a request means (sequence batching, ensembles, decoupled transactions, ...)
refuse the model; tuning hints (``optimization``, ``model_warmup``, ...) are
ignored with a warning.  Every field that is served is then checked against the
model file: names, datatypes, dims (with ``max_batch_size`` and ``reshape``), the
batch the model takes.  A mismatch is a :class:`ModelConfigError` naming the
file, the field, what the model has and what the config says.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
from google.protobuf import text_format

from ascend_engine.errors import ModelConfigError
from ascend_engine.server.kserve_v2 import messages

CONFIG_NAME = "config.pbtxt"
DEFAULT_MODEL_FILENAME = "model.om"
MAX_CONFIG_BYTES = 1 << 20           # a config is a few hundred bytes; a megabyte is not a config

# Triton fields read and then refused: serving the model without them would answer
# something else than the user configured.
REFUSED = {
    ("ModelConfig", "sequence_batching"): "sequence batching (stateful models) is not served",
    ("ModelConfig", "ensemble_scheduling"): "ensembles are served as pipeline specs (docs/pipeline-spec.md)",
    ("ModelConfig", "batch_input"): "batch inputs are not served",
    ("ModelConfig", "batch_output"): "batch outputs are not served",
    ("ModelConfig", "model_transaction_policy"): "decoupled transaction policies are not served",
    ("ModelInput", "is_non_linear_format_io"): "non-linear formats are not served",
    ("ModelOutput", "is_non_linear_format_io"): "non-linear formats are not served",
    ("ModelInstanceGroup", "secondary_devices"): "secondary devices are not served",
}
# Triton fields that tune a backend: ignored, with a warning naming them.
IGNORED = {
    ("ModelConfig", name) for name in (
        "optimization", "model_warmup", "response_cache", "metric_tags", "model_operations",
        "model_repository_agents", "cc_model_filenames", "runtime", "model_metrics")
} | {("ModelInstanceGroup", "rate_limiter")}

# Our own compile parameters a config may set under ``parameters`` (string values, as Triton's).
PARAMETERS = {"depth": int, "gear_policy": str, "timeout": float}

_UNKNOWN_FIELD = re.compile(r'Message type "(?:[\w.]*\.)?(\w+)" has no field named "(\w+)"')


@dataclass
class ServedConfig:
    """What the server takes from one config.pbtxt: the parsed message and what it did not read."""

    path: str
    config: object                       # the ModelConfig message
    ignored: list = field(default_factory=list)     # "Message.field" ignored with a warning


def read(path: str) -> ServedConfig:
    """Parse ``path`` (a config.pbtxt) into a :class:`ServedConfig`; ModelConfigError names what is wrong."""
    try:
        if not os.path.isfile(path):
            raise ModelConfigError(f"{path}: not a regular file")
        size = os.path.getsize(path)
        if size > MAX_CONFIG_BYTES:
            raise ModelConfigError(f"{path}: {size} bytes; a model configuration holds at most "
                                   f"{MAX_CONFIG_BYTES} bytes")
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ModelConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return parse(text, path)


def parse(text: str, path: str = CONFIG_NAME) -> ServedConfig:
    """Parse config text; Triton fields not served are refused or ignored (module docstring)."""
    ignored, refused = [], []
    for _ in range(256):                 # each pass blanks one field the message does not declare
        config = messages.ModelConfig()
        try:
            text_format.Parse(text, config)
            break
        except text_format.ParseError as exc:
            found = _UNKNOWN_FIELD.search(str(exc))
            key = (found.group(1), found.group(2)) if found else None
            if key not in REFUSED and key not in IGNORED:
                raise ModelConfigError(f"{path}: {_where(exc)}{_reason(exc)}") from None
            (refused if key in REFUSED else ignored).append(key)
            text = _blank_field(text, exc.GetLine(), exc.GetColumn())
    else:                                # pragma: no cover - a config of 256 unread fields
        raise ModelConfigError(f"{path}: too many fields this server does not read")
    if refused:
        what = "; ".join(f"'{m}.{f}': {REFUSED[(m, f)]}" for m, f in refused)
        raise ModelConfigError(f"{path}: {what}")
    return ServedConfig(path, config, [f"{m}.{f}" for m, f in ignored])


def _where(exc) -> str:
    line, column = exc.GetLine(), exc.GetColumn()
    return f"line {line}, column {column}: " if line else ""


def _reason(exc) -> str:
    # protobuf prefixes its message with "line:column : "; we say where ourselves
    return re.sub(r"^\d+:\d+ : ", "", str(exc))


def _blank_field(text: str, line: int, column: int) -> str:
    """``text`` with the field that starts at (line, column), 1-based, and its value replaced by
    spaces (newlines kept, so later errors keep their positions)."""
    lines = text.split("\n")
    start = sum(len(s) + 1 for s in lines[:line - 1]) + column - 1
    end = _field_end(text, start)
    return text[:start] + "".join(c if c == "\n" else " " for c in text[start:end]) + text[end:]


def _field_end(text: str, k: int) -> int:
    """The end of the field whose name starts at ``k``: name, optional ':', then a scalar, a
    quoted string, a ``[...]`` list or a ``{...}``/``<...>`` message, and a ';' or ',' after."""
    n = len(text)
    while k < n and (text[k].isalnum() or text[k] in "_."):
        k += 1
    k = _skip_space(text, k)
    if k < n and text[k] == ":":
        k = _skip_space(text, k + 1)
    if k < n and text[k] in "{<[":
        k = _skip_group(text, k)
    else:
        while k < n and text[k] not in " \t\r\n;,#}]>":
            if text[k] in "\"'":
                k = _skip_string(text, k)
            else:
                k += 1
    k = _skip_space(text, k)
    if k < n and text[k] in ";,":
        k += 1
    return k


def _skip_space(text: str, k: int) -> int:
    n = len(text)
    while k < n:
        if text[k] in " \t\r\n":
            k += 1
        elif text[k] == "#":
            while k < n and text[k] != "\n":
                k += 1
        else:
            break
    return k


def _skip_string(text: str, k: int) -> int:
    quote, k = text[k], k + 1
    while k < len(text) and text[k] != quote and text[k] != "\n":
        k += 2 if text[k] == "\\" else 1
    return min(k + 1, len(text))


def _skip_group(text: str, k: int) -> int:
    closing = {"{": "}", "<": ">", "[": "]"}
    stack = []
    n = len(text)
    while k < n:
        c = text[k]
        if c in "\"'":
            k = _skip_string(text, k)
            continue
        if c == "#":
            k = _skip_space(text, k)
            continue
        if c in closing:
            stack.append(closing[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return k + 1
        k += 1
    return n


# ---- the config against the model file ---------------------------------------------------------

DATATYPES = {
    "TYPE_BOOL": np.dtype(np.bool_), "TYPE_UINT8": np.dtype(np.uint8), "TYPE_UINT16": np.dtype(np.uint16),
    "TYPE_UINT32": np.dtype(np.uint32), "TYPE_UINT64": np.dtype(np.uint64), "TYPE_INT8": np.dtype(np.int8),
    "TYPE_INT16": np.dtype(np.int16), "TYPE_INT32": np.dtype(np.int32), "TYPE_INT64": np.dtype(np.int64),
    "TYPE_FP16": np.dtype(np.float16), "TYPE_FP32": np.dtype(np.float32), "TYPE_FP64": np.dtype(np.float64),
}
_TYPE_NAMES = {v: k for k, v in DATATYPES.items()}


@dataclass
class ServedTensor:
    """One input or output as the server serves it: what the client sees and what the model takes."""

    name: str
    dtype: np.dtype
    shape: tuple            # as clients send or receive it, batch first (-1) when max_batch_size > 0
    model_shape: tuple      # as the model takes or gives it (after reshape)


@dataclass
class ServedModel:
    """A config checked against its model file: what the repository builds a pipeline from."""

    name: str
    model_path: str
    max_batch_size: int
    inputs: list            # [ServedTensor] in the model's input order
    outputs: list           # [ServedTensor] the config names (all the model's when it names none)
    instances: int
    devices: tuple          # instance_group's NPU ids (one engine on each); () for the server's
    compile_kwargs: dict
    ignored: list


def model_file(folder: str, version: str, served: ServedConfig) -> str:
    """The model file of a version folder: ``default_model_filename`` or model.om."""
    filename = served.config.default_model_filename or DEFAULT_MODEL_FILENAME
    if os.sep in filename or filename in ("", ".", ".."):
        raise ModelConfigError(f"{served.path}: default_model_filename must name a file in the version "
                               f"folder, got {filename!r}")
    return os.path.join(folder, version, filename)


def versions_served(served: ServedConfig, available: list) -> list:
    """The versions (strings of ints) ``version_policy`` serves out of ``available``; Triton's
    default is the latest one."""
    policy = served.config.version_policy
    numbers = sorted(int(v) for v in available)
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        chosen = numbers
    elif choice == "specific":
        wanted = list(policy.specific.versions)
        missing = sorted(set(wanted) - set(numbers))
        if missing:
            raise ModelConfigError(f"{served.path}: version_policy.specific.versions names {missing}, which "
                                   f"have no version folder with a model file (found: {numbers or 'none'})")
        chosen = sorted(set(wanted))
    else:
        count = policy.latest.num_versions if choice == "latest" else 1
        if choice == "latest" and count < 1:
            raise ModelConfigError(f"{served.path}: version_policy.latest.num_versions must be at least 1, "
                                   f"got {count}")
        chosen = numbers[-count:]
    return [str(v) for v in chosen]


def check(served: ServedConfig, folder_name: str, model) -> ServedModel:
    """The config checked against ``model`` (a loaded ascend_engine Model); ModelConfigError names the
    file, the field, what the model has and what the config says."""
    config, path = served.config, served.path
    if config.name and config.name != folder_name:
        raise ModelConfigError(f"{path}: name: the config says '{config.name}', but the model's folder is "
                               f"'{folder_name}' (they must be the same, as in Triton)")
    mbs = config.max_batch_size
    about = _describe(model)
    if mbs < 0:
        raise ModelConfigError(f"{path}: max_batch_size must be 0 (no batching) or more, got {mbs}")
    if mbs > 0:
        if any(not t.shape or (t.shape[0] != -1 and t.shape[0] < mbs) for t in model.inputs):
            raise ModelConfigError(f"{path}: max_batch_size: the config says {mbs}, but the model ({about}) "
                                   f"takes at most {model.max_batch} rows")
        if mbs > model.max_batch:
            raise ModelConfigError(f"{path}: max_batch_size: the config says {mbs}, but the model's largest "
                                   f"batch is {model.max_batch} ({about})")
    inputs = _tensors(path, "input", config.input, model.inputs, mbs, about, every=True)
    outputs = _tensors(path, "output", config.output, model.outputs, mbs, about, every=False)
    for k, tensor in enumerate(config.input):
        for flag in ("is_shape_tensor", "allow_ragged_batch", "optional"):
            if getattr(tensor, flag):
                raise ModelConfigError(f"{path}: input[{k}] '{tensor.name}' {flag}: true is not served "
                                       f"(the model's inputs are plain tensors)")
    for k, tensor in enumerate(config.output):
        if tensor.is_shape_tensor:
            raise ModelConfigError(f"{path}: output[{k}] '{tensor.name}' is_shape_tensor: true is not served")
        if tensor.label_filename:
            served.ignored.append(f"output[{k}].label_filename")
    instances, devices = _instances(path, config)
    kwargs = _batching(path, config, mbs)
    kwargs.update(_parameters(path, config))
    return ServedModel(folder_name, "", mbs, inputs, outputs, instances, devices, kwargs, served.ignored)


def _describe(model) -> str:
    gears = f", batch gears {list(model.batch_sizes)}" if model.batch_sizes else ""
    shapes = ", ".join(f"{t.name} {list(t.shape)}" for t in model.inputs)
    return f"{os.path.basename(model.path)}: inputs {shapes}{gears}"


def _tensors(path, kind, declared, specs, mbs, about, every) -> list:
    """The config's inputs or outputs, each matched by name to the model's; ``every``: the config
    must name all of the model's (inputs), else a subset (outputs).  None declared: the model's own."""
    by_name = {t.name: t for t in specs}
    seen = {}
    for k, tensor in enumerate(declared):
        where = f"{kind}[{k}] '{tensor.name}'"
        if tensor.name not in by_name:
            raise ModelConfigError(f"{path}: {where}: the model has no {kind} of that name (its {kind}s: "
                                   f"{', '.join(by_name)})")
        if tensor.name in seen:
            raise ModelConfigError(f"{path}: {where}: named twice ({kind}[{seen[tensor.name]}] too)")
        seen[tensor.name] = k
    if every and declared and len(seen) != len(by_name):
        missing = [n for n in by_name if n not in seen]
        raise ModelConfigError(f"{path}: {kind}: the model's {kind} '{missing[0]}' is missing from the "
                               f"config (the model takes {', '.join(by_name)})")
    if not declared:                      # as Triton's auto-complete: the model's own tensors
        return [ServedTensor(t.name, t.dtype, _batched(t.shape, mbs), tuple(t.shape)) for t in specs]
    served = []
    order = [t.name for t in specs if t.name in seen]
    for name in order:
        k = seen[name]
        tensor, spec = declared[k], by_name[name]
        where = f"{kind}[{k}] '{name}'"
        type_name = messages.ModelConfig.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_number[
            tensor.data_type].name
        dtype = DATATYPES.get(type_name)
        if dtype != spec.dtype:
            raise ModelConfigError(f"{path}: {where} data_type: the model has "
                                   f"{_TYPE_NAMES.get(spec.dtype, spec.dtype)}, the config says {type_name}")
        per_item = tuple(spec.shape[1:]) if mbs > 0 else tuple(spec.shape)
        dims = tuple(tensor.dims)
        target = tuple(tensor.reshape.shape) if tensor.HasField("reshape") else dims
        label = "reshape.shape" if tensor.HasField("reshape") else "dims"
        if len(target) != len(per_item) or any(
                m != -1 and t != m for t, m in zip(target, per_item, strict=True)):
            batch = " (without the batch dimension: max_batch_size > 0)" if mbs > 0 else ""
            raise ModelConfigError(f"{path}: {where} {label}: the model has {list(per_item)}{batch}, "
                                   f"the config says {list(target)} ({about})")
        if any(d < -1 or d == 0 for d in dims):
            raise ModelConfigError(f"{path}: {where} dims: each dimension is -1 or more than 0, "
                                   f"got {list(dims)}")
        if tensor.HasField("reshape") and -1 not in dims + target and math.prod(dims) != math.prod(target):
            raise ModelConfigError(f"{path}: {where} reshape: dims {list(dims)} hold {math.prod(dims)} "
                                   f"elements, reshape.shape {list(target)} holds {math.prod(target)}")
        fixed = tuple(m if m != -1 else t for t, m in zip(target, per_item, strict=True))
        model_shape = ((-1,) if mbs > 0 else ()) + fixed
        served.append(ServedTensor(name, dtype, _batched(dims, mbs, already=False), model_shape))
    return served


def _batched(shape, mbs, already=True) -> tuple:
    shape = tuple(int(d) for d in shape)
    if mbs <= 0:
        return shape
    return ((-1,) + shape[1:]) if already else (-1,) + shape


def _instances(path, config) -> tuple:
    """(instances of the model per device, the NPU ids named) from ``instance_group``."""
    count, devices = 0, []
    for k, group in enumerate(config.instance_group):
        kind = messages.ModelInstanceGroup.Kind.Name(group.kind)
        if kind == "KIND_CPU":
            raise ModelConfigError(f"{path}: instance_group[{k}] kind: KIND_CPU, but an .om model runs on an "
                                   f"NPU (use KIND_GPU with gpus: [NPU ids], KIND_MODEL or KIND_AUTO)")
        if group.count < 0:
            raise ModelConfigError(f"{path}: instance_group[{k}] count must be 1 or more, got {group.count}")
        if group.passive or group.profile or group.host_policy:
            raise ModelConfigError(f"{path}: instance_group[{k}]: passive, profile and host_policy are not "
                                   f"served")
        group_count = group.count or 1
        if count and group_count != count:
            raise ModelConfigError(f"{path}: instance_group[{k}] count: {group_count}, but an earlier group "
                                   f"has {count} (one count per model here: every device runs as many)")
        count = group_count
        for device in group.gpus:
            if device < 0 or device in devices:
                raise ModelConfigError(f"{path}: instance_group[{k}] gpus: NPU id {device} is "
                                       f"{'negative' if device < 0 else 'named twice'}")
            devices.append(device)
    return count or 1, tuple(devices)


def _batching(path, config, mbs) -> dict:
    """Compile options from ``dynamic_batching`` (docs/serve.md says how each maps)."""
    if not config.HasField("dynamic_batching"):
        return {}
    if mbs <= 0:
        raise ModelConfigError(f"{path}: dynamic_batching needs max_batch_size > 0 (the config says "
                               f"{mbs}: requests are not batched)")
    batching = config.dynamic_batching
    kwargs = {}
    delay_us = batching.max_queue_delay_microseconds
    # Triton batches what is queued when an instance frees up, even with no delay: here that is the
    # batcher with a one-microsecond wait (0 would turn it off).
    kwargs["max_delay_ms"] = max(delay_us, 1) / 1000.0
    sizes = list(batching.preferred_batch_size)
    for size in sizes:
        if not 1 <= size <= mbs:
            raise ModelConfigError(f"{path}: dynamic_batching.preferred_batch_size {size} must be from 1 to "
                                   f"max_batch_size {mbs}")
    if sizes:
        kwargs["preferred_batch_sizes"] = sorted(set(sizes))
    if batching.priority_levels:
        kwargs["priority_levels"] = batching.priority_levels
    if batching.default_priority_level:
        if not 1 <= batching.default_priority_level <= max(batching.priority_levels, 1):
            raise ModelConfigError(f"{path}: dynamic_batching.default_priority_level "
                                   f"{batching.default_priority_level} must be from 1 to priority_levels "
                                   f"{batching.priority_levels}")
        kwargs["default_priority"] = batching.default_priority_level
    if batching.priority_queue_policy:
        raise ModelConfigError(f"{path}: dynamic_batching.priority_queue_policy (a policy per priority "
                               f"level) is not served; default_queue_policy applies to every level")
    if batching.HasField("default_queue_policy"):
        policy = batching.default_queue_policy
        kwargs["timeout_action"] = messages.ModelQueuePolicy.TimeoutAction.Name(policy.timeout_action).lower()
        if policy.default_timeout_microseconds:
            kwargs["queue_timeout"] = max(policy.default_timeout_microseconds, 1000) / 1e6
        if policy.max_queue_size:
            kwargs["max_queue"] = policy.max_queue_size
    return kwargs


def _parameters(path, config) -> dict:
    """Our compile options a config may set:
    ``parameters { key: "depth" value: { string_value: "8" } }``."""
    kwargs = {}
    for key, value in config.parameters.items():
        kind = PARAMETERS.get(key)
        if kind is None:
            raise ModelConfigError(f"{path}: parameters: unknown key '{key}' (this server reads "
                                   f"{', '.join(PARAMETERS)})")
        try:
            kwargs[key] = kind(value.string_value)
        except ValueError:
            raise ModelConfigError(f"{path}: parameters['{key}']: {value.string_value!r} is not "
                                   f"{'an integer' if kind is int else 'a number'}") from None
    return kwargs
