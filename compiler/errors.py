"""Errors a user can act on.

Every problem with an input is raised as an `InputError` that says what is wrong and where:
`file:line:col` for text formats, the node name for ONNX and JSON graphs. The command line and
the web app print `str(error)` and nothing else, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """Where something came from: file, 1-based line and column (0 when not known)."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line and self.col:
            return f"{self.file}:{self.line}:{self.col}"
        if self.line:
            return f"{self.file}:{self.line}"
        return self.file


class InputError(Exception):
    """Bad input: `where` locates it, `message` says what is wrong and, ideally, what to do."""

    def __init__(self, message: str, where: SourceLoc | str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        if self.where is None:
            return self.message
        return f"{self.where}: {self.message}"


class UnsupportedError(InputError):
    """Well-formed input that uses something the explorer does not handle (named in message)."""


class LimitError(InputError):
    """Input larger than the configured limits (bytes, nodes, elements)."""
