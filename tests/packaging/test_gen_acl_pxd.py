"""tools/gen_acl_pxd.py: the list read exactly, bad entries refused by line, files written only on change."""

import os

import pytest
from helpers import repo_tools

GEN = repo_tools.load("gen_acl_pxd")
REPO = repo_tools.REPO


def test_declarations_of_each_shape():
    parse = GEN.parse
    text = """
AE_ACL_FN(1, aclError, aclInit, (const char *configPath))
AE_ACL_FN(1, const char *, aclGetRecentErrMsg, (void))
AE_ACL_FN(1, aclDataBuffer *, aclCreateDataBuffer, (void *data, size_t size))
AE_ACL_FN(0, aclError, aclrtLaunchCallback, (aclrtCallback fn, void *userData,
          aclrtCallbackBlockType blockType, aclrtStream stream))
"""
    fns = parse(text)
    assert [(f.required, f.ret, f.name) for f in fns] == [
        (True, "aclError", "aclInit"),
        (True, "const char *", "aclGetRecentErrMsg"),
        (True, "aclDataBuffer *", "aclCreateDataBuffer"),
        (False, "aclError", "aclrtLaunchCallback"),
    ]
    assert [GEN.declaration(f) for f in fns] == [
        "aclError (*aclInit)(const char *configPath) noexcept nogil",
        "const char *(*aclGetRecentErrMsg)() noexcept nogil",
        "aclDataBuffer *(*aclCreateDataBuffer)(void *data, size_t size) noexcept nogil",
        # an entry over two lines reads as one, its whitespace squeezed
        "aclError (*aclrtLaunchCallback)(aclrtCallback fn, void *userData, "
        "aclrtCallbackBlockType blockType, aclrtStream stream) noexcept nogil",
    ]
    rendered = GEN.render(fns)
    assert "    ctypedef struct ae_acl_api:\n" in rendered
    assert "        aclError (*aclrtLaunchCallback)(" in rendered and rendered.endswith("nogil  # optional\n")


def test_the_real_list_is_read_whole():
    # The header's own comment shows the AE_ACL_FN form: comments are not entries.
    with open(os.path.join(REPO, GEN.HEADER)) as f:
        text = f.read()
    entries = [line for line in text.splitlines() if line.startswith("AE_ACL_FN(")]
    fns = GEN.parse(text)
    assert len(fns) == len(entries) >= 120
    assert fns[0] == GEN.AclFunction(True, "aclError", "aclInit", "const char *configPath")
    assert GEN.AclFunction(False, "aclError", "aclrtGetDeviceSatMode", "aclrtFloatOverflowMode *mode") in fns


@pytest.mark.parametrize(
    "text, message",
    [
        ("AE_ACL_FN(1, aclError, aclInit)\n",
         "acl_functions.h:1: expected 4 arguments (required, return type, name, (parameters)), "
         "got 3: '1, aclError, aclInit'"),
        ("\n\nAE_ACL_FN(2, aclError, aclInit, (void))\n",
         "acl_functions.h:3: expected 0 or 1 as the first argument, got '2'"),
        ("AE_ACL_FN(1, aclError, acl Init, (void))\n",
         "acl_functions.h:1: expected a function name as the third argument, got 'acl Init'"),
        ("AE_ACL_FN(1, , aclInit, (void))\n", "acl_functions.h:1: aclInit has an empty return type"),
        ("AE_ACL_FN(1, aclError, aclInit, void)\n",
         "acl_functions.h:1: expected the parameter list of aclInit in parentheses, got 'void'"),
        ("AE_ACL_FN(1, aclError, aclInit, (void))\nAE_ACL_FN(0, aclError, aclInit, (void))\n",
         "acl_functions.h:2: aclInit is listed twice (first at line 1)"),
        ("AE_ACL_FN(1, aclError, aclInit, (void)\n",
         "acl_functions.h:1: AE_ACL_FN( is never closed: expected ')' before the end of the file"),
        ("/* AE_ACL_FN(1, aclError, aclInit, (void)) */\n",
         "acl_functions.h: no AE_ACL_FN(...) entry found"),
    ],
)
def test_a_bad_list_is_refused_with_its_line(text, message):
    with pytest.raises(GEN.GenerateError) as err:
        GEN.parse(text, "acl_functions.h")
    assert str(err.value) == message


def _tree(tmp_path, body):
    (tmp_path / "include" / "ascend_engine").mkdir(parents=True)
    (tmp_path / "ascend_engine").mkdir()
    (tmp_path / GEN.HEADER).write_text(body)
    return tmp_path


def test_generate_writes_only_on_change(tmp_path):
    root = _tree(tmp_path, "AE_ACL_FN(1, aclError, aclFinalize, (void))\n")
    out = root / GEN.OUTPUT
    assert GEN.generate(str(root), check=True) is True and not out.exists()  # check writes nothing
    assert GEN.generate(str(root)) is True
    assert "        aclError (*aclFinalize)() noexcept nogil\n" in out.read_text()
    os.utime(out, (1, 1))  # a write would move the time
    assert GEN.generate(str(root)) is False and out.stat().st_mtime == 1
    assert GEN.generate(str(root), check=True) is False
    (root / GEN.HEADER).write_text(
        "AE_ACL_FN(1, aclError, aclFinalize, (void))\nAE_ACL_FN(1, int, f, (int x))\n"
    )
    assert GEN.generate(str(root), check=True) is True and out.stat().st_mtime == 1  # stale, left alone
    assert GEN.generate(str(root)) is True
    assert out.read_text().endswith("        int (*f)(int x) noexcept nogil\n")
    assert sorted(os.listdir(root / "ascend_engine")) == ["_acl_functions.pxi"]  # no temporary left


def test_generate_names_a_missing_header(tmp_path):
    with pytest.raises(GEN.GenerateError, match=r"acl_functions.h is missing: it is the source of the"):
        GEN.generate(str(tmp_path))


def test_command_line_check_reports_a_stale_file(tmp_path, monkeypatch, capsys):
    root = _tree(tmp_path, "AE_ACL_FN(1, aclError, aclFinalize, (void))\n")
    monkeypatch.setattr(GEN, "ROOT", str(root))
    assert GEN.main(["--check"]) == 1
    assert "ascend_engine/_acl_functions.pxi is missing or stale" in capsys.readouterr().err
    assert GEN.main([]) == 0
    assert GEN.main(["--check"]) == 0
    (root / GEN.HEADER).write_text("AE_ACL_FN(3, aclError, aclFinalize, (void))\n")
    assert GEN.main([]) == 2
    assert "expected 0 or 1 as the first argument, got '3'" in capsys.readouterr().err
