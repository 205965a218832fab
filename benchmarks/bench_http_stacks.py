"""Which HTTP stack the KServe v2 front end uses: the per-request cost of three candidates.

Run:  python -m pytest benchmarks/bench_http_stacks.py -o python_files='bench_*.py' --benchmark-only -q -s

Each candidate answers ``POST /v2/models/m/infer`` with the same work a KServe
JSON request costs once the engine is taken away (parse the JSON body, build
a JSON reply) and runs in a process of its own:

* ``aiohttp``: an ``aiohttp.web`` application;
* ``uvicorn``: uvicorn (httptools parser, uvloop) running a bare ASGI callable;
* ``protocol``: an ``asyncio.Protocol`` on uvloop with the httptools parser,
  the shape ascend_engine/server/http.py has.

This process drives each one with one keep-alive connection, one request at a
time, and reads the server's CPU time (user + system, every thread) from
/proc before and after.  Figures: server CPU per request (µs) and round trip
(µs), and each candidate's CPU over the hand-written protocol's, measured in
one run.  Nothing is asserted.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _report import report  # noqa: E402

REQUESTS = 4000
WARMUP = 300
BODY = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16],
                               "data": [0.5] * 16}]}).encode()

HANDLER = textwrap.dedent("""
    import json, sys
    def answer(body):
        request = json.loads(body)
        data = request["inputs"][0]["data"]
        return json.dumps({"model_name": "m", "outputs": [
            {"name": "y", "datatype": "FP32", "shape": [1, len(data)], "data": data}]}).encode()
    port = int(sys.argv[1])
""")

CANDIDATES = {
    "aiohttp": HANDLER + textwrap.dedent("""
        from aiohttp import web
        async def infer(request):
            return web.Response(body=answer(await request.read()), content_type="application/json")
        app = web.Application()
        app.router.add_post("/v2/models/{model}/infer", infer)
        web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)
    """),
    "uvicorn": HANDLER + textwrap.dedent("""
        import uvicorn
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            reply = answer(body)
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]})
            await send({"type": "http.response.body", "body": reply})
        uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools",
                    log_level="error", access_log=False, lifespan="off")
    """),
    "protocol": HANDLER + textwrap.dedent("""
        import asyncio, httptools, uvloop
        class Protocol(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport
                self.parser = httptools.HttpRequestParser(self)
                self.body = []
            def data_received(self, data):
                self.parser.feed_data(data)
            def on_body(self, chunk):
                self.body.append(chunk)
            def on_message_complete(self):
                reply = answer(b"".join(self.body))
                self.body = []
                self.transport.write(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
                                     b"content-length: %d\\r\\n\\r\\n" % len(reply) + reply)
        async def main():
            server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", port)
            await server.serve_forever()
        uvloop.run(main())
    """),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU of a process, every thread (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def one_request(sock, request):
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 200"), head


def measure(name):
    port = free_port()
    child = subprocess.Popen([sys.executable, "-c", CANDIDATES[name], str(port)])
    try:
        sock = connect(port)
        request = (b"POST /v2/models/m/infer HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                   b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY) + BODY)
        for _ in range(WARMUP):
            one_request(sock, request)
        cpu0, t0 = cpu_seconds(child.pid), time.perf_counter()
        for _ in range(REQUESTS):
            one_request(sock, request)
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds(child.pid) - cpu0
        sock.close()
        return cpu / REQUESTS * 1e6, elapsed / REQUESTS * 1e6
    finally:
        child.terminate()
        child.wait(10)


def test_http_stacks(benchmark):
    figures = {}

    def run():
        for name in CANDIDATES:
            cpu_us, rtt_us = measure(name)
            figures[f"{name} server CPU us/request"] = cpu_us
            figures[f"{name} round trip us"] = rtt_us

    benchmark.pedantic(run, rounds=1, iterations=1)
    base = figures["protocol server CPU us/request"]
    for name in ("aiohttp", "uvicorn"):
        figures[f"{name} / protocol server CPU"] = figures[f"{name} server CPU us/request"] / base
    report(benchmark, "HTTP stacks: one keep-alive client, one request at a time", figures)
