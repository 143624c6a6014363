"""Kernels whose projected time is far above their speed of light, and why.

The speed of light (sol.py) assumes every byte crosses DRAM once at peak bandwidth and every
flop runs at peak; the projected model (projected.py) prices what the chosen schedule really
does. A kernel projected at OUTLIER_RATIO times its SOL or more, and at least OUTLIER_MIN_US
(below that, the launch dominates any ratio), does something the SOL does not count. Pages flag
it with the reason read off its breakdown, so a user does not have to find it:
- latency-bound: too few blocks (or threads) to hide memory latency; the grid keeps few SMs
  busy, or each thread walks a long serial loop (a reduction done by one thread);
- a compute pipe: the schedule evaluates values more often than the graph does (the
  elementwise schedule recomputes a reduction for every element that reads it) or the ops
  themselves are expensive;
- lsu: more load/store instructions than elements, from re-reads or scalar accesses;
- l2 / dram: more bytes than the SOL's, from strided (uncoalesced) accesses that fetch a sector
  per element, or from data re-read when it does not fit the L2;
- grid barriers: a cooperative kernel's synchronisations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.target.sol import SolEstimate

if TYPE_CHECKING:  # projected.py reads this module to fill a breakdown's fields
    from compiler.cost.projected import Breakdown

OUTLIER_RATIO = 20.0
OUTLIER_MIN_US = 20.0

_PIPES = {"fma": "FP32", "alu": "integer/logic", "xu": "transcendental (MUFU)",
          "fp64": "FP64", "conv": "conversion", "shfl": "shuffle"}


def ratio_to_sol(breakdown: Breakdown | None, sol: SolEstimate | None) -> float | None:
    """Projected time over speed of light (None without both)."""
    if breakdown is None or sol is None or sol.total_us <= 0:
        return None
    return breakdown.projected_us / sol.total_us


def outlier_reason(breakdown: Breakdown | None, sol: SolEstimate | None,
                   schedule: str | None = None) -> str | None:
    """Why the kernel projects OUTLIER_RATIO x its SOL or more (and OUTLIER_MIN_US or more);
    None when it does not."""
    ratio = ratio_to_sol(breakdown, sol)
    if ratio is None or ratio < OUTLIER_RATIO or breakdown.projected_us < OUTLIER_MIN_US:
        return None
    b = breakdown
    head = (f"projected {b.projected_us:.1f} µs = {ratio:.0f}x its speed of light "
            f"({sol.total_us:.1f} µs)")
    under = f" under the {schedule} schedule" if schedule else ""
    limiter = b.limiter
    if limiter == "latency":
        if b.grid is not None and b.sms_used is not None and b.sms_used < b.grid + 1 and \
                b.waves is not None and b.waves < 0.5:
            why = (f"latency-bound{under}: {b.grid} block(s) of {b.block} threads keep "
                   f"{b.sms_used} SMs busy ({b.waves:.2f} waves), too few loads in flight "
                   f"to hide DRAM latency")
        else:
            why = (f"latency-bound{under}: each thread waits on a long chain of dependent "
                   f"loads and arithmetic ({b.latency_us:.1f} µs against "
                   f"{b.throughput_us:.1f} µs of throughput), e.g. a reduction done serially "
                   f"by one thread")
    elif limiter in _PIPES:
        why = (f"bound by the {_PIPES[limiter]} pipe{under}: {b.terms_us[limiter]:.1f} µs of "
               f"instructions against {sol.compute_us:.1f} µs of compute at SOL; the "
               f"schedule evaluates values more often than the graph does (a reduction or "
               f"an expensive op recomputed for every element that reads it)")
    elif limiter == "lsu":
        why = (f"bound by load/store instructions{under} ({b.terms_us['lsu']:.1f} µs): values "
               f"re-read from memory or moved one scalar at a time")
    elif limiter == "l2":
        why = (f"bound by L2-to-SM traffic{under} ({b.terms_us['l2']:.1f} µs): strided "
               f"accesses fetch a 32-byte sector per element, or values are re-read")
    elif limiter == "dram":
        why = (f"moves {b.dram_bytes / 1e6:.1f} MB through DRAM{under} against "
               f"{sol.dram_bytes / 1e6:.1f} MB at SOL: strided accesses or re-reads of data "
               f"that does not fit the L2")
    else:
        why = f"limited by {limiter}{under}"
    if b.grid_sync_us:
        why += f"; grid barriers add {b.grid_sync_us:.1f} µs"
    return f"{head}: {why}"
