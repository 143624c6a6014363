"""The printer is stable and its text reads back into the same graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.importers import load_graphs
from compiler.importers.hlo_text import import_hlo
from compiler.ir.graph import Graph
from compiler.ir.printer import print_graph

ROOT = Path(__file__).parents[2]
INVALID = {"print_indexing_test.hlo"}  # rejected by the verifier (see test_hlo_import.py)
FILES = sorted((ROOT / "tests" / "data" / "hlo").glob("*.hlo")) + sorted(
    p for p in (ROOT / "tests" / "data" / "xla").glob("*")
    if p.suffix in (".hlo", ".txt") and p.name not in INVALID)


def assert_same_attrs(a: dict, b: dict, where: str) -> None:
    assert a.keys() == b.keys(), where
    for key in a:
        if isinstance(a[key], np.ndarray) or isinstance(b[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{where}: {key}")
            assert a[key].dtype == b[key].dtype, f"{where}: {key}"
        else:
            assert a[key] == b[key], f"{where}: {key}"


def assert_same_graph(a: Graph, b: Graph) -> None:
    assert list(a.nodes) == list(b.nodes)
    assert a.parameters == b.parameters and a.root == b.root
    for name, node in a.nodes.items():
        other = b.nodes[name]
        where = f"{a.name}/{name}"
        assert (node.op, node.operands) == (other.op, other.operands), where
        assert node.shape == other.shape, where
        assert_same_attrs(node.attrs, other.attrs, where)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_printed_text_reads_back_into_the_same_graph(path):
    for graph in load_graphs(str(path)):
        text = print_graph(graph, comments=False)
        again = import_hlo(text, "printed.hlo")
        assert_same_graph(graph, again)
        assert set(graph.computations) == set(again.computations)
        for name, computation in graph.computations.items():
            assert_same_graph(computation, again.computations[name])
        assert print_graph(again, comments=False) == text  # a second trip changes nothing


def test_printing_elides_large_constants_only_when_asked():
    graph = import_hlo("ENTRY e {\n  ROOT c = s32[3] constant({1, 2, 3})\n}\n")
    assert "constant({1, 2, 3})" in print_graph(graph)
    assert "constant({...})" in print_graph(graph, max_constant_elements=2)
