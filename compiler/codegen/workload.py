"""The workload of one generated kernel under one CodeGenPlan: what the projected model prices.

Counted from the kernel's ops and its schedule, not from PTX or SASS: the trip counts of the
schedule's loops are known exactly here (element counts, rows, row lengths, the plan's launch
dimensions) but not in the machine code, where every loop is a back-edge with a run-time bound,
and the op-level count is available for every candidate plan before anything is compiled (the
codegen ranks tens of candidates per kernel and compiles one). ptxas' figures (registers,
spills, shared memory) come in separately, for the plan that was built.

What a `Workload` holds, for the whole grid:
- thread instructions per pipe ("fma" FP32 add/mul/FMA and integer multiply-add, "alu" integer
  and logic, compares, min/max, selects, "xu" the MUFU transcendental unit, "fp64", "conv"
  conversions and roundings, "lsu" global and shared loads and stores, "shfl" warp shuffles),
  from a per-op instruction mix (`OP_MIX`: what nvcc emits for each op, e.g. expf is a MUFU.EX2
  and about four FP32 instructions of range reduction) times the number of times the schedule
  evaluates the op, plus index arithmetic and loop overhead per element;
- DRAM bytes read and written, and L2-to-SM bytes: every access is classified by the pattern
  consecutive threads make (`Access.pattern`): "contiguous" (coalesced: a warp touches 32
  consecutive elements), "broadcast" (the fast thread index does not move the address: one
  sector serves the warp), "strided" (consecutive threads are a row apart: one 32-byte
  sector per element) or "transposed" (strided because a transpose moved the innermost
  dimension; the transpose-tiled schedule stages those through shared memory instead).
  DRAM sees each value once while the kernel's data fits in L2; the L2-to-SM traffic
  carries the re-reads and the sector waste;
- the busiest thread's iteration count and what each iteration waits for (dependent DRAM
  round trips, the dependency chain of its arithmetic), and the synchronisation on its path
  (shuffles, barriers, grid barriers): the latency model's inputs.

Who counts what: this module is the counting machinery (`Counter`: a loop's loads, arithmetic,
accesses and latency; `Counter.elementwise`: the grid-stride loops most schedules end with).
Each schedule describes its own loops to it, beside its candidates and its emitter: a schedule
module of compiler/codegen/schedules/ has a `count(graph, kernel, plan, counter)`, and
`schedules.kernel_workload` asks the module that owns the plan's schedule. So the loops a
schedule emits and the loops it is priced by are written next to each other.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from compiler.codegen.plan import WARP, CodeGenPlan
from compiler.ir.dtypes import accumulation_dtype
from compiler.ir.graph import Graph, Node
from compiler.ir.idioms import function_idioms
from compiler.ir.ops import OPS
from compiler.kernels.plan import Kernel
from compiler.target.devices import Device

PIPES = ("fma", "alu", "xu", "fp64", "conv", "lsu", "shfl")
SECTOR_BYTES = 32  # the unit of L1/L2 and DRAM transfers on every NVIDIA GPU since Maxwell

# Thread instructions per element for ops computed in f32, by pipe. From the code nvcc emits
# for the CUDA math library's accurate (non --use_fast_math) functions: a MUFU instruction for
# the hardware approximation, FP32 instructions for range reduction and refinement. Rounded;
# the projected model's derating constants absorb the rest (docs/cost-models.md).
OP_MIX: dict[str, dict[str, float]] = {
    "add": {"fma": 1}, "subtract": {"fma": 1}, "multiply": {"fma": 1},
    "divide": {"fma": 8, "xu": 1},                       # rcp + Newton steps + correction
    "remainder": {"fma": 12, "alu": 4, "xu": 1},
    "maximum": {"alu": 2}, "minimum": {"alu": 2},        # fx_max/fx_min propagate NaN
    "compare": {"alu": 1}, "select": {"alu": 1}, "clamp": {"alu": 4},
    "and": {"alu": 1}, "or": {"alu": 1}, "xor": {"alu": 1}, "not": {"alu": 1},
    "abs": {"alu": 1}, "negate": {}, "sign": {"alu": 3}, "is-finite": {"alu": 2},
    "exponential": {"fma": 4, "xu": 1},
    "exponential-minus-one": {"fma": 12, "xu": 1, "alu": 2},
    "log": {"fma": 12, "xu": 1, "alu": 3}, "log-plus-one": {"fma": 14, "xu": 1, "alu": 3},
    "sqrt": {"fma": 4, "xu": 1}, "rsqrt": {"fma": 12, "xu": 2},   # emitted as 1 / sqrt(x)
    "cbrt": {"fma": 14, "xu": 2, "alu": 2},
    "tanh": {"fma": 12, "xu": 2, "alu": 2}, "logistic": {"fma": 12, "xu": 2},
    "power": {"fma": 40, "xu": 2, "alu": 10},
    # Counted in the PTX nvcc 13.5 writes for sm_90 (erff: ex2 and a polynomial, both ranges
    # selected; erfcf: two approximate reciprocals, ex2, polynomials); erfc is no IR op but
    # an expansion the code generator emits as erfcf (compiler/ir/idioms.py).
    "erf": {"fma": 9, "xu": 1, "alu": 13}, "erfc": {"fma": 34, "xu": 3, "alu": 9, "conv": 1},
    "sine": {"fma": 20, "alu": 4}, "cosine": {"fma": 20, "alu": 4},
    "tan": {"fma": 30, "xu": 1, "alu": 4}, "atan2": {"fma": 25, "xu": 1, "alu": 6},
    "floor": {"conv": 1}, "ceil": {"conv": 1}, "round-nearest-even": {"conv": 1},
    "round-nearest-afz": {"conv": 1, "alu": 2},
    "convert": {"conv": 1}, "bitcast-convert": {},
    "shift-left": {"alu": 2}, "shift-right-logical": {"alu": 2},
    "shift-right-arithmetic": {"alu": 2}, "popcnt": {"alu": 1},
    "count-leading-zeros": {"alu": 1}, "iota": {"alu": 1},
    "pad": {"alu": 3}, "concatenate": {"alu": 2}, "dynamic-slice": {"alu": 4},
    "dynamic-update-slice": {"alu": 4}, "gather": {"alu": 6},
}
DEFAULT_TRANSCENDENTAL = {"fma": 20, "xu": 1, "alu": 2}
# Integer arithmetic: add/sub/logic on the ALU, multiplies (IMAD) on the FMA pipe.
INTEGER_MIX = {"multiply": {"fma": 1}, "divide": {"alu": 12, "fma": 8, "conv": 2},
               "remainder": {"alu": 14, "fma": 8, "conv": 2}, "power": {"alu": 20, "fma": 10}}
# A 16-bit float result is computed in f32 and rounded: a conversion and a repack. Ops that
# only pick an element (of another place, or a padding value) round nothing.
ROUND_16_BIT = {"conv": 1, "alu": 1}
PICKS = frozenset({"pad", "concatenate", "dynamic-slice", "dynamic-update-slice", "gather"})
# Per element of a loop: the loop's increment, compare and branch.
LOOP_OVERHEAD = {"alu": 2}
# Per dimension of an index that has to be derived from the loop's position (a div/mod by a
# constant is a multiply-high and a shift; the address adds a multiply-add).
INDEX_PER_DIM = {"alu": 1, "fma": 2}
# Dependent-issue latency of one op on the FMA/ALU pipes, in cycles, when no better figure is
# known: the FFMA latency of every chip since Volta is 4 ([JIA18], [ABD22] in devices.py).
# The unroll factor NVVM (LLVM's loop unroller) applies to a loop with a run-time trip count and
# a small body when the source has no #pragma unroll: 4.
UNROLL = 4
# The most evaluations per position a walk counts for one value. A thread that computes its
# own reductions recomputes, for a reduction of a reduction's result, the inner one for each
# element it reduces: a chain of k such steps over n elements is n^k evaluations (150 chained
# steps x - broadcast(sum of x's rows) over 128 columns: 128^150, past what a float holds, and
# an OverflowError). Counting stops here, which still prices such a schedule at about 10^18
# evaluations, far past any other plan.
MAX_EVALUATIONS = 2 ** 60
PLUMBING = frozenset({"broadcast", "reshape", "bitcast", "transpose", "copy", "slice",
                      "reverse", "constant", "parameter", "tuple", "get-tuple-element"})


@dataclass(frozen=True)
class Access:
    """One input read or output written by the kernel, as the fast thread index walks it."""
    value: str             # the graph node
    role: str              # "read" | "write"
    pattern: str           # "contiguous" | "broadcast" | "strided" | "transposed"
    elements: int          # element accesses over the whole grid (re-reads included)
    unique_bytes: int      # the value's size in memory
    l2_bytes: int          # bytes moved between L2 and the SMs for these accesses
    vectorized: bool       # served by 2- or 4-wide vector accesses
    itemsize: int          # bytes per element

    @property
    def sector_efficiency(self) -> float:
        """Useful bytes per byte moved between L2 and the SMs (1.0: fully coalesced)."""
        useful = self.elements * self.itemsize
        return min(1.0, useful / self.l2_bytes) if self.l2_bytes else 1.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["sector_efficiency"] = round(self.sector_efficiency, 4)
        return out


@dataclass
class Workload:
    schedule: str
    grid: int
    block: int
    shared_bytes: int                                 # dynamic shared memory per block
    instructions: dict[str, float] = field(default_factory=dict)   # thread instructions
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    l2_bytes: int = 0
    shared_traffic_bytes: int = 0
    accesses: list[Access] = field(default_factory=list)
    iterations_per_thread: int = 0                    # the busiest thread's loop iterations
    chain_cycles_per_iteration: float = 0.0           # the longest dependent arithmetic
    latency_cycles_per_thread: float = 0.0            # its iterations' memory + arithmetic
    sync_cycles_per_thread: float = 0.0               # shuffles and barriers on a thread's path
    # A horizontal launch's parts differ: the two figures above are then their means over the
    # launch's blocks, and this is the slowest part's thread (latency + sync), which no
    # launch outruns however few waves it has (0: a launch of one part, all threads alike).
    slowest_thread_cycles: float = 0.0
    # (blocks that run it, its cycles per thread) of each loop that only the first blocks of
    # the launch run: a grid-stride loop over fewer positions than the launch has threads (the
    # 512 sums of a column reduction beside a large elementwise output). Such a loop's waves
    # are its own blocks', not the launch's.
    few_block_loops: list[tuple[int, float]] = field(default_factory=list)
    barriers_per_block: int = 0
    grid_syncs: int = 0
    # A cooperative launch: every block must be resident at once (the projected model refuses
    # a grid the device cannot hold).
    cooperative: bool = False

    @property
    def dram_bytes(self) -> int:
        return self.dram_read_bytes + self.dram_write_bytes

    def to_dict(self) -> dict:
        out = asdict(self)
        out["accesses"] = [a.to_dict() for a in self.accesses]
        out["instructions"] = {k: round(v) for k, v in self.instructions.items()}
        out["dram_bytes"] = self.dram_bytes
        return out


# -- op-level pieces --------------------------------------------------------------------------


def op_mix(node: Node) -> dict[str, float]:
    """Thread instructions per element for computing `node` once."""
    op = node.op
    if op in PLUMBING or node.shape.is_tuple:
        return {}
    dtype = node.array_shape.dtype
    if dtype.kind == "pred" or not dtype.is_float:
        if op in INTEGER_MIX and dtype.kind != "pred":
            return dict(INTEGER_MIX[op])
        if op in ("add", "subtract"):
            return {"alu": 1}
        base = OP_MIX.get(op, {"alu": 1})
        return {("alu" if pipe in ("fma", "xu") else pipe): n for pipe, n in base.items()}
    info = OPS.get(op)
    mix = dict(OP_MIX.get(op) or (DEFAULT_TRANSCENDENTAL if info and info.transcendental
                                  else {"alu": 1}))
    if dtype.bits == 64:  # f64 runs the arithmetic on the FP64 pipe
        mix = {("fp64" if pipe in ("fma", "xu") else pipe): n for pipe, n in mix.items()}
    if dtype.bits < 32 and op not in ("convert", "bitcast-convert") and op not in PICKS \
            and mix:
        for pipe, n in ROUND_16_BIT.items():
            mix[pipe] = mix.get(pipe, 0) + n
    return mix


def chain_latency(node: Node, device: Device) -> float:
    """Cycles from the node's operands to its result."""
    return mix_latency(op_mix(node), device)


