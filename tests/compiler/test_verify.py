"""The verifier rejects each kind of bad graph at the right node with an actionable message;
topological_order sorts stably and names cycles; GraphBuilder builds verified graphs."""

import numpy as np
import pytest

from compiler.errors import InputError, LimitError, SourceLoc
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import BF16, F32, S32
from compiler.ir.graph import Graph, Node
from compiler.ir.shapes import ArrayShape, TupleShape, array
from compiler.ir.verify import topological_order, verify
from compiler.limits import Limits

X = array(F32, [4, 16])


def f32(*dims, layout=None):
    return array(F32, dims, layout)


def at(line):
    return SourceLoc("model.hlo", line, 3)


def param(name, number, shape=X, line=None):
    return Node(name, "parameter", (), shape, {"parameter_number": number},
                at(line) if line else None)


def op(name, opcode, operands, shape=X, line=None, **attrs):
    return Node(name, opcode, tuple(operands), shape, attrs, at(line) if line else None)


def make_graph(*nodes, root=None, parameters=None, computations=None, name="main", loc=None):
    """A graph with exactly these nodes, in this order (no checks: that is verify's job)."""
    graph = Graph(name, computations={} if computations is None else computations, loc=loc)
    for node in nodes:
        graph.nodes[node.name] = node
    if parameters is None:
        parameter_nodes = [n for n in nodes if n.op == "parameter"]
        parameter_nodes.sort(key=lambda n: n.attrs["parameter_number"])
        parameters = [n.name for n in parameter_nodes]
    graph.parameters = parameters
    graph.root = root if root is not None else nodes[-1].name
    return graph


def verify_error(graph, limits=None) -> InputError:
    with pytest.raises(InputError) as error:
        verify(graph, limits)
    return error.value


def sum_computation(name="sum_f32", dtype=F32, root_op="add"):
    scalar = ArrayShape(dtype, ())
    return make_graph(
        param("a", 0, scalar), param("b", 1, scalar), op("r", root_op, ["a", "b"], scalar),
        name=name,
    )


# -- well-formed graphs -------------------------------------------------------------------------


def test_a_well_formed_graph_passes():
    graph = make_graph(param("x", 0), param("y", 1), op("z", "add", ["x", "y"]))
    verify(graph)


def test_declared_layouts_do_not_count_as_shape_differences():
    graph = make_graph(param("x", 0), op("z", "negate", ["x"], f32(4, 16, layout=[0, 1])))
    verify(graph)


def test_a_reduce_with_its_reducer_computation_passes():
    computations = {"sum_f32": sum_computation()}
    graph = make_graph(
        param("x", 0), op("zero", "constant", [], f32(), value=np.float32(0)),
        op("s", "reduce", ["x", "zero"], f32(4), dimensions=(1,), to_apply="sum_f32",
           reducer="add"),
        computations=computations,
    )
    verify(graph)


# -- each kind of bad graph ---------------------------------------------------------------------


def test_it_rejects_an_unknown_opcode_with_a_suggestion_at_the_node():
    error = verify_error(make_graph(param("x", 0), op("y", "ad", ["x", "x"], line=7)))
    assert error.where == at(7)
    assert error.message.startswith("unknown opcode 'ad'; did you mean")
    assert "'add'" in error.message


def test_it_rejects_an_operand_that_does_not_exist():
    error = verify_error(make_graph(param("x", 0), op("y", "add", ["x", "z"], line=3)))
    assert str(error) == "model.hlo:3:3: operand 1 'z' is not defined"


def test_it_rejects_the_wrong_operand_count():
    error = verify_error(make_graph(param("x", 0), op("y", "add", ["x", "x", "x"], line=4)))
    assert str(error) == "model.hlo:4:3: add takes 2 operands, got 3"


def test_it_rejects_a_reduce_with_an_odd_operand_count():
    graph = make_graph(param("x", 0), op("r", "reduce", ["x"], f32(4), line=5, dimensions=(1,)))
    assert verify_error(graph).message == (
        "reduce takes N inputs then N init values, got 1 operand"
    )


