"""The horizontal schedule: independent parts of one launch, each under its own schedule on its
own range of blocks.

Hand-written modules, each one `horizontal` kernel: two elementwise parts of different sizes
and dtypes; a row softmax beside an unrelated bf16 convert (its softmax part gets a row
schedule, and its best projected time is the two parts' best as separate kernels less one
launch, where the elementwise schedule that reduced each row serially per element was
priced thousands of times higher); two column reductions beside an elementwise part; three parts,
one of three elements; two parts reading the same input and the same recomputed broadcast
(each computes the broadcast; the input comes from DRAM once in the workload); two split
reductions whose global scratch slices lie end to end. Every candidate plan of each kernel is
emulated and compared with the reference interpreter, and every horizontal candidate builds
with nvcc for sm_80 and sm_90. Also: a kernel of another kind, or a horizontal kernel with a
part that needs a grid barrier, gets no horizontal candidate; a horizontal plan's key, dict and
learned-model features carry its parts.
"""

from __future__ import annotations

import json
import math

import pytest

from compiler.codegen.check import PRELUDE_DIR, compare
from compiler.codegen.emit import emit_kernel
from compiler.codegen.plan import HORIZONTAL_SCHEDULE, ROW_SCHEDULES, SPLIT_SCHEDULES
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.codegen.schedules.horizontal import horizontal_parts
from compiler.cost.learned.features import KERNEL_FEATURES, SCHEDULES, kernel_sample
from compiler.cost.projected import rank_plans
from compiler.codegen.schedules import kernel_workload
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel
from test_codegen import _nvcc, check_all_plans, one_kernel, run_emitted

H100 = get_device("h100")

TWO_LOOPS = """
HloModule two_loops
ENTRY main {
  x = f32[6,50] parameter(0)
  y = bf16[37] parameter(1)
  e = f32[6,50] exponential(x)
  s = f32[6,50] add(e, x)
  t = bf16[37] tanh(y)
  n = f32[37] convert(t)
  ROOT out = (f32[6,50], f32[37]) tuple(s, n)
}
"""

REDUCERS = """
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
"""


def _softmax_beside_convert(rows: int, length: int, converts: tuple[int, int]) -> str:
    """A row softmax of x and, unrelated, y converted to bf16 (the case of the issue)."""
    n, m = converts
    return f"""
HloModule softmax_convert
{REDUCERS}
ENTRY main {{
  x = f32[{rows},{length}] parameter(0)
  y = f32[{n},{m}] parameter(1)
  ninf = f32[] constant(-inf)
  mx = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = f32[{rows},{length}] broadcast(mx), dimensions={{0}}
  d = f32[{rows},{length}] subtract(x, mb)
  e = f32[{rows},{length}] exponential(d)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{length}] broadcast(s), dimensions={{0}}
  sm = f32[{rows},{length}] divide(e, sb)
  c = bf16[{n},{m}] convert(y)
  ROOT out = (f32[{rows},{length}], bf16[{n},{m}]) tuple(sm, c)
}}
"""


SOFTMAX_NODES = ["mx", "mb", "d", "e", "s", "sb", "sm"]

COLUMNS_BESIDE_LOOP = f"""
HloModule columns_loop
{REDUCERS}
ENTRY main {{
  x = f32[300,77] parameter(0)
  y = f32[1000] parameter(1)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  ss = f32[77] reduce(x, zero), dimensions={{0}}, to_apply=add
  mx = f32[77] reduce(x, ninf), dimensions={{0}}, to_apply=max
  ng = f32[1000] negate(y)
  ROOT out = (f32[77], f32[77], f32[1000]) tuple(ss, mx, ng)
}}
"""

THREE_PARTS = f"""
HloModule three
{REDUCERS}
ENTRY main {{
  x = f32[37,5] parameter(0)
  y = f32[6,50] parameter(1)
  z = f32[3] parameter(2)
  zero = f32[] constant(0)
  ss = f32[37] reduce(x, zero), dimensions={{1}}, to_apply=add
  e = f32[6,50] exponential(y)
  ng = f32[3] negate(z)
  ROOT out = (f32[37], f32[6,50], f32[3]) tuple(ss, e, ng)
}}
"""

