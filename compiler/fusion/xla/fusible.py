"""What XLA:GPU may fuse: the rules of `gpu/gpu_fusible.cc` and the producer-consumer checks of
GpuInstructionFusion::ShouldFuse (openxla/xla, xla/service/...: `gpu/gpu_fusible.cc`,
`instruction_fusion.cc`, `gpu/transforms/instruction_fusion.cc`, `gpu/transforms/
priority_fusion.cc` CanFuse).

The rules come in three kinds, as in XLA:
- facts about one instruction (here a node): loop-fusible, physically transposing, expensive to
  repeat, reading its operand's elements several times, always duplicable;
- whether a producer may join a consumer's fusion at all (`producer_consumer_refusal`), which
  instruction fusion asks before it weighs duplicating the producer;
- whether two fusions may become one (`shapes_incompatible`, `over_budget`, `too_large`), and
  which fusions may take part (`is_loop_fusion`, `is_multi_output_root`, `only_consumer`),
  which the multi-output and horizontal passes ask.

A rule that refuses returns its reason, the text the decision log shows; None allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.codegen.emission import emission_refusal
from compiler.fusion.unfused import VIEWS
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS
from compiler.kernels.grouping import LIBRARY, kernel_outputs
from compiler.kernels.plan import too_many_nodes

if TYPE_CHECKING:
    from compiler.fusion.xla.fusions import Fusions

# gpu_fusible.h: the cap on a fusion's operands plus outputs (kernel parameters).
MAX_OPERANDS_AND_OUTPUTS = 96
# gpu_fusible.cc: unnested reductions per multi-output fusion before registers spill.
MAX_REDUCTIONS_PER_FUSION = 8
# gpu_fusible.cc IsExpensiveToRepeat: input elements per output element of a heavy op.
MAX_INPUTS_PER_OUTPUT = 10

# Ops that write into their operand's buffer: kept out of multi-output and horizontal fusion.
IN_PLACE_OPS = ("dynamic-update-slice",)
# Ops XLA treats like elementwise ones in a loop fusion (IsUniversallyLoopFusible).
_LOOP_FUSIBLE_NOT_ELEMENTWISE = (
    "broadcast", "reshape", "bitcast", "transpose", "slice", "pad", "concatenate", "reverse",
    "gather", "dynamic-slice", "dynamic-update-slice", "reduce-window", "iota",
)


# -- one instruction --------------------------------------------------------------------------


def is_reduction(node: Node) -> bool:
    return node.op == "reduce"


def is_loop_fusible(node: Node) -> bool:
    info = OPS.get(node.op)
    return info is not None and (info.is_elementwise or node.op in _LOOP_FUSIBLE_NOT_ELEMENTWISE)


def is_physically_transposing(node: Node, graph: Graph) -> bool:
    """A transpose or copy that changes the order of non-trivial dimensions in memory
    (gpu_fusible.cc IsPhysicallyTransposing; a transpose of unit dimensions is a bitcast)."""
    if node.op not in ("transpose", "copy") or node.shape.is_tuple:
        return False
    out = node.array_shape
    source = graph.nodes[node.operands[0]].shape
    if source.is_tuple:
        return False
    permutation = node.attrs["dimensions"] if node.op == "transpose" else range(out.rank)
    permutation = tuple(permutation)
    out_order = [permutation[d] for d in out.minor_to_major if out.dims[d] > 1]
    source_order = [d for d in source.minor_to_major if source.dims[d] > 1]
    return out_order != source_order


def is_row_reduction(node: Node, graph: Graph) -> bool:
    """The reduce's most minor non-unit input dimension is reduced (ReductionDimensions)."""
    source = graph.nodes[node.operands[0]].array_shape
    minor = [d for d in source.minor_to_major if source.dims[d] > 1]
    return not minor or minor[0] in node.attrs["dimensions"]


def reduction_shared_memory(node: Node, graph: Graph) -> int:
    """Bytes of shared memory XLA's reduction emitter takes (gpu_fusible.cc SharedMemoryUsage)."""
    element = graph.nodes[node.operands[0]].array_shape.dtype.bits // 8 or 1
    return 32 * element if is_row_reduction(node, graph) else 2 * 32 * 33 * element


def is_expensive_to_repeat(node: Node) -> bool:
    """gpu_fusible.cc IsExpensiveToRepeat: many input elements per output element."""
    if node.op != "reduce-window":
        return False
    size = 1
    for extent in node.attrs["window"]["size"]:
        size *= extent
    return size > MAX_INPUTS_PER_OUTPUT


