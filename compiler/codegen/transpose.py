"""Transposes of the innermost dimension staged through a shared-memory tile.

Not written yet: `emit_transpose` is the entry point emit.py calls for TRANSPOSE_SCHEDULE.
"""

from __future__ import annotations

from compiler.codegen.elemental import CodegenUnsupported


def emit_transpose(graph, kernel, emitter, output_nodes, buffers, plan) -> None:
    raise CodegenUnsupported(f"schedule {plan.schedule} is not implemented")
