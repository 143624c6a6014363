"""Horizontal input fusion: the reductions that feed one consumer become one multi-output input
fusion (openxla/xla, xla/service/gpu/transforms/horizontal_input_fusion.cc).

For each consumer, definitions before uses, the reduction fusions among its operands whose only
user it is, but the root (IsConsumerTheOnlyNonRootUser), are sorted by their loop shape and size
and merged into an anchor while their shapes are compatible and the result fits the budget
(ShapesCompatibleForMultiOutputFusion, FusionFitsInBudget); a refusal makes the refused fusion
the next anchor.
"""

from __future__ import annotations

from compiler.fusion.xla.fusible import (is_multi_output_root, loop_dims, only_consumer,
                                         over_budget, shapes_incompatible, too_much_code)
from compiler.fusion.xla.fusions import Fusions


def horizontal_input_fusion(fusions: Fusions) -> None:
    """Reductions feeding one consumer become one multi-output input fusion, definitions before
    uses (HorizontalInputFusionImpl::Run)."""
    facts = fusions.facts
    for consumer in facts.nodes:
        candidates: dict[str, None] = {}
        for operand in facts.nodes[consumer].operands:
            group = fusions.operand_group(operand)
            if group is None or group in candidates or group == fusions.group(consumer):
                continue
            if fusions.reductions[group] and is_multi_output_root(fusions, group) \
                    and only_consumer(fusions, group, consumer):
                candidates[group] = None
        if len(candidates) < 2:
            continue
        ordered = sorted(candidates, key=lambda g: (
            loop_dims(facts.nodes[fusions.hero(g)], facts.graph), len(fusions.inside[g]),
            facts.position[g]))
        anchor = ordered[0]
        for group in ordered[1:]:
            subject = f"{fusions.hero(anchor)} + {fusions.hero(group)}"
            refusal = (shapes_incompatible(fusions, anchor, group)
                       or fusions.cycle_or_dependence(anchor, group, independent=True)
                       or over_budget(fusions, anchor, group)
                       or fusions.leaves_value_unwritten(anchor, group)
                       or too_much_code(fusions, anchor, group)
                       or fusions.merge_or_cycle(anchor, group))
            if refusal:
                fusions.log("refuse", subject, refusal)
                anchor = group
                continue
            fusions.log("fuse", subject,
                        f"xla: horizontal input fusion of reductions feeding {consumer}")
