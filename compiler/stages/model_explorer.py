"""A plan's op graph in Model Explorer's JSON graph format (google-ai-edge/model-explorer), to
open in Model Explorer beside the model it came from.

Model Explorer reads a JSON file holding one graph collection, {"label", "graphs": [Graph]}
(the format its adapters return: model_explorer/graph_builder.py in the ai-edge-model-explorer
package documents every field). Each node of the upload becomes a GraphNode:

- "namespace": the kernel that computes it, so Model Explorer draws each kernel as a layer
  that opens onto its ops (nodes no kernel computes, parameters and constants read from
  memory, sit at the top level);
- "attrs" (the side panel): op, shape, dtype, kernel, its kind, its projected time in the plan
  (device work and launch term) and device work alone, its limiter, the kernels that
  recompute the node;
- "style": the node's colour by what bounds its kernel (compiler/fusion/attribution.py's
  causes: DRAM, on-chip traffic, compute pipes, latency, launches);
- "incomingEdges": one per value it reads.

The kernels' layers carry the same figures in "groupNodeAttributes". The input is the fusion
view's object (compiler/stages/graph_view.py), which the web app already builds and caches.
"""

from __future__ import annotations

from compiler.fusion.attribution import CAUSE_LABELS, cause_of

# A colour per cause (ColorBrewer's Set2, which stays readable behind black text).
CAUSE_COLOURS = {"dram": "#8da0cb", "on-chip": "#66c2a5", "compute": "#fc8d62",
                 "latency": "#e5c494", "launch": "#e78ac3", "barriers": "#a6d854"}


def model_explorer_graph(view: dict, label: str) -> dict:
    """The graph collection (module docstring) of the fusion view `view`, named `label`."""
    kernels = {kernel["name"]: kernel for kernel in view["kernels"]}
    incoming: dict[str, list[str]] = {}
    for source, target in view["edges"]:
        incoming.setdefault(target, []).append(source)
    nodes = []
    for node in view["nodes"]:
        kernel = kernels.get(node["kernel"]) if node["kernel"] else None
        shape = "tuple" if node["shape"] is None else f"{node['dtype']}{node['shape']}"
        attrs = {"op": node["op"], "shape": shape, **_kernel_attrs(kernel)}
        if node["also_in"]:
            attrs["recomputed_in"] = ", ".join(node["also_in"])
        entry = {"id": node["id"], "label": node["op"],
                 "namespace": node["kernel"] or "",
                 "attrs": [{"key": key, "value": value} for key, value in attrs.items()],
                 "incomingEdges": [{"sourceNodeId": source, "sourceNodeOutputId": "0",
                                    "targetNodeInputId": str(index)}
                                   for index, source in enumerate(incoming.get(node["id"],
                                                                               []))],
                 "outputsMetadata": [{"id": "0", "attrs": [
                     {"key": "tensor_name", "value": node["id"]},
                     {"key": "shape", "value": shape}]}]}
        if kernel is not None:
            entry["style"] = {"backgroundColor": CAUSE_COLOURS[_cause(kernel)],
                              "borderColor": "", "hoveredBorderColor": ""}
        nodes.append(entry)
    groups = {name: _kernel_attrs(kernel) for name, kernel in kernels.items()}
    return {"label": label, "graphs": [{"id": label, "nodes": nodes,
                                        "groupNodeAttributes": groups}]}


def _cause(kernel: dict) -> str:
    if (kernel.get("launch_us") or 0.0) > (kernel.get("device_us") or 0.0):
        return "launch"
    return cause_of(kernel.get("limiter"))


def _kernel_attrs(kernel: dict | None) -> dict[str, str]:
    """A kernel's figures as Model Explorer's attributes (strings; "–" where not produced)."""
    if kernel is None:
        return {}
    return {"kernel": kernel["name"], "kind": kernel["kind"],
            "projected_us": _us(kernel.get("proj_us")),
            "device_us": _us(kernel.get("device_us")),
            "measured_us": _us(kernel.get("measured_us")),
            "limiter": kernel.get("limiter") or "–",
            "bound_by": CAUSE_LABELS[_cause(kernel)]}


def _us(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
