"""The kernel analysis (compiler/kernels/analysis.py): the one verdict on what kind of kernel a
group of nodes is, and its dominant reduction.

Small hand-built graphs hold each rule to what a GPU needs: softmax is one regional stitch
dominated by its row maximum, reductions over two row spaces stitch globally, a row longer
than a block reduces is stitched globally (or refused, past the co-resident grid), the
statistics of a layer norm are an input fusion. On real inputs, every kernel the stitch and
cost strategies form has the kind and dominant the analysis gives it from scratch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compiler.codegen.schedules.horizontal import horizontal_parts
from compiler.fusion.cost_based import cost_fusion
from compiler.fusion.stitch import stitch_fusion
from compiler.importers import import_bytes, load_graph
from compiler.kernels.analysis import GraphFacts, analyse, combine_parts, kind_of, part_kind
from compiler.kernels.grouping import FUSIBLE, node_role
from compiler.target import SolModel, get_device
from test_fusion_stitch import ADD, softmax_hlo

DATA = Path(__file__).resolve().parent.parent / "data"
H100 = get_device("h100")


def hlo(text):
    return import_bytes(text.encode(), "test.hlo")[0]


def fusible(graph):
    """Every node a kernel computes: the whole graph as one group."""
    return [node.name for node in graph if node_role(node) == FUSIBLE]


def softmax(rows, length):
    return hlo(softmax_hlo(rows, length))


# -- the rules, on hand-built groups --------------------------------------------------------


def test_softmax_is_a_regional_stitch_dominated_by_its_row_maximum():
    graph = softmax(8, 128)
    verdict = analyse(graph, fusible(graph), H100)
    assert (verdict.kind, verdict.dominant) == ("stitch-regional", "m")
    # Per row: x's row and exp's (re-read by the divide) in f32, and two row results; 128
    # elements take one warp, so a block of 256 threads holds 8 rows.
    assert verdict.fit.per_row == 2 * 128 * 4 + 2 * 4
    assert verdict.fit.rows_per_block == 8
    assert verdict.brief() == "regional stitch (rows 8x128, 8256 B shared memory per block)"
    assert verdict.detailed().startswith("regional stitch: row 128 f32 = 512 B; 2 row buffers")


def test_softmax_without_a_device_is_regional_without_the_shared_memory_figures():
    graph = softmax(8, 128)
    assert part_kind(graph, fusible(graph)) == ("stitch-regional", "m")


def test_a_reduction_over_two_row_spaces_is_a_global_stitch():
    graph = hlo(f"""HloModule sums
{ADD}
ENTRY main {{
  x = f32[8,128] parameter(0)
  zero = f32[] constant(0)
  rows = f32[8] reduce(x, zero), dimensions={{1}}, to_apply=add
  columns = f32[128] reduce(x, zero), dimensions={{0}}, to_apply=add
  ROOT out = (f32[8], f32[128]) tuple(rows, columns)
}}
""")
    verdict = analyse(graph, ["rows", "columns"], H100)
    assert verdict.kind == "stitch-global"
    assert verdict.dominant == "rows"  # inputs of one size: the first
    assert verdict.brief() == ("global stitch (two reductions with different rows "
                               "(128x8 strided and 8x128))")
    # The stitch strategy's log names the strided reduction first.
    assert verdict.detailed() == "global stitch (columns reduces strided rows (128x8 strided))"


def test_a_row_longer_than_a_block_reduces_does_not_fit_and_stitches_globally():
    graph = softmax(1, 16384)
    facts = GraphFacts.of(graph)
    verdict = kind_of(facts, ["m", "s"], stitched=True, barrier=True,
                      readers_inside=lambda value: (), device=H100, work=16384)
    assert verdict.kind == "stitch-global"
    assert verdict.misfit == ("m", facts.space["m"])
    assert verdict.detailed() == ("global stitch (m: row 16384 > 8192 elements per block "
                                  "(1024 threads x 8)): 4 blocks <= 528 resident "
                                  "(132 SMs x 4)")
    # Labelled from scratch, the row maximum of a too-long row is not a row's value: its
    # broadcast needs other blocks' values.
    assert analyse(graph, fusible(graph), H100).barrier_node == "mb"


def test_a_global_grid_beyond_the_resident_blocks_is_refused():
    graph = softmax(1024, 16384)  # 16M elements = 4096 blocks of 512 threads x 8
    facts = GraphFacts.of(graph)
    verdict = kind_of(facts, ["m", "s"], stitched=True, barrier=True,
                      readers_inside=lambda value: (), device=H100, work=1024 * 16384)
    assert verdict.kind is None
    assert verdict.detailed().startswith(
        "global stitch refused: needs 4096 blocks > 528 resident: would deadlock")


def test_rows_that_overflow_shared_memory_stitch_globally():
    graph = softmax(8, 128)
    tiny = dataclasses.replace(H100, shared_memory_per_block_bytes=1024)
    verdict = analyse(graph, fusible(graph), tiny)
    assert verdict.kind == "stitch-global"
    assert verdict.brief() == ("global stitch (rows do not fit a block: rows 8x128, 8256 B "
                               "shared memory per block > 1024 B)")


def test_the_statistics_of_a_layer_norm_are_an_input_fusion():
    graph = load_graph(str(DATA / "hlo" / "layer_norm_fwd.hlo"))
    # The variance's reduction with its producers, the mean read from memory: nothing in the
    # group reads a reduction's result.
    mean = "div.2"
    producers = {"sub.8", "sub.9", "sub.10", "sub.11", "square.1", "reduce_sum.15"}
    assert mean not in producers
    verdict = analyse(graph, producers, H100)
    assert (verdict.kind, verdict.dominant) == ("input", "reduce_sum.15")
    assert verdict.brief() == "input fusion (rows 32x32, nothing stitched)"
    # With the mean inside, the variance reads a row's value: a regional stitch.
    everything = analyse(graph, fusible(graph), H100)
    assert (everything.kind, everything.dominant) == ("stitch-regional", "reduce_sum.14")


def test_a_loop_has_no_dominant_reduction():
    graph = hlo("""HloModule scale
