"""Instruction fusion: each consumer takes in its producers (openxla/xla, xla/service/...:
`instruction_fusion.cc` InstructionFusion::Run and ShouldFuse, `gpu/transforms/
priority_fusion.cc` CanFuse, `gpu/gpu_fusible.cc` IsProducerConsumerFusible).

Consumers are visited in reverse post-order and each grows upwards, absorbing producers:
elementwise ops and the ops XLA treats as loop-fusible (IsUniversallyLoopFusible: broadcast,
reshape, bitcast, transpose, slice, pad, concatenate, gather, dynamic-slice,
dynamic-update-slice, reduce-window, ...) make a "loop" fusion; a reduce takes its producers into
an "input" fusion with the reduce as hero (reduce-window is a loop op in XLA, so its kernels are
"loop" ones). Refused (fusible.producer_consumer_refusal):
- a reduce's output into a consumer: "reduce output not fused into consumer (xla rule)"
  (XLA's reduction epilogue fusion of single-user converts/bitcasts is not modelled);
- library ops (dot, convolution, custom-call, control flow, ...), which XLA does not fuse;
- a physically transposing producer into a reduction fusion ("would break read coalescing",
  GpuInstructionFusion / IsPhysicallyTransposing);
- an expensive-to-repeat producer (big-window reduce-window) into a consumer that reads
  elements several times (CreatesHeavyComputation);
- a fusion over kMaxOperandsAndOutputsPerFusion = 96 operands and outputs (FusionFitsInBudget);
- a fusion that would compute more than plan.MAX_KERNEL_NODES nodes: XLA refuses fusions whose
  LLVM IR would grow too large to compile quickly (priority fusion's CanFuse, "the fusion would
  result in an overly large code duplication": GpuHloCostAnalysis::
  ProducerConsumerMergedTooLarge, at most kMaxIRSize = 10000 emitted instructions); here the
  bound is the one every strategy keeps, on nodes computed (owned and recomputed).
And a producer read outside the fusion is refused unless it is cheap: "expensive producer would
be duplicated" (ShouldFuse with IsExpensive; here `grouping.is_duplicable`). A cheap one is
recomputed in each consumer fusion (KernelSpec.recomputed); it keeps a kernel of its own only
when its value must also be in memory (a graph output, read by a library call or through a
tuple). Views and widening converts are always duplicated (priority fusion fuses bitcasts first;
IsAlwaysDuplicable). For other cheap ops the cost decides, as priority fusion's
GpuPerformanceModel does (`Duplication`).

Producer-consumer fusion never forms a cycle (everything that reads an absorbed producer is
inside the fusion); the later merges check GroupGraph.can_merge and log "would form cycle".
"""

from __future__ import annotations

import heapq

from compiler.fusion.xla.fusible import (is_always_duplicable, is_reduction,
                                         producer_consumer_refusal)
from compiler.fusion.xla.facts import GraphFacts
from compiler.fusion.xla.fusions import Fusions
from compiler.ir.ops import OPS
from compiler.kernels.grouping import FUSIBLE, LIBRARY, is_duplicable
from compiler.kernels.plan import LIBRARY_OPERAND_VIEWS
from compiler.target.sol import SolModel

# gpu_performance_model_base.h kKernelLaunchOverhead: what XLA's own model charges a kernel
# launch when priority fusion weighs duplicating a producer (XLA's figure, not ours).
XLA_KERNEL_LAUNCH_US = 1.0
_COPIES_CAP = 1 << 20  # duplication copies are estimated up to this many


def instruction_fusion(fusions: Fusions) -> None:
    """Each consumer not yet fused grows upwards, in reverse post-order (InstructionFusion)."""
    facts = fusions.facts
    duplication = Duplication(facts, fusions.model)
    for head in reversed(facts.kernel_nodes):
        if fusions.head_of[head] != head:
            continue  # absorbed by a consumer's fusion
        if facts.role[head] == LIBRARY:
            _library_views(fusions, head)
        elif _recomputed_everywhere(fusions, head):
            fusions.ghosts.add(head)
        else:
            _grow(fusions, duplication, head)


def _recomputed_everywhere(fusions: Fusions, name: str) -> bool:
    """Every kernel that reads the cheap node computes it, and nothing needs its value: then it
    needs no kernel of its own."""
    facts = fusions.facts
    if not is_duplicable(facts.nodes[name]) or facts.must_write[name]:
        return False
    readers = facts.readers[name]
    return bool(readers) and all(name in fusions.inside[group]
                                 for reader in readers for group in fusions.computers(reader))


def _library_views(fusions: Fusions, head: str) -> None:
    """A library call reads reshaped and bitcast operands in place (a different leading
    dimension): its kernel recomputes those views, through chains of them."""
    facts = fusions.facts
    pending = [o for o in facts.nodes[head].operands if facts.role[o] == FUSIBLE]
    seen = set()
    while pending:
        view = pending.pop()
        if view in seen or facts.nodes[view].op not in LIBRARY_OPERAND_VIEWS:
            continue
        seen.add(view)
        fusions.recompute(view, head)
        fusions.log("fuse", f"{view} -> {head}",
                    f"xla: {facts.nodes[view].op} read in place by the library call")
        pending.extend(o for o in facts.nodes[view].operands if facts.role[o] == FUSIBLE)


