"""The gRPC front end: KServe v2's ``inference.GRPCInferenceService`` on grpcio's asyncio server.

Handlers are registered by name from kserve_v2.proto's service (no protoc stubs:
tools/gen_kserve_proto.py says why), run on the server's event loop beside the
HTTP front end, and answer through the same :class:`~ascend_engine.server.service.Service`.
An :class:`InferenceServerError` becomes the gRPC status of the same meaning
(``InferenceServerError.grpc_code``: NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE, ...).
"""

from __future__ import annotations

import asyncio

import grpc
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from ascend_engine.errors import InferenceServerError
from ascend_engine.server import protocol
from ascend_engine.server.kserve_v2 import METHODS, SERVICE, messages

MAX_MESSAGE = 256 << 20     # bytes of one request or reply (as the HTTP front end's body limit)

# the typed list of InferTensorContents that carries each datatype
CONTENTS = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
            "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
            "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
            "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}


def input_arrays(request) -> dict:
    """{name: array} from a ModelInferRequest: raw contents (all inputs or none) or typed contents."""
    raw = request.raw_input_contents
    if raw and len(raw) != len(request.inputs):
        raise protocol.bad_request(f"raw_input_contents holds {len(raw)} tensors for {len(request.inputs)} "
                                   "inputs: give every input's bytes there, or none")
    tensors = {}
    for k, tensor in enumerate(request.inputs):
        name = tensor.name
        if name in tensors:
            raise protocol.bad_request(f"input '{name}' is given twice")
        shape = protocol.check_shape(name, list(tensor.shape))
        if raw:
            tensors[name] = protocol.from_bytes(name, tensor.datatype, shape, raw[k])
            continue
        field = CONTENTS.get(tensor.datatype)
        if field is None:
            if tensor.datatype not in protocol.DATATYPES:
                protocol.from_bytes(name, tensor.datatype, shape, b"")   # raises: unknown datatype
            raise protocol.bad_request(f"input '{name}': {tensor.datatype} data travels in "
                                       "raw_input_contents only")
        values = getattr(tensor.contents, field)
        tensors[name] = protocol.from_json_data(name, tensor.datatype, shape, list(values))
    return tensors


def request_parameters(request) -> dict:
    """A ModelInferRequest's parameters as plain values ({name: int, str, bool or float})."""
    values = {}
    for name, parameter in request.parameters.items():
        kind = parameter.WhichOneof("parameter_choice")
        values[name] = None if kind is None else getattr(parameter, kind)
    return values


def infer_reply(model, request, outputs: dict):
    """The ModelInferResponse: the requested outputs (all when none is named) as raw contents."""
    names = [o.name for o in request.outputs] or list(model.output_names)
    for k, name in enumerate(names):
        if name not in model.output_names:
            raise protocol.bad_request(f"outputs[{k}]: unexpected inference output '{name}' for model "
                                       f"'{model.name}' (its outputs: {', '.join(model.output_names)})")
    reply = messages.ModelInferResponse(model_name=model.name, model_version=model.version, id=request.id)
    for name in names:
        array = outputs[name]
        reply.outputs.add(name=name, datatype=protocol.datatype_of(array.dtype), shape=array.shape)
        reply.raw_output_contents.append(protocol.to_bytes(array))
    return reply


