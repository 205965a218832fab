"""Fixtures of the pyACL tests: programs run in a fresh process each (tests/helpers/pyacl.py)."""

import pytest
from helpers.pyacl import run_program


@pytest.fixture
def program():
    """run_program, asserting the program succeeded."""
    def run(name, *args, **env):
        proc = run_program(name, *args, **env)
        assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
        return proc
    return run
