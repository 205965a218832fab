"""``ascend-engine help [TOPIC]``: the command's manual, docs/cli.md, from the command itself.

docs/cli.md is the one text.  A wheel carries a copy inside the package
(setup.py's build_py puts it at ``ascend_engine/docs/cli.md``); a checkout
or an editable install reads the file in docs/ beside the package.
"""

from __future__ import annotations

import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))
PACKAGED = os.path.join(PACKAGE, "docs", "cli.md")                       # in an installed wheel
CHECKOUT = os.path.join(os.path.dirname(PACKAGE), "docs", "cli.md")      # in the source tree


def manual_path() -> str | None:
    """Where the manual is read from: the package's copy, else the checkout's; None when neither is."""
    for path in (PACKAGED, CHECKOUT):
        if os.path.isfile(path):
            return path
    return None


def manual_text() -> str:
    """The whole of docs/cli.md; RuntimeError naming both places when neither holds it."""
    path = manual_path()
    if path is None:
        raise RuntimeError("the manual (docs/cli.md) is missing from this installation: looked in "
                           f"{PACKAGED} and {CHECKOUT}")
    with open(path, encoding="utf-8") as f:
        return f.read()


def sections(text) -> dict:
    """``{"": the introduction, "bench": its "## bench" section, ...}``: split at level-2 headings.

    A ``#`` inside a fenced code block (shell output, comments) is not a heading.
    """
    parts, name, lines, fenced = {}, "", [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            parts[name] = "".join(lines)
            name, lines = line[3:].strip(), []
        lines.append(line)
    parts[name] = "".join(lines)
    return parts


def topics() -> list:
    """The commands the manual has a section for."""
    return [name for name in sections(manual_text()) if name]


def topic_text(topic=None) -> str:
    """The section of ``topic`` (a command: bench, trace, ...); the introduction when None.

    KeyError naming the topics there are for any other.
    """
    parts = sections(manual_text())
    key = topic or ""
    if key not in parts:
        raise KeyError(f"no manual section for {topic!r}; the topics are {', '.join(p for p in parts if p)}")
    return parts[key]
