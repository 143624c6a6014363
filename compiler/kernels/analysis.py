"""The kernel analysis: what kind of kernel a group of nodes is, and its dominant reduction
(what XLA's HloFusionAnalysis is to its emitters: the one place the kind is decided, read by
every strategy, the pricer and the code generator through the plan).

A group's kind follows from its reductions' row spaces and from what its nodes hand over
across rows (compiler/kernels/locality.py's block-locality labels):

- `loop`: no reduction that moves data (a reduction of size-1 dimensions is a reshape).
- `input`: reductions of one row space whose results nothing in the group reads.
- `stitch-regional`: reductions of one row space whose results the group reads within a block
  (a node is *stitched*), no node reads them across rows, and the rows fit a block: a row's
  length is at most `max_threads_per_block * ELEMENTS_PER_THREAD` and contiguous
  (`fits_block`), and the block's row buffers fit its shared memory (`regional_fit`).
- `stitch-global`: anything else: reductions of several row spaces, a node that needs values
  of other blocks (a *barrier*: a grid-wide one), rows that do not fit a block. A strategy
  that asks for the co-residency bound (`Residency`: blocks waiting at a grid barrier hold
  their SMs, so a grid larger than what is resident at once deadlocks) gets no kind (None)
  for a global group whose grid exceeds it.

The dominant reduction is the one with the largest input, the first in graph order on a tie
(`GraphFacts.dominant_reduction`); it gives the kernel its thread mapping.

The labels (`reduction_label`, `node_label`) are the rule a node's label follows from its
operands' labels; a strategy keeps them per node as it merges groups, however it likes (the
stitch strategy, compiler/fusion/stitch.py, tallies a group; the cost strategy,
compiler/fusion/cost_based/summaries.py, a component of a kernel; both incrementally), and asks
`kind_of` for the verdict on what it tallied. `analyse` walks a set
of nodes from scratch: the horizontal schedule's parts (`part_kind`), XLA's own groups
(compiler/fusion/xla_gpu.py) and the tests ask it. The two fusers differ in one rule, passed
as `moved_rows_local`: whole rows moved by a transpose stay block-local in the stitch
strategy's model of AStitch, while the cost strategy and the code generator count them as read
across rows (the row schedules read a moved row at other rows' places, where its row results
are not at hand).

A verdict (`Verdict`) keeps the facts that decided it and says why in two phrasings: the
figures the stitch strategy logs for a merge (`detailed`) and the short reason the cost
strategy gives a candidate (`brief`); `combine_parts` judges a kernel of several independent
parts, as the cost strategy cuts one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from compiler.ir.dtypes import DType, accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.kernels.grouping import FUSIBLE, node_role
from compiler.kernels.locality import (GRID, INV, RowSpace, full_label, map_rows, reduce_space,
                                       row_label)
from compiler.kernels.stitch_launch import (ELEMENTS_PER_THREAD, GLOBAL_BLOCK_THREADS,
                                            global_blocks_per_sm, regional_rows_per_block)

# What a node's label says about the group (`reduction_label`, `node_label`).
STITCHED = "stitched"  # it consumes a reduction's result within a block
BARRIER = "barrier"    # it needs values other blocks computed: a grid-wide barrier
# The threads of a block on every listed device, for a caller without a device.
DEFAULT_BLOCK_THREADS = 1024


# -- what the verdicts read of a graph ------------------------------------------------------


class GraphFacts:
    """A graph's nodes as the verdicts see them: their element counts and graph positions, and
    the row space of every reduction that moves data (`moving_space`). Computed once per graph
    (`of`)."""

    def __init__(self, graph: Graph):
        self.nodes = graph.nodes  # not the graph, which keeps its facts (`of`)
        self.position = graph.positions()
        self.users = graph.users()
        self.elements = {node.name: sum(leaf.size for leaf in node.shape.leaves())
                         for node in graph}
        self.space: dict[str, RowSpace] = {}
        for node in graph:
            space = moving_space(graph, node)
            if space is not None:
                self.space[node.name] = space

    @classmethod
    def of(cls, graph: Graph) -> GraphFacts:
        known = graph.analysis_cache("kernels.analysis")
        facts = known.get("facts")
        if facts is None or len(facts.position) != len(graph.nodes):
            facts = known["facts"] = cls(graph)
        return facts

    def dominant_reduction(self, reductions: Iterable[str]) -> str:
        """The reduction with the largest input, the first in graph order on a tie."""
        nodes, elements, position = self.nodes, self.elements, self.position
        return max(reductions, key=lambda r: (elements[nodes[r].operands[0]], -position[r]))


def moving_space(graph: Graph, node: Node) -> RowSpace | None:
    """The row space of a fusible reduction that moves data (reduces more than one element per
    row), else None."""
    if node.op != "reduce" or node_role(node) != FUSIBLE:
        return None
    space = reduce_space(graph, node)
    return space if space.length > 1 else None


def row_cap(device=None) -> int:
    """The longest row a block reduces and stitches: ELEMENTS_PER_THREAD per thread."""
    threads = DEFAULT_BLOCK_THREADS if device is None else device.max_threads_per_block
    return threads * ELEMENTS_PER_THREAD


def fits_block(space: RowSpace, cap: int) -> bool:
    """Whether a block reduces a row of `space`: contiguous and at most `cap` elements."""
    return space.contiguous and space.length <= cap


# -- labels ---------------------------------------------------------------------------------


def reduction_label(space: RowSpace, fits: bool, operand_labels: list[tuple]
                    ) -> tuple[tuple, str | None]:
    """A reduction's label and flag (STITCHED, BARRIER or None) from its operands' labels
    (input, init); `fits`: whether its rows fit a block."""
    source = operand_labels[0]
    if any(label != INV for label in operand_labels[1:]):
        return GRID, BARRIER  # a computed init value
    if source == INV:
        return (row_label(space) if fits else GRID), None
    if source == full_label(space) and fits:
        return row_label(space), STITCHED
    if source == GRID or fits:
        return GRID, BARRIER
    # A row that does not fit a block, reduced from block-local values: partial results meet in
    # global memory (the group holds two row spaces, so it is global anyway).
    return GRID, STITCHED


def node_label(graph: Graph, node: Node, operand_labels: list[tuple],
               moved_rows_local: bool) -> tuple[tuple, str | None]:
    """The label and flag of a node that is not a reduction moving data, from its operands'
    labels (module docstring: `moved_rows_local`)."""
    mapped = map_rows(graph, node, operand_labels)
    if mapped == INV:
        return INV, None
    if mapped is None or (mapped[0] == "moved" and not moved_rows_local):
        return GRID, BARRIER
    return mapped, STITCHED


# -- the figures: a regional block's shared memory, a global grid's residency ---------------


@dataclass(slots=True)  # not frozen: a frozen dataclass is slower to make, and it is asked often
class RegionalFit:
    """A regional block's shared memory: per row, the dominant's input row in the accumulation
    dtype, the row of every other reduced value a non-reduction node of the group also reads
    (re-read after the block barrier, like softmax's exp), one accumulator per reduction."""

    space: RowSpace        # the dominant's rows
    dtype: DType           # the dominant input's accumulation dtype
    buffers: int           # rows buffered
    results: int           # row results (one per reduction)
    per_row: int           # bytes
    rows_per_block: int
    block_bytes: int       # per_row x rows_per_block
    limit: int             # the block's shared memory, bytes
    fits: bool             # block_bytes <= limit

    def detailed(self) -> str:
        row_bytes = math.ceil(self.space.length * self.dtype.itemsize)
        return (f"row {self.space.length} {self.dtype} = {row_bytes} B; {self.buffers} row "
                f"buffer{'s' if self.buffers != 1 else ''} + {self.results} row result"
                f"{'s' if self.results != 1 else ''} = {self.per_row} B/row x "
                f"{self.rows_per_block} rows/block = {self.block_bytes} B "
                f"{'<=' if self.fits else '>'} {self.limit} B shared memory per block")

    def brief(self) -> str:
        figures = f"rows {self.space}, {self.block_bytes} B shared memory per block"
        return figures if self.fits else f"{figures} > {self.limit} B"


def regional_fit(facts: GraphFacts, device, reductions: Iterable[str], dominant: str,
                 readers_inside: Callable[[str], Iterable[str]]) -> RegionalFit:
    """The shared memory a regional block of the group needs (`RegionalFit`);
    `readers_inside(value)`: the group's nodes that read `value`."""
    nodes = facts.nodes
    space = facts.space[dominant]
    dominant_input = nodes[dominant].operands[0]
    per_row, buffered, results, seen = 0, 0, 0, set()
    for reduction in reductions:
        results += 1
        per_row += math.ceil(accumulation_dtype(nodes[reduction].shape.dtype).itemsize)
        source = nodes[reduction].operands[0]
        if source in seen:
            continue
        seen.add(source)
        if source == dominant_input or any(nodes[u].op != "reduce"
                                           for u in readers_inside(source)):
            buffered += 1
            item = accumulation_dtype(nodes[source].shape.dtype).itemsize
            per_row += math.ceil(space.length * item)
    rows_per_block = regional_rows_per_block(device, space.length)
    block_bytes, limit = per_row * rows_per_block, device.shared_memory_per_block_bytes
    return RegionalFit(space, accumulation_dtype(nodes[dominant_input].shape.dtype), buffered,
                       results, per_row, rows_per_block, block_bytes, limit,
                       block_bytes <= limit)


@dataclass(slots=True)
class Residency:
    """A globally stitched grid against the blocks resident at once (GLOBAL_BLOCK_THREADS
    threads per block, ELEMENTS_PER_THREAD elements per thread over the group's largest
    iteration space): more, and blocks waiting at the grid barrier keep the rest from ever
    starting."""

    blocks: int
    per_sm: int
    sm_count: int
    resident: int   # per_sm x sm_count
    fits: bool      # blocks <= resident

    @classmethod
    def of(cls, device, work: int) -> Residency:
        blocks = max(1, -(-work // (GLOBAL_BLOCK_THREADS * ELEMENTS_PER_THREAD)))
        per_sm = global_blocks_per_sm(device)
        resident = per_sm * device.sm_count
        return cls(blocks, per_sm, device.sm_count, resident, blocks <= resident)


# -- the verdict ----------------------------------------------------------------------------


@dataclass(slots=True)
class Verdict:
    """A group's kind (None: refused, a global grid that would deadlock), its dominant
    reduction and the facts that decided them."""

    kind: str | None
    dominant: str | None = None
    spaces: tuple[RowSpace, ...] = ()   # of its reductions, in the order of their text
    fit: RegionalFit | None = None      # when its one row space is stitched
    misfit: tuple[str, RowSpace] | None = None  # its first reduction whose rows fit no block
    barrier_node: str | None = None     # a node that reads a result across rows, if named
    residency: Residency | None = None  # of a global group, when asked
    device: object = None               # the device it was judged for, if any

    def detailed(self) -> str:
        """Why, with the figures (the stitch strategy's decision log)."""
        if self.kind == "loop":
            return "loop fusion"
        if self.kind == "input":
            return f"input fusion into {self.dominant} (rows {self.spaces[0]}, nothing stitched)"
        if self.kind == "stitch-regional":
            return f"regional stitch: {self.fit.detailed()}"
        why = self._global_cause()
        residency = self.residency
        if residency is None:
            return f"global stitch ({why})"
        if not residency.fits:
            return (f"global stitch refused: needs {residency.blocks} blocks > "
                    f"{residency.resident} resident: would deadlock ({why})")
        return (f"global stitch ({why}): {residency.blocks} "
                f"block{'s' if residency.blocks > 1 else ''} <= {residency.resident} "
                f"resident ({residency.sm_count} SMs x {residency.per_sm})")

    def _global_cause(self) -> str:
        if self.fit is not None:
            return f"regional refused: {self.fit.detailed()}"
        if self.misfit is not None:
            reduction, space = self.misfit
            if not space.contiguous:
                return f"{reduction} reduces strided rows ({space})"
            threads = row_cap(self.device) // ELEMENTS_PER_THREAD
            return (f"{reduction}: row {space.length} > {row_cap(self.device)} elements per "
                    f"block ({threads} threads x {ELEMENTS_PER_THREAD})")
        if len(self.spaces) > 1:
            return "rows " + " and ".join(map(str, self.spaces)) + " in one kernel"
        if self.barrier_node:
            return f"{self.barrier_node} reads a reduction's result across rows"
        return "joins a kernel that reads a reduction's result across rows"

    def brief(self) -> str:
        """Why, in short (the cost strategy's reason for a candidate)."""
        if self.kind == "loop":
            return "loop"
        if self.kind == "input":
            return f"input fusion (rows {self.spaces[0]}, nothing stitched)"
        if self.kind == "stitch-regional":
            return f"regional stitch ({self.fit.brief()})"
        if self.fit is not None:
            why = f"rows do not fit a block: {self.fit.brief()}"
        elif len(self.spaces) > 1:
            why = f"two reductions with different rows ({self.spaces[0]} and {self.spaces[1]})"
        else:
            why = f"{self.barrier_node} reads a reduction's result across rows"
        return f"global stitch ({why})"


LOOP = Verdict("loop")  # every loop's verdict: one object, never changed


def kind_of(facts: GraphFacts, reductions: list[str], stitched: bool, barrier: bool,
            readers_inside: Callable[[str], Iterable[str]], device=None,
            barrier_node: str | None = None, work: int | None = None) -> Verdict:
    """The verdict on a group (module docstring) from what its nodes' labels say: its
    reductions that move data, whether a node is stitched, whether one needs a barrier
    (`barrier_node`, when the asker knows which). Without a device, the rows of one stitched
    space are taken to fit a block's shared memory (the row schedules keep no row there);
    with `work` (the group's largest iteration space), a global group must fit the
    co-residency bound (`Residency`)."""
    if not reductions:
        return LOOP
    space = facts.space
    dominant = facts.dominant_reduction(reductions)
    spaces = tuple({space[r] for r in reductions})
    if len(spaces) > 1:
        spaces = tuple(sorted(spaces, key=str))
    if not barrier and len(spaces) == 1:
        if not stitched:
            return Verdict("input", dominant, spaces)
        # Stitched rows fit a block: only a reduction whose rows fit gives a row's value.
        if device is None:
            return Verdict("stitch-regional", dominant, spaces)
        fit = regional_fit(facts, device, reductions, dominant, readers_inside)
        if fit.fits:
            return Verdict("stitch-regional", dominant, spaces, fit)
        misfit = None
    else:
        fit = None
        cap = row_cap(device)
        misfit = next(((r, space[r]) for r in reductions if not fits_block(space[r], cap)),
                      None)
    kind, residency = "stitch-global", None
    if work is not None:
        residency = Residency.of(device, work)
        kind = kind if residency.fits else None
    return Verdict(kind, dominant, spaces, fit, misfit, barrier_node, residency, device)


def combine_parts(verdicts: list[Verdict], works: list[int]) -> tuple[str, str]:
    """The kind of a kernel of independent parts, each judged alone (`verdicts`, with their
    largest iteration spaces `works`), and why in short: one part is its own kernel; loops of
    one iteration space, or inputs of one row space, are one multi-output kernel; else the
    parts run side by side, each on blocks of its own (`horizontal`), unless one needs a grid
    barrier, which makes the whole kernel a globally stitched one."""
    if len(verdicts) == 1:
        return verdicts[0].kind, verdicts[0].brief()
    kinds = {verdict.kind for verdict in verdicts}
    if kinds == {"loop"} and len(set(works)) == 1:
        return "loop", f"multi-output loop fusion of {len(verdicts)} parts"
    if kinds == {"input"} and len({s for verdict in verdicts for s in verdict.spaces}) == 1:
        return "input", f"multi-output input fusion of {len(verdicts)} parts"
    if "stitch-global" in kinds:
        return "stitch-global", f"{len(verdicts)} parts, one globally stitched"
    return "horizontal", f"{len(verdicts)} parts side by side"


# -- from scratch ---------------------------------------------------------------------------


def analyse(graph: Graph, computed: Iterable[str], device=None,
            moved_rows_local: bool = False) -> Verdict:
    """The verdict on the group computing `computed`, judged as one, labelled from scratch in
    graph order (values from outside it depend on no reduction of it)."""
    facts = GraphFacts.of(graph)
    nodes = sorted(computed, key=facts.position.__getitem__)
    inside = set(nodes)
    cap = row_cap(device)
    labels: dict[str, tuple] = {}  # all but INV
    reductions: list[str] = []
    stitched, barrier_node = False, None
    for name in nodes:
        node = graph.nodes[name]
        operand_labels = [labels.get(o, INV) for o in node.operands]
        space = facts.space.get(name)
        if space is not None:
            reductions.append(name)
            label, flag = reduction_label(space, fits_block(space, cap), operand_labels)
        else:
            label, flag = node_label(graph, node, operand_labels, moved_rows_local)
        if label != INV:
            labels[name] = label
        stitched = stitched or flag == STITCHED
        if flag == BARRIER and barrier_node is None:
            barrier_node = name
    users = facts.users
    return kind_of(facts, reductions, stitched, barrier_node is not None,
                   lambda value: (u for u in users[value] if u in inside), device, barrier_node)


def part_kind(graph: Graph, computed: Iterable[str]) -> tuple[str, str | None]:
    """(kind, dominant reduction or None) of a horizontal kernel's part, or of a group another
    compiler formed (XLA's): judged from scratch as the code generator schedules it, `moved`
    rows read across rows and no row kept in shared memory."""
    verdict = analyse(graph, computed)
    return verdict.kind, verdict.dominant


def independent_parts(graph: Graph, owned: Sequence[str],
                      recomputed: Sequence[str]) -> list[tuple[list[str], tuple[str, ...]]]:
    """A kernel's independent parts: its `owned` nodes (in graph order) joined when one reads
    the other, directly or through `recomputed` nodes, each part with the recomputed nodes it
    reads (in their order; one read by several parts belongs to each). Parts come out by their
    first owned node. The horizontal schedule runs each part on blocks of its own; an edited
    kernel's kind is that of its parts together (`combine_parts`)."""
    inside, again = set(owned), set(recomputed)
    parent = {name: name for name in owned}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    reach: dict[str, set[str]] = {}  # recomputed node -> the owned nodes it reads through

    def owned_behind(name: str) -> set[str]:
        if name not in reach:
            reach[name] = set()
            for operand in graph.nodes[name].operands:
                if operand in inside:
                    reach[name].add(operand)
                elif operand in again:
                    reach[name] |= owned_behind(operand)
        return reach[name]

    for name in owned:
        for operand in graph.nodes[name].operands:
            linked = {operand} if operand in inside else \
                owned_behind(operand) if operand in again else set()
            for other in linked:
                parent[root(other)] = root(name)
    del owned_behind  # it refers to itself: a cycle that would outlive the call
    members: dict[str, list[str]] = {}
    for name in owned:
        members.setdefault(root(name), []).append(name)
    parts = []
    for names in members.values():
        used: set[str] = set()
        stack = [o for name in names for o in graph.nodes[name].operands]
        while stack:
            name = stack.pop()
            if name in again and name not in used:
                used.add(name)
                stack.extend(graph.nodes[name].operands)
        parts.append((names, tuple(n for n in recomputed if n in used)))
    return parts
