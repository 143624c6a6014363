"""A stable text form of a Graph, in XLA's HLO syntax so it reads back through our importer.

Stable means: the same graph prints the same text, byte for byte (nodes in graph order,
attributes in a fixed order, numbers in their shortest exact form). Tests diff it, the UI shows
it, and `import_hlo(print_graph(g))` rebuilds `g`: names, ops, operands, shapes with layouts,
attributes and sub-computations (a round-trip test holds us to that). Source locations, and
the fusion a node was inlined from (printed as a `// in fusion.3` comment), are not part of
the round trip.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.ir.graph import Graph, Node

# Attribute print order: the order XLA prints them in, roughly; the rest follow sorted.
_ORDER = (
    "parameter_number", "value", "dimensions", "iota_dimension", "index", "slice", "padding",
    "window", "dim_labels", "feature_group_count", "batch_group_count", "lhs_batch_dims",
    "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims", "direction", "type",
)
_SKIP = {"parameter_number", "value", "reducer"}  # printed inside the parentheses, or derived


def print_graph(graph: Graph, *, extra: bool = False, comments: bool = True,
                max_constant_elements: int | None = None, name_metadata: bool = False) -> str:
    """The whole module: called computations first (as XLA prints them), then ENTRY.

    extra: also print the attributes kept as source text (metadata, backend_config, ...).
    comments: end each inlined node's line with the fusion it came from.
    max_constant_elements: elide larger constants as `{...}` (the text then no longer holds
    their values, as with XLA's own dumps).
    name_metadata: give every instruction `metadata={op_name="<its name>"}` (and no other
    metadata), which XLA carries through its rewrites: its optimised module then names, for
    every instruction, the node it came from (compiler/fusion/xla_gpu.py).
    """
    options = {"extra": extra, "comments": comments, "max_elements": max_constant_elements,
               "name_metadata": name_metadata}
    lines = [f"HloModule {graph.name}", ""]
    for name, computation in graph.computations.items():
        lines += _computation_lines(name, computation, False, options)
        lines.append("")
    lines += _computation_lines(graph.name, graph, True, options)
    return "\n".join(lines) + "\n"


def _computation_lines(name: str, graph: Graph, entry: bool, options: dict) -> list[str]:
    header = f"ENTRY {name} {{" if entry else f"{name} {{"
    body = []
    for node in graph:
        prefix = "ROOT " if node.name == graph.root else ""
        body.append(f"  {prefix}{print_node(node, **options)}")
    return [header, *body, "}"]


def print_node(node: Node, *, extra: bool = False, comments: bool = True,
               max_elements: int | None = None, name_metadata: bool = False) -> str:
    if node.op == "parameter":
        inside = str(node.attrs["parameter_number"])
    elif node.op == "constant":
        inside = _literal(node.attrs.get("value"), max_elements)
    else:
        inside = ", ".join(node.operands)
    text = f"{node.name} = {node.shape} {node.op}({inside})"
    keys = [k for k in _ORDER if k in node.attrs and k not in _SKIP]
    keys += sorted(k for k in node.attrs if k not in _ORDER and k not in _SKIP)
    for key in keys:
        text += f", {key}={_attribute(key, node.attrs[key])}"
    if extra:
        for key, raw in node.extra.items():
            if not (name_metadata and key == "metadata"):
                text += f", {key}={raw}"
    if name_metadata:
        text += f', metadata={{op_name="{node.name}"}}'
    if comments and node.fused_in:
        text += f"  // in {node.fused_in}"
    return text


def _attribute(key: str, value) -> str:
    if key == "slice":
        return "{" + ", ".join(f"[{a}:{b}:{c}]" for a, b, c in value) + "}"
    if key == "padding":
        return "x".join("_".join(str(v) for v in dim) for dim in value)
    if key == "window":
        return "{" + _window(value) + "}"
    if key == "custom_call_target":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "{" + ",".join(str(v) for v in value) + "}"
    return str(value)


def _window(window: dict) -> str:
    if not window:
        return ""
    rank = len(window["size"])
    parts = ["size=" + "x".join(map(str, window["size"]))]
    if window["stride"] != (1,) * rank:
        parts.append("stride=" + "x".join(map(str, window["stride"])))
    if window["pad"] != ((0, 0),) * rank:
        parts.append("pad=" + "x".join(f"{lo}_{hi}" for lo, hi in window["pad"]))
    if window["lhs_dilate"] != (1,) * rank:
        parts.append("lhs_dilate=" + "x".join(map(str, window["lhs_dilate"])))
    if window["rhs_dilate"] != (1,) * rank:
        parts.append("rhs_dilate=" + "x".join(map(str, window["rhs_dilate"])))
    if any(window.get("window_reversal", ())):
        parts.append("rhs_reversal=" + "x".join(str(int(v)) for v in window["window_reversal"]))
    return " ".join(parts)


def _literal(value, max_elements: int | None) -> str:
    if value is None or (max_elements is not None and value.size > max_elements):
        return "{...}"
    if value.ndim == 0:
        return _scalar(value[()])
    return _nested(value)


def _nested(array: np.ndarray) -> str:
    if array.ndim == 1:
        return "{" + ", ".join(_scalar(v) for v in array) + "}"
    return "{" + ", ".join(_nested(sub) for sub in array) + "}"


def _scalar(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if np.issubdtype(np.asarray(v).dtype, np.integer):
        return str(int(v))
    if np.iscomplexobj(v):
        return f"({_float(v.real)}, {_float(v.imag)})"
    return _float(float(v))


def _float(f: float) -> str:
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e16:
        return "-0.0" if f == 0 and math.copysign(1, f) < 0 else str(int(f))
    return repr(f)
