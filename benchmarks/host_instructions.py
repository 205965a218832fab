"""Host instructions per request, counted by callgrind: the repeatable twin of
bench_host_cost.py's CPU times (instruction counts do not move with the
machine's load, CPU times do).

Run:  python benchmarks/host_instructions.py [--models 1,3,16,32] [--requests 1000]

For each chain of static (1, 16) float32 models (depth 8, as in
bench_host_cost.py) it runs, each in a fresh process under
``valgrind --tool=callgrind``, and counts the calling thread's instructions:

* the engine: inside ``ae_engine_run_batch_timed`` (run_batch's GIL-free call, with or without times=);
* the C loop: inside its request loop (``run_requests`` in native/chain_loop.c);
* the ctypes loop: the difference between a run of ``--requests`` requests
  and a run of none (Python has no symbol to collect in).

All three run in a Python process that imported numpy, as the engine does:
the simulator's snprintf calls take a slower path in such a process (see
benchmarks/RESULTS.md), so a loop measured in a process of its own is not
like for like.  Instructions exclude the kernel: the futex wake-ups of the
simulator's stream workers, most of the CPU time on a loaded machine, are
not in these counts.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WARM_UP = 64


def child(kind, n_models, requests, folder):
    """Run one contender (inside callgrind); prints nothing the parent needs."""
    sys.path.insert(0, HERE)
    import numpy as np
    from _loops import CtypesChain, load_c_loop, run_c_loop
    from bench_host_cost import DEPTH, WIDTH, chain_engine

    import ascend_engine as ae

    paths = [os.path.join(folder, f"s{i}.om") for i in range(n_models)]
    device = ae.Device(0)
    device.make_current()
    if kind == "engine":
        with chain_engine(paths) as engine:
            x = np.zeros((requests, WIDTH), np.float32)
            engine.run_batch({"x": x[:WARM_UP]}, batch_size=1)   # collected too: subtracted below
            engine.run_batch({"x": x}, batch_size=1)
    elif kind == "c_loop":
        run_c_loop(load_c_loop(folder), paths, DEPTH, requests + WARM_UP, 1)
    else:
        with CtypesChain(paths, DEPTH, 1, WIDTH * 4, WIDTH * 4) as py:
            py.run(WARM_UP)
            if requests:
                py.run(requests)


def callgrind_total(kind, n_models, requests, folder, collect):
    out = os.path.join(folder, f"cg.{kind}.{n_models}.{requests}")
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}"]
    if collect:
        cmd.append(f"--toggle-collect={collect}")
    cmd += [sys.executable, os.path.abspath(__file__), "--child", kind, str(n_models), str(requests), folder]
    env = dict(os.environ, PYTHONHASHSEED="0", ASCEND_ENGINE_BACKEND="sim")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out + "-01") as f:   # thread 1: the caller
        m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="1,3,16,32")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, n_models, requests, folder = args.child
        return child(kind, int(n_models), int(requests), folder)
    sys.path.insert(0, HERE)
    from _loops import build_c_loop
    from bench_host_cost import static_model

    chains = [int(k) for k in args.models.split(",")]
    n = args.requests
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for i in range(max(chains)):
            static_model(os.path.join(folder, f"s{i}.om"), i)
        build_c_loop(folder)
        for k in chains:
            engine = callgrind_total("engine", k, n, folder, "ae_engine_run_batch_timed") / (n + WARM_UP)
            loop = callgrind_total("c_loop", k, n, folder, "run_requests*") / (n + WARM_UP)
            ctypes_runs = [callgrind_total("ctypes", k, m, folder, None) for m in (n, 0)]
            py = (ctypes_runs[0] - ctypes_runs[1]) / n
            results[k] = dict(engine=engine, c_loop=loop, ctypes=py)
            print(f"{k:3d} models: engine {engine:9.0f}  C loop {loop:9.0f}  ctypes {py:9.0f} instructions "
                  f"per request; engine / C loop {engine / loop:.3f}, ctypes / engine {py / engine:.2f}",
                  flush=True)
    lo, hi = min(chains), max(chains)
    if hi > lo:
        per_model = {w: (results[hi][w] - results[lo][w]) / (hi - lo) for w in ("engine", "c_loop")}
        print(f"per model: engine {per_model['engine']:.0f}, C loop {per_model['c_loop']:.0f} instructions; "
              f"engine / C loop {per_model['engine'] / per_model['c_loop']:.3f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
