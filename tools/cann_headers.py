#!/usr/bin/env python3
"""Fetch the genuine AscendCL (CANN) headers into a cache outside the repository.

The real headers ship inside the torch-npu wheel (``torch_npu/include/acl/``
and its siblings).  This tool downloads that wheel with pip, extracts only
``torch_npu/include/`` and prints the include directory to pass as
``-I<dir>`` (the parent of ``acl/``).  The conformance tests compile our
sources against it.  The headers are never copied into the repository.

Usage::

    python tools/cann_headers.py [--cache DIR] [--print-include]

* ``--cache DIR``: where to keep them (default: ``$XDG_CACHE_HOME`` or
  ``~/.cache``, then ``ascend-engine/cann-<version>``).
* ``--print-include``: print only the include directory (no progress
  messages), for ``-I$(python tools/cann_headers.py --print-include)``.
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
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CannHeadersUnavailable(RuntimeError):
    """The CANN headers could not be found or fetched; the message says why."""


def default_cache() -> str:
    """The cache directory used when --cache is not given."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ascend-engine", f"cann-{TORCH_NPU_VERSION}")


def _inside_repo(path: str) -> bool:
    path = os.path.realpath(path)
    repo = os.path.realpath(REPO)
    return path == repo or path.startswith(repo + os.sep)


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
    if _inside_repo(cache):
        raise CannHeadersUnavailable(f"cache {cache} is inside the repository; the headers must stay outside")
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


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", help=f"cache directory (default: {default_cache()})")
    ap.add_argument("--print-include", action="store_true", help="print only the include directory")
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
