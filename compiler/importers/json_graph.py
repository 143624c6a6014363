"""The project's own JSON graph format: hand-written graphs, the REST API, and a lossless export.

The format is documented in docs/json-graph-format.md. In short:

    {"format": "fusion-explorer-graph", "version": 1, "name": "softmax",
     "parameters": [{"name": "x", "dtype": "f32", "shape": [4, 8]}],
     "nodes": [{"name": "e", "op": "exponential", "operands": ["x"]}, ...],
     "outputs": ["e"],
     "computations": {"add_f32": {"parameters": [...], "nodes": [...], "outputs": [...]}}}

Ops and attributes are the Graph IR's (XLA HLO's, see notes in compiler/ir/graph.py); lists
stand for tuples. Nodes may come in any order. A node's "dtype" and "shape" are optional where
the op determines them and are then checked; they are required where it does not (the target
type of a convert, the dims of a reshape or broadcast, an iota).

Every error is an InputError at file:line:col of the JSON value that is wrong (the node object
for a node), with the JSON path and node name: "graph.json:14:5: nodes[3] 'y': operand 'z' is
not defined". `export_json` writes any Graph, including HLO-imported ones, so that
`import_json` gives the same graph back.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from compiler.errors import InputError, LimitError, SourceLoc
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import DTYPES, DType
from compiler.ir.graph import COMPUTATION_ATTRS, Graph, Node
from compiler.ir.ops import REDUCERS
from compiler.ir.shape_inference import format_dims
from compiler.ir.shapes import ArrayShape, Shape, TupleShape
from compiler.ir.verify import check_shape_limits, did_you_mean, topological_order
from compiler.limits import Limits, check_input_size, decode_utf8, env_name, read_limited

FORMAT = "fusion-explorer-graph"
VERSION = 1
SUPPORTED_VERSIONS = (1,)

_TOP_KEYS = ("format", "version", "name", "description", "loc", "parameters", "nodes", "outputs",
             "computations")
_COMPUTATION_KEYS = ("description", "loc", "parameters", "nodes", "outputs")
_PARAMETER_KEYS = ("name", "dtype", "shape", "layout", "dynamic", "loc", "extra", "fused_in")
_NODE_KEYS = ("name", "op", "operands", "attrs", "dtype", "shape", "layout", "dynamic", "loc",
              "extra", "fused_in")
# Reductions that may name their reducer ("reducer": "add") instead of a computation.
_REDUCTIONS = ("reduce", "reduce-window", "scatter")
# Given by the node's "dtype" and "shape" keys, never as attributes.
_RESERVED_ATTRS = ("dtype", "new_dims")


def import_json(text: str, filename: str, limits: Limits | None = None) -> Graph:
    """The graph a Fusion Explorer JSON document describes; InputError (file:line:col) if bad."""
    limits = limits or Limits()
    if len(text) > limits.max_input_bytes:
        check_input_size(len(text.encode("utf-8", errors="replace")), filename, limits)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON: {error.msg}", SourceLoc(filename, error.lineno, error.colno)
        ) from None
    except (ValueError, RecursionError) as error:
        # Integers of thousands of digits and absurdly deep nesting end here.
        raise InputError(f"invalid JSON: {error}", SourceLoc(filename)) from None
    return _Importer(_Positions(text, filename), limits).run(document)


def import_json_file(path: str | os.PathLike, limits: Limits | None = None) -> Graph:
    """Read, decode and import a JSON graph file, within `limits`."""
    limits = limits or Limits()
    filename = os.fspath(path)
    return import_json(decode_utf8(read_limited(path, limits), filename), filename, limits)


def export_json(graph: Graph) -> dict:
    """The graph as a JSON-ready dict that `import_json` reads back into an equal graph.

    Non-finite floats in constants become the strings "nan", "inf" and "-inf", so the result
    serialises with json.dumps(..., allow_nan=False) as standard JSON.
    """
    document: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": graph.name}
    document.update(_computation_to_json(graph))
    computations = {
        name: _computation_to_json(computation)
        for name, computation in graph.computations.items() if computation is not graph
    }
    if computations:
        document["computations"] = computations
    return document


# -- positions ----------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _Positions:
    """Where the values an error can be about start in the text: file:line:col by JSON path.

    Only the structure down to node objects is walked in Python; everything below (attributes,
    constant values) is skipped with the C JSON scanner, so this costs about as much as the
    parse itself.
    """

    def __init__(self, text: str, filename: str):
        self.filename = filename
        self._offsets: dict[tuple, int] = {}
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._decoder = json.JSONDecoder()
        self._walk(text, 0, ())

    def loc(self, path: tuple) -> SourceLoc:
        """The location of the value at `path`, or of its nearest recorded ancestor."""
        while path not in self._offsets and path:
            path = path[:-1]
        offset = self._offsets.get(path, 0)
        line = bisect.bisect_right(self._line_starts, offset)
        return SourceLoc(self.filename, line, offset - self._line_starts[line - 1] + 1)

    @staticmethod
    def _descends(path: tuple) -> bool:
        if path and path[0] == "computations":
            if len(path) <= 2:
                return True
            path = path[2:]
        return len(path) == 0 or path in (("parameters",), ("nodes",), ("outputs",))

    def _walk(self, text: str, i: int, path: tuple) -> int:
        i = _WHITESPACE.match(text, i).end()
        self._offsets[path] = i
        opening = text[i]
        if opening not in "{[" or not self._descends(path):
            return self._decoder.raw_decode(text, i)[1]
        closing = "}" if opening == "{" else "]"
        i = _WHITESPACE.match(text, i + 1).end()
        index = 0
        while text[i] != closing:
            if opening == "{":
                key, i = self._decoder.raw_decode(text, i)
                i = _WHITESPACE.match(text, i).end() + 1  # the colon
                i = self._walk(text, i, path + (key,))
            else:
                i = self._walk(text, i, path + (index,))
                index += 1
            i = _WHITESPACE.match(text, i).end()
            if text[i] == ",":
                i = _WHITESPACE.match(text, i + 1).end()
        return i + 1


# -- import -------------------------------------------------------------------------------------


@dataclass
class _NodeSpec:
    """One node object, checked and converted, waiting for its operands to be built."""

    name: str
    op: str
    operands: list[str]
    attrs: dict
    label: str  # "nodes[3] 'y'", for messages
    where: SourceLoc
    dtype: DType | None = None
    shape: Shape | None = None  # the full declared shape, when given
    dims: tuple[int, ...] | None = None
    source_loc: SourceLoc | None = None
    extra: dict = field(default_factory=dict)
    fused_in: str | None = None


class _Importer:
    def __init__(self, positions: _Positions, limits: Limits):
        self.positions = positions
        self.limits = limits
        self.computation_names: set[str] = set()
        self.source_locs: list[tuple[Graph, str, SourceLoc]] = []

    def error(self, path: tuple, message: str) -> InputError:
        return InputError(message, self.positions.loc(path))

    def run(self, document: Any) -> Graph:
        if not isinstance(document, dict):
            raise self.error((), f'the top level must be an object with "format": "{FORMAT}"')
        self.check_header(document)
        self.check_keys(document, _TOP_KEYS, (), "the top level")
        self.check_node_count(document)
        name = document.get("name", os.path.splitext(os.path.basename(self.positions.filename))[0])
        if not isinstance(name, str) or not name:
            raise self.error(("name",), f'"name" must be a non-empty string, got {name!r}')

        builder = GraphBuilder(name, source=self.positions.filename, limits=self.limits)
        computations = document.get("computations", {})
        if not isinstance(computations, dict):
            raise self.error(("computations",), '"computations" must be an object: name -> '
                                                '{"parameters", "nodes", "outputs"}')
        self.computation_names = set(computations)
        for computation_name in self.computation_order(computations):
            path = ("computations", computation_name)
            body = computations[computation_name]
            if not isinstance(body, dict):
                raise self.error(path, f"computations.{computation_name} must be an object")
            self.check_keys(body, _COMPUTATION_KEYS, path, f"computations.{computation_name}")
            sub = builder.computation(computation_name)
            self.build(sub, body, path, f"computations.{computation_name}.")
        graph = self.build(builder, document, (), "")
        # Locations written in the document (an exported HLO graph's) replace the JSON ones
        # only now: until the graph was verified, errors were about this JSON text.
        for owner, node_name, loc in self.source_locs:
            owner.nodes[node_name].loc = loc
        return graph

    def check_header(self, document: dict) -> None:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        if "format" not in document:
            raise self.error((), f'missing "format": "{FORMAT}"; is this a Fusion Explorer '
                                 f'graph? (this explorer reads version {supported})')
        if document["format"] != FORMAT:
            raise self.error(("format",), f'"format" is {document["format"]!r}; a Fusion '
                                          f'Explorer graph has "format": "{FORMAT}"')
        version = document.get("version")
        if version is None:
            raise self.error((), f'missing "version"; this explorer reads version {supported}')
        if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
            raise self.error(("version",), f"version {version!r} is not supported; this "
                                           f"explorer reads version {supported}")

    def check_keys(self, obj: dict, allowed: tuple[str, ...], path: tuple, what: str) -> None:
        for key in obj:
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f" (known: {', '.join(allowed)})"
                raise self.error(path + (key,), f"{what}: unknown key '{key}'{hint}")

    def check_node_count(self, document: dict) -> None:
        computations = document.get("computations")
        bodies = [document]
        if isinstance(computations, dict):
            bodies += [body for body in computations.values() if isinstance(body, dict)]
        count = sum(len(b.get(key) or []) for b in bodies for key in ("parameters", "nodes")
                    if isinstance(b.get(key), list))
        if count > self.limits.max_nodes:
            # The builder would stop at the limit too, but only after building that many nodes.
            raise LimitError(
                f"the graph has {count} nodes; the limit is {self.limits.max_nodes} "
                f"({env_name('max_nodes')})",
                self.positions.loc(()),
            )

    def computation_order(self, computations: dict) -> list[str]:
        """Computation names, each after the computations its nodes call."""
        calls = {}
        for name, body in computations.items():
            nodes = body.get("nodes") if isinstance(body, dict) else None
            called = []
            for node in nodes if isinstance(nodes, list) else []:
                attrs = node.get("attrs") if isinstance(node, dict) else None
                for key in COMPUTATION_ATTRS if isinstance(attrs, dict) else ():
                    value = attrs.get(key)
                    names = [value] if isinstance(value, str) else value
                    if isinstance(names, list):
                        called += [n for n in names if isinstance(n, str) and n in computations]
            calls[name] = called
        return topological_order(calls, lambda name: self.positions.loc(("computations", name)))

    # -- one computation ----------------------------------------------------------------------

    def build(self, builder: GraphBuilder, body: dict, path: tuple, prefix: str) -> Graph:
        parameters = self.list_of(body, "parameters", path, prefix, required=False)
        nodes = self.list_of(body, "nodes", path, prefix, required=False)
        outputs = self.list_of(body, "outputs", path, prefix, required=True)
        if "loc" in body:
            builder.graph.loc = self.source_loc(body["loc"], path + ("loc",))

        defined: dict[str, str] = {}
        for index, parameter in enumerate(parameters):
            self.add_parameter(builder, parameter, path + ("parameters", index),
                               f"{prefix}parameters[{index}]", defined)
        specs = [self.node_spec(node, path + ("nodes", index), f"{prefix}nodes[{index}]", defined)
                 for index, node in enumerate(nodes)]
        by_name = {spec.name: spec for spec in specs}
        for spec in specs:
            for position, operand in enumerate(spec.operands):
                if operand not in defined:
                    raise InputError(
                        f"{spec.label}: operand {position} '{operand}' is not defined"
                        f"{did_you_mean(operand, defined)}",
                        spec.where,
                    )
        order = topological_order({s.name: s.operands for s in specs},
                                  lambda name: by_name[name].where)
        for name in order:
            self.add_node(builder, by_name[name])

        for index, output in enumerate(outputs):
            if not isinstance(output, str) or output not in defined:
                raise self.error(path + ("outputs", index),
                                 f"{prefix}outputs[{index}]: {output!r} is not a defined name")
        return builder.finish(list(outputs))

    def list_of(self, body: dict, key: str, path: tuple, prefix: str, required: bool) -> list:
        if key not in body:
            if required:
                raise self.error(path, f'{prefix or "the graph"}: missing "{key}"')
            return []
        value = body[key]
        if not isinstance(value, list) or (required and not value):
            raise self.error(path + (key,), f'{prefix}{key} must be a'
                                            f'{" non-empty" if required else ""} list')
        return value

    def add_parameter(self, builder: GraphBuilder, obj: Any, path: tuple, label: str,
                      defined: dict[str, str]) -> None:
        where = self.positions.loc(path)
        if not isinstance(obj, dict):
            raise InputError(f"{label} must be an object with name, dtype and shape", where)
        name = self.name_of(obj, label, where, defined)
        label = f"{label} '{name}'"
        self.check_keys(obj, _PARAMETER_KEYS, path, label)
        if "shape" not in obj:
            raise InputError(f'{label}: missing "shape" (a list of dims)', where)
        shape = self.shape_of(obj, label, where, need_dtype=True)
        annotations = self.annotations_of(obj, label, where)
        self.guard(label, lambda: builder.parameter(name, shape, where))
        self.annotate(builder, name, *annotations)

    def node_spec(self, obj: Any, path: tuple, label: str, defined: dict[str, str]) -> _NodeSpec:
        where = self.positions.loc(path)
        if not isinstance(obj, dict):
            raise InputError(f"{label} must be an object with name, op and operands", where)
        name = self.name_of(obj, label, where, defined)
        label = f"{label} '{name}'"
        self.check_keys(obj, _NODE_KEYS, path, label)
        op = obj.get("op")
        if not isinstance(op, str):
            raise InputError(f'{label}: "op" must be a string naming an op, got {op!r}', where)
        if op == "parameter":
            raise InputError(f'{label}: parameters belong in the "parameters" list', where)
        operands = obj.get("operands", [])
        if not isinstance(operands, list) or not all(isinstance(o, str) for o in operands):
            raise InputError(f'{label}: "operands" must be a list of names', where)
        attrs = obj.get("attrs", {})
        if not isinstance(attrs, dict):
            raise InputError(f'{label}: "attrs" must be an object', where)
        for key in _RESERVED_ATTRS:
            if key in attrs:
                raise InputError(f'{label}: give the result\'s {key} as the node\'s "dtype" and '
                                 f'"shape", not as an attribute', where)
        for key in COMPUTATION_ATTRS:
            self.check_called(attrs.get(key), key, label, where)

        spec = _NodeSpec(name, op, operands, {k: _from_json(v) for k, v in attrs.items()},
                         label, where)
        if "shape" not in obj and ("layout" in obj or "dynamic" in obj):
            raise InputError(f'{label}: "layout" and "dynamic" need "shape" and "dtype"', where)
        declared = self.shape_of(obj, label, where, need_dtype=False) if "shape" in obj else None
        if isinstance(declared, TupleShape) or (declared is not None and "dtype" in obj):
            spec.shape = declared
        elif declared is not None:
            spec.dims = declared.dims
        elif "dtype" in obj:
            spec.dtype = self.dtype_of(obj["dtype"], label, where)
        if op == "constant":
            self.constant_value(spec, attrs.get("value"))
        if op in _REDUCTIONS and "to_apply" not in attrs:
            self.check_reducer_sugar(spec)
        spec.extra, spec.fused_in, spec.source_loc = self.annotations_of(obj, label, where)
        return spec

    def add_node(self, builder: GraphBuilder, spec: _NodeSpec) -> None:
        attrs = dict(spec.attrs)
        if spec.dims is not None:
            attrs["new_dims"] = spec.dims
        if spec.op in _REDUCTIONS and "to_apply" not in attrs:
            attrs["to_apply"] = self.named_reducer(builder, spec)
        self.guard(spec.label, lambda: builder.add(
            spec.op, spec.operands, attrs, name=spec.name, loc=spec.where, shape=spec.shape,
            dtype=spec.dtype))
        self.annotate(builder, spec.name, spec.extra, spec.fused_in, spec.source_loc)

    def guard(self, label: str, action):
        """Run a builder step; its InputError gets the JSON path and node name in front."""
        try:
            return action()
        except InputError as error:
            raise type(error)(f"{label}: {error.message}", error.where) from None

    def annotate(self, builder: GraphBuilder, name: str, extra: dict, fused_in: str | None,
                 source_loc: SourceLoc | None) -> None:
        """Give a built node what the document says about it beyond its op."""
        node = builder.graph.nodes[name]
        node.extra.update(extra)
        node.fused_in = fused_in
        if source_loc is not None:
            self.source_locs.append((builder.graph, name, source_loc))

    # -- fields -------------------------------------------------------------------------------

    def name_of(self, obj: dict, label: str, where: SourceLoc, defined: dict[str, str]) -> str:
        name = obj.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f'{label}: "name" must be a non-empty string, got {name!r}', where)
        if name in defined:
            raise InputError(f"{label}: the name '{name}' is already used by {defined[name]}",
                             where)
        defined[name] = label
        return name

    def dtype_of(self, value: Any, label: str, where: SourceLoc) -> DType:
        if isinstance(value, str) and value in DTYPES:
            return DTYPES[value]
        hint = did_you_mean(str(value), DTYPES) or f" (known: {', '.join(DTYPES)})"
        raise InputError(f"{label}: unknown element type {value!r}{hint}", where)

    def shape_of(self, obj: dict, label: str, where: SourceLoc, need_dtype: bool) -> Shape:
        """The shape an object declares: "shape" (dims or {"tuple": [...]}), "dtype", "layout"."""
        value = obj["shape"]
        if isinstance(value, dict):
            for key in ("dtype", "layout", "dynamic"):
                if key in obj:
                    raise InputError(f'{label}: a tuple shape takes no "{key}"; give it per '
                                     f"element", where)
            shape = self.tuple_shape(value, label, where)
        else:
            if "dtype" not in obj:
                if need_dtype:
                    raise InputError(f'{label}: missing "dtype"', where)
                if "layout" in obj or "dynamic" in obj:
                    raise InputError(f'{label}: "layout" and "dynamic" need "dtype" too', where)
                dtype = DTYPES["f32"]  # a placeholder: only the dims are declared
            else:
                dtype = self.dtype_of(obj["dtype"], label, where)
            shape = self.array_shape(dtype, value, obj.get("layout"), obj.get("dynamic"), label,
                                     where)
        self.guard(label, lambda: check_shape_limits(shape, self.limits, where))
        return shape

    def tuple_shape(self, value: dict, label: str, where: SourceLoc,
                    depth: int = 1) -> TupleShape:
        elements = value.get("tuple")
        if set(value) != {"tuple"} or not isinstance(elements, list):
            raise InputError(f'{label}: a tuple shape is {{"tuple": [element shapes]}}', where)
        if depth > self.limits.max_nesting:
            # As in HLO text: every walk of a shape is then bounded, far below Python's
            # recursion limit (300 levels made the interpreter's walk hit it).
            raise LimitError(f"{label}: tuple shapes nested more than {self.limits.max_nesting}"
                             f" levels deep ({env_name('max_nesting')})", where)
        shapes = []
        for element in elements:
            if isinstance(element, dict) and "tuple" in element:
                shapes.append(self.tuple_shape(element, label, where, depth + 1))
            elif isinstance(element, dict) and {"dtype", "dims"} <= set(element):
                shapes.append(self.array_shape(
                    self.dtype_of(element["dtype"], label, where), element["dims"],
                    element.get("layout"), element.get("dynamic"), label, where))
            else:
                raise InputError(f'{label}: a tuple element is {{"dtype", "dims"}} or a tuple, '
                                 f"got {element!r}", where)
        return TupleShape(tuple(shapes))

    def array_shape(self, dtype: DType, dims: Any, layout: Any, dynamic: Any, label: str,
                    where: SourceLoc) -> ArrayShape:
        if not isinstance(dims, list):
            raise InputError(f"{label}: a shape is a list of dims, got {dims!r}", where)
        for index, d in enumerate(dims):
            if not _is_json_int(d) or d < 0:
                raise InputError(f"{label}: shape[{index}] is {d!r}; dims must be non-negative "
                                 f"integers", where)
        if len(dims) > self.limits.max_rank:
            # Checked again with the limits below; this stops a huge layout list early too.
            self.guard(label, lambda: check_shape_limits(
                ArrayShape(dtype, tuple(dims)), self.limits, where))
        if layout is not None:
            if (not isinstance(layout, list) or not all(_is_json_int(d) for d in layout)
                    or sorted(layout) != list(range(len(dims)))):
                raise InputError(f"{label}: layout {layout!r} must list each of the "
                                 f"{len(dims)} dims once, minor to major", where)
            layout = tuple(layout)
        flags: tuple[bool, ...] = ()
        if dynamic is not None:
            if (not isinstance(dynamic, list) or len(dynamic) != len(dims)
                    or not all(isinstance(f, bool) for f in dynamic)):
                raise InputError(f"{label}: dynamic must be one true/false per dim", where)
            flags = tuple(dynamic) if any(dynamic) else ()
        return ArrayShape(dtype, tuple(dims), layout, flags)

    def check_called(self, value: Any, key: str, label: str, where: SourceLoc) -> None:
        if value is None:
            return
        names = value if isinstance(value, list) else [value]
        for name in names:
            if not isinstance(name, str):
                raise InputError(f"{label}: {key} must name a computation, got {name!r}", where)
            if name not in self.computation_names:
                raise InputError(f"{label}: {key} names computation '{name}', which is not in "
                                 f'"computations"{did_you_mean(name, self.computation_names)}',
                                 where)

    def check_reducer_sugar(self, spec: _NodeSpec) -> None:
        """A reduction may name its reducer ("reducer": "add") instead of a computation."""
        kind = spec.attrs.get("reducer")
        if kind not in REDUCERS:
            raise InputError(f'{spec.label}: {spec.op} needs "to_apply" (a computation name) or '
                             f'"reducer" (one of {", ".join(REDUCERS)})', spec.where)
        if len(spec.operands) != (3 if spec.op == "scatter" else 2):
            raise InputError(f'{spec.label}: a {spec.op} of several arrays needs "to_apply"; '
                             f'"reducer" alone names a reducer of one array', spec.where)

    def named_reducer(self, builder: GraphBuilder, spec: _NodeSpec) -> str:
        """The computation for `"reducer": "add"`, on the element type of the first input."""
        first = builder.shape_of(spec.operands[0])
        if first.is_tuple:
            raise InputError(f"{spec.label}: operand 0 of {spec.op} must be an array", spec.where)
        return builder.reducer(spec.attrs["reducer"], first.dtype)

    def constant_value(self, spec: _NodeSpec, value: Any) -> None:
        """Turn attrs.value into an array; the node's shape comes from it, or checks it."""
        if isinstance(spec.shape, TupleShape):
            raise InputError(f"{spec.label}: a constant has an array shape", spec.where)
        dtype = spec.shape.dtype if spec.shape is not None else spec.dtype
        dims = spec.shape.dims if spec.shape is not None else spec.dims
        if dtype is None:
            raise InputError(f'{spec.label}: a constant needs "dtype"', spec.where)
        if value is None and dims is None:
            raise InputError(f'{spec.label}: a constant needs attrs.value, or "shape" when its '
                             f"value is elided (null)", spec.where)
        array = self.guard(spec.label, lambda: _array_from_json(value, dtype, dims, spec.where))
        spec.attrs["value"] = array
        if spec.shape is None:
            spec.shape = ArrayShape(dtype, dims if array is None else tuple(array.shape))
        spec.dims = spec.dtype = None

    def annotations_of(self, obj: dict, label: str, where: SourceLoc):
        """The optional "extra", "fused_in" and "loc" of a parameter or node, checked."""
        extra = obj.get("extra", {})
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise InputError(f'{label}: "extra" must be an object of strings', where)
        fused_in = obj.get("fused_in")
        if fused_in is not None and not isinstance(fused_in, str):
            raise InputError(f'{label}: "fused_in" must be a string', where)
        source_loc = self.source_loc(obj["loc"], where) if "loc" in obj else None
        return extra, fused_in, source_loc

    def source_loc(self, value: Any, where) -> SourceLoc:
        if not isinstance(value, str) or not value:
            where = where if isinstance(where, SourceLoc) else self.positions.loc(where)
            raise InputError(f'"loc" must be a "file:line:col" string, got {value!r}', where)
        return _parse_loc(value)


