#!/usr/bin/env python3
"""Compile ascend_engine/server/kserve_v2.proto into ascend_engine/server/kserve_v2_descriptor.py.

The server does not ship protoc's generated ``_pb2`` modules: they check the
protobuf runtime against the protoc that made them and refuse other major
versions.  It ships the compiled file descriptor instead (bytes, the same for
every protobuf version) and builds its message classes from it at import
(ascend_engine/server/kserve_v2.py), so any protobuf runtime from 4 on serves
and nothing is compiled when the package is built.  Only this tool needs
grpcio-tools.

    python tools/gen_kserve_proto.py           # rewrite the descriptor module
    python tools/gen_kserve_proto.py --check   # exit 1 if it is not what the .proto compiles to
"""

import argparse
import base64
import os
import sys
import tempfile
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(REPO, "ascend_engine", "server")
PROTO = "kserve_v2.proto"
MODULE = os.path.join(FOLDER, "kserve_v2_descriptor.py")

HEADER = '''"""The compiled descriptor of kserve_v2.proto, written by tools/gen_kserve_proto.py: do not edit.

A serialized ``FileDescriptorProto``; ascend_engine/server/kserve_v2.py builds the messages from it.
"""

import base64

SERIALIZED = base64.b64decode("".join((
'''


def compiled() -> bytes:
    """The .proto's FileDescriptorProto, serialized deterministically."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        rc = protoc.main(["protoc", f"-I{FOLDER}", f"--descriptor_set_out={out}", PROTO])
        if rc != 0:
            raise SystemExit(f"protoc failed on {PROTO} (exit {rc})")
        with open(out, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    [proto] = files.file
    return proto.SerializeToString(deterministic=True)


def module_text(serialized: bytes) -> str:
    encoded = base64.b64encode(serialized).decode()
    lines = [f'    "{chunk}",' for chunk in textwrap.wrap(encoded, 100)]
    return HEADER + "\n".join(lines) + "\n)))\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = module_text(compiled())
    if args.check:
        with open(MODULE, encoding="utf-8") as f:
            same = f.read() == text
        verdict = "up to date" if same else "STALE: run tools/gen_kserve_proto.py"
        print(f"{os.path.relpath(MODULE, REPO)}: {verdict}")
        return 0 if same else 1
    with open(MODULE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(MODULE, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
