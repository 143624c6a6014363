"""Render one kernel of a fusion plan as CUDA C, under one CodeGenPlan.

The schedule (a module of compiler/codegen/schedules/, over the API of loops.py) owns the
loops and the thread mapping; the elemental emitter (elemental.py) writes the straight-line
code for each value inside them. The text follows notes/cuda_contract.md:
`#include "fx_prelude.cuh"`, one `extern "C" __global__` function per kernel whose parameters
are the input buffers (`const T* __restrict__`, in the kernel's input order; scalar constants
are inlined instead) then the output buffers (then `scratch`, when the plan has some), sizes
as constants, dynamic shared memory only through FX_SHARED_MEMORY.

No graph node name reaches the text: parameters are `in<k>`/`out<k>`, a node's local is its
canonical tag `v<k>_<op>` (k counts nodes in the order the kernel first touches them), and the
statement computing a node ends with `// <tag>`. So kernels of the same structure (the same
block in every layer of a model) have the same source but for the function name, and the build
compiles them once (compiler/toolchain/nvcc.py, point 4). The node names live in
`EmittedKernel.line_nodes` (source line -> nodes) and `node_lines` (node -> lines) for the UI.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from compiler.codegen.c_syntax import Body, CodegenUnsupported, c_identifier, storage_ctype
from compiler.codegen.elemental import Elemental
from compiler.codegen.emission import EMITTED_LINE_LIMIT
from compiler.codegen.plan import SCRATCH, CodeGenPlan
from compiler.codegen.schedules import emitter_of
from compiler.ir.dtypes import dtype as dtype_named
from compiler.ir.graph import Graph
from compiler.kernels.plan import Kernel

PRELUDE = "fx_prelude.cuh"


@dataclass(frozen=True)
class Param:
    name: str        # C parameter name
    node: str        # the graph value it holds
    dtype: str
    dims: tuple[int, ...]
    role: str        # "input" | "output"

    def to_dict(self) -> dict:
        return {"name": self.name, "node": self.node, "dtype": self.dtype,
                "dims": list(self.dims), "role": self.role}


@dataclass
class EmittedKernel:
    name: str
    source: str
    params: list[Param]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    cooperative: bool
    plan: CodeGenPlan | None
    library: bool = False          # dot, convolution, ...: a library call, no generated code
    line_nodes: dict[int, list[str]] = field(default_factory=dict)  # 1-based line -> nodes

    @property
    def node_lines(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for line, nodes in sorted(self.line_nodes.items()):
            for node in nodes:
                out.setdefault(node, []).append(line)
        return out

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source,
                "params": [p.to_dict() for p in self.params], "grid": list(self.grid),
                "block": list(self.block), "shared_bytes": self.shared_bytes,
                "cooperative": self.cooperative, "library": self.library,
                "plan": None if self.plan is None else self.plan.to_dict(),
                "line_nodes": {str(k): v for k, v in self.line_nodes.items()}}


def emit_kernel(graph: Graph, kernel: Kernel, plan: CodeGenPlan | None,
                name: str) -> EmittedKernel:
    """The CUDA source of `kernel` under `plan`; CodegenUnsupported names what is missing
    (EmissionTooLarge: the body passed EMITTED_LINE_LIMIT lines, and was not written out)."""
    if kernel.kind == "library":
        return EmittedKernel(name=name, source="", params=[], grid=(0, 0, 0), block=(0, 0, 0),
                             shared_bytes=0, cooperative=False, plan=None, library=True)
    if plan is None:
        raise ValueError("a generated kernel needs a CodeGenPlan")
    name = c_identifier(name)
    largest = max((graph.nodes[n].array_shape.size for n in (*kernel.computed, *kernel.inputs)
                   if not graph.nodes[n].shape.is_tuple), default=0)
    if largest >= 2**31:
        raise CodegenUnsupported(f"arrays of {largest} elements need 64-bit indices")
    params, buffers, outputs = _params(graph, kernel)
    if plan.scratch_bytes:
        params.append(Param(SCRATCH, "", "u8", (plan.scratch_bytes,), "output"))
    body = Body(limit=EMITTED_LINE_LIMIT)
    emitter = Elemental(graph, set(kernel.computed), buffers, body)
    emitter.used_names.update(p.name for p in params)
    output_nodes = [graph.nodes[n] for n in kernel.outputs]
    try:
        emit_body = emitter_of(plan.schedule)
    except KeyError:
        raise CodegenUnsupported(f"schedule {plan.schedule} is not implemented") from None
    emit_body(graph, kernel, emitter, output_nodes, outputs, plan)
    return _render(kernel, plan, name, params, emitter)


def _params(graph: Graph, kernel: Kernel) -> tuple[list[Param], dict[str, str], dict[str, str]]:
    """Inputs `in0, in1, ...` (scalar constants are inlined instead) then outputs `out0, ...`:
    names by position, so kernels of the same structure have the same signature."""
    params: list[Param] = []
    buffers: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for value in kernel.inputs:
        node = graph.nodes[value]
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"input '{value}' is a tuple")
        if node.op == "constant" and node.array_shape.size == 1 and \
                node.attrs.get("value") is not None:
            continue  # inlined as a literal
        buffers[value] = f"in{len(buffers)}"
        params.append(Param(buffers[value], value, node.array_shape.dtype.name,
                            node.array_shape.dims, "input"))
    for value in kernel.outputs:
        node = graph.nodes[value]
        if node.shape.is_tuple:
            raise CodegenUnsupported(f"output '{value}' is a tuple")
        outputs[value] = f"out{len(outputs)}"
        params.append(Param(outputs[value], value, node.array_shape.dtype.name,
                            node.array_shape.dims, "output"))
    return params, buffers, outputs


def _render(kernel: Kernel, plan: CodeGenPlan, name: str, params: list[Param],
            emitter: Elemental) -> EmittedKernel:
    """The text: the header comment says only what is structural (kind, schedule, op counts),
    each statement's comment names its value by its canonical tag, and the graph's node names
    go into `line_nodes` alone."""
    graph = emitter.graph
    ops = collections.Counter(graph.nodes[n].op for n in kernel.computed)
    header = [f'#include "{PRELUDE}"', "",
              f"// A {kernel.kind} kernel, schedule {plan.schedule}: "
              f"{plan.block_size} threads x {plan.grid_size} blocks"
              + (f", {plan.threads_per_row} threads per row" if plan.threads_per_row else "")
              + (f", {plan.vector_width} elements per thread" if plan.vector_width > 1 else "")
              + (f", {len(plan.parts)} parts" if plan.parts else ""),
              f"// {len(kernel.nodes)} nodes computed, {len(kernel.recomputed)} recomputed: "
              + ", ".join(f"{op} {n}" for op, n in sorted(ops.items()))]
    signature = []
    for p in params:
        ctype = storage_ctype(dtype_named(p.dtype))
        qualifier = "const " if p.role == "input" else ""
        signature.append(f"    {qualifier}{ctype}* __restrict__ {p.name}")
    lines = [(text, None) for text in header]
    lines.append((f'extern "C" __global__ void __launch_bounds__({plan.block_size}) '
                  f"{name}(", None))
    lines.extend((text + ("," if k < len(signature) - 1 else ") {"), None)
                 for k, text in enumerate(signature))
    if not signature:
        lines.append(("    ) {", None))
    lines.extend(emitter.body.lines)
    lines.append(("}", None))
    text, line_nodes = [], {}
    for number, (line, node) in enumerate(lines, start=1):
        if node is not None:
            line = f"{line}  // {emitter.tag(node)}"
            line_nodes[number] = [node]
        text.append(line)
    return EmittedKernel(name=name, source="\n".join(text) + "\n", params=params,
                         grid=(plan.grid_size, 1, 1), block=(plan.block_size, 1, 1),
                         shared_bytes=plan.shared_bytes, cooperative=plan.cooperative,
                         plan=plan, line_nodes=line_nodes)
