"""The transpose-tiled schedule: transposes of the innermost dimension through shared memory.

Hand-written modules (2-D transposes with and without whole tiles, attention's [B,H,S,D] ->
[B,H,D,S] and [B,S,H,D] -> [B,H,D,S], an elementwise producer and consumer, bf16, non-default
layouts, a tiny one): every candidate plan is emulated and compared with the reference
interpreter, the chosen plan is the tiled one, its source stages the transposed value through
shared memory behind one barrier per tile, and it builds with nvcc for sm_80 and sm_90.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, compare
from compiler.codegen.emit import emit_kernel
from compiler.codegen.plan import TRANSPOSE_SCHEDULE
from compiler.codegen.schedules import choose_plan, enumerate_plans, kernel_workload
from compiler.codegen.schedules.transpose import transpose_tile
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from compiler.target.devices import get_device
from test_codegen import _nvcc, check_all_plans, one_kernel, run_emitted


def _transpose(shape: str, dims: str, out: str, dtype: str = "f32") -> str:
    return f"""
HloModule transpose
ENTRY main {{
  x = {dtype}[{shape}] parameter(0)
  ROOT t = {dtype}[{out}] transpose(x), dimensions={{{dims}}}
}}
"""


PRODUCER_CONSUMER = """
HloModule producer_consumer
ENTRY main {
  x = f32[70,45] parameter(0)
  y = f32[45,70] parameter(1)
  e = f32[70,45] exponential(x)
  t = f32[45,70] transpose(e), dimensions={1,0}
  ROOT m = f32[45,70] multiply(t, y)
}
"""

BF16 = """
HloModule bf16
ENTRY main {
  x = bf16[2,3,40,17] parameter(0)
  y = bf16[2,3,17,40] parameter(1)
  a = bf16[2,3,40,17] tanh(x)
  t = bf16[2,3,17,40] transpose(a), dimensions={0,1,3,2}
  ROOT s = bf16[2,3,17,40] add(t, y)
}
"""

# x is stored column-major: its dim 0 is contiguous, so copying it to a row-major buffer is a
# transpose in memory although no dims move.
LAYOUT_COPY = """
HloModule layout_copy
ENTRY main {
  x = f32[40,50]{0,1} parameter(0)
  ROOT c = f32[40,50]{1,0} copy(x)
}
"""

# Both sides column-major: the result's dim 0 is contiguous, and it is x's dim 1.
LAYOUT_TRANSPOSE = """
HloModule layout_transpose
ENTRY main {
  x = f32[33,70]{0,1} parameter(0)
  e = f32[33,70]{0,1} negate(x)
  ROOT t = f32[70,33]{0,1} transpose(e), dimensions={1,0}
}
"""

# The attention key's transpose as the ONNX exports fuse it: transposed, reshaped, scaled.
RESHAPED = """
HloModule reshaped
ENTRY main {
  k = f32[6,40,17] parameter(0)
  q = f32[2,3,17,40] parameter(1)
  t = f32[6,17,40] transpose(k), dimensions={0,2,1}
  r = f32[2,3,17,40] reshape(t)
  half = f32[] constant(0.5)
  h = f32[2,3,17,40] broadcast(half), dimensions={}
  kt = f32[2,3,17,40] multiply(r, h)
  qs = f32[2,3,17,40] multiply(q, h)
  ROOT out = (f32[2,3,17,40], f32[2,3,17,40]) tuple(kt, qs)
}
"""

# Two transposes staged behind one barrier, and an output of another size (elementwise loop).
TWO_TRANSPOSES = """
HloModule two
ENTRY main {
  x = f32[50,37] parameter(0)
  z = f32[50,37] parameter(1)
  tx = f32[37,50] transpose(x), dimensions={1,0}
  tz = f32[37,50] transpose(z), dimensions={1,0}
  s = f32[37,50] add(tx, tz)
  head = f32[5,37] slice(z), slice={[0:5], [0:37]}
  ROOT out = (f32[37,50], f32[5,37]) tuple(s, head)
}
"""

# Tiles of different element types in one kernel: 8-byte and 1-byte values.
F64_AND_PRED = """
HloModule mixed
ENTRY main {
  x = f64[40,33] parameter(0)
  p = pred[40,33] parameter(1)
  y = f64[33,40] parameter(2)
  tx = f64[33,40] transpose(x), dimensions={1,0}
  tp = pred[33,40] transpose(p), dimensions={1,0}
  ROOT s = f64[33,40] select(tp, tx, y)
}
"""

CASES = {
    "2d-whole-tiles": (_transpose("64,96", "1,0", "96,64"), "t", "x"),
    "2d-edge-tiles": (_transpose("70,45", "1,0", "45,70"), "t", "x"),
    "attention-bhsd-to-bhds": (_transpose("2,3,40,17", "0,1,3,2", "2,3,17,40"), "t", "x"),
    "bshd-to-bhds": (_transpose("2,40,3,17", "0,2,3,1", "2,3,17,40"), "t", "x"),
    "producer-consumer": (PRODUCER_CONSUMER, "m", "x"),
    "bf16": (BF16, "s", "x"),
    "layout-copy": (LAYOUT_COPY, "c", "x"),
    "layout-transpose": (LAYOUT_TRANSPOSE, "t", "x"),
    "reshaped-after-transpose": (RESHAPED, "kt", "k"),
    "two-transposes": (TWO_TRANSPOSES, "s", "x"),
    "f64-and-pred": (F64_AND_PRED, "s", "x"),
    "tiny": (_transpose("3,5", "1,0", "5,3"), "t", "x"),
}


def _phases(source: str) -> tuple[str, str]:
    """The text before and after the one barrier."""
    assert source.count("__syncthreads();") == 1, source
    before, after = source.split("__syncthreads();")
    return before, after


def _input_param(graph, emitted, node: str) -> str:
    return next(p.name for p in emitted.params if p.node == node)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_every_plan_matches_the_interpreter_and_the_chosen_one_stages_through_shared_memory(
        case):
    text, dominant, transposed_input = CASES[case]
    graph, kernel, plans, emitted = check_all_plans(text, "loop", dominant, {TRANSPOSE_SCHEDULE})
    chosen = choose_plan(plans)
    assert chosen.schedule == TRANSPOSE_SCHEDULE and chosen.tile in (8, 16, 32)
    for plan, e in zip(plans, emitted):
        if plan.schedule != TRANSPOSE_SCHEDULE:
            continue
        before, after = _phases(e.source)
        # The transposed operand is read (coalesced) before the barrier only ...
        load = f"{_input_param(graph, e, transposed_input)}["
        assert load in before and load not in after, e.source
        # ... and the value comes back from the tile after it.
        assert re.search(r"= v\d+_(transpose|copy)_tile\[tx \* \d+ \+ row\];", after), e.source
        assert "FX_SHARED_MEMORY(shared);" in e.source and "__shared__" not in e.source


def test_the_chosen_tile_covers_small_planes_and_is_32_wide_otherwise():
    expected = {"2d-whole-tiles": (32, 256), "2d-edge-tiles": (32, 256),
                "attention-bhsd-to-bhds": (32, 256), "tiny": (8, 64), "layout-copy": (32, 256)}
    for case, (edge, block) in expected.items():
        graph = import_hlo(CASES[case][0], "t.hlo")
        plan = choose_plan(enumerate_plans(graph, one_kernel(graph, "loop", CASES[case][1])))
        assert (plan.tile, plan.block_size) == (edge, block), case
        assert plan.shared_bytes == edge * (edge + 1) * 4


def test_the_tile_spans_the_operands_and_the_outputs_contiguous_dims():
    graph = import_hlo(CASES["bshd-to-bhds"][0], "t.hlo")
    tile = transpose_tile(graph, one_kernel(graph, "loop", "t"))
    # [B,S,H,D] -> [B,H,D,S]: the output is contiguous along S (its dim 3), x along D (dim 2).
    assert (tile.hero, tile.out_dim, tile.in_dim, tile.batch_dims) == ("t", 3, 2, [0, 1])
    assert tile.tiles(32) == 2 * 3 * 2 * 1
    graph = import_hlo(TWO_TRANSPOSES, "t.hlo")
    tile = transpose_tile(graph, one_kernel(graph, "loop", "s"))
    assert tile.staged == ("tx", "tz") and tile.outputs == ("s",)


@pytest.mark.parametrize("text", [
    _transpose("40,50,8", "1,0,2", "50,40,8"),  # the innermost dim stays innermost
    """
