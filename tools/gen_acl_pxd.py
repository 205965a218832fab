#!/usr/bin/env python3
"""Generate the Cython view of the AscendCL function table from its C list.

``include/ascend_engine/acl_functions.h`` lists every AscendCL function the
project calls, one ``AE_ACL_FN(required, return type, name, (parameters))``
entry each.  C expands that list into the loader's ``ae_acl_api`` struct of
function pointers; this tool writes two Cython files from it:

* ``ascend_engine/_acl_functions.pxi``, the same struct for Cython, which
  ``ascend_engine/_acl.pxd`` includes;
* ``ascend_engine/_acl_checked.pxi``, one checked wrapper per function, which
  ``ascend_engine/_runtime.pxd`` includes after the ``api_nogil()``,
  ``check()`` and ``missing_function()`` they call: ``checked_<name>(...)``
  for each function returning aclError (the missing-function error for an
  optional one the backend lacks, then the return code checked), and
  ``require_<name>()`` for each optional function (the missing-function error
  alone, for call sites that call the table themselves).

The tests of conformance with CANN read the list through :func:`parse` too, so
the C side, the Cython side and the checks share one source.

setup.py runs it on every build (the files are build output, not kept in git);
it rewrites a file only when its content changes, so an unchanged list does
not make Cython recompile anything.

Usage::

    python tools/gen_acl_pxd.py [--check]

``--check`` writes nothing and exits 1 when a file is missing or stale.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
import textwrap
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join("include", "ascend_engine", "acl_functions.h")
OUTPUT = os.path.join("ascend_engine", "_acl_functions.pxi")
CHECKED_OUTPUT = os.path.join("ascend_engine", "_acl_checked.pxi")
OUTPUTS = (OUTPUT, CHECKED_OUTPUT)

# aclError functions that get no checked_ wrapper, and why.
UNCHECKED = {
    "aclInit": "called once while the backend loads, before api() can return the table, and "
    "ACL_ERROR_REPEAT_INITIALIZE there is not an error (_load_and_init in ascend_engine/_runtime.pyx)",
}
# Names a wrapper's parameter cannot take: Cython's own words, and the local and
# the functions every wrapper uses.
_RESERVED = set(keyword.kwlist) | {
    "api", "by", "cdef", "cimport", "const", "cpdef", "ctypedef", "enum", "extern", "gil", "include",
    "inline", "nogil", "noexcept", "object", "public", "readonly", "signed", "sizeof", "struct", "union",
    "unsigned", "volatile", "NULL", "rc", "api_nogil", "check", "missing_function",
}
# One parameter: a type (no parentheses or brackets: function pointers and arrays
# go through a typedef) and a name.
_PARAMETER = re.compile(r"(?P<type>[^()\[\]]*?[\s*])(?P<name>[A-Za-z_]\w*)")

_ENTRY = re.compile(r"\bAE_ACL_FN\s*\(")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


class AclFunction(NamedTuple):
    """One entry of acl_functions.h."""

    required: bool
    ret: str  # return type, e.g. "aclError" or "const char *"
    name: str
    params: str  # parameter list without its parentheses; "" for (void)


class GenerateError(ValueError):
    """acl_functions.h holds something the generator cannot read; the message says where and what."""


def _strip_comments(text: str) -> str:
    """Blank out C comments, keeping every newline so line numbers stay right."""

    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))

    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def _split_arguments(text: str, start: int, where: str) -> tuple[list[str], int]:
    """The top-level, comma-separated arguments of the call whose '(' is at text[start - 1]."""
    args, depth, begin = [], 0, start
    for pos in range(start, len(text)):
        ch = text[pos]
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                args.append(text[begin:pos])
                return args, pos + 1
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[begin:pos])
            begin = pos + 1
    raise GenerateError(f"{where}: AE_ACL_FN( is never closed: expected ')' before the end of the file")


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _check_parameters(params: str, name: str, where: str) -> None:
    """Every parameter is ``type name`` with a name a wrapper can use."""
    if params in ("", "void"):
        return
    for param in params.split(","):
        match = _PARAMETER.fullmatch(param.strip())
        if match is None:
            raise GenerateError(
                f"{where}: expected a type and a name for each parameter of {name}, got {param.strip()!r}"
            )
        if match.group("name") in _RESERVED:
            raise GenerateError(
                f"{where}: parameter {match.group('name')!r} of {name} is a name the wrappers cannot use: "
                "rename it"
            )


def parse(text: str, filename: str = HEADER) -> list[AclFunction]:
    """The entries of an acl_functions.h text, in order.

    Raises GenerateError naming the line, what was expected and what was found
    for an entry that is not ``AE_ACL_FN(0|1, type, name, (params))``, for a
    name listed twice, and for a text with no entry at all.
    """
    code = _strip_comments(text)
    functions, seen = [], {}
    for match in _ENTRY.finditer(code):
        line = code.count("\n", 0, match.start()) + 1
        where = f"{filename}:{line}"
        args, _end = _split_arguments(code, match.end(), where)
        if len(args) != 4:
            raise GenerateError(
                f"{where}: expected 4 arguments (required, return type, name, (parameters)), "
                f"got {len(args)}: {_squeeze(','.join(args))!r}"
            )
        required, ret, name, params = (_squeeze(a) for a in args)
        if required not in ("0", "1"):
            raise GenerateError(f"{where}: expected 0 or 1 as the first argument, got {required!r}")
        if not _IDENTIFIER.fullmatch(name):
            raise GenerateError(f"{where}: expected a function name as the third argument, got {name!r}")
        if not ret:
            raise GenerateError(f"{where}: {name} has an empty return type")
        if not (params.startswith("(") and params.endswith(")")):
            raise GenerateError(
                f"{where}: expected the parameter list of {name} in parentheses, got {params!r}"
            )
        params = _squeeze(params[1:-1])
        _check_parameters(params, name, where)
        if name in seen:
            raise GenerateError(f"{where}: {name} is listed twice (first at line {seen[name]})")
        seen[name] = line
        functions.append(AclFunction(required == "1", ret, name, "" if params == "void" else params))
    if not functions:
        raise GenerateError(f"{filename}: no AE_ACL_FN(...) entry found")
    return functions


def declaration(fn: AclFunction) -> str:
    """The Cython struct member for one function: a nogil, noexcept function pointer."""
    pointer = f"(*{fn.name})"
    ret = f"{fn.ret}{pointer}" if fn.ret.endswith("*") else f"{fn.ret} {pointer}"
    return f"{ret}({fn.params}) noexcept nogil"


def render(functions: list[AclFunction]) -> str:
    """The text of _acl_functions.pxi for these functions."""
    lines = [
        f"# Generated from {HEADER.replace(os.sep, '/')} by tools/gen_acl_pxd.py: do not edit.",
        "# setup.py regenerates it on every build; ascend_engine/_acl.pxd includes it after the",
        "# types it uses.",
        "",
        'cdef extern from "ascend_engine/loader.h" nogil:',
        "    # One pointer per AE_ACL_FN entry; optional functions are NULL when the",
        "    # loaded library lacks them.",
        "    ctypedef struct ae_acl_api:",
    ]
    for fn in functions:
        lines.append(f"        {declaration(fn)}" + ("" if fn.required else "  # optional"))
    return "\n".join(lines) + "\n"


def parameter_names(fn: AclFunction) -> list[str]:
    """The names of a function's parameters, in order (parse() made sure each has one)."""
    if not fn.params:
        return []
    return [_PARAMETER.fullmatch(p.strip()).group("name") for p in fn.params.split(",")]


