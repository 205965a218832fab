"""Models and devices as the planner sees them.

The planner never keeps a model loaded to plan: a node given by path is
described once (:func:`describe_file`, when ``pipe.model`` is called) into a
:class:`ModelDescription`; a loaded :class:`ascend_engine.Model`, or any
object describing itself like one (tests plan with stand-ins), is its own
description.  The builder obtains descriptions and the device facts (device
count, peer links, model sizes) here and hands them to validation,
placement and the memory plan, which are pure functions of their inputs.

Only the functions that ask the runtime import it, when called, so the
planner's pure modules import without the native build.
"""

from __future__ import annotations

from dataclasses import dataclass

from ascend_engine.errors import AclError, BackendError, PipelineError


@dataclass(frozen=True)
class ModelDescription:
    """What planning needs from a model file, read once (the model is not kept loaded)."""

    path: str
    inputs: tuple
    outputs: tuple
    batch_sizes: tuple
    dynamic_index: int
    dynamic_nbytes: int
    device_id: int
    dynamic_kind: str = "static"
    hw_sizes: tuple = ()
    dims_gears: tuple = ()
    gear_io: tuple = ()      # image-size and dims-gear models: (gear, input shapes, output shapes) per gear
    output_follow: tuple | None = None


def describe_file(path, device, node_name) -> ModelDescription:
    """Load the model file at ``path`` on ``device`` briefly and describe it;
    a PipelineError naming the node when it cannot be loaded.

    The runtime starts first, outside that: a failure to start AscendCL (a
    bad ``ASCEND_SIM_*`` value, no driver) is the runtime's own error, not
    the model node's.
    """
    from ascend_engine._model import Model

    device_count()
    try:
        with Model.load(path, device=device) as m:
            shaped = m.dynamic_kind in ("hw", "dims")
            return ModelDescription(str(path), m.inputs, m.outputs, m.batch_sizes, m.dynamic_index,
                                    m.dynamic_nbytes, m.device_id, m.dynamic_kind, m.hw_sizes, m.dims_gears,
                                    gear_io(m) if shaped else (), m.output_follow if shaped else None)
    except Exception as exc:
        raise PipelineError(f"model node {node_name!r}: {exc}") from exc


def is_model(obj) -> bool:
    """A loaded model, or anything describing itself like one (tests plan with stand-ins)."""
    return all(hasattr(obj, a) for a in ("inputs", "outputs", "batch_sizes", "dynamic_index", "device_id"))


def kind_of(model) -> str:
    """The model's dynamic mechanism: "static", "batch", "hw", "dims" or "range"."""
    return getattr(model, "dynamic_kind", "static")


def gear_io(model) -> tuple:
    """(gear, input shapes, output shapes) per gear of an image-size or dims-gear model."""
    if isinstance(model, ModelDescription):
        return model.gear_io
    return tuple((gear, tuple(map(tuple, ins)), tuple(map(tuple, outs)))
                 for gear, (ins, outs) in model.gear_io_shapes().items())


def follow(model) -> tuple:
    """Which input dimension each output dimension follows across the gears (Model.output_follow)."""
    return tuple(model.output_follow)


def static_batch(model) -> int:
    """The batch a static model was built for (its first input's first dim)."""
    return int(model.inputs[0].shape[0]) if model.inputs else 1


def query_size(path):
    """(work, weight) bytes of a model file, or (None, None) where the backend cannot tell."""
    from ascend_engine._model import Model

    try:
        return Model.query_size(path)
    except (AclError, BackendError):
        return None, None


def device_count() -> int:
    """How many devices the runtime reports."""
    from ascend_engine._runtime import devices

    return len(devices())


def peer_link(a, b) -> bool:
    """Whether device a can copy straight to device b (aclrtDeviceCanAccessPeer)."""
    from ascend_engine._runtime import Device

    with Device(a) as dev:
        try:
            return bool(dev.can_access_peer(b))
        except (AclError, BackendError):   # a runtime without peer access: copy through the host
            return False
