"""StableHLO import: the MLIR text JAX users get by default (`jax.jit(f).lower(*args).as_text()`).

The text (or MLIR bytecode, `.mlirbc`) is parsed by MLIR itself, through the Python bindings
jaxlib ships (the version pinned in requirements.txt), in a context with the dialects JAX's
modules use registered (func, stablehlo, chlo, sdy and the other upstream ones jaxlib registers
for its own use). There is no hand-written MLIR parser: a syntax error comes back as MLIR
reports it, with its line and column in the upload.

Then the entry function (`main`, or the module's only public function) is walked op by op and
each op becomes a node of the Graph IR through the GraphBuilder, whose shape inference checks
every result against the type MLIR states for it:
- StableHLO ops map to the HLO op of the same meaning (`stablehlo.broadcast_in_dim` is
  `broadcast`, `stablehlo.dot_general` is `dot`, `stablehlo.exponential_minus_one` is
  `exponential-minus-one`, ...), with the HLO attribute names the IR uses;
- a `stablehlo.reduce` or `scatter` whose body applies one of the IR's reducers to its two
  arguments gets that reducer; any other region (a variadic reduce's, argmax's; a sort's
  comparator; a `while`'s condition and body; a `case`'s branches) becomes a computation;
  values a `while` or `case` region reads from outside it are passed in, as HLO's
  computations capture nothing (`_control`);
- `func.call` of another function of the module, and a `composite` op's decomposition, are
  inlined (JAX emits a call per nested `jax.jit` and for some library functions);
- a `custom_call` (a LAPACK call, a hand-written kernel) is the IR's `custom-call`, as the HLO
  import makes it; sharding annotations (Shardy's constraints, `@Sharding`) pass their value;
- a constant's value is read in whichever form MLIR printed it (lists, hex buffers, splats,
  `dense_resource` blobs: the "constants" part of `_Importer` says how);
- every node keeps the line and column of its op in the upload, so errors and the source view
  point at the text the user uploaded (not so for bytecode, nor for text whose ops carry
  locations of their own, JAX's `as_text(debug_info=True)`: those name the Python lines that
  made them, and the nodes only the upload).

An op outside the supported set is an UnsupportedError naming the op and its line.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
from typing import Any

import numpy as np

from compiler.errors import InputError, LimitError, SourceLoc, UnsupportedError
from compiler.importers.chlo import erf_inv
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import DType, dtype as dtype_named
from compiler.ir.graph import Graph
from compiler.ir.shapes import ArrayShape, Shape, TupleShape
from compiler.limits import Limits, env_name

# StableHLO ops whose operands and attributes carry over as they are (the result type says
# the rest: a reshape's dims, a bitcast's dtype), to the IR op of the same name with hyphens
# for underscores (`exponential_minus_one` is `exponential-minus-one`).
SAME_OPS = frozenset("""
    add subtract multiply divide remainder maximum minimum power and or xor not negate abs
    sign exponential exponential_minus_one log log_plus_one sqrt rsqrt cbrt tanh logistic
    sine cosine tan atan2 floor ceil round_nearest_even round_nearest_afz is_finite popcnt
    count_leading_zeros shift_left shift_right_logical shift_right_arithmetic select clamp
    reshape bitcast_convert dynamic_update_slice complex real imag
