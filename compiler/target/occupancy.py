"""Theoretical occupancy: how many blocks of a kernel one SM holds at once, and what binds.

The rules are those of NVIDIA's occupancy calculator, `cudaOccMaxActiveBlocksPerMultiprocessor`
in the toolkit's cuda_occupancy.h (the same rules as the CUDA Occupancy Calculator and the
runtime's cudaOccupancyMaxActiveBlocksPerMultiprocessor); tests/compiler/test_occupancy.py
compiles that header and compares the two on thousands of launches. The figures per compute
capability come from `Device` (devices.py); the few the Device does not carry are below.
docs/cost-models.md ("Occupancy") has the rules with the figures per architecture.

A block can be resident only when all of these hold; each gives a number of blocks per SM:

- warps: a block takes ceil(threads / 32) warp slots; an SM has `max_warps_per_sm`.
- registers: a warp is given registers_per_thread x 32 registers rounded up to the allocation
  unit (256). The register file is split evenly between the SM's 4 sub-partitions and a warp
  lives in one of them, so an SM holds 4 x floor((registers per SM / 4) / registers per warp)
  warps: 40 registers per thread give 48 warps, not floor(65536 / 1280) = 51.
- shared memory: a block is given static + dynamic shared memory plus what the runtime
  reserves per block (1 KiB from 8.0 on), rounded up to the allocation unit (256 B on 7.x,
  128 B on 8.x and 9.x). The SM has as much shared memory as the L1/shared split (the
  "carveout") gives; only a few sizes are supported per architecture (SHARED_MEMORY_CARVEOUTS_KIB).
- blocks: at most `max_blocks_per_sm`.
- barriers (9.0): an SM has 2 x max_blocks_per_sm named barriers to share between blocks.

The blocks per SM are the smallest of these; occupancy = active warps / max warps per SM.

The carveout. With no preference the calculator gives the SM the largest supported split (the
driver sets the split per launch so that shared memory does not limit occupancy; which size it
picks is not documented). With a preference
(cudaFuncAttributePreferredSharedMemoryCarveout, a percentage of the largest split), the split
is that percentage rounded up to a supported size; when that holds not even one block, the
smallest supported size that holds one is used instead. `min_carveout_bytes` reports the
smallest supported size that keeps the resulting occupancy.

A launch that cannot run at all raises `LaunchLimitError`: more threads than a block may have,
more registers per thread than ptxas can allocate, more registers than one block may have
(the launch check rounds a block's warps up to a multiple of the 4 sub-partitions), or more
shared memory than one block may have (48 KiB unless the kernel opts in to more with
cudaFuncAttributeMaxDynamicSharedMemorySize, as compiler/runtime/gpu.py does).

Where this differs from cuda_occupancy.h: the header accepts 256 registers per thread on 7.0
and later, ptxas never allocates more than 255 (the Programming Guide's limit, which the
Device carries), so 256 is refused here. Partitioned global caching (5.2 and 6.x only) and
virtual resources (10.0 and later) do not apply to any device in the table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compiler.limits import format_bytes
from compiler.target.devices import KIB, Device

# Shared memory per SM that the L1/shared split can be set to, in KiB, per compute capability:
# CUDA C++ Programming Guide, compute capability 7.x / 8.x / 9.0 sections ("Shared Memory"),
# and cudaOccAlignUpShmemSizeVoltaPlus in cuda_occupancy.h. The largest is the Device's
# shared_memory_per_sm_bytes.
SHARED_MEMORY_CARVEOUTS_KIB: dict[tuple[int, int], tuple[int, ...]] = {
    (7, 0): (0, 8, 16, 32, 64, 96),
    (8, 0): (0, 8, 16, 32, 64, 100, 132, 164),
    (8, 9): (0, 8, 16, 32, 64, 100),
    (9, 0): (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
}

# Register file partitions per SM (warp schedulers, each with a quarter of the registers):
# cudaOccSubPartitionsPerMultiprocessor in cuda_occupancy.h (4 for 7.x to 9.x); the
# architecture whitepapers' SM figures show four processing blocks.
SUB_PARTITIONS_PER_SM = 4

# Named barriers per resident-block slot, where cuda_occupancy.h counts them as a limit
# (cudaOccMaxBlocksPerSMBlockBarrierLimit: from 9.0 on; 2 per slot on 9.0).
BARRIERS_PER_BLOCK_SLOT: dict[tuple[int, int], int] = {(9, 0): 2}

# bar.sync takes barrier ids 0-15 (PTX ISA, "bar, barrier"): ptxas never reports more.
MAX_BARRIERS_PER_BLOCK = 16

# The limits in the order ties are named (cuda_occupancy.h's cudaOccLimitingFactor order).
LIMITS = ("warps", "registers", "shared_memory", "blocks", "barriers")

# What `LaunchLimitError.limit` names.
THREADS_PER_BLOCK = "threads per block"
REGISTERS_PER_THREAD = "registers per thread"
REGISTERS_PER_BLOCK = "registers per block"
SHARED_MEMORY_PER_BLOCK = "shared memory per block"


class LaunchLimitError(ValueError):
    """A launch the device cannot run at all: `limit` is what it exceeds (one of the names
    above), `requested` what the launch needs and `allowed` the device's maximum."""

    def __init__(self, message: str, limit: str, requested: int, allowed: int):
        super().__init__(message)
        self.limit = limit
        self.requested = requested
        self.allowed = allowed


