"""pyACL's API (``import acl``) over the project's run-time AscendCL table.

``import ascend_engine.acl as acl`` gives a module with pyACL's names,
signatures and return conventions -- ``acl.init()``, ``acl.rt.malloc(size,
policy) -> (ptr, ret)``, ``acl.mdl.get_input_dims(desc, i) -> (dims, ret)``,
``acl.util.ptr_to_bytes``, ``acl.media.dvpp_*`` -- calling AscendCL through the
same function table as the engine: the simulator, or a real CANN install
(``ASCEND_ENGINE_BACKEND``).  ``eval "$(ascend-engine sim env)"`` makes a plain
``import acl`` resolve to it, so pyACL programs run unchanged on the
simulator.

Handles and pointers are ints; AscendCL failures are return codes, not
exceptions.  Submodules: ``rt``, ``mdl``, ``media``, ``util``, ``op`` and
``prof`` (the single-operator and profiling functions answer
ACL_ERROR_API_NOT_SUPPORT).  The function list, what is not supported and how
to run a pyACL program on the simulator: docs/pyacl.md.
"""

import sys
import types

from ascend_engine import _pyacl

NAMESPACES = ("rt", "mdl", "media", "util", "op", "prof")

# ACL_ERROR_API_NOT_SUPPORT: what the functions the simulator cannot do return.
NOT_SUPPORTED = 200001


def _functions(namespace: str) -> dict:
    merged = dict(_pyacl.GENERATED.get(namespace, {}))
    merged.update(_pyacl.SPECIAL.get(namespace, {}))
    return merged


def _namespace(name: str) -> types.ModuleType:
    module = types.ModuleType(f"{__name__}.{name}", f"pyACL's acl.{name} (docs/pyacl.md).")
    for leaf, fn in sorted(_functions(name).items()):
        setattr(module, leaf, fn)
    module.__all__ = sorted(_functions(name))
    # `import acl.rt` and `from acl import rt` both work, as with pyACL.
    sys.modules[module.__name__] = module
    return module


rt = _namespace("rt")
mdl = _namespace("mdl")
media = _namespace("media")
util = _namespace("util")
op = _namespace("op")
prof = _namespace("prof")

globals().update(_functions(""))


def function_names() -> list:
    """Every pyACL function of the module, as ``acl.rt.malloc``..., sorted."""
    names = [f"acl.{leaf}" for leaf in _functions("")]
    for ns in NAMESPACES:
        names += [f"acl.{ns}.{leaf}" for leaf in _functions(ns)]
    return sorted(names)


def unsupported_names() -> list:
    """The functions that always answer ACL_ERROR_API_NOT_SUPPORT (docs/pyacl.md), sorted."""
    return sorted(_pyacl.UNSUPPORTED)


__all__ = ["NAMESPACES", "NOT_SUPPORTED", "function_names", "unsupported_names", *NAMESPACES,
           *sorted(_functions(""))]