HloModule physical_no_op
ENTRY main {
  x = f32[40,50]{1,0} parameter(0)
  ROOT t = f32[50,40]{0,1} transpose(x), dimensions={1,0}
}
""",
    _transpose("1,50", "1,0", "50,1"),  # a unit dim: the same order in memory
], ids=["inner-dim-kept", "layouts-make-it-a-copy", "unit-dim"])
def test_transposes_that_keep_the_innermost_dimension_in_memory_are_not_tiled(text):
    graph = import_hlo(text, "t.hlo")
    kernel = one_kernel(graph, "loop", "t")
    plans = enumerate_plans(graph, kernel)
    assert all(p.schedule != TRANSPOSE_SCHEDULE for p in plans)
    assert choose_plan(plans).schedule == "elementwise"


def test_kernels_with_a_reduction_schedule_are_not_tiled():
    text = """
HloModule reduce
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[40,50] parameter(0)
  t = f32[50,40] transpose(x), dimensions={1,0}
  zero = f32[] constant(0)
  ROOT r = f32[50] reduce(t, zero), dimensions={1}, to_apply=add
}
"""
    graph = import_hlo(text, "t.hlo")
    plans = enumerate_plans(graph, one_kernel(graph, "input", "r"))
    assert all(p.schedule != TRANSPOSE_SCHEDULE for p in plans)


def test_a_block_with_several_tiles_alternates_two_buffers_behind_one_barrier_each():
    """Grids are capped (MAX_GRID), so a block may loop over tiles: with one barrier per tile
    the next tile's writes must go to the other buffer."""
    text = CASES["attention-bhsd-to-bhds"][0]
    graph = import_hlo(text, "t.hlo")
    kernel = one_kernel(graph, "loop", "t")
    tile = transpose_tile(graph, kernel)
    plans = []
    for plan in enumerate_plans(graph, kernel):
        if plan.schedule == TRANSPOSE_SCHEDULE:
            for grid in (1, 5):
                plans.append(dataclasses.replace(
                    plan, grid_size=grid,
                    shared_bytes=tile.shared_bytes(graph, plan.tile, double_buffered=True)))
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    values = evaluate_all(graph, random_inputs(graph, seed=2))
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        assert "(tile / gridDim.x) % 2" in e.source
        _phases(e.source)
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}\n{e.source}"
    single = dataclasses.replace(plans[0], shared_bytes=tile.shared_bytes(graph, plans[0].tile,
                                                                           False))
    with pytest.raises(ValueError, match="shared memory"):
        emit_kernel(graph, kernel, single, "short")


