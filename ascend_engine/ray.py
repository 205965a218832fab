"""Replicas on Ray: one actor per replica, each owning an engine on the NPUs Ray gave it.

Ray schedules Ascend NPUs as its built-in ``NPU`` resource and sets
``ASCEND_RT_VISIBLE_DEVICES`` for every actor that asks for some, so inside an
actor the NPUs it was given are devices 0, 1, ... (the simulator honours the
variable as CANN does).  :func:`deploy` starts the actors and returns a
:class:`RayReplicas` handle::

    import ray
    from ascend_engine.ray import deploy

    ray.init()
    with deploy("pipeline.yaml", replicas=4, npus_per_replica=1, depth=8) as replicas:
        out = replicas.run_batch({"x": x}, batch_size=8)     # rows shared over the replicas
        future = replicas.submit({"x": x[:8]})                 # one request, a Future
        print(future.result()["y"])

A replica that dies (its process crashes or is killed) fails the requests it
had with a :class:`ReplicaError` naming it; Ray restarts it (``max_restarts``)
and the handle sends new requests to the other replicas until it is back.

:class:`ServeDeployment` and :func:`serve_app` serve a pipeline over HTTP with
Ray Serve, batching concurrent requests with Serve's own batching.

Needs the ``ray`` extra: ``pip install 'ascend-engine[ray]'``.  docs/scale-out.md
says when to use which form of scale-out.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from concurrent.futures import Future

import numpy as np

try:
    import ray
    from ray import serve
    from ray.exceptions import RayActorError
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"ascend_engine.ray needs Ray with Serve ({_exc}); install it with: pip install 'ascend-engine[ray]'"
    ) from _exc

from ascend_engine._checks import positive_int
from ascend_engine.errors import EngineError, ReplicaError
from ascend_engine.replicas import batch_rows, in_order, join_shares, refuse_times, share_rows

__all__ = ["ReplicaError", "RayReplicas", "ServeDeployment", "deploy", "serve_app"]

VISIBLE_DEVICES = "ASCEND_RT_VISIBLE_DEVICES"
RAY_NPU_LOGGER = "ray._private.accelerators.npu"


class _NoAclModuleTraceback(logging.Filter):
    """Drop Ray's "Failed to detect NPU type." traceback when its cause is that ``import acl`` fails.

    Ray asks CANN's Python module ``acl`` (pyACL) for the SoC name while it starts a node; this
    package drives AscendCL through its own bindings and does not need that module, so on the
    simulator, or a CANN without pyACL, Ray logged the ModuleNotFoundError twice, with its
    traceback, at ray.init().  Only that case is dropped: any other failure of the probe is still
    shown (docs/scale-out.md, "Ray").
    """

    def filter(self, record):
        cause = record.exc_info[1] if record.exc_info else None
        return not (isinstance(cause, ImportError)
                    and record.getMessage().startswith("Failed to detect NPU type"))


def _quiet_ray_npu_probe():
    logger = logging.getLogger(RAY_NPU_LOGGER)
    if not any(isinstance(f, _NoAclModuleTraceback) for f in logger.filters):
        logger.addFilter(_NoAclModuleTraceback())


_quiet_ray_npu_probe()   # before the caller's ray.init(), which runs the probe


# ---- what a replica builds ---------------------------------------------------------------


def _source_for_actors(source, compile_kwargs, allow_code=False):
    """Check the pipeline source on the driver; returns (picklable source, compile kwargs).

    A spec (file path or dict) is parsed here, so schema errors show up at
    deploy() and not in every actor; it travels as a plain document with
    absolute model paths (every host must have the model files at those paths).
    A spec with host steps is code: refused here unless ``allow_code``.
    """
    from ascend_engine import spec as spec_mod
    from ascend_engine.pipeline import Pipeline

    if isinstance(source, Pipeline):
        raise TypeError(
            "deploy() needs a spec (file path or dict) or a function that builds the Pipeline: a Pipeline "
            "object belongs to this process, while each replica builds its own in its actor"
        )
    if callable(source):
        return ("factory", source), dict(compile_kwargs)
    if isinstance(source, (str, os.PathLike, dict)):
        parsed = spec_mod._parse_any(source)
        spec_mod.require_code_allowed(parsed, allow_code)
        return ("spec", spec_mod.to_dict(parsed)), {**parsed.compile, **compile_kwargs}
    raise TypeError(
        f"deploy() needs a spec file path, a spec dict or a function returning a Pipeline, "
        f"got {type(source).__name__}"
    )


def _build(source):
    """The Pipeline a replica compiles, on its logical device 0."""
    from ascend_engine import spec as spec_mod
    from ascend_engine.pipeline import Pipeline

    kind, value = source
    if kind == "spec":
        # device 0 is the first NPU Ray gave this process (ids are renumbered
        # from 0); models without a device of their own follow the pipeline
        # allowed on the driver (_source_for_actors) when it has host steps
        return spec_mod.from_spec({**value, "device": 0}, allow_code=True)
    pipe = value()
    if not isinstance(pipe, Pipeline):
        raise TypeError(
            f"the pipeline factory returned {type(pipe).__name__}, expected an ascend_engine.Pipeline"
        )
    return pipe


def _compile_on_visible_devices(source, compile_kwargs, npus):
    """Compile on the NPUs Ray gave this process: one engine, or one per NPU.

    Returns (engine or Replicas, facts about the devices for the handle).
    """
    import ascend_engine as ae

    count = ae.device_count()
    if count != npus:
        raise ReplicaError(
            f"this replica asked Ray for {npus} NPU(s) and sees {count} device(s) "
            f"({VISIBLE_DEVICES}={os.environ.get(VISIBLE_DEVICES)!r}): was AscendCL initialized in this "
            f"worker before Ray set the variable, or is RAY_EXPERIMENTAL_NOSET_{VISIBLE_DEVICES} set?"
        )
    pipe = _build(source)
    if npus == 1:
        engine = pipe.compile(device=0, **compile_kwargs)
        plans = [engine.plan]
    else:
        engine = pipe.compile_replicas(list(range(npus)), **compile_kwargs)
        plans = [e.plan for e in engine.engines]
    plan = plans[0]
    facts = {
        "backend": ae.backend().name,
        "max_batch": plan.max_batch,
        "depth": sum(p.depth for p in plans),
        "inputs": {name: np.dtype(plan.tensors[t].dtype).name for name, t in plan.inputs},
        "input_shapes": {name: tuple(plan.tensors[t].shape[1:]) for name, t in plan.inputs},
        "physical_devices": _physical_devices(npus),
    }
    return engine, facts


def _physical_devices(n):
    """The physical device behind each logical id, where the backend can tell
    (the simulator's aeSimDevicePhysicalId); None on real AscendCL."""
    import ctypes

    import ascend_engine as ae

    info = ae.backend()
    if info.name != "sim":
        return None
    lib = ctypes.CDLL(info.library)
    out = []
    for i in range(n):
        p = ctypes.c_int32(-1)
        if lib.aeSimDevicePhysicalId(ctypes.c_int32(i), ctypes.byref(p)) != 0:
            return None
        out.append(p.value)
    return out


class _Replica:
    """The actor body: owns one engine (or one per NPU) for its lifetime."""

    def __init__(self, index, source, compile_kwargs, npus):
        ctx = ray.get_runtime_context()
        self.engine, facts = _compile_on_visible_devices(source, compile_kwargs, npus)
        self.info = {
            "index": index,
            "pid": os.getpid(),
            "node": ray.util.get_node_ip_address(),
            "actor_id": ctx.get_actor_id(),
            "npu_ids": list(ctx.get_accelerator_ids().get("NPU", [])),
            VISIBLE_DEVICES: os.environ.get(VISIBLE_DEVICES),
            **facts,
        }

    def ready(self):
        return self.info

    def run(self, feeds):
        return self.engine.run(feeds)

    def run_batch(self, feeds, batch_size):
        return self.engine.run_batch(feeds, batch_size)

    def trace(self, path, requests, feeds, batch_size):
        return self.engine.trace(path, requests, feeds, batch_size)

    def stats(self, percentiles=True):
        return self.engine.stats(percentiles)

    def memory(self):
        return self.engine.memory()

    def close(self):
        self.engine.close()


_ReplicaActor = ray.remote(_Replica)


# ---- the handle ----------------------------------------------------------------------------


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class RayReplicas:
    """A handle on the replicas :func:`deploy` started.

    ``submit`` sends one request to the least busy live replica and returns a
    ``concurrent.futures.Future``; ``run`` waits for it; ``run_batch`` shares
    the rows over the live replicas.  Thread-safe.
    """

    def __init__(self, actors, npus_per_replica, max_restarts, ready_timeout):
        self.actors = list(actors)
        self.npus_per_replica = npus_per_replica
        self.max_restarts = max_restarts
        self._lock = threading.Lock()
        self._pending = [0] * len(self.actors)
        self._alive = [True] * len(self.actors)
        self._gone = [False] * len(self.actors)  # dead for good (restarts used up, or it cannot start)
        self._gone_why = [None] * len(self.actors)
        self._deaths = [0] * len(self.actors)
        self._turn = itertools.count()
        self._closed = False
        self._info = [None] * len(self.actors)
        refs = [a.ready.remote() for a in self.actors]
        ready, waiting = ray.wait(refs, num_returns=len(refs), timeout=ready_timeout)
        if waiting:
            message = (
                f"{len(waiting)} of {len(refs)} replicas did not start within {ready_timeout:g} s: "
                f"the cluster has {ray.cluster_resources().get('NPU', 0):g} NPU(s) in all and "
                f"{ray.available_resources().get('NPU', 0):g} free; each replica needs {npus_per_replica}"
            )
            self._kill_all()
            raise ReplicaError(message)
        for k, ref in enumerate(refs):
            try:
                self._info[k] = ray.get(ref)
            except Exception as exc:
                self._kill_all()
                # Ray's message carries the actor's traceback; its last line is the error itself
                lines = [line for line in str(exc).splitlines() if line.strip()]
                reason = lines[-1].strip() if lines else type(exc).__name__
                raise ReplicaError(f"replica {k} could not start: {reason}", replica=k) from exc

    def __repr__(self) -> str:
        return f"<ascend_engine.ray.RayReplicas replicas={len(self.actors)} alive={sum(self._alive)}>"

    def __len__(self) -> int:
        return len(self.actors)

    @property
    def replicas(self) -> list[dict]:
        """What each replica reported when it (last) started, with ``alive``."""
        with self._lock:
            return [{**info, "alive": alive} for info, alive in zip(self._info, self._alive, strict=True)]

    @property
    def max_batch(self) -> int:
        """Rows one request may carry without being split (from replica 0)."""
        return self._info[0]["max_batch"]

    # ---- choosing and calling replicas ---------------------------------------------------

    def _pick(self) -> int:
        with self._lock:
            if self._closed:
                raise EngineError("the replicas were closed (RayReplicas.close())")
            live = [k for k in range(len(self.actors)) if self._alive[k]]
            if not live:
                # all restarting: Ray queues the call until one is back
                live = [k for k in range(len(self.actors)) if not self._gone[k]]
            if not live:
                why = "; ".join(f"replica {k}: {w}" for k, w in enumerate(self._gone_why) if w)
                raise ReplicaError(
                    f"no replica is left: all {len(self.actors)} died and could not be restarted "
                    f"(max_restarts={self.max_restarts}){': ' + why if why else ''}"
                )
            turn = next(self._turn)
            return min(live, key=lambda k: (self._pending[k], (k - turn) % len(self.actors)))

    def _call(self, k, method, *args) -> Future:
        """Call ``method`` on replica k; the Future fails with ReplicaError if it dies."""
        with self._lock:
            self._pending[k] += 1
        try:
            inner = getattr(self.actors[k], method).remote(*args).future()
        except BaseException:
            with self._lock:
                self._pending[k] -= 1
            raise
        outer = Future()
        outer.set_running_or_notify_cancel()

        def settle(f):
            with self._lock:
                self._pending[k] -= 1
            exc = f.exception()
            if exc is None:
                outer.set_result(f.result())
            elif isinstance(exc, RayActorError):
                outer.set_exception(self._replica_died(k, exc))
            else:
                outer.set_exception(exc)

        inner.add_done_callback(settle)
        return outer

    def _replica_died(self, k, cause) -> ReplicaError:
        info = self._info[k] or {}
        with self._lock:
            was_alive, self._alive[k] = self._alive[k], False
            self._deaths[k] += was_alive
        if was_alive and not self._closed:
            self._watch_restart(k)
        if self.max_restarts == 0:
            restart = "Ray does not restart it (max_restarts=0); the other replicas take new requests"
        else:
            restart = (f"Ray restarts it (max_restarts={self.max_restarts}); the other replicas take new "
                       "requests meanwhile")
        err = ReplicaError(
            f"replica {k} of {len(self.actors)} (NPU ids {info.get('npu_ids')}, pid {info.get('pid')} on "
            f"{info.get('node')}) died with this request pending: {_first_line(cause).rstrip('.')}. "
            f"{restart}. The request was not completed: submit it again.",
            replica=k,
        )
        err.__cause__ = cause
        return err

    def _watch_restart(self, k):
        """Mark replica k alive again once its restarted actor answers.

        A probe sent while Ray is still noticing the death fails too: probe
        again, until the replica answers, its constructor fails (it cannot
        start, so it is gone), or its restarts are used up.
        """

        def back(f):
            exc = f.exception()
            with self._lock:
                if self._closed:
                    return
                if exc is None:
                    self._info[k] = f.result()
                    self._alive[k] = True
                    return
                init_failed = isinstance(exc, RayActorError) and getattr(exc, "_actor_init_failed", False)
                used_up = 0 <= self.max_restarts < self._deaths[k]
                if init_failed or used_up or not isinstance(exc, RayActorError):
                    self._gone[k] = True
                    self._gone_why[k] = _first_line(exc)
                    return
            timer = threading.Timer(0.25, self._watch_restart, (k,))
            timer.daemon = True
            timer.start()

        self.actors[k].ready.remote().future().add_done_callback(back)

    # ---- running ---------------------------------------------------------------------------------

    def submit(self, feeds) -> Future:
        """Send one request to the least busy live replica; returns a Future of its outputs."""
        if not isinstance(feeds, dict) or not feeds:
            raise TypeError(f"feeds must be a non-empty dict of input name -> array, got {feeds!r:.80}")
        return self._call(self._pick(), "run", feeds)

    def run(self, feeds, timeout: float | None = None) -> dict:
        """Run one request on a replica and wait for its outputs."""
        return self.submit(feeds).result(timeout)

    async def run_async(self, feeds, timeout: float | None = None) -> dict:
        """``await handle.run_async(feeds)``: :meth:`submit` without blocking the event loop."""
        return await asyncio.wait_for(asyncio.wrap_future(self.submit(feeds)), timeout)

    def run_many(self, feeds_iterable, *, times=None):
        """Yield the outputs of each feeds dict in order, keeping every
        replica's ``depth`` in flight over the replicas (as ``Engine.run_many``;
        ``times`` is one engine's and refused here)."""
        refuse_times(times)
        with self._lock:
            window = sum(info.get("depth", 1) for info in self._info if info) or len(self.actors)
        return in_order(self.submit, feeds_iterable, window)

    def trace(self, path, requests=16, feeds=None, batch_size=None, timeout: float | None = None) -> dict:
        """``Engine.trace`` on one live replica (its timeline, written at ``path``
        on that replica's host); the summary names the ``replica``."""
        k = self._pick()
        return {**self._call(k, "trace", path, requests, feeds, batch_size).result(timeout), "replica": k}

    def run_batch(self, feeds, batch_size=None, timeout: float | None = None) -> dict:
        """Share the rows over the live replicas (whole requests of ``batch_size``
        rows, contiguous shares), run the shares at the same time, and return
        the outputs concatenated in order."""
        total = batch_rows(feeds)
        batch = self.max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        with self._lock:
            live = [k for k in range(len(self.actors)) if self._alive[k]] or [
                k for k in range(len(self.actors)) if not self._gone[k]
            ]
        if not live:
            self._pick()  # raises the "no replica is left" error
        futures = [
            self._call(k, "run_batch", {n: np.asarray(a)[lo:hi] for n, a in feeds.items()}, batch)
            for k, (lo, hi) in zip(live, share_rows(total, batch, len(live)), strict=False)
        ]
        parts, error = [], None
        for f in futures:  # wait for every share, so none is left running behind an error
            try:
                parts.append(f.result(timeout))
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error
        return join_shares(parts)

    # ---- reporting and lifetime ---------------------------------------------------------------

    def stats(self, percentiles: bool = True) -> dict:
        """Each live replica's engine stats, by replica index (``percentiles`` as in Engine.stats)."""
        return self._gather("stats", percentiles)

    def memory(self) -> dict:
        """Each live replica's engine memory report, by replica index."""
        return self._gather("memory")

    def _gather(self, method, *args) -> dict:
        with self._lock:
            live = [k for k in range(len(self.actors)) if self._alive[k]]
        futures = {k: self._call(k, method, *args) for k in live}
        return {k: f.result() for k, f in futures.items()}

    def _kill_all(self):
        for a in self.actors:
            ray.kill(a, no_restart=True)

    def close(self) -> None:
        """Close every engine and end the actors. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live = [k for k in range(len(self.actors)) if self._alive[k]]
        refs = [self.actors[k].close.remote() for k in live]
        try:
            ray.wait(refs, num_returns=len(refs), timeout=30)
        finally:
            self._kill_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def deploy(spec_or_pipeline_factory, replicas: int = 1, npus_per_replica: int = 1, *,
           max_restarts: int = -1, ready_timeout: float = 300.0, actor_options: dict | None = None,
           allow_code: bool = False, **compile_kwargs) -> RayReplicas:
    """Start ``replicas`` Ray actors, each compiling the pipeline on its own NPUs.

    ``spec_or_pipeline_factory`` is a spec file, a spec dict, or a function
    (run in each actor) returning a :class:`~ascend_engine.Pipeline` whose
    models are given by path.  Each actor asks Ray for
    ``resources={"NPU": npus_per_replica}`` (and no CPU: the NPU is what
    bounds it) and compiles one engine on its device 0, or with several NPUs
    one engine per NPU (``Pipeline.compile_replicas``).  ``compile_kwargs``
    go to ``compile`` (they override a spec's ``compile`` section).
    ``max_restarts`` is Ray's (-1: restart a dead replica forever);
    ``actor_options`` are extra Ray actor options.  A spec with host steps
    names Python code that every actor imports: it is refused unless
    ``allow_code=True``.  Waits until every replica has compiled
    (``ready_timeout`` seconds) and returns the handle.
    """
    replicas = positive_int(replicas, "replicas")
    npus = positive_int(npus_per_replica, "npus_per_replica")
    if not ray.is_initialized():
        raise EngineError("Ray is not initialized: call ray.init() (or ray.init(address=...)) first")
    source, kwargs = _source_for_actors(spec_or_pipeline_factory, compile_kwargs, allow_code)
    options = {"num_cpus": 0, "resources": {"NPU": npus}, "max_restarts": max_restarts,
               "max_concurrency": 4, **(actor_options or {})}
    actors = [_ReplicaActor.options(**options).remote(k, source, kwargs, npus) for k in range(replicas)]
    return RayReplicas(actors, npus, max_restarts, ready_timeout)


# ---- Ray Serve ------------------------------------------------------------------------------


class ServeDeployment:
    """A Ray Serve deployment body serving a pipeline over HTTP.

    Each Serve replica compiles the pipeline on the NPUs Ray gave it (its
    device 0, or one engine per NPU).  ``POST`` a JSON object
    ``{"inputs": {name: nested list}}``; the answer is
    ``{"outputs": {name: nested list}}``.  Concurrent requests are gathered
    with Serve's batching (up to ``max_batch_size`` requests, waiting at most
    ``batch_wait_timeout_s``) and run as one ``run_batch``.  A malformed
    request gets status 400 and ``{"error": ...}``.  Build an application
    with :func:`serve_app`.
    """

    def __init__(self, source, compile_kwargs=None, npus: int = 1, max_batch_size: int = 16,
                 batch_wait_timeout_s: float = 0.002):
        self.engine, self.facts = _compile_on_visible_devices(source, dict(compile_kwargs or {}), npus)
        self.dtypes = {name: np.dtype(d) for name, d in self.facts["inputs"].items()}
        self.shapes = {name: tuple(s) for name, s in self.facts["input_shapes"].items()}
        self._batched.set_max_batch_size(max_batch_size)
        self._batched.set_batch_wait_timeout_s(batch_wait_timeout_s)

    def _feeds(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), dict):
            raise ValueError('expected a JSON object {"inputs": {name: nested list}}')
        inputs = body["inputs"]
        if set(inputs) != set(self.dtypes):
            raise ValueError(f"pipeline inputs are {sorted(self.dtypes)}, got {sorted(inputs)}")
        feeds, rows = {}, set()
        for name, dtype in self.dtypes.items():
            a = np.asarray(inputs[name], dtype=dtype)
            trailing = self.shapes[name]
            if a.ndim != len(trailing) + 1 or a.shape[1:] != trailing or len(a) == 0:
                want = ", ".join(map(str, trailing))
                raise ValueError(f"input {name!r}: expected shape (rows >= 1, {want}), got {a.shape}")
            feeds[name] = a
            rows.add(len(a))
        if len(rows) != 1:
            raise ValueError(f"inputs have different row counts: {sorted(rows)}")
        return feeds

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.002)
    async def _batched(self, requests: list[dict]) -> list[dict]:
        rows = [len(next(iter(f.values()))) for f in requests]
        feeds = {name: np.concatenate([f[name] for f in requests]) for name in self.dtypes}
        out = self.engine.run_batch(feeds, self.facts["max_batch"])
        bounds = np.cumsum([0, *rows])
        shares = zip(bounds[:-1], bounds[1:], strict=True)
        return [{name: a[lo:hi] for name, a in out.items()} for lo, hi in shares]

    async def __call__(self, request):
        from starlette.responses import JSONResponse

        try:
            feeds = self._feeds(await request.json())
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        out = await self._batched(feeds)
        return {"outputs": {name: a.tolist() for name, a in out.items()}}


def serve_app(spec_or_pipeline_factory, replicas: int = 1, npus_per_replica: int = 1, *,
              max_batch_size: int = 16, batch_wait_timeout_s: float = 0.002, name: str = "ascend-engine",
              allow_code: bool = False, **compile_kwargs):
    """A Ray Serve application serving the pipeline: ``serve.run(serve_app("pipeline.yaml"))``.

    ``replicas`` Serve replicas, each with ``resources={"NPU": npus_per_replica}``.
    Start Serve on loopback first if the service is local only:
    ``serve.start(http_options={"host": "127.0.0.1", "port": 8000})``.
    """
    replicas = positive_int(replicas, "replicas")
    npus = positive_int(npus_per_replica, "npus_per_replica")
    source, kwargs = _source_for_actors(spec_or_pipeline_factory, compile_kwargs, allow_code)
    deployment = serve.deployment(ServeDeployment, name=name).options(
        num_replicas=replicas, ray_actor_options={"num_cpus": 0, "resources": {"NPU": npus}}
    )
    return deployment.bind(source, kwargs, npus, max_batch_size, batch_wait_timeout_s)