""".split())
# CHLO ops that are the IR op of the same name (chlo.square is x * x and chlo.erfc 1 - erf(x),
# made below; chlo.erf_inv is spelled out as XLA does, chlo.py). The other special functions
# CHLO has and the IR lacks (lgamma, digamma, next_after, bessel_i1e, ...) are refused with a
# pointer to the HLO text, where XLA has expanded them into elementwise ops.
CHLO_SAME_OPS = frozenset("erf tan acos acosh asin asinh atan atanh cosh sinh".split())
# Sharding annotations of a program for several devices (Shardy's ops, GSPMD's custom calls):
# they say where a value lives, not what it is, so the single-device graph passes the value.
SHARDING_OPS = ("sdy.sharding_constraint", "sdy.reshard")
SHARDING_TARGETS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")
# A reduce body's one op -> the IR's reducer.
REDUCER_OPS = {"stablehlo.add": "add", "stablehlo.multiply": "multiply",
               "stablehlo.maximum": "maximum", "stablehlo.minimum": "minimum",
               "stablehlo.and": "and", "stablehlo.or": "or"}
# MLIR element types -> the IR's dtype names.
_INTEGER = {1: "pred", 4: "s4", 8: "s8", 16: "s16", 32: "s32", 64: "s64"}
_UNSIGNED = {4: "u4", 8: "u8", 16: "u16", 32: "u32", 64: "u64"}
_FLOAT = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
          **{name: name.lower() for name in ("f8E3M4", "f8E4M3", "f8E4M3FN", "f8E4M3FNUZ",
                                              "f8E4M3B11FNUZ", "f8E5M2", "f8E5M2FNUZ",
                                              "f8E8M0FNU", "f4E2M1FN")}}
_COMPLEX = {"complex<f32>": "c64", "complex<f64>": "c128"}
# A location in the parsed text, as MLIR prints it ("-" is its name for the buffer). An op
# written with a location of its own (JAX's `as_text(debug_info=True)`: the Python line that
# made it) and every op of bytecode keep only the upload's name: their lines are not the
# upload's.
_LOCATION = re.compile(r'loc\("-":(?P<line>\d+):(?P<col>\d+)\)')
# Nested calls JAX never makes this deep: a module that does is refused, not a RecursionError.
MAX_CALL_DEPTH = 64
# A use of result N of a value (`%7#N`): MLIR's parser allocates room for N results before it
# checks that the op has them, gigabytes for a large N.
_RESULT_USE = re.compile(r"%[^\s#,:()=<>\[\]{}]+#(\d+)")


def import_stablehlo(text: str | bytes, filename: str, limits: Limits | None = None) -> Graph:
    """The Graph of the StableHLO module `text` (MLIR text, or bytecode as bytes; from
    `filename`, for messages)."""
    limits = limits or Limits()
    if isinstance(text, bytes):
        text = _bytecode_as_text(text, filename, limits)
    _check_result_numbers(text, filename, limits)
    ir, context = _context()
    with context, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as error:
            raise _parse_error(error, filename) from None
        functions = {_symbol(op.attributes["sym_name"]): op
                     for op in module.body.operations if op.operation.name == "func.func"}
        entry = _entry(functions, filename)
        # The graph is named after the module (`module @jit_f`), as an HLO module's is.
        named = module.operation.attributes
        name = _string(ir, named["sym_name"]) if "sym_name" in named else None
        return _Importer(ir, module, functions, filename, limits).run(entry, name)


def _check_result_numbers(text: str, filename: str, limits: Limits) -> None:
    """LimitError, before MLIR reads the text, for a use of a result number so large (more
    values than the graph may have nodes) that MLIR would allocate gigabytes for it."""
    for found in _RESULT_USE.finditer(text):
        if int(found[1]) >= limits.max_nodes:
            line = text.count("\n", 0, found.start()) + 1
            col = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
            raise LimitError(f"{found[0]} reads result {found[1]} of an op, more values than "
                             f"the limit of {limits.max_nodes} nodes "
                             f"({env_name('max_nodes')})", SourceLoc(filename, line, col))


def _context():
    """An MLIR context with the dialects of JAX's modules, made once per thread (the web
    server imports uploads on several threads, and a context is not for concurrent use;
    jaxlib is imported on first use: the other formats do not pay for it)."""
    found = getattr(_CONTEXTS, "context", None)
    if found is None:
        try:
            from jaxlib.mlir import ir
            from jaxlib.mlir._mlir_libs import _jax_mlir_ext
            from jaxlib.mlir.dialects import chlo, sdy, stablehlo
        except ImportError as error:  # pragma: no cover - jaxlib is a requirement
            raise UnsupportedError(f"StableHLO import needs jaxlib ({error})") from None
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)   # func and the other upstream dialects
        context = ir.Context()
        context.append_dialect_registry(registry)
        context.load_all_available_dialects()
        stablehlo.register_dialect(context)
        chlo.register_dialect(context)
        sdy.register_dialect(context)
        found = _CONTEXTS.context = ir, context
    return found


_CONTEXTS = threading.local()


# -- bytecode ---------------------------------------------------------------------------------
#
# MLIR's bytecode reader trusts its input far more than its text parser does: a few flipped
# bits make it loop for ever (a location attribute that refers to itself) or abort the whole
# process (an error message of invalid UTF-8, which the Python binding cannot convert), as the
# fuzz suite found (tests/compiler/test_fuzz.py). So bytecode is read by a child process, a
# fresh interpreter (no fork: a lock some thread of this one holds would stay held there),
# within `limits.max_bytecode_seconds` and BYTECODE_MEMORY. It prints the module as MLIR text
# with every op's own location; that text is then imported as an uploaded text is, and the
# nodes keep the locations the bytecode gave them (never lines of the upload). Starting the
# child costs about half a second, paid by bytecode uploads alone.

# Address space the child may use: the interpreter, jaxlib, and a few times the file's size.
BYTECODE_MEMORY = 8 << 30
_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bytecode_as_text(data: bytes, filename: str, limits: Limits) -> str:
    """MLIR bytecode printed as MLIR text by a child process (see above); InputError naming
    the file when the bytecode is invalid, LimitError when reading it takes too long."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [_PROJECT, *filter(None, [environment.get("PYTHONPATH")])])
    command = [sys.executable, "-c", "from compiler.importers.stablehlo import "
               "print_bytecode_as_text; print_bytecode_as_text()"]
    try:
        child = subprocess.run(command, input=data, capture_output=True, env=environment,
                               timeout=limits.max_bytecode_seconds)
    except subprocess.TimeoutExpired:
        raise LimitError(f"MLIR's bytecode reader did not finish in {limits.max_bytecode_seconds}"
                         f" s ({env_name('max_bytecode_seconds')}): the bytecode is corrupt or "
                         "far bigger than JAX writes; upload the MLIR text instead",
                         filename) from None
    reply = child.stdout
    if child.returncode == 0 and reply[:1] == b"T":
        return reply[1:].decode("utf-8", errors="replace")
    if child.returncode == 0 and reply[:1] == b"E":
        message = reply[1:].decode("utf-8", errors="replace")
        raise InputError(f"not a valid MLIR module: {message}", filename)
    code = child.returncode
    how = f"stopped by signal {-code}" if code < 0 else f"exited with status {code}"
    raise InputError(f"not valid MLIR bytecode: MLIR's bytecode reader failed on it ({how}); "
                     "upload the MLIR text (`lowered.as_text()`) instead", filename)


def print_bytecode_as_text() -> None:
    """The child process: bytecode on stdin; on stdout b"T" and the module's text, or b"E"
    and MLIR's error."""
    resource.setrlimit(resource.RLIMIT_AS, (BYTECODE_MEMORY, BYTECODE_MEMORY))
    data = sys.stdin.buffer.read()
    ir, context = _context()
    with context, ir.Location.unknown():
        try:
            module = ir.Module.parse(data)
        except ir.MLIRError as error:
            reply = b"E" + "; ".join(d.message for d in error.error_diagnostics).encode()
        else:
            reply = b"T" + module.operation.get_asm(binary=True, enable_debug_info=True)
    sys.stdout.buffer.write(reply)


def _parse_error(error, filename: str) -> InputError:
    """MLIR's first diagnostic, at its place in the upload (MLIR calls the buffer "-"), with
    any further ones after it."""
    diagnostics = list(getattr(error, "error_diagnostics", []))
    if not diagnostics:
        text = str(error).replace("Unable to parse module assembly:", "").strip()
        return InputError(f"not a valid MLIR module: {text}", filename)
    first, *rest = diagnostics
    message = f"not a valid MLIR module: {first.message}"
    for other in rest:
        where = _source_loc(other.location, filename)
        message += f"; line {where.line}: {other.message}" if where.line else \
            f"; {other.message}"
    return InputError(message, _source_loc(first.location, filename))


