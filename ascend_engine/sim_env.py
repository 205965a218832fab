"""``ascend-engine sim env``: the lines that make ``import acl`` resolve to
``ascend_engine.acl`` (pyACL's API on the simulator), for ``cli.py``.

The folder ``ascend_engine/pyacl_shim`` holds one module, ``acl.py``, which
stands for pyACL; ``sim env`` prepends it to PYTHONPATH.  On a machine where
another ``acl`` is importable (CANN's own pyACL, whose ``set_env.sh`` puts it
on PYTHONPATH), nothing is shadowed unless asked: ``--pyacl=shim``.
"""

from __future__ import annotations

import importlib.machinery
import os
import shlex
import sys

PYACL_MODES = ("auto", "shim", "off")


def shim_folder() -> str:
    """The folder whose ``acl.py`` stands for pyACL."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyacl_shim")


def other_pyacl(path: list[str] | None = None) -> str | None:
    """Where an ``acl`` module other than the shim would be imported from (CANN's
    pyACL), or None."""
    shim = os.path.realpath(shim_folder())
    entries = [p for p in (sys.path if path is None else path)
               if p and os.path.isdir(p) and os.path.realpath(p) != shim]
    spec = importlib.machinery.PathFinder.find_spec("acl", entries)
    return None if spec is None else (spec.origin or ", ".join(spec.submodule_search_locations or []))


def pyacl_lines(mode: str = "auto", path: list[str] | None = None) -> list[str]:
    """Shell lines putting the shim on PYTHONPATH, or comments saying why not."""
    if mode not in PYACL_MODES:
        raise ValueError(f"--pyacl={mode!r}: expected one of {', '.join(PYACL_MODES)}")
    if mode == "off":
        return []
    found = other_pyacl(path)
    if found is not None and mode == "auto":
        return [f"# pyACL: another acl module is importable ({found}): not shadowed;",
                "#   --pyacl=shim makes `import acl` the simulator's (ascend_engine.acl) all the same"]
    q = shlex.quote(shim_folder())
    lines = ["# pyACL programs (import acl) run on the simulator through ascend_engine.acl (docs/pyacl.md):",
             f'export PYTHONPATH={q}"${{PYTHONPATH:+:$PYTHONPATH}}"']
    if found is not None:
        lines.insert(1, f"#   it shadows the acl module at {found} (--pyacl=shim)")
    return lines
