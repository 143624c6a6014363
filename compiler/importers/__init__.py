"""Importers: XLA HLO text, StableHLO (MLIR text), ONNX and the project's JSON format, each
building a Graph.

`load_graphs(path)` is the one entry point the CLI, the workers and the tests use: it reads the
file within the configured limits, undoes gzip, picks the importer from the file name (or, for
an unknown suffix, from the content) and returns the verified graphs.
"""

from __future__ import annotations

import codecs
import os
import zlib

from compiler.errors import InputError, LimitError
from compiler.gc_pause import cyclic_gc_paused
from compiler.importers.hlo_text import import_hlo_modules
from compiler.importers.json_graph import import_json
from compiler.importers.modules import pick_module
from compiler.importers.stablehlo import import_stablehlo
from compiler.ir.graph import Graph
from compiler.limits import Limits, check_input_size, decode_utf8, read_limited

FORMATS = ("hlo", "stablehlo", "onnx", "json")
# How much of a file `detect_format` reads.
SNIFF_BYTES = 1 << 16
# What MLIR bytecode (`.mlirbc`) starts with.
MLIR_BYTECODE = b"ML\xefR"


def load_graphs(path: str, limits: Limits | None = None, fmt: str | None = None) -> list[Graph]:
    """Every graph in the file: one, or several for an HLO file split by `// -----` lines."""
    limits = limits or Limits.from_env()
    filename = os.path.basename(path)
    try:
        data = read_limited(path, limits)
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}", path) from None
    return import_bytes(data, filename, limits, fmt)


def load_graph(path: str, module: int = 0, limits: Limits | None = None) -> Graph:
    return pick_module(load_graphs(path, limits), module, path)


def import_bytes(data: bytes, filename: str, limits: Limits | None = None,
                 fmt: str | None = None) -> list[Graph]:
    """Import an uploaded file's bytes (the web app's entry point, no file on disk needed)."""
    limits = limits or Limits.from_env()
    check_input_size(len(data), filename, limits)
    name = filename
    if data[:2] == b"\x1f\x8b":
        name = filename[:-3] if filename.endswith(".gz") else filename
    data = decompressed(data, filename, limits)
    if not data:
        raise empty_file(filename)
    fmt = fmt or detect_format(name, data)
    with cyclic_gc_paused():
        return _import(data, filename, limits, fmt)


def _import(data: bytes, filename: str, limits: Limits, fmt: str) -> list[Graph]:
    if fmt == "onnx":
        # The onnx package takes a second to load; only ONNX uploads pay for it.
        from compiler.importers.onnx import import_onnx
        return [import_onnx(data, filename, limits)]
    if fmt == "stablehlo" and data.startswith(MLIR_BYTECODE):
        return [import_stablehlo(data, filename, limits)]
    if fmt == "unknown":   # before decoding: a zip archive is not text, and should not be
        raise unknown_format(data, filename)
    text = decode_utf8(data, filename)
    if fmt == "json":
        return [import_json(text, filename, limits)]
    if fmt == "hlo":
        return import_hlo_modules(text, filename, limits)
    if fmt == "stablehlo":
        return [import_stablehlo(text, filename, limits)]
    raise InputError(f"unknown format '{fmt}' (known: {', '.join(FORMATS)})", filename)


# What an upload may be, as the errors, the upload page and the README say it.
ACCEPTED = ("an HLO text module (.hlo, .txt: XLA's dumps and as_text()), StableHLO MLIR "
            "(.mlir, or .mlirbc bytecode), an ONNX model (.onnx) or the explorer's JSON graph "
            "(.json), each optionally gzip-compressed (.gz)")
ZIP_MAGIC = b"PK\x03\x04"
# The fields of ONNX's ModelProto (onnx.proto) by number, with their protobuf wire types
# (0: a varint, 2: length-delimited): what `looks_like_onnx` walks.
ONNX_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2}
# The newest ONNX IR version is 10 (2024); the bound leaves room for those to come.
MAX_ONNX_IR_VERSION = 64


def detect_format(filename: str, data: bytes) -> str:
    """The importer for an upload: "hlo", "stablehlo", "onnx", "json", or "unknown" (a zip
    archive, text of none of these under a name that does not say HLO, or binary data that
    does not start as an ONNX model does)."""
    suffix = os.path.splitext(filename)[1].lower()
    if data.startswith(ZIP_MAGIC) and suffix not in (".onnx", ".json"):
        return "unknown"
    if suffix == ".onnx":
        return "onnx"
    if suffix == ".json":
        return "json"
    if suffix in (".mlir", ".mlirbc") or data.startswith(MLIR_BYTECODE):
        return "stablehlo"
    head = data[:4096].lstrip()
    hlo_marks = b"HloModule" in head or b"ENTRY" in data[:65536] \
        or b"parameter(" in data[:65536]
    if suffix in (".hlo", ".txt", ".pbtxt"):
        # JAX's `.as_text()` is StableHLO, whatever the file is called.
        if head.startswith((b"module @", b"func.func")):
            return "stablehlo"
        # A .hlo file is HLO (its parse errors say where); a .txt with no trace of HLO is
        # judged by its content like a file of any other name.
        if suffix == ".hlo" or hlo_marks:
            return "hlo"
    if head.startswith(b"{"):
        return "json"
    if head.startswith((b"module @", b"module attributes", b"module {", b"func.func")):
        return "stablehlo"
    if hlo_marks:
        return "hlo"
    return "onnx" if looks_like_onnx(data[:SNIFF_BYTES]) else "unknown"


