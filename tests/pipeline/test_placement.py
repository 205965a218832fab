"""Placement on its own: the streams and devices it assigns to small hand-made graphs.

No pipeline and no device: the graph nodes are plain namespaces shaped like
the builder's, the plan nodes and tensors are built by hand, and peer access
is a function the test controls (the policy: ascend_engine/planner/placement.py).
"""

from types import SimpleNamespace

import numpy as np
import pytest

from ascend_engine.errors import PipelineError
from ascend_engine.planner.placement import assign_streams, device_of, node_devices, place
from ascend_engine.planner.plan import PlanNode, PlanTensor


def handle(index):
    return SimpleNamespace(index=index)


def model_node(model=None, stream=None, instances=1, device=None, path="m.om", inputs=(), outputs=()):
    return SimpleNamespace(kind="model", model=model if model is not None else object(), stream=stream,
                           instances=instances, device=device, path=path,
                           inputs=[handle(i) for i in inputs], outputs=[handle(i) for i in outputs])


def host_node(inputs, outputs):
    return SimpleNamespace(kind="host", model=None, stream=None, instances=1, device=None, path=None,
                           inputs=[handle(i) for i in inputs], outputs=[handle(i) for i in outputs])


def tensor(name, domain=-1):
    return PlanTensor(name, np.dtype(np.float32), (-1, 4), 16, domain=domain)


def plan_node(name, inputs, outputs, stream, kind="model", domain=-1):
    return PlanNode(name=name, model=None, stream=stream, inputs=list(inputs), outputs=list(outputs),
                    dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(), static_batch=0, streams=(stream,),
                    kind=kind, domain=domain)


# ---- streams ---------------------------------------------------------------------------


def test_every_model_gets_a_stream_of_its_own_in_plan_order():
    assert assign_streams([model_node(), model_node(), model_node()], single=False) == [(0,), (1,), (2,)]


def test_a_label_or_one_model_object_shares_a_stream():
    shared = object()
    nodes = [model_node(stream="a"), model_node(model=shared), model_node(stream="a"),
             model_node(model=shared), model_node()]
    assert assign_streams(nodes, single=False) == [(0,), (1,), (0,), (1,), (2,)]


def test_a_host_step_gets_its_own_stream():
    nodes = [model_node(stream="a"), host_node([1], [2]), model_node(stream="a")]
    assert assign_streams(nodes, single=False) == [(0,), (1,), (0,)]


def test_instances_get_a_stream_each_used_by_no_other_node():
    shared = object()
    nodes = [model_node(model=shared), model_node(instances=3), model_node(model=shared), model_node()]
    assert assign_streams(nodes, single=False) == [(0,), (1, 2, 3), (0,), (4,)]


def test_single_puts_everything_on_stream_zero():
    nodes = [model_node(), host_node([1], [2]), model_node(instances=2), model_node(stream="a")]
    assert assign_streams(nodes, single=True) == [(0,), (0,), (0, 0), (0,)]


# ---- devices ---------------------------------------------------------------------------


def test_a_node_runs_where_placed_else_where_its_model_lives_else_on_the_plan_device():
    loaded = SimpleNamespace(device_id=3)
    assert device_of(model_node(device=2), 0, {}) == 2
    assert device_of(model_node(model=loaded, path=None), 0, {}) == 3
    assert device_of(model_node(model=loaded, path=None, device=1), 0, {}) == 1
    assert device_of(model_node(path="m.om"), 5, {}) == 5
    assert device_of(host_node([7], [8]), 0, {7: 4}) == 4


def test_tensors_live_on_their_producers_device_inputs_on_the_plan_device():
    nodes = [model_node(device=1, inputs=[0], outputs=[1]), host_node([1], [2]),
             model_node(inputs=[2], outputs=[3])]
    node_device, tensor_device = node_devices(nodes, [handle(0)], device=0)
    assert node_device == [1, 1, 0]   # the host step follows its first input to device 1
    assert tensor_device == {0: 0, 1: 1, 2: 1, 3: 0}


# ---- placing a plan --------------------------------------------------------------------


def chain_on_two_devices():
    """x -> a (device 0) -> b (device 1) -> y."""
    tensors = [tensor("x"), tensor("a.y"), tensor("b.y")]
    nodes = [plan_node("a", [0], [1], stream=0), plan_node("b", [1], [2], stream=1)]
    return tensors, nodes, [("y", 2)], [0, 1], {0: 0, 1: 0, 2: 1}


def test_one_device_places_everything_on_it_and_adds_no_copies():
    tensors = [tensor("x"), tensor("a.y"), tensor("b.y")]
    nodes = [plan_node("a", [0], [1], stream=0), plan_node("b", [1], [2], stream=1)]
    outputs = [("y", 2)]
    devices, stream_devices = place(nodes, tensors, outputs, [4, 4], {0: 4, 1: 4, 2: 4}, 4, False,
                                    peer=lambda a, b: pytest.fail("no copy, no peer question"))
    assert devices == [4] and stream_devices == [0, 0]
    assert [n.name for n in nodes] == ["a", "b"] and [n.device for n in nodes] == [0, 0]
    assert [t.device for t in tensors] == [0, 0, 0] and outputs == [("y", 2)]


