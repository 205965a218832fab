"""Build script: the Cython modules and the AscendCL simulator library.

Everything native is built here:

* ``ascend_engine/_lib/libascendcl_sim.so`` -- the AscendCL simulator, a plain
  C shared library (no Python inside) exporting the AscendCL symbols, so that C
  programs can link against it as they would against ``libascendcl.so``;
* ``ascend_engine/_lib/libacl_dvpp.so`` and ``libacl_cblas.so`` -- its
  companions for the DVPP and BLAS libraries clients link by name
  (``acldvppMalloc``/``acldvppFree`` work, the rest are honest stand-ins);
* the Cython extension modules, which reach AscendCL only through the run-time
  function table filled by ``ascend_engine/csrc/loader.c``.

Before anything compiles, ``tools/gen_acl_pxd.py`` writes the Cython
declaration of that table (``ascend_engine/_acl_functions.pxi``) and one
checked wrapper per function (``ascend_engine/_acl_checked.pxi``) from
``include/ascend_engine/acl_functions.h``, the list C expands into the same
table.  Both are build output that ships in the wheel (``cimport`` reads them),
not in the sdist.  Every file the build reads is named by :func:`build_inputs`; when one is
missing (an sdist that left it out, say) the build stops and names it, rather
than producing a package that cannot load.

The wheel also carries the public C headers, copied from
``include/ascend_engine/`` to ``ascend_engine/include/ascend_engine/``: the
``.pxd`` files include them, and ``ascend_sim.h`` declares the simulator's
extras for C programs.

Set ``AE_SANITIZE=1`` to build everything with AddressSanitizer and
UndefinedBehaviorSanitizer (see ``.ci/run`` for how the tests run under it).
"""

import glob
import importlib.util
import os
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SIM_NAME = "ascend_engine._lib.libascendcl_sim"
DVPP_NAME = "ascend_engine._lib.libacl_dvpp"
# Plain C shared libraries (no Python inside): extension name -> file name.
CBLAS_NAME = "ascend_engine._lib.libacl_cblas"
HAL_NAME = "ascend_engine._lib.libascend_hal"
PLAIN_LIBRARIES = {
    SIM_NAME: "libascendcl_sim.so",
    DVPP_NAME: "libacl_dvpp.so",
    CBLAS_NAME: "libacl_cblas.so",
    HAL_NAME: "libascend_hal.so",
}
GENERATOR = "tools/gen_acl_pxd.py"
# ascend_engine.acl's functions: generated from the table by the second generator.
PYACL_GENERATOR = "tools/gen_pyacl.py"
PYACL_TABLE = "tools/pyacl_table.py"
# Where the wheel puts the public headers, inside the package.
PACKAGE_INCLUDE = os.path.join("ascend_engine", "include", "ascend_engine")
# The public headers: these six by name, so that losing one is an error and not
# a smaller wheel, and any other header added to include/ascend_engine/.
NAMED_HEADERS = ("acl.h", "acl_functions.h", "ascend_sim.h", "dvpp_limits.h", "executor.h", "loader.h")
PUBLIC_HEADERS = sorted(
    {f"include/ascend_engine/{name}" for name in NAMED_HEADERS}
    | {os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "include", "ascend_engine", "*.h"))}
)
# The command's manual: in a wheel, `ascend-engine help` reads it inside the package
# (ascend_engine/cli_help.py); a checkout reads docs/ itself.
CLI_MANUAL = "docs/cli.md"
PACKAGE_CLI_MANUAL = os.path.join("ascend_engine", "docs", "cli.md")
# Files the build reads that no Extension lists: the generator, the package
# metadata, and the declarations the .pyx modules cimport.
OTHER_INPUTS = [
    "setup.py",
    "pyproject.toml",
    "README.md",
    GENERATOR,
    PYACL_GENERATOR,
    PYACL_TABLE,
    CLI_MANUAL,
    "ascend_engine/_acl.pxd",
    "ascend_engine/_runtime.pxd",
    "ascend_engine/py.typed",
]

# The executor's C core, one file per concern (mapped in ascend_engine/csrc/executor_internal.h).
EXECUTOR_SOURCES = [
    f"ascend_engine/csrc/{name}.c"
    for name in (
        "executor", "plan", "build", "submit", "enqueue", "host_steps", "chunks", "complete", "timeline",
        "image_steps",
    )
]