def mix_latency(mix: dict[str, float], device: Device) -> float:
    """Cycles from the operands to the result of a computation of instruction mix `mix`."""
    if not mix:
        return 0.0
    serial = sum(n for pipe, n in mix.items() if pipe in ("fma", "alu", "fp64", "conv"))
    return serial * device.fp32_fma_latency_cycles + mix.get("xu", 0) * device.mufu_latency_cycles


def _operand_axis(graph: Graph, node: Node, axis, k: int):
    """The operand-k dimension that moves when `axis` of `node` moves: an int, None (the
    operand does not move: broadcast) or "?" (not a single dimension: strided at best)."""
    if axis is None or axis == "?":
        return axis
    operand = graph.nodes[node.operands[k]]
    if operand.shape.is_tuple:
        return "?"
    op, rank = node.op, operand.array_shape.rank
    if op == "broadcast":
        dims = list(node.attrs.get("dimensions", ()))
        return dims.index(axis) if axis in dims else None
    if op == "transpose":
        return list(node.attrs["dimensions"])[axis]
    if op in ("reshape", "bitcast"):
        out_dims, in_dims = node.array_shape.dims, operand.array_shape.dims
        stride = math.prod(out_dims[axis + 1:])
        for d in range(len(in_dims)):
            if in_dims[d] > 1 and math.prod(in_dims[d + 1:]) == stride:
                return d
        return "?"
    if op == "reduce":
        if k >= len(node.operands) // 2:
            return None  # the init value
        kept = [d for d in range(rank) if d not in node.attrs["dimensions"]]
        return kept[axis] if axis < len(kept) else "?"
    if op == "gather":
        return "?"
    if rank == node.array_shape.rank:
        return axis  # elementwise, slice, pad, reverse, concatenate, dynamic slices, windows
    if rank == 0:
        return None  # a scalar operand
    return "?"


