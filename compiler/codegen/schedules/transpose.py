"""Transposes of the innermost dimension staged through a shared-memory tile.

A transpose (or a copy that changes the layout) "moves the innermost dimension" when the
dimension its operand is contiguous along in memory is not the one the kernel's outputs are
contiguous along. Under the elementwise schedule one side of it then strides through memory: a
warp's 32 loads (or stores) touch 32 sectors. The tiled schedule, after the classic CUDA
transpose and XLA's transpose emitter, gives both sides whole sectors:

- The tile loop runs over the transpose's (the hero's) index space. Two of its dims span the
  tile: `in_dim`, along which the hero's operand is contiguous (by the operand's layout: for
  a value the kernel computes, the layout the graph gives it, as XLA's layout assignment
  does), and `out_dim`, along which the outputs are; the other dims are batch dims. A block owns an
  `edge` x `edge` tile of those two dims at one batch index (tiles are a grid-stride loop).
- Phase 1: thread (tx, ty) computes the hero's value (its operand may be any elementwise
  expression of the kernel's inputs) at in_dim = tile_in + tx, out_dim = tile_out + row for
  rows ty, ty + block_size / edge, ...: consecutive lanes read consecutive operand elements.
  It writes the value to a shared-memory tile of edge x (edge + 1) elements (the padding
  column puts the elements of one tile column in different banks).
- `__syncthreads()`; phase 2: the same thread takes out_dim = tile_out + tx, in_dim = tile_in +
  row, reads the hero's value back from the tile (the value cache then gives it to every
  output that reads the hero there, through reshapes too) and writes the outputs: consecutive
  lanes write consecutive output elements.
- Every output with the hero's element count is written in phase 2, at the hero's index when
  it has the hero's dims, else at the same row-major position; other outputs get the
  elementwise schedule's grid-stride loops after the tile loop.
- A block that does more than one tile (more tiles than MAX_GRID blocks) alternates between
  two tile buffers, so one `__syncthreads()` per tile suffices: a thread can overwrite a
  buffer in tile k + 2 only after every thread has passed tile k + 1's barrier, that is after
  every thread finished reading it in tile k.

Other transposes of the kernel with the hero's dims and in_dim are staged in the same phase 1,
each in a tile of its own, behind the same barrier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.codegen.c_syntax import CodegenUnsupported, value_ctype
from compiler.codegen.elemental import Elemental
from compiler.codegen.indexing import Index, Ix, strides
from compiler.codegen.loops import depends_on, elementwise_loops
from compiler.codegen.plan import MAX_GRID, TRANSPOSE_SCHEDULE, WARP, CodeGenPlan
from compiler.codegen.workload import Counter, ceil_div
from compiler.ir.graph import Graph, Node
from compiler.ir.shapes import ArrayShape
from compiler.kernels.plan import Kernel

SCHEDULES = (TRANSPOSE_SCHEDULE,)

# Kernels whose outputs are written by an elementwise loop: the tile loop replaces it. Kernels
# with a dominant reduction keep their reduction schedules.
TILED_KINDS = ("loop", "horizontal")


@dataclass(frozen=True)
class TransposeTile:
    """What the tiled schedule stages for one kernel (`out_dim` and `in_dim` index `dims`)."""

    hero: str                     # the transpose that drives the tile loop
    dims: tuple[int, ...]         # its logical dims: the tile loop's index space
    out_dim: int                  # the dim along which the outputs are contiguous
    in_dim: int                   # the dim along which the hero's operand is contiguous
    staged: tuple[str, ...]       # every transpose read through a tile (the hero first)
    outputs: tuple[str, ...]      # the outputs written in the tile loop

    @property
    def batch_dims(self) -> list[int]:
        return [d for d in range(len(self.dims)) if d not in (self.out_dim, self.in_dim)]

    def tile_counts(self, edge: int) -> tuple[int, int, int]:
        """(batch indices, tiles along out_dim, tiles along in_dim)."""
        batch = math.prod(self.dims[d] for d in self.batch_dims)
        return (batch, -(-self.dims[self.out_dim] // edge), -(-self.dims[self.in_dim] // edge))

    def tiles(self, edge: int) -> int:
        return math.prod(self.tile_counts(edge))

    def shared_bytes(self, graph: Graph, edge: int, double_buffered: bool) -> int:
        """The tiles of every staged transpose (`_tile_bytes` each)."""
        return sum(_tile_bytes(graph, name, edge, double_buffered) for name in self.staged)


def _value_bytes(shape: ArrayShape) -> int:
    """Bytes of the C type a value of the shape's dtype lives in (16-bit floats: float)."""
    ctype = value_ctype(shape.dtype)
    if ctype == "bool":
        return 1
    return 4 if ctype == "float" else shape.dtype.bits // 8


