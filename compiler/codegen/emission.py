"""How much code a kernel takes: one measure, shared by the fusion strategies, the pricer and
the code generator, and the budget a generated kernel must fit in (issue 35).

Why code can grow faster than a kernel
--------------------------------------
The elemental emitter (elemental.py) computes a value at an index by asking for its operands'
values at the indices the op derives, and keeps each (value, index) it computed in a named
local until its scope closes. A value read at several indices (a slice of it beside the value
itself), or inside several branches (the arms of a pad or a concatenate, whose locals C forgets
when the branch closes), is computed again each time, with everything it reads: the code grows
with the ways the kernel's outputs reach a value, not with its nodes. `jax.lax.associative_scan`
is made of such reads: its up-sweep takes even and odd elements (strided slices), its
down-sweep interleaves them again (interior pads, a concatenate), log2(length) levels deep, and
each level reads the next one's results at two indices from two branches, so the code grows
fourfold with each doubling of the length. Fused into one kernel, a selective scan over 256
steps takes some 600,000 statements per element for about 150 nodes (9,520 over 32 steps; its
gradient more), which neither the emitter nor nvcc finishes; the workload model, which prices
each node once per element, saw a kernel of a few µs.

XLA's elemental emitter has the same property and its fusion passes refuse what it would make
of it: GpuHloCostAnalysis::ProducerConsumerMergedTooLarge ("the fusion would result in an
overly large code duplication"; an instruction counts once per index it is emitted at, at most
kMaxIRSize = 10000 of them and kMaxBasicBlockSplitsPerFusion = 10 branches), and
FusionNodeIndexingEvaluation (at most kAllowedCodeDuplication = 15 emissions of one
instruction; pad, concatenate, dynamic-update-slice, reduce and reduce-window start a new
basic block, where the value cache does not reach: ElementalIrEmitter::OpInvalidatesCache).

The measure
-----------
`emitted_statements` is the emitter's own count, not a model of it: the statements the
emitter writes, value cache and all, to compute every reduction of the kernel once (the
stitched schedules compute a reduction once and hand its result on, through shared memory or
scratch, and its readers load it) and then every output, at one element of a loop with one
element per thread (`elementwise_loops`, the elementwise schedule's). Every schedule emits the
values it computes through the same calls; its loops put vector lanes, rows or phases around
them.

A kernel whose measure passes MAX_KERNEL_STATEMENTS is not a legal kernel: the fusion
strategies refuse to form it (`emission_refusal`, with the reason in their decision log), and
`enumerate_plans` gives it no CodeGen plan, so the pricer has no projection for it and codegen
generates nothing for it and says why (a plan of XLA:GPU's own fusions, or one a user made,
may hold such a kernel). Whatever kernel and plan it is given, `emit_kernel` stops after
EMITTED_LINE_LIMIT lines. So codegen of any plan takes seconds.

Counting by emitting costs what emitting does (some 20 µs a statement): too much for every
candidate a fusion search prices, where kernels are far below the budget. So
`emission_refusal` first takes `statement_bound`, an upper bound that costs one walk over the
kernel's nodes (some 1 µs a node), and counts only when the bound passes the budget (3 of the
corpus's 20,182 kernels), keeping that count with the graph. The bound follows the cache rule
above: an elementwise op, or a view that keeps the index (a slice from the start), reads its
operands in its own context (index and scope); any other op makes a new context for each
operand read each time it is computed (a new index, a branch or a loop of its own: XLA's
"indexing users"); a value is computed, or an input loaded, at most once per context that
reaches it, so at most the sum of the contexts made above it, each counted once however many
elementwise paths carry it down; and each computation writes at most `_op_lines(node)`
statements. tests/compiler/test_emission_budget.py holds the bound to the count on every
kernel of every plan of tests/data and of the scan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from compiler.codegen.c_syntax import Body, CodegenUnsupported, EmissionTooLarge
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import _common_boundaries
from compiler.codegen.loops import elementwise_loops
from compiler.codegen.plan import CodeGenPlan
from compiler.kernels.plan import Kernel
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS

# The most statements a kernel's values may take (`emitted_statements`). A kernel whose values
# are computed once each takes about a statement a node, a few more with index arithmetic,
# branches and loops: over every plan of the corpus (tests/data, XLA's tests, the benchmark
# modules and the zoo: 20,182 kernels) the most is 1,848, for the 500 nodes of gpt2_4l's
# largest stitch kernel. Ten statements a node at the node cap (plan.MAX_KERNEL_NODES = 500),
# 5,000, leaves all of them as they were and keeps a kernel to code that is emitted and built
# in seconds (a scan over 32 steps fused whole, 9,531 statements, took 5 s), while a kernel that
# recomputes its values through slices, pads and concatenates (a scan over 256 steps fused
# whole: some 600,000) is refused long before the emitter or nvcc would stall on it.
MAX_KERNEL_STATEMENTS = 5000

# The most lines `emit_kernel` writes for one kernel under any CodeGen plan: a kernel within
# MAX_KERNEL_STATEMENTS emits its values once per vector lane (up to four) inside its
# schedule's loops and phases; over the corpus's plans no kernel's body was longer than 4.6
# times its measure. Nearly twice that: only a plan the measure does not describe (a schedule
# that recomputes what the others compute once) reaches it, and is stopped.
EMITTED_LINE_LIMIT = 8 * MAX_KERNEL_STATEMENTS

# One element per thread: the loop `emitted_statements` computes the values in.
_ONE_ELEMENT = CodeGenPlan(schedule="elementwise", dominant="", block_size=1, grid_size=1)
# Lines of one `elementwise_loops` loop around its values (a comment, the loop's opening and
# closing lines), and of each value's store.
_LOOP_LINES = 3
_STORE_LINES = 1


def emitted_statements(graph: Graph, computed: Collection[str], outputs: Iterable[str],
                       limit: int | None = None) -> int:
    """The statements the emitter writes to compute the kernel's reductions once each, then
    its outputs, at one element (module docstring). EmissionTooLarge once it passes `limit`;
    CodegenUnsupported when the emitter cannot emit the kernel at all."""
    inside = set(computed)
    body = Body(limit=limit)
    emitter = Elemental(graph, inside, _input_buffers(graph, inside), body)
    position = graph.positions()
    reductions = sorted((name for name in inside if graph.nodes[name].op == "reduce"),
                        key=position.__getitem__)
    for k, name in enumerate(reductions):
        result = f"result{k}"
        elementwise_loops(emitter, [graph.nodes[name]], {name: result}, _ONE_ELEMENT)
        emitter.buffers[name] = result  # its readers load it, as the stitched schedules do
    written = [graph.nodes[name] for name in outputs if name not in emitter.buffers]
    elementwise_loops(emitter, written, {node.name: f"out{k}" for k, node in enumerate(written)},
                      _ONE_ELEMENT)
    return len(body.lines)


def _input_buffers(graph: Graph, inside: set[str]) -> dict[str, str]:
    """The values the kernel reads from memory, each named as a parameter."""
    buffers: dict[str, str] = {}
    for name in inside:
        for operand in graph.nodes[name].operands:
            if operand not in inside and operand not in buffers:
                buffers[operand] = f"in{len(buffers)}"
    return buffers


def emission_refusal(graph: Graph, computed: Collection[str],
                     outputs: Collection[str]) -> str | None:
    """Why the kernel computing `computed` and writing `outputs` is not a legal kernel by the
    size of its code, or None: the bound, and only when the bound passes the budget, the
    count (module docstring), which is kept with the graph (a strategy that meets such a
    kernel may ask again)."""
    if statement_bound(graph, computed, outputs, MAX_KERNEL_STATEMENTS) <= MAX_KERNEL_STATEMENTS:
        return None
    counted = graph.analysis_cache("codegen.emission.counted")
    key = (frozenset(computed), frozenset(outputs))
    if key not in counted:
        counted[key] = _count_refusal(graph, computed, outputs)
    return counted[key]


def _count_refusal(graph: Graph, computed: Collection[str],
                   outputs: Collection[str]) -> str | None:
    try:
        emitted_statements(graph, computed, outputs, MAX_KERNEL_STATEMENTS)
    except EmissionTooLarge:
        return (f"its code would be over {MAX_KERNEL_STATEMENTS} statements "
                f"(MAX_KERNEL_STATEMENTS): the emitter computes a value again at every index "
                f"and in every branch that reads it")
    except CodegenUnsupported:
        return None  # not emitted at all: codegen says why
    return None


def first_refusal(graph: Graph, kernels: Iterable[Kernel]) -> tuple[Kernel, str] | None:
    """The first generated kernel of `kernels` whose code would be too large, with the
    reason (`emission_refusal`), or None."""
    for kernel in kernels:
        if kernel.kind != "library":
            reason = emission_refusal(graph, kernel.computed, kernel.outputs)
            if reason is not None:
                return kernel, reason
    return None


def check_emission(graph: Graph, computed: Collection[str], outputs: Collection[str]) -> None:
    """EmissionTooLarge when `emission_refusal` refuses the kernel."""
    reason = emission_refusal(graph, computed, outputs)
    if reason is not None:
        raise EmissionTooLarge(reason)


# -- the bound ------------------------------------------------------------------------------


def statement_bound(graph: Graph, computed: Collection[str], outputs: Iterable[str],
                    stop: int | None = None) -> int:
    """An upper bound on `emitted_statements(graph, computed, outputs)` (module docstring);
    once the running total passes `stop`, that total (the walk ends there)."""
    steps = graph.analysis_cache("codegen.emission.steps", lambda: _Steps(graph))
    inside = set(computed)
    weights: list[int] = []     # contexts each maker makes: a maker is a bit of the masks
    masks: dict[str, int] = {}  # value -> the makers of the contexts it is computed in

    def made(count: int) -> int:
        weights.append(count)
        return 1 << (len(weights) - 1)

    total = 0
    for name in inside:
        if steps[name][2]:  # a reduction: computed once, in a loop of its own
            masks[name] = made(1)
            total += _LOOP_LINES + _STORE_LINES
    sizes = set()
    for name in outputs:
        if not (name in masks and steps[name][2]):
            masks[name] = masks.get(name, 0) | made(1)
            sizes.add(graph.nodes[name].array_shape.size)
            total += _STORE_LINES
    total += _LOOP_LINES * len(sizes)
    loaded: dict[str, int] = {}  # an input or a reduction's result -> contexts it is read in
    counts: dict[int, int] = {}
    position = graph.positions()
    for name in sorted(inside, key=position.__getitem__, reverse=True):  # readers first
        mask = masks.get(name)
        if not mask:
            continue
        count = counts.get(mask)
        if count is None:
            count = counts[mask] = _weight(mask, weights)
        lines, edges, _ = steps[name]
        total += count * lines
        for operand, same_context, reads in edges:
            if operand in inside and not steps[operand][2]:
                found = masks
            elif not steps.literal(operand):
                found = loaded
            else:
                continue  # written as a literal
            found[operand] = found.get(operand, 0) | (mask if same_context
                                                      else made(count * reads))
        if stop is not None and total > stop:
            return total
    for mask in loaded.values():  # a load is one statement per context
        total += counts[mask] if mask in counts else _weight(mask, weights)
    return total


def _weight(mask: int, weights: list[int]) -> int:
    """The contexts the makers in `mask` make, together."""
    total = 0
    while mask:
        low = mask & -mask
        total += weights[low.bit_length() - 1]
        mask ^= low
    return total


class _Steps(dict):
    """What `statement_bound` needs of a node, worked out the first time it is asked for and
    kept with the graph: (the most statements one computation of it writes, its operand
    reads as (operand, read in its own context, contexts per computation), whether it is a
    reduction, which `emitted_statements` computes once)."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self._literals: dict[str, bool] = {}

    def __missing__(self, name: str) -> tuple:
        node = self.graph.nodes[name]
        found = self[name] = (_op_lines(self.graph, node), _reads(self.graph, node),
                              node.op == "reduce")
        return found

    def literal(self, name: str) -> bool:
        """Whether the emitter writes the value as a literal (a one-element constant)."""
        found = self._literals.get(name)
        if found is None:
            node = self.graph.nodes[name]
            found = self._literals[name] = (node.op == "constant" and not node.shape.is_tuple
                                            and node.array_shape.size == 1
                                            and node.attrs.get("value") is not None)
        return found