def _source_loc(location, filename: str) -> SourceLoc:
    """An MLIR location as a place in the upload: its line and column where it is one of the
    parsed text (`_LOCATION`), the upload alone otherwise."""
    found = _LOCATION.search(str(location))
    if found is None:
        return SourceLoc(filename)
    return SourceLoc(filename, int(found["line"]), int(found["col"]))


def _string(ir, attribute) -> str:
    """A string attribute's value. MLIR allows any bytes in a quoted string (`"\\FF"`), which
    the Python binding's `.value` cannot convert (a RuntimeError); bytes that are not UTF-8
    are replaced here instead."""
    return ir.StringAttr(attribute).value_bytes.decode("utf-8", errors="replace")


def _symbol(attribute) -> str:
    """The name a symbol's `sym_name` or a reference to it (`callee`) spells, as MLIR prints it
    (any byte that is not printable ASCII escaped, as `_string` explains), less `@` and quotes:
    the same text for a function and every call of it."""
    text = str(attribute).removeprefix("@")
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _entry(functions: dict, filename: str):
    if "main" in functions:
        return functions["main"]
    public = [op for op in functions.values()
              if "sym_visibility" not in op.attributes
              or str(op.attributes["sym_visibility"]).strip('"') == "public"]
    if len(public) == 1:
        return public[0]
    raise InputError("the module has no function 'main' to import (and not exactly one public "
                     f"function: {', '.join(functions) or 'none'})", filename)


