"""Options the command refuses as usage errors (exit 2) before anything runs: no device opened,
no request sent, nothing measured and then thrown away."""

import pytest
from cli_run import error_line, parser_error, run_cli


@pytest.mark.parametrize("rate, message", [
    ("inf", "argument --rate: expected a finite rate of at most 1e+06 requests/s, got 'inf'"),
    ("1e7", "argument --rate: expected a finite rate of at most 1e+06 requests/s, got '1e7'"),
    ("nan", "argument --rate: expected a positive number, got 'nan'"),
])
def test_rates_no_run_could_offer_are_refused_by_the_parser(demo, rate, message):
    proc = run_cli("bench", str(demo["spec"]), "--rate", rate)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("rate, extra, message", [
    ("1e-300", (), "--rate 1e-300: 210 requests (warm-up included) arrive over about 2.1e+302 s at that "
                   "rate, more than 3600 s; raise the rate, or give fewer --requests or a --duration"),
    ("1e-9", (), "--rate 1e-09: 210 requests (warm-up included) arrive over about 2.1e+11 s at that rate, "
                 "more than 3600 s; raise the rate, or give fewer --requests or a --duration"),
    ("0.05", ("--requests", "190"), "--rate 0.05: 200 requests (warm-up included) arrive over about 4e+03 s"),
    ("0.5", ("--duration", "1"), "--rate 0.5: a 1 s run expects 0.5 arrivals, fewer than one; raise the "
                                 "rate or the --duration"),
])
def test_rates_whose_arrivals_would_not_come_are_usage_errors(demo, rate, extra, message):
    proc = run_cli("bench", str(demo["spec"]), "--rate", rate, *extra, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert error_line(proc).startswith(f"ascend-engine: error: {message}")
    assert proc.stdout == ""


@pytest.mark.parametrize("option", ["--json", "--export-times"])
def test_bench_outputs_that_cannot_be_written_are_refused_before_the_run(demo, tmp_path, option):
    proc = run_cli("bench", str(demo["spec"]), option, str(tmp_path), "--requests", "2")
    assert proc.returncode == 2
    assert error_line(proc) == (f"ascend-engine: error: {option}: cannot write {tmp_path}: it is a folder; "
                                "name a file in it")
    assert proc.stdout == ""
    missing = tmp_path / "no" / "such" / "out.json"
    proc = run_cli("bench", str(demo["spec"]), option, str(missing), "--requests", "2")
    assert proc.returncode == 2
    assert error_line(proc) == (f"ascend-engine: error: {option}: cannot write {missing}: no folder "
                                f"{missing.parent}")


def test_trace_out_to_a_folder_is_refused_before_the_run(demo, tmp_path):
    proc = run_cli("trace", str(demo["spec"]), "--out", str(tmp_path))
    assert proc.returncode == 2
    assert error_line(proc) == (f"ascend-engine: error: --out: cannot write {tmp_path}: it is a folder; "
                                "name a file in it")


def test_an_arrivals_thread_that_fails_fails_the_run_instead_of_reporting_it_kept_up(monkeypatch):
    """A failure in the open loop's timer thread is the run's failure (it once died silently and
    the bench reported an engine that kept up)."""
    import asyncio

    from ascend_engine.bench import load

    class Run:
        first, completed, failure = 0, 0, None

        def fail(self, exc):
            self.failure = exc

    class Boom(Exception):
        pass

    class Rng:
        def exponential(self, scale):
            raise Boom("the arrival schedule broke")

    monkeypatch.setattr(load.np.random, "default_rng", lambda seed: Rng())
    run = Run()
    asyncio.run(load.open_loop(engine=None, pool=[{}], rate=10.0, count=5, duration=None, run=run))
    assert isinstance(run.failure, Boom) and str(run.failure) == "the arrival schedule broke"


def test_a_batch_whose_random_feeds_cannot_fit_in_memory_is_a_usage_error(demo):
    """--batch 100000000 once failed after the plan with a raw MemoryError (47.7 GiB for one array)."""
    proc = run_cli("bench", str(demo["spec"]), "--batch", "100000000", "--requests", "2")
    assert proc.returncode == 2, proc.stderr
    line = error_line(proc)
    assert line.startswith("ascend-engine: error: --batch 100000000: 4 random feeds of 100000000 rows need "
                           "about 286.1 GiB of host memory, more than the ")
    assert line.endswith(" GiB free; use a smaller --batch")


# ---- a bad value: one line, not the whole usage (docs/cli.md, exit status) -----------------------------


@pytest.mark.parametrize("args, message", [
    (("--batch", "0"), "argument -b/--batch: expected a positive integer, got '0'"),
    (("--shapes", "8x64"), "argument --shapes: '8x64': '8x64' is not NAME:D,D,...; "
                           "expected NAME:D,D,...[;NAME:D,...] (such as x:1,3,640,480)"),
])
def test_a_bad_value_prints_its_one_line_and_where_the_options_are(demo, args, message):
    """argparse printed its 29 lines of usage before the one error line."""
    proc = run_cli("bench", str(demo["spec"]), *args)
    assert parser_error(proc) == message
    assert proc.stdout == ""


# ---- the size of a run: the engine's limits as usage errors ------------------------------------------


@pytest.mark.parametrize("args, message", [
    (("bench", "--model", "M", "--loop", "99999999999"),
     "argument --loop: expected at most 16777216 (the timeline of the run), got '99999999999'"),
    (("bench", "M", "--requests", "16777217"),
     "argument --requests: expected at most 16777216 (the timeline of a profiled run), got '16777217'"),
    (("trace", "SPEC", "--out", "t.json", "--requests", "100000000"),
     "argument --requests: expected at most 1048576 (Engine.trace's), got '100000000'"),
    (("bench", "SPEC", "--concurrency", "65537"),
     "argument --concurrency: expected at most 65536 (callers), got '65537' in '65537'"),
])
def test_run_sizes_beyond_the_engine_limits_are_usage_errors(demo, tmp_path, args, message):
    """--loop 99999999999 and trace --requests 100000000 once failed with a raw ValueError, exit 1."""
    named = {"SPEC": str(demo["spec"]), "M": str(demo["dir"] / "head.om")}
    proc = run_cli(*[named.get(a, a) for a in args], cwd=str(tmp_path))
    assert parser_error(proc, args[0]) == message
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("args, message", [
    (("--concurrency-range", "1:100000:1"),
     "--concurrency-range 1:100000:1: expected an END of at most 65536 callers"),
    (("--concurrency-range", "1:1000:1"), "--concurrency-range 1:1000:1: 1000 points of callers, more than "
                                          "256, each running the whole measurement; raise STEP or narrow the "
                                          "range"),
    (("--request-rate-range", "1:inf:1"), "--request-rate-range 1:inf:1: expected an END of at most 1e+06 "
                                          "requests/s"),
    (("--request-rate-range", "10:1000:0.5"), "--request-rate-range 10:1000:0.5: 1981 points of requests/s"),
])
def test_sweeps_of_hours_are_refused_naming_their_size(demo, args, message):
    """--concurrency-range 1:100000:1 was taken silently: 100,000 points, hours of running. (The
    missing --compare baseline is refused after the ranges: a range taken by mistake ends the run
    there instead of running it.)"""
    proc = run_cli("bench", str(demo["spec"]), *args, "--compare", "nowhere.json")
    assert proc.returncode == 2, proc.stderr
    assert error_line(proc).startswith(f"ascend-engine: error: {message}")
    assert proc.stdout == ""


@pytest.mark.parametrize("args, message", [
    (("bench", "SPEC", "--json", "/proc/out.json"), "--json: cannot write /proc/out.json: no such file or "
                                                    "directory"),
    (("bench", "SPEC", "--concurrency", "1", "-f", "/proc/perf.csv"),
     "-f: cannot write /proc/perf.csv: no such file or directory"),
    (("bench", "--model", "M", "--output", "/proc/out"),
     "--output: cannot write in /proc/out: no such file or directory"),
    (("trace", "SPEC", "--out", "/proc/t.json"),
     "--out: cannot write /proc/t.json: no such file or directory"),
])
def test_files_nothing_can_create_are_refused_before_the_run(demo, args, message):
    """os.access says yes to root in /proc, where nothing can be created: the file was found unwritable
    only after the whole run (a raw FileNotFoundError)."""
    named = {"SPEC": str(demo["spec"]), "M": str(demo["dir"] / "head.om")}
    last = "--no-progress" if args[0] == "bench" else "--requests=1"
    proc = run_cli(*[named.get(a, a) for a in args], last)
    assert proc.returncode == 2, proc.stderr
    assert error_line(proc) == f"ascend-engine: error: {message}"
    assert proc.stdout == ""


def test_a_writable_check_leaves_no_file_behind_and_keeps_an_existing_one(tmp_path):
    from ascend_engine.cli_args import writable

    writable(str(tmp_path / "new.json"), "--json")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "old.json").write_text("kept")
    writable(str(tmp_path / "old.json"), "--json")
    assert (tmp_path / "old.json").read_text() == "kept"


