"""What one client may take of the server (docs/serve.md, "Limits"): body and header sizes,
header and idle time, unsent answers (back-pressure), and the event loop's time for /metrics."""

import asyncio
import json
import re
import socket
import threading
import zlib

import pytest

from ascend_engine.server import http_server, lifecycle
from ascend_engine.server.http_server import MAX_BODY, Router


def exchange(server, wire, timeout=30):
    """Write ``wire`` on a new connection and read until the server closes it."""
    host, port = server.http.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(wire)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def status_and_error(data):
    """(status, lower-cased head, error message) of the first answer in ``data``."""
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return int(head.split()[1]), head.lower(), json.loads(rest[:length])["error"]


def gzip_of_zeros(n):
    """A gzip body of ``n`` zero bytes, made a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(n >> 20)]
    parts.append(packer.compress(bytes(n & ((1 << 20) - 1))))
    return b"".join(parts) + packer.flush()


def test_a_gzip_body_that_inflates_past_the_limit_is_413(server):
    body = gzip_of_zeros(MAX_BODY + 1)
    assert len(body) < 1 << 20                  # a small body, a large bomb
    wire = (b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = exchange(server, wire + b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    status, head, error = status_and_error(data)
    assert status == 413 and b"connection: close" not in head
    assert data.count(b"HTTP/1.1 200 ") == 1              # the connection served on
    assert error == (f"the gzip body of {len(body)} bytes decompresses to more than {MAX_BODY} bytes")


def test_a_truncated_gzip_body_is_400(server):
    body = gzip_of_zeros(1000)[:-12]
    wire = (b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    status, _, error = status_and_error(exchange(server, wire))
    assert status == 400 and error == "the gzip body does not decompress: it is incomplete or truncated"


def test_headers_larger_than_the_limit_are_431_and_the_connection_closes(server):
    wire = (b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (http_server.MAX_HEADER_BYTES + 1)
            + b"\r\n\r\n")
    status, head, error = status_and_error(exchange(server, wire))
    assert status == 431 and b"connection: close" in head
    assert error == f"the request line and headers are larger than {http_server.MAX_HEADER_BYTES} bytes"


def test_a_content_length_above_the_limit_is_413_before_the_body(server):
    """The headers alone are answered: the server does not wait for (or read) the body."""
    wire = (b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1))
    status, head, error = status_and_error(exchange(server, wire))
    assert status == 413 and b"connection: close" in head
    assert error == (f"the request body ({MAX_BODY + 1} bytes, says its Content-Length) is larger than "
                     f"{MAX_BODY} bytes")


# ---- in this process: the HTTP front end with limits made small -------------------------------------


class Health:
    """The service calls the health routes make (the limits are the transport's, whatever answers)."""

    def live(self):
        return True

    def ready(self):
        return True


def serve_in_process(main, router=None):
    """``asyncio.run(main(host, port, connections))`` with the HTTP front end listening on loopback."""

    async def run():
        server, connections = await http_server.start(router or Router(Health()), "127.0.0.1", 0)
        try:
            port = server.sockets[0].getsockname()[1]
            return await asyncio.wait_for(main("127.0.0.1", port, connections), 60)
        finally:
            server.close()
            for conn in list(connections):
                conn.abort()

    return asyncio.run(run())


async def read_all(reader):
    data = b""
    while chunk := await reader.read(65536):
        data += chunk
    return data


def test_headers_that_do_not_arrive_in_time_are_408(monkeypatch):
    monkeypatch.setattr(http_server, "HEADER_SECONDS", 0.2)

    async def main(host, port, _):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n")      # no blank line: never ends
        data = await read_all(reader)
        writer.close()
        return data

    status, head, error = status_and_error(serve_in_process(main))
    assert status == 408 and b"connection: close" in head
    assert error == "the request's headers did not arrive within 0.2 s"


HALF_SENT = b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"


@pytest.mark.parametrize("sent", [b"", HALF_SENT])
def test_a_silent_connection_is_closed(monkeypatch, sent):
    """Nothing at all (closed without a word), or a body that stopped arriving (408)."""
    monkeypatch.setattr(http_server, "IDLE_SECONDS", 0.2)

    async def main(host, port, _):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n" + sent)
        data = await read_all(reader)
        writer.close()
        return data

    data = serve_in_process(main)
    first, _, rest = data.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 200 ")
    if not sent:
        assert rest == b""
    else:
        status, _, error = status_and_error(rest)
        assert status == 408 and error == "the request stopped arriving: nothing came for 0.2 s"


def test_a_client_that_does_not_read_stops_being_read(monkeypatch):
    """A client pipelining requests without reading the answers: once the unsent answers pass the
    high-water mark the server stops reading, so what it buffers stays bounded."""
    monkeypatch.setattr(http_server, "WRITE_HIGH_WATER", 64 << 10)
    request = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    total = 200_000                              # 8 MB of requests, 7 MB of answers

    async def main(host, port, connections):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, port))
        s.setblocking(False)
        sent = 0
        wire = memoryview(request * total)
        while sent < len(wire) and not any(c.reading_paused for c in connections):
            try:
                sent += s.send(wire[sent:sent + 65536])
            except BlockingIOError:
                pass
            await asyncio.sleep(0)
        [conn] = connections
        paused = conn.reading_paused
        buffered = conn.transport.get_write_buffer_size()
        s.close()
        return paused, buffered, sent

    paused, buffered, sent = serve_in_process(main)
    assert paused, f"the server read all {sent} bytes of requests without pausing"
    # at most the high-water mark plus the answers to one read's worth of requests
    assert buffered <= (64 << 10) + 256 * 1024, buffered


