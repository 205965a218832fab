"""Where the simulator finds ONNX Runtime: ``ASCEND_SIM_ORT_LIB``.

The simulator (ort_exec.c) loads ``libonnxruntime.so`` when a model converted
by ``sim atc`` is loaded, from the path in ``ASCEND_SIM_ORT_LIB``.  Loading the
simulator backend (ascend_engine/_runtime.pyx, on first use of a device --
never on import, never with the real AscendCL) sets that variable, unless it
is already set, to the library inside the installed ``onnxruntime`` wheel
(found without importing it); set empty, the simulator searches the library
path only.  ``ascend-engine sim toolkit`` writes the same into ``env.sh`` for
C programs.
"""

from __future__ import annotations

import glob
import importlib.util
import os

__all__ = ["ENV", "find", "set_default"]

ENV = "ASCEND_SIM_ORT_LIB"


def find() -> str | None:
    """The onnxruntime wheel's ``capi/libonnxruntime.so*``, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(folder, "capi", "libonnxruntime.so*")))
        if found:
            return found[-1]
    return None


def set_default() -> None:
    """Point ASCEND_SIM_ORT_LIB at the installed wheel's library, unless it is
    set (even empty).  Called when the simulator backend is loaded."""
    if ENV not in os.environ:
        path = find()
        if path:
            os.environ[ENV] = path