def fast_axis(dims) -> int | None:
    """The logical dimension consecutive threads walk: the last one with more than 1 element."""
    for d in range(len(dims) - 1, -1, -1):
        if dims[d] > 1:
            return d
    return None


def memory_fast_axis(shape) -> int | None:
    """The logical dimension consecutive threads walk in an elementwise loop, which counts its
    output's elements in memory order (`loops.elementwise_loops`): the layout's most minor
    dimension with more than 1 element."""
    return next((d for d in shape.minor_to_major if shape.dims[d] > 1), None)


def _pattern(node: Node, axis) -> str:
    if axis is None:
        return "broadcast"
    if axis == "?":
        return "strided"
    shape = node.array_shape
    if shape.dims[axis] <= 1:
        return "broadcast"
    return "contiguous" if axis == memory_fast_axis(shape) else "strided"


_UNKNOWN = object()    # a cache miss (None is an answer: a broadcast operand)
_IMMEDIATE = "immediate"  # a one-element constant: an immediate operand, never loaded


def _input_pattern(node: Node, axis) -> str:
    """How the walk reads an input at `axis` (`_pattern`), or _IMMEDIATE."""
    if node.op == "constant" and node.array_shape.size == 1:
        return _IMMEDIATE
    return _pattern(node, axis)


