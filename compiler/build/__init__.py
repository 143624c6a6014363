"""The build stage: generated CUDA source -> PTX, cubin and the resources ptxas reports.

`build_kernels(sources, arch)` is the entry point (nvcc.py says how it compiles many kernels
at once); `find_toolchain()` locates nvcc from the pip wheels (toolchain.py); results are cached
by content under FUSION_EXPLORER_CACHE_DIR or var/cache (cache.py).
"""

from compiler.build.cache import BuildCache, cache_root
from compiler.build.nvcc import BuildBatch, BuildOptions, BuildResult, build_batch, build_kernels
from compiler.build.toolchain import Toolchain, ToolchainError, arch_for_device, find_toolchain

__all__ = ["BuildBatch", "BuildCache", "BuildOptions", "BuildResult", "Toolchain",
           "ToolchainError", "arch_for_device", "build_batch", "build_kernels", "cache_root",
           "find_toolchain"]
