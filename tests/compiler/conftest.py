"""Shared for compiler tests: a report of what the XLA corpus run rejected or dropped.

Tests append lines to the `corpus_report` fixture; pytest prints them in a section of its
closing summary, so every CI log lists the rejected corpus files and why, without -s.
"""

import pytest

_REPORT: list[str] = []


@pytest.fixture(scope="session")
def corpus_report() -> list[str]:
    return _REPORT


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("XLA corpus: rejected files and dropped computations")
        for line in _REPORT:
            terminalreporter.write_line(line)
