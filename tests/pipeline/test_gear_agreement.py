"""One gear rule: the dynamic batcher's choice of a device request
(queue_policy.choose_batch) and the executor's chunking of rows
(chunks.c, ae_chunk_next through ascend_engine._gears) agree, for every gear
table, policy and queue."""

from ascend_engine._gears import POLICIES, chunk_plan, next_chunk
from hypothesis import given, settings
from hypothesis import strategies as st

from ascend_engine import queue_policy, serving_calls

gear_tables = st.lists(st.integers(1, 48), min_size=1, max_size=6, unique=True).map(sorted)


def queue(rows):
    class Caller:
        pass

    return [serving_calls.Piece(Caller(), 0, r) for r in rows]


def fitting(rows, max_batch):
    """The rows of the longest prefix of the queue that fits in max_batch."""
    total = 0
    for r in rows:
        if total + r > max_batch:
            break
        total += r
    return total


@settings(max_examples=300, deadline=None)
@given(gears=gear_tables, policy=st.sampled_from(POLICIES), waiting=st.integers(1, 100))
def test_the_batcher_sends_the_rows_the_executor_runs_first(gears, policy, waiting):
    # one row per caller: the batcher can take any number of rows
    max_batch = gears[-1]
    count = queue_policy.choose_batch(queue([1] * waiting), max_batch, gears, policy, waited_out=True)
    total = min(waiting, max_batch)
    assert count == chunk_plan(gears, policy, total)[0][1]
    assert (0 < count <= total)


@settings(max_examples=300, deadline=None)
@given(gears=gear_tables, policy=st.sampled_from(POLICIES),
       rows=st.lists(st.integers(1, 12), min_size=1, max_size=12))
def test_the_batcher_takes_whole_calls_up_to_the_executors_first_chunk(gears, policy, rows):
    max_batch = gears[-1]
    total = fitting(rows, max_batch)
    count = queue_policy.choose_batch(queue(rows), max_batch, gears, policy, waited_out=True)
    if total == 0:                      # the first call alone is above max_batch (split elsewhere)
        assert count == 0
        return
    gear, take = next_chunk(gears, policy, total)
    taken = sum(rows[:count])
    if take >= total:                   # a gear holds every row: all of them go
        assert taken == total
    else:                               # the gear below: whole calls up to it, at least one
        assert count >= 1
        assert taken <= take or count == 1
        assert count == 1 or sum(rows[:count + 1]) > take
    assert (gear, take) == chunk_plan(gears, policy, total)[0]
