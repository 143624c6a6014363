"""Block locality: which blocks can compute a value of a kernel, relative to the rows of its
reductions (AStitch's regional stitching; compiler/fusion/stitch.py's module docstring says
how the fusers use it).

Every node of a candidate kernel gets a label from its operands' labels. The kernel analysis
(compiler/kernels/analysis.py) labels with `map_rows`, here, and decides from the labels what
kind of kernel a group is: for the fusers (compiler/fusion/stitch.py, cost_based/), which
keep the labels of their groups as they merge them, and for the horizontal schedule's parts
(compiler/codegen/schedules/horizontal.py). It also says whether a reduction's rows fit a
block and what a `moved` value may do.

Labels are (kind, space, detail) tuples:
- `INV`: depends on no reduction of the kernel; any block computes the elements it needs.
- `row_label(space)`: one value per row of `space` (a reduction's result, what is computed
  from it).
- `full_label(space)`: element i belongs to row i // space.length. A full value has the rows of
  the reductions it reads and a row length of its own: a slice of half of every row has half
  their length, a row concatenated with itself twice. A block holding whole rows computes it
  all the same, so "the same rows, another length" is still block-local (the row schedules
  loop over each row's columns, whatever their number: compiler/codegen/schedules/rows.py).
- `("moved", space, (permutation, operand dims))`: whole rows of a full value of `space`, put at
  other places by a transpose.
- `GRID`: needs values that other blocks computed.

The rule (`map_rows`) for a node that reads labelled values, by op:
- elementwise: all labelled operands carry one label: it keeps it (a `moved` value only this);
- reshape, bitcast, a reduction of size-1 dimensions: row-major order is kept, so element i
  stays in row i // length: the label is kept;
- broadcast: one whose operand's elements keep their row-major order and lead the output
  keeps the label when it adds no element, else gives `full` with rows of output size /
  rows; of a `full` value, also `full` when the operand's row dimensions are the output's
  leading ones, in order (what is added is inside each row);
- transpose: of size-1 dimensions only, the label is kept; of a `full` value's inner
  dimensions (its row dimensions stay leading, in order), `full` of the same length; moving
  whole rows, `moved`;
- slice, concatenate, reverse, pad of `full` values that leave the row dimensions (the leading
  dimensions whose product is the rows) alone: sliced whole, not the dimension concatenated,
  reversed or padded. Output element (r, c') then reads elements of row r only: `full` with
  the same rows and the output's own length. A concatenate may join full values of several
  lengths (of the same rows) and values that depend on no reduction; a pad's padding value
  must depend on none.
- anything else: not block-local (None; the caller labels it `GRID`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.ir.graph import Graph, Node
from compiler.ir.ops import OPS


@dataclass(frozen=True)
class RowSpace:
    """A reduction's iteration space: `rows` kept elements, each reducing `length` elements."""

    rows: int
    length: int
    contiguous: bool  # the reduced dimensions are the innermost: a row is contiguous

    def __str__(self) -> str:
        return f"{self.rows}x{self.length}" + ("" if self.contiguous else " strided")


INV = ("inv", None, None)
GRID = ("grid", None, None)


def row_label(space: RowSpace) -> tuple:
    return ("row", space, None)


def full_label(space: RowSpace) -> tuple:
    return ("full", space, None)


def map_rows(graph: Graph, node: Node, operand_labels: list[tuple]) -> tuple | None:
    """The label of `node`, not a reduction that moves data, from its operands' labels (in
    operand order, INV for values that depend on no reduction); None when its elements need
    values of other blocks (module docstring)."""
    dependent = [label for label in operand_labels if label != INV]
    if not dependent:
        return INV
    if GRID in dependent:
        return None
    op = node.op
    info = OPS.get(op)
    label = dependent[0]
    same = all(other == label for other in dependent[1:])
    if info is not None and info.is_elementwise:
        return label if same else None
    kind, space, _ = label
    if kind == "moved":
        return None
    if op in ("slice", "concatenate", "reverse", "pad"):
        return _moved_within_rows(graph, node, operand_labels)
    if not same:
        return None
    size = sum(leaf.size for leaf in node.shape.leaves())
    expected = space.rows if kind == "row" else space.rows * space.length
    if op in ("reshape", "bitcast", "reduce"):  # a reduction here moves no data
        return label if size == expected else None
    if op == "broadcast":
        return _broadcast(graph, node, label, size, expected)
    if op == "transpose":
        return _transpose(graph, node, label)
    return None


def _broadcast(graph: Graph, node: Node, label: tuple, size: int, expected: int) -> tuple | None:
    kind, space, _ = label
    if keeps_row_major_order(graph, node):  # output element i reads element i // (size / ...)
        return label if size == expected else full_label(_rows_of_length(space.rows, size))
    if kind != "full":
        return None
    operand = graph.nodes[node.operands[0]].array_shape.dims
    out = node.array_shape.dims
    operand_rows = row_dims(operand, space.rows)
    out_rows = row_dims(out, space.rows)
    if operand_rows is None or out_rows is None:
        return None
    mapping = node.attrs.get("dimensions", ())
    leading = [mapping[d] for d in range(operand_rows) if operand[d] != 1]
    if leading != [d for d in range(out_rows) if out[d] != 1]:
        return None
    if any(mapping[d] < out_rows for d in range(operand_rows, len(operand)) if operand[d] != 1):
        return None
    return full_label(_rows_of_length(space.rows, size))


