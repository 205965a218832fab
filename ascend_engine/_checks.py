"""Argument checks shared by the Python API (one home for each rule).

Each names the argument, says what is allowed and shows what was given,
instead of letting an OverflowError or a silent truncation through.
"""

from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np

GEAR_POLICIES = ("upper", "nearest", "lower")
MAX_DEPTH = 4096                 # request slots; the event budget runs out long before
MAX_TIMEOUT_MS = 2**31 - 1       # AscendCL takes int32 milliseconds
MAX_QUEUE = 1 << 20              # requests waiting for a slot (compile(max_queue=))

# Bounded: a value shown in an error message may be huge (a list of feeds dicts of arrays) or
# self-referencing (YAML aliases make a few hundred bytes into billions of elements).
SHORT = reprlib.Repr()
SHORT.maxlevel = 2
SHORT.maxstring = 30
SHORT.maxother = 30
for _attr in ("maxlist", "maxtuple", "maxdict", "maxset"):
    setattr(SHORT, _attr, 4)


def shown(value) -> str:
    """``value`` as an error message shows it: its repr, at most 40 characters."""
    text = SHORT.repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def positive_int(value, what: str, limit: int = 2**62, error: type[Exception] = ValueError) -> int:
    """``value`` as an int in [1, limit]; a float, a bool or a string is refused, not truncated."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(f"{what} must be an integer, got {shown(value)} ({type(value).__name__})")
    value = int(value)
    if not 1 <= value <= limit:
        raise error(f"{what} must be between 1 and {limit}, got {value}")
    return value


def byte_count(value, what: str, limit: int = 2**62) -> int:
    """A number of bytes to allocate, in [1, limit]: TypeError for anything but an
    integer (a bool included), ValueError outside the range (not an OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be a number of bytes (an integer), got {shown(value)} "
                        f"({type(value).__name__})")
    return positive_int(value, what, limit)


def device_id(value, what: str = "device", error: type[Exception] = ValueError) -> int:
    """A device id: an int from 0 (whether the device exists is AscendCL's to say)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(f"{what} must be a device id (an integer), got {shown(value)} ({type(value).__name__})")
    if not 0 <= int(value) < 1024:
        raise error(f"{what} must be a device id between 0 and 1023, got {value}")
    return int(value)


def delay_ms(value, what: str, error: type[Exception] = ValueError) -> float:
    """A delay in milliseconds: a finite number from 0 to one minute."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) \
            or not 0 <= float(value) <= 60000:
        raise error(f"{what} must be a number of milliseconds from 0 to 60000, got {shown(value)}")
    return float(value)


def timeout_ms(value, what: str = "timeout", error: type[Exception] = ValueError) -> int:
    """Seconds (or None: wait forever) as the int32 milliseconds AscendCL takes (-1 for forever)."""
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise error(f"{what} must be a number of seconds or None (wait forever), got {shown(value)} "
                    f"({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise error(f"{what} must be a finite number of seconds, or None to wait forever, got {value}")
    if value < 0.001:
        raise error(f"{what} must be at least 0.001 s (waits are counted in whole milliseconds), got {value} "
                    "(use None to wait forever)")
    if value * 1000 > MAX_TIMEOUT_MS:
        raise error(f"{what} must be at most {MAX_TIMEOUT_MS // 1000} s, got {value}")
    return int(round(value * 1000))


# bool, signed and unsigned integers, floats: the dtypes whose bytes mean the same on the device.
# An object array holds PyObject pointers: copied as raw bytes they would lose their references.
TENSOR_DTYPE_KINDS = "biuf"


def is_tensor_dtype(dt: np.dtype) -> bool:
    """Whether a tensor of this dtype may be copied to or from a device as raw bytes."""
    return dt.kind in TENSOR_DTYPE_KINDS and not dt.hasobject


def tensor_dtype(value, what: str, error: type[Exception] = ValueError) -> np.dtype:
    """A tensor's dtype: numeric or bool (the one rule for every boundary that copies bytes)."""
    try:
        dt = np.dtype(value)
    except (TypeError, ValueError):
        raise error(f"{what}: expected a dtype such as 'float32' or 'int8', got {shown(value)}") from None
    if not is_tensor_dtype(dt):
        raise error(f"{what}: expected a numeric or bool dtype, got {dt} (its bytes are copied to and from "
                    "the device as they are)")
    return dt


def tensor_array(a, what: str, error: type[Exception] = TypeError):
    """``a`` if it is a numpy array of a numeric or bool dtype (see :func:`tensor_dtype`)."""
    if not isinstance(a, np.ndarray):
        raise error(f"{what}: expected a numpy array, got {type(a).__name__}")
    if not is_tensor_dtype(a.dtype):
        raise error(f"{what}: expected an array of a numeric or bool dtype, got {a.dtype} (its bytes are "
                    "copied to and from the device as they are)")
    return a


def times_array(a, requests: int):
    """``a`` if it can take ``run_batch(times=)``: a writable, C-contiguous
    int64 array of shape ``(requests, 2)`` (the executor writes into it with
    the GIL released, so a copy would be no use: TypeError for the wrong kind
    of array, ValueError for the wrong shape)."""
    what = "run_batch(times=)"
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(a).__name__}")
    if a.dtype != np.int64:
        raise TypeError(f"{what}: expected dtype int64 (nanoseconds), got {a.dtype}")
    if a.shape != (requests, 2):
        raise ValueError(f"{what}: expected shape ({requests}, 2), one row per request of batch_size rows, "
                         f"got {a.shape}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{what}: expected a C-contiguous array, got one with strides {a.strides}")
    if not a.flags.writeable:
        raise ValueError(f"{what}: expected a writable array, got a read-only one")
    return a


MAX_DIM = 2**31 - 1              # AscendCL dims are int64, but no device holds more per axis
MAX_ROW_ITEMS = 2**40            # items in one batch row


def shape(value, what: str, error: type[Exception] = ValueError, variable: bool = False) -> tuple:
    """A tensor shape: positive ints, with the batch dimension first as -1 (or None).

    ``variable=True`` also takes -1 (or None) in later dimensions (a shape
    that changes per request, e.g. (1, 3, -1, -1) for images of any size).
    Floats are refused rather than truncated, and sizes no device could hold
    are refused before anything overflows.
    """
    try:
        dims = list(value)
    except TypeError:
        raise error(f"{what}: shape must be a sequence of dimensions such as (-1, 64), "
                    f"got {shown(value)}") from None
    if not dims:
        raise error(f"{what}: shape must have at least one dimension (the batch), got {tuple(dims)}")
    out = []
    for k, d in enumerate(dims):
        if d is None:
            d = -1   # None is the batch, as -1 is (docs/sim-graph.md)
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise error(f"{what}: dimension {k} must be an integer, got {shown(d)} ({type(d).__name__})")
        d = int(d)
        if d == -1 and k > 0 and not variable or d == 0 or d < -1 or d > MAX_DIM:
            where = "in any dimension" if variable else "only first"
            raise error(f"{what}: shape must be (batch or N, d1, ...) with dimensions from 1 to "
                        f"{MAX_DIM} and -1 (or None) {where}, got {tuple(dims)}")
        out.append(d)
    items = math.prod(d for d in out[1:] if d != -1)
    if items > MAX_ROW_ITEMS:
        raise error(f"{what}: one row of shape {tuple(out)} holds {items} items, more than {MAX_ROW_ITEMS}")
    return tuple(out)
