"""Task splitting: few long rows, or few columns over many rows, cut across blocks.

Hand-written modules: row reductions over 2 rows of 20000 and 3 of 9999 (tickets), bf16 rows,
softmax over 2 rows of 8200 (two phases behind grid barriers), a normalisation whose wide
output reads its row sum (one phase, a grid barrier), column reductions of [12000, 5],
[2, 2500, 5] in bf16 and [4099, 3] with a sum, a max and outputs of both shapes. Every
candidate plan, all split plans included, is emulated and compared with the reference
interpreter; the chosen plan is a split one where it pays off and not for many rows, short
rows or small kernels; the ticket counters are back at 0 after a launch, so launching a
kernel twice on the same scratch gives the right answer twice; sources build for sm_80 and
sm_90. (Column sums stay at a few thousand rows: the interpreter sums a column sequentially
in f32, so its own error nears the f32 tolerance of 1e-5 at 20000 rows.)
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, compare, from_memory, to_memory
from compiler.codegen.emit import SCRATCH, emit_kernel
from compiler.codegen.plan import COOPERATIVE_GRIDS, ROW_SCHEDULES, SPLIT_SCHEDULES
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.codegen.schedules.split import split_scratch
from compiler.importers.hlo_text import import_hlo
from compiler.ir.dtypes import dtype as dtype_named
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from test_codegen import (_column_reduce, _emulator, _nvcc, _row_reduce, check_all_plans,
                          one_kernel)

SOFTMAX = """
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  layer3.x = f32[2,8200] parameter(0)
  layer3.ninf = f32[] constant(-inf)
  layer3.mx = f32[2] reduce(layer3.x, layer3.ninf), dimensions={1}, to_apply=max
  layer3.mb = f32[2,8200] broadcast(layer3.mx), dimensions={0}
  layer3.d = f32[2,8200] subtract(layer3.x, layer3.mb)
  layer3.e = f32[2,8200] exponential(layer3.d)
  layer3.zero = f32[] constant(0)
  layer3.s = f32[2] reduce(layer3.e, layer3.zero), dimensions={1}, to_apply=add
  layer3.sb = f32[2,8200] broadcast(layer3.s), dimensions={0}
  ROOT layer3.out = f32[2,8200] divide(layer3.e, layer3.sb)
}
"""

# One reduction, but the wide output reads it: every chunk needs the row's total.
NORMALISE = """
HloModule normalise
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,6000] parameter(0)
  sq = f32[3,6000] multiply(x, x)
  zero = f32[] constant(0)
  ss = f32[3] reduce(sq, zero), dimensions={1}, to_apply=add
  n = f32[] constant(6000)
  nb = f32[3] broadcast(n), dimensions={}
  mean = f32[3] divide(ss, nb)
  r = f32[3] rsqrt(mean)
  rb = f32[3,6000] broadcast(r), dimensions={0}
  y = f32[3,6000] multiply(x, rb)
  ROOT out = (f32[3,6000], f32[3]) tuple(y, mean)
}
"""


def _split_plans(plans):
    return [p for p in plans if p.schedule in SPLIT_SCHEDULES]


# -- rows -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rows, length, dtype", [
    (2, 20000, "f32"),
    (3, 9999, "f32"),     # neither a power of two
    (2, 12345, "bf16"),   # bf16 input, f32 partials
])
def test_few_long_rows_are_split_and_every_plan_matches_the_interpreter(rows, length, dtype):
    _, _, plans, emitted = check_all_plans(_row_reduce(rows, length, dtype), "input", "ss",
                                           {"row-reduce-split", "row-reduce-block"})
    split = _split_plans(plans)
    assert {p.splits for p in split} >= {2, 4, 8}
    chosen = choose_plan(plans)
    assert chosen.schedule == "row-reduce-split" and not chosen.cooperative
    assert chosen.grid_size == rows * chosen.splits > rows
    source = next(e.source for p, e in zip(plans, emitted) if p == chosen)
    assert "atomicAdd(&tickets[r], 1u)" in source and "fx_grid_sync" not in source


def test_softmax_over_few_long_rows_splits_both_phases_behind_grid_barriers():
    graph, _, plans, emitted = check_all_plans(SOFTMAX, "stitch-regional", "layer3.s",
                                               {"row-reduce-split"})
    chosen = choose_plan(plans)
    assert chosen.schedule == "row-reduce-split" and chosen.cooperative
    assert chosen.grid_size <= COOPERATIVE_GRIDS[0]  # co-resident on any GPU
    for plan, e in zip(plans, emitted):
        if plan.schedule == "row-reduce-split":
            assert e.cooperative and e.source.count("fx_grid_sync();") == 2
            assert "atomicAdd" not in e.source
            assert "layer3" not in e.source  # node names live in the line map only
            assert {"layer3.mx", "layer3.s", "layer3.out"} <= set(e.node_lines)
    # The grid-stride loops over the work items cover grids smaller than the items, too.
    assert any(p.rows * p.splits > p.grid_size for p in _split_plans(plans))


def test_a_wide_output_reading_its_row_total_splits_behind_one_grid_barrier():
    _, _, plans, emitted = check_all_plans(NORMALISE, "stitch-regional", "ss",
                                           {"row-reduce-split"})
    chosen = choose_plan(plans)
    assert chosen.schedule == "row-reduce-split" and chosen.cooperative
    source = next(e.source for p, e in zip(plans, emitted) if p == chosen)
    assert source.count("fx_grid_sync();") == 1


@pytest.mark.parametrize("rows, length", [(4096, 768), (64, 8192), (8, 1000), (3, 3000)])
def test_many_rows_or_short_rows_are_not_split(rows, length):
    graph = import_hlo(_row_reduce(rows, length), "rows.hlo")
    plans = enumerate_plans(graph, one_kernel(graph, "input", "ss"))
    assert not _split_plans(plans)
    assert choose_plan(plans).schedule in ROW_SCHEDULES


# -- columns --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, dims, dtype", [
    ((12000, 5), (0,), "f32"),
    ((2, 2500, 5), (0, 1), "bf16"),   # two reduced dims, bf16
])
def test_few_columns_over_many_rows_are_split_and_every_plan_matches(shape, dims, dtype):
    _, _, plans, emitted = check_all_plans(_column_reduce(shape, dims, dtype), "input", "ss",
                                           {"column-reduce-split", "column-reduce"})
    chosen = choose_plan(plans)
    assert chosen.schedule == "column-reduce-split" and not chosen.cooperative
    assert chosen.splits >= 8 and chosen.grid_size == chosen.splits  # one tile of columns
    source = next(e.source for p, e in zip(plans, emitted) if p == chosen)
    assert source.count("for (int j = chunk_start + g;") == 1  # sum and max share the loop
    assert "atomicAdd(&tickets[tile_index], 1u)" in source


def test_a_small_column_reduction_has_split_candidates_but_stays_unsplit():
    """[4099, 3]: 12297 elements, launch-bound whatever the schedule."""
    _, _, plans, _ = check_all_plans(_column_reduce((4099, 3), (0,)), "input", "ss",
                                     {"column-reduce-split", "column-reduce"})
    assert choose_plan(plans).schedule == "column-reduce"


def test_many_columns_are_not_split():
    graph = import_hlo(_column_reduce((8192, 2048), (0,)), "columns.hlo")
    plans = enumerate_plans(graph, one_kernel(graph, "input", "ss"))
    assert not _split_plans(plans) and choose_plan(plans).schedule == "column-reduce"


# -- tickets: the counters are reset for the next launch -----------------------------------


def _launch(graph, module, emitted, values, scratch: np.ndarray) -> dict:
    """Launch with fresh (zeroed) outputs and the given scratch buffer; {output: value}."""
    args, outputs = [], {}
    for param in emitted.params:
        if param.name == SCRATCH:
            args.append(scratch)
            continue
        shape = graph.nodes[param.node].array_shape
        numpy_type = dtype_named(param.dtype).numpy
        if param.role == "input":
            args.append(to_memory(np.asarray(values[param.node]).astype(numpy_type),
                                  shape.minor_to_major))
        else:
            outputs[param.node] = np.zeros(shape.size, numpy_type)
            args.append(outputs[param.node])
    module.launch(emitted.name, emitted.grid, emitted.block, emitted.shared_bytes, args,
                  cooperative=emitted.cooperative)
    return {name: from_memory(flat, graph.nodes[name].array_shape.dims,
                              graph.nodes[name].array_shape.minor_to_major)
            for name, flat in outputs.items()}


@pytest.mark.parametrize("text", [_column_reduce((12000, 5), (0,)), _row_reduce(3, 9999)],
                         ids=["columns", "rows"])
def test_a_ticketed_kernel_launched_twice_on_the_same_scratch_is_right_twice(text):
    compile_for_emulation = _emulator()
    graph = import_hlo(text, "t.hlo")
    kernel = one_kernel(graph, "input", "ss")
    plan = choose_plan(enumerate_plans(graph, kernel))
    assert plan.schedule in SPLIT_SCHEDULES and not plan.cooperative
    emitted = emit_kernel(graph, kernel, plan, "split")
    assert emitted.params[-1].name == SCRATCH
    assert emitted.params[-1].dims == (plan.scratch_bytes,)
    module = compile_for_emulation(emitted.source, [emitted.name], [str(PRELUDE_DIR)])
    scratch = np.zeros(plan.scratch_bytes, np.uint8)  # zeroed once, as the launchers do
    reductions = 2
    slots = plan.rows if plan.rows else -(-plan.columns // plan.column_tile)
    partial_slots = plan.rows if plan.rows else plan.columns
    _, ticket_offset, _ = split_scratch(reductions, partial_slots, plan.splits, slots)
    tickets = scratch[ticket_offset:ticket_offset + 4 * slots].view(np.uint32)
    for launch in range(2):
        values = evaluate_all(graph, random_inputs(graph, seed=launch))
        got = _launch(graph, module, emitted, values, scratch)
        assert not compare(graph, got, values), f"launch {launch + 1}"
        assert not tickets.any(), f"counters left at {tickets} after launch {launch + 1}"


# -- nvcc -----------------------------------------------------------------------------------


def test_split_kernels_build_with_nvcc_for_sm80_and_sm90():
    build_kernels = _nvcc()
    sources = {}
    for i, (text, kind, dominant) in enumerate([
            (_row_reduce(2, 20000), "input", "ss"), (_row_reduce(2, 12345, "bf16"), "input", "ss"),
            (SOFTMAX, "stitch-regional", "layer3.s"), (NORMALISE, "stitch-regional", "ss"),
            (_column_reduce((12000, 5), (0,)), "input", "ss"),
            (_column_reduce((2, 2500, 5), (0, 1), "bf16"), "input", "ss")]):
        graph = import_hlo(text, "t.hlo")
        kernel = one_kernel(graph, kind, dominant)
        plans = _split_plans(enumerate_plans(graph, kernel))
        for j, plan in enumerate([plans[0], choose_plan(plans), plans[-1]]):
            emitted = emit_kernel(graph, kernel, plan, f"k{i}_{j}")
            sources[emitted.name] = emitted.source
    for arch in ("sm_80", "sm_90"):
        results = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        failed = {name: r.error for name, r in results.items() if not r.ok}
        assert not failed, failed
