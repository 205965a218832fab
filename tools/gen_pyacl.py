#!/usr/bin/env python3
"""Generate the functions of ``ascend_engine.acl`` (pyACL's names) from one list.

``tools/pyacl_table.py`` lists every pyACL function the module has: its
pyACL name, the AscendCL or DVPP function it calls, which C parameters are
out-parameters, and whether the call releases the GIL; and the pyACL functions
the simulator cannot do.  This tool reads it, takes each C function's
signature from ``include/ascend_engine/acl_functions.h`` (through
``gen_acl_pxd.parse``, the same reading the loader's table comes from) or from
the table's DVPP prototypes, and writes ``ascend_engine/_pyacl_functions.pxi``:
one ``def`` per function (arguments converted and checked, the call through
the run-time table, pyACL's return convention) and ``GENERATED``, the map of
namespace -> name -> function that ``ascend_engine/_pyacl.pyx`` exports.

setup.py runs it on every build (the file is build output, not kept in git);
it rewrites the file only when its content changes.

Usage::

    python tools/gen_pyacl.py [--check]

``--check`` writes nothing and exits 1 when the file is missing or stale.
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import os
import re
import sys
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join("tools", "pyacl_table.py")
OUTPUT = os.path.join("ascend_engine", "_pyacl_functions.pxi")
OPTIONS = ("out", "echo", "nogil", "value")


def _load(name: str, root: str):
    path = os.path.join(root, "tools", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ae_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class GenerateError(ValueError):
    """The table holds something the generator cannot read; the message says where and what."""


# ---- C types -> Python kinds ---------------------------------------------------------------------

# integer C types: (lowest, highest) as the C constants of libc.stdint / limits.h; None: unsigned
INTEGERS = {
    "int8_t": ("INT8_MIN", "INT8_MAX"), "int16_t": ("INT16_MIN", "INT16_MAX"),
    "int32_t": ("INT32_MIN", "INT32_MAX"), "int64_t": ("INT64_MIN", "INT64_MAX"),
    "int": ("INT_MIN", "INT_MAX"),
    "uint8_t": (None, "UINT8_MAX"), "uint16_t": (None, "UINT16_MAX"), "uint32_t": (None, "UINT32_MAX"),
    "uint64_t": (None, "UINT64_MAX"), "size_t": (None, "SIZE_MAX"), "aclFloat16": (None, "UINT16_MAX"),
}  # fmt: skip
# enums: plain ints of the int32 range, cast to the enum type
ENUMS = {
    "aclrtRunMode", "aclrtMemMallocPolicy", "aclrtMemcpyKind", "aclDataType", "aclFormat",
    "aclrtCallbackBlockType", "aclrtMemAttr", "aclAippInputFormat", "aclrtFloatOverflowMode",
    "aclmdlInputAippType", "aclrtEventRecordedStatus", "aclrtStreamStatus",
}  # fmt: skip
FLOATS = {"float", "double"}
HANDLES = {"aclrtContext", "aclrtStream", "aclrtEvent"}  # typedefs of void *
DICTS = {"aclmdlIODims": "_dims_dict", "aclmdlBatch": "_batch_dict", "aclmdlHW": "_hw_dict"}
# DVPP's enums and opaque structs, for the media prototypes: ints and void
MEDIA_ENUMS = {"acldvppPixelFormat", "acldvppJpegFormat", "acldvppBorderType"}
_MEDIA_OPAQUE = re.compile(r"\bacldvpp[A-Za-z]*(Desc|Config)\b")


class Param(NamedTuple):
    ctype: str  # without const
    name: str  # the C name
    out: bool

    @property
    def pyname(self) -> str:
        """The Python name: the C name in snake case."""
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.name).lower()
        return f"{snake}_" if keyword.iskeyword(snake) else snake


class Function(NamedTuple):
    """One line of FUNCTIONS with the C signature it calls."""

    pyname: str  # "rt.malloc"
    cname: str
    ret: str
    params: list
    nogil: bool
    echo: str | None
    media: bool
    required: bool
    line: int

    @property
    def namespace(self) -> str:
        return self.pyname.rpartition(".")[0]

    @property
    def leaf(self) -> str:
        return self.pyname.rpartition(".")[2]

    @property
    def qualname(self) -> str:
        return f"acl.{self.pyname}"

    @property
    def ident(self) -> str:
        return "_f_" + self.pyname.replace(".", "_")


class Unsupported(NamedTuple):
    """One line of UNSUPPORTED."""

    pyname: str
    params: list
    returns: str  # "ret", "handle", "value" or "(a, ret)"-like
    line: int


def _strip_const(ctype: str) -> str:
    """The type without const, written ``T`` or ``T *`` / ``T **``."""
    words = [w for w in ctype.replace("*", " * ").split() if w != "const"]
    stars = words.count("*")
    base = " ".join(w for w in words if w != "*")
    return f"{base} {'*' * stars}" if stars else base


def _base(ctype: str) -> str:
    """``T`` for ``T *`` (one level of pointer less)."""
    t = _strip_const(ctype)
    if not t.endswith("*"):
        raise GenerateError(f"{ctype!r} is not a pointer")
    return t[:-1].strip()


def _split_params(text: str) -> list[tuple[str, str]]:
    if text.strip() in ("", "void"):
        return []
    out = []
    for p in text.split(","):
        m = re.fullmatch(r"\s*(?P<type>.*?[\s*])(?P<name>[A-Za-z_]\w*)\s*(?P<array>\[\])?\s*", p)
        if m is None:
            raise GenerateError(f"cannot read the parameter {p.strip()!r}")
        ctype = m.group("type").strip() + (" *" if m.group("array") else "")
        out.append((ctype, m.group("name")))
    return out


def parse_media(text: str) -> dict[str, tuple[str, list]]:
    """The MEDIA prototypes: name -> (return type, [(type, name)]), DVPP's types made void/int."""
    found = {}
    for m in re.finditer(r"([^;]*?)\b(acldvpp\w+)\s*\(([^)]*)\)\s*;", text):
        ret, name, params = " ".join(m.group(1).split()), m.group(2), m.group(3)

        def plain(t):
            t = _MEDIA_OPAQUE.sub("void", t)
            for e in MEDIA_ENUMS:
                t = re.sub(rf"\b{e}\b", "int", t)
            return t

        found[name] = (plain(ret), [(plain(t), n) for t, n in _split_params(params)])
    return found


