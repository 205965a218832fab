"""Results handed to event loops in bursts (docs/executor.md, "Serving").

``await engine.run_async(...)`` waits on an asyncio future of the caller's
loop that mirrors the call's ``concurrent.futures`` future.  With
``asyncio.wrap_future`` every finished call costs one
``loop.call_soon_threadsafe`` (a write to the loop's wake-up pipe, and a
wake-up of the loop's thread).  The engine's completer finishes requests in
bursts (every request already over, in one turn), so a :class:`LoopBridge`
per loop collects the calls finished while its loop has not looked yet and
wakes the loop once for all of them: one wake-up per loop per burst.
"""

from __future__ import annotations

import asyncio
import threading
import weakref

# one bridge per event loop; a loop that cannot be weakly referenced gets asyncio.wrap_future
_BRIDGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def wait_on_loop(future):
    """An asyncio future of the running loop that ends as ``future`` (a
    ``concurrent.futures.Future``) ends; cancelling it cancels ``future``."""
    loop = asyncio.get_running_loop()
    try:
        bridge = _BRIDGES.get(loop)
        if bridge is None:
            bridge = _BRIDGES[loop] = LoopBridge(loop)
    except TypeError:       # not weakly referenceable
        return asyncio.wrap_future(future)
    return bridge.watch(future)


class LoopBridge:
    """Hands finished ``concurrent.futures`` futures to one event loop, one
    ``call_soon_threadsafe`` per burst of them."""

    def __init__(self, loop):
        self.loop = loop
        self.lock = threading.Lock()    # guards ready and scheduled (any thread finishes futures)
        self.ready = []                 # (concurrent future, asyncio future) finished, not yet handed
        self.scheduled = False          # a hand-over is scheduled on the loop and has not run yet
        self.wakeups = 0                # hand-overs scheduled, ever (the tests read it)
        self.handed = 0                 # futures handed over, ever

    def watch(self, future):
        """The asyncio future mirroring ``future`` (call on the loop's thread)."""
        waiter = self.loop.create_future()
        waiter.add_done_callback(lambda w: future.cancel() if w.cancelled() else None)
        future.add_done_callback(lambda f: self._finished(f, waiter))
        return waiter

    def _finished(self, future, waiter):
        # any thread: the completer, usually, in the middle of a burst
        with self.lock:
            self.ready.append((future, waiter))
            if self.scheduled:
                return
            self.scheduled = True
            self.wakeups += 1
        try:
            self.loop.call_soon_threadsafe(self._hand_over)
        except RuntimeError:    # the loop is closed: nobody is waiting on it any more
            with self.lock:
                self.ready.clear()
                self.scheduled = False

    def _hand_over(self):
        # the loop's thread: every future finished since the last hand-over
        with self.lock:
            ready, self.ready = self.ready, []
            self.scheduled = False
            self.handed += len(ready)
        for future, waiter in ready:
            if waiter.done():           # its task was cancelled meanwhile
                continue
            if future.cancelled():
                waiter.cancel()
                continue
            error = future.exception(0)
            if error is None:
                waiter.set_result(future.result(0))
            else:
                waiter.set_exception(error)
