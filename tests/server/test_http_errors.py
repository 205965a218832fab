"""Every error the HTTP front end answers: its status and its ``{"error": ...}`` body, on the wire."""

import gzip
import http.client
import json
import socket

import numpy as np
import pytest


def request(server, method, path, body=b"", headers=None):
    host, port = server.http.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read()
    finally:
        conn.close()


def error_of(server, method, path, body=b"", headers=None):
    status, head, data = request(server, method, path, body, headers)
    assert head["content-type"] == "application/json"
    document = json.loads(data)
    assert list(document) == ["error"]
    return status, document["error"]


def infer_body(datatype="FP32", shape=(2, 64), data=None, **extra):
    data = [0.5] * int(np.prod(shape)) if data is None else data
    return json.dumps({"inputs": [{"name": "x", "datatype": datatype, "shape": list(shape), "data": data}],
                       **extra}).encode()


def binary_body(raw, declared):
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 64],
                                   "parameters": {"binary_data_size": declared}}]}).encode()
    return head + raw, {"Inference-Header-Content-Length": str(len(head))}


@pytest.mark.parametrize("path,status,message", [
    ("/v2/models/nothing/infer", 404,
     "Request for unknown model: 'nothing' is not found (models: batched, demo)"),
    ("/v2/models/demo/versions/9/infer", 404,
     "Request for unknown model: 'demo' version 9 is not found (versions: 1, 2)"),
])
def test_unknown_model_or_version_is_404(server, path, status, message):
    assert error_of(server, "POST", path, infer_body()) == (status, message)


@pytest.mark.parametrize("body,message", [
    (infer_body("FP64"), "input 'x': datatype FP64, but model 'demo' expects FP32"),
    (infer_body("FLOAT"), "input 'x': unknown datatype 'FLOAT'"),
    (infer_body(shape=(2, 65)), "input 'x': unexpected shape [2, 65], model 'demo' expects [-1, 64]"),
    (infer_body(shape=(2, 8, 8)), "input 'x': unexpected shape [2, 8, 8]"),
    (infer_body(shape=(9, 64)), "input 'x': batch size 9, model 'demo' takes 1 to 8 (its max_batch_size)"),
    (infer_body(shape=(0, 64)), "input 'x': batch size 0, model 'demo' takes 1 to 8"),
    (infer_body(data=[0.5] * 127), "input 'x': shape [2, 64] holds 128 elements, but data has 127"),
    (infer_body(data=["a"] * 128), "input 'x': data is not a list of FP32 values"),
    (infer_body(shape=(2, -64)), "input 'x': shape must be a list of integers >= 0, got [2, -64]"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64], "data": [1, 2',
     "the request body is not valid JSON"),
    (b"[1, 2]", "the request must be a JSON object with an 'inputs' list"),
    (b'{"inputs": []}', "expected 1 inputs but got 0 inputs for model 'demo': input 'x' is missing"),
    (json.dumps({"inputs": [{"name": "y", "datatype": "FP32", "shape": [1], "data": [1]}]}).encode(),
     "unexpected inference input 'y' for model 'demo' (its inputs: x)"),
    (infer_body(outputs=[{"name": "logits"}]),
     "outputs[0]: unexpected inference output 'logits' for model 'demo' (its outputs: probs)"),
    (json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64]}]}).encode(),
     "input 'x' has neither 'data' nor a binary_data_size"),
])
def test_bad_request_is_400_naming_what_is_wrong(server, body, message):
    status, text = error_of(server, "POST", "/v2/models/demo/infer", body)
    assert status == 400
    assert message in text, text


