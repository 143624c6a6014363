"""Pricing candidate kernels (compiler/fusion/pricing.py): one price for fusion decisions and
plan totals.

The projected price of a kernel is the projected time of the best CodeGen plan the code
generator enumerates for it, as `rank_plans` ranks them; the SOL price is the speed of light;
every price is at least its speed of light. Prices are cached by structure: kernels that differ
only in node names (the layers of a model, which also read different parameters) share one,
and kernels of other shapes, layouts, ops or edges do not. `explore` shows each kernel under
the projected price, and the plan total is the sum of its kernels' prices.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.codegen.schedules import enumerate_plans
from compiler.cost.projected import rank_plans
from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.fusion.pricing import ProjectedPricer, Signature, SolPricer, make_pricer, plan_price
from compiler.importers import import_bytes, load_graph
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target import SolModel, get_device
from compiler.target.launch import launch_for

DATA = Path(__file__).resolve().parent.parent / "data"

ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# Two identical "layers" (a row softmax each) over different parameters, then a third of
# another row length.
LAYERS = ADD + """
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x1 = f32[512,1024] parameter(0)
  x2 = f32[512,1024] parameter(1)
  x3 = f32[512,2048] parameter(2)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m1 = f32[512] reduce(x1, ninf), dimensions={1}, to_apply=max
  b1 = f32[512,1024] broadcast(m1), dimensions={0}
  d1 = f32[512,1024] subtract(x1, b1)
  e1 = f32[512,1024] exponential(d1)
  m2 = f32[512] reduce(x2, ninf), dimensions={1}, to_apply=max
  b2 = f32[512,1024] broadcast(m2), dimensions={0}
  d2 = f32[512,1024] subtract(x2, b2)
  e2 = f32[512,1024] exponential(d2)
  m3 = f32[512] reduce(x3, ninf), dimensions={1}, to_apply=max
  b3 = f32[512,2048] broadcast(m3), dimensions={0}
  d3 = f32[512,2048] subtract(x3, b3)
  e3 = f32[512,2048] exponential(d3)
  ROOT t = (f32[512,1024], f32[512,1024], f32[512,2048]) tuple(e1, e2, e3)
}
"""


def hlo(text: str):
    return import_bytes(text.encode(), "test.hlo")[0]


def layer_kernels(graph):
    """Each softmax layer as one regional kernel."""
    model = SolModel(graph, get_device("h100"))
    specs = [KernelSpec([f"m{k}", f"d{k}", f"e{k}"], "stitch-regional", [f"b{k}"], f"m{k}")
             for k in (1, 2, 3)]
    return model, build_plan(graph, specs, "test", model).kernels


def by_dominant(kernels):
    return {kernel.dominant: kernel for kernel in kernels}


def test_the_projected_price_is_the_best_ranked_codegen_plan():
    graph = hlo(LAYERS)
    model, kernels = layer_kernels(graph)
    pricer = ProjectedPricer(graph, model)
    for kernel in kernels:
        plan, breakdown = rank_plans(graph, kernel, enumerate_plans(graph, kernel),
                                     model.device)[0]
        price = pricer.price(kernel)
        # Its device work, and the launch term of a CUDA graph node (the default runtime).
        assert price.device_us == breakdown.projected_us
        assert price.us == breakdown.projected_us + launch_for("h100", "graph").gap_us
        assert price.plan.schedule == plan.schedule and price.model == "projected"
        assert price.sol_us == kernel.sol.total_us <= price.device_us


def test_kernels_that_differ_only_in_names_share_a_price_and_others_do_not():
    graph = hlo(LAYERS)
    model, kernels = layer_kernels(graph)
    kernels = by_dominant(kernels)
    signature = Signature(graph)
    assert signature.of(kernels["m1"]) == signature.of(kernels["m2"])
    assert signature.of(kernels["m1"]) != signature.of(kernels["m3"])
    pricer = ProjectedPricer(graph, model)
    first, second, third = (pricer.price(kernels[k]) for k in ("m1", "m2", "m3"))
    assert pricer.asked == 3 and pricer.priced == 2
    assert first == second and third.us > first.us  # twice the bytes


def test_a_different_layout_or_edge_changes_the_signature():
    graph = hlo("""
    ENTRY e {
      p = f32[64,32]{1,0} parameter(0)
      q = f32[64,32]{1,0} parameter(1)
      t = f32[64,32]{0,1} parameter(2)
      a1 = f32[64,32] add(p, q)
      b1 = f32[64,32] multiply(a1, q)
      a2 = f32[64,32] add(q, p)
      b2 = f32[64,32] multiply(a2, p)
      a3 = f32[64,32] add(t, q)
      b3 = f32[64,32] multiply(a3, q)
      a4 = f32[64,32] add(p, q)
      b4 = f32[64,32] multiply(a4, p)
      ROOT r = (f32[64,32], f32[64,32], f32[64,32], f32[64,32]) tuple(b1, b2, b3, b4)
    }
    """)
    model = SolModel(graph, get_device("h100"))
    specs = [KernelSpec([f"a{k}", f"b{k}"], "loop", [], f"b{k}") for k in (1, 2, 3, 4)]
    signature = Signature(graph)
    keys = [signature.of(kernel)
            for kernel in sorted(build_plan(graph, specs, "t", model).kernels,
                                 key=lambda kernel: kernel.dominant)]
    same_structure, other_layout, other_edge = keys[1], keys[2], keys[3]
    assert keys[0] == same_structure      # other parameters, read in the same pattern
    assert keys[0] != other_layout        # a column-major input
    assert keys[0] != other_edge          # the multiply reads the add's other input


def test_the_sol_price_is_the_speed_of_light():
    graph = hlo(LAYERS)
    model, kernels = layer_kernels(graph)
    pricer = SolPricer(graph, model)
    stream = SolPricer(graph, model, runtime="stream")
    for kernel in kernels:
        assert pricer.price(kernel).device_us == kernel.sol.total_us
        assert pricer.price(kernel).us == launch_for("h100", "graph").kernel_us(
            kernel.sol.total_us)
        assert stream.price(kernel).us == launch_for("h100", "stream").kernel_us(
            kernel.sol.total_us)
        assert pricer.price(kernel).plan is None


def test_an_unknown_or_unusable_cost_model_is_a_clear_error():
    graph = hlo(LAYERS)
    model = SolModel(graph, get_device("h100"))
    with pytest.raises(InputError, match="unknown cost model 'fast'.*projected, sol, learned"):
        make_pricer("fast", graph, model)
    with pytest.raises(InputError, match="needs a model file"):
        make_pricer("learned", graph, model)


@pytest.mark.parametrize("name", ["softmax", "layer_norm_bwd", "transformer_step_bf16"])
def test_explore_shows_every_kernel_at_its_price_and_totals_add_up(name):
    graph = load_graph(str(DATA / "hlo" / f"{name}.hlo"))
    plans = explore(graph, "h100")
    model = SolModel(graph, get_device("h100"))
    pricer = ProjectedPricer(graph, model)
    for plan in plans.values():
        for kernel in plan.kernels:
            price = pricer.price(kernel)
            assert kernel.projected is not None
            assert kernel.projected.projected_us == pytest.approx(price.device_us)
        assert plan.total_projected_us == pytest.approx(plan_price(plan, pricer), abs=1e-3)


# DRAM-bound kernels large enough that launch latency does not matter: most of their plans run
# at the floor.
WIDE = ADD + """
ENTRY e {
  p = f32[8192,4096] parameter(0)
  q = f32[8192,4096] parameter(1)
  a = f32[8192,4096] add(p, q)
  m = f32[8192,4096] multiply(a, q)
  c = bf16[8192,4096] convert(m)
  z = f32[] constant(0)
  s = f32[8192] reduce(a, z), dimensions={1}, to_apply=add
  ROOT t = (bf16[8192,4096], f32[8192]) tuple(c, s)
}
"""


@pytest.mark.parametrize("text", [LAYERS, WIDE], ids=["softmax_layers", "wide"])
def test_stopping_at_the_floor_never_changes_a_price(text):
    """A plan at the pricer's floor (the DRAM-bound speed of light) ends the search for the
    kernel's plan: the price is the one the full ranking of every family finds."""
    graph = hlo(text)
    model = SolModel(graph, get_device("h100"))
    kernels = [k for plan in explore(graph, "h100").values() for k in plan.kernels
               if k.kind != "library"]
    pricer = ProjectedPricer(graph, model)
    for kernel in kernels:
        floor = pricer.device_bound(kernel.sol)
        full = pricer.best_plans(kernel, 1)
        early = pricer.best_plans(kernel, 1, floor_us=floor)
        assert early[0][1].projected_us == pytest.approx(full[0][1].projected_us, rel=1e-9)
        assert full[0][1].projected_us >= floor * (1 - 1e-9)  # the floor is a lower bound


