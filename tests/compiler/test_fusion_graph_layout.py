"""The fusion view's layout (compiler/stages/graph_layout.py): every node placed once per
kernel that computes it, every edge going down, no two boxes of a layer overlapping. It is
checked against the graph's own edges and the plans `explore` makes, not against the code's
intermediate steps."""
from pathlib import Path

import pytest

from compiler.fusion.explore import explore
from compiler.importers import load_graph
from compiler.stages.graph_layout import plan_layout
from compiler.stages.graph_view import fusion_graph

DATA = Path(__file__).resolve().parents[1] / "data"
# Recomputation (layer norm backward), a bf16 training step, an ONNX model.
MODULES = ["hlo/layer_norm_bwd.hlo", "hlo/transformer_step_bf16.hlo",
           "onnx/transformer_encoder.dynamo.onnx"]


@pytest.fixture(scope="module", params=MODULES)
def laid_out(request):
    graph = load_graph(DATA / request.param)
    result = []
    for name, plan in explore(graph, "h100", concurrent=False).items():
        view = fusion_graph(graph, plan.to_dict()["kernels"])
        result.append((name, view, plan_layout(view)))
    return result


def test_each_kernel_and_each_node_no_kernel_computes_is_one_plan_level_box(laid_out):
    for _, view, layout in laid_out:
        ids = [entry["id"] for entry in layout["top"]]
        alone = [n["id"] for n in view["nodes"] if n["kernel"] is None and not n["also_in"]]
        assert sorted(ids) == sorted([k["name"] for k in view["kernels"]] + alone)
        assert all(entry["kernel"] == (entry["id"] in layout["inner"])
                   for entry in layout["top"])


def test_each_kernel_places_exactly_the_ops_it_owns_and_recomputes(laid_out):
    for _, view, layout in laid_out:
        for kernel in view["kernels"]:
            computed = {n["id"] for n in view["nodes"]
                        if n["kernel"] == kernel["name"] or kernel["name"] in n["also_in"]}
            assert set(layout["inner"][kernel["name"]]["nodes"]) == computed


def test_every_edge_goes_down_at_both_levels(laid_out):
    for strategy, view, layout in laid_out:
        top = {entry["id"]: entry["layer"] for entry in layout["top"]}
        nodes = {n["id"]: n for n in view["nodes"]}
        for source, target in view["edges"]:
            node = nodes[target]
            readers = ([node["kernel"]] if node["kernel"] else []) + node["also_in"]
            for kernel in readers:
                inner = layout["inner"][kernel]["nodes"]
                if source in inner:      # on chip: down inside the kernel
                    assert inner[source][1] < inner[target][1], (strategy, source, target)
                else:                    # through memory: from the box that writes it
                    writer = nodes[source]["kernel"] or source
                    assert top[writer] < top[kernel], (strategy, source, target)
            if not readers and target in top:
                writer = nodes[source]["kernel"] or source
                assert top[writer] < top[target], (strategy, source, target)


def test_boxes_of_one_layer_are_at_least_one_unit_apart(laid_out):
    def check(placed):
        rows: dict[int, list[float]] = {}
        for x, layer in placed:
            rows.setdefault(layer, []).append(x)
        for xs in rows.values():
            xs.sort()
            assert all(b - a >= 1 - 1e-6 for a, b in zip(xs, xs[1:]))
            assert xs[0] >= 0

    for _, _, layout in laid_out:
        check([(entry["x"], entry["layer"]) for entry in layout["top"]])
        for inner in layout["inner"].values():
            check([tuple(p) for p in inner["nodes"].values()])
            assert inner["layers"] == 1 + max(p[1] for p in inner["nodes"].values())


def view_of(nodes: dict[str, list[str]], kernel_of: dict[str, str]) -> dict:
    """A fusion view by hand: node -> operands, node -> kernel."""
    kernels = sorted(set(kernel_of.values()))
    return {"nodes": [{"id": n, "kernel": kernel_of.get(n), "also_in": []} for n in nodes],
            "edges": [[o, n] for n, operands in nodes.items() for o in operands],
            "kernels": [{"name": k} for k in kernels]}


def test_crossing_edges_are_uncrossed_and_a_chain_is_drawn_straight():
    # a and b on top; c reads b and d reads a: in graph order (c, d) the two edges cross.
    view = view_of({"a": [], "b": [], "c": ["b"], "d": ["a"], "e": ["d"], "f": ["e"]},
                   {n: n.upper() for n in "abcdef"})
    top = {entry["id"]: entry for entry in plan_layout(view)["top"]}
    assert top["D"]["layer"] == top["C"]["layer"] == top["A"]["layer"] + 1
    assert (top["A"]["x"] < top["B"]["x"]) == (top["D"]["x"] < top["C"]["x"])
    assert top["D"]["x"] == top["E"]["x"] == top["F"]["x"]


def test_a_parameter_sits_just_above_its_first_reader():
    chain = {"x": [], "k1": ["x"], "k2": ["k1"], "k3": ["k2"], "w": [], "k4": ["k3", "w"]}
    view = view_of(chain, {"k1": "K1", "k2": "K2", "k3": "K3", "k4": "K4"})
    top = {entry["id"]: entry["layer"] for entry in plan_layout(view)["top"]}
    assert top["w"] == top["K4"] - 1 and top["x"] == 0


def test_kernels_that_read_each_other_are_refused():
    view = view_of({"a": [], "b": ["a"], "c": ["b"]}, {"a": "K", "b": "L", "c": "K"})
    with pytest.raises(ValueError, match="cycle"):
        plan_layout(view)
