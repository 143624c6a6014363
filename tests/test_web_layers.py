"""The web side's import direction (DESIGN.md, "Layout"): the workers import the web app, never
the reverse, and the accounts' models (teams, memberships, invites) import nothing of the runs'
models, which stand on them.

The contracts are import-linter's, run by the tool itself on the source (every import counts,
one inside a function too); the tests also show, on a copy of the packages, that an upward
import breaks them with a message naming the import.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("explorer", "workers")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

CONTRACTS = """
[importlinter]
root_packages =
    explorer
    workers

[importlinter:contract:workers-above-web]
name = The workers import the web app, never the reverse
type = layers
layers =
    workers
    explorer

[importlinter:contract:accounts-below-runs]
name = The accounts' models import nothing of the runs' models
type = layers
layers =
    explorer.models
    explorer.account_models
"""


def _lint(root: Path, config_dir: Path) -> subprocess.CompletedProcess:
    config = config_dir / "web-layers.ini"
    config.write_text(CONTRACTS)
    return subprocess.run([str(LINT_IMPORTS), str(config), "--no-cache"], cwd=root,
                          env={"PYTHONPATH": str(root)}, capture_output=True, text=True,
                          timeout=120)


def test_the_web_side_imports_one_way(tmp_path: Path):
    result = _lint(ROOT, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The web packages, copied: what a test breaks there leaves the checkout alone."""
    root = tmp_path / "copy"
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _add(root: Path, module: str, code: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{code}\n")


def test_a_web_module_that_imports_a_task_breaks_the_contract(copy: Path, tmp_path: Path):
    # Even inside a function, where it would run only when a job is sent.
    _add(copy, "explorer.runs", "def _send(pk):\n    from workers.tasks import compile_run\n")
    result = _lint(copy, tmp_path)
    assert result.returncode == 1
    assert "explorer is not allowed to import workers" in result.stdout
    assert "explorer.runs -> workers.tasks" in result.stdout


def test_an_accounts_model_that_imports_the_runs_models_breaks_the_contract(copy: Path,
                                                                            tmp_path: Path):
    _add(copy, "explorer.account_models", "from explorer.models import Run")
    result = _lint(copy, tmp_path)
    assert result.returncode == 1
    assert "explorer.account_models is not allowed to import explorer.models" in result.stdout
    assert "explorer.account_models -> explorer.models" in result.stdout