ENTRY main {
  x = f32[8,128] parameter(0)
  two = f32[] constant(2)
  tb = f32[8,128] broadcast(two), dimensions={}
  ROOT y = f32[8,128] multiply(x, tb)
}
""")
    assert part_kind(graph, ["tb", "y"]) == ("loop", None)


def test_rows_moved_by_a_transpose_are_block_local_only_for_the_stitch_strategy():
    graph = hlo(f"""HloModule centre_and_swap
{ADD}
ENTRY main {{
  x = f32[4,8,32] parameter(0)
  zero = f32[] constant(0)
  r = f32[4,8] reduce(x, zero), dimensions={{2}}, to_apply=add
  rb = f32[4,8,32] broadcast(r), dimensions={{0,1}}
  c = f32[4,8,32] subtract(x, rb)
  ROOT t = f32[8,4,32] transpose(c), dimensions={{1,0,2}}
}}
""")
    nodes = fusible(graph)
    assert analyse(graph, nodes, H100, moved_rows_local=True).kind == "stitch-regional"
    verdict = analyse(graph, nodes, H100)
    assert (verdict.kind, verdict.barrier_node) == ("stitch-global", "t")


def test_parts_of_one_space_are_one_kernel_and_other_parts_run_side_by_side():
    loop = analyse(softmax(8, 128), [])
    graph = softmax(8, 128)
    regional = analyse(graph, fusible(graph), H100)
    sums = hlo(f"""HloModule sums
{ADD}
ENTRY main {{
  x = f32[8,128] parameter(0)
  zero = f32[] constant(0)
  a = f32[8] reduce(x, zero), dimensions={{1}}, to_apply=add
  b = f32[8] reduce(x, zero), dimensions={{1}}, to_apply=add
  c = f32[128] reduce(x, zero), dimensions={{0}}, to_apply=add
  ROOT out = (f32[8], f32[8], f32[128]) tuple(a, b, c)
}}
""")
    a, b, c = (analyse(sums, [name], H100) for name in "abc")
    assert combine_parts([loop, loop], [64, 64])[0] == "loop"
    assert combine_parts([loop, loop], [64, 128])[0] == "horizontal"
    assert combine_parts([a, b], [1024, 1024]) == ("input", "multi-output input fusion of 2 parts")
    assert combine_parts([a, c], [1024, 1024])[0] == "horizontal"
    assert combine_parts([loop, regional], [64, 1024])[0] == "horizontal"
    global_ = analyse(sums, ["a", "c"], H100)
    assert combine_parts([loop, global_], [64, 1024]) == (
        "stitch-global", "2 parts, one globally stitched")


# -- the strategies agree with it -----------------------------------------------------------


MODULES = ["layer_norm_fwd", "layer_norm_bwd", "softmax", "rms_norm", "cross_entropy",
           "cross_entropy_grad", "attention_block", "adam"]


def kernels_of(plan):
    return [kernel for kernel in plan.kernels if kernel.kind != "library"]


@pytest.mark.parametrize("module", MODULES)
def test_every_stitch_kernel_has_the_kind_the_analysis_gives_it_from_scratch(module):
    graph = load_graph(str(DATA / "hlo" / f"{module}.hlo"))
    plan = stitch_fusion(graph, SolModel(graph, H100))
    for kernel in kernels_of(plan):
        verdict = analyse(graph, kernel.computed, H100, moved_rows_local=True)
        if verdict.kind == "loop":
            assert kernel.kind in ("loop", "horizontal"), kernel.name
        else:
            assert (kernel.kind, kernel.dominant) == (verdict.kind, verdict.dominant), \
                kernel.name


@pytest.mark.parametrize("module", MODULES)
def test_every_cost_kernel_has_the_kind_the_analysis_gives_its_parts_from_scratch(module):
    graph = load_graph(str(DATA / "hlo" / f"{module}.hlo"))
    plan = cost_fusion(graph, SolModel(graph, H100))
    for kernel in kernels_of(plan):
        parts = [analyse(graph, part.computed, H100) for part in horizontal_parts(graph, kernel)]
        kinds = {verdict.kind for verdict in parts}
        if len(parts) == 1:
            assert kernel.kind == parts[0].kind, kernel.name
            if parts[0].dominant is not None:
                assert kernel.dominant == parts[0].dominant, kernel.name
        else:
            assert (kernel.kind == "stitch-global") == ("stitch-global" in kinds), kernel.name