def _options(fields: list[str], where: str) -> dict:
    opts = {"out": [], "echo": None, "nogil": False, "value": False}
    for f in fields:
        key, _, val = f.partition("=")
        if key not in OPTIONS:
            raise GenerateError(f"{where}: unknown option {f!r}; expected one of {', '.join(OPTIONS)}")
        if key == "out":
            opts["out"] = [v for v in val.split(",") if v]
        elif key == "echo":
            opts["echo"] = val
        else:
            opts[key] = True
    return opts


def parse_table(table, acl: dict) -> tuple[list[Function], list[Unsupported]]:
    """FUNCTIONS and UNSUPPORTED, checked against the C signatures."""
    media = parse_media(table.MEDIA)
    functions, seen = [], {}
    for n, raw in enumerate(table.FUNCTIONS.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{TABLE} FUNCTIONS line {n}"
        pyname, cname, *rest = line.split()
        opts = _options(rest, where)
        if pyname in seen:
            raise GenerateError(f"{where}: acl.{pyname} is listed twice (first on line {seen[pyname]})")
        seen[pyname] = n
        if cname in acl:
            fn = acl[cname]
            ret, params, required, is_media = fn.ret, _split_params(fn.params), fn.required, False
        elif cname in media:
            (ret, params), required, is_media = media[cname], False, True
        else:
            raise GenerateError(f"{where}: {cname} is neither in acl_functions.h nor in MEDIA")
        names = [p[1] for p in params]
        for o in opts["out"]:
            if o not in names:
                raise GenerateError(f"{where}: out={o} is not a parameter of {cname} ({', '.join(names)})")
        plist = [Param(_strip_const(t), nm, nm in opts["out"]) for t, nm in params]
        if opts["echo"] is not None and opts["echo"] not in [p.pyname for p in plist if not p.out]:
            raise GenerateError(f"{where}: echo={opts['echo']} is not an argument of acl.{pyname}")
        if ret != "aclError" and (opts["out"] or opts["echo"]):
            raise GenerateError(f"{where}: {cname} returns {ret}, not aclError: it cannot have out= or echo=")
        for p in plist:
            kind_of(p, f"{where}: {cname}")   # every type must be known
        functions.append(Function(pyname, cname, _strip_const(ret), plist, opts["nogil"], opts["echo"],
                                  is_media, required, n))
    unsupported = []
    for n, raw in enumerate(table.UNSUPPORTED.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{TABLE} UNSUPPORTED line {n}"
        m = re.fullmatch(r"([\w.]+)\(([^)]*)\)\s*->\s*(ret|handle|value|\(\w+, ret\))", line)
        if m is None:
            raise GenerateError(
                f"{where}: expected 'name(params) -> ret|handle|value|(x, ret)', got {line!r}"
            )
        if m.group(1) in seen:
            raise GenerateError(f"{where}: acl.{m.group(1)} is listed twice")
        seen[m.group(1)] = n
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        unsupported.append(Unsupported(m.group(1), params, m.group(3), n))
    return functions, unsupported


def kind_of(p: Param, where: str = "") -> str:
    """The Python kind of a parameter: int, enum, float, ptr, str, or for out-parameters out-<kind>."""
    t = p.ctype
    if p.out:
        b = _base(t)
        if b in INTEGERS:
            return "out-int"
        if b in ENUMS:
            return "out-enum"
        if b in FLOATS:
            return "out-float"
        if b in HANDLES or b.endswith("*"):
            return "out-ptr"
        if b in DICTS:
            return "out-dict"
        raise GenerateError(f"{where}: no Python kind for the out-parameter {p.name} of type {t}")
    if t == "char *":
        return "str"
    if t in INTEGERS:
        return "int"
    if t in ENUMS:
        return "enum"
    if t in FLOATS:
        return "float"
    if t in HANDLES or t.endswith("*"):
        return "ptr"
    raise GenerateError(f"{where}: no Python kind for the parameter {p.name} of type {t}")


# ---- rendering -------------------------------------------------------------------------------------

def _convert(p: Param, i: int, fn: Function) -> list[str]:
    """Lines converting Python argument p into local a<i>."""
    k, t, q = kind_of(p), p.ctype, f'"{fn.qualname}", "{p.pyname}"'
    if k == "int":
        lo, hi = INTEGERS[t]
        if lo is not None:
            return [f"    cdef {t} a{i} = <{t}>_sint({p.pyname}, {lo}, {hi}, {q})"]
        return [f"    cdef {t} a{i} = <{t}>_uint({p.pyname}, {hi}, {q})"]
    if k == "enum":
        return [f"    cdef {t} a{i} = <{t}>_sint({p.pyname}, INT32_MIN, INT32_MAX, {q})"]
    if k == "float":
        return [f"    cdef {t} a{i} = <{t}>_float({p.pyname}, {q})"]
    if k == "ptr":
        return [f"    cdef {t} a{i} = <{t}>_ptr({p.pyname}, {q})"]
    if k == "str":
        return [f"    cdef bytes s{i} = _cstr({p.pyname}, {q})", f"    cdef const char *a{i} = s{i}"]
    b = _base(t)
    zero = {"out-dict": "", "out-int": " = 0", "out-float": " = 0", "out-enum": f" = <{b}>0"}
    init = zero.get(k, " = NULL")
    lines = [f"    cdef {b} a{i}{init}"]
    if k == "out-dict":
        lines.append(f"    memset(&a{i}, 0, sizeof(a{i}))")
    return lines


def _out_value(p: Param, i: int) -> str:
    k = kind_of(p)
    if k == "out-ptr":
        return f"<uintptr_t>a{i}"
    if k == "out-enum":
        return f"<int>a{i}"
    if k == "out-dict":
        return f"{DICTS[_base(p.ctype)]}(&a{i})"
    return f"a{i}"


def _value_of(ret: str) -> tuple[str, str]:
    """(expression converting local r to Python, the fallback when the function is missing)."""
    if ret == "void":
        return "None", "None"
    if ret == "char *":
        return "_pystr(r)", '""'
    if ret in HANDLES or ret.endswith("*"):
        return "<uintptr_t>r", "0"
    if ret in ENUMS:
        return "<int>r", "0"
    if ret in INTEGERS or ret in FLOATS:
        return "r", "0"
    raise GenerateError(f"no Python value for the return type {ret}")


def render_function(fn: Function) -> str:
    args = [p for p in fn.params if not p.out]
    outs = [p for p in fn.params if p.out]
    sig = ", ".join(p.pyname for p in args)
    results = ([fn.echo] if fn.echo else []) + [p.pyname for p in outs]
    if fn.ret == "aclError":
        shape = f"({', '.join(results + ['ret'])})" if results else "ret"
    else:
        shape = "value"
    lines = [
        f"def {fn.ident}({sig}):",
        f'    """{fn.qualname}({sig}) -> {shape}: {fn.cname}{" (releases the GIL)" if fn.nogil else ""}."""',
    ]
    for i, p in enumerate(fn.params):
        lines += _convert(p, i, fn)
    call_args = ", ".join(f"&a{i}" if p.out else f"a{i}" for i, p in enumerate(fn.params))
    if fn.media:
        target, guard = f"_m_{fn.cname}", f"_media() and _m_{fn.cname} is not NULL"
    else:
        target = f"_t.{fn.cname}"
        guard = None if fn.required else f"_t.{fn.cname} is not NULL"
    prologue = "    _api()" if not fn.media else None
    if prologue:
        lines.append(prologue)
    if fn.ret == "aclError":
        lines.append("    cdef aclError rc = ACL_ERROR_API_NOT_SUPPORT")
        call = f"rc = {target}({call_args})"
    elif fn.ret == "void":
        call = f"{target}({call_args})"
    else:
        rtype = "const char *" if fn.ret == "char *" else fn.ret
        lines.append(f"    cdef {rtype} r")
        call = f"r = {target}({call_args})"
    body = [f"with nogil:\n        {call}"] if fn.nogil else [call]
    if guard:
        lines.append(f"    if {guard}:")
        lines += ["        " + b.replace("\n    ", "\n        ") for b in body]
        missing = f'_missing("{fn.cname}", "{fn.qualname}")'
        if fn.ret == "aclError":
            lines += ["    else:", f"        rc = {missing}"]
        else:
            _, fallback = _value_of(fn.ret)
            lines += ["    else:", f"        {missing}", f"        return {fallback}"]
    else:
        lines += ["    " + b for b in body]
    if fn.ret == "aclError":
        vals = ([fn.echo] if fn.echo else []) + [_out_value(p, i) for i, p in enumerate(fn.params) if p.out]
        lines.append(f"    return ({', '.join(vals)}, rc)" if vals else "    return rc")
    else:
        expr, _ = _value_of(fn.ret)
        lines.append(f"    return {expr}")
    return "\n".join(lines)


def render_unsupported(u: Unsupported) -> str:
    ident = "_u_" + u.pyname.replace(".", "_")
    sig = ", ".join(u.params)
    returns = {
        "ret": "rc", "handle": "0", "value": "0",
    }.get(u.returns, "(0, rc)")
    return "\n".join([
        f"def {ident}({sig}):",
        f'    """acl.{u.pyname}({sig}) -> {u.returns}: not supported here '
        f'(ACL_ERROR_API_NOT_SUPPORT; docs/pyacl.md)."""',
        f'    rc = _unsupported("acl.{u.pyname}")',
        f"    return {returns}",
    ])


def render_media_table(functions: list[Function]) -> list[str]:
    lines = [
        "# The DVPP functions, from libacl_dvpp.so (filled by _fill_media; NULL when missing).",
        "# DVPP's opaque handles are void here and its enums int: the module only passes them on.",
    ]
    media = [f for f in functions if f.media]
    for fn in media:
        params = ", ".join(f"{p.ctype} {p.name}" for p in fn.params)
        ret = fn.ret if fn.ret.endswith("*") else fn.ret + " "
        lines.append(f"ctypedef {ret}(*_T_{fn.cname})({params}) noexcept nogil")
        lines.append(f"cdef _T_{fn.cname} _m_{fn.cname} = NULL")
    lines += ["", "", "cdef int _fill_media(void *handle) noexcept:",
              '    """Look every DVPP function up in the library; the number found."""',
              "    cdef int found = 0"]
    for fn in media:
        lines += [f'    global _m_{fn.cname}',
                  f'    _m_{fn.cname} = <_T_{fn.cname}>dlsym(handle, b"{fn.cname}")',
                  f"    found += _m_{fn.cname} is not NULL"]
    lines.append("    return found")
    return lines


def render(functions: list[Function], unsupported: list[Unsupported]) -> str:
    out = [
        f"# Generated from {TABLE.replace(os.sep, '/')} by tools/gen_pyacl.py: do not edit.",
        "# setup.py regenerates it on every build; ascend_engine/_pyacl.pyx includes it after the",
        "# helpers it calls (_api, _media, _uint, _sint, _float, _ptr, _cstr, _pystr, the dict",
        "# builders, _missing, _unsupported).",
        "",
    ]
    out += render_media_table(functions)
    for fn in functions:
        out += ["", "", render_function(fn)]
    for u in unsupported:
        out += ["", "", render_unsupported(u)]
    namespaces: dict[str, list[str]] = {}
    for fn in functions:
        namespaces.setdefault(fn.namespace, []).append(f'"{fn.leaf}": {fn.ident}')
    for u in unsupported:
        ns, _, leaf = u.pyname.rpartition(".")
        namespaces.setdefault(ns, []).append(f'"{leaf}": _u_{u.pyname.replace(".", "_")}')
    out += ["", "", "# namespace ('' for acl itself) -> pyACL name -> function", "GENERATED = {"]
    for ns, entries in namespaces.items():
        out.append(f'    "{ns}": {{')
        out += [f"        {e}," for e in entries]
        out.append("    },")
    out.append("}")
    out += ["", "# the pyACL functions that answer ACL_ERROR_API_NOT_SUPPORT whatever the backend",
            "UNSUPPORTED = frozenset({"]
    out += [f'    "acl.{u.pyname}",' for u in unsupported]
    out.append("})")
    return "\n".join(out) + "\n"


def build(root: str = ROOT) -> str:
    """The text of _pyacl_functions.pxi for ``root``'s table and acl_functions.h."""
    gen_acl = _load("gen_acl_pxd", root)
    table = _load("pyacl_table", root)
    with open(os.path.join(root, gen_acl.HEADER), encoding="utf-8") as f:
        try:
            acl = {fn.name: fn for fn in gen_acl.parse(f.read(), gen_acl.HEADER)}
        except gen_acl.GenerateError as exc:
            raise GenerateError(str(exc)) from None
    functions, unsupported = parse_table(table, acl)
    return render(functions, unsupported)


def update(root: str = ROOT, check: bool = False) -> bool:
    """Bring _pyacl_functions.pxi up to date; True when it was (with ``check``: would be) written."""
    # written as gen_acl_pxd writes its files: unchanged text is left alone, new text goes
    # through a temporary file
    return _load("gen_acl_pxd", root)._write_if_changed(os.path.join(root, OUTPUT), build(root), check)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is stale")
    args = ap.parse_args(argv)
    try:
        changed = update(ROOT, check=args.check)
    except GenerateError as exc:
        print(f"gen_pyacl: {exc}", file=sys.stderr)
        return 2
    if args.check and changed:
        print(f"gen_pyacl: {OUTPUT} is missing or stale: run python tools/gen_pyacl.py", file=sys.stderr)
        return 1
    print(f"{OUTPUT}: {'written' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