def test_it_names_the_nodes_on_a_cycle():
    graph = make_graph(
        param("x", 0),
        op("a", "add", ["x", "c"], line=2), op("b", "negate", ["a"], line=3),
        op("c", "negate", ["b"], line=4),
    )
    error = verify_error(graph)
    assert error.where == at(2)
    assert error.message == "cycle: 'a' uses 'c', which uses 'b', which uses 'a'"


def test_it_rejects_nodes_out_of_topological_order():
    graph = make_graph(param("x", 0), op("b", "negate", ["a"], line=2),
                       op("a", "negate", ["x"], line=3), root="b")
    error = verify_error(graph)
    assert error.where == at(2)
    assert "operand 'a' comes after its user 'b'" in error.message


def test_it_rejects_a_duplicated_parameter_number():
    graph = make_graph(param("x", 0), param("y", 0, line=9), op("z", "add", ["x", "y"]),
                       parameters=["x", "y"])
    assert str(verify_error(graph)) == (
        "model.hlo:9:3: parameter number 0 is used twice: by 'x' and 'y'"
    )


def test_it_rejects_parameter_numbers_with_a_gap():
    graph = make_graph(param("x", 0), param("y", 2, line=6), op("z", "add", ["x", "y"]),
                       parameters=["x", "y"])
    assert verify_error(graph).message == (
        "parameter 'y' has number 2, but the 2 parameters must be numbered 0..1"
    )


def test_it_rejects_a_parameter_list_that_disagrees_with_the_parameter_nodes():
    graph = make_graph(param("x", 0), param("y", 1), op("z", "add", ["x", "y"]),
                       parameters=["y", "x"])
    assert "lists parameters ['y', 'x'] but its parameter nodes by number are ['x', 'y']" in (
        verify_error(graph).message
    )


def test_it_shows_both_shapes_when_the_declared_shape_differs_from_the_inferred_one():
    graph = make_graph(param("x", 0), op("y", "add", ["x", "x"], f32(4, 8), line=12))
    assert str(verify_error(graph)) == (
        "model.hlo:12:3: declared f32[4,8] but add of f32[4,16] and f32[4,16] gives f32[4,16]"
    )


def test_it_reports_an_op_applied_to_operands_it_cannot_take():
    graph = make_graph(param("x", 0), param("w", 1, f32(4, 8)),
                       op("y", "add", ["x", "w"], line=2))
    assert verify_error(graph).message == (
        "add: operand 1 has dims [4,8] but operand 0 has [4,16]"
    )


def test_it_checks_a_reshape_against_its_declared_dims():
    graph = make_graph(param("x", 0), op("y", "reshape", ["x"], f32(5, 5), line=2))
    assert verify_error(graph).message == (
        "reshape: cannot reshape f32[4,16] (64 elements) to [5,5] (25 elements)"
    )


def test_it_takes_a_converts_target_type_from_the_declared_shape():
    good = make_graph(param("x", 0), op("y", "convert", ["x"], array(BF16, [4, 16])))
    verify(good)
    bad = make_graph(param("x", 0), op("y", "convert", ["x"], array(BF16, [4, 8])))
    assert verify_error(bad).message == (
        "declared bf16[4,8] but convert of f32[4,16] gives bf16[4,16]"
    )


def test_it_checks_a_constant_against_its_value():
    graph = make_graph(op("c", "constant", [], f32(3), line=1, value=np.zeros(4, np.float32)))
    assert verify_error(graph).message == "declared f32[3] but constant gives f32[4]"


def test_it_rejects_a_call_of_a_computation_that_does_not_exist():
    graph = make_graph(
        param("x", 0), op("zero", "constant", [], f32(), value=np.float32(0)),
        op("s", "reduce", ["x", "zero"], f32(4), line=8, dimensions=(1,), to_apply="sum"),
        computations={"sum_f32": sum_computation()},
    )
    assert str(verify_error(graph)) == (
        "model.hlo:8:3: to_apply names computation 'sum', which does not exist; "
        "did you mean 'sum_f32'?"
    )


def test_it_rejects_a_reducer_computation_with_the_wrong_signature():
    graph = make_graph(
        param("x", 0), op("zero", "constant", [], f32(), value=np.float32(0)),
        op("s", "reduce", ["x", "zero"], f32(4), line=8, dimensions=(1,), to_apply="sum_s32"),
        computations={"sum_s32": sum_computation("sum_s32", S32)},
    )
    assert verify_error(graph).message == (
        "reduce: to_apply 'sum_s32' has signature (s32[], s32[]) -> s32[] but reduce needs "
        "(f32[], f32[]) -> f32[]"
    )


