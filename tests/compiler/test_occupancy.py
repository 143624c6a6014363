"""Theoretical occupancy against NVIDIA's own occupancy calculator.

The reference is cuda_occupancy.h from the CUDA toolkit wheel (header-only, host C++): a small
program fills cudaOccDeviceProp from each Device, runs cudaOccMaxActiveBlocksPerMultiprocessor
on every launch of a grid of block sizes, register counts, shared-memory sizes, carveout
preferences and opt-in settings, and prints NVIDIA's blocks per SM, per-limit blocks and
limiting factors. It is compiled once per session with the host compiler the CPU emulator uses.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.target.devices import DEVICES, KIB, get_device
from compiler.target.occupancy import (LIMITS, REGISTERS_PER_BLOCK, REGISTERS_PER_THREAD,
                                       SHARED_MEMORY_CARVEOUTS_KIB, SHARED_MEMORY_PER_BLOCK,
                                       SUB_PARTITIONS_PER_SM, THREADS_PER_BLOCK, LaunchLimitError,
                                       occupancy)
from compiler.toolchain.emulate import COMPILER
from compiler.toolchain.locate import default_root

INT_MAX = 2**31 - 1

# cudaOccLimitingFactor bits, by our limit names.
LIMITING_FACTOR_BITS = {"warps": 0x01, "registers": 0x02, "shared_memory": 0x04,
                        "blocks": 0x08, "barriers": 0x10}

# Which of NVIDIA's per-limit block counts is 0 when a launch fails on each of our limits.
FAILED_LIMIT = {THREADS_PER_BLOCK: "warps", REGISTERS_PER_THREAD: "registers",
                REGISTERS_PER_BLOCK: "registers", SHARED_MEMORY_PER_BLOCK: "shared_memory"}

REFERENCE_SOURCE = r"""
#include <climits>
#include <cstdio>
#include "cuda_occupancy.h"