def reads_elements_multiple_times(node: Node, graph: Graph) -> bool:
    """gpu_fusible.cc IfFusedReadsElementsMultipleTimes."""
    if node.op in ("gather", "broadcast"):
        source = graph.nodes[node.operands[0]].shape
        return not source.is_tuple and node.array_shape.size > source.size
    if node.op == "reduce-window":
        window = node.attrs["window"]
        return any(size > stride for size, stride in zip(window["size"], window["stride"]))
    return False


def is_always_duplicable(node: Node, graph: Graph) -> bool:
    """Views (read in place: priority fusion fuses bitcasts first), iota and widening converts
    (IsAlwaysDuplicable): recomputing them never reads more than the value itself."""
    if node.op in VIEWS or node.op == "iota":
        return True
    if node.op == "convert":
        source = graph.nodes[node.operands[0]].shape
        return not source.is_tuple and source.nbytes < node.shape.nbytes
    return False


def elements(node: Node) -> int:
    return sum(leaf.size for leaf in node.shape.leaves())


def is_immediate(node: Node) -> bool:
    """A one-element constant: folded into the code, not a kernel parameter."""
    return node.op == "constant" and elements(node) == 1


# -- a producer into a consumer's fusion ------------------------------------------------------


def producer_consumer_refusal(fusions: Fusions, producer: str, head: str,
                              is_input: bool) -> str | None:
    """Why XLA would not fuse `producer` into the fusion grown from `head` at all, or None
    (GpuInstructionFusion::ShouldFuseInexpensiveChecks, IsProducerConsumerFusible,
    CreatesHeavyComputation, FusionFitsInBudget, the code size). `is_input`: the fusion is a
    reduction's input fusion."""
    facts = fusions.facts
    node = facts.nodes[producer]
    if facts.role[producer] == LIBRARY:
        return f"xla: {node.op} is a library call, not fusible"
    if is_reduction(node):
        return "reduce output not fused into consumer (xla rule)"
    if not is_loop_fusible(node):
        return f"xla: {node.op} is not loop-fusible"
    if is_input and is_physically_transposing(node, facts.graph):
        return ("xla: fusing the transposing producer into a reduction would break read "
                "coalescing")
    if creates_heavy_computation(fusions, producer, head):
        return "xla: the fusion would create a heavy computation (CreatesHeavyComputation)"
    inputs, inside = fusions.inputs[head], fusions.inside[head]
    too_large = too_many_nodes(len(inside) + 1)
    if too_large:
        return f"xla: fusion too large: {too_large} (ProducerConsumerMergedTooLarge)"
    before = facts.operand_count(inputs) + 1
    added = {o for o in node.operands if o not in inside and o not in inputs}
    after = before - 1 + facts.operand_count(added)
    if after > MAX_OPERANDS_AND_OUTPUTS and after > before:
        return (f"xla: fusion would have {after} operands and outputs, over "
                f"{MAX_OPERANDS_AND_OUTPUTS} (FusionFitsInBudget)")
    if fusions.check_code:
        owned = [*fusions.members[head], producer]
        computed = inside | {producer}
        too_much_code = emission_refusal(facts.graph, computed, kernel_outputs(
            owned, computed, facts.all_readers, facts.graph_outputs))
        if too_much_code:
            return (f"xla: the fusion would result in an overly large code duplication: "
                    f"{too_much_code} (ProducerConsumerMergedTooLarge)")
    return None


def creates_heavy_computation(fusions: Fusions, producer: str, head: str) -> bool:
    """gpu_fusible.cc CreatesHeavyComputation: the producer is expensive to repeat and some node
    of the fusion downstream of it reads elements several times."""
    facts = fusions.facts
    if not is_expensive_to_repeat(facts.nodes[producer]):
        return False
    inside = fusions.inside[head]
    stack = [r for r in facts.readers[producer] if r in inside]
    seen = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if reads_elements_multiple_times(facts.nodes[name], facts.graph):
            return True
        stack.extend(r for r in facts.readers[name] if r in inside)
    return False


# -- fusions that may take part in a merge ----------------------------------------------------


def is_loop_fusion(fusions: Fusions, group: str) -> bool:
    """A loop fusion or a lone elementwise op (not a lone transpose, slice, ...)."""
    if fusions.is_library(group) or fusions.reductions[group]:
        return False
    if len(fusions.inside[group]) > 1:
        return True
    node = fusions.facts.nodes[group]
    return OPS[node.op].is_elementwise and bool(node.operands)


