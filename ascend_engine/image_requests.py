"""Requests of a pipeline with image nodes (docs/executor.md, "Image nodes").

A bytes input (``Pipeline.bytes_input``) takes one byte string per request:
``bytes``, ``bytearray``, ``memoryview`` or a 1-D uint8 array, of at most its
``max_bytes``.  The executor copies only that many bytes to the device and
reads the JPEG's header from them at submission, so every request carries its
sizes (``ae_request_shape``: the bytes input's row bytes are the string's
length, every other tensor keeps its planned size, no node has a gear).
Outputs are those of :class:`~ascend_engine.requests.HostSteps`: crops come
back with the rows (boxes) the request got.
"""

from __future__ import annotations

import numpy as np

from ascend_engine._feeds import check_feeds, check_names
from ascend_engine.requests import HostSteps
from ascend_engine.shapes import RequestShape


def as_bytes(value, name, max_bytes) -> np.ndarray:
    """One request's byte string as a (1, length) uint8 array (no copy when it can be avoided)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        array = np.frombuffer(value, dtype=np.uint8)
    elif isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim in (1, 2) \
            and (value.ndim == 1 or value.shape[0] == 1):
        array = np.ascontiguousarray(value).reshape(-1)
    else:
        raise TypeError(f"input {name!r}: one byte string per request (bytes, bytearray, memoryview or a 1-D "
                        f"uint8 array), got {type(value).__name__}")
    if not 1 <= array.size <= max_bytes:
        raise ValueError(f"input {name!r}: {array.size} bytes; this bytes input takes 1 to {max_bytes}")
    return array.reshape(1, -1)


class Images(HostSteps):
    """A plan with image nodes: bytes inputs of any length up to their
    ``max_bytes``, one request per image."""

    def __init__(self, plan):
        super().__init__(plan)
        self.byte_inputs = set(plan.byte_inputs)
        self.n_nodes = len(plan.nodes)
        self.base_row_bytes = np.array([t.row_bytes for t in plan.tensors], dtype=np.uintp)
        self.gear_dims = np.zeros(1, np.int64)
        self.no_gears = np.zeros(self.n_nodes, np.intc)

    def prepare(self, feeds):
        """Bytes inputs as byte strings, the others as arrays of one row; (arrays, 1)."""
        check_names(feeds, [name for name, _, _ in self.input_specs], "pipeline")
        arrays = []
        for k, (name, _dtype, trailing) in enumerate(self.input_specs):
            if k in self.byte_inputs:
                arrays.append(as_bytes(feeds[name], name, trailing[0]))
            else:
                arrays.append(check_feeds({name: feeds[name]}, [self.feed_specs[k]], "pipeline")[0][0])
        return arrays, 1

    def shape_of(self, arrays) -> RequestShape:
        """The request's sizes for the executor: each bytes input at its string's length."""
        row_bytes = self.base_row_bytes.copy()
        for k in self.byte_inputs:
            row_bytes[self.plan.inputs[k][1]] = arrays[k].size
        n_out = len(self.output_specs)
        return RequestShape(tuple(a.shape for a in arrays), (None,) * n_out, (None,) * n_out, row_bytes,
                            self.gear_dims, self.no_gears, self.no_gears, {})

    def request(self, feeds):
        arrays, rows = self.prepare(feeds)
        return arrays, self.call_outputs(rows), rows, self.shape_of(arrays)

    def device_request(self, inputs, outputs, rows, on_done, shape=None, timed=False):
        record = super().device_request(inputs, outputs, rows, on_done, timed=timed)
        record.shape = shape if shape is not None else self.shape_of(inputs)
        return record

    def batches(self, feeds, batch):
        """run_batch(): ``feeds`` maps each bytes input to a list of byte strings
        (one per request) and the other inputs to arrays of as many rows; one
        request per image (``batch`` must be 1)."""
        if batch != 1:
            raise ValueError(f"a pipeline with image nodes runs one image per request: batch_size must be 1, "
                             f"got {batch}")
        names = [name for name, _, _ in self.input_specs]
        counts = {len(feeds[n]) for n in names if n in feeds}
        if len(counts) != 1:
            raise ValueError(f"run_batch: every input needs one value per request, got lengths "
                             f"{sorted(counts)}")
        count = counts.pop()
        per_request = [{n: feeds[n][k] if i in self.byte_inputs
                        else feeds[n][k:k + 1] for i, n in enumerate(names)} for k in range(count)]

        def join(outs):
            result = {}
            for k, (name, dtype, trailing) in enumerate(self.output_specs):
                per = [out[name] for out in outs]
                result[name] = per if k in self.var_rows else (
                    np.concatenate(per) if per else np.empty((0,) + trailing, dtype))
            return result

        return per_request, join

    def trace_requests(self, feeds, requests, batch):
        """trace(): one feeds dict per request (a list, cycled, or one dict for all)."""
        if feeds is None:
            raise ValueError("trace() of a pipeline with image nodes needs feeds: one feeds dict per request "
                             "(a list, cycled) or one dict for every request")
        pool = [feeds] if isinstance(feeds, dict) else list(feeds)
        return [pool[k % len(pool)] for k in range(requests)], {}
