"""The "horizontal" schedule: independent parts of one launch, each under a schedule of its own.

A `horizontal` kernel (compiler/kernels/plan.py KINDS) packs parts that share no computed value
into one launch, as XLA's horizontal loop fusion does. Each part is scheduled as if it were a
kernel of its own, and runs on a range of the launch's blocks:

- Parts (`horizontal_parts`): the connected components of the kernel's owned nodes, two owned
  nodes joined when one reads the other, directly or through recomputed nodes. A recomputed
  node (a cheap value the fuser duplicates, a broadcast of a parameter) belongs to every part
  that reads it, so two parts reading the same broadcast stay apart and each computes it.
  Parts are ordered by their first owned node's graph position. Each is a `Kernel`: its owned
  and recomputed nodes, the kernel's inputs it reads, the kernel's outputs it owns.
- A part's kind and dominant are the kernel analysis's (compiler/kernels/analysis.py,
  `part_kind`: from scratch, `moved` rows counting as read across rows, as the cost fuser
  counts them, and no shared-memory fit: the row schedules keep no row in shared memory). A
  `stitch-global` part (reductions of several row spaces, a result read across rows, a
  computed init value) needs a grid barrier, which would stop every other part's blocks too,
  so such a kernel gets no horizontal plan. A part without a reduction is dominated by its
  largest output.
- Candidates: at most two per block size of BLOCK_SIZES (blockDim is uniform). In the
  first, every part gets the plan closest to the one its own heuristic (`choose_plan` over
  its candidates) prefers: the same schedule and variant (vector width, threads per row or
  a block per row, row cache, tile, splits) at that block size when there is one, else the
  same schedule, else the first in PREFERENCE order; no cooperative plans. In the second
  (when it differs), every part with reductions takes instead its plan of that schedule
  module over the most blocks (a block per row rather than a warp, with its row cache when
  it has one): beside other parts the heuristic's warp per row can leave a reduction part
  with long per-thread latency, and the projected model ranks the two. A block size some
  part has no plan for is skipped. Part k owns the blocks [start_k, start_k + grid_k), its
  own grid as its schedule caps it; the plan's grid is the sum (up to MAX_GRID per part:
  gridDim.x allows 2^31 - 1 blocks), its dynamic shared memory the largest part's (a block
  runs one part, so every part starts at offset 0), its global scratch the parts' slices
  end to end (16-byte aligned).

Emission: `if (blockIdx.x >= start && blockIdx.x < end) { ... }` per part (all threads of a
block take the same branch, so a part's `__syncthreads()` is safe), in which the part's
schedule sees `part_block = blockIdx.x - start` as its block index and its own grid size
(`Elemental.block_index`, `grid_blocks`, `scratch`), in a value-cache scope of its own, with
the C names of the other parts' branches free for reuse. Outputs keep their `out<k>`.
"""

from __future__ import annotations

from dataclasses import replace

# The registry (schedules/__init__.py) imports this module while it is being initialised; its
# functions are looked up when a plan is made or emitted, by then it is complete.
from compiler.codegen import schedules as registry
from compiler.codegen.elemental import Elemental
from compiler.codegen.plan import BLOCK_SIZES, HORIZONTAL_SCHEDULE, SCRATCH, CodeGenPlan
from compiler.codegen.workload import Counter
from compiler.ir.graph import Graph
from compiler.kernels.analysis import independent_parts, part_kind
from compiler.kernels.plan import Kernel

SCHEDULES = (HORIZONTAL_SCHEDULE,)

# Kinds a part may have under this schedule (a `stitch-global` part needs a grid barrier).
PART_KINDS = ("loop", "input", "stitch-regional")


# -- parts ------------------------------------------------------------------------------------


def horizontal_parts(graph: Graph, kernel: Kernel) -> list[Kernel]:
    """The kernel's independent parts, in order, each a Kernel with its kind and dominant
    (the module docstring says how they are found: kernels/analysis.independent_parts)."""
    return [_part(graph, kernel, k, names, recomputed) for k, (names, recomputed)
            in enumerate(independent_parts(graph, kernel.nodes, kernel.recomputed))]


def _part(graph: Graph, kernel: Kernel, k: int, names: list[str],
          recomputed: tuple[str, ...]) -> Kernel:
    """Part `k` of the kernel: its owned `names` and the recomputed nodes they read."""
    computed = (*names, *recomputed)
    read = {o for name in computed for o in graph.nodes[name].operands}
    kind, dominant = part_kind(graph, computed)
    owned = set(names)
    outputs = tuple(n for n in kernel.outputs if n in owned)
    if dominant is None:  # the largest output, the first on a tie
        dominant = max(outputs or tuple(names),
                       key=lambda n: sum(leaf.size for leaf in graph.nodes[n].shape.leaves()))
    return Kernel(name=f"{kernel.name}.part{k}", kind=kind, nodes=tuple(names),
                  recomputed=recomputed, inputs=tuple(v for v in kernel.inputs if v in read),
                  outputs=outputs, dominant=dominant,
                  sol=None)  # a part is priced only inside its kernel (its `count`, below)


