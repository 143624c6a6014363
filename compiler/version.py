"""`compiler_version()`: which compiler produced an artifact, a measurement or a dataset.

A digest of the compiler package's files, so it changes with any change to the compiler (and to
nothing else). It lives in its own module, importing nothing of the compiler, so that any module
can stamp what it produces without importing the pipeline (which imports nearly everything).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

COMPILER_DIR = Path(__file__).resolve().parent
# Files whose content defines what the compiler produces: its code and the CUDA headers it emits.
VERSIONED_SUFFIXES = (".py", ".cuh", ".h")


@cache
def compiler_version() -> str:
    """A digest of every source file of the compiler package (path and content), computed once
    per process: equal versions produced their artifacts with the same code."""
    digest = hashlib.sha256()
    for path in sorted(COMPILER_DIR.rglob("*")):
        if path.suffix not in VERSIONED_SUFFIXES or "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(COMPILER_DIR).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
