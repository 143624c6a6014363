"""Plan edits (compiler/fusion/edits.py): merge, split, move, forbid, force, split a kind.

Every edited plan is checked as a strategy's plan is (invariants, code budget, and executed
kernel by kernel against the reference interpreter), and its incremental prices against a
plan built and priced from scratch with a fresh pricer: the kernels an edit did not touch keep
their figures, the touched ones are priced again, and the two must agree to the last bit.
Refusals leave the plan as it was and say why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.fusion.edits import (EditRefused, Forbid, Force, Merge, Move, PlanEditor, Split,
                                   SplitKind)
from compiler.fusion.explore import explore
from compiler.fusion.pricing import ProjectedPricer, price_plan
from compiler.fusion.unfused import unfused
from compiler.importers import import_bytes, load_graph
from compiler.kernels.plan import MAX_KERNEL_NODES, KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"

# exp -> (add with y) -> negate, with a side branch: m = multiply(e, e) read by the end.
CHAIN = b"""HloModule chain
ENTRY main {
  x = f32[1024] parameter(0)
  y = f32[1024] parameter(1)
  e = f32[1024] exponential(x)
  a = f32[1024] add(e, y)
  n = f32[1024] negate(a)
  m = f32[1024] multiply(e, e)
  ROOT out = f32[1024] add(n, m)
}
"""

DOT = b"""HloModule dot
ENTRY main {
  x = f32[64,64] parameter(0)
  w = f32[64,64] parameter(1)
  e = f32[64,64] exponential(x)
  d = f32[64,64] dot(e, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[64,64] tanh(d)
}
"""


def editor_of(source: bytes, name: str, plan=None) -> PlanEditor:
    (graph,) = import_bytes(source, name)
    model = SolModel(graph, get_device("h100"))
    return PlanEditor(graph, model, plan or unfused(graph, model))


def kernel_of(plan, node: str):
    return next(k for k in plan.kernels if node in k.nodes)


def assert_priced_as_from_scratch(editor: PlanEditor) -> None:
    """The edited plan's kernels and prices are those of the same kernels built and priced
    anew (`build_plan`, a fresh pricer)."""
    graph, plan = editor.graph, editor.plan
    specs = [KernelSpec(list(k.nodes), k.kind, list(k.recomputed), k.dominant)
             for k in plan.kernels]
    fresh = build_plan(graph, specs, "fresh", editor.model)
    price_plan(fresh, ProjectedPricer(graph, editor.model, plan.runtime))
    assert [(k.nodes, k.recomputed, k.inputs, k.outputs) for k in fresh.kernels] == \
        [(k.nodes, k.recomputed, k.inputs, k.outputs) for k in plan.kernels]
    assert [k.projected.projected_us for k in fresh.kernels] == \
        [k.projected.projected_us for k in plan.kernels]
    assert fresh.projected_totals() == plan.projected_totals()


def test_a_merge_makes_one_kernel_that_computes_the_graph(plan_checker):
    editor = editor_of(CHAIN, "chain.hlo")
    before = len(editor.plan.kernels)
    e, a = kernel_of(editor.plan, "e").name, kernel_of(editor.plan, "a").name
    result = editor.apply(Merge((e, a)))
    plan = editor.plan
    assert len(plan.kernels) == before - 1 and plan.strategy == "custom"
    merged = kernel_of(plan, "e")
    assert set(merged.nodes) == {"e", "a"} and merged.kind == "loop"
    assert [k.nodes for k in result.added] == [merged.nodes]
    assert sorted(k.name for k in result.removed) == sorted([e, a])
    # Both stay written: m's kernel reads e, n's reads a.
    assert set(merged.outputs) == {"e", "a"}
    assert result.after_us < result.before_us   # one launch and one round trip fewer
    why = result.explanation()
    # The kernels' JSON rounds their figures to 0.1 ns.
    assert why["delta_us"] == pytest.approx(result.after_us - result.before_us, abs=1e-3)
    assert sum(row["delta_us"] for row in why["causes"]) == pytest.approx(why["delta_us"])
    launch = next(row for row in why["causes"] if row["cause"] == "launch")
    assert launch["a_us"] == pytest.approx(2 * launch["b_us"])   # two launches became one
    plan_checker(editor.graph, plan)
    assert_priced_as_from_scratch(editor)


def test_a_merge_that_makes_a_cycle_is_refused_naming_the_kernel_between():
    editor = editor_of(CHAIN, "chain.hlo")
    plan = editor.plan
    e, n = kernel_of(plan, "e").name, kernel_of(plan, "n").name
    a = kernel_of(plan, "a").name
    with pytest.raises(EditRefused) as refused:
        editor.apply(Merge((e, n)))     # a reads e and n reads a: a's kernel sits between
    assert f"makes a cycle through {a} (a" in str(refused.value)
    assert str(refused.value).startswith(f"merge {e}, {n}: ")
    assert editor.plan is plan and editor.log == []


def test_split_back_into_ops_and_a_split_of_named_ops(plan_checker):
    path = DATA / "layer_norm_fwd.hlo"
    graph = load_graph(str(path))
    plan = explore(graph, "h100", ["cost"])["cost"]
    model = SolModel(graph, get_device("h100"))
    editor = PlanEditor(graph, model, plan)
    big = max(plan.kernels, key=lambda k: len(k.nodes))
    assert len(big.nodes) > 2
    editor.apply(Split(big.name))
    assert len(editor.plan.kernels) == len(plan.kernels) - 1 + len(big.nodes)
    plan_checker(graph, editor.plan)
    assert_priced_as_from_scratch(editor)
    editor.undo()
    assert editor.plan is plan
    last = big.nodes[-1]
    editor.apply(Split(big.name, (last,)))
    assert kernel_of(editor.plan, last).nodes == (last,)
    plan_checker(graph, editor.plan)
    assert_priced_as_from_scratch(editor)


def test_forbid_parts_a_fused_edge_and_refuses_to_join_it_again_force_joins(plan_checker):
    editor = editor_of(CHAIN, "chain.hlo")
    everything = [k.name for k in editor.plan.kernels]
    editor.apply(Merge(tuple(everything)))
    assert len(editor.plan.kernels) == 1
    editor.apply(Forbid("a", "n"))
    # n and what reads it in the kernel (out) leave; e, a, m stay.
    assert set(kernel_of(editor.plan, "a").nodes) == {"e", "a", "m"}
    assert set(kernel_of(editor.plan, "n").nodes) == {"n", "out"}
    plan_checker(editor.graph, editor.plan)
    assert_priced_as_from_scratch(editor)
    with pytest.raises(EditRefused, match="fusing a -> n is forbidden"):
        editor.apply(Merge(tuple(k.name for k in editor.plan.kernels)))
    editor.undo()
    assert len(editor.plan.kernels) == 1 and not editor.forbidden
    editor.redo()
    assert ("a", "n") in editor.forbidden
    editor.undo()
    editor.undo()
    editor.apply(Force("e", "m"))
    assert kernel_of(editor.plan, "e") is kernel_of(editor.plan, "m")
    with pytest.raises(EditRefused, match="n does not read e"):
        editor.apply(Force("e", "n"))
    with pytest.raises(EditRefused, match="y is owned by no kernel"):
        editor.apply(Force("y", "a"))


def test_move_and_split_kind(plan_checker):
    editor = editor_of(CHAIN, "chain.hlo")
    into = kernel_of(editor.plan, "a").name
    editor.apply(Move(("n",), into))
    assert set(kernel_of(editor.plan, "n").nodes) == {"a", "n"}
    plan_checker(editor.graph, editor.plan)
    assert_priced_as_from_scratch(editor)
    editor.apply(SplitKind("loop"))
    assert all(len(k.nodes) == 1 for k in editor.plan.kernels)
    plan_checker(editor.graph, editor.plan)
    with pytest.raises(EditRefused, match="no stitch-global kernel"):
        editor.apply(SplitKind("stitch-global"))


def test_a_library_call_stays_alone_and_names_are_checked():
    editor = editor_of(DOT, "dot.hlo")
    plan = editor.plan
    d, e = kernel_of(plan, "d").name, kernel_of(plan, "e").name
    with pytest.raises(EditRefused, match=r"library call \(d\): it runs alone"):
        editor.apply(Merge((e, d)))
    with pytest.raises(EditRefused, match="no kernel named loop.99"):
        editor.apply(Merge((e, "loop.99")))
    with pytest.raises(EditRefused, match="no node named nope"):
        editor.apply(Move(("nope",), e))
    with pytest.raises(EditRefused, match=f"t is not owned by {e} but by"):
        editor.apply(Split(e, ("t",)))
    assert editor.plan is plan


def test_a_merge_past_the_kernel_cap_is_refused():
    steps = MAX_KERNEL_NODES + 20
    lines = ["HloModule long", "ENTRY main {", "  v0 = f32[256] parameter(0)"]
    for i in range(steps):
        lines.append(f"  v{i + 1} = f32[256] sine(v{i})")
    lines += [f"  ROOT out = f32[256] negate(v{steps})", "}"]
    editor = editor_of("\n".join(lines).encode(), "long.hlo")
    names = tuple(k.name for k in editor.plan.kernels)
    with pytest.raises(EditRefused, match=f"> {MAX_KERNEL_NODES} in one kernel"):
        editor.apply(Merge(names))
    editor.apply(Merge(names[:MAX_KERNEL_NODES]))
    assert max(len(k.nodes) for k in editor.plan.kernels) == MAX_KERNEL_NODES


@pytest.mark.parametrize("name", ["attention_block.hlo", "layer_norm_bwd.hlo", "adam.hlo",
                                  "cross_entropy_grad.hlo"])
def test_random_edits_of_a_cost_plan_stay_legal_and_priced_as_from_scratch(name, plan_checker):
    """Twelve edits drawn at random (merge a kernel with a reader of its output, split one
    into its ops, split its last op out, forbid one of its edges), each checked against the
    same plan built and priced anew; the last plan runs against the interpreter."""
    import random

    graph = load_graph(str(DATA / name))
    plan = explore(graph, "h100", ["cost"])["cost"]
    editor = PlanEditor(graph, SolModel(graph, get_device("h100")), plan)
    rng = random.Random(7)
    applied = 0
    for step in range(48):
        if applied == 12:
            break
        generated = [k for k in editor.plan.kernels if k.kind != "library"]
        several = [k for k in generated if len(k.nodes) > 1]
        kind = step % 4
        if kind == 0:
            producer = rng.choice(generated)
            readers = [k for k in generated if set(k.inputs) & set(producer.outputs)]
            edit = Merge((producer.name, rng.choice(readers).name)) if readers else None
        elif not several:
            edit = None
        elif kind == 1:
            edit = Split(rng.choice(several).name)
        elif kind == 2:
            kernel = rng.choice(several)
            edit = Split(kernel.name, (kernel.nodes[-1],))
        else:
            kernel = rng.choice(several)
            inside = set(kernel.nodes)
            edges = [(n, u) for n in kernel.nodes for u in editor.facts.users[n] if u in inside]
            edit = Forbid(*rng.choice(edges)) if edges else None
        if edit is None:
            continue
        try:
            editor.apply(edit)
        except EditRefused as refusal:
            assert "cycle" in str(refusal) or "forbidden" in str(refusal), str(refusal)
            continue
        applied += 1
        assert_priced_as_from_scratch(editor)
    assert applied >= 8
    plan_checker(graph, editor.plan)


def test_a_merge_past_the_operand_budget_is_refused():
    """Sixty independent negations, each reading a parameter and returned: one kernel of all
    would pass 120 operands and outputs, over XLA's 96; forty make 80."""
    lines = ["HloModule wide", "ENTRY main {"]
    lines += [f"  p{i} = f32[64] parameter({i})" for i in range(60)]
    lines += [f"  n{i} = f32[64] negate(p{i})" for i in range(60)]
    lines += ["  ROOT out = (" + ", ".join("f32[64]" for _ in range(60)) + ") tuple("
              + ", ".join(f"n{i}" for i in range(60)) + ")", "}"]
    editor = editor_of("\n".join(lines).encode(), "wide.hlo")
    names = tuple(kernel_of(editor.plan, f"n{i}").name for i in range(60))
    with pytest.raises(EditRefused, match="would have 120 operands and outputs, over 96"):
        editor.apply(Merge(names))
    editor.apply(Merge(names[:40]))
    assert len(kernel_of(editor.plan, "n0").nodes) == 40


def test_kernels_the_code_generator_cannot_emit_yet_are_edited_unpriced():
    """4-bit integers have no CUDA code yet: the strategies leave such kernels unprojected,
    and so do edits, which still apply (XLA's corpus: a transpose of s4 values)."""
    import math

    graph = load_graph(str(DATA.parent / "xla" / "transpose__packed_transpose_s4.hlo"))
    plan = explore(graph, "h100", ["unfused"])["unfused"]
    (kernel,) = plan.kernels
    assert kernel.projected is None
    editor = PlanEditor(graph, SolModel(graph, get_device("h100")), plan)
    result = editor.apply(Split(kernel.name))
    (again,) = editor.plan.kernels
    assert again.nodes == kernel.nodes and again.projected is None
    assert math.isnan(result.after_us)
