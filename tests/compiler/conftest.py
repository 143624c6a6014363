"""Shared for compiler tests: a run report, random inputs and the fusion-plan checker.

Tests append lines to the `run_report` fixture (rejected corpus files and why, kernel counts
per strategy); pytest prints them in a section of its closing summary, so every CI log shows
them without -s.
"""

import pytest

_REPORT: list[str] = []


@pytest.fixture(scope="session")
def run_report() -> list[str]:
    return _REPORT


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("Fusion Explorer report: rejected inputs, kernel counts")
        for line in _REPORT:
            terminalreporter.write_line(line)


# -- fusion plans ---------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from compiler.kernels.inputs import random_inputs  # noqa: E402


def assert_plan_computes_the_graph(graph, plan, inputs) -> None:
    """Invariants hold (and every generated kernel of a strategy's plan fits the code budget,
    which check_plan, below the code generator, cannot ask), and running the plan kernel by
    kernel gives the graph's own results."""
    from compiler.codegen.emission import emission_refusal
    from compiler.kernels.plan import UNBOUNDED_STRATEGIES, check_plan, execute_plan
    from compiler.ir.interpreter import evaluate

    check_plan(graph, plan)
    if plan.strategy not in UNBOUNDED_STRATEGIES:
        for kernel in plan.kernels:
            if kernel.kind != "library":
                refusal = emission_refusal(graph, kernel.computed, kernel.outputs)
                assert refusal is None, f"{plan.strategy} {kernel.name}: {refusal}"
    expected = evaluate(graph, inputs)
    actual = execute_plan(graph, plan, inputs)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        if e is None:
            continue
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e),
                                      err_msg=f"{plan.strategy}: output {i} differs")


@pytest.fixture
def plan_checker():
    """`plan_checker(graph, plan, inputs=None)`: the invariants and kernel-by-kernel execution."""
    def check(graph, plan, inputs=None):
        assert_plan_computes_the_graph(graph, plan,
                                       random_inputs(graph) if inputs is None else inputs)
    return check