# The native steps between models (DESIGN.md section 14), one C file per step, in an extension of
# their own: ascend_engine.steps._native (docs/executor.md, "Native steps").
STEPS_SOURCES = [
    f"ascend_engine/steps/csrc/{name}.c"
    for name in ("common", "decode_boxes", "nms", "topk", "ctc_greedy", "crop_resize")
]

WARNINGS = ["-Wall", "-Wextra"]
SANITIZE = os.environ.get("AE_SANITIZE", "") not in ("", "0")
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]


def rel(pattern):
    """Sorted repository-relative paths matching a glob pattern; none at all is an error."""
    found = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, pattern), recursive=True))
    if not found:
        sys.exit(f"setup.py: no file matches {pattern} under {HERE}: the source tree is incomplete")
    return found


class BuildNative(build_ext):
    """build_ext that also produces the simulator as a plain shared library."""

    def get_ext_filename(self, fullname):
        # setuptools asks with the full dotted name in some places and with the
        # last component only in others; answer both without the ABI suffix.
        for name, filename in PLAIN_LIBRARIES.items():
            if fullname == name:
                return os.path.join("ascend_engine", "_lib", filename)
            if fullname == name.rsplit(".", 1)[1]:
                return filename
        return super().get_ext_filename(fullname)

    def build_extension(self, ext):
        extra = SAN_FLAGS if SANITIZE else []
        ext.extra_compile_args = list(ext.extra_compile_args) + extra
        ext.extra_link_args = list(ext.extra_link_args) + extra
        super().build_extension(ext)


