"""CodeGen plans: how one kernel of a fusion plan maps onto threads and blocks.

A `CodeGenPlan` (AStitch's "CodeGen plan": schedule, launch dimensions, thread mapping) is a
frozen value: the emitter renders exactly one plan, the cost models price each candidate, and
its `key()` joins the kernel's node names in a build-cache key. Each schedule lives in its own
module under compiler/codegen/schedules/, which lists its candidates for a kernel (tens, not
thousands), says which one its heuristic prefers and emits it; `schedules.enumerate_plans`
and `schedules.choose_plan` walk them all. This module holds the plan itself, the constants
the schedules share, and the analyses of a kernel that both the schedules and the workload
model (compiler/cost/workload.py) read: which reductions are rows (`row_split`) or columns
(`column_split`), which share a row or column loop, what a row cache holds.

Schedules (their modules say how each maps threads):
- "elementwise": one thread per output element, `vector_width` consecutive elements per
  thread (schedules/elementwise.py);
- "row-reduce-warp" / "row-reduce-multirow" / "row-reduce-block": `threads_per_row` threads
  per row of the dominant reduction, with an optional register `row_cache`, and `cooperative`
  plans that add a column phase behind a grid barrier (global stitching; schedules/rows.py);
- "column-reduce": a tile of `column_tile` output columns per block (schedules/columns.py);
- "row-reduce-split" / "column-reduce-split": task splitting, a row or a column's reduced
  elements cut into `splits` chunks reduced by different blocks (schedules/split.py);
- "horizontal": the independent parts of a `horizontal` kernel in one launch, each under
  the plan it would get as a kernel of its own (`parts`), on its own range of the launch's
  blocks (`part_ranges`; schedules/horizontal.py);
- "transpose-tiled": a transpose of the innermost dimension staged through shared-memory
  tiles of `tile` x `tile` elements (schedules/transpose.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from compiler.fusion.plan import Kernel
from compiler.ir.graph import Graph

BLOCK_SIZES = (128, 256, 512, 1024)
VECTOR_WIDTHS = (1, 2, 4)
WARP = 32
# Grid-stride loops cover any size, so grids are capped (a few waves on the largest GPU).
MAX_GRID = 65535
ROW_SCHEDULES = ("row-reduce-warp", "row-reduce-multirow", "row-reduce-block")
COLUMN_SCHEDULE = "column-reduce"
# Task splitting: a row (or a column's reduced elements) is cut into `splits` chunks reduced by
# different blocks, combined in a second step (schedules/split.py).
SPLIT_SCHEDULES = ("row-reduce-split", "column-reduce-split")
# A transpose of the innermost dimension staged through a shared-memory tile
# (schedules/transpose.py).
TRANSPOSE_SCHEDULE = "transpose-tiled"
# Independent parts of one launch, each under its own plan on its own range of blocks
# (schedules/horizontal.py).
HORIZONTAL_SCHEDULE = "horizontal"
COLUMN_BLOCK_SIZES = (64, 128, 256, 512, 1024)
# One block per SM of the smallest GPU the explorer targets (an L4 has 58 SMs): co-resident
# anywhere at the block sizes used, whatever the registers.
COOPERATIVE_GRID = 58
# ... and at most this many threads in all: the CPU emulator runs a cooperative grid's threads
# as fibers all at once, so larger grids cannot be checked there (see the report's "left").
COOPERATIVE_THREADS = 8192
# The most row elements a thread keeps in registers per cached value. Softmax and layer norm
# cache two values: 16 registers at 8 (ptxas: at most 48 in all, no spills, sm_80 and sm_90).
# At 16 they would take 32 of the 64 a thread has under __launch_bounds__(1024), with about 30
# more for indices, accumulators and the epilogue: at the edge of spilling.
ROW_CACHE_MAX = 8
# A kernel whose plan has `scratch_bytes` takes one more parameter, last: that many bytes of
# global memory the launch allocates and zeroes once (cooperative plans pass row results
# through it, split plans their partials and tickets). Its role is "output" (a writable
# pointer) and its node "" (no graph value).
SCRATCH = "scratch"


@dataclass(frozen=True)
class CodeGenPlan:
    schedule: str              # see the module docstring
    dominant: str              # the node whose iteration space drives the kernel
    block_size: int
    grid_size: int
    vector_width: int = 1      # elements per thread per iteration (elementwise)
    threads_per_row: int = 0   # row schedules: threads that share one row
    rows_per_block: int = 0    # row schedules: block_size // threads_per_row
    shared_bytes: int = 0      # dynamic shared memory the launch passes
    rows: int = 0              # row schedules: number of rows (reduce output elements)
    row_length: int = 0        # row and column schedules: elements reduced into each output
    columns: int = 0           # column schedule: reduce output elements
    column_tile: int = 0       # column schedule: columns per block (block_size / row groups)
    cooperative: bool = False   # launched cooperatively: the kernel calls fx_grid_sync()
    scratch_bytes: int = 0      # global scratch the launch allocates (the `scratch` parameter)
    splits: int = 0             # split schedules: chunks each row / column is cut into
    tile: int = 0               # transpose schedule: the square tile's edge in elements
    # Row schedules: elements of its row each thread keeps in registers, ceil(row_length /
    # threads_per_row); 0: no register cache, each loop over the row recomputes its values.
    row_cache: int = 0
    # Horizontal schedule: each part's own plan, in part order (schedules/horizontal.py); part
    # k runs on the blocks [sum of the earlier parts' grids, + its grid): `part_ranges`.
    parts: tuple[CodeGenPlan, ...] = ()

    def key(self) -> str:
        """Every field; `parts` only when there are some, so that the keys of plans without
        (every schedule but the horizontal one) read as they did before it existed."""
        fields = [f"{k}={v}" for k, v in asdict(self).items() if k != "parts"]
        if self.parts:
            fields.append("parts=[" + "; ".join(part.key() for part in self.parts) + "]")
        return ",".join(fields)

    def to_dict(self) -> dict:
        """The fields as JSON holds them; `parts` (a list of the parts' dicts) only when there
        are some, as `key` does."""
        out = {k: v for k, v in asdict(self).items() if k != "parts"}
        if self.parts:
            out["parts"] = [part.to_dict() for part in self.parts]
        return out

    def part_ranges(self) -> list[tuple[int, int]]:
        """Horizontal: each part's blocks [start, end) of the launch, in part order."""
        ranges, start = [], 0
        for part in self.parts:
            ranges.append((start, start + part.grid_size))
            start += part.grid_size
        return ranges


def row_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    """(rows, row_length) when the reduce's reduced dimensions are its operand's innermost
    ones (in logical order), else None."""
    node = graph.nodes[reduce_name]
    if node.op != "reduce" or node.attrs.get("reducer") is None or len(node.operands) != 2:
        return None
    source = graph.nodes[node.operands[0]].array_shape
    dims = sorted(node.attrs["dimensions"])
    if dims != list(range(source.rank - len(dims), source.rank)):
        return None
    length = math.prod(source.dims[d] for d in dims)
    return math.prod(source.dims) // max(length, 1), length


def column_split(graph: Graph, reduce_name: str) -> tuple[int, int] | None:
    """(columns, reduced length) of a reduce whose reduced dimensions are not all innermost
    (those are rows: `row_split`), else None."""
    node = graph.nodes[reduce_name]
    if node.op != "reduce" or node.attrs.get("reducer") is None or len(node.operands) != 2:
        return None
    if row_split(graph, reduce_name) is not None:
        return None
    source = graph.nodes[node.operands[0]].array_shape
    length = math.prod(source.dims[d] for d in node.attrs["dimensions"])
    return node.array_shape.size, length


def elementwise_size(graph: Graph, kernel: Kernel) -> int:
    """Elements of the largest output: the iteration space the launch is sized for."""
    sizes = [graph.nodes[name].array_shape.size for name in kernel.outputs
             if not graph.nodes[name].shape.is_tuple]
    return max(sizes, default=1)


def next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def row_reductions(graph: Graph, kernel: Kernel, rows: int, length: int) -> list[str]:
    """The kernel's reductions over the same rows (rows x length), in graph order: a row
    schedule's phases."""
    order = {name: k for k, name in enumerate(graph.nodes)}
    names = [n for n in kernel.computed if graph.nodes[n].op == "reduce"
             and row_split(graph, n) == (rows, length)]
    return sorted(names, key=order.__getitem__)


def row_cache_reads(graph: Graph, kernel: Kernel, reductions: list[str],
                    wide: list[str]) -> list[frozenset[str]]:
    """For each loop over a row (a phase per reduction of `reductions`, then the epilogue
    writing the `wide` outputs): the values it takes from the row cache. Walking a loop's
    targets through their operands, the first values reached that an earlier loop evaluated
    (loaded or computed) are read from the cache, and nothing behind them is walked; earlier
    phases' row results are known already. Only these frontier values are cached, not what a
    later loop does not need."""
    computed = set(kernel.computed)
    evaluated: set[str] = set()
    reads = []
    loops = [[graph.nodes[name].operands[0]] for name in reductions] + [list(wide)]
    for k, targets in enumerate(loops):
        known = set(reductions[:k])
        frontier, seen, stack = set(), set(), list(targets)
        while stack:
            name = stack.pop()
            node = graph.nodes[name]
            if name in seen or name in known or \
                    (node.op == "constant" and node.array_shape.size == 1):
                continue
            seen.add(name)
            if name in evaluated:
                frontier.add(name)
            elif name in computed:
                stack.extend(node.operands)
        evaluated |= seen
        reads.append(frozenset(frontier))
    return reads


def global_reductions(graph: Graph, kernel: Kernel) -> list[str]:
    """The reductions a row-scheduled `stitch-global` kernel leaves to its second phase: the
    first column reduction and those sharing its loop."""
    if kernel.kind != "stitch-global":
        return []
    first = next((n for n in kernel.computed if column_split(graph, n) is not None), None)
    return column_reductions(graph, kernel, first) if first else []


def _column_key(graph: Graph, name: str) -> tuple | None:
    """Reductions with equal keys share a column loop: the operand's dims, the reduced dims."""
    if column_split(graph, name) is None:
        return None
    node = graph.nodes[name]
    source = graph.nodes[node.operands[0]].array_shape
    return (source.dims, tuple(sorted(node.attrs["dimensions"])))


def column_reductions(graph: Graph, kernel: Kernel, dominant: str) -> list[str]:
    """The kernel's reductions that share the dominant's column loop, in kernel order."""
    key = _column_key(graph, dominant)
    return [name for name in kernel.computed if _column_key(graph, name) == key]