# -- candidates -------------------------------------------------------------------------------


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """For a `horizontal` kernel whose parts all have a kind of PART_KINDS: one plan per block
    size at which every part has a plan (module docstring)."""
    if kernel.kind != "horizontal":
        return []
    parts = horizontal_parts(graph, kernel)
    if any(part.kind not in PART_KINDS or not part.outputs for part in parts):
        return []
    choices = [_part_choices(graph, part) for part in parts]
    if not all(choices):
        return []
    out = []
    for block in BLOCK_SIZES:
        if any(block not in choice for choice in choices):
            continue
        closest = [choice[block][0] for choice in choices]
        spread = [choice[block][1] for choice in choices]
        for chosen in (closest, spread) if spread != closest else (closest,):
            out.append(CodeGenPlan(
                schedule=HORIZONTAL_SCHEDULE, dominant=dominant, block_size=block,
                grid_size=sum(p.grid_size for p in chosen),
                shared_bytes=max(p.shared_bytes for p in chosen),
                scratch_bytes=sum(_aligned(p.scratch_bytes) for p in chosen),
                parts=tuple(chosen)))
    return out


def part_key(part: Kernel) -> tuple:
    """What identifies a part among the horizontal kernels of a graph: the fusion search
    tries one group beside many others, and its plans and analyses stay the same."""
    return (part.kind, part.nodes, part.recomputed, part.outputs, part.dominant)


def _part_choices(graph: Graph, part: Kernel) -> dict[int, tuple[CodeGenPlan, CodeGenPlan]]:
    """For each block size at which the part has a plan: the plan closest to the one its
    heuristic prefers (`_closest`) and that plan spread over the most blocks (`_spread`; the
    same for a loop part). Empty when the part has no plan but cooperative ones. Remembered
    with the graph (`part_key`)."""
    known = graph.analysis_cache("horizontal.part_choices")
    key = part_key(part)
    if key not in known:
        plans = [p for p in registry.enumerate_plans(graph, part) if not p.cooperative]
        choices = {}
        if plans:
            preferred = registry.choose_plan(plans)
            variants = {id(p): _variant(p) for p in plans}
            for block in BLOCK_SIZES:
                closest = _closest(plans, preferred, block, variants)
                if closest is not None:
                    spread = closest if part.kind == "loop" else _spread(plans, closest)
                    choices[block] = (closest, spread)
        known[key] = choices
    return known[key]


def _spread(plans: list[CodeGenPlan], chosen: CodeGenPlan) -> CodeGenPlan:
    """Among `plans` of `chosen`'s block size and schedule module, the one over the most
    blocks (a block per row rather than a warp), with its row cache when it has one."""
    module = next(m for m in registry.PREFERENCE if chosen.schedule in m.SCHEDULES)
    same = [p for p in plans if p.block_size == chosen.block_size
            and p.schedule in module.SCHEDULES]
    return max(same, key=lambda p: (p.grid_size, p.row_cache > 0, p == chosen))


def _variant(plan: CodeGenPlan) -> CodeGenPlan:
    """What a heuristic chose in `plan`, apart from what follows from its block size."""
    return replace(plan, block_size=0, grid_size=0, rows_per_block=0, shared_bytes=0,
                   scratch_bytes=0, row_cache=min(plan.row_cache, 1),
                   threads_per_row=0 if plan.threads_per_row == plan.block_size
                   else plan.threads_per_row)


def _closest(plans: list[CodeGenPlan], preferred: CodeGenPlan, block: int,
             variants: dict[int, CodeGenPlan]) -> CodeGenPlan | None:
    """Among `plans` of `block` threads, the one closest to `preferred` (module docstring).
    `variants`: each plan's `_variant`, by id."""
    at = [p for p in plans if p.block_size == block]
    if not at:
        return None
    order = {name: k for k, module in enumerate(registry.PREFERENCE)
             for name in module.SCHEDULES}
    wanted = _variant(preferred)
    return min(at, key=lambda p: (variants[id(p)] != wanted, p.schedule != preferred.schedule,
                                  order.get(p.schedule, len(order))))


