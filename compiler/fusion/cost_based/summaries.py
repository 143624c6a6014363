"""What one candidate kernel of the cost search is, kept incrementally as groups merge.

A kernel's nodes fall into *components*: sets joined by data flow inside the kernel. Each
component gets a kind from AStitch's block-locality labels (compiler/kernels/locality.py: a
node is invariant, one value per row of a reduction, row-aligned, the rows of any length, or
needs data of other blocks; whole rows moved by a transpose count as the latter here, the row
schedules having their results at other rows' places). `Analysis` keeps the labels and
components of every group as groups merge; the kernel analysis (compiler/kernels/analysis.py,
the stitch strategy's and the code generator's too) gives each component's kind and the
kernel's (`kind_of`, `combine_parts`). The kind says which CodeGen plans the code generator
enumerates (compiler/codegen/schedules/):
- `loop`: no reduction;
- `input`: reductions of one row space whose results nothing in the kernel reads;
- `stitch-regional`: reductions of one row space whose results the kernel consumes within a
  block: the rows fit a block (`row <= max_threads_per_block * ELEMENTS_PER_THREAD`, strided
  rows do not) and the block's row buffers fit its shared memory;
- `stitch-global`: anything else (reductions of different rows, chained reductions whose rows
  do not fit a block, values read across rows): the phased schedule computes each reduction
  once with the whole grid, behind grid barriers, at any size;
- library nodes (dot, custom-call, ...) stay alone in `library` kernels.
Several components make a `horizontal` kernel (each part on blocks of its own, under the plan
it would get alone) or a multi-output `loop` / `input` kernel when they share one iteration
space; a part that needs a grid barrier makes the kernel `stitch-global`. A kernel takes at
most MAX_KERNEL_PARAMETERS operands and outputs (XLA's fusion budget) and computes at most
MAX_KERNEL_NODES nodes (nvcc's time grows faster than a kernel's size; plan.py). Whether a
legal kernel is worth building is the price's to say.

Each group of the search keeps its `Summary` (its nodes, labels, components and outputs), so
that `Analysis.union` of several groups revisits only the nodes near the edges that become
internal, and `Analysis.full` summarises a kernel from scratch (a seed's kernels, and the
tests' check of the incremental union).
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

from compiler.ir.graph import Graph, Node
from compiler.kernels.analysis import (BARRIER, STITCHED, GraphFacts, combine_parts, fits_block,
                                       kind_of, node_label, reduction_label, row_cap)
from compiler.kernels.locality import INV
from compiler.target.sol import SolModel

FEW_USERS = 8               # users of a value listed one by one (Analysis.users_inside)


@dataclass(frozen=True)
class Component:
    """What decides the schedule of a component (nodes joined by data flow in a kernel)."""

    reductions: tuple[str, ...] = ()
    stitched: bool = False       # consumes a reduction's result inside the kernel
    barrier: str | None = None   # a node that reads a reduction's result across rows
    work: int = 1                # its largest iteration space, in elements
    largest: tuple = ()          # (elements, -position, name) of its largest owned node

    def join(self, other: Component) -> Component:
        return Component(self.reductions + other.reductions, self.stitched or other.stitched,
                          self.barrier or other.barrier, max(self.work, other.work),
                          max(self.largest, other.largest))


@dataclass
class Summary:
    """One kernel's analysis. Kept per group, so that analysing a union of groups revisits only
    the nodes downstream (labels, components) or upstream (replication) of the edges that
    become internal."""

    inside: frozenset[str]                # computed here: owned and recomputed nodes
    owned: frozenset[str]
    inputs: frozenset[str]                # values read from outside
    outputs: frozenset[str] = frozenset()
    parent: dict[str, str] = dataclasses.field(default_factory=dict)  # union-find of owned
    anchor: dict[str, str] = dataclasses.field(default_factory=dict)  # recomputed -> an owned
    components: dict[str, Component] = dataclasses.field(default_factory=dict)  # root -> it
    labels: dict[str, tuple] = dataclasses.field(default_factory=dict)  # all but INV


class Analysis:
    """The labels, components and outputs of a candidate kernel, kept incrementally: `full`
    summarises a kernel from scratch, `union` several summarised ones merged. Which kernel
    they make (the module docstring) is the kernel analysis's verdict (`verdict`)."""

    def __init__(self, graph: Graph, model: SolModel, written):
        self.graph = graph
        self.nodes = nodes = graph.nodes
        self.device = device = model.device
        self.written = written  # (value, kernel's summary) -> must the kernel write it
        self.facts = facts = GraphFacts.of(graph)  # what the kernel analysis reads
        self.position = facts.position
        self.users = facts.users
        self._user_sets: dict[str, frozenset[str]] = {}  # of values with many users
        self.operands = {name: tuple(dict.fromkeys(node.operands))
                         for name, node in nodes.items()}
        self.elements = facts.elements
        self.space = facts.space
        self.row_cap = row_cap(device)

    # -- analyses ---------------------------------------------------------------------------------

    def full(self, inside: set[str], owned: set[str]) -> Summary:
        inputs = {o for name in inside for o in self.operands[name] if o not in inside}
        summary = Summary(frozenset(inside), frozenset(owned), frozenset(inputs))
        for name in owned:
            summary.parent[name] = name
            summary.components[name] = self.component(name)
        order = sorted(inside, key=self.position.__getitem__)
        for name in order:
            self._settle(summary, name)
        summary.outputs = frozenset(v for v in owned if self.written(v, summary))
        return summary

    def union(self, pieces: list[Summary]) -> Summary:
        inside = frozenset().union(*(piece.inside for piece in pieces))
        read = frozenset().union(*(piece.inputs for piece in pieces))
        summary = Summary(inside, frozenset().union(*(piece.owned for piece in pieces)),
                           read - inside)
        parent, anchor = summary.parent, summary.anchor
        links = []  # a node two pieces compute (one may own it) joins their components
        shared: set[str] = set()  # nodes several pieces compute
        covered: frozenset[str] = frozenset()
        for piece in pieces:
            shared |= covered & piece.inside
            covered |= piece.inside
            parent.update(piece.parent)  # the pieces own disjoint sets of nodes
            summary.components.update(piece.components)
            summary.labels.update(piece.labels)
            for name, target in piece.anchor.items():
                if name in anchor:
                    links.append((anchor[name], target))
                else:
                    anchor[name] = target
        for name in anchor.keys() & summary.owned:  # recomputed by one piece, owned by another
            links.append((name, anchor.pop(name)))
        for a, b in links:
            self._join(summary, a, b)
        internal = read & inside  # values a piece read from another: edges now inside
        # Their readers, and the nodes several pieces compute: one piece may have computed
        # such a node from outside values only, its users there joining no component.
        self._relabel(summary, [*shared, *(user for value in internal
                                           for user in self.users_inside(value, inside))])
        # A value written for a reader in another piece, which reads it or computes it too,
        # may be needed outside no more.
        outputs = frozenset().union(*(piece.outputs for piece in pieces))
        summary.outputs = outputs - {v for v in outputs & (internal | shared)
                                     if not self.written(v, summary)}
        return summary

    def users_inside(self, name: str, inside) -> list[str]:
        """The users of `name` among `inside`, in graph order. A value with many users (a
        shared constant every layer reads, a global norm every parameter update reads) is
        intersected as sets, which walks the smaller of the two: a kernel must not cost its
        fan-out, nor a big kernel its size, each time it is asked."""
        users = self.users[name]
        if len(users) <= FEW_USERS:
            return [user for user in users if user in inside]
        found = self._user_sets.get(name)
        if found is None:
            found = self._user_sets[name] = frozenset(users)
        return sorted(found.intersection(inside), key=self.position.__getitem__)

    def component(self, name: str) -> Component:
        """The component of an owned node alone."""
        node = self.nodes[name]
        work = self.elements[name]
        if node.op in ("reduce", "reduce-window"):
            work = max(work, self.elements[node.operands[0]])
        return Component(reductions=(name,) if name in self.space else (), work=work,
                          largest=(self.elements[name], -self.position[name], name))

    def _root(self, summary: Summary, name: str) -> str:
        """The component of an owned or anchored node."""
        return _find(summary.parent, summary.anchor.get(name, name))

    def _join(self, summary: Summary, a: str, b: str) -> None:
        parent, components = summary.parent, summary.components
        root_a, root_b = self._root(summary, a), self._root(summary, b)
        if root_a != root_b:
            parent[root_b] = root_a
            components[root_a] = components[root_a].join(components.pop(root_b))

    # -- block locality (locality.py's labels) and components, downstream -----------------------

    def _relabel(self, summary: Summary, start: list[str]) -> None:
        """Settle the nodes that read values now inside, then their users as long as something
        changes. The first ones' users always: a node a piece recomputed from outside values
        only may now belong to a component its users in that piece did not join."""
        position, inside = self.position, summary.inside
        first = set(start)
        queued = set(first)
        heap = [(position[name], name) for name in queued]
        heapq.heapify(heap)
        while heap:
            _, name = heapq.heappop(heap)
            if self._settle(summary, name) or name in first:
                for user in self.users_inside(name, inside):
                    if user not in queued:
                        queued.add(user)
                        heapq.heappush(heap, (position[user], user))

    def _settle(self, summary: Summary, name: str) -> bool:
        """Join `name` to the components of its operands inside and give it its label; True
        when that changed something its users depend on."""
        parent, anchor = summary.parent, summary.anchor
        labels, components = summary.labels, summary.components
        anchored = [o for o in self.operands[name]
                    if o in summary.inside and (o in parent or o in anchor)]
        changed = False
        if anchored and name not in parent and name not in anchor:
            # a recomputed node now fed from inside belongs to its operands' component
            anchor[name] = owner = anchored[0] if anchored[0] in parent else anchor[anchored[0]]
            root = _find(parent, owner)
            components[root] = components[root].join(Component(work=self.elements[name]))
            changed = True
        for operand in anchored:
            self._join(summary, name, operand)
        node = self.nodes[name]
        label, flag = self._label(node, [labels.get(o, INV) for o in node.operands])
        if label != labels.get(name, INV):
            changed = True
            if label == INV:
                del labels[name]
            else:
                labels[name] = label
        if flag is not None and (name in parent or name in anchor):
            root = self._root(summary, name)
            component = components[root]
            if flag == STITCHED and not component.stitched:
                components[root] = dataclasses.replace(component, stitched=True)
            elif flag == BARRIER and component.barrier is None:
                components[root] = dataclasses.replace(component, barrier=name)
        return changed

    def _label(self, node: Node, operand_labels: list[tuple]) -> tuple[tuple, str | None]:
        """The node's label and flag (the kernel analysis's STITCHED or BARRIER) from its
        operands' labels; `moved` rows count as read across rows (the row schedules read a
        moved row's elements at other rows' places, where the row results are not at hand:
        only the phased schedule computes it well)."""
        space = self.space.get(node.name)
        if space is not None:
            return reduction_label(space, fits_block(space, self.row_cap), operand_labels)
        return node_label(self.graph, node, operand_labels, moved_rows_local=False)

    # -- kinds ------------------------------------------------------------------------------------

    def verdict(self, summary: Summary) -> tuple[str, str, str]:
        """(kind, reason, dominant node): the kernel analysis's verdict on each component, and
        on the kernel of them all (`combine_parts`)."""
        components = list(summary.components.values())
        inside, device = summary.inside, self.device
        verdicts = [kind_of(self.facts, list(c.reductions), c.stitched, c.barrier is not None,
                            lambda value: self.users_inside(value, inside), device, c.barrier)
                    for c in components]
        kind, reason = combine_parts(verdicts, [c.work for c in components])
        reductions = [r for c in components for r in c.reductions]
        if reductions:
            return kind, reason, self.facts.dominant_reduction(reductions)
        return kind, reason, max(c.largest for c in components)[2]


def _find(parent: dict[str, str], name: str) -> str:
    root = name
    while parent[root] != root:
        root = parent[root]
    while parent[name] != root:
        parent[name], name = root, parent[name]
    return root