def _minor_dim(shape: ArrayShape) -> int | None:
    """The dim a buffer of `shape` is contiguous along: the first of its layout's
    minor-to-major order with more than one element (None when there is none)."""
    return next((d for d in shape.minor_to_major if shape.dims[d] > 1), None)


def _operand_minor(graph: Graph, node: Node) -> int | None:
    """For a transpose or a copy: the dim of its result along which its operand is
    contiguous (by the operand's layout), else None."""
    if node.op not in ("transpose", "copy") or node.shape.is_tuple:
        return None
    operand = graph.nodes[node.operands[0]].array_shape
    minor = _minor_dim(operand)
    if minor is None:
        return None
    if node.op == "copy":
        return minor
    return list(node.attrs["dimensions"]).index(minor)


def _output_minor(output: ArrayShape, dims: tuple[int, ...]) -> int | None:
    """The dim of `dims` along which an output of the same element count, written at the same
    row-major position, is contiguous: the output's minor dim itself when the dims are equal,
    else the dim with the same row-major stride."""
    minor = _minor_dim(output)
    if minor is None:
        return None
    if output.dims == dims:
        return minor
    stride = strides(output.dims)[minor]
    return next((d for d, (n, s) in enumerate(zip(dims, strides(dims)))
                 if n > 1 and s == stride), None)


def transpose_tile(graph: Graph, kernel: Kernel, hero: str | None = None
                   ) -> TransposeTile | None:
    """The tile the kernel stages (with `hero` as its hero, or the first transpose of the
    kernel that moves the innermost dimension), or None when it has none. A transpose moves it
    when the first output of its element count that reads it is contiguous along another dim
    than the transpose's operand."""
    if kernel.kind not in TILED_KINDS:
        return None
    computed = set(kernel.computed)
    outputs = [graph.nodes[n] for n in kernel.outputs if not graph.nodes[n].shape.is_tuple]
    candidates = kernel.computed if hero is None else (hero,)
    for name in candidates:
        node = graph.nodes[name]
        in_dim = _operand_minor(graph, node)
        if in_dim is None:
            continue
        dims = node.array_shape.dims
        if node.array_shape.size == 0:
            continue
        tiled = [o for o in outputs if o.array_shape.size == node.array_shape.size]
        reader = next((o for o in tiled if depends_on(graph, o.name, {name}, computed)), None)
        if reader is None:
            continue
        out_dim = _output_minor(reader.array_shape, dims)
        if out_dim is None or out_dim == in_dim:
            continue
        staged = [other for other in kernel.computed if other != name
                  and graph.nodes[other].array_shape.dims == dims
                  and _operand_minor(graph, graph.nodes[other]) == in_dim
                  and any(depends_on(graph, o.name, {other}, computed) for o in tiled)]
        return TransposeTile(hero=name, dims=dims, out_dim=out_dim, in_dim=in_dim,
                             staged=(name, *staged), outputs=tuple(o.name for o in tiled))
    return None


# Square tile edges; a tile is enumerated when the next smaller one does not cover the plane.
TRANSPOSE_TILES = (8, 16, 32)


