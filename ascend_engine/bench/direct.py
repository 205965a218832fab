"""Benchmarking a dynamic-shape model file outside a pipeline.

Pipelines take static and dynamic-batch models; a model with dynamic image
size, dims gears or shape ranges is benchmarked here, on the runtime objects
directly.  The run keeps ``depth`` requests in flight, each on its own slot:
a stream, device buffers for every input and output, pinned host buffers for
the outputs and five timing events.  Request r uses slot r mod depth:

    H2D of its inputs -> wait for request r-1's execution -> execute
    (``Model.execute_async`` at the chosen gear or shapes) -> D2H of its outputs

all on the slot's stream.  The wait is an event of the previous request's
execution: one loaded model executes one request at a time (as on the
device), while the copies of the other slots overlap it.  Before a slot is
reused its stream is synchronized; that is when its request's result is
delivered, and its latency runs from the moment its first copy was queued.
The timing events give each step's device time, in the same form as the
engine's timeline rows (:mod:`.breakdown`).
"""

from __future__ import annotations

import json
import math
import time

import numpy as np

from .breakdown import single_model_layout
from .measure import report_passes

DEFAULT_DEPTH = 4   # requests in flight, as for a compiled pipeline

HOW = ("the model alone, outside a pipeline (a spec runs image-size and dims-gear models in one): "
       "Model.execute_async at the chosen shapes on {depth} stream(s), one request in flight on each, "
       "executions in request order")


def random_inputs(model, shapes, count, seed=0) -> list:
    """``count`` feeds dicts of random data at ``shapes`` ({input: shape}) with the model's dtypes."""
    from ascend_engine._feeds import random_feeds

    pool = [{} for _ in range(count)]
    for k, spec in enumerate(model.inputs):
        shape = shapes[spec.name]
        for feeds, one in zip(pool, random_feeds([(spec.name, spec.dtype, shape[1:])], shape[0], count,
                                                 seed + k), strict=True):
            feeds.update(one)
    return pool


class _Slot:
    """One request in flight: a stream, device and host buffers, timing events."""

    def __init__(self, ae, device, in_bytes, out_bytes):
        self.stream = ae.Stream(device)
        self.ins = [ae.DeviceBuffer(device, max(1, n)) for n in in_bytes]
        self.outs = [ae.DeviceBuffer(device, max(1, n)) for n in out_bytes]
        self.host_outs = [ae.HostBuffer(max(1, n), device) for n in out_bytes]
        self.events = [ae.Event(device, timing=True) for _ in range(5)]   # start, h2d, exec 0, exec 1, end
        self.request = None

    def close(self):
        for obj in (self.stream, *self.ins, *self.outs, *self.host_outs, *self.events):
            obj.close()


