"""The HTTP/REST front end: KServe v2 over HTTP/1.1, with Triton's binary-tensor extension.

An ``asyncio.Protocol`` with the httptools parser, on the server's (uv)loop:
benchmarks/bench_http_stacks.py measured it at a fraction of aiohttp's and
uvicorn's CPU per request (benchmarks/RESULTS.md, "HTTP stack").  Requests on
one connection may be pipelined: their answers go out in the order they came,
each as soon as it and every one before it is ready.  Routes and statuses:
docs/serve.md, "HTTP".
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import zlib

import httptools

from ascend_engine.errors import InferenceServerError
from ascend_engine.server import protocol

MAX_BODY = 256 << 20            # bytes of one request body, decompressed too (413 beyond)
MAX_HEADER_BYTES = 64 << 10     # bytes of one request's line and headers (431 beyond)
MAX_PIPELINED = 64              # requests read ahead of their answers: reading pauses beyond
WRITE_HIGH_WATER = 1 << 20      # answer bytes the client has not taken: reading pauses beyond
HEADER_SECONDS = 30.0           # from a request's first byte to the end of its headers (408 beyond)
IDLE_SECONDS = 120.0            # silence, with nothing owed to the client, before the connection closes
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 411: "Length Required", 413: "Payload Too Large",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
_MODEL_ROUTE = re.compile(r"^/v2/models/([^/]+)(?:/versions/([^/]+))?(/ready|/config|/infer|/stats)?$")
_CONTROL_ROUTE = re.compile(r"^/v2/repository/models/([^/]+)/(load|unload)$")
_NO_BODY = b""


class Request:
    """One parsed HTTP request."""

    __slots__ = ("method", "path", "headers", "body", "keep_alive")

    def __init__(self, method, path, headers, body, keep_alive):
        self.method, self.path, self.headers = method, path, headers
        self.body, self.keep_alive = body, keep_alive


def response(status: int, body: bytes = _NO_BODY, content_type: bytes = b"application/json",
             extra: bytes = b"", close: bool = False) -> bytes:
    head = (b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n"
            % (status, _REASONS.get(status, "Error").encode(), content_type, len(body)))
    if close:
        head += b"connection: close\r\n"
    return head + extra + b"\r\n" + body


def json_response(status: int, document) -> bytes:
    return response(status, json.dumps(document, separators=(",", ":")).encode())


def error_response(exc: InferenceServerError, close: bool = False) -> bytes:
    return response(exc.status, json.dumps({"error": exc.message}).encode(), close=close)


# ---- inference: JSON and binary tensors ------------------------------------------------


def parse_infer(request: Request):
    """(request JSON document, its input arrays {name: array}) from an infer request's body."""
    body = _decoded_body(request)
    header_length = request.headers.get(b"inference-header-content-length")
    if header_length is None:
        head, binary = body, b""
    else:
        try:
            n = int(header_length)
        except ValueError:
            n = -1
        if not 0 <= n <= len(body):
            given = header_length.decode(errors="replace")
            raise protocol.bad_request(f"Inference-Header-Content-Length {given} is not a length within the "
                                       f"body of {len(body)} bytes")
        head, binary = body[:n], memoryview(body)[n:]
    try:
        document = json.loads(head)
    except (UnicodeDecodeError, ValueError) as exc:
        raise protocol.bad_request(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("inputs"), list):
        raise protocol.bad_request("the request must be a JSON object with an 'inputs' list")
    tensors, at = {}, 0
    for k, entry in enumerate(document["inputs"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise protocol.bad_request(f"inputs[{k}] must be an object with a 'name'")
        name = entry["name"]
        if name in tensors:
            raise protocol.bad_request(f"input '{name}' is given twice")
        shape = protocol.check_shape(name, entry.get("shape"))
        size = _parameters(entry, name).get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0 or at + size > len(binary):
                raise protocol.bad_request(f"input '{name}': binary_data_size {size!r} does not fit the "
                                           f"{len(binary) - at} binary bytes left in the body")
            tensors[name] = protocol.from_bytes(name, entry.get("datatype"), shape, binary[at:at + size])
            at += size
        elif "data" in entry:
            tensors[name] = protocol.from_json_data(name, entry.get("datatype"), shape, entry["data"])
        else:
            raise protocol.bad_request(f"input '{name}' has neither 'data' nor a binary_data_size")
    if at != len(binary):
        raise protocol.bad_request(f"the body holds {len(binary)} bytes of binary tensor data, but the "
                                   f"inputs' binary_data_size add up to {at}")
    return document, tensors


def _parameters(entry, name):
    parameters = entry.get("parameters", {})
    if not isinstance(parameters, dict):
        raise protocol.bad_request(f"'{name}': parameters must be an object, got {parameters!r}")
    return parameters


def _encoded(request) -> bool:
    return request.headers.get(b"content-encoding", b"identity").lower() != b"identity"


def _decoded_body(request):
    """The body, decompressed (at most MAX_BODY bytes of it: never the whole of a bomb)."""
    encoding = request.headers.get(b"content-encoding", b"identity").lower()
    if encoding == b"identity":
        return request.body
    wbits = {b"gzip": 16 + zlib.MAX_WBITS, b"deflate": zlib.MAX_WBITS}.get(encoding)
    if wbits is None:
        raise protocol.bad_request(f"unsupported Content-Encoding {encoding.decode(errors='replace')!r} "
                                   "(identity, gzip or deflate)")
    inflater = zlib.decompressobj(wbits)
    try:
        body = inflater.decompress(request.body, MAX_BODY + 1)
    except zlib.error as exc:
        raise protocol.bad_request(f"the {encoding.decode()} body does not decompress: {exc}") from None
    if len(body) > MAX_BODY:
        raise InferenceServerError(413, f"the {encoding.decode()} body of {len(request.body)} bytes "
                                        f"decompresses to more than {MAX_BODY} bytes")
    if not inflater.eof:
        raise protocol.bad_request(f"the {encoding.decode()} body does not decompress: it is incomplete or "
                                   "truncated")
    return body


def infer_response(model, document, outputs: dict) -> bytes:
    """The reply to an infer request: JSON, with the binary outputs after it."""
    wanted = document.get("outputs")
    binary_default = bool(_parameters(document, "request").get("binary_data_output", False))
    if wanted is None:
        chosen = [(name, binary_default) for name in model.output_names]
    else:
        if not isinstance(wanted, list):
            raise protocol.bad_request("'outputs' must be a list of {name, parameters}")
        chosen = []
        for k, entry in enumerate(wanted):
            if not isinstance(entry, dict) or entry.get("name") not in model.output_names:
                name = entry.get("name") if isinstance(entry, dict) else entry
                raise protocol.bad_request(f"outputs[{k}]: unexpected inference output {name!r} for model "
                                           f"'{model.name}' (its outputs: {', '.join(model.output_names)})")
            chosen.append((entry["name"], bool(_parameters(entry, entry["name"]).get(
                "binary_data", binary_default))))
    tensors, chunks = [], []
    for name, binary in chosen:
        array = outputs[name]
        tensor = {"name": name, "datatype": protocol.datatype_of(array.dtype), "shape": list(array.shape)}
        if binary:
            raw = protocol.to_bytes(array)
            tensor["parameters"] = {"binary_data_size": len(raw)}
            chunks.append(raw)
        else:
            tensor["data"] = protocol.to_json_data(array)
        tensors.append(tensor)
    reply = {"model_name": model.name, "model_version": model.version, "outputs": tensors}
    if "id" in document:
        reply["id"] = document["id"]
    head = json.dumps(reply, separators=(",", ":")).encode()
    if not chunks:
        return response(200, head)
    return response(200, b"".join([head, *chunks]), b"application/octet-stream",
                    b"inference-header-content-length: %d\r\n" % len(head))


# ---- routing ---------------------------------------------------------------------------


class Router:
    """Maps one request to its answer: bytes at once, or a coroutine for inference."""

    def __init__(self, service):
        self.service = service

    def route(self, request: Request):
        path, method = request.path, request.method
        if path == "/v2/health/live":
            return self._get(method) or response(200 if self.service.live() else 400)
        if path == "/v2/health/ready":
            return self._get(method) or response(200 if self.service.ready() else 400)
        if path in ("/v2", "/v2/"):
            return self._get(method) or json_response(200, self.service.metadata())
        if path == "/v2/repository/index":
            return self._only(method, b"POST") or json_response(200, self.service.index())
        control = _CONTROL_ROUTE.match(path)
        if control is not None:
            return self._only(method, b"POST") or self._control(request, *control.groups())
        match = _MODEL_ROUTE.match(path)
        if match is None:
            raise InferenceServerError(404, f"no route {path} (KServe v2 routes start with /v2)")
        name, version, action = match.group(1), match.group(2) or "", match.group(3)
        if action == "/infer":
            if method != b"POST":
                raise InferenceServerError(405, f"{path} takes POST, got {method.decode()}")
            return self._infer(request, self.service.model(name, version))
        refused = self._get(method)
        if refused:
            return refused
        if action is None:
            return json_response(200, self.service.model_metadata(name, version))
        if action == "/ready":
            return response(200 if self.service.model_ready(name, version) else 400)
        if action == "/config":
            return json_response(200, self.service.model_config(name, version))
        return self._statistics(name, version)

    async def _statistics(self, name, version):
        # the engines' figures are read on a worker thread: never a stall of the loop
        return json_response(200, await asyncio.to_thread(self.service.model_statistics, name, version))

    @staticmethod
    def _get(method):
        return Router._only(method, b"GET")

    @staticmethod
    def _only(method, allowed):
        if method != allowed:
            raise InferenceServerError(405, f"this route takes {allowed.decode()}, got {method.decode()}")
        return None

    async def _control(self, request, name, action):
        """``POST /v2/repository/models/{name}/load`` or ``/unload`` (Triton's model repository
        extension); the body, when there is one, may carry Triton's ``parameters`` this server
        reads: ``unload_dependents`` (no model depends on another here)."""
        document = {}
        if request.body:
            try:
                document = json.loads(request.body)
            except (UnicodeDecodeError, ValueError) as exc:
                raise protocol.bad_request(f"the request body is not valid JSON: {exc}") from None
            if not isinstance(document, dict):
                raise protocol.bad_request("the request body must be a JSON object")
        unknown = sorted(set(_parameters(document, name)) - {"unload_dependents"})
        if unknown:
            raise protocol.bad_request(f"{action} of '{name}': parameter '{unknown[0]}' is not supported (a "
                                       f"model is loaded from its folder as it is)")
        await (self.service.load_model(name) if action == "load" else self.service.unload_model(name))
        return response(200)

    async def _infer(self, request, model):
        # a compressed body is inflated on a worker thread: up to MAX_BODY bytes, never on the loop
        document, tensors = (await asyncio.to_thread(parse_infer, request) if _encoded(request)
                             else parse_infer(request))
        return await self.service.infer(model, tensors, _parameters(document, "request"),
                                        encode=lambda outputs: infer_response(model, document, outputs))


def _closing(reply: bytes) -> bytes:
    """A reply with ``connection: close`` after its status line (the client asked to close)."""
    return reply.replace(b"\r\n", b"\r\nconnection: close\r\n", 1)


class _Refused(Exception):
    """Raised in a parser callback to stop parsing the connection's bytes (see HttpProtocol.refusal)."""


class HttpProtocol(asyncio.Protocol):
    """One client connection, with its limits (docs/serve.md, "Limits"): header size and time,
    body size, idle time, and back-pressure (reading pauses while MAX_PIPELINED answers are owed
    or WRITE_HIGH_WATER bytes of answers wait for the client to take them)."""

    def __init__(self, router: Router, connections: set):
        self.router = router
        self.connections = connections
        self.transport = None
        self.parser = httptools.HttpRequestParser(self)
        self.answers = collections.deque()   # per request in arrival order: its future answer
        self.tasks = set()                   # inferences running for this connection
        self.closing = False
        self.closed = asyncio.get_event_loop().create_future()   # done once the transport is gone
        self.refusal = None                  # the answer that stops parsing (set in a parser callback)
        self.reading_paused = self.writing_paused = False
        self.in_message = False              # a request has begun and not ended
        self.header_timer = self.idle_timer = None
        self.last_heard = 0.0
        self._reset()

    def _reset(self):
        self.url = b""
        self.headers = {}
        self.body = []
        self.size = 0
        self.header_bytes = 0

    # -- asyncio.Protocol
    def connection_made(self, transport):
        self.transport = transport
        self.connections.add(self)
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        loop = asyncio.get_running_loop()
        self.last_heard = loop.time()
        self.idle_timer = loop.call_later(IDLE_SECONDS, self._idle_check)

    def connection_lost(self, exc):
        # nobody is left to answer: a request still queued is cancelled and never runs
        # (one already on the device completes and its result is dropped)
        self.connections.discard(self)
        if not self.closed.done():
            self.closed.set_result(None)
        for timer in (self.header_timer, self.idle_timer):
            if timer is not None:
                timer.cancel()
        for task in list(self.tasks):
            task.cancel()
        for answer in self.answers:
            answer.cancel()
        self.answers.clear()

    def pause_writing(self):
        self.writing_paused = True
        self._pause_reading()

    def resume_writing(self):
        self.writing_paused = False
        self._resume_reading()

    def data_received(self, data):
        if self.closing:
            return
        self.last_heard = asyncio.get_running_loop().time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse(InferenceServerError(400, "protocol upgrades are not served"))
        except httptools.HttpParserError as exc:
            self._refuse(self.refusal or InferenceServerError(400, f"malformed HTTP request: {exc}"))

    # -- httptools callbacks
    def on_message_begin(self):
        self.in_message = True
        self.header_timer = asyncio.get_running_loop().call_later(HEADER_SECONDS, self._header_late)

    def on_url(self, url):
        self.url += url
        self._count_header(len(url))

    def on_header(self, name, value):
        self._count_header(len(name) + len(value) + 4)
        self.headers[name.lower()] = value

    def on_headers_complete(self):
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None
        length = self.headers.get(b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > MAX_BODY:
            self._stop(InferenceServerError(413, f"the request body ({int(length)} bytes, says its "
                                                 f"Content-Length) is larger than {MAX_BODY} bytes"))
        if self.headers.get(b"expect", b"").lower() == b"100-continue":
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, chunk):
        self.size += len(chunk)
        if self.size > MAX_BODY:   # a chunked body: refused as soon as it passes the limit
            self._stop(InferenceServerError(413, f"the request body is larger than {MAX_BODY} bytes"))
        self.body.append(chunk)

    def on_message_complete(self):
        self.in_message = False
        keep_alive = self.parser.should_keep_alive()
        path = httptools.parse_url(self.url).path.decode(errors="replace")
        request = Request(self.parser.get_method(), path, self.headers, b"".join(self.body), keep_alive)
        self._reset()
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        self.answers.append(answer)
        try:
            result = self.router.route(request)
        except InferenceServerError as exc:
            result = error_response(exc)
        except Exception as exc:   # a fault in routing answers its request alone
            result = error_response(InferenceServerError(500, f"{type(exc).__name__}: {exc}"))
        if isinstance(result, bytes):
            answer.set_result(result if keep_alive else _closing(result))
        else:
            task = loop.create_task(result)
            self.tasks.add(task)
            task.add_done_callback(lambda t, a=answer, k=keep_alive: self._finished(t, a, k))
        if not keep_alive:
            self.closing = True
        if len(self.answers) >= MAX_PIPELINED:
            self._pause_reading()
        self._flush()

    # -- limits
    def _count_header(self, n):
        self.header_bytes += n
        if self.header_bytes > MAX_HEADER_BYTES:
            self._stop(InferenceServerError(431, f"the request line and headers are larger than "
                                                 f"{MAX_HEADER_BYTES} bytes"))

    def _stop(self, exc):
        """Stop parsing (from a parser callback): ``exc`` is answered after the answers owed."""
        self.refusal = exc
        raise _Refused(exc.message)

    def _header_late(self):
        self.header_timer = None
        if not self.closing:
            self._refuse(InferenceServerError(408, f"the request's headers did not arrive within "
                                                   f"{HEADER_SECONDS:g} s"))

    def _idle_check(self):
        """Close a connection silent for IDLE_SECONDS with nothing owed to it (408 when a
        request was left half sent); one timer, pushed back by what was heard meanwhile."""
        loop = asyncio.get_running_loop()
        self.idle_timer = None
        if self.closing or self.transport is None:
            return
        due = self.last_heard + IDLE_SECONDS
        if loop.time() < due or self.answers or self.tasks:
            self.idle_timer = loop.call_at(max(due, loop.time() + 1.0), self._idle_check)
        elif self.in_message:
            self._refuse(InferenceServerError(408, f"the request stopped arriving: nothing came for "
                                                   f"{IDLE_SECONDS:g} s"))
        else:
            self.closing = True
            self.transport.close()

    def _pause_reading(self):
        if not self.reading_paused and self.transport is not None and not self.transport.is_closing():
            self.reading_paused = True
            self.transport.pause_reading()

    def _resume_reading(self):
        if (self.reading_paused and not self.writing_paused and len(self.answers) < MAX_PIPELINED
                and not self.closing and self.transport is not None and not self.transport.is_closing()):
            self.reading_paused = False
            self.transport.resume_reading()

    # -- answers, in order
    def _finished(self, task, answer, keep_alive):
        self.tasks.discard(task)
        if answer.done():          # the connection went away meanwhile
            return
        if task.cancelled():
            reply = error_response(InferenceServerError(503, "the request was cancelled"))
        elif isinstance(task.exception(), InferenceServerError):
            reply = error_response(task.exception())
        elif task.exception() is not None:
            exc = task.exception()
            reply = error_response(InferenceServerError(500, f"{type(exc).__name__}: {exc}"))
        else:
            reply = task.result()
        answer.set_result(reply if keep_alive else _closing(reply))
        self._flush()

    def _flush(self):
        while self.answers and self.answers[0].done():
            answer = self.answers.popleft()
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(answer.result())
        if self.closing and not self.answers and self.transport is not None:
            self.transport.close()
        else:
            self._resume_reading()

    def _refuse(self, exc):
        """The bytes on the connection no longer parse (or broke a limit): the answers owed for
        the requests before them go out first, in order, then this refusal, then the close."""
        self.closing = True
        answer = asyncio.get_running_loop().create_future()
        answer.set_result(error_response(exc, True))
        self.answers.append(answer)
        self._flush()

    def close_when_idle(self):
        """Shutting down: close once every answer owed on this connection is written
        (``closed`` is done when the transport has sent its buffer and gone)."""
        self.closing = True
        self._flush()

    def abort(self):
        """Shutting down and out of time: drop the connection and what it has not sent."""
        if self.transport is not None:
            self.transport.abort()


async def start(router: Router, host: str, port: int):
    """Listen on ``host:port``; returns (the asyncio server, its set of open connections)."""
    connections = set()
    try:
        server = await asyncio.get_running_loop().create_server(
            lambda: HttpProtocol(router, connections), host, port, reuse_address=True)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise InferenceServerError(500, f"cannot listen on {host}:{port}: {reason}") from None
    return server, connections
