"""The gear rule for rows a host step produced (chunks.c): ae_chunk_span, the
buffer size the planner derives from it, against a transcription of its
first, row-by-row form; and a host step with a million rows compiling."""

import numpy as np
import pytest
from ascend_engine._gears import chunk_plan, chunk_span
from helpers.pipelines import dense

import ascend_engine as ae

POLICIES = ("upper", "lower", "nearest")
BIG = 1 << 20


def chunk_next(gears, policy, left):
    """(gear, take) of the next chunk for `left` rows: ae_chunk_next, transcribed."""
    largest = gears[-1]
    if left >= largest:
        return largest, largest
    upper, lower = largest, 0
    for g in gears:
        if left <= g < upper:
            upper = g
        if lower < g <= left:
            lower = g
    if lower and (policy == "lower" or (policy == "nearest" and left - lower < upper - left)):
        return lower, lower
    return upper, left


def quadratic_spans(gears, policy, max_rows):
    """[ae_chunk_span(gears, policy, m) for m in 0..max_rows] by the rule as it was
    first written: chunk every row count up to max_rows and keep the furthest
    row any chunk reaches (max_rows at least).  Its loop passes every smaller
    max_rows on the way, so one pass gives them all."""
    spans = [0]
    span = 0
    for rows in range(1, max_rows + 1):
        span = max(span, rows)
        start = 0
        while start < rows:
            gear, take = chunk_next(gears, policy, rows - start)
            span = max(span, start + gear)
            start += take
        spans.append(span)
    return spans


def random_gear_sets(count, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 5))
        top = int(rng.choice([4, 8, 16, 40]))
        yield tuple(sorted({int(g) for g in rng.integers(1, top + 1, size=n)}))


def test_the_transcription_chunks_as_the_executor_does():
    for gears in list(random_gear_sets(40, seed=1)) + [(1, 2, 4, 8), (3, 5, 7), (4,)]:
        for policy in POLICIES:
            for rows in range(0, 3 * gears[-1] + 2):
                chunks, left = [], rows
                while left:
                    chunks.append(chunk_next(gears, policy, left))
                    left -= chunks[-1][1]
                assert chunks == chunk_plan(gears, policy, rows), (gears, policy, rows)


@pytest.mark.parametrize("policy", POLICIES)
def test_span_equals_the_row_by_row_rule(policy):
    fixed = [(1,), (4,), (3, 5), (3, 5, 7), (1, 2, 4, 8), (5, 6, 10), (2, 3), (7, 8, 9), (1, 16), (4, 7, 100)]
    rng = np.random.default_rng(len(policy))
    for gears in fixed + list(random_gear_sets(120, seed=len(policy))):
        max_rows = int(rng.integers(1, 301))
        expected = quadratic_spans(gears, policy, max_rows)
        got = [chunk_span(gears, policy, m) for m in range(max_rows + 1)]
        assert got == expected, (gears, policy, max_rows)


@pytest.mark.parametrize("gears", [(1, 2, 4, 8, 16), (3, 5, 7), (4, 7, 100), (6, 9, 10)])
@pytest.mark.parametrize("policy", POLICIES)
def test_span_of_a_million_rows(gears, policy):
    # Past one chunk of the largest gear G the span only grows with max_rows:
    # what it adds to max_rows depends on max_rows % G alone.  So the row-by-row
    # rule at a small max_rows of the same remainder gives the answer, which
    # the call, linear now, returns at once (it took minutes when quadratic).
    largest = gears[-1]
    small = 2 * largest + BIG % largest
    padding = quadratic_spans(gears, policy, small)[small] - small
    assert chunk_span(gears, policy, BIG) == BIG + padding


def test_span_of_a_million_rows_in_closed_form():
    # (1, 2, 4, 8, 16): 1 << 20 is a multiple of 16, and fewer rows end in chunks of at most 16
    # starting at or after their last multiple of 16: no chunk passes 1 << 20.
    for policy in POLICIES:
        assert chunk_span((1, 2, 4, 8, 16), policy, BIG) == BIG
    # (3, 5, 7): 1 << 20 = 149796 x 7 + 4.  Upper pads the 4 rows left to 5; nearest too (5 is as
    # near as 3); lower runs 3 and pads the last row to 3: 3 + 3 = 6.
    assert chunk_span((3, 5, 7), "upper", BIG) == 149796 * 7 + 5
    assert chunk_span((3, 5, 7), "nearest", BIG) == 149796 * 7 + 5
    assert chunk_span((3, 5, 7), "lower", BIG) == 149796 * 7 + 6
    # upper, in general: whole chunks of the largest gear, then the smallest gear holding the rest
    for gears in random_gear_sets(50, seed=7):
        rest = BIG % gears[-1]
        tail = min((g for g in gears if g >= rest), default=0) if rest else 0
        assert chunk_span(gears, "upper", BIG) == BIG - rest + tail


def test_a_host_step_of_a_million_rows_compiles_and_runs(build):
    # Sizing the buffers after a step with max_rows = 1 << 20 chunks nothing row by row any more.
    first = build(dense(1, width_out=2), "to2")
    second = build(dense(2, width_in=2, width_out=2), "of2", batch_sizes=(1, 2, 4, 8))
    pipe = ae.Pipeline()
    x = pipe.input("x", "float32", (-1, 16))
    h = pipe.model(first.path, x, name="first")
    repeated = pipe.host(lambda t: np.repeat(t, 3, axis=0), h, outputs=[("r", "float32", (-1, 2))],
                         rows="any", max_rows=BIG, name="repeat")
    pipe.output("y", pipe.model(second.path, repeated, name="second"))
    x_in = np.random.default_rng(3).standard_normal((5, 16)).astype(np.float32)
    with pipe.compile(depth=1, gear_policy="lower") as engine:
        out = engine.run({"x": x_in})
        # the step's output holds its max_rows rows of 2 float32s, and the model after it the span
        assert engine.memory()["per_node_bytes"]["repeat"] >= BIG * 8
        assert engine.memory()["per_node_bytes"]["second"] >= chunk_span((1, 2, 4, 8), "lower", BIG) * 8
    expected = second.ref(x=np.repeat(first.ref(x=x_in), 3, axis=0))
    np.testing.assert_allclose(out["y"], expected, rtol=1e-5, atol=1e-5)
