"""``ascend-engine serve`` in a child process on loopback, for the tests that drive it with real clients."""

import os
import signal
import subprocess
import sys
import tempfile
import time

from ascend_engine.sim.demo_models import write_demo

READY_SECONDS = 60.0


def demo_repository(root):
    """A model repository of the demo pipeline (docs/serve.md, "Repository"):
    ``demo`` with versions 1 and 2 (the same spec), and ``batched.yaml``, the
    demo with the dynamic batcher on.  Returns the folder."""
    files = write_demo(os.path.join(root, "files"))
    with open(files["spec"], encoding="utf-8") as f:
        text = f.read()
    for name, path in files["models"].items():
        text = text.replace(f"path: {name}.om", f"path: {path}")
    repo = os.path.join(root, "models")
    for version in ("1", "2"):
        os.makedirs(os.path.join(repo, "demo", version))
        with open(os.path.join(repo, "demo", version, "pipeline.yaml"), "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(repo, "batched.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace("streams: per-model", "streams: per-model\n  max_delay_ms: 2"))
    return repo


class ServerProcess:
    """A running ``ascend-engine serve``: ``http``, ``grpc`` and ``metrics`` are host:port."""

    def __init__(self, repo, *extra, grpc=True):
        env = dict(os.environ, ASCEND_ENGINE_BACKEND="sim")
        env.pop("ASCEND_SIM_FAULTS", None)
        # stderr to a file: a pipe nobody reads while the server runs could fill and stall it
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ascend_engine", "serve", repo, "--http-port", "0",
             "--grpc-port", "0" if grpc else "-1", "--metrics-port", "0", *extra],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env)
        self.ports = {}
        deadline = time.monotonic() + READY_SECONDS
        while "METRICS" not in self.ports:      # the last port the server prints
            line = self.proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"serve did not start: {self.errors()}")
            kind, _, address = line.strip().partition(" ")
            self.ports[kind] = address
        self.http, self.grpc, self.metrics = self.ports["HTTP"], self.ports.get("GRPC"), self.ports["METRICS"]

    def errors(self):
        """What the server wrote on stderr so far."""
        self.stderr.seek(0)
        return self.stderr.read()

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def wait(self, timeout=60):
        """(exit status, the rest of stdout, stderr) once the process has exited."""
        out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, self.errors()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


def write_variant(repo, folder, name, compile_lines):
    """``folder/name.yaml``: the demo spec of ``repo`` with ``compile_lines`` ({key: YAML value})
    added to its compile section.  Returns ``folder``."""
    with open(os.path.join(repo, "demo", "1", "pipeline.yaml"), encoding="utf-8") as f:
        text = f.read()
    extra = "".join(f"\n  {key}: {value}" for key, value in compile_lines.items())
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace("streams: per-model", "streams: per-model" + extra))
    return folder