class ShapedRun:
    """A dynamic-shape model loaded and ready to run at one gear or set of shapes.

    ``resolved`` comes from :func:`ascend_engine.bench.shapes.resolve`.  Use
    as a context manager; :meth:`bench` and :meth:`trace` run requests.
    ``zeros``: the inputs are zeros instead of random data.
    """

    def __init__(self, path, device, resolved, node, depth=4, pool=4, seed=0, zeros=False):
        import ascend_engine as ae

        self.ae = ae
        self.model = ae.Model.load(path, device=device)
        self.node = node
        self.gear, self.shapes = resolved["gear"], resolved["shapes"]
        self.depth = depth
        self._slots = []
        self._inputs = []
        try:
            self.pool = random_inputs(self.model, self.shapes, pool, seed)
            if zeros:   # ais_bench's --pure_data_type zero
                self.pool = [{k: np.zeros_like(v) for k, v in feeds.items()} for feeds in self.pool]
            # one synchronous call at the shapes: the outputs' shapes (and a result to check against)
            probe = self.model(**self.pool[0])
            self.output_shapes = {s.name: tuple(probe[s.name].shape) for s in self.model.outputs}
            self.probe = probe
            in_bytes = [max(s.nbytes, self.pool[0][s.name].nbytes) for s in self.model.inputs]
            self.out_nbytes = [probe[s.name].nbytes for s in self.model.outputs]
            out_bytes = [max(s.nbytes, n) for s, n in zip(self.model.outputs, self.out_nbytes, strict=True)]
            dev = self.model.device
            self._inputs = [[self._pinned(feeds[s.name]) for s in self.model.inputs] for feeds in self.pool]
            self._slots = [_Slot(ae, dev, in_bytes, out_bytes) for _ in range(depth)]
            self._origin = ae.Event(dev, timing=True)
            self._last_exec = None
        except BaseException:
            self.close()
            raise

    def _pinned(self, array):
        hb = self.ae.HostBuffer(max(1, array.nbytes), self.model.device)
        hb.as_array(np.uint8)[:array.nbytes] = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        return hb

    def close(self):
        for slot in self._slots:
            slot.close()
        for bufs in self._inputs:
            for hb in bufs:
                hb.close()
        if getattr(self, "_origin", None) is not None:
            self._origin.close()
        self.model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- one request ------------------------------------------------------------------------

    def _submit(self, slot, feed_index):
        s, ev = slot.stream, slot.events
        ev[0].record(s)
        for buf, host, spec in zip(slot.ins, self._inputs[feed_index], self.model.inputs, strict=True):
            if self.pool[feed_index][spec.name].nbytes:
                buf.copy_from(host, s)
        ev[1].record(s)
        if self._last_exec is not None:
            s.wait_event(self._last_exec)
        ev[2].record(s)
        if self.gear is not None:
            self.model.execute_async(slot.ins, slot.outs, s, gear=self.gear)
        else:
            self.model.execute_async(slot.ins, slot.outs, s,
                                     shapes=[self.shapes[sp.name] for sp in self.model.inputs])
        ev[3].record(s)
        self._last_exec = ev[3]
        for buf, host, n in zip(slot.outs, slot.host_outs, self.out_nbytes, strict=True):
            buf.copy_to(host, s, nbytes=n)
        ev[4].record(s)

    def _steps(self, slot):
        """The request's step times (ms after the origin event), as :mod:`.breakdown` takes them."""
        t = [self.ae.Event.elapsed_ms(self._origin, e) for e in slot.events]
        return {"h2d": t[1] - t[0], "compute": {self.node: t[3] - t[2]},
                "wait": {self.node: t[2] - t[1], "outputs": 0.0}, "d2h": t[4] - t[3],
                "queue": t[2] - t[1],          # behind the request before it on the model

                "start": t[0], "end": t[4], "times": t}

    def outputs(self, slot) -> dict:
        """The outputs of the slot's last request (after its stream is synchronized)."""
        return {s.name: hb.as_array(s.dtype)[:math.prod(self.output_shapes[s.name])]
                .reshape(self.output_shapes[s.name]).copy()
                for s, hb in zip(self.model.outputs, slot.host_outs, strict=True)}

    def _pass(self, requests=None, duration=None, progress=None) -> dict:
        """Run ``requests`` requests (or ``duration`` seconds) pipelined; per request submit/done/steps."""
        self._origin.record(self._slots[0].stream)
        self._origin.synchronize()
        base_s = time.perf_counter()      # the host time the step times count from
        self._last_exec = None
        submit, done, enqueue, steps = [], [], [], []

        def finish(slot):
            slot.stream.synchronize()
            done.append(time.perf_counter())
            steps.append((slot.request, self._steps(slot)))
            slot.request = None
            if progress is not None:
                progress.update(len(done))

        r = 0
        t0 = time.perf_counter()
        while requests is None or r < requests:
            if duration is not None and r and time.perf_counter() - t0 >= duration:
                break
            slot = self._slots[r % self.depth]
            if slot.request is not None:
                finish(slot)
            start = time.perf_counter()
            self._submit(slot, r % len(self.pool))
            enqueue.append((time.perf_counter() - start) * 1e3)
            submit.append(start)
            slot.request = r
            r += 1
        for k in range(r, r + self.depth):       # the ones still in flight, oldest first
            slot = self._slots[k % self.depth]
            if slot.request is not None:
                finish(slot)
        order = sorted(range(len(steps)), key=lambda i: steps[i][0])
        return {"submit": submit, "done": [done[i] for i in order], "enqueue_ms": enqueue,
                "steps": [steps[i][1] for i in order], "base_s": base_s}

    # ---- bench and trace ------------------------------------------------------------------

    def run_cold(self) -> float:
        """One request alone on fresh buffers; its latency in ms."""
        t0 = time.perf_counter()
        self._pass(requests=1)
        return (time.perf_counter() - t0) * 1e3

    def bench(self, cold_ms, requests=None, duration=None, warmup=10, repeat=1, progress=None) -> dict:
        """Warm up, then ``repeat`` timed passes: figures in the form ``measure.run_bench`` returns."""
        if warmup:
            self._pass(requests=warmup)
        batch = self.rows
        passes = []
        for r in range(repeat):
            if progress is not None:
                progress.restart(f"pass {r + 1}/{repeat}" if repeat > 1 else "")
            passes.append(self._pass(requests, duration, progress))
            if progress is not None:
                progress.finish(len(passes[-1]["done"]))
        # one execution per request, its steps timed by the loop itself
        return report_passes(passes, batch, cold_ms, repeat, single_model_layout(self.node), 1,
                             lambda p: lambda k: [p["steps"][k]])

    @property
    def rows(self) -> int:
        """Rows per request: dimension 0 of the first input (the items the device-time model counts)."""
        first = self.model.inputs[0] if self.model.inputs else None
        return int(self.shapes[first.name][0]) if first is not None and self.shapes[first.name] else 1

    def memory(self) -> dict:
        """Device and pinned bytes the run holds, in the keys the bench report prints."""
        slot_bytes = sum(b.nbytes for b in self._slots[0].ins + self._slots[0].outs)
        pinned = sum(hb.nbytes for bufs in self._inputs for hb in bufs) + \
            self.depth * sum(hb.nbytes for hb in self._slots[0].host_outs)
        return {"arena_bytes": slot_bytes * self.depth, "depth": self.depth, "slot_bytes": slot_bytes,
                "host_pinned_bytes": pinned, "peak_working_set": slot_bytes,
                "recommended_pool_bytes": int(slot_bytes * self.depth * 1.15)}

    def trace(self, path, requests=16, extra=None) -> dict:
        """Run ``requests`` requests and write their steps as Chrome trace events (one lane per slot)."""
        p = self._pass(requests=requests)
        pid = self.model.device.id
        events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                   "args": {"name": f"ascend-engine device {pid}"}}]
        events += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": k,
                    "args": {"name": f"stream {k} (slot {k})"}} for k in range(self.depth)]
        for r, st in enumerate(p["steps"]):
            t = st["times"]
            for name, cat, a, b in (("H2D", "copy", 0, 1), (f"wait {self.node}", "wait", 1, 2),
                                    (self.node, "execute", 2, 3), ("D2H", "copy", 3, 4)):
                if b == 2 and t[2] - t[1] <= 1e-3:
                    continue
                events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": r % self.depth,
                               "ts": round(t[a] * 1000.0, 3), "dur": round((t[b] - t[a]) * 1000.0, 3),
                               "args": {"request": r}})
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms", "otherData": dict(extra or {})}, f)
        return {"path": str(path), "requests": len(p["steps"])}
