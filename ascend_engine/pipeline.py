"""``Pipeline`` with ``compile()``: the top of the one direction (docs/executor.md).

The planner (:mod:`ascend_engine.planner`) records the graph and makes the
plan, and never imports the executor; this module sits above both: its
:class:`Pipeline` is the planner's graph builder plus :meth:`Pipeline.compile`,
which asks the planner for a plan, loads the models it names and hands the
plan to the executor (:class:`ascend_engine.Engine`).  ``ascend_engine.Pipeline``
is this class; ``Pipeline.from_spec`` and the spec files build it too.

It also re-exports the names ``ascend_engine.pipeline`` has always offered:

* :mod:`ascend_engine.planner.builder` -- ``TensorHandle``, ``MAX_STEP_ROWS``,
  ``ROWS_CHOICES``; :mod:`ascend_engine.native_step` -- ``NativeStep``;
* :mod:`ascend_engine.planner.plan` -- ``Plan``, ``PlanNode``, ``PlanTensor``;
* :mod:`ascend_engine.planner.memory` -- ``ALIGN``, ``PADDING``,
  ``POOL_HEADROOM``, ``carve``;
* :mod:`ascend_engine.planner.models` -- ``ModelDescription``;
* :mod:`ascend_engine.shapes` -- ``RequestShape``, ``ShapedRequests``,
  ``RequestWalk``, ``pad_to``;
* :mod:`ascend_engine.errors` -- ``PipelineError``.
"""

from __future__ import annotations

from ascend_engine.errors import PipelineError
from ascend_engine.native_step import NativeStep
from ascend_engine.planner import builder as _builder
from ascend_engine.planner.builder import MAX_STEP_ROWS, ROWS_CHOICES, TensorHandle
from ascend_engine.planner.memory import ALIGN, PADDING, POOL_HEADROOM, carve
from ascend_engine.planner.models import ModelDescription, query_size
from ascend_engine.planner.plan import Plan, PlanNode, PlanTensor
from ascend_engine.shapes import RequestShape, RequestWalk, ShapedRequests, pad_to


