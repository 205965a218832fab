"""The seams between the rooms (docs/executor.md, "The rooms"): the Engine and
its Server call each other's public methods only, and the server reaches the
engine through the device queue's typed interface (serving.DeviceQueue)."""

import ast
import os
import re

from ascend_engine._executor import DeviceQueue

import ascend_engine
from ascend_engine import serving

PACKAGE = os.path.dirname(ascend_engine.__file__)


def source(name):
    with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
        return f.read()


def test_the_server_calls_no_underscore_name_of_the_engine():
    tree = ast.parse(source("serving.py"))
    bad = [(node.lineno, node.attr) for node in ast.walk(tree)
           if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
           and node.value.id in ("engine", "queue") and node.attr.startswith("_")]
    assert bad == []


def test_the_engine_and_the_queue_call_no_underscore_name_of_the_server():
    for name in ("engine.py", "_executor.pyx", "_queue_memory.pxi"):
        calls = re.findall(r"_server\.(_\w+)", source(name))
        assert calls == [], (name, calls)


def test_the_device_queue_offers_the_interface_the_server_names():
    wanted = [n for n, v in vars(serving.DeviceQueue).items() if callable(v) and not n.startswith("_")]
    assert sorted(wanted) == ["complete_waited", "enqueue", "free_slots", "free_slots_hint", "in_flight",
                              "oldest", "wait_request"]
    assert [n for n in wanted if not callable(getattr(DeviceQueue, n, None))] == []
