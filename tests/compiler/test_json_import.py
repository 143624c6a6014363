"""The JSON graph format: the documented examples import, every malformed input is an
InputError at file:line:col, limits and encodings are enforced, and export_json round-trips."""

import json
import os
import threading
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import compiler.limits as limits_module
from compiler.errors import InputError, LimitError, SourceLoc
from compiler.importers.json_graph import export_json, import_json, import_json_file
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import BF16, DTYPES, F32, PRED, S32
from compiler.ir.graph import Graph
from compiler.ir.shapes import ArrayShape, TupleShape, array
from compiler.limits import (
    ConfigurationError,
    Limits,
    decode_utf8,
    format_bytes,
    read_limited,
)

EXAMPLES = Path(__file__).parent.parent / "data" / "json"
CORPUS = Path(__file__).resolve().parents[1] / "data" / "xla"
# Invalid HLO that the HLO importer rejects (see test_hlo_import.py): nothing to round-trip.
REJECTED_BY_HLO_IMPORTER = {"print_indexing_test.hlo"}


def document(*nodes, parameters='{"name": "x", "dtype": "f32", "shape": [4, 16]}',
             outputs='["y"]', header='"format": "fusion-explorer-graph", "version": 1',
             more=""):
    """A JSON graph whose node i is on line 4 + i, column 3 (so tests know where errors are)."""
    return (
        "{" + header + ', "name": "g",\n'
        f' "parameters": [{parameters}],\n'
        ' "nodes": [\n'
        + ",\n".join("  " + node for node in nodes) + "\n"
        f' ],\n "outputs": {outputs}{more}\n'
        "}\n"
    )


def import_error(text, limits=None) -> InputError:
    with pytest.raises(InputError) as error:
        import_json(text, "graph.json", limits)
    return error.value


# -- the documented examples --------------------------------------------------------------------


def test_the_layer_norm_example_imports_with_inferred_shapes():
    graph = import_json_file(EXAMPLES / "layer_norm.json")
    assert graph.name == "layer_norm"
    assert graph.parameters == ["x", "gamma", "beta"]
    assert graph.root_node.shape == array(F32, [4, 8])
    assert graph.nodes["mean"].shape == array(F32, [4])
    assert graph.nodes["sum"].attrs == {"dimensions": (1,), "reducer": "add",
                                        "to_apply": "add_f32"}
    assert list(graph.computations) == ["add_f32"]


def test_the_softmax_example_sorts_its_nodes_and_keeps_the_parameter_layout():
    graph = import_json_file(EXAMPLES / "softmax.json")
    order = list(graph.nodes)
    for node in graph:
        assert all(order.index(o) < order.index(node.name) for o in node.operands)
    assert graph.nodes["logits"].shape == array(BF16, [2, 16, 128], [2, 1, 0])
    assert graph.root_node.shape == array(BF16, [2, 16, 128])
    assert graph.nodes["neg_inf"].attrs["value"] == -np.inf
    assert sorted(graph.computations) == ["add_f32", "maximum_f32"]


def test_the_named_reducer_example_uses_its_computation_and_returns_a_tuple():
    graph = import_json_file(EXAMPLES / "row_sum_of_squares.json")
    assert graph.nodes["sum_sq"].attrs["to_apply"] == "sum_f32"
    assert graph.nodes["sum_sq"].attrs["reducer"] == "add"
    assert graph.computations["sum_f32"].parameters == ["acc", "value"]
    assert graph.output_names() == ["sum_sq", "norm"]
    assert graph.root_node.shape == TupleShape((array(F32, [64]), array(F32, [64])))


def test_imported_nodes_are_located_at_their_json_objects():
    graph = import_json(document('{"name": "y", "op": "negate", "operands": ["x"]}'), "g.json")
    assert graph.nodes["y"].loc == SourceLoc("g.json", 4, 3)
    assert graph.nodes["x"].loc == SourceLoc("g.json", 2, 17)


# -- malformed documents ------------------------------------------------------------------------


def test_a_json_syntax_error_is_located_where_the_parser_stopped():
    text = '{"format": "fusion-explorer-graph",\n "version": 1,\n "nodes": [1, 2,]\n}'
    error = import_error(text)
    assert str(error) == "graph.json:3:17: invalid JSON: Expecting value"


