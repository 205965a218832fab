"""Fuzzing the model loader: mutated, truncated and random model images.

No input may crash the process or read out of bounds (run under AE_SANITIZE=1
to have ASan check the second part); every image is rejected with the right
code, or -- for the rare mutation that still describes a valid model (a changed
weight, a dimension that still broadcasts) -- loads and runs cleanly.

The loop runs in a child process so that a crash fails this test instead of
killing the test session.
"""

import json

from helpers import simlib

FUZZ = r"""
import ctypes, json, os, sys
import numpy as np
from helpers import mdl, simlib
from helpers.mdl import mlp, transformer_block

lib = simlib.load()
assert lib.aclInit(None) in (0, 100002)
assert lib.aclrtSetDevice(0) == 0
rng = np.random.default_rng(SEED)
models = [transformer_block(rng, seq=4, d=8, heads=2).to_bytes(batch_sizes=(1, 2, 4), latency_us=0),
          mlp(rng, d_in=8, hidden=8, d_out=4).to_bytes(batch_sizes=(2,)),
          mlp(rng, dtype="float16", d_in=4, hidden=4, d_out=2).to_bytes(batch_sizes=(1, 3))]
MAGIC = b"AESIMMDL"
stats = {"cases": 0, "145006": 0, "100013": 0, "100000": 0, "loaded": 0, "ran": 0}
bad = []

def expect(blob):
    if len(blob) == 0:
        return {100000}
    n = min(len(blob), 8)
    if blob[:n] != MAGIC[:n] or len(blob) < 16:
        return {145006}   # bad magic or too short (CANN 9.1's code for both)
    return {100013, 145006}   # malformed, or a header shorter than its version's

def try_run(mid):
    m = mdl.Loaded(lib, mid)
    try:
        if max(io["size"] for io in m.inputs + m.outputs) > (1 << 24):
            return
        bufs = mdl.Buffers(m)
        try:
            for p, io in zip(bufs.in_ptrs, m.inputs):
                lib.aclrtMemset(p, io["size"], 0, io["size"])
            if m.gears:
                bufs.set_batch(m.gears[0])
            rc = lib.aclmdlExecute(m.id, bufs.input, bufs.output)
            if rc != 0:
                bad.append(("loaded model failed to run", rc, simlib.recent_error(lib)))
            else:
                stats["ran"] += 1
        finally:
            bufs.close()
    finally:
        m.close()

def feed(blob, note):
    stats["cases"] += 1
    mid = ctypes.c_uint32()
    data = bytes(blob)
    rc = lib.aclmdlLoadFromMem(data if data else None, len(data), ctypes.byref(mid))
    if rc == 0:
        stats["loaded"] += 1
        try_run(mid.value)
        return
    stats[str(rc)] = stats.get(str(rc), 0) + 1
    msg = simlib.recent_error(lib)
    if rc not in expect(data) or not msg:
        bad.append((note, rc, msg[:200]))

for base in models:
    data_off = int.from_bytes(base[104:112], "little")
    # every truncation point of the structural part, some inside the weights
    for n in list(range(0, data_off + 1, max(1, data_off // 400))) + list(rng.integers(0, len(base), 50)):
        feed(base[:n], f"truncate {n}")
    for i in range(N_MUT):
        blob = bytearray(base)
        kind = rng.integers(0, 4)
        if kind == 0:       # random bytes anywhere in the structure
            for _ in range(rng.integers(1, 8)):
                blob[rng.integers(0, data_off)] = rng.integers(0, 256)
        elif kind == 1:     # one 32-bit field set to a boundary value
            at = int(rng.integers(0, data_off // 4)) * 4
            vals = [0, 1, 2, 7, 8, 16, 127, 128, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe]
            v = vals[int(rng.integers(len(vals)))]
            blob[at:at + 4] = v.to_bytes(4, "little")
        elif kind == 2:     # one 64-bit field set to a boundary value
            at = int(rng.integers(0, data_off // 8)) * 8
            vals = [0, 1, 64, 2**31, 2**32, 2**40, 2**63, 2**64 - 1, 2**64 - 64, len(base)]
            v = vals[int(rng.integers(len(vals)))]
            blob[at:at + 8] = v.to_bytes(8, "little")
        else:               # bit flips anywhere, weights included
            for _ in range(rng.integers(1, 4)):
                at = rng.integers(0, len(blob))
                blob[at] ^= 1 << int(rng.integers(0, 8))
        feed(blob, f"mutation {i} kind {kind}")
for i in range(N_RANDOM):
    feed(rng.integers(0, 256, rng.integers(0, 600)).astype(np.uint8).tobytes(), f"random {i}")
    feed(MAGIC + rng.integers(0, 256, rng.integers(0, 600)).astype(np.uint8).tobytes(), f"magic+random {i}")
print(json.dumps({"stats": stats, "bad": bad[:20], "n_bad": len(bad)}))
"""


def run_fuzz(seed, n_mut, n_random):
    code = "from helpers import simlib\n" + FUZZ.replace("SEED", str(seed)).replace(
        "N_MUT", str(n_mut)
    ).replace("N_RANDOM", str(n_random))
    proc = simlib.run_python(code, timeout=300)
    assert proc.returncode == 0, f"fuzz child died (rc {proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fuzz_loader():
    res = run_fuzz(seed=1234, n_mut=1000, n_random=300)
    stats = res["stats"]
    assert res["n_bad"] == 0, res["bad"]
    assert stats["cases"] > 4000
    # each family of rejection actually happened, and some mutants were valid models that ran
    assert stats["145006"] > 300 and stats["100013"] > 2000
    assert stats["ran"] == stats["loaded"]
