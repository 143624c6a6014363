"""The printer is stable and its text reads back into the same graph."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from compiler.importers import load_graphs
from compiler.importers.hlo_text import import_hlo
from compiler.importers.json_graph import import_json
from compiler.ir.graph import Graph
from compiler.ir.printer import hlo_names, print_graph

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


# Names as ONNX exporters and JSON authors write them, none of which HLO can spell: a leading
# digit or '/', '::', a space, an element type's name, a keyword. "x y" and "x_y" both become
# `x_y` once spelled, so one of them takes a suffix.
AWKWARD = ["0.weight", "/layers.0/Add_output_0", "onnx::MatMul_7", "x y", "x_y", "f32", "ROOT"]


def _awkward_graph() -> Graph:
    """A JSON graph whose parameters, nodes and reducer have names HLO cannot spell."""
    chain = [{"name": AWKWARD[0], "op": "negate", "operands": ["in put"]}]
    for before, name in zip(AWKWARD, AWKWARD[1:]):
        chain.append({"name": name, "op": "add", "operands": [before, "in put"]})
    chain.append({"name": "sum", "op": "reduce", "operands": [AWKWARD[-1], "zero"],
                  "attrs": {"dimensions": [0], "to_apply": "my reducer"}})
    chain.append({"name": "zero", "op": "constant", "dtype": "f32", "attrs": {"value": 0}})
    reducer = {"parameters": [{"name": "a b", "dtype": "f32", "shape": []},
                              {"name": "pred", "dtype": "f32", "shape": []}],
               "nodes": [{"name": "a+b", "op": "add", "operands": ["a b", "pred"]}],
               "outputs": ["a+b"]}
    document = {"format": "fusion-explorer-graph", "version": 1, "name": "9 awkward names",
                "parameters": [{"name": "in put", "dtype": "f32", "shape": [4]}],
                "nodes": chain, "outputs": ["sum"],
                "computations": {"my reducer": reducer}}
    return import_json(json.dumps(document), "awkward.json")


HLO_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"   # xla/hlo/parser/hlo_lexer.cc, less its keywords


def test_names_hlo_cannot_spell_print_as_legal_names_of_their_own():
    graph = _awkward_graph()
    names = hlo_names(graph)
    printed = [names.module, *names.computations.values(),
               *(name for nodes in names.nodes.values() for name in nodes.values())]
    assert all(re.fullmatch(HLO_NAME, name) for name in printed), printed
    assert len(set(printed)) == len(printed)          # no two names became one
    for keyword in ("f32", "ROOT", "pred"):
        assert keyword not in printed
    assert names.nodes[None]["x y"] != names.nodes[None]["x_y"] == "x_y"
    assert names.nodes[None]["zero"] == "zero"         # a legal name prints as it is

    # The text reads back into the same graph, under the printed names.
    text = print_graph(graph, comments=False)
    again = import_hlo(text, "printed.hlo")
    entry = names.nodes[None]
    assert list(again.nodes) == [entry[n] for n in graph.nodes]
    for name, node in graph.nodes.items():
        other = again.nodes[entry[name]]
        assert other.operands == tuple(entry[o] for o in node.operands), name
        assert (other.op, other.shape) == (node.op, node.shape), name
    assert again.nodes["sum"].attrs["to_apply"] == names.computations["my reducer"]
    assert set(again.computations) == set(names.computations.values())


def test_name_metadata_carries_the_printed_name():
    graph = _awkward_graph()
    text = print_graph(graph, comments=False, name_metadata=True)
    for ours, printed in hlo_names(graph).nodes[None].items():
        assert f'{printed} = ' in text and f'op_name="{printed}"' in text, ours


def test_a_conditional_on_a_pred_prints_its_branches_as_true_and_false_computations():
    """XLA's parser takes `branch_computations` only for an s32 branch index."""
    text = (ROOT / "tests" / "data" / "xla" / "if_conditional.hlo").read_text()
    graph = import_hlo(text, "if_conditional.hlo")
    printed = print_graph(graph, comments=False)
    conditionals = [line for line in printed.splitlines() if " conditional(" in line]
    assert conditionals and all("true_computation=" in line and "false_computation=" in line
                                and "branch_computations" not in line
                                for line in conditionals)
    assert_same_graph(graph, import_hlo(printed, "printed.hlo"))


def test_a_computation_prints_after_the_computations_it_calls():
    """XLA's parser refuses a call to a computation it has not read yet."""
    # The StableHLO importer adds the reducer a scan's body calls after the body.
    (graph,) = load_graphs(str(ROOT / "tests" / "data" / "stablehlo"
                               / "scan_argmax_and_cond.mlir"))
    order = list(graph.computations)
    assert order.index("add_f32") > order.index("while_body")
    printed = print_graph(graph, comments=False)
    defined: set[str] = set()
    for line in printed.splitlines():
        if line.endswith("{") and not line.startswith("HloModule"):
            defined.add(line.split()[-2])
        for called in re.findall(r"(?:to_apply|body|condition|true_computation|"
                                 r"false_computation)=([\w.\-]+)", line):
            assert called in defined, line