def _grow(fusions: Fusions, duplication: Duplication, head: str) -> None:
    """Absorb producers, latest first, so a producer is considered after all its readers that
    the fusion will ever hold (the order XLA's reverse post-order walk gives)."""
    facts = fusions.facts
    heap = [(-facts.position[o], o) for o in dict.fromkeys(facts.nodes[head].operands)
            if facts.role[o] in (FUSIBLE, LIBRARY)]
    heapq.heapify(heap)
    considered = set()
    while heap:
        _, producer = heapq.heappop(heap)
        if producer in considered or producer in fusions.inside[head]:
            continue
        considered.add(producer)
        if _consider(fusions, duplication, producer, head):
            for operand in dict.fromkeys(facts.nodes[producer].operands):
                if facts.role[operand] in (FUSIBLE, LIBRARY) \
                        and operand not in fusions.inside[head]:
                    heapq.heappush(heap, (-facts.position[operand], operand))


def _consider(fusions: Fusions, duplication: Duplication, producer: str, head: str) -> bool:
    """Fuse `producer` into the fusion grown from `head` (owned or recomputed), or refuse; logs
    the decision. True when the fusion now computes the producer."""
    facts = fusions.facts
    node = facts.nodes[producer]
    reader = next(r for r in facts.readers[producer] if r in fusions.inside[head])
    subject = f"{producer} -> {reader}"
    if reader in fusions.recomputed[head]:
        subject += f" (recomputed in the fusion of {head})"
    is_input = is_reduction(facts.nodes[head])  # only a head can be a reduction
    refusal = producer_consumer_refusal(fusions, producer, head, is_input)
    if refusal:
        fusions.log("refuse", subject, refusal)
        return False

    duplicate = facts.must_write[producer] or any(
        group != head for r in facts.readers[producer] for group in fusions.computers(r))
    if not duplicate:
        fusions.absorb(producer, head)
        if is_input:
            reason = "xla: input fusion of producer into the reduction"
        elif OPS[node.op].is_elementwise:
            reason = "xla: loop fusion of elementwise producer"
        else:
            reason = f"xla: loop fusion of {node.op} (loop-fusible like an elementwise op)"
        fusions.log("fuse", subject, reason)
        return True
    if not is_duplicable(node):
        fusions.log("refuse", subject, "expensive producer would be duplicated "
                                       "(xla: instruction_fusion IsExpensive)")
        return False
    if not duplication.pays[producer]:
        gain, copies = duplication.gain_us[producer], duplication.copies[producer]
        fusions.log("refuse", subject,
                    f"xla: duplicating into {copies} consumer{'s' if copies > 1 else ''} is "
                    f"slower than writing it once (priority fusion cost model, gain "
                    f"{gain:.3g} µs)", gain)
        return False
    fusions.recompute(producer, head)
    fusions.log("fuse", subject, "xla: cheap producer duplicated into consumer (not IsExpensive)")
    return True


class Duplication:
    """Whether duplicating each cheap node into its consumers pays (priority fusion's test),
    estimated once, before the pass.

    `copies[n]` estimates how many kernels would compute n if it and the cheap nodes reading it
    were recomputed. Duplicating n into them costs reading n's inputs in each; keeping it costs
    its kernel, writing it and reading it in each (GpuPerformanceModel::RunTimes, time_unfused -
    time_fused, here in SOL terms, with the SOL model standing in for XLA's): it pays when
    keeping is not faster (EstimateRunTimesForPriorityFusion: time_unfused - time_fused >= 0).
    """

    def __init__(self, facts: GraphFacts, model: SolModel):
        self.copies: dict[str, int] = {}
        self.pays: dict[str, bool] = {}
        self.gain_us: dict[str, float] = {}
        nodes = facts.nodes
        per_byte_us = 1e6 / model.device.dram_bytes_per_s
        for name in reversed(facts.kernel_nodes):
            count = 0
            for reader in facts.readers[name]:
                if facts.role[reader] == LIBRARY:
                    continue
                recomputed = self.pays.get(reader) and (
                    self.copies[reader] > 1 or facts.must_write[reader])
                count += self.copies[reader] if recomputed else 1
            self.copies[name] = min(count, _COPIES_CAP)
            node = nodes[name]
            if not is_duplicable(node):
                self.pays[name] = False
            elif is_always_duplicable(node, facts.graph) or (count <= 1
                                                              and not facts.must_write[name]):
                self.pays[name] = True
            else:
                alone = model.estimate(_with_views(facts, name), [name])
                kernel_us = alone.total_us + XLA_KERNEL_LAUNCH_US
                kept = kernel_us + count * node.shape.nbytes * per_byte_us
                duplicated = count * alone.read_bytes * per_byte_us
                if facts.must_write[name]:
                    duplicated += kernel_us
                self.gain_us[name] = kept - duplicated
                self.pays[name] = kept >= duplicated


def _with_views(facts: GraphFacts, name: str) -> set[str]:
    """`name` and the views, iotas and widening converts it reads, through chains of them: a
    kernel computing `name` recomputes those too, so it reads what they read."""
    found, stack = {name}, [name]
    while stack:
        for operand in facts.nodes[stack.pop()].operands:
            if operand not in found and facts.role[operand] == FUSIBLE \
                    and is_always_duplicable(facts.nodes[operand], facts.graph):
                found.add(operand)
                stack.append(operand)
    return found
