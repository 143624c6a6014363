"""Horizontal loop fusion: small independent fusions that feed one consumer are batched into one
"horizontal" kernel, to save launches (openxla/xla,
xla/service/gpu/transforms/horizontal_loop_fusion.cc).

For each consumer, uses before definitions, the loop fusions and elementwise ops among its
operands whose only user it is, but the root (IsConsumerTheOnlyNonRootUser), are candidates
when their outputs have one element type and they are small enough to be launch-bound
(IsProfitableFusionCandidate: 8192*8192 elements and 128 ops, 128*2048 and 30 in sliced mode).
Sorted as XLA sorts them, they are cut into spans (GetNextSpanOfFusions): first of equal output
shape (loop mode), then of equal element type (sliced input fusion), within the caps of
kMaxFusionBatchSize (64 outputs for lone ops, 32 for fusions and in sliced mode) and
kMaxCudaParamSize (4000 bytes of 8-byte parameters), and each span within the code size
(fusible.too_large) becomes one kernel.
"""

from __future__ import annotations

from compiler.fusion.xla.fusible import (elements, is_loop_fusion, only_consumer, too_large,
                                         too_much_code)
from compiler.fusion.xla.fusions import Fusions
from compiler.kernels.grouping import LEAF

# horizontal_loop_fusion.cc: CUDA's kernel parameter space, 8 bytes a pointer.
MAX_CUDA_PARAM_BYTES = 4000
PARAM_BYTES = 8
# horizontal_loop_fusion.cc kMaxFusionBatchSize: outputs per horizontal fusion.
MAX_BATCH_LONE_OPS = 64
MAX_BATCH_FUSIONS = 32
# horizontal_loop_fusion.cc IsProfitableFusionCandidate: (elements, ops) for loop / sliced mode.
PROFITABLE_LOOP = (8192 * 8192, 128)
PROFITABLE_SLICED = (128 * 2048, 30)


def horizontal_loop_fusion(fusions: Fusions) -> None:
    """Each consumer's operands, uses before definitions, in loop mode then in sliced mode
    (HorizontalLoopFusionImpl::Run)."""
    facts = fusions.facts
    for consumer in reversed(list(facts.nodes)):
        operands = facts.nodes[consumer].operands
        if len(operands) < 2 or facts.role[consumer] == LEAF:
            continue
        for sliced in (False, True):
            _fuse_operands(fusions, consumer, sliced)


def _fuse_operands(fusions: Fusions, consumer: str, sliced: bool) -> None:
    """FuseConsumerOperands: the candidates among `consumer`'s operands, span by span."""
    facts = fusions.facts
    max_elements, max_ops = PROFITABLE_SLICED if sliced else PROFITABLE_LOOP
    own = fusions.group(consumer)
    candidates: dict[str, None] = {}
    for operand in facts.nodes[consumer].operands:
        group = fusions.operand_group(operand)
        if group is None or group == own or group in candidates:
            continue
        if not is_loop_fusion(fusions, group) or group in fusions.horizontal \
                or fusions.in_place[group]:
            continue
        outputs = fusions.outputs(group)
        if len({facts.nodes[o].shape.dtype for o in outputs}) != 1:
            continue
        if not only_consumer(fusions, group, consumer):
            continue
        if elements(facts.nodes[fusions.hero(group)]) > max_elements \
                or len(fusions.inside[group]) > max_ops:
            continue
        candidates[group] = None
    if len(candidates) < 2:
        return

    def key(g: str):
        hero = facts.nodes[fusions.hero(g)]
        return (hero.shape.dtype.name, fusions.output_count(g), len(fusions.inside[g]),
                elements(hero), facts.position[g])

    ordered = sorted(candidates, key=key)
    start = 0
    while start < len(ordered):
        end, stop = _span(fusions, ordered, start, sliced)
        span = ordered[start:end]
        start = end
        if len(span) < 2:
            continue
        anchor = span[0]
        fused = [anchor]
        for group in span[1:]:
            subject = f"{fusions.hero(anchor)} + {fusions.hero(group)}"
            refusal = (fusions.cycle_or_dependence(anchor, group, independent=True)
                       or too_large(fusions, anchor, group)
                       or fusions.leaves_value_unwritten(anchor, group)
                       or too_much_code(fusions, anchor, group)
                       or fusions.merge_or_cycle(anchor, group))
            if refusal:
                fusions.log("refuse", subject, refusal)
                continue
            fused.append(group)
        if len(fused) > 1:
            fusions.horizontal.add(anchor)
            mode = "sliced input" if sliced else "loop"
            fusions.log("fuse", " + ".join(fused),
                        f"xla: horizontal {mode} fusion of {len(fused)} independent fusions "
                        f"feeding {consumer}")
        if stop:
            fusions.log("refuse", f"{ordered[end - 1]} + {ordered[end]}", stop)


def _span(fusions: Fusions, ordered: list[str], start: int,
          sliced: bool) -> tuple[int, str | None]:
    """horizontal_loop_fusion.cc GetNextSpanOfFusions: the end of the next batch and, when a
    cap ended it, which."""
    nodes = fusions.facts.nodes
    first = ordered[start]
    first_hero = nodes[fusions.hero(first)]
    lone_op = len(fusions.inside[first]) == 1 and not sliced
    max_batch = MAX_BATCH_LONE_OPS if lone_op else MAX_BATCH_FUSIONS
    outputs = io_size = 0
    end = start
    stop = None
    while end < len(ordered):
        group = ordered[end]
        hero = nodes[fusions.hero(group)]
        if hero.shape.dtype != first_hero.shape.dtype \
                or fusions.output_count(group) != fusions.output_count(first):
            break
        if not sliced and hero.shape.dims != first_hero.shape.dims:
            break
        outputs += fusions.output_count(group)
        if outputs >= max_batch:
            stop = f"xla: horizontal fusion batch cap of {max_batch} outputs " \
                   "(kMaxFusionBatchSize)"
            break
        io_size += fusions.facts.operand_count(fusions.inputs[group]) \
            + fusions.output_count(group)
        if io_size * PARAM_BYTES >= MAX_CUDA_PARAM_BYTES:
            stop = (f"xla: horizontal fusion parameters over {MAX_CUDA_PARAM_BYTES} bytes "
                    "(kMaxCudaParamSize)")
            break
        end += 1
    if end == start:
        end, stop = start + 1, None
    if end >= len(ordered):
        stop = None
    return end, stop