# -- values -------------------------------------------------------------------------------------


def _is_json_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _from_json(value: Any) -> Any:
    """An attribute value: JSON lists become tuples, as the Graph IR spells them."""
    if isinstance(value, list):
        return tuple(_from_json(v) for v in value)
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    return value


def _to_json(value: Any, node: Node, key: str) -> Any:
    if isinstance(value, (tuple, list)):
        return [_to_json(v, node, key) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v, node, key) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"node '{node.name}': attribute '{key}' holds a {type(value).__name__}, which the JSON "
        f"format has no spelling for"
    )


def _array_from_json(value: Any, dtype: DType, dims, where: SourceLoc) -> np.ndarray | None:
    """A constant's value: a nested list (or one value for every element) of `dtype`."""
    if value is None:
        return None
    if not dtype.is_array_type:
        raise InputError(f"a constant cannot hold {dtype} values", where)
    array = _to_numpy(value, dtype, where)
    if dtype.kind == "complex":
        is_scalar = not isinstance(value, list) or array.ndim == 0
    else:
        is_scalar = not isinstance(value, list)
    if is_scalar:
        return array if dims is None or len(dims) == 0 else np.broadcast_to(array, tuple(dims))
    if dims is not None and tuple(array.shape) != tuple(dims):
        raise InputError(
            f"value has shape {format_dims(array.shape)} but the declared shape is "
            f"{format_dims(dims)}",
            where,
        )
    return array


