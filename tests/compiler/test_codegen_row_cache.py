"""The register row cache of the row schedules (CodeGenPlan.row_cache).

Softmax (two phases and an epilogue), layer norm (mean, variance, normalise; with its mean and
rstd as outputs) and RMS norm, in f32 and bf16, over rows of 1 to 1000 elements: every
candidate plan, cached and not, is emulated and compared with the reference interpreter. A
cached softmax loads x once and computes exp(x - max) once (the uncached one: 3 loads, 2 exps);
the cached variants are enumerated where they hold (at most ROW_CACHE_MAX elements per thread,
not cooperative, something to reuse), chosen by the heuristic, counted by the workload model
as computed once, and build for sm_80 and sm_90 without spilling.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compiler.codegen.check import PRELUDE_DIR
from compiler.codegen.emit import emit_kernel
from compiler.codegen.plan import ROW_CACHE_MAX, ROW_SCHEDULES
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.cost.projected import rank_plans
from compiler.codegen.schedules import kernel_workload
from compiler.importers.hlo_text import import_hlo
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel
from test_codegen import TWO_LAYERS, _nvcc, check_all_plans, one_kernel

H100 = get_device("h100")
DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"

_REDUCERS = """
HloModule {name}
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
max {{
  a = {dt}[] parameter(0)
  b = {dt}[] parameter(1)
  ROOT m = {dt}[] maximum(a, b)
}}
"""


def softmax(rows: int, length: int, dt: str = "f32") -> str:
    return _REDUCERS.format(name="softmax", dt=dt) + f"""
ENTRY main {{
  x = {dt}[{rows},{length}] parameter(0)
  ninf = {dt}[] constant(-inf)
  mx = {dt}[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = {dt}[{rows},{length}] broadcast(mx), dimensions={{0}}
  d = {dt}[{rows},{length}] subtract(x, mb)
  e = {dt}[{rows},{length}] exponential(d)
  ef = f32[{rows},{length}] convert(e)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(ef, zero), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{length}] broadcast(s), dimensions={{0}}
  q = f32[{rows},{length}] divide(ef, sb)
  ROOT out = {dt}[{rows},{length}] convert(q)
}}
"""


def layer_norm(rows: int, length: int, dt: str = "f32") -> str:
    return _REDUCERS.format(name="layer_norm", dt=dt) + f"""
ENTRY main {{
  x = {dt}[{rows},{length}] parameter(0)
  gamma = {dt}[{length}] parameter(1)
  beta = {dt}[{length}] parameter(2)
  xf = f32[{rows},{length}] convert(x)
  zero = f32[] constant(0)
  sum = f32[{rows}] reduce(xf, zero), dimensions={{1}}, to_apply=add
  n = f32[] constant({length})
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  mean = f32[{rows}] divide(sum, nb)
  mb = f32[{rows},{length}] broadcast(mean), dimensions={{0}}
  cen = f32[{rows},{length}] subtract(xf, mb)
  sq = f32[{rows},{length}] multiply(cen, cen)
  vs = f32[{rows}] reduce(sq, zero), dimensions={{1}}, to_apply=add
  var = f32[{rows}] divide(vs, nb)
  eps = f32[] constant(1e-5)
  eb = f32[{rows}] broadcast(eps), dimensions={{}}
  ve = f32[{rows}] add(var, eb)
  rstd = f32[{rows}] rsqrt(ve)
  rb = f32[{rows},{length}] broadcast(rstd), dimensions={{0}}
  norm = f32[{rows},{length}] multiply(cen, rb)
  gf = f32[{length}] convert(gamma)
  gb = f32[{rows},{length}] broadcast(gf), dimensions={{1}}
  bf = f32[{length}] convert(beta)
  bb = f32[{rows},{length}] broadcast(bf), dimensions={{1}}
  scaled = f32[{rows},{length}] multiply(norm, gb)
  shifted = f32[{rows},{length}] add(scaled, bb)
  y = {dt}[{rows},{length}] convert(shifted)
  ROOT out = ({dt}[{rows},{length}], f32[{rows}], f32[{rows}]) tuple(y, mean, rstd)
}}
"""


def rms_norm(rows: int, length: int, dt: str = "f32") -> str:
    return _REDUCERS.format(name="rms_norm", dt=dt) + f"""
