"""``ascend-engine bench --url`` against ``ascend-engine serve`` on the demo repository (HTTP and gRPC),
and the statistics endpoint its server figures come from."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from ascend_engine.bench.perf import CSV_COLUMNS

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")

STAGES = ("success", "queue", "compute_input", "compute_infer", "compute_output")


def bench(*args):
    """Run ``ascend-engine bench ARGS``: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "ascend_engine", "bench", "--no-progress", *args],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def stats(client, **kw):
    entry = client.get_inference_statistics("demo", "1", **kw)["model_stats"][0]["inference_stats"]
    return {k: (int(entry.get(k, {}).get("count", 0)), int(entry.get(k, {}).get("ns", 0))) for k in STAGES}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_statistics_count_every_stage(server, protocol):
    """Triton's statistics extension: every request counted once in each stage, with time in each."""
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http if protocol == "http" else server.grpc)
    kw = {} if protocol == "http" else {"as_json": True}
    before = stats(client, **kw)
    tensor = module.InferInput("x", [1, 64], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 64), np.float32))
    for _ in range(5):
        client.infer("demo", [tensor], model_version="1")
    after = stats(client, **kw)
    client.close()
    for key in STAGES:
        assert after[key][0] - before[key][0] == 5, key
        assert after[key][1] > before[key][1], key
    spent = {k: after[k][1] - before[k][1] for k in STAGES}
    # the stages are parts of the server's time for the request
    assert spent["compute_input"] + spent["compute_output"] + spent["queue"] < spent["success"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_closed_loop_against_serve(server, protocol, tmp_path):
    url = server.http if protocol == "http" else server.grpc
    out, table = tmp_path / "run.json", tmp_path / "perf.csv"
    rc, stdout, stderr = bench("-u", url, "-i", protocol, "-m", "demo", "-x", "1",
                               "--concurrency-range", "1:3:2", "--requests", "40", "--warmup", "4",
                               "--json", str(out), "-f", str(table))
    assert rc == 0, stderr
    assert f"model demo version 1 at {url} over {protocol.upper()}" in stdout
    fig = json.loads(out.read_text())
    assert fig["kind"] == "remote" and fig["statistics"] is True
    points = fig["load"]["points"]
    assert [p["concurrency"] for p in points] == [1, 3]
    for p in points:
        lat = p["latency_ms"]
        assert p["requests"] == 40 and p["throughput"]["requests_per_s"] > 0
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["max"]
        server_side = p["server"]
        # the server counted exactly the timed requests (the warm-up came before)
        for key in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
            assert server_side[key]["count"] == 40, key
        assert server_side["fail"]["count"] == 0 and server_side["inference_count"] == 40
        assert 0 < p["service_ms"] < lat["mean"]
    rows = list(csv.reader(table.open()))
    assert rows[0] == list(CSV_COLUMNS)
    assert sorted(r[0] for r in rows[1:]) == ["1", "3"]
    for r in rows[1:]:
        values = [int(v) for v in r[2:]]
        parts, p50, p99 = sum(values[:7]), values[7], values[10]
        assert float(r[1]) > 0 and values[4] > 0          # server compute infer
        assert p50 <= p99
        point = next(p for p in points if p["concurrency"] == int(r[0]))
        assert abs(parts - point["latency_ms"]["mean"] * 1e3) <= 8     # the columns add up to the mean


def test_poisson_request_rate_against_serve(server, tmp_path):
    out, table = tmp_path / "run.json", tmp_path / "perf.csv"
    rc, stdout, stderr = bench("-u", server.grpc, "-i", "grpc", "-m", "demo",
                               "--request-rate-range", "40:80:40", "--request-distribution", "poisson",
                               "--requests", "30", "--warmup", "2",
                               "--json", str(out), "-f", str(table), "--input-data", "zero")
    assert rc == 0, stderr
    fig = json.loads(out.read_text())
    assert fig["load"]["distribution"] == "poisson" and fig["inputs"]["kind"] == "zero"
    points = fig["load"]["points"]
    assert [p["offered_per_s"] for p in points] == [40, 80]
    for p in points:
        assert p["requests"] == 30 and p["server"]["success"]["count"] == 30
    rows = list(csv.reader(table.open()))
    assert rows[0][0] == "Request Rate" and sorted(r[0] for r in rows[1:]) == ["40", "80"]


def test_poisson_gaps_are_not_constant(server, tmp_path):
    """--request-distribution poisson draws exponential gaps; constant spaces them evenly."""
    gaps = {}
    for distribution in ("poisson", "constant"):
        times = tmp_path / f"{distribution}.json"
        rc, _, stderr = bench("-u", server.http, "-m", "demo", "--request-rate-range", "100",
                              "--request-distribution", distribution, "--requests", "30", "--warmup", "0",
                              "--export-times", str(times))
        assert rc == 0, stderr
        scheduled = sorted(s["scheduled_ms"] for s in json.loads(times.read_text()))
        gaps[distribution] = np.diff(scheduled)
    assert np.ptp(gaps["constant"]) < 1e-6
    assert np.std(gaps["poisson"]) > 0.3 * np.mean(gaps["poisson"])


def test_unreachable_server(tmp_path):
    import socket

    with socket.socket() as s:                  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for protocol in ("http", "grpc"):
        rc, _, stderr = bench("-u", f"127.0.0.1:{port}", "-i", protocol, "-m", "demo")
        assert rc == 1
        assert f"{protocol.upper()} at 127.0.0.1:{port}" in stderr and "ServerUnreachable" in stderr


def test_unknown_model_names_the_servers(server):
    rc, _, stderr = bench("-u", server.http, "-m", "nothing")
    assert rc == 2
    assert "no model 'nothing'" in stderr
    assert "it has: batched (version 1), demo (version 1), demo (version 2)" in stderr


@pytest.mark.parametrize("args, says", [
    (["-i", "ftp", "-m", "demo"], "invalid choice: 'ftp'"),
    (["-m", "demo", "demo.yaml"], "not SPEC_OR_MODEL"),
    (["-x", "1"], "-m/--model-name"),
    (["-m", "demo", "--depth", "4"], "--depth does not go with --url"),
    (["-m", "demo", "--shape", "x:3"], "does not fit"),
    (["-m", "demo", "--shape", "y:64"], "has no input y"),
])
def test_usage_errors(server, args, says):
    rc, _, stderr = bench("-u", server.http, *args)
    assert rc == 2 and says in stderr, stderr


@pytest.mark.parametrize("option", [["-x", "1"], ["--shape", "x:64"], ["--input-data", "zero"]])
def test_server_options_without_a_server(option, tmp_path):
    rc, _, stderr = bench(str(tmp_path / "pipeline.yaml"), *option)
    assert rc == 2 and f"{option[0]} goes with -m NAME" in stderr, stderr


def test_shape_fills_the_dimensions_besides_the_batch(server, tmp_path):
    out = tmp_path / "run.json"
    rc, _, stderr = bench("-u", server.http, "-m", "demo", "-b", "2", "--shape", "x:64", "--requests", "5",
                          "--warmup", "0", "--json", str(out))
    assert rc == 0, stderr
    fig = json.loads(out.read_text())
    assert fig["config"]["shapes"] == {"x": [2, 64]}
    assert fig["load"]["points"][0]["server"]["inference_count"] == 10


def test_http_requests_use_binary_tensors():
    """Over HTTP the inputs and the outputs asked for go as the binary tensor extension, not JSON."""
    from ascend_engine.bench.remote import RemoteTarget, random_pool

    info = {"name": "demo", "inputs": [("x", "FP32", [-1, 64])], "outputs": ["probs"], "max_batch_size": 8}
    target = RemoteTarget("localhost:1", "http", info)
    pool = random_pool(info, {"x": (2, 64)})
    [inputs, *_] = target.requests(pool)
    assert inputs[0]._get_binary_data() == pool[0]["x"].tobytes()
    assert inputs[0]._get_tensor()["parameters"]["binary_data_size"] == 2 * 64 * 4
    assert target.outputs[0]._get_tensor()["parameters"]["binary_data"] is True
