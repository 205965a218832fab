"""The life of one ``ascend-engine serve`` process: start, serve, shut down (docs/serve.md).

Start: every model of the repository is compiled, then the HTTP, gRPC and
metrics ports open and one line per port is printed (``HTTP 127.0.0.1:8000``),
so a script that asked for port 0 learns the port the system gave.

Shutdown, on SIGTERM or SIGINT: the listening sockets close and new
inferences get 503 at once (gRPC: UNAVAILABLE); every inference already
admitted runs to its answer (for at most ``drain_seconds``); then the
connections close once their answers are written (a slow reader gets them, for
at most ``drain_seconds`` more), the engines close and the process exits with
status 0.
A second signal while draining stops waiting.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from ascend_engine.errors import InferenceServerError
from ascend_engine.server import http_server, metrics
from ascend_engine.server.http_server import Router, response
from ascend_engine.server.repository import Repository
from ascend_engine.server.service import Service


class MetricsRouter:
    """The metrics port: ``GET /metrics`` only."""

    def __init__(self, service):
        self.service = service

    def route(self, request):
        if request.path != "/metrics":
            raise InferenceServerError(404, f"no route {request.path} (the metrics are at /metrics)")
        if request.method != b"GET":
            raise InferenceServerError(405, f"/metrics takes GET, got {request.method.decode()}")
        return self._render()

    async def _render(self):
        # rendered on a worker thread: reading every engine's figures never stalls the loop
        text = await asyncio.to_thread(metrics.render, self.service)
        return response(200, text, b"text/plain; version=0.0.4; charset=utf-8")


def new_loop():
    """uvloop's event loop when it is installed (the faster one), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def serve(service: Service, host: str, http_port: int, grpc_port: int | None, metrics_port: int | None,
                drain_seconds: float, out=sys.stdout):
    """Serve until SIGTERM or SIGINT, then shut down in order (the module docstring)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
        signals.append(sig)
    listeners, connections = [], []
    grpc = None
    try:
        server, conns = await http_server.start(Router(service), host, http_port)
        listeners.append(server)
        connections.append(conns)
        print(f"HTTP {host}:{server.sockets[0].getsockname()[1]}", file=out, flush=True)
        if grpc_port is not None:
            from ascend_engine.server import grpc_server

            grpc, bound = await grpc_server.start(service, host, grpc_port)
            print(f"GRPC {host}:{bound}", file=out, flush=True)
        if metrics_port is not None:
            server, conns = await http_server.start(MetricsRouter(service), host, metrics_port)
            listeners.append(server)
            connections.append(conns)
            print(f"METRICS {host}:{server.sockets[0].getsockname()[1]}", file=out, flush=True)
        await stop.wait()
        # stop admitting: no new connections, and new inferences on open ones get 503
        service.stop_admitting()
        for server in listeners:
            server.close()
        stop.clear()
        drained = asyncio.ensure_future(service.drain(drain_seconds))
        interrupted = asyncio.ensure_future(stop.wait())
        await asyncio.wait([drained, interrupted], return_when=asyncio.FIRST_COMPLETED)
        interrupted.cancel()
        left = service.active
        answered = sum(c.success + c.failure for c in service.counters.values())
        if grpc is not None:
            await grpc.stop(grace=1.0)
        cut = await close_connections([c for conns in connections for c in list(conns)], stop, drain_seconds)
        outcome = f"{left} request(s) not answered" if left else "every admitted request answered"
        if cut:
            outcome += f", {cut} connection(s) closed with answers unsent"
        print(f"shutdown: {outcome} ({answered} answered in all)", file=out, flush=True)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


async def close_connections(conns, stop: asyncio.Event, seconds: float) -> int:
    """Close every HTTP connection once its answers are written, waiting (at most
    ``seconds``, or until ``stop`` is set again) for the transports to hand their
    write buffers to the system: a slow reader still gets the answers it was owed
    before the loop closes.  Returns how many connections were cut short."""
    for conn in conns:
        conn.close_when_idle()
    waiting = [conn for conn in conns if not conn.closed.done()]
    if waiting and not stop.is_set():
        flushed = asyncio.gather(*(conn.closed for conn in waiting))
        interrupted = asyncio.ensure_future(stop.wait())
        await asyncio.wait([flushed, interrupted], timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        interrupted.cancel()
    cut = [conn for conn in waiting if not conn.closed.done()]
    for conn in cut:
        conn.abort()
    await asyncio.sleep(0)
    return len(cut)


def run(root: str, host: str = "127.0.0.1", http_port: int = 8000, grpc_port: int | None = 8001,
        metrics_port: int | None = 8002, device=None, allow_code=False, drain_seconds: float = 30.0,
        mode: str = "none", startup=("*",), devices=()) -> int:
    """Load the repository at ``root`` and serve it until a signal; returns the exit status.
    ``mode``: Triton's model control mode, "none" or "explicit" (``startup``: the models loaded
    at the start then); ``devices``: every model served on each of them."""
    repository = Repository.load(root, device=device, allow_code=allow_code, mode=mode, startup=startup,
                                 devices=devices)
    for line in repository.problems():
        print(line, file=sys.stderr, flush=True)
    loop = new_loop()
    try:
        loop.run_until_complete(serve(Service(repository), host, http_port, grpc_port, metrics_port,
                                      drain_seconds))
    finally:
        repository.close()
        loop.close()
    return 0
