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

Set ``AE_SANITIZE=1`` to build everything with AddressSanitizer and
UndefinedBehaviorSanitizer (see ``.ci/run`` for how the tests run under it).
"""

import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SIM_NAME = "ascend_engine._lib.libascendcl_sim"
DVPP_NAME = "ascend_engine._lib.libacl_dvpp"
CBLAS_NAME = "ascend_engine._lib.libacl_cblas"
# Plain C shared libraries (no Python inside): extension name -> file name.
PLAIN_LIBRARIES = {
    SIM_NAME: "libascendcl_sim.so",
    DVPP_NAME: "libacl_dvpp.so",
    CBLAS_NAME: "libacl_cblas.so",
}
# ascend_engine/_lib/ holds only build output (ignored by git), so a fresh
# checkout lacks it; in-place and editable builds copy the simulator there.
os.makedirs(os.path.join(HERE, "ascend_engine", "_lib"), exist_ok=True)

WARNINGS = ["-Wall", "-Wextra"]
SANITIZE = os.environ.get("AE_SANITIZE", "") not in ("", "0")
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]


def rel(pattern):
    """Sorted repository-relative paths matching a glob pattern."""
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, pattern)))


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


sim_library = Extension(
    SIM_NAME,
    sources=rel("ascend_engine/sim/csrc/*.c"),
    include_dirs=["include", "ascend_engine/sim/csrc"],
    extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden", "-pthread"],
    extra_link_args=["-pthread", "-Wl,-soname,libascendcl_sim.so"],
    libraries=["m"],
)

# The simulator's companion to CANN's libacl_dvpp.so (acldvppMalloc/Free).  Its
# aclrt* calls stay undefined and resolve from the AscendCL library the
# program links, as with the real one (docs/toolkit.md).
dvpp_library = Extension(
    DVPP_NAME,
    sources=rel("ascend_engine/sim/dvpp/*.c"),
    include_dirs=["include", "ascend_engine/sim/include", "ascend_engine/sim/standin"],
    extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden"],
    extra_link_args=["-Wl,-soname,libacl_dvpp.so"],
)

# The stand-in for CANN's libacl_cblas.so (docs/toolkit.md): links and
# answers ACL_ERROR_API_NOT_SUPPORT through the simulator's recent error.
cblas_library = Extension(
    CBLAS_NAME,
    sources=rel("ascend_engine/sim/cblas/*.c"),
    include_dirs=["include", "ascend_engine/sim/standin"],
    extra_compile_args=WARNINGS + ["-std=gnu11", "-O2", "-fvisibility=hidden"],
    extra_link_args=["-Wl,-soname,libacl_cblas.so"],
)

cython_modules = [
    Extension(
        "ascend_engine._runtime",
        sources=["ascend_engine/_runtime.pyx", "ascend_engine/csrc/loader.c"],
        include_dirs=["include", "ascend_engine/csrc", numpy.get_include()],
        extra_compile_args=["-O2"],
        libraries=["dl"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    ),
    Extension(
        "ascend_engine._model",
        sources=["ascend_engine/_model.pyx"],
        include_dirs=["include"],
        extra_compile_args=["-O2"],
    ),
    Extension(
        "ascend_engine._executor",
        sources=["ascend_engine/_executor.pyx", "ascend_engine/csrc/executor.c"],
        include_dirs=["include", numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O2"],
    ),
]
cython_modules = [m for m in cython_modules if all(os.path.exists(os.path.join(HERE, s)) for s in m.sources)]

setup(
    ext_modules=[sim_library, dvpp_library, cblas_library]
    + cythonize(cython_modules, language_level=3, compiler_directives={"embedsignature": True}),
    cmdclass={"build_ext": BuildNative},
)
