"""Fixtures for the sim atc tests: the ONNX networks of tests/helpers/onnx_nets.py
saved once per session, and the suite's simulator session as ``lib``."""

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from helpers import onnx_nets  # noqa: E402


@pytest.fixture(scope="session")
def lib(sim_lib):
    return sim_lib


@pytest.fixture(scope="session")
def nets(tmp_path_factory):
    """{name: path} of the saved ONNX networks (resnet with a symbolic batch, yolo, crnn)."""
    folder = tmp_path_factory.mktemp("onnx")
    return {
        "resnet": onnx_nets.save(onnx_nets.resnet(), folder, "resnet"),
        "yolo": onnx_nets.save(onnx_nets.yolo(), folder, "yolo"),
        "crnn": onnx_nets.save(onnx_nets.crnn(), folder, "crnn"),
    }
