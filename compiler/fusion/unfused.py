"""The unfused baseline: one kernel per op, as an eager framework launches them.

Eager frameworks (PyTorch eager, CuPy) launch a kernel for every arithmetic op but not for
views: a reshape or bitcast of contiguous data is free, and a broadcast is a strided view the
consuming kernel reads. So a view here is recomputed by each kernel that reads it (through
chains of views) and gets a kernel of its own only when its value must exist in memory (the
graph returns it, or a library call, which takes no broadcast operands, reads a broadcast) or
when nothing reads it (dead code is launched like any other op).
"""

from __future__ import annotations

from compiler.cost.sol import SolModel
from compiler.fusion.grouping import FUSIBLE, LIBRARY, node_role
from compiler.fusion.plan import (LIBRARY_OPERAND_VIEWS, Decision, FusionPlan, KernelSpec,
                                  build_plan)
from compiler.ir.graph import Graph

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
    needers: dict[str, list[KernelSpec]] = {}
    decisions = []
    for view in reversed(views):  # readers before the views they read
        must_own = view in outputs
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
            decisions.append(Decision("refuse", view, "unfused: the view's value must be in "
                                                      "memory, so a kernel copies it"))
        else:
            needers[view] = list({id(s): s for s in found}.values())
            for spec in needers[view]:
                spec.recomputed.append(view)
    return build_plan(graph, specs, "unfused", model, decisions)
