"""Vectorised loads and stores in the elementwise schedule (vector_width 2 and 4).

Every candidate plan (widths 1, 2 and 4) of each hand-written module runs on the CPU emulator
against the reference interpreter; the sources are checked for which accesses became vector
accesses (contiguous, aligned reads and writes) and which stayed scalar (broadcasts,
transposes, misaligned slices); a misaligned vector access through the prelude's helpers is an
emulator error, as it is a fault on a GPU; and the kernels build with nvcc into real vector
instructions for sm_80 and sm_90.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, aligned_copy, compare
from compiler.codegen.emit import emit_kernel
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel
from test_codegen import _emulator, _nvcc, one_kernel, run_emitted

LOAD = re.compile(r"fx_load_vec<(\d)>\((\w+) \+")
STORE = re.compile(r"fx_store_vec\((\w+) \+")

F32 = """
HloModule f32
ENTRY main {
  x = f32[16,12] parameter(0)
  y = f32[16,12] parameter(1)
  e = f32[16,12] exponential(x)
  m = f32[16,12] multiply(e, y)
  ROOT s = f32[16,12] subtract(m, x)
}
"""

BF16 = """
HloModule bf16
ENTRY main {
  x = bf16[8,20] parameter(0)
  y = bf16[8,20] parameter(1)
  a = bf16[8,20] multiply(x, y)
  t = bf16[8,20] tanh(a)
  ROOT s = bf16[8,20] add(t, x)
}
"""

F16 = """
HloModule f16
ENTRY main {
  x = f16[4,30] parameter(0)
  y = f16[4,30] parameter(1)
  d = f16[4,30] divide(x, y)
  ROOT l = f16[4,30] logistic(d)
}
"""

S32 = """
HloModule s32
ENTRY main {
  x = s32[8,12] parameter(0)
  y = s32[8,12] parameter(1)
  a = s32[8,12] multiply(x, y)
  d = s32[8,12] divide(a, y)
  ROOT s = s32[8,12] shift-left(d, x)
}
"""

# f64 (4 lanes are 32 bytes: two 16-byte accesses), 8-bit integers and pred.
OTHER_TYPES = """
HloModule other
ENTRY main {
  a = f64[8,8] parameter(0)
  b = s8[8,8] parameter(1)
  c = u8[8,8] parameter(2)
  p = pred[8,8] parameter(3)
  sq = f64[8,8] multiply(a, a)
  sb = s8[8,8] add(b, b)
  cc = u8[8,8] multiply(c, c)
  np = pred[8,8] not(p)
  ROOT out = (f64[8,8], s8[8,8], u8[8,8], pred[8,8]) tuple(sq, sb, cc, np)
}
"""

# x is read at every element in order; r is broadcast along the rows (one value per row of
# 20, the same for several lanes) and must stay scalar.
MIXED = """
HloModule mixed
ENTRY main {
  x = f32[6,20] parameter(0)
  r = f32[6] parameter(1)
  rb = f32[6,20] broadcast(r), dimensions={0}
  ROOT s = f32[6,20] add(x, rb)
}
"""

# Reads through reshapes keep the linear order: x and y are both read contiguously.
RESHAPE = """
HloModule reshape
ENTRY main {
  x = f32[12,20] parameter(0)
  y = f32[240] parameter(1)
  xr = f32[20,12] reshape(x)
  yr = f32[20,12] reshape(y)
  ROOT s = f32[20,12] multiply(xr, yr)
}
"""

# A slice that starts at column 4 keeps 4-element groups aligned (vectorised for widths 2 and
# 4); one that starts at column 1 does not (scalar); a transpose is never contiguous.
SLICES = """
HloModule slices
ENTRY main {
  x = f32[8,16] parameter(0)
  z = f32[8,16] parameter(1)
  t = f32[16,8] parameter(2)
  a = f32[8,8] slice(x), slice={[0:8], [4:12]}
  b = f32[8,8] slice(z), slice={[0:8], [1:9]}
  tt = f32[8,16] transpose(t), dimensions={1,0}
  tl = f32[8,8] slice(tt), slice={[0:8], [0:8]}
  ab = f32[8,8] add(a, b)
  ROOT s = f32[8,8] add(ab, tl)
}
"""

ODD = """
HloModule odd
ENTRY main {
  x = f32[7,9] parameter(0)
  ROOT e = f32[7,9] exponential(x)
}
"""

# Outputs of three element counts: each loop vectorises what it can. `first` (48 elements)
# reads x with rows of 6 out of 16, which is not contiguous for four lanes, but is written
# contiguously; `sums` reduces serially inside the 128-element loop.
MULTI_OUTPUT = """
HloModule multi
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,16] parameter(0)
  y = f32[128] parameter(1)
  e = f32[8,16] exponential(x)
  yr = f32[8,16] reshape(y)
  m = f32[8,16] multiply(e, yr)
  flat = f32[128] reshape(m)
  first = f32[8,6] slice(x), slice={[0:8], [0:6]}
  zero = f32[] constant(0)
  sums = f32[8] reduce(x, zero), dimensions={1}, to_apply=add
  ROOT out = (f32[8,16], f32[128], f32[8,6], f32[8]) tuple(m, flat, first, sums)
}
"""

# An input stored column-major, read by a row-major output: not contiguous, stays scalar.
LAYOUT = """
HloModule layout
ENTRY main {
  x = f32[8,12]{0,1} parameter(0)
  y = f32[8,12] parameter(1)
  ROOT s = f32[8,12]{1,0} add(x, y)
}
"""


def check_every_width(text: str, dominant: str):
    """Every elementwise plan of the module as one loop kernel, emulated against the
    interpreter; (graph, [(plan, emitted)])."""
    graph = import_hlo(text, "test.hlo")
    kernel = one_kernel(graph, "loop", dominant)
    plans = [p for p in enumerate_plans(graph, kernel) if p.schedule == "elementwise"]
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    values = evaluate_all(graph, random_inputs(graph, seed=3))
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}\n{e.source}"
    return graph, list(zip(plans, emitted))


def of_width(pairs, width: int):
    """The emitted kernel of the first plan with `width`."""
    return next(e for p, e in pairs if p.vector_width == width)


def vector_accesses(emitted) -> tuple[list[tuple[int, str]], list[str]]:
    """([(lanes, graph node)] of the vector loads, [graph node] of the vector stores)."""
    nodes = {p.name: p.node for p in emitted.params}
    loads = [(int(w), nodes[b]) for w, b in LOAD.findall(emitted.source)]
    stores = [nodes[b] for b in STORE.findall(emitted.source)]
    return loads, stores


@pytest.mark.parametrize("text, dominant", [
    (F32, "s"), (BF16, "s"), (F16, "l"), (S32, "s"), (OTHER_TYPES, "sq")],
    ids=["f32", "bf16", "f16", "s32", "f64-s8-u8-pred"])
def test_every_width_matches_the_interpreter_and_reads_and_writes_whole_vectors(text,
                                                                                 dominant):
    graph, pairs = check_every_width(text, dominant)
    assert {p.vector_width for p, _ in pairs} == {1, 2, 4}
    inputs = {p.node for p in pairs[0][1].params if p.role == "input"}
    outputs = {p.node for p in pairs[0][1].params if p.role == "output"}
    for plan, emitted in pairs:
        loads, stores = vector_accesses(emitted)
        if plan.vector_width == 1:
            assert not loads and not stores and "fx_load_vec" not in emitted.source
        else:
            assert sorted(n for _, n in loads) == sorted(inputs)
            assert {w for w, _ in loads} == {plan.vector_width}
            assert sorted(stores) == sorted(outputs)
            assert not re.search(r"\bin\d+\[", emitted.source)  # no scalar load is left


def test_the_four_wide_f32_kernel_has_one_load_per_input_and_one_store_per_output():
    _, pairs = check_every_width(F32, "s")
    source = of_width(pairs, 4).source
    assert source.count("fx_load_vec<4>(") == 2
    assert source.count("fx_store_vec(") == 1
    assert "FxVec<float, 4>" in source
    assert source.count("fx_load_vec<2>(") == 0
    assert of_width(pairs, 2).source.count("fx_load_vec<2>(") == 2
    plain = of_width(pairs, 1).source
    assert "fx_load_vec" not in plain and "fx_store_vec" not in plain


def test_only_the_contiguous_input_is_vectorised_next_to_a_broadcast():
    graph, pairs = check_every_width(MIXED, "s")
    for width in (2, 4):
        emitted = of_width(pairs, width)
        loads, stores = vector_accesses(emitted)
        assert loads == [(width, "x")] and stores == ["s"]
        broadcast = next(p.name for p in emitted.params if p.node == "r")
        assert emitted.source.count(f"{broadcast}[") == width  # one scalar read per lane


def test_reads_through_reshapes_are_vectorised():
    _, pairs = check_every_width(RESHAPE, "s")
    for width in (2, 4):
        loads, stores = vector_accesses(of_width(pairs, width))
        assert sorted(loads) == [(width, "x"), (width, "y")] and stores == ["s"]


def test_aligned_slices_are_vectorised_and_misaligned_slices_and_transposes_are_not():
    _, pairs = check_every_width(SLICES, "s")
    for width in (2, 4):
        emitted = of_width(pairs, width)
        loads, stores = vector_accesses(emitted)
        assert loads == [(width, "x")] and stores == ["s"]
        assert "fx_load_vec" in emitted.source and "x" in emitted.node_lines


def test_an_odd_element_count_gets_no_vector_width():
    graph, pairs = check_every_width(ODD, "e")
    assert {p.vector_width for p, _ in pairs} == {1}
    assert all("fx_load_vec" not in e.source for _, e in pairs)


def test_multi_output_kernels_vectorise_each_loop_on_its_own():
    graph, pairs = check_every_width(MULTI_OUTPUT, "m")
    emitted = of_width(pairs, 4)
    loads, stores = vector_accesses(emitted)
    # The 128-element loop reads x and y as vectors and writes m and flat; the 48-element loop
    # writes `first` as vectors but reads x scalar; the 8-element loop reduces serially (its
    # reads of x are scalar) and writes the four sums of its lanes as one vector.
    assert sorted(loads) == [(4, "x"), (4, "y")]
    assert sorted(stores) == ["first", "flat", "m", "sums"]
    assert emitted.source.count("for (int ") >= 3


def test_a_column_major_input_read_in_row_major_order_stays_scalar():
    _, pairs = check_every_width(LAYOUT, "s")
    for width in (2, 4):
        loads, stores = vector_accesses(of_width(pairs, width))
        assert loads == [(width, "y")] and stores == ["s"]


def test_vector_accesses_carry_their_nodes_and_same_structures_share_their_source():
    text = """
