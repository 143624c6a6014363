"""Trip counts of `while` loops (compiler/ir/loops.py), and the work a loop does counted as
often as it runs its body: in the graph summary and in the speed of light."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from compiler.importers import import_bytes, load_graph
from compiler.importers.hlo_text import import_hlo
from compiler.ir.loops import static_trip_count
from compiler.ir.summary import summarize
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax

DATA = Path(__file__).parents[1] / "data" / "hlo"


def _trip_counts(graph) -> list[int | None]:
    return [static_trip_count(graph, node) for node in graph if node.op == "while"]


def _both_forms(function, *arguments):
    lowered = jax.jit(function).lower(*arguments)
    return [import_bytes(text.encode(), name)[0] for text, name in
            ((lowered.as_text(), "f.mlir"), (lowered.as_text(dialect="hlo"), "f.hlo"))]


@pytest.mark.parametrize("function, trips", [
    (lambda x: lax.fori_loop(2, 11, lambda i, c: c * 2.0 + i, x), 9),
    (lambda x: lax.scan(lambda c, _: (jnp.sin(c), c), x, None, length=5)[0], 5),
    (lambda x: lax.scan(lambda c, _: (jnp.sin(c), c), x, None, length=7, reverse=True)[0], 7),
    (lambda x: lax.fori_loop(0, 0, lambda i, c: c + 1.0, x), 0),
], ids=["fori_loop_2_to_11", "scan_5", "reverse_scan_7", "fori_loop_empty"])
def test_the_trip_count_of_a_jax_loop_is_the_one_its_program_says(function, trips):
    x = np.ones(4, np.float32)
    for graph in _both_forms(function, x):
        loops = _trip_counts(graph)
        # An empty fori_loop may be folded away by JAX; any loop left runs `trips` times.
        assert loops == [trips] or (trips == 0 and loops in ([], [0]))


def test_a_loop_that_runs_until_its_data_converges_has_no_static_trip_count():
    # tests/data/hlo/ops_while.hlo: fori_loop(0, 6) and a Newton while_loop on data.
    assert _trip_counts(load_graph(str(DATA / "ops_while.hlo"))) == [6, None]


COUNT_DOWN = """
    cond {{
      s = (s32[], f32[4]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      limit = s32[] constant({limit})
      ROOT go = pred[] compare({compare}), direction={direction}
    }}
    body {{
      s = (s32[], f32[4]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      x = f32[4] get-tuple-element(s), index=1
      step = s32[] constant({step})
      next = s32[] {update}(i, step)
      y = f32[4] exponential(x)
      ROOT t = (s32[], f32[4]) tuple(next, y)
    }}
    ENTRY e {{
      x = f32[4] parameter(0)
      start = s32[] constant({start})
      init = (s32[], f32[4]) tuple(start, x)
      ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
    }}
"""


@pytest.mark.parametrize("start, limit, step, update, compare, direction, trips", [
    (10, 0, 2, "subtract", "i, limit", "GT", 5),     # 10, 8, 6, 4, 2
    (10, 0, 2, "subtract", "i, limit", "GE", 6),     # ... and 0
    (0, 10, 3, "add", "limit, i", "GT", 4),          # 10 > i: 0, 3, 6, 9
    (0, 12, 3, "add", "i, limit", "NE", 4),          # 0, 3, 6, 9
    (0, 10, 3, "add", "i, limit", "NE", None),       # steps over 10: runs until it wraps
    (0, 10, 1, "subtract", "i, limit", "LT", None),  # counts away from its limit
    (5, 5, 1, "add", "i, limit", "LE", 1),
])
def test_counters_that_count_down_by_steps_or_to_not_equal(start, limit, step, update, compare,
                                                           direction, trips):
    graph = import_hlo(textwrap.dedent(COUNT_DOWN.format(
        start=start, limit=limit, step=step, update=update, compare=compare,
        direction=direction)), "loop.hlo")
    assert _trip_counts(graph) == [trips]


def _layers(scan: bool):
    """Four residual tanh layers, as a lax.scan over stacked weights or unrolled."""
    def f(x, weights):
        if scan:
            return lax.scan(lambda c, w: (jnp.tanh(c @ w) + c, None), x, weights)[0]
        for k in range(weights.shape[0]):
            x = jnp.tanh(x @ weights[k]) + x
        return x
    return f


def _graph_of(function, *arguments):
    text = jax.jit(function).lower(*arguments).as_text(dialect="hlo")
    return import_hlo(text, "layers.hlo")


def test_a_scan_over_layers_counts_the_work_of_every_layer():
    x = np.ones((16, 32), np.float32)
    weights = np.ones((4, 32, 32), np.float32)
    scanned = _graph_of(_layers(True), x, weights)
    unrolled = _graph_of(_layers(False), x, weights)
    matmuls = 4 * 2 * 16 * 32 * 32
    loop, plain = summarize(scanned), summarize(unrolled)
    assert plain["flops"] >= matmuls
    # The loop's counter (an add and a compare per iteration, one more compare) and its
    # dynamic-slice of the weights are all it adds.
    assert 0 <= loop["flops"] - plain["flops"] <= 4 * 2 + 1
    assert loop["transcendentals"] == plain["transcendentals"] == 4 * 16 * 32

    h100 = get_device("h100")
    model = SolModel(scanned, h100)
    (while_node,) = [node.name for node in scanned if node.op == "while"]
    sol = model.estimate([while_node])
    assert sol.flops == loop["flops"]
    # Each iteration reads at least its weights, and the loop can be no faster than those
    # matmuls on the FP32 pipe.
    assert sol.dram_bytes >= weights.nbytes
    assert sol.compute_us >= matmuls / h100.peak_fp32_flops * 1e6


def _nested_loops(depth: int) -> str:
    """Each level's body runs two loops of two iterations over the level below, whose body
    takes an exponential: 4^depth exponentials in all, through 2^depth paths to it."""
    text = """
        cond {
          s = (s32[], f32[4]) parameter(0)
          i = s32[] get-tuple-element(s), index=0
          two = s32[] constant(2)
          ROOT go = pred[] compare(i, two), direction=LT
        }
        body0 {
          s = (s32[], f32[4]) parameter(0)
          i = s32[] get-tuple-element(s), index=0
          x = f32[4] get-tuple-element(s), index=1
          one = s32[] constant(1)
          next = s32[] add(i, one)
          y = f32[4] exponential(x)
          ROOT t = (s32[], f32[4]) tuple(next, y)
        }
    """
    for level in range(1, depth + 1):
        text += f"""
        body{level} {{
          s = (s32[], f32[4]) parameter(0)
          i = s32[] get-tuple-element(s), index=0
          x = f32[4] get-tuple-element(s), index=1
          one = s32[] constant(1)
          next = s32[] add(i, one)
          zero = s32[] constant(0)
          first = (s32[], f32[4]) tuple(zero, x)
          w1 = (s32[], f32[4]) while(first), condition=cond, body=body{level - 1}
          x1 = f32[4] get-tuple-element(w1), index=1
          second = (s32[], f32[4]) tuple(zero, x1)
          w2 = (s32[], f32[4]) while(second), condition=cond, body=body{level - 1}
          x2 = f32[4] get-tuple-element(w2), index=1
          ROOT t = (s32[], f32[4]) tuple(next, x2)
        }}
        """
    return text + f"""
        ENTRY e {{
          x = f32[4] parameter(0)
          zero = s32[] constant(0)
          init = (s32[], f32[4]) tuple(zero, x)
          ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body{depth}
        }}
    """


def test_nested_loops_that_share_bodies_count_every_run_of_them():
    depth = 30   # 2^30 paths to the innermost body: walking each one would never finish
    graph = import_hlo(textwrap.dedent(_nested_loops(depth)), "nested.hlo")
    # One run of body k: its counter add, then two loops of two runs of body k-1 and three
    # compares each; body0 adds and takes 4 exponentials.
    flops, exponentials = 1 + 4, 4
    for _ in range(depth):
        flops, exponentials = 1 + 2 * (2 * flops + 3), 4 * exponentials
    # The entry loop runs body30 twice and its condition three times.
    flops, exponentials = 2 * flops + 3, 2 * exponentials
    summary = summarize(graph)
    assert (summary["flops"], summary["transcendentals"]) == (flops, exponentials)
    sol = SolModel(graph, get_device("h100")).estimate(["w"])
    assert (sol.flops, sol.transcendentals) == (flops, exponentials)


def test_a_scan_moves_one_slice_of_its_stacked_inputs_and_outputs_an_iteration():
    """lax.scan carries its stacked xs and ys in the loop state; an iteration reads xs[t] and
    writes ys[t] in place (XLA's dynamic-update-slice), not the whole buffers: priced whole,
    a scan's traffic would grow with the square of its length."""
    steps, rows, cols = 64, 32, 32

    def scan(carry, xs):
        return lax.scan(lambda c, x: (c + x, jnp.sin(x) * c), carry, xs)

    carry = np.ones((rows, cols), np.float32)
    xs = np.ones((steps, rows, cols), np.float32)
    for graph in _both_forms(scan, carry, xs):
        (loop,) = [node.name for node in graph if node.op == "while"]
        sol = SolModel(graph, get_device("h100")).estimate([loop])
        slice_bytes = rows * cols * 4
        # An iteration: read x[t] and the carry, write the carry and y[t] (its counter and
        # condition: a few scalars); around the loop, the state goes in and comes out once.
        iteration = 4 * slice_bytes
        state = carry.nbytes + 2 * xs.nbytes
        assert steps * iteration <= sol.dram_bytes <= steps * (iteration + 64) + 2 * state
        assert sol.dram_bytes < steps * xs.nbytes     # not the whole buffers every step
