"""The launch shape the fusion strategies assume for a stitched kernel when they decide whether
a group fits one (its rows fit a block; a global stitch's whole grid is co-resident, or its
barrier would deadlock). It is a fixed, conservative shape: codegen then searches block and
grid sizes of its own (compiler/codegen/plan.py, schedules/phased.py) among those that fit.
The kernel analysis (compiler/kernels/analysis.py), which decides for both strategies
(compiler/fusion/stitch.py, cost_based/) and the horizontal schedule whether a group fits,
reads the figures here.
"""

from __future__ import annotations

# The per-thread work cap: a thread of a stitched kernel handles at most this many elements of
# the dominant's row (regional) or iteration space (global).
ELEMENTS_PER_THREAD = 8
# Regional kernels pack short rows together into blocks of about this many threads.
REGIONAL_BLOCK_THREADS = 256
# The launch shape of a global-stitch kernel, for the co-residency (deadlock) guard.
GLOBAL_BLOCK_THREADS = 512
GLOBAL_REGISTERS_PER_THREAD = 32


def global_blocks_per_sm(device) -> int:
    """Blocks of a globally stitched kernel resident on one SM at once (GLOBAL_BLOCK_THREADS
    threads of GLOBAL_REGISTERS_PER_THREAD registers each): the grid barrier's bound."""
    return min(device.max_blocks_per_sm,
               device.max_threads_per_sm // GLOBAL_BLOCK_THREADS,
               device.registers_per_sm // (GLOBAL_BLOCK_THREADS * GLOBAL_REGISTERS_PER_THREAD))


def regional_rows_per_block(device, length: int) -> int:
    """Rows a regional-stitch block of REGIONAL_BLOCK_THREADS threads holds: a row of `length`
    gets a whole number of warps, ELEMENTS_PER_THREAD elements per thread."""
    warp = device.warp_size
    row_threads = min(device.max_threads_per_block,
                      max(warp, -(-length // ELEMENTS_PER_THREAD // warp) * warp))
    return max(1, REGIONAL_BLOCK_THREADS // row_threads)
