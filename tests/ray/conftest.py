"""A local Ray cluster with simulated NPUs for the ascend_engine.ray tests.

One cluster for the whole folder: ``ray.init(num_cpus=2, resources={"NPU": 4})``
on loopback only, no dashboard, no usage reporting.  Every worker runs the
simulator with four physical devices and imports this checkout of the package.
Skipped, saying why, when Ray is not installed.
"""

import os

import numpy as np
import pytest

# Ray reads these when it is imported: its node address becomes 127.0.0.1
# (by default it is the machine's outward address), and it reports nothing.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: pip install 'ascend-engine[ray]' to run the Ray tests"
)
pytest.importorskip("ray.serve", reason="Ray Serve is not installed: pip install 'ascend-engine[ray]'")

import ascend_engine  # noqa: E402
from ascend_engine import sim  # noqa: E402

PHYSICAL_NPUS = 4


@pytest.fixture(scope="package")
def cluster():
    """The Ray cluster (started once for tests/ray, shut down after them)."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ascend_engine.__file__)))
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        "ASCEND_ENGINE_BACKEND": "sim",
        "ASCEND_SIM_DEVICE_COUNT": str(PHYSICAL_NPUS),
    }
    ray.init(num_cpus=2, resources={"NPU": PHYSICAL_NPUS}, include_dashboard=False,
             runtime_env={"env_vars": env}, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def affine_graph():
    """y = relu(x @ W + b), exact against sim.reference."""
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
