"""The XLA baseline: the community XLA GPU fusion pipeline's decisions, rule by rule.

This models what XLA:GPU fuses, so the explorer can set its own strategies beside it. The
passes and files modelled (openxla/xla, xla/service/...):

1. Instruction fusion, producer into consumer (`instruction_fusion.cc` InstructionFusion::Run and
   ShouldFuse, `gpu/transforms/priority_fusion.cc` CanFuse, `gpu/gpu_fusible.cc`
   IsProducerConsumerFusible). Consumers are visited in reverse post-order and each grows
   upwards, absorbing producers: elementwise ops and the ops XLA treats as loop-fusible
   (IsUniversallyLoopFusible: broadcast, reshape, bitcast, transpose, slice, pad, concatenate,
   gather, dynamic-slice, dynamic-update-slice, reduce-window, ...) make a "loop" fusion; a
   reduce takes its producers into an "input" fusion with the reduce as hero (reduce-window is
   a loop op in XLA, so its kernels are "loop" ones). Refused:
   - a reduce's output into a consumer: "reduce output not fused into consumer (xla rule)"
     (XLA's reduction epilogue fusion of single-user converts/bitcasts is not modelled);
   - library ops (dot, convolution, custom-call, control flow, ...), which XLA does not fuse;
   - a producer read outside the fusion, unless it is cheap: "expensive producer would be
     duplicated" (ShouldFuse with IsExpensive; here `grouping.is_duplicable`). A cheap one is
     recomputed in each consumer fusion (KernelSpec.recomputed); it keeps a kernel of its own
     only when its value must also be in memory (a graph output, read by a library call or
     through a tuple). Views and widening converts are always duplicated (priority fusion fuses
     bitcasts first; IsAlwaysDuplicable). For other cheap ops the cost decides, as priority
     fusion's GpuPerformanceModel does: duplication must not be slower than writing the value
     once (EstimateRunTimesForPriorityFusion: time_unfused - time_fused >= 0, with the SOL model
     standing in for XLA's);
   - a physically transposing producer into a reduction fusion ("would break read coalescing",
     GpuInstructionFusion / IsPhysicallyTransposing);
   - an expensive-to-repeat producer (big-window reduce-window) into a consumer that reads
     elements several times (CreatesHeavyComputation);
   - a fusion over kMaxOperandsAndOutputsPerFusion = 96 operands and outputs
     (FusionFitsInBudget);
   - a fusion that would compute more than plan.MAX_KERNEL_NODES nodes: XLA refuses fusions
     whose LLVM IR would grow too large to compile quickly (priority fusion's CanFuse, "the
     fusion would result in an overly large code duplication": GpuHloCostAnalysis::
     ProducerConsumerMergedTooLarge, at most kMaxIRSize = 10000 emitted instructions); here
     the bound is the one every strategy keeps, on nodes computed (owned and recomputed).
   Producer-consumer fusion never forms a cycle (everything that reads an absorbed producer is
   inside the fusion); the later merges check GroupGraph.can_merge and log "would form cycle".
2. Multi-output fusion (`gpu/transforms/multi_output_fusion.cc`), walking values from uses to
   definitions: sibling fusion of fusions that read the same non-scalar value (IsProfitableOperand)
   when they are independent, their shapes are compatible (ShapesCompatibleForMultiOutputFusion:
   equal reduction input shapes and dimensions for reductions, equal loop shapes otherwise) and
   the result fits the budget (FusionFitsInBudget, at most kMaxUnnestedReductionOutputsPerFusion
   = 8 reductions and the device's shared memory per block; and the code size, as above:
   multi_output_fusion.cc refuses "will generate too large IR"); then producer-consumer
   multi-output fusion: a loop fusion whose output is used elsewhere too joins a consumer fusion
   (reductions first) and still writes that output (IsProducerMultiOutputFusible: no in-place or
   physically transposing producer).
3. Horizontal fusion (`gpu/transforms/horizontal_loop_fusion.cc`, then
   `gpu/transforms/horizontal_input_fusion.cc`): the loop fusions and elementwise ops that feed
   one consumer, which is their only user but the root (IsConsumerTheOnlyNonRootUser), are
   batched into one "horizontal" kernel: first those of equal output shape, then (sliced input
   fusion) those of equal element type; within the caps of kMaxFusionBatchSize (64 outputs for
   lone ops, 32 for fusions and in sliced mode), kMaxCudaParamSize (4000 bytes of 8-byte
   parameters) and IsProfitableFusionCandidate (8192*8192 elements and 128 ops, 128*2048 and 30
   in sliced mode), and the code size above. Reductions feeding one consumer are merged into
   one multi-output input fusion when their shapes are compatible and fit the budget
   (horizontal input fusion).

Not modelled: layout assignment and the layout normalisation passes, Triton and custom fusions
(XLA:GPU now emits norms and softmax as Triton fusions, so its counts there are lower), the
fusion merger, reduction splitting, in-place aliasing beyond keeping dynamic-update-slice out of
multi-output and horizontal fusion, and a horizontal fusion's reuse as a consumer of further
batching. XLA runs dead-code elimination first; here a dead node still gets a kernel, since a
plan computes every node.

Every fuse and every refusal is a Decision with the XLA rule (or cost) that decided it, one per
considered producer/consumer pair or pair of fusions.
"""

from __future__ import annotations

import dataclasses
import heapq
from itertools import chain

from compiler.codegen.emission import first_refusal, emission_refusal
from compiler.cost.sol import SolModel
from compiler.fusion.grouping import (FUSIBLE, LEAF, LIBRARY, PLUMBING, GroupGraph,
                                      graph_output_sources, is_duplicable, kernel_outputs,
                                      node_role, plumbing_sources, value_readers)
from compiler.fusion.plan import (LIBRARY_OPERAND_VIEWS, Decision, FusionPlan, KernelSpec,
                                  build_plan, too_many_nodes)
