"""Run an emitted kernel on the CPU emulator and compare it with the reference interpreter.

`emulate_kernel` takes the values of the whole graph (`evaluate_all`), hands the kernel its
inputs in their memory layout, launches it as the EmittedKernel says and returns the outputs
in logical order; `compare` measures them against the interpreter's with per-dtype tolerances:
f32 rtol 1e-5 / atol 1e-6 (a reduction may sum in another order), f64 rtol 1e-12, one ulp for
bf16 and f16 (the kernel rounds exactly where the interpreter does, but an f32 intermediate
that differs in its last bit can round the other way), integers and pred exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compiler.codegen.emit import SCRATCH, EmittedKernel
from compiler.ir.dtypes import dtype as dtype_named
from compiler.ir.graph import Graph

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
    from compiler.runtime.emulate import compile_for_emulation

    module = compile_for_emulation(emitted.source, [emitted.name], [str(PRELUDE_DIR)])
    return launch_emulated(graph, module, emitted, values)


def launch_emulated(graph: Graph, module, emitted: EmittedKernel,
                    values: dict) -> dict[str, np.ndarray]:
    """Launch `emitted` from an emulated `module` on the interpreter's `values` of its inputs
    (laid out in memory as the graph's layouts say); {output node: value}. A globally stitched
kernel's `scratch` parameter gets a zeroed buffer of its size, not read back."""
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
    threads = math.prod(emitted.grid) * math.prod(emitted.block)
    # The plan sized a cooperative grid to be co-resident on a GPU; the emulator runs it all.
    module.launch(emitted.name, emitted.grid, emitted.block, emitted.shared_bytes, args,
                  cooperative=emitted.cooperative,
                  cooperative_thread_cap=threads if emitted.cooperative else None)
    return {name: from_memory(flat, graph.nodes[name].array_shape.dims,
                               graph.nodes[name].array_shape.minor_to_major)
            for name, flat in outputs.items()}


@dataclass(frozen=True)
class Mismatch:
    node: str
    max_abs_error: float
    where: tuple
    got: float
    expected: float


def max_abs_error(got: np.ndarray, expected: np.ndarray) -> float:
    a = np.asarray(got).astype(np.float64)
    b = np.asarray(expected).astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    diff = np.where(same, 0.0, np.abs(a - b))
    return float(np.nan_to_num(diff, nan=np.inf).max()) if diff.size else 0.0


def compare(graph: Graph, got: dict[str, np.ndarray], values: dict) -> list[Mismatch]:
    """The outputs that differ from the interpreter's beyond their dtype's tolerance."""
    problems = []
    for name, array in got.items():
        dtype = graph.nodes[name].array_shape.dtype
        a = np.asarray(array).astype(np.float64)
        b = np.asarray(values[name]).astype(np.float64)
        rtol, atol = TOLERANCES.get(dtype.name, (0.0, 0.0))
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        with np.errstate(invalid="ignore"):
            close = same | (np.abs(a - b) <= atol + rtol * np.abs(b))
        if not close.all():
            where = tuple(int(i) for i in np.argwhere(~close)[0])
            problems.append(Mismatch(name, max_abs_error(a, b), where, float(a[where]),
                                     float(b[where])))
    return problems