class _Importer:
    def __init__(self, ir, module, functions: dict, filename: str, limits: Limits):
        self.ir, self.functions, self.filename, self.limits = ir, functions, filename, limits
        self.module = module
        # The module's dense_resource blobs by name, read on the first constant that has one.
        self.blobs: dict[str, bytes] | None = None
        self.builder = GraphBuilder("main", source=filename, limits=limits)
        self.counts: dict[str, int] = {}

    def run(self, entry, name: str | None) -> Graph:
        self.builder.graph.name = name or _string(self.ir, entry.attributes["sym_name"])
        block = entry.regions[0].blocks[0]
        values = {}
        where = self._where(entry)
        for k, argument in enumerate(block.arguments):
            values[argument] = self.builder.parameter(f"Arg_{k}",
                                                      self._shape(argument.type, where), where)
        outputs = self._block(block, values, depth=0)
        return self.builder.finish(outputs)

    # -- walking --------------------------------------------------------------------------------

    def _block(self, block, values: dict, depth: int) -> list[str]:
        """Adds the block's ops; returns the names its `return` returns."""
        for op in block.operations:
            name = op.operation.name
            if name in ("func.return", "stablehlo.return"):
                return [values[v] for v in op.operands]
            loc = self._where(op)
            if any(v not in values for v in op.operands):
                # Only a while's and a case's regions get what they capture handed in
                # (`_control`); HLO's reducers and comparators take their arguments alone.
                raise UnsupportedError(f"{name} in the body of {op.parent.name} reads a value "
                                       "defined outside the body, which the importer cannot "
                                       "pass to an HLO computation", loc)
            operands = [values[v] for v in op.operands]
            if name == "func.call":
                results = self._call(op, operands, loc, depth)
            elif name in ("stablehlo.while", "stablehlo.case"):
                results = self._control(op, name, operands, values, loc, depth)
            elif name == "stablehlo.reduce" and len(op.results) > 1:
                results = self._variadic_reduce(op, operands, loc, depth)
            elif name == "stablehlo.reduce_window":
                results = [self._reduce_window(op, operands, loc, depth)]
            elif name == "stablehlo.select_and_scatter":
                results = [self._select_and_scatter(op, operands, loc, depth)]
            elif name == "stablehlo.sort":
                results = self._sort(op, operands, loc, depth)
            elif name == "chlo.top_k":
                node = self.builder.add("topk", operands, {"k": int(self.ir.IntegerAttr(
                    op.attributes["k"]).value), "largest": True}, name=self._name("topk"),
                    loc=loc)
                results = self._untuple(node, len(op.results), loc)
            elif name == "stablehlo.rng_bit_generator":   # (new state, random bits)
                algorithm = "rng_" + self._enum(op.attributes["rng_algorithm"]).lower()
                node = self.builder.add(
                    "rng-bit-generator", operands, name=self._name("rng-bit-generator"),
                    loc=loc, shape=TupleShape(tuple(self._shape(result.type, loc)
                                                    for result in op.results)),
                    extra={"algorithm": algorithm})
                results = self._untuple(node, len(op.results), loc)
            elif name == "stablehlo.optimization_barrier":   # rematerialisation's fence
                barrier = self.builder.add("opt-barrier", [self._tuple(operands, loc)],
                                           name=self._name("opt-barrier"), loc=loc)
                results = self._untuple(barrier, len(op.results), loc)
            elif name == "stablehlo.composite":
                results = self._call(op, operands, loc, depth, attribute="decomposition")
            elif name in SHARDING_OPS or (name == "stablehlo.custom_call"
                                          and self._target(op) in SHARDING_TARGETS):
                results = operands[:1]   # where a value lives on a mesh: the value itself
            elif name == "stablehlo.custom_call":
                results = self._custom_call(op, operands, loc)
            else:
                results = [self._op(op, name, operands, loc, depth)]
            if len(results) != len(op.results):
                raise UnsupportedError(f"{name} with {len(op.results)} results is not "
                                       "supported", loc)
            for result, node in zip(op.results, results):
                values[result] = node
        raise InputError("the function has no return", self.filename)

    def _custom_call(self, op, operands: list[str], loc: SourceLoc) -> list[str]:
        """A library call or hand-written kernel (LAPACK's, a Pallas kernel): the IR's
        custom-call, as the HLO import makes it; the explorer launches it as a library
        kernel, and the interpreter runs only the targets whose meaning it knows."""
        shapes = [self._shape(result.type, loc) for result in op.results]
        shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
        node = self.builder.add("custom-call", operands,
                                {"custom_call_target": self._target(op)},
                                name=self._name("custom-call"), loc=loc, shape=shape)
        return self._untuple(node, len(op.results), loc)

    def _target(self, op) -> str:
        """A custom call's target name."""
        attrs = op.attributes
        if "call_target_name" not in attrs:
            return ""
        return _string(self.ir, attrs["call_target_name"])

    def _call(self, op, operands: list[str], loc: SourceLoc, depth: int,
              attribute: str = "callee") -> list[str]:
        """A function of the module inlined: `func.call`'s callee, or a composite op's
        decomposition (`attribute`)."""
        callee = _symbol(op.attributes[attribute])
        function = self.functions.get(callee)
        if function is None:
            raise InputError(f"call of an unknown function @{callee}", loc)
        if depth >= MAX_CALL_DEPTH:
            raise UnsupportedError(f"calls nested more than {MAX_CALL_DEPTH} deep", loc)
        block = function.regions[0].blocks[0]
        return self._block(block, dict(zip(block.arguments, operands)), depth + 1)

    # -- regions: while, case, variadic reductions ---------------------------------------------

    def _control(self, op, name: str, operands: list[str], values: dict, loc: SourceLoc,
                 depth: int) -> list[str]:
        """A `while` or `case` as HLO's `while` or `conditional`, whose computations take one
        value each: the loop state, or the branch's operand. Values a region reads from
        outside it (StableHLO lets a region capture them, HLO does not) are handed in: a
        loop carries them in its state unchanged, a branch gets them as its operand."""
        captured = [v for v in _free_values(op) if v in values]
        outside = [values[v] for v in captured]
        if name == "stablehlo.while":
            carried = operands + outside
            state = self._tuple(carried, loc)
            condition = self._computation(op.regions[0].blocks[0], "while_condition", state,
                                          len(operands), captured, depth)
            body = self._computation(op.regions[1].blocks[0], "while_body", state,
                                     len(operands), captured, depth, carry=True)
            loop = self.builder.add("while", [state], {"condition": condition, "body": body},
                                    name=self._name("while"), loc=loc)
            return self._untuple(loop, len(op.results), loc)
        index = operands[0]
        if self.builder.shape_of(index).dtype.name == "pred":
            raise UnsupportedError("a stablehlo.case on a pred index", loc)
        argument = self._tuple(outside, loc)
        branches = tuple(self._computation(region.blocks[0], f"branch_{k}", argument, 0,
                                           captured, depth)
                         for k, region in enumerate(op.regions))
        case = self.builder.add("conditional", [index] + [argument] * len(branches),
                                {"branch_computations": branches},
                                name=self._name("conditional"), loc=loc)
        return self._untuple(case, len(op.results), loc)

    def _variadic_reduce(self, op, operands: list[str], loc: SourceLoc,
                         depth: int) -> list[str]:
        """A reduce of several inputs (argmax's value and index): its body becomes the
        reducer computation, on scalars."""
        block = op.regions[0].blocks[0]
        to_apply = self._computation(block, "reducer", None, len(block.arguments), [], depth)
        node = self.builder.add("reduce", operands,
                                {"dimensions": self._ints(op.attributes["dimensions"]),
                                 "to_apply": to_apply}, name=self._name("reduce"), loc=loc)
        return self._untuple(node, len(op.results), loc)

    def _reduce_window(self, op, operands: list[str], loc: SourceLoc, depth: int) -> str:
        """A reduce_window (pooling) with its body as the reducer computation and its window
        in the IR's form."""
        if len(op.results) != 1:
            raise UnsupportedError("a variadic stablehlo.reduce_window is not supported", loc)
        attrs = op.attributes
        rank = self.builder.shape_of(operands[0]).rank
        block = op.regions[0].blocks[0]
        to_apply = self._computation(block, "reducer", None, len(block.arguments), [], depth)
        window = self._window(attrs, rank, size_key="window_dimensions",
                              stride_key="window_strides", lhs_key="base_dilations",
                              rhs_key="window_dilations")
        return self.builder.add("reduce-window", operands,
                                {"window": window, "to_apply": to_apply},
                                name=self._name("reduce-window"), loc=loc,
                                shape=self._shape(op.results[0].type, loc))

    def _sort(self, op, operands: list[str], loc: SourceLoc, depth: int) -> list[str]:
        """A sort of one or several arrays along a dimension, by its comparator region."""
        block = op.regions[0].blocks[0]
        comparator = self._computation(block, "comparator", None, len(block.arguments), [],
                                       depth)
        attrs = op.attributes
        stable = "is_stable" in attrs and bool(self.ir.BoolAttr(attrs["is_stable"]).value)
        node = self.builder.add(
            "sort", operands, {"dimensions": (int(self.ir.IntegerAttr(attrs["dimension"]).value),),
                               "to_apply": comparator, "is_stable": stable},
            name=self._name("sort"), loc=loc)
        return self._untuple(node, len(op.results), loc)

    def _select_and_scatter(self, op, operands: list[str], loc: SourceLoc, depth: int) -> str:
        """A max-pool's gradient: its select and scatter bodies as computations."""
        rank = self.builder.shape_of(operands[0]).rank
        select, scatter = (self._computation(region.blocks[0], what, None,
                                             len(region.blocks[0].arguments), [], depth)
                           for region, what in zip(op.regions, ("select", "scatter")))
        window = self._window(op.attributes, rank, size_key="window_dimensions",
                              stride_key="window_strides")
        return self.builder.add("select-and-scatter", operands,
                                {"window": window, "select": select, "scatter": scatter},
                                name=self._name("select-and-scatter"), loc=loc,
                                shape=self._shape(op.results[0].type, loc))

    def _convolution(self, op, rank: int) -> dict:
        """dim_labels ("b01f_01io->b01f" style), window and group counts of a convolution."""
        from jaxlib.mlir.dialects import stablehlo

        attrs = op.attributes
        numbers = stablehlo.ConvDimensionNumbers(attrs["dimension_numbers"])

        def labels(first: tuple[int, str], second: tuple[int, str], spatial) -> str:
            out = [""] * rank
            for index, label in (first, second):
                out[index] = label
            for k, index in enumerate(spatial):
                out[index] = str(k)
            return "".join(out)

        dim_labels = (
            labels((numbers.input_batch_dimension, "b"), (numbers.input_feature_dimension, "f"),
                   numbers.input_spatial_dimensions) + "_" +
            labels((numbers.kernel_input_feature_dimension, "i"),
                   (numbers.kernel_output_feature_dimension, "o"),
                   numbers.kernel_spatial_dimensions) + "->" +
            labels((numbers.output_batch_dimension, "b"),
                   (numbers.output_feature_dimension, "f"), numbers.output_spatial_dimensions))
        kernel = op.operands[1].type
        sizes = tuple(int(ir_dim) for ir_dim in
                      (self.ir.RankedTensorType(kernel).shape[d]
                       for d in numbers.kernel_spatial_dimensions))
        out = {"dim_labels": dim_labels,
               "feature_group_count": int(self.ir.IntegerAttr(
                   attrs["feature_group_count"]).value),
               "batch_group_count": int(self.ir.IntegerAttr(attrs["batch_group_count"]).value)}
        if sizes:
            out["window"] = self._window(attrs, len(sizes), sizes=sizes,
                                         stride_key="window_strides", lhs_key="lhs_dilation",
                                         rhs_key="rhs_dilation")
        return out

    def _window(self, attrs, rank: int, sizes: tuple[int, ...] | None = None,
                size_key: str | None = None, stride_key: str = "", lhs_key: str = "",
                rhs_key: str = "") -> dict:
        """The IR's window mapping (size, stride, pad, lhs_dilate, rhs_dilate per dimension)
        from a StableHLO op's attributes, each absent one at its default."""
        def per_dim(key: str, default: int) -> tuple[int, ...]:
            return self._ints(attrs[key]) if key in attrs else (default,) * rank

        pad = ((0, 0),) * rank
        if "padding" in attrs:
            values = np.asarray(self.ir.DenseIntElementsAttr(attrs["padding"]),
                                dtype=np.int64).reshape(rank, 2)
            pad = tuple((int(low), int(high)) for low, high in values)
        return {"size": sizes if sizes is not None else per_dim(size_key, 1),
                "stride": per_dim(stride_key, 1), "pad": pad,
                "lhs_dilate": per_dim(lhs_key, 1), "rhs_dilate": per_dim(rhs_key, 1)}

    def _computation(self, block, name: str, argument: str | None, count: int,
                     captured: list, depth: int, carry: bool = False) -> str:
        """A computation of the block: with `argument` (a node whose shape is the
        computation's one parameter, a tuple of the block's `count` arguments followed by
        the `captured` values, or the one array when there is only that), or else one
        parameter per block argument. `carry`: the computation returns its whole parameter's
        shape (a loop body: the block's results, then the captured values unchanged)."""
        if depth >= MAX_CALL_DEPTH:
            raise UnsupportedError(f"regions nested more than {MAX_CALL_DEPTH} deep",
                                   self.filename)
        outer = self.builder
        sub = self.builder = outer.computation(name)
        try:
            values = {}
            arguments = list(block.arguments)
            if argument is None:
                for k, value in enumerate(arguments):
                    values[value] = sub.parameter(f"p{k}", self._shape(value.type, None))
                inner = []
            else:
                shape = outer.shape_of(argument)
                parameter = sub.parameter("state", shape)
                inner = [parameter] if not shape.is_tuple else [
                    sub.add("get-tuple-element", [parameter], {"index": k},
                            name=self._name("get-tuple-element"))
                    for k in range(len(shape.elements))]
                values.update(zip(arguments, inner[:count]))
                values.update(zip(captured, inner[count:]))
            outputs = self._block(block, values, depth + 1)
            if carry:
                outputs = outputs + inner[count:]
                if argument is not None and outer.shape_of(argument).is_tuple:
                    outputs = [sub.add("tuple", outputs, name=self._name("tuple"))]
            sub.finish(outputs)
        finally:
            self.builder = outer
        return sub.name

    def _tuple(self, names: list[str], loc: SourceLoc) -> str:
        """One value, as it is, or several as a tuple."""
        if len(names) == 1:
            return names[0]
        return self.builder.add("tuple", names, name=self._name("tuple"), loc=loc)

    def _untuple(self, node: str, count: int, loc: SourceLoc) -> list[str]:
        """The first `count` elements of a tuple node (the node itself when it is not one)."""
        if not self.builder.shape_of(node).is_tuple:
            return [node]
        return [self.builder.add("get-tuple-element", [node], {"index": k},
                                 name=self._name("get-tuple-element"), loc=loc)
                for k in range(count)]

    def _op(self, op, name: str, operands: list[str], loc: SourceLoc, depth: int) -> str:
        dialect, _, kind = name.partition(".")
        result = op.results[0].type if len(op.results) == 1 else None
        if dialect not in ("stablehlo", "chlo") or result is None:
            raise UnsupportedError(f"{name} is not supported by the StableHLO importer", loc)
        shape = self._shape(result, loc)
        attrs = op.attributes
        add = self._adder(loc, shape)
        if dialect == "chlo":
            # CHLO: the client ops JAX emits for what StableHLO lacks.
            if kind == "square":
                return add("multiply", [operands[0], operands[0]])
            if kind == "erfc":   # 1 - erf(x)
                one = self.builder.add(
                    "broadcast", [self.builder.constant(np.ones((), shape.dtype.numpy),
                                                        self._name("constant"), loc)],
                    {"dimensions": ()}, name=self._name("broadcast"), loc=loc, shape=shape)
                erf = self.builder.add("erf", operands, name=self._name("erf"), loc=loc,
                                       shape=shape)
                return add("subtract", [one, erf])
            if kind == "erf_inv":
                return erf_inv(self.builder, operands[0], loc, self._name)
            if kind in CHLO_SAME_OPS:
                return add(kind, operands)
            raise UnsupportedError(
                f"{name} is not supported by the StableHLO importer yet; upload the HLO text "
                "instead (`jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text()`), in which "
                "XLA has expanded it into elementwise ops", loc)
        if kind in SAME_OPS:
            return add(kind.replace("_", "-"), operands)
        if kind == "constant":
            return self.builder.constant(self._constant(op, shape, loc),
                                         self._name("constant"), loc)
        if kind == "compare":
            direction = self._enum(attrs["comparison_direction"])
            extra = {}
            if "compare_type" in attrs:
                extra["type"] = self._enum(attrs["compare_type"])
            return add("compare", operands, {"direction": direction, **extra})
        if kind == "convert":
            if self.builder.shape_of(operands[0]) == shape:
                return operands[0]   # to its own type: a no-op (XLA drops it too)
            return add("convert", operands)
        if kind == "broadcast_in_dim":
            return self._broadcast(operands[0], self._ints(attrs["broadcast_dimensions"]),
                                   shape, loc, add)
        if kind == "transpose":
            return add("transpose", operands, {"dimensions": self._ints(attrs["permutation"])})
        if kind == "iota":
            return add("iota", [], {"iota_dimension": int(self.ir.IntegerAttr(
                attrs["iota_dimension"]).value)})
        if kind == "slice":
            bounds = zip(self._ints(attrs["start_indices"]), self._ints(attrs["limit_indices"]),
                         self._ints(attrs["strides"]))
            return add("slice", operands, {"slice": tuple(tuple(b) for b in bounds)})
        if kind == "concatenate":
            return add("concatenate", operands, {"dimensions": (int(self.ir.IntegerAttr(
                attrs["dimension"]).value),)})
        if kind == "pad":
            padding = zip(self._ints(attrs["edge_padding_low"]),
                          self._ints(attrs["edge_padding_high"]),
                          self._ints(attrs["interior_padding"]))
            return add("pad", operands, {"padding": tuple(tuple(p) for p in padding)})
        if kind == "reverse":
            return add("reverse", operands, {"dimensions": self._ints(attrs["dimensions"])})
        if kind == "dynamic_slice":
            return add("dynamic-slice", operands,
                       {"dynamic_slice_sizes": self._ints(attrs["slice_sizes"])})
        if kind == "dot_general":
            return add("dot", operands, self._dot(attrs["dot_dimension_numbers"]))
        if kind == "reduce":
            return self._reduce(op, operands, loc, add, depth)
        if kind == "convolution":
            return add("convolution", operands, self._convolution(op, shape.rank))
        if kind == "gather":
            return add("gather", operands, self._gather(attrs))
        if kind == "scatter":
            return self._scatter(op, operands, loc, add, depth)
        if kind == "fft":
            return add("fft", operands, {"fft_type": self._enum(attrs["fft_type"]),
                                         "fft_length": self._ints(attrs["fft_length"])})
        raise UnsupportedError(f"{name} is not supported by the StableHLO importer yet", loc)

    def _adder(self, loc: SourceLoc, shape: Shape):
        """`add(op, operands, attrs)`: a node named after the op whose result must be the
        type MLIR gives (`shape`: the builder infers it and checks the two agree, and takes
        from it what the operands do not say, such as a convert's dtype)."""
        def add(op: str, operands: list[str], attrs: dict | None = None) -> str:
            return self.builder.add(op, operands, attrs, name=self._name(op), loc=loc,
                                    shape=shape)
        return add

    def _broadcast(self, operand: str, dims: tuple[int, ...], shape: ArrayShape,
                   loc: SourceLoc, add) -> str:
        """`broadcast_in_dim`, which may also stretch a dimension of size 1, as HLO's
        `broadcast` may not: those dimensions are first dropped by a reshape (as XLA does when
        it turns StableHLO into HLO)."""
        source = self.builder.shape_of(operand)
        keep = [k for k, d in enumerate(dims) if source.dims[k] == shape.dims[d]]
        if len(keep) < len(dims):
            operand = self.builder.add(
                "reshape", [operand], name=self._name("reshape"), loc=loc,
                shape=ArrayShape(source.dtype, tuple(source.dims[k] for k in keep)))
            dims = tuple(dims[k] for k in keep)
        return add("broadcast", [operand], {"dimensions": dims})

    def _reduce(self, op, operands: list[str], loc: SourceLoc, add, depth: int) -> str:
        if len(operands) != 2:
            raise UnsupportedError("a variadic stablehlo.reduce (of several inputs, as argmax "
                                   "makes) is not supported by the StableHLO importer yet", loc)
        to_apply = self._reducer(op, self.builder.shape_of(operands[0]).dtype, depth)
        return add("reduce", operands, {"dimensions": self._ints(op.attributes["dimensions"]),
                                        "to_apply": to_apply})

    def _scatter(self, op, operands: list[str], loc: SourceLoc, add, depth: int) -> str:
        from jaxlib.mlir.dialects import stablehlo

        if len(operands) != 3:
            raise UnsupportedError("a variadic stablehlo.scatter is not supported by the "
                                   "StableHLO importer yet", loc)
        numbers = stablehlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])
        return add("scatter", operands, {
            "update_window_dims": tuple(numbers.update_window_dims),
            "inserted_window_dims": tuple(numbers.inserted_window_dims),
            "scatter_dims_to_operand_dims": tuple(numbers.scattered_dims_to_operand_dims),
            "input_batching_dims": tuple(numbers.input_batching_dims),
            "scatter_indices_batching_dims": tuple(numbers.scatter_indices_batching_dims),
            "index_vector_dim": int(numbers.index_vector_dim),
            "to_apply": self._reducer(op, self.builder.shape_of(operands[0]).dtype, depth)})

    def _reducer(self, op, dtype: DType, depth: int) -> str:
        """The IR computation a reduce's or scatter's body is: the shared reducer when the
        body is one of REDUCER_OPS applied to its two arguments, else the body itself as a
        computation on scalars (`x.at[i].set(v)`'s scatter returns its second argument)."""
        body = op.regions[0].blocks[0]
        ops = list(body.operations)
        applied = ops[0].operation.name if len(ops) == 2 else None
        reducer = REDUCER_OPS.get(applied)
        arguments = list(body.arguments)
        if reducer is None or list(ops[0].operands) not in (arguments, arguments[::-1]) \
                or list(ops[1].operands) != list(ops[0].results):
            return self._computation(body, "reducer", None, len(arguments), [], depth)
        return self.builder.reducer(reducer, dtype)

    def _gather(self, attrs) -> dict:
        from jaxlib.mlir.dialects import stablehlo

        numbers = stablehlo.GatherDimensionNumbers(attrs["dimension_numbers"])
        return {"offset_dims": tuple(numbers.offset_dims),
                "collapsed_slice_dims": tuple(numbers.collapsed_slice_dims),
                "start_index_map": tuple(numbers.start_index_map),
                "operand_batching_dims": tuple(numbers.operand_batching_dims),
                "start_indices_batching_dims": tuple(numbers.start_indices_batching_dims),
                "index_vector_dim": int(numbers.index_vector_dim),
                "slice_sizes": self._ints(attrs["slice_sizes"])}

    # -- attributes and types -------------------------------------------------------------------

    @staticmethod
    def _enum(attr) -> str:
        """The value of an enum attribute as MLIR prints it (`#stablehlo<fft_type RFFT>`)."""
        return str(attr).split()[-1].rstrip(">")

    def _dot(self, attr) -> dict[str, tuple[int, ...]]:
        from jaxlib.mlir.dialects import stablehlo

        numbers = stablehlo.DotDimensionNumbers(attr)
        return {"lhs_batch_dims": tuple(numbers.lhs_batching_dimensions),
                "rhs_batch_dims": tuple(numbers.rhs_batching_dimensions),
                "lhs_contracting_dims": tuple(numbers.lhs_contracting_dimensions),
                "rhs_contracting_dims": tuple(numbers.rhs_contracting_dimensions)}

    def _ints(self, attr) -> tuple[int, ...]:
        return tuple(int(v) for v in self.ir.DenseI64ArrayAttr(attr))

    def _shape(self, mlir_type, loc: SourceLoc | None, depth: int = 0) -> Shape:
        ir = self.ir
        if isinstance(mlir_type, ir.TupleType):
            if depth >= self.limits.max_nesting:
                # As in HLO text: every walk of a shape is then bounded, far below Python's
                # recursion limit (900 levels hit it here, 300 in the interpreter).
                raise LimitError(f"tuple types nested more than {self.limits.max_nesting} "
                                 f"levels deep ({env_name('max_nesting')})",
                                 loc or self.filename)
            tuple_type = ir.TupleType(mlir_type)
            return TupleShape(tuple(self._shape(tuple_type.get_type(k), loc, depth + 1)
                                    for k in range(tuple_type.num_types)))
        if not isinstance(mlir_type, ir.RankedTensorType):
            raise UnsupportedError(f"values of type {mlir_type} are not supported (only ranked "
                                   "tensors of static shape)", loc or self.filename)
        tensor = ir.RankedTensorType(mlir_type)
        if not tensor.has_static_shape:
            raise UnsupportedError(f"{mlir_type} has dynamic dimensions: export with static "
                                   "shapes", loc or self.filename)
        return ArrayShape(self._dtype(tensor.element_type, loc), tuple(tensor.shape))

    def _dtype(self, element, loc) -> DType:
        ir = self.ir
        text = str(element)
        if text in _FLOAT:
            return dtype_named(_FLOAT[text])
        if text in _COMPLEX:
            return dtype_named(_COMPLEX[text])
        if isinstance(element, ir.IntegerType):
            integer = ir.IntegerType(element)
            table = _UNSIGNED if integer.is_unsigned else _INTEGER
            if integer.width in table:
                return dtype_named(table[integer.width])
        raise UnsupportedError(f"element type {text} is not supported", loc or self.filename)

    # -- constants ----------------------------------------------------------------------------
    #
    # MLIR prints a constant's value in one of these forms (`dense<...>` as the attribute holds
    # it in memory; `dense_resource` as a blob of the module's `dialect_resources` section):
    #   dense<[[1.5, 0x7FC0], ...]>  the elements one by one: decimals that read back exactly,
    #                                the bits of NaNs and infinities in hex (of 100 elements
    #                                or fewer);
    #   dense<"0x0000C03F...">       the raw buffer in hex, little-endian (of more than 100);
    #   dense<1.5>, dense<(1.0,2.0)> one element, all the elements' value (a splat);
    #   dense_resource<name>         a blob (torch-mlir's importer writes them; JAX does not).
    # i1 is a byte per element in all of them. The bindings hand a dense attribute over as a
    # buffer only for integers of 1, 8, 16, 32 and 64 bits and f16, f32, f64; of the other
    # types (bf16, the f8 and f4 types, i4) they read a splat's value, and of complex ones
    # nothing at all. What they cannot read is read from its print.

    def _constant(self, op, shape: ArrayShape, loc: SourceLoc) -> np.ndarray:
        """A constant op's value as a NumPy array of its dtype."""
        ir = self.ir
        try:
            attr = op.attributes["value"]
        except TypeError:
            # Complex elements: the bindings have no class for them and refuse to hand the
            # attribute over ("Can't cast unknown element type"; taken as
            # `op.attributes[0].attr`, the same refusal aborts the process). The op's print
            # holds the value.
            return _printed_elements(op.operation.get_asm(), shape)
        if isinstance(attr, ir.DenseElementsAttr):
            return self._dense(ir.DenseElementsAttr(attr), shape)
        try:
            resource = ir.DenseResourceElementsAttr(attr)
        except ValueError:   # a sparse<...> one, or another dialect's
            raise UnsupportedError(f"a constant {str(attr)[:60]} the importer cannot read "
                                   "(export it with its values inline)", loc) from None
        return self._resource(str(resource), shape, loc)

    def _dense(self, dense, shape: ArrayShape) -> np.ndarray:
        """A dense attribute's value: its buffer, its splat value or its print, whichever the
        bindings give."""
        try:
            values = np.asarray(memoryview(dense))
        except BufferError:
            pass
        else:
            if values.dtype == np.bool_:
                # MLIR keeps the bytes of an i1 hex blob as written (0x02 is true too).
                values = values.view(np.uint8) != 0
            return values.astype(shape.dtype.numpy)   # a copy, out of MLIR's memory
        if dense.is_splat:
            return np.full(shape.dims, _scalar(self.ir, dense.get_splat_value()),
                           dtype=shape.dtype.numpy)
        return _printed_elements(str(dense), shape)

    def _resource(self, printed: str, shape: ArrayShape, loc: SourceLoc) -> np.ndarray:
        """A `dense_resource` constant's value, from its blob in the module's print (the
        bindings cannot read a blob). Messages do not name the blob: MLIR renames a blob
        whose name an earlier upload's had (`w` is `w_1`), and the user knows it by theirs."""
        name, _, type_text = printed.removeprefix("dense_resource<").rpartition("> : ")
        if name == "__elided__":
            raise InputError("the constant's values were left out when the module was printed "
                             "(dense_resource<__elided__>, MLIR's large_elements_limit): print "
                             "it with them (JAX's `lowered.as_text()` does)", loc)
        if self.blobs is None:
            self.blobs = _resource_blobs(self.module.operation.get_asm())
        blob = self.blobs.get(name)
        if blob is None:
            raise InputError("the constant's dense_resource names no blob of the module's "
                             "dialect_resources", loc)
        # A blob is its alignment (4 bytes, little-endian) and then the raw buffer.
        data = blob[4:]
        needed = shape.size * shape.dtype.numpy.itemsize
        if len(data) != needed:
            raise InputError(f"the constant's dense_resource blob holds {len(data)} bytes, "
                             f"and a {type_text} {needed}", loc)
        if shape.dtype.kind == "pred":
            values = np.frombuffer(data, np.uint8) != 0
        else:
            values = np.frombuffer(data, shape.dtype.numpy)
        return values.reshape(shape.dims).copy()

    # -- names and places ---------------------------------------------------------------------

    def _name(self, op: str) -> str:
        count = self.counts.get(op, 0)
        self.counts[op] = count + 1
        return f"{op}.{count}"

    def _where(self, op) -> SourceLoc:
        return _source_loc(op.location, self.filename)


