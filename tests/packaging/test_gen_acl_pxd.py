"""tools/gen_acl_pxd.py: the list read exactly, bad entries refused by line, the checked wrappers
each kind of entry yields, files written only on change."""

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
        # the wrappers pass every parameter on by name
        ("AE_ACL_FN(1, aclError, aclrtFree, (void *))\n",
         "acl_functions.h:1: expected a type and a name for each parameter of aclrtFree, got 'void *'"),
        ("AE_ACL_FN(1, aclError, aclrtLaunchCallback, (void (*fn)(void *userData), void *userData))\n",
         "acl_functions.h:1: expected a type and a name for each parameter of aclrtLaunchCallback, "
         "got 'void (*fn)(void *userData)'"),
        ("AE_ACL_FN(1, aclError, aclmdlGetInputDims, (const aclmdlDesc *modelDesc, int64_t dims[]))\n",
         "acl_functions.h:1: expected a type and a name for each parameter of aclmdlGetInputDims, "
         "got 'int64_t dims[]'"),
        ("AE_ACL_FN(1, aclError, aclrtProcessReport, (int32_t rc))\n",
         "acl_functions.h:1: parameter 'rc' of aclrtProcessReport is a name the wrappers cannot use: "
         "rename it"),
    ],
)
def test_a_bad_list_is_refused_with_its_line(text, message):
    with pytest.raises(GEN.GenerateError) as err:
        GEN.parse(text, "acl_functions.h")
    assert str(err.value) == message


def test_each_kind_of_entry_yields_its_wrappers():
    fns = GEN.parse("""
AE_ACL_FN(1, aclError, aclInit, (const char *configPath))
AE_ACL_FN(1, aclError, aclrtFree, (void *devPtr))
AE_ACL_FN(0, aclError, aclrtStreamQuery, (aclrtStream stream, aclrtStreamStatus *status))
AE_ACL_FN(1, size_t, aclmdlGetNumInputs, (aclmdlDesc *modelDesc))
AE_ACL_FN(0, aclTensorDesc *, aclCreateTensorDesc, (aclDataType dataType, int numDims, const int64_t *dims,
          aclFormat format))
AE_ACL_FN(0, aclError, aclmdlGetDynamicHW, (const aclmdlDesc *modelDesc, size_t index, aclmdlHW *hw))
""")
    text = GEN.render_checked(fns)
    # A required aclError function: its return code checked, nothing else.
    assert """
cdef inline int checked_aclrtFree(void *devPtr) except -1 nogil:
    cdef aclError rc
    rc = api_nogil().aclrtFree(devPtr)
    if rc == ACL_SUCCESS:
        return 0
    with gil:
        return check(rc, b"aclrtFree")
""" in text
    # An optional one: the missing-function error first, in its own wrapper too.
    assert """
cdef inline int require_aclrtStreamQuery() except -1 nogil:
    if api_nogil().aclrtStreamQuery is NULL:
        with gil:
            return missing_function(b"aclrtStreamQuery")
    return 0


cdef inline int checked_aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) except -1 nogil:
    cdef aclError rc
    require_aclrtStreamQuery()
    rc = api_nogil().aclrtStreamQuery(stream, status)
    if rc == ACL_SUCCESS:
        return 0
    with gil:
        return check(rc, b"aclrtStreamQuery")
""" in text
    # Not an aclError: no code to check; optional: the missing check alone.  aclInit: named as excluded.
    defined = [line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("cdef inline")]
    assert defined == [
        "checked_aclrtFree",
        "require_aclrtStreamQuery", "checked_aclrtStreamQuery",
        "require_aclCreateTensorDesc",
        "require_aclmdlGetDynamicHW", "checked_aclmdlGetDynamicHW",
    ]
    assert "#   aclInit: called once while the backend loads" in text
    assert GEN.parameter_names(fns[4]) == ["dataType", "numDims", "dims", "format"]
    assert GEN.parameter_names(GEN.parse("AE_ACL_FN(1, aclError, aclFinalize, (void))")[0]) == []


def test_the_real_list_wraps_every_checkable_function():
    with open(os.path.join(REPO, GEN.HEADER)) as f:
        fns = GEN.parse(f.read())
    text = GEN.render_checked(fns)
    for fn in fns:
        wrapped = fn.ret == "aclError" and fn.name != "aclInit"
        assert (f"cdef inline int checked_{fn.name}(" in text) == wrapped
        assert (f"cdef inline int require_{fn.name}()" in text) == (not fn.required)
    assert GEN.checked(GEN.AclFunction(False, "aclError", "aclrtStreamQuery", "aclrtStream stream"))
    assert not GEN.checked(GEN.AclFunction(True, "aclError", "aclInit", "const char *configPath"))


