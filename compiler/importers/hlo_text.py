"""XLA HLO text importer: the module syntax as XLA prints it, into the Graph IR.

Two passes. `_Parser` reads the text into computations of raw instructions (names, shapes,
opcodes, operand names, attribute source text), skipping `//` and `/* */` comments (lit `RUN`
and FileCheck lines included) and keeping every instruction's file:line:col. `_ModuleBuilder`
then turns the raw computations into Graphs: `fusion` and `call` are inlined into primitive ops
(a fused computation is not a black box, but each inlined node remembers its fusion in
`fused_in`), attributes are parsed into the conventions of `compiler/ir/graph.py`, reducers are
recognised, and `while`/`conditional`/reducer computations become sub-graphs.

Accepted syntax (as in XLA's hlo_parser.cc): optional `%` prefixes; shapes with layouts
(`{1,0}`, tiling suffixes such as `{1,0:T(8,128)}` are read and dropped), tuple shapes, bounded
dynamic dims (`<=4`); operands with or without their types; instructions over several lines;
computations with or without signatures and without an `ENTRY` (then the last computation is the
entry, as in XLA's emitter tests); several modules in one file separated by `// -----` lines
(lit's --split-input-file convention).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from compiler.errors import InputError, LimitError, SourceLoc, UnsupportedError
from compiler.importers.modules import pick_module
from compiler.ir.dtypes import DTYPES
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS
from compiler.ir.shape_inference import ShapeError, infer_shape
from compiler.ir.shapes import ArrayShape, Shape, TupleShape
from compiler.ir.verify import recognise_reducer, topological_order, verify
from compiler.limits import Limits, env_name

_NAME = re.compile(r"%?([A-Za-z_$][A-Za-z0-9_.\-$]*)")
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_ATTR_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INT = re.compile(r"-?[0-9]+")
_SPLIT_MARKER = re.compile(r"^[ \t]*// -----[ \t]*$", re.MULTILINE)
_SHAPE_START = re.compile(r"\(|[a-z][a-z0-9]*\[")
_ARRAY_SHAPE_HEAD = re.compile(r"([a-z][a-z0-9]*)\[")
# Whitespace and comments: what may stand between any two tokens.
_BLANK = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_TYPED_LITERAL_HEAD = re.compile(r"^[a-z][a-z0-9]*\[[^\]]*\](\{[^}]*\})?$")

# Attributes parsed into typed values; anything else is kept as source text in `node.extra`.
_INT_LIST_ATTRS = frozenset("""
    dimensions lhs_batch_dims rhs_batch_dims lhs_contracting_dims rhs_contracting_dims
    offset_dims collapsed_slice_dims start_index_map slice_sizes operand_batching_dims
    start_indices_batching_dims update_window_dims inserted_window_dims
    scatter_dims_to_operand_dims input_batching_dims scatter_indices_batching_dims
    dynamic_slice_sizes fft_length
""".split())
_INT_ATTRS = frozenset("""
    index iota_dimension index_vector_dim feature_group_count batch_group_count
    exponent_bits mantissa_bits feature_index k
