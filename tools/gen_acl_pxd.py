#!/usr/bin/env python3
"""Generate the Cython declaration of the AscendCL function table from its C list.

``include/ascend_engine/acl_functions.h`` lists every AscendCL function the
project calls, one ``AE_ACL_FN(required, return type, name, (parameters))``
entry each.  C expands that list into the loader's ``ae_acl_api`` struct of
function pointers; this tool writes the same struct for Cython into
``ascend_engine/_acl_functions.pxi``, which ``ascend_engine/_acl.pxd`` includes.
The tests of conformance with CANN read the list through :func:`parse` too, so
the C side, the Cython side and the checks share one source.

setup.py runs it on every build (the file is build output, not kept in git);
it rewrites the file only when the content changes, so an unchanged list does
not make Cython recompile anything.

Usage::

    python tools/gen_acl_pxd.py [--check]

``--check`` writes nothing and exits 1 when the file is missing or stale.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join("include", "ascend_engine", "acl_functions.h")
OUTPUT = os.path.join("ascend_engine", "_acl_functions.pxi")

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


def generate(root: str = ROOT, check: bool = False) -> bool:
    """Bring ``root``'s _acl_functions.pxi up to date with its acl_functions.h.

    Returns True when the file was (with ``check``: would be) written, False
    when it already matched.
    """
    header = os.path.join(root, HEADER)
    if not os.path.isfile(header):
        raise GenerateError(f"{header} is missing: it is the source of the AscendCL function table")
    with open(header, encoding="utf-8") as f:
        text = render(parse(f.read(), HEADER))
    output = os.path.join(root, OUTPUT)
    try:
        with open(output, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    if not check:
        # Through a temporary file, so a concurrent build never reads half of it.
        tmp = f"{output}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, output)
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is stale")
    args = ap.parse_args(argv)
    try:
        changed = generate(ROOT, check=args.check)
    except GenerateError as exc:
        print(f"gen_acl_pxd: {exc}", file=sys.stderr)
        return 2
    if args.check and changed:
        print(f"gen_acl_pxd: {OUTPUT} is missing or stale: run python tools/gen_acl_pxd.py", file=sys.stderr)
        return 1
    print(f"{OUTPUT}: {'written' if changed and not args.check else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
