"""pytest plugin: device fixtures, a hardware marker and device-timed benchmarks.

Registered through the ``pytest11`` entry point, so it is active wherever
ascend-engine is installed (docs/pytest-plugin.md):

* ``--ae-backend auto|acl|sim`` sets ``ASCEND_ENGINE_BACKEND`` before any
  test code loads AscendCL; ``--ae-device N`` chooses the device (default 0).
* fixtures ``ae_device`` (session), ``ae_stream``, ``ae_model_factory`` and
  ``device_benchmark`` (on top of pytest-benchmark's ``benchmark``);
* marker ``ascend_hardware``: the test needs a real Ascend NPU and is skipped,
  with the reason, on the simulator.

Nothing here imports ascend_engine's native modules or opens a device until a
fixture or a marked test needs it, so test runs that do not use the plugin
are unaffected.
"""

from __future__ import annotations

import os
import statistics

import pytest

BACKENDS = ("auto", "acl", "sim")
MARKER = "ascend_hardware"
_BACKEND_ENV = "ASCEND_ENGINE_BACKEND"


def pytest_addoption(parser):
    """``--ae-backend`` and ``--ae-device``."""
    group = parser.getgroup("ascend-engine", "ascend-engine devices and benchmarks")
    group.addoption("--ae-backend", choices=BACKENDS, default=None,
                    help="AscendCL backend for this run: sets ASCEND_ENGINE_BACKEND before anything loads it")
    group.addoption("--ae-device", type=int, default=None, metavar="ID",
                    help="device id used by the ae_* fixtures (default 0)")


def _apply_backend(value):
    if value:
        os.environ[_BACKEND_ENV] = value


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Set the backend before conftest files run (they may load AscendCL on import)."""
    _apply_backend(getattr(early_config.known_args_namespace, "ae_backend", None))


def pytest_configure(config):
    """Register the hardware marker; apply ``--ae-backend`` when loaded with ``-p``."""
    _apply_backend(config.getoption("ae_backend", None))
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test needs a real Ascend NPU (the real libascendcl.so); "
        "skipped on the AscendCL simulator",
    )


_backend_cache: dict = {}


def _backend_name():
    """(name, error): the loaded backend's name, or why it could not be loaded."""
    if "value" not in _backend_cache:
        try:
            import ascend_engine

            _backend_cache["value"] = (ascend_engine.backend().name, None)
        except Exception as exc:   # reported in the skip reason, not as an error in every test
            _backend_cache["value"] = (None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    return _backend_cache["value"]


def _hardware_skip_reason():
    """Why ``ascend_hardware`` tests cannot run here, or None on a real Ascend backend."""
    name, error = _backend_name()
    if error is not None:
        return f"needs real Ascend hardware: AscendCL could not be loaded ({error})"
    if name != "acl":
        return (f"needs real Ascend hardware: running on the AscendCL simulator (backend {name!r}; "
                f"{_BACKEND_ENV}={os.environ.get(_BACKEND_ENV, 'auto')})")
    return None


def pytest_collection_modifyitems(config, items):
    """Mark ``ascend_hardware`` tests skipped unless the real AscendCL backend is loaded.

    The backend is loaded only when some collected test carries the marker.
    """
    marked = [item for item in items if item.get_closest_marker(MARKER) is not None]
    if not marked:
        return
    reason = _hardware_skip_reason()
    if reason is not None:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=reason))


def _device_id(config) -> int:
    value = config.getoption("ae_device", None)
    return 0 if value is None else int(value)


@pytest.fixture(scope="session")
def ae_device(pytestconfig):
    """An open :class:`ascend_engine.Device` (``--ae-device``, default 0) for the session."""
    import ascend_engine as ae

    requested = pytestconfig.getoption("ae_backend", None)
    name = ae.backend().name
    if requested in ("acl", "sim") and name != requested:
        pytest.fail(f"--ae-backend {requested} was asked for, but AscendCL was already loaded as {name!r} "
                    "before the option took effect", pytrace=False)
    dev = ae.Device(_device_id(pytestconfig))
    yield dev
    dev.close()


