"""A generated kernel's code fits MAX_KERNEL_STATEMENTS, by the emitter's own count (issue 35:
the cost plan of a selective scan's gradient priced kernels of a few µs whose code the
elemental emitter never finished writing): every strategy refuses a kernel past the budget,
with the reason in its decision log; the pricer and the code generator have no plan for one;
and the measure is the emitter's, so the three cannot disagree."""

from pathlib import Path

import pytest

import compiler.codegen.emission as emission
from compiler.codegen.c_syntax import EmissionTooLarge
from compiler.codegen.emission import (MAX_KERNEL_STATEMENTS, emission_refusal,
                                       emitted_statements, statement_bound)
from compiler.codegen.emit import emit_kernel
from compiler.codegen.plan import CodeGenPlan
from compiler.fusion.explore import OUR_STRATEGIES, explore
from compiler.fusion.pricing import ProjectedPricer, SolPricer
from compiler.importers import import_bytes, load_graph
from compiler.kernels.grouping import FUSIBLE, node_role
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.stages.codegen import emit_code, emulate
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).resolve().parents[1] / "data"
SCAN = DATA / "scan"
MODULES = sorted((DATA / "hlo").glob("*.hlo")) + sorted((DATA / "onnx").glob("*.onnx"))
DOUBLINGS = 10   # concatenate levels of `doubling_chain`: 2^10 copies of its first value


def doubling_chain(levels: int = DOUBLINGS) -> str:
    """Each level concatenates the negation of the level before with itself: its two arms
    compute that negation in branches of their own, so the code doubles with every level
    while the graph grows by two nodes."""
    lines = ["HloModule doubling", "ENTRY main {", "  p0 = f32[4] parameter(0)"]
    previous, size = "p0", 4
    for i in range(levels):
        lines.append(f"  n{i} = f32[{size}] negate({previous})")
        size *= 2
        lines.append(f"  c{i} = f32[{size}] concatenate(n{i}, n{i}), dimensions={{0}}")
        previous = f"c{i}"
    lines += [f"  ROOT out = f32[{size}] negate({previous})", "}"]
    return "\n".join(lines)


def one_kernel(graph, strategy="one-kernel"):
    """The plan that fuses every generated node of the graph into one kernel."""
    nodes = [node.name for node in graph if node_role(node) == FUSIBLE]
    return build_plan(graph, [KernelSpec(nodes, "loop", dominant=nodes[-1])], strategy,
                      SolModel(graph, get_device("h100")))


def refusals(plan) -> list[str]:
    return [d.reason for d in plan.decisions if "MAX_KERNEL_STATEMENTS" in d.reason]


# -- the measure ------------------------------------------------------------------------------


def test_the_measure_is_the_count_of_the_statements_the_emitter_writes():
    """For a kernel without reductions, the measure is exactly the body the elementwise
    schedule emits at one element per thread: one code path."""
    (graph,) = import_bytes(doubling_chain(4).encode(), "doubling.hlo")
    kernel = one_kernel(graph).kernels[0]
    plan = CodeGenPlan(schedule="elementwise", dominant=kernel.dominant, block_size=256,
                       grid_size=1)
    source = emit_kernel(graph, kernel, plan, "k").source.splitlines()
    signature_end = next(i for i, line in enumerate(source) if line.endswith(") {"))
    body = source[signature_end + 1:-1]     # up to the closing brace
    assert emitted_statements(graph, kernel.computed, kernel.outputs) == len(body)
    assert len(body) > 2 ** 4  # the negations, computed again in each arm


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_bound_is_never_below_the_count_for_any_kernel_of_any_plan(path):
    graph = load_graph(str(path))
    for plan in explore(graph, "h100", OUR_STRATEGIES).values():
        for kernel in plan.kernels:
            if kernel.kind == "library":
                continue
            try:
                count = emitted_statements(graph, kernel.computed, kernel.outputs)
            except EmissionTooLarge:
                raise AssertionError(f"{plan.strategy} {kernel.name}: no limit was set")
            except Exception:
                continue  # a kernel the emitter cannot generate (its test says why)
            assert statement_bound(graph, kernel.computed, kernel.outputs) >= count, \
                f"{plan.strategy} {kernel.name}"
            assert count <= MAX_KERNEL_STATEMENTS