def checked(fn: AclFunction) -> bool:
    """Whether ``fn`` gets a checked_ wrapper: it returns aclError and is not in UNCHECKED."""
    return fn.ret == "aclError" and fn.name not in UNCHECKED


def require_wrapper(fn: AclFunction) -> str:
    """``require_<name>()``: the missing-function error for an optional function the backend lacks."""
    return "\n".join([
        f"cdef inline int require_{fn.name}() except -1 nogil:",
        f"    if api_nogil().{fn.name} is NULL:",
        "        with gil:",
        f'            return missing_function(b"{fn.name}")',
        "    return 0",
    ])


def checked_wrapper(fn: AclFunction) -> str:
    """``checked_<name>(...)``: call through the table, raise for a missing function or a non-zero code."""
    lines = [
        f"cdef inline int checked_{fn.name}({fn.params}) except -1 nogil:",
        "    cdef aclError rc",
    ]
    if not fn.required:
        lines.append(f"    require_{fn.name}()")
    lines += [
        f"    rc = api_nogil().{fn.name}({', '.join(parameter_names(fn))})",
        "    if rc == ACL_SUCCESS:",
        "        return 0",
        "    with gil:",
        f'        return check(rc, b"{fn.name}")',
    ]
    return "\n".join(lines)


def render_checked(functions: list[AclFunction]) -> str:
    """The text of _acl_checked.pxi for these functions."""
    lines = [
        f"# Generated from {HEADER.replace(os.sep, '/')} by tools/gen_acl_pxd.py: do not edit.",
        "# setup.py regenerates it on every build; ascend_engine/_runtime.pxd includes it after",
        "# api_nogil(), check() and missing_function(), which the wrappers call.",
        "#",
        "# checked_<name>(...), one per function returning aclError: calls it through the loaded",
        "# table; raises what check() raises for a non-zero return code, and for an optional",
        "# function the backend lacks the BackendError of missing_function().  0, or -1 raised.",
        "# require_<name>(), one per optional function: that BackendError alone, for call sites",
        "# that call the table themselves (a return code they read first, or no return code).",
        "# The wrappers run without the GIL and take it only to raise, so they may be called",
        "# inside `with nogil:`; check() reads the runtime's error message on the calling thread,",
        "# right after the failing call.",
        "#",
        "# No checked_ wrapper for functions returning something other than aclError (pointers,",
        "# sizes, names, data types, values): what they return is the result, with no error code",
        "# to check, and what NULL or 0 means is for the call site to say.  Nor for:",
    ]
    for name, why in UNCHECKED.items():
        lines += textwrap.wrap(f"{name}: {why}", 92, initial_indent="#   ", subsequent_indent="#     ")
    for fn in functions:
        if not fn.required:
            lines += ["", "", require_wrapper(fn)]
        if checked(fn):
            lines += ["", "", checked_wrapper(fn)]
    return "\n".join(lines) + "\n"


