"""Run CUDA kernels on the CPU: compile the exact .cu text with g++ against `cuda_emu.h`.

    module = compile_for_emulation(source, ["add"], include_dirs=[prelude_dir])
    module.launch("add", grid=(4,), block=(256,), shared_bytes=0, args=[a, b, out])

`compile_for_emulation` writes the source and a generated launcher into one translation unit,
compiles it to a shared library and loads it with ctypes. The launcher has, per kernel,

    extern "C" int fx_launch_<name>(void** args, int gx, int gy, int gz, int bx, int by, int bz,
                                    size_t smem, int cooperative, char* error, size_t error_len)
    extern "C" int fx_params_<name>(long long* element_sizes, int* is_const, int capacity)

Both are one line each: `fx_emu::detail::launch<&name>` is a template over the kernel's function
pointer, which casts `args[i]` to the type of parameter i, so the launcher needs no parsing of
the kernel's signature (and a kernel with a non-pointer parameter is a compile error naming the
contract). `fx_params_` tells Python each parameter's element size and constness, so passing a
float64 array for a `float*` or a read-only array for an output is an error before the launch.

The library is cached under `<cache root>/emulation/<key>/` (cache root: FUSION_EXPLORER_CACHE_DIR
or var/cache, as the build's cache), the key a SHA-256 over the source, the kernel names, the
emulator header, every header under the include dirs, the compiler and its flags. A second
compile of the same text loads the cached library without running g++.

Launches are serialised by a process-wide lock: the emulator keeps its scheduler state in
globals of the loaded library and installs fault handlers for the duration of a launch.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from compiler.toolchain.cache import cache_root

EMULATOR_DIR = Path(__file__).resolve().parent
EMULATOR_HEADER = EMULATOR_DIR / "cuda_emu.h"
HEADER_SUFFIXES = {".h", ".hpp", ".cuh", ".inc", ".inl"}
COMPILER = "g++"
FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden",
         # Probing every page of a large frame makes an overflow hit the guard page below the
         # stack instead of silently writing over the neighbouring fiber's stack.
         "-fstack-clash-protection", "-DFX_EMULATION")
# Bump when the launcher text or the cache layout changes.
LAUNCHER_FORMAT = 1

# A cooperative launch runs every thread of the grid at once, each a fiber with its own stack
# (128 KiB of address space, touched only as used); this cap keeps a mistaken grid from
# exhausting memory. On a GPU the limit is the blocks that fit on the device at once.
DEFAULT_COOPERATIVE_THREAD_CAP = 4096
MAX_THREADS_PER_BLOCK = 1024
ERROR_BUFFER_BYTES = 8192

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LAUNCH_LOCK = threading.Lock()


class EmulationError(RuntimeError):
    """A kernel could not be compiled or run on the emulator; the message says why."""


@dataclass(frozen=True)
class KernelParameter:
    element_size: int  # bytes of the pointee; 0 for void*
    is_const: bool


def compile_for_emulation(source: str, kernel_names: Sequence[str],
                          include_dirs: Sequence[str | Path] = ()) -> EmulatedModule:
    """Compile `source` (CUDA C++ that includes the prelude) for the CPU emulator.

    `kernel_names` are the `extern "C" __global__` functions to expose; `include_dirs` are
    searched for the source's includes (the prelude's folder). Raises EmulationError with g++'s
    message when the source does not compile.
    """
    names = list(kernel_names)
    if not names:
        raise EmulationError("compile_for_emulation needs at least one kernel name")
    for name in names:
        if not _IDENTIFIER.match(name):
            raise EmulationError(f"kernel name {name!r} is not a C identifier")
    if len(set(names)) != len(names):
        raise EmulationError(f"kernel names repeat: {names}")
    include_paths = [Path(directory).resolve() for directory in include_dirs]
    for directory in include_paths:
        if not directory.is_dir():
            raise EmulationError(f"include directory {directory} does not exist")

    launcher = _launcher_source(names)
    key = _cache_key(source, launcher, include_paths)
    directory = cache_root() / "emulation" / key
    library = directory / "kernels.so"
    if not library.exists():
        _compile(source, launcher, include_paths, directory, library)
    return EmulatedModule(library, names)


class EmulatedModule:
    """A compiled, loaded emulation library; `launch` runs one kernel over a grid."""

    def __init__(self, library_path: Path, kernel_names: Sequence[str]):
        self.path = Path(library_path)
        self.kernel_names = list(kernel_names)
        self.cooperative_thread_cap = DEFAULT_COOPERATIVE_THREAD_CAP
        self._library = ctypes.CDLL(str(self.path))
        self._launchers = {}
        self.parameters: dict[str, list[KernelParameter]] = {}
        for name in self.kernel_names:
            launcher = getattr(self._library, f"fx_launch_{name}")
            launcher.restype = ctypes.c_int
            launcher.argtypes = ([ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 6
                                 + [ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p,
                                    ctypes.c_size_t])
            self._launchers[name] = launcher
            self.parameters[name] = self._describe(name)

    def _describe(self, name: str) -> list[KernelParameter]:
        describe = getattr(self._library, f"fx_params_{name}")
        describe.restype = ctypes.c_int
        capacity = 256
        sizes = (ctypes.c_longlong * capacity)()
        consts = (ctypes.c_int * capacity)()
        count = describe(sizes, consts, capacity)
        return [KernelParameter(int(sizes[i]), bool(consts[i])) for i in range(count)]

    def launch(self, kernel_name: str, grid: Sequence[int] | int, block: Sequence[int] | int,
               shared_bytes: int, args: Sequence[np.ndarray], cooperative: bool = False,
               cooperative_thread_cap: int | None = None) -> None:
        """Run `kernel_name` over `grid` x `block` threads; the kernel writes its outputs into
        the arrays in place. Raises EmulationError on a bad launch, a deadlock or a fault."""
        if kernel_name not in self._launchers:
            raise EmulationError(f"no kernel {kernel_name!r} in this module; it has "
                                 f"{', '.join(self.kernel_names)}")
        grid3 = _dims(grid, "grid")
        block3 = _dims(block, "block")
        threads_per_block = block3[0] * block3[1] * block3[2]
        if threads_per_block > MAX_THREADS_PER_BLOCK:
            raise EmulationError(f"bad launch of {kernel_name}: block {block3} has "
                                 f"{threads_per_block} threads; at most "
                                 f"{MAX_THREADS_PER_BLOCK}")
        if shared_bytes < 0:
            raise EmulationError(f"bad launch of {kernel_name}: shared_bytes={shared_bytes}")
        if cooperative:
            cap = self.cooperative_thread_cap if cooperative_thread_cap is None \
                else cooperative_thread_cap
            total = threads_per_block * grid3[0] * grid3[1] * grid3[2]
            if total > cap:
                raise EmulationError(
                    f"cooperative launch of {kernel_name} with {total} threads exceeds the "
                    f"emulator's cap of {cap} threads running at once; use a smaller grid or "
                    "pass cooperative_thread_cap")
        pointers = self._pointers(kernel_name, args)
        error = ctypes.create_string_buffer(ERROR_BUFFER_BYTES)
        with _LAUNCH_LOCK:
            status = self._launchers[kernel_name](pointers, *grid3, *block3, shared_bytes,
                                                  int(bool(cooperative)), error,
                                                  ERROR_BUFFER_BYTES)
        if status != 0:
            raise EmulationError(error.value.decode("utf-8", "replace"))

    def _pointers(self, kernel_name: str, args: Sequence[np.ndarray]):
        parameters = self.parameters[kernel_name]
        if len(args) != len(parameters):
            raise EmulationError(f"{kernel_name} takes {len(parameters)} arguments, "
                                 f"got {len(args)}")
        pointers = (ctypes.c_void_p * max(len(args), 1))()
        for index, (array, parameter) in enumerate(zip(args, parameters)):
            where = f"argument {index} of {kernel_name}"
            if not isinstance(array, np.ndarray):
                raise EmulationError(f"{where} is a {type(array).__name__}; pass a numpy array")
            if not array.flags.c_contiguous:
                raise EmulationError(f"{where} is not C-contiguous; pass "
                                     "np.ascontiguousarray(...) instead")
            if parameter.element_size and array.itemsize != parameter.element_size:
                raise EmulationError(f"{where} has dtype {array.dtype} ({array.itemsize} bytes "
                                     f"per element) but the kernel reads "
                                     f"{parameter.element_size}-byte elements")
            if not parameter.is_const and not array.flags.writeable:
                raise EmulationError(f"{where} is read-only but the kernel may write it")
            pointers[index] = array.ctypes.data
        return pointers


def _dims(value: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if not 1 <= len(values) <= 3:
        raise EmulationError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    if any(not isinstance(v, (int, np.integer)) or v < 1 or v >= 2**31 for v in values):
        raise EmulationError(f"{what} dimensions must be integers from 1 to 2^31-1, "
                             f"got {value!r}")
    values += [1] * (3 - len(values))
    return int(values[0]), int(values[1]), int(values[2])


def _launcher_source(names: list[str]) -> str:
    lines = [f"// Generated by compiler/toolchain/emulate.py (launcher format {LAUNCHER_FORMAT}).",
             '#include "kernels.cu"',
             "#define FX_EXPORT extern \"C\" __attribute__((visibility(\"default\")))"]
    for name in names:
        lines += [
            f"FX_EXPORT int fx_launch_{name}(void** args, int gx, int gy, int gz, int bx, "
            "int by, int bz, size_t smem, int cooperative, char* error, size_t error_len) {",
            f'  return fx_emu::detail::launch<&{name}>("{name}", args, gx, gy, gz, bx, by, bz, '
            "smem, cooperative, error, error_len);",
            "}",
            f"FX_EXPORT int fx_params_{name}(long long* element_sizes, int* is_const, "
            "int capacity) {",
            f"  return fx_emu::detail::describe_parameters<&{name}>(element_sizes, is_const, "
            "capacity);",
            "}",
        ]
    return "\n".join(lines) + "\n"


def _cache_key(source: str, launcher: str, include_paths: list[Path]) -> str:
    digest = hashlib.sha256(f"fusion-explorer-emulation/{LAUNCHER_FORMAT}\n".encode())

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}:{len(data)}:".encode())
        digest.update(data)

    add("source", source.encode())
    add("launcher", launcher.encode())
    add("emulator", EMULATOR_HEADER.read_bytes())
    add("compiler", " ".join((COMPILER, *FLAGS)).encode())
    for directory in include_paths:
        add("include", str(directory).encode())
        for path in sorted(directory.rglob("*")):
            if path.is_file() and path.suffix in HEADER_SUFFIXES:
                add(str(path.relative_to(directory)), path.read_bytes())
    return digest.hexdigest()


def _compile(source: str, launcher: str, include_paths: list[Path], directory: Path,
             library: Path) -> None:
    """Compile in a scratch folder and rename it into place, so concurrent compiles of the same
    key both end with a whole library."""
    if shutil.which(COMPILER) is None:
        raise EmulationError(f"{COMPILER} is not installed; the CPU emulator needs it")
    directory.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}-"))
    try:
        (scratch / "kernels.cu").write_text(source)
        (scratch / "launcher.cpp").write_text(launcher)
        command = [COMPILER, *FLAGS, f"-I{EMULATOR_DIR}"]
        command += [f"-I{path}" for path in include_paths]
        command += ["-x", "c++", "launcher.cpp", "-o", "kernels.so"]
        result = subprocess.run(command, cwd=scratch, capture_output=True, text=True)
        if result.returncode != 0:
            raise EmulationError("the kernel source does not compile for the emulator:\n"
                                 + result.stderr.strip())
        try:
            os.rename(scratch, directory)
        except OSError:
            if not library.exists():  # not a concurrent compile that won the race
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
