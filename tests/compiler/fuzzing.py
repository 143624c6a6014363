"""Fuzz cases for the importers and the stages after them, shared by tests/compiler/test_fuzz.py
(a few hundred cases drawn by hypothesis) and benchmarks/fuzz.py (tens of thousands, nightly).

A case is a REAL input file (tests/data/, XLA's test inputs among them) put through one to
three mutations, then sometimes gzip-compressed (`make_case`):
- byte-level ones that know nothing of the format: bit flips, byte runs inserted, deleted or
  overwritten, a chunk of another file of the same format spliced in, a chunk of the file
  duplicated elsewhere, the file cut short;
- text-level ones for the three text formats: a token of the format's own syntax inserted, a
  number replaced by an interesting one (0, -1, 2^31, 10^11, 1e309, ...), a line deleted,
  duplicated or swapped with another, and two that keep the file consistent, so that it often
  imports and the later stages see new things: one element type replaced by another
  everywhere (`retype`), one dimension size by another in every shape (`resize`);
- structure-aware ones, so that cases get past the parser: an integer or name anywhere in an
  ONNX protobuf (dims, attributes, node inputs) changed through protobuf reflection, an
  initializer's data moved "outside the file" at an escaping path, a value anywhere in a JSON
  document replaced, deleted or duplicated.

Every random decision goes through a `Choices` object: `RandomChoices` (a seeded
`random.Random`) in the benchmark, whose case i of seed s is therefore the same on every run,
and one that draws from hypothesis in the test, so that hypothesis can shrink a failing case.

`run_case` is the property. It imports the case's bytes (`import_bytes`, as an upload is) and,
for each graph small enough to be cheap, runs the reference interpreter on small random inputs,
`explore` with every strategy (and the plan checker) and CUDA code generation of every kernel.
Each stage must succeed or raise an `InputError` whose message names the file; anything else
(an IndexError, a RecursionError, an InputError that does not say which file, a NumPy
RuntimeWarning printed on the user's terminal) is a bug.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence, TypeVar

import onnx

from compiler.errors import InputError
from compiler.fusion.explore import OUR_STRATEGIES, explore
from compiler.importers import decompressed, import_bytes
from compiler.importers.json_graph import export_json
from compiler.ir.interpreter import InterpreterOptions, evaluate
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import check_plan
from compiler.limits import Limits
from compiler.stages.codegen import emit_code
from compiler.target.devices import get_device

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "xla"   # XLA's own HLO test inputs, vendored

FORMATS = ("hlo", "stablehlo", "onnx", "json")
T = TypeVar("T")

# Graphs above this many nodes are only imported: the interpreter, explore and codegen cost
# a second or more on them, and the mutations that matter show up on small graphs as well.
MAX_DOWNSTREAM_NODES = 300
# The interpreter runs only when every tensor of the graph is at most this big.
MAX_INTERPRETED_ELEMENTS = 1 << 14
# A mutated while loop may run for ever within the importer's limits; the interpreter stops it
# here (an InputError), so a case costs milliseconds.
MAX_WHILE_ITERATIONS = 1000
# HLO graphs exported to JSON (lossless, `export_json`) to give the JSON importer seeds with
# computations, tuples and every attribute kind, beyond the hand-written ones.
JSON_FROM_HLO = ("ops_while.hlo", "ops_cond.hlo", "ops_gather_scatter.hlo",
                 "ops_sort_cumsum.hlo", "lstm_cell.hlo", "cross_entropy.hlo")


# -- seed files ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    format: str
    filename: str
    data: bytes


def load_seeds(max_bytes: int | None = None) -> dict[str, list[Seed]]:
    """The real files of each format, smallest first; only those of at most `max_bytes`."""
    found: dict[str, list[Seed]] = {fmt: [] for fmt in FORMATS}
    patterns = {"hlo": [DATA / "hlo", CORPUS], "stablehlo": [DATA / "stablehlo"],
                "onnx": [DATA / "onnx"], "json": [DATA / "json"]}
    suffixes = {"hlo": (".hlo",), "stablehlo": (".mlir", ".mlirbc"), "onnx": (".onnx",),
                "json": (".json",)}
    for fmt, folders in patterns.items():
        for folder in folders:
            for path in sorted(folder.glob("*")):
                if path.suffix in suffixes[fmt]:
                    found[fmt].append(Seed(fmt, path.name, path.read_bytes()))
    found["json"] += _json_exports_of_hlo()
    for fmt in FORMATS:
        seeds = [s for s in found[fmt] if max_bytes is None or len(s.data) <= max_bytes]
        found[fmt] = sorted(seeds, key=lambda s: (len(s.data), s.filename))
    return found


def _json_exports_of_hlo() -> list[Seed]:
    seeds = []
    for name in JSON_FROM_HLO:
        (graph,) = import_bytes((DATA / "hlo" / name).read_bytes(), name)
        text = json.dumps(export_json(graph), indent=1)
        seeds.append(Seed("json", name.replace(".hlo", ".json"), text.encode()))
    return seeds


# -- choices --------------------------------------------------------------------------------------


class Choices(Protocol):
    """Where a case's random decisions come from."""

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high], both included."""

    def choice(self, options: Sequence[T]) -> T:
        """One of `options` (not empty)."""


class RandomChoices:
    """Choices from a seeded `random.Random`: the same seed gives the same case."""

    def __init__(self, seed: int | str):
        self.rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


# -- the mutations --------------------------------------------------------------------------------

# What a number in a text file may become: the edges of the integer types, sizes past the
# element limit, and numbers the float parsers treat specially.
INTERESTING_NUMBERS = (
    "0", "1", "-1", "2", "3", "7", "8", "255", "256", "-128", "65535", "65536", "1000000",
    "2147483647", "2147483648", "-2147483648", "4294967295", "4294967296",
    "9007199254740993", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "100000000000", "1000000000000000000000000000000", "1e309", "-1e309", "1e-320", "0.5",
    "-0", "1.5", "0x10", "nan", "inf", "-inf",
)
# Tokens of each text format's own syntax, so inserted text is near-valid more often than not.
TOKENS = {
    "hlo": (
        "{", "}", "(", ")", "[", "]", ",", "=", "%", ":", "<=", "?", "\"", "\\", "\n", " ",
        "ROOT ", "ENTRY ", "HloModule m\n", "// -----\n", "f32[", "f32[]", "s32[]", "pred[",
        "(f32[2], (f32[2]))", "parameter(0)", "parameter(99)", "tuple()", "get-tuple-element(",
        "index=7", "calls=", "to_apply=", "dimensions={", "slice={[0:9999:1]}",
        "metadata={op_name=\"x\"}", "sharding={replicated}", "{1,0}", "{0,1,2,3}", "/*", "*/",
        "f32[4]{0} parameter(0)", "s32[] constant(-1)", "f32[] constant(nan)",
        "condition=", "body=", "branch_computations={", "while(", "call(", "fusion(",
        "kind=kLoop", "custom_call_target=\"x\"", "lhs_contracting_dims={5}",
    ),
    "stablehlo": (
        "{", "}", "(", ")", "<", ">", "[", "]", ",", ":", "=", "%", "@", "\"", "\n", " ",
        "%0", "%arg0", "%arg9", "tensor<", "tensor<f32>", "tensor<4x4xf32>", "tensor<?xf32>",
        "tensor<0x7xi32>", "x", "xf32>", "i1", "i64", "complex<f32>", "f8E4M3FN",
        "stablehlo.add ", "stablehlo.reshape ", "stablehlo.constant dense<1.0> : tensor<f32>",
        "dense<", "dense<[1, 2]>", "dims = [", "dims = [9]", "dimensions = [0, 0]",
        "func.func public @main(", "func.func private @f(", "call @main(", "call @f(",
        "return ", "stablehlo.return ", "^bb0(%a: tensor<f32>):", "module {", "}\n",
        "#loc = loc(unknown)", "loc(\"-\":1:1)", "across dimensions = [5]",
    ),
    "json": (
        "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "null", "true", "false", "-",
        "\"name\": ", "\"op\": ", "\"operands\": [", "\"shape\": [", "\"dtype\": \"f32\"",
        "\"attrs\": {", "\"computations\": {", "\"outputs\": [", "\"parameters\": [",
        "\"tuple\"", "\"x\"", "\"reducer\": \"add\"", "\"dimensions\": [", "[[[[[[[[",
        "[" * 3000, "{\"a\":" * 3000, "1e999999", "123456789012345678901234567890",
    ),
}
# Bytes that mean something to a protobuf parser: varint continuation, field tags of the
# common wire types, lengths far past the end.
PROTOBUF_BYTES = (
    b"\x00", b"\xff", b"\x7f", b"\x80", b"\x80\x80\x80\x80\x10", b"\xff\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x08\x01", b"\x0a\x7f", b"\x12\x00",
    b"\x1a\xff\xff\xff\x7f", b"\x3a\x02\x08\x01", b"\x42\x00",
)
# Names an ONNX external-data location may hold: inside the model's folder, and escaping it.
EXTERNAL_LOCATIONS = ("weights.bin", "../../etc/passwd", "/etc/passwd", "..", "a/../../b",
                      "\x00", "C:\\Windows\\win.ini")


def _position(choices: Choices, data: bytes) -> int:
    return choices.integer(0, len(data))


def _chunk(choices: Choices, data: bytes, longest: int = 256) -> tuple[int, int]:
    """A range [start, end) of `data`, at most `longest` bytes long."""
    start = choices.integer(0, len(data))
    return start, choices.integer(start, min(len(data), start + longest))


def flip_bits(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    # In a text format, mostly bits that keep ASCII ASCII: a character becomes another
    # instead of an invalid UTF-8 byte, which the first check of all would refuse.
    top_bit = 6 if fmt in TOKENS and choices.integer(0, 3) else 7
    for _ in range(choices.integer(1, 8)):
        index = choices.integer(0, len(out) - 1)
        out[index] ^= 1 << choices.integer(0, top_bit)
    return bytes(out)


def insert_bytes(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    at = _position(choices, data)
    if fmt == "onnx" or data.startswith(b"ML\xefR") or choices.integer(0, 3) == 0:
        insert = choices.choice(PROTOBUF_BYTES) * choices.integer(1, 4)
    else:
        top = 0x7f if fmt in TOKENS and choices.integer(0, 3) else 0xff
        insert = bytes(choices.integer(0, top) for _ in range(choices.integer(1, 16)))
    return data[:at] + insert + data[at:]


def delete_bytes(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    start, end = _chunk(choices, data, longest=64)
    return data[:start] + data[end:]


def overwrite_bytes(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """A run of bytes replaced in place by one byte value (0x00, 0xff, ...): lengths and
    counts in binary formats become huge or zero, the file keeps its size."""
    start, end = _chunk(choices, data, longest=8)
    value = choices.choice((0x00, 0xff, 0x7f, 0x80, 0x01))
    return data[:start] + bytes([value]) * (end - start) + data[end:]


def splice(choices: Choices, data: bytes, fmt: str, donors: Sequence[bytes]) -> bytes:
    """A chunk of another file of the format, inserted or written over part of this one."""
    donor = choices.choice(donors) if donors else data
    start, end = _chunk(choices, donor, longest=512)
    at = _position(choices, data)
    if choices.integer(0, 1):
        return data[:at] + donor[start:end] + data[at:]
    return data[:at] + donor[start:end] + data[at + (end - start):]


def duplicate(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """A chunk of the file repeated 1 to 8 times somewhere else in it."""
    start, end = _chunk(choices, data, longest=256)
    at = _position(choices, data)
    return data[:at] + data[start:end] * choices.integer(1, 8) + data[at:]


def truncate(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    return data[:_position(choices, data)]


def insert_token(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    at = _position(choices, data)
    token = choices.choice(TOKENS.get(fmt, TOKENS["hlo"])).encode()
    return data[:at] + token + data[at:]


_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def replace_number(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """One number of the text (a dimension, an index, a parameter number, a constant)
    replaced by one of INTERESTING_NUMBERS."""
    numbers = list(_NUMBER.finditer(data))
    if not numbers:
        return insert_token(choices, data, fmt, donors)
    number = choices.choice(numbers)
    new = choices.choice(INTERESTING_NUMBERS).encode()
    return data[:number.start()] + new + data[number.end():]


def edit_lines(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """A line deleted, duplicated, or swapped with another: names used before they are
    defined, defined twice, or never; a ROOT that is not last."""
    lines = data.split(b"\n")
    i, j = choices.integer(0, len(lines) - 1), choices.integer(0, len(lines) - 1)
    action = choices.choice(("delete", "duplicate", "swap"))
    if action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


# Element types as each text format spells them, for `retype`.
DTYPE_WORDS = {
    "hlo": ("f32", "f16", "bf16", "f64", "s32", "s64", "s8", "u8", "u32", "pred", "s4",
            "f8e4m3fn", "c64"),
    "stablehlo": ("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "ui8", "i1"),
    "json": ("f32", "f16", "bf16", "f64", "s32", "s64", "s8", "u8", "u32", "pred", "c64"),
}
# Where each text format writes a shape's dims, for `resize`: HLO's f32[4,8], StableHLO's
# tensor<4x8xf32>, JSON's "shape": [4, 8].
_SHAPES = {
    "hlo": re.compile(rb"(?<=[a-z0-9]\[)[0-9,]+(?=\])"),
    "stablehlo": re.compile(rb"(?<=tensor<)[0-9x]+(?=x[a-z])"),
    "json": re.compile(rb'(?<="shape": \[)[0-9, \n]+(?=\])'),
}


def retype(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """Every use of one element type replaced by another, so that the file stays consistent
    and often imports: the stages after import then meet types their seeds never had."""
    words = DTYPE_WORDS[fmt]
    present = [w for w in words if re.search(rb"\b" + w.encode() + rb"\b", data)]
    if not present:
        return insert_token(choices, data, fmt, donors)
    old, new = choices.choice(present), choices.choice(words)
    return re.sub(rb"\b" + old.encode() + rb"\b", new.encode(), data)


def resize(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """One dimension size replaced by another in every shape of the file (all 8s become 7s,
    or 0s, or 65537s): sizes the seeds never had, in a file that stays consistent where
    only shapes carry the size."""
    spans = list(_SHAPES[fmt].finditer(data))
    sizes = sorted({int(d) for span in spans for d in re.findall(rb"\d+", span[0])})
    if not sizes:
        return replace_number(choices, data, fmt, donors)
    old = str(choices.choice(sizes)).encode()
    new = str(choices.choice((0, 1, 2, 3, 5, 7, 16, 33, 127, 1000, 65537))).encode()

    def resized(span: re.Match) -> bytes:
        return re.sub(rb"\b" + old + rb"\b", new, span[0])

    return _SHAPES[fmt].sub(resized, data)


def mutate_onnx_field(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """An integer or a string anywhere in the ModelProto changed through protobuf reflection:
    a dim, an attribute's value, an opset version, an element type, a node's input name."""
    try:
        model = onnx.load_model_from_string(data)
    except Exception:  # an earlier mutation broke the protobuf: mutate its bytes instead
        return flip_bits(choices, data, fmt, donors)
    slots = list(_proto_slots(model))
    if not slots:
        return data
    message, descriptor, index = choices.choice(slots)
    if descriptor.type == descriptor.TYPE_STRING:
        names = sorted({value for m, d, i in slots if d.type == d.TYPE_STRING
                        for value in [_get(m, d, i)] if isinstance(value, str)})
        new: Any = choices.choice(names + ["", "x" * 300, "../../etc/passwd"])
    elif descriptor.type == descriptor.TYPE_BYTES:
        old = _get(message, descriptor, index)
        new = old[:choices.integer(0, len(old))]
    else:
        new = int(float(choices.choice(INTERESTING_NUMBERS[:24])))
    try:
        _set(message, descriptor, index, new)
    except (ValueError, TypeError):  # out of the field's range, or a closed enum's
        return data
    return model.SerializeToString()


def _proto_slots(message, depth: int = 0):
    """(message, field, index) of every scalar value in a protobuf message tree."""
    for descriptor, value in message.ListFields():
        repeated = descriptor.is_repeated
        values = list(value) if repeated else [value]
        for index, item in enumerate(values):
            if descriptor.type == descriptor.TYPE_MESSAGE:
                if depth < 8:
                    yield from _proto_slots(item, depth + 1)
            elif descriptor.type != descriptor.TYPE_BYTES or len(item) < 1 << 16:
                yield message, descriptor, index if repeated else None


def _get(message, descriptor, index):
    value = getattr(message, descriptor.name)
    return value if index is None else value[index]


def _set(message, descriptor, index, new) -> None:
    if index is None:
        setattr(message, descriptor.name, new)
    else:
        getattr(message, descriptor.name)[index] = new


def onnx_external_data(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """An initializer's data moved outside the file, at a location that may escape it."""
    try:
        model = onnx.load_model_from_string(data)
    except Exception:
        return flip_bits(choices, data, fmt, donors)
    if not model.graph.initializer:
        return data
    tensor = choices.choice(list(model.graph.initializer))
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    tensor.external_data.add(key="location", value=choices.choice(EXTERNAL_LOCATIONS))
    tensor.external_data.add(key="length", value=choices.choice(("0", "16", "-1", "x")))
    return model.SerializeToString()


