"""Multi-output fusion: fusions that read the same value, and a producer with one of its
consumers, become one kernel with several outputs (openxla/xla,
xla/service/gpu/transforms/multi_output_fusion.cc, DoMultiOutputFusion).

Values are walked from uses to definitions. For each:
- sibling fusion of the fusions that read it when it is not an effective scalar
  (IsProfitableOperand), they are independent, their shapes are compatible
  (ShapesCompatibleForMultiOutputFusion: equal reduction input shapes and dimensions for
  reductions, equal loop shapes otherwise) and the result fits the budget (FusionFitsInBudget:
  at most kMaxUnnestedReductionOutputsPerFusion = 8 reductions, the device's shared memory per
  block, 96 operands and outputs; and the code size: multi_output_fusion.cc refuses "will
  generate too large IR");
- then producer-consumer multi-output fusion: a loop fusion whose output is used elsewhere too
  joins a consumer fusion (reductions first) and still writes that output
  (IsProducerMultiOutputFusible: no in-place or physically transposing producer).
"""

from __future__ import annotations

from compiler.fusion.xla.fusible import (elements, is_multi_output_root, over_budget,
                                         shapes_incompatible, too_much_code)
from compiler.fusion.xla.fusions import Fusions
from compiler.kernels.grouping import FUSIBLE


def multi_output_fusion(fusions: Fusions) -> None:
    """Uses before definitions: siblings of each value, then the value's producer into one of
    its consumers (multi_output_fusion.cc DoMultiOutputFusion)."""
    facts = fusions.facts
    for name in reversed(list(facts.nodes)):
        node = facts.nodes[name]
        if node.op in ("constant", "tuple"):
            continue
        if elements(node) > 1:  # IsProfitableOperand: effective scalars are not shared
            _fuse_siblings(fusions, name)
        if facts.role[name] == FUSIBLE and name not in fusions.ghosts:
            _fuse_producer_into_consumer(fusions, name)


def _fuse_siblings(fusions: Fusions, parent: str) -> None:
    siblings = [g for g in fusions.reading_groups(parent) if is_multi_output_root(fusions, g)]
    if len(siblings) < 2:
        return
    # Multi-output fusions first, then fusions, then lone ops (FusionPriority).
    siblings.sort(key=lambda g: -(2 if fusions.output_count(g) > 1 else
                                  1 if len(fusions.inside[g]) > 1 else 0))
    logged = set()
    i = 0
    while i < len(siblings):
        j = i + 1
        while j < len(siblings):
            a, b = siblings[i], siblings[j]
            subject = f"{fusions.hero(a)} + {fusions.hero(b)}"
            refusal = (shapes_incompatible(fusions, a, b)
                       or fusions.cycle_or_dependence(a, b, independent=True)
                       or over_budget(fusions, a, b) or fusions.leaves_value_unwritten(a, b)
                       or too_much_code(fusions, a, b) or fusions.merge_or_cycle(a, b))
            if refusal is None:
                del siblings[j]
                fusions.log("fuse", subject,
                            f"xla: sibling multi-output fusion (both read {parent})")
                continue
            if b not in logged:
                logged.add(b)
                fusions.log("refuse", subject, refusal)
            j += 1
        i += 1


def _fuse_producer_into_consumer(fusions: Fusions, value: str) -> None:
    producer = fusions.group(value)
    if (fusions.reductions[producer] or not is_multi_output_root(fusions, producer)
            or fusions.output_count(producer) != 1 or fusions.transposing[producer]):
        return  # IsProducerMultiOutputFusible
    consumers = [g for g in fusions.reading_groups(value) if g != producer]
    users = len(consumers) + (1 if fusions.facts.must_write[value] else 0)
    if users < 2 and not (consumers and fusions.output_count(consumers[0]) > 1):
        return  # one user, not a multi-output fusion: instruction fusion decided that
    consumers = [g for g in consumers if is_multi_output_root(fusions, g)]
    consumers.sort(key=lambda g: not fusions.reductions[g])  # reductions first
    for consumer in consumers:
        subject = f"{value} -> {fusions.hero(consumer)}"
        refusal = (shapes_incompatible(fusions, consumer, producer)
                   or fusions.cycle_or_dependence(consumer, producer, independent=False)
                   or over_budget(fusions, consumer, producer)
                   or fusions.leaves_value_unwritten(consumer, producer)
                   or too_much_code(fusions, consumer, producer)
                   or fusions.merge_or_cycle(consumer, producer))
        if refusal is None:
            fusions.log("fuse", subject, "xla: producer-consumer multi-output fusion "
                                         f"({value} also written out)")
            return
        fusions.log("refuse", subject, refusal)