HloModule layers
ENTRY main {
  x = f32[16,32] parameter(0)
  l0.e = f32[16,32] exponential(x)
  l0.m = f32[16,32] multiply(l0.e, x)
  l1.e = f32[16,32] exponential(l0.m)
  ROOT l1.m = f32[16,32] multiply(l1.e, l0.m)
}
"""
    graph = import_hlo(text, "layers.hlo")
    model = SolModel(graph, get_device("h100"))
    specs = [KernelSpec(nodes=["l0.e", "l0.m"], kind="loop", dominant="l0.m"),
             KernelSpec(nodes=["l1.e", "l1.m"], kind="loop", dominant="l1.m")]
    first, second = build_plan(graph, specs, "test", model).kernels
    emitted = []
    for kernel in (first, second):
        plan = next(p for p in enumerate_plans(graph, kernel) if p.vector_width == 4)
        emitted.append(emit_kernel(graph, kernel, plan, "k"))
    a, b = emitted
    assert a.source == b.source and "l0" not in a.source
    lines = a.source.splitlines()
    vector_lines = [n for n, line in enumerate(lines, 1) if "_vec" in line and "fx_" in line]
    assert len(vector_lines) == 2
    assert [a.line_nodes[n] for n in vector_lines] == [["x"], ["l0.m"]]
    assert [b.line_nodes[n] for n in vector_lines] == [["l0.m"], ["l1.m"]]


MISALIGNED = r"""
#include "fx_prelude.cuh"