def mutate_json_value(choices: Choices, data: bytes, fmt: str, donors) -> bytes:
    """A value anywhere in the document replaced (by a number, a name, null, a list, another
    value of the document), deleted, or, in a list, duplicated."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return insert_token(choices, data, fmt, donors)
    places = list(_json_places(document))
    if not places:
        return data
    container, key = choices.choice(places)
    action = choices.choice(("replace", "replace", "replace", "delete", "duplicate"))
    if action == "delete":
        del container[key]
    elif action == "duplicate" and isinstance(container, list):
        container.insert(key, container[key])
    else:
        container[key] = choices.choice(_json_replacements(choices, places))
    return json.dumps(document, indent=1).encode()


def _json_places(value, depth: int = 0):
    """(container, key) of every value below `value`."""
    if depth > 40:
        return
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        yield value, key
        yield from _json_places(item, depth + 1)


def _json_replacements(choices: Choices, places) -> list:
    container, key = choices.choice(places)
    other = container[key]
    number = float(choices.choice(INTERESTING_NUMBERS[:29]))
    return [int(number) if number.is_integer() else number, -1, 0, 2**63, 10**11, None,
            True, "", "x", "f32", "tuple", "add", [], {}, [1, 2, 3], [[4]], {"x": 1},
            json.loads(json.dumps(other))]


def gzip_wrap(choices: Choices, data: bytes) -> bytes:
    """The bytes gzip-compressed, and the gzip stream itself sometimes broken."""
    packed = gzip.compress(data, mtime=0)
    damage = choices.choice(("none", "none", "truncate", "flip"))
    if damage == "truncate":
        return packed[:choices.integer(2, len(packed))]
    if damage == "flip":
        return flip_bits(choices, packed, "gzip", ())
    return packed


BYTE_MUTATIONS = (flip_bits, insert_bytes, delete_bytes, overwrite_bytes, splice, duplicate,
                  truncate)
TEXT_MUTATIONS = (insert_token, replace_number, replace_number, edit_lines, retype, retype,
                  resize, resize)
MUTATIONS = {
    "hlo": BYTE_MUTATIONS + TEXT_MUTATIONS,
    "stablehlo": BYTE_MUTATIONS + TEXT_MUTATIONS,
    "json": BYTE_MUTATIONS + TEXT_MUTATIONS + (mutate_json_value,) * 4,
    "onnx": BYTE_MUTATIONS + (mutate_onnx_field,) * 5 + (onnx_external_data,),
}


# -- cases ----------------------------------------------------------------------------------------


@dataclass
class Case:
    format: str       # the seed's format (the mutated bytes may no longer be one)
    seed: str         # the seed file's name
    filename: str     # the name the bytes are uploaded under
    data: bytes
    steps: list[str] = field(default_factory=list)   # the mutations, in order


def make_case(choices: Choices, seeds: Sequence[Seed]) -> Case:
    """One seed of `seeds` (all of one format) through one mutation (half the cases), two or
    three, then gzip with probability 1/8."""
    seed = choices.choice(seeds)
    fmt = seed.format
    if seed.filename.endswith(".mlirbc"):   # binary: the text mutations would only break it
        mutations = BYTE_MUTATIONS
    else:
        mutations = MUTATIONS[fmt]
    donors = [s.data for s in seeds if s is not seed]
    data, steps = seed.data, []
    for _ in range(choices.choice((1, 1, 1, 2, 2, 3))):
        mutation = choices.choice(mutations)
        data = mutation(choices, data, fmt, donors)
        steps.append(mutation.__name__)
    filename = seed.filename
    if choices.integer(0, 7) == 0:
        data = gzip_wrap(choices, data)
        steps.append("gzip")
        if choices.integer(0, 3):
            filename += ".gz"
    return Case(fmt, seed.filename, filename, data, steps)


# -- the property ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What became of a case: "imported", "refused" (an InputError naming the file, from the
    importer), or "bug" (anything else, at any stage: `stage`, `error` say what). After import,
    each stage runs whether or not the one before it refused the graph (the interpreter
    refuses a graph whose constants the dump elided; explore and codegen need none)."""
    status: str
    stage: str = ""
    error: str = ""
    signature: str = ""   # stage, exception type and innermost compiler frame: one per bug
    trace: str = ""       # a bug's traceback
    nodes: int = 0
    stages: list[str] = field(default_factory=list)     # the stages that ran after import
    refusals: list[str] = field(default_factory=list)   # those that refused with an InputError

    def stage_results(self) -> list[str]:
        """What each stage after import did, once per stage: "explore ok", "interpret
        refused", ... (a stage that refused one of a file's modules counts as refused)."""
        return [f"{stage} {'refused' if stage in self.refusals else 'ok'}"
                for stage in dict.fromkeys(self.stages)]