def _to_numpy(value: Any, dtype: DType, where: SourceLoc) -> np.ndarray:
    target = dtype.numpy
    kind = dtype.kind
    what = {"pred": "true/false values", "sint": "integers", "uint": "integers",
            "float": 'numbers (or "nan", "inf", "-inf")',
            "complex": "[real, imaginary] pairs"}[kind]
    try:
        if kind == "pred":
            array = np.array(value)
            if array.size and array.dtype != np.bool_:
                raise ValueError("found other values")
            return array.astype(target)
        if kind in ("sint", "uint"):
            array = np.array(value)
            if array.size and array.dtype.kind not in "iuO":
                raise ValueError(f"found {array.dtype} values")
            if array.dtype.kind == "O" and not all(_is_json_int(v) for v in array.flat):
                raise ValueError("found non-integers")  # or integers beyond 64 bits
            if array.size:
                info = ml_dtypes.iinfo(target)
                low, high = array.min(), array.max()
                if low < info.min or high > info.max:
                    bad = low if low < info.min else high
                    raise InputError(f"value {bad} does not fit in {dtype}", where)
            return array.astype(target)
        array = np.array(value, dtype=np.float64)
        if kind == "complex":
            if array.ndim == 0 or array.shape[-1] != 2:
                raise ValueError("each element is a [real, imaginary] pair")
            array = array[..., 0] + 1j * array[..., 1]
        return array.astype(target)
    except (ValueError, TypeError, OverflowError) as error:
        raise InputError(
            f"value must be a nested list of {what} for {dtype}, or one value for every element "
            f"({error})",
            where,
        ) from None