""".split())
_FLOAT_ATTRS = frozenset(["epsilon"])
# The source-location tables of an optimised module's dump (`compiled.as_text()`,
# XLA_FLAGS=--xla_dump_to): a name alone on its line, then entries that start with a number.
_METADATA_SECTION = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*\n"
                               r"(?=[ \t]*(\d|\n|$))")
_BOOL_ATTRS = frozenset("indices_are_sorted unique_indices is_stable largest".split())
_WORD_ATTRS = frozenset("direction type distribution fft_type dim_labels kind".split())
_COMPUTATION_ATTRS = frozenset("to_apply condition body calls select scatter".split())


# -- pass 1: text to raw computations ------------------------------------------------------------


@dataclass
class _RawInstruction:
    name: str
    shape: Shape | None
    opcode: str
    operands: list[str]
    attrs: dict[str, str]
    literal: str | None
    is_root: bool
    loc: SourceLoc
    attr_locs: dict[str, SourceLoc] = field(default_factory=dict)


@dataclass
class _RawComputation:
    name: str
    is_entry: bool
    instructions: list[_RawInstruction] = field(default_factory=list)
    loc: SourceLoc | None = None


@dataclass
class _RawModule:
    name: str
    computations: list[_RawComputation] = field(default_factory=list)
    loc: SourceLoc | None = None


class _Parser:
    """A cursor over one module's text; every method skips leading whitespace and comments."""

    def __init__(self, text: str, filename: str, first_line: int, limits: Limits):
        self.text = text
        self.filename = filename
        self.first_line = first_line
        self.limits = limits
        self.pos = 0
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        # Instructions of all computations so far: a module with more than the graph may have
        # nodes is refused while it is read, not after it is all built.
        self.instructions = 0

    # -- positions and errors

    def loc(self, pos: int | None = None) -> SourceLoc:
        pos = self.pos if pos is None else pos
        line = bisect.bisect_right(self.line_starts, pos)
        col = pos - self.line_starts[line - 1] + 1
        return SourceLoc(self.filename, line + self.first_line - 1, col)

    def error(self, message: str, pos: int | None = None) -> InputError:
        return InputError(message, self.loc(pos))

    def found(self) -> str:
        """What stands at the cursor, for 'expected X, found Y' messages."""
        if self.pos >= len(self.text):
            return "end of file"
        snippet = self.text[self.pos:self.pos + 20].split("\n")[0]
        return f"'{snippet}'"

    # -- lexical helpers

    def skip(self) -> None:
        self.pos = _BLANK.match(self.text, self.pos).end()
        if self.text.startswith("/*", self.pos):
            raise self.error("unterminated /* comment")

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, context: str) -> None:
        if not self.accept(s):
            raise self.error(f"expected '{s}' {context}, found {self.found()}")

    def match(self, pattern: re.Pattern) -> re.Match | None:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def name(self, what: str) -> str:
        m = self.match(_NAME)
        if not m:
            raise self.error(f"expected {what}, found {self.found()}")
        return m.group(1)

    def balanced(self, opener: str, closer: str) -> str:
        """The text between `opener` (at the cursor) and its matching `closer`, comments dropped."""
        start = self.pos
        self.expect(opener, "")
        depth, pieces, piece_start = 1, [], self.pos
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c == '"':
                self._skip_string()
                continue
            if text.startswith("/*", self.pos) or text.startswith("//", self.pos):
                pieces.append(text[piece_start:self.pos])
                self.skip()
                piece_start = self.pos
                continue
            if c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    pieces.append(text[piece_start:self.pos])
                    self.pos += 1
                    return "".join(pieces)
            self.pos += 1
        raise self.error(f"'{opener}' is never closed", start)

    def _skip_string(self) -> None:
        start = self.pos
        self.pos += 1
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == '"':
                self.pos += 1
                return
            elif c == "\n":
                break
            else:
                self.pos += 1
        raise self.error("unterminated string", start)

    def attribute_value(self) -> str:
        """One attribute value: a word or balanced group, ending at top-level space or comma."""
        self.skip()
        start = self.pos
        text, n = self.text, len(self.text)
        pieces, piece_start, depth = [], self.pos, 0
        pairs = {"{": "}", "(": ")", "[": "]"}
        stack: list[str] = []
        while self.pos < n:
            c = text[self.pos]
            if c == '"':
                self._skip_string()
                continue
            if depth and (text.startswith("/*", self.pos) or text.startswith("//", self.pos)):
                pieces.append(text[piece_start:self.pos])
                self.skip()
                piece_start = self.pos
                continue
            if c in pairs:
                stack.append(pairs[c])
                depth += 1
            elif c in "})]":
                if not stack:
                    break
                if c != stack[-1]:
                    raise self.error(f"mismatched '{c}' in attribute value")
                stack.pop()
                depth -= 1
            elif depth == 0 and c in " \t,\r\n":
                # Two values continue past a space on the same line: a group, as in
                # `replica_groups=mesh[...] {...}`, and a typed literal, `literal=s32[] 1`.
                rest = text[self.pos:self.pos + 200]
                gap = len(rest) - len(rest.lstrip(" \t"))
                so_far = "".join(pieces) + text[piece_start:self.pos]
                if c in " \t" and rest[gap:gap + 1] not in ("", "\n", ",") and (
                        rest[gap] == "{" or _TYPED_LITERAL_HEAD.match(so_far)):
                    self.pos += gap
                    continue
                break
            self.pos += 1
        if stack:
            raise self.error(f"'{ {'}': '{', ')': '(', ']': '['}[stack[-1]]}' is never closed",
                             start)
        pieces.append(text[piece_start:self.pos])
        value = "".join(pieces)
        if not value:
            raise self.error(f"expected an attribute value, found {self.found()}")
        return value

    # -- grammar

    def module(self) -> _RawModule:
        module = _RawModule(name="module", loc=self.loc())
        if self.peek("HloModule"):
            self.pos += len("HloModule")
            module.name = self.name("a module name after HloModule")
            while self.accept(","):
                self.match(_ATTR_KEY)
                self.expect("=", "after a module attribute name")
                self.attribute_value()
        while not self.at_end():
            if self.peek("HloModule"):
                raise self.error("a second HloModule in one module; separate modules with a "
                                 "'// -----' line")
            if self.metadata_section():
                continue
            module.computations.append(self.computation())
        if not module.computations:
            raise self.error("no computation found (expected 'ENTRY name { ... }' or "
                             "'name { ... }')", 0)
        return module

    def metadata_section(self) -> bool:
        """Skips one of the sections an optimised module's dump opens with (XLA writes the
        Python source of its stack frames there: `FileNames`, then numbered entries, up to a
        blank line); True when there was one."""
        self.skip()
        found = _METADATA_SECTION.match(self.text, self.pos)
        if not found:
            return False
        end = self.text.find("\n\n", found.end())
        self.pos = len(self.text) if end < 0 else end
        return True

    def computation(self) -> _RawComputation:
        is_entry = self.accept("ENTRY")
        self.skip()
        loc = self.loc()
        name = self.name("a computation name (or 'ENTRY')")
        if self.peek("("):
            self.balanced("(", ")")
            self.expect("->", "after a computation's parameter list")
            self.shape()
        self.expect("{", f"to open computation '{name}'")
        comp = _RawComputation(name, is_entry, loc=loc)
        while not self.accept("}"):
            if self.at_end():
                raise self.error(f"computation '{name}' is not closed: missing '}}' (the file "
                                 "may be truncated)")
            comp.instructions.append(self.instruction())
            self.instructions += 1
            if self.instructions > self.limits.max_nodes:
                raise LimitError(f"more than {self.limits.max_nodes} instructions "
                                 f"({env_name('max_nodes')})", comp.instructions[-1].loc)
        while self.accept(","):  # e.g. execution_thread="main"
            self.match(_ATTR_KEY)
            self.expect("=", "after a computation attribute name")
            self.attribute_value()
        if not comp.instructions:
            raise InputError(f"computation '{name}' has no instructions", loc)
        return comp

    def instruction(self) -> _RawInstruction:
        self.skip()
        is_root = bool(re.match(r"ROOT[\s%]", self.text[self.pos:self.pos + 5]))
        if is_root:
            self.pos += 4
        self.skip()
        loc = self.loc()
        name = self.name("an instruction name")
        self.expect("=", f"after instruction name '{name}'")
        self.skip()
        # The shape may be left out (`ROOT t = tuple(a, b)`); it is inferred when building.
        shape = self.shape() if _SHAPE_START.match(self.text, self.pos) else None
        self.skip()
        opcode_pos = self.pos
        m = self.match(_OPCODE)
        if not m:
            raise self.error(f"expected an opcode for '{name}', found {self.found()}")
        opcode = m.group(0)
        if not self.peek("("):
            raise self.error(f"expected '(' after opcode '{opcode}', found {self.found()}")
        operands: list[str] = []
        literal = None
        if opcode == "constant":
            literal = self.balanced("(", ")")
        elif opcode == "parameter":
            self.expect("(", "")
            m = self.match(_INT)
            if not m:
                raise self.error(f"expected a parameter number, found {self.found()}")
            literal = m.group(0)
            self.expect(")", "after the parameter number")
        else:
            operands = self.operand_list()
        attrs: dict[str, str] = {}
        attr_locs: dict[str, SourceLoc] = {}
        while self.accept(","):
            self.skip()
            key_pos = self.pos
            m = self.match(_ATTR_KEY)
            if not m:
                raise self.error(f"expected an attribute name, found {self.found()}")
            self.expect("=", f"after attribute '{m.group(0)}'")
            attrs[m.group(0)] = self.attribute_value()
            attr_locs[m.group(0)] = self.loc(key_pos)
        if opcode not in OPS and opcode not in ("fusion", "call"):
            raise UnsupportedError(f"unknown opcode '{opcode}' in instruction '{name}'",
                                   self.loc(opcode_pos))
        return _RawInstruction(name, shape, opcode, operands, attrs, literal, is_root, loc,
                               attr_locs)

    def operand_list(self) -> list[str]:
        self.expect("(", "")
        operands: list[str] = []
        if self.accept(")"):
            return operands
        while True:
            self.skip()
            if _SHAPE_START.match(self.text, self.pos):
                self.shape()
            operands.append(self.name("an operand name"))
            if self.accept(")"):
                return operands
            self.expect(",", "between operands")

    def shape(self, depth: int = 0) -> Shape:
        self.skip()
        if self.accept("("):
            if depth >= self.limits.max_nesting:
                raise LimitError(f"tuple shapes nested more than {self.limits.max_nesting} "
                                 f"levels deep (FUSION_EXPLORER_MAX_NESTING)",
                                 self.loc(self.pos - 1))
            elements = []
            if self.accept(")"):
                return TupleShape(())
            while True:
                elements.append(self.shape(depth + 1))
                if self.accept(")"):
                    return TupleShape(tuple(elements))
                self.expect(",", "between tuple shape elements")
        start = self.pos
        m = self.match(_ARRAY_SHAPE_HEAD)
        if not m:
            raise self.error(f"expected a shape such as f32[4,8], found {self.found()}")
        dtype = DTYPES.get(m.group(1))
        if dtype is None:
            raise self.error(f"unknown element type '{m.group(1)}'", start)
        dims, dynamic = [], []
        if not self.accept("]"):
            while True:
                self.skip()
                dim_pos = self.pos
                if self.accept("?"):
                    dims.append(-1)
                    dynamic.append(True)
                else:
                    bounded = self.accept("<=")
                    m = self.match(_INT)
                    if not m:
                        raise self.error(f"expected a dimension size, found {self.found()}")
                    size = int(m.group(0))
                    if size < 0:
                        raise self.error(f"negative dimension size {size}", dim_pos)
                    if size > self.limits.max_tensor_elements:
                        raise LimitError(f"dimension size {size} exceeds the limit of "
                                         f"{self.limits.max_tensor_elements} elements "
                                         f"({env_name('max_tensor_elements')})",
                                         self.loc(dim_pos))
                    dims.append(size)
                    dynamic.append(bounded)
                if self.accept("]"):
                    break
                self.expect(",", "between dimension sizes")
        if len(dims) > self.limits.max_rank:
            raise LimitError(f"rank {len(dims)} exceeds the limit of {self.limits.max_rank} "
                             f"({env_name('max_rank')})", self.loc(start))
        if -1 not in dims and math.prod(dims) > self.limits.max_tensor_elements:
            raise LimitError(f"shape with {math.prod(dims)} elements exceeds the limit of "
                             f"{self.limits.max_tensor_elements} "
                             f"({env_name('max_tensor_elements')})", self.loc(start))
        layout = None
        if self.text.startswith("{", self.pos):  # a layout follows the shape with no space
            layout = self.layout(len(dims))
        return ArrayShape(dtype, tuple(dims), layout, tuple(dynamic) if any(dynamic) else ())

    def layout(self, rank: int) -> tuple[int, ...] | None:
        start = self.pos
        body = self.balanced("{", "}")
        minor_to_major = body.split(":")[0].strip()
        if not minor_to_major:
            return None if rank else ()
        try:
            layout = tuple(int(x) for x in minor_to_major.split(","))
        except ValueError:
            raise self.error(f"bad layout '{{{body}}}'", start) from None
        if sorted(layout) != list(range(rank)):
            raise self.error(f"layout {{{minor_to_major}}} is not a permutation of the "
                             f"{rank} dimensions", start)
        return layout