SHARED_INPUT = f"""
HloModule shared
{REDUCERS}
ENTRY main {{
  x = f32[8,40] parameter(0)
  b = f32[40] parameter(1)
  bb = f32[8,40] broadcast(b), dimensions={{1}}
  p = f32[8,40] add(x, bb)
  m = f32[8,40] multiply(x, bb)
  zero = f32[] constant(0)
  r = f32[8] reduce(m, zero), dimensions={{1}}, to_apply=add
  ROOT out = (f32[8,40], f32[8]) tuple(p, r)
}}
"""

TWO_SPLITS = f"""
HloModule splits
{REDUCERS}
ENTRY main {{
  x = f32[2,20000] parameter(0)
  y = f32[5000,5] parameter(1)
  zero = f32[] constant(0)
  rs = f32[2] reduce(x, zero), dimensions={{1}}, to_apply=add
  cs = f32[5] reduce(y, zero), dimensions={{0}}, to_apply=add
  ROOT out = (f32[2], f32[5]) tuple(rs, cs)
}}
"""

# A column sum broadcast back over its rows: the part needs every row's sum (a grid barrier).
ACROSS_ROWS = f"""
HloModule across
{REDUCERS}
ENTRY main {{
  x = f32[64,8] parameter(0)
  y = f32[100] parameter(1)
  zero = f32[] constant(0)
  cs = f32[8] reduce(x, zero), dimensions={{0}}, to_apply=add
  cb = f32[64,8] broadcast(cs), dimensions={{1}}
  q = f32[64,8] divide(x, cb)
  ng = f32[100] negate(y)
  ROOT out = (f32[64,8], f32[100]) tuple(q, ng)
}}
"""

EMULATED = [(TWO_LOOPS, "s"), (_softmax_beside_convert(6, 100, (7, 33)), "s"),
            (COLUMNS_BESIDE_LOOP, "ss"), (THREE_PARTS, "ss"), (TWO_SPLITS, "rs")]


def _horizontal(plans):
    return [p for p in plans if p.schedule == HORIZONTAL_SCHEDULE]


def _check(text: str, dominant: str):
    """Every candidate of the whole module as one horizontal kernel emulated against the
    interpreter; the horizontal candidates, which the heuristic prefers."""
    graph, kernel, plans, emitted = check_all_plans(text, "horizontal", dominant,
                                                    {HORIZONTAL_SCHEDULE})
    horizontal = _horizontal(plans)
    assert choose_plan(plans).schedule == HORIZONTAL_SCHEDULE
    sources = {p: e.source for p, e in zip(plans, emitted)}
    for plan in horizontal:
        ranges = plan.part_ranges()
        assert ranges[0][0] == 0 and ranges[-1][1] == plan.grid_size
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all(p.block_size == plan.block_size and not p.cooperative for p in plan.parts)
        assert plan.shared_bytes == max(p.shared_bytes for p in plan.parts)
        source = sources[plan]
        assert "gridDim.x" not in source  # each part loops over its own blocks
        assert source.count("const int part_block = blockIdx.x") == len(plan.parts)
        for start, end in ranges[1:]:
            assert f"if (blockIdx.x >= {start} && blockIdx.x < {end}) {{" in source
    return graph, kernel, horizontal


def test_two_elementwise_parts_of_different_sizes_and_dtypes_run_side_by_side():
    graph, kernel, horizontal = _check(TWO_LOOPS, "s")
    parts = horizontal_parts(graph, kernel)
    assert [(p.kind, p.nodes, p.outputs) for p in parts] == [
        ("loop", ("e", "s"), ("s",)), ("loop", ("t", "n"), ("n",))]
    assert [p.block_size for p in horizontal] == [128, 256, 512, 1024]  # one per block size
    for plan in horizontal:
        assert [p.schedule for p in plan.parts] == ["elementwise", "elementwise"]
        assert plan.parts[1].vector_width == 1  # 37 elements: no width divides them


def test_a_softmax_beside_an_unrelated_convert_gets_a_row_schedule_for_its_softmax():
    graph, kernel, horizontal = _check(_softmax_beside_convert(6, 100, (7, 33)), "s")
    assert [p.kind for p in horizontal_parts(graph, kernel)] == ["stitch-regional", "loop"]
    for plan in horizontal:
        assert plan.parts[0].schedule in ROW_SCHEDULES
        assert plan.parts[1].schedule == "elementwise"
    chosen = choose_plan(enumerate_plans(graph, kernel))
    assert chosen.parts[0].row_cache  # the softmax part's own heuristic: its row cached