class Pipeline(_builder.Pipeline):
    """A graph of models (:class:`ascend_engine.planner.builder.Pipeline`)
    that compiles into an :class:`ascend_engine.Engine`.

    >>> pipe = Pipeline(device=0)
    >>> x = pipe.input("x", "float32", (-1, 64))
    >>> h = pipe.model("encoder.om", x, name="enc")
    >>> pipe.output("y", pipe.model("head.om", h, name="head"))
    >>> engine = pipe.compile(depth=8)
    """

    @classmethod
    def from_spec(cls, path_or_dict, device: int | None = None, allow_code: bool = False) -> Pipeline:
        """Build a pipeline from a spec file (YAML or JSON) or an already-parsed dict.

        See docs/pipeline-spec.md; ``ascend_engine.spec.load`` also returns
        the spec's compile options.  Schema errors raise ``SpecError`` (a
        :class:`PipelineError`) naming the key path.  A spec with host steps
        imports and runs the Python functions they name: it is refused unless
        ``allow_code=True`` (docs/pipeline-spec.md, "Host steps are code").
        """
        from ascend_engine import spec

        return spec.from_spec(path_or_dict, device=device, allow_code=allow_code)

    def compile(self, depth: int = 4, streams: str = "per-model", profile: bool = False,
                timeout: float | None = 60.0, wait: str = "block", device: int | None = None,
                max_queue: int | None = None, max_delay_ms: float = 0.0, gear_policy: str = "upper",
                host_workers=1, priority_levels: int = 1, default_priority: int | None = None,
                queue_timeout: float | None = None, timeout_action: str = "reject",
                preferred_batch_sizes=(), _unsafe_skip_waits: bool = False):
        """Validate, plan and create everything once; returns an :class:`Engine`.

        ``depth`` requests may be in flight at once (one slot each);
        ``streams="single"`` runs copies and models on one stream, for
        comparison; ``profile`` times every node with timing events;
        ``timeout`` (seconds, None = forever) bounds the wait for one request;
        ``wait="spin"`` polls for completion instead of sleeping, trading a
        busy core for latency; ``device`` compiles for another device than
        the pipeline's (every model must then be given by path).

        Serving (``submit``, ``run``, ``run_async``): ``max_queue`` requests
        may wait for a slot (default 4 x depth; then ``submit`` blocks or
        raises ``EngineBusy``); ``max_delay_ms`` > 0 turns on the dynamic
        batcher, which merges requests of fewer rows than ``max_batch`` into
        one device request, waiting at most that long for more;
        ``gear_policy`` ("upper", "nearest" or "lower") says what the batcher
        does when the merged rows fall between two gears, and how models
        after a host step with ``rows="any"`` run rows between two gears.
        ``host_workers``: threads per host step (an int for every step, or
        ``{step name: int}``), so a step runs for several requests at once.

        Triton's queue policy (docs/executor.md, "Queue policy"):
        ``priority_levels`` lines in the queue, 1 served first (a request
        names its own with ``submit(priority=)``, else it gets
        ``default_priority``, by default the lowest); ``queue_timeout``
        (seconds, None = forever) bounds a request's wait in the queue, after
        which ``timeout_action="reject"`` fails it with TimeoutError and
        ``"delay"`` runs it after every request that did not time out;
        ``preferred_batch_sizes`` are batch sizes the batcher sends at once
        instead of waiting ``max_delay_ms`` for a full batch.
        (``_unsafe_skip_waits`` drops the cross-stream event waits: only for
        tests proving that a missing dependency is caught.)
        """
        from ascend_engine._model import Model
        from ascend_engine.engine import Engine

        plan = self.plan(depth=depth, streams=streams, profile=profile, timeout=timeout, wait=wait,
                         device=device, max_queue=max_queue, max_delay_ms=max_delay_ms,
                         gear_policy=gear_policy, host_workers=host_workers, priority_levels=priority_levels,
                         default_priority=default_priority, queue_timeout=queue_timeout,
                         timeout_action=timeout_action, preferred_batch_sizes=preferred_batch_sizes)
        # Every engine loads its own instance of a model given by path, so
        # engines compiled from one pipeline never share an executing model.
        loaded = []
        try:
            by_name = {n.name: n for n in self._nodes}
            for plan_node in plan.nodes:
                if plan_node.kind != "model":
                    continue
                node = by_name[plan_node.name]
                on = plan.devices[plan_node.device]
                if plan_node.instances > 1:
                    plan_node.models = list(Model.load_instances(node.path, plan_node.instances, device=on))
                    loaded.extend(plan_node.models)
                    plan_node.model = plan_node.models[0]
                elif node.path is not None:
                    plan_node.model = Model.load(node.path, device=on)
                    loaded.append(plan_node.model)
                plan_node.work_bytes, plan_node.weight_bytes = query_size(plan_node.model.path)
            return Engine(plan, owned_models=loaded, _unsafe_skip_waits=_unsafe_skip_waits)
        except BaseException:
            for m in loaded:
                m.close()
            raise

    def compile_replicas(self, devices, **compile_kwargs):
        """Compile one engine per device for data parallelism; returns :class:`Replicas`.

        Every model must be given by path (each replica loads its own copy on
        its device).  ``compile_kwargs`` are those of :meth:`compile`.
        """
        from ascend_engine.replicas import Replicas

        devices = [int(d) for d in devices]
        if not devices or len(set(devices)) != len(devices):
            raise PipelineError(f"devices must be distinct device ids, got {devices}")
        fixed = [n.name for n in self._nodes if n.path is None and n.kind == "model"]
        placed = [n.name for n in self._nodes if n.device is not None]
        if placed:
            raise PipelineError(f"model nodes {placed} are placed on devices (device=...): a replicated "
                                "pipeline runs whole on each replica's device")
        if fixed:
            raise PipelineError(f"model nodes {fixed} were given loaded Models, which live on one device: "
                                "give model paths to replicate a pipeline")
        engines = []
        try:
            for d in devices:
                engines.append(self.compile(device=d, **compile_kwargs))
        except BaseException:
            for e in engines:
                e.close()
            raise
        return Replicas(engines)


__all__ = [
    "ALIGN",
    "MAX_STEP_ROWS",
    "PADDING",
    "POOL_HEADROOM",
    "ROWS_CHOICES",
    "ModelDescription",
    "NativeStep",
    "Pipeline",
    "PipelineError",
    "Plan",
    "PlanNode",
    "PlanTensor",
    "RequestShape",
    "RequestWalk",
    "ShapedRequests",
    "TensorHandle",
    "carve",
    "pad_to",
]