def test_an_unknown_op_is_reported_with_its_path_and_a_suggestion():
    error = import_error(document('{"name": "y", "op": "negat", "operands": ["x"]}'))
    assert str(error) == (
        "graph.json:4:3: nodes[0] 'y': unknown opcode 'negat'; did you mean 'negate'?"
    )


def test_a_missing_operand_is_reported_at_the_node_that_uses_it():
    error = import_error(document(
        '{"name": "a", "op": "negate", "operands": ["x"]}',
        '{"name": "y", "op": "add", "operands": ["a", "z"]}',
    ))
    assert str(error) == "graph.json:5:3: nodes[1] 'y': operand 1 'z' is not defined"


def test_a_cycle_is_reported_with_its_nodes():
    error = import_error(document(
        '{"name": "y", "op": "negate", "operands": ["b"]}',
        '{"name": "b", "op": "negate", "operands": ["y"]}',
    ))
    assert str(error) == "graph.json:4:3: cycle: 'y' uses 'b', which uses 'y'"


def test_a_shape_mismatch_between_operands_is_reported_at_the_node():
    error = import_error(document(
        '{"name": "y", "op": "add", "operands": ["x", "w"]}',
        parameters='{"name": "x", "dtype": "f32", "shape": [4, 16]}, '
                   '{"name": "w", "dtype": "f32", "shape": [4, 8]}',
    ))
    assert str(error) == (
        "graph.json:4:3: nodes[0] 'y': add: operand 1 has dims [4,8] but operand 0 has [4,16]"
    )


def test_a_declared_shape_that_is_not_the_inferred_one_shows_both():
    error = import_error(document(
        '{"name": "y", "op": "add", "operands": ["x", "x"], "dtype": "f32", "shape": [4, 8]}'
    ))
    assert str(error) == (
        "graph.json:4:3: nodes[0] 'y': declared f32[4,8] but add of f32[4,16] and f32[4,16] "
        "gives f32[4,16]"
    )


def test_a_declared_dtype_alone_is_checked_too():
    error = import_error(document('{"name": "y", "op": "negate", "operands": ["x"], '
                                  '"dtype": "f16"}'))
    assert error.message == (
        "nodes[0] 'y': declared element type f16 but negate gives f32[4,16]"
    )


def test_an_unsupported_version_names_the_supported_ones():
    error = import_error(document(header='"format": "fusion-explorer-graph", "version": 2'))
    assert str(error) == (
        "graph.json:1:48: version 2 is not supported; this explorer reads version 1"
    )


def test_a_wrong_or_missing_format_key_says_what_is_expected():
    wrong = import_error(document(header='"format": "onnx", "version": 1'))
    assert wrong.where == SourceLoc("graph.json", 1, 12)
    assert wrong.message == (
        "\"format\" is 'onnx'; a Fusion Explorer graph has \"format\": \"fusion-explorer-graph\""
    )
    missing = import_error(document(header='"version": 1'))
    assert missing.message.startswith('missing "format": "fusion-explorer-graph"')
    assert "version 1" in missing.message


@pytest.mark.parametrize("dims", ["[1e15]", "[-4, 8]", "[4.0]", "[true]", '"4x8"'])
def test_dims_that_are_not_non_negative_integers_are_rejected(dims):
    error = import_error(document(
        parameters=f'{{"name": "x", "dtype": "f32", "shape": {dims}}}', outputs='["x"]'
    ))
    assert error.where == SourceLoc("graph.json", 2, 17)
    assert error.message.startswith("parameters[0] 'x': ")
    assert "dims must be non-negative integers" in error.message or "list of dims" in (
        error.message
    )


def test_absurdly_large_integer_dims_hit_the_element_limit():
    error = import_error(document(
        parameters='{"name": "x", "dtype": "f32", "shape": [1000000000000000]}', outputs='["x"]'
    ))
    assert isinstance(error, LimitError)
    assert str(error) == (
        "graph.json:2:17: parameters[0] 'x': f32[1000000000000000] has 1000000000000000 "
        "elements; the limit is 68719476736 (FUSION_EXPLORER_MAX_TENSOR_ELEMENTS)"
    )


def test_a_splat_constant_of_an_absurd_shape_is_rejected_without_allocating_it():
    error = import_error(document(
        '{"name": "y", "op": "constant", "dtype": "f32", "shape": [100000, 100000, 1000], '
        '"attrs": {"value": 1}}'
    ))
    assert isinstance(error, LimitError)