# ---- a command without its extra, a file of the wrong kind ---------------------------------------------


@pytest.mark.parametrize("argv, missing, message", [
    (["serve", "REPO"], "httptools", "serve needs the serve extra (httptools is missing): "
                                     "pip install 'ascend-engine[serve]'"),
    (["serve", "REPO", "--grpc-port", "0"], "grpc", "serve needs the serve extra (grpc is missing): "
                                                    "pip install 'ascend-engine[serve]'"),
    (["bench", "-m", "demo", "--url", "localhost:1"], "tritonclient.http",
     "bench -m/--url (HTTP) needs the client extra (tritonclient.http is missing): "
     "pip install 'ascend-engine[client]'"),
    (["bench", "-m", "demo", "-i", "grpc"], "tritonclient.grpc.aio",
     "bench -m/--url (GRPC) needs the client extra (tritonclient.grpc.aio is missing): "
     "pip install 'ascend-engine[client]'"),
])
def test_a_command_without_its_extra_names_the_extra(monkeypatch, capsys, tmp_path, argv, missing, message):
    """serve and bench -m without their packages failed with a bare ModuleNotFoundError."""
    import sys

    from ascend_engine import cli

    monkeypatch.setenv("ASCEND_ENGINE_BACKEND", "sim")
    monkeypatch.setitem(sys.modules, missing, None)     # the import fails as for a package not installed
    rc = cli.main([str(tmp_path) if a == "REPO" else a for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err == f"ascend-engine: error: {message}\n"


def test_bench_on_an_onnx_file_points_at_sim_atc(tmp_path):
    onnx = tmp_path / "det.onnx"
    onnx.write_bytes(b"\x08\x07")
    proc = run_cli("bench", str(onnx))
    assert proc.returncode == 2
    assert error_line(proc) == (
        f"ascend-engine: error: {onnx} is an ONNX model, not a model file the engine runs (.om): convert it "
        f"first, ascend-engine sim atc --model={onnx} --framework=5 --output=det --soc_version=SOC, then "
        "ascend-engine bench det.om (docs/simulator.md, \"ONNX models\")")
