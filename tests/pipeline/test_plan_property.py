"""The memory plan on random graphs, judged by an independent happens-before.

Hypothesis draws pipelines: several inputs, nodes with one to three inputs
and outputs of different widths, stream labels (shared, per model, one model
object reused), outputs anywhere (pass-through inputs, side outputs, unused
model outputs), gears whose largest member exceeds the pipeline's
``max_batch``.  ``helpers.planning.check_memory_plan`` then checks the plan
from the executor's ordering rules alone.
"""

import pytest
from helpers.planning import FakeModel, check_memory_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascend_engine.planner.builder import Pipeline
from ascend_engine.planner.memory import carve

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WIDTHS = (4, 16, 40)
GEAR_SETS = ((1, 2, 4, 8), (1, 4, 16), (2, 4), (1, 3))


@st.composite
def pipelines(draw):
    """(pipeline, plan options) for a random DAG of stand-in models."""
    pipe = Pipeline(device=0)
    available = []
    for i in range(draw(st.integers(1, 3))):
        width = draw(st.sampled_from(WIDTHS))
        available.append(pipe.input(f"in{i}", "float32", (-1, width)))
    shared_models = {}
    for k in range(draw(st.integers(1, 8))):
        feeds = draw(st.lists(st.sampled_from(available), min_size=1, max_size=3))
        widths = draw(st.lists(st.sampled_from(WIDTHS), min_size=1, max_size=3))
        gears = draw(st.sampled_from(GEAR_SETS))
        label = draw(st.sampled_from([None, None, "a", "b"]))
        ins = [(f"i{j}", (-1, h.shape[1])) for j, h in enumerate(feeds)]
        outs = [(f"o{j}", (-1, w)) for j, w in enumerate(widths)]
        key = (tuple(ins), tuple(outs), gears)
        if draw(st.booleans()) and key in shared_models:
            model = shared_models[key]   # one model object in two nodes: one stream
        else:
            pad = draw(st.sampled_from((0, 64)))
            model = shared_models.setdefault(key, FakeModel(ins, outs, gears=gears, pad=pad))
        made = pipe.model(model, *feeds, name=f"n{k}", stream=label)
        available.extend(made if isinstance(made, tuple) else [made])
    chosen = draw(st.lists(st.sampled_from(available), min_size=1, max_size=4, unique_by=lambda h: h.index))
    read = {h.index for h in chosen} | {h.index for n in pipe._nodes for h in n.inputs}
    for h in pipe._inputs:
        if h.index not in read:
            chosen.append(h)   # an input nothing reads must at least be passed through
    for j, h in enumerate(chosen):
        pipe.output(f"out{j}", h)
    options = {"depth": draw(st.integers(1, 4)), "streams": draw(st.sampled_from(["per-model", "single"]))}
    return pipe, options


@SETTINGS
@given(pipelines())
def test_random_plans_never_share_live_memory(case):
    pipe, options = case
    plan = pipe.plan(**options)
    check_memory_plan(plan)
    # sharing never costs memory: the slot is at most the unshared sum of the tensors
    dyn = sum(carve(n.dyn_size) for n in plan.nodes if n.dyn_index >= 0)
    assert plan.slot_bytes <= plan.unshared_bytes + dyn
    assert plan.working_set <= plan.unshared_bytes


def test_checker_rejects_an_unsafe_plan():
    # The property above is only as good as its checker: it must see a plan
    # whose concurrent branches were put on top of each other.
    a, b = (FakeModel([("x", (-1, 16))], [("y", (-1, 16))]) for _ in range(2))
    pipe = Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("a", pipe.model(a, x, name="A"))
    pipe.output("b", pipe.model(b, x, name="B"))
    plan = pipe.plan()
    check_memory_plan(plan)
    ta, tb = plan.tensors[1], plan.tensors[2]
    tb.offset = ta.offset
    with pytest.raises(AssertionError, match="A.y and B.y share bytes but may be live at once"):
        check_memory_plan(plan)


def test_checker_rejects_a_buffer_below_its_descriptor_size():
    big = FakeModel([("x", (-1, 16))], [("y", (-1, 16))], gears=(1, 2, 4, 16))
    small = FakeModel([("x", (-1, 16))], [("y", (-1, 16))], gears=(1, 2))
    pipe = Pipeline(device=0)
    x = pipe.input("x", "float32", (-1, 16))
    pipe.output("y", pipe.model(small, pipe.model(big, x, name="big"), name="small"))
    plan = pipe.plan()
    assert plan.max_batch == 2
    check_memory_plan(plan)
    plan.tensors[1].capacity = carve(plan.tensors[1].row_bytes * plan.max_batch)
    with pytest.raises(AssertionError, match="big"):
        check_memory_plan(plan)
