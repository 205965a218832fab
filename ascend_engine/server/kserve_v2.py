"""The KServe v2 gRPC messages, as Python classes built from kserve_v2.proto's compiled descriptor.

``messages.ModelInferRequest`` and the rest: one class per message of
kserve_v2.proto, made at import from kserve_v2_descriptor.py (why not protoc's
``_pb2`` modules: tools/gen_kserve_proto.py).  They live in a descriptor pool of
their own, so a process that also imports tritonclient (which registers the same
``inference`` package in protobuf's default pool) loads both without a clash.
"""

from __future__ import annotations

from types import SimpleNamespace

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ascend_engine.server.kserve_v2_descriptor import SERIALIZED

PACKAGE = "inference"
SERVICE = "inference.GRPCInferenceService"

_pool = descriptor_pool.DescriptorPool()
FILE = _pool.Add(descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED))
_file = _pool.FindFileByName(FILE.name)

messages = SimpleNamespace(**{name: message_factory.GetMessageClass(descriptor)
                              for name, descriptor in _file.message_types_by_name.items()})

# rpc name -> (request class, response class, whether requests and answers stream)
METHODS = {method.name: (message_factory.GetMessageClass(method.input_type),
                         message_factory.GetMessageClass(method.output_type),
                         method.client_streaming and method.server_streaming)
           for method in _file.services_by_name["GRPCInferenceService"].methods}
