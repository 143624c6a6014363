"""The build stage: nvcc/ptxas from the pip wheels, resources per kernel, errors, the cache.

Every kernel here is hand-written, so these tests do not depend on the codegen. Tests that run
the compiler skip, saying why, when the CUDA wheels are not installed.
"""

import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.toolchain import (BuildCache, BuildOptions, ToolchainError, arch_for_device,
                            build_batch, build_kernels, find_toolchain)
from compiler.toolchain import nvcc as nvcc_module
from compiler.toolchain.cache import cache_root
from compiler.toolchain.ptx import cubin_functions, cubin_section_sizes, parse_resources, split_ptx
from compiler.toolchain.locate import REQUIRED_FILES, check_arch
from compiler.errors import InputError
from compiler.limits import ConfigurationError
from compiler.runtime.gpu import GpuRunner, StepNotRunnable

try:
    TOOLCHAIN = find_toolchain()
    NO_TOOLCHAIN = ""
except ToolchainError as error:
    TOOLCHAIN = None
    NO_TOOLCHAIN = str(error)

needs_nvcc = pytest.mark.skipif(TOOLCHAIN is None,
                                reason=f"no CUDA compiler from pip: {NO_TOOLCHAIN}")

ELEMENTWISE = """\
extern "C" __global__ void __launch_bounds__(256)
elementwise(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 4096) out[i] = expf(a[i]) * b[i] + tanhf(b[i]);
}
"""

BF16 = """\
#include <cuda_bf16.h>
extern "C" __global__ void bf16_scale(const __nv_bfloat16* __restrict__ x,
                                      __nv_bfloat16* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1024) y[i] = __float2bfloat16_rn(__bfloat162float(x[i]) * 0.5f);
}
"""

DYNAMIC_SHARED = """\
extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  float* partial = reinterpret_cast<float*>(shared_bytes);
  partial[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
"""

STATIC_SHARED = """\
extern "C" __global__ void reverse_block(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float buf[256];
  buf[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  y[blockIdx.x * 256 + threadIdx.x] = buf[255 - threadIdx.x];
}
"""

GRID_SYNC = """\
#include <cooperative_groups.h>
extern "C" __global__ void two_phase(float* __restrict__ data, float* __restrict__ total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(total, data[i]);
  cooperative_groups::this_grid().sync();
  data[i] = data[i] / *total;
}
"""

HUGE_LOCAL_ARRAY = """\
extern "C" __global__ void local_table(const float* __restrict__ x, float* __restrict__ y) {
  float table[4096];
  for (int k = 0; k < 4096; ++k) table[k] = x[k * 7 % 4096];
  y[threadIdx.x] = table[(threadIdx.x * 13) % 4096];
}
"""

MANY_LIVE_VALUES = """\
extern "C" __global__ void many_live(const float* __restrict__ x, float* __restrict__ y) {
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = x[k * blockDim.x + threadIdx.x];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) s += v[k] * v[(k * 7 + 3) % 64];
  y[threadIdx.x] = s;
}
"""

BROKEN = """\
extern "C" __global__ void broken(float* __restrict__ y) {
  float x = 1.0f
  y[threadIdx.x] = x;
}
"""

GOOD_KERNELS = {"elementwise": ELEMENTWISE, "bf16_scale": BF16, "block_sum": DYNAMIC_SHARED,
                "reverse_block": STATIC_SHARED, "two_phase": GRID_SYNC}


@pytest.fixture
def cache(tmp_path) -> BuildCache:
    return BuildCache(tmp_path / "build-cache")


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def hand_written_batch(request, tmp_path_factory):
    """The good kernels, the huge-local-array kernel and the broken one, built in one batch."""
    if TOOLCHAIN is None:
        pytest.skip(f"no CUDA compiler from pip: {NO_TOOLCHAIN}")
    sources = GOOD_KERNELS | {"local_table": HUGE_LOCAL_ARRAY, "broken": BROKEN}
    cache = BuildCache(tmp_path_factory.mktemp("build-cache"))
    return build_batch(sources, request.param, cache=cache)