def split_modules(text: str) -> list[tuple[int, str]]:
    """Split at `// -----` lines; returns (first line number, text) per module."""
    chunks, line, start = [], 1, 0
    for m in _SPLIT_MARKER.finditer(text):
        chunks.append((line, text[start:m.start()]))
        line += text.count("\n", start, m.end())
        start = m.end()
    chunks.append((line, text[start:]))
    return [(first, chunk) for first, chunk in chunks if _has_code(chunk)]


def _has_code(chunk: str) -> bool:
    without_comments = re.sub(r"//[^\n]*|/\*.*?\*/", "", chunk, flags=re.DOTALL)
    return bool(without_comments.strip())


# -- pass 2: raw computations to Graphs -----------------------------------------------------------


class _ModuleBuilder:
    def __init__(self, raw: _RawModule, filename: str, limits: Limits):
        self.raw = raw
        self.filename = filename
        self.limits = limits
        self.by_name: dict[str, _RawComputation] = {}
        for comp in raw.computations:
            if comp.name in self.by_name:
                raise InputError(f"computation '{comp.name}' is defined twice", comp.loc)
            self.by_name[comp.name] = comp
        entries = [c for c in raw.computations if c.is_entry]
        if len(entries) > 1:
            raise InputError("more than one ENTRY computation", entries[1].loc)
        self.entry = entries[0] if entries else raw.computations[-1]
        self.computations: dict[str, Graph] = {}
        self.node_count = 0

    def build(self) -> Graph:
        inlined = self._inlined_computations()
        graph = self._build_computation(self.entry)
        graph.name = self.raw.name if self.raw.name != "module" else self.entry.name
        wanted = self._reachable_from(self.entry) - inlined - {self.entry.name}
        for comp in self.raw.computations:
            if comp is self.entry or comp.name in inlined or comp.name in self.computations:
                continue
            try:
                self.computations[comp.name] = self._build_computation(comp)
            except InputError as error:
                if comp.name in wanted:
                    raise
                # A computation nothing reachable calls: keep the module, say what was dropped.
                graph.notes.append(f"computation '{comp.name}' skipped: {error}")
        graph.computations = self.computations
        for sub in self.computations.values():
            sub.computations = self.computations
        for g in [graph, *self.computations.values()]:
            for node in g:
                if node.op in ("reduce", "reduce-window", "scatter") and "to_apply" in node.attrs:
                    node.attrs["reducer"] = recognise_reducer(
                        self.computations[node.attrs["to_apply"]])
        for name in [n for n in self.computations if n not in wanted]:
            try:
                verify(self.computations[name], self.limits)
            except InputError as error:
                del self.computations[name]
                graph.notes.append(f"computation '{name}' skipped: {error}")
        return graph

    def _inlined_computations(self) -> set[str]:
        """Computations used only as `fusion`/`call` bodies: they become part of the caller."""
        inlined, other_uses = set(), set()
        for comp in self.raw.computations:
            for inst in comp.instructions:
                for key, value in inst.attrs.items():
                    if key not in _COMPUTATION_ATTRS and key not in (
                            "branch_computations", "true_computation", "false_computation"):
                        continue
                    names = _names_in(value)
                    if inst.opcode in ("fusion", "call") and key in ("calls", "to_apply"):
                        inlined.update(names)
                    else:
                        other_uses.update(names)
        return inlined - other_uses

    def _reachable_from(self, comp: _RawComputation) -> set[str]:
        seen, stack = set(), [comp.name]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.by_name:
                continue
            seen.add(name)
            for inst in self.by_name[name].instructions:
                for key, value in inst.attrs.items():
                    if key in _COMPUTATION_ATTRS or key.endswith("computations") or \
                            key.endswith("_computation"):
                        stack.extend(_names_in(value))
        return seen

    def _computation_ref(self, name: str, inst: _RawInstruction, key: str) -> str:
        if name not in self.by_name:
            raise InputError(f"{key}={name} names a computation that is not defined",
                             inst.attr_locs.get(key, inst.loc))
        return name

    def _build_computation(self, comp: _RawComputation) -> Graph:
        graph = Graph(name=comp.name, source=self.filename, loc=comp.loc)
        reserved = {inst.name for inst in comp.instructions}
        root = self._emit(graph, comp, None, None, reserved, stack=(comp.name,))
        graph.root = root
        params = [n for n in graph if n.op == "parameter"]
        params.sort(key=lambda n: n.attrs["parameter_number"])
        for i, node in enumerate(params):
            if node.attrs["parameter_number"] != i:
                raise InputError(f"parameter numbers of computation '{comp.name}' must be "
                                 f"0..{len(params) - 1}; parameter({i}) is missing", node.loc)
        graph.parameters = [n.name for n in params]
        _drop_dead_plumbing(graph)
        return graph

    def _emit(self, graph: Graph, comp: _RawComputation, arguments: list[str] | None,
              fused_in: str | None, reserved: set[str], stack: tuple[str, ...]) -> str:
        """Adds `comp`'s instructions to `graph`; returns the name its root maps to.

        With `arguments` the computation is being inlined: its parameters alias those nodes.
        """
        alias: dict[str, str] = {}
        root_name = None
        for inst in _in_dependency_order(comp):
            if inst.is_root:
                root_name = inst.name
            for o in inst.operands:
                if o not in alias:
                    raise InputError(f"operand '{o}' of '{inst.name}' is not defined in "
                                     f"computation '{comp.name}'", inst.loc)
            operands = [alias[o] for o in inst.operands]
            if inst.opcode == "parameter" and arguments is not None:
                number = int(inst.literal)
                if number >= len(arguments):
                    raise InputError(f"parameter({number}) of '{comp.name}' but the caller "
                                     f"passes {len(arguments)} operands", inst.loc)
                alias[inst.name] = arguments[number]
                continue
            if inst.opcode in ("fusion", "call"):
                key = "calls" if "calls" in inst.attrs else "to_apply"
                if key not in inst.attrs:
                    raise InputError(f"{inst.opcode} '{inst.name}' has no calls= attribute",
                                     inst.loc)
                callee = self._computation_ref(inst.attrs[key].lstrip("%"), inst, key)
                if callee in stack:
                    raise InputError(f"computation '{callee}' calls itself", inst.loc)
                if len(stack) >= self.limits.max_call_depth:
                    raise LimitError(f"calls and fusions nested more than "
                                     f"{self.limits.max_call_depth} deep "
                                     f"(FUSION_EXPLORER_MAX_CALL_DEPTH)", inst.loc)
                inner_fused = fused_in or (inst.name if inst.opcode == "fusion" else None)
                if inst.opcode == "fusion" and fused_in is None:
                    graph.fusions[inst.name] = _fusion_record(inst)
                alias[inst.name] = self._emit(graph, self.by_name[callee], operands,
                                              inner_fused, reserved, stack + (callee,))
                continue
            if inst.opcode == "get-tuple-element":
                source = graph.nodes[operands[0]]
                index = _parse_int(inst.attrs.get("index", "0"), inst, "index")
                if source.op == "tuple" and index < len(source.operands):
                    alias[inst.name] = source.operands[index]  # look through the tuple
                    continue
            name = inst.name
            if arguments is not None and (name in graph.nodes or name in reserved):
                name = _unique_name(graph, reserved, f"{fused_in or comp.name}.{inst.name}")
            node = self._make_node(graph, inst, name, operands, fused_in)
            graph.add(node)
            alias[inst.name] = name
            self.node_count += 1
            if self.node_count > self.limits.max_nodes:
                raise LimitError(f"more than {self.limits.max_nodes} instructions "
                                 "(FUSION_EXPLORER_MAX_NODES)", inst.loc)
        if root_name is None:
            root_name = comp.instructions[-1].name
        return alias[root_name]

    def _make_node(self, graph: Graph, inst: _RawInstruction, name: str, operands: list[str],
                   fused_in: str | None) -> Node:
        attrs, extra = self._convert_attributes(inst)
        shape = inst.shape
        if shape is None:
            shape = self._infer_shape(graph, inst, operands, attrs)
        if any(-1 in leaf.dims for leaf in shape.leaves()):
            raise UnsupportedError(f"'{inst.name}' has an unbounded dynamic dimension (?); "
                                   "the explorer needs static shapes", inst.loc)
        if inst.opcode == "parameter":
            attrs["parameter_number"] = int(inst.literal)
        elif inst.opcode == "constant":
            attrs["value"] = _parse_literal(inst.literal, shape, inst.loc)
        return Node(name=name, op=inst.opcode, operands=tuple(operands), shape=shape,
                    attrs=attrs, loc=inst.loc, extra=extra, fused_in=fused_in)

    def _infer_shape(self, graph: Graph, inst: _RawInstruction, operands: list[str],
                     attrs: dict) -> Shape:
        operand_shapes = [graph.nodes[o].shape for o in operands]
        try:
            shape = infer_shape(inst.opcode, operand_shapes, attrs, self.computations)
        except ShapeError as error:
            raise InputError(f"'{inst.name}': {error}", inst.loc) from None
        if shape is None:
            raise InputError(f"'{inst.name}' has no shape and the shape of {inst.opcode} "
                             "cannot be inferred; write it as in 'x = f32[4] ...'", inst.loc)
        return shape

    def _convert_attributes(self, inst: _RawInstruction) -> tuple[dict, dict]:
        attrs: dict = {}
        extra: dict[str, str] = {}
        for key, text in inst.attrs.items():
            if key in _INT_LIST_ATTRS:
                attrs[key] = _parse_int_list(text, inst, key)
            elif key in _INT_ATTRS:
                attrs[key] = _parse_int(text, inst, key)
            elif key in _FLOAT_ATTRS:
                attrs[key] = _parse_float(text, inst, key)
            elif key in _BOOL_ATTRS:
                attrs[key] = text == "true"
            elif key in _WORD_ATTRS:
                attrs[key] = text.strip('"')
            elif key == "custom_call_target":
                attrs[key] = _unquote(text)
            elif key in _COMPUTATION_ATTRS:
                attrs[key] = self._computation_ref(text.lstrip("%"), inst, key)
            elif key == "branch_computations":
                attrs[key] = tuple(self._computation_ref(n, inst, key) for n in _names_in(text))
            elif key in ("true_computation", "false_computation"):
                pass  # combined below, true first, as XLA numbers the branches
            elif key == "slice":
                attrs[key] = _parse_slice(text, inst)
            elif key == "padding":
                attrs[key] = _parse_padding(text, inst)
            elif key == "window":
                attrs[key] = _parse_window(text, inst)
            else:
                extra[key] = text
        if "true_computation" in inst.attrs:
            attrs["branch_computations"] = tuple(
                self._computation_ref(inst.attrs[k].lstrip("%"), inst, k)
                for k in ("true_computation", "false_computation"))
        return attrs, extra

