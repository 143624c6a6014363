"""Expansions of library functions emitted as one call (compiler/ir/idioms.py).

JAX's f32 erfc (the exact GELU's) is 60-odd elementwise ops in the HLO it emits
(tests/data/hlo/bias_gelu_erf.hlo, from tests/data/gen_hlo.py). A kernel that computes the
whole expansion calls CUDA's erfcf instead; every plan of it runs on the CPU emulator within
the checks' f32 tolerance of the reference interpreter, which evaluates the expansion op by op,
and the cost model prices the call, not the expansion. Cones that are not erfc, or that a
kernel does not compute whole, keep their ops.
"""

from __future__ import annotations

import re
from pathlib import Path

from compiler.codegen.emit import emit_kernel
from compiler.codegen.schedules import choose_plan, enumerate_plans, kernel_workload
from compiler.codegen.workload import OP_MIX
from compiler.importers.hlo_text import import_hlo
from compiler.ir.idioms import function_idioms
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel
from test_codegen import check_all_plans, one_kernel

BIAS_GELU = (Path(__file__).resolve().parents[1] / "data" / "hlo" / "bias_gelu_erf.hlo")


def _text() -> str:
    return BIAS_GELU.read_text()


def _split(graph, idiom):
    """The module as two kernels, the root select and the product in the second, so that it
    reads the select's operands from memory: the expansion as it is."""
    whole = one_kernel(graph, "loop", "mul.9").computed
    first = [n for n in whole if n not in (idiom.root, "mul.9")]
    return build_plan(graph, [KernelSpec(nodes=first, kind="loop", dominant=idiom.argument),
                              KernelSpec(nodes=[idiom.root, "mul.9"], kind="loop",
                                         dominant="mul.9")],
                      "test", SolModel(graph, get_device("h200")))


def test_the_erfc_expansion_is_recognised_with_its_argument():
    graph = import_hlo(_text(), "bias_gelu_erf.hlo")
    (idiom,) = function_idioms(graph).values()
    argument = graph.nodes[idiom.argument]
    # erfc(-(x + b) / sqrt(2)): the argument is the scaled negation, the root a select.
    assert idiom.function == "erfc" and argument.op == "multiply"
    assert graph.nodes[argument.operands[0]].op == "negate"
    assert graph.nodes[idiom.root].op == "select" and len(idiom.inner) > 50


def test_every_plan_calls_erfcf_and_matches_the_interpreter():
    graph, kernel, plans, emitted = check_all_plans(_text(), "loop", "mul.9", {"elementwise"})
    for e in emitted:
        assert re.search(r"= erfcf\(v\d+_multiply\);", e.source), e.source
        assert "0.0232682" not in e.source and "expf" not in e.source


def test_the_model_prices_the_call_not_the_expansion():
    """The FP32 instructions per element drop by the expansion's count less erfcf's: the
    expansion's multiplies, adds and subtracts (one each), two divides and an exp by OP_MIX,
    against OP_MIX's erfc (nvcc's PTX of erfcf)."""
    graph = import_hlo(_text(), "bias_gelu_erf.hlo")
    (idiom,) = function_idioms(graph).values()
    kernel = one_kernel(graph, "loop", "mul.9")
    plan = choose_plan(enumerate_plans(graph, kernel))
    device = get_device("h200")
    called = kernel_workload(graph, kernel, plan, device)
    expanded = sum(kernel_workload(graph, k, choose_plan(enumerate_plans(graph, k)),
                                   device).instructions.get("fma", 0)
                   for k in _split(graph, idiom).kernels)
    elements = graph.nodes["mul.9"].array_shape.size
    inner = [graph.nodes[n] for n in idiom.inner]
    expansion_fma = sum(OP_MIX[n.op].get("fma", 0) for n in inner
                        if n.op in ("add", "subtract", "multiply", "divide", "exponential"))
    saved = (expanded - called.instructions["fma"]) / elements
    assert saved >= expansion_fma - OP_MIX["erfc"]["fma"]


def test_a_cone_that_is_not_erfc_keeps_its_ops():
    """One coefficient of the |x| < 1 polynomial changed: a different function."""
    text = _text().replace("constant(1.12837911)", "constant(1.2)")
    graph = import_hlo(text, "changed.hlo")
    assert function_idioms(graph) == {}
    kernel = one_kernel(graph, "loop", "mul.9")
    source = emit_kernel(graph, kernel, choose_plan(enumerate_plans(graph, kernel)), "k").source
    assert "erfcf" not in source and "expf" in source


def test_an_inner_value_read_elsewhere_keeps_the_expansion():
    text = _text().replace("ROOT mul.9 = f32[4,8,128]{2,1,0} multiply(mul.7, erfc.179)",
                           "mul.9 = f32[4,8,128]{2,1,0} multiply(mul.7, erfc.179)\n"
                           "  ROOT out = (f32[4,8,128]{2,1,0}, f32[4,8,128]{2,1,0}) "
                           "tuple(mul.9, erfc.122)")
    assert text != _text()
    graph = import_hlo(text, "shared.hlo")
    assert function_idioms(graph) == {}


def test_a_kernel_that_reads_inner_values_from_memory_emits_the_ops():
    graph = import_hlo(_text(), "bias_gelu_erf.hlo")
    (idiom,) = function_idioms(graph).values()
    last = _split(graph, idiom).kernels[-1]
    source = emit_kernel(graph, last, choose_plan(enumerate_plans(graph, last)), "k").source
    assert "erfcf" not in source and " ? " in source