class CountingRun:
    """Stands in for nvcc._run: counts compiler processes, then runs them."""

    def __init__(self, real):
        self.real = real
        self.commands = []

    def __call__(self, command):
        self.commands.append(command)
        return self.real(command)


@pytest.fixture
def counted_runs(monkeypatch) -> CountingRun:
    counter = CountingRun(nvcc_module._run)
    monkeypatch.setattr(nvcc_module, "_run", counter)
    return counter


# -- the toolchain ---------------------------------------------------------------------------------

@needs_nvcc
def test_the_toolchain_comes_from_the_pip_wheels_with_its_headers():
    assert TOOLCHAIN.nvcc.name == "nvcc" and TOOLCHAIN.nvcc.is_file()
    assert TOOLCHAIN.ptxas.parent == TOOLCHAIN.nvcc.parent
    assert "site-packages" in str(TOOLCHAIN.root)
    headers = {"cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h"}
    assert headers <= {path.name for path in TOOLCHAIN.include_dirs[0].iterdir()}
    assert TOOLCHAIN.version.count(".") == 2


def test_a_missing_compiler_names_the_pip_package_to_install(tmp_path):
    with pytest.raises(ToolchainError, match="nvidia-cuda-nvcc"):
        find_toolchain(tmp_path)


def test_a_system_toolkit_named_in_the_environment_is_the_default_root(tmp_path):
    from compiler.toolchain.locate import CUDA_ROOT_VARIABLE, default_root

    assert default_root({CUDA_ROOT_VARIABLE: str(tmp_path)}) == tmp_path
    assert default_root({CUDA_ROOT_VARIABLE: "  "}) != Path("  ")


def test_a_wheel_directory_without_nvcc_does_not_hide_a_system_toolkit(tmp_path, monkeypatch):
    """PyTorch's CUDA wheels make an nvidia/cu13 of libraries only (as on the GPU machines):
    a toolkit with nvcc is found instead; with none anywhere, the wheel directory is named so
    that its check says which pip packages to install."""
    import importlib.util
    import types

    from compiler.toolchain import locate

    site = tmp_path / "site" / "nvidia"
    (site / "cu13" / "lib").mkdir(parents=True)
    spec = types.SimpleNamespace(submodule_search_locations=[str(site)])
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: spec if name == "nvidia" else None)
    system = tmp_path / "cuda"
    assert locate.default_root({}, system=system) == site / "cu13"
    (system / "bin").mkdir(parents=True)
    (system / "bin" / "nvcc").write_text("")
    assert locate.default_root({}, system=system) == system
    (site / "cu13" / "bin").mkdir()
    (site / "cu13" / "bin" / "nvcc").write_text("")
    assert locate.default_root({}, system=system) == site / "cu13"


def test_missing_cccl_headers_name_the_nvidia_cuda_cccl_package(tmp_path):
    for relative, package in REQUIRED_FILES:
        if package != "nvidia-cuda-cccl":
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text("")
    with pytest.raises(ToolchainError) as raised:
        find_toolchain(tmp_path)
    assert "nvidia-cuda-cccl" in str(raised.value)
    assert "nvidia-cuda-nvcc" not in str(raised.value)
    assert "nv/target" in str(raised.value)


def test_the_arch_comes_from_the_device_table():
    assert arch_for_device("h100") == "sm_90"
    assert arch_for_device("A100") == "sm_80"
    with pytest.raises(InputError, match="unknown device"):
        arch_for_device("tpu")


@pytest.mark.parametrize("arch", ["90", "sm90", "compute_90", "sm_9", ""])
def test_a_malformed_arch_is_rejected(arch):
    with pytest.raises(ValueError, match="sm_80, sm_90"):
        check_arch(arch)


# -- hand-written kernels --------------------------------------------------------------------------

@needs_nvcc
def test_good_kernels_build_with_plausible_registers_ptx_and_cubin(hand_written_batch):
    for name in GOOD_KERNELS:
        result = hand_written_batch.results[name]
        assert result.ok, result.error
        assert result.error is None
        assert 0 < result.registers <= 255, name
        assert f".entry {name}(" in result.ptx
        assert f".target {result.arch}" in result.ptx
        assert result.cubin.startswith(b"\x7fELF")
        assert 0 < result.code_bytes < result.cubin_bytes
        assert result.constant_bytes > 0        # the parameter bank holds the pointers


