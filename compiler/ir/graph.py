"""The Graph IR: named nodes in topological order, each one op over named operands.

A `Graph` is one computation: its parameters, its nodes and a root (a `tuple` node when the
computation returns several values). Computations that nodes call — reducers (`to_apply`),
`while` bodies and conditions, `conditional` branches, sort comparators — live in
`graph.computations`, one dict shared by the entry graph and every sub-graph, keyed by name.
`call` and `fusion` never appear: importers inline them, recording the fusion a node came from
in `node.fused_in` so XLA's own fusion decisions in a dump stay visible; `graph.fusions` keeps
each such fusion's kind and backend configuration (compiler/fusion/xla_gpu.py shows a dump's
fusions as the plan XLA chose).

Attributes use XLA's names with parsed values (docs/graph-ir.md has the table; `ops.py` lists
which op takes which): `dimensions` is a tuple of ints, `slice` a tuple of (start, limit,
stride), `padding` a tuple of (low, high, interior), `direction` a string, `value` a NumPy
array for constants (None when the dump elided it). Attributes a stage does not interpret
(metadata, backend_config, sharding, ...) stay as their source text in `node.extra` for the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from compiler.errors import InputError, SourceLoc
from compiler.ir.shapes import ArrayShape, Shape

if TYPE_CHECKING:
    import networkx as nx

# Attribute keys whose values name computations in `graph.computations`.
COMPUTATION_ATTRS = (
    "to_apply", "body", "condition", "branch_computations", "select", "scatter", "comparator",
)


@dataclass
class Node:
    name: str
    op: str
    operands: tuple[str, ...]
    shape: Shape
    attrs: dict[str, Any] = field(default_factory=dict)
    loc: SourceLoc | None = None
    extra: dict[str, str] = field(default_factory=dict)
    fused_in: str | None = None

    @property
    def array_shape(self) -> ArrayShape:
        if self.shape.is_tuple:
            raise TypeError(f"node {self.name} has tuple shape {self.shape}")
        return self.shape

    def called_computations(self) -> list[str]:
        names = []
        for key in COMPUTATION_ATTRS:
            value = self.attrs.get(key)
            if isinstance(value, str):
                names.append(value)
            elif isinstance(value, tuple):
                names.extend(value)
        return names

    def where(self) -> SourceLoc | str:
        return self.loc if self.loc is not None else f"node '{self.name}'"


@dataclass
class Graph:
    name: str
    nodes: dict[str, Node] = field(default_factory=dict)
    parameters: list[str] = field(default_factory=list)
    root: str | None = None
    computations: dict[str, Graph] = field(default_factory=dict)
    source: str | None = None  # the file the graph was read from, for messages
    loc: SourceLoc | None = None
    notes: list[str] = field(default_factory=list)  # what the importer dropped or changed, and why
    # An optimised dump's fusions, by the fusion instruction's name (what `fused_in` holds):
    # {"kind": "kLoop" | "kInput" | "kOutput" | "kCustom", "backend_kind": "__triton" or None,
    #  "backend_config": its raw text or None}.
    fusions: dict[str, dict] = field(default_factory=dict)

    # -- building -----------------------------------------------------------------------------

    def add(self, node: Node) -> Node:
        if node.name in self.nodes:
            raise InputError(f"duplicate instruction name '{node.name}'", node.where())
        self.nodes[node.name] = node
        return node

    def fresh_name(self, base: str) -> str:
        """A node name not used yet in this graph, derived from `base`."""
        if base not in self.nodes:
            return base
        i = 1
        while f"{base}.{i}" in self.nodes:
            i += 1
        return f"{base}.{i}"

    # -- reading ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def operands(self, node: Node) -> list[Node]:
        return [self.nodes[name] for name in node.operands]

    @property
    def root_node(self) -> Node:
        return self.nodes[self.root]

    def parameter_nodes(self) -> list[Node]:
        return [self.nodes[name] for name in self.parameters]

    def users(self) -> dict[str, list[str]]:
        """For every node, the names of the nodes that read it (in graph order)."""
        result: dict[str, list[str]] = {name: [] for name in self.nodes}
        for node in self.nodes.values():
            for operand in dict.fromkeys(node.operands):
                result[operand].append(node.name)
        return result

    def positions(self) -> dict[str, int]:
        """Node name -> its index in graph (topological) order. Computed once and kept while
        the graph's node count stays the same (stages treat a built graph as read-only)."""
        cached = self.__dict__.get("_positions")
        if cached is None or len(cached) != len(self.nodes):
            cached = {name: i for i, name in enumerate(self.nodes)}
            self.__dict__["_positions"] = cached
        return cached

    def analysis_cache(self, name: str, make=dict) -> dict:
        """A dict kept with the graph for a pure per-node analysis called `name` (an op's
        instruction mix, say), so the stages that ask for it thousands of times compute it
        once per node; `make()` makes it the first time (a dict that fills itself, say).
        Stages treat a built graph as read-only; one that changes it must not use a cache
        made before."""
        caches = self.__dict__.setdefault("_analysis_caches", {})
        cache = caches.get(name)
        if cache is None:
            cache = caches[name] = make()
        return cache

    def output_names(self) -> list[str]:
        """The graph's outputs in flattened output-tuple order (through nested tuples)."""
        names: list[str] = []

        def walk(name: str) -> None:
            node = self.nodes[name]
            if node.op == "tuple":
                for operand in node.operands:
                    walk(operand)
            else:
                names.append(name)

        walk(self.root)
        del walk  # it refers to itself: a cycle that would outlive the call
        return names

    # -- analyses -----------------------------------------------------------------------------

    def to_networkx(self) -> nx.MultiDiGraph:
        """A networkx view: one vertex per node (with op, shape, dtype), one edge per operand use.

        Edges carry `index`, the operand position, so an op reading one value twice keeps both.
        """
        # Imported here: nothing else needs networkx, and every process that imports the
        # compiler (web, workers, CLI) would pay its import (0.1-0.2 s) at start for nothing.
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name)
        for node in self.nodes.values():
            g.add_node(
                node.name,
                op=node.op,
                shape=str(node.shape),
                bytes=node.shape.nbytes,
                fused_in=node.fused_in,
            )
        for node in self.nodes.values():
            for index, operand in enumerate(node.operands):
                g.add_edge(operand, node.name, index=index)
        return g
