"""Data parallelism: one engine per device, driven together.

``pipe.compile_replicas([0, 1, 2, 3], depth=8)`` compiles the pipeline once
per device.  ``run_batch`` splits the rows into one contiguous share per
engine and runs the shares at the same time from one thread each (every
engine releases the GIL while it works), then concatenates the outputs in
order; ``run``, ``submit``, ``run_async`` and ``trace`` send each request to
the next engine in turn; ``run_many`` keeps every engine's ``depth`` in
flight.  The calling surface is the Engine's (docs/executor.md, "Data
parallelism"); the Ray handle (ray.py) offers the same.
"""

from __future__ import annotations

import collections
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ascend_engine._checks import positive_int

# ---- sharing one run_batch over several engines (Replicas here, RayReplicas in ray.py) --------


def batch_rows(feeds) -> int:
    """The rows every input of a ``run_batch`` call carries (the same for all of them)."""
    if not isinstance(feeds, dict) or not feeds:
        raise TypeError(f"feeds must be a non-empty dict of input name -> array, got {feeds!r:.80}")
    rows = {len(np.asarray(a)) for a in feeds.values()}
    if len(rows) != 1:
        raise ValueError(f"inputs have different row counts: {sorted(rows)}")
    total = rows.pop()
    if total == 0:
        raise ValueError("the inputs have no rows")
    return total


def share_rows(total, batch, shares) -> list[tuple[int, int]]:
    """Contiguous ``(lo, hi)`` row ranges, one per share (none empty), in whole requests of ``batch``."""
    requests = -(-total // batch)
    per_share = -(-requests // shares)
    bounds = [min(total, k * per_share * batch) for k in range(shares + 1)]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]


def join_shares(parts) -> dict:
    """The outputs of several ``run_batch`` shares, in order, as ``Engine.run_batch`` returns them.

    An output is an array along the rows, or, where a host step sets the rows
    (``rows="any"``) or the shape, a list with one array per request: arrays
    are concatenated, lists are chained (each request keeps its own array).
    """
    return {name: [a for p in parts for a in p[name]] if isinstance(parts[0][name], list)
            else np.concatenate([p[name] for p in parts]) for name in parts[0]}


def in_order(submit, feeds_iterable, window):
    """run_many over replicas: yield the outputs of ``submit(feeds)`` for each
    feeds dict in order, keeping ``window`` requests in flight.  An abandoned
    generator cancels what has not started."""
    pending = collections.deque()
    try:
        for feeds in feeds_iterable:
            if len(pending) >= window:
                yield pending.popleft().result()
            pending.append(submit(feeds))
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def refuse_times(times):
    """run_many(times=) times one engine's executor: replicas refuse it, saying so."""
    if times is not None:
        raise TypeError("run_many(times=) records one engine's executor times; replicas run requests on "
                        "several engines: time one engine's run_many instead")


class Replicas:
    """Engines compiled from one pipeline on several devices, with the
    Engine's calling surface: run, submit, run_async, run_batch, run_many,
    trace, stats, memory, close."""

    def __init__(self, engines):
        self.engines = list(engines)
        self._next = itertools.count()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=len(self.engines), thread_name_prefix="ae-replica")

    def __repr__(self) -> str:
        return f"<ascend_engine.Replicas devices={self.devices}>"

    @property
    def devices(self) -> list[int]:
        """Device id of each engine."""
        return [e.plan.device for e in self.engines]

    def _turn(self):
        """The next engine in turn."""
        with self._lock:
            return self.engines[next(self._next) % len(self.engines)]

    def run(self, feeds, *, timeout=None) -> dict:
        """Run one request on the next engine in turn (``Engine.run``)."""
        return self._turn().run(feeds, timeout=timeout)

    def submit(self, feeds, *, timeout=None, block=True, priority=None):
        """Admit one request on the next engine in turn; its Future (``Engine.submit``)."""
        return self._turn().submit(feeds, timeout=timeout, block=block, priority=priority)

    async def run_async(self, feeds, *, timeout=None, priority=None, wait_for_room=True) -> dict:
        """``await replicas.run_async(feeds)`` on the next engine in turn (``Engine.run_async``)."""
        return await self._turn().run_async(feeds, timeout=timeout, priority=priority,
                                            wait_for_room=wait_for_room)

    def run_many(self, feeds_iterable, *, times=None):
        """Yield the outputs of each feeds dict in order, the requests spread
        over the engines in turn, every engine's ``depth`` in flight (as
        ``Engine.run_many``; ``times`` is one engine's and refused here)."""
        refuse_times(times)
        return in_order(self.submit, feeds_iterable, sum(e.depth for e in self.engines))

    def trace(self, path, requests=16, feeds=None, batch_size=None) -> dict:
        """``Engine.trace`` on the next engine in turn (one engine's timeline);
        the summary names its ``device``."""
        engine = self._turn()
        return {**engine.trace(path, requests, feeds, batch_size), "device": engine.plan.device}

    def run_batch(self, feeds, batch_size=None) -> dict:
        """Split the rows across the engines (in whole requests of ``batch_size``
        rows), run the shares concurrently, and return the outputs in order."""
        total = batch_rows(feeds)
        batch = self.engines[0].max_batch if batch_size is None else positive_int(batch_size, "batch_size")
        futures = [
            self._pool.submit(e.run_batch, {n: np.asarray(a)[lo:hi] for n, a in feeds.items()}, batch)
            for e, (lo, hi) in zip(self.engines, share_rows(total, batch, len(self.engines)), strict=False)
        ]
        return join_shares([f.result() for f in futures])

    def stats(self, percentiles: bool = True) -> dict:
        """Each engine's stats, by device (``percentiles`` as in Engine.stats)."""
        return {e.plan.device: e.stats(percentiles) for e in self.engines}

    def memory(self) -> dict:
        """Each engine's memory report, by device."""
        return {e.plan.device: e.memory() for e in self.engines}

    def close(self) -> None:
        """Close every engine. Idempotent."""
        for e in self.engines:
            e.close()
        self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