def test_it_rejects_a_reducer_attribute_that_misnames_the_computation():
    graph = make_graph(
        param("x", 0), op("zero", "constant", [], f32(), value=np.float32(0)),
        op("s", "reduce", ["x", "zero"], f32(4), line=8, dimensions=(1,), to_apply="max_f32",
           reducer="add"),
        computations={"max_f32": sum_computation("max_f32", root_op="maximum")},
    )
    assert verify_error(graph).message == (
        "reducer 'add' does not match to_apply 'max_f32', which computes maximum"
    )


def test_it_finds_errors_inside_called_computations_and_says_which():
    broken = make_graph(
        param("a", 0, f32()), param("b", 1, f32()), op("r", "add", ["a", "b"], f32(2)),
        name="sum_f32",
    )
    graph = make_graph(
        param("x", 0), op("zero", "constant", [], f32(), value=np.float32(0)),
        op("s", "reduce", ["x", "zero"], f32(4), dimensions=(1,), to_apply="sum_f32"),
        computations={"sum_f32": broken},
    )
    error = verify_error(graph)
    assert error.where == "computation 'sum_f32', node 'r'"
    assert error.message == "declared f32[2] but add of f32[] and f32[] gives f32[]"


def test_it_ignores_computations_the_entry_does_not_reach():
    unused = make_graph(param("a", 0, f32()), op("r", "add", ["a", "a"], f32(2)), name="unused")
    verify(make_graph(param("x", 0), computations={"unused": unused}))


def test_it_rejects_a_computation_that_calls_itself():
    scalar = f32()
    loop = make_graph(
        param("a", 0, scalar), param("b", 1, scalar),
        op("r", "map", ["a", "b"], scalar, dimensions=(), to_apply="loop"),
        name="loop",
    )
    graph = make_graph(param("x", 0, scalar),
                       op("m", "map", ["x", "x"], scalar, dimensions=(), to_apply="loop"),
                       computations={"loop": loop})
    error = verify_error(graph)
    assert error.message == "to_apply 'loop' calls itself: loop -> loop"
    assert error.where == "computation 'loop', node 'r'"


def nested_maps(depth: int) -> Graph:
    """An entry whose map applies m{depth-1}, each m{i} mapping m{i-1}, m0 a negation."""
    scalar = f32()
    computations = {"m0": make_graph(param("a", 0, scalar), op("r", "negate", ["a"], scalar),
                                     name="m0")}
    for i in range(1, depth):
        computations[f"m{i}"] = make_graph(
            param("a", 0, scalar),
            op("r", "map", ["a"], scalar, dimensions=(), to_apply=f"m{i - 1}"), name=f"m{i}")
    return make_graph(param("x", 0, scalar),
                      op("m", "map", ["x"], scalar, dimensions=(), to_apply=f"m{depth - 1}"),
                      computations=computations)


def test_computations_nested_past_the_limit_are_refused_with_its_name():
    """Found by fuzzing: 250 computations nested in each other (conditionals in conditionals)
    made the interpreter hit Python's recursion limit, 1000 made this check do so after a
    minute; now refused at the limit, and checked in time linear in the depth."""
    verify(nested_maps(64))
    for depth in (65, 5000):
        error = verify_error(nested_maps(depth))
        assert isinstance(error, LimitError)
        assert error.message == ("computations nested in each other more than 64 levels deep "
                                 "(FUSION_EXPLORER_MAX_NESTING)")
        assert error.where == f"computation 'm{depth - 64}', node 'r'"


def test_it_rejects_a_graph_without_a_root():
    graph = make_graph(param("x", 0), loc=SourceLoc("model.hlo", 1, 1))
    graph.root = None
    assert str(verify_error(graph)) == "model.hlo:1:1: computation 'main' has no root"


def test_it_rejects_a_root_that_is_not_a_node():
    graph = make_graph(param("x", 0), root="y")
    error = verify_error(graph)
    assert error.where == "computation 'main'"
    assert error.message == "the root 'y' of computation 'main' is not one of its nodes"