def _scalar(ir, attr) -> Any:
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    if isinstance(attr, ir.BoolAttr):
        return ir.BoolAttr(attr).value
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value
    raise UnsupportedError(f"a constant of {attr} is not supported")


# A dense attribute's elements as MLIR prints them (see `_Importer._constant`): the text between
# `dense<` and `>`, which holds no `>` of its own.
_DENSE = re.compile(r"dense<([^>]*)>")
# One printed element, or one part of a complex one: a decimal, or hex bits.
_ELEMENT = re.compile(r"0x[0-9A-Fa-f]+|[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?")


def _printed_elements(printed: str, shape: ArrayShape) -> np.ndarray:
    """The value of the dense attribute in `printed` (an attribute's or a constant op's print),
    as a NumPy array of the shape's dtype."""
    numpy_dtype = shape.dtype.numpy
    body = _DENSE.search(printed)[1]
    if body.startswith('"0x'):
        # jaxlib is built for little-endian machines alone, where NumPy reads MLIR's
        # little-endian hex as it is.
        values = np.frombuffer(bytes.fromhex(body[3:-1]), numpy_dtype)
    else:
        values = _listed_elements(_ELEMENT.findall(body), numpy_dtype)
    if values.size == 1:   # a splat
        return np.full(shape.dims, values[0], dtype=numpy_dtype)
    return values.reshape(shape.dims).copy()