from compiler.fusion.unfused import VIEWS
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS

# gpu_fusible.h: the cap on a fusion's operands plus outputs (kernel parameters).
MAX_OPERANDS_AND_OUTPUTS = 96
# gpu_fusible.cc: unnested reductions per multi-output fusion before registers spill.
MAX_REDUCTIONS_PER_FUSION = 8
# gpu_fusible.cc IsExpensiveToRepeat: input elements per output element of a heavy op.
MAX_INPUTS_PER_OUTPUT = 10
# horizontal_loop_fusion.cc: CUDA's kernel parameter space, 8 bytes a pointer.
MAX_CUDA_PARAM_BYTES = 4000
PARAM_BYTES = 8
# horizontal_loop_fusion.cc kMaxFusionBatchSize: outputs per horizontal fusion.
MAX_BATCH_LONE_OPS = 64
MAX_BATCH_FUSIONS = 32
# horizontal_loop_fusion.cc IsProfitableFusionCandidate: (elements, ops) for loop / sliced mode.
PROFITABLE_LOOP = (8192 * 8192, 128)
PROFITABLE_SLICED = (128 * 2048, 30)
# gpu_performance_model_base.h kKernelLaunchOverhead: what XLA's own model charges a kernel
# launch when priority fusion weighs duplicating a producer (XLA's figure, not ours).
XLA_KERNEL_LAUNCH_US = 1.0

IN_PLACE_OPS = ("dynamic-update-slice",)
# Ops XLA treats like elementwise ones in a loop fusion (IsUniversallyLoopFusible).
_LOOP_FUSIBLE_NOT_ELEMENTWISE = (
    "broadcast", "reshape", "bitcast", "transpose", "slice", "pad", "concatenate", "reverse",
    "gather", "dynamic-slice", "dynamic-update-slice", "reduce-window", "iota",
)
_SLOTS_CAP = 1 << 20  # duplication copies are estimated up to this many


def xla_fusion(graph: Graph, model: SolModel) -> FusionPlan:
    """The kernels XLA:GPU's fusion passes would make of `graph` (module docstring).

    A fusion's code size is checked once the passes are done (codegen/emission.py): a walk
    of the fusion per producer costs as much as the passes, and fusions that recompute their
    values beyond the budget are rare. When one does, the passes run again with every fusion
    decision checked, and the first run's fusion named in the log."""
    with cyclic_gc_paused():  # compiler/gc_pause.py: keeps planning time linear
        plan = _xla_passes(graph, model, check_code=False)
        found = first_refusal(graph, plan.kernels)
        if found is None:
            return plan
        kernel, reason = found
        first = Decision("refuse", f"the fusion of {kernel.dominant} ({len(kernel.computed)} "
                                   f"ops)", f"xla: the fusion would result in an overly large "
                                            f"code duplication: {reason}; fusions formed "
                                            f"again, each checked")
        return _xla_passes(graph, model, check_code=True, decisions=[first])


def _xla_passes(graph: Graph, model: SolModel, check_code: bool,
                decisions: list[Decision] = ()) -> FusionPlan:
    fusion = _XlaFusion(graph, model, check_code)
    fusion.decisions.extend(decisions)
    fusion.instruction_fusion()
    fusion.group_graph()
    fusion.multi_output_fusion()
    fusion.horizontal_loop_fusion()
    fusion.horizontal_input_fusion()
    return build_plan(graph, fusion.specs(), "xla", model, fusion.decisions)


# -- per-node facts ---------------------------------------------------------------------------


def is_reduction(node: Node) -> bool:
    return node.op == "reduce"


def is_loop_fusible(node: Node) -> bool:
    info = OPS.get(node.op)
    return info is not None and (info.is_elementwise or node.op in _LOOP_FUSIBLE_NOT_ELEMENTWISE)


def is_physically_transposing(node: Node, graph: Graph) -> bool:
    """A transpose or copy that changes the order of non-trivial dimensions in memory
    (gpu_fusible.cc IsPhysicallyTransposing; a transpose of unit dimensions is a bitcast)."""
    if node.op not in ("transpose", "copy") or node.shape.is_tuple:
        return False
    out = node.array_shape
    source = graph.nodes[node.operands[0]].shape
    if source.is_tuple:
        return False
    permutation = node.attrs["dimensions"] if node.op == "transpose" else range(out.rank)
    permutation = tuple(permutation)
    out_order = [permutation[d] for d in out.minor_to_major if out.dims[d] > 1]
    source_order = [d for d in source.minor_to_major if source.dims[d] > 1]
    return out_order != source_order


def is_row_reduction(node: Node, graph: Graph) -> bool:
    """The reduce's most minor non-unit input dimension is reduced (ReductionDimensions)."""
    source = graph.nodes[node.operands[0]].array_shape
    minor = [d for d in source.minor_to_major if source.dims[d] > 1]
    return not minor or minor[0] in node.attrs["dimensions"]


def reduction_shared_memory(node: Node, graph: Graph) -> int:
    """Bytes of shared memory XLA's reduction emitter takes (gpu_fusible.cc SharedMemoryUsage)."""
    element = graph.nodes[node.operands[0]].array_shape.dtype.bits // 8 or 1
    return 32 * element if is_row_reduction(node, graph) else 2 * 32 * 33 * element


def is_expensive_to_repeat(node: Node) -> bool:
    """gpu_fusible.cc IsExpensiveToRepeat: many input elements per output element."""
    if node.op != "reduce-window":
        return False
    size = 1
    for extent in node.attrs["window"]["size"]:
        size *= extent
    return size > MAX_INPUTS_PER_OUTPUT


def reads_elements_multiple_times(node: Node, graph: Graph) -> bool:
    """gpu_fusible.cc IfFusedReadsElementsMultipleTimes."""
    if node.op in ("gather", "broadcast"):
        source = graph.nodes[node.operands[0]].shape
        return not source.is_tuple and node.array_shape.size > source.size
    if node.op == "reduce-window":
        window = node.attrs["window"]
        return any(size > stride for size, stride in zip(window["size"], window["stride"]))
    return False


