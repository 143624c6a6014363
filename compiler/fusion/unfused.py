"""The unfused baseline: one kernel per op, as an eager framework launches them.

Eager frameworks (PyTorch eager, CuPy) launch a kernel for every arithmetic op but not for
views: a reshape or bitcast of contiguous data is free, and a broadcast is a strided view the
consuming kernel reads. So a view here is recomputed by each kernel that reads it (through
chains of views) and gets a kernel of its own only when its value must exist in memory (the
graph returns it, or a library call, which takes no broadcast operands, reads a broadcast) or
when nothing reads it (dead code is launched like any other op), or when recomputing it would
make a kernel of over MAX_KERNEL_NODES nodes (a chain of thousands of reshapes).
"""

from __future__ import annotations

from compiler.ir.graph import Graph
from compiler.kernels.grouping import FUSIBLE, LIBRARY, node_role
from compiler.kernels.plan import (LIBRARY_OPERAND_VIEWS, MAX_KERNEL_NODES, Decision, FusionPlan,
                                   KernelSpec, build_plan)
from compiler.target.sol import SolModel

VIEWS = ("reshape", "bitcast", "broadcast")


def unfused(graph: Graph, model: SolModel) -> FusionPlan:
    specs: list[KernelSpec] = []
    own: dict[str, KernelSpec] = {}
    views: list[str] = []
    for node in graph:
        role = node_role(node)
        if role == FUSIBLE and node.op in VIEWS:
            views.append(node.name)
        elif role in (FUSIBLE, LIBRARY):
            kind = {LIBRARY: "library"}.get(role, "input" if node.op in (
                "reduce", "reduce-window") else "loop")
            own[node.name] = KernelSpec([node.name], kind, dominant=node.name)
            specs.append(own[node.name])

    users = graph.users()
    outputs = set(graph.output_names())
    kept = _views_kept_in_memory(graph, set(views))
    needers: dict[str, list[KernelSpec]] = {}
    decisions = []
    for view in reversed(views):  # readers before the views they read
        must_own = view in outputs or view in kept
        found: list[KernelSpec] = []
        for reader in users[view]:
            if reader in own:
                found.append(own[reader])
            elif reader in needers:
                found.extend(needers[reader])
            else:
                must_own = True  # read by plumbing: the value leaves the kernels
        if graph.nodes[view].op not in LIBRARY_OPERAND_VIEWS:
            must_own |= any(spec.kind == "library" for spec in found)
        must_own |= not found  # dead code: computed, like every other op, by a kernel
        if must_own:
            own[view] = KernelSpec([view], "loop", dominant=view)
            specs.append(own[view])
            reason = "the view's value must be in memory, so a kernel copies it"
            if view in kept:
                reason = (f"recomputing the chain of views in its readers would make a kernel "
                          f"of over {MAX_KERNEL_NODES} ops, so a kernel copies it")
            decisions.append(Decision("refuse", view, f"unfused: {reason}"))
        else:
            needers[view] = list({id(s): s for s in found}.values())
            for spec in needers[view]:
                spec.recomputed.append(view)
    return build_plan(graph, specs, "unfused", model, decisions)


def _views_kept_in_memory(graph: Graph, views: set[str]) -> set[str]:
    """Views that get a kernel of their own because their readers would otherwise recompute
    more than MAX_KERNEL_NODES nodes: `chain[v]` counts the views a kernel recomputes to have
    v (a view reads one value, so a chain of them is a path), and a reader's kernel is its node
    and the chains of its operands; the longest chains are cut first."""
    chain: dict[str, int] = {}
    kept: set[str] = set()
    for node in graph:
        operands = [o for o in dict.fromkeys(node.operands) if o in chain]
        if node.name not in views and (not operands or node_role(node) != FUSIBLE):
            continue  # reads no view, or generates no code (a library call)
        size = 1 + sum(chain[o] for o in operands)
        for operand in sorted(operands, key=chain.__getitem__, reverse=True):
            if size <= MAX_KERNEL_NODES:
                break
            kept.add(operand)
            size -= chain.pop(operand)
        if node.name in views:
            chain[node.name] = size
    return kept
