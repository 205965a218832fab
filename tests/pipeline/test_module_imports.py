"""No import cycle between the planner, the engine and serving.

Each module imports alone in a fresh interpreter; and, with the package's
``__init__`` (which imports everything) left out, the modules that must stay
below others import without them: shapes.py without the planner or the
executor, the planner without the executor (never: ``compile()`` sits above
it, in ascend_engine/pipeline.py), serving without either.
"""

import ast
import os
import subprocess
import sys
import textwrap

import pytest

import ascend_engine

PACKAGE = os.path.dirname(ascend_engine.__file__)

MODULES = [
    "ascend_engine.planner",
    "ascend_engine.planner.builder",
    "ascend_engine.planner.validate",
    "ascend_engine.planner.nodes",
    "ascend_engine.planner.placement",
    "ascend_engine.planner.memory",
    "ascend_engine.planner.plan",
    "ascend_engine.planner.models",
    "ascend_engine.planner.images",
    "ascend_engine.native_step",
    "ascend_engine._gears",
    "ascend_engine.shapes",
    "ascend_engine.serving",
    "ascend_engine.requests",
    "ascend_engine.timeline",
    "ascend_engine.options",
    "ascend_engine._model",
    "ascend_engine._executor",
    "ascend_engine._lowering",
    "ascend_engine.engine",
    "ascend_engine.spec",
    "ascend_engine.pipeline",
    "ascend_engine.steps",
    "ascend_engine.steps.nodes",
    "ascend_engine.steps.reference",
    "ascend_engine.spec_steps",
]

PLANNER = "ascend_engine.planner"
ENGINE = "ascend_engine._executor"
RUNTIME = ("ascend_engine._runtime", "ascend_engine._model", ENGINE, "ascend_engine._lowering")
# the modules above the planner, which the planner may not import either
ABOVE_THE_PLANNER = ("ascend_engine.pipeline", "ascend_engine.replicas", "ascend_engine.engine",
                     "ascend_engine._lowering")

# module -> the modules it may not pull in by its own imports
MUST_NOT_LOAD = {
    "ascend_engine.shapes": (PLANNER, ENGINE),
    "ascend_engine.serving": (PLANNER, ENGINE, "ascend_engine.shapes"),
    "ascend_engine.requests": (PLANNER, ENGINE),
    "ascend_engine.timeline": (PLANNER, ENGINE) + RUNTIME,
    "ascend_engine.options": (PLANNER, ENGINE) + RUNTIME,
    "ascend_engine.planner": (ENGINE, "ascend_engine._lowering", "ascend_engine.engine"),
    "ascend_engine.planner.builder": (ENGINE, "ascend_engine._lowering", "ascend_engine.engine"),
    "ascend_engine.planner.images": (ENGINE, "ascend_engine._lowering", "ascend_engine.engine"),
    # the device queue never calls up into the Engine, the server's front end or compile()
    "ascend_engine._executor": ("ascend_engine.engine", "ascend_engine.pipeline", "ascend_engine.server",
                                PLANNER),
    "ascend_engine._lowering": ("ascend_engine.engine", ENGINE, PLANNER),
    "ascend_engine.native_step": (PLANNER, ENGINE) + RUNTIME,
    "ascend_engine._gears": (PLANNER, ENGINE) + RUNTIME,
    "ascend_engine.planner.models": RUNTIME,
    "ascend_engine.planner.validate": RUNTIME + ("ascend_engine.planner.builder",),
    "ascend_engine.planner.nodes": RUNTIME + ("ascend_engine.planner.builder",),
    "ascend_engine.planner.placement": RUNTIME + ("ascend_engine.planner.builder",),
    "ascend_engine.planner.memory": RUNTIME + (PLANNER + ".builder", PLANNER + ".plan"),
    "ascend_engine.planner.plan": RUNTIME + ("ascend_engine.planner.builder",),
    "ascend_engine.steps.reference": (PLANNER, ENGINE) + RUNTIME,
    "ascend_engine.steps.nodes": (ENGINE,),
}


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ), check=False)


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    result = run(f"import {module}")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", sorted(MUST_NOT_LOAD))
def test_a_module_does_not_pull_in_the_layers_above_it(module):
    # a bare package object stands in for ascend_engine/__init__.py, so only
    # the module's own imports (and theirs) are loaded
    code = textwrap.dedent(f"""
        import sys, types
        package = types.ModuleType("ascend_engine")
        package.__path__ = [{PACKAGE!r}]
        sys.modules["ascend_engine"] = package
        import {module}
        print("\\n".join(sorted(m for m in sys.modules if m.startswith("ascend_engine"))))
    """)
    result = run(code)
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.split()
    assert module in loaded
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in MUST_NOT_LOAD[module])]
    assert not bad, f"importing {module} loads {bad}"


def test_the_planner_never_imports_the_executor():
    """Not at import time, not inside a function: compile() is above the planner."""
    where = []
    folder = os.path.join(PACKAGE, "planner")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(folder, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == ENGINE or n.startswith(ENGINE + ".") or n in ABOVE_THE_PLANNER for n in names):
                where.append((name, node.lineno))
    assert where == []