@pytest.fixture
def ae_stream(ae_device):
    """A fresh :class:`ascend_engine.Stream` on ``ae_device``, closed after the test."""
    import ascend_engine as ae

    stream = ae.Stream(ae_device)
    yield stream
    stream.close()


class ModelFactory:
    """Builds simulator model files in the test's tmp_path and loads them.

    ``factory(graph_or_fn, name=None, batch_sizes=None, latency_us=0,
    latency_per_item_us=0)`` returns a loaded :class:`ascend_engine.Model` on
    the session's device.  ``graph_or_fn`` is a :class:`ascend_engine.sim.Graph`
    or a callable taking a fresh Graph (return value ignored unless it is a
    Graph).  Batch gears default to (1, 2, 4, 8) when an input has a -1 batch
    dimension.  :meth:`save` writes the file only and returns its path.  Every
    model loaded here is closed after the test.
    """

    DEFAULT_GEARS = (1, 2, 4, 8)

    def __init__(self, folder, device):
        self.folder = folder
        self.device = device
        self.models = []
        self.paths = []

    def graph(self, graph_or_fn, name=None):
        """The Graph to save: ``graph_or_fn`` itself, or what the callable builds."""
        from ascend_engine import sim

        if isinstance(graph_or_fn, sim.Graph):
            return graph_or_fn
        if not callable(graph_or_fn):
            raise TypeError(f"ae_model_factory takes a sim.Graph or a callable, got {graph_or_fn!r}")
        g = sim.Graph(name or getattr(graph_or_fn, "__name__", "model").strip("<>") or "model")
        built = graph_or_fn(g)
        return built if isinstance(built, sim.Graph) else g

    def save(self, graph_or_fn, name=None, batch_sizes=None, latency_us=0, latency_per_item_us=0) -> str:
        """Write the model file into the test's tmp_path; returns its path."""
        g = self.graph(graph_or_fn, name)
        if batch_sizes is None and g.batched:
            batch_sizes = self.DEFAULT_GEARS
        path = os.path.join(str(self.folder), f"{name or g.name}-{len(self.paths)}.om")
        g.save(path, batch_sizes=batch_sizes, latency_us=latency_us, latency_per_item_us=latency_per_item_us)
        self.paths.append(path)
        return path

    def __call__(self, graph_or_fn, name=None, batch_sizes=None, latency_us=0, latency_per_item_us=0):
        from ascend_engine import Model

        path = self.save(graph_or_fn, name, batch_sizes, latency_us, latency_per_item_us)
        model = Model.load(path, device=self.device)
        self.models.append(model)
        return model

    def close(self):
        """Close every model this factory loaded."""
        for m in reversed(self.models):
            m.close()
        self.models.clear()


@pytest.fixture
def ae_model_factory(tmp_path, ae_device):
    """Build simulator models in tmp_path and load them (see :class:`ModelFactory`)."""
    factory = ModelFactory(tmp_path, ae_device)
    yield factory
    factory.close()


class DeviceBenchmark:
    """Times a callable's device work with timing events, under pytest-benchmark.

    ``device_benchmark(fn, *args, stream=s, rounds=20, warmup_rounds=2,
    **kwargs)`` runs ``fn(*args, **kwargs)`` -- which enqueues work on
    ``stream`` -- between two timing events recorded on that stream, then
    synchronizes the stream, once per round through ``benchmark.pedantic``.
    The host figures are pytest-benchmark's; the device figures (milliseconds
    between the events) go to ``benchmark.extra_info`` as ``device_ms_mean``,
    ``device_ms_min``, ``device_ms_max``, ``device_ms_median``,
    ``device_ms_stddev`` and ``device_rounds``, so ``--benchmark-json`` and
    ``--benchmark-compare`` carry them.  Returns ``fn``'s last result;
    ``device_ms`` keeps the per-round samples.
    """

    def __init__(self, benchmark, request):
        self.benchmark = benchmark
        self._request = request
        self.device_ms: list = []

    def __call__(self, fn, *args, stream=None, rounds=20, warmup_rounds=2, **kwargs):
        import ascend_engine as ae

        if stream is None:
            stream = self._request.getfixturevalue("ae_stream")
        start, end = ae.Event(stream.device, timing=True), ae.Event(stream.device, timing=True)
        samples = []

        def timed():
            start.record(stream)
            result = fn(*args, **kwargs)
            end.record(stream)
            stream.synchronize()
            samples.append(ae.Event.elapsed_ms(start, end))
            return result

        try:
            result = self.benchmark.pedantic(timed, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1)
        finally:
            start.close()
            end.close()
        # pedantic runs the warm-up rounds first; they are not part of the figures
        self.device_ms = samples[warmup_rounds:] or samples
        ms = self.device_ms
        info = self.benchmark.extra_info
        info["device_ms_mean"] = statistics.fmean(ms)
        info["device_ms_min"] = min(ms)
        info["device_ms_max"] = max(ms)
        info["device_ms_median"] = statistics.median(ms)
        info["device_ms_stddev"] = statistics.stdev(ms) if len(ms) > 1 else 0.0
        info["device_rounds"] = len(ms)
        info["backend"] = ae.backend().name
        fullname = getattr(self.benchmark, "fullname", self._request.node.nodeid)
        _device_results(self._request.config).append((fullname, self._request.node.name, dict(info)))
        return result


