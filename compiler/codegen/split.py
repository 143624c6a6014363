"""Task splitting: few long rows (or few columns over many rows) cut across blocks.

Not written yet: `emit_split` is the entry point emit.py calls for SPLIT_SCHEDULES.
"""

from __future__ import annotations

from compiler.codegen.elemental import CodegenUnsupported


def emit_split(graph, kernel, emitter, output_nodes, buffers, plan) -> None:
    raise CodegenUnsupported(f"schedule {plan.schedule} is not implemented")
