"""The fusion view's graph (compiler/fusion/graph_view.py): every node of the upload with the
kernel that computes it, the edges between them and which of them go through memory, checked
against the plans `explore` makes and the graph itself."""
from pathlib import Path

import pytest

from compiler.fusion.explore import exploration_to_dict, explore
from compiler.fusion.graph_layout import plan_layout
from compiler.fusion.graph_view import STAGE, fusion_graph, plan_views
from compiler.importers import load_graph
from compiler.ir.summary import summarize

DATA = Path(__file__).resolve().parents[1] / "data"
# A softmax, a layer norm's backward (recomputation), a bf16 training step and an ONNX model.
MODULES = ["hlo/softmax.hlo", "hlo/layer_norm_bwd.hlo", "hlo/transformer_step_bf16.hlo",
           "onnx/transformer_encoder.dynamo.onnx"]


@pytest.fixture(scope="module", params=MODULES)
def explored(request):
    graph = load_graph(DATA / request.param)
    return graph, explore(graph, "h100", concurrent=False)


def views(explored):
    graph, plans = explored
    for name, plan in plans.items():
        entries = plan.to_dict()["kernels"]
        yield name, plan, entries, fusion_graph(graph, entries)


def test_every_node_of_the_graph_is_listed_once_in_graph_order(explored):
    graph, _ = explored
    for _, _, _, view in views(explored):
        assert [node["id"] for node in view["nodes"]] == list(graph.nodes)
        for node in view["nodes"]:
            source = graph.nodes[node["id"]]
            assert node["op"] == source.op
            if source.shape.is_tuple:
                assert (node["shape"], node["dtype"]) == (None, "tuple")
            else:
                assert node["shape"] == list(source.shape.dims)
                assert node["dtype"] == source.shape.dtype.name


def test_each_node_names_the_kernel_that_owns_it_and_those_that_recompute_it(explored):
    for _, plan, _, view in views(explored):
        by_id = {node["id"]: node for node in view["nodes"]}
        for kernel in plan.kernels:
            for name in kernel.nodes:
                assert by_id[name]["kernel"] == kernel.name
            for name in kernel.recomputed:
                assert kernel.name in by_id[name]["also_in"]
        owned = {name for kernel in plan.kernels for name in kernel.nodes}
        recomputed = {name for kernel in plan.kernels for name in kernel.recomputed}
        for node in view["nodes"]:
            assert (node["kernel"] is not None) == (node["id"] in owned)
            assert bool(node["also_in"]) == (node["id"] in recomputed)
        assert [k["name"] for k in view["kernels"]] == [k.name for k in plan.kernels]


def test_edges_are_the_operands_and_memory_edges_are_written_by_their_producer(explored):
    graph, _ = explored
    expected = {(operand, node.name) for node in graph for operand in node.operands}
    for _, plan, _, view in views(explored):
        assert len(view["edges"]) == len(expected) == len(view["dram"])
        assert {tuple(edge) for edge in view["edges"]} == expected
        kernels = {kernel.name: kernel for kernel in plan.kernels}
        owner = {name: kernel for kernel in plan.kernels for name in kernel.nodes}
        for (source, target), dram in zip(view["edges"], view["dram"]):
            consumer = owner.get(target)
            if consumer is None:
                assert not dram  # nothing computes the reader: no kernel's traffic
                continue
            computed = {*consumer.nodes, *consumer.recomputed}
            assert dram == (source not in computed)
            if dram:
                # Read from memory: an input of the consumer, and written by whichever kernel
                # owns it (build_plan's outputs), or a value no kernel computes.
                assert source in kernels[consumer.name].inputs
                if source in owner:
                    assert source in owner[source].outputs


def test_kernel_entries_carry_the_plan_figures(explored):
    for _, plan, entries, view in views(explored):
        for entry, shown in zip(entries, view["kernels"]):
            assert shown["kind"] == entry["kind"]
            assert shown["nodes"] == len(entry["nodes"])
            assert shown["recomputed"] == len(entry["recomputed"])
            assert shown["proj_us"] == entry["proj_us"]
            assert shown["sol_us"] == entry["sol_us"]


def test_a_plan_of_another_graph_is_refused_by_name():
    softmax = load_graph(DATA / "hlo/softmax.hlo")
    other = load_graph(DATA / "hlo/layer_norm_fwd.hlo")
    entries = explore(other, "h100", ["unfused"], concurrent=False)["unfused"].to_dict()
    with pytest.raises(ValueError, match="not of this graph"):
        fusion_graph(softmax, entries["kernels"])


def test_the_layout_stage_lays_out_every_plan_of_an_artifact_and_says_so_plan_by_plan():
    path = DATA / "hlo/softmax.hlo"
    graph = load_graph(path)
    summary = summarize(graph)
    artifact = {"devices": {
        device: exploration_to_dict(summary, device, explore(graph, device, ["unfused", "xla"],
                                                             concurrent=False))
        for device in ("h100", "a100")}}
    said = []

    views = dict(plan_views(path.read_bytes(), path.name, artifact,
                            lambda *args: said.append(args)))

    assert sorted(views) == [(device, strategy) for device in ("a100", "h100")
                             for strategy in ("unfused", "xla")]
    for (device, strategy), view in views.items():
        kernels = artifact["devices"][device]["strategies"][strategy]["kernels"]
        expected = fusion_graph(graph, kernels)
        assert view == {**expected, "layout": plan_layout(expected)}
    assert said == [(STAGE, done, 4) for done in range(5)]