# ---- the device time where the user looks: a table after pytest-benchmark's -------------------------------

DEVICE_FIGURES = ("min", "max", "mean", "median", "stddev")


def _device_results(config) -> list:
    """(fullname, test name, extra_info) of every device_benchmark of the run, kept on the config."""
    if not hasattr(config, "_ae_device_results"):
        config._ae_device_results = []
    return config._ae_device_results


def _compared_device_means(config) -> dict:
    """{fullname: (saved run, its device_ms_mean)} of the run --benchmark-compare loaded, if any."""
    session = getattr(config, "_benchmarksession", None)
    mapping = getattr(session, "compared_mapping", None) or {}
    out = {}
    for path, benches in mapping.items():
        for fullname, bench in benches.items():
            mean = (bench.get("extra_info") or {}).get("device_ms_mean")
            if mean is not None:
                out[fullname] = (os.path.basename(str(path)), float(mean))
    return out


def device_table(results, compared) -> list:
    """The lines of the device-time table: one row per device_benchmark, with the compared run's
    mean and the change when --benchmark-compare loaded one."""
    names = [name for _, name, _ in results]
    width = max([len("Name (device time in ms)"), *map(len, names)])
    head = f"{'Name (device time in ms)':<{width}} "
    head += " ".join(f"{f.capitalize():>10}" for f in DEVICE_FIGURES) + f" {'Rounds':>7}"
    if compared:
        head += f" {'Compared mean':>14} {'Change':>8}"
    lines = [head, "-" * len(head)]
    for fullname, name, info in results:
        row = f"{name:<{width}} " + " ".join(f"{info[f'device_ms_{f}']:>10.4f}" for f in DEVICE_FIGURES)
        row += f" {info['device_rounds']:>7}"
        if compared:
            saved = compared.get(fullname)
            if saved is None:
                row += f" {'-':>14} {'-':>8}"
            else:
                change = (info["device_ms_mean"] / saved[1] - 1.0) * 100.0 if saved[1] else float("nan")
                row += f" {saved[1]:>14.4f} {change:>+7.1f}%"
        lines.append(row)
    if compared:
        lines.append(f"compared with {', '.join(sorted({path for path, _ in compared.values()}))}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After pytest-benchmark's host-time table: the device time of every device_benchmark, and the
    compared run's device mean with --benchmark-compare (the figures are in its extra_info too)."""
    results = _device_results(config)
    if not results:
        return
    terminalreporter.write_sep("-", "ascend-engine device_benchmark: device time (timing events)")
    for line in device_table(results, _compared_device_means(config)):
        terminalreporter.write_line(line)


@pytest.fixture
def device_benchmark(request):
    """pytest-benchmark's ``benchmark`` plus device time from timing events (see :class:`DeviceBenchmark`)."""
    try:
        benchmark = request.getfixturevalue("benchmark")
    except pytest.FixtureLookupError:
        pytest.skip("device_benchmark needs pytest-benchmark (pip install pytest-benchmark)")
    return DeviceBenchmark(benchmark, request)