ENTRY main {{
  x = {dt}[{rows},{length}] parameter(0)
  w = {dt}[{length}] parameter(1)
  xf = f32[{rows},{length}] convert(x)
  sq = f32[{rows},{length}] multiply(xf, xf)
  zero = f32[] constant(0)
  ss = f32[{rows}] reduce(sq, zero), dimensions={{1}}, to_apply=add
  n = f32[] constant({length})
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  ms = f32[{rows}] divide(ss, nb)
  eps = f32[] constant(1e-6)
  eb = f32[{rows}] broadcast(eps), dimensions={{}}
  ve = f32[{rows}] add(ms, eb)
  rs = f32[{rows}] rsqrt(ve)
  rb = f32[{rows},{length}] broadcast(rs), dimensions={{0}}
  wf = f32[{length}] convert(w)
  wb = f32[{rows},{length}] broadcast(wf), dimensions={{1}}
  xn = f32[{rows},{length}] multiply(xf, rb)
  yf = f32[{rows},{length}] multiply(xn, wb)
  ROOT y = {dt}[{rows},{length}] convert(yf)
}}
"""


# (module, the reduction that is the kernel's dominant: its last phase)
MODULES = {"softmax": (softmax, "s"), "layer_norm": (layer_norm, "vs"),
           "rms_norm": (rms_norm, "ss")}
# Rows of 1 element, shorter than a warp, one short of it, a warp, not a power of two, the
# longest a warp caches, longer than a block of 128 caches (with how many rows).
SHAPES = [(3, 1), (37, 5), (9, 31), (6, 32), (7, 100), (5, 256), (3, 1000)]


def _kernel(text: str, dominant: str):
    graph = import_hlo(text, "t.hlo")
    return graph, one_kernel(graph, "stitch-regional", dominant)


def _twins(plans):
    """(cached plan, the same plan uncached) for every cached candidate."""
    return [(p, dataclasses.replace(p, row_cache=0)) for p in plans if p.row_cache]


@pytest.mark.parametrize("dt", ["f32", "bf16"])
@pytest.mark.parametrize("rows, length", SHAPES, ids=[f"{r}x{n}" for r, n in SHAPES])
@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_cached_and_uncached_plan_matches_the_interpreter(module, rows, length, dt):
    make, dominant = MODULES[module]
    _, _, plans, emitted = check_all_plans(make(rows, length, dt), "stitch-regional",
                                           dominant, {"row-reduce-warp", "row-reduce-block"})
    twins = _twins(plans)
    # RMS norm over rows of one element has one loop over the row: nothing to reuse.
    assert bool(twins) == (module != "rms_norm" or length > 1)
    assert all(uncached in plans for _, uncached in twins)
    for plan in plans:
        if twins and plan.schedule in ROW_SCHEDULES and not plan.row_cache:
            elements = -(-length // plan.threads_per_row)
            assert (elements <= ROW_CACHE_MAX) == (dataclasses.replace(
                plan, row_cache=elements) in plans)
    for plan, e in zip(plans, emitted):
        assert (plan.row_cache > 0) == ("#pragma unroll" in e.source)


def _tags(source: str, suffix: str) -> int:
    """How many values of an op the source computes: `const` declarations whose comment
    names a node tag ending in `suffix`."""
    return sum(line.strip().startswith("const ") and line.rsplit("// ", 1)[-1].endswith(suffix)
               for line in source.splitlines())


def test_a_cached_softmax_loads_x_once_and_computes_exp_once():
    graph, kernel = _kernel(softmax(9, 100), "s")
    plans = enumerate_plans(graph, kernel)
    cached = choose_plan(plans)
    assert cached.schedule == "row-reduce-warp" and cached.row_cache == 4
    source = emit_kernel(graph, kernel, cached, "k").source
    plain = emit_kernel(graph, kernel, dataclasses.replace(cached, row_cache=0), "k").source
    assert source.count("in0[") == 1 and _tags(source, "_exponential") == 1
    assert plain.count("in0[") == 3 and _tags(plain, "_exponential") == 2
    # Two arrays (x for the sum's phase, exp(x - max) for the epilogue), unrolled loops.
    assert source.count("_row[4];") == 2
    assert source.count("#pragma unroll") == 3
    assert "for (int k = 0; k < 4; ++k) {" in source
    assert "const int c = t + k * 32;" in source and "if (c < 100) {" in source


def test_a_row_that_the_threads_cover_exactly_needs_no_bounds_check():
    graph, kernel = _kernel(softmax(6, 64), "s")
    plan = choose_plan(enumerate_plans(graph, kernel))
    assert plan.row_cache == 2
    source = emit_kernel(graph, kernel, plan, "k").source
    assert "if (c < 64)" not in source and "const int c = t + k * 32;" in source


def test_layer_norm_caches_the_input_then_the_centred_value_and_nothing_else():
    graph, kernel = _kernel(layer_norm(7, 100), "vs")
    plan = choose_plan(enumerate_plans(graph, kernel))
    assert plan.row_cache == 4
    source = emit_kernel(graph, kernel, plan, "k").source
    arrays = [line.split()[1].split("[")[0] for line in source.splitlines()
              if "_row[4];" in line]
    assert sorted(array.split("_", 1)[1] for array in arrays) == ["convert_row",
                                                                   "subtract_row"]
    assert source.count("in0[") == 1 and _tags(source, "_subtract") == 1


def test_cached_kernels_of_the_same_structure_have_the_same_source():
    graph = import_hlo(TWO_LAYERS, "layers.hlo")
    model = SolModel(graph, H100)
    specs = [KernelSpec(nodes=[f"{p}.{n}" for n in names], kind="stitch-regional",
                        dominant=f"{p}.{names[1]}")
             for p, names in (("layer0", ("exp", "sum", "b", "y")),
                              ("block1", ("e", "total", "bc", "out")))]
    first, second = build_plan(graph, specs, "test", model).kernels
    a, b = (emit_kernel(graph, k, choose_plan(enumerate_plans(graph, k)), "k")
            for k in (first, second))
    assert a.plan.row_cache and a.source == b.source
    assert "layer0" not in a.source and "block1" not in b.source


def test_no_cached_variant_without_reuse_nor_for_cooperative_plans():
    # One reduction and only its result written: nothing a later loop reads again.
    text = _REDUCERS.format(name="sum", dt="f32") + """
