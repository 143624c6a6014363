"""XLA's optimised modules (what `compiled.as_text()` and XLA_FLAGS=--xla_dump_to write) import:
their source-location tables are read past, their fusions inlined with each node remembering
the fusion XLA put it in, and the graph computes what JAX computes.

The modules are made here and now by JAX on the CPU (XLA:CPU's optimised HLO), from the
functions of the StableHLO import's tests.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from compiler.importers import import_bytes
from compiler.ir.interpreter import evaluate
from tests.compiler.test_stablehlo_import import FUNCTIONS, TOLERANCE, _arguments

jax = pytest.importorskip("jax")

NAMES = ["softmax_of_matmul", "layer_norm", "attention", "scan_argmax_and_cond", "small_cnn"]


@pytest.mark.parametrize("name", NAMES)
def test_an_optimised_module_imports_with_xlas_fusions_and_computes_what_jax_computes(name):
    function, specs = FUNCTIONS[name]
    arguments = _arguments(specs)
    text = jax.jit(function).lower(*arguments).compile().as_text()
    assert "\nStackFrames\n" in text and "is_scheduled=true" in text  # what the dump holds
    graph = import_bytes(text.encode(), f"{name}.opt.hlo")[0]

    # Every fusion of the entry computation is remembered by the nodes XLA put in it.
    fusions = {line.split("=")[0].split()[-1].lstrip("%")
               for line in text[text.index("\nENTRY"):].splitlines()
               if " fusion(" in line}
    assert fusions
    members = collections.Counter(node.fused_in for node in graph.nodes.values()
                                  if node.fused_in)
    assert fusions <= set(members)

    expected = function(*arguments)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    actual = evaluate(graph, arguments)
    actual = list(actual) if isinstance(actual, (list, tuple)) else [actual]
    for ours, theirs in zip(actual, expected):
        theirs = np.asarray(theirs)
        scale = max(1.0, float(np.max(np.abs(theirs)))) if theirs.size else 1.0
        assert float(np.max(np.abs(ours - theirs), initial=0)) <= \
            TOLERANCE[theirs.dtype] * scale
