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
    EngineBusy,
    EngineError,
    ForkedProcessError,
    HostStepError,
    InternalError,
    InvalidParamError,
    ModelError,
    NotInitializedError,
    ObjectClosedError,
    OutOfMemoryError,
    PipelineError,
    ResourceError,
    SpecError,
)

try:
    from ascend_engine._model import Model, TensorSpec
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
    from ascend_engine.engine import Engine
    from ascend_engine.native_step import NativeStep
    from ascend_engine.pipeline import Pipeline
    from ascend_engine.replicas import Replicas
except ImportError as _exc:  # only without a build
    # Keep the pure-Python parts (errors, ascend_engine.sim's model builder)
    # importable; the native names raise a clear error when used.
    _NATIVE_ERROR = ImportError(
        "ascend_engine's native modules are not built; run `pip install -e .` in the source tree "
        f"(original error: {_exc})"
    )

    def __getattr__(name):
        if name in __all__ and name not in globals():
            raise _NATIVE_ERROR
        raise AttributeError(f"module 'ascend_engine' has no attribute {name!r}")

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
    "EngineBusy",
    "EngineError",
    "Event",
    "ForkedProcessError",
    "HostBuffer",
    "HostStepError",
    "NativeStep",
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
    "Replicas",
    "ResourceError",
    "SpecError",
    "Stream",
    "TensorSpec",
    "backend",
    "device_count",
    "devices",
    "errors",
    "shutdown",
]