def looks_like_onnx(head: bytes) -> bool:
    """Whether `head`, a file's first bytes, starts a serialised ONNX model: its IR version
    first (every ONNX writer sets it, and protobuf writes fields in the order of their
    numbers), then ModelProto's fields, each with its wire type, as far as `head` goes (the
    last may be cut off: a truncated model is still ONNX, and its importer says what is
    wrong). Random bytes pass the first test one time in a thousand at most."""
    at, first = 0, True
    while at < len(head):
        tag, at = _varint(head, at)
        if tag is None:
            return not first
        number, wire = tag >> 3, tag & 7
        if ONNX_MODEL_FIELDS.get(number) != wire or (first and number != 1):
            return False
        value, at = _varint(head, at)
        if value is None:
            return True
        if number == 1 and not 1 <= value <= MAX_ONNX_IR_VERSION:
            return False
        if wire == 2:
            at += value
        first = False
    return not first


def _varint(data: bytes, at: int) -> tuple[int | None, int]:
    """The protobuf varint at `at` and where the next field starts; None when `data` ends
    inside it."""
    value, shift = 0, 0
    while at < len(data):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at
    return None, at


def _is_text(head: bytes) -> bool:
    """Whether a file's first bytes are UTF-8 text (the last character may be cut off)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head)
    except UnicodeDecodeError:
        return False
    return True


def unknown_format(head: bytes, filename: str) -> InputError:
    """The error of a file no importer reads, saying how its first bytes were judged."""
    if head.startswith(ZIP_MAGIC):
        judged = "a zip archive"
    elif _is_text(head[:SNIFF_BYTES]):
        judged = "text, but not HLO (no HloModule, ENTRY or parameter() in it), StableHLO " \
                 "(no module or func.func to start it) or JSON (no { to start it)"
    else:
        judged = "binary data, but not an ONNX model (whose first bytes give its IR version)"
    return InputError(f"not a format we read: the file is {judged}; the formats read are "
                      f"{ACCEPTED}", filename)


def empty_file(filename: str) -> InputError:
    return InputError("the file is empty (0 bytes): give the file that holds the graph",
                      filename)


def sniff_upload(data: bytes, filename: str, limits: Limits | None = None,
                 head_bytes: int = 1 << 16, size: int | None = None) -> tuple[str, bytes | None]:
    """An upload judged from its first bytes, without importing it: what the web app checks
    before it stores and queues an upload, whose full import then runs in a worker. Returns
    the format (`detect_format`, which reads no further than the first 64 KiB) and the whole
    content, decompressed, when it is at most `head_bytes` long (None when it is longer): a
    file that small is cheap to import at once. InputError for a file past the size limit,
    corrupt gzip data, or one of no format we read (with `import_bytes`'s messages).

    `size`: the whole file's size when `data` is only its beginning (the web app streams an
    upload to disk and reads back no more than `sniff_reach(head_bytes)` bytes of it)."""
    limits = limits or Limits.from_env()
    size = len(data) if size is None else size
    check_input_size(size, filename, limits)
    if size == 0:
        raise empty_file(filename)
    # Read as far as the larger of what detection looks at and what the caller would take.
    name, reach = filename, max(head_bytes, SNIFF_BYTES)
    if data[:2] == b"\x1f\x8b":
        name = filename[:-3] if filename.endswith(".gz") else filename
        decompressor = zlib.decompressobj(wbits=31)
        try:
            # Bounded both ways: at most `reach` + 1 MiB in and `reach` + 1 out, so a gzip
            # bomb costs no more here than a small file.
            head = decompressor.decompress(data[:sniff_reach(head_bytes)], reach + 1)
        except zlib.error as error:
            raise InputError(f"corrupt gzip data: {error}", filename) from None
        size = len(head) if decompressor.eof else None
    else:
        head = data[:reach + 1]
    fmt = detect_format(name, head)
    if fmt == "unknown":
        raise unknown_format(head, filename)
    return fmt, head if size is not None and size <= head_bytes else None


def sniff_reach(head_bytes: int) -> int:
    """How many of an upload's first bytes `sniff_upload(..., head_bytes)` reads at most."""
    return max(head_bytes, SNIFF_BYTES) + (1 << 20)


def decompressed(data: bytes, filename: str, limits: Limits | None = None) -> bytes:
    """An upload's bytes, gunzipped when gzip-compressed (within the input size limit)."""
    if data[:2] != b"\x1f\x8b":
        return data
    return _gunzip(data, filename, limits or Limits.from_env())


def _gunzip(data: bytes, filename: str, limits: Limits) -> bytes:
    decompressor = zlib.decompressobj(wbits=31)
    try:
        out = decompressor.decompress(data, limits.max_input_bytes + 1)
    except zlib.error as error:
        raise InputError(f"corrupt gzip data: {error}", filename) from None
    if len(out) > limits.max_input_bytes or decompressor.unconsumed_tail:
        raise inflated_past_limit(filename, limits)
    return out


def inflated_past_limit(filename: str, limits: Limits) -> LimitError:
    """The error of a gzip upload that decompresses past the input size limit (a gzip bomb)."""
    return LimitError(f"decompressed size exceeds the limit of {limits.max_input_bytes} "
                      "bytes (FUSION_EXPLORER_MAX_INPUT_BYTES)", filename)
