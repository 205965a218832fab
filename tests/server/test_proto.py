"""Our kserve_v2.proto: compiled into the committed descriptor, and wire-compatible with the protocol's."""

import os
import subprocess
import sys

import pytest

from ascend_engine.server.kserve_v2 import FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_committed_descriptor_is_what_the_proto_compiles_to():
    pytest.importorskip("grpc_tools", reason="grpcio-tools is needed to compile the .proto")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_kserve_proto.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _fields(descriptor):
    return {f.name: (f.number, f.type, f.is_repeated) for f in descriptor.fields}


def _walk(descriptor, prefix=""):
    yield prefix + descriptor.name, descriptor
    for nested in descriptor.nested_types:
        yield from _walk(nested, prefix + descriptor.name + ".")


def test_every_field_has_the_number_and_type_tritonclient_uses():
    """Each field we declare is the field the KServe v2 / Triton definitions (tritonclient's
    generated modules) give that name: same number, type and repetition, in every message."""
    service_pb2 = pytest.importorskip("tritonclient.grpc.service_pb2")
    model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
    theirs = {}
    for module in (service_pb2, model_config_pb2):
        for message in module.DESCRIPTOR.message_types_by_name.values():
            theirs.update(_walk(message))
    checked = 0
    for message in FILE.message_types_by_name.values():
        for name, ours in _walk(message):
            assert name in theirs, f"message {name} is not a KServe v2 / Triton message"
            their_fields = _fields(theirs[name])
            for field, spec in _fields(ours).items():
                their = their_fields.get(field)
                assert their == spec, f"{name}.{field}: ours {spec}, theirs {their}"
                checked += 1
    assert checked > 100
    their_service = service_pb2.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    for method in FILE.services_by_name["GRPCInferenceService"].methods:
        their = their_service.methods_by_name[method.name]
        assert (method.input_type.name, method.output_type.name) == (their.input_type.name,
                                                                      their.output_type.name)
