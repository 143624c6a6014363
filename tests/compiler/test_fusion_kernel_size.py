"""A generated kernel computes at most MAX_KERNEL_NODES nodes, whatever the strategy (issue 18:
one fused kernel of a 100,000-op chain never finished compiling): what a strategy would fuse
past the cap is cut into kernels within it, which still compute what the graph computes."""

import math

import pytest

from compiler.fusion.explore import OUR_STRATEGIES, explore
from compiler.importers import import_bytes
from compiler.kernels.grouping import FUSIBLE, node_role
from compiler.kernels.plan import MAX_KERNEL_NODES, KernelSpec, PlanError, build_plan, check_plan
from compiler.stages.codegen import emulate, generate
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

PAST_THE_CAP = MAX_KERNEL_NODES * 5 // 2


def module(lines: list[str], root: str, shape: str = "f32[256]") -> str:
    return "\n".join(["HloModule m", "ENTRY main {", *lines,
                      f"  ROOT out = {shape} negate({root})", "}"])


def chain(operands: str, length: int) -> str:
    """`length` elementwise ops in a chain from parameter p0; `operands` writes one op of it
    from the value before it."""
    lines, previous = ["  p0 = f32[256] parameter(0)"], "p0"
    for i in range(length):
        lines.append(f"  n{i} = f32[256] {operands.format(previous)}")
        previous = f"n{i}"
    return module(lines, previous)


def add_chain(length: int = PAST_THE_CAP) -> str:
    """Issue 18's chain: each op adds the parameter to the previous value."""
    return chain("add({}, p0)", length)


def negation_chain(length: int = PAST_THE_CAP) -> str:
    """Cheap ops computed from a parameter alone: the stitch strategy recomputes such nodes in
    every kernel that reads them instead of owning them."""
    return chain("negate({})", length)


def reshape_chain(length: int = PAST_THE_CAP) -> str:
    """Views: every strategy recomputes them in their readers, the unfused one too."""
    lines, previous = ["  p0 = f32[16,16] parameter(0)"], "p0"
    for i in range(length):
        lines.append(f"  r{i} = {'f32[256]' if i % 2 == 0 else 'f32[16,16]'} "
                     f"reshape({previous})")
        previous = f"r{i}"
    return module(lines, previous, "f32[256]" if length % 2 else "f32[16,16]")


def concatenate_of_broadcasts(count: int = MAX_KERNEL_NODES + 100) -> str:
    """One op reading more broadcast constants than a kernel may recompute."""
    lines = ["  c = f32[] constant(2)"]
    lines += [f"  b{i} = f32[2] broadcast(c), dimensions={{}}" for i in range(count)]
    pieces = ", ".join(f"b{i}" for i in range(count))
    lines += [f"  joined = f32[{2 * count}] concatenate({pieces}), dimensions={{0}}",
              f"  p0 = f32[{2 * count}] parameter(0)",
              f"  sum = f32[{2 * count}] add(joined, p0)"]
    return module(lines, "sum", f"f32[{2 * count}]")


def independent_chains(count: int = 24, length: int = 40) -> str:
    """Chains that share nothing but their consumer: horizontal fusion's candidates."""
    lines, ends = [], []
    for j in range(count):
        lines.append(f"  p{j} = f32[64] parameter({j})")
        previous = f"p{j}"
        for i in range(length):
            lines.append(f"  c{j}_{i} = f32[64] multiply({previous}, p{j})")
            previous = f"c{j}_{i}"
        ends.append(previous)
    total = ends[0]
    for j, end in enumerate(ends[1:]):
        lines.append(f"  s{j} = f32[64] add({total}, {end})")
        total = f"s{j}"
    return module(lines, total, "f32[64]")


def graph_of(text: str):
    (graph,) = import_bytes(text.encode(), "module.hlo")
    return graph


GRAPHS = {"add-chain": add_chain, "negation-chain": negation_chain,
          "reshape-chain": reshape_chain, "concatenate": concatenate_of_broadcasts,
          "independent-chains": independent_chains}


