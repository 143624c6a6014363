"""The unfused CuPy baseline, run with NumPy on the CPU against the reference interpreter.

Every test module either runs eagerly and gives the interpreter's outputs (within the
tolerances the kernel checks use: the dtype's, plus what the order of accumulation may change
downstream of reductions and dots, so the verdict does not depend on the order NumPy's BLAS
adds in) or is refused with a reason naming the node; small graphs
written by hand pin down the ops whose attributes are easy to get wrong (broadcast dimensions,
dot dimension numbers, reductions over several dimensions, gather and scatter windows).
tests/gpu/test_eager_baseline_gpu.py runs the same programs with CuPy and times them.
"""

from __future__ import annotations

import gzip
import re
import time
from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import compare
from compiler.errors import InputError
from compiler.importers.hlo_text import import_hlo
from compiler.ir.graph import Graph
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from compiler.runtime.eager import (EagerUnsupported, eager_program, eager_supported, run_eager,
                                    time_eager)
from compiler.runtime.gpu import GpuUnavailable, gpu_available

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "hlo"
TRANSFORMER = ROOT / "benchmarks" / "data" / "transformer_12l.hlo.gz"
MODULES = sorted(path.stem for path in DATA.glob("*.hlo"))
CORE = ["softmax", "layer_norm_fwd", "layer_norm_bwd", "attention_block", "adam",
        "cross_entropy", "bias_gelu_erf", "bias_gelu_tanh"]


def load(module: str) -> Graph:
    return import_hlo((DATA / f"{module}.hlo").read_text(), f"{module}.hlo")


def hlo(text: str) -> Graph:
    return import_hlo(text, "hand_built.hlo")


class SumsInAnotherOrder:
    """NumPy, except that sums and matrix products add their terms one at a time, the last
    first: a correct array library whose BLAS and reductions add in another order."""

    __name__ = "numpy"

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def sum(x, axis=None, dtype=None):
        x = np.asarray(x, dtype=dtype)
        axes = tuple(range(x.ndim)) if axis is None else tuple(np.atleast_1d(axis))
        terms = np.moveaxis(x, axes, tuple(range(len(axes))))
        terms = terms.reshape((-1,) + terms.shape[len(axes):])
        total = terms[-1].copy()
        for term in terms[-2::-1]:
            total = total + term
        return np.asarray(total)

    @staticmethod
    def matmul(a, b):
        total = a[..., :, -1:] * b[..., -1:, :]
        for k in range(a.shape[-1] - 2, -1, -1):
            total = total + a[..., :, k:k + 1] * b[..., k:k + 1, :]
        return total


def assert_eager_matches_the_interpreter(graph: Graph, inputs: list | None = None,
                                         xp=np) -> None:
    """Run eagerly with `xp`; every output has the interpreter's shape, dtype and values."""
    inputs = random_inputs(graph) if inputs is None else inputs
    outputs = run_eager(eager_program(graph), inputs, xp)
    values = evaluate_all(graph, inputs)
    names = graph.output_names()
    assert len(outputs) == len(names)
    for name, output in zip(names, outputs):
        expected = np.asarray(values[name])
        assert isinstance(output, np.ndarray)
        assert (output.shape, output.dtype) == (expected.shape, expected.dtype), name
    mismatches = compare(graph, dict(zip(names, outputs)), values)
    assert not mismatches, "\n".join(str(mismatch) for mismatch in mismatches[:3])


def assert_names_a_node(graph: Graph, reason: str) -> None:
    match = re.match(r"no eager equivalent for node '([^']+)' \(([\w-]+)\)", reason)
    assert match, reason
    node = graph.nodes[match.group(1)]
    assert node.op == match.group(2)


# -- the repository's test modules ------------------------------------------------------------


@pytest.mark.parametrize("module", MODULES)
def test_a_test_module_runs_eagerly_as_the_interpreter_does_or_says_which_node_it_cannot_run(
        module, run_report):
    graph = load(module)
    supported, reason = eager_supported(graph)
    if not supported:
        assert_names_a_node(graph, reason)
        run_report.append(f"eager baseline: {module}: unsupported: {reason}")
        return
    assert reason == ""
    assert_eager_matches_the_interpreter(graph)
    steps = len(eager_program(graph).steps)
    run_report.append(f"eager baseline: {module}: {steps} steps, matches the interpreter")