@pytest.mark.parametrize("rows, length, converts", [
    (64, 128, (64, 128)), (256, 512, (512, 512)), (1024, 1000, (1024, 1024)),
    (4096, 1000, (4096, 1024))])
def test_the_device_work_of_softmax_beside_convert_is_the_two_kernels_together(
        rows, length, converts):
    """The horizontal kernel does the two kernels' work in one launch (the launch it saves is
    priced apart from device work, compiler/target/launch.py): no longer than the two one after
    the other, and no shorter than the longer of them (shorter than their sum where their
    latency overlaps on the SMs, the small sizes). Before the horizontal schedule
    the elementwise one reduced every softmax row once per element of it: thousands of times
    the kernel's speed of light."""
    graph = import_hlo(_softmax_beside_convert(rows, length, converts), "t.hlo")
    kernel = one_kernel(graph, "horizontal", "s")
    ranked = rank_plans(graph, kernel, enumerate_plans(graph, kernel), H100)
    best = ranked[0]
    assert best[0].schedule == HORIZONTAL_SCHEDULE
    assert best[0].parts[0].schedule in ROW_SCHEDULES
    elementwise = next(b for p, b in ranked if p.schedule != HORIZONTAL_SCHEDULE)
    model = SolModel(graph, H100)
    separate = build_plan(graph, [KernelSpec(SOFTMAX_NODES, "stitch-regional", dominant="s"),
                                  KernelSpec(["c"], "loop", dominant="c")], "t", model)
    alone = [rank_plans(graph, k, enumerate_plans(graph, k), H100)[0][1].projected_us
             for k in separate.kernels]
    assert max(alone) * 0.9 <= best[1].projected_us <= sum(alone) * 1.1
    assert elementwise.projected_us > 10 * best[1].projected_us


def test_a_column_reduction_beside_an_elementwise_part():
    """The sum and the max of x share no computed value: two parts, each reading x."""
    graph, kernel, horizontal = _check(COLUMNS_BESIDE_LOOP, "ss")
    assert [p.kind for p in horizontal_parts(graph, kernel)] == ["input", "input", "loop"]
    for plan in horizontal:
        assert [p.schedule for p in plan.parts] == ["column-reduce"] * 2 + ["elementwise"]


def test_three_parts_one_of_them_tiny():
    graph, kernel, horizontal = _check(THREE_PARTS, "ss")
    parts = horizontal_parts(graph, kernel)
    assert [(p.kind, p.outputs) for p in parts] == [
        ("input", ("ss",)), ("loop", ("e",)), ("loop", ("ng",))]
    # Rows of 5: several rows per warp, as the row part alone would be (and, in the second
    # candidate of each block size, a block per row).
    assert choose_plan(enumerate_plans(graph, kernel)).parts[0].schedule == \
        "row-reduce-multirow"
    for plan in horizontal:
        assert plan.parts[0].schedule in ROW_SCHEDULES
        assert plan.parts[2].grid_size == 1


def _shared_input_kernel(graph):
    """SHARED_INPUT's kernel recomputing the broadcast `bb`, as the fusers duplicate one."""
    model = SolModel(graph, H100)
    (kernel,) = build_plan(graph, [KernelSpec(["p", "m", "r"], "horizontal", ["bb"], "r")],
                           "t", model).kernels
    return kernel