def test_it_rejects_a_tensor_of_higher_rank_than_the_limit():
    graph = make_graph(param("x", 0, f32(1, 1, 1), line=2))
    error = verify_error(graph, Limits(max_rank=2))
    assert isinstance(error, LimitError)
    assert error.message == (
        "f32[1,1,1] has rank 3; the limit is 2 (FUSION_EXPLORER_MAX_RANK)"
    )


def test_it_rejects_a_tensor_with_more_elements_than_the_limit():
    graph = make_graph(param("x", 0, f32(10**8, 10**8), line=2))
    error = verify_error(graph)
    assert isinstance(error, LimitError)
    assert error.message == (
        "f32[100000000,100000000] has 10000000000000000 elements; the limit is 68719476736 "
        "(FUSION_EXPLORER_MAX_TENSOR_ELEMENTS)"
    )


def test_it_rejects_more_nodes_than_the_limit():
    graph = make_graph(param("x", 0), op("y", "negate", ["x"]), op("z", "negate", ["y"]))
    error = verify_error(graph, Limits(max_nodes=2))
    assert isinstance(error, LimitError)
    assert "the graph has 3 nodes; the limit is 2 (FUSION_EXPLORER_MAX_NODES)" == error.message


def test_it_rejects_negative_dims():
    graph = make_graph(param("x", 0, f32(-1, 4), line=2))
    assert str(verify_error(graph)) == "model.hlo:2:3: f32[-1,4] has a negative dimension"


def test_a_node_without_a_location_is_named_instead():
    graph = make_graph(param("x", 0), op("y", "ad", ["x", "x"]))
    assert verify_error(graph).where == "node 'y'"


# -- topological_order --------------------------------------------------------------------------


def test_topological_order_keeps_an_ordered_input_unchanged():
    nodes = {"a": [], "b": ["a"], "c": [], "d": ["b", "c"]}
    assert topological_order(nodes) == ["a", "b", "c", "d"]


def test_topological_order_moves_each_node_after_its_operands_and_otherwise_keeps_the_input_order():
    nodes = {"d": ["b", "c"], "b": ["a"], "a": [], "c": [], "e": []}
    assert topological_order(nodes) == ["a", "b", "c", "d", "e"]


def test_topological_order_ignores_operands_that_are_not_among_the_nodes():
    assert topological_order({"y": ["x", "p"], "x": ["p"]}) == ["x", "y"]


def test_topological_order_counts_a_repeated_operand_once():
    assert topological_order({"y": ["x", "x"], "x": []}) == ["x", "y"]


def test_topological_order_of_nodes_locates_a_cycle_at_its_earliest_node():
    nodes = [op("a", "negate", ["b"], line=10), op("b", "negate", ["a"], line=11)]
    with pytest.raises(InputError) as error:
        topological_order(nodes)
    assert str(error.value) == "model.hlo:10:3: cycle: 'a' uses 'b', which uses 'a'"


def test_topological_order_names_a_cycle_reached_from_outside_it():
    nodes = {"start": ["a"], "a": ["b"], "b": ["c"], "c": ["b"]}
    with pytest.raises(InputError) as error:
        topological_order(nodes, lambda name: f"line of {name}")
    assert str(error.value) == "line of b: cycle: 'b' uses 'c', which uses 'b'"


# -- GraphBuilder -------------------------------------------------------------------------------


def test_builder_numbers_parameters_in_order_and_infers_shapes():
    b = GraphBuilder("g", source="m.onnx")
    x = b.parameter("x", f32(4, 8))
    y = b.parameter("y", f32(4, 8))
    z = b.add("add", [x, y])
    graph = b.finish([z])
    assert graph.parameters == ["x", "y"]
    assert [graph.nodes[p].attrs["parameter_number"] for p in graph.parameters] == [0, 1]
    assert graph.nodes[z].shape == f32(4, 8)
    assert graph.root == z
    assert graph.source == "m.onnx"


def test_builder_keeps_a_location_given_as_text_as_a_source_loc():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4), loc="m.onnx: input 'x'", extra={"doc": "the input"})
    node = b.finish([x]).nodes[x]
    assert node.loc == SourceLoc("m.onnx: input 'x'")
    assert str(node.where()) == "m.onnx: input 'x'"
    assert node.extra == {"doc": "the input"}


