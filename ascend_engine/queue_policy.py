"""Triton's queue policy for the admission queue: priority levels and what a queue timeout does.

The serving queue (ascend_engine/serving.py) keeps its pieces in a
:class:`LevelQueue`: one first-in first-out line per priority level, level 1
served first, and after the last level a line for the calls whose queue
timeout passed under ``timeout_action="delay"``: they still run, after
everything that did not time out (docs/executor.md, "Queue policy").  Within a
line, pieces keep their arrival order; the batcher sees the lines one after
the other, highest priority first, as one queue.  :func:`choose_batch` is
the batcher's rule for how much of that queue forms the next device request
(gears, a delay, Triton's preferred batch sizes).
"""

from __future__ import annotations

import collections
import itertools

from ascend_engine._gears import next_chunk
from ascend_engine.errors import EngineError

TIMEOUT_ACTIONS = ("reject", "delay")
MAX_PRIORITY_LEVELS = 64


def level_index(priority, levels: int, default: int) -> int:
    """The line (0 = the highest priority) of a request's ``priority``: 1 to ``levels``,
    or None / 0 for the engine's default priority."""
    if priority is None or priority == 0:
        return default - 1
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= levels:
        raise EngineError(f"priority must be an integer from 1 (the highest) to {levels} (the engine's "
                          f"priority_levels), or None/0 for the default ({default}); got {priority!r}")
    return priority - 1


class LevelQueue:
    """Pieces in one ordered line per priority level, plus the delayed line after the last.

    It offers what serving.Server does with an ordered dict of pieces (set,
    pop, pop the front, iterate from the front, length) at O(levels) per
    operation; a piece's line is its call's ``level``, or the delayed line once
    its call is ``delayed``."""

    __slots__ = ("lines",)

    def __init__(self, levels: int):
        self.lines = [collections.OrderedDict() for _ in range(levels + 1)]

    def _line(self, piece):
        return self.lines[-1] if piece.call.delayed else self.lines[piece.call.level]

    def __setitem__(self, piece, value):
        self._line(piece)[piece] = value

    def pop(self, piece, default):
        return self._line(piece).pop(piece, default)

    def popitem(self, last=False):
        """The front piece (highest priority, oldest first): (piece, value)."""
        for line in self.lines:
            if line:
                return line.popitem(last=False)
        raise KeyError("popitem(): the queue is empty")

    def delay(self, call, pieces):
        """Move a timed-out call's queued pieces to the delayed line (its order there: when it timed out)."""
        moved = [p for p in pieces if self.lines[call.level].pop(p, self) is not self]
        call.delayed = True
        for piece in moved:
            self.lines[-1][piece] = None

    def __iter__(self):
        return itertools.chain.from_iterable(self.lines)

    def __len__(self):
        return sum(len(line) for line in self.lines)

    def __bool__(self):
        return any(self.lines)

    def clear(self):
        for line in self.lines:
            line.clear()


def batch_ready(queue, queued_rows: int, max_batch: int, preferred) -> bool:
    """Whether the batcher may send a batch now: a full one is queued, or the queue's first pieces
    make exactly a preferred size (``preferred``: a set of row counts)."""
    if queued_rows >= max_batch:
        return True
    if not preferred:
        return False
    total = 0
    for piece in queue:
        total += piece.rows
        if total in preferred:
            return True
        if total > max_batch:
            return False
    return False


class PolicyFigures:
    """What ``stats()["serving"]["priorities"]`` reports, per priority line: queue and compute time
    per call (``samples()`` makes one figure, serving_calls.Samples), rejections and delays."""

    def __init__(self, levels: int, samples):
        self.queue_ms = [samples() for _ in range(levels)]
        self.compute_ms = [samples() for _ in range(levels)]
        self.rejected = collections.Counter()
        self.delayed = collections.Counter()

    def summary(self, percentiles: bool = True) -> dict:
        return {"rejected": sum(self.rejected.values()), "delayed": sum(self.delayed.values()),
                "priorities": {k + 1: {"queue_ms": self.queue_ms[k].summary(percentiles),
                                       "compute_ms": self.compute_ms[k].summary(percentiles),
                                       "rejected": self.rejected[k], "delayed": self.delayed[k]}
                               for k in range(len(self.queue_ms))}}


def choose_batch(pieces, max_batch, gears, policy, waited_out, preferred=()):
    """How many queued pieces (from the front) form the next device request.

    ``pieces`` is the queue (iterable from the front, with a length); a
    batch is the longest prefix whose rows fit in ``max_batch``.  A batch
    that is not full is taken only once the oldest piece has waited
    ``max_delay_ms`` (``waited_out``); otherwise 0.  Between two gears the
    ``policy`` decides, by the executor's own rule (``_gears.next_chunk``,
    the first chunk ae_chunk_next would run): "upper" runs every row at the next gear up, "lower"
    runs the rows of the gear below now and keeps the rest for the next
    batch, "nearest" takes whichever gear is closer (upper on a tie).
    ``preferred`` (Triton's preferred batch sizes): a prefix of exactly one
    of those rows is sent at once too, the largest such prefix, without
    waiting.  Returns the number of pieces to take (at least 1 when waited out).
    """
    total, count, best = 0, 0, 0
    for piece in pieces:
        if total + piece.rows > max_batch:
            break
        total += piece.rows
        count += 1
        if total in preferred:
            best = count
    if count == 0:
        return 0
    full = total == max_batch or count < len(pieces)
    if not full and not waited_out:
        return best
    # the gear: the executor's own rule (chunks.c, ae_chunk_next), whose first
    # chunk of ``total`` rows is the device request it would run
    _gear, take = next_chunk(gears, policy, total)
    if take >= total:
        return count                      # every row, at a gear holding them
    # the lower gear now: whole pieces up to it (at least the first one)
    rows, keep = 0, 0
    for piece in itertools.islice(pieces, count):
        if rows + piece.rows > take:
            break
        rows += piece.rows
        keep += 1
    return max(keep, 1)