@needs_nvcc
def test_each_cubin_holds_only_its_own_kernel_under_its_cubin_function(hand_written_batch):
    for name in GOOD_KERNELS:
        result = hand_written_batch.results[name]
        sections = cubin_section_sizes(result.cubin)
        assert [s for s in sections if s.startswith(".text.")] == [
            f".text.{result.cubin_function}"]
        assert result.cubin_function in cubin_functions(result.cubin)


@needs_nvcc
def test_a_static_shared_array_of_256_floats_reports_1024_bytes(hand_written_batch):
    result = hand_written_batch.results["reverse_block"]
    assert result.shared_static_bytes == 1024
    assert result.barriers == 1


@needs_nvcc
def test_dynamic_shared_memory_is_not_counted_as_static(hand_written_batch):
    result = hand_written_batch.results["block_sum"]
    assert result.shared_static_bytes == 0
    assert result.barriers == 1


@needs_nvcc
def test_elementwise_kernels_use_no_shared_memory_stack_or_barriers(hand_written_batch):
    for name in ("elementwise", "bf16_scale"):
        result = hand_written_batch.results[name]
        assert (result.shared_static_bytes, result.stack_bytes, result.barriers) == (0, 0, 0)
        assert (result.spill_store_bytes, result.spill_load_bytes) == (0, 0)


@needs_nvcc
def test_constant_data_counts_towards_the_kernels_constant_bytes(cache):
    plain = ELEMENTWISE.replace("elementwise", "plain")
    with_table = ("__constant__ float coefficients[64];\n" + ELEMENTWISE.replace(
        "elementwise", "with_table").replace("* b[i]", "* coefficients[i % 64]"))
    results = build_kernels({"plain": plain, "with_table": with_table}, "sm_90", cache=cache)
    assert results["with_table"].constant_bytes >= results["plain"].constant_bytes + 64 * 4


@needs_nvcc
def test_a_huge_local_array_reports_its_stack_frame(hand_written_batch):
    result = hand_written_batch.results["local_table"]
    assert result.ok, result.error
    assert result.stack_bytes >= 4096 * 4


@needs_nvcc
def test_a_register_cap_makes_ptxas_report_spills(cache):
    capped = build_kernels({"many_live": MANY_LIVE_VALUES}, "sm_80",
                           options=BuildOptions(max_registers=32), cache=cache)["many_live"]
    free = build_kernels({"many_live": MANY_LIVE_VALUES}, "sm_80", cache=cache)["many_live"]
    assert capped.registers <= 32 < free.registers
    assert capped.spill_store_bytes > 0 and capped.spill_load_bytes > 0
    assert free.spill_store_bytes == 0


@needs_nvcc
def test_a_syntax_error_names_its_line_while_the_rest_of_the_batch_builds(hand_written_batch):
    broken = hand_written_batch.results["broken"]
    assert not broken.ok
    assert broken.cubin == b"" and broken.ptx == ""
    assert "broken.cu(3): error" in broken.error
    assert '>    3 |   y[threadIdx.x] = x;' in broken.error
    assert "fx_unit_" not in broken.error
    assert all(hand_written_batch.results[name].ok for name in GOOD_KERNELS)


@needs_nvcc
def test_a_ptxas_error_is_reported_for_that_kernel_only(cache):
    too_much_shared = STATIC_SHARED.replace("buf[256]", "buf[20000]").replace(
        "reverse_block", "too_much_shared")
    results = build_kernels({"too_much_shared": too_much_shared, "elementwise": ELEMENTWISE},
                            "sm_90", cache=cache)
    assert not results["too_much_shared"].ok
    assert "too much shared data" in results["too_much_shared"].error
    assert results["elementwise"].ok


