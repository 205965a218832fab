"""The sdist carries what setup.py needs, and setup.py refuses a tree that lacks any of it."""

import importlib.util
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Build output and foreign files an sdist must never carry.
GENERATED = [
    "ascend_engine/_acl_functions.pxi",
    "ascend_engine/_acl_checked.pxi",
    "ascend_engine/_runtime.c",
    "ascend_engine/_memory.c",
    "ascend_engine/_model_base.c",
    "ascend_engine/_model.c",
    "ascend_engine/_executor.c",
    "ascend_engine/steps/_ocr.c",
    "ascend_engine/steps/_native.c",
    "ascend_engine/_gears.c",
    "ascend_engine/_dvpp_limits.c",
    "ascend_engine/_lowering.c",
    "ascend_engine/_pyacl.c",
    "ascend_engine/_pyacl_functions.pxi",
]


def test_build_inputs_are_named(setup_module):
    # The list the sdist test checks against is not empty or partial: the
    # sources of every native module, the headers, the generator, the pxd files.
    inputs = setup_module.build_inputs()
    for path in [
        "ascend_engine/_runtime.pyx",
        *(f"ascend_engine/_runtime_{job}.pxi" for job in ("devices", "streams")),
        "ascend_engine/_memory.pyx",
        "ascend_engine/_memory.pxd",
        "ascend_engine/_model.pyx",
        "ascend_engine/_model_base.pyx",
        "ascend_engine/_model_base.pxd",
        "ascend_engine/_model_load.pxi",
        "ascend_engine/_model_describe.pxi",
        "ascend_engine/_model_datasets.pxi",
        "ascend_engine/_model_kinds.pxi",
        "ascend_engine/_model_execute.pxi",
        "ascend_engine/_executor.pyx",
        "ascend_engine/_queue_memory.pxi",
        "ascend_engine/_lowering.pyx",
        "ascend_engine/_lowering.pxd",
        "ascend_engine/_gears.pyx",
        "ascend_engine/_dvpp_limits.pyx",
        "include/ascend_engine/dvpp_limits.h",
        "ascend_engine/_acl.pxd",
        "ascend_engine/_runtime.pxd",
        "ascend_engine/csrc/loader.c",
        "ascend_engine/csrc/executor.c",
        "ascend_engine/csrc/executor_internal.h",
        *(f"ascend_engine/csrc/{name}.c"
          for name in ("plan", "build", "submit", "enqueue", "host_steps", "chunks", "complete", "timeline",
                       "image_steps", "dvpp_loader")),
        "ascend_engine/sim/csrc/model.h",
        "ascend_engine/sim/csrc/aipp.c",
        "ascend_engine/sim/dvpp/jpegd.c",
        "ascend_engine/sim/dvpp/dvpp_internal.h",
        "ascend_engine/sim/standin/standin.h",
        "include/ascend_engine/acl_functions.h",
        "include/ascend_engine/acl_dvpp.h",
        "include/ascend_engine/dvpp_functions.h",
        "ascend_engine/sim/include/acl/ops/acl_dvpp.h",
        "include/ascend_engine/ascend_sim.h",
        "ascend_engine/steps/_ocr.pyx",
        "ascend_engine/steps/csrc/db_postprocess.c",
        "ascend_engine/steps/csrc/db_postprocess.h",
        "tools/gen_acl_pxd.py",
        "ascend_engine/py.typed",
        "README.md",
    ]:
        assert path in inputs, f"setup.build_inputs() does not name {path}"
    assert len([p for p in inputs if p.startswith("ascend_engine/sim/csrc/") and p.endswith(".c")]) >= 20


def test_sdist_carries_every_build_input(setup_module, sdist_members):
    missing = [p for p in setup_module.build_inputs() if p not in sdist_members]
    assert not missing, f"the sdist lacks files setup.py needs (add them to MANIFEST.in): {missing}"


def _listed(folder, suffix):
    return sorted(f"{folder}/{n}" for n in os.listdir(os.path.join(REPO, folder)) if n.endswith(suffix))


def test_sdist_carries_every_public_header_and_pxd(sdist_members):
    # Also the ones setup.py does not read itself: the wheel ships them all.
    headers = sorted(p for p in sdist_members if p.startswith("include/"))
    assert headers == _listed("include/ascend_engine", ".h")
    assert sorted(p for p in sdist_members if p.endswith(".pxd")) == _listed("ascend_engine", ".pxd")


def test_sdist_leaves_out_build_output_and_cann_headers(sdist_members):
    unwanted = [p for p in sdist_members if p in GENERATED or p.endswith((".so", ".o", ".pyc"))]
    assert not unwanted, f"the sdist carries build output: {unwanted}"
    # our own declarations of the DVPP functions (written here; the CANN wheel has none)
    own = {"ascend_engine/sim/include/acl/ops/acl_dvpp.h"}
    cann = [p for p in sdist_members
            if ("/acl/" in p or p.startswith(("acl/", "torch_npu/"))) and p not in own]
    assert not cann, f"the sdist carries CANN headers: {cann}"
    assert own <= set(sdist_members), "the toolkit's own DVPP header is missing from the sdist"


def _setup_of(tree):
    """setup.py of an unpacked tree, loaded without running main()."""
    spec = importlib.util.spec_from_file_location("ae_sdist_setup", tree / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.HERE == str(tree)
    return module


def test_unpacked_sdist_passes_the_input_check(sdist_tree):
    _setup_of(sdist_tree).check_inputs()  # sys.exit(message) on a missing file


@pytest.mark.parametrize(
    "victim",
    ["ascend_engine/_executor.pyx", "include/ascend_engine/ascend_sim.h", "tools/gen_acl_pxd.py"],
)
def test_setup_names_a_missing_source(sdist_tree, victim):
    # Before: a missing .pyx silently dropped its extension and the installed
    # package could not load.  Now the build stops and says which file is missing.
    os.remove(sdist_tree / victim)
    with pytest.raises(SystemExit) as stop:
        _setup_of(sdist_tree).check_inputs()
    assert str(stop.value) == (
        f"setup.py: cannot build ascend-engine: 1 source file(s) missing under {sdist_tree}: {victim}"
    )


def test_setup_names_an_empty_source_folder(sdist_tree):
    dvpp = sdist_tree / "ascend_engine" / "sim" / "dvpp"
    for name in os.listdir(dvpp):
        os.remove(dvpp / name)
    with pytest.raises(SystemExit) as stop:
        _setup_of(sdist_tree).check_inputs()
    assert str(stop.value) == (
        f"setup.py: no file matches ascend_engine/sim/dvpp/*.c under {sdist_tree}: "
        "the source tree is incomplete"
    )


def test_setup_py_stops_the_build_with_that_message(sdist_tree):
    # The same check through `python setup.py`, as pip runs it: non-zero status, the message on stderr.
    os.remove(sdist_tree / "ascend_engine" / "_model.pyx")
    proc = subprocess.run([sys.executable, "setup.py", "--version"], cwd=sdist_tree, capture_output=True,
                          text=True)
    assert proc.returncode == 1
    assert "1 source file(s) missing" in proc.stderr and "ascend_engine/_model.pyx" in proc.stderr
