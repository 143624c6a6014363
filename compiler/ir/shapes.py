"""Static shapes: an array shape (dtype, dims, layout) or a tuple of shapes.

Layouts are XLA's minor-to-major lists: `f32[8,16]{1,0}` is row-major, dimension 1 varies
fastest. A shape without a layout means the default (row-major) one. Bounded dynamic dimensions
(`f32[<=4]`) keep their bound as the static size and are flagged in `dynamic`, which is what
XLA allocates for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Union

from compiler.ir.dtypes import TOKEN, DType


@dataclass(frozen=True)
class ArrayShape:
    dtype: DType
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None = None
    dynamic: tuple[bool, ...] = field(default=())

    @property
    def rank(self) -> int:
        return len(self.dims)

    @cached_property
    def size(self) -> int:
        # Cached: cost models ask it of every value in every candidate kernel. A frozen
        # dataclass's fields never change, and `cached_property` stores outside them.
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        return math.ceil(self.size * self.dtype.bits / 8)

    @property
    def minor_to_major(self) -> tuple[int, ...]:
        if self.layout is not None:
            return self.layout
        return tuple(range(self.rank - 1, -1, -1))

    @property
    def is_tuple(self) -> bool:
        return False

    def with_dtype(self, dtype: DType) -> ArrayShape:
        return ArrayShape(dtype, self.dims, self.layout, self.dynamic)

    def with_dims(self, dims: tuple[int, ...]) -> ArrayShape:
        return ArrayShape(self.dtype, tuple(dims))

    def leaves(self) -> list[ArrayShape]:
        return [self]

    def __str__(self) -> str:
        dims = ",".join(
            f"<={d}" if self.dynamic and self.dynamic[i] else str(d)
            for i, d in enumerate(self.dims)
        )
        text = f"{self.dtype.name}[{dims}]"
        if self.layout is not None and self.rank > 0:
            text += "{" + ",".join(str(d) for d in self.layout) + "}"
        return text


@dataclass(frozen=True)
class TupleShape:
    elements: tuple[Shape, ...]

    @property
    def is_tuple(self) -> bool:
        return True

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.elements)

    def leaves(self) -> list[ArrayShape]:
        return [leaf for e in self.elements for leaf in e.leaves()]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


Shape = Union[ArrayShape, TupleShape]

TOKEN_SHAPE = ArrayShape(TOKEN, ())


def array(dtype: DType, dims, layout=None) -> ArrayShape:
    return ArrayShape(dtype, tuple(int(d) for d in dims), None if layout is None else tuple(layout))


def same_array_type(a: Shape, b: Shape) -> bool:
    """Equal dtype and dims, ignoring layout and dynamic-ness (what op semantics care about)."""
    if a.is_tuple or b.is_tuple:
        if not (a.is_tuple and b.is_tuple) or len(a.elements) != len(b.elements):
            return False
        return all(same_array_type(x, y) for x, y in zip(a.elements, b.elements))
    return a.dtype == b.dtype and a.dims == b.dims


def shape_to_json(shape: Shape):
    if shape.is_tuple:
        return {"tuple": [shape_to_json(e) for e in shape.elements]}
    out = {"dtype": shape.dtype.name, "dims": list(shape.dims)}
    if shape.layout is not None:
        out["layout"] = list(shape.layout)
    return out