def test_the_attention_transposes_of_the_onnx_encoder_are_tiled_and_match_the_interpreter():
    """Real input: the encoder's key transpose ([B*H,S,D] -> [B*H,D,S], reshaped and scaled)
    in every strategy's plan, on the module's inputs."""
    from pathlib import Path

    from compiler.fusion.explore import explore
    from compiler.importers import load_graph

    path = Path(__file__).resolve().parents[1] / "data" / "onnx" / \
        "transformer_encoder.dynamo.onnx"
    graph = load_graph(str(path))
    inputs = np.load(path.parent / "transformer_encoder.inputs.npz")
    values = evaluate_all(graph, [inputs[f"arg{i}"] for i in range(len(graph.parameters))])
    emitted = []
    for strategy, plan in explore(graph).items():
        for kernel in plan.kernels:
            if kernel.kind == "library":
                continue
            chosen = choose_plan(enumerate_plans(graph, kernel))
            if chosen.schedule == TRANSPOSE_SCHEDULE:
                emitted.append(emit_kernel(graph, kernel, chosen, f"{strategy}_{kernel.name}"))
    assert len(emitted) == 8  # two layers, four strategies
    results = run_emitted(graph, emitted, values)
    for e in emitted:
        assert not compare(graph, results[e.name], values), e.source
        assert re.search(r"= v\d+_transpose_tile\[tx \* \d+ \+ row\];", _phases(e.source)[1])


def test_tiled_kernels_compile_with_nvcc_for_sm80_and_sm90():
    build_kernels = _nvcc()
    sources = {}
    for case, (text, dominant, _) in CASES.items():
        graph = import_hlo(text, "t.hlo")
        kernel = one_kernel(graph, "loop", dominant)
        plans = [p for p in enumerate_plans(graph, kernel) if p.schedule == TRANSPOSE_SCHEDULE]
        for plan in plans[-2:]:
            emitted = emit_kernel(graph, kernel, plan, f"k_{case}_{plan.tile}_{plan.block_size}")
            sources[emitted.name] = emitted.source
    for arch in ("sm_80", "sm_90"):
        built = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        failed = {name: r.error for name, r in built.items() if not r.ok}
        assert not failed, (arch, failed)


# Attention's head merge as JAX lowers it: [B,H,D,S] -> [B,S,H,D] into the layout {1,3,2,0},
# whose memory order (B, H, D, S) is the operand's own: XLA makes it a bitcast.
MEMORY_ORDER_KEPT = """
HloModule head_merge
ENTRY main {
  x = f32[2,3,8,40]{3,2,1,0} parameter(0)
  ROOT t = f32[2,40,3,8]{1,3,2,0} transpose(x), dimensions={0,3,1,2}
}
"""


def test_a_transpose_that_keeps_memory_order_is_emitted_and_priced_as_a_vector_copy():
    """The elementwise loop counts the output's elements in memory order, so the read and the
    write are both contiguous: a copy of 2 x 3 x 8 x 40 floats moves each byte once between L2
    and the SMs (each thread's lanes one 16-byte vector), where counting the logical order
    read and wrote a 32-byte sector per element, 40 elements apart."""
    graph, kernel, plans, emitted = check_all_plans(MEMORY_ORDER_KEPT, "loop", "t",
                                                    {"elementwise"})
    chosen = choose_plan(plans)
    source = emitted[plans.index(chosen)].source
    assert chosen.schedule == "elementwise" and chosen.vector_width == 4
    assert "fx_load_vec<4>(in0 + e0)" in source and "fx_store_vec(out0 + e0" in source
    workload = kernel_workload(graph, kernel, chosen, get_device("h200"))
    size = 2 * 3 * 8 * 40 * 4
    assert {(a.role, a.pattern, a.vectorized) for a in workload.accesses} == {
        ("read", "contiguous", True), ("write", "contiguous", True)}
    assert workload.l2_bytes == 2 * size
