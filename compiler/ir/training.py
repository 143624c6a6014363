"""Which outputs of a graph are a training step's loss and its gradients.

A data-parallel step all-reduces the gradients across its replicas (compiler/stages/dp.py), so
the explorer needs to know which outputs those are. Importers do not mark them (neither HLO,
StableHLO nor ONNX says which output is a gradient), so they are inferred from the graph:

- the LOSS is a floating-point output of one element (JAX's `value_and_grad` returns it
  first; a PyTorch step returns it as a scalar);
- a GRADIENT output is any other floating-point output that has the shape of a floating-point
  parameter (a weight's gradient, or the weight updated from it: plain SGD's `w - lr * g`,
  Adam's moments) and is computed from an op the loss is also computed from: the backward
  pass reads the forward pass's activations, so a gradient shares a forward op with the loss,
  whereas a parameter passed through, or a buffer updated without the loss, does not.

A graph with no loss output is not a training step by this rule (an optimizer update whose
gradients come in as parameters has nothing to all-reduce after it). A logits output whose
shape happens to equal a parameter's would be taken for a gradient; none of the corpus's steps
has one.
"""

from __future__ import annotations

from compiler.ir.graph import Graph


def training_outputs(graph: Graph) -> dict:
    """{"loss": [output names], "gradients": [output names], "reason": why the graph is not
    a training step, or None}, outputs in flattened output-tuple order."""
    outputs = graph.output_names()
    losses = [name for name in outputs if _is_float(graph, name)
              and graph.nodes[name].array_shape.size == 1]
    if not losses:
        return {"loss": [], "gradients": [],
                "reason": "no output is a floating-point scalar (the loss)"}
    forward = _ancestors(graph, losses)
    parameter_shapes = {graph.nodes[name].array_shape.dims for name in graph.parameters
                        if _is_float(graph, name)}
    reads_forward = _reads_any(graph, forward)
    gradients = [name for name in outputs if name not in losses and _is_float(graph, name)
                 and graph.nodes[name].array_shape.dims in parameter_shapes
                 and reads_forward.get(name, False)]
    reason = None if gradients else ("no output has a parameter's shape and is computed from "
                                     "the loss's forward pass")
    return {"loss": losses, "gradients": gradients, "reason": reason}


def _is_float(graph: Graph, name: str) -> bool:
    shape = graph.nodes[name].shape
    return hasattr(shape, "dtype") and shape.dtype.is_float


def _ancestors(graph: Graph, names: list[str]) -> set[str]:
    """The computed nodes (parameters left out) that `names` are computed from, themselves
    included."""
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen or graph.nodes[name].op == "parameter":
            continue
        seen.add(name)
        stack.extend(graph.nodes[name].operands)
    return seen


def _reads_any(graph: Graph, targets: set[str]) -> dict[str, bool]:
    """For every node, whether it is computed from a node of `targets` (the graph's nodes are
    in topological order, so one pass does)."""
    reads: dict[str, bool] = {}
    for node in graph:
        reads[node.name] = any(operand in targets or reads.get(operand, False)
                               for operand in node.operands)
    return reads
