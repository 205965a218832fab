"""The server tests' fixtures: one demo repository and one ``ascend-engine serve`` for the session,
the in-process engine whose answers the server's must equal, the demo's variants some tests
serve on their own, and one inference from an async client."""

import numpy as np
import pytest
from helpers.servers import ServerProcess, demo_repository, write_variant

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


@pytest.fixture
def slow_repo(repo, tmp_path):
    """The demo with a batcher that holds requests 300 ms: at a signal, they are admitted but queued."""
    return write_variant(repo, str(tmp_path / "models"), "slow", {"max_delay_ms": 300})


@pytest.fixture(scope="module")
def tight(repo, tmp_path_factory):
    """``tight``: the demo at depth 2 with room for 4 waiting requests and 3 priority levels, served."""
    folder = str(tmp_path_factory.mktemp("tight"))
    write_variant(repo, folder, "tight", {"max_queue": 4, "priority_levels": 3})
    text = open(f"{folder}/tight.yaml", encoding="utf-8").read().replace("depth: 8", "depth: 2")
    open(f"{folder}/tight.yaml", "w", encoding="utf-8").write(text)
    running = ServerProcess(folder)
    yield running
    running.stop()


@pytest.fixture
def infer_or_error():
    """``await infer_or_error(aio, client, model, x)``: the model's "probs" for one FP32 tensor ``x``
    through an async tritonclient (``aio``: tritonclient.http.aio or tritonclient.grpc.aio), or the
    InferenceServerException it raised."""
    from tritonclient.utils import InferenceServerException

    async def infer(aio, client, model, x):
        tensor = aio.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        try:
            return (await client.infer(model, [tensor])).as_numpy("probs")
        except InferenceServerException as exc:
            return exc

    return infer
