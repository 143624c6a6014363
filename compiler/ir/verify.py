"""The verifier: checks that a Graph is well formed before any stage relies on it.

It runs after every importer and, in tests, after every pass (tinygrad's spec.py habit). Every
problem is an `InputError` located at the node (its source location when it has one), saying
what is wrong: an unknown opcode (with a "did you mean"), an operand or computation that does
not exist, the wrong number of operands, a cycle, parameter numbers that are not 0..n-1, a
declared shape that is not what the op gives, a called computation with the wrong signature,
a missing root, a tensor over the limits. Every computation reachable from the entry is checked,
callees before their callers, so a signature check never reads a broken computation.
"""

from __future__ import annotations

import difflib
import heapq
from typing import Callable, Iterable, Mapping

from compiler.errors import InputError, LimitError, SourceLoc
from compiler.ir.graph import COMPUTATION_ATTRS, Graph, Node
from compiler.ir.ops import OPS, REDUCERS
from compiler.ir.shape_inference import (
    ShapeError,
    check_operand_count,
    declared_hints,
    format_shape,
    infer_shape,
)
from compiler.ir.shapes import Shape, same_array_type
from compiler.limits import Limits, env_name

Where = SourceLoc | str

# Ops whose `reducer` attribute names the binary op their `to_apply` computation applies.
_REDUCER_OPS = ("reduce", "reduce-window", "scatter")


def verify(graph: Graph, limits: Limits | None = None) -> None:
    """Raise InputError for the first problem found in `graph` or a computation it calls."""
    limits = limits or Limits()
    computations = _computations_callees_first(graph, limits)
    total = sum(len(g) for g in computations)
    if total > limits.max_nodes:
        raise LimitError(
            f"the graph has {total} nodes; the limit is {limits.max_nodes} "
            f"({env_name('max_nodes')})",
            _graph_where(graph),
        )
    for computation in computations:
        _verify_computation(computation, computation is graph, limits)


def topological_order(
    nodes: Iterable[Node] | Mapping[str, Iterable[str] | Node],
    where: Callable[[str], Where] | None = None,
) -> list[str]:
    """Node names ordered so every node comes after its operands (Kahn's algorithm).

    `nodes` are Node objects, or a mapping from each name to its operand names (or Node). Among
    the nodes ready at each step the one earliest in the input comes first, so an input that is
    already in order is returned unchanged. Operands that are not among `nodes` are ignored
    (reporting them is the caller's business). A cycle raises InputError naming its nodes,
    located by `where(name)` at the cycle's earliest node (by default the node's location).
    """
    operands, locate = _dependencies(nodes, where)
    names = list(operands)
    position = {name: i for i, name in enumerate(names)}
    users: dict[str, list[str]] = {name: [] for name in names}
    waiting: dict[str, int] = {}
    for name, inputs in operands.items():
        known = [o for o in dict.fromkeys(inputs) if o in position]
        waiting[name] = len(known)
        for operand in known:
            users[operand].append(name)

    ready = [position[name] for name in names if waiting[name] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(name)
        for user in users[name]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, position[user])
    if len(order) < len(names):
        remaining = [name for name in names if waiting[name] > 0]
        cycle = _find_cycle(remaining, operands, position)
        raise InputError(_cycle_message(cycle), locate(cycle[0]))
    return order


def recognise_reducer(computation: Graph) -> str | None:
    """'add', 'maximum', ... when `computation` is that binary op on its two scalar parameters."""
    if len(computation.parameters) != 2 or computation.root not in computation.nodes:
        return None
    root = computation.root_node
    if root.op not in REDUCERS or root.shape.is_tuple or root.shape.rank != 0:
        return None
    if sorted(root.operands) != sorted(computation.parameters):
        return None
    return root.op


def shape_mismatch_message(op: str, declared: Shape, operand_shapes: list[Shape],
                           inferred: Shape) -> str:
    """'declared f32[4,8] but add of f32[4,16] and f32[4,16] gives f32[4,16]'."""
    texts = [format_shape(s) for s in operand_shapes]
    if len(texts) > 4:
        texts = texts[:3] + [f"{len(texts) - 3} more"]
    if not texts:
        application = op
    elif len(texts) == 1:
        application = f"{op} of {texts[0]}"
    else:
        application = f"{op} of {', '.join(texts[:-1])} and {texts[-1]}"
    return (
        f"declared {format_shape(declared)} but {application} gives {format_shape(inferred)}"
    )


def shape_error_message(op: str, error: ShapeError) -> str:
    """A ShapeError's text, prefixed by the op unless it already starts with it."""
    text = str(error)
    return text if text.startswith(op) else f"{op}: {text}"


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """"; did you mean 'add' or 'pad'?" for the closest known words, or "" when none is close."""
    close = difflib.get_close_matches(word, list(known), n=3)
    if not close:
        return ""
    quoted = [f"'{c}'" for c in close]
    if len(quoted) == 1:
        return f"; did you mean {quoted[0]}?"
    return f"; did you mean {', '.join(quoted[:-1])} or {quoted[-1]}?"