def test_metrics_are_rendered_off_the_event_loop(monkeypatch):
    """While /metrics is being rendered, the loop answers other requests."""
    rendering, release = threading.Event(), threading.Event()

    def slow_render(service):
        rendering.set()
        # released by the test once the loop answered another request meanwhile; a render on the
        # loop itself stalls it, and is never released
        return b"figures\n" if release.wait(10) else b"the loop stalled\n"

    monkeypatch.setattr(lifecycle.metrics, "render", slow_render)

    async def main(host, port, _):
        metrics_port = (await http_server.start(lifecycle.MetricsRouter(Health()), host, 0))[0]
        mport = metrics_port.sockets[0].getsockname()[1]
        r1, w1 = await asyncio.open_connection(host, mport)
        w1.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await asyncio.to_thread(rendering.wait, 30)
        r2, w2 = await asyncio.open_connection(host, port)
        w2.write(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        health = await read_all(r2)                 # answered while the render still runs
        still_rendering = not release.is_set()
        release.set()
        scraped = await read_all(r1)
        w1.close()
        w2.close()
        metrics_port.close()
        return health, still_rendering, scraped

    health, still_rendering, scraped = serve_in_process(main)
    assert health.startswith(b"HTTP/1.1 200 ") and still_rendering
    assert scraped.startswith(b"HTTP/1.1 200 ") and scraped.endswith(b"\r\n\r\nfigures\n")


def test_a_fault_in_routing_answers_its_request_alone():
    """A route that raises something other than an InferenceServerError: that request is
    answered 500, the pipelined ones around it 200, and the connection serves on."""

    class Faulty(Router):
        def route(self, request):
            if request.path == "/boom":
                raise KeyError("boom")
            return super().route(request)

    async def main(host, port, _):
        reader, writer = await asyncio.open_connection(host, port)
        live = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
        boom = b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n"
        writer.write(live + boom + live[:-2] + b"Connection: close\r\n\r\n")
        data = await read_all(reader)
        writer.close()
        return data

    data = serve_in_process(main, Faulty(Health()))
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", data) == [b"200", b"500", b"200"]
    assert b'{"error": "KeyError: \'boom\'"}' in data