def candidates(graph: Graph, kernel: Kernel, dominant: str) -> list[CodeGenPlan]:
    """Tiled-transpose candidates when the kernel transposes the innermost dimension (what
    qualifies is `transpose.transpose_tile`'s rule): each tile edge up to the first that
    covers the tile's plane (the two dims it spans), with edge/4, edge/2 or edge rows of
    threads (at least a warp): 32x8, 32x16 and 32x32 threads for 32-element tiles. The
    hero transpose is the plan's `dominant`."""
    tile = transpose_tile(graph, kernel)
    if tile is None:
        return []
    plane = max(tile.dims[tile.out_dim], tile.dims[tile.in_dim])
    plans = []
    for edge in TRANSPOSE_TILES:
        if edge > TRANSPOSE_TILES[0] and edge // 2 >= plane:
            break
        tiles = tile.tiles(edge)
        grid = min(MAX_GRID, tiles)
        shared = tile.shared_bytes(graph, edge, double_buffered=grid < tiles)
        for rows in sorted({edge // 4, edge // 2, edge}):
            if edge * rows >= WARP:
                plans.append(CodeGenPlan(schedule=TRANSPOSE_SCHEDULE, dominant=tile.hero,
                                         block_size=edge * rows, grid_size=grid,
                                         shared_bytes=shared, tile=edge))
    return plans


def choose(plans: list[CodeGenPlan]) -> CodeGenPlan | None:
    """The tiled-transpose plan, whenever there is one (a strided side costs a sector per
    element, the tile one barrier per tile): the largest tile enumerated (the smallest that
    covers the plane, 32 for larger planes: a warp reads a whole tile row), with the block
    nearest 256 threads (32x8 threads for 32-element tiles, each moving 4 elements per
    phase; 16x16 and 8x8 for the smaller tiles). None when there is none."""
    tiled = [p for p in plans if p.schedule == TRANSPOSE_SCHEDULE]
    if not tiled:
        return None
    edge = max(p.tile for p in tiled)
    return min((p for p in tiled if p.tile == edge), key=lambda p: abs(p.block_size - 256))


# -- emission -------------------------------------------------------------------------------


def emit(graph: Graph, kernel: Kernel, emitter: Elemental, output_nodes: list[Node],
                   buffers: dict[str, str], plan: CodeGenPlan) -> None:
    """The tile loop (see the module docstring), then grid-stride loops for other outputs."""
    tile = transpose_tile(graph, kernel, plan.dominant)
    if tile is None:
        raise CodegenUnsupported(f"no transpose of the innermost dimension at "
                                 f"'{plan.dominant}'")
    body = emitter.body
    edge, rows = plan.tile, plan.block_size // plan.tile
    if edge < 1 or rows < 1 or plan.block_size % edge:
        raise ValueError(f"a tiled transpose needs whole rows of {edge} threads: {plan.key()}")
    batch, out_tiles, in_tiles = tile.tile_counts(edge)
    total = batch * out_tiles * in_tiles
    double_buffered = plan.grid_size < total
    needed = tile.shared_bytes(graph, edge, double_buffered)
    if plan.shared_bytes < needed:
        raise ValueError(f"the tiles need {needed} bytes of shared memory: {plan.key()}")
    dims, pitch = tile.dims, edge + 1
    n_out, n_in = dims[tile.out_dim], dims[tile.in_dim]
    body.line(f"// {edge}x{edge} tiles of dims {tile.out_dim} (outputs contiguous) x "
              f"{tile.in_dim} (operand contiguous) of {list(dims)}")
    body.line("FX_SHARED_MEMORY(shared);")
    body.line(f"const int tx = threadIdx.x % {edge};  // lane within a tile row")
    body.line(f"const int ty = threadIdx.x / {edge};  // first tile row of this thread")
    emitter.used_names.update({"shared", "tx", "ty", "tile", "tile_out", "tile_in", "buffer",
                               "row", "i_out", "i_in"})
    tiles_of = {}
    offset = 0
    for name in tile.staged:
        ctype = value_ctype(graph.nodes[name].array_shape.dtype)
        pointer = emitter.fresh(f"{emitter.tag(name)}_tile")
        body.line(f"{ctype}* {pointer} = reinterpret_cast<{ctype}*>(shared + {offset});", name)
        tiles_of[name] = pointer
        offset += _tile_bytes(graph, name, edge, double_buffered)
    outputs = [n for n in output_nodes if n.name in tile.outputs]
    buffer = "buffer + " if double_buffered else ""
    loop = (f"for (int tile = {emitter.block_index}; tile < {total}; "
            f"tile += {emitter.grid_blocks}) {{")
    with body.block(loop), emitter.scope():
        batch_ix, out_ix, in_ix = emitter.delinearize(Ix.var("tile", total),
                                                      (batch, out_tiles, in_tiles))
        batch_index = emitter.delinearize(batch_ix, [dims[d] for d in tile.batch_dims])
        body.line(f"const int tile_out = {out_ix.times(edge).c()};")
        body.line(f"const int tile_in = {in_ix.times(edge).c()};")
        if double_buffered:
            body.line(f"const int buffer = (tile / {emitter.grid_blocks}) % 2 * {edge * pitch};  "
                      f"// this block's tiles alternate between two buffers")
        rows_loop = f"for (int row = ty; row < {edge}; row += {rows}) {{"
        guard = f"if (i_out < {n_out} && i_in < {n_in}) {{"
        with body.block(rows_loop), emitter.scope():
            body.line("const int i_out = tile_out + row;")
            body.line("const int i_in = tile_in + tx;  // consecutive lanes: consecutive reads")
            with body.block(guard), emitter.scope():
                index = _hero_index(tile, batch_index, n_out, n_in)
                for name in tile.staged:
                    value = emitter.value(name, index)
                    body.line(f"{tiles_of[name]}[{buffer}row * {pitch} + tx] = {value};", name)
        body.line("__syncthreads();")
        with body.block(rows_loop), emitter.scope():
            body.line("const int i_out = tile_out + tx;  // consecutive lanes: consecutive "
                      "writes")
            body.line("const int i_in = tile_in + row;")
            with body.block(guard), emitter.scope():
                _write_outputs(graph, emitter, tile, outputs, buffers,
                               _hero_index(tile, batch_index, n_out, n_in),
                               {name: f"{pointer}[{buffer}tx * {pitch} + row]"
                                for name, pointer in tiles_of.items()})
    others = [n for n in output_nodes if n.name not in tile.outputs]
    if others:
        elementwise_loops(emitter, others, buffers, plan)


def _tile_bytes(graph: Graph, name: str, edge: int, double_buffered: bool) -> int:
    """edge x (edge + 1) values (twice that when double buffered), 16-byte aligned."""
    size = edge * (edge + 1) * _value_bytes(graph.nodes[name].array_shape)
    return -(-size * (2 if double_buffered else 1) // 16) * 16


def _hero_index(tile: TransposeTile, batch_index: Index, n_out: int, n_in: int) -> Index:
    """The hero's index at (i_out, i_in) and the tile's batch index."""
    batch = iter(batch_index)
    return tuple(Ix.var("i_out", n_out) if d == tile.out_dim else
                 Ix.var("i_in", n_in) if d == tile.in_dim else next(batch)
                 for d in range(len(tile.dims)))


def _write_outputs(graph: Graph, emitter: Elemental, tile: TransposeTile, outputs: list[Node],
                   buffers: dict[str, str], index: Index, reads: dict[str, str]) -> None:
    """Phase 2 at the hero's `index`: the staged values from their tiles, then the outputs.
    An output of other dims is written at the same row-major position; the staged values are
    remembered at the index its reshapes lead back to as well."""
    staged = {name: emitter.declare(graph.nodes[name], expr) for name, expr in reads.items()}
    for name, local in staged.items():
        emitter.remember(name, index, local)
    linear = None
    if any(n.array_shape.dims != tile.dims for n in outputs):
        linear = emitter.linearize(index, tile.dims)
        for name, local in staged.items():
            emitter.remember(name, emitter.delinearize(linear, tile.dims), local)
    for node in outputs:
        dims = node.array_shape.dims
        at = index if dims == tile.dims else emitter.delinearize(linear, dims)
        emitter.store(node, buffers[node.name], at)


# -- its workload (what the projected model prices) ------------------------------------------------


def count(graph: Graph, kernel: Kernel, plan: CodeGenPlan, counter: Counter) -> None:
    """The loops of `emit`: the outputs' loop with the inputs staged through shared memory
    (coalesced both ways), a barrier per tile, and each element's trip through shared
    memory (a store and a load)."""
    w, outputs = counter.w, counter.outputs
    transposed = frozenset(kernel.inputs)
    counter.elementwise(plan, outputs, coalesced=transposed)
    size = max((n.array_shape.size for n in outputs), default=0)
    tiles = ceil_div(size, max(1, plan.tile) ** 2)
    w.barriers_per_block = ceil_div(tiles, plan.grid_size)
    w.sync_cycles_per_thread += w.barriers_per_block * counter.barrier_latency
    itemsize = max((n.array_shape.dtype.bits // 8 for n in outputs), default=4)
    w.shared_traffic_bytes += 2 * size * itemsize
    w.instructions["lsu"] = w.instructions.get("lsu", 0) + 2 * size