extern "C" __global__ void vector_copy(const float* __restrict__ in, const int* __restrict__ at,
                                       float* __restrict__ out) {
  const FxVec<float, 4> v = fx_load_vec<4>(in + *at);
  fx_store_vec(out + *at, v.lane[0], v.lane[1], v.lane[2], v.lane[3]);
}

extern "C" __global__ void vector_store_at(const int* __restrict__ at, __half* __restrict__ out) {
  fx_store_vec(out + *at, __float2half_rn(1.0f), __float2half_rn(2.0f));
}
"""


def test_a_misaligned_vector_access_is_an_emulator_error():
    from compiler.toolchain.emulate import EmulationError

    compile_for_emulation = _emulator()
    module = compile_for_emulation(MISALIGNED, ["vector_copy", "vector_store_at"],
                                   [str(PRELUDE_DIR)])
    source = aligned_copy(np.arange(16, dtype=np.float32))
    out = aligned_copy(np.zeros(16, np.float32))
    module.launch("vector_copy", 1, 1, 0, [source, np.array([4], np.int32), out])
    assert out[4:8].tolist() == [4, 5, 6, 7]  # aligned: one 16-byte access each way
    with pytest.raises(EmulationError, match="misaligned address: a 16-byte vector load"):
        module.launch("vector_copy", 1, 1, 0, [source, np.array([2], np.int32), out])
    halves = aligned_copy(np.zeros(8, np.float16))
    module.launch("vector_store_at", 1, 1, 0, [np.array([2], np.int32), halves])
    assert halves[2:4].tolist() == [1.0, 2.0]
    with pytest.raises(EmulationError, match="misaligned address: a 4-byte vector store"):
        module.launch("vector_store_at", 1, 1, 0, [np.array([3], np.int32), halves])


def test_the_emulator_hands_kernels_buffers_aligned_like_the_gpu():
    for dtype, size in ((np.float32, 1), (np.float16, 7), (np.int8, 33), (np.float64, 5)):
        copy = aligned_copy(np.ones(size, dtype))
        assert copy.ctypes.data % 256 == 0 and copy.flags.c_contiguous
        assert copy.tolist() == [1] * size


def test_vectorised_kernels_build_into_vector_instructions_for_sm80_and_sm90():
    build_kernels = _nvcc()
    sources = {}
    for k, (text, dominant) in enumerate([(F32, "s"), (BF16, "s"), (F16, "l"), (S32, "s"),
                                          (OTHER_TYPES, "sq"), (MIXED, "s"), (SLICES, "s"),
                                          (MULTI_OUTPUT, "m")]):
        graph = import_hlo(text, "t.hlo")
        kernel = one_kernel(graph, "loop", dominant)
        for plan in enumerate_plans(graph, kernel):
            if plan.schedule == "elementwise" and plan.block_size == 256:
                emitted = emit_kernel(graph, kernel, plan, f"v{k}_w{plan.vector_width}")
                sources[emitted.name] = emitted.source
    for arch in ("sm_80", "sm_90"):
        built = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        assert all(r.ok for r in built.values()), {n: r.error for n, r in built.items()}
        f32 = built["v0_w4"].ptx
        assert re.search(r"ld\.global(\.nc)?\.v4\.f32", f32) and "st.global.v4.f32" in f32
        bf16 = built["v1_w2"].ptx  # two 16-bit lanes: one 4-byte access
        assert re.search(r"ld\.global(\.nc)?\.v2\.(u|b)16", bf16)
        f64 = built["v4_w4"].ptx  # four doubles: two 16-byte accesses each
        assert len(re.findall(r"ld\.global(?:\.nc)?\.v2\.f64", f64)) == 2
        assert "ld.global.nc.f32" not in f32 and "ld.global.f32" not in f32


def test_the_chosen_elementwise_plan_of_a_large_array_is_vectorised():
    graph = import_hlo(F32.replace("16,12", "256,1024"), "big.hlo")
    kernel = one_kernel(graph, "loop", "s")
    chosen = choose_plan(enumerate_plans(graph, kernel))
    assert chosen.vector_width == 4
    assert emit_kernel(graph, kernel, chosen, "k").source.count("fx_load_vec<4>(") == 2
