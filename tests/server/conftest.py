"""The server tests' fixtures: one demo repository and one ``ascend-engine serve`` for the session,
and the in-process engine whose answers the server's must equal."""

import numpy as np
import pytest
from helpers.servers import ServerProcess, demo_repository

from ascend_engine import spec


@pytest.fixture(scope="session")
def repo(tmp_path_factory):
    return demo_repository(str(tmp_path_factory.mktemp("serve")))


@pytest.fixture(scope="session")
def server(repo):
    running = ServerProcess(repo)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def reference(repo):
    """``reference(x)``: the demo pipeline's output for ``x``, run in this process."""
    import os

    pipeline, kwargs = spec.load(os.path.join(repo, "demo", "1", "pipeline.yaml"))
    engine = pipeline.compile(**kwargs)

    def run(x):
        return engine.run({"x": np.ascontiguousarray(x, np.float32)})["probs"]

    yield run
    engine.close()
