"""Planner test helpers: stand-in models and an independent check of a memory plan.

:class:`FakeModel` describes itself like a loaded ``ascend_engine.Model`` with
no device behind it, so plans can be built without model files.

:func:`check_memory_plan` judges a compiled :class:`ascend_engine.planner.plan.Plan`
from the executor's ordering rules alone (it never looks at what the planner
derived: ``PlanTensor.readers``, ``producer``), so a planner bug in deciding
lifetimes cannot hide itself.
"""

import numpy as np

from ascend_engine import TensorSpec
from ascend_engine.planner.memory import ALIGN, carve


class FakeModel:
    """Describes itself like ascend_engine.Model (no device behind it).

    ``ins`` and ``outs`` are ``(name, shape[, dtype])``; a ``-1`` first
    dimension is the batch.  Descriptor sizes are those of the largest gear
    plus ``pad`` bytes, as a padded device format would report them.
    """

    def __init__(self, ins, outs, gears=(1, 2, 4, 8), device_id=0, pad=64):
        def spec(name, shape, dtype="float32"):
            rows = max(gears) if shape[0] == -1 and gears else shape[0]
            n = int(np.prod((rows,) + tuple(shape[1:]))) * np.dtype(dtype).itemsize
            return TensorSpec(name, np.dtype(dtype), tuple(shape), n + pad, "ND")

        self.inputs = tuple(spec(*i) for i in ins)
        self.outputs = tuple(spec(*o) for o in outs)
        self.batch_sizes = tuple(gears)
        self.dynamic_index = len(self.inputs) if gears else -1
        self.dynamic_nbytes = 64 if gears else 0
        self.device_id = device_id
        self.model_id = 0


def happens_before(plan):
    """Steps of one request and the executor's order between them.

    Returns ``(steps, hb)``: steps are ``"in"`` (the H2D copies), the node
    indices, and ``"out"`` (the D2H copies); ``hb(a, b)`` is true when step
    ``a`` is guaranteed to complete before step ``b`` starts.  Built from
    the executor's rules: one stream runs its tasks in order; a node waits for
    the producers of its inputs and for the copy-in when it reads a pipeline
    input; the copy-out waits likewise for what it copies; on a single-stream
    plan the copies share the one stream with the nodes.
    """
    n = len(plan.nodes)
    steps = ["in"] + list(range(n)) + ["out"]
    index = {s: i for i, s in enumerate(steps)}
    writer = {t: "in" for _, t in plan.inputs}
    for k, node in enumerate(plan.nodes):
        for t in node.outputs:
            writer[t] = k
    m = len(steps)
    edge = np.zeros((m, m), dtype=bool)
    if plan.single_stream:
        for a, b in zip(steps, steps[1:], strict=False):
            edge[index[a], index[b]] = True
    previous = {}
    for k, node in enumerate(plan.nodes):
        if node.stream in previous:
            edge[index[previous[node.stream]], index[k]] = True
        previous[node.stream] = k
        for t in node.inputs:
            if t >= 0:
                edge[index[writer[t]], index[k]] = True
    for _, t in plan.outputs:
        edge[index[writer[t]], index["out"]] = True
    # transitive closure (Warshall)
    reach = edge.copy()
    for k in range(m):
        reach |= np.outer(reach[:, k], reach[k, :])

    def hb(a, b):
        return bool(reach[index[a], index[b]])

    return steps, hb


def tensor_uses(plan):
    """{tensor: (writer step, [steps that read it])} from the plan's bindings."""
    uses = {t: ("in", []) for _, t in plan.inputs}
    for k, node in enumerate(plan.nodes):
        for t in node.outputs:
            uses[t] = (k, [])
    for k, node in enumerate(plan.nodes):
        for t in node.inputs:
            if t >= 0:
                uses[t][1].append(k)
    for _, t in plan.outputs:
        uses[t][1].append("out")
    return uses


def check_memory_plan(plan):
    """Assert that ``plan``'s memory layout is safe; returns the pairs that share bytes.

    * every tensor and dynamic-batch buffer lies inside the slot, 128-aligned;
    * every buffer holds every descriptor size bound to it and ``max_batch`` rows;
    * two tensors overlap in bytes only when every use of one (its writer and
      its readers) completes before the writer of the other starts;
    * dynamic-batch buffers overlap nothing (the batch is written when the
      execution is enqueued).
    """
    _, hb = happens_before(plan)
    uses = tensor_uses(plan)
    tensors = plan.tensors
    assert set(uses) == set(range(len(tensors))), "every tensor is an input or a node output"
    for t in tensors:
        assert t.offset % ALIGN == 0 and t.capacity % ALIGN == 0, t
        assert 0 <= t.offset and t.offset + t.capacity <= plan.slot_bytes, t
        assert t.capacity >= t.row_bytes * plan.max_batch, t
    for node in plan.nodes:
        bound = [t for t in node.inputs if t >= 0]
        for t, spec in zip(bound, node.model.inputs, strict=True):
            assert tensors[t].capacity >= spec.nbytes, (node.name, spec.name)
        for t, spec in zip(node.outputs, node.model.outputs, strict=True):
            assert tensors[t].capacity >= spec.nbytes, (node.name, spec.name)
    regions = [(t.offset, t.offset + t.capacity) for t in tensors]
    dyn = []
    for node in plan.nodes:
        if node.dyn_index >= 0:
            assert node.dyn_size >= node.model.dynamic_nbytes
            assert node.dyn_offset % ALIGN == 0
            assert node.dyn_offset + carve(node.dyn_size) <= plan.slot_bytes
            dyn.append((node.dyn_offset, node.dyn_offset + carve(node.dyn_size)))
    for k, (lo, hi) in enumerate(dyn):
        for other_lo, other_hi in regions + dyn[:k]:
            assert hi <= other_lo or other_hi <= lo, "a dynamic-batch buffer overlaps another buffer"

    def dead_before(a, b):
        writer_a, readers_a = uses[a]
        writer_b, _ = uses[b]
        return all(hb(u, writer_b) for u in [writer_a] + readers_a)

    shared = []
    for a in range(len(tensors)):
        for b in range(a + 1, len(tensors)):
            (lo_a, hi_a), (lo_b, hi_b) = regions[a], regions[b]
            if hi_a <= lo_b or hi_b <= lo_a:
                continue
            assert dead_before(a, b) or dead_before(b, a), (
                f"{tensors[a].name} and {tensors[b].name} share bytes but may be live at once"
            )
            shared.append((tensors[a].name, tensors[b].name))
    return shared
