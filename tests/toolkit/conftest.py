"""Fixtures for the toolkit tests: one toolkit folder and one CMake build per session.

The toolkit is laid out with ``ascend_engine.toolkit.make_toolkit`` (what
``ascend-engine sim toolkit DIR`` runs) and the sample programs under
``samples/`` are configured and built with CMake from a shell that sourced the
toolkit's ``env.sh``, as a user would.  Everything is built once per session.

The only reason to skip is that the real CANN headers cannot be fetched; that
skip is loud (a warning and a reason saying the toolkit was NOT checked).
"""

import os
import shutil
import subprocess
import warnings

import pytest

from ascend_engine import toolkit

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples")
PROGRAMS = (
    "classify_sync",
    "classify_async",
    "dynamic_batch",
    "api_coverage",
    "client_files",
    "client_gears",
    "client_async_free",
    "jpeg_resize",
    "aipp_static",
    "acllite_style",
    "dvpp_aipp_detect",
)


def _headers():
    try:
        return toolkit.find_headers(None)
    except toolkit.ToolkitError as exc:
        msg = f"TOOLKIT NOT CHECKED: the real AscendCL headers could not be fetched: {exc}"
        warnings.warn(msg, stacklevel=1)
        print("\n!!! " + msg)
        return None


@pytest.fixture(scope="session")
def cann_headers():
    path = _headers()
    if path is None:
        pytest.skip("TOOLKIT NOT CHECKED: real AscendCL headers unavailable (see warning)")
    return path


@pytest.fixture(scope="session")
def toolkit_dir(tmp_path_factory, cann_headers):
    return toolkit.make_toolkit(str(tmp_path_factory.mktemp("toolkit") / "latest"), headers=cann_headers)


def sourced_env(toolkit_home):
    """The environment of a bash shell after `source env.sh`."""
    env = dict(os.environ)
    env.pop("ASCEND_SIM_FAULTS", None)
    out = subprocess.run(
        ["bash", "-c", f'source "{toolkit_home}/env.sh" && env -0'],
        capture_output=True,
        check=True,
        env=env,
    ).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


@pytest.fixture(scope="session")
def toolkit_env(toolkit_dir):
    return sourced_env(toolkit_dir)


@pytest.fixture(scope="session")
def samples_build(tmp_path_factory, toolkit_env):
    """Folder holding the sample executables, built through the toolkit."""
    cmake = shutil.which("cmake", path=toolkit_env.get("PATH"))
    assert cmake, "cmake is required for tests/toolkit (pip install cmake)"
    build = str(tmp_path_factory.mktemp("samples-build"))
    for cmd in (
        [cmake, "-S", SAMPLES, "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
        [cmake, "--build", build, "-j2"],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=toolkit_env)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    for name in PROGRAMS:
        assert os.path.exists(os.path.join(build, name)), f"{name} was not built"
    return build


@pytest.fixture(scope="session")
def run_sample(samples_build, toolkit_env):
    def run(name, *args, extra_env=None, timeout=60):
        env = dict(toolkit_env)
        env.update(extra_env or {})
        return subprocess.run(
            [os.path.join(samples_build, name), *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )

    return run
