"""What the server answers, whatever the transport: health, metadata, configuration, inference.

The HTTP and gRPC front ends (http.py, grpc_service.py) decode a request,
call one method here and encode what it returns; an error is an
:class:`InferenceServerError` they turn into their own status.  Inference
goes through ``Engine.run_async``, so every connection shares each model's
pipelined engine and, when its spec turns it on, its dynamic batcher.

Shutting down (docs/serve.md, "Shutdown"): :meth:`Service.stop_admitting`
makes every new inference fail with 503 at once; :meth:`Service.drain` waits
until the ones admitted before have their answers.
"""

from __future__ import annotations

import asyncio
import collections
import time

from ascend_engine import __version__ as VERSION
from ascend_engine.errors import EngineBusy, EngineError, InferenceServerError
from ascend_engine.server.metrics import ModelCounters

SERVER_NAME = "ascend-engine"
EXTENSIONS = ("binary_tensor_data", "model_configuration", "statistics")


class Service:
    """The protocol's operations over one :class:`~ascend_engine.server.repository.Repository`."""

    def __init__(self, repository):
        self.repository = repository
        self.admitting = True
        self.active = 0                    # inferences admitted and not yet answered
        self._idle = None                  # set when active falls to 0 while draining
        # per model version; a version loaded later (explicit model control) gets its counters then
        self.counters = collections.defaultdict(ModelCounters)
        for m in repository.all():
            self.counters[(m.name, m.version)]
        self._control = asyncio.Lock()     # one load or unload at a time

    # ---- health and metadata ----------------------------------------------------

    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        return self.admitting

    def model_ready(self, name: str, version: str = "") -> bool:
        try:
            model = self.repository.get(name, version)
        except InferenceServerError:
            return False
        return self.admitting and not model.closed

    def metadata(self) -> dict:
        return {"name": SERVER_NAME, "version": VERSION, "extensions": list(EXTENSIONS)}

    def model_metadata(self, name: str, version: str = "") -> dict:
        model = self.repository.get(name, version)
        return model.metadata(self.repository.versions(name))

    def model_config(self, name: str, version: str = "") -> dict:
        return self.repository.get(name, version).config()

    def index(self) -> list:
        """Triton's repository index: every model version with its state, and why a failed one failed."""
        ready = [{"name": m.name, "version": m.version,
                  "state": "READY" if self.model_ready(m.name, m.version) else "UNAVAILABLE"}
                 for m in self.repository.all()]
        failed = [{"name": name, "version": version, "state": "UNAVAILABLE", "reason": reason}
                  for name, versions in self.repository.failed.items()
                  for version, reason in versions.items()]
        unloaded = [{"name": name, "version": "", "state": "UNAVAILABLE", "reason": reason}
                    for name, reason in self.repository.unloaded.items()]
        return sorted(ready + failed + unloaded, key=lambda m: (m["name"], m["version"]))

    def model_statistics(self, name: str, version: str = "") -> dict:
        """Triton's ``/v2/models/{m}/stats``: counts and summed times (ns) per model version."""
        models = ([self.repository.get(name, version)] if version
                  else [self.repository.get(name, v) for v in self.repository.versions(name)])
        return {"model_stats": [self._statistics(m) for m in models]}

    def _statistics(self, model) -> dict:
        """One version's figures, as Triton's statistics extension words them (docs/serve.md,
        "Statistics"): ``compute_input`` is the server turning a request's tensors into the engine's
        feeds, ``queue`` the engine's admission queue, ``compute_infer`` the device requests from
        dispatch to results (H2D, every model, D2H), ``compute_output`` encoding the answer."""
        counters = self.counters[(model.name, model.version)]
        serving = model.serving_stats()

        def duration(count, total_ms):
            return {"count": count, "ns": int(total_ms * 1e6)}

        queue, compute = serving.get("queue_ms", {}), serving.get("service_ms", {})
        batches = serving.get("batch_rows", {})
        return {"name": model.name, "version": model.version, "inference_count": counters.rows,
                "execution_count": sum(batches.values()),
                "inference_stats": {
                    "success": duration(counters.success, (counters.duration_s - counters.failure_s) * 1e3),
                    "fail": duration(counters.failure, counters.failure_s * 1e3),
                    "queue": duration(queue.get("added", 0), queue.get("total", 0.0)),
                    "compute_input": duration(counters.input_count, counters.input_s * 1e3),
                    "compute_infer": duration(compute.get("added", 0), compute.get("total", 0.0)),
                    "compute_output": duration(counters.output_count, counters.output_s * 1e3)},
                "batch_stats": [{"batch_size": int(rows), "compute_infer": duration(count, 0.0)}
                                for rows, count in batches.items()]}

    # ---- inference ------------------------------------------------------------------

    def model(self, name: str, version: str = ""):
        """The model an inference names, refused with 503 once the server stops admitting."""
        model = self.repository.get(name, version)
        if not self.admitting:
            raise InferenceServerError(503, "the server is shutting down: it admits no new requests")
        return model

    async def infer(self, model, tensors: dict, parameters=None, encode=None):
        """Run one request ({input name: array}, checked here) on ``model``; returns {output name: array},
        or what ``encode(outputs)`` makes of them (the front end's answer, timed as compute_output).

        ``parameters``: the request's KServe parameters; ``priority`` (1 is the
        highest, 0 the model's default) and ``timeout`` (microseconds in the
        queue, Triton's) are used.  A full queue is not waited on: the request
        is turned away with 503, as Triton does past ``max_queue_size``."""
        counters = self.counters[(model.name, model.version)]
        started = time.perf_counter()
        self.active += 1
        model.in_flight += 1
        which = model.pick()
        engine = model.engines[which]
        model.engine_in_flight[which] += 1
        try:
            feeds = model.feeds(tensors)
            priority, timeout = model.queue_parameters(parameters or {})
            prepared = time.perf_counter()
            counters.prepared(prepared - started)
            outputs = model.results(await engine.run_async(feeds, timeout=timeout, priority=priority,
                                                           wait_for_room=False))
            if encode is not None:
                answered = time.perf_counter()
                outputs = encode(outputs)
                counters.encoded(time.perf_counter() - answered)
        except InferenceServerError:
            counters.failed(time.perf_counter() - started)
            raise
        except EngineBusy as exc:
            counters.failed(time.perf_counter() - started)
            raise InferenceServerError(503, f"model '{model.name}': exceeds maximum queue size "
                                            f"({engine.plan.max_queue} requests waiting)") from exc
        except TimeoutError as exc:
            counters.failed(time.perf_counter() - started)
            raise InferenceServerError(503, f"model '{model.name}': request timeout expired in the queue: "
                                            f"{exc}") from exc
        except EngineError as exc:
            counters.failed(time.perf_counter() - started)
            status = 503 if engine.closed else 500
            raise InferenceServerError(status, f"model '{model.name}' failed the request: {exc}") from exc
        except Exception as exc:
            counters.failed(time.perf_counter() - started)
            raise InferenceServerError(500, f"model '{model.name}' failed the request: "
                                            f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.active -= 1
            model.in_flight -= 1
            model.engine_in_flight[which] -= 1
            if self._idle is not None and self.active == 0:
                self._idle.set()
        rows = next(iter(tensors.values())).shape[0] if tensors else 0
        counters.succeeded(time.perf_counter() - started, rows)
        return outputs

    # ---- explicit model control ------------------------------------------------------

    async def load_model(self, name: str):
        """Load (or reload) ``name`` from the repository folder: compiled off the event loop, then
        served; the versions it replaces are closed once their admitted requests are answered."""
        self._check_control("load")
        async with self._control:
            loop = asyncio.get_running_loop()
            built = await loop.run_in_executor(None, self.repository.build, name)
            for version in built:
                self.counters[(name, version)]
            await self._retire(self.repository.install(name, built))

    async def unload_model(self, name: str):
        """Stop serving ``name``: new requests are refused at once, admitted ones are answered, then its
        engines close (their device memory is freed).  Unloading a model that is not loaded succeeds."""
        self._check_control("unload")
        async with self._control:
            await self._retire(self.repository.remove(name))

    def _check_control(self, action):
        if self.repository.mode != "explicit":
            raise InferenceServerError(400, f"explicit model {action} is not allowed: the server runs with "
                                            f"--model-control-mode={self.repository.mode} (start it with "
                                            f"--model-control-mode=explicit)")
        if not self.admitting:
            raise InferenceServerError(503, "the server is shutting down: it loads and unloads no model")

    async def _retire(self, versions: dict):
        """Close ``versions`` once no admitted request is left on them."""
        while any(model.in_flight for model in versions.values()):
            await asyncio.sleep(0.005)
        loop = asyncio.get_running_loop()
        for model in versions.values():
            await loop.run_in_executor(None, model.close)

    # ---- shutting down ------------------------------------------------------------

    def stop_admitting(self):
        self.admitting = False

    async def drain(self, timeout: float):
        """Wait (at most ``timeout`` seconds) until every admitted inference has its answer;
        True when none is left."""
        if self.active == 0:
            return True
        self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True
