#!/usr/bin/env python3
"""Mutation testing: plant one realistic bug at a time and check the tests catch it.

Each mutant is a text edit on one source file (C, Cython or Python): an exact
snippet of the original and its replacement, with a description and the test
paths (folders or files) that cover it.  The list lives in
``tools/mutants.toml``.  For every selected mutant the tool

1. checks that the snippet occurs exactly once in the file (otherwise the
   mutant is *stale*: reported, not counted);
2. applies the edit, and rebuilds the native extensions when the file is
   native (``.c``, ``.h``, ``.pyx``, ``.pxd``, ``.pxi``; ``setup.py build_ext --inplace``
   recompiles only the extensions whose sources changed; a ``.py`` file needs
   no build);
3. runs ``pytest -x -q`` on the covering paths with a per-mutant timeout: a
   failure *kills* the mutant, a run past the timeout kills it *by timeout*
   (a hang is a detected bug), a pass means it *survived*;
4. restores the original bytes, always (``try``/``finally``, Ctrl-C included),
   and verifies the file is byte-identical.

At the end the original is rebuilt when any native file was mutated, and the
score (killed / (killed + survived)) and the survivors are printed.  A
journal under ``build/mutate/`` holds the original of the file being
mutated, so a run killed outright (SIGKILL, power loss) is repaired by the
next run before it starts.

Usage::

    python tools/mutate.py --list
    python tools/mutate.py [--id ID ...] [--file SUBSTRING ...] [--timeout SECONDS]
                           [--mutants FILE] [--root DIR] [--no-baseline]

Exit status: 0 when every counted mutant was killed, 1 when some survived,
2 on a usage or setup error (bad mutant file, baseline tests failing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10: the same parser, packaged as tomli
    import tomli as tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MUTANTS = os.path.join(REPO, "tools", "mutants.toml")
NATIVE_SUFFIXES = (".c", ".h", ".pyx", ".pxd", ".pxi")
JOURNAL = os.path.join("build", "mutate", "journal.json")
REQUIRED = ("id", "file", "original", "replacement", "description", "tests")


class MutantFileError(ValueError):
    """The mutant list is malformed; the message names the entry and the field."""


@dataclass
class Mutant:
    """One planted bug: replace ``original`` by ``replacement`` in ``file``."""

    id: str
    file: str
    original: str
    replacement: str
    description: str
    tests: list = field(default_factory=list)

    @property
    def native(self) -> bool:
        """True when applying it needs a rebuild of the extensions."""
        return self.file.endswith(NATIVE_SUFFIXES)


@dataclass
class Outcome:
    """What happened to one mutant."""

    mutant: Mutant
    status: str          # killed, timeout, survived, stale, build-error
    seconds: float = 0.0
    detail: str = ""

    @property
    def counted(self) -> bool:
        return self.status in ("killed", "timeout", "survived")


def load_mutants(path: str) -> list[Mutant]:
    """Read and validate the mutant list (TOML, an array of ``[[mutant]]`` tables)."""
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise MutantFileError(f"{path}: not valid TOML: {exc}") from exc
    entries = data.get("mutant")
    if not isinstance(entries, list) or not entries:
        raise MutantFileError(f"{path}: expected [[mutant]] tables, found none")
    mutants, seen = [], set()
    for k, entry in enumerate(entries):
        where = f"{path}: mutant #{k + 1}" + (f" ({entry.get('id')!r})" if "id" in entry else "")
        missing = [key for key in REQUIRED if key not in entry]
        if missing:
            raise MutantFileError(f"{where}: missing {', '.join(missing)}")
        unknown = sorted(set(entry) - set(REQUIRED))
        if unknown:
            raise MutantFileError(f"{where}: unknown keys {unknown}; allowed: {list(REQUIRED)}")
        for key in ("id", "file", "original", "description"):
            if not isinstance(entry[key], str) or not entry[key]:
                raise MutantFileError(f"{where}: {key} must be a non-empty string, got {entry[key]!r}")
        if not isinstance(entry["replacement"], str):
            raise MutantFileError(f"{where}: replacement must be a string, got {entry['replacement']!r}")
        if entry["original"] == entry["replacement"]:
            raise MutantFileError(f"{where}: replacement is identical to original")
        tests = entry["tests"]
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
            raise MutantFileError(f"{where}: tests must be a non-empty list of test paths, got {tests!r}")
        if entry["id"] in seen:
            raise MutantFileError(f"{where}: duplicate id {entry['id']!r}")
        seen.add(entry["id"])
        mutants.append(Mutant(**{key: entry[key] for key in REQUIRED}))
    return mutants


def select(mutants: list[Mutant], ids=None, files=None) -> list[Mutant]:
    """The mutants whose id is in ``ids`` (all when empty) and whose file contains one of ``files``."""
    if ids:
        known = {m.id for m in mutants}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise MutantFileError(f"unknown mutant ids {unknown}")
        mutants = [m for m in mutants if m.id in ids]
    if files:
        mutants = [m for m in mutants if any(f in m.file for f in files)]
    return mutants


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: str, data: bytes) -> None:
    # A plain rewrite (not os.replace): the new mtime makes the build see the change.
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class Workspace:
    """Applies and reverts mutants under ``root``, journaling the original first."""

    def __init__(self, root: str):
        self.root = root
        self.journal = os.path.join(root, JOURNAL)

    def path(self, mutant: Mutant) -> str:
        return os.path.join(self.root, mutant.file)

    def match_count(self, mutant: Mutant) -> int:
        """How many times the mutant's original snippet occurs in its file (0 if the file is gone)."""
        try:
            with open(self.path(mutant), "rb") as f:
                text = f.read()
        except FileNotFoundError:
            return 0
        return text.count(mutant.original.encode())

    def apply(self, mutant: Mutant) -> bytes:
        """Plant the mutant; returns the original bytes.  The snippet must occur exactly once."""
        path = self.path(mutant)
        with open(path, "rb") as f:
            original = f.read()
        count = original.count(mutant.original.encode())
        if count != 1:
            raise MutantFileError(f"{mutant.id}: the original snippet occurs {count} times in {mutant.file}")
        os.makedirs(os.path.dirname(self.journal), exist_ok=True)
        backup = self.journal + ".orig"
        _write(backup, original)
        with open(self.journal, "w") as f:
            json.dump({"file": mutant.file, "backup": backup, "sha256": _digest(original)}, f)
        _write(path, original.replace(mutant.original.encode(), mutant.replacement.encode(), 1))
        return original

    def revert(self, mutant: Mutant, original: bytes) -> None:
        """Restore ``original`` and check the file is byte-identical; clears the journal."""
        path = self.path(mutant)
        _write(path, original)
        with open(path, "rb") as f:
            if _digest(f.read()) != _digest(original):
                raise RuntimeError(f"{mutant.file} differs from its original after reverting {mutant.id}: "
                                   f"restore it from {self.journal}.orig")
        self._clear()

    def recover(self) -> str | None:
        """Restore a file a previous run left mutated; returns its path, or None."""
        if not os.path.exists(self.journal):
            return None
        with open(self.journal) as f:
            entry = json.load(f)
        with open(entry["backup"], "rb") as f:
            original = f.read()
        if _digest(original) != entry["sha256"]:
            raise RuntimeError(f"the journal's backup {entry['backup']} is damaged: restore "
                               f"{entry['file']} from version control")
        _write(os.path.join(self.root, entry["file"]), original)
        self._clear()
        return entry["file"]

    def _clear(self) -> None:
        for p in (self.journal, self.journal + ".orig"):
            if os.path.exists(p):
                os.remove(p)