def test_a_tensor_read_on_another_device_gets_a_copy_on_a_stream_of_the_reader():
    tensors, nodes, outputs, node_device, tensor_device = chain_on_two_devices()
    asked = []
    devices, stream_devices = place(nodes, tensors, outputs, node_device, tensor_device, 0, False,
                                    peer=lambda a, b: asked.append((a, b)) or True)
    assert devices == [0, 1]
    assert [n.name for n in nodes] == ["a", "copy a.y to device 1", "b", "copy b.y to device 0"]
    assert [(n.kind, n.device, n.stream, n.bridge_stream) for n in nodes] == [
        ("model", 0, 0, -1), ("copy", 1, 2, -1), ("model", 1, 1, -1), ("copy", 0, 3, -1)]
    assert stream_devices == [0, 1, 1, 0]
    assert asked == [(0, 1), (1, 0)]
    # b reads the copy; the output leaves from device 0, through the copy back
    assert nodes[2].inputs == [3] and tensors[3].name == "a.y@device1" and tensors[3].device == 1
    assert outputs == [("y", 4)] and tensors[4].name == "b.y@device0" and tensors[4].device == 0
    # producers and readers follow the new positions; the copy-out (position 4) reads the output
    assert [(t.producer, t.readers) for t in tensors] == [(-1, [0]), (0, [1]), (2, [3]), (1, [2]), (3, [4])]


def test_without_a_peer_link_a_copy_takes_a_bridge_stream_on_the_source_device():
    tensors, nodes, outputs, node_device, tensor_device = chain_on_two_devices()
    devices, stream_devices = place(nodes, tensors, outputs, node_device, tensor_device, 0, False,
                                    peer=lambda a, b: False)
    copies = [n for n in nodes if n.kind == "copy"]
    assert [(n.device, n.stream, n.bridge_stream) for n in copies] == [(1, 2, 3), (0, 4, 5)]
    assert stream_devices == [0, 1, 1, 0, 0, 1]


def test_two_readers_on_one_device_share_one_copy_placed_before_the_first():
    tensors = [tensor("x"), tensor("a.y"), tensor("b.y"), tensor("c.y")]
    nodes = [plan_node("a", [0], [1], stream=0), plan_node("b", [1], [2], stream=1),
             plan_node("c", [1, 2], [3], stream=2)]
    outputs = [("y", 3)]
    place(nodes, tensors, outputs, [0, 1, 1], {0: 0, 1: 0, 2: 1, 3: 1}, 0, False, peer=lambda a, b: True)
    assert [n.name for n in nodes] == ["a", "copy a.y to device 1", "b", "c", "copy c.y to device 0"]
    assert nodes[2].inputs == [4] and nodes[3].inputs == [4, 2]


def test_plan_positions_of_host_steps_move_with_the_copies():
    # x -> a (device 1) -> step (rows="any", on a's device) -> b (plan device 0, the step's rows)
    tensors = [tensor("x"), tensor("a.y"), tensor("step.out", domain=1), tensor("b.y", domain=1)]
    nodes = [plan_node("a", [0], [1], stream=0), plan_node("step", [1], [2], stream=1, kind="host"),
             plan_node("b", [2], [3], stream=2, domain=1)]
    outputs = [("y", 3)]
    place(nodes, tensors, outputs, [1, 1, 0], {0: 0, 1: 1, 2: 1, 3: 0}, 0, False, peer=lambda a, b: True)
    assert [n.name for n in nodes] == ["copy x to device 1", "a", "step", "copy step.out to device 0", "b"]
    assert [n.domain for n in nodes] == [-1, -1, -1, 2, 2]
    assert [t.domain for t in tensors] == [-1, -1, 2, 2, -1, 2]


def test_single_refuses_a_plan_over_two_devices():
    tensors, nodes, outputs, node_device, tensor_device = chain_on_two_devices()
    with pytest.raises(PipelineError, match=r"streams='single' runs everything on one stream, but the "
                                            r"pipeline spans devices \[0, 1\]"):
        place(nodes, tensors, outputs, node_device, tensor_device, 0, True, peer=lambda a, b: True)


def test_a_stream_belongs_to_one_device():
    tensors, nodes, outputs, node_device, tensor_device = chain_on_two_devices()
    nodes[1].stream, nodes[1].streams = 0, (0,)   # a label shared by nodes on devices 0 and 1
    with pytest.raises(PipelineError, match="node 'b': its stream label is shared with a node on another"):
        place(nodes, tensors, outputs, node_device, tensor_device, 0, False, peer=lambda a, b: True)
