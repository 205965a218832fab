"""Helpers shared by the test suites (import as ``from helpers import ...``)."""
