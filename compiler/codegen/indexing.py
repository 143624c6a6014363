"""Index expressions for the elemental emitter, in a canonical form so equal indices look equal.

Every thread of a generated kernel holds a few loop variables (a linear element index `i`, or
a row `r` and a column `c`). The index of any array element it touches is, per dimension, an
`Ix`: offset + scale * ((base / div) % mod), with `base` one of those variables (or a local
the emitter introduced) and its exclusive upper bound known. Reshapes linearize and
delinearize such digits; because the form is canonical — a mod that the bound makes useless is
dropped, a chain of digits of one base linearizes back to one term — the value of a node at
"the same" index reached through different reshapes gets the same key in the value cache, so
it is computed once (a reduction's result, read through broadcast and reshape by every
consumer, is found instead of recomputed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Ix:
    """offset + scale * ((base / div) % mod); a constant when `base` is None."""

    base: str | None = None
    bound: int = 1            # 0 <= base < bound
    div: int = 1
    mod: int | None = None    # None: no modulo
    scale: int = 1
    offset: int = 0

    @staticmethod
    def const(value: int) -> Ix:
        return Ix(offset=int(value))

    @staticmethod
    def var(name: str, bound: int) -> Ix:
        return Ix(name, bound).normalized()

    @property
    def is_const(self) -> bool:
        return self.base is None

    @property
    def is_digit(self) -> bool:
        """A pure (base / div) % mod term: no scale, no offset."""
        return self.base is not None and self.scale == 1 and self.offset == 0

    def term_range(self) -> int:
        """How many values (base / div) % mod takes: its exclusive upper bound."""
        if self.base is None:
            return 1
        reach = -(-self.bound // self.div)
        return reach if self.mod is None else min(reach, self.mod)

    def max_value(self) -> int:
        return max(self.offset, self.offset + self.scale * (self.term_range() - 1))

    def normalized(self) -> Ix:
        if self.base is None:
            return Ix.const(self.offset)
        if self.div >= self.bound or self.scale == 0 or self.mod == 1:
            return Ix.const(self.offset)
        mod = self.mod
        if mod is not None and -(-self.bound // self.div) <= mod:
            mod = None
        return Ix(self.base, self.bound, self.div, mod, self.scale, self.offset)

    def plus(self, amount: int) -> Ix:
        return Ix(self.base, self.bound, self.div, self.mod, self.scale,
                  self.offset + amount).normalized()

    def times(self, factor: int) -> Ix:
        return Ix(self.base, self.bound, self.div, self.mod, self.scale * factor,
                  self.offset * factor).normalized()

    def c(self) -> str:
        """The C expression."""
        if self.base is None:
            return str(self.offset)
        term = self.base
        if self.div != 1:
            term = f"{term} / {self.div}"
        if self.mod is not None:
            term = f"({term}) % {self.mod}" if self.div != 1 else f"{term} % {self.mod}"
        if self.scale != 1:
            needs_parens = self.div != 1 or self.mod is not None
            term = f"({term}) * {self.scale}" if needs_parens else f"{term} * {self.scale}"
        if self.offset > 0:
            term = f"{term} + {self.offset}"
        elif self.offset < 0:
            term = f"{term} - {-self.offset}"
        return term

    def __str__(self) -> str:
        return self.c()


Index = tuple[Ix, ...]
# Introduces a named local for an index expression the canonical form cannot hold; returns
# the local's name. Arguments: the C expression and its exclusive bound.
NewLocal = Callable[[str, int], str]


def strides(dims: Sequence[int]) -> list[int]:
    """Row-major strides of `dims`."""
    out, step = [], 1
    for n in reversed(dims):
        out.append(step)
        step *= n
    return out[::-1]


def delinearize(linear: Ix, dims: Sequence[int], new_local: NewLocal) -> Index:
    """The multi-index over `dims` of the element at row-major position `linear`."""
    total = math.prod(dims)
    if total == 0:
        # An empty shape has no element to find (and a zero stride to divide by): any index
        # will do, as no thread computes one.
        return tuple(Ix.const(0) for _ in dims)
    if linear.is_const:
        value, digits = linear.offset, []
        for stride, n in zip(strides(dims), dims):
            digits.append(Ix.const((value // stride) % n if n else 0))
        return tuple(digits)
    if not linear.is_digit or (linear.mod is not None and linear.mod != total):
        linear = Ix.var(new_local(linear.c(), linear.max_value() + 1), linear.max_value() + 1)
    digits = []
    for k, (stride, n) in enumerate(zip(strides(dims), dims)):
        mod = None if k == 0 and linear.mod is None else n
        digits.append(Ix(linear.base, linear.bound, linear.div * stride, mod).normalized())
    return tuple(digits)


def linearize(index: Index, dims: Sequence[int], new_local: NewLocal) -> Ix:
    """The row-major position of `index` in an array of `dims`, simplified to one digit when
    the index is a chain of digits of one base (the inverse of `delinearize`)."""
    parts = [(ix, n) for ix, n in zip(index, dims) if n != 1]
    if all(ix.is_const for ix, _ in parts):
        return Ix.const(sum(ix.offset * s for ix, s in zip(index, strides(dims))))
    chained = _chain(parts)
    if chained is not None:
        return chained
    terms = []
    for ix, stride in zip(index, strides(dims)):
        if ix.is_const and ix.offset == 0:
            continue
        terms.append(ix.c() if stride == 1 else f"({ix.c()}) * {stride}")
    total = math.prod(dims)
    return Ix.var(new_local(" + ".join(terms), total), total)


def reshape_index(index: Index, dims: Sequence[int], source_dims: Sequence[int],
                  new_local: NewLocal) -> Index:
    """The index into a reshape's operand (of `source_dims`) of the element at `index` of the
    reshape (of `dims`): the row-major position is kept. When the index is not one chain of
    digits of one variable (the row schedules' row digits followed by column digits, or a
    column shifted by a slice), both shapes are cut where they have a boundary (as many
    elements before it in both) and each piece is reshaped alone: the digits of the pieces
    that hold a row's index come out as that index again (a [B, S, H, D] -> [B, S, H * D]
    reshape keeps B and S), so the value cache finds what was computed at the row's index
    (its reductions' results) instead of recomputing it."""
    whole = [(ix, n) for ix, n in zip(index, dims) if n != 1]
    if all(ix.is_const for ix, _ in whole) or _chain(whole) is not None or \
            0 in dims or 0 in source_dims:
        return delinearize(linearize(index, dims, new_local), source_dims, new_local)
    out: list[Ix] = []
    start, source_start = 0, 0
    for end, source_end in _common_boundaries(dims, source_dims):
        piece, source_piece = tuple(dims[start:end]), tuple(source_dims[source_start:source_end])
        if piece == source_piece:
            out.extend(index[start:end])
        else:
            linear = linearize(index[start:end], piece, new_local)
            out.extend(delinearize(linear, source_piece, new_local))
        start, source_start = end, source_end
    return tuple(out)


def _common_boundaries(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    """The pairs (i, j), in order, where the first i dims of `a` hold as many elements as the
    first j dims of `b` (no dim of size 0; the last pair is (len(a), len(b)))."""
    i = j = 0
    product_a = product_b = 1
    boundaries = []
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and product_a <= product_b):
            product_a *= a[i]
            i += 1
        else:
            product_b *= b[j]
            j += 1
        if product_a == product_b:
            boundaries.append((i, j))
    return boundaries


def linear_expr(index: Index, dims: Sequence[int]) -> str:
    """The row-major position of `index` as a C expression, each run of digits of one base
    chained into one term (for addresses: no local needed)."""
    terms, run = [], []
    parts = [(ix, n, s) for ix, n, s in zip(index, dims, strides(dims)) if n != 1]
    constant = 0
    for k, (ix, n, stride) in enumerate(parts):
        if ix.is_const:
            constant += ix.offset * stride
            continue
        run.append((ix, n))
        following = parts[k + 1][0] if k + 1 < len(parts) else None
        if following is not None and following.base == ix.base and following.is_digit \
                and ix.is_digit:
            continue
        chained = _chain(run) if len(run) > 1 else None
        if chained is not None:
            terms.append((chained, stride))
        else:
            step = stride
            for part, m in reversed(run):
                terms.append((part, step))
                step *= m
        run = []
    text = []
    for ix, stride in terms:
        if stride == 1:
            text.append(ix.c())
        elif ix.is_digit and ix.div == 1 and ix.mod is None:
            text.append(f"{ix.c()} * {stride}")
        else:
            text.append(f"({ix.c()}) * {stride}")
    if constant or not text:
        text.append(str(constant))
    return " + ".join(text)


def _chain(parts: list[tuple[Ix, int]]) -> Ix | None:
    """(x / d_0) % n_0 * S_0 + ... + (x / d_k) % n_k as one digit, when d_j = d_{j+1} * n_{j+1}."""
    if not all(ix.is_digit for ix, _ in parts):
        return None
    base = parts[0][0].base
    if any(ix.base != base for ix, _ in parts):
        return None
    for ix, n in parts:
        if not (ix.mod == n or (ix.mod is None and ix.term_range() <= n)):
            return None
    for (ix, _), (nxt, m) in zip(parts, parts[1:]):
        if ix.div != nxt.div * m:
            return None
    total = math.prod(n for _, n in parts)
    last = parts[-1][0]
    return Ix(base, last.bound, last.div, total).normalized()
