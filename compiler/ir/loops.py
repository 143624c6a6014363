"""Trip counts of `while` loops whose counter is plain to see.

JAX's `fori_loop` and `scan` (gradient accumulation over microbatches, scan-over-layers,
threefry's rounds) lower to an HLO `while` whose state tuple carries an integer counter: the
state's element k starts at a constant, the body adds a constant step to it, and the condition
compares it with a loop-invariant constant limit. XLA finds trip counts from the same pattern
(`ComputeWhileLoopTripCount` in xla/hlo/analysis/while_loop_analysis.cc). A loop whose
condition depends on data (`lax.while_loop` until convergence) has no static trip count.
"""

from __future__ import annotations

import numpy as np

from compiler.ir.graph import Graph, Node

# compare(limit, counter) read the other way round.
_FLIPPED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "NE": "NE", "EQ": "EQ"}


def static_trip_count(graph: Graph, loop: Node) -> int | None:
    """How many times the `while` node `loop` of `graph` runs its body, when its counter
    follows the pattern above; None otherwise."""
    init = graph.nodes[loop.operands[0]]
    if init.op != "tuple":
        return None
    condition = graph.computations[loop.attrs["condition"]]
    body = graph.computations[loop.attrs["body"]]
    compare = condition.root_node
    if compare.op != "compare" or compare.attrs.get("direction") not in _FLIPPED:
        return None
    direction = compare.attrs["direction"]
    lhs, rhs = compare.operands
    counter = _state_element(condition, lhs)
    if counter is None:
        counter, lhs, rhs, direction = _state_element(condition, rhs), rhs, lhs, _FLIPPED[direction]
    if counter is None:
        return None

    def invariant(computation: Graph, name: str) -> int | None:
        """The value of `name` in `computation` when it is a constant, or a state element
        that starts as one and the body passes on unchanged."""
        node = computation.nodes[name]
        if node.op == "constant":
            return _integer(node)
        element = _state_element(computation, name)
        if element is None or element == counter or not _passed_on(body, element):
            return None
        return _integer(graph.nodes[init.operands[element]])

    limit = invariant(condition, rhs)
    start = _integer(graph.nodes[init.operands[counter]])
    step = _step(body, counter, invariant)
    if limit is None or start is None or not step:
        return None
    return _count(start, limit, step, direction)


def loop_runs(graph: Graph, loop: Node) -> list[tuple[Graph, int]]:
    """The `while` node's body and condition, each with how many times one run of the loop
    runs it: the static trip count, or once when that depends on data (the least a loop that
    runs at all does), and the condition once more than the body."""
    iterations = static_trip_count(graph, loop)
    iterations = 1 if iterations is None else iterations
    return [(graph.computations[loop.attrs["body"]], iterations),
            (graph.computations[loop.attrs["condition"]], iterations + 1)]


def _state_element(computation: Graph, name: str) -> int | None:
    """k when `name` is get-tuple-element(state, k) of the computation's one parameter."""
    node = computation.nodes[name]
    if node.op != "get-tuple-element" or len(computation.parameters) != 1:
        return None
    if node.operands[0] != computation.parameters[0]:
        return None
    return node.attrs["index"]


def _passed_on(body: Graph, element: int) -> bool:
    root = body.root_node
    return root.op == "tuple" and _state_element(body, root.operands[element]) == element


def _step(body: Graph, counter: int, invariant) -> int | None:
    """What the body adds to the counter each iteration, when that is a constant."""
    root = body.root_node
    if root.op != "tuple":
        return None
    update = body.nodes[root.operands[counter]]
    if update.op not in ("add", "subtract"):
        return None
    lhs, rhs = update.operands
    if _state_element(body, lhs) != counter:
        if update.op == "subtract" or _state_element(body, rhs) != counter:
            return None
        lhs, rhs = rhs, lhs
    step = invariant(body, rhs)
    if step is None:
        return None
    return -step if update.op == "subtract" else step


def _count(start: int, limit: int, step: int, direction: str) -> int | None:
    """Iterations of `for (i = start; i <direction> limit; i += step)`; None when the loop
    would not end (or ends only by wrapping round) or runs by data the pattern does not see."""
    if direction == "EQ":
        return None
    if direction == "NE":
        distance = limit - start
        return distance // step if distance % step == 0 and distance // step >= 0 else None
    if direction in ("GT", "GE"):   # count down as up: i > limit is -i < -limit
        start, limit, step, direction = -start, -limit, -step, "L" + direction[1]
    if direction == "LE":   # i <= limit is i < limit + 1 for integers
        limit += 1
    if start >= limit:
        return 0
    return -((start - limit) // step) if step > 0 else None


def _integer(node: Node) -> int | None:
    """The value of a one-element integer constant node."""
    if node.op != "constant" or node.attrs.get("value") is None:
        return None
    value = np.asarray(node.attrs["value"])
    if value.size != 1 or value.dtype.kind not in "iu":
        return None
    return int(value.reshape(-1)[0])
