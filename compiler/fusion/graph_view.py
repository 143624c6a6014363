"""The op graph of an upload with one fusion plan's kernels on it: what the fusion view draws.

`fusion_graph(graph, kernels)` returns the object of `GET /api/v1/runs/<id>/graph` (docs/api.md):

- "nodes": every node of the graph, in graph order, as {"id", "op", "shape" (the dimensions;
  null for a tuple), "dtype" ("tuple" for a tuple), "kernel" (the kernel that owns it, or null
  for what no kernel computes: parameters, constants read from memory, tuples and their
  elements), "also_in" (the kernels that recompute it, in plan order), "line" (its line in the
  uploaded text, or null)};
- "edges": [from, to] for each value a node reads (once per pair, in graph order of `to`);
- "dram": for each edge, whether the value travels through memory: `to`'s kernel neither owns
  nor recomputes `from` (an edge into a node no kernel computes is no traffic: false). An edge
  inside one kernel stays on chip;
- "kernels": the plan's kernels in order, each with its name, kind, dominant node, node counts,
  XLA:GPU's name for it (in the xla-gpu plan, else null) and the figures the view colours by
  (projected: in the plan, device work and launch term; speed of light; measured: timed alone
  and its device work; learned; limiter; the projected/SOL ratio and its reason), as the
  plan's entries hold them.

Kernel entries are the plan's as `FusionPlan.to_dict` (and the later stages) write them, so the
view shows what the pages show. Where each node is drawn is graph_layout.py's work (the
object's "layout", added by `laid_out`); the browser turns that into pixels
(static/explorer/fusion_view.js).

`plan_views` is the stage after compiling (STAGE, "layout"): every plan of a compiled artifact
laid out, which the compile worker stores with the run so that the first look at a big plan
need not wait for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from compiler.fusion.graph_layout import plan_layout
from compiler.importers import import_bytes, pick_module
from compiler.ir.graph import Graph

STAGE = "layout"

# The kernel-entry figures the view carries over (each may be null: not produced yet).
KERNEL_FIGURES = ("proj_us", "device_us", "launch_us", "sol_us", "measured_us",
                  "measured_device_us", "learned_us", "limiter", "proj_over_sol",
                  "outlier_reason", "schedule", "dram_bytes")


def fusion_graph(graph: Graph, kernels: list[dict]) -> dict:
    """The fusion view's object (module docstring) of `graph` under the plan whose kernel
    entries are `kernels`. ValueError when a kernel names a node the graph does not have (the
    plan is of another graph)."""
    owner: dict[str, str] = {}
    recomputers: dict[str, list[str]] = {}
    for kernel in kernels:
        for name in kernel["nodes"]:
            owner[name] = kernel["name"]
        for name in kernel.get("recomputed", []):
            recomputers.setdefault(name, []).append(kernel["name"])
    unknown = [name for name in (*owner, *recomputers) if name not in graph.nodes]
    if unknown:
        raise ValueError(f"the plan's kernels name {len(unknown)} node(s) the graph does not "
                         f"have, e.g. '{unknown[0]}': the plan is not of this graph")
    computes = {kernel["name"]: {*kernel["nodes"], *kernel.get("recomputed", [])}
                for kernel in kernels}

    nodes, edges, dram = [], [], []
    for node in graph:
        shape = node.shape
        nodes.append({
            "id": node.name, "op": node.op,
            "shape": None if shape.is_tuple else list(shape.dims),
            "dtype": "tuple" if shape.is_tuple else shape.dtype.name,
            "kernel": owner.get(node.name), "also_in": recomputers.get(node.name, []),
            "line": (node.loc.line or None) if node.loc is not None else None,
        })
        consumer = owner.get(node.name)
        for operand in dict.fromkeys(node.operands):
            edges.append([operand, node.name])
            dram.append(consumer is not None and operand not in computes[consumer])
    return {"nodes": nodes, "edges": edges, "dram": dram, "kernels": kernel_entries(kernels)}


def kernel_entries(kernels: list[dict]) -> list[dict]:
    """The object's "kernels" (module docstring): the only part that changes when the plan's
    kernels are measured, so a stored object takes new figures by replacing it."""
    return [_kernel(kernel) for kernel in kernels]


def _kernel(kernel: dict) -> dict:
    return {"name": kernel["name"], "kind": kernel["kind"], "dominant": kernel.get("dominant"),
            "nodes": len(kernel["nodes"]), "recomputed": len(kernel.get("recomputed", [])),
            "xla_name": kernel.get("xla_name"),
            **{figure: kernel.get(figure) for figure in KERNEL_FIGURES}}


def laid_out(graph: Graph, kernels: list[dict]) -> dict:
    """`fusion_graph(graph, kernels)` with its "layout" (graph_layout.py): what the fusion view
    draws. ValueError when the plan is not of this graph."""
    view = fusion_graph(graph, kernels)
    view["layout"] = plan_layout(view)
    return view


def plan_views(data: bytes, filename: str, artifact: dict,
               progress: Callable[..., None] | None = None
               ) -> Iterator[tuple[tuple[str, str], dict]]:
    """The layout stage: `laid_out` for every plan of `artifact` (compile_graph's, of the upload
    `data` named `filename`), one ((device, strategy), view) at a time, so that a caller that
    stores them need not hold every plan's view at once (each is several MB for a big graph).
    `progress(stage, done, total)`: told of STAGE plan by plan, the first time before the
    upload is imported, so that the import counts in this stage's time."""
    plans = [(device, strategy, result["kernels"])
             for device, results in artifact["devices"].items()
             for strategy, result in results["strategies"].items()]
    say = progress or (lambda *args: None)
    say(STAGE, 0, len(plans))
    graph = pick_module(import_bytes(data, filename), 0, filename)
    for done, (device, strategy, kernels) in enumerate(plans, 1):
        yield (device, strategy), laid_out(graph, kernels)
        say(STAGE, done, len(plans))
