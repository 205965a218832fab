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
# BYTES: one byte string per element (a JPEG for a pipeline's bytes input), numpy object arrays of bytes
BYTES = "BYTES"
BYTES_DTYPE = np.dtype(object)
_NAMES[BYTES_DTYPE] = BYTES


def datatype_of(dtype) -> str:
    """The KServe v2 name of a numpy dtype (``float32`` -> ``FP32``; ``object``: BYTES)."""
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
    if datatype == BYTES:
        return _bytes_elements(name, shape, data)
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
    """A tensor given as raw little-endian bytes (the binary extension, gRPC raw contents); BYTES
    elements each come as a 4-byte little-endian length and that many bytes."""
    if datatype == BYTES:
        return _bytes_elements(name, shape, _length_prefixed(name, raw))
    dtype = _dtype(name, datatype)
    expected = elements(shape) * dtype.itemsize
    if len(raw) != expected:
        raise bad_request(f"input '{name}': shape {list(shape)} of {datatype} takes {expected} bytes, "
                          f"got {len(raw)}")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape)


def _length_prefixed(name: str, raw) -> list:
    """The byte strings of a serialized BYTES tensor."""
    raw = memoryview(raw).cast("B")
    values, at = [], 0
    while at < len(raw):
        if at + 4 > len(raw):
            raise bad_request(f"input '{name}': BYTES element {len(values)} starts at byte {at} with "
                              f"{len(raw) - at} bytes left, too few for its 4-byte length")
        size = int.from_bytes(raw[at:at + 4], "little")
        if at + 4 + size > len(raw):
            raise bad_request(f"input '{name}': BYTES element {len(values)} says {size} bytes, but "
                              f"{len(raw) - at - 4} are left")
        values.append(bytes(raw[at + 4:at + 4 + size]))
        at += 4 + size
    return values


def _bytes_elements(name: str, shape: tuple, values) -> np.ndarray:
    """An object array of byte strings (JSON strings are UTF-8 encoded), checked against ``shape``."""
    flat = []

    def walk(v):
        if isinstance(v, list):
            for item in v:
                walk(item)
        elif isinstance(v, str):
            flat.append(v.encode("utf-8"))
        elif isinstance(v, (bytes, bytearray)):
            flat.append(bytes(v))
        else:
            raise bad_request(f"input '{name}': BYTES data must be strings, got {type(v).__name__}")

    walk(values if isinstance(values, list) else [values])
    if len(flat) != elements(shape):
        raise bad_request(f"input '{name}': shape {list(shape)} holds {elements(shape)} BYTES elements, "
                          f"but {len(flat)} were given")
    array = np.empty(len(flat), dtype=object)
    array[:] = flat
    return array.reshape(shape)


def _dtype(name, datatype):
    try:
        return DATATYPES[datatype]
    except (KeyError, TypeError):
        raise bad_request(f"input '{name}': unknown datatype {datatype!r} "
                          f"(KServe v2 datatypes: {', '.join(DATATYPES)}, {BYTES})") from None


def to_bytes(array: np.ndarray) -> bytes:
    """An output's raw little-endian bytes, row-major."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def to_json_data(array: np.ndarray) -> list:
    """An output as a flat JSON list (row-major, as the protocol writes it)."""
    return array.ravel().tolist()