@pytest.mark.parametrize("module", [m for m in MODULES if eager_supported(load(m))[0]])
def test_the_verdict_holds_when_the_library_sums_in_another_order(module):
    """What made attention_block's add.45 fail on one machine and pass on another: its BLAS
    added the dot's products in another order. A fixed f32 rtol fails this one too."""
    assert_eager_matches_the_interpreter(load(module), xp=SumsInAnotherOrder())


@pytest.mark.parametrize("module", CORE)
def test_the_core_modules_are_supported(module):
    assert eager_supported(load(module)) == (True, "")


def test_the_modules_stored_inputs_give_the_interpreters_outputs_too():
    for module in ("softmax", "cross_entropy_grad", "lstm_cell"):
        graph = load(module)
        archive = np.load(DATA / f"{module}.inputs.npz")
        assert_eager_matches_the_interpreter(
            graph, [archive[f"arg{i}"] for i in range(len(graph.parameters))])


def test_the_twelve_layer_transformer_is_refused_quickly_because_cupy_has_no_bf16():
    graph = import_hlo(gzip.decompress(TRANSFORMER.read_bytes()).decode(), TRANSFORMER.name)
    started = time.perf_counter()
    supported, reason = eager_supported(graph)
    assert time.perf_counter() - started < 5
    assert not supported
    assert_names_a_node(graph, reason)
    assert reason.endswith("CuPy has no bf16 arrays")


# -- shapes and dimension numbers, by hand ----------------------------------------------------


def test_broadcast_places_operand_dimensions_where_its_dimensions_attribute_says():
    graph = hlo("""
        HloModule m
        ENTRY e {
          x = f32[3,5] parameter(0)
          ROOT b = f32[5,4,3] broadcast(x), dimensions={2,0}
        }
    """)
    assert_eager_matches_the_interpreter(graph)
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    (out,) = run_eager(eager_program(graph), [x], np)
    assert out[4, 2, 1] == x[1, 4]


def test_dot_with_batch_and_two_contracting_dimensions_in_a_different_order_per_side():
    graph = hlo("""
        HloModule m
        ENTRY e {
          a = f32[2,3,4,5] parameter(0)
          b = f32[5,2,6,4] parameter(1)
          ROOT d = f32[2,3,6] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1},
                   lhs_contracting_dims={2,3}, rhs_contracting_dims={3,0}
        }
    """)
    assert_eager_matches_the_interpreter(graph)


def test_dot_of_f16_operands_with_an_f32_result_and_of_vectors():
    graph = hlo("""
        HloModule m
        ENTRY e {
          a = f16[8,64] parameter(0)
          b = f16[64,16] parameter(1)
          wide = f32[8,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          narrow = f16[8,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          v = f32[64] parameter(2)
          inner = f32[] dot(v, v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
          ROOT t = (f32[8,16], f16[8,16], f32[]) tuple(wide, narrow, inner)
        }
    """)
    assert_eager_matches_the_interpreter(graph)


REDUCERS = """
        add_f32 {
          l = f32[] parameter(0)
          r = f32[] parameter(1)
          ROOT s = f32[] add(l, r)
        }
        max_f32 {
          l = f32[] parameter(0)
          r = f32[] parameter(1)
          ROOT m = f32[] maximum(l, r)
        }
        add_f16 {
          l = f16[] parameter(0)
          r = f16[] parameter(1)
          ROOT s = f16[] add(l, r)
        }
        multiply_f16 {
          l = f16[] parameter(0)
          r = f16[] parameter(1)
          ROOT p = f16[] multiply(l, r)
        }
        and_pred {
          l = pred[] parameter(0)
          r = pred[] parameter(1)
          ROOT a = pred[] and(l, r)
        }
"""


