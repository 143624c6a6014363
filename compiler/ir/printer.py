"""A stable text form of a Graph, in XLA's HLO syntax so it reads back through our importer.

Stable means: the same graph prints the same text, byte for byte (nodes in graph order,
attributes in a fixed order, numbers in their shortest exact form). Tests diff it, the UI shows
it, and `import_hlo(print_graph(g))` rebuilds `g`: names, ops, operands, shapes with layouts,
attributes and sub-computations (a round-trip test holds us to that). Source locations, and
the fusion a node was inlined from (printed as a `// in fusion.3` comment), are not part of
the round trip.

The text is also what XLA itself parses (compiler/fusion/xla_gpu.py), so every name in it is
one XLA's lexer reads as a name. Graphs from ONNX and JSON carry names HLO cannot spell
(`onnx::MatMul_107`, `0.weight`, `/layers.0/Transpose_output_0`, a node called `f32`): those,
and only those, print under a legal name (`hlo_names`), so the round trip keeps every name an
HLO file can hold.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from compiler.ir.graph import COMPUTATION_ATTRS, Graph, Node
from compiler.ir.verify import topological_order

# Attribute print order: the order XLA prints them in, roughly; the rest follow sorted.
_ORDER = (
    "parameter_number", "value", "dimensions", "iota_dimension", "index", "slice", "padding",
    "window", "dim_labels", "feature_group_count", "batch_group_count", "lhs_batch_dims",
    "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims", "direction", "type",
)
_SKIP = {"parameter_number", "value", "reducer"}  # printed inside the parentheses, or derived


def print_graph(graph: Graph, *, extra: bool = False, comments: bool = True,
                max_constant_elements: int | None = None, name_metadata: bool = False) -> str:
    """The whole module: called computations first, each after those it calls (XLA's parser
    takes no computation before its definition), then ENTRY.

    extra: also print the attributes kept as source text (metadata, backend_config, ...).
    comments: end each inlined node's line with the fusion it came from.
    max_constant_elements: elide larger constants as `{...}` (the text then no longer holds
    their values, as with XLA's own dumps).
    name_metadata: give every instruction `metadata={op_name="<its printed name>"}` (and no
    other metadata), which XLA carries through its rewrites: its optimised module then names,
    for every instruction, the node it came from (compiler/fusion/xla_gpu.py, which reads
    the printed names back to ours with `hlo_names`).
    """
    options = {"extra": extra, "comments": comments, "max_elements": max_constant_elements,
               "name_metadata": name_metadata}
    names = hlo_names(graph)
    lines = [f"HloModule {names.module}", ""]
    calls = {name: [called for node in computation for called in node.called_computations()]
             for name, computation in graph.computations.items()}
    for name in topological_order(calls):
        lines += _computation_lines(graph.computations[name], f"{names.computations[name]} {{",
                                    names.nodes[name], names, options)
        lines.append("")
    lines += _computation_lines(graph, f"ENTRY {names.module} {{", names.nodes[None], names,
                                options)
    return "\n".join(lines) + "\n"


@dataclass
class HloNames:
    """The name each part of a module prints under (`hlo_names`)."""

    module: str                              # the module's and its entry computation's
    computations: dict[str, str]             # a called computation's name -> printed
    nodes: dict[str | None, dict[str, str]]  # computation (None: entry) -> node -> printed


def hlo_names(graph: Graph) -> HloNames:
    """Every name in `graph`'s module as printed: its own where XLA's lexer reads it as a
    name, else a legal spelling of it (`_legal`) that no other name in the module has."""
    taken = {node.name for sub in (graph, *graph.computations.values()) for node in sub}
    taken |= {graph.name, *graph.computations}
    return HloNames(
        module=_legal(graph.name, taken),
        computations={name: _legal(name, taken) for name in graph.computations},
        nodes={name: {node.name: _legal(node.name, taken) for node in sub}
               for name, sub in [(None, graph), *graph.computations.items()]})


# A name as XLA's HLO lexer reads one (xla/hlo/parser/hlo_lexer.cc): a letter or '_', then
# letters, digits, '_', '.' or '-'; not a keyword, and not an element type's name (the lexer
# reads `f32` or `pred` as a type wherever it stands).
_HLO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.\-]")
_KEYWORDS = {"true", "false", "inf", "nan", "HloModule", "ENTRY", "ROOT", "maximal",
             "replicated", "manual", "unknown", "last_tile_dim_replicate", "shard_as",
             "shard_like"}
_ELEMENT_TYPE = re.compile(r"pred|token|opaque|[su](1|2|4|8|16|32|64)|bf16|f(16|32|64)"
                           r"|c(64|128)|f\d+e\d+m\d+[a-z]*")


def _is_hlo_name(name: str) -> bool:
    return (_HLO_NAME.fullmatch(name) is not None and name not in _KEYWORDS
            and _ELEMENT_TYPE.fullmatch(name) is None)


def _legal(name: str, taken: set[str]) -> str:
    """`name` where HLO can spell it; else its other characters as '_', with a '_' in front
    where that is still no name (`0.weight`, `f32`), and '.1', '.2', ... after it where
    `taken` has it already. A new name joins `taken`."""
    if _is_hlo_name(name):
        return name
    base = _NOT_A_NAME.sub("_", name)
    if not _is_hlo_name(base):
        base = "_" + base
    return unique_name(base, taken)


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base.1`, `base.2`, ... where `taken` has it already; it joins `taken`."""
    name, count = base, 0
    while name in taken:
        count += 1
        name = f"{base}.{count}"
    taken.add(name)
    return name


def _computation_lines(graph: Graph, header: str, names: dict[str, str], module: HloNames,
                       options: dict) -> list[str]:
    body = []
    for node in graph:
        prefix = "ROOT " if node.name == graph.root else ""
        line = print_node(node, graph, names=names, computations=module.computations,
                          **options)
        body.append(f"  {prefix}{line}")
    return [header, *body, "}"]


def print_node(node: Node, graph: Graph, *, names: dict[str, str],
               computations: dict[str, str], extra: bool = False, comments: bool = True,
               max_elements: int | None = None, name_metadata: bool = False) -> str:
    """One instruction's line; `graph` is the computation holding it. `names` (its nodes)
    and `computations` map the names it uses to the ones it prints (`hlo_names`)."""
    name = names[node.name]
    if node.op == "parameter":
        inside = str(node.attrs["parameter_number"])
    elif node.op == "constant":
        inside = _literal(node.attrs.get("value"), max_elements)
    else:
        inside = ", ".join(names[operand] for operand in node.operands)
    text = f"{name} = {node.shape} {node.op}({inside})"
    attrs = _printed_attributes(node, graph, computations)
    keys = [k for k in _ORDER if k in attrs and k not in _SKIP]
    keys += sorted(k for k in attrs if k not in _ORDER and k not in _SKIP)
    for key in keys:
        text += f", {key}={_attribute(key, attrs[key])}"
    if extra:
        for key, raw in node.extra.items():
            if not (name_metadata and key == "metadata"):
                text += f", {key}={raw}"
    if name_metadata:
        text += f', metadata={{op_name="{name}"}}'
    if comments and node.fused_in:
        text += f"  // in {node.fused_in}"
    return text


def _printed_attributes(node: Node, graph: Graph, computations: dict[str, str]) -> dict:
    """The node's attributes as HLO spells them: computations under their printed names, and
    a conditional on a `pred` with its two branches as `true_computation` and
    `false_computation`, the only form XLA's parser takes for it (our IR, as XLA's, keeps
    every conditional's branches in `branch_computations`, the true branch first)."""
    attrs = {}
    for key, value in node.attrs.items():
        if isinstance(value, tuple) and key in COMPUTATION_ATTRS:
            value = tuple(computations[v] for v in value)
        elif key in COMPUTATION_ATTRS:
            value = computations[value]
        attrs[key] = value
    if node.op == "conditional" and graph.nodes[node.operands[0]].shape.dtype.name == "pred":
        attrs["true_computation"], attrs["false_computation"] = attrs.pop("branch_computations")
    return attrs


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
