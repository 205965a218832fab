"""Shared fixtures for the conformance tests: compilers and a C-program runner
(the real CANN headers are the suite's ``cann_include`` fixture, tests/conftest.py)."""

import os
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def repo_root():
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def cc():
    """The C compiler (gcc); its absence is a failure, not a skip."""
    path = shutil.which("gcc")
    assert path, "gcc is required for the conformance tests"
    return path


@pytest.fixture(scope="session")
def cxx():
    """The C++ compiler (g++); its absence is a failure, not a skip."""
    path = shutil.which("g++")
    assert path, "g++ is required for the conformance tests"
    return path


@pytest.fixture(scope="session")
def sim_lib_dir():
    """Directory holding libascendcl_sim.so (link with -L<dir> -lascendcl_sim)."""
    import ascend_engine

    d = os.path.join(os.path.dirname(ascend_engine.__file__), "_lib")
    assert os.path.isfile(os.path.join(d, "libascendcl_sim.so")), (
        "simulator library not built (pip install -e .)"
    )
    return d


@pytest.fixture
def c_program(cc, sim_lib_dir, tmp_path):
    """A function that compiles a C program, links it to the simulator and runs it.

    ``c_program(source, include_dirs, extra_flags=(), timeout=120)`` returns
    ``(compile_result, run_result)``; run_result is None when compiling failed.
    Compiled with -Wall -Wextra -Werror; run with the simulator on the library path.
    """
    import subprocess

    def build_and_run(source, include_dirs, extra_flags=(), timeout=120):
        exe = os.path.join(str(tmp_path), os.path.splitext(os.path.basename(source))[0])
        cmd = [cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1"]
        cmd += [f"-I{d}" for d in include_dirs]
        cmd += [source, "-o", exe, f"-L{sim_lib_dir}", "-lascendcl_sim", f"-Wl,-rpath,{sim_lib_dir}"]
        cmd += ["-lm", "-pthread", *extra_flags]
        comp = subprocess.run(cmd, capture_output=True, text=True)
        if comp.returncode != 0:
            return comp, None
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = sim_lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        run = subprocess.run([exe], capture_output=True, text=True, timeout=timeout, env=env)
        return comp, run

    return build_and_run