@dataclass(frozen=True)
class Occupancy:
    device: str
    # the launch
    threads_per_block: int
    registers_per_thread: int
    shared_static_bytes: int
    shared_dynamic_bytes: int
    carveout_percent: int | None    # the preference; None: the driver's choice
    barriers_per_block: int
    # what a block is given
    warps_per_block: int
    registers_per_block: int        # registers per warp (rounded up to the unit) x warps
    shared_bytes_per_block: int     # static + dynamic + reserved, rounded up to the unit
    carveout_bytes: int             # shared memory per SM the shared-memory limit assumes
    min_carveout_bytes: int         # the smallest supported carveout that keeps blocks_per_sm
    # blocks per SM each limit allows; None where it sets no limit
    blocks_limit_warps: int
    blocks_limit_registers: int | None       # None: no registers used
    blocks_limit_shared_memory: int | None   # None: no shared memory at all (7.x only)
    blocks_limit_blocks: int
    blocks_limit_barriers: int | None        # None: no barriers, or not a limit before 9.0
    # the result
    blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float                # active warps / max warps per SM, 0..1
    limiter: str                    # the first of `limiters`
    limiters: tuple[str, ...]       # every limit equal to blocks_per_sm, in LIMITS order

    @property
    def summary(self) -> str:
        """'theoretical occupancy 62.5 %, limited by registers (40 per thread)'."""
        return (f"theoretical occupancy {100 * self.occupancy:.4g} %, "
                f"limited by {self._limiter_phrase()}")

    def _limiter_phrase(self) -> str:
        if self.limiter == "warps":
            return f"warps ({self.warps_per_block} per block, {self.max_warps_per_sm} per SM)"
        if self.limiter == "registers":
            return f"registers ({self.registers_per_thread} per thread)"
        if self.limiter == "shared_memory":
            return f"shared memory ({format_bytes(self.shared_bytes_per_block)} per block)"
        if self.limiter == "blocks":
            return f"blocks per SM ({self.blocks_limit_blocks} at most)"
        return f"barriers ({self.barriers_per_block} per block)"

    def to_dict(self) -> dict:
        result = dataclasses.asdict(self)
        result["limiters"] = list(self.limiters)
        result["summary"] = self.summary
        return result


