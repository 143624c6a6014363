"""Hostile nesting is refused with the limit's name, and what stays within the limits compiles:
no walk of a graph, a shape or a call chain may hit Python's recursion limit (issue 18)."""

import pytest

from compiler.codegen.stage import generate
from compiler.cost.devices import get_device
from compiler.errors import LimitError
from compiler.fusion.explore import OUR_STRATEGIES, explore
from compiler.fusion.plan import check_plan
from compiler.importers import import_bytes
from compiler.limits import Limits

LIMITS = Limits()


def nested_tuple(depth: int) -> bytes:
    shape = "f32[2]"
    for _ in range(depth):
        shape = f"({shape})"
    return (f"HloModule t\nENTRY main {{\n  p0 = {shape} parameter(0)\n"
            f"  ROOT r = {shape} copy(p0)\n}}\n").encode()


def call_chain(depth: int) -> bytes:
    lines = ["HloModule calls", "c0 {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] negate(a)\n}"]
    for i in range(1, depth):
        lines.append(f"c{i} {{\n  a = f32[4] parameter(0)\n"
                     f"  ROOT b = f32[4] call(a), to_apply=c{i - 1}\n}}")
    lines.append(f"ENTRY main {{\n  p = f32[4] parameter(0)\n"
                 f"  ROOT r = f32[4] call(p), to_apply=c{depth - 1}\n}}")
    return "\n".join(lines).encode()


def elementwise_chain(length: int) -> bytes:
    lines = ["HloModule chain", "ENTRY main {", "  p0 = f32[256] parameter(0)"]
    previous = "p0"
    for i in range(length):
        lines.append(f"  n{i} = f32[256] add({previous}, p0)")
        previous = f"n{i}"
    lines += [f"  ROOT out = f32[256] negate({previous})", "}"]
    return "\n".join(lines).encode()


def test_tuples_nested_past_the_limit_are_refused_with_its_name():
    with pytest.raises(LimitError, match="nested more than 64 levels.*MAX_NESTING"):
        import_bytes(nested_tuple(LIMITS.max_nesting + 1), "deep.hlo")
    with pytest.raises(LimitError, match="MAX_NESTING"):
        import_bytes(nested_tuple(3000), "deeper.hlo")


def test_call_chains_past_the_limit_are_refused_with_its_name():
    with pytest.raises(LimitError, match="nested more than 256 deep.*MAX_CALL_DEPTH"):
        import_bytes(call_chain(LIMITS.max_call_depth + 5), "calls.hlo")


@pytest.mark.parametrize("data", [nested_tuple(LIMITS.max_nesting), call_chain(250),
                                  elementwise_chain(2000)],
                         ids=["tuple-64-deep", "calls-250-deep", "chain-2000"])
def test_inputs_within_the_limits_explore_and_generate(data):
    (graph,) = import_bytes(data, "module.hlo")
    plans = explore(graph, "h100", OUR_STRATEGIES)
    for plan in plans.values():
        check_plan(graph, plan)
    codes = generate(graph, plans["cost"], get_device("h100"))
    assert all(code.error is None for code in codes)


def test_a_chain_past_the_recursive_emitters_depth_still_computes_the_graph():
    """The elemental emitter computes a deep elementwise chain without recursion
    (codegen/elemental.py, DEEP_CHAIN); the kernel matches the interpreter on the emulator."""
    from compiler.codegen.elemental import DEEP_CHAIN
    from compiler.codegen.stage import emulate

    (graph,) = import_bytes(elementwise_chain(DEEP_CHAIN + 150), "chain.hlo")
    plan = explore(graph, "h100", ["xla"])["xla"]
    assert len(plan.kernels) == 1
    codes = generate(graph, plan, get_device("h100"))
    emulate(graph, codes)
    (code,) = codes
    assert code.not_checked is None and not code.mismatches
    assert code.max_abs_error is not None
