"""At exit, an engine the program forgot to close is released with
everything it uses, children before their device, even when the device is
still running work the engine abandoned after a timeout: nothing is printed
beyond the ResourceWarning of a dropped object, and nothing is left open
when the devices are reset."""

import re

from helpers import simlib

FORGOT_CLOSE = """
import os
import numpy as np
import ascend_engine as ae
from ascend_engine import sim

path = os.path.join(os.environ["FOLDER"], "slow.om")
g = sim.Graph("slow")
g.output("y", g.relu(g.input("x", "float32", (-1, 4))))
g.save(path, batch_sizes=[1, 2], latency_us=800_000)   # longer than the timeout
pipe = ae.Pipeline(0)
x = pipe.input("x", "float32", (-1, 4))
pipe.output("y", pipe.model(path, x, name="m"))
engine = pipe.compile(depth=2, timeout=0.2)            # never closed: the exit hook does it
try:
    engine.run({"x": np.ones((1, 4), np.float32)})
except ae.AclTimeoutError:
    print("timed out", flush=True)
print("exiting", flush=True)                          # the device still runs the abandoned request
"""


def calls(log):
    lines = [re.sub(r"^\[ascend-sim +[\d.]+ tid=\d+\] ", "", line) for line in log.read_text().splitlines()]
    return [c for c in lines if not c.startswith("note:")]


def test_an_unclosed_engine_on_a_busy_device_is_released_quietly_before_its_device(tmp_path):
    log = tmp_path / "calls.log"
    proc = simlib.run_python(FORGOT_CLOSE, env={"ASCEND_SIM_LOG": str(log), "FOLDER": str(tmp_path),
                                                "ASCEND_ENGINE_BACKEND": "sim"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout == "timed out\nexiting\n"
    assert "ascend_engine" not in proc.stderr and "failed" not in proc.stderr, proc.stderr
    seq = calls(log)
    final = max(i for i, c in enumerate(seq) if c.startswith("aclFinalize("))
    reset = max(i for i, c in enumerate(seq) if c.startswith("aclrtResetDevice("))
    unload = max(i for i, c in enumerate(seq) if c.startswith("aclmdlUnload("))
    streams_created = sum(c.startswith("aclrtCreateStream(") and c.endswith("= 0") for c in seq)
    destroyed = [i for i, c in enumerate(seq) if c.startswith("aclrtDestroyStream(") and c.endswith("= 0")]
    # the engine's executor is released (every stream destroyed), waiting for the device, before its
    # model is unloaded and its device reset; nothing runs after aclFinalize
    assert len(destroyed) == streams_created, seq[-40:]
    assert max(destroyed) < unload < reset < final, seq[-40:]
    waited = [i for i, c in enumerate(seq) if c.startswith("aclrtSynchronizeStream(") and c.endswith("= 0")]
    assert waited and max(waited) < unload
    assert seq[final].endswith("= 0") and seq[final + 1:] == []