class _Bug(Exception):
    def __init__(self, stage: str, error: BaseException | str):
        super().__init__(stage)
        self.stage, self.error = stage, error


class _Refused(Exception):
    pass


def run_case(case: Case, device: str = "h100", limits=None,
             max_downstream_nodes: int = MAX_DOWNSTREAM_NODES) -> Outcome:
    """Import the case (within `limits`, default `Limits()`) and run the stages after import
    on what it holds (module docstring)."""
    outcome = Outcome("imported")
    try:
        with warnings.catch_warnings():
            # A RuntimeWarning (NumPy's overflow in a cast, say) is printed on the user's
            # terminal, beside or instead of a message: a bug as well.
            warnings.simplefilter("error", RuntimeWarning)
            _run_stages(case, device, limits or Limits(), max_downstream_nodes, outcome)
    except _Refused:
        outcome.status = "refused"
    except _Bug as bug:
        outcome.status, outcome.stage = "bug", bug.stage
        if isinstance(bug.error, BaseException):
            outcome.error = f"{type(bug.error).__name__}: {bug.error}"[:2000]
            outcome.signature = _signature(bug.stage, bug.error)
            outcome.trace = "".join(traceback.format_exception(bug.error))[-20000:]
        else:
            outcome.error = bug.error
            outcome.signature = f"{bug.stage}: {bug.error.split(':')[0]}"
    return outcome