def _drop_dead_plumbing(graph: Graph) -> None:
    """Remove tuples left unused when get-tuple-element was looked through."""
    while True:
        users = graph.users()
        dead = [n for n, u in users.items()
                if not u and n != graph.root and graph.nodes[n].op == "tuple"]
        if not dead:
            return
        for name in dead:
            del graph.nodes[name]


def _in_dependency_order(comp: _RawComputation) -> list[_RawInstruction]:
    """The instructions with every operand before its user; text order when it already is."""
    by_name: dict[str, _RawInstruction] = {}
    for inst in comp.instructions:
        if inst.name in by_name:
            raise InputError(f"instruction name '{inst.name}' is used twice in "
                             f"computation '{comp.name}'", inst.loc)
        by_name[inst.name] = inst
    order = topological_order({inst.name: inst.operands for inst in comp.instructions},
                              lambda name: by_name[name].loc)
    return [by_name[name] for name in order]


_BACKEND_KIND = re.compile(r'"fusion_backend_config"\s*:\s*\{\s*"kind"\s*:\s*"([^"]+)"')


def _fusion_record(inst: _RawInstruction) -> dict:
    """What an optimised dump says of one fusion: XLA's kind, its backend's kind (Triton's
    "__triton", "__triton_gemm", ...) and the raw backend_config."""
    config = inst.attrs.get("backend_config")
    backend = _BACKEND_KIND.search(config or "")
    return {"kind": inst.attrs.get("kind"), "backend_kind": backend.group(1) if backend else None,
            "backend_config": config}


