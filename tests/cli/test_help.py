"""``ascend-engine help [TOPIC]``: docs/cli.md from the command itself, section by section."""

import os

from cli_run import error_line, ok, run_cli

from ascend_engine import cli_help

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def manual():
    with open(os.path.join(REPO, "docs", "cli.md"), encoding="utf-8") as f:
        return f.read()


def test_help_bench_prints_the_bench_section_of_the_manual():
    text = manual()
    start = text.index("\n## bench\n") + 1
    end = text.index("\n## trace\n") + 1
    proc = ok(run_cli("help", "bench"))
    assert proc.stdout == text[start:end].rstrip("\n") + "\n"
    assert "### What each figure means and how it is measured" in proc.stdout


def test_help_alone_prints_the_introduction_and_the_topics():
    proc = ok(run_cli("help"))
    assert proc.stdout.startswith("# The `ascend-engine` command\n")
    assert "\n## " not in proc.stdout
    assert proc.stdout.endswith("More: ascend-engine help TOPIC, one of info, bench, trace, serve, sim\n")


def test_a_heading_inside_a_code_block_is_not_a_section():
    parts = cli_help.sections("intro\n## a\n```\n## not a heading\n# nor this\n```\ntext\n## b\nend\n")
    assert parts == {"": "intro\n", "a": "## a\n```\n## not a heading\n# nor this\n```\ntext\n",
                     "b": "## b\nend\n"}


def test_an_unknown_topic_is_a_usage_error_naming_the_topics():
    proc = run_cli("help", "benchh")
    assert proc.returncode == 2
    assert error_line(proc) == ("ascend-engine: error: no manual section for 'benchh'; the topics are info, "
                                "bench, trace, serve, sim")


def test_the_help_of_bench_and_trace_points_to_the_manual():
    bench = ok(run_cli("bench", "--help")).stdout
    assert "Every figure and option explained: ascend-engine help bench" in bench
    assert "More: ascend-engine help trace" in ok(run_cli("trace", "--help")).stdout
    assert "ascend-engine help [COMMAND]" in " ".join(ok(run_cli("--help")).stdout.split())


def test_every_command_the_parser_lists_has_a_manual_section():
    """`help serve` once said "no manual section for 'serve'" though serve is a listed command."""
    import argparse

    from ascend_engine.cli import build_parser

    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    listed = [name for name in commands.choices if name != "help"]   # help alone is the introduction
    assert "serve" in listed
    for name in listed:
        proc = ok(run_cli("help", name))
        assert proc.stdout.startswith(f"## {name}\n"), name
    assert set(listed) == set(cli_help.topics())
