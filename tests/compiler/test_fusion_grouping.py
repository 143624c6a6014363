"""GroupGraph: merges stay acyclic, checked against a brute-force contraction of the graph."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.fusion.grouping import (FUSIBLE, LEAF, LIBRARY, PLUMBING, SPACING, GroupGraph,
                                      WindowTooWide, _Walk, is_duplicable, node_role)
from compiler.importers.hlo_text import import_hlo


def chain_graph(edges: list[tuple[int, int]], n: int):
    """An HLO graph of n nodes `v0..v{n-1}` (elementwise adds) with the given edges (i < j)."""
    lines = ["ENTRY e {", "  p = f32[4] parameter(0)"]
    for j in range(n):
        operands = [f"v{i}" for i, k in edges if k == j] or ["p"]
        while len(operands) < 2:
            operands.append("p")
        expr = operands[0]
        for k, operand in enumerate(operands[1:]):
            name = f"v{j}" if k == len(operands) - 2 else f"v{j}_{k}"
            lines.append(f"  {name} = f32[4] add({expr}, {operand})")
            expr = name
    lines.append(f"  ROOT r = f32[4] add(v{n - 1}, p)")
    lines.append("}")
    return import_hlo("\n".join(lines), "chain.hlo")


def contracted_is_acyclic(graph, group_of: dict[str, str]) -> bool:
    g = nx.DiGraph()
    g.add_nodes_from(set(group_of.values()))
    for node in graph:
        for operand in node.operands:
            if operand in group_of and node.name in group_of:
                a, b = group_of[operand], group_of[node.name]
                if a != b:
                    g.add_edge(a, b)
    return nx.is_directed_acyclic_graph(g)


@st.composite
def dags_and_merges(draw):
    n = draw(st.integers(3, 12))
    edges = [(i, j) for j in range(n) for i in range(j) if draw(st.booleans())
             and draw(st.integers(0, 3)) == 0]
    merges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20))
    return n, edges, merges


def assert_ranks_are_a_topological_order(groups: GroupGraph) -> None:
    """Ranks grow along groups() (every group once) and along every edge."""
    order = groups.groups()
    assert sorted(order) == sorted(groups.members)
    ranks = [groups.rank[g] for g in order]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
    for group in groups.members:
        for consumer in groups.consumers(group):
            assert groups.rank[group] < groups.rank[consumer]


@settings(max_examples=200, deadline=None)
@given(dags_and_merges(), st.sampled_from([SPACING, 2]))
def test_can_merge_agrees_with_brute_force_and_ranks_stay_topological(case, spacing):
    # spacing 2 leaves no room between ranks: every move re-spreads its neighbours.
    n, edges, merges = case
    graph = chain_graph(edges, n)
    groups = GroupGraph(graph, spacing=spacing)
    for i, j in merges:
        a, b = groups.group_of[f"v{i}"], groups.group_of[f"v{j}"]
        if a == b:
            continue
        trial = {node: (a if g == b else g) for node, g in groups.group_of.items()}
        expected = contracted_is_acyclic(graph, trial)
        assert groups.can_merge(a, b) == expected
        if expected:
            groups.merge(a, b)
        assert_ranks_are_a_topological_order(groups)
        assert contracted_is_acyclic(graph, groups.group_of)


@settings(max_examples=150, deadline=None)
@given(dags_and_merges(), st.sampled_from([SPACING, 2]), st.data())
def test_merging_several_groups_at_once_agrees_with_brute_force(case, spacing, data):
    n, edges, merges = case
    graph = chain_graph(edges, n)
    groups = GroupGraph(graph, spacing=spacing)
    for _ in merges:
        names = sorted(groups.members)
        if len(names) < 2:
            break
        pieces = data.draw(st.sets(st.sampled_from(names), min_size=2, max_size=4))
        head = data.draw(st.sampled_from(sorted(pieces)))
        trial = {node: (head if g in pieces else g) for node, g in groups.group_of.items()}
        expected = contracted_is_acyclic(graph, trial)
        assert (groups.check(pieces) is None) == expected
        if expected:
            assert groups.merge_all(head, pieces) == head
            assert set(groups.members) == (set(names) - pieces) | {head}
        else:
            before = dict(groups.rank)
            with pytest.raises(ValueError, match="would form a cycle"):
                groups.merge_all(head, pieces)
            assert groups.rank == before
        assert_ranks_are_a_topological_order(groups)
        assert contracted_is_acyclic(graph, groups.group_of)


def test_a_merge_moves_the_small_side_of_a_lopsided_window():
    # v0 -> v1 and v0 -> v202; v202 also reads the end of a long chain v2 -> ... -> v201,
    # so v202 ranks after the chain. Merging v0 with v202 is safe; the walk backward from
    # v202 would visit the whole chain, the walk forward from v0 only v1: a budget far below
    # the chain's length suffices, and only v1 moves.
    edges = [(0, 1), (0, 202), (201, 202)] + [(i, i + 1) for i in range(2, 201)]
    graph = chain_graph(edges, 203)
    groups = GroupGraph(graph)
    a, b = groups.group_of["v0"], groups.group_of["v202"]
    chain = [groups.group_of[f"v{i}"] for i in range(2, 202)]
    before = {g: groups.rank[g] for g in chain}
    assert groups.merge(a, b, budget=8) == a
    assert {g: groups.rank[g] for g in chain} == before
    assert groups.rank[groups.group_of["v1"]] > groups.rank[a]
    assert_ranks_are_a_topological_order(groups)
    assert contracted_is_acyclic(graph, groups.group_of)


def test_groups_see_through_tuples_and_skip_leaves():
    graph = import_hlo("""
        less {
          a = f32[] parameter(0)
          b = f32[] parameter(1)
          c = f32[] parameter(2)
          d = f32[] parameter(3)
          ROOT lt = pred[] compare(a, b), direction=LT
        }
        ENTRY e {
          p = f32[4] parameter(0)
          c = f32[] constant(1)
          b = f32[4] broadcast(c), dimensions={}
          a = f32[4] add(p, b)
          s = (f32[4], f32[4]) sort(a, p), dimensions={0}, to_apply=less
          g = f32[4] get-tuple-element(s), index=0
          m = f32[4] multiply(g, g)
          ROOT t = (f32[4], f32[4]) tuple(m, a)
        }
    """, "t.hlo")
    groups = GroupGraph(graph)
    assert set(groups.group_of) == {"b", "a", "s", "m"}
    assert groups.producers("m") == ["s"] and groups.producers("a") == ["b"]
    roles = [node_role(graph.node(n)) for n in ("p", "c", "g", "t", "a", "s")]
    assert roles == [LEAF, LEAF, PLUMBING, PLUMBING, FUSIBLE, LIBRARY]


def test_roles_and_duplication_follow_xla():
    graph = import_hlo("""
        ENTRY e {
          p = f32[4,4] parameter(0)
          x = f32[4,4] exponential(p)
          n = f32[4,4] negate(p)
          b = f32[4,4,2] broadcast(n), dimensions={0,1}
          d = f32[4,4] dot(x, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          ROOT t = (f32[4,4,2], f32[4,4]) tuple(b, d)
        }
    """, "r.hlo")
    assert node_role(graph.node("d")) == LIBRARY
    assert not is_duplicable(graph.node("x"))  # exp is expensive: never computed twice
    assert is_duplicable(graph.node("n")) and is_duplicable(graph.node("b"))
    assert not is_duplicable(graph.node("d"))


def test_a_merge_whose_cycle_check_would_walk_too_far_is_refused_untouched():
    # v0 starts a chain v1 -> ... -> v40; v82 reads v0 and the end of another chain v42 ->
    # ... -> v81, so it ranks after both chains. Merging v0 with v82 is safe (no path through
    # a third group), but checking that walks v0's chain.
    edges = [(i, i + 1) for i in range(0, 40)] + [(i, i + 1) for i in range(42, 81)]
    edges += [(0, 82), (81, 82)]
    graph = chain_graph(edges, 83)
    groups = GroupGraph(graph)
    a, b = groups.group_of["v0"], groups.group_of["v82"]
    before = dict(groups.rank)
    with pytest.raises(WindowTooWide, match="more than 8 groups"):
        groups.merge(a, b, budget=8)
    assert groups.rank == before and len(groups.members) == len(before)
    assert groups.merge(a, b, budget=200) == a
    assert contracted_is_acyclic(graph, groups.group_of)


def test_a_cycle_check_walks_from_the_pieces_in_rank_order_whatever_the_hash_seed():
    # Which walk of a merge's cycle check ends first decides whether a refused merge is "would
    # form cycle" or "too far apart", so the walk must not start in the pieces' set order,
    # which follows the strings' hashes and changes from process to process. Here the piece
    # this process's set yields first is given the higher rank: a walk in set order would
    # start from its neighbour.
    pieces = frozenset({"p", "q"})
    first, second = list(pieces)
    rank = {second: 0, first: 1, f"{second}-next": 2, f"{first}-next": 3}
    edges = {second: [f"{second}-next"], first: [f"{first}-next"],
             f"{second}-next": [], f"{first}-next": []}
    walk = _Walk("forward", pieces, edges, rank, end=10)
    assert walk.step() is None
    assert walk.seen == {f"{second}-next"}
