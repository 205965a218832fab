"""The CANN header tool inside the package: ``ascend-engine sim headers``, its cache and its checkout entry.

No test here downloads anything: they use AE_CANN_HEADERS or a cache laid out
by hand (the download itself is what tests/conformance and .ci/run exercise).
"""

import os
import subprocess
import sys

import pytest

from ascend_engine import cann_headers, cli, toolkit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _include_folder(path):
    (path / "acl").mkdir(parents=True)
    (path / "acl" / "acl.h").write_text("/* stand-in for CANN's acl/acl.h */\n")
    return path


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """An XDG cache holding headers where ``sim headers`` would have put them; returns the include folder."""
    monkeypatch.delenv("AE_CANN_HEADERS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "ascend-engine" / f"cann-{cann_headers.TORCH_NPU_VERSION}"
    return _include_folder(cache / "torch_npu" / "include")


def test_sim_headers_and_the_toolkit_share_the_cache(cache_home, capsys):
    assert cann_headers.default_cache() == str(cache_home.parent.parent)
    assert cli.main(["sim", "headers", "--print-include"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{cache_home}\n" and err == ""
    assert cli.main(["sim", "headers"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{cache_home}\n"
    assert err == f"cann_headers: using cached headers in {cache_home}\n"
    assert toolkit.find_headers(None) == str(cache_home)


def test_sim_headers_takes_another_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("AE_CANN_HEADERS", raising=False)
    include = _include_folder(tmp_path / "mine" / "torch_npu" / "include")
    assert cli.main(["sim", "headers", "--cache", str(tmp_path / "mine"), "--print-include"]) == 0
    assert capsys.readouterr().out == f"{include}\n"


def test_sim_headers_failure_is_one_line_and_status_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AE_CANN_HEADERS", str(tmp_path / "nowhere"))
    assert cli.main(["sim", "headers"]) == 1
    assert capsys.readouterr().err == (
        f"ascend-engine: error: CannHeadersUnavailable: AE_CANN_HEADERS={tmp_path / 'nowhere'} "
        "does not contain acl/acl.h\n"
    )


def test_toolkit_without_headers_says_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("AE_CANN_HEADERS", str(tmp_path / "nowhere"))
    with pytest.raises(toolkit.ToolkitError) as err:
        toolkit.find_headers(None)
    text = str(err.value)
    assert "the CANN headers are not bundled with ascend-engine and none were found" in text
    assert f"AE_CANN_HEADERS={tmp_path / 'nowhere'} does not contain acl/acl.h" in text
    assert "`ascend-engine sim headers`" in text and "--headers PATH" in text


def test_cache_inside_the_checkout_or_package_is_refused(monkeypatch):
    monkeypatch.delenv("AE_CANN_HEADERS", raising=False)
    inside = os.path.join(cann_headers.PACKAGE, "cann")
    with pytest.raises(cann_headers.CannHeadersUnavailable, match="inside the source checkout"):
        cann_headers.ensure_headers(inside)
    # An installed package has no checkout around it: the package itself is refused.
    monkeypatch.setattr(cann_headers, "source_root", lambda: None)
    with pytest.raises(cann_headers.CannHeadersUnavailable, match="inside the installed package"):
        cann_headers.ensure_headers(inside)
    assert not os.path.exists(inside)


def test_checkout_entry_runs_the_package_tool(tmp_path):
    # python tools/cann_headers.py, from another folder, with and without usable headers.
    include = _include_folder(tmp_path / "inc")
    script = os.path.join(REPO, "tools", "cann_headers.py")
    env = dict(os.environ, AE_CANN_HEADERS=str(include))
    run = subprocess.run([sys.executable, script, "--print-include"], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert (run.returncode, run.stdout, run.stderr) == (0, f"{include}\n", "")
    env["AE_CANN_HEADERS"] = str(tmp_path / "nowhere")
    run = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 2
    assert run.stderr == f"cann_headers: AE_CANN_HEADERS={tmp_path / 'nowhere'} does not contain acl/acl.h\n"