def _reads(graph: Graph, node: Node) -> tuple[tuple[str, bool, int], ...]:
    """Each operand read of `node` as the emitter makes it: (operand, whether at the node's
    own index and in its scope, how many contexts one computation of the node reads it in)."""
    info = OPS.get(node.op)
    same_index = (info is not None and info.is_elementwise) or _keeps_index(graph, node)
    reads = []
    for k, operand in enumerate(node.operands):
        same = same_index
        if node.op == "select" and k == 0:  # a scalar predicate is read at ()
            same = graph.nodes[operand].shape.is_tuple or \
                graph.nodes[operand].array_shape.rank == node.array_shape.rank
        count = 1
        if node.op == "gather" and k == 1:  # the start indices, a component at a time
            count = max(1, len(node.attrs.get("start_index_map", ())))
        reads.append((operand, same, count))
    return tuple(reads)


def _keeps_index(graph: Graph, node: Node) -> bool:
    """A view that reads its operand at its own index, in its own scope: a slice from the
    start with unit strides (the scan's `x[:-1]`), a broadcast or transpose that moves no
    dimension."""
    if node.shape.is_tuple or not node.operands:
        return False
    rank = node.array_shape.rank
    if node.op == "slice":
        return all(start == 0 and stride == 1 for start, _, stride in node.attrs["slice"])
    if node.op in ("broadcast", "transpose"):
        operand = graph.nodes[node.operands[0]].shape
        return not operand.is_tuple and operand.rank == rank and \
            tuple(node.attrs.get("dimensions", ())) == tuple(range(rank))
    return False