def _write_if_changed(path: str, text: str, check: bool) -> bool:
    """Write ``text`` to ``path`` unless it already holds it (with ``check``: never); True when it differs."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    if not check:
        # Through a temporary file, so a concurrent build never reads half of it.
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return True


def update(root: str = ROOT, check: bool = False) -> list[str]:
    """Bring ``root``'s generated files up to date with its acl_functions.h.

    Returns the OUTPUTS that were (with ``check``: would be) written, in order;
    empty when all already matched.
    """
    header = os.path.join(root, HEADER)
    if not os.path.isfile(header):
        raise GenerateError(f"{header} is missing: it is the source of the AscendCL function table")
    with open(header, encoding="utf-8") as f:
        functions = parse(f.read(), HEADER)
    texts = {OUTPUT: render(functions), CHECKED_OUTPUT: render_checked(functions)}
    return [out for out in OUTPUTS if _write_if_changed(os.path.join(root, out), texts[out], check)]


def generate(root: str = ROOT, check: bool = False) -> bool:
    """Bring ``root``'s generated files up to date with its acl_functions.h.

    Returns True when a file was (with ``check``: would be) written, False
    when all already matched.
    """
    return bool(update(root, check))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = ap.parse_args(argv)
    try:
        changed = update(ROOT, check=args.check)
    except GenerateError as exc:
        print(f"gen_acl_pxd: {exc}", file=sys.stderr)
        return 2
    if args.check and changed:
        for out in changed:
            print(f"gen_acl_pxd: {out} is missing or stale: run python tools/gen_acl_pxd.py", file=sys.stderr)
        return 1
    for out in OUTPUTS:
        print(f"{out}: {'written' if out in changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