@pytest.mark.xfail(strict=True, reason="the loaded latency (compiler/cost/projected.py) puts "
                   "every plan that moves bytes above the DRAM floor by its exposed idle round "
                   "trips, so `device_bound` is never reached and the shortcut is not taken; "
                   "the floor needs the least exposed latency of the kernel's plans")
def test_the_floor_is_reached_by_some_kernel():
    graph = hlo(LAYERS)
    model = SolModel(graph, get_device("h100"))
    pricer = ProjectedPricer(graph, model)
    kernels = [k for plan in explore(graph, "h100").values() for k in plan.kernels
               if k.kind != "library"]
    assert any(abs(pricer.best_plans(k, 1)[0][1].projected_us - pricer.device_bound(k.sol))
               <= 1e-9 * pricer.device_bound(k.sol) for k in kernels)


@pytest.mark.parametrize("source", ["softmax_layers", "transformer_step_bf16.hlo"])
def test_candidates_of_one_structure_share_their_verdict_and_change_no_plan(source, monkeypatch):
    """The cost search judges a candidate once per structure (`Search._bound`,
    compiler/fusion/cost_based/search.py): the kernel it outlines has the key the pricer
    computes for the kernel it builds, and a search that analyses every candidate anew makes
    the same plan, decision log included."""
    from compiler.fusion import cost_based
    from compiler.fusion.cost_based import search

    graph = hlo(LAYERS) if source == "softmax_layers" else load_graph(str(DATA / "hlo" / source))
    model = SolModel(graph, get_device("h100"))
    checked = []

    class Checking(ProjectedPricer):
        def price(self, kernel, structure=None):
            if structure is not None:
                assert structure == self.signature.of(kernel)
                checked.append(structure)
            return super().price(kernel, structure)

    borrowed = []
    real_bound = search.Search._bound

    def counting_bound(search, pieces, key):
        verdict = real_bound(search, pieces, key)
        borrowed.append(verdict.borrowed)
        return verdict

    monkeypatch.setattr(search.Search, "_bound", counting_bound)
    shared = cost_based.cost_fusion(graph, model, pricer=Checking(graph, model))
    assert checked and sum(borrowed) > 0

    class Forgetful(dict):  # keeps no verdict: no candidate shares one
        def __setitem__(self, key, value):
            pass

    real_init = search.Search.__init__

    def forgetful_init(search, *args):
        real_init(search, *args)
        search._shapes = Forgetful()

    monkeypatch.setattr(search.Search, "__init__", forgetful_init)
    borrowed.clear()
    alone = cost_based.cost_fusion(graph, model, pricer=ProjectedPricer(graph, model))
    assert not any(borrowed)
    assert [(k.nodes, k.recomputed, k.kind, k.dominant, k.outputs) for k in shared.kernels] == \
        [(k.nodes, k.recomputed, k.kind, k.dominant, k.outputs) for k in alone.kernels]
    assert [(d.action, d.subject, d.reason) for d in shared.decisions] == \
        [(d.action, d.subject, d.reason) for d in alone.decisions]
