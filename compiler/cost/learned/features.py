"""Features of one kernel under one CodeGen plan, as the learned cost model reads them.

A `KernelSample` is plain NumPy arrays (no torch here, so the compiler can build samples
without the model's dependencies), after Kaufman et al., "A Learned Performance Model for
Tensor Processing Units" (MLSys 2021), section 3, adapted to the GPU kernels this compiler
generates:

- the graph: one node per value the kernel computes (`kernel.computed`: owned and recomputed
  nodes, in that order) and one per value it reads from memory (`kernel.inputs`); an edge
  producer -> consumer for every operand of a computed node that is itself a node of the
  sample. Operands outside the sample (scalar constants folded into the code, plumbing) get no
  node and no edge.
- per node: the opcode (an index into `OPCODES`, embedded by the model) and the columns
  `NODE_FEATURES` below: output size and shape, element type, layout and the node's role.
- per kernel: the columns `KERNEL_FEATURES`: the CodeGenPlan (schedule, launch and thread
  mapping), the resources (ptxas' registers and shared memory when built, else estimates),
  occupancy and waves, flops and DRAM bytes, the SOL and projected times of the analytic
  models (compiler/target/sol.py, projected.py) and the device's headline figures.

Sizes, bytes, flops and times are scaled by log2(1 + x) so kernels of very different sizes
share one range; ratios (occupancy, tail fraction) stay in 0..1; categories are one-hot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from compiler.codegen.plan import CodeGenPlan
from compiler.cost.projected import Breakdown, Resources, project_kernel
from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS, Category
from compiler.kernels.plan import KINDS, Kernel
from compiler.target.devices import Device, get_device

# Index 0 is every opcode the table does not know (a newer HLO op): the model still runs.
UNKNOWN_OPCODE = "<unknown>"
OPCODES: tuple[str, ...] = (UNKNOWN_OPCODE,) + tuple(sorted(OPS))
_OPCODE_INDEX = {name: k for k, name in enumerate(OPCODES)}

DTYPE_KINDS = ("float", "sint", "uint", "pred", "complex")
# The schedule columns: the CodeGen schedules the models were trained with, in their order. A
# part of the feature format, not a list of the schedules (compiler/codegen/schedules/ has
# those): a schedule added since (phased, or a new one) lights none of these columns, and the
# thread-mapping columns below describe its plans, until a model is trained with a column of
# its own, which changes the feature names (older dataset and model files are then refused).
SCHEDULES = ("elementwise", "row-reduce-warp", "row-reduce-multirow", "row-reduce-block",
             "row-reduce-split", "column-reduce-split", "column-reduce", "transpose-tiled")
LIMITERS = ("fma", "alu", "xu", "fp64", "conv", "lsu", "shfl", "dram", "l2", "latency")

# The launch term the time features carry (log2_sol_us, log2_projected_us, log2_launch_us) and
# the samples' analytic baselines (`KernelSample.projected_us`, `sol_us`): the models predict
# a kernel timed alone, and every dataset and model so far was made when the analytic models
# added this constant to every kernel. It is a convention of the features, kept so that those
# models read the same numbers; what a lone launch really adds on a device is
# compiler/target/launch.py's alone_us.
FEATURE_LAUNCH_US = 3.0

# One name per column of `KernelSample.node_features`, in order.
NODE_FEATURES: tuple[str, ...] = (
    "log2_elements",            # elements of the output (all leaves of a tuple)
    "log2_bytes",               # bytes of the output
    "rank",                     # dimensions of the output (0 for a tuple)
    "log2_innermost_dim",       # the fastest-varying dimension's extent under the layout
    "log2_outer_elements",      # elements / innermost extent
    "dtype_bits_over_32",       # element width; 1.0 for f32
    *(f"dtype_{kind}" for kind in DTYPE_KINDS),   # one-hot element kind (none: other)
    "layout_row_major",         # 1 when the layout is the default minor-to-major order
    "is_tuple",
    "is_input",                 # read from memory (kernel.inputs)
    "is_output",                # written to memory (kernel.outputs)
    "is_recomputed",            # a cheap node owned elsewhere, computed here too
    "is_dominant",              # drives the kernel's iteration space
    "is_reduction",             # reduce / reduce-window (Category.REDUCE)
    "is_broadcast",             # a broadcast: one value expanded to a larger shape
    "log2_operands",            # operand count
)

# One name per column of `KernelSample.kernel_features`, in order.
KERNEL_FEATURES: tuple[str, ...] = (
    *(f"schedule_{name}" for name in SCHEDULES),   # one-hot CodeGenPlan.schedule (horizontal:
                                                   # its parts', weighted by their blocks)
    *(f"kind_{name}" for name in KINDS),           # one-hot fusion kernel kind
    "log2_block_size",
    "log2_grid_size",
    "vector_width",
    "log2_threads_per_row",     # log2(1 + x): 0 when the schedule has no rows
    "log2_rows_per_block",
    "log2_row_length",
    "log2_rows",
    "log2_columns",
    "log2_splits",
    "log2_tile",
    "row_cache_elements",       # registers per thread per cached value (0: no cache)
    "cooperative",
    "log2_dynamic_shared_bytes",
    "log2_scratch_bytes",
    "registers_over_64",        # per thread: ptxas' figure when built, else the estimate
    "registers_from_ptxas",     # 1 when `registers` is ptxas', 0 when estimated
    "log2_shared_bytes",        # static + dynamic per block
    "log2_spill_bytes",
    "occupancy",                # theoretical, 0..1
    "log2_blocks_per_sm",
    "log2_waves",
    "tail_fraction",
    "sms_used_fraction",        # SMs with at least one block / SMs of the device
    "log2_flops",
    "log2_dram_bytes",          # the projected model's DRAM traffic under this plan
    "log2_arithmetic_intensity",
    "log2_sol_us",
    "log2_projected_us",
    "log2_throughput_us",
    "log2_latency_us",
    "log2_launch_us",
    "log2_grid_sync_us",
    *(f"limiter_{name}" for name in LIMITERS),     # one-hot projected limiter
    "log2_device_sms",
    "log2_device_dram_gbs",
    "log2_device_clock_mhz",
    "log2_nodes",               # sample size: computed nodes + inputs
)


def feature_names() -> dict[str, list[str]]:
    """The vocabulary and feature columns, as dataset and model file headers record them: a
    sample's numbers mean something only with the names they were computed with."""
    return {"vocabulary": list(OPCODES), "node_features": list(NODE_FEATURES),
            "kernel_features": list(KERNEL_FEATURES)}


