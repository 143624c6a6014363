"""The C text of one op: CUDA C types, literals and expressions, kept apart from the index
propagation that decides which values to compute where (elemental.py), as a renderer's tables
are kept apart from the code that walks the program (tinygrad's renderer is the example).

- types: `value_ctype` (the C type of a local: 16-bit floats live in float), `storage_ctype`
  (of an element in a buffer), loads and stores converting between them;
- `literal`: a constant exact for its dtype; `c_identifier`;
- reductions: each reducer's functor (fx_prelude.cuh) and identity;
- elementwise ops: `unary_expr`, `binary_expr`, `convert_expr`, from per-op tables, with the
  interpreter's numerics (16-bit floats rounded after every op, integer arithmetic wrapping in
  unsigned types, XLA's division, shift and float-to-int rules through fx_prelude.cuh);
- `Body`: the lines of a kernel's body, each with the node it computes, under a line limit;
- the errors codegen raises: `CodegenUnsupported` (nothing emits this yet), and
  `EmissionTooLarge` (past the code budget, compiler/codegen/emission.py).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from compiler.ir.dtypes import DType


class CodegenUnsupported(Exception):
    """The kernel uses something the generator cannot emit yet; the message says what."""


class EmissionTooLarge(CodegenUnsupported):
    """The kernel's code would pass a statement budget (compiler/codegen/emission.py): the
    emitter stopped writing it; the message says how far it got."""


# -- C types --------------------------------------------------------------------------------

_INT_CTYPES = {("sint", 8): "int8_t", ("sint", 16): "int16_t", ("sint", 32): "int32_t",
               ("sint", 64): "int64_t", ("uint", 8): "uint8_t", ("uint", 16): "uint16_t",
               ("uint", 32): "uint32_t", ("uint", 64): "uint64_t"}


def value_ctype(dtype: DType) -> str:
    """The C type of a local holding a value of `dtype` (16-bit floats live in float)."""
    if dtype.kind == "pred":
        return "bool"
    if dtype.is_float and dtype.name in ("f16", "bf16", "f32"):
        return "float"
    if dtype.name == "f64":
        return "double"
    if (dtype.kind, dtype.bits) in _INT_CTYPES:
        return _INT_CTYPES[(dtype.kind, dtype.bits)]
    raise CodegenUnsupported(f"no CUDA code for element type {dtype.name}")


def storage_ctype(dtype: DType) -> str:
    """The C type of an element in a buffer."""
    if dtype.name == "f16":
        return "__half"
    if dtype.name == "bf16":
        return "__nv_bfloat16"
    return value_ctype(dtype)


def _unsigned_ctype(dtype: DType) -> str:
    return _INT_CTYPES[("uint", dtype.bits)]


def _wide_unsigned(dtype: DType) -> str:
    """The unsigned type integer arithmetic of `dtype` wraps in without undefined behaviour."""
    return "uint64_t" if dtype.bits == 64 else "uint32_t"


def round_to_dtype(dtype: DType, expr: str) -> str:
    """`expr` (computed in f32) rounded to a 16-bit float type; unchanged for other types."""
    if dtype.name == "bf16":
        return f"fx_round_bf16({expr})"
    if dtype.name == "f16":
        return f"fx_round_f16({expr})"
    return expr


def load_expr(dtype: DType, element: str) -> str:
    if dtype.name == "bf16":
        return f"__bfloat162float({element})"
    if dtype.name == "f16":
        return f"__half2float({element})"
    return element


def store_expr(dtype: DType, value: str) -> str:
    if dtype.name == "bf16":
        return f"__float2bfloat16_rn({value})"
    if dtype.name == "f16":
        return f"__float2half_rn({value})"
    return value


def literal(dtype: DType, value) -> str:
    """A C literal of the value, exact for its dtype (16-bit floats as f32 literals)."""
    if dtype.kind == "pred":
        return "true" if bool(value) else "false"
    if dtype.is_float:
        double = dtype.name == "f64"
        x = float(value)
        if math.isnan(x):
            return "FX_NAN_D" if double else "FX_NAN_F"
        if math.isinf(x):
            return ("-" if x < 0 else "") + ("FX_INF_D" if double else "FX_INF_F")
        if double:
            text = repr(x)
        else:
            text = f"{float(np.float32(x)):.9g}"
        if not any(ch in text for ch in ".en"):
            text += ".0"
        return text if double else text + "f"
    ctype = value_ctype(dtype)
    v = int(value)
    if dtype.bits == 64:
        return f"{ctype}({v}{'ULL' if dtype.kind == 'uint' else 'LL'})"
    if ctype == "int32_t":
        return str(v) if v > -2**31 else f"int32_t({v}LL)"
    return f"{ctype}({v})" if ctype != "int32_t" else str(v)


def c_identifier(name: str) -> str:
    text = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return text if text and not text[0].isdigit() else f"n_{text}"


_REDUCER_FUNCTORS = {"add": "FxAdd", "multiply": "FxMul", "maximum": "FxMax",
                     "minimum": "FxMin", "and": "FxAnd", "or": "FxOr", "xor": "FxXor"}


def reducer_functor(reducer: str) -> str:
    return _REDUCER_FUNCTORS[reducer]


def reducer_identity(reducer: str, dtype: DType) -> str:
    """The identity of the reducer in `dtype` (each thread starts from it; the init value is
    combined once, at the end, so a non-identity init counts once as in the interpreter)."""
    if reducer in ("add", "or", "xor"):
        return literal(dtype, 0)
    if reducer == "multiply":
        return literal(dtype, 1)
    if reducer == "and":
        return literal(dtype, True if dtype.kind == "pred" else -1 if dtype.kind == "sint"
                       else (1 << dtype.bits) - 1)
    if dtype.is_float:
        return literal(dtype, -math.inf if reducer == "maximum" else math.inf)
    if dtype.kind == "pred":
        return literal(dtype, reducer == "minimum")
    low = -(1 << (dtype.bits - 1)) if dtype.kind == "sint" else 0
    high = (1 << (dtype.bits - 1)) - 1 if dtype.kind == "sint" else (1 << dtype.bits) - 1
    return literal(dtype, low if reducer == "maximum" else high)


# -- elementwise ops ------------------------------------------------------------------------

_FLOAT_UNARY = {
    "exponential": "exp", "exponential-minus-one": "expm1", "log": "log",
    "log-plus-one": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "tanh": "tanh", "sine": "sin",
    "cosine": "cos", "tan": "tan", "erf": "erf", "acos": "acos", "acosh": "acosh",
    "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh", "cosh": "cosh",
    "sinh": "sinh", "abs": "fabs", "floor": "floor", "ceil": "ceil",
    "round-nearest-afz": "round", "round-nearest-even": "rint",
}
_ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*"}
COMPARISONS = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _math(dtype: DType, function: str, *args: str) -> str:
    suffix = "" if dtype.name == "f64" else "f"
    return f"{function}{suffix}({', '.join(args)})"


def unary_expr(op: str, dtype: DType, x: str) -> str:
    """C expression of a unary elementwise op on a value of `dtype` (the result's type)."""
    if dtype.is_float:
        one = literal(dtype, 1)
        if op in _FLOAT_UNARY:
            return round_to_dtype(dtype, _math(dtype, _FLOAT_UNARY[op], x))
        if op == "rsqrt":
            return round_to_dtype(dtype, f"{one} / {_math(dtype, 'sqrt', x)}")
        if op == "logistic":
            return round_to_dtype(dtype, f"{one} / ({one} + {_math(dtype, 'exp', f'-{x}')})")
        if op == "negate":
            return f"-{x}"
        if op == "sign":
            return f"fx_sign({x})"
        if op == "copy":
            return x
    elif dtype.kind == "pred":
        if op == "not":
            return f"!{x}"
        if op in ("copy", "abs"):
            return x
    else:
        ctype, unsigned = value_ctype(dtype), _unsigned_ctype(dtype)
        if op == "negate":
            return f"{ctype}({_wide_unsigned(dtype)}(0) - {_wide_unsigned(dtype)}({x}))"
        if op == "abs":
            return f"fx_iabs({x})"
        if op == "not":
            return f"{ctype}(~{x})"
        if op == "sign":
            return f"fx_sign({x})"
        if op == "popcnt":
            return f"{ctype}(fx_popcount<{unsigned}>({unsigned}({x})))"
        if op == "count-leading-zeros":
            return f"{ctype}(fx_count_leading_zeros<{unsigned}>({unsigned}({x})))"
        if op == "copy":
            return x
    raise CodegenUnsupported(f"no CUDA code for {op} on {dtype.name}")


def binary_expr(op: str, dtype: DType, a: str, b: str) -> str:
    """C expression of a binary elementwise op whose operands and result have `dtype`."""
    if dtype.is_float:
        if op in _ARITHMETIC:
            return round_to_dtype(dtype, f"{a} {_ARITHMETIC[op]} {b}")
        if op == "divide":
            return round_to_dtype(dtype, f"{a} / {b}")
        if op == "remainder":
            return round_to_dtype(dtype, _math(dtype, "fmod", a, b))
        if op == "power":
            return round_to_dtype(dtype, _math(dtype, "pow", a, b))
        if op == "atan2":
            return round_to_dtype(dtype, _math(dtype, "atan2", a, b))
        if op == "maximum":
            return f"fx_max({a}, {b})"
        if op == "minimum":
            return f"fx_min({a}, {b})"
    elif dtype.kind == "pred":
        table = {"and": "&&", "or": "||", "xor": "!=", "maximum": "||", "minimum": "&&",
                 "add": "||", "multiply": "&&"}
        if op in table:
            return f"({a} {table[op]} {b})"
    else:
        ctype, unsigned, wide = value_ctype(dtype), _unsigned_ctype(dtype), _wide_unsigned(dtype)
        if op in _ARITHMETIC:
            return f"{ctype}({wide}({a}) {_ARITHMETIC[op]} {wide}({b}))"
        functions = {"divide": "fx_idiv", "remainder": "fx_irem", "maximum": "fx_max",
                     "minimum": "fx_min", "power": "fx_ipow"}
        if op in functions:
            return f"{functions[op]}<{ctype}>({a}, {b})"
        bitwise = {"and": "&", "or": "|", "xor": "^"}
        if op in bitwise:
            return f"{ctype}({a} {bitwise[op]} {b})"
        shifts = {"shift-left": "fx_shl", "shift-right-logical": "fx_shr_logical",
                  "shift-right-arithmetic": "fx_shr_arith"}
        if op in shifts:
            return f"{shifts[op]}<{ctype}, {unsigned}>({a}, {b})"
    raise CodegenUnsupported(f"no CUDA code for {op} on {dtype.name}")


def convert_expr(source: DType, target: DType, x: str) -> str:
    """XLA's convert: to pred is x != 0; float -> int truncates, saturates, NaN -> 0."""
    if target.kind == "pred":
        return f"({x} != 0)"
    if source == target or (source.name in ("f16", "bf16") and target.name == "f32"):
        return x
    target_ctype = value_ctype(target)
    if target.is_float:
        return round_to_dtype(target, f"{target_ctype}({x})")
    if source.is_float:
        low = -(1 << (target.bits - 1)) if target.kind == "sint" else 0
        high = (1 << (target.bits - 1)) - 1 if target.kind == "sint" else (1 << target.bits) - 1
        return (f"fx_float_to_int<{target_ctype}>(double({x}), {float(low)!r}, "
                f"{float(high)!r}, {target_ctype}({literal(target, low)}), "
                f"{target_ctype}({literal(target, high)}))")
    return f"{target_ctype}({x})"


# -- the body: lines with the nodes they compute ---------------------------------------------


@dataclass
class Body:
    """Lines of C inside a kernel, indented, each with the graph node it computes (or None).

    `limit`: the most lines it takes; one more raises EmissionTooLarge, so a kernel whose
    code would be too large is never written out whole (compiler/codegen/emission.py)."""

    lines: list[tuple[str, str | None]] = field(default_factory=list)
    depth: int = 1
    limit: int | None = None

    def line(self, text: str, node: str | None = None) -> None:
        if self.limit is not None and len(self.lines) >= self.limit:
            raise EmissionTooLarge(f"over {self.limit} statements emitted")
        self.lines.append(("  " * self.depth + text, node))

    @contextmanager
    def block(self, opener: str, node: str | None = None, closer: str = "}") -> Iterator[None]:
        self.line(opener, node)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line(closer)
