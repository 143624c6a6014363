"""Files that hold several modules (an HLO dump split by `// -----` lines): picking one."""

from __future__ import annotations

from compiler.errors import InputError
from compiler.ir.graph import Graph


def pick_module(graphs: list[Graph], module: int, where: str) -> Graph:
    if not 0 <= module < len(graphs):
        raise InputError(f"module {module} requested but the file holds {len(graphs)} "
                         "module(s)", where)
    return graphs[module]