@pytest.mark.parametrize("extra,declared,message", [
    (-4, 512, "binary_data_size 512 does not fit the 508 binary bytes left in the body"),
    (4, 512, "the body holds 516 bytes of binary tensor data, but the inputs' binary_data_size add up "
             "to 512"),
    (-4, 508, "input 'x': shape [2, 64] of FP32 takes 512 bytes, got 508"),
])
def test_wrong_binary_size_is_400(server, extra, declared, message):
    raw = np.zeros(128 + extra // 4, np.float32).tobytes()
    body, headers = binary_body(raw, declared)
    status, text = error_of(server, "POST", "/v2/models/demo/infer", body, headers)
    assert (status, message in text) == (400, True), text


def test_header_length_beyond_the_body_is_400(server):
    status, text = error_of(server, "POST", "/v2/models/demo/infer", b"{}",
                            {"Inference-Header-Content-Length": "99"})
    assert status == 400 and "Inference-Header-Content-Length 99 is not a length within the body of 2" in text


def test_gzip_body_is_decoded_and_a_broken_one_is_400(server):
    status, _, data = request(server, "POST", "/v2/models/demo/infer", gzip.compress(infer_body()),
                              {"Content-Encoding": "gzip"})
    assert status == 200 and json.loads(data)["outputs"][0]["shape"] == [2, 10]
    status, text = error_of(server, "POST", "/v2/models/demo/infer", b"not gzip",
                            {"Content-Encoding": "gzip"})
    assert status == 400 and "the gzip body does not decompress" in text
    status, text = error_of(server, "POST", "/v2/models/demo/infer", b"x", {"Content-Encoding": "br"})
    assert status == 400 and "unsupported Content-Encoding 'br'" in text


@pytest.mark.parametrize("method,path,status,message", [
    ("GET", "/v2/models/demo/infer", 405, "/v2/models/demo/infer takes POST, got GET"),
    ("POST", "/v2/health/ready", 405, "this route takes GET, got POST"),
    ("GET", "/v2/repository/index", 405, "this route takes POST, got GET"),
    ("GET", "/v1/models/demo", 404, "no route /v1/models/demo"),
    ("GET", "/v2/models/demo/bogus", 404, "no route /v2/models/demo/bogus"),
    ("GET", "/v2/models/nothing/config", 404, "Request for unknown model: 'nothing' is not found"),
])
def test_routes_and_methods(server, method, path, status, message):
    got_status, text = error_of(server, method, path)
    assert got_status == status and message in text, text


def test_malformed_http_is_400_and_the_connection_closes(server):
    host, port = server.http.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in head
    assert "malformed HTTP request" in json.loads(body)["error"]


def test_pipelined_requests_are_answered_in_order(server):
    """Several requests written at once on one connection: the answers come back in the order
    asked, an error among them included, and the connection stays usable."""
    host, port = server.http.split(":")
    bodies = [infer_body(shape=(k, 64), data=[k / 8] * (64 * k)) if k else b"{" for k in (3, 0, 1, 8, 2)]
    wire = b"".join(b"POST /v2/models/batched/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                    % len(b) + b for b in bodies)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(wire)
        reader = s.makefile("rb")
        shapes = []
        for _ in bodies:
            status_line = reader.readline()
            length = 0
            while (line := reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            document = json.loads(reader.read(length))
            shapes.append((status_line.split()[1], document.get("outputs", [{}])[0].get("shape")))
    assert shapes == [(b"200", [3, 10]), (b"400", None), (b"200", [1, 10]), (b"200", [8, 10]),
                      (b"200", [2, 10])]


def read_reply(reader):
    status = int(reader.readline().split()[1])
    headers = {}
    while (line := reader.readline()) != b"\r\n":
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, reader.read(int(headers.get("content-length", 0)))


def test_expect_100_continue_and_connection_close(server):
    host, port = server.http.split(":")
    body = infer_body(shape=(1, 64))
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body))
        reader = s.makefile("rb")
        assert reader.readline() == b"HTTP/1.1 100 Continue\r\n" and reader.readline() == b"\r\n"
        s.sendall(body)
        status, headers, data = read_reply(reader)
        assert status == 200 and headers["connection"] == "close"
        assert json.loads(data)["outputs"][0]["shape"] == [1, 10]
        assert reader.read() == b""          # the server closed the connection after its answer


@pytest.mark.parametrize("bad", [b"NOT HTTP AT ALL\r\n\r\n", b"GET /v2 HTTP/1.1\r\nBad Header\r\n\r\n"])
def test_a_malformed_request_after_pipelined_ones_is_answered_after_them(server, reference, bad):
    """Valid requests, then a malformed one, written at once: the answers owed for the valid
    ones (already running) come first, in order, then the 400, then the close."""
    host, port = server.http.split(":")
    xs = [np.full((k, 64), k / 8, np.float32) for k in (3, 1, 2)]
    wire = b"".join(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                    % len(b) + b for b in (infer_body(shape=x.shape, data=x.ravel().tolist()) for x in xs))
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(wire + bad)
        reader = s.makefile("rb")
        for x in xs:
            status, _, data = read_reply(reader)
            assert status == 200, data
            probs = json.loads(data)["outputs"][0]
            np.testing.assert_allclose(np.array(probs["data"], np.float32).reshape(probs["shape"]),
                                       reference(x), rtol=1e-6, atol=1e-7)
        status, headers, data = read_reply(reader)
        assert status == 400 and headers["connection"] == "close"
        assert "malformed HTTP request" in json.loads(data)["error"]
        assert reader.read() == b""


@pytest.mark.parametrize("path,message", [
    ("/v2/models/nothing/stats", "Request for unknown model: 'nothing' is not found (models: batched, demo)"),
    ("/v2/models/nothing/versions/1/stats", "Request for unknown model: 'nothing' is not found"),
    ("/v2/models/demo/versions/7/stats", "'demo' version 7 is not found (versions: 1, 2)"),
])
def test_statistics_of_an_unknown_model_is_404_and_the_connection_serves_on(server, path, message):
    host, port = server.http.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        assert reply.status == 404 and reply.getheader("connection") is None
        text = json.loads(reply.read())["error"]
        assert message in text, text
        conn.request("GET", "/v2/models/demo/versions/1/stats")   # the same connection, still open
        assert conn.getresponse().status == 200
    finally:
        conn.close()


@pytest.mark.parametrize("timeout", [2_147_483_000_001, 10**18, 2**64 + 5, 999, 0])
def test_a_timeout_parameter_outside_the_engines_range_is_400(server, timeout):
    status, text = error_of(server, "POST", "/v2/models/demo/infer",
                            infer_body(parameters={"timeout": timeout}))
    assert status == 400, text
    assert (f"parameter 'timeout' must be microseconds, from 1000 to 2147483000000 (the engine's longest "
            f"timeout), got {timeout}") in text
    good = infer_body(parameters={"timeout": 2_147_483_000_000})
    assert request(server, "POST", "/v2/models/demo/infer", good)[0] == 200