class Handlers:
    """One coroutine per rpc of the service."""

    def __init__(self, service):
        self.service = service

    async def ServerLive(self, request, context):
        return messages.ServerLiveResponse(live=self.service.live())

    async def ServerReady(self, request, context):
        return messages.ServerReadyResponse(ready=self.service.ready())

    async def ModelReady(self, request, context):
        return messages.ModelReadyResponse(ready=self.service.model_ready(request.name, request.version))

    async def ServerMetadata(self, request, context):
        return json_format.ParseDict(self.service.metadata(), messages.ServerMetadataResponse())

    async def ModelMetadata(self, request, context):
        document = self.service.model_metadata(request.name, request.version)
        return json_format.ParseDict(document, messages.ModelMetadataResponse())

    async def ModelConfig(self, request, context):
        config = self.service.model_config(request.name, request.version)
        return messages.ModelConfigResponse(config=json_format.ParseDict(config, messages.ModelConfig()))

    async def ModelStatistics(self, request, context):
        # the engines' figures are read on a worker thread: never a stall of the loop
        document = await asyncio.to_thread(self.service.model_statistics, request.name, request.version)
        return json_format.ParseDict(document, messages.ModelStatisticsResponse())

    async def RepositoryIndex(self, request, context):
        models = [m for m in self.service.index() if not request.ready or m["state"] == "READY"]
        return json_format.ParseDict({"models": models}, messages.RepositoryIndexResponse())

    async def RepositoryModelLoad(self, request, context):
        self._control_parameters(request, "load")
        await self.service.load_model(request.model_name)
        return messages.RepositoryModelLoadResponse()

    async def RepositoryModelUnload(self, request, context):
        self._control_parameters(request, "unload")
        await self.service.unload_model(request.model_name)
        return messages.RepositoryModelUnloadResponse()

    @staticmethod
    def _control_parameters(request, action):
        unknown = sorted(set(request.parameters) - {"unload_dependents"})
        if unknown:
            raise protocol.bad_request(f"{action} of '{request.model_name}': parameter '{unknown[0]}' is not "
                                       f"supported (a model is loaded from its folder as it is)")

    async def ModelInfer(self, request, context):
        model = self.service.model(request.model_name, request.model_version)
        return await self.service.infer(model, input_arrays(request), request_parameters(request),
                                        encode=lambda outputs: infer_reply(model, request, outputs))

    async def ModelStreamInfer(self, requests, context):
        """Answer every request of the stream as it finishes; an error is an answer naming it.

        ``requests`` are the stream's messages as bytes, parsed here: one that does not
        parse (not a ModelInferRequest, or text that is not UTF-8) ends the stream with
        INVALID_ARGUMENT naming it, once the answers owed for the messages before it are sent.
        """
        answers = asyncio.Queue()
        running = set()

        async def answer(request):
            try:
                response = await self.ModelInfer(request, context)
                reply = messages.ModelStreamInferResponse(infer_response=response)
            except InferenceServerError as exc:
                named = messages.ModelInferResponse(model_name=request.model_name, id=request.id)
                reply = messages.ModelStreamInferResponse(error_message=exc.message, infer_response=named)
            await answers.put(reply)

        async def read():
            ending = None
            try:
                index = 0
                async for raw in requests:
                    index += 1
                    try:
                        request = messages.ModelInferRequest.FromString(raw)
                    except DecodeError as exc:
                        ending = protocol.bad_request(f"message {index} of the stream ({len(raw)} bytes) "
                                                      f"is not a ModelInferRequest: {exc}")
                        break
                    task = asyncio.ensure_future(answer(request))
                    running.add(task)
                    task.add_done_callback(running.discard)
            except Exception as exc:   # the stream broke: it must still end, never hang
                ending = InferenceServerError(500, f"reading the stream failed: {type(exc).__name__}: {exc}")
            await asyncio.gather(*list(running))
            await answers.put(ending)

        reader = asyncio.ensure_future(read())
        try:
            while (reply := await answers.get()) is not None:
                if isinstance(reply, InferenceServerError):
                    await context.abort(getattr(grpc.StatusCode, reply.grpc_code), reply.message)
                yield reply
        finally:
            reader.cancel()
            for task in list(running):
                task.cancel()


def _streaming(method, request_class, response_class):
    async def handle(requests, context):
        async for reply in method(requests, context):
            yield reply

    # no request deserializer: the method parses each message, so one that does not parse is named
    return grpc.stream_stream_rpc_method_handler(handle, request_deserializer=None,
                                                 response_serializer=response_class.SerializeToString)


def _unary(method, request_class, response_class):
    async def handle(request, context):
        try:
            return await method(request, context)
        except InferenceServerError as exc:
            await context.abort(getattr(grpc.StatusCode, exc.grpc_code), exc.message)
        except (ValueError, TypeError, json_format.ParseError) as exc:
            await context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")

    return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=request_class.FromString,
                                               response_serializer=response_class.SerializeToString)


async def start(service, host: str, port: int):
    """Serve on ``host:port``; returns (the grpc.aio server, the port bound)."""
    handlers = Handlers(service)
    table = {name: (_streaming if streams else _unary)(getattr(handlers, name), request, response)
             for name, (request, response, streams) in METHODS.items()}
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                                      ("grpc.max_send_message_length", MAX_MESSAGE),
                                      ("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, table),))
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:        # grpcio raises where older releases returned 0
        bound = 0
    if bound == 0:
        raise InferenceServerError(500, f"cannot listen for gRPC on {host}:{port}")
    await server.start()
    return server, bound

