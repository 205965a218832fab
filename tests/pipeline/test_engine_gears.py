"""Which dynamic-batch gear runs, and buffers for models whose gears exceed max_batch.

The gear choice is invisible in the numbers (a larger gear pads and slices),
so it is read from the simulator's call log: every aclmdlSetDynamicBatchSize
call with the model id and the batch it set.
"""

import json
import re

import numpy as np
from helpers import simlib
from helpers.pipelines import WIDTH, chain_reference, dense
from helpers.planning import check_memory_plan

import ascend_engine as ae

# A: gears 1 2 4 8; B: gears 1 2 4 16 (its top gear is above the pipeline's max_batch of 8)
CHILD = """
import json
import numpy as np
import ascend_engine as ae
from ascend_engine import sim

def dense(seed):
    rng = np.random.default_rng(seed)
    g = sim.Graph(f"dense{{seed}}")
    x = g.input("x", "float32", (-1, {width}))
    g.output("y", g.relu(g.matmul(x, g.const(rng.standard_normal(({width}, {width})).astype(np.float32)))))
    return g

paths = []
for i, gears in enumerate([(1, 2, 4, 8), (1, 2, 4, 16)]):
    paths.append({folder!r} + f"/gear{{i}}.om")
    dense(500 + i).save(paths[-1], batch_sizes=gears)
pipe = ae.Pipeline(device=0)
h = pipe.input("x", "float32", (-1, {width}))
h = pipe.model(paths[0], h, name="A")
pipe.output("y", pipe.model(paths[1], h, name="B"))
with pipe.compile(depth=1) as engine:
    print(json.dumps({{n.name: n.model.model_id for n in engine.plan.nodes}}))
    for rows in {rows}:
        engine.run({{"x": np.ones((rows, {width}), np.float32)}})
"""

ROWS = [1, 3, 5, 8, 2, 6]


def smallest_gear(gears, rows):
    return min(g for g in gears if g >= rows)


def test_each_model_runs_at_the_smallest_gear_that_holds_the_request(tmp_path):
    log = tmp_path / "calls.log"
    code = CHILD.format(folder=str(tmp_path), width=WIDTH, rows=ROWS)
    proc = simlib.run_python(code, env={"ASCEND_SIM_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout.strip().splitlines()[-1])
    pattern = r"aclmdlSetDynamicBatchSize\(id (\d+) index \d+ batch (\d+)\) = 0"
    set_calls = re.findall(pattern, log.read_text())
    by_model = {name: [int(b) for i, b in set_calls if int(i) == mid] for name, mid in ids.items()}
    assert by_model["A"] == [smallest_gear((1, 2, 4, 8), r) for r in ROWS] == [1, 4, 8, 8, 2, 8]
    assert by_model["B"] == [smallest_gear((1, 2, 4, 16), r) for r in ROWS] == [1, 4, 16, 16, 2, 16]


def test_buffers_hold_a_top_gear_above_max_batch(build):
    a = build(dense(510), "top8", batch_sizes=(1, 2, 4, 8))
    b = build(dense(511), "top16", batch_sizes=(1, 2, 4, 16))
    pipe = ae.Pipeline(device=0)
    h = pipe.input("x", "float32", (-1, WIDTH))
    h = pipe.model(a.path, h, name="A")
    pipe.output("y", pipe.model(b.path, h, name="B"))
    x = np.random.default_rng(5).standard_normal((29, WIDTH)).astype(np.float32)
    with pipe.compile(depth=2) as engine:
        plan = engine.plan
        assert plan.max_batch == 8
        check_memory_plan(plan)
        by_name = {t.name: t for t in plan.tensors}
        # B's buffers are bound at its 16-row descriptor size, twice max_batch rows
        assert by_name["A.y"].capacity >= 16 * WIDTH * 4 and by_name["B.y"].capacity >= 16 * WIDTH * 4
        out = engine.run_batch({"x": x}, batch_size=6)
    np.testing.assert_allclose(out["y"], chain_reference([a, b], x), rtol=1e-4, atol=1e-5)

