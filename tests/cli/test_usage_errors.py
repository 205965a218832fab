"""Options the command refuses as usage errors (exit 2) before anything runs: no device opened,
no request sent, nothing measured and then thrown away."""

import pytest
from cli_run import error_line, run_cli


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
