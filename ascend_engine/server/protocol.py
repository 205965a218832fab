"""KServe v2 tensors: datatype names, JSON and binary tensor data, request checks.

Shared by the HTTP and gRPC front ends (docs/serve.md, "Protocol").  Every
malformed request becomes an :class:`InferenceServerError` of status 400 that
names the tensor, what was expected and what was got; nothing here touches an
engine.
"""

from __future__ import annotations

import numpy as np

from ascend_engine.errors import InferenceServerError

# KServe v2 datatype name <-> numpy dtype (BYTES has no numpy counterpart a pipeline takes)
DATATYPES = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64), "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16), "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
}
_NAMES = {dtype: name for name, dtype in DATATYPES.items()}


def datatype_of(dtype) -> str:
    """The KServe v2 name of a numpy dtype (``float32`` -> ``FP32``)."""
    try:
        return _NAMES[np.dtype(dtype)]
    except KeyError:
        raise InferenceServerError(500, f"dtype {np.dtype(dtype)} has no KServe v2 datatype") from None


def bad_request(message: str) -> InferenceServerError:
    return InferenceServerError(400, message)


def check_shape(name: str, shape) -> tuple:
    """A request tensor's shape: a list of non-negative integers."""
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise bad_request(f"input '{name}': shape must be a list of integers >= 0, got {shape!r}")
    return tuple(shape)


def elements(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def from_json_data(name: str, datatype: str, shape: tuple, data) -> np.ndarray:
    """A tensor given as JSON ``data`` (flat or nested row-major lists)."""
    dtype = _dtype(name, datatype)
    try:
        array = np.asarray(data, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise bad_request(f"input '{name}': data is not a list of {datatype} values ({exc})") from None
    if array.dtype == object:
        raise bad_request(f"input '{name}': data must be numbers, got nested lists of uneven length")
    if array.size != elements(shape):
        raise bad_request(f"input '{name}': shape {list(shape)} holds {elements(shape)} elements, "
                          f"but data has {array.size}")
    return array.reshape(shape)


def from_bytes(name: str, datatype: str, shape: tuple, raw) -> np.ndarray:
    """A tensor given as raw little-endian bytes (the binary extension, gRPC raw contents)."""
    dtype = _dtype(name, datatype)
    expected = elements(shape) * dtype.itemsize
    if len(raw) != expected:
        raise bad_request(f"input '{name}': shape {list(shape)} of {datatype} takes {expected} bytes, "
                          f"got {len(raw)}")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape)


def _dtype(name, datatype):
    try:
        return DATATYPES[datatype]
    except (KeyError, TypeError):
        raise bad_request(f"input '{name}': unknown datatype {datatype!r} "
                          f"(KServe v2 datatypes: {', '.join(DATATYPES)})") from None


def to_bytes(array: np.ndarray) -> bytes:
    """An output's raw little-endian bytes, row-major."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def to_json_data(array: np.ndarray) -> list:
    """An output as a flat JSON list (row-major, as the protocol writes it)."""
    return array.ravel().tolist()
