"""Fixtures for the packaging tests: one sdist of the checkout per session.

The sdist is built with ``python -m build --sdist --no-isolation`` from the
test environment (the test extra installs build and a recent setuptools), so
no download happens; compiling a wheel from it is left to .ci/run, which
installs the sdist into a fresh venv.

It is built from a copy of the checkout without its build output: setuptools
adds every file of an existing ``*.egg-info/SOURCES.txt`` to a new sdist, so an
sdist built in place after ``pip install -e .`` could carry files that
MANIFEST.in no longer names, and hide the very omission these tests look for.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def setup_module():
    """setup.py loaded as a module (its main() does not run): build_inputs() and friends."""
    spec = importlib.util.spec_from_file_location("ae_setup", os.path.join(REPO, "setup.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Build output, caches and version control: what a copy for building leaves out.
NOT_COPIED = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".*_cache", ".hypothesis", ".benchmarks"
)


@pytest.fixture(scope="session")
def sdist(tmp_path_factory):
    """Path of an sdist built from (a clean copy of) the checkout."""
    src = tmp_path_factory.mktemp("checkout") / "src"
    # copy2 keeps the times, so cythonize finds the copied .c files up to date
    shutil.copytree(REPO, src, ignore=NOT_COPIED)
    out = tmp_path_factory.mktemp("sdist")
    cmd = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
    assert proc.returncode == 0, (
        "building the sdist failed (the test extra provides build and setuptools>=77: "
        f"pip install -e '.[test]'):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    (path,) = out.glob("ascend_engine-*.tar.gz")
    return path


@pytest.fixture(scope="session")
def sdist_members(sdist):
    """{repository-relative path: TarInfo} of the sdist's files (its top folder stripped)."""
    with tarfile.open(sdist) as tar:
        members = {}
        for info in tar.getmembers():
            top, _, rest = info.name.partition("/")
            assert top == sdist.name[: -len(".tar.gz")], f"member outside the top folder: {info.name}"
            if info.isfile():
                members[rest] = info
    return members


@pytest.fixture
def sdist_tree(sdist, tmp_path):
    """The sdist unpacked into a fresh folder (one per test, so tests may damage it)."""
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    return root
