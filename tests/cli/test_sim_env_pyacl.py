"""`sim env` and pyACL: the shim folder on PYTHONPATH makes `import acl` ascend_engine.acl; another
acl (CANN's pyACL) is not shadowed unless asked (ascend_engine/sim_env.py, docs/pyacl.md)."""

import os
import subprocess
import sys

import pytest

from ascend_engine import sim_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_env(*args, path_extra=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO] + ([path_extra] if path_extra else [])))
    return subprocess.run([sys.executable, "-m", "ascend_engine", "sim", "env", *args], env=env,
                          capture_output=True, text=True, check=True).stdout


def test_eval_makes_import_acl_the_simulators(tmp_path):
    script = tmp_path / "env.sh"
    script.write_text(run_env())
    shell = subprocess.run(
        ["bash", "-c", f'PYTHONPATH={REPO}; . {script}; {sys.executable} -c "import acl, acl.rt; '
                       'print(acl.__name__, acl.rt.__name__, acl.rt.malloc.__doc__[:13])"'],
        capture_output=True, text=True, check=True)
    assert shell.stdout.split() == ["ascend_engine.acl", "ascend_engine.acl.rt", "acl.rt.malloc"]


def test_nothing_is_installed_as_a_top_level_acl():
    """Without the shim folder, `import acl` does not find this package's module."""
    proc = subprocess.run([sys.executable, "-c", "import acl; print(acl.__file__)"], cwd="/",
                          env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True)
    assert proc.returncode != 0 or "ascend_engine" not in proc.stdout
    assert not os.path.exists(os.path.join(REPO, "acl.py")) and not os.path.exists(os.path.join(REPO, "acl"))


@pytest.fixture
def cann_pyacl(tmp_path):
    """A folder holding another acl module, as CANN's set_env.sh puts its pyACL on PYTHONPATH."""
    folder = tmp_path / "cann" / "python" / "site-packages"
    folder.mkdir(parents=True)
    (folder / "acl.py").write_text("NAME = 'cann'\n")
    return str(folder)


def test_cann_pyacl_is_not_shadowed_unless_asked(cann_pyacl):
    out = run_env(path_extra=cann_pyacl)
    assert "PYTHONPATH" not in out.replace("# pyACL", "")
    assert f"# pyACL: another acl module is importable ({cann_pyacl}/acl.py): not shadowed;" in out
    shadow = run_env("--pyacl=shim", path_extra=cann_pyacl)
    assert f"#   it shadows the acl module at {cann_pyacl}/acl.py (--pyacl=shim)" in shadow
    assert f'export PYTHONPATH={sim_env.shim_folder()}"${{PYTHONPATH:+:$PYTHONPATH}}"' in shadow


def test_off_and_a_bad_mode():
    assert "pyacl_shim" not in run_env("--pyacl=off")
    assert sim_env.pyacl_lines("off") == []
    with pytest.raises(ValueError, match="--pyacl='maybe': expected one of auto, shim, off"):
        sim_env.pyacl_lines("maybe")
    # the shim folder itself never counts as another acl
    assert sim_env.other_pyacl([sim_env.shim_folder()]) is None
