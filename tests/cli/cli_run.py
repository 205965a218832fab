"""Helpers for the CLI tests: run ``ascend-engine`` in a child process, check its output."""

import os
import shutil
import subprocess
import sys

# Children run on the simulator, quietly, whatever the parent's environment says.
CHILD_ENV = {"ASCEND_ENGINE_BACKEND": "sim"}


def run_cli(*args, env=None, script=False, timeout=120, cwd=None):
    """Run ``python -m ascend_engine ARGS`` (or the installed ``ascend-engine`` script)."""
    full_env = dict(os.environ, **CHILD_ENV)
    full_env.pop("ASCEND_SIM_FAULTS", None)
    if env:
        full_env.update(env)
    if script:
        exe = shutil.which("ascend-engine") or os.path.join(os.path.dirname(sys.executable), "ascend-engine")
        cmd = [exe, *args]
    else:
        cmd = [sys.executable, "-m", "ascend_engine", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd)


def ok(proc):
    """Assert a zero exit status, showing the child's output when it is not."""
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def error_line(proc):
    """The single ``ascend-engine: error: ...`` line a failure prints (asserted to be alone)."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in lines if ln.startswith("ascend-engine: error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def parser_error(proc, command="bench"):
    """The message of an argparse refusal: stderr is the pointer to ``--help`` and the one error line
    (not the whole usage), asserted; returns what follows ``error: ``."""
    prog = f"ascend-engine {command}".strip()
    assert proc.returncode == 2, proc.stderr
    pointer, line = proc.stderr.splitlines()
    assert pointer == f"{prog} --help lists the options", proc.stderr
    assert line.startswith(f"{prog}: error: "), proc.stderr
    return line[len(f"{prog}: error: "):]
