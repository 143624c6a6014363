"""The Graph IR's analyses: networkx view, users, output order, cost counts, summary."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import networkx as nx
import pytest

from compiler.importers import load_graph
from compiler.importers.hlo_text import import_hlo
from compiler.ir.ops import OPS, Category, bytes_accessed, flop_count, transcendental_count
from compiler.ir.summary import summarize

DATA = Path(__file__).parents[1] / "data" / "hlo"

GRAPH = textwrap.dedent("""
    add {
      x = f32[] parameter(0)
      y = f32[] parameter(1)
      ROOT s = f32[] add(x, y)
    }
    ENTRY e {
      a = f32[16,32] parameter(0)
      w = f32[32,8] parameter(1)
      d = f32[16,8] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
      e = f32[16,8] exponential(d)
      m = f32[16,8] multiply(e, e)
      z = f32[] constant(0)
      r = f32[16] reduce(m, z), dimensions={1}, to_apply=add
      t = f32[8,16] transpose(m), dimensions={1,0}
      inner = (f32[16], f32[8,16]) tuple(r, t)
      ROOT out = ((f32[16], f32[8,16]), f32[16,8]) tuple(inner, e)
    }
""")


@pytest.fixture
def graph():
    return import_hlo(GRAPH, "g.hlo")


def test_networkx_view_has_a_vertex_per_node_and_an_edge_per_operand_use(graph):
    g = graph.to_networkx()
    assert set(g.nodes) == set(graph.nodes)
    assert g.number_of_edges() == sum(len(n.operands) for n in graph)
    assert g.number_of_edges("e", "m") == 2  # multiply(e, e) reads e twice
    # multiply reads e as operands 0 and 1, the output tuple as operand 1
    assert sorted(i for _, _, i in g.out_edges("e", data="index")) == [0, 1, 1]
    assert g.nodes["d"]["op"] == "dot" and g.nodes["d"]["bytes"] == 16 * 8 * 4
    assert nx.is_directed_acyclic_graph(g)
    assert list(nx.topological_sort(g))[-1] == "out"


def test_users_lists_each_reader_once(graph):
    users = graph.users()
    assert users["e"] == ["m", "out"]
    assert users["m"] == ["r", "t"]
    assert users["out"] == []


def test_outputs_flatten_nested_tuples_in_order(graph):
    assert graph.output_names() == ["r", "t", "e"]


def test_cost_counts_follow_hlo_cost_analysis(graph):
    def counts(name):
        node = graph.node(name)
        shapes = [graph.node(o).shape for o in node.operands]
        return flop_count(node, shapes), transcendental_count(node), bytes_accessed(node, shapes)

    assert counts("d") == (2 * 16 * 8 * 32, 0, (16 * 32 + 32 * 8 + 16 * 8) * 4)
    assert counts("e") == (16 * 8, 16 * 8, 2 * 16 * 8 * 4)
    assert counts("m") == (16 * 8, 0, 3 * 16 * 8 * 4)
    assert counts("r") == (16 * 8 - 16, 0, (16 * 8 + 1 + 16) * 4)
    assert counts("t") == (0, 0, 2 * 16 * 8 * 4)
    assert counts("a") == (0, 0, 0)


def test_summary_adds_up_the_nodes(graph):
    summary = summarize(graph)
    assert summary["nodes"] == len(graph) == sum(summary["ops"].values())
    assert summary["flops"] == 2 * 16 * 8 * 32 + 16 * 8 + 16 * 8 + (16 * 8 - 16)
    assert summary["transcendentals"] == 16 * 8
    assert [p["shape"] for p in summary["parameters"]] == ["f32[16,32]", "f32[32,8]"]
    assert [o["name"] for o in summary["outputs"]] == ["r", "t", "e"]
    assert summary["parameter_bytes"] == (16 * 32 + 32 * 8) * 4
    assert summary["categories"]["library-call"] == 1


def test_every_op_has_a_category_and_the_elementwise_ones_say_so():
    assert all(isinstance(info.category, Category) for info in OPS.values())
    assert OPS["add"].is_elementwise and OPS["convert"].is_elementwise
    assert not OPS["reduce"].is_elementwise and not OPS["broadcast"].is_elementwise
    assert OPS["exponential"].transcendental and not OPS["add"].transcendental


def test_a_real_training_step_has_the_dots_of_its_layers():
    graph = load_graph(str(DATA / "transformer_step_bf16.hlo"))
    summary = summarize(graph)
    assert summary["ops"]["dot"] >= 2 * 6 * 3  # 2 layers x 6 matmuls x (forward + 2 grads)
    assert summary["ops"]["convert"] > 30  # the bf16 casts
    assert summary["flops"] > 0


def test_importing_the_compiler_does_not_import_networkx():
    # Only to_networkx() needs it; the web app, the workers and the CLI import the compiler at
    # start, and networkx would add 0.1-0.2 s to each. A fresh interpreter: this one has it.
    code = ("import sys, compiler.stages.pipeline, compiler.stages.measure, compiler.cli; "
            "print('networkx' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=Path(__file__).parents[2], check=True)
    assert found.stdout.strip() == "False"
