#!/usr/bin/env python3
"""Fetch the genuine CANN headers: the source checkout's entry to ``ascend_engine/cann_headers.py``.

The tool itself lives in the package, so that an installed copy has it too
(``ascend-engine sim headers``).  This file keeps ``python tools/cann_headers.py
[--cache DIR] [--print-include]`` working in a checkout, built or not, and
re-exports the module's names for scripts that load it by path.  Options and
exit status: see that module.
"""

import importlib.util
import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MODULE = os.path.join(_REPO, "ascend_engine", "cann_headers.py")


def _load():
    # By path rather than `import ascend_engine.cann_headers`: run as a script,
    # sys.path starts with tools/, so that import would find whichever
    # ascend_engine is installed (perhaps another checkout) and would first run
    # the package's __init__, which loads the native modules.
    spec = importlib.util.spec_from_file_location("ascend_engine_cann_headers", _MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_tool = _load()
CannHeadersUnavailable = _tool.CannHeadersUnavailable
TORCH_NPU_VERSION = _tool.TORCH_NPU_VERSION
default_cache = _tool.default_cache
ensure_headers = _tool.ensure_headers
main = _tool.main

if __name__ == "__main__":
    sys.exit(main(prog="tools/cann_headers.py"))
