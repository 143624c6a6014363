"""A graph's vital statistics: what `python -m compiler inspect` prints and the UI's header shows.

Flops and bytes use the ops table's HloCostAnalysis conventions: bytes are what an unfused
execution moves (every op reads its operands and writes its result), the figure fusion lowers.
A `while` loop counts its body's and condition's work as often as it runs them
(compiler/ir/loops.py), as a `lax.scan` over layers does the work of every layer.
"""

from __future__ import annotations

from collections import Counter

from compiler.ir.graph import Graph
from compiler.ir.loops import loop_runs
from compiler.ir.ops import OPS, bytes_accessed, flop_count, transcendental_count
from compiler.ir.shapes import shape_to_json
from compiler.ir.training import training_outputs


def summarize(graph: Graph) -> dict:
    """A JSON-ready summary: counts, op histogram, parameters, outputs, flops and bytes, and
    which outputs are a training step's loss and gradients (compiler/ir/training.py)."""
    ops = Counter(node.op for node in graph)
    categories = Counter(OPS[node.op].category.value for node in graph if node.op in OPS)
    flops, transcendentals, unfused_bytes = _work(graph)
    parameters = [_value(graph, name) for name in graph.parameters]
    outputs = [_value(graph, name) for name in graph.output_names()]
    return {
        "name": graph.name,
        "source": graph.source,
        "nodes": len(graph),
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "categories": dict(sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))),
        "parameters": parameters,
        "outputs": outputs,
        "parameter_bytes": sum(p["bytes"] for p in parameters),
        "output_bytes": sum(o["bytes"] for o in outputs),
        "unfused_bytes": unfused_bytes,
        "flops": flops,
        "transcendentals": transcendentals,
        "fusions_in_input": len({n.fused_in for n in graph if n.fused_in}),
        "computations": sorted(graph.computations),
        "notes": list(graph.notes),
        "training": training_outputs(graph),
    }


def _work(graph: Graph) -> tuple[int, int, int]:
    """Flops, transcendentals and unfused bytes of one run of `graph`, loops included; kept
    with the graph, so loops that share a body (nested ones included) count it once."""
    known = graph.analysis_cache("summary.work")
    if "work" not in known:
        known["work"] = _count_work(graph)
    return known["work"]


def _count_work(graph: Graph) -> tuple[int, int, int]:
    flops = transcendentals = unfused_bytes = 0
    for node in graph:
        operand_shapes = [graph.nodes[o].shape for o in node.operands]
        flops += flop_count(node, operand_shapes)
        transcendentals += transcendental_count(node)
        unfused_bytes += bytes_accessed(node, operand_shapes)
        if node.op == "while":
            for computation, times in loop_runs(graph, node):
                inner = _work(computation)
                flops += times * inner[0]
                transcendentals += times * inner[1]
                unfused_bytes += times * inner[2]
    return flops, transcendentals, unfused_bytes


def _value(graph: Graph, name: str) -> dict:
    node = graph.nodes[name]
    return {"name": name, "shape": str(node.shape), "type": shape_to_json(node.shape),
            "bytes": node.shape.nbytes}


def format_summary(summary: dict) -> str:
    """The human-readable form of `summarize`'s result."""
    lines = [
        f"graph {summary['name']}  ({summary['source']})",
        f"  nodes           {summary['nodes']}",
        f"  flops           {summary['flops']:,}  (transcendentals {summary['transcendentals']:,})",
        f"  unfused bytes   {summary['unfused_bytes']:,}",
        f"  parameter bytes {summary['parameter_bytes']:,}",
        f"  output bytes    {summary['output_bytes']:,}",
    ]
    if summary["fusions_in_input"]:
        lines.append(f"  fusions in input {summary['fusions_in_input']} (inlined)")
    lines.append(f"  parameters ({len(summary['parameters'])}):")
    lines += [f"    {i:3d} {p['name']}: {p['shape']}" for i, p in enumerate(summary["parameters"])]
    lines.append(f"  outputs ({len(summary['outputs'])}):")
    lines += [f"    {i:3d} {o['name']}: {o['shape']}" for i, o in enumerate(summary["outputs"])]
    lines.append("  ops:")
    lines += [f"    {count:6d}  {op}" for op, count in summary["ops"].items()]
    if summary["computations"]:
        names = summary["computations"]
        shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
        lines.append(f"  sub-computations: {shown}")
    training = summary.get("training") or {}
    if training.get("gradients"):
        lines.append(f"  training step: loss {', '.join(training['loss'])}, "
                     f"{len(training['gradients'])} gradient outputs")
    for note in summary["notes"]:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
