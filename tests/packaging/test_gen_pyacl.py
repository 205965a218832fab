"""tools/gen_pyacl.py: ascend_engine.acl's functions from tools/pyacl_table.py -- each kind of
argument and result rendered, bad lines refused by line, the built file up to date."""

import types

import pytest
from helpers import repo_tools

GEN = repo_tools.load("gen_pyacl")
GEN_ACL = repo_tools.load("gen_acl_pxd")
REPO = repo_tools.REPO

ACL = {f.name: f for f in GEN_ACL.parse("""
AE_ACL_FN(1, aclError, aclrtMalloc, (void **devPtr, size_t size, aclrtMemMallocPolicy policy))
AE_ACL_FN(1, aclError, aclrtSynchronizeStream, (aclrtStream stream))
AE_ACL_FN(1, aclError, aclmdlGetInputDims, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))
AE_ACL_FN(1, aclError, aclmdlAddDatasetBuffer, (aclmdlDataset *dataset, aclDataBuffer *dataBuffer))
AE_ACL_FN(0, const char *, aclrtGetSocName, (void))
""")}


def table(functions="", unsupported="", media=""):
    return types.SimpleNamespace(FUNCTIONS=functions, UNSUPPORTED=unsupported, MEDIA=media)


def test_each_kind_of_line_renders_pyacls_convention():
    fns, unsupported = GEN.parse_table(table(
        functions="""
rt.malloc            aclrtMalloc             out=devPtr
rt.synchronize_stream aclrtSynchronizeStream nogil
mdl.get_input_dims   aclmdlGetInputDims      out=dims
mdl.add_dataset_buffer aclmdlAddDatasetBuffer echo=dataset
get_soc_name         aclrtGetSocName         value
media.dvpp_get_pic_desc_width acldvppGetPicDescWidth value
""", unsupported="op.execute(op_type, stream) -> ret\nprof.get_op_num(info, n) -> (num, ret)",
        media="uint32_t acldvppGetPicDescWidth(const acldvppPicDesc *picDesc);"), ACL)
    text = {f.pyname: GEN.render_function(f) for f in fns}
    malloc = text["rt.malloc"]
    assert malloc.startswith('def _f_rt_malloc(size, policy):\n'
                             '    """acl.rt.malloc(size, policy) -> (dev_ptr, ret): aclrtMalloc."""')
    assert '<size_t>_uint(size, SIZE_MAX, "acl.rt.malloc", "size")' in text["rt.malloc"]
    assert "rc = _t.aclrtMalloc(&a0, a1, a2)" in text["rt.malloc"]
    assert text["rt.malloc"].endswith("return (<uintptr_t>a0, rc)")
    # a blocking call releases the GIL; a required function is called without a NULL check
    sync = text["rt.synchronize_stream"]
    assert "    with nogil:\n        rc = _t.aclrtSynchronizeStream(a0)\n    return rc" in sync
    assert text["mdl.get_input_dims"].endswith("return (_dims_dict(&a2), rc)")
    assert text["mdl.add_dataset_buffer"].endswith("return (dataset, rc)")
    # an optional one answers ACL_ERROR_API_NOT_SUPPORT (values: 0, "") when the library lacks it
    assert 'if _t.aclrtGetSocName is not NULL:' in text["get_soc_name"]
    assert 'return ""' in text["get_soc_name"] and text["get_soc_name"].endswith("return _pystr(r)")
    assert "if _media() and _m_acldvppGetPicDescWidth is not NULL:" in text["media.dvpp_get_pic_desc_width"]
    u = {x.pyname: GEN.render_unsupported(x) for x in unsupported}
    assert u["op.execute"].endswith('rc = _unsupported("acl.op.execute")\n    return rc')
    assert u["prof.get_op_num"].endswith("return (0, rc)")
    rendered = GEN.render(fns, unsupported)
    assert '    "rt": {\n        "malloc": _f_rt_malloc,\n' in rendered
    assert 'UNSUPPORTED = frozenset({\n    "acl.op.execute",\n    "acl.prof.get_op_num",\n})' in rendered


@pytest.mark.parametrize("functions, unsupported, message", [
    ("rt.malloc aclrtMallocc", "",
     "FUNCTIONS line 1: aclrtMallocc is neither in acl_functions.h nor in MEDIA"),
    ("rt.malloc aclrtMalloc out=ptr", "",
     "FUNCTIONS line 1: out=ptr is not a parameter of aclrtMalloc (devPtr, size, policy)"),
    ("rt.malloc aclrtMalloc out=devPtr\nrt.malloc aclrtMalloc", "",
     "FUNCTIONS line 2: acl.rt.malloc is listed twice (first on line 1)"),
    ("rt.malloc aclrtMalloc fast", "", "FUNCTIONS line 1: unknown option 'fast'"),
    ("get_soc_name aclrtGetSocName out=x", "", "FUNCTIONS line 1: out=x is not a parameter"),
    ("mdl.add aclmdlAddDatasetBuffer echo=ds", "", "echo=ds is not an argument of acl.mdl.add"),
    ("", "op.execute(a) -> maybe",
     "UNSUPPORTED line 1: expected 'name(params) -> ret|handle|value|(x, ret)'"),
])
def test_bad_lines_are_refused_by_line(functions, unsupported, message):
    with pytest.raises(GEN.GenerateError) as e:
        GEN.parse_table(table(functions, unsupported), ACL)
    assert message in str(e.value)


def test_the_repository_table_builds_and_the_built_file_is_current():
    assert GEN.update(REPO, check=True) is False, "run python tools/gen_pyacl.py (setup.py does)"
    text = GEN.build(REPO)
    assert text.count("\ndef _f_") > 170 and text.count("\ndef _u_") > 70