def other_features(header: dict) -> str | None:
    """Which of feature_names' lists a file's header records differently from this code
    ("node features", ...), or None when all match."""
    for key, names in feature_names().items():
        if list(header.get(key) or ()) != names:
            return key.replace("_", " ")
    return None


def opcode_id(op: str) -> int:
    return _OPCODE_INDEX.get(op, 0)


def log2p(x: float | None) -> float:
    """log2(1 + x) for a non-negative quantity (None and negatives read as 0)."""
    return math.log2(1.0 + max(0.0, float(x or 0.0)))


@dataclass
class KernelSample:
    """One kernel under one CodeGen plan: the model's input, and its target once measured."""
    opcodes: np.ndarray            # int64 [N]: OPCODES index per node
    node_features: np.ndarray      # float32 [N, len(NODE_FEATURES)]
    edge_index: np.ndarray         # int64 [2, E]: producer row -> consumer row
    kernel_features: np.ndarray    # float32 [len(KERNEL_FEATURES)]
    node_names: list[str]          # graph node per row, for debugging and the UI
    kernel: str                    # the kernel's name
    plan: str                      # CodeGenPlan.key()
    projected_us: float            # the analytic models' times (baselines to compare with)
    sol_us: float = 0.0
    target_us: float | None = None     # measured time; None until a GPU has run it
    group: str = ""                # samples of one kernel under different plans share it
    program: str = ""              # the graph it comes from: the unit of train/test splits
    family: str = ""               # the model family of the program (the harder split)
    extra: dict = field(default_factory=dict)


def _category(node: Node) -> Category | None:
    info = OPS.get(node.op)
    return info.category if info is not None else None