def unknown_opcode_message(op: str) -> str:
    hint = did_you_mean(op, OPS)
    if hint:
        return f"unknown opcode '{op}'{hint}"
    return f"unknown opcode '{op}'; the ops table (compiler/ir/ops.py) lists the known ones"


def check_shape_limits(shape: Shape, limits: Limits, where: Where) -> None:
    """InputError for negative dims, LimitError for a rank or element count over the limits."""
    for leaf in shape.leaves():
        if any(d < 0 for d in leaf.dims):
            raise InputError(f"{format_shape(leaf)} has a negative dimension", where)
        if leaf.rank > limits.max_rank:
            raise LimitError(
                f"{format_shape(leaf)} has rank {leaf.rank}; the limit is {limits.max_rank} "
                f"({env_name('max_rank')})",
                where,
            )
        if leaf.size > limits.max_tensor_elements:
            raise LimitError(
                f"{format_shape(leaf)} has {leaf.size} elements; the limit is "
                f"{limits.max_tensor_elements} ({env_name('max_tensor_elements')})",
                where,
            )


# -- computations -------------------------------------------------------------------------------


def _called(node: Node) -> list[tuple[str, str]]:
    """(attribute, computation name) for every computation the node calls."""
    calls = []
    for key in COMPUTATION_ATTRS:
        value = node.attrs.get(key)
        if isinstance(value, str):
            calls.append((key, value))
        elif isinstance(value, (tuple, list)):
            calls.extend((key, name) for name in value)
    return calls


def _computations_callees_first(graph: Graph, limits: Limits) -> list[Graph]:
    """The entry and every computation it reaches, each after the computations it calls.

    A computation that does not exist or that calls itself (directly or not) is an error at
    the calling node, and so is a chain of computations nested in each other (a while's body
    holding a conditional whose branch holds a while ...) deeper than `limits.max_nesting`:
    every walk down such a chain, this one and the interpreter's (a few Python frames a
    level: 250 levels reached Python's recursion limit), is then bounded.
    """
    done: dict[int, Graph] = {}
    on_path: list[Graph] = []
    on_path_ids: set[int] = set()

    def visit(computation: Graph) -> None:
        on_path.append(computation)
        on_path_ids.add(id(computation))
        for node in computation:
            for key, name in _called(node):
                callee = graph.computations.get(name)
                where = _node_where(computation, node, computation is graph)
                if callee is None:
                    raise InputError(_missing_computation_message(key, name, graph), where)
                if id(callee) in on_path_ids:
                    chain = [c.name for c in on_path[on_path.index(callee):]] + [callee.name]
                    raise InputError(
                        f"{key} '{name}' calls itself: {' -> '.join(chain)}", where
                    )
                if len(on_path) > limits.max_nesting:
                    raise LimitError(
                        f"computations nested in each other more than {limits.max_nesting} "
                        f"levels deep ({env_name('max_nesting')})", where)
                if id(callee) not in done:
                    visit(callee)
        on_path_ids.discard(id(on_path.pop()))
        done[id(computation)] = computation

    visit(graph)
    return list(done.values())


def _missing_computation_message(key: str, name: str, graph: Graph) -> str:
    return (f"{key} names computation '{name}', which does not exist"
            f"{did_you_mean(name, graph.computations)}")


def _verify_computation(graph: Graph, is_entry: bool, limits: Limits) -> None:
    for node in graph:
        _check_node_structure(graph, node, is_entry)
    _check_parameters(graph, is_entry)
    _check_order(graph, is_entry)
    if graph.root is None:
        raise InputError(f"computation '{graph.name}' has no root", _graph_where(graph))
    if graph.root not in graph.nodes:
        raise InputError(
            f"the root '{graph.root}' of computation '{graph.name}' is not one of its nodes",
            _graph_where(graph),
        )
    for node in graph:
        where = _node_where(graph, node, is_entry)
        check_shape_limits(node.shape, limits, where)
        _check_shape(graph, node, where)
        _check_reducer(graph, node, where)


def _check_node_structure(graph: Graph, node: Node, is_entry: bool) -> None:
    where = _node_where(graph, node, is_entry)
    if node.op not in OPS:
        raise InputError(unknown_opcode_message(node.op), where)
    for index, operand in enumerate(node.operands):
        if operand not in graph.nodes:
            raise InputError(f"operand {index} '{operand}' is not defined", where)
    try:
        check_operand_count(node.op, len(node.operands))
    except ShapeError as error:
        raise InputError(str(error), where) from None