def _run(cmd, cwd, timeout):
    """Run ``cmd`` in its own process group; returns (returncode or None on timeout, output)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def build(root: str) -> tuple[bool, str]:
    """Rebuild the extensions in place; setuptools recompiles only what changed."""
    rc, out = _run([sys.executable, "setup.py", "build_ext", "--inplace", "-q", "-t", "build/tmp"],
                   root, None)
    return rc == 0, out


def run_tests(root: str, tests, timeout: float):
    """pytest -x -q on each path of ``tests`` in turn, stopping at the first failure.

    Returns (returncode, or None once ``timeout`` seconds have passed in all;
    output).  Each path runs in its own pytest process: the test folders
    each have a ``conftest.py`` their modules import by name, which one
    process cannot hold for two folders at once.
    """
    deadline = time.monotonic() + timeout
    outputs = []
    for path in tests:
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", path]
        rc, out = _run(cmd, root, max(0.0, deadline - time.monotonic()))
        outputs.append(out)
        if rc != 0:
            return rc, "".join(outputs)
    return 0, "".join(outputs)


def covering_paths(mutants) -> list[str]:
    """The distinct test paths of ``mutants``, without those inside another listed folder."""
    paths = sorted({t.rstrip("/") for m in mutants for t in m.tests})
    return [p for p in paths if not any(p.startswith(q + "/") for q in paths if q != p)]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class Runner:
    """Runs mutants one at a time, keeping the native build in step with the sources."""

    def __init__(self, root: str, timeout: float, log=print):
        self.ws = Workspace(root)
        self.root = root
        self.timeout = timeout
        self.log = log
        self.native_dirty = False   # the built extensions may not match the sources

    def run_one(self, mutant: Mutant) -> Outcome:
        count = self.ws.match_count(mutant)
        if count != 1:
            what = "not found" if count == 0 else f"found {count} times"
            return Outcome(mutant, "stale", detail=f"the original snippet is {what} in {mutant.file}")
        start = time.monotonic()
        original = self.ws.apply(mutant)
        try:
            if mutant.native:
                self.native_dirty = True
                ok, out = build(self.root)
                if not ok:
                    return Outcome(mutant, "build-error", time.monotonic() - start, _tail(out))
            elif self.native_dirty:
                self.restore_build()
            rc, out = run_tests(self.root, mutant.tests, self.timeout)
        finally:
            self.ws.revert(mutant, original)
        seconds = time.monotonic() - start
        if rc is None:
            return Outcome(mutant, "timeout", seconds, f"no result within {self.timeout:g} s")
        if rc == 0:
            return Outcome(mutant, "survived", seconds, _tail(out, 3))
        if rc in (1, 3):   # tests failed / internal error raised by the mutated code
            return Outcome(mutant, "killed", seconds, _tail(out, 3))
        return Outcome(mutant, "killed", seconds, f"pytest exit status {rc}: {_tail(out, 3)}")

    def restore_build(self) -> None:
        """Rebuild the unmutated sources if a native mutant was built since the last rebuild."""
        if not self.native_dirty:
            return
        ok, out = build(self.root)
        if not ok:
            raise RuntimeError(f"rebuilding the original sources failed:\n{_tail(out)}")
        self.native_dirty = False


def summarize(outcomes: list[Outcome]) -> tuple[str, int]:
    """The report text and the number of survivors."""
    counted = [o for o in outcomes if o.counted]
    killed = [o for o in counted if o.status in ("killed", "timeout")]
    survivors = [o for o in counted if o.status == "survived"]
    lines = []
    if counted:
        score = 100.0 * len(killed) / len(counted)
        timeouts = sum(o.status == "timeout" for o in counted)
        lines.append(f"mutation score: {len(killed)}/{len(counted)} killed ({score:.1f} %)"
                     + (f", {timeouts} of them by timeout" if timeouts else ""))
    else:
        lines.append("mutation score: no mutant was counted")
    for status, label in (("stale", "stale (not counted)"), ("build-error", "do not build (not counted)")):
        group = [o for o in outcomes if o.status == status]
        if group:
            lines.append(f"{label}: " + ", ".join(o.mutant.id for o in group))
    if survivors:
        lines.append("survivors:")
        for o in survivors:
            lines.append(f"  {o.mutant.id} ({o.mutant.file}): {o.mutant.description}")
    return "\n".join(lines), len(survivors)


def list_mutants(mutants: list[Mutant], ws: Workspace) -> str:
    rows = []
    for m in mutants:
        state = "" if ws.match_count(m) == 1 else "  [stale]"
        rows.append(f"{m.id:40} {m.file:36} {m.description}{state}")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the selected mutants and exit")
    parser.add_argument("--id", action="append", default=[], help="run this mutant (repeatable)")
    parser.add_argument("--file", action="append", default=[],
                        help="run the mutants of files whose path contains this (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds the covering tests may run per mutant (default 300)")
    parser.add_argument("--mutants", default=DEFAULT_MUTANTS, help="the mutant list (TOML)")
    parser.add_argument("--root", default=REPO, help="the repository the paths are relative to")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the covering tests unmutated first")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    try:
        mutants = select(load_mutants(args.mutants), args.id, args.file)
    except (OSError, MutantFileError) as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 2
    runner = Runner(args.root, args.timeout)
    recovered = runner.ws.recover()
    if recovered:
        print(f"mutate: restored {recovered}, left mutated by an interrupted run")
        runner.native_dirty = recovered.endswith(NATIVE_SUFFIXES)
    if args.list:
        print(list_mutants(mutants, runner.ws))
        return 0
    if not mutants:
        print("mutate: no mutant matches the selection", file=sys.stderr)
        return 2
    outcomes = []
    try:
        runner.restore_build()
        if not args.no_baseline:
            paths = covering_paths(mutants)
            print(f"baseline: {' '.join(paths)}", flush=True)
            rc, out = run_tests(args.root, paths, args.timeout * len(paths))
            if rc != 0:
                print(f"mutate: the covering tests fail without any mutant:\n{_tail(out)}", file=sys.stderr)
                return 2
        for k, m in enumerate(mutants, 1):
            outcome = runner.run_one(m)
            outcomes.append(outcome)
            print(f"[{k:3}/{len(mutants)}] {outcome.status:11} {outcome.seconds:6.1f}s  "
                  f"{m.id}: {m.description}", flush=True)
            if outcome.status in ("stale", "build-error"):
                print("      " + outcome.detail.replace("\n", "\n      "), flush=True)
    except KeyboardInterrupt:
        print("\nmutate: interrupted; the mutated file was restored", file=sys.stderr)
    finally:
        runner.restore_build()
    report, survivors = summarize(outcomes)
    print(report)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