def test_a_rank_above_the_limit_is_rejected():
    error = import_error(document(
        parameters='{"name": "x", "dtype": "f32", "shape": [1, 1, 1]}', outputs='["x"]'
    ), Limits(max_rank=2))
    assert isinstance(error, LimitError)
    assert "has rank 3; the limit is 2 (FUSION_EXPLORER_MAX_RANK)" in error.message


def test_more_nodes_than_the_limit_are_rejected_before_building_any():
    nodes = [f'{{"name": "n{i}", "op": "negate", "operands": ["x"]}}' for i in range(5)]
    error = import_error(document(*nodes, outputs='["n0"]'), Limits(max_nodes=3))
    assert isinstance(error, LimitError)
    assert error.message == "the graph has 6 nodes; the limit is 3 (FUSION_EXPLORER_MAX_NODES)"


@pytest.mark.parametrize("node, message", [
    ('{"name": "y", "op": "negate", "opernds": ["x"]}',
     "nodes[0] 'y': unknown key 'opernds'; did you mean 'operands'?"),
    ('{"name": "y", "op": "convert", "operands": ["x"], "dtype": "f23"}',
     "nodes[0] 'y': unknown element type 'f23'; did you mean 'f32'?"),
    ('{"name": "y", "op": "reshape", "operands": ["x"]}',
     "nodes[0] 'y': give the result dims of reshape: its operands and attributes do not "
     "determine it"),
    ('{"name": "y", "op": "reshape", "operands": ["x"], "shape": [5, 5]}',
     "nodes[0] 'y': reshape: cannot reshape f32[4,16] (64 elements) to [5,5] (25 elements)"),
    ('{"name": "y", "op": "iota", "shape": [4], "attrs": {"iota_dimension": 0}}',
     "nodes[0] 'y': give the result element type of iota: its operands and attributes do not "
     "determine it"),
    ('{"name": "x", "op": "negate", "operands": ["x"]}',
     "nodes[0]: the name 'x' is already used by parameters[0]"),
    ('{"name": "y", "op": "parameter"}',
     "nodes[0] 'y': parameters belong in the \"parameters\" list"),
    ('{"name": "y", "op": "transpose", "operands": ["x"], "attrs": {"dimensions": "10"}}',
     "nodes[0] 'y': transpose attribute 'dimensions' must be a list of integers, got '10'"),
    ('{"name": "y", "op": "convert", "operands": ["x"], "attrs": {"dtype": "f16"}}',
     "nodes[0] 'y': give the result's dtype as the node's \"dtype\" and \"shape\", not as an "
     "attribute"),
    ('{"name": "y", "op": "reduce", "operands": ["x", "x"], "attrs": {"dimensions": [1]}}',
     "nodes[0] 'y': reduce needs \"to_apply\" (a computation name) or \"reducer\" (one of add, "
     "multiply, maximum, minimum, and, or, xor)"),
    ('{"name": "y", "op": "reduce", "operands": ["x", "x"], '
     '"attrs": {"dimensions": [1], "to_apply": "sum"}}',
     "nodes[0] 'y': to_apply names computation 'sum', which is not in \"computations\""),
    ('{"name": "y", "op": "constant", "dtype": "u8", "attrs": {"value": [1, 300]}}',
     "nodes[0] 'y': value 300 does not fit in u8"),
    ('{"name": "y", "op": "constant", "dtype": "s8", "shape": [3], "attrs": {"value": [1, 2]}}',
     "nodes[0] 'y': value has shape [2] but the declared shape is [3]"),
    ('{"name": "y", "op": "constant", "attrs": {"value": [1, 2]}}',
     "nodes[0] 'y': a constant needs \"dtype\""),
    ('{"name": "y", "op": "constant", "dtype": "s32", "attrs": {"value": [1.5]}}',
     "nodes[0] 'y': value must be a nested list of integers for s32, or one value for every "
     "element (found float64 values)"),
    ('"y"', "nodes[0] must be an object with name, op and operands"),
])
def test_each_malformed_node_is_an_error_at_the_node_with_its_path(node, message):
    error = import_error(document(node))
    assert error.where == SourceLoc("graph.json", 4, 3)
    assert error.message == message