def is_multi_output_root(fusions: Fusions, group: str) -> bool:
    """gpu_fusible.cc IsFusibleAsMultiOutputFusionRoot (in-place ops excluded here)."""
    if fusions.is_library(group) or group in fusions.horizontal:
        return False
    if fusions.in_place[group]:
        return False
    return bool(fusions.reductions[group]) or is_loop_fusion(fusions, group)


def only_consumer(fusions: Fusions, group: str, consumer: str) -> bool:
    """gpu_fusible.cc IsConsumerTheOnlyNonRootUser: every use of the group's outputs is
    `consumer` or the graph's root tuple."""
    facts = fusions.facts
    inside = fusions.inside[group]
    for output in fusions.outputs(group):
        for user in facts.users[output]:
            if user != consumer and user not in facts.root_tuples and user not in inside:
                return False
    return True


# -- two fusions becoming one -----------------------------------------------------------------


def shapes_incompatible(fusions: Fusions, a: str, b: str) -> str | None:
    """gpu_fusible.cc ShapesCompatibleForMultiOutputFusion: None when compatible."""
    nodes = fusions.facts.nodes
    hero_a, hero_b = nodes[fusions.hero(a)], nodes[fusions.hero(b)]
    if is_reduction(hero_a) and is_reduction(hero_b):
        same = (nodes[hero_a.operands[0]].shape.dims == nodes[hero_b.operands[0]].shape.dims
                and hero_a.shape.dims == hero_b.shape.dims
                and hero_a.attrs["dimensions"] == hero_b.attrs["dimensions"])
        return None if same else "xla: tiled reductions with different shapes"
    if loop_dims(hero_a, fusions.facts.graph) != loop_dims(hero_b, fusions.facts.graph):
        return "xla: different loop shapes (ShapesCompatibleForMultiOutputFusion)"
    return None


def loop_dims(hero: Node, graph: Graph) -> tuple[int, ...]:
    """The dimensions a fusion's loop runs over: a reduction's input, else the hero's own."""
    if is_reduction(hero):
        return graph.nodes[hero.operands[0]].shape.dims
    return hero.shape.dims


def too_large(fusions: Fusions, a: str, b: str) -> str | None:
    """Two fusions becoming one would compute more than plan.MAX_KERNEL_NODES nodes, owned and
    recomputed (the bound every strategy keeps; XLA's multi_output_fusion.cc refuses a fusion
    that "will generate too large IR")."""
    inside_a, inside_b = fusions.inside[a], fusions.inside[b]
    if too_many_nodes(len(inside_a) + len(inside_b)) is None:
        return None  # their union is no larger
    reason = too_many_nodes(len(inside_a | inside_b))
    return reason and f"xla: fusion too large: {reason} (will generate too large IR)"


def too_much_code(fusions: Fusions, a: str, b: str) -> str | None:
    """Two fusions becoming one would take too much code to emit (checked only when
    `fusions.check_code`: see `xla_fusion`)."""
    if not fusions.check_code:
        return None
    refusal = emission_refusal(fusions.facts.graph, fusions.inside[a] | fusions.inside[b],
                               fusions.outputs(a) + fusions.outputs(b))
    return refusal and (f"xla: the fusion would result in an overly large code "
                        f"duplication: {refusal} (will generate too large IR)")


def over_budget(fusions: Fusions, a: str, b: str) -> str | None:
    """gpu_fusible.cc FusionFitsInBudget for two fusions becoming one, and their code size."""
    reason = too_large(fusions, a, b)
    if reason:
        return reason
    facts = fusions.facts
    reductions = fusions.reductions[a] + fusions.reductions[b]
    if len(reductions) > MAX_REDUCTIONS_PER_FUSION:
        return (f"xla: over {MAX_REDUCTIONS_PER_FUSION} unnested reductions in fusion "
                "(FusionFitsInBudget)")
    shared = sum(reduction_shared_memory(facts.nodes[r], facts.graph) for r in reductions)
    limit = fusions.model.device.shared_memory_per_block_bytes
    if shared > limit:
        return (f"xla: shared memory {shared} B over the budget of {limit} B "
                "(FusionFitsInBudget)")
    operands = facts.operand_count((fusions.inputs[a] | fusions.inputs[b])
                                   - fusions.inside[a] - fusions.inside[b])
    total = operands + fusions.output_count(a) + fusions.output_count(b)
    if total > MAX_OPERANDS_AND_OUTPUTS:
        return (f"xla: fusion would have {total} operands and outputs, over "
                f"{MAX_OPERANDS_AND_OUTPUTS} (FusionFitsInBudget)")
    return None