@needs_nvcc
def test_sources_that_clash_when_combined_still_build_alone(cache, counted_runs):
    helper = "__device__ float twice(float v) { return 2.0f * v; }\n"
    first = helper + 'extern "C" __global__ void first(float* y) { y[0] = twice(y[0]); }\n'
    second = helper + 'extern "C" __global__ void second(float* y) { y[1] = twice(y[1]); }\n'
    results = build_kernels({"first": first, "second": second}, "sm_90", cache=cache)
    assert results["first"].ok and results["second"].ok
    nvcc_runs = [c for c in counted_runs.commands if Path(c[0]).name == "nvcc"]
    assert len(nvcc_runs) == 3     # combined (redefinition), then the rest, then the suspect


@needs_nvcc
def test_a_source_without_the_named_kernel_is_reported_without_compiling(cache, counted_runs):
    results = build_kernels({"missing": ELEMENTWISE, "bad name": ELEMENTWISE}, "sm_90",
                            cache=cache)
    assert "no __global__ function named 'missing'" in results["missing"].error
    assert "not a C identifier" in results["bad name"].error
    assert counted_runs.commands == []


@needs_nvcc
def test_a_macro_defined_by_one_source_does_not_leak_into_the_next(cache):
    first = ('#define SCALE 5.0f\n'
             'extern "C" __global__ void first(float* y) { y[threadIdx.x] *= SCALE; }\n')
    second = ('#ifndef SCALE\n#define SCALE 7.0f\n#endif\n'
              'extern "C" __global__ void second(float* y) { y[threadIdx.x] *= SCALE; }\n')
    batch = build_batch({"first": first, "second": second}, "sm_90", cache=cache)
    assert batch.nvcc_invocations == 1
    assert "0f40A00000" in batch.results["first"].ptx         # 5.0f
    assert "0f40E00000" in batch.results["second"].ptx        # 7.0f


# -- the cache and duplicates ----------------------------------------------------------------------

@needs_nvcc
def test_a_second_build_hits_the_cache_runs_no_compiler_and_is_identical(cache, counted_runs):
    sources = {"elementwise": ELEMENTWISE, "broken": BROKEN}
    first = build_batch(sources, "sm_90", cache=cache)
    assert counted_runs.commands, "the first build must run the compiler"
    counted_runs.commands.clear()
    second = build_batch(sources, "sm_90", cache=cache)
    assert counted_runs.commands == []
    assert second.results == first.results
    assert (second.front_end_compiles, second.ptxas_runs, second.nvcc_invocations) == (0, 0, 0)


@needs_nvcc
def test_a_compiler_killed_by_a_signal_is_not_cached(cache, monkeypatch):
    real_run = nvcc_module._run

    def killed(command):
        return subprocess.CompletedProcess(command, -9, stdout="", stderr="Killed")

    monkeypatch.setattr(nvcc_module, "_run", killed)
    assert not build_kernels({"elementwise": ELEMENTWISE}, "sm_90", cache=cache)[
        "elementwise"].ok
    monkeypatch.setattr(nvcc_module, "_run", real_run)
    assert build_kernels({"elementwise": ELEMENTWISE}, "sm_90", cache=cache)["elementwise"].ok


@needs_nvcc
def test_another_arch_or_options_miss_the_cache(cache):
    build_kernels({"elementwise": ELEMENTWISE}, "sm_90", cache=cache)
    assert build_batch({"elementwise": ELEMENTWISE}, "sm_80", cache=cache).front_end_compiles == 1
    other_options = BuildOptions(max_registers=64)
    assert build_batch({"elementwise": ELEMENTWISE}, "sm_90", options=other_options,
                       cache=cache).front_end_compiles == 1


@needs_nvcc
def test_editing_an_included_header_invalidates_the_cache(tmp_path, cache):
    include = tmp_path / "include"
    include.mkdir()
    (include / "scale.cuh").write_text("#define SCALE 5.0f\n")
    source = ('#include "scale.cuh"\n'
              'extern "C" __global__ void scaled(float* y) { y[threadIdx.x] *= SCALE; }\n')
    first = build_kernels({"scaled": source}, "sm_90", [include], cache=cache)["scaled"]
    (include / "scale.cuh").write_text("#define SCALE 7.0f\n")
    batch = build_batch({"scaled": source}, "sm_90", [include], cache=cache)
    assert batch.front_end_compiles == 1
    assert batch.results["scaled"].ptx != first.ptx


