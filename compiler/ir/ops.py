"""The ops table: for every opcode its category, arity, attributes and cost counts.

Opcodes and attribute names are XLA HLO's (https://openxla.org/xla/operation_semantics), the
richest vocabulary of the three input formats; ONNX and JSON graphs are lowered onto them.
The reference semantics of each op are its evaluator in `compiler/ir/interpreter.py`; a test
checks that every op here has one.

Cost counts follow XLA's HloCostAnalysis conventions (xla/service/hlo_cost_analysis.cc) so our
figures can be compared with XLA's: one flop per output element for elementwise arithmetic,
transcendental functions counted separately, a reduction costs (input elements - output
elements) reducer applications, a dot 2*M*N*K, and bytes accessed are every operand read once
plus every output written once. Movement ops (reshape, transpose, slice, ...) cost no flops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from compiler.ir.shapes import Shape


class Category(str, Enum):
    PARAMETER = "parameter"
    CONSTANT = "constant"            # constant, iota: values made on the fly
    UNARY = "elementwise-unary"
    BINARY = "elementwise-binary"
    TERNARY = "elementwise-ternary"  # clamp
    COMPARE_SELECT = "compare-select"
    CONVERT = "convert"
    BROADCAST = "broadcast"
    RESHAPE = "reshape"              # reshape and bitcast: same elements, new dims
    TRANSPOSE = "transpose"
    REDUCE = "reduce"
    DATA_MOVEMENT = "data-movement"  # slice, pad, concatenate, reverse
    INDEXED = "indexed"              # gather, scatter, dynamic-slice, dynamic-update-slice
    LIBRARY = "library-call"         # dot, convolution, custom-call, sort, fft: not fused
    CONTROL_FLOW = "control-flow"    # while, conditional, map
    TUPLE = "tuple"                  # tuple, get-tuple-element and other plumbing
    COMMUNICATION = "communication"  # collectives; a single device sees them as copies


ELEMENTWISE = (Category.UNARY, Category.BINARY, Category.TERNARY,
               Category.COMPARE_SELECT, Category.CONVERT)


@dataclass(frozen=True)
class OpInfo:
    name: str
    category: Category
    arity: int | None          # operand count, None when variadic
    attrs: tuple[str, ...] = ()
    transcendental: bool = False
    doc: str = ""

    @property
    def is_elementwise(self) -> bool:
        return self.category in ELEMENTWISE


def _ops(category: Category, arity: int | None, names: str, **kwargs) -> list[OpInfo]:
    return [OpInfo(name, category, arity, **kwargs) for name in names.split()]


_TRANSCENDENTAL_UNARY = (
    "exponential exponential-minus-one log log-plus-one sqrt rsqrt cbrt tanh logistic sine "
    "cosine tan erf acos acosh asin asinh atan atanh cosh sinh"
)
_CHEAP_UNARY = (
    "abs negate floor ceil round-nearest-afz round-nearest-even sign not is-finite popcnt "
    "count-leading-zeros real imag copy"
)

_TABLE: list[OpInfo] = [
    OpInfo("parameter", Category.PARAMETER, 0, ("parameter_number",)),
    OpInfo("constant", Category.CONSTANT, 0, ("value",), doc="value: array or None if elided"),
    OpInfo("iota", Category.CONSTANT, 0, ("iota_dimension",)),
    *_ops(Category.UNARY, 1, _TRANSCENDENTAL_UNARY, transcendental=True),
    *_ops(Category.UNARY, 1, _CHEAP_UNARY),
    OpInfo("reduce-precision", Category.UNARY, 1, ("exponent_bits", "mantissa_bits")),
    *_ops(Category.BINARY, 2, "add subtract multiply divide remainder maximum minimum and or xor "
          "shift-left shift-right-logical shift-right-arithmetic complex"),
    *_ops(Category.BINARY, 2, "power atan2", transcendental=True),
    OpInfo("clamp", Category.TERNARY, 3, doc="clamp(min, x, max)"),
    OpInfo("compare", Category.COMPARE_SELECT, 2, ("direction", "type")),
    OpInfo("select", Category.COMPARE_SELECT, 3, doc="select(pred, on_true, on_false)"),
    OpInfo("convert", Category.CONVERT, 1),
    OpInfo("bitcast-convert", Category.CONVERT, 1),
    OpInfo("stochastic-convert", Category.CONVERT, 2),
    OpInfo("broadcast", Category.BROADCAST, 1, ("dimensions",),
           doc="dimensions[i] = output dimension that operand dimension i maps to"),
    OpInfo("reshape", Category.RESHAPE, 1),
    OpInfo("bitcast", Category.RESHAPE, 1),
    OpInfo("transpose", Category.TRANSPOSE, 1, ("dimensions",),
           doc="output dimension i is operand dimension dimensions[i]"),
    OpInfo("reduce", Category.REDUCE, None, ("dimensions", "to_apply", "reducer"),
           doc="N inputs then N init values; reducer is add/mul/max/min/and/or/xor or None"),
    OpInfo("reduce-window", Category.REDUCE, None, ("window", "to_apply", "reducer")),
    OpInfo("slice", Category.DATA_MOVEMENT, 1, ("slice",)),
    OpInfo("pad", Category.DATA_MOVEMENT, 2, ("padding",)),
    OpInfo("concatenate", Category.DATA_MOVEMENT, None, ("dimensions",)),
    OpInfo("reverse", Category.DATA_MOVEMENT, 1, ("dimensions",)),
    OpInfo("gather", Category.INDEXED, 2, (
        "offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
        "slice_sizes", "operand_batching_dims", "start_indices_batching_dims")),
    OpInfo("scatter", Category.INDEXED, None, (
        "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
        "index_vector_dim", "input_batching_dims", "scatter_indices_batching_dims",
        "to_apply", "reducer", "indices_are_sorted", "unique_indices")),
    OpInfo("dynamic-slice", Category.INDEXED, None, ("dynamic_slice_sizes",)),
    OpInfo("dynamic-update-slice", Category.INDEXED, None),
    OpInfo("select-and-scatter", Category.INDEXED, 3, ("window", "select", "scatter")),
    OpInfo("dot", Category.LIBRARY, 2, (
        "lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims")),
    OpInfo("convolution", Category.LIBRARY, 2, (
        "window", "dim_labels", "feature_group_count", "batch_group_count")),
    OpInfo("custom-call", Category.LIBRARY, None, ("custom_call_target",)),
    OpInfo("sort", Category.LIBRARY, None, ("dimensions", "is_stable", "to_apply")),
    OpInfo("batch-norm-inference", Category.LIBRARY, 5, ("epsilon", "feature_index"),
           doc="operand, scale, offset, mean, variance"),
    OpInfo("batch-norm-training", Category.LIBRARY, 3, ("epsilon", "feature_index"),
           doc="operand, scale, offset -> (output, batch mean, batch variance)"),
    OpInfo("batch-norm-grad", Category.LIBRARY, 5, ("epsilon", "feature_index"),
           doc="operand, scale, mean, variance, grad_output -> (d_operand, d_scale, d_offset)"),
    OpInfo("topk", Category.LIBRARY, 1, ("k", "largest")),
    OpInfo("scan", Category.CONTROL_FLOW, None, ("to_apply",)),
    *_ops(Category.LIBRARY, None, "fft triangular-solve cholesky rng rng-bit-generator "
          "rng-get-and-update-state infeed outfeed send recv send-done recv-done"),
    OpInfo("while", Category.CONTROL_FLOW, 1, ("condition", "body")),
    OpInfo("conditional", Category.CONTROL_FLOW, None, ("branch_computations",),
           doc="operand 0 is a pred (true/false) or s32 branch index; one operand per branch"),
    OpInfo("map", Category.CONTROL_FLOW, None, ("dimensions", "to_apply")),
    OpInfo("tuple", Category.TUPLE, None),
    OpInfo("get-tuple-element", Category.TUPLE, 1, ("index",)),
    *_ops(Category.TUPLE, None, "after-all add-dependency domain opt-barrier "
          "get-dimension-size set-dimension-size dynamic-reshape partition-id replica-id"),
    *_ops(Category.COMMUNICATION, None, "all-reduce all-gather reduce-scatter all-to-all "
          "collective-permute collective-broadcast collective-reduce all-reduce-start "
          "all-reduce-done all-gather-start all-gather-done collective-permute-start "
          "collective-permute-done async-start async-update async-done copy-start copy-done "
          "ragged-all-to-all"),
]

OPS: dict[str, OpInfo] = {op.name: op for op in _TABLE}

# Reducer computations we recognise by their body: name -> (HLO binary opcode).
REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")


def op_info(opcode: str) -> OpInfo | None:
    return OPS.get(opcode)


# -- cost counts (HloCostAnalysis conventions) --------------------------------------------------


def _elements(shape: Shape) -> int:
    return sum(leaf.size for leaf in shape.leaves())


def flop_count(node, operand_shapes: list[Shape]) -> int:
    """Floating-point (and integer) operations of one node, transcendentals included."""
    info = OPS.get(node.op)
    if info is None:
        return 0
    out = _elements(node.shape)
    if info.category in (Category.UNARY, Category.BINARY, Category.TERNARY,
                         Category.COMPARE_SELECT):
        return 0 if node.op == "copy" else out
    if node.op == "reduce":
        n_inputs = len(operand_shapes) // 2
        return max(0, sum(s.size for s in operand_shapes[:n_inputs]) - out)
    if node.op == "reduce-window":
        window = node.attrs.get("window", {})
        return out * math.prod(window.get("size", (1,)))
    if node.op == "dot":
        lhs = operand_shapes[0]
        contracted = math.prod(lhs.dims[d] for d in node.attrs.get("lhs_contracting_dims", ()))
        return 2 * out * contracted
    if node.op == "convolution":
        rhs = operand_shapes[1]
        labels = node.attrs.get("dim_labels", "")
        kernel = labels.split("_")[1] if "_" in labels else ""
        # Each output element is a dot over the kernel's spatial window and input features.
        out_feature_dim = kernel.find("o")
        per_output = rhs.size // rhs.dims[out_feature_dim] if out_feature_dim >= 0 else rhs.size
        return 2 * out * per_output
    return 0


def index_operands(op: str, operand_count: int) -> range:
    """The positions of the operands of an `op` node that are indices into another operand, not
    data: the start indices of gather, scatter, dynamic-slice and dynamic-update-slice and the
    sizes of dynamic-reshape."""
    if op == "scatter":       # operands..., indices, updates...
        position = (operand_count - 1) // 2
        return range(position, position + 1)
    if op == "gather":
        return range(1, 2)
    first = {"dynamic-slice": 1, "dynamic-update-slice": 2, "dynamic-reshape": 1}.get(op)
    return range(0) if first is None else range(first, operand_count)


def transcendental_count(node) -> int:
    info = OPS.get(node.op)
    if info is None or not info.transcendental:
        return 0
    return _elements(node.shape)


def bytes_accessed(node, operand_shapes: list[Shape]) -> int:
    """Bytes read (every operand once) plus bytes written (the output), as if unfused."""
    if node.op in ("parameter", "constant", "tuple", "get-tuple-element", "bitcast"):
        return 0
    return sum(s.nbytes for s in operand_shapes) + node.shape.nbytes
