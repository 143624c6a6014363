"""The projected cost model (AStitch/PAI's "Proj" level): time and its breakdown for one kernel
under one CodeGenPlan on one device, from its workload (compiler/codegen/workload.py, counted
by the plan's schedule) and its resources.

    throughput time = max over pipes p of  busiest SM's instructions_p / (lanes_p x e_pipe)
                      and  DRAM bytes / (peak bandwidth x e_dram),  L2 bytes / (L2 bandwidth x e_l2)
    wave latency    = (sum over the busiest thread's loop iterations of
                      (round trips x idle memory latency + dependent arithmetic) + sync)
                      x s_latency
    latency time    = ceil(waves) x wave latency
    exposed latency = wave latency x (1 + (ceil(waves) - 1) / blocks per SM),
                      at least a horizontal launch's slowest part's thread
    loaded latency  = exposed latency + max(DRAM time, L2 time)  (0 for a kernel moving no bytes)
    projected time  = max(throughput time, latency time, loaded latency) + grid barriers

  That is the kernel's device work: what launching it adds depends on how the plan is run
  (a stream, a CUDA graph) and is priced by compiler/target/launch.py.

- The busiest SM runs ceil(blocks / SMs) of the blocks (the block scheduler hands blocks out
  round-robin): a kernel with fewer blocks than SMs leaves SMs idle, and its pipe time is that
  of one SM's share, not the chip's.
- Waves = blocks / (blocks per SM x SMs), with blocks per SM from the occupancy calculator
  (occupancy.py, CUDA's rules); each wave's threads walk their loops with one DRAM round trip
  per iteration (two through a gather's index), the dependent arithmetic of the iteration and
  the shuffles and barriers of their reductions: memory latency not hidden by enough resident
  warps shows up here, as the throughput term cannot see it.
- Loaded latency. A round trip waits the idle latency of the device table (microbenchmarks'
  pointer chases: Luo et al. 2024 for Hopper) and, behind it, the bytes queued ahead of it at
  the memory system: with B bytes in flight per SM on S busy SMs, S x B / bandwidth (the
  "departure delay" of each request ahead, in Hong and Kim's analytical GPU model, ISCA 2009).
  Summed over one wave's round trips, that queueing is the wave's bytes over the bandwidth:
  B drops out, and a wave takes its idle round trips plus its memory time. A later wave's
  blocks start as earlier ones retire, beside the SM's other resident blocks, whose bytes stay
  in flight meanwhile: of its idle round trips about 1/(blocks per SM) is exposed (all of it
  with one block per SM: nothing overlaps its start). That 1/k is the measurements' choice,
  not a derivation: it is the form between "one wave exposed" and "every wave exposed" that
  brings every module of the H200 campaign closer (docs/cost-models.md, "Loaded latency").
- The limiter is the largest term: a pipe ("fma", "alu", "xu", "fp64", "conv", "lsu",
  "shfl"), "dram", "l2", or "latency". Utilisation of each pipe and of DRAM is its time over the
  projected time.
- e_pipe, e_dram, e_l2 and s_latency are the derating constants (`Derating`); their defaults
  are below with their sources, and `compiler.cost.calibrate` fits them to measured times.

Figures that are not in devices.py and where they come from:
- L2-to-SM bandwidth: [A100-WP] gives 5120 bytes/clock for A100 and 2048 for V100 ("2.3x");
  NVIDIA publishes no figure for H100, H200 or L4, so they get A100's 47.4 bytes/clock per SM
  (the H100's ~12 TB/s that follows is in line with public microbenchmarks).
- A grid barrier (cooperative groups' grid.sync) costs about 2 us on a full V100 (Zhang et al.,
  "A Study of Single and Multi-device Synchronization Methods in Nvidia GPUs", IPDPS 2020:
  grid-level synchronisation in the low microseconds); taken as 2 us everywhere.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

from compiler.cost.outliers import outlier_reason, ratio_to_sol
from compiler.codegen.schedules import kernel_workload
from compiler.codegen.workload import PIPES, Workload
from compiler.target.devices import Device
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES, terms_for
from compiler.target.occupancy import occupancy
from compiler.target.sol import SolEstimate

# [A100-WP]: "A100 L2 cache read bandwidth: 5120 bytes/clk", V100: 2048 bytes/clk.
L2_BYTES_PER_CYCLE = {"v100": 2048, "a100": 5120}
L2_BYTES_PER_CYCLE_PER_SM_ASSUMED = 5120 / 108
GRID_SYNC_US = 2.0


@dataclass(frozen=True)
class Derating:
    """What fraction of each peak a real kernel reaches (fitted by calibrate.py).

    - dram_efficiency 0.88: streaming copy/triad kernels reach 85-92 % of the datasheet DRAM
      bandwidth on V100, A100 and H100 (BabelStream results published by its authors, Deakin
      et al., and vendors' STREAM runs); refresh and page misses take the rest.
    - l2_efficiency 0.7, pipe_efficiency 0.8: issue slots lost to dependencies and to the
      other pipes sharing the dispatch port; round figures until calibrated.
    - latency_scale 1.0: the latency term as the formula gives it.
    """
    dram_efficiency: float = 0.88
    l2_efficiency: float = 0.7
    pipe_efficiency: float = 0.8
    latency_scale: float = 1.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Resources:
    """What the kernel asks of an SM: from ptxas for a built kernel, else estimated."""
    registers: int
    static_shared_bytes: int = 0
    spill_bytes: int = 0
    source: str = "ptxas"          # "ptxas" | "estimated"


@dataclass
class Breakdown:
    """Everything the UI shows about one kernel under one plan (all times in microseconds)."""
    projected_us: float
    throughput_us: float
    latency_us: float
    loaded_latency_us: float               # exposed idle round trips, then the memory time
    grid_sync_us: float
    limiter: str
    utilisation: dict[str, float]          # pipe / "dram" / "l2" -> percent of projected time
    achieved_bandwidth_gbs: float
    dram_bytes: int
    # Launch figures; None for a library call (cuBLAS picks its own kernels and launches).
    occupancy: float | None                # theoretical, 0..1
    occupancy_limiter: str | None
    blocks_per_sm: int | None
    active_warps_per_sm: int | None
    waves: float | None
    tail_fraction: float | None            # idle share of the last wave's block slots
    sms_used: int | None
    registers: int | None
    registers_source: str | None
    shared_bytes: int | None               # static + dynamic per block
    spill_bytes: int | None
    grid: int | None
    block: int | None
    sol_us: float | None = None
    arithmetic_intensity: float | None = None   # flops per DRAM byte (the roofline's x)
    flops: int | None = None
    terms_us: dict[str, float] = field(default_factory=dict)   # every throughput term

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("projected_us", "throughput_us", "latency_us", "loaded_latency_us", "waves",
                    "tail_fraction", "achieved_bandwidth_gbs", "occupancy"):
            if out[key] is not None:
                out[key] = round(out[key], 4)
        out["utilisation"] = {k: round(v, 2) for k, v in self.utilisation.items()}
        out["terms_us"] = {k: round(v, 4) for k, v in self.terms_us.items()}
        return out

    def kernel_fields(self, sol: SolEstimate | None = None, schedule: str | None = None, *,
                      device: str, runtime: str = DEFAULT_RUNTIME) -> dict:
        """This breakdown's fields in its kernel's JSON entry (`projected_fields`)."""
        return projected_fields(self, sol, schedule, device=device, runtime=runtime)


@dataclass(frozen=True)
class _Times:
    """The terms of the module docstring's formula for one kernel, in microseconds."""
    projected_us: float
    throughput_us: float
    latency_us: float              # the serial waves at the idle latency
    loaded_latency_us: float       # the exposed round trips, then the memory time (0: no bytes)
    fill_us: float                 # the exposed round trips at the idle latency
    grid_sync_us: float
    terms_us: dict[str, float]
    occupancy: object
    waves: float
    grid: int
    block: int

    def limiter(self) -> str:
        """The largest term: a throughput term, "latency" when the serial waves or the idle
        round trips of the loaded latency outweigh it, else the memory term the loaded
        latency waits on."""
        terms = self.terms_us
        if self.throughput_us >= max(self.latency_us, self.loaded_latency_us):
            return max(terms, key=terms.get) if terms else "latency"
        memory_us = self.loaded_latency_us - self.fill_us
        if self.latency_us >= self.loaded_latency_us or self.fill_us >= memory_us:
            return "latency"
        return max(("dram", "l2"), key=lambda name: terms.get(name, 0.0))


def projected_fields(breakdown: Breakdown | None, sol: SolEstimate | None = None,
                     schedule: str | None = None, *, device: str,
                     runtime: str = DEFAULT_RUNTIME) -> dict:
    """The kernel-entry fields a projected breakdown fills (none when there is none): the
    device work ("device_us"), the launch term under `runtime` ("launch_us") and under every
    runtime ("launch"), their sum ("proj_us"), the limiter ("launch" when the launch term is
    the larger part, else the device work's, kept as "device_limiter"); with the kernel's SOL,
    how far above it the device work is and, for an outlier, why
    (outliers.py), naming the CodeGen plan's schedule when given."""
    if breakdown is None:
        return {}
    ratio = ratio_to_sol(breakdown, sol)
    device_us = breakdown.projected_us
    terms = terms_for(device)
    launches = {name: terms.launch(name).us(device_us) for name in RUNTIMES}
    launch_us = launches[runtime]
    fields = {"proj_us": round(device_us + launch_us, 4), "device_us": round(device_us, 4),
              "launch_us": round(launch_us, 4),
              "launch": {name: round(us, 4) for name, us in launches.items()},
              "limiter": "launch" if launch_us > device_us else breakdown.limiter,
              "device_limiter": breakdown.limiter,
              "occupancy": breakdown.occupancy, "waves": breakdown.waves,
              "block_size": breakdown.block, "grid_size": breakdown.grid,
              "proj_over_sol": None if ratio is None else round(ratio, 2),
              "outlier_reason": outlier_reason(breakdown, sol, schedule),
              "projected": breakdown.to_dict()}
    if schedule is not None:
        fields["schedule"] = schedule
    if breakdown.registers_source == "ptxas":  # an estimate is not ptxas' figure
        fields.update(registers=breakdown.registers, shared_bytes=breakdown.shared_bytes)
    return fields


def l2_bytes_per_second(device: Device) -> float:
    per_cycle = L2_BYTES_PER_CYCLE.get(device.name,
                                       L2_BYTES_PER_CYCLE_PER_SM_ASSUMED * device.sm_count)
    return per_cycle * device.clock_hz


def pipe_lanes(device: Device) -> dict[str, float]:
    """Results per clock per SM of each pipe the workload counts ([PG] throughput table)."""
    return {
        "fma": device.fp32_ops_per_cycle_per_sm,
        "alu": device.int32_ops_per_cycle_per_sm,
        "xu": device.transcendental_ops_per_cycle_per_sm,
        "fp64": device.fp64_ops_per_cycle_per_sm,
        # [PG]: "all other type conversions" and warp shuffles: 16 and 32 per clock per SM
        # on compute capability 7.0 to 9.0.
        "conv": 16,
        "lsu": device.lsu_ops_per_cycle_per_sm,
        "shfl": 32,
    }


def estimate_registers(workload: Workload) -> int:
    """A register count for ranking plans before any is compiled: 24 for the indices and
    pointers, 2 per input value per vector lane, 8 for a reduction's accumulators and partials.
    Only the plan that is built gets ptxas' figure."""
    accesses = workload.accesses
    reads = len({a.value for a in accesses if a.role == "read"})
    vector = 4 if any(a.vectorized for a in accesses) else 1
    reductions = 8 if workload.schedule != "elementwise" else 0
    return int(min(255, 24 + 2 * reads * vector + reductions))


@lru_cache(maxsize=4096)
def _occupancy(device: Device, block: int, registers: int, static_shared: int,
               dynamic_shared: int):
    """occupancy.occupancy, remembered: candidate plans repeat a few launch shapes."""
    return occupancy(device, block, registers, shared_static_bytes=static_shared,
                     shared_dynamic_bytes=dynamic_shared)


class ProjectedModel:
    """Projected times on one device, with its derating constants."""

    def __init__(self, device: Device, derating: Derating | None = None):
        self.device = device
        self.derating = derating or Derating()
        self.lanes = pipe_lanes(device)
        self.l2_bytes_per_s = l2_bytes_per_second(device)
        # (block, registers, static shared, dynamic shared) -> occupancy: candidate plans
        # repeat a few launch shapes, and `_occupancy`'s lru_cache hashes the whole Device.
        self._occupancies: dict[tuple, object] = {}

    def project(self, workload: Workload, resources: Resources, sol_us: float | None = None,
                flops: int | None = None) -> Breakdown:
        """The kernel's time and everything the UI shows about it (`Breakdown`)."""
        device = self.device
        times = self._times(workload, resources)
        projected, terms, occ, waves, grid = (times.projected_us, times.terms_us,
                                              times.occupancy, times.waves, times.grid)
        busy_us = projected - times.grid_sync_us
        utilisation = {name: 100.0 * t / busy_us if busy_us else 0.0 for name, t in terms.items()}
        fraction = waves - math.floor(waves)
        tail = 0.0 if waves < 1 or fraction == 0 else 1.0 - fraction
        return Breakdown(
            projected_us=projected, throughput_us=times.throughput_us,
            latency_us=times.latency_us, loaded_latency_us=times.loaded_latency_us,
            grid_sync_us=times.grid_sync_us,
            limiter=times.limiter(), utilisation=utilisation,
            achieved_bandwidth_gbs=workload.dram_bytes / (projected * 1e-6) / 1e9
            if projected else 0.0,
            dram_bytes=workload.dram_bytes, occupancy=occ.occupancy,
            occupancy_limiter=occ.limiter, blocks_per_sm=occ.blocks_per_sm,
            active_warps_per_sm=occ.active_warps_per_sm, waves=waves, tail_fraction=tail,
            sms_used=min(device.sm_count, grid), registers=resources.registers,
            registers_source=resources.source,
            shared_bytes=workload.shared_bytes + resources.static_shared_bytes,
            spill_bytes=resources.spill_bytes, grid=grid, block=times.block, sol_us=sol_us,
            arithmetic_intensity=(flops / workload.dram_bytes) if flops is not None
            and workload.dram_bytes else None,
            flops=flops, terms_us=terms)

    def rank_key(self, workload: Workload, resources: Resources) -> tuple[float, float]:
        """What plans are ranked by, without the rest of a `Breakdown` (the fusion search
        ranks tens of plans per candidate kernel and shows one): the projected time and the
        slack, the sum of every throughput term and the latency, which breaks ties on time
        in favour of the plan that asks less of everything else (`rank_plans`)."""
        times = self._times(workload, resources)
        return times.projected_us, slack(times.terms_us, times.latency_us)

    def _times(self, workload: Workload, resources: Resources) -> _Times:
        """The formula of the module docstring."""
        device, d = self.device, self.derating
        clock = device.clock_hz
        grid, block = max(1, workload.grid), max(1, workload.block)
        launch = (block, max(1, resources.registers), resources.static_shared_bytes,
                  workload.shared_bytes)
        occ = self._occupancies.get(launch)
        if occ is None:
            occ = self._occupancies[launch] = _occupancy(device, *launch)
        blocks_per_sm = max(1, occ.blocks_per_sm)
        resident = occ.blocks_per_sm * device.sm_count
        if workload.cooperative and grid > resident:
            # Blocks waiting at the grid barrier would hold the SMs the others need: the
            # launch would deadlock (CUDA refuses it), so the plan is not ranked.
            raise ValueError(f"a cooperative grid of {grid} blocks is not co-resident on "
                             f"{device.name}: {occ.blocks_per_sm} blocks of {block} threads "
                             f"per SM x {device.sm_count} SMs = {resident}")
        busiest_share = math.ceil(grid / device.sm_count) / grid  # of all blocks' work

        terms: dict[str, float] = {}
        lanes, pipe_efficiency = self.lanes, d.pipe_efficiency
        instructions = workload.instructions
        for pipe in PIPES:
            count = instructions.get(pipe)
            if count:
                cycles = count * busiest_share / (lanes[pipe] * pipe_efficiency)
                terms[pipe] = cycles / clock * 1e6
        if workload.dram_bytes:
            terms["dram"] = workload.dram_bytes / (device.dram_bytes_per_s * d.dram_efficiency) \
                * 1e6
        if workload.l2_bytes:
            terms["l2"] = workload.l2_bytes / (self.l2_bytes_per_s * d.l2_efficiency) * 1e6
        throughput_us = max(terms.values(), default=0.0)

        waves = grid / (blocks_per_sm * device.sm_count)
        wave_cycles = workload.latency_cycles_per_thread + workload.sync_cycles_per_thread
        # A horizontal launch's figures are its parts' means; its slowest part's thread is
        # the least it takes (the horizontal schedule's `count`).
        latency_cycles = math.ceil(waves) * wave_cycles
        # A loop only the first blocks run takes the waves of those blocks alone.
        resident = blocks_per_sm * device.sm_count
        for busy, cycles in workload.few_block_loops:
            latency_cycles += math.ceil(busy / resident) * cycles
        latency_cycles = max(latency_cycles, workload.slowest_thread_cycles)
        latency_us = latency_cycles * d.latency_scale / clock * 1e6
        # Loaded latency (module docstring): the round trips at the idle latency that other
        # resident blocks do not overlap, and the bytes queued ahead of them, which add up to
        # the memory time of the launch.
        # A horizontal launch's first wave lasts its slowest part's thread, not the mean.
        fill_cycles = max(wave_cycles * (1 + (math.ceil(waves) - 1) / blocks_per_sm),
                          workload.slowest_thread_cycles)
        fill_us = fill_cycles * d.latency_scale / clock * 1e6
        memory_us = max(terms.get("dram", 0.0), terms.get("l2", 0.0))
        loaded_us = fill_us + memory_us if memory_us else 0.0
        grid_sync_us = workload.grid_syncs * GRID_SYNC_US
        projected = max(throughput_us, latency_us, loaded_us) + grid_sync_us
        return _Times(projected, throughput_us, latency_us, loaded_us, fill_us, grid_sync_us,
                      terms, occ, waves, grid, block)

    def with_derating(self, **changes) -> ProjectedModel:
        return ProjectedModel(self.device, replace(self.derating, **changes))


# -- kernels of a fusion plan -----------------------------------------------------------------


def project_kernel(graph, kernel, plan, device: Device, resources: Resources | None = None,
                   derating: Derating | None = None, sol=None,
                   memo: dict | None = None) -> Breakdown:
    """The breakdown of `kernel` (a fusion-plan Kernel) under CodeGenPlan `plan`; registers
    are estimated when `resources` is None. `sol` is the kernel's SolEstimate, if known."""

    workload = kernel_workload(graph, kernel, plan, device, memo)
    sol = sol if sol is not None else getattr(kernel, "sol", None)
    if resources is None:
        resources = Resources(registers=estimate_registers(workload), source="estimated")
    return _model(device, derating).project(
        workload, resources, sol_us=sol.total_us if sol is not None else None,
        flops=sol.flops if sol is not None else None)


def rank_key(graph, kernel, plan, device: Device, memo: dict | None = None
             ) -> tuple[float, float]:
    """`ProjectedModel.rank_key` of `kernel` under `plan` with estimated registers: the time
    `project_kernel` gives, and the slack that breaks ties, without the breakdown. ValueError
    where project_kernel raises it."""

    workload = kernel_workload(graph, kernel, plan, device, memo)
    resources = Resources(registers=estimate_registers(workload), source="estimated")
    return _model(device, None).rank_key(workload, resources)


def slack(terms_us: dict[str, float], latency_us: float) -> float:
    """What breaks a tie on time between two plans (two bound by the same DRAM traffic): the
    one that asks less of everything else, the sum of every throughput term and the
    latency."""
    return sum(terms_us.values()) + latency_us


def _model(device: Device, derating: Derating | None) -> ProjectedModel:
    """The ProjectedModel of a device and derating, made once (kept by the device object's
    identity: hashing a Device's every field per call would cost more than the lookup
    saves)."""
    key = (id(device), derating)
    found = _MODELS.get(key)
    if found is None or found.device is not device:
        found = _MODELS[key] = ProjectedModel(device, derating)
    return found


_MODELS: dict[tuple, ProjectedModel] = {}


def rank_plans(graph, kernel, plans, device: Device,
               derating: Derating | None = None) -> list[tuple[object, Breakdown]]:
    """(plan, breakdown) for every candidate the workload model covers, fastest first; equal
    times are ordered by the sum of all terms, then by enumeration order."""
    ranked, memo = [], {}
    for k, plan in enumerate(plans):
        try:
            breakdown = project_kernel(graph, kernel, plan, device, derating=derating,
                                       memo=memo)
        except ValueError:
            continue  # a schedule the workload model does not know: not ranked
        ranked.append((round(breakdown.projected_us, 6),
                       slack(breakdown.terms_us, breakdown.latency_us), k, plan, breakdown))
    ranked.sort(key=lambda item: item[:3])
    return [(plan, breakdown) for *_, plan, breakdown in ranked]


# Library calls (dot, convolution) run cuBLAS/cuDNN kernels we do not generate: their projected
# time is the speed-of-light one derated like a generated kernel's DRAM traffic, and tensor-core
# work at LIBRARY_COMPUTE_EFFICIENCY of the peak: large cuBLAS GEMMs reach 70-80 % of the
# datasheet tensor throughput on A100/H100 (NVIDIA's published cuBLAS performance charts).
LIBRARY_COMPUTE_EFFICIENCY = 0.75


def project_library(kernel, device: Device, derating: Derating | None = None) -> Breakdown:
    """The projected time of a library kernel from its SolEstimate (`kernel.sol`)."""
    d = derating or Derating()
    sol = kernel.sol
    terms = {"dram": sol.memory_us / d.dram_efficiency}
    if sol.compute_us:
        terms[sol.compute_pipe or "compute"] = sol.compute_us / LIBRARY_COMPUTE_EFFICIENCY
    busy = max(terms.values())
    limiter = max(terms, key=terms.get)
    projected = busy
    return Breakdown(
        projected_us=projected, throughput_us=busy, latency_us=0.0, loaded_latency_us=0.0,
        grid_sync_us=0.0, limiter=limiter,
        utilisation={k: 100.0 * v / busy if busy else 0.0 for k, v in terms.items()},
        achieved_bandwidth_gbs=sol.dram_bytes / (projected * 1e-6) / 1e9 if projected else 0.0,
        dram_bytes=sol.dram_bytes, occupancy=None, occupancy_limiter=None, blocks_per_sm=None,
        active_warps_per_sm=None, waves=None, tail_fraction=None, sms_used=None,
        registers=None, registers_source=None, shared_bytes=None, spill_bytes=None, grid=None,
        block=None, sol_us=sol.total_us,
        arithmetic_intensity=sol.flops / sol.dram_bytes if sol.dram_bytes else None,
        flops=sol.flops, terms_us=terms)
