"""tests/gpu/ runs only where a CUDA device and CuPy are present (DESIGN.md, testing tiers).

Elsewhere every test here is skipped with the reason `gpu_available()` gives, which pytest's
`-ra` (pytest.ini) prints at the end of the run. Tests append lines to the `gpu_report` fixture
(per-kernel timings, errors, what was not measured and why); they are printed in a section of
the closing summary, so a GPU run's log holds the figures without -s.

On a lent GPU machine (no Django there; these tests need only compiler/ and CuPy), skip the
repository's pytest.ini and top conftest, which load the web app's fixtures:

    PYTHONPATH=. python3 -m pytest -c /dev/null --rootdir . --confcutdir=tests/gpu -q -ra tests/gpu

(2026-11-27, H200: 23 passed in 32 s.)
"""

import pytest

from compiler.runtime.gpu import gpu_available

_REPORT: list[str] = []


@pytest.fixture(scope="session")
def gpu_device() -> str:
    """The name of the GPU the tests run on; skips the test when there is none."""
    available, reason = gpu_available()
    if not available:
        pytest.skip(f"GPU tests need a CUDA device: {reason}")
    return reason


@pytest.fixture(autouse=True)
def _skip_without_gpu(gpu_device):
    """Every test in tests/gpu/ needs the GPU, whether or not it asks for gpu_device."""


@pytest.fixture(scope="session")
def gpu_report() -> list[str]:
    return _REPORT


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("Fusion Explorer GPU report: measured kernels and plans")
        for line in _REPORT:
            terminalreporter.write_line(line)