def _steps(graph: Graph, device: Device) -> dict:
    """What `Counter._walk_uncached` needs of each node, kept with the graph (the walks of
    every candidate kernel of a fusion search pass the same nodes): name -> (its distinct
    operands in order, each as (name, first position, whether the reduction reduces it),
    whether it is a reduction or window, the elements each result combines (1 for other
    ops), its dependency-chain latency, whether it transposes)."""
    return graph.analysis_cache(f"workload.steps.{device.name}",
                                lambda: _Steps(graph, device))


class _Steps(dict):
    """`_steps`' dict: a node's entry is worked out the first time it is asked for."""

    def __init__(self, graph: Graph, device: Device):
        super().__init__()
        self.graph, self.device = graph, device

    def __missing__(self, name: str) -> tuple:
        node = self.graph.nodes[name]
        reducing = node.op in ("reduce", "reduce-window")
        factor = 1
        if node.op == "reduce":
            source = self.graph.nodes[node.operands[0]].array_shape
            factor = math.prod(source.dims[d] for d in node.attrs["dimensions"])
        elif node.op == "reduce-window":  # each output reads its window's elements
            factor = math.prod(node.attrs.get("window", {}).get("size", (1,)))
        reduced = max(1, len(node.operands) // 2)  # a variadic reduce's inputs, then inits
        operands = tuple((operand, node.operands.index(operand),
                          reducing and node.operands.index(operand) < reduced)
                         for operand in dict.fromkeys(node.operands))
        found = self[name] = (operands, reducing, factor, chain_latency(node, self.device),
                              node.op == "transpose")
        return found


# -- loops ------------------------------------------------------------------------------------


@dataclass
class Loop:
    """One loop of the schedule: `elements` positions, at each the `targets` are computed
    (outputs among them stored), reading `known` values from registers."""
    elements: int
    targets: list[str]
    axes: dict[str, object]        # target -> the dimension the fast thread index walks
    known: frozenset[str]
    per_thread: int                # iterations of the busiest thread
    vector: int = 1
    stores: tuple[str, ...] = ()
    coalesced_reads: frozenset[str] = frozenset()  # staged through shared memory
    # Values an earlier loop over the same rows read (a row schedule's later loops): re-read
    # from L2 whatever their size, the rows in flight being a few MB.
    recent: frozenset[str] = frozenset()
    busy_blocks: int = 0           # the blocks that have positions, when not all of them


class Counter:
    def __init__(self, graph: Graph, kernel: Kernel, device: Device, workload: Workload,
                 memo: dict):
        self.graph, self.kernel, self.device, self.w = graph, kernel, device, workload
        # The walk of a loop depends on what it computes, not on the launch: candidate plans
        # of one kernel share it (`rank_plans` passes one memo for all of them), and the
        # kernel's sets.
        self.memo = memo
        sets = memo.get("sets")
        if sets is None:
            computed, inputs = set(kernel.computed), set(kernel.inputs)
            sets = memo["sets"] = computed, inputs, inputs - computed
        self.computed, self.inputs, self.reads = sets   # reads: what the kernel loads
        idioms = memo.get("idioms")
        if idioms is None:
            idioms = memo["idioms"] = self._idioms()
        # {root: (its _steps entry, its op mix)} of the expansions emitted as library calls.
        self.idioms: dict[str, tuple] = idioms
        self.read_once: set[str] = set()
        outputs = memo.get("outputs")
        if outputs is None:
            outputs = memo["outputs"] = [graph.nodes[n] for n in kernel.outputs
                                         if not graph.nodes[n].shape.is_tuple]
        self.outputs: list[Node] = outputs   # the kernel's array outputs, in order
        self.shuffle_latency = device.shared_memory_latency_cycles
        self.barrier_latency = 2 * device.shared_memory_latency_cycles

    def _idioms(self) -> dict[str, tuple]:
        """The kernel's whole expansions of library functions (compiler/ir/idioms.py): the
        emitted code computes each root from its argument by one call, priced by the call's
        mix; the expansion's inner values are never walked."""
        found = {}
        for root, idiom in function_idioms(self.graph).items():
            if idiom.applies(self.computed):
                mix = OP_MIX[idiom.function]
                found[root] = (((idiom.argument, 0, False),), False, 1,
                               mix_latency(mix, self.device), False), mix
        return found

    def elementwise(self, plan: CodeGenPlan, nodes: list[Node], known=frozenset(), vector=1,
                    coalesced=frozenset()) -> None:
        """The grid-stride loops of `loops.elementwise_loops` over `nodes` under `plan`'s
        launch: one per distinct element count, `vector` elements per thread where the count
        allows, `known` values in registers, `coalesced` inputs staged through shared
        memory."""
        key = ("elementwise", tuple(n.name for n in nodes))
        groups = self.memo.get(key)
        if groups is None:  # the kernel's, whatever the launch
            sizes: dict[int, list[Node]] = {}
            for node in nodes:
                sizes.setdefault(node.array_shape.size, []).append(node)
            groups = self.memo[key] = [
                (size, [n.name for n in group],
                 {n.name: memory_fast_axis(n.array_shape) for n in group},
                 tuple(n.name for n in group)) for size, group in sizes.items()]
        threads = plan.grid_size * plan.block_size
        for size, targets, axes, stores in groups:
            width = vector if size % vector == 0 else 1
            busy = ceil_div(ceil_div(size, width), plan.block_size)
            self.loop(Loop(
                elements=size, targets=targets, axes=axes, known=known,
                per_thread=ceil_div(size, threads * width), vector=width, stores=stores,
                coalesced_reads=coalesced, busy_blocks=busy if busy < plan.grid_size else 0))

    def _walk(self, loop: Loop, key: tuple) -> tuple:
        """`_walk_uncached`'s figures, the names of the inputs the loop loads, and whether it
        evaluates a gather (whose index is read before the data)."""
        found = self.memo.get(key)
        if found is None:
            evals, loads, chain, arithmetic, serial = self._walk_uncached(loop)
            nodes = self.graph.nodes
            gathers = any(nodes[n].op in ("gather", "dynamic-slice", "dynamic-update-slice")
                          for n in evals)
            found = self.memo[key] = (evals, loads, chain, arithmetic,
                                      frozenset(name for name, _ in loads), gathers, serial)
        return found

    def _walk_uncached(self, loop: Loop) -> tuple[dict, dict, float, dict, tuple]:
        """{value: evaluations per position}, {(input, pattern): loads per position}, the
        longest dependency chain in cycles, {pipe: thread instructions per position}, and the
        serial reductions' (memory round trips, reducer cycles) per position.

        A reduction that one thread computes (the elementwise schedule's, a column tile's)
        is a loop of its own in the emitted code: the thread's reductions run one after
        another, and each waits on its loads, UNROLL of them in flight at a time. A kernel
        whose few threads each sum a thousand-element column (a multi-output column
        reduction with 512 outputs) is bound by those round trips alone."""
        graph = self.graph
        mixes = graph.analysis_cache("workload.op_mix")
        steps = _steps(graph, self.device)
        axes = graph.analysis_cache("workload.operand_axis")
        patterns = graph.analysis_cache("workload.pattern")
        known, coalesced = loop.known, loop.coalesced_reads
        computed, read, idioms = self.computed, self.reads, self.idioms
        evals: dict[str, int] = {}
        loads: dict[tuple[str, str], int] = {}   # (input, pattern) -> evaluations
        depth: dict[str, float] = {}
        combines: dict[str, int] = {}             # reduction -> reducer applications
        loads_below: dict[str, bool] = {}         # value -> whether computing it loads

        fma_latency = self.device.fp32_fma_latency_cycles

        def visit(target: str, axis) -> float:
            """Walks the values `target` needs, depth first; returns its dependency-chain
            latency. An explicit stack, not recursion: a chain of thousands of fused ops is
            as deep. A frame is [name, multiplier, axis, passed (the walk passed a transpose:
            a strided read is then "transposed"), inner (the multiplier of a reduction's
            reduced operands), operands, the next operand's index, the longest chain of the
            operands so far, the node's own chain latency, whether computing it loads]."""
            frames: list[list] = []
            call = (target, 1, axis, False)
            while True:
                if call is not None:
                    name, multiplier, axis, transposed = call
                    call = None
                    found = None  # the latency, when the value needs no walk
                    if name in known:
                        found = 0.0
                    elif name in read:
                        found = 0.0
                        pattern = patterns.get((name, axis))
                        if pattern is None:
                            pattern = patterns[name, axis] = _input_pattern(graph.nodes[name],
                                                                            axis)
                        if pattern is not _IMMEDIATE:
                            if name in coalesced:
                                pattern = "contiguous"
                            elif pattern == "strided" and transposed:
                                pattern = "transposed"
                            if multiplier > loads.get((name, pattern), 0):
                                loads[name, pattern] = multiplier
                            if frames:
                                frames[-1][9] = True
                    elif name not in computed:
                        found = 0.0
                    else:
                        before = evals.get(name, 0)
                        if before >= multiplier and name in depth:
                            found = depth[name]
                            if frames and loads_below[name]:
                                frames[-1][9] = True
                        else:
                            if multiplier > before:
                                evals[name] = multiplier
                            operands, reducing, factor, own, transposes = (
                                idioms[name][0] if name in idioms else steps[name])
                            inner = min(multiplier * factor, MAX_EVALUATIONS)
                            if reducing:
                                combines[name] = max(combines.get(name, 0), inner)
                            frames.append([name, multiplier, axis, transposed or transposes,
                                           inner, operands, 0, 0.0, own, False])
                    if found is not None:
                        if not frames:
                            return found
                        if found > frames[-1][7]:
                            frames[-1][7] = found
                top = frames[-1]
                name, multiplier, axis, passed, inner, operands, index, longest, own, _ = top
                if index < len(operands):
                    operand, position, reduced = operands[index]
                    top[6] = index + 1
                    sub_axis = axis
                    if axis is not None and axis != "?":
                        sub_axis = axes.get((name, axis, position), _UNKNOWN)
                        if sub_axis is _UNKNOWN:
                            sub_axis = axes[name, axis, position] = _operand_axis(
                                graph, graph.nodes[name], axis, position)
                    call = (operand, inner if reduced else multiplier, sub_axis, passed)
                    continue
                # A reduction computed by one thread adds one dependent step per reduced
                # element.
                serial = inner // max(1, multiplier) if inner != multiplier else 0
                found = depth[name] = longest + own + serial * fma_latency
                loads_below[name] = top[9]
                frames.pop()
                if not frames:
                    return found
                if top[9]:
                    frames[-1][9] = True
                if found > frames[-1][7]:
                    frames[-1][7] = found

        chain = 0.0
        for target in loop.targets:
            chain = max(chain, visit(target, loop.axes.get(target)))
        # Arithmetic per position: each value's op mix times its evaluations, and a reduction
        # computed by one thread pays its reducer per reduced element.
        arithmetic: dict[str, float] = {}
        for name, multiplier in evals.items():
            node = graph.nodes[name]
            if name not in mixes:
                mixes[name] = op_mix(node)
            for pipe, n in (idioms[name][1] if name in idioms else mixes[name]).items():
                arithmetic[pipe] = arithmetic.get(pipe, 0) + n * multiplier
            if name in combines:
                acc = accumulation_dtype(node.array_shape.dtype)
                reducer = node.attrs.get("reducer") or "add"
                floating = reducer in ("add", "multiply") and acc.is_float
                for pipe, n in ({"fma": 1} if floating else {"alu": 2}).items():
                    arithmetic[pipe] = arithmetic.get(pipe, 0) + n * combines[name]
        # The serial reductions, one loop each, run back to back.
        trips = reducer_cycles = 0.0
        for name, applications in combines.items():
            factor = steps[name][2]
            if factor > 1:
                reducer_cycles += applications * fma_latency
                if loads_below.get(name):
                    trips += applications / factor * -(-factor // UNROLL)
        return evals, loads, chain, arithmetic, (trips, reducer_cycles)

    def loop(self, loop: Loop) -> None:
        """Add what one loop costs to the workload. Its effect (instructions, bytes, accesses)
        depends on the launch only through the vector width, so the candidate plans of a
        kernel share it (`memo`); the latency depends on each thread's iterations."""
        targets = tuple(loop.targets)
        walk_key = (targets, loop.known, tuple(map(loop.axes.get, targets)),
                    loop.coalesced_reads)
        _, loads, chain, arithmetic, loaded, gathers, serial = self._walk(loop, walk_key)
        read_before = self.read_once
        seen = loaded & read_before
        recent = loaded & loop.recent
        key = ("effect", walk_key, loop.elements, loop.vector, loop.stores, seen, recent)
        effect = self.memo.get(key)
        if effect is None:
            effect = self.memo[key] = self._effect(loop, loads, arithmetic, seen)
        w = self.w
        instructions = w.instructions
        for pipe, n in effect.instructions:
            instructions[pipe] = instructions.get(pipe, 0) + n
        w.l2_bytes += effect.l2_bytes
        w.dram_read_bytes += effect.dram_read_bytes
        w.dram_write_bytes += effect.dram_write_bytes
        w.accesses.extend(effect.accesses)
        # Latency: each iteration waits for its loads (DRAM the first time a value is read,
        # L2 when it is read again; twice through a gather's index) and its arithmetic.
        first_reads = len(seen) < len(loaded)
        if first_reads:
            read_before |= loaded
        device = self.device
        memory = (device.dram_latency_cycles if first_reads
                  else device.l2_hit_latency_cycles if loads else 0)
        # nvcc unrolls a loop like these by UNROLL and issues the unrolled iterations' loads
        # together, so that many memory round trips overlap.
        per_thread = loop.per_thread
        round_trips = (2 if gathers else 1) / (UNROLL if per_thread >= UNROLL
                                               else max(1, per_thread))
        w.iterations_per_thread += loop.per_thread
        w.chain_cycles_per_iteration = max(w.chain_cycles_per_iteration, chain)
        # Serial reductions, computed once per lane of a vector: each waits on its loads,
        # from memory for the first lane, from L2 for the others (the same sectors). Their
        # reducer chains add up, which the longest chain (one of them) bounds from below.
        # Values many threads read (a window sum's row) are in cache after the first read:
        # serial loads wait on DRAM only where some value is read about once.
        trips, reducer_cycles = serial
        per_position = round_trips * memory + chain
        if trips or reducer_cycles:
            lanes, l2 = loop.vector, device.l2_hit_latency_cycles
            nodes = self.graph.nodes
            fresh = any(loop.elements * m <= 2 * nodes[name].array_shape.size
                        for (name, _), m in loads.items())
            serial_memory = trips * ((memory if fresh else l2) + (lanes - 1) * l2)
            per_position = (round_trips * memory + serial_memory
                            + max(chain, lanes * reducer_cycles))
        if loop.busy_blocks and loop.busy_blocks < w.grid:
            w.few_block_loops.append((loop.busy_blocks, loop.per_thread * per_position))
        else:
            w.latency_cycles_per_thread += loop.per_thread * per_position

    def _effect(self, loop: Loop, loads: dict, arithmetic: dict,
                seen: frozenset[str]) -> _Effect:
        """The instructions, bytes and accesses of a loop whose reads of `seen` values are
        re-reads (an earlier loop of the kernel read them)."""
        graph = self.graph
        instructions = {pipe: n * loop.elements for pipe, n in arithmetic.items()}
        # Index arithmetic and loop overhead, per position (shared by the lanes of a vector).
        rank = max((graph.nodes[t].array_shape.rank for t in loop.targets), default=1)
        per_position = dict(LOOP_OVERHEAD)
        for pipe, n in INDEX_PER_DIM.items():
            per_position[pipe] = per_position.get(pipe, 0) + n * max(0, rank - 1)
        for pipe, n in per_position.items():
            instructions[pipe] = instructions.get(pipe, 0) + n * loop.elements / loop.vector
        effect = _Effect(instructions)
        read = set(seen)
        for (name, pattern), multiplier in loads.items():
            self._access(effect, name, "read", pattern, loop.elements * multiplier,
                         loop.vector, reread=name in read, recent=name in loop.recent)
            read.add(name)
        for name in loop.stores:
            self._access(effect, name, "write", _pattern(graph.nodes[name], loop.axes.get(name)),
                         graph.nodes[name].array_shape.size, loop.vector, reread=False)
        effect.instructions = tuple(effect.instructions.items())
        effect.accesses = tuple(effect.accesses)
        return effect

    def _access(self, effect: _Effect, name: str, role: str, pattern: str, elements: int,
                vector: int, reread: bool, recent: bool = False) -> None:
        node = self.graph.nodes[name]
        shape = node.array_shape
        itemsize = max(1, shape.dtype.bits // 8)
        unique = shape.size * itemsize
        vectorized = vector > 1 and pattern == "contiguous"
        if pattern == "contiguous":
            l2 = elements * itemsize
            lsu = elements / (vector if vectorized else 1)
        elif pattern == "broadcast":
            l2 = max(unique, elements * itemsize // 32)  # one sector serves a warp
            lsu = elements
        else:  # strided or transposed: a sector per element
            l2 = elements * max(itemsize, SECTOR_BYTES)
            lsu = elements
        effect.instructions["lsu"] = effect.instructions.get("lsu", 0) + lsu
        effect.l2_bytes += l2
        fits_l2 = unique <= self.device.l2_bytes // 2
        wasteful = pattern in ("strided", "transposed")
        if role == "read":
            if not reread:
                effect.dram_read_bytes += unique if (fits_l2 or not wasteful) else l2
            elif not fits_l2 and not recent:
                effect.dram_read_bytes += l2
        else:
            effect.dram_write_bytes += unique if (fits_l2 or not wasteful) else l2
        effect.accesses.append(Access(name, role, pattern, elements, unique, l2, vectorized,
                                      itemsize))


@dataclass
class _Effect:
    """What one loop adds to a workload, but for its latency (`Counter.loop`)."""
    instructions: dict | tuple                       # pipe -> thread instructions
    l2_bytes: int = 0
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    accesses: list | tuple = field(default_factory=list)


# -- helpers the schedules' counts share ---------------------------------------------------


def ceil_div(a: int, b: int) -> int:
    return -(-a // max(1, b))


def loop_targets(nodes: list[Node]) -> tuple[list[str], dict[str, object], tuple[str, ...]]:
    """A loop's targets, the axis the fast thread index walks in each, and its stores: the
    nodes' names, their `fast_axis`, their names again."""
    names = [n.name for n in nodes]
    return names, {n.name: fast_axis(n.array_shape.dims) for n in nodes}, tuple(names)


def result_reads(counter, targets: list[str], known: frozenset[str], elements: int) -> None:
    """The loads from scratch (reduction results, derived values) that computing `targets`
    at `elements` positions makes: every known value its walk reaches, once per position (a
    broadcast read: nearby threads read the same element, which L1 serves). Counted in
    instructions and bytes, as the split schedule's partials are, not as accesses: they are
    no input of the kernel."""
    graph, w = counter.graph, counter.w
    key = ("results", tuple(targets), known)
    if key not in counter.memo:  # the kernel's, whatever the launch
        reached, seen, stack = set(), set(), list(targets)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in known:
                reached.add(name)
            elif name in counter.computed:
                stack.extend(graph.nodes[name].operands)
        counter.memo[key] = sorted(reached)
    for name in counter.memo[key]:
        shape = graph.nodes[name].array_shape
        itemsize = max(1, shape.dtype.bits // 8)
        unique = shape.size * itemsize
        w.instructions["lsu"] = w.instructions.get("lsu", 0) + elements
        w.l2_bytes += max(unique, elements * itemsize // WARP)
