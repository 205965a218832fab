"""The compile options: one table read by ``Pipeline.compile``, spec files and the command line.

Each :class:`CompileOption` holds an option's name, default, kind, limits and
help.  The three front ends each word their errors their own way (a
``PipelineError`` naming the argument, a ``SpecError`` naming the key path, an
argparse usage error naming the flag), but they all read the kind and limits
from here, so a limit changed here changes everywhere (docs/pipeline-spec.md,
"compile"; docs/cli.md).

Kinds:

- ``int``: an integer in ``[minimum, maximum]``;
- ``choice``: one of ``choices``;
- ``bool``: true or false;
- ``seconds``: a number of seconds or None (wait forever), as :func:`timeout_ms` takes;
- ``ms``: milliseconds from 0 to ``maximum``, as :func:`delay_ms` takes;
- ``workers``: threads per host step, an int or ``{step name: int}``;
- ``sizes``: batch sizes, a list of distinct integers from 1 to ``maximum`` (sorted when checked).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ascend_engine._checks import GEAR_POLICIES, MAX_DEPTH, MAX_QUEUE, MAX_TIMEOUT_MS, delay_ms, positive_int
from ascend_engine._checks import timeout_ms as check_timeout
from ascend_engine.queue_policy import MAX_PRIORITY_LEVELS, TIMEOUT_ACTIONS

MAX_HOST_WORKERS = 64            # threads per host step
MAX_DELAY_MS = 60000             # the batcher's longest wait (one minute)
STREAM_MODES = ("per-model", "single")
WAIT_MODES = ("block", "spin")


@dataclass(frozen=True)
class CompileOption:
    """One option of ``Pipeline.compile``: what it takes and what it does."""

    name: str
    kind: str                     # int, choice, bool, seconds, ms, workers (see the module docstring)
    default: Any
    help: str
    what: str = ""                # how a spec error names the value ("a depth")
    minimum: int | None = None
    maximum: int | float | None = None
    choices: tuple = ()
    in_spec: bool = True          # settable in a spec's compile section

    @property
    def flag(self) -> str:
        """The command line's spelling: ``--max-delay-ms``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value, error: type[Exception] = ValueError, what: str | None = None):
        """``value`` checked and normalized for ``Pipeline.plan``; raises ``error`` naming ``what``."""
        what = what or self.name
        if self.kind == "int":
            return positive_int(value, what, self.maximum, error=error)
        if self.kind == "choice":
            if value not in self.choices:
                options = (" or ".join(repr(c) for c in self.choices) if len(self.choices) == 2
                           else "one of " + ", ".join(self.choices))
                raise error(f"{what} must be {options}, got {value!r}")
            return value
        if self.kind == "bool":
            return bool(value)
        if self.kind == "seconds":
            return check_timeout(value, what, error=error)
        if self.kind == "ms":
            return delay_ms(value, what, error=error)
        if self.kind == "sizes":
            return batch_sizes(value, what, self.maximum, error)
        raise TypeError(f"option {self.name!r}: kind {self.kind!r} has no generic check")


COMPILE_OPTIONS: tuple[CompileOption, ...] = (
    CompileOption("depth", "int", 4, "requests in flight, one slot each (everything allocated once)",
                  what="a depth", minimum=1, maximum=MAX_DEPTH),
    CompileOption("streams", "choice", "per-model",
                  "one stream per model, or 'single': copies and models on one stream, for comparison",
                  choices=STREAM_MODES),
    CompileOption("profile", "bool", False, "time every node with timing events"),
    CompileOption("timeout", "seconds", 60.0, "seconds the wait for one request may take (None: forever)",
                  minimum=0.001, maximum=MAX_TIMEOUT_MS // 1000),
    CompileOption("wait", "choice", "block", "'spin' polls for completion instead of sleeping",
                  choices=WAIT_MODES, in_spec=False),
    CompileOption("max_queue", "int", None, "requests that may wait for a free slot (default 4 x depth)",
                  what="a queue length", minimum=1, maximum=MAX_QUEUE),
    CompileOption("max_delay_ms", "ms", 0.0,
                  "the dynamic batcher's longest wait for more rows, in ms (0 turns it off)",
                  minimum=0, maximum=MAX_DELAY_MS),
    CompileOption("gear_policy", "choice", "upper",
                  "the gear rows between two gears run at: upper, nearest or lower", choices=GEAR_POLICIES),
    CompileOption("host_workers", "workers", 1, "threads per host step (an int, or {step name: int})",
                  minimum=1, maximum=MAX_HOST_WORKERS),
    # Triton's queue policy (docs/executor.md, "Queue policy")
    CompileOption("priority_levels", "int", 1, "priority levels of the admission queue (1 is served first)",
                  what="a number of priority levels", minimum=1, maximum=MAX_PRIORITY_LEVELS),
    CompileOption("default_priority", "int", None,
                  "the priority of a request that names none (default: the lowest, priority_levels)",
                  what="a priority level", minimum=1, maximum=MAX_PRIORITY_LEVELS),
    CompileOption("queue_timeout", "seconds", None,
                  "seconds a request may wait in the queue before timeout_action applies (None: forever)",
                  minimum=0.001, maximum=MAX_TIMEOUT_MS // 1000),
    CompileOption("timeout_action", "choice", "reject",
                  "a request past its queue timeout: 'reject' fails it, 'delay' runs it after the others",
                  choices=TIMEOUT_ACTIONS),
    CompileOption("preferred_batch_sizes", "sizes", (),
                  "batch sizes the batcher sends at once, without waiting max_delay_ms for a full batch",
                  minimum=1, maximum=MAX_QUEUE),
)

OPTIONS: dict[str, CompileOption] = {o.name: o for o in COMPILE_OPTIONS}
SPEC_KEYS: tuple[str, ...] = tuple(o.name for o in COMPILE_OPTIONS if o.in_spec)


def batch_sizes(value, what, limit, error: type[Exception] = ValueError) -> tuple:
    """Distinct batch sizes from 1 to ``limit`` (a list or tuple of ints), sorted."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise error(f"{what} must be a list of batch sizes (integers), got {value!r}")
    sizes = tuple(sorted(positive_int(v, f"{what}[{k}]", limit, error=error) for k, v in enumerate(value)))
    if len(set(sizes)) != len(sizes):
        raise error(f"{what} must not repeat a size, got {list(value)}")
    return sizes


def host_workers(value, steps, error: type[Exception] = ValueError) -> dict:
    """Threads per host step name, from ``host_workers=int`` or ``{name: int}``."""
    limit = OPTIONS["host_workers"].maximum
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(steps))
        if unknown:
            raise error(f"host_workers names {unknown}, which are not host steps of the pipeline "
                        f"(its host steps: {list(steps)})")
        return {name: positive_int(value.get(name, 1), f"host_workers[{name!r}]", limit, error=error)
                for name in steps}
    count = positive_int(value, "host_workers", limit, error=error)
    return {name: count for name in steps}
