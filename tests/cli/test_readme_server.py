"""The asyncio server shown in README.md runs as written and answers every client with its own rows."""

import asyncio
import os
import re
import subprocess
import sys

import numpy as np
from cli_run import ok, run_cli

import ascend_engine as ae

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_server() -> str:
    """The README's Python block that starts a server."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    [code] = [b for b in blocks if "start_server" in b]
    return code


async def clients(port, rows_per_client):
    """Each client sends its rows one by one on its own connection; returns what came back."""
    async def one(rows):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        got = []
        for row in rows:
            writer.write(row.tobytes())
            got.append(np.frombuffer(await reader.readexactly(10 * 4), np.float32))
        writer.close()
        await writer.wait_closed()
        return np.stack(got)

    return await asyncio.gather(*(one(rows) for rows in rows_per_client))


def test_the_readme_asyncio_server_answers_every_client_with_its_own_rows(tmp_path):
    ok(run_cli("sim", "make-demo", str(tmp_path / "demo")))
    code = readme_server()
    # the same program on a free port, saying which one once it listens
    assert code.count('"127.0.0.1", 8500') == 1 and code.count("await server.serve_forever()") == 1
    code = code.replace('"127.0.0.1", 8500', '"127.0.0.1", 0').replace(
        "await server.serve_forever()",
        "print(server.sockets[0].getsockname()[1], flush=True)\n        await server.serve_forever()")
    env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim", PYTHONPATH=ROOT)
    server = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.strip().isdigit(), (line, server.stderr.read() if server.poll() is not None else "")
        rng = np.random.default_rng(5)
        sent = [rng.standard_normal((12, 1, 64)).astype(np.float32) for _ in range(8)]
        got = asyncio.run(asyncio.wait_for(clients(int(line), sent), timeout=60))
    finally:
        server.terminate()
        server.wait(timeout=30)
    with ae.Pipeline.from_spec(str(tmp_path / "demo" / "pipeline.yaml")).compile(depth=2) as engine:
        for rows, answers in zip(sent, got, strict=True):
            expected = engine.run_batch({"x": rows.reshape(12, 64)}, batch_size=1)["probs"]
            np.testing.assert_allclose(answers, expected, rtol=1e-5, atol=1e-6)