def _listed_elements(tokens: list[str], numpy_dtype: np.dtype) -> np.ndarray:
    """Elements printed one by one (a complex one as its two parts), as an array of
    `numpy_dtype`: a decimal is the value nearest it (MLIR prints one that reads back
    exactly), a hex token the bits of one."""
    part = np.finfo(numpy_dtype).dtype if numpy_dtype.kind == "c" else numpy_dtype
    is_hex = np.array([token.startswith("0x") for token in tokens], dtype=bool)
    decimals = np.array([0.0 if bits else float(token) for token, bits in zip(tokens, is_hex)])
    values = decimals.astype(part).view(f"u{part.itemsize}")
    values[is_hex] = [int(token, 16) for token, bits in zip(tokens, is_hex) if bits]
    return values.view(numpy_dtype)


# The blobs of a module's print (`{-# dialect_resources: { builtin: { NAME: "0x...", ... } } #-}`
# at its end), one a line, by name.
_BUILTIN_BLOBS = re.compile(r"^    builtin: \{\n(.*?)^    \}", re.M | re.S)
_BLOB = re.compile(r'^\s*(.+): "0x([0-9A-Fa-f]*)",?$', re.M)


def _resource_blobs(printed: str) -> dict[str, bytes]:
    """The builtin dialect's blobs in the print of a module, by name."""
    trailer = printed[printed.rfind("\n{-#"):] if "\n{-#" in printed else ""
    section = _BUILTIN_BLOBS.search(trailer)
    if section is None:
        return {}
    return {name: bytes.fromhex(data) for name, data in _BLOB.findall(section[1])}


def _free_values(op) -> list:
    """The values the op's regions read that are defined outside them, in order of first
    use."""
    defined, used = set(), {}

    def walk(operation) -> None:
        for region in operation.regions:
            for block in region.blocks:
                defined.update(block.arguments)
                for inner in block.operations:
                    for value in inner.operands:
                        used.setdefault(value, None)
                    walk(inner)
                    defined.update(inner.results)

    walk(op)
    return [value for value in used if value not in defined]
