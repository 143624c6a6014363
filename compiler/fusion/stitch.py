"""The `stitch` strategy: AStitch's operator stitching (Zheng et al., "AStitch: Enabling a New
Multi-dimensional Optimization Space for Memory-Intensive ML Training and Inference on Modern
SIMT Architectures", ASPLOS 2022; PAI's "V1" in BladeDISC).

XLA ends a fusion at every reduction whose result is broadcast back and consumed, so layer
norm costs it three or four kernels. AStitch instead *stitches* the sub-kernels on either side
of such a boundary into one kernel and passes the reduction's result between them on chip.
Its §3.1 names the ways two stitched ops can hand data over: *independent* (no dependence:
both packed into one kernel), *local* (element to element, in registers), *regional* (one
reduced row to the many elements of its consumers, through shared memory inside one thread
block) and *global* (through global memory, behind a grid-wide barrier). This module models
the fusion decision of that scheme at plan level; it does not generate code.

The model
---------
Every kernel-forming node starts as its own group (`grouping.GroupGraph`, which keeps the group
graph acyclic: a merge that would close a cycle is refused, "would form cycle"). Groups merge
along producer -> consumer edges, in graph order, whenever the merged group still has a legal
schedule. Then independent groups merge horizontally (§3.1's independent scheme; XLA's sibling
multi-output and horizontal loop fusion do the same for its fusions): the groups that read one
value, which is then loaded once, and the groups whose values one node reads, which then take
one launch instead of several, again only when the merged group has a legal schedule. A
group's schedule is decided as AStitch's §4 decides it (dominant identification, op grouping,
then the stitching scheme), from its *dominant* op. The kernel analysis
(compiler/kernels/analysis.py) decides it, for the cost strategy and the code generator too;
this module keeps every group's labels and tallies as groups merge and asks it for the verdict
on them:

- Dominant op: reductions dominate (the one with the largest input, the first in graph order
  on a tie); without a reduction, the largest elementwise output or transpose. The dominant's
  iteration space is the thread mapping: its *rows* are the kept dimensions, its *row length*
  the reduced ones. A reduction is a *row* reduction when its reduced dimensions are the
  innermost ones (size-1 dimensions ignored, row-major order); a reduction whose reduced
  dimensions all have size 1 moves no data and is treated like a reshape.
- Block locality (compiler/kernels/locality.py, the analysis's labels). Every node of
  a group gets a label: `inv` (depends on no reduction of the group: any block computes the
  elements it needs from memory), `row` (one value per row of a row space), `full` (element
  i belongs to row i // length; the rows of the reductions it reads, a length of its own),
  `moved` (whole rows of a `full` value transposed to other places) or `grid` (needs values
  other blocks computed). A reduction of a `full` or `inv` input whose rows fit a block gives
  `row`; broadcasting a `row` value along the row (the kept dimensions leading), reshapes
  and transposes that keep the row-major order, and elementwise ops keep the label; a slice,
  concatenate, reverse, pad or transpose that moves elements only within each row (the row
  dimensions leading and untouched: RoPE's halves of each token's row, negated and joined
  again) gives `full` of the output's own row length, block-local all the same, and so does
  a transpose of whole rows here (`moved`; the cost strategy and the code generator count it
  as read across rows); anything else that reads a `row`, `full` or `moved` value (a
  transpose or slice across rows, a reduction over other dimensions, a row space that does
  not fit a block) gives `grid`, and the node needs a grid-wide barrier.
- Regional stitch (`stitch-regional`, §3.1/§4): all reductions reduce the same rows, the rows
  fit a block, no node needs a barrier and at least one node consumes a reduction's result
  in the kernel. A row fits when its length is at most `max_threads_per_block *
  ELEMENTS_PER_THREAD` (8192 on every listed device) and the block's shared memory holds its
  rows: per row, the dominant's input row in the accumulation dtype ("row 32 f32 = 128 B"),
  the row of every other reduced tensor that a non-reduction node of the kernel also reads
  (a value re-read after the block barrier, like softmax's exp), and one accumulator per
  reduction (the per-row result handed to consumers). Rows are packed into blocks of about
  REGIONAL_BLOCK_THREADS threads, a warp or more per row, up to `ELEMENTS_PER_THREAD`
  elements per thread; the block's bytes must not exceed `shared_memory_per_block_bytes`.
  Layer norm, RMS norm and softmax forward are each one regional kernel.
- Global stitch (`stitch-global`, §3.1/§4): a reduction's row does not fit a block (a strided
  "column" reduction, a row longer than a block processes, rows too big for shared memory), a
  node reads across rows, or reductions of different rows share the kernel. The kernel then
  stitches through global memory with a grid-wide barrier, which deadlocks unless every block
  of the grid is resident at once: blocks waiting at the barrier hold their SMs, so blocks not
  yet launched never arrive (AStitch sizes a globally stitched grid to the co-resident blocks
  for this reason; CUDA's cooperative launch refuses larger grids). A global kernel runs
  GLOBAL_BLOCK_THREADS threads per block, ELEMENTS_PER_THREAD elements per thread over its
  largest iteration space, GLOBAL_REGISTERS_PER_THREAD registers per thread; its blocks per SM
  are the least of `max_blocks_per_sm`, `max_threads_per_sm / 512` and `registers_per_sm /
  (512 * 32)` (4 on an H100, so 132 x 4 = 528 resident blocks). More blocks than that and the
  merge is refused: "global stitch refused: needs 4096 blocks > 528 resident: would deadlock".
- `input`: reductions of one row space whose results nothing in the kernel reads (a plain
  reduction with its producers, or sibling reductions with several outputs): nothing is
  stitched, so no limit applies. `loop`: no reduction; fused as XLA's loop fusion, except that
  an expensive producer (XLA's list: exp, divide, tanh, ...) is not fused into a consumer that
  reads each of its elements many times (a growing broadcast, a reduce-window, a gather) —
  the consumer would recompute it per element. `horizontal`: loops that share no value,
  packed into one launch. Library ops stay alone in `library` kernels.
- Multiple outputs of different shapes are allowed: a stitched kernel may write a row
  statistic and the normalised tensor.

Cheap values are recomputed instead of stored, as XLA duplicates them into its fusions: a
cheap node (grouping.is_duplicable) whose operands are all parameters, constants or such nodes
is owned by no kernel and recomputed by every kernel reading it; and after grouping, a cheap
node that other kernels read is recomputed by them when that reads no more bytes than storing
it would (a broadcast or reshape of a reduction's result). Both only when the bytes its
recomputation loads are at most its own, so recomputing never costs more DRAM traffic than
storing and loading it.

Merging in graph order, GroupGraph's cycle check walks the groups ranked between the two being
merged (forward from one and backward from the other, in turns, until either walk ends).
Ranked in the graph's own order, a training step lists ops that depend only on forward values
among the backward pass, thousands of ranks after the forward kernel they join, and the walks
made the search quadratic (the 48-layer step took 7x as long as the 12-layer one). The groups
are therefore ranked by their longest path from the inputs, which keeps such merges short and
the search linear. A merge whose cycle check would visit more than MERGE_BUDGET groups is
refused ("too far apart"): a value every layer reads would else make every attempt to join
it walk the graph between two layers.

Thresholds (compiler/kernels/stitch_launch.py): ELEMENTS_PER_THREAD = 8 (the per-thread work
cap: rows up to 1024 x 8 = 8192 elements are regional), REGIONAL_BLOCK_THREADS = 256,
GLOBAL_BLOCK_THREADS = 512 and GLOBAL_REGISTERS_PER_THREAD = 32 (the launch the deadlock guard
assumes); the device's
`shared_memory_per_block_bytes` (the opt-in maximum, 227 KiB on an H100) bounds a block's rows.

Every merge and refusal goes into the decision log with the scheme and the figure that decided
it ("regional stitch: row 32 f32 = 128 B; ...", "global stitch refused: needs 4096 blocks > 528
resident: would deadlock").
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from compiler.codegen.emission import emission_refusal, first_refusal
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS
from compiler.kernels.analysis import (BARRIER, STITCHED, GraphFacts, fits_block, kind_of,
                                       node_label, reduction_label, row_cap)
from compiler.kernels.grouping import (FUSIBLE, LEAF, LIBRARY, PLUMBING, GroupGraph, WindowTooWide,
                                       graph_output_sources, is_duplicable, kernel_outputs,
                                       node_role, plumbing_sources)
from compiler.kernels.locality import INV
from compiler.kernels.plan import (LIBRARY_OPERAND_VIEWS, MAX_KERNEL_NODES, MAX_KERNEL_PARAMETERS,
                                   Decision, FusionPlan, KernelSpec, build_plan, too_many_nodes)
from compiler.target.sol import SolModel


STRATEGY = "stitch"
# Groups merge only when checking the merge for a cycle visits at most this many groups. A
# value that every layer of a model reads (a RoPE table, a mask) would otherwise draw a merge
# attempt from a kernel of every layer, each attempt's check walking the groups of the layers
# between them: quadratic in depth (a 96-layer Llama step took minutes). Merges within a layer,
# and a backward op's with the forward values it reads (ranked close, see below), stay far
# below it.
MERGE_BUDGET = 2048


@dataclass(frozen=True)
class _NodeState:
    label: tuple
    barrier: bool = False   # needs values from other blocks: a grid-wide barrier
    stitched: bool = False  # consumes a reduction's result inside the kernel
    carries: str | None = None  # an expensive op this `inv` value is computed from, in-group
    reuse: str | None = None    # such an op, when this node reads its value many times


@dataclass
class _Group:
    """A candidate kernel's schedule-relevant totals (members live in the GroupGraph)."""

    reductions: list[str] = field(default_factory=list)
    barrier: int = 0
    stitched: int = 0
    reuse: int = 0          # nodes that would recompute an expensive producer per element
    work: int = 0           # the largest iteration space of its nodes, in elements
    inputs: frozenset[str] = frozenset()  # values it reads from memory
    free: frozenset[str] = frozenset()    # free nodes it recomputes (`_Stitcher._free_nodes`)