def _run_stages(case: Case, device: str, limits, max_downstream_nodes: int,
                outcome: Outcome) -> None:
    graphs = _stage("import", case, _import, case, limits)
    outcome.nodes = sum(len(graph) for graph in graphs)
    for graph in graphs[:2]:
        if len(graph) > max_downstream_nodes:
            continue
        if _small_enough_to_interpret(graph):
            _after_import("interpret", case, outcome, _interpret, graph)
        plans = _after_import("explore", case, outcome, _explore, graph, device)
        if plans is not None:
            _after_import("codegen", case, outcome, _codegen, graph, plans, device)


def _after_import(stage: str, case: Case, outcome: Outcome, function, *args):
    """`function(*args)` as the stage `stage` of a graph that imported: its result, or None
    when it refused the graph with an InputError naming the file."""
    outcome.stages.append(stage)
    try:
        return _stage(stage, case, function, *args)
    except _Refused:
        outcome.refusals.append(stage)
        return None


def _stage(stage: str, case: Case, function, *args):
    """`function(*args)`; an InputError naming the file means the case was refused, any
    other exception (or an InputError that does not name the file) is a bug of `stage`."""
    try:
        return function(*args)
    except InputError as error:
        if not _names_the_file(error, case, stage):
            raise _Bug(stage, f"InputError without the file name: {error}"[:2000]) from None
        raise _Refused() from None
    except Exception as error:  # any other one (RecursionError, MemoryError too) is a bug
        raise _Bug(stage, error) from None


