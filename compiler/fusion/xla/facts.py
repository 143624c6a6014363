"""What XLA's fusion passes read of the graph and no fusion changes (`GraphFacts`, built once
per graph): each node's position and role, who reads each value, and the values that must be
written whatever the kernels.
"""

from __future__ import annotations

from compiler.fusion.xla.fusible import is_immediate
from compiler.ir.graph import Graph
from compiler.kernels.grouping import (FUSIBLE, LIBRARY, PLUMBING, graph_output_sources,
                                       node_role, plumbing_sources, value_readers)
from compiler.kernels.plan import LIBRARY_OPERAND_VIEWS


class GraphFacts:
    """The graph's nodes with their position (graph order) and role (grouping.node_role), the
    kernel-forming ones (`kernel_nodes`), and who reads what: `readers` (direct), `all_readers`
    (through plumbing), `users` (every node, as Graph.users)."""

    def __init__(self, graph: Graph):
        nodes = graph.nodes
        self.graph = graph
        self.nodes = nodes
        self.position = {name: i for i, name in enumerate(nodes)}
        self.role = {name: node_role(node) for name, node in nodes.items()}
        self.kernel_nodes = [n for n, r in self.role.items() if r in (FUSIBLE, LIBRARY)]
        self.immediates = {n for n, node in nodes.items() if is_immediate(node)}
        self.users = graph.users()

        # Direct readers of every node, and the values kernels read through plumbing (a tuple
        # or get-tuple-element); `all_readers` looks through plumbing.
        self.readers: dict[str, list[str]] = {name: [] for name in nodes}
        self.all_readers = value_readers(graph)
        self.plumbing_read: set[str] = set()
        memo: dict = {}
        for name in self.kernel_nodes:
            for operand in dict.fromkeys(nodes[name].operands):
                if self.role[operand] != PLUMBING:
                    self.readers[operand].append(name)
                else:
                    self.plumbing_read.update(plumbing_sources(graph, operand, memo))
        self.graph_outputs = graph_output_sources(graph)
        self.root_tuples = set()
        stack = [graph.root]
        while stack:
            name = stack.pop()
            if nodes[name].op == "tuple":
                self.root_tuples.add(name)
                stack.extend(nodes[name].operands)
        # Plumbing users that are not the root's tuples (while operands, opt-barriers, ...).
        plumbing_users = {name: False for name in nodes}
        for node in nodes.values():
            if self.role[node.name] == PLUMBING and node.name not in self.root_tuples:
                for operand in node.operands:
                    plumbing_users[operand] = True
        # The values that must be in memory whatever the fusions.
        self.must_write = {
            name: (name in self.graph_outputs or name in self.plumbing_read
                   or plumbing_users[name]
                   or any(self.role[r] == LIBRARY and nodes[name].op not in LIBRARY_OPERAND_VIEWS
                          for r in self.readers[name]))
            for name in self.kernel_nodes
        }

    def operand_count(self, values: set[str]) -> int:
        """Kernel parameters for these input values: one-element constants are immediates."""
        return len(values) - len(self.immediates.intersection(values))