def test_the_bound_holds_for_the_scans_kernels_which_recompute_the_most():
    graph = load_graph(str(SCAN / "selective_scan.mlir"))
    (plan,) = explore(graph, "h100", ["cost"]).values()
    unfused = one_kernel(graph)
    for kernel in [*plan.kernels, *unfused.kernels]:
        if kernel.kind == "library":
            continue
        limit = 4 * MAX_KERNEL_STATEMENTS
        try:
            count = emitted_statements(graph, kernel.computed, kernel.outputs, limit)
        except EmissionTooLarge:
            count = limit
        assert statement_bound(graph, kernel.computed, kernel.outputs) >= count


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["xla", "stitch", "cost"])
def test_every_strategy_refuses_a_kernel_past_the_budget_and_says_why(strategy, plan_checker):
    (graph,) = import_bytes(doubling_chain().encode(), "doubling.hlo")
    whole = one_kernel(graph).kernels[0]
    assert emission_refusal(graph, whole.computed, whole.outputs) is not None
    plan = explore(graph, "h100", ["xla", "stitch", "cost"])[strategy]
    assert refusals(plan), [d.reason for d in plan.decisions]
    assert "the emitter computes a value again at every index and in every branch" \
        in refusals(plan)[0]
    plan_checker(graph, plan)   # and so every kernel is within the budget


def test_the_pricer_and_the_code_generator_have_no_plan_for_a_kernel_past_the_budget():
    (graph,) = import_bytes(doubling_chain().encode(), "doubling.hlo")
    plan = one_kernel(graph)
    kernel = plan.kernels[0]
    model = SolModel(graph, get_device("h100"))
    for pricer in (ProjectedPricer(graph, model), SolPricer(graph, model)):
        price = pricer.price(kernel)
        assert price.plan is None and "MAX_KERNEL_STATEMENTS" in price.refusal
    code = emit_code(graph, plan, kernel, get_device("h100"))
    assert code.emitted is None
    assert code.error.startswith("not generated: its code would be over 5000 statements")


def test_the_emitter_stops_any_kernel_at_its_line_limit(monkeypatch):
    """Whatever plan it is given (here one that `enumerate_plans` would not offer)."""
    monkeypatch.setattr("compiler.codegen.emit.EMITTED_LINE_LIMIT", 500)
    (graph,) = import_bytes(doubling_chain().encode(), "doubling.hlo")
    kernel = one_kernel(graph).kernels[0]
    plan = CodeGenPlan(schedule="elementwise", dominant=kernel.dominant, block_size=256,
                       grid_size=16)
    with pytest.raises(EmissionTooLarge, match="over 500 statements"):
        emit_kernel(graph, kernel, plan, "k")


# -- the selective scan -----------------------------------------------------------------------


def test_the_scans_gradient_is_explored_and_every_kernel_generated_and_checked():
    """tests/data/gen_scan.py: JAX's associative_scan, 8 levels of strided slices, interior
    pads and concatenates. The cost plan's kernels all fit the budget, are generated (the
    search had priced two it never finished writing) and match the interpreter."""
    graph = load_graph(str(SCAN / "selective_scan_grad.mlir"))
    plans = explore(graph, "h100", OUR_STRATEGIES)
    for plan in plans.values():
        for kernel in plan.kernels:
            if kernel.kind != "library":
                assert emission_refusal(graph, kernel.computed, kernel.outputs) is None
    assert refusals(plans["cost"]) and refusals(plans["stitch"])
    device = get_device("h100")
    codes = [emit_code(graph, plans["cost"], kernel, device) for kernel in plans["cost"].kernels]
    emulate(graph, codes)
    for code in codes:
        assert code.error is None and code.not_checked is None, code.kernel.name
        assert not code.mismatches, (code.kernel.name, code.mismatches[:1])


def test_a_plan_changes_only_where_the_budget_refuses_a_kernel(monkeypatch):
    """The budget leaves every plan of tests/data as it was (no kernel of theirs comes near
    it), and changes the scan's, saying where."""
    def plans(path, budget):
        monkeypatch.setattr(emission, "MAX_KERNEL_STATEMENTS", budget)
        graph = load_graph(str(path))      # a graph of its own: nothing kept from the other
        found = explore(graph, "h100", OUR_STRATEGIES)
        return {name: ([(k.kind, k.nodes, k.recomputed, k.outputs) for k in plan.kernels],
                       [d.to_dict() for d in plan.decisions], refusals(plan))
                for name, plan in found.items()}

    for path in [*MODULES, SCAN / "selective_scan.mlir"]:
        budgeted, unbounded = plans(path, MAX_KERNEL_STATEMENTS), plans(path, 10 ** 12)
        for strategy, (kernels, decisions, refused) in budgeted.items():
            if refused:
                assert kernels != unbounded[strategy][0]
            else:
                assert (kernels, decisions) == unbounded[strategy][:2], (path.name, strategy)
        assert path.parent != SCAN or budgeted["cost"][2]
