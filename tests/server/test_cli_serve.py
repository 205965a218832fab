"""``ascend-engine serve`` refuses what it cannot serve with one clear line and the right exit status."""

import os
import socket
import subprocess
import sys

import pytest


def serve(*args, timeout=60):
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim")
    return subprocess.run([sys.executable, "-m", "ascend_engine", "serve", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def error_line(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("ascend-engine: error: ")]
    return line


def test_a_repository_that_is_not_a_folder_is_a_usage_error(tmp_path):
    proc = serve(str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    want = f"ascend-engine: error: the model repository is not a folder: {tmp_path / 'nowhere'}"
    assert error_line(proc) == want


def test_an_empty_repository_says_what_it_looked_for(tmp_path):
    proc = serve(str(tmp_path))
    assert proc.returncode == 1
    want = ("holds no pipeline spec and no model folder (one model per NAME.yaml, "
            "NAME/VERSION/pipeline.yaml, or NAME/config.pbtxt with NAME/VERSION/model.om)")
    assert want in error_line(proc)


def test_a_broken_spec_stops_the_start_naming_its_key(tmp_path):
    (tmp_path / "bad.yaml").write_text("inputs: {x: {dtype: float32, shape: [-1, 4]}}\nmodels: []\n")
    proc = serve(str(tmp_path))
    assert proc.returncode == 1
    assert "SpecError" in error_line(proc) and "bad.yaml" in error_line(proc)


def test_two_spec_files_in_one_version_folder_are_refused(tmp_path):
    version = tmp_path / "m" / "1"
    version.mkdir(parents=True)
    (version / "a.yaml").write_text("{}")
    (version / "b.yaml").write_text("{}")
    proc = serve(str(tmp_path))
    assert proc.returncode == 1
    want = "holds several spec files (a.yaml, b.yaml): name the one to serve pipeline.yaml"
    assert want in error_line(proc)


def test_a_port_in_use_is_named(repo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(repo, "--http-port", str(port), "--grpc-port", "-1", "--metrics-port", "-1")
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in error_line(proc)


@pytest.mark.parametrize("value", ["65536", "-2", "http"])
def test_bad_ports_are_usage_errors(repo, value):
    proc = serve(repo, "--grpc-port", value)
    assert proc.returncode == 2
    assert f"argument --grpc-port: expected a port from 0 to 65535 (or -1: off), got '{value}'" in proc.stderr


def test_a_grpc_port_in_use_is_named(repo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(repo, "--http-port", "0", "--grpc-port", str(port), "--metrics-port", "-1")
    assert proc.returncode == 1
    assert f"cannot listen for gRPC on 127.0.0.1:{port}" in error_line(proc)


@pytest.mark.parametrize("args, words", [
    (["--device", "0", "--devices", "0,1"], "--device and --devices: give one"),
    (["--devices", "0,x"], "a comma-separated list of device ids (0,1,2,3), got '0,x'"),
    (["--devices", "1,1"], "device ids must be distinct, got '1,1'"),
    (["--devices", "0,99"], "--devices 99: the sim backend has 8 device(s) (ids 0 to 7)"),
])
def test_device_lists_the_server_cannot_use_are_usage_errors(tmp_path, args, words):
    proc = serve(str(tmp_path), "--http-port", "0", *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert words in proc.stderr.strip().splitlines()[-1]

@pytest.mark.parametrize("first,second", [
    ("demo.yaml", "demo/1/pipeline.yaml"),
    ("demo.yaml", "demo.yml"),
    ("demo/1/pipeline.yaml", "demo/01/pipeline.yaml"),
    ("demo/1/pipeline.yaml", "demo/1/pipeline.yml"),
])
def test_two_specs_of_one_model_version_are_refused_naming_both(tmp_path, first, second):
    for name in (first, second):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    proc = serve(str(tmp_path))
    assert proc.returncode == 1
    line = error_line(proc)
    a, b = str(tmp_path / first), str(tmp_path / second)
    assert f"{a} and {b} are both" in line or f"{b} and {a} are both" in line, line
    assert "keep one" in line


@pytest.mark.parametrize("folder", ["\u00b2", "\u0661"])   # superscript two; Arabic-Indic digit one
def test_a_version_folder_not_in_ascii_digits_is_refused(tmp_path, folder):
    (tmp_path / "demo" / "1").mkdir(parents=True)
    (tmp_path / "demo" / "1" / "pipeline.yaml").write_text("{}")
    (tmp_path / "demo" / folder).mkdir()
    (tmp_path / "demo" / folder / "pipeline.yaml").write_text("{}")
    proc = serve(str(tmp_path))
    assert proc.returncode == 1
    want = f"{tmp_path / 'demo'}: a version folder is named by ASCII digits (1, 2, ...), got {folder!r}"
    assert want in error_line(proc)