def _names_the_file(error, case: Case, stage: str) -> bool:
    """Whether the message says where: the uploaded file, or, after import, a place the input
    itself gave the node (a JSON node's "loc", such as "model.hlo:12:3", which the format keeps
    from the file the graph was first read from)."""
    if case.filename in str(error):
        return True
    if stage == "import" or error.where is None:
        return False
    return str(error.where).encode() in decompressed(case.data, case.filename)


def _signature(stage: str, error: BaseException) -> str:
    """One line naming the bug: the innermost frame in the project's code that raised it."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if f.filename.startswith(str(ROOT / "compiler"))] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{stage}: {type(error).__name__} at {where}"


def _import(case: Case, limits):
    return import_bytes(case.data, case.filename, limits)


def _small_enough_to_interpret(graph) -> bool:
    computations = [graph, *graph.computations.values()]   # a module's, shared by each
    return all(leaf.size <= MAX_INTERPRETED_ELEMENTS
               for computation in computations for node in computation.nodes.values()
               for leaf in node.shape.leaves())


def _interpret(graph) -> None:
    options = InterpreterOptions(max_while_iterations=MAX_WHILE_ITERATIONS)
    evaluate(graph, random_inputs(graph), options)


def _explore(graph, device: str):
    plans = explore(graph, device, OUR_STRATEGIES, concurrent=False)
    for plan in plans.values():
        check_plan(graph, plan)
    return plans


def _codegen(graph, plans, device: str) -> None:
    spec = get_device(device)
    for plan in plans.values():
        for kernel in plan.kernels:
            emit_code(graph, plan, kernel, spec)
