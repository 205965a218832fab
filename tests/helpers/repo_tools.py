"""The repository's build tools (``tools/*.py``), loaded for tests: ``repo_tools.load("gen_acl_pxd")``.

tools/ is not a package: its scripts are run as programs and read by setup.py
by path, so tests load them the same way.
"""

import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, "tools")


def load(name: str):
    """The module tools/<name>.py, freshly executed."""
    path = os.path.join(TOOLS, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"ae_tool_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
