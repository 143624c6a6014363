"""ONNX import: real torch exports compute torch's numbers, every lowering agrees with
onnxruntime (an independent implementation of ONNX), and bad input is an InputError that names
what is wrong.

The reference interpreter evaluates the imported graphs; tests that need it are skipped, with
the reason, while `compiler/ir/interpreter.py` does not exist.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import InputError, UnsupportedError
from compiler.importers.onnx import import_onnx, printable_text
from compiler.ir.verify import verify

DATA = Path(__file__).resolve().parent.parent / "data" / "onnx"
TORCH_EXPORTS = sorted(DATA.glob("*.onnx"))
TOLERANCE = 1e-4

FLOAT, BOOL, INT64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def _evaluate():
    return pytest.importorskip("compiler.ir.interpreter",
                               reason="the reference interpreter is not written yet").evaluate


def _model_name(path: Path) -> str:
    return path.name.split(".")[0]


def _npz(path: Path, prefix: str) -> list[np.ndarray]:
    with np.load(path) as archive:
        return [archive[f"{prefix}{i}"] for i in range(len(archive.files))]


def _onnxruntime(data: bytes, names: list[str], inputs: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))


# -- real models exported by torch ---------------------------------------------------------------


@pytest.mark.parametrize("path", TORCH_EXPORTS, ids=lambda p: p.stem)
def test_torch_export_imports_and_verifies(path):
    graph = import_onnx(path.read_bytes(), path.name)
    verify(graph)
    model = onnx.load_model_from_string(path.read_bytes())
    initializers = {t.name for t in model.graph.initializer}
    assert graph.parameters == [i.name for i in model.graph.input if i.name not in initializers]
    assert len(graph.output_names()) == len(model.graph.output)


@pytest.mark.parametrize("path", TORCH_EXPORTS, ids=lambda p: p.stem)
def test_torch_export_computes_torchs_outputs(path):
    evaluate = _evaluate()
    inputs = _npz(DATA / f"{_model_name(path)}.inputs.npz", "arg")
    expected = _npz(DATA / f"{_model_name(path)}.outputs.npz", "out")
    graph = import_onnx(path.read_bytes(), path.name)
    outputs = evaluate(graph, inputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("path", TORCH_EXPORTS, ids=lambda p: p.stem)
def test_torch_export_agrees_with_onnxruntime(path):
    evaluate = _evaluate()
    inputs = _npz(DATA / f"{_model_name(path)}.inputs.npz", "arg")
    graph = import_onnx(path.read_bytes(), path.name)
    reference = _onnxruntime(path.read_bytes(), graph.parameters, inputs)
    for got, want in zip(evaluate(graph, inputs), reference):
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


def test_torch_exports_are_present():
    assert {_model_name(p) for p in TORCH_EXPORTS} >= {
        "transformer_encoder", "mlp_layernorm", "conv_bn_silu"}


def test_every_imported_node_names_the_onnx_node_it_came_from():
    path = DATA / "transformer_encoder.torchscript.onnx"
    graph = import_onnx(path.read_bytes(), path.name)
    onnx_nodes = {n.name: n.op_type for n in onnx.load_model_from_string(path.read_bytes())
                  .graph.node}
    for node in graph:
        if node.op == "parameter":
            continue
        assert str(node.loc).startswith(f"{path.name}: "), node.name
        if "onnx_initializer" in node.extra:
            continue
        assert onnx_nodes[node.extra["onnx_node"]] == node.extra["onnx_op"], node.name
        assert f"'{node.extra['onnx_node']}' ({node.extra['onnx_op']})" in str(node.loc)


def test_shape_arithmetic_of_the_torchscript_export_is_folded_away():
    path = DATA / "transformer_encoder.torchscript.onnx"
    graph = import_onnx(path.read_bytes(), path.name)
    onnx_ops = {n.op_type for n in onnx.load_model_from_string(path.read_bytes()).graph.node}
    shape_arithmetic = {"Shape", "Concat", "Mod", "Cast", "Slice", "Sqrt", "Div"}
    assert shape_arithmetic <= onnx_ops
    assert not [node.name for node in graph if node.extra.get("onnx_op") in shape_arithmetic
                and node.op != "constant"]


def test_weights_shared_through_identity_stay_one_constant():
    path = DATA / "transformer_encoder.torchscript.onnx"
    graph = import_onnx(path.read_bytes(), path.name)
    assert not [node.name for node in graph if node.extra.get("onnx_op") == "Identity"]


def test_the_node_computing_an_onnx_output_is_named_after_it():
    path = DATA / "mlp_layernorm.dynamo.onnx"
    graph = import_onnx(path.read_bytes(), path.name)
    model = onnx.load_model_from_string(path.read_bytes())
    assert graph.output_names() == [o.name for o in model.graph.output]
    assert graph.nodes[graph.output_names()[0]].extra["onnx_op"] == "LayerNormalization"


# -- one small model per lowering, checked against onnxruntime -----------------------------------

_rng = np.random.default_rng(20240611)


def _randn(*dims) -> np.ndarray:
    return _rng.standard_normal(dims).astype(np.float32)


def _positive(*dims) -> np.ndarray:
    return (0.5 + _rng.random(dims)).astype(np.float32)


def _ints(low, high, *dims) -> np.ndarray:
    return _rng.integers(low, high, dims).astype(np.int64)


def _case(nodes, inputs: dict[str, np.ndarray], weights=None, outputs=("y",), opset=18):
    """(model, feeds): a model whose graph inputs are `inputs` (fed at run time) and whose
    initializers are `weights`; output types are left to shape inference."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for name, v in inputs.items()],
        [onnx.ValueInfoProto(name=name) for name in outputs],
        initializer=[numpy_helper.from_array(v, name) for name, v in (weights or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10  # what onnxruntime reads
    return model, inputs


def _node(op_type, inputs, outputs=("y",), **attrs):
    return helper.make_node(op_type, list(inputs), list(outputs), **attrs)


CASES = {
    "layer_norm_over_the_last_axis": _case(
        [_node("LayerNormalization", ["x", "scale", "bias"], epsilon=1e-5)],
        {"x": _randn(2, 5, 8)}, {"scale": _randn(8), "bias": _randn(8)}, opset=17),
    "layer_norm_over_two_axes_without_bias": _case(
        [_node("LayerNormalization", ["x", "scale"], axis=1)],
        {"x": _randn(2, 3, 4)}, {"scale": _randn(3, 4)}, opset=17),
    "softmax_on_a_middle_axis": _case(
        [_node("Softmax", ["x"], axis=1)], {"x": 4 * _randn(2, 5, 3)}, opset=13),
    "log_softmax": _case([_node("LogSoftmax", ["x"])], {"x": 4 * _randn(3, 7)}),
    "gelu_with_erf": _case([_node("Gelu", ["x"])], {"x": 3 * _randn(4, 6)}, opset=20),
    "gelu_with_tanh": _case(
        [_node("Gelu", ["x"], approximate="tanh")], {"x": 3 * _randn(4, 6)}, opset=20),
    "batch_norm_inference": _case(
        [_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], epsilon=1e-3)],
        {"x": _randn(2, 3, 4, 5)},
        {"scale": _randn(3), "bias": _randn(3), "mean": _randn(3), "var": _positive(3)}),
    "gemm_with_trans_b_alpha_beta": _case(
        [_node("Gemm", ["a", "b", "c"], transB=1, alpha=0.5, beta=2.0)],
        {"a": _randn(4, 6)}, {"b": _randn(5, 6), "c": _randn(5)}),
    "gemm_with_trans_a_and_column_bias": _case(
        [_node("Gemm", ["a", "b", "c"], transA=1)],
        {"a": _randn(6, 4), "b": _randn(6, 5)}, {"c": _randn(4, 1)}),
    "slice_with_negative_steps": _case(
        [_node("Slice", ["x", "starts", "ends", "axes", "steps"])],
        {"x": _randn(6, 7, 5)},
        {"starts": np.array([-1, 5, 1]), "ends": np.array([-100, 0, 2**63 - 1]),
         "axes": np.array([0, 1, -1]), "steps": np.array([-2, -1, 2])}),
    "slice_clamps_out_of_range_bounds": _case(
        [_node("Slice", ["x", "starts", "ends"])], {"x": _randn(4, 5)},
        {"starts": np.array([-10, 2]), "ends": np.array([10, -1])}),
    "gather_with_constant_negative_indices": _case(
        [_node("Gather", ["x", "indices"], axis=1)],
        {"x": _randn(5, 4, 3)}, {"indices": np.array([[0, -1], [2, 3]])}),
    "gather_with_indices_computed_at_run_time": _case(
        [_node("Gather", ["table", "ids"])], {"table": _randn(10, 6), "ids": _ints(-10, 10, 2, 3)}),
    "gather_elements_on_each_axis_with_negative_indices": _case(
        [_node("GatherElements", ["x", "rows"], ["along_rows"]),
         _node("GatherElements", ["x", "columns"], ["along_columns"], axis=-1)],
        {"x": _randn(4, 5), "rows": _ints(-4, 4, 2, 5), "columns": _ints(-5, 5, 4, 7)},
        outputs=("along_rows", "along_columns")),
    "expand_both_ways": _case(
        [_node("Expand", ["x", "shape"])], {"x": _randn(3, 1)}, {"shape": np.array([2, 1, 4])}),
    "unsqueeze_then_squeeze": _case(
        [_node("Unsqueeze", ["x", "axes"], ["u"]), _node("Squeeze", ["u", "first"], ["y"]),
         _node("Squeeze", ["u"], ["z"])],
        {"x": _randn(3, 4)}, {"axes": np.array([0, -1]), "first": np.array([0])},
        outputs=("y", "z")),
    "reduce_mean_without_keepdims": _case(
        [_node("ReduceMean", ["x", "axes"], keepdims=0)],
        {"x": _randn(2, 3, 4)}, {"axes": np.array([1, -1])}),
    "reduce_mean_with_axes_attribute_before_opset_18": _case(
        [_node("ReduceMean", ["x"], axes=[0])], {"x": _randn(2, 3, 4)}, opset=13),
    "reductions_keep_dims_and_reduce_all_without_axes": _case(
        [_node("ReduceSum", ["x", "axes0"], ["sum"]), _node("ReduceMax", ["x"], ["max"]),
         _node("ReduceMin", ["x", "axes2"], ["min"], keepdims=0),
         _node("ReduceProd", ["x", "axes0"], ["prod"]),
         _node("ReduceL2", ["x", "axes2"], ["l2"]),
         _node("ReduceSum", ["x", "none"], ["same"], noop_with_empty_axes=1)],
        {"x": _randn(2, 3, 4)},
        {"axes0": np.array([0]), "axes2": np.array([2]), "none": np.zeros(0, np.int64)},
        outputs=("sum", "max", "min", "prod", "l2", "same")),
    "matmul_with_broadcast_batch_dims": _case(
        [_node("MatMul", ["a", "b"])], {"a": _randn(2, 1, 3, 4), "b": _randn(5, 4, 6)}),
    "matmul_of_a_vector_and_a_batch": _case(
        [_node("MatMul", ["v", "b"], ["y"]), _node("MatMul", ["b", "w"], ["z"])],
        {"v": _randn(4), "b": _randn(2, 4, 3), "w": _randn(3)}, outputs=("y", "z")),
    "conv_grouped_strided_dilated_with_bias": _case(
        [_node("Conv", ["x", "w", "b"], group=2, strides=[2, 2], pads=[1, 0, 1, 2],
               dilations=[1, 2])],
        {"x": _randn(1, 4, 9, 9)}, {"w": _randn(6, 2, 3, 3), "b": _randn(6)}),
    "conv_1d_same_upper": _case(
        [_node("Conv", ["x", "w"], auto_pad="SAME_UPPER", strides=[2])],
        {"x": _randn(2, 3, 8)}, {"w": _randn(4, 3, 4)}),
    "conv_transpose_strided_padded_grouped_dilated": _case(
        [_node("ConvTranspose", ["x", "w", "b"], ["strided"], strides=[2, 3],
               pads=[1, 0, 0, 2], output_padding=[1, 2]),
         _node("ConvTranspose", ["x", "w2"], ["grouped"], group=2, dilations=[2, 1]),
         _node("ConvTranspose", ["x", "w"], ["same_upper"], strides=[2, 2],
               auto_pad="SAME_UPPER"),
         _node("ConvTranspose", ["x", "w"], ["output_shape"], strides=[2, 2],
               output_shape=[10, 11]),
         _node("ConvTranspose", ["x", "computed_w"], ["computed_weights"], group=2)],
        {"x": _randn(2, 4, 5, 6), "computed_w": _randn(4, 1, 3, 2)},
        {"w": _randn(4, 3, 3, 4), "b": _randn(3), "w2": _randn(4, 3, 2, 3)},
        outputs=("strided", "grouped", "same_upper", "output_shape", "computed_weights")),
    "where_over_broadcast_comparisons": _case(
        [_node("Greater", ["x", "v"], ["gt"]), _node("Equal", ["x", "x"], ["eq"]),
         _node("And", ["gt", "eq"], ["both"]), _node("Not", ["both"], ["neither"]),
         _node("Neg", ["v"], ["minus_v"]), _node("Where", ["neither", "minus_v", "x"])],
        {"x": _randn(3, 4), "v": _randn(4)}),
    "activations": _case(
        [_node("Relu", ["x"], ["relu"]), _node("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
         _node("Sigmoid", ["x"], ["sigmoid"]), _node("Tanh", ["x"], ["tanh"]),
         _node("Elu", ["x"], ["elu"]), _node("HardSigmoid", ["x"], ["hard_sigmoid"]),
         _node("HardSwish", ["x"], ["hard_swish"]), _node("Softplus", ["x"], ["softplus"]),
         _node("PRelu", ["x", "slope"], ["prelu"]), _node("Erf", ["x"], ["erf"])],
        {"x": 3 * _randn(2, 5)}, {"slope": _randn(5)},
        outputs=("relu", "leaky", "sigmoid", "tanh", "elu", "hard_sigmoid", "hard_swish",
                 "softplus", "prelu", "erf")),
    "arithmetic": _case(
        [_node("Abs", ["x"], ["abs"]), _node("Sqrt", ["abs"], ["sqrt"]),
         _node("Log", ["abs"], ["log"]), _node("Exp", ["x"], ["exp"]),
         _node("Reciprocal", ["abs"], ["reciprocal"]), _node("Pow", ["abs", "two"], ["pow"]),
         _node("Sub", ["x", "v"], ["sub"]), _node("Div", ["x", "abs"], ["div"]),
         _node("Max", ["x", "v", "sub"], ["max"]), _node("Min", ["x", "v"], ["min"]),
         _node("Clip", ["x", "low", "high"], ["clip"])],
        {"x": _randn(3, 4), "v": _randn(4)},
        {"two": np.array(2, np.int64), "low": np.array(-0.5, np.float32),
         "high": np.array(0.5, np.float32)},
        outputs=("sqrt", "log", "exp", "reciprocal", "pow", "sub", "div", "max", "min", "clip")),
    "the_remaining_elementwise_ops_and_reductions": _case(
        [_node("Selu", ["x"], ["selu"]), _node("Round", ["x"], ["round"]),
         _node("Sign", ["x"], ["sign"]), _node("Sin", ["x"], ["sin"]),
         _node("Cos", ["x"], ["cos"]), _node("Tan", ["x"], ["tan"]),
         _node("Floor", ["x"], ["floor"]), _node("Ceil", ["x"], ["ceil"]),
         _node("Mean", ["x", "v", "x"], ["mean"]), _node("Sum", ["x", "v"], ["sum"]),
         _node("Less", ["x", "v"], ["lt"]), _node("LessOrEqual", ["x", "v"], ["le"]),
         _node("GreaterOrEqual", ["x", "v"], ["ge"]), _node("Or", ["lt", "ge"], ["or"]),
         _node("Xor", ["le", "ge"], ["xor"]),
         _node("BitwiseAnd", ["i", "j"], ["bit_and"]), _node("BitwiseOr", ["i", "j"], ["bit_or"]),
         _node("BitwiseXor", ["i", "j"], ["bit_xor"]), _node("Size", ["x"], ["size"]),
         _node("GlobalMaxPool", ["image"], ["global_max"]),
         _node("ReduceL1", ["x", "last"], ["l1"]),
         _node("ReduceSumSquare", ["x", "last"], ["sum_square"], keepdims=0)],
        {"x": 3 * _randn(3, 4), "v": _randn(4), "i": _ints(0, 64, 5), "j": _ints(0, 64, 5),
         "image": _randn(2, 3, 4, 5)},
        {"last": np.array([-1])},
        outputs=("selu", "round", "sign", "sin", "cos", "tan", "floor", "ceil", "mean", "sum",
                 "or", "xor", "bit_and", "bit_or", "bit_xor", "size", "global_max", "l1",
                 "sum_square")),
    "cast_and_cast_like": _case(
        [_node("Cast", ["x"], ["i"], to=TensorProto.INT32),
         _node("CastLike", ["i", "x"], ["y"])],
        {"x": 5 * _randn(3, 4)}, outputs=("i", "y")),
    "reshape_with_copied_and_inferred_dims_flatten_transpose": _case(
        [_node("Reshape", ["x", "shape"], ["r"]), _node("Flatten", ["x"], ["f"], axis=2),
         _node("Transpose", ["x"], ["t"], perm=[2, 0, 1])],
        {"x": _randn(2, 3, 4)}, {"shape": np.array([0, -1, 2])}, outputs=("r", "f", "t")),
    "concat_split_tile": _case(
        [_node("Concat", ["x", "z"], ["c"], axis=1),
         _node("Split", ["c", "sizes"], ["s0", "s1"], axis=1),
         _node("Split", ["x"], ["h0", "h1"], axis=0, num_outputs=2),
         _node("Tile", ["x", "repeats"], ["t"])],
        {"x": _randn(2, 3), "z": _randn(2, 4)},
        {"sizes": np.array([5, 2]), "repeats": np.array([2, 3])},
        outputs=("s0", "s1", "h0", "h1", "t")),
    "pad_with_a_constant": _case(
        [_node("Pad", ["x", "pads", "value"])], {"x": _randn(2, 3)},
        {"pads": np.array([0, 2, 1, -1]), "value": np.array(1.5, np.float32)}),
    "trilu_upper_and_lower": _case(
        [_node("Trilu", ["x", "k"], ["upper"]), _node("Trilu", ["x"], ["lower"], upper=0)],
        {"x": _randn(2, 4, 5)}, {"k": np.array(1)}, outputs=("upper", "lower")),
    "pools": _case(
        [_node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1]),
         _node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 2], pads=[1, 0, 1, 1]),
         _node("AveragePool", ["x"], ["avg_pads"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
               count_include_pad=1),
         _node("GlobalAveragePool", ["x"], ["global"])],
        {"x": _randn(1, 2, 6, 5)}, outputs=("max", "avg", "avg_pads", "global")),
    # 8 wide in 3-windows by 2 is 3.5 windows: ceil_mode keeps the half. With padding 1 on
    # 7 wide a fifth window would start in the padding, so it is not kept (opset 22 says so).
    "max_pool_with_ceil_mode": _case(
        [_node("MaxPool", ["x"], ["ceil"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
         _node("MaxPool", ["x"], ["ceil_padded"], kernel_shape=[3, 2], strides=[2, 2],
               pads=[1, 1, 1, 1], ceil_mode=1),
         _node("MaxPool", ["x"], ["ceil_dilated"], kernel_shape=[2, 2], strides=[3, 2],
               dilations=[2, 1], ceil_mode=1)],
        {"x": _randn(1, 2, 8, 7)}, outputs=("ceil", "ceil_padded", "ceil_dilated"), opset=22),
    "shape_arithmetic_is_folded": _case(
        [_node("Shape", ["x"], ["shape"]), _node("ConstantOfShape", ["shape"], ["ones"],
                                                  value=numpy_helper.from_array(
                                                      np.array([1.0], np.float32))),
         _node("Range", ["zero", "four", "one"], ["positions"]),
         _node("Gather", ["table", "positions"], ["rows"]),
         _node("Add", ["x", "ones"], ["shifted"]), _node("Add", ["shifted", "rows"], ["y"])],
        {"x": _randn(4, 3)},
        {"table": _randn(6, 3), "zero": np.array(0), "four": np.array(4), "one": np.array(1)}),
    "instance_norm": _case(
        [_node("InstanceNormalization", ["x", "scale", "bias"], epsilon=1e-3)],
        {"x": _randn(2, 3, 4, 5)}, {"scale": _randn(3), "bias": _randn(3)}),
    "depth_to_space_in_both_modes_and_space_to_depth": _case(
        [_node("DepthToSpace", ["x"], ["dcr"], blocksize=2),
         _node("DepthToSpace", ["x"], ["crd"], blocksize=2, mode="CRD"),
         _node("SpaceToDepth", ["x"], ["s2d"], blocksize=3)],
        {"x": _randn(2, 8, 3, 6)}, outputs=("dcr", "crd", "s2d")),
    # Whole-number up- and downsampling (a broadcast, a strided slice) and uneven ratios (a
    # gather), under each coordinate transformation and rounding rule.
    "resize_nearest": _case(
        [_node("Resize", ["x", "", "up"], ["up_floor"], coordinate_transformation_mode=
               "asymmetric", nearest_mode="floor"),
         _node("Resize", ["x", "", "up3"], ["up_half_pixel"]),
         _node("Resize", ["x", "", "down"], ["down_asymmetric"],
               coordinate_transformation_mode="asymmetric"),
         _node("Resize", ["x", "", "", "sizes"], ["uneven_align_corners"],
               coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
         _node("Resize", ["x", "", "", "last_two"], ["axes_pytorch_half_pixel"], axes=[2, 3],
               coordinate_transformation_mode="pytorch_half_pixel", nearest_mode="ceil"),
         _node("Resize", ["x", "", "up3"], ["half_pixel_symmetric"],
               coordinate_transformation_mode="half_pixel_symmetric")],
        {"x": _randn(1, 2, 4, 6)},
        {"up": np.array([1, 1, 2, 2], np.float32), "up3": np.array([1, 1, 3, 1.5], np.float32),
         "down": np.array([1, 1, 0.5, 0.5], np.float32), "sizes": np.array([1, 2, 7, 5]),
         "last_two": np.array([3, 9])},
        outputs=("up_floor", "up_half_pixel", "down_asymmetric", "uneven_align_corners",
                 "axes_pytorch_half_pixel", "half_pixel_symmetric"), opset=19),
    "resize_linear": _case(
        [_node("Resize", ["x", "", "up"], ["bilinear_half_pixel"], mode="linear"),
         _node("Resize", ["x", "", "", "sizes"], ["align_corners"], mode="linear",
               coordinate_transformation_mode="align_corners"),
         _node("Resize", ["x", "", "down"], ["down_pytorch_half_pixel"], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel"),
         _node("Resize", ["x", "", "", "last"], ["one_wide_asymmetric"], mode="linear",
               axes=[3], coordinate_transformation_mode="asymmetric")],
        {"x": _randn(1, 2, 4, 6)},
        {"up": np.array([1, 1, 2, 1.5], np.float32), "sizes": np.array([1, 2, 7, 5]),
         "down": np.array([1, 1, 0.5, 0.34], np.float32), "last": np.array([1])},
        outputs=("bilinear_half_pixel", "align_corners", "down_pytorch_half_pixel",
                 "one_wide_asymmetric"), opset=19),
    "einsum": _case(
        [_node("Einsum", ["q", "k"], ["scores"], equation="bhqd,bhkd->bhqk"),
         _node("Einsum", ["t", "experts"], ["per_expert"], equation="td,edf->tef"),
         _node("Einsum", ["gate", "per_expert"], ["mixed"], equation="te, tef -> tf"),
         _node("Einsum", ["q"], ["summed"], equation="bhqd->hd"),
         _node("Einsum", ["t", "w"], ["implicit"], equation="ij,jk"),
         _node("Einsum", ["q", "w"], ["ellipsis"], equation="...d,dk->...k"),
         _node("Einsum", ["t", "w"], ["one_side_summed"], equation="td,dk->k"),
         _node("Einsum", ["gate", "t"], ["outer"], equation="te,sd->tesd"),
         _node("Einsum", ["q", "w"], ["upper_case_labels"], equation="...Z,ZY->...Y")],
        {"q": _randn(2, 3, 4, 5), "k": _randn(2, 3, 6, 5), "t": _randn(4, 5),
         "experts": _randn(3, 5, 2), "gate": _randn(4, 3), "w": _randn(5, 2)},
        outputs=("scores", "per_expert", "mixed", "summed", "implicit", "ellipsis",
                 "one_side_summed", "outer", "upper_case_labels")),
    "top_k_largest_and_smallest_along_any_axis": _case(
        [_node("TopK", ["x", "two"], ["top", "top_at"]),
         _node("TopK", ["x", "three"], ["bottom", "bottom_at"], axis=1, largest=0)],
        # Whole numbers make ties; adding 0 turns -0.0 into 0.0, which HLO's total order
        # would rank apart.
        {"x": np.round(2 * _randn(3, 5, 4)) + np.float32(0)},
        {"two": np.array([2]), "three": np.array([3])},
        outputs=("top", "top_at", "bottom", "bottom_at")),
    "arg_max_and_arg_min_first_and_last": _case(
        [_node("ArgMax", ["x"], ["max_first"], axis=-1),
         _node("ArgMax", ["x"], ["max_last"], axis=1, keepdims=0, select_last_index=1),
         _node("ArgMin", ["x"], ["min_first"], keepdims=0),
         _node("ArgMin", ["x"], ["min_last"], axis=2, select_last_index=1)],
        {"x": np.round(2 * _randn(3, 5, 4)) + np.float32(0)},
        outputs=("max_first", "max_last", "min_first", "min_last")),
    "cumsum_forward_reverse_and_exclusive": _case(
        [_node("CumSum", ["x", "last"], ["forward"]),
         _node("CumSum", ["x", "first"], ["reverse"], reverse=1),
         _node("CumSum", ["x", "last"], ["exclusive"], exclusive=1),
         _node("CumSum", ["mask", "last"], ["both"], exclusive=1, reverse=1)],
        {"x": _randn(3, 5), "mask": _ints(0, 2, 2, 6)}, {"last": np.array([-1]),
                                                          "first": np.array(0)},
        outputs=("forward", "reverse", "exclusive", "both")),
    "softplus_and_mish_past_where_exp_overflows": _case(
        [_node("Softplus", ["x"], ["softplus"]), _node("Mish", ["x"], ["mish"])],
        {"x": np.array([-200, -90, -3, -0.5, 0, 0.5, 3, 90, 200], np.float32)},
        outputs=("softplus", "mish")),
    "mod_with_the_divisors_sign_and_the_dividends": _case(
        [_node("Mod", ["i", "j"], ["python"]), _node("Mod", ["i", "j"], ["c"], fmod=1),
         _node("Mod", ["x", "y"], ["float"], fmod=1)],
        {"i": _ints(-20, 20, 3, 4), "j": np.array([3, -3, 7, -5]),
         "x": 5 * _randn(3, 4), "y": _positive(4) * np.array([1, -1, 1, -1], np.float32)},
        outputs=("python", "c", "float")),
    "one_hot_on_any_axis_with_negative_and_out_of_range_indices": _case(
        [_node("OneHot", ["i", "depth", "values"], ["last"]),
         _node("OneHot", ["i", "depth", "values"], ["first"], axis=0),
         _node("OneHot", ["i", "depth", "integers"], ["as_torch_exports_it"], axis=1)],
        {"i": np.array([[0, 3, -1], [-5, 5, 2]])},
        {"depth": np.array(5), "values": np.array([-1.5, 2.0], np.float32),
         "integers": np.array([0, 1])},
        outputs=("last", "first", "as_torch_exports_it")),
    "dropout_is_the_identity_at_inference": _case(
        [_node("Dropout", ["x", "ratio"])], {"x": _randn(3, 3)},
        {"ratio": np.array(0.5, np.float32)}),
}


@pytest.mark.parametrize("name", CASES)
def test_small_model_imports_and_verifies(name):
    model, feeds = CASES[name]
    graph = import_onnx(model.SerializeToString(), f"{name}.onnx")
    verify(graph)
    assert graph.parameters == list(feeds)
    assert len(graph.output_names()) == len(model.graph.output)


@pytest.mark.parametrize("name", CASES)
def test_lowering_agrees_with_onnxruntime(name):
    evaluate = _evaluate()
    model, feeds = CASES[name]
    data = model.SerializeToString()
    graph = import_onnx(data, f"{name}.onnx")
    inputs = list(feeds.values())
    expected = _onnxruntime(data, graph.parameters, inputs)
    outputs = evaluate(graph, inputs)
    assert len(outputs) == len(expected)
    for output, got, want in zip(graph.output_names(), outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape, output
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=output)


def test_composite_ops_become_primitive_nodes():
    model, _ = CASES["layer_norm_over_the_last_axis"]
    graph = import_onnx(model.SerializeToString(), "layer_norm.onnx")
    ops = {node.op for node in graph}
    assert ops <= {"parameter", "constant", "reduce", "broadcast", "reshape", "add", "subtract",
                   "multiply", "divide", "rsqrt"}
    reduces = [node for node in graph if node.op == "reduce"]
    assert [node.attrs["reducer"] for node in reduces] == ["add", "add"]
    assert all(graph.computations[node.attrs["to_apply"]] for node in reduces)


def test_elementwise_operands_are_broadcast_explicitly():
    model, _ = CASES["where_over_broadcast_comparisons"]
    graph = import_onnx(model.SerializeToString(), "where.onnx")
    for node in graph:
        if node.op in ("compare", "select", "and", "not", "negate"):
            assert {graph.nodes[o].shape.dims for o in node.operands} == {node.shape.dims}


def test_matmul_gemm_and_conv_become_library_calls_in_the_same_graph():
    for name, op in [("matmul_with_broadcast_batch_dims", "dot"),
                     ("gemm_with_trans_b_alpha_beta", "dot"),
                     ("conv_grouped_strided_dilated_with_bias", "convolution")]:
        graph = import_onnx(CASES[name][0].SerializeToString(), f"{name}.onnx")
        assert [node.op for node in graph].count(op) == 1, name
    graph = import_onnx(CASES["conv_grouped_strided_dilated_with_bias"][0].SerializeToString(),
                        "conv.onnx")
    conv = next(node for node in graph if node.op == "convolution")
    assert conv.attrs["dim_labels"] == "bf01_oi01->bf01"
    assert conv.attrs["feature_group_count"] == 2
    assert conv.attrs["window"]["pad"] == ((1, 1), (0, 2))
    assert conv.attrs["window"]["rhs_dilate"] == (1, 2)


_bounds = st.integers(-12, 12) | st.sampled_from([2**63 - 1, -(2**63)])


@settings(max_examples=80, deadline=None)
@given(size=st.integers(0, 9), start=_bounds, end=_bounds,
       step=st.integers(-4, 4).filter(lambda step: step != 0))
def test_slice_selects_what_onnxruntime_selects(size, start, end, step):
    # onnxruntime, not NumPy: for a start before the beginning with a negative step the ONNX
    # spec clamps the start to 0 (one element) where Python's slicing selects nothing.
    # onnxruntime's one extension of the spec is left out: it reads end = INT64_MAX as "to the
    # end" even when stepping backwards, where the spec (and ONNX shape inference) clamp it.
    assume(not (end == 2**63 - 1 and step < 0))
    evaluate = _evaluate()
    x = np.arange(2 * size, dtype=np.float32).reshape(2, size)
    model, _ = _case([_node("Slice", ["x", "starts", "ends", "axes", "steps"])], {"x": x},
                     {"starts": np.array([start]), "ends": np.array([end]),
                      "axes": np.array([1]), "steps": np.array([step])})
    data = model.SerializeToString()
    [got] = evaluate(import_onnx(data, "slice.onnx"), [x])
    np.testing.assert_array_equal(got, _onnxruntime(data, ["x"], [x])[0])


_dims = st.lists(st.integers(1, 4), min_size=0, max_size=4)


@settings(max_examples=60, deadline=None)
@given(dims=_dims, data=st.data())
def test_elementwise_broadcasting_matches_numpy(dims, data):
    evaluate = _evaluate()
    # The second operand drops leading dims and turns some into 1: NumPy-compatible.
    tail = dims[data.draw(st.integers(0, len(dims)), label="dropped"):]
    other = [1 if data.draw(st.booleans(), label=f"one{i}") else d for i, d in enumerate(tail)]
    a, b = _randn(*dims), _randn(*other)
    if data.draw(st.booleans(), label="swap"):
        a, b = b, a
    model, _ = _case([_node("Sub", ["a", "b"])], {"a": a, "b": b})
    graph = import_onnx(model.SerializeToString(), "sub.onnx")
    [got] = evaluate(graph, [a, b])
    np.testing.assert_array_equal(got, a - b)


# -- weights -----------------------------------------------------------------------------------


def _external_weight_model() -> bytes:
    """Linear layer whose weight lives in an external file the upload does not include."""
    weight = numpy_helper.from_array(_randn(4, 3), "weight")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in [("location", "weights.bin"), ("offset", "0"), ("length", "48")]:
        weight.external_data.add(key=key, value=value)
    model, _ = _case([_node("MatMul", ["x", "weight"], ["h"]), _node("Add", ["h", "bias"])],
                     {"x": _randn(2, 4)}, {"bias": _randn(3)})
    model.graph.initializer.append(weight)
    return model.SerializeToString()


def test_an_initializer_with_absent_external_data_becomes_a_parameter():
    graph = import_onnx(_external_weight_model(), "linear.onnx")
    assert graph.parameters == ["x", "weight"]
    assert str(graph.nodes["weight"].shape) == "f32[4,3]"
    assert graph.nodes["bias"].op == "constant"
    assert any("'weight'" in note for note in graph.notes)


@pytest.mark.parametrize("location", ["../../etc/passwd", "/etc/passwd", "weights/../../up",
                                      "..\\..\\windows\\win.ini", "C:\\weights.bin"])
def test_external_data_said_to_lie_outside_the_models_folder_is_refused(location):
    """Nothing is ever read from an external-data path, but one that leaves the model's folder
    is what a hostile file names: refused, naming the initializer."""
    model = onnx.load_model_from_string(_external_weight_model())
    model.graph.initializer[-1].external_data[0].value = location
    message = _raises(InputError, model.SerializeToString())
    assert message.startswith(f"model.onnx: initializer 'weight': external data location "
                              f"{location!r} is outside the model's folder")


def _doubling_functions(depth: int) -> bytes:
    """A model whose one node calls local function f{depth-1}, each f{i} calling f{i-1}
    twice, f0 one Neg: 2^(depth-1) nodes once inlined, from a file of a few kilobytes."""
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]
    functions = [helper.make_function("local", "f0", ["x"], ["y"],
                                      [_node("Neg", ["x"])], opsets)]
    for i in range(1, depth):
        calls = [helper.make_node(f"f{i - 1}", ["x"], ["t"], domain="local"),
                 helper.make_node(f"f{i - 1}", ["t"], ["y"], domain="local")]
        functions.append(helper.make_function("local", f"f{i}", ["x"], ["y"], calls, opsets))
    graph = helper.make_graph([helper.make_node(f"f{depth - 1}", ["x"], ["y"], domain="local")],
                              "g", [helper.make_tensor_value_info("x", FLOAT, [4])],
                              [helper.make_tensor_value_info("y", FLOAT, [4])])
    return helper.make_model(graph, opset_imports=opsets, functions=functions).SerializeToString()


def test_local_functions_that_inline_to_more_nodes_than_the_limit_are_refused_first():
    """A function bomb: 2^29 nodes once inlined, refused before inlining (which never ended)."""
    data = _doubling_functions(30)
    assert len(data) < 4096
    assert _raises(InputError, data) == (
        "model.onnx: the model has 536870913 nodes and inputs with its local functions "
        "inlined; the limit is 1000000 (FUSION_EXPLORER_MAX_NODES)")
    graph = import_onnx(_doubling_functions(6), "model.onnx")   # 32 negations inlined
    assert sum(node.op == "negate" for node in graph) == 32


def test_local_functions_that_call_each_other_in_a_cycle_are_refused():
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]
    ping = helper.make_function("local", "ping", ["x"], ["y"],
                                [helper.make_node("pong", ["x"], ["y"], domain="local")], opsets)
    pong = helper.make_function("local", "pong", ["x"], ["y"],
                                [helper.make_node("ping", ["x"], ["y"], domain="local")], opsets)
    graph = helper.make_graph([helper.make_node("ping", ["x"], ["y"], domain="local")], "g",
                              [helper.make_tensor_value_info("x", FLOAT, [4])],
                              [helper.make_tensor_value_info("y", FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=opsets, functions=[ping, pong])
    message = _raises(InputError, model.SerializeToString())
    assert "which calls it back: model-local functions must not be recursive" in message


def test_graph_inputs_that_are_initializers_are_constants():
    model, _ = _case([_node("Add", ["x", "b"])], {"x": _randn(2)}, {"b": _randn(2)})
    model.graph.input.append(helper.make_tensor_value_info("b", FLOAT, [2]))
    graph = import_onnx(model.SerializeToString(), "old.onnx")
    assert graph.parameters == ["x"]
    assert graph.nodes["b"].op == "constant"


def test_unused_weights_and_dead_nodes_are_not_imported():
    model, _ = _case([_node("Relu", ["x"], ["dead"]), _node("Neg", ["x"])],
                     {"x": _randn(2)}, {"unused": _randn(5)})
    graph = import_onnx(model.SerializeToString(), "dead.onnx")
    assert sorted(node.op for node in graph) == ["negate", "parameter"]


# -- bad input -----------------------------------------------------------------------------------


def _raises(error_type, data, filename="model.onnx") -> str:
    with pytest.raises(error_type) as caught:
        import_onnx(data, filename)
    return str(caught.value)


def test_it_rejects_garbage_bytes():
    message = _raises(InputError, b"\x00\xffthis is not a protobuf\x17\x42" * 8)
    assert message.startswith("model.onnx: not a valid ONNX model")


def test_it_rejects_empty_input():
    assert _raises(InputError, b"") == "model.onnx: not a valid ONNX model: it has no graph"


def test_it_rejects_a_truncated_file():
    data = (DATA / "mlp_layernorm.torchscript.onnx").read_bytes()
    assert "not a valid ONNX model" in _raises(InputError, data[: len(data) // 2])


def test_a_file_cut_anywhere_gives_an_input_error_never_a_traceback():
    data = (DATA / "conv_bn_silu_unfolded.torchscript.onnx").read_bytes()
    for cut in range(1, len(data), 7):
        try:
            import_onnx(data[:cut], "cut.onnx")
        except InputError:
            pass


def test_it_names_the_node_and_op_type_of_an_unknown_op():
    model, _ = _case([_node("Relu", ["x"], ["r"]), helper.make_node(
        "FancyOp", ["r"], ["y"], name="my_fancy_node")], {"x": _randn(2)})
    message = _raises(UnsupportedError, model.SerializeToString())
    assert message == ("model.onnx: node 'my_fancy_node' (FancyOp): unsupported ONNX operator "
                       "'FancyOp'")


def test_folding_log_of_zero_prints_no_numpy_warning():
    # T5's relative-position bucketing takes the log of a zero distance, then casts -inf.
    model, _ = _case([_node("Log", ["zero"], ["minus_inf"]),
                      _node("Cast", ["minus_inf"], ["as_int"], to=TensorProto.INT64),
                      _node("Cast", ["as_int"], ["back"], to=TensorProto.FLOAT),
                      _node("Add", ["x", "back"])],
                     {"x": _randn(2)}, {"zero": np.zeros(2, np.float32)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_onnx(model.SerializeToString(), "t5_buckets.onnx")
    assert [str(w.message) for w in caught] == []


def test_it_names_the_node_of_a_resize_mode_it_does_not_lower():
    model, _ = _case([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="upsample",
                                       mode="cubic")],
                     {"x": _randn(1, 1, 2, 2)}, {"scales": np.array([1, 1, 2, 2], np.float32)})
    message = _raises(UnsupportedError, model.SerializeToString())
    assert message == ("model.onnx: node 'upsample' (Resize): Resize mode 'cubic' is not "
                       "supported (only 'nearest' and 'linear' are)")


def test_a_ceil_mode_window_older_shape_inference_counts_is_refused_by_name():
    model, _ = _case([helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2],
                                       strides=[2], pads=[1, 1], ceil_mode=1)],
                     {"x": _randn(1, 1, 7)}, opset=17)
    message = _raises(UnsupportedError, model.SerializeToString())
    assert message.startswith("model.onnx: node 'pool' (MaxPool): ceil_mode gives [4] windows "
                              "here, as torch and onnxruntime count them, but ONNX shape "
                              "inference counts [5]"), message


def test_it_names_a_non_default_domain():
    model, _ = _case([helper.make_node("FusedMatMul", ["x", "x"], ["y"], name="fused",
                                       domain="com.microsoft")], {"x": _randn(2, 2)})
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    message = _raises(UnsupportedError, model.SerializeToString())
    assert message.startswith("model.onnx: node 'fused' (FusedMatMul): operator domain "
                              "'com.microsoft' is not supported")


def test_it_rejects_opset_9_naming_the_opset():
    model, _ = _case([_node("Relu", ["x"])], {"x": _randn(2)}, opset=9)
    message = _raises(UnsupportedError, model.SerializeToString())
    assert "ONNX opset 9 is not supported" in message and "opset_version=13" in message


def _symbolic_batch_model() -> bytes:
    model, _ = _case([_node("Relu", ["x"])], {"x": _randn(2, 3)})
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    return model.SerializeToString()


def test_it_names_the_input_and_dimension_of_a_symbolic_batch():
    assert _raises(UnsupportedError, _symbolic_batch_model()) == (
        "model.onnx: input 'x' has symbolic dimension 'batch'; export with static shapes")


def test_a_symbolic_dimension_can_be_fixed_by_name():
    graph = import_onnx(_symbolic_batch_model(), "model.onnx", dim_values={"batch": 8})
    assert str(graph.nodes["x"].shape) == "f32[8,3]"
    assert str(graph.nodes["y"].shape) == "f32[8,3]"


def test_it_names_the_node_whose_static_input_is_computed_at_run_time():
    model, _ = _case([_node("Reshape", ["x", "shape"], name="reshape_it")],
                     {"x": _randn(2, 3), "shape": np.array([3, 2])})
    message = _raises(UnsupportedError, model.SerializeToString())
    assert message == ("model.onnx: node 'reshape_it' (Reshape): the shape of Reshape must be a "
                       "constant; 'shape' is computed at run time")


def test_it_names_the_node_whose_shapes_do_not_broadcast():
    model, _ = _case([_node("Add", ["x", "v"], name="bad_add")],
                     {"x": _randn(2, 3), "v": _randn(2)})
    message = _raises(InputError, model.SerializeToString())
    assert message.startswith("model.onnx: node 'bad_add' (Add): ")
    assert "[2, 3], [2]" in message


def test_an_unsupported_output_is_an_error_only_when_something_reads_it():
    model, _ = _case([_node("MaxPool", ["x"], ["y", "indices"], kernel_shape=[2])],
                     {"x": _randn(1, 1, 4)}, outputs=("y",))
    import_onnx(model.SerializeToString(), "model.onnx")
    model.graph.output.append(onnx.ValueInfoProto(name="indices"))
    message = _raises(UnsupportedError, model.SerializeToString())
    assert "Indices output is not supported" in message


def test_training_mode_dropout_is_rejected():
    model, _ = _case([_node("Dropout", ["x", "ratio", "training"], name="drop")],
                     {"x": _randn(3)},
                     {"ratio": np.array(0.5, np.float32), "training": np.array(True)})
    assert "Dropout in training mode" in _raises(UnsupportedError, model.SerializeToString())


def test_a_constant_whose_attribute_claims_to_be_text_is_an_error_at_the_node():
    """Found by the fuzz suite: a Constant whose `value` attribute is typed STRING (one flipped
    enum) evaluates to text, which the importer then failed to convert with a ValueError."""
    constant = _node("Constant", [], ["c"], name="weights",
                     value=numpy_helper.from_array(_randn(3), "c"))
    constant.attribute[0].type = onnx.AttributeProto.STRING
    model, _ = _case([constant, _node("Add", ["x", "c"])], {"x": _randn(3)})
    message = _raises(InputError, model.SerializeToString())
    assert message.startswith("model.onnx: node 'weights' (Constant): output 'c' is ")
    assert "which ONNX infers to be f32" in message


def test_a_range_over_run_time_values_names_the_value():
    model, _ = _case([_node("Range", ["zero", "n", "one"], name="positions")],
                     {"n": np.array(4)}, {"zero": np.array(0), "one": np.array(1)})
    assert _raises(UnsupportedError, model.SerializeToString()) == (
        "model.onnx: node 'positions' (Range): Range needs constant inputs; 'n' is computed "
        "at run time")


@pytest.mark.parametrize("path", TORCH_EXPORTS, ids=lambda p: p.name)
def test_printable_text_names_each_node_line_with_the_graph_nodes_it_became(path):
    """The source page's text of an ONNX model: ONNX's own printer's lines, and on each line
    that prints a node, the outputs it computes, which are nodes of the imported graph."""
    import onnx.inliner
    import onnx.parser

    data = path.read_bytes()
    text, outputs = printable_text(data, path.name)
    lines = text.splitlines()
    model = onnx.inliner.inline_local_functions(onnx.load_model_from_string(data))
    assert len(outputs) == len(model.graph.node)
    for node in model.graph.node:
        (line,) = [number for number, names in outputs.items() if names == list(node.output)]
        assert lines[line - 1].strip() == onnx.printer.to_text(node).strip()
    # What the model returns is computed by graph nodes of those names (values the importer
    # folds from constants, shape arithmetic, have no node and their lines no kernel).
    graph = import_onnx(data, path.name)
    named = {name for names in outputs.values() for name in names}
    for output in model.graph.output:
        assert output.name in named and output.name in graph.nodes
    # Still ONNX's text format: its own parser reads the graph back, node for node.
    parsed = onnx.parser.parse_model(text)
    assert [n.op_type for n in parsed.graph.node] == [n.op_type for n in model.graph.node]
