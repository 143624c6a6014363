"""Arguments for a graph when the user gave none: what `codegen --emulate` and tests run on.

Values are small and seeded, so integer indices often stay in range, exp() does not overflow,
and two runs see the same numbers.
"""

from __future__ import annotations

import numpy as np

from compiler.ir.graph import Graph


def random_inputs(graph: Graph, seed: int = 0) -> list:
    """One array per parameter of `graph` (None for token and tuple parameters)."""
    rng = np.random.default_rng(seed)
    values = []
    for node in graph.parameter_nodes():
        shape = node.shape
        if shape.is_tuple or not shape.dtype.is_array_type:
            values.append(None)
            continue
        dtype = shape.dtype
        if dtype.kind == "pred":
            array = rng.random(shape.dims) < 0.5
        elif dtype.is_integer:
            array = rng.integers(0, 4, size=shape.dims)
        elif dtype.kind == "complex":
            array = rng.standard_normal(shape.dims) + 1j * rng.standard_normal(shape.dims)
        else:
            array = rng.standard_normal(shape.dims)
        values.append(np.asarray(array).astype(dtype.numpy))
    return values
