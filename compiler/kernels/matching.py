"""Two plans' kernels matched by the graph nodes they compute: which kernel of one plan is
which of the other, what each pair gains or loses, and where the grouping split or merged.

The compare page (explorer/views.py) and the regression gate (`python -m compiler compare`,
compiler/client.py) both read plans through these functions, so a change the page shows is
the change the gate counts. They take plans as the results JSON gives them (each kernel a dict
with "name", "nodes", "sol_us" and "proj_us"), not FusionPlan objects: the gate has only the
server's answers.
"""
from __future__ import annotations

from collections import defaultdict

MATCHED, ONLY_A, ONLY_B = "matched", "only in A", "only in B"


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def match_kernels(kernels_a: list[dict], kernels_b: list[dict]) -> list[dict]:
    """Pair kernels one to one by the overlap of their nodes (Jaccard), the most similar pair
    first; a kernel left without a partner is only in its plan. One row per pair or lone kernel:
    {"a", "b" (the kernels or None), "overlap", "status", "a_sol_us", "b_sol_us", "sol_delta",
    "a_proj_us", "b_proj_us", "proj_delta"}, largest absolute projected delta first (a lone
    kernel's delta is its whole time, lost or added)."""
    nodes_a = [set(kernel["nodes"]) for kernel in kernels_a]
    nodes_b = [set(kernel["nodes"]) for kernel in kernels_b]
    owners_b = defaultdict(set)
    for index, nodes in enumerate(nodes_b):
        for node in nodes:
            owners_b[node].add(index)
    candidates = []
    for i, nodes in enumerate(nodes_a):
        partners = set().union(*(owners_b[node] for node in nodes)) if nodes else set()
        candidates += [(-jaccard(nodes, nodes_b[j]), i, j) for j in partners]
    matched_a, matched_b, rows = set(), set(), []
    for negative_overlap, i, j in sorted(candidates):
        if i in matched_a or j in matched_b:
            continue
        matched_a.add(i)
        matched_b.add(j)
        rows.append(_match_row(kernels_a[i], kernels_b[j], -negative_overlap))
    rows += [_match_row(kernel, None, 0.0)
             for i, kernel in enumerate(kernels_a) if i not in matched_a]
    rows += [_match_row(None, kernel, 0.0)
             for j, kernel in enumerate(kernels_b) if j not in matched_b]
    rows.sort(key=lambda row: -abs(row["proj_delta"] or 0))
    return rows


def _match_row(a: dict | None, b: dict | None, overlap: float) -> dict:
    row = {"a": a, "b": b, "overlap": overlap,
           "status": MATCHED if a and b else (ONLY_A if a else ONLY_B)}
    for key, delta in (("sol_us", "sol_delta"), ("proj_us", "proj_delta")):
        row[f"a_{key}"] = a[key] if a else None
        row[f"b_{key}"] = b[key] if b else None
        # A kernel with no partner counts whole: its time is lost or added.
        before = a[key] if a else 0.0
        after = b[key] if b else 0.0
        row[delta] = None if before is None or after is None else after - before
    return row


def match_counts(rows: list[dict]) -> dict[str, int]:
    """How many rows of `match_kernels` are pairs, and how many kernels only one plan has."""
    return {key: sum(row["status"] == status for row in rows)
            for key, status in (("matched", MATCHED), ("only_a", ONLY_A), ("only_b", ONLY_B))}


def plan_changes(kernels_a: list[dict], kernels_b: list[dict]) -> dict[str, list[dict]]:
    """How the grouping changed: a kernel of A whose nodes B spreads over several kernels was
    split; a kernel of B that gathers nodes of several kernels of A is a merge. Nodes only one
    plan has (recomputed, or a different graph) are left out."""
    return {"split": _spread(kernels_a, kernels_b), "merged": _spread(kernels_b, kernels_a)}


def _spread(kernels: list[dict], others: list[dict]) -> list[dict]:
    owner = {}
    for other in others:
        for node in other["nodes"]:
            owner.setdefault(node, other["name"])
    changes = []
    for kernel in kernels:
        parts = defaultdict(list)
        for node in kernel["nodes"]:
            if node in owner:
                parts[owner[node]].append(node)
        if len(parts) > 1:
            changes.append({"kernel": kernel["name"],
                            "parts": [{"kernel": name, "nodes": nodes}
                                      for name, nodes in parts.items()]})
    return changes
