"""Running pyACL code as a user runs it on the simulator: a fresh process with
what `eval "$(ascend-engine sim env)"` sets (ASCEND_ENGINE_BACKEND=sim and the
shim folder first on PYTHONPATH), so that `import acl` is ascend_engine.acl.
A process each: acl.init/acl.finalize are once per process, as in CANN."""

import os
import subprocess
import sys

from ascend_engine import sim_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = os.path.join(REPO, "tests", "pyacl", "programs")


def pyacl_env(**extra):
    """The environment `sim env` gives a shell, for a child process."""
    env = dict(os.environ)
    env["ASCEND_ENGINE_BACKEND"] = "sim"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (sim_env.shim_folder(), REPO, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def run_program(name, *args, timeout=120, **env):
    """Run programs/<name> with args; returns the finished process (stdout, stderr, returncode)."""
    return subprocess.run([sys.executable, os.path.join(PROGRAMS, name), *map(str, args)],
                          env=pyacl_env(**env), capture_output=True, text=True, timeout=timeout)


def run_code(code, timeout=60, **env):
    """Run a snippet of pyACL code (`import acl` first) in a fresh process."""
    return subprocess.run([sys.executable, "-c", code], env=pyacl_env(**env), capture_output=True, text=True,
                          timeout=timeout)