// One request per line on stdin, one answer per line on stdout:
//   A major minor
//     -> max blocks per SM, shared memory unit, register unit, max registers per thread,
//        sub-partitions: the header's own per-architecture figures
//   L <device: major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM warpSize
//      sharedMemPerBlock sharedMemPerSM numSms sharedMemPerBlockOptin reservedSharedMemPerBlock>
//     <launch: threads registers staticShared dynamicShared optIn carveout barriers>
//     -> status, active blocks, per-limit blocks (registers, shared memory, warps, blocks,
//        barriers), limiting-factor bits, allocated registers and shared memory per block
int main() {
    char kind[2];
    while (std::scanf("%1s", kind) == 1) {
        cudaOccDeviceProp prop;
        if (kind[0] == 'A') {
            if (std::scanf("%d %d", &prop.computeMajor, &prop.computeMinor) != 2) return 2;
            int blocks = 0, shared_unit = 0, register_unit = 0, max_registers = 0;
            int partitions = 0;
            cudaOccMaxBlocksPerMultiprocessor(&blocks, &prop);
            cudaOccSMemAllocationGranularity(&shared_unit, &prop);
            cudaOccRegAllocationGranularity(&register_unit, &prop);
            cudaOccRegAllocationMaxPerThread(&max_registers, &prop);
            cudaOccSubPartitionsPerMultiprocessor(&partitions, &prop);
            std::printf("%d %d %d %d %d\n", blocks, shared_unit, register_unit, max_registers,
                        partitions);
            continue;
        }
        long long shared_block, shared_sm, shared_optin, reserved;
        int threads, registers, opt_in, carveout, barriers;
        long long static_shared, dynamic_shared;
        int read = std::scanf("%d %d %d %d %d %d %d %lld %lld %d %lld %lld %d %d %lld %lld %d "
                              "%d %d",
                              &prop.computeMajor, &prop.computeMinor, &prop.maxThreadsPerBlock,
                              &prop.maxThreadsPerMultiprocessor, &prop.regsPerBlock,
                              &prop.regsPerMultiprocessor, &prop.warpSize, &shared_block,
                              &shared_sm, &prop.numSms, &shared_optin, &reserved, &threads,
                              &registers, &static_shared, &dynamic_shared, &opt_in, &carveout,
                              &barriers);
        if (read != 19) return 2;
        prop.sharedMemPerBlock = shared_block;
        prop.sharedMemPerMultiprocessor = shared_sm;
        prop.sharedMemPerBlockOptin = shared_optin;
        prop.reservedSharedMemPerBlock = reserved;

        // As the runtime converts cudaFuncAttributes: the per-function dynamic limit applies.
        // Without opt-in it is CUDA's default, 48 KiB less the static shared memory; a kernel
        // that opts in raises it to the device's opt-in maximum.
        cudaOccFuncAttributes attributes;
        attributes.maxThreadsPerBlock = INT_MAX;
        attributes.numRegs = registers;
        attributes.sharedSizeBytes = static_shared;
        attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
        attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        long long limit = (opt_in ? shared_optin : shared_block) - static_shared;
        attributes.maxDynamicSharedSizeBytes = limit > 0 ? limit : 0;
        attributes.numBlockBarriers = barriers;
        attributes.virtualResourceCount = 0;

        cudaOccDeviceState state;
        state.carveoutConfig = carveout;

        cudaOccResult result;
        cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(
            &result, &prop, &attributes, &state, threads, dynamic_shared);
        std::printf("%d %d %d %d %d %d %d %u %d %lld\n", (int)status,
                    result.activeBlocksPerMultiprocessor, result.blockLimitRegs,
                    result.blockLimitSharedMem, result.blockLimitWarps, result.blockLimitBlocks,
                    result.blockLimitBarriers, result.limitingFactors,
                    result.allocatedRegistersPerBlock,
                    (long long)result.allocatedSharedMemPerBlock);
    }
    return 0;
}
"""


@dataclass(frozen=True)
class Launch:
    device: str
    threads: int
    registers: int
    static_shared: int = 0
    dynamic_shared: int = 0
    opt_in: bool = True
    carveout: int | None = None
    barriers: int = 1

    def ours(self):
        return occupancy(get_device(self.device), self.threads, self.registers,
                         self.static_shared, self.dynamic_shared, carveout_percent=self.carveout,
                         shared_opt_in=self.opt_in, barriers_per_block=self.barriers)

    def request(self) -> str:
        d = get_device(self.device)
        fields = (*d.compute_capability, d.max_threads_per_block, d.max_threads_per_sm,
                  d.registers_per_block, d.registers_per_sm, d.warp_size,
                  d.shared_memory_per_block_default_bytes, d.shared_memory_per_sm_bytes,
                  d.sm_count, d.shared_memory_per_block_bytes,
                  d.shared_memory_reserved_per_block_bytes,
                  self.threads, self.registers, self.static_shared, self.dynamic_shared,
                  int(self.opt_in), -1 if self.carveout is None else self.carveout, self.barriers)
        return "L " + " ".join(map(str, fields))


@dataclass(frozen=True)
class Reference:
    """cudaOccMaxActiveBlocksPerMultiprocessor's answer; per-limit blocks by our names, None
    where NVIDIA says INT_MAX (no limit)."""

    status: int
    blocks_per_sm: int
    limits: dict
    limiting_factors: int
    registers_per_block: int
    shared_bytes_per_block: int

    @classmethod
    def parse(cls, line: str) -> Reference:
        status, active, regs, shared, warps, blocks, barriers, flags, registers, smem = \
            map(int, line.split())
        limits = {"warps": warps, "registers": regs, "shared_memory": shared, "blocks": blocks,
                  "barriers": barriers}
        limits = {name: None if value == INT_MAX else value for name, value in limits.items()}
        return cls(status, active, limits, flags, registers, smem)

    @property
    def limiters(self) -> set[str]:
        """The factors NVIDIA flags that equal its result. (From 9.0 the header sets the
        barrier flag after the others, so a flag can be left from before the barrier limit
        lowered the result.)"""
        return {name for name, bit in LIMITING_FACTOR_BITS.items()
                if self.limiting_factors & bit and self.limits[name] == self.blocks_per_sm}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """`reference(lines) -> output lines`: NVIDIA's calculator, built once per module."""
    compiler = shutil.which(COMPILER)
    if compiler is None:
        pytest.skip(f"no host C++ compiler ({COMPILER}) found: cannot build NVIDIA's "
                    "cuda_occupancy.h reference")
    root = default_root()
    assert root is not None, "the CUDA wheel is missing: pip install -r requirements.txt"
    header_dir = root / "include"
    assert (header_dir / "cuda_occupancy.h").is_file(), f"no cuda_occupancy.h in {header_dir}"
    directory = tmp_path_factory.mktemp("occupancy_reference")
    (directory / "reference.cpp").write_text(REFERENCE_SOURCE)
    built = subprocess.run([compiler, "-std=c++17", "-O1", "-Wall", f"-I{header_dir}",
                            "reference.cpp", "-o", "reference"],
                           cwd=directory, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr

    def run(lines: list[str]) -> list[str]:
        ran = subprocess.run([str(directory / "reference")], input="\n".join(lines) + "\n",
                             capture_output=True, text=True, check=True)
        answers = ran.stdout.splitlines()
        assert len(answers) == len(lines)
        return answers

    return run


def nvidia(reference, launches: list[Launch]) -> list[Reference]:
    return [Reference.parse(line) for line in reference([launch.request() for launch in launches])]


def compare(launch: Launch, expected: Reference) -> str | None:
    """What differs between our result and NVIDIA's for `launch`, or None."""
    if expected.status != 0:
        return f"{launch}: cuda_occupancy.h returned error {expected.status}"
    try:
        ours = launch.ours()
    except LaunchLimitError as error:
        if expected.blocks_per_sm != 0:
            return f"{launch}: we refuse ({error}), NVIDIA runs {expected.blocks_per_sm} blocks"
        failed = FAILED_LIMIT[error.limit]
        if expected.limits[failed] != 0:
            return f"{launch}: we fail on {error.limit}, NVIDIA's {failed} limit is not 0"
        return None
    if expected.blocks_per_sm == 0:
        return f"{launch}: NVIDIA cannot run it, we give {ours.blocks_per_sm} blocks"
    got = {
        "blocks_per_sm": ours.blocks_per_sm,
        "limits": {name: getattr(ours, f"blocks_limit_{name}") for name in LIMITS},
        "limiters": set(ours.limiters),
        "registers_per_block": ours.registers_per_block,
        "shared_bytes_per_block": ours.shared_bytes_per_block,
    }
    want = {
        "blocks_per_sm": expected.blocks_per_sm,
        "limits": expected.limits,
        "limiters": expected.limiters,
        "registers_per_block": expected.registers_per_block,
        "shared_bytes_per_block": expected.shared_bytes_per_block,
    }
    if got != want:
        return f"{launch}:\n  ours   {got}\n  NVIDIA {want}"
    return None


# -- the grid compared with NVIDIA --------------------------------------------------------------

THREADS = (32, 64, 96, 128, 200, 256, 320, 384, 480, 512, 640, 768, 1000, 1024, 1025)
REGISTERS = (0, 16, 32, 40, 64, 65, 96, 128, 136, 168, 255)
SHARED = ((0, 0), (0, 1), (2 * KIB, 0), (0, 16 * KIB), (1 * KIB, 15 * KIB), (0, 48 * KIB),
          (4 * KIB, 44 * KIB + 1), (0, 99 * KIB), (0, 100 * KIB), (0, 164 * KIB),
          (0, 227 * KIB), (0, 228 * KIB))
CARVEOUTS = (None, 0, 25, 50, 100)
BARRIERS = (0, 2, 3, 8, 16)


def grid() -> list[Launch]:
    launches = [
        Launch(name, threads, registers, static, dynamic, opt_in, carveout)
        for name, threads, registers, (static, dynamic), carveout, opt_in in itertools.product(
            DEVICES, THREADS, REGISTERS, SHARED, CARVEOUTS, (False, True))
    ]
    launches += [
        Launch(name, threads, 32, 0, dynamic, carveout=carveout, barriers=barriers)
        for name, threads, dynamic, carveout, barriers in itertools.product(
            ("a100", "h100"), (32, 96, 256, 1024), (0, 2 * KIB), (None, 50), BARRIERS)
    ]
    return launches


def test_every_launch_of_the_grid_matches_nvidias_occupancy_calculator(reference, run_report):
    launches = grid()
    mismatches = [problem for launch, expected in zip(launches, nvidia(reference, launches))
                  if (problem := compare(launch, expected))]
    run_report.append(f"occupancy: {len(launches)} launches compared with cuda_occupancy.h, "
                      f"{len(mismatches)} differ")
    assert not mismatches, f"{len(mismatches)} of {len(launches)} differ:\n" + "\n".join(
        mismatches[:20])


def test_the_grid_covers_every_limit_and_every_failure():
    """The comparison above is only as good as its grid: every limit binds somewhere and every
    way a launch can fail happens somewhere."""
    limiters, failures = set(), set()
    for launch in grid():
        try:
            limiters.update(launch.ours().limiters)
        except LaunchLimitError as error:
            failures.add(error.limit)
    assert limiters == set(LIMITS)
    assert failures == set(FAILED_LIMIT) - {REGISTERS_PER_THREAD}


@pytest.mark.parametrize("name", DEVICES)
def test_the_devices_occupancy_figures_are_the_headers(reference, name):
    device = DEVICES[name]
    answer = reference(["A {} {}".format(*device.compute_capability)])[0]
    blocks, shared_unit, register_unit, max_registers, partitions = map(int, answer.split())
    assert device.max_blocks_per_sm == blocks
    assert device.shared_memory_allocation_unit_bytes == shared_unit
    assert device.register_allocation_unit == register_unit
    assert SUB_PARTITIONS_PER_SM == partitions
    # The header allows 256 registers per thread from 7.0 on; the Programming Guide's (and
    # ptxas') maximum is 255, which the device table keeps.
    assert device.max_registers_per_thread == min(max_registers, 255)


def test_256_registers_per_thread_are_refused_though_the_header_accepts_them(reference):
    launch = Launch("h100", 32, 256)
    assert nvidia(reference, [launch])[0].blocks_per_sm > 0
    with pytest.raises(LaunchLimitError) as error:
        launch.ours()
    assert error.value.limit == REGISTERS_PER_THREAD
    assert (error.value.requested, error.value.allowed) == (256, 255)


# -- worked examples ------------------------------------------------------------------------------

def test_forty_registers_per_thread_hold_an_h100_at_five_eighths():
    result = occupancy(get_device("h100"), 320, 40)
    # 40 x 32 = 1280 registers per warp; a sub-partition's 16384 hold 12 warps, the SM 48:
    # 4 blocks of 10 warps = 40 of 64 warps.
    assert result.blocks_limit_registers == 4
    assert (result.blocks_per_sm, result.active_warps_per_sm) == (4, 40)
    assert result.occupancy == 0.625
    assert result.limiter == "registers"
    assert result.summary == "theoretical occupancy 62.5 %, limited by registers (40 per thread)"


def test_registers_are_counted_per_sub_partition_not_per_sm():
    # 65536 / 1280 = 51 warps would fit one register file; four quarters hold 4 x 12 = 48.
    result = occupancy(get_device("a100"), 32, 40)
    assert result.blocks_limit_registers == 48


def test_ties_are_named_in_the_documented_order():
    result = occupancy(get_device("a100"), 256, 32)  # 8 blocks by warps and by registers
    assert result.limiters == ("warps", "registers")
    assert result.limiter == "warps"
    assert result.occupancy == 1.0


def test_small_blocks_hit_the_block_slots():
    result = occupancy(get_device("l4"), 32, 16)
    assert result.limiter == "blocks"
    assert result.blocks_per_sm == 24
    assert result.occupancy == 0.5
    assert result.summary.endswith("limited by blocks per SM (24 at most)")


def test_shared_memory_adds_the_runtime_reserve_and_rounds_to_the_unit():
    a100 = occupancy(get_device("a100"), 128, 32, 0, 16 * KIB + 1)
    assert a100.shared_bytes_per_block == 17 * KIB + 128
    assert a100.blocks_limit_shared_memory == 164 * KIB // (17 * KIB + 128)
    v100 = occupancy(get_device("v100"), 128, 32, 0, 16 * KIB + 1)
    assert v100.shared_bytes_per_block == 16 * KIB + 256


def test_the_default_carveout_is_the_largest_and_the_smallest_that_keeps_occupancy_is_told():
    result = occupancy(get_device("h100"), 256, 32, 0, 7 * KIB)  # 8 KiB a block, 8 blocks
    assert result.carveout_bytes == 228 * KIB
    assert result.blocks_per_sm == 8
    assert result.min_carveout_bytes == 64 * KIB


def test_a_carveout_preference_is_rounded_up_to_a_supported_size():
    # Half of 228 KiB is 114 KiB; the next size the H100 supports is 132 KiB.
    result = occupancy(get_device("h100"), 128, 32, 0, 31 * KIB, carveout_percent=50)
    assert result.carveout_bytes == 132 * KIB
    assert result.blocks_per_sm == 4
    assert result.limiter == "shared_memory"
    assert result.summary.endswith("limited by shared memory (32 KiB per block)")


def test_a_preference_too_small_for_one_block_gives_the_smallest_size_that_holds_one():
    result = occupancy(get_device("v100"), 128, 32, 0, 5 * KIB, carveout_percent=0)
    assert result.carveout_bytes == 8 * KIB
    assert result.blocks_per_sm == 1


def test_hopper_counts_named_barriers():
    result = occupancy(get_device("h100"), 32, 16, barriers_per_block=16)
    assert result.blocks_limit_barriers == 4  # 2 x 32 barriers per SM
    assert result.limiter == "barriers"
    assert occupancy(get_device("a100"), 32, 16, barriers_per_block=16).blocks_limit_barriers \
        is None


def test_the_result_is_plain_json():
    result = occupancy(get_device("l4"), 200, 65, 2 * KIB, 0, carveout_percent=25)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["device"] == "l4"
    assert data["limiters"] == list(result.limiters)
    assert data["summary"] == result.summary
    assert 0 < data["occupancy"] <= 1


# -- launches that cannot run --------------------------------------------------------------------

def test_too_many_threads_per_block_is_refused():
    with pytest.raises(LaunchLimitError, match="1025 threads.*1024") as error:
        occupancy(get_device("a100"), 1025, 32)
    assert error.value.limit == THREADS_PER_BLOCK


def test_too_many_registers_per_block_is_refused():
    with pytest.raises(LaunchLimitError, match="needs 131072 registers.*65536") as error:
        occupancy(get_device("h100"), 512, 255)
    assert error.value.limit == REGISTERS_PER_BLOCK


def test_the_register_check_rounds_warps_up_to_the_sub_partitions():
    # 136 registers -> 4352 per warp; 15 warps need 65280 <= 65536, but the launch check
    # counts 16 warps: 69632.
    with pytest.raises(LaunchLimitError, match="rounds the block's 15 warps up to 16") as error:
        occupancy(get_device("a100"), 480, 136)
    assert (error.value.requested, error.value.allowed) == (69632, 65536)
    assert occupancy(get_device("a100"), 384, 136).blocks_per_sm == 1


def test_more_than_48_kib_of_shared_memory_needs_the_opt_in():
    a100 = get_device("a100")
    with pytest.raises(LaunchLimitError, match="without opting in.*163 KiB") as error:
        occupancy(a100, 128, 32, 0, 48 * KIB + 1, shared_opt_in=False)
    assert (error.value.limit, error.value.allowed) == (SHARED_MEMORY_PER_BLOCK, 48 * KIB)
    assert occupancy(a100, 128, 32, 0, 48 * KIB + 1).blocks_per_sm == 3


def test_more_than_the_opt_in_maximum_is_refused():
    with pytest.raises(LaunchLimitError, match="164 KiB.*163 KiB.*with opt-in") as error:
        occupancy(get_device("a100"), 128, 32, 0, 164 * KIB)
    assert error.value.requested == 164 * KIB
    assert occupancy(get_device("h100"), 128, 32, 0, 227 * KIB).blocks_per_sm == 1


@pytest.mark.parametrize("arguments", [
    dict(threads_per_block=0, registers_per_thread=32),
    dict(threads_per_block=32, registers_per_thread=-1),
    dict(threads_per_block=32, registers_per_thread=32, shared_dynamic_bytes=-1),
    dict(threads_per_block=32, registers_per_thread=32, carveout_percent=101),
    dict(threads_per_block=32, registers_per_thread=32, barriers_per_block=17),
])
def test_impossible_arguments_are_value_errors(arguments):
    with pytest.raises(ValueError) as error:
        occupancy(get_device("h100"), **arguments)
    assert not isinstance(error.value, LaunchLimitError)


@pytest.mark.parametrize("name", DEVICES)
def test_every_device_has_carveout_sizes_ending_at_its_shared_memory_per_sm(name):
    device = DEVICES[name]
    sizes = SHARED_MEMORY_CARVEOUTS_KIB[device.compute_capability]
    assert sizes[-1] * KIB == device.shared_memory_per_sm_bytes
    assert list(sizes) == sorted(set(sizes))


# -- properties ----------------------------------------------------------------------------------

launches = st.fixed_dictionaries({
    "device": st.sampled_from(sorted(DEVICES)),
    "threads": st.integers(1, 1024),
    "registers": st.integers(0, 255),
    "static_shared": st.integers(0, 48 * KIB),
    "dynamic_shared": st.integers(0, 228 * KIB),
    "carveout": st.none() | st.integers(0, 100),
    "barriers": st.integers(0, 16),
})


def occupancy_or_none(launch: dict, **changes):
    """The occupancy of `launch` with `changes`, None when it cannot run."""
    launch = {**launch, **changes}
    try:
        return Launch(**launch).ours()
    except LaunchLimitError:
        return None


def at_most(more, fewer) -> bool:
    """Using more of a resource never gives more occupancy (nor makes a failing launch run)."""
    if more is None:
        return True
    return fewer is not None and more.occupancy <= fewer.occupancy


@settings(max_examples=300, deadline=None)
@given(launches, st.integers(0, 255))
def test_more_registers_never_raise_occupancy(launch, extra):
    more = min(255, launch["registers"] + extra)
    assert at_most(occupancy_or_none(launch, registers=more), occupancy_or_none(launch))


@settings(max_examples=300, deadline=None)
@given(launches, st.integers(0, 228 * KIB))
def test_more_shared_memory_never_raises_occupancy(launch, extra):
    more = launch["dynamic_shared"] + extra
    assert at_most(occupancy_or_none(launch, dynamic_shared=more), occupancy_or_none(launch))


@settings(max_examples=300, deadline=None)
@given(launches)
def test_a_carveout_preference_never_beats_the_drivers_choice(launch):
    assert at_most(occupancy_or_none(launch), occupancy_or_none(launch, carveout=None))


@settings(max_examples=300, deadline=None)
@given(launches)
def test_resident_threads_never_exceed_the_sm(launch):
    result = occupancy_or_none(launch)
    if result is None:
        return
    device = get_device(launch["device"])
    assert result.blocks_per_sm >= 1
    assert result.blocks_per_sm * launch["threads"] <= device.max_threads_per_sm
    assert result.active_warps_per_sm <= device.max_warps_per_sm
    assert result.blocks_per_sm * result.shared_bytes_per_block <= result.carveout_bytes
    assert result.min_carveout_bytes <= result.carveout_bytes