def _node_features(node: Node, kernel: Kernel, role: str) -> list[float]:
    leaves = node.shape.leaves()
    elements = sum(leaf.size for leaf in leaves)
    nbytes = node.shape.nbytes
    row = [log2p(elements), log2p(nbytes)]
    if node.shape.is_tuple:
        row += [0.0, 0.0, log2p(elements), 0.0] + [0.0] * len(DTYPE_KINDS) + [1.0, 1.0]
    else:
        shape = node.array_shape
        innermost = shape.dims[shape.minor_to_major[0]] if shape.rank else 1
        default = tuple(range(shape.rank - 1, -1, -1))
        row += [float(shape.rank), log2p(innermost), log2p(elements // max(1, innermost)),
                shape.dtype.bits / 32.0]
        row += [1.0 if shape.dtype.kind == kind else 0.0 for kind in DTYPE_KINDS]
        row += [1.0 if shape.minor_to_major == default else 0.0, 0.0]
    row += [
        1.0 if role == "input" else 0.0,
        1.0 if node.name in kernel.outputs else 0.0,
        1.0 if role == "recomputed" else 0.0,
        1.0 if node.name == kernel.dominant else 0.0,
        1.0 if _category(node) == Category.REDUCE else 0.0,
        1.0 if _category(node) == Category.BROADCAST else 0.0,
        log2p(len(node.operands)),
    ]
    return row


def _schedule_mix(plan: CodeGenPlan) -> tuple[list[float], CodeGenPlan]:
    """The schedule one-hot and the plan whose thread mapping the features describe. A
    horizontal plan (its parts' plans on ranges of its blocks) has no schedule of its own: its
    one-hot is each part's schedule weighted by its share of the blocks, and its mapping is
    that of the part with the most blocks; its launch (block, grid, shared memory, scratch)
    is its own, the totals."""
    if not plan.parts:
        return [1.0 if plan.schedule == name else 0.0 for name in SCHEDULES], plan
    grid = max(1, sum(part.grid_size for part in plan.parts))
    mix = [sum(part.grid_size for part in plan.parts if part.schedule == name) / grid
           for name in SCHEDULES]
    return mix, max(plan.parts, key=lambda part: part.grid_size)


def _kernel_features(kernel: Kernel, plan: CodeGenPlan, device: Device, b: Breakdown,
                     nodes: int) -> list[float]:
    row, mapping = _schedule_mix(plan)
    row += [1.0 if kernel.kind == name else 0.0 for name in KINDS]
    row += [
        math.log2(max(1, plan.block_size)), math.log2(max(1, plan.grid_size)),
        float(mapping.vector_width), log2p(mapping.threads_per_row),
        log2p(mapping.rows_per_block), log2p(mapping.row_length), log2p(mapping.rows),
        log2p(mapping.columns), log2p(mapping.splits), log2p(mapping.tile),
        float(mapping.row_cache), 1.0 if plan.cooperative else 0.0,
        log2p(plan.shared_bytes), log2p(plan.scratch_bytes),
        (b.registers or 0) / 64.0, 1.0 if b.registers_source == "ptxas" else 0.0,
        log2p(b.shared_bytes), log2p(b.spill_bytes),
        float(b.occupancy or 0.0), log2p(b.blocks_per_sm), log2p(b.waves),
        float(b.tail_fraction or 0.0), (b.sms_used or 0) / device.sm_count,
        log2p(b.flops), log2p(b.dram_bytes), log2p(b.arithmetic_intensity),
        log2p(_alone(b.sol_us)), log2p(_alone(b.projected_us)), log2p(b.throughput_us),
        log2p(b.latency_us), log2p(FEATURE_LAUNCH_US), log2p(b.grid_sync_us),
    ]
    row += [1.0 if b.limiter == name else 0.0 for name in LIMITERS]
    row += [math.log2(device.sm_count), log2p(device.dram_bytes_per_s / 1e9),
            log2p(device.clock_hz / 1e6), log2p(nodes)]
    return row


def kernel_sample(graph: Graph, kernel: Kernel, plan: CodeGenPlan, device: Device | str,
                  breakdown: Breakdown | None = None,
                  resources: Resources | None = None) -> KernelSample:
    """The sample of `kernel` emitted under `plan` on `device`. `breakdown`: its projected
    breakdown when the caller has it (rank_plans' or project_code's), else computed here with
    `resources` (ptxas'; estimated registers when None). Raises ValueError for a schedule the
    workload model does not cover, as project_kernel does."""
    if isinstance(device, str):
        device = get_device(device)
    if breakdown is None:
        breakdown = project_kernel(graph, kernel, plan, device, resources)
    roles = {name: "owned" for name in kernel.nodes}
    roles.update({name: "recomputed" for name in kernel.recomputed if name not in roles})
    roles.update({name: "input" for name in kernel.inputs if name not in roles})
    names = list(roles)
    row_of = {name: k for k, name in enumerate(names)}
    edges = []
    for name in names:
        if roles[name] == "input":
            continue
        for operand in dict.fromkeys(graph.nodes[name].operands):
            if operand in row_of:
                edges.append((row_of[operand], row_of[name]))
    nodes = [graph.nodes[name] for name in names]
    return KernelSample(
        opcodes=np.array([opcode_id(n.op) for n in nodes], dtype=np.int64),
        node_features=np.array([_node_features(n, kernel, roles[n.name]) for n in nodes],
                               dtype=np.float32).reshape(len(nodes), len(NODE_FEATURES)),
        edge_index=np.array(edges, dtype=np.int64).reshape(-1, 2).T.copy(),
        kernel_features=np.array(_kernel_features(kernel, plan, device, breakdown,
                                                  len(nodes)), dtype=np.float32),
        node_names=names, kernel=kernel.name, plan=plan.key(),
        projected_us=_alone(breakdown.projected_us),
        sol_us=_alone(breakdown.sol_us) if breakdown.sol_us is not None else 0.0)


def _alone(device_us: float | None) -> float | None:
    """A device-work time as the features give it: with FEATURE_LAUNCH_US added."""
    return None if device_us is None else float(device_us) + FEATURE_LAUNCH_US