def test_reductions_over_several_dimensions_with_and_without_an_identity_init():
    graph = hlo(f"""
        HloModule m
        {REDUCERS}
        ENTRY e {{
          x = f32[4,5,6] parameter(0)
          floor = f32[] parameter(1)
          zero = f32[] constant(0)
          sum = f32[5] reduce(x, zero), dimensions={{0,2}}, to_apply=add_f32
          ten = f32[] constant(10)
          shifted = f32[4] reduce(x, ten), dimensions={{1,2}}, to_apply=add_f32
          largest = f32[6] reduce(x, floor), dimensions={{0,1}}, to_apply=max_f32
          t = pred[] constant(true)
          positive = pred[4,5,6] compare(x, x), direction=GE
          all = pred[5] reduce(positive, t), dimensions={{0,2}}, to_apply=and_pred
          ROOT r = (f32[5], f32[4], f32[6], pred[5]) tuple(sum, shifted, largest, all)
        }}
    """)
    x = np.random.default_rng(1).standard_normal((4, 5, 6)).astype(np.float32)
    # The init value 1.5 is above most maxima: it must be combined in, not dropped.
    assert_eager_matches_the_interpreter(graph, [x, np.float32(1.5)])
    _, shifted, largest, _ = run_eager(eager_program(graph), [x, np.float32(1.5)], np)
    assert (largest >= 1.5).all()
    np.testing.assert_allclose(shifted, x.sum(axis=(1, 2)) + 10, rtol=1e-5)


def test_f16_sums_and_products_accumulate_in_f32_and_round_once():
    graph = hlo(f"""
        HloModule m
        {REDUCERS}
        ENTRY e {{
          x = f16[4,4096] parameter(0)
          zero = f16[] constant(0)
          sum = f16[4] reduce(x, zero), dimensions={{1}}, to_apply=add_f16
          y = f16[4,64] parameter(1)
          one = f16[] constant(1)
          product = f16[4] reduce(y, one), dimensions={{1}}, to_apply=multiply_f16
          ROOT t = (f16[4], f16[4]) tuple(sum, product)
        }}
    """)
    rng = np.random.default_rng(2)
    x = (rng.random((4, 4096)) + 1).astype(np.float16)
    # Rounding each partial product to f16 would drift several ulps from the f32 product.
    y = (rng.random((4, 64)) * 0.2 + 0.9).astype(np.float16)
    assert_eager_matches_the_interpreter(graph, [x, y])


def test_data_movement_ops_match_the_interpreter():
    graph = hlo("""
        HloModule m
        ENTRY e {
          x = f32[4,6] parameter(0)
          y = f32[4,2] parameter(1)
          zero = f32[] constant(0.5)
          padded = f32[6,10] pad(x, zero), padding=1_1x-1_0_1
          strided = f32[2,3] slice(x), slice={[1:4:2], [0:6:2]}
          joined = f32[4,8] concatenate(x, y), dimensions={1}
          flipped = f32[4,6] reverse(x), dimensions={0,1}
          turned = f32[6,4] transpose(x), dimensions={1,0}
          rows = s32[4,6] iota(), iota_dimension=0
          columns = s32[4,6] iota(), iota_dimension=1
          upper = pred[4,6] compare(rows, columns), direction=LT
          chosen = f32[4,6] select(upper, x, flipped)
          low = f32[] constant(-0.5)
          high = f32[] constant(0.5)
          clamped = f32[4,6] clamp(low, x, high)
          whole = s32[4,6] convert(x)
          logistic = f32[4,6] logistic(x)
          erf = f32[4,6] erf(x)
          rsqrt = f32[4,6] rsqrt(x)
          ROOT t = (f32[6,10], f32[2,3], f32[4,8], f32[6,4], f32[4,6], f32[4,6], s32[4,6],
                    f32[4,6], f32[4,6], f32[4,6]) tuple(padded, strided, joined, turned,
                    chosen, clamped, whole, logistic, erf, rsqrt)
        }
    """)
    assert_eager_matches_the_interpreter(graph)


# -- gather and scatter -----------------------------------------------------------------------