ENTRY main {
  x = f32[8,100] parameter(0)
  zero = f32[] constant(0)
  ROOT s = f32[8] reduce(x, zero), dimensions={1}, to_apply=add
}
"""
    graph = import_hlo(text, "t.hlo")
    plans = enumerate_plans(graph, one_kernel(graph, "input", "s"))
    assert any(p.schedule in ROW_SCHEDULES for p in plans)
    assert not any(p.row_cache for p in plans)
    # layer_norm_bwd's globally stitched kernel: its row plans are cooperative.
    from compiler.fusion.explore import explore

    graph = import_hlo((DATA / "layer_norm_bwd.hlo").read_text(), "layer_norm_bwd.hlo")
    (kernel,) = explore(graph, "h100", ["stitch"])["stitch"].kernels
    plans = enumerate_plans(graph, kernel)
    assert any(p.cooperative for p in plans)
    assert not any(p.row_cache for p in plans)


def test_the_workload_counts_cached_values_once():
    rows, length = 64, 1000
    graph, kernel = _kernel(softmax(rows, length), "s")
    cached, plain = next((c, p) for c, p in _twins(enumerate_plans(graph, kernel))
                         if c.schedule == "row-reduce-block" and c.block_size == 128)
    assert cached.row_cache == 8
    w_cached = kernel_workload(graph, kernel, cached, H100)
    w_plain = kernel_workload(graph, kernel, plain, H100)
    # exp and divide issue one MUFU op each: once per element, against exp twice uncached.
    assert w_cached.instructions["xu"] == 2 * rows * length
    assert w_plain.instructions["xu"] == 3 * rows * length
    reads = [a for a in w_cached.accesses if a.role == "read"]
    assert len(reads) == 1 and reads[0].elements == rows * length
    assert w_cached.l2_bytes == w_plain.l2_bytes - 2 * 4 * rows * length  # x's re-reads
    assert w_cached.dram_read_bytes == w_plain.dram_read_bytes == 4 * rows * length


def test_a_large_softmax_projects_no_slower_cached_and_faster_where_latency_limits():
    graph, kernel = _kernel(softmax(4096, 1024), "s")
    plans = enumerate_plans(graph, kernel)
    times = {p: b.projected_us for p, b in rank_plans(graph, kernel, plans, H100)}
    twins = _twins(plans)
    assert {c.block_size for c, _ in twins} == {128, 256, 512, 1024}
    assert all(times[c] <= times[p] for c, p in twins)
    # A block of 1024 threads per row: one element each, latency-bound; the cache saves the
    # re-reads' round trips.
    one = next((c, p) for c, p in twins if c.block_size == 1024)
    assert times[one[0]] < 0.8 * times[one[1]]


def test_cached_kernels_build_for_sm80_and_sm90_without_spilling():
    build_kernels = _nvcc()
    sources = {}
    for module, (make, dominant) in sorted(MODULES.items()):
        for dt in ("f32", "bf16"):
            graph, kernel = _kernel(make(16, 1000, dt), dominant)
            for plan in enumerate_plans(graph, kernel):
                if plan.row_cache:  # K = 8, 4, 2, 1: blocks of 128 to 1024 threads
                    name = f"{module}_{dt}_{plan.block_size}"
                    sources[name] = emit_kernel(graph, kernel, plan, name).source
    assert len(sources) == 24
    for arch in ("sm_80", "sm_90"):
        results = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        failed = {name: r.error for name, r in results.items() if not r.ok}
        assert not failed, failed
        # No spills, and no stack frame: the arrays live in registers, not in local memory.
        spilled = {name: (r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes)
                   for name, r in results.items()
                   if r.spill_store_bytes or r.spill_load_bytes or r.stack_bytes}
        assert not spilled, (arch, spilled)
