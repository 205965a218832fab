"""One table of compile options (ascend_engine/options.py) read by the API, spec files and the CLI."""

import inspect

import pytest
from cli_run import run_cli

import ascend_engine as ae
from ascend_engine import spec
from ascend_engine.errors import SpecError
from ascend_engine.options import COMPILE_OPTIONS, OPTIONS, SPEC_KEYS


def test_the_table_gives_compile_and_plan_their_defaults():
    for method in (ae.Pipeline.plan, ae.Pipeline.compile):
        params = inspect.signature(method).parameters
        for option in COMPILE_OPTIONS:
            assert params[option.name].default == option.default, (method.__name__, option.name)


def test_spec_files_take_exactly_the_table_keys_meant_for_them():
    assert spec.COMPILE_KEYS == SPEC_KEYS
    assert "wait" not in SPEC_KEYS   # a process-level choice, not part of a pipeline's description
    assert set(SPEC_KEYS) | {"wait"} == set(OPTIONS)


@pytest.mark.parametrize("name, value", [("depth", 4097), ("max_queue", (1 << 20) + 1)])
def test_a_spec_integer_above_the_table_limit_names_the_key_and_the_limit(name, value):
    option = OPTIONS[name]
    c = spec._Checker("p.yaml")
    with pytest.raises(SpecError) as info:
        spec._compile_options(c, {name: value})
    assert f"compile.{name}" in str(info.value)
    assert f"of at most {option.maximum}, got {value}" in str(info.value)


def test_a_spec_delay_above_the_table_limit_is_refused_with_the_range():
    c = spec._Checker("p.yaml")
    with pytest.raises(SpecError, match=r"compile.max_delay_ms.*from 0 to 60000"):
        spec._compile_options(c, {"max_delay_ms": 60001})
    assert spec._compile_options(c, {"max_delay_ms": 60000}) == {"max_delay_ms": 60000.0}


@pytest.mark.parametrize("flag, value, limit", [
    ("--depth", "4097", "4096"),
    ("--max-queue", "2000000", "1048576"),
    ("--max-delay-ms", "1e9", "60000"),
])
def test_cli_values_past_the_table_limit_are_usage_errors_before_anything_runs(demo, flag, value, limit):
    extra = ("--concurrency", "1") if flag != "--depth" else ()
    proc = run_cli("bench", str(demo["spec"]), flag, value, *extra)
    assert proc.returncode == 2, proc.stderr
    assert f"argument {flag}: expected at most {limit}, got {value!r}" in proc.stderr
    assert proc.stdout == ""   # refused while parsing: no device was opened, nothing was measured


def test_cli_choices_are_the_table_choices():
    proc = run_cli("bench", "x.yaml", "--gear-policy", "middle")
    assert proc.returncode == 2
    # argparse quotes the choices in some Python versions and not in others
    assert "invalid choice: 'middle'" in proc.stderr
    assert proc.stderr.replace("'", "").count("(choose from upper, nearest, lower)") == 1
    proc = run_cli("bench", "x.yaml", "--streams", "two")
    assert proc.returncode == 2
    assert proc.stderr.replace("'", "").count("(choose from per-model, single)") == 1