@needs_nvcc
def test_kernels_identical_but_for_their_name_are_compiled_and_assembled_once(cache,
                                                                             counted_runs):
    copies = {f"copy_{i}": ELEMENTWISE.replace("elementwise", f"copy_{i}") for i in range(3)}
    batch = build_batch(copies | {"reverse_block": STATIC_SHARED}, "sm_90", cache=cache)
    assert batch.unique_kernels == 2
    assert batch.front_end_compiles == 2
    assert batch.nvcc_invocations == 1
    assert batch.ptxas_runs == 2
    assert len([c for c in counted_runs.commands if Path(c[0]).name == "ptxas"]) == 2
    results = [batch.results[name] for name in copies]
    for name, result in zip(copies, results):
        assert result.ok and f".entry {name}(" in result.ptx
        assert f"Compiling entry function '{name}'" in result.ptxas_log
        assert "fx_unit_" not in result.ptx + result.ptxas_log
    # One cubin for all three, holding the kernel under one symbol that none of them is named.
    assert len({r.cubin for r in results}) == 1
    assert len({r.cubin_function for r in results}) == 1
    symbol = results[0].cubin_function
    assert symbol not in copies and symbol in cubin_functions(results[0].cubin)
    resources = {(r.registers, r.spill_store_bytes, r.spill_load_bytes, r.shared_static_bytes,
                  r.stack_bytes, r.barriers, r.constant_bytes, r.code_bytes) for r in results}
    assert len(resources) == 1
    assert batch.results["reverse_block"].cubin_function != symbol


@needs_nvcc
def test_a_shared_cubin_has_the_resources_ptxas_reports_for_each_name_alone(cache, tmp_path):
    """The placeholder name does not change what ptxas makes of a kernel: assembling each
    name's own PTX (which defines the kernel under that name) reports the same figures."""
    sources = {"first": MANY_LIVE_VALUES.replace("many_live", "first"),
               "second": MANY_LIVE_VALUES.replace("many_live", "second")}
    batch = build_batch(sources, "sm_80", options=BuildOptions(max_registers=32), cache=cache)
    assert batch.ptxas_runs == 1
    for name, result in batch.results.items():
        (tmp_path / f"{name}.ptx").write_text(result.ptx)
        completed = subprocess.run(
            [str(TOOLCHAIN.ptxas), "-arch=sm_80", *BuildOptions(max_registers=32).ptxas_flags(),
             str(tmp_path / f"{name}.ptx"), "-o", str(tmp_path / f"{name}.cubin")],
            capture_output=True, text=True, check=True)
        alone = parse_resources(completed.stderr + completed.stdout, name)
        assert (alone.registers, alone.spill_store_bytes, alone.spill_load_bytes,
                alone.shared_static_bytes, alone.stack_bytes, alone.barriers) == (
            result.registers, result.spill_store_bytes, result.spill_load_bytes,
            result.shared_static_bytes, result.stack_bytes, result.barriers)
        assert alone.spill_store_bytes > 0     # the cap bites: the figures are not all zero
        sections = cubin_section_sizes((tmp_path / f"{name}.cubin").read_bytes())
        assert sections[f".text.{name}"] == result.code_bytes
        assert sections[f".nv.constant0.{name}"] == result.constant_bytes


@needs_nvcc
def test_a_kernel_built_under_another_name_before_comes_from_both_caches(cache):
    build_kernels({"elementwise": ELEMENTWISE}, "sm_90", cache=cache)
    batch = build_batch({"renamed": ELEMENTWISE.replace("elementwise", "renamed")}, "sm_90",
                        cache=cache)
    assert (batch.front_end_compiles, batch.ptxas_runs, batch.nvcc_invocations) == (0, 0, 0)
    result = batch.results["renamed"]
    assert result.ok and ".entry renamed(" in result.ptx
    assert result.cubin_function in cubin_functions(result.cubin)