def _transpose(graph: Graph, node: Node, label: tuple) -> tuple | None:
    kind, space, _ = label
    if transpose_keeps_order(graph, node):
        return label
    if kind != "full":
        return None
    operand = graph.nodes[node.operands[0]].array_shape.dims
    permutation = node.attrs["dimensions"]
    leading = row_dims(operand, space.rows)
    wanted = [d for d in range(leading or 0) if operand[d] != 1]
    moved = [d for d in permutation if operand[d] != 1]
    if leading is not None and moved[:len(wanted)] == wanted:
        return label  # only the dimensions inside each row move
    if _transpose_keeps_rows(graph, node, space.length):
        return ("moved", space, (permutation, operand))
    return None


def _moved_within_rows(graph: Graph, node: Node, operand_labels: list[tuple]) -> tuple | None:
    """A slice, concatenate, reverse or pad that moves elements only within each row of its
    `full` operands (module docstring): `full` of the output's row length, else None."""
    op = node.op
    data = operand_labels if op == "concatenate" else operand_labels[:1]
    if any(label != INV for label in operand_labels[len(data):]):
        return None  # a padding value computed from a reduction
    spaces = {label[1] for label in data if label != INV}
    if any(label[0] != "full" for label in data if label != INV) or \
            len({space.rows for space in spaces}) != 1:
        return None
    rows = next(iter(spaces)).rows
    out = node.array_shape.dims
    leading = row_dims(out, rows)
    if leading is None:
        return None
    if op == "concatenate":
        inside = node.attrs["dimensions"][0] >= leading
    elif op == "slice":
        operand = graph.nodes[node.operands[0]].array_shape.dims
        inside = all(tuple(node.attrs["slice"][d]) == (0, operand[d], 1)
                     for d in range(leading))
    elif op == "reverse":
        inside = all(d >= leading or out[d] == 1 for d in node.attrs["dimensions"])
    else:
        inside = all(tuple(node.attrs["padding"][d]) == (0, 0, 0) for d in range(leading))
    size = math.prod(out)
    if not inside or size == 0:
        return None
    return full_label(_rows_of_length(rows, size))


def _rows_of_length(rows: int, size: int) -> RowSpace:
    """The row space of a value with `size` elements in `rows` rows."""
    return RowSpace(rows, size // rows, True)


def row_dims(dims, rows: int) -> int | None:
    """How many leading dimensions of `dims` make up `rows` rows (the fewest: size-1 dimensions
    after them count as inside the row); None when no leading dimensions do."""
    product = 1
    for k, n in enumerate(dims):
        if product == rows:
            return k
        product *= n
    return len(dims) if product == rows else None


def reduce_space(graph: Graph, node: Node) -> RowSpace:
    dims = graph.nodes[node.operands[0]].shape.dims
    reduced = set(node.attrs.get("dimensions", ()))
    rows = math.prod(d for i, d in enumerate(dims) if i not in reduced)
    length = math.prod(d for i, d in enumerate(dims) if i in reduced)
    kept = [i for i, d in enumerate(dims) if i not in reduced and d != 1]
    moving = [i for i, d in enumerate(dims) if i in reduced and d != 1]
    contiguous = not kept or not moving or min(moving) > max(kept)
    return RowSpace(rows, length, contiguous)


def keeps_row_major_order(graph: Graph, node: Node) -> bool:
    """A broadcast whose operand's elements keep their row-major order and lead the output:
    output element i reads operand element i // (output size / operand size)."""
    operand = graph.nodes[node.operands[0]].shape.dims
    out = node.shape.dims
    mapped = [d for i, d in enumerate(node.attrs.get("dimensions", ())) if operand[i] != 1]
    if mapped != sorted(mapped):
        return False
    last = mapped[-1] if mapped else -1
    return all(d in mapped or out[d] == 1 for d in range(last + 1))


def transpose_keeps_order(graph: Graph, node: Node) -> bool:
    """A transpose that only moves size-1 dimensions: the row-major order stays."""
    operand = graph.nodes[node.operands[0]].shape.dims
    moved = [d for d in node.attrs.get("dimensions", ()) if operand[d] != 1]
    return moved == sorted(moved)


def _transpose_keeps_rows(graph: Graph, node: Node, length: int) -> bool:
    """A transpose that moves whole rows of `length` elements: the innermost dimensions that
    make up a row stay innermost, in order (size-1 dimensions ignored)."""
    operand = graph.nodes[node.operands[0]].shape.dims
    inner, elements = [], 1
    for d in reversed(range(len(operand))):
        if elements == length:
            break
        if operand[d] != 1:
            inner.insert(0, d)
            elements *= operand[d]
    if elements != length:
        return False
    moved = [d for d in node.attrs.get("dimensions", ()) if operand[d] != 1]
    return moved[len(moved) - len(inner):] == inner