def test_an_embedding_gather_clamps_out_of_range_rows_as_xla_does():
    graph = hlo("""
        HloModule m
        ENTRY e {
          table = f32[10,8] parameter(0)
          ids = s32[3,5] parameter(1)
          ROOT rows = f32[3,5,8] gather(table, ids), offset_dims={2},
                      collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2,
                      slice_sizes={1,8}
        }
    """)
    table = np.random.default_rng(3).standard_normal((10, 8)).astype(np.float32)
    ids = np.array([[0, 9, 12, -3, 4], [1, 2, 3, 4, 5], [9, 9, 0, 0, 7]], np.int32)
    assert_eager_matches_the_interpreter(graph, [table, ids])


def test_a_scatter_add_sums_repeated_targets_and_drops_windows_outside_the_operand():
    graph = hlo("""
        HloModule m
        add_f32 {
          l = f32[] parameter(0)
          r = f32[] parameter(1)
          ROOT s = f32[] add(l, r)
        }
        ENTRY e {
          table = f32[6,4] parameter(0)
          ids = s32[5,1] parameter(1)
          updates = f32[5,4] parameter(2)
          ROOT out = f32[6,4] scatter(table, ids, updates), update_window_dims={1},
                     inserted_window_dims={0}, scatter_dims_to_operand_dims={0},
                     index_vector_dim=1, to_apply=add_f32
        }
    """)
    rng = np.random.default_rng(4)
    table = rng.standard_normal((6, 4)).astype(np.float32)
    ids = np.array([[2], [2], [7], [-1], [5]], np.int32)
    updates = rng.standard_normal((5, 4)).astype(np.float32)
    assert_eager_matches_the_interpreter(graph, [table, ids, updates])


# -- what is refused, and why -----------------------------------------------------------------


def test_an_op_with_no_eager_equivalent_is_refused_with_the_node_and_the_op():
    graph = hlo("""
        HloModule m
        less {
          l = f32[] parameter(0)
          r = f32[] parameter(1)
          ROOT lt = pred[] compare(l, r), direction=LT
        }
        ENTRY e {
          x = f32[8] parameter(0)
          ROOT sort.3 = f32[8] sort(x), dimensions={0}, to_apply=less
        }
    """)
    with pytest.raises(EagerUnsupported) as raised:
        eager_program(graph)
    assert str(raised.value) == "no eager equivalent for node 'sort.3' (sort)"
    assert eager_supported(graph) == (False, str(raised.value))


def test_integer_division_and_bf16_values_are_refused_with_the_reason():
    division = hlo("""
        HloModule m
        ENTRY e {
          x = s32[8] parameter(0)
          ROOT q = s32[8] divide(x, x)
        }
    """)
    supported, reason = eager_supported(division)
    assert not supported and reason.startswith("no eager equivalent for node 'q' (divide): ")
    bf16 = hlo("""
        HloModule m
        ENTRY e {
          x = bf16[8] parameter(0)
          ROOT y = bf16[8] negate(x)
        }
    """)
    assert eager_supported(bf16) == (
        False, "no eager equivalent for node 'x' (parameter): CuPy has no bf16 arrays")


def test_nodes_no_output_reads_are_not_run():
    graph = hlo("""
        HloModule m
        ENTRY e {
          x = f32[8] parameter(0)
          unused = f32[8] exponential(x)
          ROOT y = f32[8] negate(x)
        }
    """)
    assert [step.node for step in eager_program(graph).steps] == ["y"]


def test_inputs_that_do_not_fit_the_parameters_are_an_input_error():
    program = eager_program(load("softmax"))
    with pytest.raises(InputError, match="expected 1 inputs"):
        run_eager(program, [], np)
    with pytest.raises(InputError, match="expected dims"):
        run_eager(program, [np.zeros((3, 3), np.float32)], np)


def test_timing_without_a_gpu_raises_gpu_unavailable_with_the_reason():
    available, reason = gpu_available()
    if available:
        pytest.skip(f"a GPU is present ({reason}); tests/gpu/ times the baseline on it")
    graph = load("softmax")
    with pytest.raises(GpuUnavailable, match=re.escape(reason)):
        time_eager(eager_program(graph), random_inputs(graph))