@dataclass
class _Verdict:
    kind: str | None        # None: refused
    reason: str


class _Stitcher:
    def __init__(self, graph: Graph, model: SolModel, check_code: bool = False):
        self.graph = graph
        self.check_code = check_code  # check each merge's code size (`stitch_fusion`)
        self.device = model.device
        self.model = model
        self.facts = facts = GraphFacts.of(graph)  # what the kernel analysis reads
        self.position = facts.position
        self.users = facts.users
        self.role = {node.name: node_role(node) for node in graph}
        self.elements = facts.elements
        self.outputs = graph_output_sources(graph)
        self.space = facts.space  # the fusible reductions that move data
        # XLA's expensive ops and the rest it never duplicates; a reduction is not among them:
        # one that moves data gives a `row` or `grid` value, never recomputed per element.
        self.expensive = {name for name, role in self.role.items()
                          if role == FUSIBLE and not is_duplicable(graph.nodes[name])
                          and graph.nodes[name].op != "reduce"}
        self.row_cap = row_cap(self.device)
        # Unowned reshapes and bitcasts of memory a library kernel may read in place.
        self.view_chains: set[str] = set()
        # Free node -> the free nodes a kernel recomputes to have it (itself among them).
        self.closure: dict[str, frozenset[str]] = {}
        self.free = self._free_nodes()
        self._bound_free_reads()
        self.decisions: list[Decision] = []
        self.state: dict[str, _NodeState] = {}

    # -- node analysis ------------------------------------------------------------------------

    def _load_bytes(self, name: str, free: dict[str, int]) -> int:
        """Bytes a kernel loads to have `name`: a free node's own loads, a scalar constant's
        none (an immediate), anything else its size."""
        if name in free:
            return free[name]
        node = self.graph.nodes[name]
        if node.op == "constant" and self.elements[name] == 1:
            return 0
        return node.shape.nbytes

    def _free_nodes(self) -> dict[str, int]:
        """Cheap nodes computed from leaves alone, recomputed by every kernel that reads them:
        name -> the bytes recomputing one loads."""
        free: dict[str, int] = {}
        for node in self.graph:
            name = node.name
            if self.role[name] != FUSIBLE or not is_duplicable(node) or name in self.outputs:
                continue
            if not all(self.role[o] == LEAF or o in free for o in node.operands):
                continue
            users = self.users[name]
            if not users or any(self.role[u] == PLUMBING for u in users):
                continue
            loads = sum(self._load_bytes(o, free) for o in dict.fromkeys(node.operands))
            if loads > node.shape.nbytes:
                continue  # reading its operands costs more than reading it
            closure = self._free_closure(node.operands).union((name,))
            if len(closure) >= MAX_KERNEL_NODES:
                continue  # its readers' kernels would compute too many nodes
            is_view = node.op in LIBRARY_OPERAND_VIEWS and all(
                o in self.view_chains or self.role[o] == LEAF for o in node.operands)
            if not is_view and any(self.role[u] == LIBRARY for u in users):
                continue  # a library call takes no computed operand but a view
            free[name] = loads
            self.closure[name] = closure
            if is_view:
                self.view_chains.add(name)
        return free

    def _free_closure(self, operands) -> frozenset[str]:
        """The free nodes a kernel recomputes to have these operands."""
        closures = [self.closure[o] for o in dict.fromkeys(operands) if o in self.closure]
        if len(closures) == 1:
            return closures[0]
        return frozenset().union(*closures)

    def _bound_free_reads(self) -> None:
        """A node that reads many free nodes (a concatenate of a thousand broadcast constants)
        would make a kernel of over MAX_KERNEL_NODES nodes on its own, or of too much code (a
        scan of a parameter's slices and pads): the largest of them, and the free nodes
        computed from those, are no longer free, but owned by kernels of their own (a free
        node is computed from leaves and free nodes alone). A node made owned is checked in
        its turn, even when the walk has passed it: its own free reads may be too much code."""
        names = list(self.graph.nodes)
        pending = list(range(len(names)))  # positions, a heap: the graph's order
        while pending:
            node = self.graph.nodes[names[heapq.heappop(pending)]]
            if self.role[node.name] != FUSIBLE or node.name in self.free:
                continue
            while True:
                read = [o for o in dict.fromkeys(node.operands) if o in self.free]
                closure = self._free_closure(read)
                if too_many_nodes(1 + len(closure)) is None and \
                        (not closure or self._code_refusal([node.name], closure) is None):
                    break
                largest = max(read, key=lambda o: (len(self.closure[o]), self.position[o]))
                for owned in self._unfree(largest):
                    if self.position[owned] < self.position[node.name]:
                        heapq.heappush(pending, self.position[owned])

    def _unfree(self, name: str) -> list[str]:
        """Make free node `name`, and the free nodes computed from it, owned ones; returns
        them."""
        stack, unfreed = [name], []
        while stack:
            node = stack.pop()
            if node in self.free:
                del self.free[node], self.closure[node]
                self.view_chains.discard(node)
                unfreed.append(node)
                stack.extend(self.users[node])
        return unfreed

    def _reuses(self, node: Node, index: int) -> bool:
        """Whether `node` reads each element of operand `index` many times (XLA's
        ReusesOperandElements: a growing broadcast, a reduce-window, a gather)."""
        if node.op == "broadcast":
            return self.elements[node.name] > self.elements[node.operands[0]]
        if node.op == "reduce-window":
            return index < len(node.operands) // 2 and \
                math.prod(node.attrs.get("window", {}).get("size", (1,))) > 1
        return node.op == "gather" and index == 0

    def _evaluate(self, name: str, state_of) -> _NodeState:
        """A node's state given its operands' (`state_of(o)`: None outside the group)."""
        node = self.graph.nodes[name]
        states = [state_of(o) for o in node.operands]
        reuse = next((state.carries for i, state in enumerate(states) if state is not None
                      and state.carries and self._reuses(node, i)), None)
        labels = [INV if state is None else state.label for state in states]
        space = self.space.get(name)
        if space is not None:
            label, flag = reduction_label(space, fits_block(space, self.row_cap), labels)
        elif all(label == INV for label in labels):
            carries = name if name in self.expensive else next(
                (s.carries for s in states if s is not None and s.carries), None)
            return _NodeState(INV, carries=carries, reuse=reuse)
        else:  # the stitch strategy keeps `moved` rows block-local
            label, flag = node_label(self.graph, node, labels, moved_rows_local=True)
        return _NodeState(label, barrier=flag == BARRIER, stitched=flag == STITCHED,
                          reuse=reuse)

    # -- groups -------------------------------------------------------------------------------

    def run(self) -> FusionPlan:
        graph = self.graph
        members = [name for name, role in self.role.items()
                   if role in (FUSIBLE, LIBRARY) and name not in self.free]
        self.groups_graph = GroupGraph(graph, members)
        self.groups: dict[str, _Group] = {}
        for name in members:
            if self.role[name] == LIBRARY:
                continue
            self.state[name] = self._evaluate(name, lambda operand: None)
            group = _Group(inputs=self._reads(name),
                           free=self._free_closure(self.graph.nodes[name].operands))
            self.groups[name] = self._tally(group, name, self.state[name])
        self._merge_producers_into_consumers()
        self._merge_independent()
        return self._build()

    def _tally(self, group: _Group, name: str, state: _NodeState) -> _Group:
        """`group` with node `name` (in state `state`) added to its totals."""
        group.barrier += state.barrier
        group.stitched += state.stitched
        group.reuse += bool(state.reuse)
        node = self.graph.nodes[name]
        group.work = max(group.work, self.elements[name])
        if node.op == "reduce":
            group.work = max(group.work, self.elements[node.operands[0]])
        if name in self.space:
            group.reductions.append(name)
        return group

    def _reads(self, name: str) -> frozenset[str]:
        """The values a kernel computing `name` loads for it: its operands, through the free
        nodes it recomputes, without scalar constants (immediates)."""
        found, stack, seen = set(), list(self.graph.nodes[name].operands), set()
        while stack:
            operand = stack.pop()
            if operand in seen:
                continue  # free nodes reading one value twice (x * x) would double the walk
            seen.add(operand)
            if operand in self.free:
                stack.extend(self.graph.nodes[operand].operands)
            elif not (self.graph.nodes[operand].op == "constant" and
                      self.elements[operand] == 1):
                found.add(operand)
        return frozenset(found)

    def _group_of(self, name: str) -> str | None:
        return self.groups_graph.group_of.get(name)

    def _merge_producers_into_consumers(self) -> None:
        for name, node in self.graph.nodes.items():
            if name not in self.groups_graph.group_of or self.role[name] == LIBRARY:
                continue
            for operand in dict.fromkeys(node.operands):
                group = self._group_of(operand)
                if group is None or self.role[operand] == LIBRARY:
                    continue
                if group != self._group_of(name):
                    self._try_merge(group, self._group_of(name), f"{operand} -> {name}")

    def _merge_independent(self) -> None:
        """Horizontal merges (§3.1's independent scheme), as XLA's multi-output and horizontal
        fusion passes do for its fusions: the kernels that read one value (which they then read
        once), then the kernels whose values one node reads (one launch instead of several),
        whenever the merged kernel still has a schedule (regional for the same rows within the
        shared-memory limit, else global within one wave; no cycle)."""
        for value in self.graph.nodes:
            if self.elements[value] > 1 and value not in self.free:  # not an init value
                self._merge_all([u for u in self.users[value]], f"both read {value}")
        for name, node in self.graph.nodes.items():
            self._merge_all(plumbing_sources(self.graph, name) if self.role[name] == PLUMBING
                            else node.operands, f"both feed {name}")

    def _merge_all(self, members: list[str], why: str) -> None:
        """Merge the groups of `members` into the first one, the first with reductions if any
        (the dominant kernel): one decision per group considered."""
        groups = list(dict.fromkeys(self._group_of(m) for m in members
                                    if self._group_of(m) in self.groups))
        if len(groups) < 2:
            return
        anchor = next((m for m in members if self._group_of(m) in self.groups and
                       self.groups[self._group_of(m)].reductions), None)
        anchor = anchor or next(m for m in members if self._group_of(m) in self.groups)
        for group in groups:
            a = self._group_of(anchor)
            b = self._group_of(group)
            if a != b:
                subject = f"{self._dominant(a)} + {self._dominant(b)} ({why})"
                self._try_merge(a, b, subject, horizontal=True)

    def _dominant(self, group: str) -> str:
        """A group's dominant reduction, or its first node (for the decision log)."""
        reductions = self.groups[group].reductions
        return self.facts.dominant_reduction(reductions) if reductions else group

    def _try_merge(self, a: str, b: str, subject: str, horizontal: bool = False) -> bool:
        groups_graph = self.groups_graph
        changed, through_plumbing = self._relabel(a, b)
        if through_plumbing:
            self._log("refuse", subject, f"{through_plumbing} reads the other group through a "
                                         "tuple")
            return False
        merged = self._combine(a, b, changed)
        members = groups_graph.members
        too_large = too_many_nodes(len(members[a]) + len(members[b]) + len(merged.free))
        if too_large:
            self._log("refuse", subject, f"not a legal kernel: {too_large}")
            return False
        if len(merged.inputs) > MAX_KERNEL_PARAMETERS:
            self._log("refuse", subject, f"not a legal kernel: {len(merged.inputs)} operands > "
                                         f"{MAX_KERNEL_PARAMETERS} (XLA's fusion budget)")
            return False
        verdict = self._verdict(merged, changed, lambda name: self._group_of(name) in (a, b))
        if verdict.kind is None:
            self._log("refuse", subject, verdict.reason)
            return False
        if self.check_code and self._merges(a, b):  # the costly check last
            too_much_code = self._code_refusal(members[a] + members[b], merged.free)
            if too_much_code:
                self._log("refuse", subject, f"not a legal kernel: {too_much_code}")
                return False
        try:
            kept = groups_graph.merge(a, b, MERGE_BUDGET)
        except WindowTooWide as error:
            self._log("refuse", subject, f"too far apart: {error}")
            return False
        except ValueError:
            self._log("refuse", subject, "would form cycle")
            return False
        prefix = "horizontal " if horizontal else ""
        self._log("fuse", subject, prefix + verdict.reason)
        self.state.update(changed)
        del self.groups[b if kept == a else a]
        self.groups[kept] = merged
        return True

    def _merges(self, a: str, b: str) -> bool:
        """Whether groups a and b may merge as far as the group graph is concerned (the walk
        `GroupGraph.merge` makes, without merging)."""
        try:
            return self.groups_graph.check((a, b), MERGE_BUDGET) is None
        except WindowTooWide:
            return False

    def _code_refusal(self, owned: list[str], recomputed) -> str | None:
        """Why a kernel owning `owned` and recomputing `recomputed` would take too much code
        to emit, or None (codegen/emission.py: the check every strategy makes); None
        unchecked on the first pass (`stitch_fusion`)."""
        if not self.check_code:
            return None
        computed = set(owned).union(recomputed)
        outputs = kernel_outputs(owned, computed, self.users, self.outputs)
        return emission_refusal(self.graph, computed, outputs)

    def _relabel(self, a: str, b: str) -> tuple[dict[str, _NodeState], str | None]:
        """New states of the nodes whose in-group operands change when a and b merge, and a
        node that reads the other group through plumbing (such a merge is refused)."""
        groups_graph = self.groups_graph
        group_of = groups_graph.group_of
        small, other = (a, b) if len(groups_graph.members[a]) <= len(groups_graph.members[b]) \
            else (b, a)
        pair = (a, b)
        queue: list[tuple[int, str]] = []
        queued: set[str] = set()

        def push(name: str) -> None:
            if name not in queued:
                queued.add(name)
                heapq.heappush(queue, (self.position[name], name))

        for member in groups_graph.members[small]:
            for operand in self.graph.nodes[member].operands:
                if group_of.get(operand) == other:
                    push(member)
                elif self.role[operand] == PLUMBING and any(
                        group_of.get(s) == other for s in plumbing_sources(self.graph, operand)):
                    return {}, member
            for user in self.users[member]:
                if group_of.get(user) == other:
                    push(user)
                elif self.role[user] == PLUMBING and self._plumbing_reaches(user, other):
                    return {}, member

        changed: dict[str, _NodeState] = {}

        def state_of(operand: str) -> _NodeState | None:
            if group_of.get(operand) not in pair:
                return None
            return changed.get(operand) or self.state[operand]

        while queue:
            _, name = heapq.heappop(queue)
            state = self._evaluate(name, state_of)
            if state != (changed.get(name) or self.state[name]):
                changed[name] = state
                for user in self.users[name]:
                    if group_of.get(user) in pair:
                        push(user)
        return changed, None

    def _plumbing_reaches(self, plumbing: str, group: str) -> bool:
        """Whether a kernel-forming node of `group` reads through plumbing node `plumbing`."""
        stack, seen = [plumbing], set()
        while stack:
            name = stack.pop()
            for user in self.users[name]:
                if self.role[user] == PLUMBING:
                    if user not in seen:
                        seen.add(user)
                        stack.append(user)
                elif self._group_of(user) == group:
                    return True
        return False

    def _combine(self, a: str, b: str, changed: dict[str, _NodeState]) -> _Group:
        first, second = self.groups[a], self.groups[b]
        pair = (a, b)
        merged = _Group(reductions=first.reductions + second.reductions,
                        barrier=first.barrier + second.barrier,
                        stitched=first.stitched + second.stitched,
                        reuse=first.reuse + second.reuse,
                        work=max(first.work, second.work),
                        inputs=frozenset(v for v in first.inputs | second.inputs
                                         if self._group_of(v) not in pair),
                        free=first.free | second.free)
        for name, new in changed.items():
            old = self.state[name]
            merged.barrier += new.barrier - old.barrier
            merged.stitched += new.stitched - old.stitched
            merged.reuse += bool(new.reuse) - bool(old.reuse)
        return merged

    # -- schedules ----------------------------------------------------------------------------

    def _verdict(self, group: _Group, changed: dict[str, _NodeState], inside) -> _Verdict:
        """The merged group's kernel kind and why, or a refusal and why (module docstring; the
        kind is the kernel analysis's). `changed`: its nodes whose state the merge changed;
        `inside(name)`: membership."""
        if group.reuse:
            consumer, state = next((n, s) for n, s in changed.items() if s.reuse)
            return _Verdict(None, f"{consumer} would recompute {state.reuse} for every element "
                                  "it reads (xla: no expensive producer into a reusing consumer)")
        barrier = next((n for n, s in changed.items() if s.barrier), None) \
            if group.barrier else None
        users = self.users
        verdict = kind_of(self.facts, group.reductions, group.stitched > 0, group.barrier > 0,
                          lambda value: [u for u in users[value] if inside(u)], self.device,
                          barrier, group.work)
        return _Verdict(verdict.kind, verdict.detailed())

    # -- the plan -----------------------------------------------------------------------------

    def _build(self) -> FusionPlan:
        groups_graph = self.groups_graph
        owner = dict(groups_graph.group_of)
        kernels = {group: list(groups_graph.members[group]) for group in groups_graph.members}
        computed_by = self._sink_cheap_nodes(owner, kernels)
        recomputed: dict[str, list[str]] = {group: [] for group in kernels}
        for name, computers in computed_by.items():
            if name not in owner:
                for group in computers:
                    recomputed[group].append(name)

        specs = []
        for group in groups_graph.groups():
            nodes = kernels[group]
            if not nodes:
                continue  # every node it had is recomputed by its readers now
            if self.role[group] == LIBRARY:
                specs.append(KernelSpec(nodes, "library", recomputed[group], dominant=group))
                continue
            kind, dominant = self._final_schedule(nodes, recomputed[group])
            specs.append(KernelSpec(nodes, kind, recomputed[group], dominant=dominant))
        return build_plan(self.graph, specs, STRATEGY, self.model, self.decisions)

    def _sink_cheap_nodes(self, owner: dict[str, str],
                          kernels: dict[str, list[str]]) -> dict[str, set[str]]:
        """Let the kernels reading a cheap node recompute it instead of loading it, when that
        loads no more bytes (a broadcast or reshape of a reduction's result): the node leaves
        its owner, unless a reader's kernel would then compute more than MAX_KERNEL_NODES
        nodes. Returns the kernels that compute each node (owned, free or sunk)."""
        graph = self.graph
        library_kernels = {group for group in kernels if self.role[group] == LIBRARY}
        loads = dict(self.free)          # unowned node -> bytes recomputing it loads
        computed_by: dict[str, set[str]] = {}
        # What each generated kernel computes so far (library kernels generate no code).
        computed = {group: set(kernels[group]) | self.groups[group].free
                    for group in kernels if group in self.groups}
        for name in reversed(graph.nodes):
            readers = set().union(*(computed_by.get(u, ()) for u in self.users[name]))
            group = owner.get(name)
            if name in self.free:
                computed_by[name] = readers
            elif group is None:
                continue
            elif readers <= {group} or not self._sinkable(name, readers, owner,
                                                         readers & library_kernels, loads) \
                    or self._sinking_too_large(name, readers - {group}, computed, kernels):
                computed_by[name] = {group}
            else:
                node = graph.nodes[name]
                for reader in (readers - {group}) & computed.keys():
                    computed[reader] |= self._recomputing(name)
                loads[name] = self._operand_loads(node, loads)
                self._log("fuse", f"{name} -> its readers",
                          f"recomputed by {len(readers - {group})} other kernel(s) instead of "
                          f"stored: loads {loads[name]} B <= {node.shape.nbytes} B")
                if self._is_view_chain(node):
                    self.view_chains.add(name)
                del owner[name]
                kernels[group].remove(name)
                computed_by[name] = readers
        return computed_by

    def _sinking_too_large(self, name: str, readers: set[str], computed: dict[str, set[str]],
                           kernels: dict[str, list[str]]) -> bool:
        """Whether recomputing `name` (and the free nodes it reads) would make a reader's
        kernel compute too many nodes, or take too much code (logged)."""
        extra = self._recomputing(name)
        for reader in readers & computed.keys():  # library kernels generate no code
            kernel = computed[reader]
            if too_many_nodes(len(kernel) + len(extra)) and too_many_nodes(len(kernel | extra)):
                self._log("refuse", f"{name} -> its readers",
                          f"not recomputed by its readers: {reader}'s kernel would compute "
                          f"over {MAX_KERNEL_NODES} ops")
                return True
            too_much_code = self._code_refusal(kernels[reader], (kernel | extra) -
                                               set(kernels[reader]))
            if too_much_code:
                self._log("refuse", f"{name} -> its readers",
                          f"not recomputed by its readers: {reader}'s kernel would not be a "
                          f"legal kernel: {too_much_code}")
                return True
        return False

    def _recomputing(self, name: str) -> frozenset[str]:
        """What a kernel computes to recompute `name`: it and the free nodes it reads."""
        return self._free_closure(self.graph.nodes[name].operands).union((name,))

    def _sinkable(self, name: str, readers: set[str], owner: dict[str, str],
                  library_readers: set[str], loads: dict[str, int]) -> bool:
        node = self.graph.nodes[name]
        if not is_duplicable(node) or name in self.outputs:
            return False
        if any(self.role[u] == PLUMBING for u in self.users[name]):
            return False
        if any(owner.get(o) in readers for o in node.operands):
            # The kernel owning an operand would recompute the node too, and a plan stores a
            # value only for readers outside its owner (plan.build_plan), so the other kernels
            # would find the operand missing from memory.
            return False
        if library_readers and not self._is_view_chain(node):
            return False  # a library call recomputes nothing but views of memory
        return self._operand_loads(node, loads) <= node.shape.nbytes

    def _operand_loads(self, node: Node, loads: dict[str, int]) -> int:
        """Bytes a kernel loads to recompute `node` (its unowned operands recomputed too)."""
        return sum(self._load_bytes(o, loads) for o in dict.fromkeys(node.operands))

    def _is_view_chain(self, node: Node) -> bool:
        """A view a library call reads in place: a reshape or bitcast of memory or of such
        views (unowned operands only, owned ones are in memory)."""
        return node.op in LIBRARY_OPERAND_VIEWS and all(
            self.role[o] != FUSIBLE or o in self.view_chains or o in self.groups_graph.group_of
            for o in node.operands)

    def _final_schedule(self, owned: list[str], recomputed: list[str]) -> tuple[str, str]:
        """The kind and dominant node of a finished kernel, from its nodes alone."""
        nodes = set(owned) | set(recomputed)
        states: dict[str, _NodeState] = {}
        group = _Group()
        for name in sorted(nodes, key=self.position.__getitem__):
            states[name] = self._evaluate(name, states.get)
            self._tally(group, name, states[name])
        kind = self._verdict(group, {}, nodes.__contains__).kind
        if group.reductions:
            return kind, self.facts.dominant_reduction(group.reductions)
        if self._independent_parts(owned) > 1:
            kind = "horizontal"
        return kind, max(owned, key=lambda n: (self.elements[n], self._prefers(n),
                                               self.position[n]))

    def _independent_parts(self, owned: list[str]) -> int:
        """How many parts of a kernel share no value: packed loops are a horizontal kernel."""
        parent = {name: name for name in owned}

        def root(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]
                name = parent[name]
            return name

        for name in owned:
            for operand in self.graph.nodes[name].operands:
                if operand in parent:
                    parent[root(operand)] = root(name)
        return sum(1 for name in owned if root(name) == name)

    def _prefers(self, name: str) -> bool:
        """Without a reduction, an elementwise op or a transpose dominates (module docstring)."""
        node = self.graph.nodes[name]
        return node.op == "transpose" or OPS[node.op].is_elementwise

    def _log(self, action: str, subject: str, reason: str) -> None:
        self.decisions.append(Decision(action, subject, reason))


def stitch_fusion(graph: Graph, model: SolModel) -> FusionPlan:
    """Fuse memory-intensive ops across reduction boundaries by stitching (module docstring).

    A kernel's code size is checked once it is formed (codegen/emission.py): a walk of a
    kernel per merge costs as much as the rest of the pass, and kernels that recompute their
    values beyond the budget are rare. When one does, the kernels are formed again with every
    merge, sinking and free node checked, and the first pass's kernel named in the log."""
    plan = _Stitcher(graph, model).run()
    found = first_refusal(graph, plan.kernels)
    if found is None:
        return plan
    kernel, reason = found
    stitcher = _Stitcher(graph, model, check_code=True)
    stitcher._log("refuse", f"the kernel of {kernel.dominant} ({len(kernel.computed)} ops)",
                  f"not a legal kernel: {reason}; kernels formed again, each merge checked")
    return stitcher.run()
