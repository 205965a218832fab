"""The toolkit's acllib/ folder: the layout older sample build files use (docs/toolkit.md, "The folder")."""

import os
import subprocess


def test_acllib_layout_builds_a_program_as_older_sample_cmakelists_do(toolkit_dir, tmp_path):
    # Older sample CMakeLists include $INSTALL_DIR/acllib/include and link from
    # acllib/lib64/stub: the toolkit keeps that folder as CANN does.
    acllib = os.path.join(toolkit_dir, "acllib")
    assert os.path.islink(acllib) and os.readlink(acllib) == "runtime"
    src = tmp_path / "probe.c"
    src.write_text(
        '#include <stdio.h>\n#include "acl/acl.h"\n#include "acl/ops/acl_dvpp.h"\n'
        "int main(void) { aclDataBuffer *b = aclCreateDataBuffer(NULL, 0);\n"
        '  printf("%u\\n", (unsigned)aclGetDataBufferSize(b)); return aclDestroyDataBuffer(b); }\n'
    )
    exe = tmp_path / "probe"
    subprocess.run(
        ["gcc", "-Wno-deprecated-declarations", str(src), "-o", str(exe),
         "-I", os.path.join(acllib, "include"), "-L", os.path.join(acllib, "lib64", "stub"),
         "-lascendcl", "-lacl_dvpp"],
        check=True, capture_output=True, text=True,
    )
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(acllib, "lib64"))
    run = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout.strip()) == (0, "0")
