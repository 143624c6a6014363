"""Which code may import which (docs/architecture.md). The compiler's packages form layers and
an import only goes down; no circle among its packages, or among the modules of one package;
the compiler imports nothing of the web app or the task queue; the workers import the web app,
never the reverse; the accounts' models import nothing of the runs' models. And a
function-level import of one of the compiler's own modules is there only to put off loading an
optional heavy package (torch, onnx, ...).

All but the last are import-linter contracts (.importlinter), run by the tool itself on the
source (an import inside a function counts too); the tests also show, on a copy of the
packages, that breaking each kind of rule fails with a message naming the import.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("compiler", "explorer", "workers")
COMPILER = ROOT / "compiler"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Third-party packages that take seconds to load (torch) or that only some inputs need (onnx,
# jax, cupy on a GPU worker): a module that loads one at import time may be imported inside the
# function that needs it, so that everything else starts without it.
HEAVY_PACKAGES = ("torch", "torch_geometric", "onnx", "jax", "jaxlib", "cupy")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), str(root / ".importlinter"), "--no-cache"],
                          cwd=root, env={"PYTHONPATH": str(root)},
                          capture_output=True, text=True, timeout=120)


def test_the_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The packages and the contracts, copied: what a test breaks there leaves the checkout
    alone."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.h", "*.cuh", "*.html"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def _add_import(root: Path, module: str, statement: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{statement}\n")


def test_an_upward_import_breaks_the_layers(copy: Path):
    # codegen sits below fusion: a schedule may not read a fusion strategy.
    _add_import(copy, "compiler.codegen.emit", "from compiler.fusion.stitch import stitch_fusion")
    result = _lint(copy)
    assert result.returncode == 1
    assert "compiler.codegen is not allowed to import compiler.fusion" in result.stdout
    assert "compiler.codegen.emit -> compiler.fusion.stitch" in result.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(copy: Path):
    _add_import(copy, "compiler.kernels.plan",
                "def _later():\n    from compiler.cost.projected import rank_plans\n")
    result = _lint(copy)
    assert result.returncode == 1
    assert "compiler.kernels.plan -> compiler.cost.projected" in result.stdout


def test_independent_packages_stay_apart(copy: Path):
    # cost and runtime share a layer: the cost models never need the GPU runner.
    _add_import(copy, "compiler.cost.projected", "import compiler.runtime.gpu")
    result = _lint(copy)
    assert result.returncode == 1
    assert "compiler.cost.projected -> compiler.runtime.gpu" in result.stdout


def test_a_circle_between_modules_of_one_package_breaks_the_contract(copy: Path):
    # fusion.cost_based reads fusion.stitch (its stitch baseline); the reverse closes a circle.
    _add_import(copy, "compiler.fusion.stitch", "import compiler.fusion.cost_based")
    result = _lint(copy)
    assert result.returncode == 1
    assert "No cycles are allowed in compiler.fusion" in result.stdout
    assert "- .stitch -> .cost_based (1 import)" in result.stdout



def test_the_compiler_never_imports_the_web_app(copy: Path):
    _add_import(copy, "compiler.stages.pipeline", "from django.conf import settings")
    result = _lint(copy)
    assert result.returncode == 1
    assert "compiler is not allowed to import django" in result.stdout
    assert "compiler.stages.pipeline -> django" in result.stdout


def test_a_web_module_that_imports_a_task_breaks_the_contract(copy: Path):
    # Even inside a function, where it would run only when a job is sent.
    _add_import(copy, "explorer.runs",
                "def _send(pk):\n    from workers.tasks import compile_run\n")
    result = _lint(copy)
    assert result.returncode == 1
    assert "explorer is not allowed to import workers" in result.stdout
    assert "explorer.runs -> workers.tasks" in result.stdout


def test_an_accounts_model_that_imports_the_runs_models_breaks_the_contract(copy: Path):
    _add_import(copy, "explorer.account_models", "from explorer.models import Run")
    result = _lint(copy)
    assert result.returncode == 1
    assert "explorer.account_models is not allowed to import explorer.models" in result.stdout
    assert "explorer.account_models -> explorer.models" in result.stdout

def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module) -> tuple[set[str], list[tuple[int, str]]]:
    """(modules imported at load time, [(line, module)] imported inside functions); imports
    under `if TYPE_CHECKING:` never run and are left out."""
    at_load, later = set(), []

    def named(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level or not node.module:
            return []
        # `from compiler.codegen import schedules` imports the submodule too.
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]

    def walk(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    later.extend((child.lineno, name) for name in named(child)[:1])
                else:
                    at_load.update(named(child))
            walk(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return at_load, later


def test_function_level_imports_only_put_off_heavy_dependencies():
    modules = {_module_name(path): path for path in COMPILER.rglob("*.py")}
    loads, deferred = {}, []
    for name, path in modules.items():
        at_load, later = _imports(ast.parse(path.read_text()))
        loads[name] = at_load
        deferred += [(name, line, imported) for line, imported in later]

    heavy_memo: dict[str, bool] = {}

    def heavy(module: str, seen: frozenset = frozenset()) -> bool:
        """Whether loading `module` loads a heavy package (through its own imports at load
        time, its package's __init__ included)."""
        if module not in heavy_memo:
            parents = [".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)]
            found = False
            for imported in [*loads.get(module, ()), *parents]:
                if imported.split(".")[0] in HEAVY_PACKAGES:
                    found = True
                elif imported in modules and imported not in seen and imported != module:
                    found = heavy(imported, seen | {module})
                if found:
                    break
            heavy_memo[module] = found
        return heavy_memo[module]

    ours = [(name, line, imported) for name, line, imported in deferred
            if imported.split(".")[0] == "compiler"]
    assert ours, "the scan finds the learned model's deferred torch imports"
    offending = [f"{modules[name].relative_to(ROOT)}:{line}: {imported}"
                 for name, line, imported in ours
                 if imported in modules and not heavy(imported)]
    assert not offending, ("imported inside a function though loading it loads no heavy "
                           "package; import it at the top of the module:\n"
                           + "\n".join(offending))
