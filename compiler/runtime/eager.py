"""The unfused CuPy baseline: the graph run op by op with the array library's own functions.

    program = eager_program(graph)              # EagerUnsupported(reason) for ops it lacks
    ok, reason = eager_supported(graph)         # the same, as (False, reason)
    outputs = run_eager(program, inputs, np)    # checked on the CPU against the interpreter
    timing = time_eager(program, inputs)        # on a GPU with CuPy; GpuUnavailable without

Fusion plans are worth what they save over the code a user would otherwise run: every HLO op
written the way a PyTorch-eager or CuPy user writes it, one (or a few) library calls per op,
each its own kernel launch. That is the baseline here. It is not a fusion plan and generates
no kernel: `exp` is `xp.exp`, a dot is `xp.matmul` (cuBLAS on a GPU) after the transposes its
dimension numbers ask for, a reduction is `xp.sum` / `xp.max` / ...

Views cost nothing, as in an eager framework: broadcast, reshape, transpose and slice return
views where the array library can (a reshape of a non-contiguous view copies, as PyTorch's
does), and the consuming kernel reads the strided or broadcast view. A reduction whose init
value is its reducer's identity (0 for add, -inf for max) is just the library reduction; any
other init costs one more elementwise call. Each value is released after its last use, as an
eager framework's reference counting does, so CuPy's memory pool reuses its memory.

Why `xp`: the steps are written once against the NumPy API that CuPy copies, and run with
`xp = numpy` in tests on the CPU, where their outputs are compared with the reference
interpreter's, and with `xp = cupy` on a GPU worker, where `time_eager` times them. A few
functions NumPy lacks as one call (rsqrt, logistic, erf) are one cupyx call on CuPy and
composed from NumPy functions with the same value on the CPU.

Numerics are the eager library's: every op computes in its storage dtype, as PyTorch and CuPy
do, except that sums and products of 16-bit floats accumulate in f32 (as PyTorch's and CuPy's
reductions do, and XLA's) and a dot's operands are converted to its result type first (an f16
dot with an f32 result is an f32 matmul). A float-to-integer convert truncates like `astype`,
without XLA's saturation of out-of-range values.

Unsupported, with the reason naming the node (`EagerUnsupported`), rather than approximated:
- values of a dtype CuPy has no arrays of (bf16, the fp8 and fp4 formats, 4-bit integers), on
  NumPy too, so that what is checked on the CPU is exactly what a GPU worker times;
- ops with no library equivalent of the same meaning: control flow (while, conditional, map),
  sort, reduce-window, convolution, custom calls, dynamic slices, bit manipulation (shifts,
  popcnt, bitcast-convert), integer division and remainder (XLA defines x/0 and INT_MIN/-1),
  integer power, total-order comparisons;
- reductions with a general reducer (variadic argmax, or anything but one add, multiply,
  maximum, minimum, or — for pred — and/or), scatters that overwrite or combine with anything
  but add, maximum or minimum, and bitcasts that are not reshapes of row-major data.

Outputs are the interpreter's (`evaluate`): flattened in output-tuple order, in logical index
order (not the graph's memory layouts), as arrays of `xp`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from compiler.errors import InputError
from compiler.ir.graph import Graph, Node
from compiler.ir.shapes import ArrayShape
from compiler.runtime.gpu import TIMED_RUNS, WARMUP_RUNS, GpuRunner, Timing

# What one step computes: compute(xp, *operand values) -> the node's value.
Compute = Callable[..., Any]

# IR dtypes CuPy has arrays of: the NumPy built-in types.
EAGER_DTYPES = frozenset({"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                          "f16", "f32", "f64", "c64", "c128"})


class EagerUnsupported(Exception):
    """A graph the eager baseline cannot run; the message is the reason shown, naming the node."""


def _unsupported(node: Node, why: str = "") -> EagerUnsupported:
    detail = f": {why}" if why else ""
    return EagerUnsupported(f"no eager equivalent for node '{node.name}' ({node.op}){detail}")


@dataclass(frozen=True)
class Step:
    """One node of the graph as array-library calls: `compute(xp, *values of operands)`."""

    node: str
    op: str
    operands: tuple[str, ...]
    compute: Compute


@dataclass(frozen=True)
class Parameter:
    name: str
    dims: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class EagerProgram:
    """A graph compiled to steps once; run it with any array module (`run_eager`)."""

    graph: str
    parameters: tuple[Parameter, ...]
    constants: dict[str, np.ndarray]   # constant node -> its value, uploaded once per binding
    steps: tuple[Step, ...]
    released: tuple[tuple[str, ...], ...]  # per step: values no later step or output reads
    outputs: tuple[str, ...]           # output nodes in flattened output-tuple order


# -- public API -------------------------------------------------------------------------------


def eager_program(graph: Graph) -> EagerProgram:
    """The steps that compute `graph`'s outputs; EagerUnsupported names the first node that
    has no eager equivalent."""
    outputs = tuple(graph.output_names())
    live = _live_nodes(graph, outputs)
    parameters = tuple(_parameter(node) for node in graph.parameter_nodes())
    constants, steps = {}, []
    for node in graph:
        if node.name not in live or node.op == "parameter":
            continue
        _check_dtypes(node)
        if node.op == "constant":
            constants[node.name] = _constant_value(node)
        elif node.op in _COMPILERS:
            compute = _COMPILERS[node.op](graph, node)
            steps.append(Step(node.name, node.op, node.operands, compute))
        else:
            raise _unsupported(node)
    return EagerProgram(graph.name, parameters, constants, tuple(steps),
                        _releases(steps, outputs), outputs)


def eager_supported(graph: Graph) -> tuple[bool, str]:
    """(True, "") or (False, the reason naming the node). Never raises EagerUnsupported."""
    try:
        eager_program(graph)
    except EagerUnsupported as reason:
        return False, str(reason)
    return True, ""


def run_eager(program: EagerProgram, inputs: Sequence, xp=np) -> list:
    """The graph's outputs for `inputs` (in parameter order), computed with array module `xp`
    (numpy or cupy): flattened in output-tuple order, as arrays of `xp` in logical order."""
    run = _bind(program, xp)
    arguments = _arguments(program, inputs, xp)
    # inf and NaN are values, as on a GPU: NumPy's warnings about them are silenced, as the
    # interpreter silences them.
    with np.errstate(all="ignore"):
        return run(arguments)


def time_eager(program: EagerProgram, inputs: Sequence, runner: GpuRunner | None = None,
               warmup: int = WARMUP_RUNS, runs: int = TIMED_RUNS) -> Timing:
    """Time the whole program on the GPU, end to end, each run after an L2 flush (see
    `GpuRunner.time`). Inputs and constants are uploaded once, before the timed runs; the
    Python that issues the calls is part of what is timed, as it is of an eager framework's
    cost. GpuUnavailable without a GPU."""
    if runner is None:
        runner = GpuRunner()
    run = _bind(program, runner.cupy)
    arguments = _arguments(program, inputs, runner.cupy)
    return runner.time(lambda: run(arguments), warmup, runs)


# -- compiling the graph ----------------------------------------------------------------------


def _live_nodes(graph: Graph, outputs: Sequence[str]) -> set[str]:
    """The nodes some output depends on: an eager user does not compute unused values."""
    live, pending = set(), list(outputs)
    while pending:
        name = pending.pop()
        if name not in live:
            live.add(name)
            pending.extend(graph.nodes[name].operands)
    return live


def _check_dtypes(node: Node) -> None:
    for leaf in node.shape.leaves():
        if not leaf.dtype.is_array_type:
            raise _unsupported(node, f"{leaf.dtype.name} values are not covered")
        if leaf.dtype.name not in EAGER_DTYPES:
            raise _unsupported(node, f"CuPy has no {leaf.dtype.name} arrays")


def _parameter(node: Node) -> Parameter:
    _check_dtypes(node)
    if node.shape.is_tuple:
        raise _unsupported(node, "tuple-shaped parameters are not covered")
    shape = node.array_shape
    return Parameter(node.name, shape.dims, shape.dtype.numpy)


def _constant_value(node: Node) -> np.ndarray:
    value = node.attrs.get("value")
    if value is None:
        raise _unsupported(node, "the dump elided the constant's value")
    shape = node.array_shape
    return np.asarray(value).astype(shape.dtype.numpy).reshape(shape.dims)


def _releases(steps: Sequence[Step], outputs: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    last_use: dict[str, int] = {}
    for index, step in enumerate(steps):
        for operand in step.operands:
            last_use[operand] = index
    released: list[list[str]] = [[] for _ in steps]
    for name, index in last_use.items():
        if name not in outputs:
            released[index].append(name)
    return tuple(tuple(names) for names in released)


# -- running it -------------------------------------------------------------------------------


def _arguments(program: EagerProgram, inputs: Sequence, xp) -> list:
    """The inputs as arrays of `xp` (uploaded, for CuPy), checked against the parameters."""
    if len(inputs) != len(program.parameters):
        names = ", ".join(f"'{p.name}'" for p in program.parameters)
        raise InputError(f"expected {len(program.parameters)} inputs ({names}), "
                         f"got {len(inputs)}", f"computation '{program.graph}'")
    arrays = []
    for parameter, value in zip(program.parameters, inputs):
        array = xp.asarray(value)
        if array.shape != parameter.dims:
            raise InputError(f"expected dims {parameter.dims}, got {array.shape}",
                             f"parameter '{parameter.name}'")
        arrays.append(array.astype(parameter.dtype, copy=False))
    return arrays


def _bind(program: EagerProgram, xp) -> Callable[[list], list]:
    """A function from argument arrays to output arrays; the constants are uploaded now."""
    constants = {name: xp.asarray(value) for name, value in program.constants.items()}

    def run(arguments: list) -> list:
        values = dict(constants)
        values.update(zip((p.name for p in program.parameters), arguments))
        for step, released in zip(program.steps, program.released):
            values[step.node] = step.compute(xp, *(values[name] for name in step.operands))
            for name in released:
                del values[name]
        return [xp.asarray(leaf) for name in program.outputs for leaf in _leaves(values[name])]

    return run


def _leaves(value) -> list:
    if isinstance(value, tuple):
        return [leaf for element in value for leaf in _leaves(element)]
    return [value]


# -- elementwise ops --------------------------------------------------------------------------

# HLO op -> the NumPy/CuPy function of the same meaning, by name.
_FUNCTIONS = {
    "abs": "abs", "negate": "negative", "exponential": "exp", "exponential-minus-one": "expm1",
    "log": "log", "log-plus-one": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "tanh": "tanh",
    "sine": "sin", "cosine": "cos", "tan": "tan", "atan2": "arctan2", "floor": "floor",
    "ceil": "ceil", "round-nearest-even": "rint", "sign": "sign", "is-finite": "isfinite",
    "not": "invert", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "add": "add", "subtract": "subtract", "multiply": "multiply", "maximum": "maximum",
    "minimum": "minimum", "select": "where",
}
# Float-only: on integers XLA's rules (x/0 = -1, INT_MIN/-1, integer power) differ.
_FLOAT_FUNCTIONS = {"divide": "true_divide", "remainder": "fmod", "power": "power"}
_COMPARISONS = {"EQ": "equal", "NE": "not_equal", "LT": "less", "LE": "less_equal",
                "GT": "greater", "GE": "greater_equal"}


def _library_function(name: str) -> Compute:
    def compute(xp, *args):
        return getattr(xp, name)(*args)

    return compute


def _compile_function(graph: Graph, node: Node) -> Compute:
    return _library_function(_FUNCTIONS[node.op])


def _compile_float_function(graph: Graph, node: Node) -> Compute:
    dtype = node.array_shape.dtype
    if not dtype.is_float:
        raise _unsupported(node, f"{node.op} of {dtype.name} (only floats are covered: no "
                                 "library call follows XLA's integer rules)")
    return _library_function(_FLOAT_FUNCTIONS[node.op])


def _compile_compare(graph: Graph, node: Node) -> Compute:
    operand = graph.nodes[node.operands[0]].array_shape
    if node.attrs.get("type") == "TOTALORDER" and operand.dtype.is_float:
        raise _unsupported(node, "a total-order comparison of floats")
    return _library_function(_COMPARISONS[node.attrs["direction"]])


def _compile_clamp(graph: Graph, node: Node) -> Compute:
    def clamp(xp, low, x, high):
        return xp.minimum(xp.maximum(x, low), high)

    return clamp


def _compile_convert(graph: Graph, node: Node) -> Compute:
    target = node.array_shape.dtype.numpy

    def convert(xp, x):
        return x.astype(target)

    return convert


def _on_cupy(xp) -> bool:
    return xp.__name__ == "cupy"


def _rsqrt(xp, x):
    if _on_cupy(xp):
        import cupyx

        return cupyx.rsqrt(x).astype(x.dtype, copy=False)
    return 1 / xp.sqrt(x)


def _logistic(xp, x):
    if _on_cupy(xp):
        from cupyx.scipy import special

        return special.expit(x).astype(x.dtype, copy=False)
    return 1 / (1 + xp.exp(-x))


def _erf(xp, x):
    if _on_cupy(xp):
        from cupyx.scipy import special

        return special.erf(x).astype(x.dtype, copy=False)
    erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf
    return erf(x).astype(x.dtype)


_SPECIAL = {"rsqrt": _rsqrt, "logistic": _logistic, "erf": _erf}


def _compile_special(graph: Graph, node: Node) -> Compute:
    if not node.array_shape.dtype.is_float:
        raise _unsupported(node, f"{node.op} of {node.array_shape.dtype.name}")
    return _SPECIAL[node.op]


# -- leaves, views and data movement ----------------------------------------------------------


def _compile_iota(graph: Graph, node: Node) -> Compute:
    shape = node.array_shape
    axis = node.attrs["iota_dimension"]
    along = [n if d == axis else 1 for d, n in enumerate(shape.dims)]

    def iota(xp):
        counts = xp.arange(shape.dims[axis], dtype=shape.dtype.numpy)
        return xp.broadcast_to(xp.reshape(counts, along), shape.dims)

    return iota


def _compile_broadcast(graph: Graph, node: Node) -> Compute:
    """Operand dimension i becomes output dimension dimensions[i]: transpose the operand so
    its dimensions are in output order, give it size-1 dimensions in between, broadcast."""
    mapping = tuple(node.attrs.get("dimensions", ()))
    order = tuple(int(d) for d in np.argsort(mapping))
    operand = graph.nodes[node.operands[0]].array_shape
    dims = node.array_shape.dims
    placed = [1] * len(dims)
    for operand_dim, output_dim in zip(order, sorted(mapping)):
        placed[output_dim] = operand.dims[operand_dim]

    def broadcast(xp, x):
        return xp.broadcast_to(xp.reshape(xp.transpose(x, order), placed), dims)

    return broadcast


def _compile_reshape(graph: Graph, node: Node) -> Compute:
    dims = node.array_shape.dims

    def reshape(xp, x):
        return xp.reshape(x, dims)

    return reshape


def _row_major(shape: ArrayShape) -> bool:
    return tuple(shape.minor_to_major) == tuple(reversed(range(shape.rank)))


def _compile_bitcast(graph: Graph, node: Node) -> Compute:
    source = graph.nodes[node.operands[0]].array_shape
    target = node.array_shape
    if source.dtype != target.dtype or not (_row_major(source) and _row_major(target)):
        raise _unsupported(node, "only a bitcast that is a reshape of row-major data")
    return _compile_reshape(graph, node)


def _compile_copy(graph: Graph, node: Node) -> Compute:
    """A copy changes only the memory layout, which logical arrays do not have."""
    def copy(xp, x):
        return x

    return copy


def _compile_transpose(graph: Graph, node: Node) -> Compute:
    permutation = tuple(node.attrs["dimensions"])

    def transpose(xp, x):
        return xp.transpose(x, permutation)

    return transpose


def _compile_slice(graph: Graph, node: Node) -> Compute:
    window = tuple(slice(start, limit, stride) for start, limit, stride in node.attrs["slice"])

    def slice_(xp, x):
        return x[window]

    return slice_


def _compile_reverse(graph: Graph, node: Node) -> Compute:
    axes = tuple(node.attrs["dimensions"])

    def reverse(xp, x):
        return xp.flip(x, axis=axes)

    return reverse


def _compile_concatenate(graph: Graph, node: Node) -> Compute:
    axis = node.attrs["dimensions"][0]

    def concatenate(xp, *parts):
        return xp.concatenate(parts, axis=axis)

    return concatenate


def _compile_pad(graph: Graph, node: Node) -> Compute:
    """Fill with the padding value, write the operand with interior gaps, crop negative
    padding (as the interpreter does)."""
    operand = graph.nodes[node.operands[0]].array_shape
    padding = node.attrs["padding"]
    grown, place = [], []
    for n, (low, high, interior) in zip(operand.dims, padding):
        inner = n + max(n - 1, 0) * interior
        grown.append(max(low, 0) + inner + max(high, 0))
        place.append(slice(max(low, 0), max(low, 0) + inner, interior + 1))
    crop = tuple(slice(max(-low, 0), size - max(-high, 0))
                 for size, (low, high, _) in zip(grown, padding))
    dtype = operand.dtype.numpy

    def pad(xp, x, value):
        out = xp.empty(grown, dtype)
        out[...] = value
        out[tuple(place)] = x
        return out[crop]

    return pad


def _compile_tuple(graph: Graph, node: Node) -> Compute:
    def make_tuple(xp, *elements):
        return tuple(elements)

    return make_tuple


def _compile_get_tuple_element(graph: Graph, node: Node) -> Compute:
    index = node.attrs["index"]

    def get_tuple_element(xp, value):
        return value[index]

    return get_tuple_element


# -- reductions -------------------------------------------------------------------------------

# Reducer -> (NumPy/CuPy reduction, elementwise function combining the init value).
_REDUCTIONS = {"add": ("sum", "add"), "multiply": ("prod", "multiply"),
               "maximum": ("max", "maximum"), "minimum": ("min", "minimum")}
_PRED_REDUCTIONS = {"and": ("all", "logical_and"), "or": ("any", "logical_or")}


def _identity(reducer: str, dtype: np.dtype):
    """The value a reduction may start from without changing its result."""
    if reducer in ("maximum", "minimum"):
        if dtype.kind == "f":
            return -np.inf if reducer == "maximum" else np.inf
        info = np.iinfo(dtype)
        return info.min if reducer == "maximum" else info.max
    return {"add": 0, "multiply": 1, "and": True, "or": False}[reducer]


def _compile_reduce(graph: Graph, node: Node) -> Compute:
    """One library reduction in the accumulation type, rounded once to the storage type; the
    init value is combined in only when it is not the reducer's identity."""
    reducer = node.attrs.get("reducer")
    if len(node.operands) != 2 or reducer is None:
        raise _unsupported(node, "only a single input reduced with a binary reducer")
    operand = graph.nodes[node.operands[0]].array_shape
    storage = operand.dtype.numpy
    table = _PRED_REDUCTIONS if operand.dtype.kind == "pred" else _REDUCTIONS
    if reducer not in table:
        raise _unsupported(node, f"a {reducer} reduction of {operand.dtype.name}")
    reduction, combine = table[reducer]
    axes = tuple(node.attrs["dimensions"])
    dims = node.array_shape.dims
    empty = any(operand.dims[axis] == 0 for axis in axes)
    init = graph.nodes[node.operands[1]]
    starts_from_identity = (init.op == "constant" and init.attrs.get("value") is not None
                            and np.all(init.attrs["value"] == _identity(reducer, storage)))
    keywords = {}
    if reducer in ("add", "multiply"):
        # Sums and products of 16-bit floats accumulate in f32; integers wrap in their type.
        narrow_float = operand.dtype.is_float and operand.dtype.bits < 32
        keywords["dtype"] = np.dtype(np.float32) if narrow_float else storage

    def reduce(xp, x, init_value):
        if empty:  # reducing no element gives the init value
            return xp.broadcast_to(init_value, dims)
        value = getattr(xp, reduction)(x, axis=axes, **keywords).astype(storage, copy=False)
        if starts_from_identity:
            return value
        return getattr(xp, combine)(value, init_value)

    return reduce


# -- dot --------------------------------------------------------------------------------------


def _compile_dot(graph: Graph, node: Node) -> Compute:
    """A batched matmul: lhs transposed to (batch, free, contracting) and rhs to (batch,
    contracting, free), each flattened to 3 (or, without batch dimensions, 2) dimensions;
    the product's dimensions are batch, lhs free, rhs free, as XLA orders them."""
    lhs, rhs = (graph.nodes[name].array_shape for name in node.operands)
    lhs_batch, rhs_batch, lhs_contracting, rhs_contracting = (
        tuple(node.attrs.get(key, ())) for key in ("lhs_batch_dims", "rhs_batch_dims",
                                                   "lhs_contracting_dims",
                                                   "rhs_contracting_dims"))
    lhs_free = tuple(d for d in range(lhs.rank) if d not in lhs_batch + lhs_contracting)
    rhs_free = tuple(d for d in range(rhs.rank) if d not in rhs_batch + rhs_contracting)
    batch = (math.prod(lhs.dims[d] for d in lhs_batch),) if lhs_batch else ()
    rows = math.prod(lhs.dims[d] for d in lhs_free)
    inner = math.prod(lhs.dims[d] for d in lhs_contracting)
    columns = math.prod(rhs.dims[d] for d in rhs_free)
    lhs_order = lhs_batch + lhs_free + lhs_contracting
    rhs_order = rhs_batch + rhs_contracting + rhs_free
    result = node.array_shape

    def dot(xp, a, b):
        a = xp.reshape(xp.transpose(a.astype(result.dtype.numpy, copy=False), lhs_order),
                       (*batch, rows, inner))
        b = xp.reshape(xp.transpose(b.astype(result.dtype.numpy, copy=False), rhs_order),
                       (*batch, inner, columns))
        return xp.reshape(xp.matmul(a, b), result.dims)

    return dot


# -- gather and scatter -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Starts:
    """Where gather and scatter find each operand dimension's window starts in their indices
    (see the Gather and Scatter sections of XLA's operation semantics)."""

    index_vector_dim: int
    index_map: tuple[int, ...]       # start_index_map / scatter_dims_to_operand_dims
    batching: tuple[int, ...]        # operand_batching_dims / input_batching_dims
    index_batching: tuple[int, ...]  # start_indices_batching_dims / scatter_indices_...
    batch_shape: tuple[int, ...]     # the indices' dims without the index vector dimension

    def along(self, xp, indices, dim: int):
        """Starts along operand dimension `dim`, one per batch position (an array of the
        batch rank, maybe with size-1 dimensions to broadcast), or None where they are 0."""
        if dim in self.index_map:
            if self.index_vector_dim == indices.ndim:  # an implicit index vector of length 1
                return indices
            component = self.index_map.index(dim)
            return indices[(slice(None),) * self.index_vector_dim + (component,)]
        if dim in self.batching:
            source = self.index_batching[self.batching.index(dim)]
            axis = source if source < self.index_vector_dim else source - 1
            along = [n if a == axis else 1 for a, n in enumerate(self.batch_shape)]
            return xp.reshape(xp.arange(self.batch_shape[axis]), along)
        return None


def _batch_shape(indices: ArrayShape, index_vector_dim: int) -> tuple[int, ...]:
    return tuple(n for d, n in enumerate(indices.dims) if d != index_vector_dim)


def _compile_gather(graph: Graph, node: Node) -> Compute:
    """One fancy-indexing read: per operand dimension, the clamped window start of every batch
    position plus the offsets within the window; then the window dimensions are moved to
    `offset_dims`."""
    operand, indices = (graph.nodes[name].array_shape for name in node.operands)
    attrs = node.attrs
    sizes = tuple(attrs["slice_sizes"])
    batching = tuple(attrs.get("operand_batching_dims", ()))
    starts = _Starts(attrs["index_vector_dim"], tuple(attrs["start_index_map"]), batching,
                     tuple(attrs.get("start_indices_batching_dims", ())),
                     _batch_shape(indices, attrs["index_vector_dim"]))
    skipped = set(attrs["collapsed_slice_dims"]) | set(batching)
    window_dims = [d for d in range(operand.rank) if d not in skipped]
    n_batch, n_window = len(starts.batch_shape), len(window_dims)
    gathered_dims = starts.batch_shape + tuple(sizes[d] for d in window_dims)
    offset_dims = tuple(attrs["offset_dims"])
    batch_positions = [d for d in range(n_batch + n_window) if d not in offset_dims]
    order = [n_batch + offset_dims.index(d) if d in offset_dims else batch_positions.index(d)
             for d in range(n_batch + n_window)]

    def gather(xp, x, index_array):
        index = []
        for dim in range(operand.rank):
            # Offsets within the window (a collapsed or batching dimension has size 1).
            along = [1] * (n_batch + n_window)
            if dim in window_dims:
                along[n_batch + window_dims.index(dim)] = sizes[dim]
            position = xp.reshape(xp.arange(sizes[dim]), along)
            start = starts.along(xp, index_array, dim)
            if start is not None:  # XLA clamps a start so the whole window lies inside
                start = xp.clip(start, 0, max(operand.dims[dim] - sizes[dim], 0))
                position = position + start[(...,) + (None,) * n_window]
            index.append(position)
        gathered = xp.broadcast_to(x[tuple(index)], gathered_dims)
        return xp.transpose(gathered, order)

    return gather


_SCATTER_COMBINERS = ("add", "maximum", "minimum")


def _compile_scatter(graph: Graph, node: Node) -> Compute:
    """`ufunc.at` on a copy of the operand, flattened (`numpy.add.at`; `cupy.add.at`, with
    atomic adds, on a GPU). An update window that does not fit inside the operand is dropped,
    as XLA does: its elements are sent to a spare element past the end."""
    reducer = node.attrs.get("reducer")
    if len(node.operands) != 3 or reducer not in _SCATTER_COMBINERS:
        raise _unsupported(node, "only a single operand combined with add, maximum or minimum")
    operand, indices, updates = (graph.nodes[name].array_shape for name in node.operands)
    attrs = node.attrs
    window_dims = tuple(attrs["update_window_dims"])
    batching = tuple(attrs.get("input_batching_dims", ()))
    starts = _Starts(attrs["index_vector_dim"], tuple(attrs["scatter_dims_to_operand_dims"]),
                     batching, tuple(attrs.get("scatter_indices_batching_dims", ())),
                     _batch_shape(indices, attrs["index_vector_dim"]))
    skipped = set(attrs["inserted_window_dims"]) | set(batching)
    window_operand_dims = [d for d in range(operand.rank) if d not in skipped]
    scatter_axes = [a for a in range(updates.rank) if a not in window_dims]
    strides = [math.prod(operand.dims[d + 1:]) for d in range(operand.rank)]

    def spread(xp, start):
        """Batch positions -> update positions: batch dims go to the update's scatter axes."""
        along = [1] * updates.rank
        for axis, size in zip(scatter_axes, start.shape):
            along[axis] = size
        return xp.reshape(start, along)

    def scatter(xp, x, index_array, update_values):
        target, fits = 0, True
        for dim in range(operand.rank):
            extent, position = 1, 0
            if dim in window_operand_dims:
                axis = window_dims[window_operand_dims.index(dim)]
                extent = updates.dims[axis]
                along = [extent if a == axis else 1 for a in range(updates.rank)]
                position = xp.reshape(xp.arange(extent), along)
            start = starts.along(xp, index_array, dim)
            if start is not None:
                start = spread(xp, start)
                fits = fits & (start >= 0) & (start <= operand.dims[dim] - extent)
                position = position + start
            target = target + position * strides[dim]
        target = xp.broadcast_to(xp.where(fits, target, operand.size), updates.dims)
        flat = xp.empty(operand.size + 1, operand.dtype.numpy)
        result = xp.reshape(flat[:-1], operand.dims)  # a view of all but the spare element
        result[...] = x
        getattr(xp, reducer).at(flat, xp.reshape(target, -1), xp.reshape(update_values, -1))
        return result

    return scatter


# -- the table of ops -------------------------------------------------------------------------

_COMPILERS: dict[str, Callable[[Graph, Node], Compute]] = {
    **{op: _compile_function for op in _FUNCTIONS},
    **{op: _compile_float_function for op in _FLOAT_FUNCTIONS},
    **{op: _compile_special for op in _SPECIAL},
    "compare": _compile_compare,
    "clamp": _compile_clamp,
    "convert": _compile_convert,
    "iota": _compile_iota,
    "broadcast": _compile_broadcast,
    "reshape": _compile_reshape,
    "bitcast": _compile_bitcast,
    "copy": _compile_copy,
    "transpose": _compile_transpose,
    "slice": _compile_slice,
    "reverse": _compile_reverse,
    "concatenate": _compile_concatenate,
    "pad": _compile_pad,
    "tuple": _compile_tuple,
    "get-tuple-element": _compile_get_tuple_element,
    "reduce": _compile_reduce,
    "dot": _compile_dot,
    "gather": _compile_gather,
    "scatter": _compile_scatter,
}


__all__ = ["EAGER_DTYPES", "EagerProgram", "EagerUnsupported", "Parameter", "Step",
           "eager_program", "eager_supported", "run_eager", "time_eager"]
