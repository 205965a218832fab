"""Direct ctypes access to the simulator library, for tests of the simulator layer.

The argument and result types of every AscendCL function come from
``include/ascend_engine/acl_functions.h`` (the project's single list of the
functions it uses), so a test can call any of them without declaring it.

The simulator's state is per process, like AscendCL's: tests that finalize the
runtime or need a different environment (device count, memory size, faults set
through the environment) run their code in a child process with
:func:`run_python`.
"""

import ctypes
import os
import re
import subprocess
import sys
import textwrap

import ascend_engine
from ascend_engine.sim import ort_library

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUNCTIONS_H = os.path.join(REPO, "include", "ascend_engine", "acl_functions.h")

_SCALARS = {
    "aclError": ctypes.c_int,
    "int": ctypes.c_int,
    "size_t": ctypes.c_size_t,
    "int8_t": ctypes.c_int8,
    "int16_t": ctypes.c_int16,
    "uint8_t": ctypes.c_uint8,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "float": ctypes.c_float,
    "aclFloat16": ctypes.c_uint16,
    "aclDataType": ctypes.c_int,
    "aclFormat": ctypes.c_int,
    "aclrtRunMode": ctypes.c_int,
    "aclrtMemMallocPolicy": ctypes.c_int,
    "aclrtMemcpyKind": ctypes.c_int,
    "aclrtMemAttr": ctypes.c_int,
    "aclrtCallbackBlockType": ctypes.c_int,
    "aclrtContext": ctypes.c_void_p,
    "aclrtStream": ctypes.c_void_p,
    "aclrtEvent": ctypes.c_void_p,
    "aclrtCallback": ctypes.c_void_p,
    "void": None,
}


def _ctype(decl):
    """Map one C parameter or return declaration to a ctypes type."""
    decl = re.sub(r"\bconst\b", "", decl).strip()
    stars = decl.count("*")
    base = decl.replace("*", " ").split()
    name = base[0] if base else "void"
    if stars == 0:
        # names not listed are AscendCL enums (int-sized in the C ABI)
        return _SCALARS.get(name, ctypes.c_int)
    if stars == 1 and name == "char":
        return ctypes.c_char_p
    return ctypes.c_void_p


def _parse_functions():
    entries = {}
    pattern = re.compile(r"^AE_ACL_FN\(\s*(\d)\s*,\s*([^,]+?)\s*,\s*(\w+)\s*,\s*\((.*)\)\)\s*$")
    with open(FUNCTIONS_H) as f:
        for line in f:
            m = pattern.match(line.strip())
            if not m:
                continue
            _, ret, name, params = m.groups()
            args = []
            if params.strip() != "void":
                for p in params.split(","):
                    p = p.strip()
                    # drop the parameter name: the last identifier
                    p = re.sub(r"\w+$", "", p).strip() or p
                    args.append(_ctype(p))
            entries[name] = (_ctype(ret), args)
    return entries


def library_path():
    """Path of the simulator library inside the installed package."""
    return os.path.join(os.path.dirname(ascend_engine.__file__), "_lib", "libascendcl_sim.so")


_LIB = None


def load():
    """The simulator as a ctypes CDLL with every listed function typed (cached)."""
    global _LIB
    if _LIB is None:
        # loaded without ascend_engine's backend loader, as a C program loads it:
        # point it at the onnxruntime wheel as env.sh does (sim/ort_library.py)
        ort_library.set_default()
        lib = ctypes.CDLL(library_path())
        for name, (restype, argtypes) in _parse_functions().items():
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            fn.restype = restype
            fn.argtypes = argtypes
        _LIB = lib
    return _LIB


def recent_error(lib=None):
    """The calling thread's aclGetRecentErrMsg() as str ('' when NULL)."""
    msg = (lib or load()).aclGetRecentErrMsg()
    return msg.decode() if msg else ""


def run_python(code, env=None, timeout=120):
    """Run a Python snippet in a fresh process; returns CompletedProcess (text).

    The child gets this test process's environment plus ``env`` and can
    ``from helpers import simlib``.
    """
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.path.join(REPO, "tests") + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def set_faults(spec):
    """Replace the simulator's fault rules (aeSimSetFaults); None or "" clears them."""
    lib = load()
    fn = lib.aeSimSetFaults
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = ctypes.c_int
    rc = fn(spec.encode() if spec else None)
    if rc != 0:
        raise ValueError(f"aeSimSetFaults({spec!r}) -> {rc}: {recent_error(lib)}")


def session():
    """The library with AscendCL initialised (once per process) and device 0 set on this thread."""
    from helpers.acl import ACL_ERROR_REPEAT_INITIALIZE, ACL_SUCCESS

    lib = load()
    rc = lib.aclInit(None)
    assert rc in (ACL_SUCCESS, ACL_ERROR_REPEAT_INITIALIZE), f"aclInit -> {rc}: {recent_error(lib)}"
    rc = lib.aclrtSetDevice(0)
    assert rc == ACL_SUCCESS, f"aclrtSetDevice(0) -> {rc}: {recent_error(lib)}"
    return lib