class BuildPackage(build_py):
    """build_py that also puts the public C headers into the package (ascend_engine/include/),
    and the command's manual (ascend_engine/docs/cli.md)."""

    def _header_copies(self):
        return [
            (os.path.join(HERE, h), os.path.join(self.build_lib, PACKAGE_INCLUDE, os.path.basename(h)))
            for h in PUBLIC_HEADERS
        ] + [(os.path.join(HERE, CLI_MANUAL), os.path.join(self.build_lib, PACKAGE_CLI_MANUAL))]

    def run(self):
        super().run()
        if self.editable_mode:
            return  # an editable install reads them from include/ in the checkout
        for src, dst in self._header_copies():
            self.mkpath(os.path.dirname(dst))
            self.copy_file(src, dst, preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if self.editable_mode:
            return outputs
        return outputs + [dst for _, dst in self._header_copies()]


def system_has_header(name):
    """Whether the compiler's include folders (the default ones, CPATH, C_INCLUDE_PATH) hold `name`."""
    folders = ["/usr/include", "/usr/local/include"]
    for var in ("CPATH", "C_INCLUDE_PATH"):
        folders += [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    return any(os.path.exists(os.path.join(d, name)) for d in folders)


def require_system_header(name, what):
    """Stop the build with one line naming the missing library, before the compiler fails on it."""
    if not system_has_header(name):
        raise SystemExit(f"ascend-engine: the build needs {what} ({name} was not found in the include "
                         f"folders; set CPATH if it is elsewhere)")


def extensions():
    """The native modules, before cythonize: the three plain libraries, then the Cython ones."""
    headers = PUBLIC_HEADERS
    sim_library = Extension(
        SIM_NAME,
        sources=rel("ascend_engine/sim/csrc/*.c"),
        include_dirs=["include", "ascend_engine/sim/csrc"],
        depends=headers + rel("ascend_engine/sim/csrc/*.h") + rel("ascend_engine/sim/standin/*.h"),
        extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden", "-pthread"],
        extra_link_args=["-pthread", "-Wl,-soname,libascendcl_sim.so"],
        libraries=["m", "dl"],   # dl: ONNX Runtime is loaded at run time (ort_exec.c)
    )
    # The simulator's companion to CANN's libacl_dvpp.so (JPEG with the system's
    # libjpeg-turbo, PNG with libpng when the system has it, VPC).  Its
    # aclrt*/aeSim* calls stay undefined and resolve from the AscendCL library the
    # program links, as with the real one (docs/toolkit.md, docs/simulator.md "DVPP").
    require_system_header("jpeglib.h", "libjpeg-turbo's development files (Debian: libjpeg62-turbo-dev)")
    have_png = system_has_header("png.h")
    dvpp_library = Extension(
        DVPP_NAME,
        sources=rel("ascend_engine/sim/dvpp/*.c"),
        include_dirs=["include", "ascend_engine/sim/include", "ascend_engine/sim/standin"],
        depends=headers
        + rel("ascend_engine/sim/include/acl/ops/*.h")
        + rel("ascend_engine/sim/standin/*.h")
        + rel("ascend_engine/sim/dvpp/*.h"),
        extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden", "-pthread"],
        extra_link_args=["-pthread", "-Wl,-soname,libacl_dvpp.so"],
        define_macros=[("AE_DVPP_HAVE_PNG", "1")] if have_png else [],
        libraries=["jpeg", "m"] + (["png"] if have_png else []),
    )
    # The stand-in for CANN's libacl_cblas.so (docs/toolkit.md): links and
    # answers ACL_ERROR_API_NOT_SUPPORT through the simulator's recent error.
    cblas_library = Extension(
        CBLAS_NAME,
        sources=rel("ascend_engine/sim/cblas/*.c"),
        include_dirs=["include", "ascend_engine/sim/standin"],
        depends=headers + rel("ascend_engine/sim/standin/*.h"),
        extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden"],
        extra_link_args=["-Wl,-soname,libacl_cblas.so"],
    )
    # The link stub of CANN's libascend_hal.so (docs/toolkit.md): no functions.
    hal_library = Extension(
        HAL_NAME,
        sources=rel("ascend_engine/sim/hal/*.c"),
        extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden"],
        extra_link_args=["-Wl,-soname,libascend_hal.so"],
    )
    cython_modules = [
        Extension(
            "ascend_engine._runtime",
            sources=["ascend_engine/_runtime.pyx", "ascend_engine/csrc/loader.c",
                     "ascend_engine/csrc/dvpp_loader.c"],
            include_dirs=["include", "ascend_engine/csrc", numpy.get_include()],
            depends=headers + ["ascend_engine/_runtime_devices.pxi", "ascend_engine/_runtime_streams.pxi"],
            extra_compile_args=["-O2"],
            libraries=["dl"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        ),
        Extension(
            # DeviceBuffer and HostBuffer, on top of _runtime (which re-exports them)
            "ascend_engine._memory",
            sources=["ascend_engine/_memory.pyx"],
            include_dirs=["include"],
            depends=headers + ["ascend_engine/_runtime.pxd"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            # the Model class: loading and describing a model file
            "ascend_engine._model_base",
            sources=["ascend_engine/_model_base.pyx"],
            include_dirs=["include"],
            depends=headers + ["ascend_engine/_model_describe.pxi", "ascend_engine/_model_load.pxi",
                               "ascend_engine/_model_datasets.pxi", "ascend_engine/_memory.pxd"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            # running models: the dynamic kinds' strategies and the executions (re-exports Model)
            "ascend_engine._model",
            sources=["ascend_engine/_model.pyx"],
            include_dirs=["include"],
            depends=headers + ["ascend_engine/_model_kinds.pxi", "ascend_engine/_model_execute.pxi",
                               "ascend_engine/_model_base.pxd"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            # the DVPP limits (include/ascend_engine/dvpp_limits.h), for the planner
            "ascend_engine._dvpp_limits",
            sources=["ascend_engine/_dvpp_limits.pyx"],
            include_dirs=["include"],
            depends=headers,
            extra_compile_args=["-O2"],
        ),
        Extension(
            # the gear rule (chunks.c) alone, for the planner and the batcher
            "ascend_engine._gears",
            sources=["ascend_engine/_gears.pyx", "ascend_engine/csrc/chunks.c"],
            include_dirs=["include"],
            depends=headers + ["ascend_engine/_executor_api.pxd"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            # the plan lowered for C and the Python host steps it points at
            "ascend_engine._lowering",
            sources=["ascend_engine/_lowering.pyx"],
            include_dirs=["include", numpy.get_include()],
            depends=headers + ["ascend_engine/_lowering.pxd", "ascend_engine/_executor_api.pxd"],
            extra_compile_args=["-O2"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        ),
        Extension(
            "ascend_engine._executor",
            sources=["ascend_engine/_executor.pyx"] + EXECUTOR_SOURCES,
            include_dirs=["include", numpy.get_include()],
            depends=headers + ["ascend_engine/csrc/executor_internal.h", "ascend_engine/_executor_errors.pxi",
                               "ascend_engine/_queue_memory.pxi", "ascend_engine/_lowering.pxd"],
            extra_compile_args=["-O2"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        ),
        Extension(
            "ascend_engine.steps._native",
            sources=["ascend_engine/steps/_native.pyx"] + STEPS_SOURCES,
            include_dirs=["include", "ascend_engine/steps/csrc"],
            depends=headers + ["ascend_engine/steps/csrc/steps.h"],
            # -ffp-contract=off: no fused multiply-add, so the float32 arithmetic (IoU, box
            # decoding) rounds as the numpy references' does, step by step
            extra_compile_args=WARNINGS + ["-std=gnu11", "-O3", "-ffp-contract=off"],
        ),
        # DB text-detection post-processing and greedy CTC for OCR pipelines (docs/executor.md,
        # "DB text boxes"); -ffp-contract=off: ascend_engine/steps/ocr.py's numpy reference
        # repeats its floating-point operations one by one and must round as it does.
        Extension(
            "ascend_engine.steps._ocr",
            sources=["ascend_engine/steps/_ocr.pyx", "ascend_engine/steps/csrc/db_postprocess.c"],
            include_dirs=["include", "ascend_engine/steps/csrc", numpy.get_include()],
            depends=headers + ["ascend_engine/steps/csrc/db_postprocess.h"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        ),
        # ascend_engine.acl (pyACL's API): its functions are generated from tools/pyacl_table.py
        # into _pyacl_functions.pxi; it reaches the table through _runtime's api_loaded().
        Extension(
            "ascend_engine._pyacl",
            sources=["ascend_engine/_pyacl.pyx"],
            include_dirs=["include"],
            depends=headers + ["ascend_engine/_pyacl_special.pxi", "ascend_engine/_pyacl_media.pxi"],
            extra_compile_args=["-O2"],
            libraries=["dl"],
        ),
    ]
    return [sim_library, dvpp_library, cblas_library, hal_library], cython_modules


def build_inputs():
    """Every file the build reads, repository-relative and sorted: what an sdist must carry."""
    plain, cython_modules = extensions()
    files = set(PUBLIC_HEADERS) | set(OTHER_INPUTS)
    for ext in plain + cython_modules:
        files.update(ext.sources)
        files.update(ext.depends)
    files.update(rel("ascend_engine/*.pxd"))
    return sorted(files)


def check_inputs():
    """Stop the build, naming them, when files it needs are missing."""
    missing = [p for p in build_inputs() if not os.path.isfile(os.path.join(HERE, p))]
    if missing:
        sys.exit(
            f"setup.py: cannot build ascend-engine: {len(missing)} source file(s) missing under {HERE}: "
            + ", ".join(missing)
        )


def generate_acl_pxd():
    """Run tools/gen_acl_pxd.py: the Cython view of the function table and its checked wrappers,
    from acl_functions.h; then tools/gen_pyacl.py: ascend_engine.acl's functions, from
    tools/pyacl_table.py."""
    # Loaded by path: tools/ is not a package, and setup.py must not depend on sys.path.
    spec = importlib.util.spec_from_file_location("gen_acl_pxd", os.path.join(HERE, GENERATOR))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    try:
        gen.generate(HERE)
    except gen.GenerateError as exc:
        sys.exit(f"setup.py: {exc}")
    spec = importlib.util.spec_from_file_location("gen_pyacl", os.path.join(HERE, PYACL_GENERATOR))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    try:
        gen.update(HERE)
    except gen.GenerateError as exc:
        sys.exit(f"setup.py: {exc}")


def main():
    """Check the sources, generate the .pxi files, cythonize and run setuptools."""
    from Cython.Build import cythonize

    check_inputs()
    generate_acl_pxd()
    # ascend_engine/_lib/ holds only build output (ignored by git), so a fresh
    # checkout lacks it; in-place and editable builds copy the simulator there.
    os.makedirs(os.path.join(HERE, "ascend_engine", "_lib"), exist_ok=True)
    plain, cython_modules = extensions()
    setup(
        ext_modules=plain
        + cythonize(cython_modules, language_level=3, compiler_directives={"embedsignature": True}),
        cmdclass={"build_ext": BuildNative, "build_py": BuildPackage},
    )


# setuptools runs this file as __main__ (python setup.py, pip, python -m build);
# tests load it under another name to read build_inputs() without building.
if __name__ == "__main__":
    main()
