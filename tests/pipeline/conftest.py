"""Model files for the executor tests, built once per session with sim.Graph
(the graphs and helpers are in helpers.pipelines)."""

import pytest
from helpers.pipelines import GEARS, Built


@pytest.fixture(scope="session")
def build(tmp_path_factory):
    """build(graph, name, **save_kwargs) -> Built; files live for the session."""
    folder = tmp_path_factory.mktemp("models")
    cache = {}

    def make(graph, name, batch_sizes=GEARS, latency_us=0, latency_per_item_us=0):
        key = (name, batch_sizes, latency_us, latency_per_item_us)
        if key not in cache:
            path = folder / f"{name}-{latency_us}-{len(cache)}.om"
            graph.save(str(path), batch_sizes=batch_sizes, latency_us=latency_us,
                       latency_per_item_us=latency_per_item_us)
            cache[key] = Built(graph, path)
        return cache[key]

    return make
