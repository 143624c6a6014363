"""CHLO ops with no IR op of their own, spelled out in IR ops as XLA spells them out when it
turns JAX's StableHLO into HLO (its CHLO legalization), so that a module imports to the same
graph, with the same values, from its StableHLO as from the HLO text JAX prints for it.

`chlo.erf_inv` is what `jax.random.normal` (inverse-CDF sampling) and
`jax.scipy.special.erfinv` lower to. XLA computes it in f32 (f16 and bf16 are converted to f32
and back) with Giles' single-precision approximation, M. Giles, "Approximating the erfinv
function", GPU Computing Gems Jade Edition (2011): with w = -log(1 - x^2),
erfinv(x) = x p(w - 2.5) for w < 5 and x q(sqrt(w) - 3) beyond, and x * inf at |x| = 1.
Both polynomials are evaluated for every element and the coefficients picked by a select, as
in the HLO text JAX prints for `jax.random.normal`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from compiler.errors import SourceLoc, UnsupportedError
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import PRED, dtype
from compiler.ir.shapes import ArrayShape

# Giles (2011), single precision, highest power first: p for w < 5, q beyond.
ERF_INV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERF_INV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
# The types XLA computes erf_inv of in f32 (f16 and bf16 widened to it, the result rounded
# back); f64 has a polynomial of its own.
_IN_F32 = ("f16", "bf16", "f32")


def erf_inv(builder: GraphBuilder, x: str, loc: SourceLoc, name: Callable[[str], str]) -> str:
    """The node computing erfinv of node `x` elementwise; `name(op)` names each new node."""
    shape = builder.shape_of(x)
    if shape.dtype.name not in _IN_F32:
        raise UnsupportedError(f"chlo.erf_inv of {shape.dtype.name} is not supported by the "
                               f"StableHLO importer (only of {', '.join(_IN_F32)}); upload the "
                               "HLO text instead, in which XLA has expanded it", loc)
    f32 = ArrayShape(dtype("f32"), shape.dims)

    def node(op: str, operands: list[str], attrs: dict | None = None,
             result: ArrayShape = f32) -> str:
        return builder.add(op, operands, attrs, name=name(op), loc=loc, shape=result)

    def splat(value: float) -> str:
        scalar = builder.constant(np.float32(value), name("constant"), loc)
        return node("broadcast", [scalar], {"dimensions": ()})

    def compare(a: str, b: str, direction: str) -> str:
        return node("compare", [a, b], {"direction": direction}, ArrayShape(PRED, shape.dims))

    wide = x if shape.dtype.name == "f32" else node("convert", [x])
    w = node("negate", [node("log-plus-one", [node("multiply", [wide, node("negate", [wide])])])])
    central = compare(w, splat(5.0), "LT")
    t = node("select", [central, node("subtract", [w, splat(2.5)]),
                        node("subtract", [node("sqrt", [w]), splat(3.0)])])
    p = None
    for p_coefficient, q_coefficient in zip(ERF_INV_CENTRAL, ERF_INV_TAIL):
        coefficient = node("select", [central, splat(p_coefficient), splat(q_coefficient)])
        p = coefficient if p is None else node("add", [coefficient, node("multiply", [p, t])])
    value = node("multiply", [p, wide])
    at_one = compare(node("abs", [wide]), splat(1.0), "EQ")
    value = node("select", [at_one, node("multiply", [wide, splat(np.inf)]), value])
    return value if wide == x else node("convert", [value], result=shape)
