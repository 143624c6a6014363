"""Arguments for a graph, or for one kernel, when the user gave none: what `codegen --emulate`
and tests run on.

Values are small and seeded, so integer indices often stay in range, exp() does not overflow,
and two runs see the same numbers.

`kernel_inputs` makes up the values a kernel reads (its inputs), so that the kernel can be
checked on its own, without evaluating the graph up to it: random values of each input's dtype,
in a range that suits the ops reading it (positive for log, sqrt and rsqrt, within [-1, 1] for
asin, ...), in-range start indices for a gather or dynamic slice that reads the input as its
indices, and the real value of a constant whose value the file holds. An input that reaches an
index operand through other ops of the kernel cannot be made up: its range is not known there.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.ir.dtypes import DType
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import index_operands

# Where the values of a float input read directly by these ops are drawn from: inside the op's
# domain (and away from its poles), so the check compares numbers, not NaNs.
_DOMAINS = {
    "log": (0.5, 2.0), "sqrt": (0.5, 2.0), "rsqrt": (0.5, 2.0), "log-plus-one": (-0.5, 2.0),
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 3.0),
}
_POWER_BASE = (0.5, 2.0)   # power's operand 0: a negative base has no real power


def random_inputs(graph: Graph, seed: int = 0) -> list:
    """One array per parameter of `graph` (None for token and tuple parameters)."""
    rng = np.random.default_rng(seed)
    values = []
    for node in graph.parameter_nodes():
        shape = node.shape
        if shape.is_tuple or not shape.dtype.is_array_type:
            values.append(None)
            continue
        values.append(_random_array(rng, shape.dims, shape.dtype))
    return values


@dataclass
class KernelInputs:
    values: dict[str, np.ndarray]   # input -> the value made up for it
    not_made_up: list[str]          # inputs whose values must come from their producers


def kernel_inputs(graph: Graph, inputs: Sequence[str], computed: Collection[str],
                  rng: np.random.Generator) -> KernelInputs:
    """Values for the `inputs` of a kernel that computes the nodes `computed` of `graph` (see
    the module docstring for how they are chosen, and which ones cannot be)."""
    inside = set(computed)
    uses: dict[str, list[tuple[Node, int]]] = {name: [] for name in inputs}
    for node in graph:
        if node.name in inside:
            for position, operand in enumerate(node.operands):
                if operand in uses:
                    uses[operand].append((node, position))
    indirect = _reaching_an_index_indirectly(graph, inside, set(inputs))
    result = KernelInputs({}, [])
    for name in inputs:
        node = graph.nodes[name]
        value = None
        if name not in indirect and not node.shape.is_tuple and node.shape.dtype.is_array_type:
            value = _input_value(graph, node, uses[name], rng)
        if value is None:
            result.not_made_up.append(name)
        else:
            result.values[name] = value
    return result


def _reaching_an_index_indirectly(graph: Graph, inside: set, inputs: set) -> set:
    """The inputs that some index operand of a computed node depends on through other
    computed nodes (not read directly as the index)."""
    pending = [node.operands[position] for node in graph if node.name in inside
               for position in index_operands(node.op, len(node.operands))
               if node.operands[position] in inside]
    seen, reached = set(), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for operand in graph.nodes[name].operands:
            if operand in inputs:
                reached.add(operand)
            elif operand in inside:
                pending.append(operand)
    return reached


def _input_value(graph: Graph, node: Node, uses: list, rng: np.random.Generator):
    """A value for one input, or None when it cannot be made up."""
    shape = node.array_shape
    if node.op == "constant" and node.attrs.get("value") is not None:
        return np.asarray(node.attrs["value"]).astype(shape.dtype.numpy)
    index_uses = [(user, position) for user, position in uses
                  if position in index_operands(user.op, len(user.operands))]
    if index_uses:
        highest = [_highest_start(graph, user, position) for user, position in index_uses]
        if any(h is None for h in highest) or len({np.shape(h) for h in highest}) > 1:
            return None
        limit = np.minimum.reduce([np.asarray(h) for h in highest])
        starts = rng.integers(0, limit + 1, size=np.broadcast_shapes(shape.dims, limit.shape))
        return np.broadcast_to(starts, shape.dims).astype(shape.dtype.numpy)
    interval = None
    if shape.dtype.is_float:
        for user, position in uses:
            domain = _POWER_BASE if user.op == "power" and position == 0 \
                else _DOMAINS.get(user.op)
            if domain is not None:
                low, high = domain if interval is None else (max(interval[0], domain[0]),
                                                             min(interval[1], domain[1]))
                if low >= high:
                    return None
                interval = (low, high)
    return _random_array(rng, shape.dims, shape.dtype, interval)


def _highest_start(graph: Graph, user: Node, position: int):
    """The largest in-range start index (an int, or per index vector component an array
    broadcast along the indices' index_vector_dim) for operand `position` of `user`; None
    where the range cannot be told (scatter, dynamic-reshape)."""
    operand = graph.nodes[user.operands[0]].array_shape
    if user.op == "dynamic-slice":
        dim = position - 1
        return operand.dims[dim] - user.attrs["dynamic_slice_sizes"][dim]
    if user.op == "dynamic-update-slice":
        dim = position - 2
        update = graph.nodes[user.operands[1]].array_shape
        return operand.dims[dim] - update.dims[dim]
    if user.op == "gather":
        indices = graph.nodes[user.operands[1]].array_shape
        vector_dim = user.attrs["index_vector_dim"]
        sizes = user.attrs["slice_sizes"]
        highest = np.array([operand.dims[d] - sizes[d] for d in user.attrs["start_index_map"]])
        if vector_dim == indices.rank:       # an implicit trailing index vector of length 1
            return highest.reshape(())
        return highest.reshape([len(highest) if d == vector_dim else 1
                                for d in range(indices.rank)])
    return None


def _random_array(rng: np.random.Generator, dims: Sequence[int], dtype: DType,
                  interval: tuple[float, float] | None = None) -> np.ndarray:
    if dtype.kind == "pred":
        array = rng.random(dims) < 0.5
    elif dtype.is_integer:
        array = rng.integers(0, 4, size=dims)
    elif dtype.kind == "complex":
        array = rng.standard_normal(dims) + 1j * rng.standard_normal(dims)
    elif interval is not None:
        array = rng.uniform(*interval, size=dims)
    else:
        array = rng.standard_normal(dims)
    return np.asarray(array).astype(dtype.numpy)


def kernel_rng(seed: int, name: str) -> np.random.Generator:
    """A generator of its own for each kernel name, the same in every run."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])
