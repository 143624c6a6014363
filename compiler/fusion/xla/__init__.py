"""The XLA baseline: the community XLA GPU fusion pipeline's decisions, rule by rule.

This models what XLA:GPU fuses, so the explorer can set its own strategies beside it. One module
per pass of XLA's pipeline (openxla/xla, xla/service/...), run in XLA's order by `xla_fusion`:

1. `instruction.py`: instruction fusion, producer into consumer (`instruction_fusion.cc`,
   `gpu/transforms/priority_fusion.cc`'s duplication cost): loop fusions and reductions' input
   fusions, a cheap producer duplicated into its consumers when that pays.
2. `multi_output.py`: multi-output fusion (`gpu/transforms/multi_output_fusion.cc`), sibling and
   producer-consumer.
3. `horizontal_loop.py` then `horizontal_input.py`: horizontal fusion
   (`gpu/transforms/horizontal_loop_fusion.cc`, `gpu/transforms/horizontal_input_fusion.cc`) of
   small loop fusions, and of reductions, that feed one consumer.

The rules the passes ask (may this producer join this fusion, may these two fusions become one)
are `fusible.py` (`gpu/gpu_fusible.cc`); the state they share, the fusions made so far and the
decision log, is `fusions.py`.

Not modelled: layout assignment and the layout normalisation passes, Triton and custom fusions
(XLA:GPU now emits norms and softmax as Triton fusions, so its counts there are lower), the
fusion merger, reduction splitting, in-place aliasing beyond keeping dynamic-update-slice out of
multi-output and horizontal fusion, and a horizontal fusion's reuse as a consumer of further
batching. XLA runs dead-code elimination first; here a dead node still gets a kernel, since a
plan computes every node.

Every fuse and every refusal is a Decision with the XLA rule (or cost) that decided it, one per
considered producer/consumer pair or pair of fusions.
"""

from __future__ import annotations

from compiler.fusion.xla.fusions import Fusions
from compiler.fusion.xla.horizontal_input import horizontal_input_fusion
from compiler.fusion.xla.horizontal_loop import horizontal_loop_fusion
from compiler.fusion.xla.instruction import instruction_fusion
from compiler.fusion.xla.multi_output import multi_output_fusion
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph
from compiler.codegen.emission import first_refusal
from compiler.kernels.plan import Decision, FusionPlan, build_plan
from compiler.target.sol import SolModel


def xla_fusion(graph: Graph, model: SolModel) -> FusionPlan:
    """The kernels XLA:GPU's fusion passes would make of `graph` (module docstring).

    A fusion's code size is checked once the passes are done (codegen/emission.py): a walk
    of the fusion per producer costs as much as the passes, and fusions that recompute their
    values beyond the budget are rare. When one does, the passes run again with every fusion
    decision checked, and the first run's fusion named in the log."""
    with cyclic_gc_paused():  # compiler/gc_pause.py: keeps planning time linear
        plan = _passes(graph, model, check_code=False)
        found = first_refusal(graph, plan.kernels)
        if found is None:
            return plan
        kernel, reason = found
        first = Decision("refuse", f"the fusion of {kernel.dominant} ({len(kernel.computed)} "
                                   f"ops)", f"xla: the fusion would result in an overly large "
                                            f"code duplication: {reason}; fusions formed "
                                            f"again, each checked")
        return _passes(graph, model, check_code=True, decisions=[first])


def _passes(graph: Graph, model: SolModel, check_code: bool,
            decisions: list[Decision] = ()) -> FusionPlan:
    """XLA's passes in XLA's order over one Fusions object."""
    fusions = Fusions(graph, model, check_code)
    fusions.decisions.extend(decisions)
    instruction_fusion(fusions)
    fusions.build_group_graph()
    multi_output_fusion(fusions)
    horizontal_loop_fusion(fusions)
    horizontal_input_fusion(fusions)
    return build_plan(graph, fusions.specs(), "xla", model, fusions.decisions)