@needs_nvcc
def test_a_large_batch_is_compiled_in_chunks_and_a_broken_source_loses_only_itself(
        cache, counted_runs, monkeypatch):
    monkeypatch.setattr(nvcc_module, "CHUNK_SOURCE_BYTES", 1)
    sources = GOOD_KERNELS | {"broken": BROKEN}
    batch = build_batch(sources, "sm_90", cache=cache)
    assert all(batch.results[name].ok for name in GOOD_KERNELS)
    assert "broken.cu(3): error" in batch.results["broken"].error
    # Two chunks; the one holding the broken source again without it, and the suspect alone.
    assert batch.nvcc_invocations == 4
    single = build_batch(GOOD_KERNELS, "sm_90", cache=BuildCache(cache.directory / "single"))
    for name in GOOD_KERNELS:
        chunked, alone = batch.results[name], single.results[name]
        assert (chunked.registers, chunked.code_bytes, chunked.shared_static_bytes) == (
            alone.registers, alone.code_bytes, alone.shared_static_bytes)


def test_chunks_are_about_equal_in_size_and_keep_the_batchs_order(monkeypatch):
    monkeypatch.setattr(nvcc_module, "CHUNK_SOURCE_BYTES", 100)
    monkeypatch.setattr(nvcc_module, "PARALLEL_JOBS", 2)
    units = [nvcc_module._Unit(f"{i:064x}", "x" * size)
             for i, size in enumerate([60, 10, 50, 30, 40, 20])]
    chunks = nvcc_module._chunks(units)
    assert len(chunks) == 2
    sizes = [sum(len(u.normalised) for u in chunk) for chunk in chunks]
    assert sorted(sizes) == [100, 110]
    for chunk in chunks:
        assert chunk == sorted(chunk, key=units.index)
    monkeypatch.setattr(nvcc_module, "CHUNK_SOURCE_BYTES", 1000)
    assert nvcc_module._chunks(units) == [units]
    assert nvcc_module._chunks([]) == []


class FakeModule:
    """Stands in for CuPy's Module: finds a function the way the driver would, in the cubin's
    symbol table or as a PTX .entry."""

    class Refused(Exception):
        pass

    def load(self, image: bytes) -> None:
        self.image = image

    def get_function(self, symbol: str) -> tuple[str, str]:
        if self.image.startswith(b"\x7fELF"):
            if symbol not in cubin_functions(self.image):
                raise self.Refused(f"CUDA_ERROR_NOT_FOUND: {symbol}")
            return "cubin", symbol
        if f".entry {symbol}(".encode() not in self.image:
            raise self.Refused(f"CUDA_ERROR_NOT_FOUND: {symbol}")
        return "PTX", symbol


def fake_runner(arch: str) -> GpuRunner:
    runner = object.__new__(GpuRunner)
    runner.arch, runner._functions = arch, {}
    runner._module_type, runner.cuda_errors = FakeModule, (FakeModule.Refused,)
    return runner


@needs_nvcc
def test_the_gpu_runner_looks_up_the_cubin_function_in_the_cubin_and_the_name_in_the_ptx(
        cache):
    copies = {f"copy_{i}": ELEMENTWISE.replace("elementwise", f"copy_{i}") for i in range(2)}
    results = build_kernels(copies, "sm_90", cache=cache)
    for name, result in results.items():
        assert fake_runner("sm_90").load(name, result) == ("cubin", result.cubin_function)
        assert fake_runner("sm_80").load(name, result) == ("PTX", name)
    with pytest.raises(StepNotRunnable, match="cannot load copy_0"):
        fake_runner("sm_90").load("copy_0", replace(results["copy_0"], ptx="",
                                                    cubin_function="missing"))