def test_builder_makes_unique_names_from_the_op_or_the_given_name():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4))
    first, second = b.add("negate", [x]), b.add("negate", [x])
    named = b.add("negate", [x], name="x")
    assert (first, second, named) == ("negate", "negate.1", "x.1")


def test_builder_constant_takes_its_dtype_and_dims_from_the_array():
    b = GraphBuilder("g")
    c = b.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert b.shape_of(c) == array(S32, [2, 3])
    assert b.finish([c]).nodes[c].attrs["value"].dtype == np.int32


def test_builder_raises_the_shape_error_at_the_given_location():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4, 16))
    w = b.parameter("w", f32(4, 8))
    with pytest.raises(InputError) as error:
        b.add("add", [x, w], loc=SourceLoc("m.onnx", 0, 0))
    assert str(error.value) == "m.onnx: add: operand 1 has dims [4,8] but operand 0 has [4,16]"


def test_builder_rejects_an_unknown_op_and_an_undefined_operand():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4))
    with pytest.raises(InputError, match="unknown opcode 'negat'; did you mean 'negate'"):
        b.add("negat", [x])
    with pytest.raises(InputError, match="operand 0 'q' is not defined"):
        b.add("negate", ["q"])


def test_builder_uses_dtype_for_convert_and_new_dims_for_reshape_without_storing_them():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4, 8))
    c = b.add("convert", [x], dtype="bf16")
    r = b.add("reshape", [c], {"new_dims": (32,)})
    graph = b.finish([r])
    assert graph.nodes[c].shape == array(BF16, [4, 8])
    assert graph.nodes[r].shape == array(BF16, [32])
    assert graph.nodes[r].attrs == {}


def test_builder_checks_a_given_shape_against_the_inferred_one():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4, 8))
    with pytest.raises(InputError, match=r"declared f32\[8\] but negate of f32\[4,8\]"):
        b.add("negate", [x], shape=f32(8))
    assert b.shape_of(b.add("negate", [x], shape=f32(4, 8, layout=[0, 1]))).layout == (0, 1)


def test_builder_asks_for_what_it_cannot_infer():
    b = GraphBuilder("g")
    with pytest.raises(InputError, match="give the result dims and element type of iota"):
        b.add("iota", [], {"iota_dimension": 0})


def test_builder_makes_each_reducer_once_and_marks_reductions_with_it():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4, 8))
    zero = b.constant(np.float32(0))
    total = b.add("reduce", [x, zero], {"dimensions": (1,), "to_apply": b.reducer("add", F32)})
    assert b.reducer("add", "f32") == "add_f32"
    graph = b.finish([total])
    assert list(graph.computations) == ["add_f32"]
    assert graph.nodes[total].attrs == {"dimensions": (1,), "to_apply": "add_f32",
                                        "reducer": "add"}
    assert graph.nodes[total].shape == f32(4)


def test_builder_sub_computations_get_unique_names_and_share_the_computations():
    b = GraphBuilder("g")
    first, second = b.computation("body"), b.computation("body")
    assert (first.name, second.name) == ("body", "body.1")
    assert first.graph.computations is b.graph.computations


def test_builder_finish_makes_a_tuple_root_of_several_outputs():
    b = GraphBuilder("g")
    x = b.parameter("x", f32(4))
    y = b.add("negate", [x])
    graph = b.finish([x, y])
    assert graph.root_node.op == "tuple"
    assert graph.root_node.shape == TupleShape((f32(4), f32(4)))
    assert graph.output_names() == ["x", "negate"]


def test_builder_finish_verifies_the_graph():
    b = GraphBuilder("g")
    sub = b.computation("broken")
    sub.parameter("a", f32())
    x = b.parameter("x", f32(2))
    # A map calling a computation that was never finished (it has no root).
    m = b.add("map", [x], {"dimensions": (0,), "to_apply": "broken"}, shape=f32(2))
    with pytest.raises(InputError, match="computation 'broken' has no root"):
        b.finish([m])


def test_builder_stops_at_the_node_limit():
    b = GraphBuilder("g", limits=Limits(max_nodes=2))
    x = b.parameter("x", f32(4))
    b.add("negate", [x])
    with pytest.raises(LimitError, match="more than 2 nodes"):
        b.add("negate", [x])
