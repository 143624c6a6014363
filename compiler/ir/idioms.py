"""Library functions that a graph spells out op by op, recognised by what they compute.

JAX 0.10 lowers `lax.erfc` (and with it `jax.nn.gelu(approximate=False)`) in f32 to about 60
elementwise ops (tests/data/hlo/bias_gelu_erf.hlo): a polynomial for |x| < 1, two rational
polynomials in 1/x^2 beyond, two divisions and an exp, every branch computed for every element
and picked by selects. CUDA's `erfcf` computes the same
function in about half the instructions (nvcc 13.5's PTX for sm_90: 34 FP32 arithmetic
instructions, 3 MUFU, 9 compare/select/logic and a conversion, against the expansion's 36
FP32 instructions, two correctly rounded divisions and an exp), within 4 ulp (CUDA C++
Programming Guide, "Mathematical Functions", single precision). The code generator emits the
call where a kernel computes a whole expansion, and the cost model prices the call.

`function_idioms(graph)` finds them without matching constants or shapes of one JAX version:
a candidate is a select over f32 values whose elementwise cone reaches the graph's other
values through one node only (its argument) and whose inner nodes nothing outside the cone
reads. The cone is then evaluated, as a function of its argument, on probe points spread
over the function's whole range (its tails and the branch points of every known
expansion), with the reference interpreter's own ops; it is the idiom when every probe lies
within PROBE_TOLERANCE of the function's value in float64 (Python's math.erfc).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from compiler.ir.graph import Graph, Node
from compiler.ir.interpreter import apply_op
from compiler.ir.ops import OPS

# The functions recognised: name -> (the float64 reference, the C function emitted for f32).
FUNCTIONS = {"erfc": (math.erfc, "erfcf")}
# An expansion has dozens of ops; a cone smaller than this is not worth a library call.
MIN_INNER_NODES = 12
# Cones past this size are not walked: no known expansion is that large.
MAX_INNER_NODES = 400
# Relative difference (over max(|f(x)|, 1e-30)) every probe may have: a few f32 ulps of the
# expansion's own error, far below any other function's distance from erfc.
PROBE_TOLERANCE = 1e-5
PROBES = np.concatenate([np.linspace(-10.0, 10.0, 801), [-0.5, 0.5, 0.84375, 1.0, 1.25,
                                                          2.0, 2.857, 6.0, 9.19, 9.5]])


@dataclass(frozen=True)
class Idiom:
    """`root` computes `function`(`argument`) through the `inner` nodes (root included)."""
    function: str
    root: str
    argument: str
    inner: frozenset[str]

    @property
    def c_function(self) -> str:
        return FUNCTIONS[self.function][1]

    def applies(self, computed) -> bool:
        """Whether a kernel computing `computed` computes the whole expansion (a kernel that
        reads some of its inner values from memory evaluates the ops as they are)."""
        return self.inner.issubset(computed)


def function_idioms(graph: Graph) -> dict[str, Idiom]:
    """{root: Idiom} for every recognised expansion of the graph (kept with the graph)."""
    cache = graph.analysis_cache("idioms.functions")
    if "found" not in cache:
        users = graph.users()
        found = {}
        for node in graph:
            if node.op == "select" and _is_f32(node):
                idiom = _recognise(graph, node, users)
                if idiom is not None:
                    found[node.name] = idiom
        cache["found"] = found
    return cache["found"]


def _is_f32(node: Node) -> bool:
    return not node.shape.is_tuple and node.array_shape.dtype.name == "f32"


def _is_constant(graph: Graph, node: Node) -> bool:
    """A scalar constant, or a broadcast of one: the same value at every element."""
    if node.op == "broadcast":
        node = graph.nodes[node.operands[0]]
    return node.op == "constant" and node.array_shape.size == 1


def _cone(graph: Graph, root: Node) -> tuple[list[str], set[str]] | None:
    """The elementwise nodes reachable from `root` through elementwise ops, root first and
    each before its operands' walk ends, and the other values they read (constants aside); None
    when it is too large."""
    order, seen, leaves, stack = [], set(), set(), [root.name]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = graph.nodes[name]
        if _is_constant(graph, node):
            continue
        info = OPS.get(node.op)
        if name != root.name and (info is None or not info.is_elementwise or node.shape.is_tuple
                                  or node.array_shape.dims != root.array_shape.dims):
            leaves.add(name)
            continue
        order.append(name)
        if len(order) > MAX_INNER_NODES:
            return None
        stack.extend(node.operands)
    return order, leaves


def _reaches_leaf_without(graph: Graph, root: str, cone: set[str], leaves: set[str],
                          avoided: str) -> bool:
    stack, seen = [root], set()
    while stack:
        name = stack.pop()
        if name == avoided or name in seen:
            continue
        seen.add(name)
        if name in leaves:
            return True
        if name in cone:
            stack.extend(graph.nodes[name].operands)
    return False


def _recognise(graph: Graph, root: Node, users: dict[str, list[str]]) -> Idiom | None:
    walked = _cone(graph, root)
    if walked is None:
        return None
    order, leaves = walked
    cone = set(order)
    # The argument: the node nearest the root through which every path to another value goes.
    positions = graph.positions()
    candidates = sorted((cone - {root.name}) | leaves, key=positions.__getitem__, reverse=True)
    argument = next((c for c in candidates
                     if graph.nodes[c].array_shape.dims == root.array_shape.dims
                     and _is_f32(graph.nodes[c])
                     and not _reaches_leaf_without(graph, root.name, cone, leaves, c)), None)
    if argument is None:
        return None
    inner = _inner(graph, root.name, argument)
    if len(inner) < MIN_INNER_NODES:
        return None
    if any(user not in inner for name in inner - {root.name} for user in users[name]):
        return None   # an inner value read elsewhere is computed anyway
    for function, (reference, _) in FUNCTIONS.items():
        if _computes(graph, root.name, argument, inner, reference):
            return Idiom(function, root.name, argument, frozenset(inner))
    return None


def _inner(graph: Graph, root: str, argument: str) -> set[str]:
    """The non-constant nodes between `argument` (excluded) and `root` (included)."""
    inner, stack = set(), [root]
    while stack:
        name = stack.pop()
        if name == argument or name in inner or _is_constant(graph, graph.nodes[name]):
            continue
        inner.add(name)
        stack.extend(graph.nodes[name].operands)
    return inner


def _computes(graph: Graph, root: str, argument: str, inner: set[str], reference) -> bool:
    """Whether the cone, evaluated by the interpreter's ops on the probes, is `reference`."""
    probes = PROBES.astype(np.float32)
    values = {argument: probes}

    def value(name: str) -> np.ndarray:
        if name not in values:
            node = graph.nodes[name]
            if _is_constant(graph, node):
                scalar = node if node.op == "constant" else graph.nodes[node.operands[0]]
                constant = np.asarray(scalar.attrs["value"]).reshape(-1)[0]
                values[name] = np.full(probes.shape, constant,
                                       dtype=scalar.array_shape.dtype.numpy)
            else:
                operands = [value(operand) for operand in node.operands]
                values[name] = np.asarray(apply_op(graph, node, operands)).astype(
                    node.array_shape.dtype.numpy, copy=False)
        return values[name]

    for name in sorted(inner, key=graph.positions().__getitem__):
        value(name)
    got = values[root].astype(np.float64)
    expected = np.array([reference(float(x)) for x in probes], dtype=np.float64)
    scale = np.maximum(np.abs(expected), 1e-30)
    return bool(np.all(np.abs(got - expected) <= PROBE_TOLERANCE * scale))
