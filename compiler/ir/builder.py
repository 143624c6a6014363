"""GraphBuilder: the way importers (ONNX, JSON) make a Graph, one op at a time.

Every `add` infers the node's shape (or checks the one given) as it goes, so a bad input fails
at the node that is wrong, with that node's location, instead of somewhere downstream.

    b = GraphBuilder("layer_norm", source="model.onnx")
    x = b.parameter("x", array(F32, [4, 8]))
    total = b.add("reduce", [x, b.constant(np.float32(0))],
                  {"dimensions": (1,), "to_apply": b.reducer("add", F32)})
    graph = b.finish([total])

Results that do not follow from the operands are given by the caller: `dtype=` for `convert`,
`bitcast-convert` and `iota`; `attrs["new_dims"]` for the dims of `reshape`, `broadcast` and
`iota` (kept out of the node's attributes); or the whole `shape=`, which is then checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from compiler.errors import InputError, LimitError, SourceLoc
from compiler.ir.dtypes import DType, dtype as dtype_named, from_numpy
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS, REDUCERS
from compiler.ir.shape_inference import (
    RESULT_DIMS_OPS,
    RESULT_DTYPE_OPS,
    ShapeError,
    declared_hints,
    format_dims,
    format_shape,
    infer_shape,
)
from compiler.ir.shapes import ArrayShape, Shape, same_array_type
from compiler.ir.verify import (
    check_shape_limits,
    recognise_reducer,
    shape_error_message,
    shape_mismatch_message,
    unknown_opcode_message,
    verify,
)
from compiler.limits import Limits, env_name

# Where a node came from: a SourceLoc, or a string for formats without lines (ONNX).
Loc = SourceLoc | str | None

# Ops whose `reducer` attribute the builder fills in from their `to_apply` computation.
_REDUCER_OPS = ("reduce", "reduce-window", "scatter")


@dataclass
class _Shared:
    """What a builder shares with the builders of its sub-computations."""

    source: str | None
    limits: Limits
    computations: dict[str, Graph] = field(default_factory=dict)
    reducers: dict[tuple[str, str], str] = field(default_factory=dict)
    node_count: int = 0


class GraphBuilder:
    def __init__(self, name: str, source: str | None = None, limits: Limits | None = None,
                 *, _shared: _Shared | None = None):
        self._shared = _shared or _Shared(source, limits or Limits())
        self.graph = Graph(name, computations=self._shared.computations,
                           source=self._shared.source)

    @property
    def name(self) -> str:
        return self.graph.name

    def shape_of(self, name: str) -> Shape:
        """The shape of the node called `name` (as `add` returned it)."""
        return self.graph.nodes[name].shape

    # -- nodes ----------------------------------------------------------------------------------

    def parameter(self, name: str, shape: Shape, loc: Loc = None, *,
                  extra: Mapping[str, str] | None = None) -> str:
        """A new parameter, numbered after those made before it."""
        number = len(self.graph.parameters)
        node = self._new_node(name, "parameter", (), shape, {"parameter_number": number},
                              _source_loc(loc), extra)
        self.graph.parameters.append(node.name)
        return node.name

    def constant(self, value: Any, name: str | None = None, loc: Loc = None, *,
                 extra: Mapping[str, str] | None = None) -> str:
        """A constant holding `value` (an array or NumPy scalar, whose dtype it keeps)."""
        loc = _source_loc(loc)
        value = np.asarray(value)
        try:
            dtype = from_numpy(value.dtype)
        except KeyError as error:
            raise InputError(str(error.args[0]), loc or "constant") from None
        shape = ArrayShape(dtype, tuple(value.shape))
        node = self._new_node(name or "constant", "constant", (), shape, {"value": value}, loc,
                              extra)
        return node.name

    def add(
        self,
        op: str,
        operands: list[str],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        loc: Loc = None,
        shape: Shape | None = None,
        dtype: DType | str | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> str:
        """Add `op` over the named operands; returns the new node's (unique) name.

        The result shape is inferred; `shape`, `dtype` and `attrs["new_dims"]`, when given,
        supply what cannot be inferred and are checked against what can.
        """
        loc = _source_loc(loc)
        where = loc or f"node '{name or op}'"
        if op == "parameter":
            raise ValueError("parameters are numbered: add them with GraphBuilder.parameter")
        if op not in OPS:
            raise InputError(unknown_opcode_message(op), where)
        for index, operand in enumerate(operands):
            if operand not in self.graph.nodes:
                raise InputError(f"operand {index} '{operand}' is not defined", where)
        attrs = dict(attrs or {})
        new_dims = attrs.pop("new_dims", None)
        if dtype is not None and not isinstance(dtype, DType):
            dtype = _dtype(dtype, where)
        self._fill_reducer(op, attrs)

        operand_shapes = [self.graph.nodes[o].shape for o in operands]
        if shape is not None:
            hints = declared_hints(op, shape)
        else:
            hints = {"dtype": dtype, "new_dims": None if new_dims is None else tuple(new_dims)}
        try:
            inferred = infer_shape(op, operand_shapes, {**attrs, **hints}, self.graph.computations)
        except ShapeError as error:
            raise InputError(shape_error_message(op, error), where) from None
        result = self._result_shape(op, operand_shapes, inferred, shape, dtype, new_dims, where)
        return self._new_node(name or op, op, tuple(operands), result, attrs, loc, extra).name

    # -- computations ---------------------------------------------------------------------------

    def computation(self, name: str) -> GraphBuilder:
        """A builder for a sub-computation (reducer, body, branch) other nodes can call by name.

        Its name is `name` made unique among the computations (read it back as `.name`).
        """
        unique = name
        counter = 1
        while unique in self._shared.computations:
            unique = f"{name}.{counter}"
            counter += 1
        builder = GraphBuilder(unique, _shared=self._shared)
        self._shared.computations[unique] = builder.graph
        return builder

    def reducer(self, kind: str, dtype: DType | str) -> str:
        """The computation `kind(lhs, rhs)` on two scalars of `dtype`, made once; its name."""
        if kind not in REDUCERS:
            raise ValueError(f"unknown reducer {kind!r}; use one of {', '.join(REDUCERS)}")
        dtype = dtype if isinstance(dtype, DType) else _dtype(dtype, "reducer")
        key = (kind, dtype.name)
        if key not in self._shared.reducers:
            sub = self.computation(f"{kind}_{dtype.name}")
            lhs = sub.parameter("lhs", ArrayShape(dtype, ()))
            rhs = sub.parameter("rhs", ArrayShape(dtype, ()))
            sub.finish([sub.add(kind, [lhs, rhs])])
            self._shared.reducers[key] = sub.name
        return self._shared.reducers[key]

    def finish(self, outputs: list[str]) -> Graph:
        """Set the outputs (several become a `tuple` root), verify and return the graph."""
        if not outputs:
            raise InputError(f"computation '{self.name}' needs at least one output",
                             self.graph.loc or f"computation '{self.name}'")
        for output in outputs:
            if output not in self.graph.nodes:
                raise InputError(f"output '{output}' is not defined",
                                 self.graph.loc or f"computation '{self.name}'")
        if len(outputs) == 1:
            self.graph.root = outputs[0]
        else:
            self.graph.root = self.add("tuple", list(outputs), name="tuple")
        verify(self.graph, self._shared.limits)
        return self.graph

    # -- helpers --------------------------------------------------------------------------------

    def _new_node(self, name, op, operands, shape, attrs, loc, extra=None) -> Node:
        where = loc or f"node '{name}'"
        limits = self._shared.limits
        if self._shared.node_count >= limits.max_nodes:
            raise LimitError(
                f"the graph has more than {limits.max_nodes} nodes ({env_name('max_nodes')})",
                where,
            )
        check_shape_limits(shape, limits, where)
        node = Node(self.graph.fresh_name(name), op, operands, shape, attrs, loc,
                    dict(extra or {}))
        self.graph.add(node)
        self._shared.node_count += 1
        return node

    def _fill_reducer(self, op: str, attrs: dict) -> None:
        """Record which binary op a reduction's computation is, unless the caller said."""
        if op not in _REDUCER_OPS or "reducer" in attrs:
            return
        computation = self._shared.computations.get(attrs.get("to_apply"))
        if computation is not None:
            attrs["reducer"] = recognise_reducer(computation)

    @staticmethod
    def _result_shape(op, operand_shapes, inferred, shape, dtype, new_dims, where) -> Shape:
        if inferred is None and shape is None:
            missing = []
            if op in RESULT_DIMS_OPS and new_dims is None:
                missing.append("dims")
            if op in RESULT_DTYPE_OPS and dtype is None:
                missing.append("element type")
            what = " and ".join(missing) or "shape"
            raise InputError(
                f"give the result {what} of {op}: its operands and attributes do not "
                f"determine it",
                where,
            )
        if shape is not None:
            if inferred is not None and not same_array_type(inferred, shape):
                raise InputError(
                    shape_mismatch_message(op, shape, operand_shapes, inferred), where
                )
            return shape
        if dtype is not None and (inferred.is_tuple or inferred.dtype != dtype):
            raise InputError(
                f"declared element type {dtype} but {op} gives {format_shape(inferred)}", where
            )
        if new_dims is not None and (inferred.is_tuple or inferred.dims != tuple(new_dims)):
            raise InputError(
                f"declared dims {format_dims(new_dims)} but {op} gives {format_shape(inferred)}",
                where,
            )
        return inferred


def _source_loc(loc: Loc) -> SourceLoc | None:
    """Node locations are SourceLocs; a string names a place without a line ("m.onnx: node 3")."""
    return SourceLoc(loc) if isinstance(loc, str) else loc


def _dtype(name: str, where) -> DType:
    try:
        return dtype_named(name)
    except KeyError as error:
        raise InputError(str(error.args[0]), where) from None
