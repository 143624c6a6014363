"""The CUDA compiler from pip: where nvcc, ptxas and the headers are, and which version.

There is no system toolkit on CI or the development machines. The `nvidia-cuda-nvcc` wheel (and
the wheels it pulls in: nvidia-cuda-crt, nvidia-cuda-runtime, nvidia-nvvm) puts everything
under `site-packages/nvidia/cu13/`: `bin/nvcc`, `bin/ptxas`, `include/` with cuda_fp16.h,
cuda_bf16.h and cooperative_groups.h. Those headers include CCCL (`<nv/target>`,
`<cuda/atomic>`), which comes from the separate `nvidia-cuda-cccl` wheel, installed into
`include/cccl/` (nvcc.profile already adds it as a system include directory).

`find_toolchain()` checks all of that once and says which pip package to install when a piece
is missing, instead of letting nvcc fail later with "nv/target: No such file or directory".

A machine with a system CUDA 13 toolkit and no compiler wheels (the lent GPU machines' image)
names it in FUSION_EXPLORER_CUDA_ROOT (e.g. /usr/local/cuda): a CUDA 13 toolkit has the same
layout (bin/, nvvm/, include/ with CCCL under include/cccl/), and the same files are checked.
Unnamed, it is still found when no wheel directory holds an nvcc: PyTorch's CUDA wheels make
an `nvidia/cu13/` of runtime libraries only, which must not hide a toolkit in /usr/local/cuda.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from compiler.target.devices import get_device

# What must exist under nvidia/cu13/, and the pip package that installs it.
REQUIRED_FILES: tuple[tuple[str, str], ...] = (
    ("bin/nvcc", "nvidia-cuda-nvcc"),
    ("bin/ptxas", "nvidia-cuda-nvcc"),
    ("nvvm/bin/cicc", "nvidia-nvvm"),
    ("include/crt/host_config.h", "nvidia-cuda-crt"),
    ("include/cuda_runtime.h", "nvidia-cuda-runtime"),
    ("include/cuda_fp16.h", "nvidia-cuda-runtime"),
    ("include/cuda_bf16.h", "nvidia-cuda-runtime"),
    ("include/cooperative_groups.h", "nvidia-cuda-runtime"),
    ("include/cccl/nv/target", "nvidia-cuda-cccl"),
    ("include/cccl/cuda/atomic", "nvidia-cuda-cccl"),
)

# A toolkit root to use instead of the wheels' (see the module docstring).
CUDA_ROOT_VARIABLE = "FUSION_EXPLORER_CUDA_ROOT"

_ARCH = re.compile(r"sm_\d{2,3}[af]?")


class ToolchainError(RuntimeError):
    """The CUDA compiler or its headers are missing or unusable; the message says what to
    install."""


@dataclass(frozen=True)
class Toolchain:
    root: Path            # .../site-packages/nvidia/cu13
    nvcc: Path
    ptxas: Path
    include_dirs: tuple[Path, ...]   # the wheel's own, which nvcc.profile adds by itself
    version: str          # "13.5.37", from `nvcc --version`
    fingerprint: str      # version + a digest of the header tree: part of every cache key


# Where a system toolkit is, when no wheel brings nvcc.
SYSTEM_ROOT = Path("/usr/local/cuda")


def default_root(environ: Mapping[str, str] | None = None,
                 system: Path = SYSTEM_ROOT) -> Path | None:
    """FUSION_EXPLORER_CUDA_ROOT when set; else the first `nvidia/cu13` of the `nvidia`
    namespace packages that has bin/nvcc; else `system` when it has bin/nvcc; else the first
    `nvidia/cu13` (whose check then names the wheels to install); else None."""
    environ = os.environ if environ is None else environ
    if environ.get(CUDA_ROOT_VARIABLE, "").strip():
        return Path(environ[CUDA_ROOT_VARIABLE])
    spec = importlib.util.find_spec("nvidia")
    locations = [] if spec is None or spec.submodule_search_locations is None \
        else list(spec.submodule_search_locations)
    wheels = [Path(location) / "cu13" for location in locations
              if (Path(location) / "cu13").is_dir()]
    for candidate in wheels:
        if (candidate / "bin" / "nvcc").is_file():
            return candidate
    if (system / "bin" / "nvcc").is_file():
        return system
    return wheels[0] if wheels else None


def find_toolchain(root: Path | str | None = None) -> Toolchain:
    """The toolchain under `root` (default: the installed wheels); ToolchainError naming the
    pip package to install when anything is missing. Cached per root."""
    if root is None:
        root = default_root()
        if root is None:
            raise ToolchainError(
                "the CUDA compiler is not installed: no nvidia/cu13 directory in site-packages. "
                "Install the pip package nvidia-cuda-nvcc (pip install -r requirements.txt).")
    return _find_toolchain(Path(root).resolve())


@functools.lru_cache(maxsize=8)
def _find_toolchain(root: Path) -> Toolchain:
    missing: dict[str, list[str]] = {}
    for relative, package in REQUIRED_FILES:
        if not (root / relative).is_file():
            missing.setdefault(package, []).append(relative)
    if missing:
        details = "; ".join(f"{package} (missing {', '.join(files)})"
                            for package, files in missing.items())
        raise ToolchainError(
            f"the CUDA toolchain under {root} is incomplete: install the pip package(s) "
            f"{details}.")
    nvcc = root / "bin" / "nvcc"
    version = _nvcc_version(nvcc)
    include_dirs = (root / "include", root / "include" / "cccl")
    fingerprint = hashlib.sha256(
        f"{version}\n{_tree_digest(root / 'include')}".encode()).hexdigest()
    return Toolchain(root=root, nvcc=nvcc, ptxas=root / "bin" / "ptxas",
                     include_dirs=include_dirs, version=version, fingerprint=fingerprint)


def _nvcc_version(nvcc: Path) -> str:
    try:
        completed = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                                   timeout=60)
    except OSError as error:
        raise ToolchainError(f"cannot run {nvcc}: {error}. Reinstall the pip package "
                             "nvidia-cuda-nvcc.") from error
    match = re.search(r"V(\d+\.\d+\.\d+)", completed.stdout)
    if completed.returncode != 0 or match is None:
        raise ToolchainError(f"{nvcc} --version failed: {completed.stderr or completed.stdout}")
    return match.group(1)


def _tree_digest(directory: Path) -> str:
    """A digest of every file's path, size and modification time: it changes whenever a wheel
    that writes headers here is installed or upgraded, without reading thousands of files."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            stat = path.stat()
            digest.update(f"{path.relative_to(directory)}\0{stat.st_size}\0"
                          f"{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def check_arch(arch: str) -> str:
    """`arch` if it is an nvcc -arch value like "sm_90"; ValueError otherwise."""
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"'{arch}' is not a GPU architecture: expected sm_XX, e.g. sm_80, sm_90")
    return arch


def arch_for_device(device_name: str) -> str:
    """The -arch value for a device from the cost tables ("h100" -> "sm_90")."""
    return check_arch(get_device(device_name).arch)
