"""Where a thread is, and SIGINT held inside the serving's critical sections
(docs/executor.md, "Serving"; used by ascend_engine/serving.py and the
device queue in ascend_engine/_executor.pyx).

Python runs a signal handler on the main thread between any two bytecodes, so
a Ctrl-C could land inside a critical section and leave a lock held or a
queue half updated.  On the main thread every critical section runs between
:func:`hold_signals` and :func:`release_signals`: SIGINT is noted meanwhile
and raised again once the section is over, outside every lock.  :data:`THREAD`
also says whose futures a thread is resolving and which Python host step it
runs, so that calls that would wait for themselves are refused.
"""

from __future__ import annotations

import _signal  # signal's C functions: signal.getsignal's enum lookup costs microseconds
import signal
import threading

SIGNAL_SLICE = 0.02  # seconds a main-thread wait holds signals before it looks for a Ctrl-C
MAIN_THREAD = threading.main_thread().ident
_SIGINT = int(signal.SIGINT)


# ---- where a thread is ---------------------------------------------------------------

class _ThreadState(threading.local):
    held = 0           # depth of the serving critical sections this thread is inside
    resolving = None   # the Server whose futures this thread is resolving (their callbacks run)
    step = None        # the Python host step running on this thread (ascend_engine/_lowering.pyx)
    # the completer's list of futures to resolve once it has let go of the engine (see settle())
    deferred = None


THREAD = _ThreadState()


def settle(end, value):
    """Resolve a future: ``end`` is its ``set_result`` or ``set_exception``.

    On the completer (``THREAD.deferred`` set) the future is resolved only
    once the completer has let go of the engine's lock and, when nothing
    more is in flight, of the engine itself: a caller that wakes and drops
    the engine then drops its last reference, and the engine is released
    at once, on the caller's own thread (docs/executor.md, "Serving")."""
    deferred = THREAD.deferred
    if deferred is None:
        end(value)
    else:
        deferred.append((end, value))


def resolving_for(server):
    """Whether this thread is running done-callbacks of ``server``'s futures."""
    return THREAD.resolving is server


# ---- signals held inside critical sections (the main thread) --------------------------

class _HeldSigint:
    """Stands in for the program's SIGINT handler while the main thread is
    inside a critical section: it only notes the signal."""

    __slots__ = ("original", "arrived")

    def __init__(self, original):
        self.original = original
        self.arrived = False

    def __call__(self, signum, frame):
        self.arrived = True


def hold_signals():
    """Enter a critical section.  On the main thread the program's SIGINT
    handler is set aside (when it is Python code) until the outermost
    :func:`release_signals`; other threads never run signal handlers and
    only count the depth."""
    here = THREAD
    if here.held == 0 and threading.get_ident() == MAIN_THREAD:
        handler = _signal.getsignal(_SIGINT)
        if callable(handler) and not isinstance(handler, _HeldSigint):
            _signal.signal(_SIGINT, _HeldSigint(handler))
    here.held += 1


def release_signals():
    """Leave a critical section; leaving the outermost one on the main thread
    puts the program's handler back and raises a SIGINT that arrived
    meanwhile again (its handler runs now, outside every lock)."""
    here = THREAD
    here.held -= 1
    if here.held == 0 and threading.get_ident() == MAIN_THREAD:
        held = _signal.getsignal(_SIGINT)
        if isinstance(held, _HeldSigint):
            _signal.signal(_SIGINT, held.original)
            if held.arrived:
                signal.raise_signal(_SIGINT)


def signal_arrived():
    """A SIGINT is waiting for the critical section to end (main thread)."""
    held = _signal.getsignal(_SIGINT)
    return isinstance(held, _HeldSigint) and held.arrived
