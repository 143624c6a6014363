"""Run an emitted kernel on the CPU emulator and compare it with the reference interpreter.

`emulate_kernel` takes the values of the whole graph (`evaluate_all`), hands the kernel its
inputs in their memory layout, launches it as the EmittedKernel says and returns the outputs
in logical order; `compare` measures them against the interpreter's. Each element may differ by

    atol + rtol * |expected| + bound

- (rtol, atol) per dtype, for the ops' own last-bit differences: f32 rtol 1e-5 / atol 1e-6
  (CUDA's expf, tanhf, ... are a few ulp off the correctly rounded value), f64 rtol 1e-12, one
  ulp for bf16 and f16 (the kernel rounds exactly where the interpreter does, but an f32
  intermediate that differs in its last bit can round the other way), integers and pred
  exactly;
- bound: where the value is downstream of a reduction, dot, convolution or scatter-add, how
  far the order of accumulation alone can move it, per element (compiler/ir/error_bound.py:
  2 * gamma(n) * sum |terms|, propagated through the later ops). It is zero for values made
  by elementwise ops and data movement only, so those keep the tight tolerance, and the
  verdict does not depend on the summation order of NumPy's BLAS or the interpreter.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compiler.codegen.emit import SCRATCH, EmittedKernel
from compiler.ir.dtypes import dtype as dtype_named
from compiler.ir.error_bound import error_bounds
from compiler.ir.graph import Graph
from compiler.toolchain.emulate import compile_for_emulation

PRELUDE_DIR = Path(__file__).resolve().parent

# dtype name -> (rtol, atol)
TOLERANCES = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-14), "bf16": (2.0 ** -7, 1e-30),
              "f16": (2.0 ** -10, 1e-7)}


def to_memory(array: np.ndarray, minor_to_major) -> np.ndarray:
    """The array's elements in buffer order for a layout (major-to-minor transpose)."""
    order = tuple(reversed(minor_to_major))
    return np.ascontiguousarray(np.transpose(array, order)).reshape(-1)


# CuPy, which allocates the GPU runner's buffers, aligns them to 256 bytes; the emulator's get
# the same, so a vector access (fx_load_vec, fx_store_vec) is aligned here exactly where it is
# on a GPU (numpy promises only the element size).
BUFFER_ALIGNMENT = 256


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts at a multiple of BUFFER_ALIGNMENT."""
    raw = np.empty(array.nbytes + BUFFER_ALIGNMENT, np.uint8)
    skip = -raw.ctypes.data % BUFFER_ALIGNMENT
    copy = raw[skip:skip + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def from_memory(flat: np.ndarray, dims, minor_to_major) -> np.ndarray:
    order = tuple(reversed(minor_to_major))
    physical = flat.reshape([dims[d] for d in order])
    return np.transpose(physical, np.argsort(order))


def emulate_kernel(graph: Graph, emitted: EmittedKernel, values: dict) -> dict[str, np.ndarray]:
    """{output node: value} computed by running the kernel's source on the CPU emulator."""

    module = compile_for_emulation(emitted.source, [emitted.name], [str(PRELUDE_DIR)])
    return launch_emulated(graph, module, emitted, values)