@pytest.mark.parametrize("name", GRAPHS)
def test_every_strategy_keeps_its_kernels_within_the_cap_and_computes_the_graph(
        name, plan_checker):
    graph = graph_of(GRAPHS[name]())
    for plan in explore(graph, "h100", OUR_STRATEGIES).values():
        plan_checker(graph, plan)  # check_plan holds the cap; the interpreter the values
        assert max(len(kernel.computed) for kernel in plan.kernels) <= MAX_KERNEL_NODES


def test_a_chain_past_the_cap_is_cut_into_as_few_kernels_as_the_cap_allows():
    graph = graph_of(add_chain())
    fusible = sum(1 for node in graph if node_role(node) == FUSIBLE)
    plans = explore(graph, "h100", OUR_STRATEGIES)
    for name in ("xla", "stitch", "cost"):
        assert len(plans[name].kernels) == math.ceil(fusible / MAX_KERNEL_NODES), name
        refusals = [d for d in plans[name].decisions
                    if d.action == "refuse" and f"> {MAX_KERNEL_NODES} in one kernel" in d.reason]
        assert refusals, f"{name} does not say why it cut the chain"


def narrowing_chain(before: int, after: int) -> str:
    """A chain through one value of half the bytes (an f16 between two converts): the
    cheapest place to cut it."""
    lines, previous = ["  p0 = f32[4096] parameter(0)"], "p0"
    for i in range(before):
        lines.append(f"  a{i} = f32[4096] add({previous}, p0)")
        previous = f"a{i}"
    lines += [f"  narrow = f16[4096] convert({previous})", "  wide = f32[4096] convert(narrow)"]
    previous = "wide"
    for i in range(after):
        lines.append(f"  b{i} = f32[4096] multiply({previous}, p0)")
        previous = f"b{i}"
    return module(lines, previous, "f32[4096]")


def test_the_cost_strategy_cuts_a_chain_where_the_fewest_bytes_cross(plan_checker):
    # Two kernels either way, but a cut through `narrow` writes and reads 2 bytes an element
    # instead of 4. xla and stitch fill one kernel from one end and cut wherever it
    # is full.
    graph = graph_of(narrowing_chain(MAX_KERNEL_NODES * 3 // 4, MAX_KERNEL_NODES * 4 // 5))
    plans = explore(graph, "h100", ["xla", "stitch", "cost"])
    cost = plans["cost"]
    plan_checker(graph, cost)
    assert len(cost.kernels) == 2
    assert cost.kernels[0].outputs == ("narrow",)
    assert cost.dram_bytes < min(plans["xla"].dram_bytes, plans["stitch"].dram_bytes)
    assert any(d.subject == "re-cut chains" and d.action == "fuse" for d in cost.decisions)


def test_a_kernel_over_the_cap_breaks_the_plans_invariants():
    graph = graph_of(add_chain(MAX_KERNEL_NODES))
    nodes = [node.name for node in graph if node_role(node) == FUSIBLE]
    plan = build_plan(graph, [KernelSpec(nodes, "loop", dominant=nodes[-1])], "handmade",
                      SolModel(graph, get_device("h100")))
    with pytest.raises(PlanError, match=f"computes {MAX_KERNEL_NODES + 1} ops > "
                                        f"{MAX_KERNEL_NODES} in one kernel"):
        check_plan(graph, plan)


def test_the_kernels_of_a_cut_chain_match_the_interpreter_on_the_emulator():
    graph = graph_of(add_chain(MAX_KERNEL_NODES + 100))
    plan = explore(graph, "h100", ["xla", "stitch", "cost"])["cost"]
    codes = generate(graph, plan, get_device("h100"))
    emulate(graph, codes)
    for code in codes:
        assert code.not_checked is None and not code.mismatches, code.kernel.name
        assert code.max_abs_error is not None