def _aligned(size: int) -> int:
    return -(-size // 16) * 16


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """256 threads (the block size most parts' heuristics pick), else the first block size
    every part has a plan for; None without horizontal plans."""
    horizontal = [p for p in plans if p.schedule == HORIZONTAL_SCHEDULE]
    if not horizontal:
        return None
    return next((p for p in horizontal if p.block_size == 256), horizontal[0])


# -- emission ---------------------------------------------------------------------------------


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
         buffers: dict[str, str], plan: CodeGenPlan) -> None:
    """Each part's schedule in a branch on its block range (module docstring)."""
    parts = horizontal_parts(graph, kernel)
    if len(parts) != len(plan.parts):
        raise ValueError(f"{kernel.name} has {len(parts)} parts, the plan {len(plan.parts)}")
    body = emitter.body
    names = set(emitter.used_names) | {"part_block"}
    defaults = (emitter.block_index, emitter.grid_blocks, emitter.scratch)
    scratch = 0
    for k, (part, sub, (start, end)) in enumerate(zip(parts, plan.parts, plan.part_ranges())):
        if sub.block_size != plan.block_size or sub.cooperative:
            raise ValueError(f"part {k} of a horizontal plan needs a non-cooperative plan of "
                             f"{plan.block_size} threads: {sub.key()}")
        outputs = [graph.nodes[n] for n in part.outputs]
        body.line(f"// part {k}: blocks [{start}, {end}), a {part.kind} part under the "
                  f"{sub.schedule} schedule, writing "
                  + ", ".join(buffers[n.name] for n in outputs))
        condition = f"blockIdx.x < {end}" if start == 0 else \
            f"blockIdx.x >= {start} && blockIdx.x < {end}"
        with body.block(f"if ({condition}) {{"), emitter.scope():
            body.line("const int part_block = blockIdx.x" + (f" - {start};" if start else ";"))
            emitter.used_names = set(names)
            emitter.block_index, emitter.grid_blocks = "part_block", str(sub.grid_size)
            emitter.scratch = f"{SCRATCH} + {scratch}" if scratch else SCRATCH
            registry.emitter_of(sub.schedule)(graph, part, emitter, outputs, buffers, sub)
        scratch += _aligned(sub.scratch_bytes)
    emitter.block_index, emitter.grid_blocks, emitter.scratch = defaults


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The parts' workloads under their own plans, combined. Instructions, bytes, accesses and
    shared-memory traffic are summed (a value two parts read comes from DRAM once, while it
    fits in L2); the launch's grid, block and shared memory are the plan's (the sum of the
    parts' grids, the shared block size, the largest part's shared memory).

    Latency: the parts' blocks share the SMs' block slots, each part's for as long as its
    thread takes. So a wave of the launch lasts the mean of its blocks' thread times (the
    latency and sync cycles per thread are the parts' means weighted by their grids: the
    projected model's ceil(waves) x cycles is then the parts' block-cycles over the slots),
    and the launch lasts at least as long as the slowest part's thread
    (`slowest_thread_cycles`), however few waves it has. Taking the slowest part's thread
    for every wave instead would charge a small, slow part (a row reduction beside a large
    convert) once per wave of the large part's blocks. Iterations, the dependency chain and
    barriers per block are the most any part's thread or block has."""
    w, memo, device = counter.w, counter.memo, counter.device
    parts = memo.get(("horizontal parts",))
    if parts is None:  # the same for every candidate plan of the kernel
        parts = memo[("horizontal parts",)] = horizontal_parts(graph, kernel)
    if len(parts) != len(plan.parts):
        raise ValueError(f"{kernel.name} has {len(parts)} parts, the plan {len(plan.parts)}")
    read: set[str] = set()
    # A part's analyses are its own, whatever else shares the launch: the fusion search tries
    # a group beside many others (`part_key`), so they are kept with the graph.
    part_memos = graph.analysis_cache(f"workload.parts.{device.name}")
    grid = max(1, sum(sub.grid_size for sub in plan.parts))
    for part, sub in zip(parts, plan.parts):
        pw = registry.kernel_workload(graph, part, sub, device,
                                      part_memos.setdefault(part_key(part), {}), read)
        for pipe, n in pw.instructions.items():
            w.instructions[pipe] = w.instructions.get(pipe, 0) + n
        w.dram_read_bytes += pw.dram_read_bytes
        w.dram_write_bytes += pw.dram_write_bytes
        w.l2_bytes += pw.l2_bytes
        w.shared_traffic_bytes += pw.shared_traffic_bytes
        w.accesses.extend(pw.accesses)
        w.barriers_per_block = max(w.barriers_per_block, pw.barriers_per_block)
        w.grid_syncs += pw.grid_syncs
        w.iterations_per_thread = max(w.iterations_per_thread, pw.iterations_per_thread)
        w.chain_cycles_per_iteration = max(w.chain_cycles_per_iteration,
                                           pw.chain_cycles_per_iteration)
        share = sub.grid_size / grid
        # A part's loops that only its first blocks run count here as all its blocks'.
        part_cycles = pw.latency_cycles_per_thread + sum(c for _, c in pw.few_block_loops)
        w.latency_cycles_per_thread += share * part_cycles
        w.sync_cycles_per_thread += share * pw.sync_cycles_per_thread
        w.slowest_thread_cycles = max(w.slowest_thread_cycles,
                                      part_cycles + pw.sync_cycles_per_thread)
