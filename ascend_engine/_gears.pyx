# cython: language_level=3
"""The gear rule, C's own (csrc/chunks.c, ``ae_chunk_next``/``ae_chunk_span``),
for Python: the planner sizes buffers with it, the batcher chooses its gear
with it, and the executor runs by it -- one rule, one home.

Its own small module, built with chunks.c alone, so that the planner and the
serving code reach it without importing the executor (docs/executor.md,
"The rooms").
"""

from libc.stdint cimport uint64_t

from ascend_engine._executor_api cimport AE_GEAR_LOWER, AE_GEAR_NEAREST, AE_GEAR_UPPER, ae_chunk_next, ae_chunk_span

POLICIES = ("upper", "nearest", "lower")
cdef enum:
    MAX_GEARS = 256


cdef int _policy(str policy) except -1:
    if policy == "upper":
        return AE_GEAR_UPPER
    if policy == "lower":
        return AE_GEAR_LOWER
    if policy == "nearest":
        return AE_GEAR_NEAREST
    raise ValueError(f"gear policy must be one of {', '.join(POLICIES)}, got {policy!r}")


cdef int _gears(gears, uint64_t *g, str what) except -1:
    cdef int n = len(gears)
    if not 0 < n <= MAX_GEARS:
        raise ValueError(f"{what} needs 1 to {MAX_GEARS} gears, got {n}")
    previous = 0
    for k, v in enumerate(gears):
        if v <= previous:
            raise ValueError(f"{what} needs ascending positive gears, got {list(gears)}")
        g[k] = v
        previous = v
    return n


def policy_code(str policy):
    """The C code (executor.h, ``AE_GEAR_*``) of a gear policy name."""
    return _policy(policy)


def chunk_span(gears, str policy, uint64_t max_rows):
    """The most rows a model with ``gears`` (ascending) reaches, padding
    included, running any number of rows up to ``max_rows`` in chunks under
    ``policy`` (executor.h, ae_chunk_span: the rule the executor runs by)."""
    cdef uint64_t g[MAX_GEARS]
    cdef int n = _gears(gears, g, "chunk_span")
    return int(ae_chunk_span(g, n, _policy(policy), max_rows))


def next_chunk(gears, str policy, uint64_t rows):
    """``(gear, rows taken)`` of the first execution a model with ``gears``
    runs for ``rows`` (> 0) rows under ``policy`` (ae_chunk_next).  The
    batcher's choice of a device request between two gears is this rule's
    first chunk (serving.py, queue_policy.choose_batch)."""
    cdef uint64_t g[MAX_GEARS]
    cdef uint64_t gear = 0, take = 0
    cdef int n = _gears(gears, g, "next_chunk")
    if rows == 0:
        raise ValueError("next_chunk needs at least one row")
    cdef int code = _policy(policy)
    ae_chunk_next(g, n, code, rows, &gear, &take)
    return int(gear), int(take)


def chunk_plan(gears, str policy, uint64_t rows):
    """[(gear, rows taken)] of the executions a model with ``gears`` runs for
    ``rows`` rows after a host step (the executor's own rule, ae_chunk_next)."""
    cdef uint64_t g[MAX_GEARS]
    cdef uint64_t gear, take, left = rows
    cdef int n = _gears(gears, g, "chunk_plan")
    cdef int code = _policy(policy)
    chunks = []
    while left > 0:
        ae_chunk_next(g, n, code, left, &gear, &take)
        chunks.append((int(gear), int(take)))
        left -= take
    return chunks