def occupancy(device: Device, threads_per_block: int, registers_per_thread: int,
              shared_static_bytes: int = 0, shared_dynamic_bytes: int = 0, *,
              carveout_percent: int | None = None, shared_opt_in: bool = True,
              barriers_per_block: int = 1) -> Occupancy:
    """The theoretical occupancy of a launch of `threads_per_block` threads, each using
    `registers_per_thread` registers (ptxas' "Used N registers"), with `shared_static_bytes`
    (ptxas' "N bytes smem") and `shared_dynamic_bytes` (the launch's) of shared memory per
    block.

    `carveout_percent`: the preferred shared-memory carveout, 0-100 % of the largest (None: no
    preference). `shared_opt_in`: the kernel's dynamic shared memory limit is raised to what
    the launch asks for, so a block may have up to `shared_memory_per_block_bytes`; False:
    CUDA's default limit, `shared_memory_per_block_default_bytes`. `barriers_per_block`: named
    barriers the kernel uses (ptxas' "used N barriers"; the CUDA runtime assumes 1).

    Raises LaunchLimitError when the launch cannot run at all; ValueError for impossible
    arguments (negative sizes, a preference outside 0-100).
    """
    _check_arguments(threads_per_block, registers_per_thread, shared_static_bytes,
                     shared_dynamic_bytes, carveout_percent, barriers_per_block)
    carveouts = _carveouts(device)

    if threads_per_block > device.max_threads_per_block:
        raise LaunchLimitError(
            f"a block of {threads_per_block} threads is too large: {device.name} allows "
            f"{device.max_threads_per_block} threads per block",
            THREADS_PER_BLOCK, threads_per_block, device.max_threads_per_block)
    warps_per_block = -(-threads_per_block // device.warp_size)
    blocks_limit_warps = device.max_warps_per_sm // warps_per_block

    registers_per_warp = _round_up(registers_per_thread * device.warp_size,
                                   device.register_allocation_unit)
    _check_registers(device, registers_per_thread, registers_per_warp, warps_per_block)
    blocks_limit_registers = None
    if registers_per_warp:
        registers_per_sub_partition = device.registers_per_sm // SUB_PARTITIONS_PER_SM
        warps_per_sm = (registers_per_sub_partition // registers_per_warp) * SUB_PARTITIONS_PER_SM
        blocks_limit_registers = warps_per_sm // warps_per_block

    shared_bytes_per_block = _round_up(
        shared_static_bytes + shared_dynamic_bytes + device.shared_memory_reserved_per_block_bytes,
        device.shared_memory_allocation_unit_bytes)
    _check_shared_memory(device, shared_static_bytes, shared_dynamic_bytes, shared_opt_in)
    carveout_bytes = _carveout(device, carveouts, carveout_percent, shared_bytes_per_block)
    blocks_limit_shared_memory = _blocks_in(carveout_bytes, shared_bytes_per_block)

    blocks_limit_barriers = None
    barriers_per_slot = BARRIERS_PER_BLOCK_SLOT.get(device.compute_capability)
    if barriers_per_slot and barriers_per_block:
        barriers_per_sm = barriers_per_slot * device.max_blocks_per_sm
        blocks_limit_barriers = barriers_per_sm // barriers_per_block

    limits = dict(zip(LIMITS, (blocks_limit_warps, blocks_limit_registers,
                               blocks_limit_shared_memory, device.max_blocks_per_sm,
                               blocks_limit_barriers)))
    blocks_per_sm = min(limit for limit in limits.values() if limit is not None)
    limiters = tuple(name for name, limit in limits.items() if limit == blocks_per_sm)
    active_warps = blocks_per_sm * warps_per_block
    min_carveout_bytes = next(size for size in carveouts
                              if _fits(size, shared_bytes_per_block, blocks_per_sm))
    return Occupancy(
        device=device.name,
        threads_per_block=threads_per_block,
        registers_per_thread=registers_per_thread,
        shared_static_bytes=shared_static_bytes,
        shared_dynamic_bytes=shared_dynamic_bytes,
        carveout_percent=carveout_percent,
        barriers_per_block=barriers_per_block,
        warps_per_block=warps_per_block,
        registers_per_block=registers_per_warp * warps_per_block,
        shared_bytes_per_block=shared_bytes_per_block,
        carveout_bytes=carveout_bytes,
        min_carveout_bytes=min_carveout_bytes,
        blocks_limit_warps=blocks_limit_warps,
        blocks_limit_registers=blocks_limit_registers,
        blocks_limit_shared_memory=blocks_limit_shared_memory,
        blocks_limit_blocks=device.max_blocks_per_sm,
        blocks_limit_barriers=blocks_limit_barriers,
        blocks_per_sm=blocks_per_sm,
        active_warps_per_sm=active_warps,
        max_warps_per_sm=device.max_warps_per_sm,
        occupancy=active_warps / device.max_warps_per_sm,
        limiter=limiters[0],
        limiters=limiters,
    )


def _check_arguments(threads_per_block, registers_per_thread, shared_static_bytes,
                     shared_dynamic_bytes, carveout_percent, barriers_per_block) -> None:
    if threads_per_block < 1:
        raise ValueError(f"a block needs at least one thread, got {threads_per_block}")
    for name, value in (("registers_per_thread", registers_per_thread),
                        ("shared_static_bytes", shared_static_bytes),
                        ("shared_dynamic_bytes", shared_dynamic_bytes)):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if carveout_percent is not None and not 0 <= carveout_percent <= 100:
        raise ValueError(f"carveout_percent must be 0-100 or None, got {carveout_percent}")
    if not 0 <= barriers_per_block <= MAX_BARRIERS_PER_BLOCK:
        raise ValueError(f"barriers_per_block must be 0-{MAX_BARRIERS_PER_BLOCK}, "
                         f"got {barriers_per_block}")


def _check_registers(device: Device, registers_per_thread: int, registers_per_warp: int,
                     warps_per_block: int) -> None:
    if registers_per_thread > device.max_registers_per_thread:
        raise LaunchLimitError(
            f"{registers_per_thread} registers per thread is more than {device.name} allows "
            f"({device.max_registers_per_thread})",
            REGISTERS_PER_THREAD, registers_per_thread, device.max_registers_per_thread)
    # The launch check assumes a block's warps are spread over all sub-partitions at once.
    checked_warps = _round_up(warps_per_block, SUB_PARTITIONS_PER_SM)
    needed = registers_per_warp * checked_warps
    if needed > device.registers_per_block:
        rounding = "" if checked_warps == warps_per_block else (
            f"; the launch check rounds the block's {warps_per_block} warps up to "
            f"{checked_warps}, a multiple of the SM's {SUB_PARTITIONS_PER_SM} sub-partitions")
        raise LaunchLimitError(
            f"a block of {warps_per_block} warps at {registers_per_thread} registers per thread "
            f"needs {needed} registers ({registers_per_warp} per warp x {checked_warps} "
            f"warps{rounding}): {device.name} allows {device.registers_per_block} per block",
            REGISTERS_PER_BLOCK, needed, device.registers_per_block)


def _check_shared_memory(device: Device, static_bytes: int, dynamic_bytes: int,
                         opt_in: bool) -> None:
    requested = static_bytes + dynamic_bytes
    if opt_in:
        allowed = device.shared_memory_per_block_bytes
    else:
        allowed = device.shared_memory_per_block_default_bytes
    if requested <= allowed:
        return
    how = "with opt-in" if opt_in else (
        f"without opting in (up to {format_bytes(device.shared_memory_per_block_bytes)} with "
        f"cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize))")
    raise LaunchLimitError(
        f"a block asks for {requested} bytes ({format_bytes(requested)}) of shared memory "
        f"({static_bytes} static + {dynamic_bytes} dynamic): {device.name} allows {allowed} bytes "
        f"({format_bytes(allowed)}) per block {how}",
        SHARED_MEMORY_PER_BLOCK, requested, allowed)


def _carveouts(device: Device) -> tuple[int, ...]:
    sizes = SHARED_MEMORY_CARVEOUTS_KIB.get(device.compute_capability)
    if sizes is None:
        major, minor = device.compute_capability
        raise ValueError(f"no shared-memory carveout sizes for compute capability "
                         f"{major}.{minor} ({device.name}): add them to "
                         f"SHARED_MEMORY_CARVEOUTS_KIB")
    largest = device.shared_memory_per_sm_bytes
    per_block = device.shared_memory_per_block_bytes + device.shared_memory_reserved_per_block_bytes
    if sizes[-1] * KIB != largest or per_block > largest:
        raise ValueError(f"{device.name}: the largest carveout ({sizes[-1]} KiB) must equal "
                         f"shared_memory_per_sm_bytes ({largest}) and hold a block of the "
                         f"largest size ({per_block} bytes)")
    return tuple(size * KIB for size in sizes)


def _carveout(device: Device, carveouts: tuple[int, ...], percent: int | None,
              shared_bytes_per_block: int) -> int:
    """Shared memory per SM the shared-memory limit assumes (module docstring)."""
    largest = device.shared_memory_per_sm_bytes
    preferred = largest if percent is None else percent * largest // 100
    preferred = _supported_size_for(carveouts, preferred)
    if preferred >= shared_bytes_per_block:
        return preferred
    return _supported_size_for(carveouts, shared_bytes_per_block)


def _supported_size_for(carveouts: tuple[int, ...], size: int) -> int:
    """The smallest supported carveout of at least `size` bytes."""
    return next(carveout for carveout in carveouts if carveout >= size)


def _blocks_in(carveout_bytes: int, shared_bytes_per_block: int) -> int | None:
    if shared_bytes_per_block == 0:
        return None
    return carveout_bytes // shared_bytes_per_block


def _fits(carveout_bytes: int, shared_bytes_per_block: int, blocks: int) -> bool:
    return carveout_bytes >= blocks * shared_bytes_per_block


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit
