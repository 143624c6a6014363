"""A kernel's outputs checked against the reference interpreter where they are: on the device.

    largest, mismatches = check_outputs(cupy, graph, got, expected, values, computed)

`got` and `expected` map each output node to its raw bytes in the graph's memory layout
(`minor_to_major`), as the GPU runner holds them: what the kernel wrote, and the interpreter's
value uploaded the way inputs are. The verdict is `compiler.codegen.check.compare`'s, element
for element (the same per-dtype tolerances, the same accumulation-order bound from
compiler/ir/error_bound.py, NaN against NaN agreeing), computed in float64 by the array module
`xp` on the flat buffers; only a few numbers come back to the host per output: the largest
difference, the index of the element furthest beyond its allowance, and for a mismatching output
that element's got, expected and allowed values. Downloading every output and comparing it in
NumPy (what the runner did before) spent most of a campaign's GPU time on the host.

Written against the array API NumPy and CuPy share, so the tests run it with NumPy on the CPU
and compare its verdicts with `compare`'s. Outputs of a dtype the array module cannot view
(fp8 and the other formats NumPy and CuPy lack; complex, which the host check compares by its
real part) are downloaded and compared on the host, as before.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from compiler.codegen.check import (Mismatch, allowance, compare, differences, excess,
                                    from_memory, max_abs_error, to_memory)
from compiler.ir.error_bound import error_bounds
from compiler.ir.graph import Graph

# NumPy type characters both array modules view raw bytes as: bool, integers, f16/f32/f64.
_VIEWABLE = set("?bBhHiIlLqQefd")


def device_checkable(dtype) -> bool:
    """Whether outputs of IR dtype `dtype` are checked on the device (bf16 through its bits)."""
    return dtype.name == "bf16" or np.dtype(dtype.numpy).char in _VIEWABLE


def as_float64(xp, raw, dtype):
    """Raw bytes of IR dtype `dtype` as float64 values, on `xp`. A bf16 is the upper half of
    the f32 with the same value, so its bits shifted up 16 are read as f32 (neither NumPy nor
    CuPy has bf16 arrays of its own)."""
    if dtype.name == "bf16":
        bits = raw.view(xp.uint16).astype(xp.uint32) << 16
        return bits.view(xp.float32).astype(xp.float64)
    return raw.view(dtype.numpy).astype(xp.float64)


def check_outputs(xp, graph: Graph, got: dict, expected: dict, values: dict,
                  computed: Collection[str] | None = None) -> tuple[float, list[Mismatch]]:
    """(largest difference over the outputs, the outputs beyond tolerance) for raw output
    buffers `got` against the interpreter's raw `expected` (both flat, in memory layout, on
    `xp`); `values`: the interpreter's values of the whole graph, which the accumulation bound
    reads; `computed`: as for `compare`."""
    to_host = getattr(xp, "asnumpy", np.asarray)
    largest, mismatches, on_host = 0.0, [], {}
    for name, raw in got.items():
        shape = graph.nodes[name].array_shape
        if not device_checkable(shape.dtype):
            flat = to_host(raw).view(shape.dtype.numpy)
            on_host[name] = from_memory(flat, shape.dims, shape.minor_to_major)
    on_device = [name for name in got if name not in on_host]
    bounds = error_bounds(graph, values, on_device, computed)
    for name in on_device:
        shape = graph.nodes[name].array_shape
        raw = got[name]
        a = as_float64(xp, raw, shape.dtype)
        b = as_float64(xp, expected[name], shape.dtype)
        if a.size == 0:
            continue
        bound = bounds[name]
        if bound is not None:   # in logical order, like the values: laid out as the buffer
            bound = xp.asarray(to_memory(np.broadcast_to(bound, shape.dims),
                                         shape.minor_to_major))
        allowed = xp.broadcast_to(allowance(xp, b, shape.dtype.name, bound), b.shape)
        difference = float(differences(xp, a, b).max())
        largest = max(largest, difference)
        beyond = excess(xp, a, b, allowed)
        worst = int(xp.argmax(beyond))
        if float(beyond[worst]) > 0:
            mismatches.append(Mismatch(name, difference, _logical_index(shape, worst),
                                       float(a[worst]), float(b[worst]), float(allowed[worst])))
    if on_host:   # the interpreter's values are the expected ones, as in the emulator's check
        mismatches += compare(graph, on_host, values, computed)
        largest = max([largest, *(max_abs_error(on_host[n], values[n]) for n in on_host)])
    return largest, mismatches


def _logical_index(shape, flat_index: int) -> tuple[int, ...]:
    """The logical index of the element at `flat_index` of a buffer in `shape`'s layout."""
    order = tuple(reversed(shape.minor_to_major))
    physical = np.unravel_index(flat_index, [shape.dims[d] for d in order])
    logical = [0] * len(shape.dims)
    for position, dim in enumerate(order):
        logical[dim] = int(physical[position])
    return tuple(logical)


__all__ = ["as_float64", "check_outputs", "device_checkable"]
