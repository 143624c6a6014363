"""Element types of the Graph IR, spelled as XLA spells them.

Every dtype knows its NumPy counterpart so the reference interpreter can hold values of it.
bf16, the fp8 and fp4 formats and the 4-bit integers come from ml_dtypes, the package JAX
itself uses for them, so our rounding is JAX's rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    """One element type. `kind` is one of: pred, sint, uint, float, complex, token, opaque."""

    name: str
    kind: str
    bits: int
    numpy_name: str | None

    @property
    def numpy(self) -> np.dtype:
        if self.numpy_name is None:
            raise TypeError(f"dtype {self.name} has no array representation")
        return _numpy_dtype(self.numpy_name)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("sint", "uint")

    @property
    def is_array_type(self) -> bool:
        return self.kind not in ("token", "opaque")

    @property
    def itemsize(self) -> float:
        """Bytes per element as stored in device memory (sub-byte types are packed)."""
        return self.bits / 8

    def __str__(self) -> str:
        return self.name


def _numpy_dtype(name: str) -> np.dtype:
    if hasattr(ml_dtypes, name):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


_TABLE = [
    DType("pred", "pred", 8, "bool"),
    DType("s4", "sint", 4, "int4"),
    DType("s8", "sint", 8, "int8"),
    DType("s16", "sint", 16, "int16"),
    DType("s32", "sint", 32, "int32"),
    DType("s64", "sint", 64, "int64"),
    DType("u4", "uint", 4, "uint4"),
    DType("u8", "uint", 8, "uint8"),
    DType("u16", "uint", 16, "uint16"),
    DType("u32", "uint", 32, "uint32"),
    DType("u64", "uint", 64, "uint64"),
    DType("f16", "float", 16, "float16"),
    DType("bf16", "float", 16, "bfloat16"),
    DType("f32", "float", 32, "float32"),
    DType("f64", "float", 64, "float64"),
    DType("f4e2m1fn", "float", 4, "float4_e2m1fn"),
    DType("f8e3m4", "float", 8, "float8_e3m4"),
    DType("f8e4m3", "float", 8, "float8_e4m3"),
    DType("f8e4m3fn", "float", 8, "float8_e4m3fn"),
    DType("f8e4m3fnuz", "float", 8, "float8_e4m3fnuz"),
    DType("f8e4m3b11fnuz", "float", 8, "float8_e4m3b11fnuz"),
    DType("f8e5m2", "float", 8, "float8_e5m2"),
    DType("f8e5m2fnuz", "float", 8, "float8_e5m2fnuz"),
    DType("f8e8m0fnu", "float", 8, "float8_e8m0fnu"),
    DType("c64", "complex", 64, "complex64"),
    DType("c128", "complex", 128, "complex128"),
    DType("token", "token", 0, None),
    DType("opaque", "opaque", 0, None),
]

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}

PRED = DTYPES["pred"]
S32 = DTYPES["s32"]
S64 = DTYPES["s64"]
F16 = DTYPES["f16"]
BF16 = DTYPES["bf16"]
F32 = DTYPES["f32"]
F64 = DTYPES["f64"]
TOKEN = DTYPES["token"]


def dtype(name: str) -> DType:
    """The dtype called `name` (HLO spelling); KeyError with the known names otherwise."""
    try:
        return DTYPES[name]
    except KeyError:
        known = ", ".join(DTYPES)
        raise KeyError(f"unknown element type '{name}' (known: {known})") from None


def from_numpy(np_dtype: np.dtype) -> DType:
    """The IR dtype whose NumPy representation is `np_dtype`."""
    np_dtype = np.dtype(np_dtype)
    for d in _TABLE:
        if d.numpy_name is not None and d.numpy == np_dtype:
            return d
    raise KeyError(f"no IR dtype for NumPy dtype {np_dtype}")


def accumulation_dtype(d: DType) -> DType:
    """The type XLA's GPU backend accumulates reductions of `d` in: f32 for 16-bit floats.

    XLA's GPU reduction emitter upcasts f16/bf16 partial sums to f32 and rounds once at the end
    (see xla/service/gpu/reduction_utils and the ReductionEmitter); the reference interpreter
    follows that so it agrees with what a fused kernel computes.
    """
    if d.is_float and d.bits < 32:
        return F32
    return d
