"""compiler/version.py: the compiler's version is a digest of its own files, and the module
stands alone, so any stage can stamp what it produces without importing the pipeline."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

COMPILER = Path(__file__).resolve().parents[2] / "compiler"


def _run(code: str, root: Path | None = None) -> str:
    """`code`'s stdout in a fresh interpreter (with `root` first on the path when given)."""
    path = [str(root)] if root else []
    script = f"import sys; sys.path[:0] = {path!r}\n{code}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, cwd=root or COMPILER.parent)
    return done.stdout.strip()


def _version_of(root: Path) -> str:
    return _run("from compiler.version import compiler_version; print(compiler_version())", root)


def test_the_version_module_imports_nothing_else_of_the_compiler():
    loaded = json.loads(_run("import sys, json, compiler.version; "
                             "print(json.dumps(sorted(m for m in sys.modules "
                             "if m.startswith('compiler'))))"))
    assert loaded == ["compiler", "compiler.version"]


def test_the_learned_dataset_module_no_longer_reaches_the_pipeline_nor_torch():
    loaded = json.loads(_run("import sys, json, compiler.cost.learned.dataset; "
                             "print(json.dumps(sorted(sys.modules)))"))
    assert "compiler.stages.pipeline" not in loaded
    assert "torch" not in loaded


def test_the_version_changes_with_a_source_file_and_with_nothing_else(tmp_path):
    copy = tmp_path / "compiler"
    shutil.copytree(COMPILER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _version_of(tmp_path)
    assert len(before) == 16 and int(before, 16) >= 0
    assert _version_of(tmp_path) == before

    (copy / "NOTES.md").write_text("not part of what the compiler produces\n")
    assert _version_of(tmp_path) == before

    header = copy / "codegen" / "fx_prelude.cuh"
    header.write_text(header.read_text() + "\n// a changed header changes the kernels\n")
    after_header = _version_of(tmp_path)
    assert after_header != before

    module = copy / "ir" / "ops.py"
    module.write_text(module.read_text() + "\n# a changed module\n")
    assert _version_of(tmp_path) not in (before, after_header)