def test_the_cache_dir_comes_from_the_environment_and_bad_values_fail_loudly(tmp_path):
    assert cache_root({}).parts[-2:] == ("var", "cache")
    assert cache_root({"FUSION_EXPLORER_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert BuildCache.from_env({"FUSION_EXPLORER_CACHE_DIR": str(tmp_path)}).directory == (
        tmp_path / "build")
    a_file = tmp_path / "file"
    a_file.write_text("")
    for value, message in (("", "empty"), ("relative/dir", "not an absolute path"),
                           (str(a_file), "not a directory")):
        with pytest.raises(ConfigurationError, match=message):
            cache_root({"FUSION_EXPLORER_CACHE_DIR": value})


def test_a_truncated_cache_entry_counts_as_a_miss(cache):
    cache.put("ab" * 32, {"ok": True, "cubin": b"\x7fELF\x00", "log": "text"})
    assert cache.get("ab" * 32) == {"ok": True, "cubin": b"\x7fELF\x00", "log": "text"}
    path = cache.directory / "ab" / f"{'ab' * 32}.json"
    path.write_text(path.read_text()[:10])
    assert cache.get("ab" * 32) is None


# -- reading the compiler's output -----------------------------------------------------------------

PTX_WITH_TWO_ENTRIES = """\
//
// Generated by NVIDIA NVVM Compiler
//
.version 9.5
.target sm_90
.address_size 64

.global .align 4 .b8 table_a[16] = {0, 0, 128, 63};
.global .align 4 .b8 table_b[4];
.func  (.param .b32 func_retval0) helper(
\t.param .b32 helper_param_0
)
{
\tld.global.f32 \t%f1, [table_a];
\tret;
}

\t// .globl\tuses_helper
.visible .entry uses_helper(
\t.param .u64 uses_helper_param_0
)
{
\tcall.uni (retval0), helper, (param0);
\tret;
}

\t// .globl\tuses_table_b
.visible .entry uses_table_b(
\t.param .u64 uses_table_b_param_0
)
.maxntid 256, 1, 1
{
\tld.global.f32 \t%f1, [table_b];
\tret;
}
"""


def test_split_ptx_keeps_the_header_and_only_what_each_entry_reaches():
    modules = split_ptx(PTX_WITH_TWO_ENTRIES)
    assert set(modules) == {"uses_helper", "uses_table_b"}
    first, second = modules["uses_helper"], modules["uses_table_b"]
    assert first.startswith(".version 9.5\n.target sm_90\n.address_size 64\n")
    assert "helper(" in first and "table_a[16]" in first        # reached through helper
    assert "table_b" not in first and "uses_table_b" not in first
    assert "table_b[4]" in second and ".maxntid 256" in second
    assert "helper" not in second and "table_a" not in second


@needs_nvcc
def test_progress_counts_every_kernel_once_in_the_callers_thread_as_ptxas_finishes(cache):
    # Good kernels (each assembled by its own ptxas run), a broken one (its front end fails)
    # and one without its named kernel (refused before compiling).
    sources = GOOD_KERNELS | {"broken": BROKEN, "missing": ELEMENTWISE}
    calls = []
    build_batch(sources, "sm_90", cache=cache,
                progress=lambda n: calls.append((n, threading.get_ident())))
    assert sum(n for n, _ in calls) == len(sources)
    assert {thread for _, thread in calls} == {threading.get_ident()}
    # One report per good kernel as its ptxas run ends, not one for the whole batch.
    assert len(calls) >= len(GOOD_KERNELS)
    # From the cache: every kernel still counted once.
    calls.clear()
    build_batch(sources, "sm_90", cache=cache, progress=lambda n: calls.append((n, 0)))
    assert sum(n for n, _ in calls) == len(sources)


def test_the_batch_says_when_it_compiles_and_when_it_assembles_and_how_many(cache):
    # A long batch's count stands still while nvcc compiles to PTX: the phases say what runs.
    sources = GOOD_KERNELS | {"broken": BROKEN}
    said = []
    build_batch(sources, "sm_90", cache=cache, phase=said.append)
    assert len(said) == 2
    assert said[0].startswith(f"compiling {len(sources)} distinct kernels to PTX (nvcc, ")
    assert said[0].endswith("; 0 from the build cache)")
    assert said[1].startswith(f"assembling {len(GOOD_KERNELS)} kernels with ptxas")
    # All from the cache: nothing runs, nothing is said.
    said.clear()
    build_batch(sources, "sm_90", cache=cache, phase=said.append)
    assert said == []
