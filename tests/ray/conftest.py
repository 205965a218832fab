"""A local Ray cluster with simulated NPUs for the ascend_engine.ray tests.

One cluster for the whole folder: ``ray.init(num_cpus=2, resources={"NPU": 4})``
on loopback only, no dashboard, no usage reporting.  Every worker runs the
simulator with four physical devices and imports this checkout of the package.
Skipped, saying why, when Ray is not installed.
"""

import numpy as np
import pytest
from helpers import raycluster  # before Ray is imported: loopback, no usage reports

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: pip install 'ascend-engine[ray]' to run the Ray tests"
)
pytest.importorskip("ray.serve", reason="Ray Serve is not installed: pip install 'ascend-engine[ray]'")

from helpers.raycluster import PHYSICAL_NPUS  # noqa: E402

from ascend_engine import sim  # noqa: E402


@pytest.fixture(scope="package")
def cluster():
    """The Ray cluster (started once for tests/ray, shut down after them)."""
    ray = raycluster.start(npus=PHYSICAL_NPUS, num_cpus=2)
    try:
        yield ray
    finally:
        ray.shutdown()


def affine_graph():
    """y = relu(x @ W + b), equal to sim.reference to float32 rounding (docs/sim-graph.md)."""
    rng = np.random.default_rng(7)
    g = sim.Graph("affine")
    x = g.input("x", "float32", (None, 16))
    g.output("y", g.relu(g.add(g.matmul(x, g.const(rng.standard_normal((16, 8)).astype(np.float32))), 0.5)))
    return g


@pytest.fixture(scope="package")
def model(tmp_path_factory):
    """(graph, spec path) of a one-model pipeline with gears 1, 4, 8 and 2 ms of device time."""
    d = tmp_path_factory.mktemp("ray-model")
    g = affine_graph()
    g.save(str(d / "affine.om"), batch_sizes=(1, 4, 8), latency_us=2000)
    spec = d / "pipeline.yaml"
    spec.write_text(
        "inputs: {x: {dtype: float32, shape: [-1, 16]}}\n"
        "models:\n  - {name: affine, path: affine.om, inputs: [x]}\n"
        "outputs: {y: affine}\n"
        "compile: {depth: 4}\n"
    )
    return g, spec
