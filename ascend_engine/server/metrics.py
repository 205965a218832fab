"""Prometheus metrics of ``ascend-engine serve``, in the text exposition format (docs/serve.md, "Metrics").

Per model and version: requests that succeeded and failed, rows inferred,
device requests (executions) and their batch sizes, and the time a request
spent in the server, in the engine's queue and on the device.  Names follow
Triton's (``nv_inference_*``) where Triton has the figure, so dashboards made
for Triton read these; the rest are ``ascend_engine_*``.  The queue and
compute times come from the engine's own counters (``Engine.stats()``).
"""

from __future__ import annotations


class ModelCounters:
    """What the server itself counts for one model version (touched on the event loop only)."""

    __slots__ = ("success", "failure", "rows", "duration_s", "failure_s", "input_count", "input_s",
                 "output_count", "output_s")

    def __init__(self):
        self.success = 0
        self.failure = 0
        self.rows = 0
        self.duration_s = 0.0              # server-side time of every answered request, summed
        self.failure_s = 0.0               # ... of those answered with an error
        self.input_count = 0               # requests whose tensors became the engine's feeds
        self.input_s = 0.0                 # ... the time that took, summed
        self.output_count = 0              # answers encoded for the wire
        self.output_s = 0.0                # ... the time that took, summed

    def prepared(self, seconds: float):
        """One request's tensors checked and made the engine's feeds in ``seconds``."""
        self.input_count += 1
        self.input_s += seconds

    def encoded(self, seconds: float):
        """One answer's outputs encoded in ``seconds``."""
        self.output_count += 1
        self.output_s += seconds

    def succeeded(self, seconds: float, rows: int):
        self.success += 1
        self.rows += rows
        self.duration_s += seconds

    def failed(self, seconds: float):
        self.failure += 1
        self.duration_s += seconds
        self.failure_s += seconds


# (name, type, help)
_FAMILIES = (
    ("nv_inference_request_success", "counter", "Requests that got their outputs"),
    ("nv_inference_request_failure", "counter", "Requests answered with an error"),
    ("nv_inference_count", "counter", "Rows (batch entries) inferred"),
    ("nv_inference_exec_count", "counter", "Device requests run (a batch of merged requests counts once)"),
    ("nv_inference_request_duration_us", "counter", "Time requests spent in the server, summed (us)"),
    ("nv_inference_queue_duration_us", "counter", "Time requests waited in the engine's queue, summed (us)"),
    ("nv_inference_compute_infer_duration_us", "counter",
     "Time device requests took on the device, summed (us)"),
    ("ascend_engine_batch_rows_total", "counter", "Device requests by rows per device request"),
    ("ascend_engine_rejected_total", "counter",
     "Requests turned away by priority: the queue was full, or their queue timeout passed"),
    ("ascend_engine_delayed_total", "counter", "Requests whose queue timeout passed and were run last"),
    ("ascend_engine_queued", "gauge", "Requests waiting in the engine's queue now"),
    ("nv_inference_pending_request_count", "gauge",
     "Requests admitted by the server and not yet answered (queued, on the device, or being encoded)"),
    ("ascend_engine_device_requests_total", "counter",
     "Requests each device's engine answered (a model served on several devices: one sample per device)"),
    ("ascend_engine_device_in_flight", "gauge", "Requests on each device's engine now"),
)


def _labels(model, **more) -> str:
    pairs = {"model": model.name, "version": model.version, **more}
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs.items()) + "}"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(service) -> bytes:
    """Every metric of every model, as Prometheus text."""
    samples = {name: [] for name, _, _ in _FAMILIES}
    for model in service.repository.all():
        counters = service.counters[(model.name, model.version)]
        serving = model.serving_stats()
        labels = _labels(model)
        samples["nv_inference_request_success"].append((labels, counters.success))
        samples["nv_inference_request_failure"].append((labels, counters.failure))
        samples["nv_inference_count"].append((labels, counters.rows))
        samples["nv_inference_request_duration_us"].append((labels, round(counters.duration_s * 1e6)))
        batches = serving.get("batch_rows", {})
        samples["nv_inference_exec_count"].append((labels, sum(batches.values())))
        for rows, count in batches.items():
            samples["ascend_engine_batch_rows_total"].append((_labels(model, rows=rows), count))
        for family, key in (("nv_inference_queue_duration_us", "queue_ms"),
                            ("nv_inference_compute_infer_duration_us", "service_ms")):
            total_ms = serving.get(key, {}).get("total", 0.0)
            samples[family].append((labels, round(total_ms * 1000)))
        for priority, figures in serving.get("priorities", {}).items():
            by = _labels(model, priority=priority)
            samples["ascend_engine_rejected_total"].append((by, figures["rejected"]))
            samples["ascend_engine_delayed_total"].append((by, figures["delayed"]))
        samples["ascend_engine_queued"].append((labels, serving.get("queued", 0)))
        samples["nv_inference_pending_request_count"].append((labels, model.in_flight))
        per_device = zip(model.engines, model.devices, model.engine_in_flight, strict=True)
        for engine, device, in_flight in per_device:
            totals = {} if engine.closed else engine.stats(percentiles=False)["serving"]
            answered = totals["latency_ms"]["added"] if totals else 0
            on = _labels(model, device=device)
            samples["ascend_engine_device_requests_total"].append((on, answered))
            samples["ascend_engine_device_in_flight"].append((on, in_flight))
    lines = []
    for name, kind, help_text in _FAMILIES:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {value}" for labels, value in samples[name])
    return ("\n".join(lines) + "\n").encode()
