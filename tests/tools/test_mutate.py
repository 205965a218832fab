"""tools/mutate.py on throw-away projects: apply, revert, stale mutants, scoring.

Only pure-Python mutants are run here (no native rebuild), each against a
one-file test suite in a temporary folder, so these tests stay cheap.  The
real mutant list is checked for shape, not run.
"""

import importlib.util
import os
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_tool():
    spec = importlib.util.spec_from_file_location("mutate_tool", os.path.join(REPO, "tools", "mutate.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


mutate = _load_tool()

SOURCE = textwrap.dedent('''\
    def add(a, b):
        return a + b


    def clamp(x):
        return max(0, x)


    def wait():
        return 1
''')

TESTS = textwrap.dedent('''\
    from calc import add, clamp, wait


    def test_add():
        assert add(2, 3) == 5


    def test_wait():
        assert wait() == 1
''')


def entry(id, original, replacement, tests='["tests"]'):
    return textwrap.dedent(f'''\
        [[mutant]]
        id = "{id}"
        file = "calc.py"
        description = "{id} planted"
        tests = {tests}
        original = \'\'\'{original}\'\'\'
        replacement = \'\'\'{replacement}\'\'\'
    ''')


@pytest.fixture
def project(tmp_path):
    """A tiny project: calc.py and its tests."""
    (tmp_path / "calc.py").write_text(SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return tmp_path


def write_mutants(project, *entries):
    """Write the mutant list for ``project``; returns its path."""
    path = project / "mutants.toml"
    path.write_text("\n".join(entries))
    return str(path)


def test_the_projects_mutant_list_is_well_formed():
    mutants = mutate.load_mutants(mutate.DEFAULT_MUTANTS)
    assert len(mutants) >= 40
    files = {m.file for m in mutants}
    needs = ("csrc/executor.c", "planner/memory.py", "shapes.py", "_executor.pyx", "_model_execute.pxi")
    for needed in needs:
        assert "ascend_engine/" + needed in files
    assert any(f.startswith("ascend_engine/sim/csrc/") for f in files)
    for m in mutants:
        assert os.path.isfile(os.path.join(REPO, m.file)), m.id
        for t in m.tests:
            assert os.path.exists(os.path.join(REPO, t)), (m.id, t)
    # every planted bug still applies: its original text stands exactly once
    # in the code as it is now (a change to the code must update its mutants)
    ws = mutate.Workspace(REPO)
    stale = {m.id: ws.match_count(m) for m in mutants if ws.match_count(m) != 1}
    assert stale == {}


def test_apply_then_revert_restores_the_exact_bytes(project):
    (m,) = mutate.load_mutants(write_mutants(project, entry("plus", "a + b", "a - b")))
    ws = mutate.Workspace(str(project))
    original = ws.apply(m)
    assert original == SOURCE.encode()
    assert "return a - b" in (project / "calc.py").read_text()
    assert os.path.exists(project / mutate.JOURNAL)   # the original is journaled while mutated
    ws.revert(m, original)
    assert (project / "calc.py").read_bytes() == SOURCE.encode()
    assert not os.path.exists(project / mutate.JOURNAL)


def test_an_interrupted_run_is_repaired_by_the_next(project):
    (m,) = mutate.load_mutants(write_mutants(project, entry("plus", "a + b", "a - b")))
    mutate.Workspace(str(project)).apply(m)   # and never reverted: the process died
    assert mutate.Workspace(str(project)).recover() == "calc.py"
    assert (project / "calc.py").read_bytes() == SOURCE.encode()
    assert mutate.Workspace(str(project)).recover() is None


def test_revert_happens_when_the_run_is_interrupted(project, monkeypatch):
    (m,) = mutate.load_mutants(write_mutants(project, entry("plus", "a + b", "a - b")))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mutate, "run_tests", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mutate.Runner(str(project), timeout=60).run_one(m)
    assert (project / "calc.py").read_bytes() == SOURCE.encode()


def test_stale_and_ambiguous_mutants_are_reported_not_counted(project):
    mutants = mutate.load_mutants(write_mutants(project,
        entry("gone", "a * b", "a / b"),
        entry("twice", "return", "yield"),
    ))
    runner = mutate.Runner(str(project), timeout=60)
    outcomes = [runner.run_one(m) for m in mutants]
    assert [o.status for o in outcomes] == ["stale", "stale"]
    assert outcomes[0].detail == "the original snippet is not found in calc.py"
    assert outcomes[1].detail == "the original snippet is found 3 times in calc.py"
    assert (project / "calc.py").read_bytes() == SOURCE.encode()
    report, survivors = mutate.summarize(outcomes)
    assert survivors == 0
    assert report.splitlines() == [
        "mutation score: no mutant was counted",
        "stale (not counted): gone, twice",
    ]


def test_a_run_scores_killed_and_survived_and_lists_the_survivors(project, capsys):
    path = write_mutants(project,
        entry("plus", "a + b", "a - b"),
        entry("clamp", "max(0, x)", "min(0, x)"),          # no test calls clamp: survives
        entry("gone", "a * b", "a / b"),
    )
    rc = mutate.main(["--mutants", path, "--root", str(project), "--timeout", "300"])
    out = capsys.readouterr().out
    assert rc == 1
    assert (project / "calc.py").read_bytes() == SOURCE.encode()
    lines = out.splitlines()
    assert lines[0] == "baseline: tests"
    assert [line.split()[2] for line in lines[1:4]] == ["killed", "survived", "stale"]
    assert "mutation score: 1/2 killed (50.0 %)" in lines
    assert "stale (not counted): gone" in lines
    assert lines[-2:] == ["survivors:", "  clamp (calc.py): clamp planted"]


def test_a_hang_is_killed_by_the_timeout(project, capsys):
    path = write_mutants(project, entry("hang", "return 1", "import time; time.sleep(600)"))
    rc = mutate.main(["--mutants", path, "--root", str(project), "--timeout", "3", "--no-baseline"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.split()[2] == "timeout"
    assert "mutation score: 1/1 killed (100.0 %), 1 of them by timeout" in out.splitlines()
    assert (project / "calc.py").read_bytes() == SOURCE.encode()


def test_selection_by_id_and_file_and_listing(project, capsys):
    path = write_mutants(project, entry("plus", "a + b", "a - b"), entry("gone", "a * b", "a / b"))
    assert mutate.main(["--mutants", path, "--root", str(project), "--list", "--id", "gone"]) == 0
    assert capsys.readouterr().out.split() == ["gone", "calc.py", "gone", "planted", "[stale]"]
    assert [m.id for m in mutate.select(mutate.load_mutants(path), files=["calc"])] == ["plus", "gone"]
    assert mutate.main(["--mutants", path, "--root", str(project), "--id", "nope"]) == 2
    assert "unknown mutant ids ['nope']" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[mutant]]\nid = "a"\nfile = "calc.py"\n',
         "mutant #1 ('a'): missing original, replacement, description, tests"),
        (entry("a", "x", "x"), "replacement is identical to original"),
        (entry("a", "x", "y") + "\n" + entry("a", "y", "z"), "mutant #2 ('a'): duplicate id 'a'"),
        (entry("a", "x", "y", tests="[]"), "tests must be a non-empty list of test paths, got []"),
        ("title = 1\n", "expected [[mutant]] tables, found none"),
    ],
)
def test_malformed_mutant_lists_name_the_entry(tmp_path, text, message):
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(mutate.MutantFileError) as info:
        mutate.load_mutants(str(path))
    assert message in str(info.value)


def test_baseline_failure_stops_the_run(project, capsys):
    (project / "tests" / "test_calc.py").write_text(TESTS.replace("== 5", "== 6"))
    path = write_mutants(project, entry("plus", "a + b", "a - b"))
    assert mutate.main(["--mutants", path, "--root", str(project)]) == 2
    assert "the covering tests fail without any mutant" in capsys.readouterr().err
    assert (project / "calc.py").read_bytes() == SOURCE.encode()
