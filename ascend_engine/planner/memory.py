"""The memory plan of one request slot: buffer sizes, lifetimes, sharing.

Every buffer is carved from the slot's region of the arena at :data:`ALIGN`
(128-byte) alignment with :data:`PADDING` (32) bytes after it, the rule
AscendCL documents for buffers carved out of one allocation (see
docs/executor.md, "Compile: everything decided and created once").
Tensors whose lifetimes within a request cannot overlap share bytes: a
buffer is reused only when every reader of its previous tensor is ordered
-- by stream order or by an event -- before the writer of the next one
(:func:`_happens_before`); a tensor nothing reads lives until its writer
has finished (:func:`_last_uses`).

Pure functions of the plan's tensors and nodes (:mod:`ascend_engine.planner.plan`).
"""

from __future__ import annotations

ALIGN = 128
PADDING = 32
POOL_HEADROOM = 1.15   # peak working set + 15 % (docs/executor.md, "Memory report")


def carve(nbytes: int) -> int:
    """Bytes a buffer of ``nbytes`` occupies when carved from the arena."""
    return (nbytes + PADDING + ALIGN - 1) // ALIGN * ALIGN


def plan_memory(tensors, nodes, max_batch, n_devices=1):
    """Give every tensor a capacity and an offset in its device's slot region.

    Returns (slot bytes per device, working_set, unshared_bytes).
    """
    n = len(nodes)
    after = _happens_before(tensors, nodes)
    for t in tensors:
        t.capacity = carve(max(t.capacity, t.row_bytes * max(t.max_rows, max_batch if t.domain < 0 else 0)))
    unshared = sum(t.capacity for t in tensors)
    # working set: bytes live at the busiest step of one request, no sharing
    working = 0
    for step in range(-1, n + 1):
        live = sum(t.capacity for t in tensors if t.producer <= step <= max(t.readers, default=t.producer))
        working = max(working, live)

    # Greedy reuse in producer order: a block can take tensor Y when the
    # lifetime of every tensor already in it has ended (its last uses have
    # completed) before Y's producer starts.
    blocks: list[dict] = []
    for idx in sorted(range(len(tensors)), key=lambda i: tensors[i].producer):
        t = tensors[idx]
        best = None
        if t.producer >= 0:
            for b in blocks:
                if b["device"] != t.device:
                    continue
                ok = all(
                    t.producer in after[r]
                    for other in b["tensors"]
                    for r in _last_uses(tensors[other])
                )
                if ok and (best is None or abs(b["size"] - t.capacity) < abs(best["size"] - t.capacity)):
                    best = b
        if best is None:
            best = {"size": 0, "tensors": [], "device": t.device}
            blocks.append(best)
        best["size"] = max(best["size"], t.capacity)
        best["tensors"].append(idx)

    offsets = [0] * n_devices
    for b in blocks:
        for idx in b["tensors"]:
            tensors[idx].offset = offsets[b["device"]]
            tensors[idx].capacity = b["size"]
        offsets[b["device"]] += b["size"]
    for node in nodes:
        if node.dyn_index >= 0:
            node.dyn_offset = offsets[node.device]
            offsets[node.device] += carve(node.dyn_size)
    return offsets, working, unshared


COPY_IN = -1   # the step staging pipeline inputs; nodes are 0..n-1 and the copy-out is n


def _happens_before(tensors, nodes):
    """after[a]: the steps that start only once step ``a`` has completed.

    Steps are the copy-in (:data:`COPY_IN`), the nodes 0..n-1 in plan order
    and the copy-out ``n``.  The executor orders them in three ways, and
    nothing else: stream order (a node waits for the node enqueued before it
    on its stream), event waits (a node, and the copy-out, wait for the
    producers of what they read) and the copy-in's event (every step reading
    a pipeline input waits for it).  The relation is transitive.
    """
    n = len(nodes)
    edges = {step: set() for step in range(COPY_IN, n + 1)}
    last_on_stream = {}
    for k, node in enumerate(nodes):
        if len(set(getattr(node, "streams", ()))) > 1:
            continue   # an instanced node's stream depends on the request: no stream order
        if node.stream in last_on_stream:
            edges[last_on_stream[node.stream]].add(k)
        last_on_stream[node.stream] = k
    for t in tensors:
        for r in t.readers:
            edges[t.producer].add(r)
    after = {}
    for a in range(n, COPY_IN - 1, -1):   # every edge points to a later step
        after[a] = set()
        for b in edges[a]:
            after[a] |= {b} | after[b]
    return after


def _last_uses(t):
    """The steps whose completion ends tensor ``t``'s lifetime in a request.

    Its readers; a tensor nothing reads still lives until its producer has
    finished writing it.
    """
    return t.readers or [t.producer]

