"""What setup.py's build_py adds to the wheel: the public C headers under ascend_engine/include/,
and the package data pyproject.toml names (the .pxd files and the generated .pxi files).

Building a real wheel compiles everything (minutes); .ci/run does that once,
installing the sdist into a fresh venv and checking the installed files.  Here
the build_py command runs alone on an empty package list, which is what copies
the headers.
"""

import os

from helpers import repo_tools
from setuptools.config.pyprojecttoml import read_configuration
from setuptools.dist import Distribution


def _build_py(setup_module, build_lib, editable=False):
    cmd = setup_module.BuildPackage(Distribution({"name": "ascend-engine", "packages": []}))
    cmd.initialize_options()
    cmd.build_lib = str(build_lib)
    cmd.editable_mode = editable
    cmd.finalize_options()
    return cmd


def test_headers_land_in_the_package(setup_module, tmp_path):
    cmd = _build_py(setup_module, tmp_path)
    cmd.run()
    include = tmp_path / "ascend_engine" / "include" / "ascend_engine"
    shipped = sorted(os.listdir(include))
    assert shipped == sorted(os.listdir(os.path.join(setup_module.HERE, "include", "ascend_engine")))
    assert {"acl.h", "acl_functions.h", "ascend_sim.h", "executor.h", "loader.h"} <= set(shipped)
    for name in shipped:
        with open(os.path.join(setup_module.HERE, "include", "ascend_engine", name), "rb") as f:
            assert (include / name).read_bytes() == f.read()
    manual = tmp_path / "ascend_engine" / "docs" / "cli.md"
    assert sorted(cmd.get_outputs()) == sorted([*(str(include / n) for n in shipped), str(manual)])


def test_the_manual_ships_in_the_package_and_help_reads_it(setup_module, tmp_path, monkeypatch):
    from ascend_engine import cli_help

    _build_py(setup_module, tmp_path).run()
    manual = tmp_path / "ascend_engine" / "docs" / "cli.md"
    with open(os.path.join(setup_module.HERE, "docs", "cli.md"), "rb") as f:
        assert manual.read_bytes() == f.read()
    # an installed package has no docs/ beside it: help reads the copy in the package
    monkeypatch.setattr(cli_help, "PACKAGED", str(manual))
    monkeypatch.setattr(cli_help, "CHECKOUT", str(tmp_path / "no-checkout" / "cli.md"))
    assert cli_help.manual_path() == str(manual)
    assert cli_help.topic_text("bench").startswith("## bench\n")
    assert cli_help.topic_text("bench") in manual.read_text(encoding="utf-8")


def test_editable_install_reads_the_checkout_headers(setup_module, tmp_path):
    # pip install -e: nothing is copied; the .pxd files and C code find include/ in the checkout.
    cmd = _build_py(setup_module, tmp_path, editable=True)
    cmd.run()
    assert not (tmp_path / "ascend_engine").exists()
    assert cmd.get_outputs() == []


def test_generated_pxi_files_ship_with_the_pxd_files(setup_module, monkeypatch):
    # cimport of ascend_engine._acl / _runtime from an installed package reads the .pxd
    # files and the generated .pxi files they include: pyproject.toml's package-data
    # must carry every file the generator writes.
    gen = repo_tools.load("gen_acl_pxd")
    config = read_configuration(os.path.join(setup_module.HERE, "pyproject.toml"))
    package_data = config["tool"]["setuptools"]["package-data"]
    assert not gen.generate(setup_module.HERE, check=True), "the generated files are stale: rebuild"
    monkeypatch.chdir(setup_module.HERE)
    cmd = setup_module.BuildPackage(Distribution({
        "name": "ascend-engine", "packages": ["ascend_engine"], "package_data": package_data,
    }))
    cmd.initialize_options()
    cmd.finalize_options()
    shipped = {f"{package.replace('.', '/')}/{name}" for package, _src, _build, names in cmd.data_files
               for name in names}
    for out in gen.OUTPUTS + ("ascend_engine/_acl.pxd", "ascend_engine/_runtime.pxd"):
        assert out.replace(os.sep, "/") in shipped, f"the wheel would lack {out}"