def test_parts_that_read_the_same_input_and_recompute_the_same_broadcast():
    graph = import_hlo(SHARED_INPUT, "t.hlo")
    kernel = _shared_input_kernel(graph)
    parts = horizontal_parts(graph, kernel)
    assert [(p.kind, p.nodes, p.recomputed, p.inputs) for p in parts] == [
        ("loop", ("p",), ("bb",), ("b", "x")),
        ("input", ("m", "r"), ("bb",), ("b", "x", "zero"))]
    plans = enumerate_plans(graph, kernel)
    horizontal = _horizontal(plans)
    assert horizontal
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    values = evaluate_all(graph, random_inputs(graph, seed=1))
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}\n{e.source}"
    # The combined workload reads x and b from DRAM once, and sums the parts' instructions.
    plan = horizontal[0]
    combined = kernel_workload(graph, kernel, plan, H100)
    alone = [kernel_workload(graph, part, sub, H100) for part, sub in zip(parts, plan.parts)]
    twice = graph.nodes["x"].shape.nbytes + graph.nodes["b"].shape.nbytes
    assert combined.dram_read_bytes == sum(w.dram_read_bytes for w in alone) - twice
    assert combined.dram_write_bytes == sum(w.dram_write_bytes for w in alone)
    for pipe in ("fma", "alu", "shfl"):
        assert combined.instructions.get(pipe, 0) == pytest.approx(
            sum(w.instructions.get(pipe, 0) for w in alone))
    assert combined.grid == plan.grid_size and combined.block == plan.block_size
    # The slowest part's thread, the second part reading x and b from L2 as in the launch.
    read: set[str] = set()
    in_launch = [kernel_workload(graph, part, sub, H100, read_before=read)
                 for part, sub in zip(parts, plan.parts)]
    assert combined.slowest_thread_cycles == max(w.latency_cycles_per_thread
                                                 + w.sync_cycles_per_thread for w in in_launch)


def test_split_parts_get_their_own_slices_of_the_scratch_buffer():
    graph, kernel, horizontal = _check(TWO_SPLITS, "rs")
    split = [p for p in horizontal if all(q.schedule in SPLIT_SCHEDULES for q in p.parts)]
    assert split, [[q.schedule for q in p.parts] for p in horizontal]
    for plan in split:
        first = plan.parts[0].scratch_bytes
        assert plan.scratch_bytes == first + plan.parts[1].scratch_bytes
        source = emit_kernel(graph, kernel, plan, "k").source
        assert f"scratch + {first} + 0" in source  # the second part's partials


def test_kernels_of_other_kinds_and_parts_that_need_a_grid_barrier_get_no_horizontal_plan():
    graph = import_hlo(TWO_LOOPS, "t.hlo")
    assert not _horizontal(enumerate_plans(graph, one_kernel(graph, "loop", "s")))
    graph = import_hlo(ACROSS_ROWS, "t.hlo")
    kernel = one_kernel(graph, "horizontal", "cs")
    assert [p.kind for p in horizontal_parts(graph, kernel)] == ["stitch-global", "loop"]
    plans = enumerate_plans(graph, kernel)
    assert plans and not _horizontal(plans)


def test_a_horizontal_plan_carries_its_parts_in_its_key_its_dict_and_its_features():
    graph = import_hlo(_softmax_beside_convert(6, 100, (7, 33)), "t.hlo")
    kernel = one_kernel(graph, "horizontal", "s")
    plans = enumerate_plans(graph, kernel)
    assert len(set(plans)) == len(plans)  # hashable, and no candidate twice
    plan = choose_plan(plans)
    assert all(part.key() in plan.key() for part in plan.parts)
    data = json.loads(json.dumps(plan.to_dict()))
    assert [part["schedule"] for part in data["parts"]] == [p.schedule for p in plan.parts]
    other = next(p for p in plans if not p.parts)
    assert "parts" not in other.key() and "parts" not in other.to_dict()
    features = dict(zip(KERNEL_FEATURES, kernel_sample(graph, kernel, plan, H100)
                        .kernel_features))
    mix = {name: features[f"schedule_{name}"] for name in SCHEDULES}
    assert sum(mix.values()) == pytest.approx(1.0)
    for part in plan.parts:
        assert mix[part.schedule] == pytest.approx(part.grid_size / plan.grid_size, abs=1e-6)
    assert features["log2_grid_size"] == pytest.approx(math.log2(plan.grid_size))  # the total


def test_every_horizontal_candidate_builds_with_nvcc_for_sm80_and_sm90():
    build_kernels = _nvcc()
    sources = {}
    for i, (text, dominant) in enumerate(EMULATED + [(SHARED_INPUT, None)]):
        graph = import_hlo(text, "t.hlo")
        kernel = one_kernel(graph, "horizontal", dominant) if dominant \
            else _shared_input_kernel(graph)
        for j, plan in enumerate(_horizontal(enumerate_plans(graph, kernel))):
            emitted = emit_kernel(graph, kernel, plan, f"h{i}_{j}")
            sources[emitted.name] = emitted.source
    assert len(sources) >= 5 * 4
    for arch in ("sm_80", "sm_90"):
        results = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        failed = {name: r.error for name, r in results.items() if not r.ok}
        assert not failed, failed
