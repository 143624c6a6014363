"""A schedule is one module and one line in the registry (docs/architecture.md, "Add a CodeGen
schedule"): its candidates, its emitter and its workload count side by side.

The module below is a schedule none of the compiler's modules knows: "elementwise-blocked",
where each thread computes a contiguous chunk of the output (a blocked mapping, the opposite of
the grid-stride loop). Registered by adding it to the registry's lists, and touching no other
file, it is offered for a kernel, its code runs on the CPU emulator and gives the reference
interpreter's results, and the projected model prices it from its own count: consecutive
threads a chunk apart each move a whole 32-byte sector for a 4-byte element (the L1/L2
transaction unit of NVIDIA GPUs since Maxwell; CUDA C++ Best Practices Guide, "Coalesced
Access to Global Memory"), 8x the L2 traffic of the coalesced grid-stride loop, so it ranks
below the elementwise schedule and is never chosen over it.
"""

from __future__ import annotations

import types

import pytest

from compiler.codegen import schedules
from compiler.codegen.check import compare
from compiler.codegen.emit import emit_kernel
from compiler.codegen.indexing import Ix
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.workload import SECTOR_BYTES, Loop, ceil_div
from compiler.cost.projected import rank_plans
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from compiler.target.devices import get_device
from test_codegen import one_kernel, run_emitted

BLOCKED = "elementwise-blocked"
THREADS = 4096  # the blocked plan's whole grid: 16 blocks of 256


def _candidates(graph, kernel, dominant):
    return [CodeGenPlan(schedule=BLOCKED, dominant=dominant, block_size=256,
                        grid_size=THREADS // 256)]


def _choose(plans):
    return None  # never preferred by the heuristic: the cost model may rank it


def _sizes(output_nodes):
    sizes: dict[int, list] = {}
    for node in output_nodes:
        sizes.setdefault(node.array_shape.size, []).append(node)
    return sizes


def _emit(graph, kernel, emitter, output_nodes, buffers, plan):
    body = emitter.body
    for size, nodes in _sizes(output_nodes).items():
        chunk = ceil_div(size, plan.grid_size * plan.block_size)
        thread, i = emitter.fresh("t"), emitter.fresh("i")
        body.line(f"const int {thread} = {emitter.block_index} * blockDim.x + threadIdx.x;")
        end = f"(({thread} + 1) * {chunk} < {size} ? ({thread} + 1) * {chunk} : {size})"
        with body.block(f"for (int {i} = {thread} * {chunk}; {i} < {end}; ++{i}) {{"), \
                emitter.scope():
            for node in nodes:
                index = emitter.delinearize(Ix.var(i, size), node.array_shape.dims)
                emitter.store(node, buffers[node.name], index)


def _count(graph, kernel, plan, counter):
    """One loop per output size; consecutive threads are a chunk apart, so no access is
    coalesced ("?": no dimension the fast thread index walks)."""
    for size, nodes in _sizes(counter.outputs).items():
        names = [n.name for n in nodes]
        counter.loop(Loop(elements=size, targets=names, axes=dict.fromkeys(names, "?"),
                          known=frozenset(), stores=tuple(names),
                          per_thread=ceil_div(size, plan.grid_size * plan.block_size)))


BLOCKED_MODULE = types.SimpleNamespace(SCHEDULES=(BLOCKED,), candidates=_candidates,
                                       choose=_choose, emit=_emit, count=_count)

GELU = """
HloModule gelu
ENTRY main {
  x = f32[64,1024] parameter(0)
  half = f32[] constant(0.5)
  hb = f32[64,1024] broadcast(half), dimensions={}
  xh = f32[64,1024] multiply(x, hb)
  t = f32[64,1024] tanh(x)
  one = f32[] constant(1)
  ob = f32[64,1024] broadcast(one), dimensions={}
  s = f32[64,1024] add(t, ob)
  ROOT y = f32[64,1024] multiply(xh, s)
}
"""


@pytest.fixture
def registered(monkeypatch):
    """The one line a new schedule adds to compiler/codegen/schedules/__init__.py."""
    enumeration = (*schedules.ENUMERATION, BLOCKED_MODULE)
    monkeypatch.setattr(schedules, "ENUMERATION", enumeration)
    monkeypatch.setattr(schedules, "PREFERENCE", (*schedules.PREFERENCE, BLOCKED_MODULE))
    monkeypatch.setattr(schedules, "_OWNERS", schedules._owners(enumeration))


def test_an_unregistered_schedule_is_neither_offered_nor_priced():
    graph = import_hlo(GELU, "gelu.hlo")
    kernel = one_kernel(graph, "loop", "y")
    assert BLOCKED not in {p.schedule for p in schedules.enumerate_plans(graph, kernel)}
    plan = _candidates(graph, kernel, "y")[0]
    with pytest.raises(ValueError, match="no workload model for schedule"):
        schedules.kernel_workload(graph, kernel, plan, get_device("h100"))


def test_a_registered_schedule_is_offered_emitted_and_computes_the_graph(registered):
    graph = import_hlo(GELU, "gelu.hlo")
    kernel = one_kernel(graph, "loop", "y")
    plans = schedules.enumerate_plans(graph, kernel)
    (blocked,) = [p for p in plans if p.schedule == BLOCKED]
    emitted = emit_kernel(graph, kernel, blocked, "k_blocked")
    assert "k_blocked" in emitted.source
    values = evaluate_all(graph, random_inputs(graph, seed=3))
    got = run_emitted(graph, [emitted], values)["k_blocked"]
    assert set(got) == {"y"}
    assert not compare(graph, got, values)


def test_its_price_comes_from_its_own_count(registered):
    graph = import_hlo(GELU, "gelu.hlo")
    kernel = one_kernel(graph, "loop", "y")
    device = get_device("h100")
    plans = schedules.enumerate_plans(graph, kernel)
    (blocked,) = [p for p in plans if p.schedule == BLOCKED]
    coalesced = next(p for p in plans if p.schedule == "elementwise" and p.vector_width == 1
                     and p.block_size == 256)
    strided = schedules.kernel_workload(graph, kernel, blocked, device)
    grid_stride = schedules.kernel_workload(graph, kernel, coalesced, device)
    elements, itemsize = 64 * 1024, 4
    # Every access strided: one sector per element read and written, against the element's
    # own bytes when the warp's 32 threads read 32 neighbours.
    assert {a.pattern for a in strided.accesses} == {"strided"}
    assert {a.pattern for a in grid_stride.accesses} == {"contiguous"}
    assert strided.l2_bytes == 2 * elements * SECTOR_BYTES
    assert grid_stride.l2_bytes == 2 * elements * itemsize
    assert strided.iterations_per_thread == elements // THREADS
    ranked = [plan for plan, _ in rank_plans(graph, kernel, plans, device)]
    assert blocked in ranked and ranked[0].schedule != BLOCKED
    assert ranked.index(coalesced) < ranked.index(blocked)
    assert schedules.choose_plan(plans).schedule != BLOCKED