def _check_parameters(graph: Graph, is_entry: bool) -> None:
    """Parameter nodes are exactly graph.parameters, numbered 0..n-1 in that order."""
    parameter_nodes = [node for node in graph if node.op == "parameter"]
    by_number: dict[int, Node] = {}
    for node in parameter_nodes:
        where = _node_where(graph, node, is_entry)
        number = node.attrs.get("parameter_number")
        if not isinstance(number, int) or isinstance(number, bool):
            raise InputError(f"parameter '{node.name}' has no integer parameter_number", where)
        if number in by_number:
            raise InputError(
                f"parameter number {number} is used twice: by '{by_number[number].name}' and "
                f"'{node.name}'",
                where,
            )
        if not 0 <= number < len(parameter_nodes):
            raise InputError(
                f"parameter '{node.name}' has number {number}, but the "
                f"{len(parameter_nodes)} parameters must be numbered 0..{len(parameter_nodes) - 1}",
                where,
            )
        by_number[number] = node
    listed = [by_number[i].name for i in range(len(parameter_nodes))]
    if list(graph.parameters) != listed:
        raise InputError(
            f"computation '{graph.name}' lists parameters {list(graph.parameters)} but its "
            f"parameter nodes by number are {listed}",
            _graph_where(graph),
        )


def _check_order(graph: Graph, is_entry: bool) -> None:
    """Operands come before their users: a cycle is named, any other disorder reported."""
    position = {name: i for i, name in enumerate(graph.nodes)}
    for node in graph:
        for operand in node.operands:
            if position[operand] >= position[node.name]:
                topological_order(
                    graph.nodes, lambda name: _node_where(graph, graph.nodes[name], is_entry)
                )
                raise InputError(
                    f"operand '{operand}' comes after its user '{node.name}'; the nodes of a "
                    f"graph must be in topological order",
                    _node_where(graph, node, is_entry),
                )


def _check_shape(graph: Graph, node: Node, where: Where) -> None:
    operand_shapes = [graph.nodes[name].shape for name in node.operands]
    attrs = {**node.attrs, **declared_hints(node.op, node.shape)}
    try:
        inferred = infer_shape(node.op, operand_shapes, attrs, graph.computations)
    except ShapeError as error:
        raise InputError(shape_error_message(node.op, error), where) from None
    if inferred is not None and not same_array_type(inferred, node.shape):
        raise InputError(
            shape_mismatch_message(node.op, node.shape, operand_shapes, inferred), where
        )


def _check_reducer(graph: Graph, node: Node, where: Where) -> None:
    """A `reducer` attribute must say what the `to_apply` computation really computes."""
    reducer = node.attrs.get("reducer")
    if node.op not in _REDUCER_OPS or reducer is None:
        return
    computation = graph.computations.get(node.attrs.get("to_apply"))
    if computation is None:
        return
    actual = recognise_reducer(computation)
    if actual != reducer:
        what = f"computes {actual}" if actual else "is not a single binary op on its parameters"
        raise InputError(
            f"reducer '{reducer}' does not match to_apply '{computation.name}', which {what}",
            where,
        )


# -- helpers ------------------------------------------------------------------------------------


def _node_where(graph: Graph, node: Node, is_entry: bool) -> Where:
    if node.loc is not None or is_entry:
        return node.where()
    return f"computation '{graph.name}', node '{node.name}'"


def _graph_where(graph: Graph) -> Where:
    return graph.loc if graph.loc is not None else f"computation '{graph.name}'"


def _dependencies(nodes, where) -> tuple[dict[str, tuple[str, ...]], Callable[[str], Where]]:
    if isinstance(nodes, Mapping):
        items = list(nodes.items())
    else:
        items = [(node.name, node) for node in nodes]
    operands = {}
    locations: dict[str, Where] = {}
    for name, value in items:
        if isinstance(value, Node):
            operands[name] = tuple(value.operands)
            locations[name] = value.where()
        else:
            operands[name] = tuple(value)
            locations[name] = f"node '{name}'"
    return operands, where or locations.__getitem__


def _find_cycle(remaining: list[str], operands, position) -> list[str]:
    """A cycle among `remaining` (nodes Kahn could not order), from its earliest node.

    Every remaining node waits for an operand that is itself remaining, so following those
    operands from any of them must come back to a node already on the path.
    """
    left = set(remaining)
    path = [remaining[0]]
    on_path = {remaining[0]: 0}
    while True:
        step = next(o for o in operands[path[-1]] if o in left)
        if step in on_path:
            cycle = path[on_path[step]:]
            break
        on_path[step] = len(path)
        path.append(step)
    start = min(range(len(cycle)), key=lambda i: position[cycle[i]])
    return cycle[start:] + cycle[:start]


def _cycle_message(cycle: list[str]) -> str:
    if len(cycle) == 1:
        return f"cycle: '{cycle[0]}' uses itself"
    chain = ", which uses ".join(f"'{name}'" for name in cycle[1:])
    return f"cycle: '{cycle[0]}' uses {chain}, which uses '{cycle[0]}'"
