"""The README's `serve` example runs as written: the repository it lays out, the server, the client."""

import os
import re
import subprocess
import sys

from helpers.servers import ServerProcess

from ascend_engine.sim.demo_models import write_demo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_blocks():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("### Over the network: `ascend-engine serve`"):]
    shell = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return shell, python


def test_the_readme_serve_example(tmp_path):
    shell, python = readme_blocks()
    assert "ascend-engine serve models" in shell
    write_demo(tmp_path / "demo")
    [layout] = [line for line in shell.splitlines() if line.startswith("mkdir")]
    subprocess.run(layout, shell=True, check=True, cwd=tmp_path)
    server = ServerProcess(str(tmp_path / "models"))
    try:
        code = python.replace("localhost:8000", server.http)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(4, 10)"
