"""A pipeline's bytes input served as KServe BYTES: one JPEG per request at its own length, over
HTTP (binary and JSON) and gRPC, answered exactly as the pipeline in process (docs/serve.md, "BYTES")."""

import os
import re
import sys

import numpy as np
import pytest
from helpers.dvpp import jpeg_bytes, sample_image
from helpers.servers import ServerProcess
from helpers.triton_repo import JPEG_SPEC

from ascend_engine import spec
from ascend_engine.server import protocol

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))
import detector_classifier as dc  # noqa: E402


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("jpegs")
    models = root / "models"
    models.mkdir()
    dc.build_image_models(str(models), detector_us=0, classifier_us=0)
    (models / "jpegs.yaml").write_text(JPEG_SPEC)
    return str(models)


@pytest.fixture(scope="module")
def pictures():
    sizes = [(160, 120), (99, 77), (64, 48)]
    return [jpeg_bytes(sample_image(w, h, seed=k)) for k, (w, h) in enumerate(sizes)]


@pytest.fixture(scope="module")
def reference(repo):
    pipe, kwargs = spec.load(os.path.join(repo, "jpegs.yaml"))
    engine = pipe.compile(**kwargs)
    yield lambda jpeg: engine.run({"jpeg": jpeg})
    engine.close()


@pytest.fixture(scope="module")
def server(repo):
    running = ServerProcess(repo)
    yield running
    running.stop()


def test_the_length_prefixed_elements_are_read_as_kserve_writes_them():
    raw = b"".join(len(v).to_bytes(4, "little") + v for v in (b"ab", b"", b"xyz"))
    array = protocol.from_bytes("jpeg", "BYTES", (3,), raw)
    assert array.dtype == object and list(array) == [b"ab", b"", b"xyz"]
    with pytest.raises(Exception, match=r"BYTES element 1 says 9 bytes, but 3 are left"):
        protocol.from_bytes("jpeg", "BYTES", (2,), raw[:6] + (9).to_bytes(4, "little") + b"xyz")
    with pytest.raises(Exception, match=r"too few for its 4-byte length"):
        protocol.from_bytes("jpeg", "BYTES", (2,), raw[:6] + b"\x01\x00")
    with pytest.raises(Exception, match=r"shape \[2\] holds 2 BYTES elements, but 3 were given"):
        protocol.from_bytes("jpeg", "BYTES", (2,), raw)
    assert list(protocol.from_json_data("t", "BYTES", (1, 2), [["é", "b"]]).ravel()) == ["é".encode(), b"b"]


def test_the_bytes_input_is_advertised_as_one_bytes_element(server):
    client = httpclient.InferenceServerClient(server.http)
    try:
        meta = client.get_model_metadata("jpegs")
    finally:
        client.close()
    assert meta["inputs"] == [{"name": "jpeg", "datatype": "BYTES", "shape": [-1, 1]}]
    grpc = grpcclient.InferenceServerClient(server.grpc)
    try:
        config = grpc.get_model_config("jpegs", as_json=True)["config"]
    finally:
        grpc.close()
    assert config["input"] == [{"name": "jpeg", "data_type": "TYPE_STRING", "dims": ["1"]}]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_each_jpeg_is_sent_at_its_own_length(server, pictures, reference, protocol):
    """HTTP: binary tensors (a JPEG is not UTF-8 text, so JSON BYTES, which are strings, cannot
    carry it); gRPC: raw_input_contents."""
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http if protocol == "http" else server.grpc)
    try:
        for jpeg in pictures:
            tensor = module.InferInput("jpeg", [1], "BYTES")
            tensor.set_data_from_numpy(np.array([jpeg], dtype=object),
                                       **({"binary_data": True} if protocol == "http" else {}))
            result = client.infer("jpegs", [tensor])
            want = reference(jpeg)
            np.testing.assert_array_equal(result.as_numpy("scores"), want["scores"])
            np.testing.assert_array_equal(result.as_numpy("boxes"), want["boxes"])
    finally:
        client.close()


def test_a_uint8_tensor_at_the_jpegs_own_length_still_runs(server, pictures, reference):
    client = httpclient.InferenceServerClient(server.http)
    try:
        jpeg = pictures[1]
        tensor = httpclient.InferInput("jpeg", [1, len(jpeg)], "UINT8")
        tensor.set_data_from_numpy(np.frombuffer(jpeg, np.uint8).reshape(1, -1), binary_data=True)
        result = client.infer("jpegs", [tensor])
    finally:
        client.close()
    np.testing.assert_array_equal(result.as_numpy("scores"), reference(jpeg)["scores"])


@pytest.mark.parametrize("values, words", [
    ([b"a", b"b"], "one BYTES element per request (a JPEG), got 2 (shape [2])"),
    ([b"x" * 1048577], "1048577 bytes; model 'jpegs' takes 1 to 1048576 bytes per picture"),
    ([b""], "0 bytes; model 'jpegs' takes 1 to 1048576 bytes per picture"),
])
def test_bytes_the_pipeline_cannot_take_are_refused_naming_why(server, values, words):
    client = httpclient.InferenceServerClient(server.http)
    try:
        tensor = httpclient.InferInput("jpeg", [len(values)], "BYTES")
        tensor.set_data_from_numpy(np.array(values, dtype=object), binary_data=True)
        with pytest.raises(InferenceServerException, match=re.escape(words)):
            client.infer("jpegs", [tensor])
    finally:
        client.close()


def bench(*args):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "ascend_engine", "bench", "--no-progress", *args],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def inference_count(server):
    client = httpclient.InferenceServerClient(server.http)
    try:
        return client.get_inference_statistics("jpegs")["model_stats"][0]["inference_count"]
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bench_url_sends_random_jpegs_as_bytes(server, protocol, tmp_path):
    import json

    before = inference_count(server)
    out = tmp_path / "run.json"
    rc, _, stderr = bench("-u", server.http if protocol == "http" else server.grpc, "-i", protocol,
                          "-m", "jpegs", "--requests", "12", "--warmup", "0", "--json", str(out))
    assert rc == 0, stderr
    figures = json.loads(out.read_text())
    assert figures["config"]["shapes"] == {"jpeg": [1, 1]}
    assert figures["load"]["points"][0]["server"]["inference_count"] == 12
    assert inference_count(server) - before == 12


def test_bench_url_sends_the_jpeg_a_folder_gives(server, pictures, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jpeg").write_bytes(pictures[1])
    before = inference_count(server)
    rc, _, stderr = bench("-u", server.http, "-m", "jpegs", "--input-data", str(tmp_path / "data"),
                          "--requests", "5", "--warmup", "0")
    assert rc == 0, stderr
    assert inference_count(server) - before == 5
    rc, _, stderr = bench("-u", server.http, "-m", "jpegs", "--input-data", "zero", "--requests", "1")
    assert rc == 2 and "--input-data zero: input jpeg is BYTES (one JPEG per request)" in stderr, stderr
    rc, _, stderr = bench("-u", server.http, "-m", "jpegs", "--input-data", str(tmp_path), "--requests", "1")
    assert rc == 2 and f"--input-data {tmp_path}: no file jpeg for input jpeg" in stderr, stderr