def _op_lines(graph: Graph, node: Node) -> int:
    """The most statements one computation of `node` writes (elemental.py's `_op_*` methods:
    index locals, branches, loops), its operands' apart."""
    op = node.op
    if node.shape.is_tuple:
        return 0  # not emitted (CodegenUnsupported)
    rank = node.array_shape.rank
    source = graph.nodes[node.operands[0]] if node.operands else None
    source_rank = source.array_shape.rank if source is not None and \
        not source.shape.is_tuple else 0
    if op in ("broadcast", "transpose", "slice", "reverse", "copy"):
        return 0  # an index of the operand, no statement
    if op == "reshape":
        # indexing.reshape_index: a linearized and a delinearized local for the whole index,
        # or for each piece the two shapes cut into that they do not share.
        dims, source_dims = node.array_shape.dims, source.array_shape.dims
        pieces, start, source_start = 0, 0, 0
        if 0 not in dims and 0 not in source_dims:
            for end, source_end in _common_boundaries(dims, source_dims):
                pieces += dims[start:end] != source_dims[source_start:source_end]
                start, source_start = end, source_end
        return 2 * max(1, pieces)
    if op == "bitcast":
        return 2
    if op == "pad":  # an index local per interior-padded dim; the branch, if any
        padding = node.attrs["padding"]
        branch = any(low > 0 or high > 0 or interior > 0 for low, high, interior in padding)
        return sum(interior > 0 for _, _, interior in padding) + (6 if branch else 0)
    if op == "concatenate":
        return 2 * len(node.operands) + 2 if len(node.operands) > 1 else 0
    if op == "dynamic-slice":
        return 2 * rank        # a clamped start and an index local per dim
    if op == "dynamic-update-slice":
        return 2 * rank + 6
    if op == "gather":
        return 2 * source_rank
    if op == "reduce":
        return 5               # the accumulator, the loop, the combine, the result
    if op == "reduce-window":
        return 4 * source_rank + 5
    return 1                   # one declaration
