"""The CUDA toolchain: generated CUDA source -> PTX, cubin and the resources ptxas reports.

`build_kernels(sources, arch)` is the entry point (nvcc.py says how it compiles many kernels
at once); `find_toolchain()` locates nvcc and ptxas from the pip wheels (locate.py); results
are cached by content under FUSION_EXPLORER_CACHE_DIR or var/cache (cache.py). emulate.py
compiles the same source with g++ against cuda_emu.h to run it on the CPU, for tests without
a GPU.
"""

from compiler.toolchain.cache import BuildCache, cache_root
from compiler.toolchain.locate import Toolchain, ToolchainError, arch_for_device, find_toolchain
from compiler.toolchain.nvcc import (BuildBatch, BuildOptions, BuildResult, build_batch,
                                     build_kernels)

__all__ = ["BuildBatch", "BuildCache", "BuildOptions", "BuildResult", "Toolchain",
           "ToolchainError", "arch_for_device", "build_batch", "build_kernels", "cache_root",
           "find_toolchain"]
