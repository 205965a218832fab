"""Fixtures for the CLI tests: a demo folder and a saved bench run, made once per session."""

import json

import pytest
from cli_run import ok, run_cli


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """A folder written by ``ascend-engine sim make-demo`` (three models and pipeline.yaml)."""
    folder = tmp_path_factory.mktemp("demo")
    proc = ok(run_cli("sim", "make-demo", str(folder)))
    return {"dir": folder, "spec": folder / "pipeline.yaml", "stdout": proc.stdout}


@pytest.fixture(scope="session")
def bench_json(demo, tmp_path_factory):
    """A short bench of the demo spec saved with --json: (process, parsed figures, path)."""
    out = tmp_path_factory.mktemp("bench") / "base.json"
    proc = ok(run_cli("bench", str(demo["spec"]), "--requests", "24", "--warmup", "2", "--batch", "2",
                      "--profile", "--json", str(out)))
    with open(out) as f:
        return proc, json.load(f), out