def _unique_name(graph: Graph, reserved: set[str], base: str) -> str:
    name, i = base, 1
    while name in graph.nodes or name in reserved:
        name, i = f"{base}.{i}", i + 1
    return name


# -- attribute parsers -----------------------------------------------------------------------------


def _attr_error(inst: _RawInstruction, key: str, expected: str) -> InputError:
    return InputError(f"attribute {key}={inst.attrs.get(key, '')} of '{inst.name}': expected "
                      f"{expected}", inst.attr_locs.get(key, inst.loc))


def _parse_int(text: str, inst: _RawInstruction, key: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _attr_error(inst, key, "an integer") from None


def _parse_float(text: str, inst: _RawInstruction, key: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _attr_error(inst, key, "a number") from None


def _parse_int_list(text: str, inst: _RawInstruction, key: str) -> tuple[int, ...]:
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise _attr_error(inst, key, "a list such as {0,1}")
    body = body[1:-1].strip()
    if not body:
        return ()
    try:
        return tuple(int(x) for x in body.split(","))
    except ValueError:
        raise _attr_error(inst, key, "a list of integers such as {0,1}") from None


def _names_in(text: str) -> list[str]:
    return [n.lstrip("%") for n in re.findall(r"%?[A-Za-z_$][A-Za-z0-9_.\-$]*", text)]


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return bytes(text[1:-1], "utf-8").decode("unicode_escape")
    return text


def _parse_slice(text: str, inst: _RawInstruction) -> tuple[tuple[int, int, int], ...]:
    ranges = re.findall(r"\[([^\]]*)\]", text)
    result = []
    for r in ranges:
        parts = [p.strip() for p in r.split(":")]
        try:
            start, limit = int(parts[0]), int(parts[1])
            stride = int(parts[2]) if len(parts) > 2 else 1
        except (ValueError, IndexError):
            raise _attr_error(inst, "slice", "ranges such as {[0:4:1], [2:8]}") from None
        result.append((start, limit, stride))
    return tuple(result)


def _parse_padding(text: str, inst: _RawInstruction) -> tuple[tuple[int, int, int], ...]:
    result = []
    for dim in text.split("x"):
        try:
            parts = [int(p) for p in re.split(r"(?<=\d)_", dim)]
        except ValueError:
            raise _attr_error(inst, "padding", "low_high[_interior] per dimension, "
                                               "joined by x") from None
        if len(parts) not in (2, 3):
            raise _attr_error(inst, "padding", "low_high[_interior] per dimension")
        result.append((parts[0], parts[1], parts[2] if len(parts) == 3 else 0))
    return tuple(result)


def _parse_window(text: str, inst: _RawInstruction) -> dict:
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    fields = dict(item.split("=", 1) for item in body.split() if "=" in item)
    if "size" not in fields:
        return {}
    try:
        size = tuple(int(x) for x in fields["size"].split("x"))
        rank = len(size)

        def per_dim(key, default):
            if key not in fields:
                return (default,) * rank
            return tuple(int(x) for x in fields[key].split("x"))

        if "pad" in fields:
            pad = tuple(tuple(int(x) for x in re.split(r"(?<=\d)_", p))
                        for p in fields["pad"].split("x"))
        else:
            pad = ((0, 0),) * rank
        window = {
            "size": size,
            "stride": per_dim("stride", 1),
            "pad": pad,
            "lhs_dilate": per_dim("lhs_dilate", 1),
            "rhs_dilate": per_dim("rhs_dilate", 1),
            "window_reversal": tuple(bool(x) for x in per_dim("rhs_reversal", 0)),
        }
    except ValueError:
        raise _attr_error(inst, "window", "size=AxB stride=AxB pad=l_hxl_h ...") from None
    if any(len(v) != rank for v in window.values()):
        raise _attr_error(inst, "window", "the same number of dimensions in every field")
    return window


_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "-nan": math.nan,
                   "true": 1, "false": 0}


def _parse_literal(text: str, shape: Shape, loc: SourceLoc):
    """A constant's value as an array of the shape's dtype; None when elided as {...}."""
    body = text.strip()
    if body == "{...}" or body == "...":
        return None
    if shape.is_tuple:
        raise UnsupportedError("tuple-shaped constants are not supported", loc)
    dtype = shape.dtype
    if not dtype.is_array_type:
        raise InputError(f"a constant cannot hold {dtype} values", loc)
    if dtype.kind == "complex":
        pairs = re.findall(r"\(\s*([^,()]+)\s*,\s*([^,()]+)\s*\)", body)
        values = [complex(_number(a, loc), _number(b, loc)) for a, b in pairs]
    else:
        tokens = [t for t in re.split(r"[\s,{}]+", body) if t]
        values = [_number(t, loc) for t in tokens]
    if len(values) == 1 and shape.size != 1:
        # One value for a bigger shape (XLA prints a splat of a scalar only for size-1
        # shapes): a broadcast view of it, whose memory does not grow with the shape.
        return np.broadcast_to(_literal_array(values, dtype, loc), shape.dims)
    if len(values) != shape.size:
        raise InputError(f"constant has {len(values)} values but shape {shape} holds "
                         f"{shape.size}", loc)
    return _literal_array(values, dtype, loc).reshape(shape.dims)


def _literal_array(values: list, dtype, loc: SourceLoc) -> np.ndarray:
    """A constant's values as a flat array of `dtype`; InputError for a value that an
    integer type cannot hold (1.5, nan, 2^31 in s32) instead of NumPy's exception."""
    if dtype.is_integer or dtype.kind == "pred":
        for value in values:
            if not isinstance(value, int) and not (math.isfinite(value)
                                                   and value.is_integer()):
                raise InputError(f"constant value {value} is not an integer, as {dtype} "
                                 "needs", loc)
        integers = [int(value) for value in values]
        if dtype.is_integer:
            info = ml_dtypes.iinfo(dtype.numpy)
            for value in integers:
                if not info.min <= value <= info.max:
                    raise InputError(f"constant value {value} does not fit in {dtype}", loc)
        return np.array(integers, dtype=object).astype(dtype.numpy)
    wide = np.array(values, dtype=np.complex128 if dtype.kind == "complex" else np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = wide.astype(dtype.numpy)
        # XLA's parser refuses a finite value its type cannot hold (1e10 in f16), as NumPy
        # would otherwise make it inf (or nan, in a float8 type without inf) with a warning.
        overflowed = np.isfinite(wide) & ~np.isfinite(narrow.astype(wide.dtype))
    if overflowed.any():
        raise InputError(f"constant value {wide[overflowed][0]} is out of the range of "
                         f"{dtype}", loc)
    return narrow


def _number(token: str, loc: SourceLoc):
    token = token.lower()
    if token in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[token]
    if token.startswith("-nan") or token.startswith("nan"):
        return math.nan
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float.fromhex(token) if "0x" in token else float(token)
    except ValueError:
        raise InputError(f"bad number '{token}' in constant", loc) from None


# -- entry points ---------------------------------------------------------------------------------


def import_hlo_modules(text: str, filename: str = "<hlo>",
                       limits: Limits | None = None) -> list[Graph]:
    """Every module of an HLO text file (several when split by `// -----` lines)."""
    limits = limits or Limits()
    graphs = []
    for first_line, chunk in split_modules(text):
        raw = _Parser(chunk, filename, first_line, limits).module()
        graph = _ModuleBuilder(raw, filename, limits).build()
        verify(graph, limits)
        graphs.append(graph)
    if not graphs:
        raise InputError("the file holds no HLO module (only comments or blank lines)",
                         SourceLoc(filename, 1, 1))
    return graphs


def import_hlo(text: str, filename: str = "<hlo>", limits: Limits | None = None,
               module: int = 0) -> Graph:
    """One module of an HLO text file (the first unless `module` says otherwise)."""
    return pick_module(import_hlo_modules(text, filename, limits), module, filename)