@pytest.mark.parametrize("layout", ['["1", 0]', "[0, null]", "[[0], 1]"])
def test_a_layout_of_other_things_than_dims_is_an_error_at_the_parameter(layout):
    """Found by the fuzz suite: a layout holding a string next to an integer crashed the
    importer's check with a TypeError (it sorted the entries before looking at them)."""
    error = import_error(document(
        parameters=f'{{"name": "x", "dtype": "f32", "shape": [4, 16], "layout": {layout}}}',
        outputs='["x"]'))
    assert error.where == SourceLoc("graph.json", 2, 17)
    assert error.message.startswith(f"parameters[0] 'x': layout {json.loads(layout)!r} must "
                                    "list each of the 2 dims once")


def test_an_undefined_output_is_reported_at_the_outputs_entry():
    error = import_error(document('{"name": "y", "op": "negate", "operands": ["x"]}',
                                  outputs='["y", "nope"]'))
    assert str(error) == "graph.json:6:19: outputs[1]: 'nope' is not a defined name"


def test_an_unknown_top_level_key_is_reported_at_its_value():
    error = import_error(document(more=',\n "node": []'))
    assert str(error) == "graph.json:7:10: the top level: unknown key 'node'; did you mean 'nodes'?"


def test_an_error_inside_a_computation_names_the_computation_path():
    computation = (
        ',\n "computations": {"sum": {\n'
        '   "parameters": [{"name": "a", "dtype": "f32", "shape": []},\n'
        '                  {"name": "b", "dtype": "s32", "shape": []}],\n'
        '   "nodes": [{"name": "total", "op": "add", "operands": ["a", "b"]}],\n'
        '   "outputs": ["total"]}}'
    )
    error = import_error(document('{"name": "y", "op": "negate", "operands": ["x"]}',
                                  more=computation))
    assert str(error) == (
        "graph.json:10:14: computations.sum.nodes[0] 'total': add: operand 1 has element type "
        "s32 but operand 0 has f32"
    )


def test_computations_that_call_each_other_in_a_cycle_are_rejected():
    def body(callee):
        return ('{"parameters": [{"name": "a", "dtype": "f32", "shape": []}], '
                f'"nodes": [{{"name": "m", "op": "map", "operands": ["a"], "dtype": "f32", '
                f'"shape": [], "attrs": {{"dimensions": [], "to_apply": "{callee}"}}}}], '
                '"outputs": ["m"]}')
    more = f',\n "computations": {{\n  "f": {body("g")},\n  "g": {body("f")}}}'
    error = import_error(document('{"name": "y", "op": "negate", "operands": ["x"]}',
                                  more=more))
    assert str(error) == "graph.json:8:8: cycle: 'f' uses 'g', which uses 'f'"


def test_the_top_level_must_be_an_object():
    assert str(import_error("[1, 2]")) == (
        'graph.json:1:1: the top level must be an object with "format": "fusion-explorer-graph"'
    )


def test_absurdly_deep_nesting_is_an_input_error_not_a_crash():
    error = import_error("[" * 100_000 + "]" * 100_000)
    assert error.message.startswith("invalid JSON")


# -- bytes, encodings and limits ----------------------------------------------------------------


def test_decode_utf8_locates_the_first_invalid_byte_by_line_and_character():
    data = '{\n  "name": "café'.encode() + b"\xff" + b'"\n}'
    with pytest.raises(InputError) as error:
        decode_utf8(data, "graph.json")
    assert str(error.value) == (
        "graph.json:2:16: invalid UTF-8 (byte 0xff); save the file as UTF-8"
    )


def test_decode_utf8_drops_a_byte_order_mark():
    assert decode_utf8(b"\xef\xbb\xbf{}", "graph.json") == "{}"


def test_a_non_utf8_file_is_an_input_error_when_imported(tmp_path):
    path = tmp_path / "graph.json"
    path.write_bytes(document('{"name": "y", "op": "negate", "operands": ["x"]}').encode()
                     .replace(b'"g"', b'"\xe9"'))
    with pytest.raises(InputError) as error:
        import_json_file(path)
    assert error.value.where == SourceLoc(str(path), 1, 60)