def is_always_duplicable(node: Node, graph: Graph) -> bool:
    """Views (read in place: priority fusion fuses bitcasts first), iota and widening converts
    (IsAlwaysDuplicable): recomputing them never reads more than the value itself."""
    if node.op in VIEWS or node.op == "iota":
        return True
    if node.op == "convert":
        source = graph.nodes[node.operands[0]].shape
        return not source.is_tuple and source.nbytes < node.shape.nbytes
    return False


def _elements(node: Node) -> int:
    return sum(leaf.size for leaf in node.shape.leaves())


def _is_immediate(node: Node) -> bool:
    """A one-element constant: folded into the code, not a kernel parameter."""
    return node.op == "constant" and _elements(node) == 1


# -- the pipeline -----------------------------------------------------------------------------


class _XlaFusion:
    """The state the passes share: groups of owned nodes, what each recomputes, the log.

    A group is named by its head (the consumer it grew from). `inside[g]` is what its kernel
    computes: owned nodes plus recomputed ones. A cheap node that every kernel reading it
    recomputes is a *ghost*: owned by no kernel.
    """

    def __init__(self, graph: Graph, model: SolModel, check_code: bool = False):
        self.graph = graph
        self.model = model
        self.check_code = check_code  # check each fusion's code size (`xla_fusion`)
        self.nodes = graph.nodes
        self.position = {name: i for i, name in enumerate(graph.nodes)}
        self.role = {name: node_role(node) for name, node in graph.nodes.items()}
        self.kernel_nodes = [n for n, r in self.role.items() if r in (FUSIBLE, LIBRARY)]
        self.immediates = {n for n, node in graph.nodes.items() if _is_immediate(node)}
        self.decisions: list[Decision] = []

        self._index_readers()
        self._estimate_duplication()

        self.head_of = {name: name for name in self.kernel_nodes}  # instruction fusion's
        self.members = {name: [name] for name in self.kernel_nodes}
        self.recomputed: dict[str, set[str]] = {name: set() for name in self.kernel_nodes}
        self.inside = {name: {name} for name in self.kernel_nodes}
        self.inputs = {name: set(self.nodes[name].operands) for name in self.kernel_nodes}
        self.recomputers: dict[str, list[str]] = {}   # node -> heads of groups recomputing it
        self.ghosts: set[str] = set()
        self.horizontal: set[str] = set()
        self.gg: GroupGraph | None = None
        self._outputs: dict[str, list[str]] = {}
        self._hero: dict[str, str] = {}

    def _index_readers(self) -> None:
        """Direct readers (of every node), readers through plumbing, and the values that must
        be written whatever the kernels."""
        graph, nodes, role = self.graph, self.nodes, self.role
        self._sources: dict = {}
        self.readers: dict[str, list[str]] = {name: [] for name in nodes}
        self.all_readers = value_readers(graph)
        self.plumbing_read: set[str] = set()   # read through a tuple / get-tuple-element
        for name in self.kernel_nodes:
            for operand in dict.fromkeys(nodes[name].operands):
                if role[operand] != PLUMBING:
                    self.readers[operand].append(name)
                else:
                    self.plumbing_read.update(self.sources(operand))
        self.graph_outputs = graph_output_sources(graph)
        self.root_tuples = set()
        stack = [self.graph.root]
        while stack:
            name = stack.pop()
            if nodes[name].op == "tuple":
                self.root_tuples.add(name)
                stack.extend(nodes[name].operands)
        # Plumbing users that are not the root's tuples (while operands, opt-barriers, ...).
        self.plumbing_users = {name: False for name in nodes}
        for node in nodes.values():
            if role[node.name] == PLUMBING and node.name not in self.root_tuples:
                for operand in node.operands:
                    self.plumbing_users[operand] = True
        self.must_write = {
            name: (name in self.graph_outputs or name in self.plumbing_read
                   or self.plumbing_users[name]
                   or any(role[r] == LIBRARY and nodes[name].op not in LIBRARY_OPERAND_VIEWS
                          for r in self.readers[name]))
            for name in self.kernel_nodes
        }

    def _estimate_duplication(self) -> None:
        """Whether duplicating each cheap node into its consumers pays (priority fusion's test).

        `slots[n]` estimates how many kernels would compute n if it and the cheap nodes reading
        it were recomputed. Duplicating n into them costs reading n's inputs in each; keeping it
        costs its kernel, writing it and reading it in each (GpuPerformanceModel::RunTimes,
        time_unfused - time_fused, here in SOL terms).
        """
        nodes, model = self.nodes, self.model
        per_byte_us = 1e6 / model.device.dram_bytes_per_s
        self.slots: dict[str, int] = {}
        self.duplication_ok: dict[str, bool] = {}
        self.duplication_gain: dict[str, float] = {}
        for name in reversed(self.kernel_nodes):
            count = 0
            for reader in self.readers[name]:
                if self.role[reader] == LIBRARY:
                    continue
                recomputed = self.duplication_ok.get(reader) and (
                    self.slots[reader] > 1 or self.must_write[reader])
                count += self.slots[reader] if recomputed else 1
            self.slots[name] = min(count, _SLOTS_CAP)
            node = nodes[name]
            if not is_duplicable(node):
                self.duplication_ok[name] = False
            elif is_always_duplicable(node, self.graph) or (count <= 1
                                                             and not self.must_write[name]):
                self.duplication_ok[name] = True
            else:
                alone = model.estimate(self._with_views(name), [name])
                kernel_us = alone.total_us + XLA_KERNEL_LAUNCH_US
                kept = kernel_us + count * node.shape.nbytes * per_byte_us
                duplicated = count * alone.read_bytes * per_byte_us
                if self.must_write[name]:
                    duplicated += kernel_us
                self.duplication_gain[name] = kept - duplicated
                self.duplication_ok[name] = kept >= duplicated

    def _with_views(self, name: str) -> set[str]:
        """`name` and the views, iotas and widening converts it reads, through chains of them:
        a kernel computing `name` recomputes those too, so it reads what they read."""
        found, stack = {name}, [name]
        while stack:
            for operand in self.nodes[stack.pop()].operands:
                if operand not in found and self.role[operand] == FUSIBLE \
                        and is_always_duplicable(self.nodes[operand], self.graph):
                    found.add(operand)
                    stack.append(operand)
        return found

    def sources(self, name: str) -> tuple[str, ...]:
        """The non-plumbing nodes whose values `name` carries (itself if not plumbing)."""
        return plumbing_sources(self.graph, name, self._sources)

    def log(self, action: str, subject: str, reason: str, gain_us: float | None = None) -> None:
        self.decisions.append(Decision(action, subject, reason, gain_us))

    def group(self, name: str) -> str | None:
        """The group that owns node `name` now; None for leaves, plumbing and ghosts."""
        head = self.head_of.get(name)
        if head is None or head in self.ghosts:
            return None
        return head if self.gg is None else self.gg.group_of[head]

    def computers(self, name: str) -> set[str]:
        """The groups whose kernels compute `name`: its owner and its recomputers."""
        found = {self.group(head) for head in self.recomputers.get(name, ())}
        if name not in self.ghosts:
            found.add(self.group(name))
        return found

    # -- 1. instruction fusion --------------------------------------------------------------

    def instruction_fusion(self) -> None:
        """Each consumer not yet fused grows upwards, in reverse post-order (InstructionFusion)."""
        for head in reversed(self.kernel_nodes):
            if self.head_of[head] != head:
                continue  # absorbed by a consumer's fusion
            if self.role[head] == LIBRARY:
                self._library_views(head)
            elif self._recomputed_everywhere(head):
                self.ghosts.add(head)
            else:
                self._grow(head)

    def _recomputed_everywhere(self, name: str) -> bool:
        """Every kernel that reads the cheap node computes it, and nothing needs its value:
        then it needs no kernel of its own."""
        if not is_duplicable(self.nodes[name]) or self.must_write[name]:
            return False
        readers = self.readers[name]
        return bool(readers) and all(name in self.inside[group]
                                     for reader in readers for group in self.computers(reader))

    def _library_views(self, head: str) -> None:
        """A library call reads reshaped and bitcast operands in place (a different leading
        dimension): its kernel recomputes those views, through chains of them."""
        pending = [o for o in self.nodes[head].operands if self.role[o] == FUSIBLE]
        seen = set()
        while pending:
            view = pending.pop()
            if view in seen or self.nodes[view].op not in LIBRARY_OPERAND_VIEWS:
                continue
            seen.add(view)
            self._recompute(view, head)
            self.log("fuse", f"{view} -> {head}",
                     f"xla: {self.nodes[view].op} read in place by the library call")
            pending.extend(o for o in self.nodes[view].operands if self.role[o] == FUSIBLE)

    def _grow(self, head: str) -> None:
        """Absorb producers, latest first, so a producer is considered after all its readers
        that the fusion will ever hold (the order XLA's reverse post-order walk gives)."""
        heap = [(-self.position[o], o) for o in dict.fromkeys(self.nodes[head].operands)
                if self.role[o] in (FUSIBLE, LIBRARY)]
        heapq.heapify(heap)
        considered = set()
        while heap:
            _, producer = heapq.heappop(heap)
            if producer in considered or producer in self.inside[head]:
                continue
            considered.add(producer)
            if self._consider(producer, head):
                for operand in dict.fromkeys(self.nodes[producer].operands):
                    if self.role[operand] in (FUSIBLE, LIBRARY) \
                            and operand not in self.inside[head]:
                        heapq.heappush(heap, (-self.position[operand], operand))

    def _consider(self, producer: str, head: str) -> bool:
        """Fuse `producer` into the fusion grown from `head` (owned or recomputed), or refuse;
        logs the decision. True when the fusion now computes the producer."""
        node = self.nodes[producer]
        reader = next(r for r in self.readers[producer] if r in self.inside[head])
        subject = f"{producer} -> {reader}"
        if reader in self.recomputed[head]:
            subject += f" (recomputed in the fusion of {head})"
        is_input = is_reduction(self.nodes[head])  # only a head can be a reduction
        refusal = self._refusal(producer, head, is_input)
        if refusal:
            self.log("refuse", subject, refusal)
            return False

        duplicate = self.must_write[producer] or any(
            group != head for r in self.readers[producer] for group in self.computers(r))
        if not duplicate:
            self._absorb(producer, head)
            if is_input:
                reason = "xla: input fusion of producer into the reduction"
            elif OPS[node.op].is_elementwise:
                reason = "xla: loop fusion of elementwise producer"
            else:
                reason = f"xla: loop fusion of {node.op} (loop-fusible like an elementwise op)"
            self.log("fuse", subject, reason)
            return True
        if not is_duplicable(node):
            self.log("refuse", subject, "expensive producer would be duplicated "
                                        "(xla: instruction_fusion IsExpensive)")
            return False
        if not self.duplication_ok[producer]:
            gain, copies = self.duplication_gain[producer], self.slots[producer]
            self.log("refuse", subject,
                     f"xla: duplicating into {copies} consumer{'s' if copies > 1 else ''} is "
                     f"slower than writing it once (priority fusion cost model, gain "
                     f"{gain:.3g} µs)", gain)
            return False
        self._recompute(producer, head)
        self.log("fuse", subject, "xla: cheap producer duplicated into consumer (not IsExpensive)")
        return True

    def _refusal(self, producer: str, head: str, is_input: bool) -> str | None:
        """Why XLA would not fuse this producer into this fusion at all, or None."""
        node = self.nodes[producer]
        if self.role[producer] == LIBRARY:
            return f"xla: {node.op} is a library call, not fusible"
        if is_reduction(node):
            return "reduce output not fused into consumer (xla rule)"
        if not is_loop_fusible(node):
            return f"xla: {node.op} is not loop-fusible"
        if is_input and is_physically_transposing(node, self.graph):
            return ("xla: fusing the transposing producer into a reduction would break read "
                    "coalescing")
        if is_expensive_to_repeat(node) and self._rereads(producer, head):
            return "xla: the fusion would create a heavy computation (CreatesHeavyComputation)"
        inputs, inside = self.inputs[head], self.inside[head]
        too_large = too_many_nodes(len(inside) + 1)
        if too_large:
            return f"xla: fusion too large: {too_large} (ProducerConsumerMergedTooLarge)"
        before = self._operand_count(inputs) + 1
        added = {o for o in node.operands if o not in inside and o not in inputs}
        after = before - 1 + self._operand_count(added)
        if after > MAX_OPERANDS_AND_OUTPUTS and after > before:
            return (f"xla: fusion would have {after} operands and outputs, over "
                    f"{MAX_OPERANDS_AND_OUTPUTS} (FusionFitsInBudget)")
        if self.check_code:
            owned = [*self.members[head], producer]
            computed = inside | {producer}
            too_much_code = emission_refusal(self.graph, computed, kernel_outputs(
                owned, computed, self.all_readers, self.graph_outputs))
            if too_much_code:
                return (f"xla: the fusion would result in an overly large code duplication: "
                        f"{too_much_code} (ProducerConsumerMergedTooLarge)")
        return None

    def _rereads(self, producer: str, head: str) -> bool:
        """Some node of the fusion downstream of `producer` reads elements several times."""
        inside = self.inside[head]
        stack = [r for r in self.readers[producer] if r in inside]
        seen = set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if reads_elements_multiple_times(self.nodes[name], self.graph):
                return True
            stack.extend(r for r in self.readers[name] if r in inside)
        return False

    def _operand_count(self, values: set[str]) -> int:
        """Kernel parameters for these input values: one-element constants are immediates."""
        return len(values) - len(self.immediates.intersection(values))

    def _absorb(self, producer: str, head: str) -> None:
        self.head_of[producer] = head
        self.members[head].extend(self.members.pop(producer))
        self._add_inside(producer, head)
        del self.recomputed[producer], self.inside[producer], self.inputs[producer]

    def _recompute(self, producer: str, head: str) -> None:
        self.recomputed[head].add(producer)
        self.recomputers.setdefault(producer, []).append(head)
        self._add_inside(producer, head)

    def _add_inside(self, producer: str, head: str) -> None:
        inside = self.inside[head]
        inside.add(producer)
        inputs = self.inputs[head]
        inputs.discard(producer)
        inputs.update(o for o in self.nodes[producer].operands if o not in inside)

    # -- the group graph of the kernels -----------------------------------------------------

    def group_graph(self) -> None:
        """A GroupGraph with one node per kernel instruction fusion made, for the merges that
        follow: each kernel stands as its head, reading exactly the values the kernel reads
        from memory (what it recomputes is not read), so the edges are the kernels' own.

        GroupGraph ranks the kernels as soon as possible (grouping.as_soon_as_possible).
        """
        heads = [h for h in self.kernel_nodes if self.head_of[h] == h and h not in self.ghosts]

        def owner(value: str) -> str:
            head = self.head_of.get(value)
            return value if head is None else head

        view_nodes = dict(self.nodes)
        for name, node in self.nodes.items():
            if self.role[name] == PLUMBING:
                view_nodes[name] = dataclasses.replace(
                    node, operands=tuple(owner(o) for o in node.operands))
        for head in heads:
            operands = tuple(dict.fromkeys(
                owner(v) for v in sorted(self.inputs[head], key=self.position.__getitem__)))
            view_nodes[head] = dataclasses.replace(self.nodes[head], operands=operands)
        view = Graph(name=self.graph.name, nodes=view_nodes, root=self.graph.root,
                     computations=self.graph.computations)
        self.gg = GroupGraph(view, heads)
        # Owned values some kernel reads through a tuple: they must stay in memory.
        self.pinned = {h: {n for n in self.members[h] if n in self.plumbing_read} for h in heads}
        self.group_reductions = {h: [n for n in self.members[h] if is_reduction(self.nodes[n])]
                                 for h in heads}
        self.in_place = {h: any(self.nodes[n].op in IN_PLACE_OPS for n in self.inside[h])
                         for h in heads}
        self.transposing = {h: any(is_physically_transposing(self.nodes[n], self.graph)
                                   for n in self.inside[h])
                            for h in heads}
        # Which groups each group reaches, as bitsets: merges only add paths, so a pair found
        # connected here stays connected (XLA keeps a reachability map the same way); pairs
        # found unconnected are settled by GroupGraph when they merge.
        order = self.gg.groups()
        self.bits = {group: 1 << i for i, group in enumerate(order)}
        self.reach: dict[str, int] = {}
        for group in reversed(order):
            reach = 0
            for successor in self.gg.succ[group]:
                reach |= self.bits[successor] | self.reach[successor]
            self.reach[group] = reach

    def groups(self) -> list[str]:
        return [g for g in self.gg.groups() if g not in self.ghosts]

    def merge_or_cycle(self, a: str, b: str) -> str | None:
        """Merge group b into group a, the last step of every merge rule; "would form cycle"
        when GroupGraph finds a path between them through a third group."""
        return None if self.merge(a, b) else "would form cycle"

    def merge(self, a: str, b: str) -> bool:
        """Merge group b into group a if that leaves the kernels acyclic (GroupGraph checks,
        as can_merge does, while it merges) and keep the books; False when it would not."""
        try:
            self.gg.merge(a, b)
        except ValueError:
            return False
        self.members[a] += self.members.pop(b)
        self.recomputed[a] |= self.recomputed.pop(b)
        self.inside[a] |= self.inside.pop(b)
        self.inputs[a] = (self.inputs[a] | self.inputs.pop(b)) - self.inside[a]
        self.pinned[a] |= self.pinned.pop(b)
        self.group_reductions[a] += self.group_reductions.pop(b)
        self.in_place[a] |= self.in_place.pop(b)
        self.transposing[a] |= self.transposing.pop(b)
        self.bits[a] |= self.bits.pop(b)
        self.reach[a] |= self.reach.pop(b)
        if b in self.horizontal:
            self.horizontal.discard(b)
            self.horizontal.add(a)
        for cache in (self._outputs, self._hero):
            cache.pop(a, None)
            cache.pop(b, None)
        return True

    # -- facts about groups -----------------------------------------------------------------

    def is_library(self, group: str) -> bool:
        return self.role[group] == LIBRARY

    def reductions(self, group: str) -> list[str]:
        return self.group_reductions[group]

    def outputs(self, group: str) -> list[str]:
        """The owned values the group's kernel writes: returned, or read by a kernel that does
        not compute them (build_plan's rule)."""
        if group not in self._outputs:
            self._outputs[group] = [
                n for n in self.members[group]
                if n in self.graph_outputs or any(n not in self.inside[kernel]
                                                  for r in self.all_readers[n]
                                                  for kernel in self.computers(r))]
        return self._outputs[group]

    def output_count(self, group: str) -> int:
        return len(self.outputs(group))

    def hero(self, group: str) -> str:
        """The node whose shape drives the kernel: the first reduction, else the largest
        output (GetRealHeroForMultiOutputFusion)."""
        if group not in self._hero:
            reductions = sorted(self.reductions(group), key=self.position.__getitem__)
            if reductions:
                self._hero[group] = reductions[0]
            else:
                outputs = self.outputs(group) or self.members[group]
                self._hero[group] = max(outputs, key=lambda n: (_elements(self.nodes[n]),
                                                                self.position[n]))
        return self._hero[group]

    def is_loop_fusion(self, group: str) -> bool:
        """A loop fusion or a lone elementwise op (not a lone transpose, slice, ...)."""
        if self.is_library(group) or self.reductions(group):
            return False
        if len(self.inside[group]) > 1:
            return True
        info = OPS[self.nodes[group].op]
        return info.is_elementwise and bool(self.nodes[group].operands)

    def is_multi_output_root(self, group: str) -> bool:
        """gpu_fusible.cc IsFusibleAsMultiOutputFusionRoot (in-place ops excluded here)."""
        if self.is_library(group) or group in self.horizontal:
            return False
        if self.in_place[group]:
            return False
        return bool(self.reductions(group)) or self.is_loop_fusion(group)

    def reading_groups(self, value: str) -> list[str]:
        """The kernels that read `value` from memory, in graph order of their readers."""
        found: dict[str, None] = {}
        for reader in self.readers[value]:
            for group in sorted(self.computers(reader), key=self.position.__getitem__):
                if value not in self.inside[group]:
                    found[group] = None
        return list(found)

    # -- merge rules shared by the multi-output and horizontal passes ----------------------

    def shapes_incompatible(self, a: str, b: str) -> str | None:
        """gpu_fusible.cc ShapesCompatibleForMultiOutputFusion: None when compatible."""
        hero_a, hero_b = self.nodes[self.hero(a)], self.nodes[self.hero(b)]
        if is_reduction(hero_a) and is_reduction(hero_b):
            same = (self.nodes[hero_a.operands[0]].shape.dims
                    == self.nodes[hero_b.operands[0]].shape.dims
                    and hero_a.shape.dims == hero_b.shape.dims
                    and hero_a.attrs["dimensions"] == hero_b.attrs["dimensions"])
            return None if same else "xla: tiled reductions with different shapes"
        if self._loop_dims(hero_a) != self._loop_dims(hero_b):
            return "xla: different loop shapes (ShapesCompatibleForMultiOutputFusion)"
        return None

    def _loop_dims(self, hero: Node) -> tuple[int, ...]:
        if is_reduction(hero):
            return self.nodes[hero.operands[0]].shape.dims
        return hero.shape.dims

    def too_large(self, a: str, b: str) -> str | None:
        """Two fusions becoming one would compute too many nodes (module docstring)."""
        inside_a, inside_b = self.inside[a], self.inside[b]
        if too_many_nodes(len(inside_a) + len(inside_b)) is None:
            return None  # their union is no larger
        too_large = too_many_nodes(len(inside_a | inside_b))
        return too_large and f"xla: fusion too large: {too_large} (will generate too large IR)"

    def too_much_code(self, a: str, b: str) -> str | None:
        """Two fusions becoming one would take too much code to emit (`xla_fusion`)."""
        if not self.check_code:
            return None
        refusal = emission_refusal(self.graph, self.inside[a] | self.inside[b],
                                  self.outputs(a) + self.outputs(b))
        return refusal and (f"xla: the fusion would result in an overly large code "
                            f"duplication: {refusal} (will generate too large IR)")

    def over_budget(self, a: str, b: str) -> str | None:
        """gpu_fusible.cc FusionFitsInBudget for two fusions becoming one, and their code
        size."""
        too_large = self.too_large(a, b)
        if too_large:
            return too_large
        reductions = self.reductions(a) + self.reductions(b)
        if len(reductions) > MAX_REDUCTIONS_PER_FUSION:
            return (f"xla: over {MAX_REDUCTIONS_PER_FUSION} unnested reductions in fusion "
                    "(FusionFitsInBudget)")
        shared = sum(reduction_shared_memory(self.nodes[r], self.graph) for r in reductions)
        limit = self.model.device.shared_memory_per_block_bytes
        if shared > limit:
            return (f"xla: shared memory {shared} B over the budget of {limit} B "
                    "(FusionFitsInBudget)")
        operands = self._operand_count((self.inputs[a] | self.inputs[b])
                                       - self.inside[a] - self.inside[b])
        total = operands + self.output_count(a) + self.output_count(b)
        if total > MAX_OPERANDS_AND_OUTPUTS:
            return (f"xla: fusion would have {total} operands and outputs, over "
                    f"{MAX_OPERANDS_AND_OUTPUTS} (FusionFitsInBudget)")
        return None

    def cycle_or_dependence(self, a: str, b: str, independent: bool) -> str | None:
        """None when a and b may merge; for siblings and horizontal batches (`independent`)
        a direct edge between them is a refusal too."""
        gg = self.gg
        if independent and (b in gg.succ[a] or a in gg.succ[b]):
            return "xla: the fusions depend on each other (reachability)"
        if independent and (self.reach[a] & self.bits[b] or self.reach[b] & self.bits[a]):
            return "would form cycle"
        if not independent:
            low, high = (a, b) if b in gg.succ[a] else (b, a)
            if any(self.reach[s] & self.bits[high] for s in gg.succ[low] if s != high):
                return "would form cycle"
        return None

    def leaves_value_unwritten(self, a: str, b: str) -> str | None:
        """A value some node reads through a tuple must stay in memory: merging must not move
        all its readers into the kernel that computes it. (Values read by kernels that
        recompute their readers are written whatever the merges: build_plan sees to it.)"""
        inside_a, inside_b = self.inside[a], self.inside[b]
        for value in chain(self.pinned[a], self.pinned[b]):
            if value not in self.graph_outputs and all(
                    r in inside_a or r in inside_b for r in self.all_readers[value]):
                return f"xla: {value} would no longer be written for its tuple reader"
        return None

    # -- 2. multi-output fusion -------------------------------------------------------------

    def multi_output_fusion(self) -> None:
        """Uses before definitions: siblings of each value, then the value's producer into one
        of its consumers (multi_output_fusion.cc DoMultiOutputFusion)."""
        for name in reversed(list(self.nodes)):
            node = self.nodes[name]
            if node.op in ("constant", "tuple"):
                continue
            if _elements(node) > 1:  # IsProfitableOperand: effective scalars are not shared
                self._fuse_siblings(name)
            if self.role[name] == FUSIBLE and name not in self.ghosts:
                self._fuse_producer_into_consumer(name)

    def _fuse_siblings(self, parent: str) -> None:
        siblings = [g for g in self.reading_groups(parent) if self.is_multi_output_root(g)]
        if len(siblings) < 2:
            return
        # Multi-output fusions first, then fusions, then lone ops (FusionPriority).
        siblings.sort(key=lambda g: -(2 if self.output_count(g) > 1 else
                                      1 if len(self.inside[g]) > 1 else 0))
        logged = set()
        i = 0
        while i < len(siblings):
            j = i + 1
            while j < len(siblings):
                a, b = siblings[i], siblings[j]
                subject = f"{self.hero(a)} + {self.hero(b)}"
                refusal = (self.shapes_incompatible(a, b)
                           or self.cycle_or_dependence(a, b, independent=True)
                           or self.over_budget(a, b) or self.leaves_value_unwritten(a, b)
                           or self.too_much_code(a, b) or self.merge_or_cycle(a, b))
                if refusal is None:
                    del siblings[j]
                    self.log("fuse", subject,
                             f"xla: sibling multi-output fusion (both read {parent})")
                    continue
                if b not in logged:
                    logged.add(b)
                    self.log("refuse", subject, refusal)
                j += 1
            i += 1

    def _fuse_producer_into_consumer(self, value: str) -> None:
        producer = self.group(value)
        if (self.is_library(producer) or self.reductions(producer)
                or not self.is_multi_output_root(producer) or self.output_count(producer) != 1
                or self.transposing[producer]):
            return  # IsProducerMultiOutputFusible
        consumers = [g for g in self.reading_groups(value) if g != producer]
        users = len(consumers) + (1 if self.must_write[value] else 0)
        if users < 2 and not (consumers and self.output_count(consumers[0]) > 1):
            return  # one user, not a multi-output fusion: instruction fusion decided that
        consumers = [g for g in consumers if self.is_multi_output_root(g)]
        consumers.sort(key=lambda g: not self.reductions(g))  # reductions first
        for consumer in consumers:
            subject = f"{value} -> {self.hero(consumer)}"
            refusal = (self.shapes_incompatible(consumer, producer)
                       or self.cycle_or_dependence(consumer, producer, independent=False)
                       or self.over_budget(consumer, producer)
                       or self.leaves_value_unwritten(consumer, producer)
                       or self.too_much_code(consumer, producer)
                       or self.merge_or_cycle(consumer, producer))
            if refusal is None:
                self.log("fuse", subject, "xla: producer-consumer multi-output fusion "
                                          f"({value} also written out)")
                return
            self.log("refuse", subject, refusal)

    # -- 3. horizontal fusion ---------------------------------------------------------------

    def _only_consumer(self, group: str, consumer: str) -> bool:
        """horizontal_loop_fusion.cc IsConsumerTheOnlyNonRootUser: every use of the group's
        outputs is `consumer` or the graph's root tuple."""
        users = self.graph_users
        inside = self.inside[group]
        for output in self.outputs(group):
            for user in users[output]:
                if user != consumer and user not in self.root_tuples and user not in inside:
                    return False
        return True

    def _operand_group(self, operand: str) -> str | None:
        """The kernel that writes `operand` (through get-tuple-element and bitcast)."""
        while self.nodes[operand].op in ("get-tuple-element", "bitcast"):
            if self.nodes[operand].op == "bitcast" and self.group(operand) is not None:
                break
            operand = self.nodes[operand].operands[0]
        return self.group(operand)

    def horizontal_loop_fusion(self) -> None:
        self.graph_users = self.graph.users()
        for consumer in reversed(list(self.nodes)):
            operands = self.nodes[consumer].operands
            if len(operands) < 2 or self.role[consumer] == LEAF:
                continue
            for sliced in (False, True):
                self._fuse_operands_horizontally(consumer, sliced)

    def _fuse_operands_horizontally(self, consumer: str, sliced: bool) -> None:
        max_elements, max_ops = PROFITABLE_SLICED if sliced else PROFITABLE_LOOP
        own = self.group(consumer)
        candidates: dict[str, None] = {}
        for operand in self.nodes[consumer].operands:
            group = self._operand_group(operand)
            if group is None or group == own or group in candidates:
                continue
            if not self.is_loop_fusion(group) or group in self.horizontal \
                    or self.in_place[group]:
                continue
            outputs = self.outputs(group)
            if len({self.nodes[o].shape.dtype for o in outputs}) != 1:
                continue
            if not self._only_consumer(group, consumer):
                continue
            if _elements(self.nodes[self.hero(group)]) > max_elements \
                    or len(self.inside[group]) > max_ops:
                continue
            candidates[group] = None
        if len(candidates) < 2:
            return

        def key(g: str):
            hero = self.nodes[self.hero(g)]
            return (hero.shape.dtype.name, self.output_count(g), len(self.inside[g]),
                    _elements(hero), self.position[g])

        ordered = sorted(candidates, key=key)
        start = 0
        while start < len(ordered):
            end, stop = self._span(ordered, start, sliced)
            span = ordered[start:end]
            start = end
            if len(span) < 2:
                continue
            anchor = span[0]
            fused = [anchor]
            for group in span[1:]:
                subject = f"{self.hero(anchor)} + {self.hero(group)}"
                refusal = (self.cycle_or_dependence(anchor, group, independent=True)
                           or self.too_large(anchor, group)
                           or self.leaves_value_unwritten(anchor, group)
                           or self.too_much_code(anchor, group)
                           or self.merge_or_cycle(anchor, group))
                if refusal:
                    self.log("refuse", subject, refusal)
                    continue
                fused.append(group)
            if len(fused) > 1:
                self.horizontal.add(anchor)
                mode = "sliced input" if sliced else "loop"
                self.log("fuse", " + ".join(fused),
                         f"xla: horizontal {mode} fusion of {len(fused)} independent fusions "
                         f"feeding {consumer}")
            if stop:
                self.log("refuse", f"{ordered[end - 1]} + {ordered[end]}", stop)

    def _span(self, ordered: list[str], start: int, sliced: bool) -> tuple[int, str | None]:
        """horizontal_loop_fusion.cc GetNextSpanOfFusions: the end of the next batch and, when
        a cap ended it, which."""
        first = ordered[start]
        first_hero = self.nodes[self.hero(first)]
        lone_op = len(self.inside[first]) == 1 and not sliced
        max_batch = MAX_BATCH_LONE_OPS if lone_op else MAX_BATCH_FUSIONS
        outputs = io_size = 0
        end = start
        stop = None
        while end < len(ordered):
            group = ordered[end]
            hero = self.nodes[self.hero(group)]
            if hero.shape.dtype != first_hero.shape.dtype \
                    or self.output_count(group) != self.output_count(first):
                break
            if not sliced and hero.shape.dims != first_hero.shape.dims:
                break
            outputs += self.output_count(group)
            if outputs >= max_batch:
                stop = f"xla: horizontal fusion batch cap of {max_batch} outputs " \
                       "(kMaxFusionBatchSize)"
                break
            io_size += self._operand_count(self.inputs[group]) + self.output_count(group)
            if io_size * PARAM_BYTES >= MAX_CUDA_PARAM_BYTES:
                stop = (f"xla: horizontal fusion parameters over {MAX_CUDA_PARAM_BYTES} bytes "
                        "(kMaxCudaParamSize)")
                break
            end += 1
        if end == start:
            end, stop = start + 1, None
        if end >= len(ordered):
            stop = None
        return end, stop

    def horizontal_input_fusion(self) -> None:
        """Reductions feeding one consumer become one multi-output input fusion
        (horizontal_input_fusion.cc), definitions before uses."""
        for consumer in self.nodes:
            candidates: dict[str, None] = {}
            for operand in self.nodes[consumer].operands:
                group = self._operand_group(operand)
                if group is None or group in candidates or group == self.group(consumer):
                    continue
                if self.reductions(group) and self.is_multi_output_root(group) \
                        and self._only_consumer(group, consumer):
                    candidates[group] = None
            if len(candidates) < 2:
                continue
            ordered = sorted(candidates, key=lambda g: (
                self._loop_dims(self.nodes[self.hero(g)]), len(self.inside[g]),
                self.position[g]))
            anchor = ordered[0]
            for group in ordered[1:]:
                subject = f"{self.hero(anchor)} + {self.hero(group)}"
                refusal = (self.shapes_incompatible(anchor, group)
                           or self.cycle_or_dependence(anchor, group, independent=True)
                           or self.over_budget(anchor, group)
                           or self.leaves_value_unwritten(anchor, group)
                           or self.too_much_code(anchor, group)
                           or self.merge_or_cycle(anchor, group))
                if refusal:
                    self.log("refuse", subject, refusal)
                    anchor = group
                    continue
                self.log("fuse", subject,
                         f"xla: horizontal input fusion of reductions feeding {consumer}")

    # -- the plan ---------------------------------------------------------------------------

    def specs(self) -> list[KernelSpec]:
        specs = []
        for group in self.groups():
            owned = self.members[group]
            recomputed = sorted(self.recomputed[group] - set(owned), key=self.position.get)
            if self.is_library(group):
                kind = "library"
            elif self.reductions(group):
                kind = "input"
            elif group in self.horizontal:
                kind = "horizontal"
            else:
                kind = "loop"
            dominant = group if kind == "library" else self.hero(group)
            specs.append(KernelSpec(list(owned), kind, recomputed, dominant))
        return specs