def launch_emulated(graph: Graph, module, emitted: EmittedKernel, values: dict,
                    grid: int | None = None) -> dict[str, np.ndarray]:
    """Launch `emitted` from an emulated `module` on the interpreter's `values` of its inputs
    (laid out in memory as the graph's layouts say); {output node: value}. A globally stitched
    kernel's `scratch` parameter gets a zeroed buffer of its size, not read back.

    `grid`: the blocks to launch instead of the plan's. A cooperative kernel runs, by default,
    on as many of its plan's blocks as the emulator runs at once as fibers
    (`module.cooperative_thread_cap` threads): a plan sizes its grid to what a GPU holds at
    once (hundreds of blocks), but every schedule loops grid-stride over its work and a
    cooperative plan's results do not depend on the grid it runs on
    (tests/compiler/test_codegen_phased.py launches one on two grids)."""
    args, outputs = [], {}
    for param in emitted.params:
        if param.name == SCRATCH:
            args.append(aligned_copy(np.zeros(param.dims, np.uint8)))
            continue
        shape = graph.nodes[param.node].array_shape
        numpy_type = dtype_named(param.dtype).numpy
        if param.role == "input":
            value = np.asarray(values[param.node]).astype(numpy_type)
            args.append(aligned_copy(to_memory(value, shape.minor_to_major)))
        else:
            buffer = aligned_copy(np.zeros(shape.size, numpy_type))
            outputs[param.node] = buffer
            args.append(buffer)
    per_block = math.prod(emitted.block)
    blocks = emitted.grid
    if grid is not None:
        blocks = (grid, 1, 1)
    elif emitted.cooperative:
        blocks = (min(emitted.grid[0], max(1, module.cooperative_thread_cap // per_block)), 1, 1)
    threads = math.prod(blocks) * per_block
    module.launch(emitted.name, blocks, emitted.block, emitted.shared_bytes, args,
                  cooperative=emitted.cooperative,
                  cooperative_thread_cap=threads if emitted.cooperative else None)
    return {name: from_memory(flat, graph.nodes[name].array_shape.dims,
                               graph.nodes[name].array_shape.minor_to_major)
            for name, flat in outputs.items()}


@dataclass(frozen=True)
class Mismatch:
    """An output that differs from the interpreter's by more than allowed: the largest
    difference, and the element that exceeds its allowance the most."""
    node: str
    max_abs_error: float
    where: tuple
    got: float
    expected: float
    allowed: float | None = None      # the allowance at `where` (tolerance + bound)

    def __str__(self) -> str:
        allowed = "" if self.allowed is None else f", allowed {self.allowed:.3g}"
        return (f"{self.node}{list(self.where)}: got {self.got!r}, expected {self.expected!r} "
                f"(differs by {abs(self.got - self.expected):.3g}{allowed}; largest difference "
                f"{self.max_abs_error:.3g})")


def max_abs_error(got: np.ndarray, expected: np.ndarray) -> float:
    a = np.asarray(got).astype(np.float64)
    b = np.asarray(expected).astype(np.float64)
    return float(differences(np, a, b).max()) if a.size else 0.0


# The comparison below is written against the array API NumPy and CuPy share (`xp`), so the
# GPU runner makes the same verdict on the device (compiler/runtime/device_check.py) that the
# emulator's check makes here.


def allowance(xp, expected, dtype_name: str, bound=None):
    """How far each element may differ from `expected` (float64): the dtype's atol + rtol *
    |expected|, plus the accumulation-order bound where there is one."""
    rtol, atol = TOLERANCES.get(dtype_name, (0.0, 0.0))
    allowed = atol + rtol * xp.abs(expected)
    return allowed if bound is None else allowed + bound


def _same(xp, got, expected):
    return (got == expected) | (xp.isnan(got) & xp.isnan(expected))


def differences(xp, got, expected):
    """|got - expected| per element (float64 arrays of `xp`), 0 where both hold the same value
    (NaN and NaN included), infinite where one is NaN and the other is not."""
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        difference = xp.where(_same(xp, got, expected), 0.0, xp.abs(got - expected))
    return xp.nan_to_num(difference, nan=xp.inf)


def excess(xp, got, expected, allowed):
    """How far each element is beyond its allowance: > 0 is a mismatch, infinite where a NaN
    stands for a number; 0 where both agree or the allowance is infinite."""
    with np.errstate(invalid="ignore"):
        beyond = xp.where(_same(xp, got, expected) | xp.isinf(allowed), 0.0,
                          xp.abs(got - expected) - allowed)
    return xp.where(xp.isnan(beyond), xp.inf, beyond)


def compare(graph: Graph, got: dict[str, np.ndarray], values: dict,
            computed: Collection[str] | None = None) -> list[Mismatch]:
    """The outputs in `got` that differ from the interpreter's `values` by more than allowed
    (see the module docstring). `computed`: the nodes the code under test computed itself
    (a kernel's, `Kernel.computed`), having read the interpreter's values of the rest; by
    default the whole graph, from its parameters."""
    bounds = error_bounds(graph, values, list(got), computed)
    problems = []
    for name, array in got.items():
        dtype = graph.nodes[name].array_shape.dtype
        a = np.asarray(array).astype(np.float64)
        b = np.asarray(values[name]).astype(np.float64)
        allowed = np.broadcast_to(allowance(np, b, dtype.name, bounds[name]), b.shape)
        beyond = excess(np, a, b, allowed)
        if (beyond > 0).any():
            where = np.unravel_index(int(np.argmax(beyond)), beyond.shape)
            where = tuple(int(i) for i in where)
            problems.append(Mismatch(name, max_abs_error(a, b), where, float(a[where]),
                                     float(b[where]), float(allowed[where])))
    return problems
