"""A local Ray cluster with simulated NPUs, on loopback only (tests/ray, benchmarks/bench_ray.py).

Import this module before anything imports Ray: Ray reads the two settings
below when it is imported.  By default Ray gives its node the machine's outward
address; with them it uses 127.0.0.1, and it sends no usage reports.
"""

import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


PHYSICAL_NPUS = 4   # the simulated NPUs the test cluster declares


def start(npus=4, num_cpus=2):
    """``ray.init`` a fresh local cluster of ``npus`` simulated NPUs; returns the ray module.

    Every worker runs the simulator with ``npus`` physical devices (Ray's
    ``ASCEND_RT_VISIBLE_DEVICES`` picks among them) and imports the same
    ascend_engine as this process.
    """
    import ray

    import ascend_engine

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ascend_engine.__file__)))
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        "ASCEND_ENGINE_BACKEND": "sim",
        "ASCEND_SIM_DEVICE_COUNT": str(npus),
    }
    ray.init(num_cpus=num_cpus, resources={"NPU": npus}, include_dashboard=False,
             runtime_env={"env_vars": env}, log_to_driver=False)
    node = ray.nodes()[0]["NodeManagerAddress"]
    if node != "127.0.0.1":
        ray.shutdown()
        raise RuntimeError(f"the local Ray node took address {node}, not 127.0.0.1: was Ray imported before "
                           "helpers.raycluster?")
    return ray
