"""Limits on what the explorer accepts, so one upload cannot exhaust the machine.

`Limits` is a frozen dataclass passed down explicitly (importers, verifier, interpreter); it is
read from the environment once, at the edge (the command line, the web app's settings), by
`Limits.from_env()`. Every variable is checked when read, so a typo stops the program at start-up
instead of silently falling back to a default.

`read_limited` and `decode_utf8` are the first two steps of reading any text input: they turn an
oversized file or invalid UTF-8 into an `InputError` that says where, instead of a MemoryError or
a UnicodeDecodeError traceback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Mapping

from compiler.errors import InputError, LimitError, SourceLoc

ENV_PREFIX = "FUSION_EXPLORER_"

_BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


class ConfigurationError(ValueError):
    """A limit set in the environment has a value that is not a positive integer."""


@dataclass(frozen=True)
class Limits:
    max_input_bytes: int = 256 * 2**20
    max_nodes: int = 1_000_000
    max_rank: int = 16
    # 2^36 elements of bf16 are 128 GiB, about an H200's whole memory: no single tensor a GPU
    # can hold is bigger, and one of 10^11 elements is refused at its shape.
    max_tensor_elements: int = 2**36
    max_while_iterations: int = 1_000_000
    # Tuple shapes and computations (a while's body holding a conditional ...) nested deeper
    # than max_nesting, and chains of call/fusion deeper than max_call_depth, are refused:
    # real modules nest a few levels, and every walk of a shape or a call chain is then
    # bounded (a hostile file cannot exhaust the interpreter's stack).
    max_nesting: int = 64
    max_call_depth: int = 256
    # MLIR bytecode is read by a child process (compiler/importers/stablehlo.py), stopped after
    # this many seconds: a corrupt file can make MLIR's reader loop for ever.
    max_bytecode_seconds: int = 30

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """Limits from FUSION_EXPLORER_MAX_INPUT_BYTES, FUSION_EXPLORER_MAX_NODES, ...

        An unset variable keeps the default. The byte limit also accepts KiB, MiB and GiB
        suffixes ("64MiB"); every value must be a positive integer.
        """
        environ = os.environ if environ is None else environ
        values = {}
        for field in fields(cls):
            name = env_name(field.name)
            raw = environ.get(name)
            if raw is None:
                continue
            if field.name == "max_input_bytes":
                values[field.name] = parse_byte_size(name, raw)
            else:
                values[field.name] = parse_positive_int(name, raw)
        return cls(**values)


def env_name(field_name: str) -> str:
    """The environment variable that sets the limit `field_name`."""
    return ENV_PREFIX + field_name.upper()


def parse_positive_int(name: str, raw: str) -> int:
    """`raw` as a positive integer; ConfigurationError naming the variable otherwise."""
    text = raw.strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise ConfigurationError(f"{name} must be a positive integer, got {raw!r}")


def parse_byte_size(name: str, raw: str) -> int:
    """A byte count, optionally with a KiB/MiB/GiB suffix ("256MiB")."""
    text = raw.strip()
    for unit, factor in _BYTE_UNITS:
        if text.endswith(unit):
            number = text[: -len(unit)].strip()
            if number.isdigit() and int(number) > 0:
                return int(number) * factor
            break
    else:
        if text.isdigit() and int(text) > 0:
            return int(text)
    raise ConfigurationError(
        f"{name} must be a positive number of bytes such as 268435456 or 256MiB, got {raw!r}"
    )


def format_bytes(count: int, measured: bool = False) -> str:
    """'256 MiB', '1.5 GiB', '300 bytes'. A configured size that is a whole number of units is
    written without a fraction; a `measured` one always has one decimal ('1.0 GiB')."""
    for unit, factor in _BYTE_UNITS:
        if count >= factor:
            if count % factor == 0 and not measured:
                return f"{count // factor} {unit}"
            return f"{count / factor:.1f} {unit}"
    return f"{count} bytes"


def check_input_size(size: int, filename: str, limits: Limits) -> None:
    """LimitError when an input of `size` bytes is over `limits.max_input_bytes`."""
    if size > limits.max_input_bytes:
        raise LimitError(
            f"file is {format_bytes(size, measured=True)}; the limit is "
            f"{format_bytes(limits.max_input_bytes)} "
            f"({env_name('max_input_bytes')})",
            SourceLoc(filename),
        )


def read_limited(path: str | os.PathLike, limits: Limits | None = None) -> bytes:
    """The file's bytes; LimitError, without reading the rest, when it is over the limit."""
    limits = limits or Limits()
    filename = os.fspath(path)
    try:
        with open(path, "rb") as file:
            # A regular file's size is known before reading it: an oversize upload costs a
            # stat, not a read. A pipe has no size; it is read in chunks up to the limit.
            size = os.fstat(file.fileno()).st_size
            check_input_size(size, filename, limits)
            chunks, total = [], 0
            while total <= limits.max_input_bytes:
                chunk = file.read(min(1 << 24, limits.max_input_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > limits.max_input_bytes:
                raise LimitError(f"input is larger than the limit of "
                                 f"{format_bytes(limits.max_input_bytes)} "
                                 f"({env_name('max_input_bytes')})", SourceLoc(filename))
            data = b"".join(chunks)
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror}", SourceLoc(filename)) from None
    return data


def decode_utf8(data: bytes, filename: str) -> str:
    """`data` as text (a leading byte-order mark dropped); InputError at the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        line_start = data.rfind(b"\n", 0, error.start) + 1
        # Columns count characters, as JSON and the HLO parser count them.
        col = len(data[line_start:error.start].decode("utf-8-sig", errors="replace")) + 1
        bad = data[error.start]
        raise InputError(
            f"invalid UTF-8 (byte 0x{bad:02x}); save the file as UTF-8",
            SourceLoc(filename, line, col),
        ) from None