def _tree(tmp_path, body):
    (tmp_path / "include" / "ascend_engine").mkdir(parents=True)
    (tmp_path / "ascend_engine").mkdir()
    (tmp_path / GEN.HEADER).write_text(body)
    return tmp_path


def test_generate_writes_only_on_change(tmp_path):
    root = _tree(tmp_path, "AE_ACL_FN(1, aclError, aclFinalize, (void))\n")
    out, wrappers = root / GEN.OUTPUT, root / GEN.CHECKED_OUTPUT
    assert GEN.generate(str(root), check=True) is True and not out.exists()  # check writes nothing
    assert not wrappers.exists()
    assert GEN.generate(str(root)) is True
    assert "        aclError (*aclFinalize)() noexcept nogil\n" in out.read_text()
    assert "cdef inline int checked_aclFinalize() except -1 nogil:\n" in wrappers.read_text()
    os.utime(out, (1, 1))  # a write would move the time
    os.utime(wrappers, (1, 1))
    assert GEN.generate(str(root)) is False and out.stat().st_mtime == 1 and wrappers.stat().st_mtime == 1
    assert GEN.generate(str(root), check=True) is False
    (root / GEN.HEADER).write_text(
        "AE_ACL_FN(1, aclError, aclFinalize, (void))\nAE_ACL_FN(1, int, f, (int x))\n"
    )
    assert GEN.generate(str(root), check=True) is True and out.stat().st_mtime == 1  # stale, left alone
    assert GEN.generate(str(root)) is True
    assert out.read_text().endswith("        int (*f)(int x) noexcept nogil\n")
    # f returns no aclError and is required: nothing to wrap, so the wrappers are unchanged
    assert wrappers.stat().st_mtime == 1
    (root / GEN.HEADER).write_text(
        "AE_ACL_FN(1, aclError, aclFinalize, (void))\nAE_ACL_FN(1, int, f, (int x))\n"
        "AE_ACL_FN(0, aclError, aclrtProcessReport, (int32_t timeout))\n"
    )
    assert GEN.update(str(root), check=True) == [GEN.OUTPUT, GEN.CHECKED_OUTPUT]
    assert GEN.update(str(root)) == [GEN.OUTPUT, GEN.CHECKED_OUTPUT]
    text = wrappers.read_text()
    assert "cdef inline int require_aclrtProcessReport() except -1 nogil:\n" in text
    assert "    rc = api_nogil().aclrtProcessReport(timeout)\n" in text
    # no temporary left
    assert sorted(os.listdir(root / "ascend_engine")) == ["_acl_checked.pxi", "_acl_functions.pxi"]


def test_generate_names_a_missing_header(tmp_path):
    with pytest.raises(GEN.GenerateError, match=r"acl_functions.h is missing: it is the source of the"):
        GEN.generate(str(tmp_path))


def test_command_line_check_reports_a_stale_file(tmp_path, monkeypatch, capsys):
    root = _tree(tmp_path, "AE_ACL_FN(1, aclError, aclFinalize, (void))\n")
    monkeypatch.setattr(GEN, "ROOT", str(root))
    assert GEN.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "ascend_engine/_acl_functions.pxi is missing or stale" in err
    assert "ascend_engine/_acl_checked.pxi is missing or stale" in err
    assert GEN.main([]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ascend_engine/_acl_functions.pxi: written", "ascend_engine/_acl_checked.pxi: written"
    ]
    assert GEN.main(["--check"]) == 0
    (root / GEN.CHECKED_OUTPUT).write_text("# edited by hand\n")
    assert GEN.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "_acl_checked.pxi is missing or stale" in err and "_acl_functions.pxi" not in err
    (root / GEN.HEADER).write_text("AE_ACL_FN(3, aclError, aclFinalize, (void))\n")
    assert GEN.main([]) == 2
    assert "expected 0 or 1 as the first argument, got '3'" in capsys.readouterr().err


def test_the_wrappers_are_included_after_what_they_call():
    with open(os.path.join(REPO, "ascend_engine", "_runtime.pxd")) as f:
        pxd = f.read()
    include = pxd.index('\ninclude "_acl_checked.pxi"\n')
    for declared in ("cdef const ae_acl_api *api_nogil() except NULL nogil\n",
                     "cdef int check(aclError rc, const char *fn) except -1\n",
                     "cdef int missing_function(const char *name) except -1\n"):
        assert -1 < pxd.find(declared) < include, declared