def _array_to_json(array: np.ndarray | None, dtype: DType) -> Any:
    if array is None:
        return None
    if array.ndim and array.size > 1 and not any(array.strides):
        # A broadcast view (one value for every element) is written as that one value.
        return _array_to_json(np.asarray(array.flat[0], dtype=array.dtype), dtype)
    if dtype.kind == "pred":
        return array.tolist()
    if dtype.kind == "sint":
        return array.astype(np.int64).tolist()
    if dtype.kind == "uint":
        return array.astype(np.uint64).tolist()
    if dtype.kind == "complex":
        array = np.stack([array.real, array.imag], axis=-1)
    values = array.astype(np.float64)
    finite = np.isfinite(values)
    if finite.all():
        return values.tolist()
    spelled = values.astype(object)
    spelled[np.isnan(values)] = "nan"
    spelled[np.isposinf(values)] = "inf"
    spelled[np.isneginf(values)] = "-inf"
    return spelled.tolist()


def _parse_loc(text: str) -> SourceLoc:
    """'file:line:col' (or 'file:line', or 'file') as a SourceLoc."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return SourceLoc(parts[0], int(parts[1]), int(parts[2]))
    parts = text.rsplit(":", 1)
    if len(parts) == 2 and parts[1].isdigit():
        return SourceLoc(parts[0], int(parts[1]))
    return SourceLoc(text)


# -- export -------------------------------------------------------------------------------------


def _computation_to_json(graph: Graph) -> dict:
    parameters = set(graph.parameters)
    out: dict[str, Any] = {}
    if graph.loc is not None:
        out["loc"] = str(graph.loc)
    out["parameters"] = [_node_to_json(graph.nodes[name]) for name in graph.parameters]
    out["nodes"] = [_node_to_json(node) for node in graph if node.name not in parameters]
    # The root itself, even a tuple: importing one output makes it the root, names unchanged.
    out["outputs"] = [graph.root]
    return out


def _node_to_json(node: Node) -> dict:
    out: dict[str, Any] = {"name": node.name}
    if node.op != "parameter":
        out["op"] = node.op
        if node.operands:
            out["operands"] = list(node.operands)
        attrs = {
            key: _array_to_json(value, node.shape.dtype) if _is_constant_value(node, key)
            else _to_json(value, node, key)
            for key, value in node.attrs.items()
        }
        if attrs:
            out["attrs"] = attrs
    out.update(_shape_to_json(node.shape))
    if node.loc is not None:
        out["loc"] = str(node.loc)
    if node.extra:
        out["extra"] = dict(node.extra)
    if node.fused_in is not None:
        out["fused_in"] = node.fused_in
    return out


def _is_constant_value(node: Node, key: str) -> bool:
    return node.op == "constant" and key == "value"


def _shape_to_json(shape: Shape) -> dict:
    """The node keys for a shape: "dtype" and "shape" (dims), or "shape": {"tuple": [...]}."""
    if shape.is_tuple:
        return {"shape": {"tuple": [_element_to_json(e) for e in shape.elements]}}
    out: dict[str, Any] = {"dtype": shape.dtype.name, "shape": list(shape.dims)}
    if shape.layout is not None:
        out["layout"] = list(shape.layout)
    if any(shape.dynamic):
        out["dynamic"] = list(shape.dynamic)
    return out


def _element_to_json(shape: Shape) -> dict:
    if shape.is_tuple:
        return {"tuple": [_element_to_json(e) for e in shape.elements]}
    out = _shape_to_json(shape)
    out["dims"] = out.pop("shape")
    return out
