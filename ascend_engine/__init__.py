"""ascend-engine: multi-model inference pipelines on Ascend NPUs.

AscendCL is loaded at run time: the real ``libascendcl.so`` on an Ascend
machine, or the bundled AscendCL simulator anywhere else (see
:func:`backend` and the ``ASCEND_ENGINE_BACKEND`` variable).
"""

from ascend_engine import errors
from ascend_engine.errors import (
    AclError,
    AclTimeoutError,
    BackendError,
    DeviceError,
    InternalError,
    InvalidParamError,
    ModelError,
    NotInitializedError,
    ObjectClosedError,
    OutOfMemoryError,
    ResourceError,
)

try:
    from ascend_engine._runtime import (
        BackendInfo,
        Context,
        Device,
        DeviceBuffer,
        DeviceInfo,
        Event,
        HostBuffer,
        MemoryInfo,
        Stream,
        backend,
        device_count,
        devices,
        shutdown,
    )
except ImportError as _exc:  # pragma: no cover - only without a build
    raise ImportError(
        "ascend_engine's native modules are not built; run `pip install -e .` in the source tree "
        f"(original error: {_exc})"
    ) from _exc

from ascend_engine._executor import Engine, EngineError  # noqa: E402
from ascend_engine._model import Model, TensorSpec  # noqa: E402
from ascend_engine.pipeline import Pipeline, PipelineError  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AclError",
    "AclTimeoutError",
    "BackendError",
    "BackendInfo",
    "Context",
    "Device",
    "DeviceBuffer",
    "DeviceError",
    "DeviceInfo",
    "Engine",
    "EngineError",
    "Event",
    "HostBuffer",
    "InternalError",
    "InvalidParamError",
    "MemoryInfo",
    "Model",
    "ModelError",
    "NotInitializedError",
    "ObjectClosedError",
    "OutOfMemoryError",
    "Pipeline",
    "PipelineError",
    "ResourceError",
    "Stream",
    "TensorSpec",
    "backend",
    "device_count",
    "devices",
    "errors",
    "shutdown",
]
