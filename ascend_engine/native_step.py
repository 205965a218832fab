"""Native host steps as plan data: :class:`NativeStep` (a C function's address)
and :class:`BuiltinStep` (a step the executor itself provides, named).

Its own module so that the planner (which records them) and the executor
(which lowers them into the C plan) both see them without importing each
other (docs/executor.md, "The rooms").  ``ascend_engine.NativeStep`` and
``ascend_engine.planner.builder.NativeStep`` re-export the class.
"""

from __future__ import annotations

from ascend_engine.errors import PipelineError

# The steps the executor provides itself, by the name a plan records: the
# device queue (ascend_engine/_queue_memory.pxi) gives each its C function.
BUILTIN_STEPS = ("rows_to_boxes",)


class NativeStep:
    """A host step implemented in native code: the address of a C function
    with the ``ae_host_fn`` signature of executor.h (docs/executor.md, "Host
    steps"), and the ``context`` pointer it is called with.

    It runs on the engine's worker thread without the GIL.  Keep whatever
    owns the function (a ctypes callback object, a loaded library) alive
    while engines use it: pass it as ``keep``.  A ctypes function pointer
    given to ``pipe.host`` directly is wrapped in a NativeStep.
    """

    builtin = None   # the executor's own step this is (BuiltinStep), else None

    def __init__(self, address: int, context: int = 0, keep=None):
        if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
            raise PipelineError(f"NativeStep: address must be a nonzero function address (int), "
                                f"got {address!r}")
        self._set(address, context, keep)

    def _set(self, address, context, keep):
        if not isinstance(context, int) or isinstance(context, bool) or context < 0:
            raise PipelineError(f"NativeStep: context must be an address (int >= 0), got {context!r}")
        self.address = address
        self.context = context
        self.keep = keep

    def __repr__(self) -> str:
        return f"NativeStep(address={self.address:#x}, context={self.context:#x})"


class BuiltinStep(NativeStep):
    """A native host step of the executor's own, named by the plan (one of
    ``BUILTIN_STEPS``): the planner records which; the lowering of the plan
    gives it its C function, so the planner needs no address of the
    executor's.  ``address`` is 0 until then."""

    def __init__(self, name: str, context: int = 0, keep=None):
        if name not in BUILTIN_STEPS:
            raise PipelineError(f"BuiltinStep: no native step named {name!r}; the executor has "
                                f"{', '.join(BUILTIN_STEPS)}")
        self.builtin = name
        self._set(0, context, keep)

    def __repr__(self) -> str:
        return f"BuiltinStep({self.builtin!r}, context={self.context:#x})"
