"""A content-addressed cache for compiled kernels, shared by processes on one machine.

Where: `FUSION_EXPLORER_CACHE_DIR` (an absolute path) or `var/cache` under the repository; the
build keeps its entries in the `build/` folder beneath. The variable is read once, at the edge,
by `BuildCache.from_env()`, and a bad value stops the program with a message naming it.

What: each entry is one JSON file named by a key, a SHA-256 over everything that can change the
compiler's output (see `cache_key`). Entries are written to a temporary file and renamed into
place, so two workers compiling the same kernel at once both end with a whole entry. Nothing is
ever evicted: remove the folder to reclaim space.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Mapping

from compiler.limits import ConfigurationError

CACHE_DIR_VARIABLE = "FUSION_EXPLORER_CACHE_DIR"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_ROOT = REPO_ROOT / "var" / "cache"

# Bump when the layout of an entry changes, so old entries are never misread.
ENTRY_FORMAT = 1


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The cache folder: FUSION_EXPLORER_CACHE_DIR when set, var/cache in the repo otherwise.

    A value that is empty, relative or names a file is a ConfigurationError: a typo must not
    scatter caches over whatever the current directory happens to be.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(CACHE_DIR_VARIABLE)
    if raw is None:
        return DEFAULT_CACHE_ROOT
    if not raw.strip():
        raise ConfigurationError(f"{CACHE_DIR_VARIABLE} is set but empty; give it an absolute "
                                 "path or unset it to use var/cache in the repository.")
    path = Path(raw)
    if not path.is_absolute():
        raise ConfigurationError(f"{CACHE_DIR_VARIABLE}={raw!r} is not an absolute path.")
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{CACHE_DIR_VARIABLE}={raw!r} exists and is not a directory.")
    return path


def cache_key(*parts: str | bytes) -> str:
    """SHA-256 over `parts`, each length-prefixed so ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256(f"fusion-explorer-build/{ENTRY_FORMAT}\n".encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()


def headers_digest(include_dirs: tuple[Path, ...] | list[Path]) -> str:
    """SHA-256 over the contents of every header under `include_dirs` (the codegen's prelude
    and whatever else a caller adds), so editing a header invalidates the kernels using it."""
    digest = hashlib.sha256()
    for directory in include_dirs:
        directory = Path(directory)
        digest.update(f"dir:{directory}\n".encode())
        for path in sorted(directory.rglob("*")):
            if path.is_file() and path.suffix in {".h", ".hpp", ".cuh", ".inc", ".inl"}:
                digest.update(f"{path.relative_to(directory)}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


class BuildCache:
    """JSON entries under `directory`; `bytes` values are stored as base64."""

    def __init__(self, directory: Path | str):
        self.directory = Path(directory)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BuildCache:
        return cls(cache_root(environ) / "build")

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The entry stored under `key`, or None (also for an unreadable, truncated entry)."""
        try:
            stored = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        if stored.get("format") != ENTRY_FORMAT:
            return None
        return {name: _decode(value) for name, value in stored["entry"].items()}

    def put(self, key: str, entry: Mapping[str, str | bytes | int | None]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = {"format": ENTRY_FORMAT,
                  "entry": {name: _encode(value) for name, value in entry.items()}}
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as file:
                json.dump(stored, file)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _encode(value):
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def _decode(value):
    if isinstance(value, dict) and "base64" in value:
        return base64.b64decode(value["base64"])
    return value
