"""Fetch the genuine AscendCL (CANN) headers into a cache outside any source tree.

The real headers ship inside the torch-npu wheel (``torch_npu/include/acl/``
and its siblings).  ``ensure_headers()`` downloads that wheel with pip,
extracts only ``torch_npu/include/`` and returns the include directory to pass
as ``-I<dir>`` (the parent of ``acl/``).  The conformance tests compile our
sources against it and ``ascend-engine sim toolkit`` copies it into the
toolkit folder.  The headers are never copied into the package or the
repository.

Command line (the same options three ways)::

    ascend-engine sim headers [--cache DIR] [--print-include]
    python -m ascend_engine.cann_headers [--cache DIR] [--print-include]
    python tools/cann_headers.py [--cache DIR] [--print-include]   # in a source checkout

* ``--cache DIR``: where to keep them (default: ``$XDG_CACHE_HOME`` or
  ``~/.cache``, then ``ascend-engine/cann-<version>``).
* ``--print-include``: print only the include directory (no progress
  messages), for ``-I$(ascend-engine sim headers --print-include)``.
* ``AE_CANN_HEADERS=<dir>``: use an existing include directory (one that
  contains ``acl/acl.h``) instead of downloading anything.

Exit status 0 on success, 2 when the headers cannot be obtained (no network,
pip failure, unexpected wheel contents); the message says why.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

TORCH_NPU_VERSION = "2.14.0"
INCLUDE_PREFIX = "torch_npu/include/"
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def source_root() -> str | None:
    """The source checkout this module runs from, or None for an installed package.

    A checkout is recognised by its pyproject.toml and include/ascend_engine/
    beside the package folder; an installed package has neither.
    """
    root = os.path.dirname(PACKAGE)
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isdir(
        os.path.join(root, "include", "ascend_engine")
    ):
        return root
    return None


class CannHeadersUnavailable(RuntimeError):
    """The CANN headers could not be found or fetched; the message says why."""


def default_cache() -> str:
    """The cache directory used when --cache is not given."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ascend-engine", f"cann-{TORCH_NPU_VERSION}")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


def _log(quiet: bool, msg: str) -> None:
    if not quiet:
        print(f"cann_headers: {msg}", file=sys.stderr)


def _download(wheel_dir: str, quiet: bool) -> str:
    """pip-download the torch-npu wheel into wheel_dir; return the wheel's path."""
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", wheel_dir]
    spec = f"torch-npu=={TORCH_NPU_VERSION}"
    attempts = [
        base + [spec],
        # The headers are the same in every build of the wheel: when none
        # matches this interpreter, take the CPython 3.11 x86-64 one.
        base
        + ["--python-version", "3.11", "--implementation", "cp"]
        + ["--platform", "manylinux_2_28_x86_64", spec],
    ]
    errors = []
    for cmd in attempts:
        _log(quiet, "running " + " ".join(cmd[2:]))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = glob.glob(os.path.join(wheel_dir, "torch_npu-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        errors.append(" | ".join(tail) or f"pip exited with {proc.returncode}")
    raise CannHeadersUnavailable(
        f"could not download torch-npu=={TORCH_NPU_VERSION} with pip: " + " || ".join(errors)
    )


def _extract(wheel: str, dest: str) -> None:
    """Extract only torch_npu/include/ from the wheel into dest (atomically)."""
    tmp = tempfile.mkdtemp(prefix=".extract-", dir=dest)
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.namelist() if m.startswith(INCLUDE_PREFIX) and ".." not in m.split("/")]
            if not any(m == INCLUDE_PREFIX + "acl/acl.h" for m in members):
                raise CannHeadersUnavailable(f"{os.path.basename(wheel)} has no {INCLUDE_PREFIX}acl/acl.h")
            for m in members:
                zf.extract(m, tmp)
        final = os.path.join(dest, "torch_npu")
        if os.path.exists(final):
            shutil.rmtree(final)
        os.replace(os.path.join(tmp, "torch_npu"), final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_headers(cache: str | None = None, quiet: bool = True) -> str:
    """Return an include directory containing acl/acl.h, downloading it if needed.

    Raises CannHeadersUnavailable with the reason when that is not possible.
    """
    override = os.environ.get("AE_CANN_HEADERS")
    if override:
        if not os.path.isfile(os.path.join(override, "acl", "acl.h")):
            raise CannHeadersUnavailable(f"AE_CANN_HEADERS={override} does not contain acl/acl.h")
        return os.path.abspath(override)

    cache = os.path.abspath(cache or default_cache())
    # CANN's headers are not ours to redistribute: keep them out of the
    # checkout (where git or an sdist could pick them up) and the package.
    for folder, what in ((source_root(), "the source checkout"), (PACKAGE, "the installed package")):
        if folder and _inside(cache, folder):
            raise CannHeadersUnavailable(
                f"cache {cache} is inside {what} ({folder}); the headers must stay outside"
            )
    include = os.path.join(cache, "torch_npu", "include")
    if os.path.isfile(os.path.join(include, "acl", "acl.h")):
        _log(quiet, f"using cached headers in {include}")
        return include

    os.makedirs(cache, exist_ok=True)
    wheel_dir = tempfile.mkdtemp(prefix=".wheel-", dir=cache)
    try:
        wheel = _download(wheel_dir, quiet)
        _log(quiet, f"extracting {INCLUDE_PREFIX} from {os.path.basename(wheel)}")
        _extract(wheel, cache)
    finally:
        shutil.rmtree(wheel_dir, ignore_errors=True)  # keep only the headers
    return include


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line options, shared by this module's main() and ``ascend-engine sim headers``."""
    parser.add_argument("--cache", metavar="DIR", help=f"cache directory (default: {default_cache()})")
    parser.add_argument("--print-include", action="store_true", help="print only the include directory")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        include = ensure_headers(args.cache, quiet=args.print_include)
    except CannHeadersUnavailable as exc:
        print(f"cann_headers: {exc}", file=sys.stderr)
        return 2
    print(include)
    return 0


if __name__ == "__main__":
    sys.exit(main())