def test_read_limited_refuses_an_oversized_file_without_reading_it(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as file:
        file.truncate(2**30)  # sparse: a gibibyte on paper, nothing on disk
    with pytest.raises(LimitError) as error:
        read_limited(path, Limits(max_input_bytes=256 * 2**20 // 2**18))
    assert str(error.value) == (
        f"{path}: file is 1.0 GiB; the limit is 1 KiB (FUSION_EXPLORER_MAX_INPUT_BYTES)"
    )


def test_read_limited_refuses_an_oversize_file_before_reading_a_byte(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 10_000)
    bytes_read = []

    class RecordingFile:
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def read(self, size=-1):
            data = self.file.read(size)
            bytes_read.append(len(data))
            return data

        def fileno(self):
            return self.file.fileno()

    monkeypatch.setattr(limits_module, "open", lambda p, mode: RecordingFile(open(p, mode)),
                        raising=False)
    with pytest.raises(LimitError, match="file is 9.8 KiB; the limit is 100 bytes"):
        read_limited(path, Limits(max_input_bytes=100))
    assert sum(bytes_read) == 0


def test_read_limited_stops_a_pipe_one_byte_past_the_limit(tmp_path):
    fifo = tmp_path / "upload.pipe"
    os.mkfifo(fifo)
    written = []

    def feed():
        try:
            with open(fifo, "wb", buffering=0) as pipe:
                for _ in range(100):
                    pipe.write(b"y" * 1000)
                    written.append(1000)
        except BrokenPipeError:
            pass  # the reader stopped: what we want

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(LimitError, match="larger than the limit of 2 KiB"):
        read_limited(fifo, Limits(max_input_bytes=2048))
    writer.join(timeout=10)
    assert sum(written) < 100_000


def test_read_limited_returns_a_file_at_the_limit(tmp_path):
    path = tmp_path / "small.json"
    path.write_bytes(b"x" * 1024)
    assert read_limited(path, Limits(max_input_bytes=1024)) == b"x" * 1024


def test_read_limited_reports_a_missing_file_as_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the file: No such file or directory"):
        read_limited(tmp_path / "missing.json")


def test_import_json_file_applies_the_configured_size_limit(tmp_path):
    path = tmp_path / "graph.json"
    path.write_text(document('{"name": "y", "op": "negate", "operands": ["x"]}'))
    with pytest.raises(LimitError, match="the limit is 100 bytes"):
        import_json_file(path, Limits(max_input_bytes=100))


def test_limits_come_from_the_environment_with_byte_suffixes():
    limits = Limits.from_env({"FUSION_EXPLORER_MAX_INPUT_BYTES": "64MiB",
                              "FUSION_EXPLORER_MAX_NODES": "5000",
                              "FUSION_EXPLORER_MAX_RANK": " 8 "})
    assert limits == Limits(max_input_bytes=64 * 2**20, max_nodes=5000, max_rank=8)
    assert Limits.from_env({}) == Limits()


@pytest.mark.parametrize("name, value, message", [
    ("FUSION_EXPLORER_MAX_NODES", "ten",
     "FUSION_EXPLORER_MAX_NODES must be a positive integer, got 'ten'"),
    ("FUSION_EXPLORER_MAX_RANK", "0",
     "FUSION_EXPLORER_MAX_RANK must be a positive integer, got '0'"),
    ("FUSION_EXPLORER_MAX_WHILE_ITERATIONS", "",
     "FUSION_EXPLORER_MAX_WHILE_ITERATIONS must be a positive integer, got ''"),
    ("FUSION_EXPLORER_MAX_INPUT_BYTES", "1.5GiB",
     "FUSION_EXPLORER_MAX_INPUT_BYTES must be a positive number of bytes such as 268435456 or "
     "256MiB, got '1.5GiB'"),
])
def test_a_bad_limit_in_the_environment_fails_loudly(name, value, message):
    with pytest.raises(ConfigurationError) as error:
        Limits.from_env({name: value})
    assert str(error.value) == message


def test_byte_counts_read_as_people_write_them():
    assert format_bytes(256 * 2**20) == "256 MiB"
    assert format_bytes(int(1.04 * 2**30)) == "1.0 GiB"
    assert format_bytes(2**30, measured=True) == "1.0 GiB"
    assert format_bytes(100) == "100 bytes"


# -- export and round trips ---------------------------------------------------------------------


def assert_same_graph(a: Graph, b: Graph, with_computations: bool = True) -> None:
    """Same nodes, ops, operands, shapes with layouts, attributes and extras, in the same order
    except that parameters come first (the format lists them apart from the other nodes)."""
    assert (a.name, a.parameters, a.root) == (b.name, b.parameters, b.root)
    assert a.nodes.keys() == b.nodes.keys()
    assert [n.name for n in a if n.op != "parameter"] == [n.name for n in b if n.op != "parameter"]
    for x in a:
        y = b.nodes[x.name]
        assert (x.name, x.op, x.operands, x.shape) == (y.name, y.op, y.operands, y.shape)
        assert (x.extra, x.fused_in) == (y.extra, y.fused_in)
        # A node without a location gets its place in the exported JSON when read back.
        assert x.loc == y.loc or y.loc is None
        assert x.attrs.keys() == y.attrs.keys()
        for key, value in x.attrs.items():
            if isinstance(value, np.ndarray):
                assert value.dtype == y.attrs[key].dtype
                assert np.array_equal(value, y.attrs[key], equal_nan=True)
            else:
                assert value == y.attrs[key]
    if with_computations:  # computations share one dict: compare it once, from the entry
        assert a.computations.keys() == b.computations.keys()
        for name in a.computations:
            assert_same_graph(a.computations[name], b.computations[name], False)


def round_trip(graph: Graph) -> Graph:
    text = json.dumps(export_json(graph), allow_nan=False)  # standard JSON, no NaN literals
    return import_json(text, "exported.json")


@pytest.mark.parametrize("example", ["layer_norm", "softmax", "row_sum_of_squares"])
def test_exporting_and_importing_an_example_gives_the_same_graph(example):
    graph = import_json_file(EXAMPLES / f"{example}.json")
    assert_same_graph(round_trip(graph), graph)


def hlo_like_graph() -> Graph:
    """A graph as the HLO importer builds them: HLO locations, metadata, fusions, layouts,
    constants of many types (elided ones too), a while loop over a tuple, a variadic reduce."""
    b = GraphBuilder("jit_step", source="step.hlo")
    loc = iter(SourceLoc("step.hlo", line, 5) for line in range(10, 100))
    x = b.parameter("Arg_0.1", array(BF16, [8, 128], [0, 1]), next(loc))
    constants = {
        "bf16": np.array([1.5, -np.inf, np.nan], dtype=ml_dtypes.bfloat16),
        "s4": np.array([[-8, 7]], dtype=ml_dtypes.int4),
        "u64": np.array([2**64 - 1], dtype=np.uint64),
        "pred": np.array([True, False]),
        "c64": np.array([1 + 2j, -3.5j], dtype=np.complex64),
        "f8": np.array([0.5, 448], dtype=ml_dtypes.float8_e4m3fn),
        "f64": np.float64(math.pi),
    }
    for name, value in constants.items():
        b.constant(value, name=f"constant.{name}", loc=next(loc))
    b.add("constant", [], {"value": None}, name="elided", shape=array(F32, [1024]), loc=next(loc))
    splat = np.broadcast_to(np.float32(0.25), (8, 128))
    quarter = b.constant(splat, name="quarter", loc=next(loc))

    wide = b.add("convert", [x], dtype=F32, loc=next(loc))
    scaled = b.add("multiply", [wide, quarter], name="multiply.3", loc=next(loc),
                   extra={"metadata": '{op_name="jit(step)/mul"}'})
    b.graph.nodes[scaled].fused_in = "fusion.1"
    iota = b.add("iota", [], {"iota_dimension": 1}, shape=array(S32, [8, 128]), loc=next(loc))

    argmax = b.computation("argmax")
    ps = [argmax.parameter(n, ArrayShape(d, ())) for n, d in
          (("a", F32), ("ai", S32), ("b", F32), ("bi", S32))]
    greater = argmax.add("compare", [ps[0], ps[2]], {"direction": "GT"})
    value = argmax.add("select", [greater, ps[0], ps[2]])
    index = argmax.add("select", [greater, ps[1], ps[3]])
    argmax.finish([value, index])
    neg_inf = b.constant(np.float32(-np.inf), name="neg_inf")
    zero = b.constant(np.int32(0), name="zero")
    reduced = b.add("reduce", [scaled, iota, neg_inf, zero],
                    {"dimensions": (1,), "to_apply": "argmax"}, loc=next(loc))

    body = b.computation("body")
    state = body.parameter("state", TupleShape((array(S32, []), array(F32, [8]))))
    counter = body.add("get-tuple-element", [state], {"index": 0})
    one = body.constant(np.int32(1))
    body.finish([body.add("tuple", [body.add("add", [counter, one]),
                                    body.add("get-tuple-element", [state], {"index": 1})])])
    condition = b.computation("condition")
    state = condition.parameter("state", TupleShape((array(S32, []), array(F32, [8]))))
    limit = condition.constant(np.int32(10))
    condition.finish([condition.add("compare", [condition.add(
        "get-tuple-element", [state], {"index": 0}), limit], {"direction": "LT"})])
    maxima = b.add("get-tuple-element", [reduced], {"index": 0})
    loop = b.add("while", [b.add("tuple", [zero, maxima])],
                 {"condition": "condition", "body": "body"}, loc=next(loc))
    custom = b.add("custom-call", [x], {"custom_call_target": "__cublas$gemm",
                                        "operand_precision": ("default", "high")},
                   shape=array(BF16, [8, 8]), loc=next(loc),
                   extra={"backend_config": '{"alpha_real":1}'})
    return b.finish([loop, custom, "elided"] + [f"constant.{n}" for n in constants])


def test_exporting_and_importing_an_hlo_like_graph_gives_the_same_graph():
    graph = hlo_like_graph()
    again = round_trip(graph)
    assert_same_graph(again, graph)
    assert again.nodes["multiply.3"].loc == SourceLoc("step.hlo", 21, 5)


@pytest.mark.parametrize(
    "path", [p for p in sorted(CORPUS.glob("*.hlo")) + sorted(CORPUS.glob("*.txt"))
             if p.name not in REJECTED_BY_HLO_IMPORTER], ids=lambda path: path.name)
def test_every_hlo_corpus_graph_round_trips_through_json(path):
    from compiler.importers import load_graphs

    for graph in load_graphs(str(path)):
        assert_same_graph(round_trip(graph), graph)


def test_export_writes_the_documented_format():
    exported = export_json(hlo_like_graph())
    assert (exported["format"], exported["version"]) == ("fusion-explorer-graph", 1)
    nodes = {node["name"]: node for node in exported["nodes"]}
    assert exported["parameters"] == [{"name": "Arg_0.1", "dtype": "bf16", "shape": [8, 128],
                                       "layout": [0, 1], "loc": "step.hlo:10:5"}]
    assert nodes["constant.bf16"]["attrs"]["value"] == [1.5, "-inf", "nan"]
    assert nodes["constant.c64"]["attrs"]["value"] == [[1.0, 2.0], [0.0, -3.5]]
    assert nodes["quarter"]["attrs"]["value"] == 0.25  # one value for every element
    assert nodes["elided"]["attrs"]["value"] is None
    assert nodes["reduce"]["shape"] == {"tuple": [{"dtype": "f32", "dims": [8]},
                                                  {"dtype": "s32", "dims": [8]}]}
    assert exported["outputs"] == ["tuple.1"]


def test_a_pred_constant_and_an_out_of_order_graph_round_trip():
    text = document(
        '{"name": "y", "op": "select", "operands": ["mask", "x", "zeros"]}',
        '{"name": "zeros", "op": "constant", "dtype": "f32", "shape": [4, 16], '
        '"attrs": {"value": 0}}',
        '{"name": "mask", "op": "constant", "dtype": "pred", "shape": [], '
        '"attrs": {"value": true}}',
    )
    graph = import_json(text, "graph.json")
    assert list(graph.nodes) == ["x", "zeros", "mask", "y"]
    assert graph.nodes["mask"].shape == array(PRED, [])
    assert_same_graph(round_trip(graph), graph)


def test_every_dtype_constant_round_trips():
    b = GraphBuilder("all_dtypes")
    names = []
    for dtype in DTYPES.values():
        if not dtype.is_array_type:
            continue
        values = np.arange(3).astype(dtype.numpy) if dtype.kind != "pred" else np.ones(3, bool)
        names.append(b.constant(values, name=dtype.name))
    graph = b.finish(names)
    assert_same_graph(round_trip(graph), graph)
