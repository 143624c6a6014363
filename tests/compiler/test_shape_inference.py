"""Shape inference against hand-computed shapes and the rules of XLA's operation semantics."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import BF16, DTYPES, F16, F32, PRED, S32
from compiler.ir.shape_inference import (
    ShapeError,
    check_operand_count,
    declared_hints,
    infer_shape,
)
from compiler.ir.shapes import ArrayShape, TupleShape, array

C64, S8, U8, U32 = DTYPES["c64"], DTYPES["s8"], DTYPES["u8"], DTYPES["u32"]


def f32(*dims):
    return array(F32, dims)


def s32(*dims):
    return array(S32, dims)


def pred(*dims):
    return array(PRED, dims)


def scalar_computation(owner: GraphBuilder, name, op, dtype, params=2):
    """Add to `owner`'s computations one that applies `op` to `params` scalars of `dtype`."""
    builder = owner.computation(name)
    names = [builder.parameter(f"p{i}", ArrayShape(dtype, ())) for i in range(params)]
    if op == "compare":
        root = builder.add("compare", names[:2], {"direction": "LT"})
    elif op == "identity":
        root = names[0]
    else:
        root = builder.add(op, names[:2])
    return builder.finish([root])


# -- elementwise --------------------------------------------------------------------------------


def test_unary_ops_keep_the_operand_shape():
    assert infer_shape("negate", [f32(4, 8)], {}) == f32(4, 8)
    assert infer_shape("exponential", [array(BF16, [3])], {}) == array(BF16, [3])


def test_is_finite_gives_pred_of_the_operand_dims():
    assert infer_shape("is-finite", [f32(4, 8)], {}) == pred(4, 8)


def test_abs_real_and_imag_of_complex_give_the_component_type():
    for op in ("abs", "real", "imag"):
        assert infer_shape(op, [array(C64, [5])], {}) == f32(5)


def test_transcendental_ops_reject_integer_operands():
    with pytest.raises(ShapeError, match="exponential needs floating-point or complex operands"):
        infer_shape("exponential", [s32(4)], {})


def test_not_rejects_floating_point_operands():
    with pytest.raises(ShapeError, match="not needs pred or integer operands"):
        infer_shape("not", [f32(4)], {})


def test_binary_op_rejects_operands_with_different_dims_naming_both():
    with pytest.raises(ShapeError) as error:
        infer_shape("add", [f32(4, 16), f32(4, 8)], {})
    assert str(error.value) == "operand 1 has dims [4,8] but operand 0 has [4,16]"


def test_binary_op_rejects_operands_with_different_element_types():
    with pytest.raises(ShapeError, match="operand 1 has element type f16 but operand 0 has f32"):
        infer_shape("multiply", [f32(4), array(F16, [4])], {})


def test_binary_op_does_not_broadcast_a_scalar_as_hlo_has_no_implicit_broadcast():
    with pytest.raises(ShapeError, match=r"operand 1 has dims \[\] but operand 0 has \[4\]"):
        infer_shape("add", [f32(4), f32()], {})


def test_binary_op_result_has_the_default_layout():
    result = infer_shape("add", [array(F32, [4, 8], [0, 1]), array(F32, [4, 8], [0, 1])], {})
    assert result.layout is None


def test_complex_of_two_f32_arrays_is_c64():
    assert infer_shape("complex", [f32(3), f32(3)], {}) == array(C64, [3])


def test_shifts_need_integer_operands():
    with pytest.raises(ShapeError, match="shift-left needs integer operands"):
        infer_shape("shift-left", [f32(3), f32(3)], {})


def test_compare_gives_pred_with_the_operand_dims():
    assert infer_shape("compare", [s32(2, 3), s32(2, 3)], {"direction": "LT"}) == pred(2, 3)


def test_compare_rejects_an_unknown_direction():
    with pytest.raises(ShapeError, match="compare direction 'LESS' is not one of EQ"):
        infer_shape("compare", [s32(2), s32(2)], {"direction": "LESS"})


def test_select_takes_a_predicate_of_the_same_dims_or_a_scalar_one():
    assert infer_shape("select", [pred(4), f32(4), f32(4)], {}) == f32(4)
    assert infer_shape("select", [pred(), f32(4), f32(4)], {}) == f32(4)


def test_select_rejects_a_predicate_of_other_dims():
    with pytest.raises(ShapeError, match=r"operand 0 has dims \[3\] but operand 1 has \[4\]"):
        infer_shape("select", [pred(3), f32(4), f32(4)], {})


def test_select_needs_a_pred_predicate():
    with pytest.raises(ShapeError, match="operand 0 of select must be pred"):
        infer_shape("select", [s32(4), f32(4), f32(4)], {})


def test_clamp_accepts_scalar_or_elementwise_bounds():
    assert infer_shape("clamp", [f32(), f32(4, 2), f32()], {}) == f32(4, 2)
    assert infer_shape("clamp", [f32(4, 2), f32(4, 2), f32()], {}) == f32(4, 2)


def test_clamp_rejects_a_bound_of_other_dims():
    with pytest.raises(ShapeError, match=r"operand 2 has dims \[2\] but operand 1 has \[4,2\]"):
        infer_shape("clamp", [f32(), f32(4, 2), f32(2)], {})


# -- conversions and shape changes --------------------------------------------------------------


def test_convert_without_a_target_type_is_not_inferable():
    assert infer_shape("convert", [f32(4)], {}) is None


def test_convert_to_a_given_type_keeps_the_dims():
    assert infer_shape("convert", [f32(4, 2)], {"dtype": BF16}) == array(BF16, [4, 2])
    assert infer_shape("convert", [f32(4, 2)], {"dtype": "s8"}) == array(S8, [4, 2])


def test_convert_from_complex_to_real_is_rejected():
    with pytest.raises(ShapeError, match="use real or imag"):
        infer_shape("convert", [array(C64, [2])], {"dtype": F32})


def test_bitcast_convert_to_a_narrower_type_adds_a_minor_dimension_of_the_ratio():
    assert infer_shape("bitcast-convert", [f32(4)], {"dtype": U8}) == array(U8, [4, 4])
    assert infer_shape("bitcast-convert", [f32(4)], {"dtype": S32}) == s32(4)


def test_bitcast_convert_to_a_wider_type_consumes_the_minor_dimension():
    assert infer_shape("bitcast-convert", [array(U8, [3, 4])], {"dtype": F32}) == f32(3)
    with pytest.raises(ShapeError, match="needs a last dimension of size 4"):
        infer_shape("bitcast-convert", [array(U8, [3, 2])], {"dtype": F32})


def test_reshape_without_target_dims_is_not_inferable():
    assert infer_shape("reshape", [f32(4, 8)], {}) is None


def test_reshape_keeps_the_element_count():
    assert infer_shape("reshape", [f32(4, 8)], {"new_dims": (2, 16)}) == f32(2, 16)
    with pytest.raises(ShapeError) as error:
        infer_shape("reshape", [f32(4, 16)], {"new_dims": (4, 8)})
    assert str(error.value) == (
        "cannot reshape f32[4,16] (64 elements) to [4,8] (32 elements)"
    )


def test_bitcast_may_change_the_type_when_the_bytes_agree():
    assert infer_shape("bitcast", [f32(4, 8)], {"new_dims": (32,)}) == f32(32)
    assert infer_shape("bitcast", [f32(4)], {"new_dims": (8,), "dtype": F16}) == array(F16, [8])
    with pytest.raises(ShapeError, match="the sizes in bits differ"):
        infer_shape("bitcast", [f32(4)], {"new_dims": (4,), "dtype": F16})


def test_broadcast_maps_each_operand_dimension_to_an_output_dimension_of_equal_size():
    result = infer_shape("broadcast", [f32(8)], {"dimensions": (1,), "new_dims": (4, 8)})
    assert result == f32(4, 8)
    assert infer_shape("broadcast", [f32()], {"dimensions": (), "new_dims": (2, 3)}) == f32(2, 3)


def test_broadcast_rejects_a_size_change_of_a_mapped_dimension():
    with pytest.raises(ShapeError) as error:
        infer_shape("broadcast", [f32(8)], {"dimensions": (0,), "new_dims": (4, 8)})
    assert "operand 0 dimension 0 (size 8) maps to dimension 0 of [4,8] (size 4)" in str(
        error.value
    )


def test_broadcast_needs_one_mapping_per_operand_dimension_even_without_target_dims():
    with pytest.raises(ShapeError, match="must map each of the 2 dimensions of operand 0"):
        infer_shape("broadcast", [f32(4, 8)], {"dimensions": (0,)})


def test_transpose_permutes_the_dims():
    assert infer_shape("transpose", [f32(2, 3, 5)], {"dimensions": (2, 0, 1)}) == f32(5, 2, 3)


def test_transpose_rejects_dimensions_that_are_not_a_permutation():
    with pytest.raises(ShapeError, match=r"\[0,0\] are not a permutation of 0..1"):
        infer_shape("transpose", [f32(2, 3)], {"dimensions": (0, 0)})


def test_iota_is_inferable_only_from_a_given_type_and_dims():
    assert infer_shape("iota", [], {"iota_dimension": 0}) is None
    hints = {"iota_dimension": 1, "dtype": S32, "new_dims": (4, 8)}
    assert infer_shape("iota", [], hints) == s32(4, 8)
    with pytest.raises(ShapeError, match="iota_dimension 2 is out of range"):
        infer_shape("iota", [], {**hints, "iota_dimension": 2})


def test_declared_hints_give_the_parts_an_op_does_not_determine():
    assert declared_hints("convert", f32(4)) == {"dtype": F32}
    assert declared_hints("reshape", f32(4)) == {"new_dims": (4,)}
    assert declared_hints("add", f32(4)) == {}


# -- reductions ---------------------------------------------------------------------------------


def test_reduce_drops_the_reduced_dimensions():
    result = infer_shape("reduce", [f32(4, 8, 16), f32()], {"dimensions": (0, 2)})
    assert result == f32(8)


def test_variadic_reduce_gives_a_tuple_of_one_result_per_input():
    result = infer_shape("reduce", [f32(4, 8), s32(4, 8), f32(), s32()], {"dimensions": (1,)})
    assert result == TupleShape((f32(4), s32(4)))


def test_reduce_rejects_an_out_of_range_or_repeated_dimension():
    with pytest.raises(ShapeError, match="reduce dimension 2 is out of range for rank 2"):
        infer_shape("reduce", [f32(4, 8), f32()], {"dimensions": (2,)})
    with pytest.raises(ShapeError, match="repeat dimension 1"):
        infer_shape("reduce", [f32(4, 8), f32()], {"dimensions": (1, 1)})


def test_reduce_needs_an_even_operand_count():
    with pytest.raises(ShapeError, match="reduce takes N inputs then N init values, got 3"):
        infer_shape("reduce", [f32(4), f32(4), f32()], {"dimensions": (0,)})


def test_reduce_needs_scalar_init_values():
    with pytest.raises(ShapeError, match=r"operand 1 \(init value of input 0\) must be a scalar"):
        infer_shape("reduce", [f32(4, 8), f32(8)], {"dimensions": (0,)})


def test_reduce_checks_the_reducer_signature_when_computations_are_given():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "add_s32", "add", S32)
    attrs = {"dimensions": (1,), "to_apply": "add_s32"}
    with pytest.raises(ShapeError) as error:
        infer_shape("reduce", [f32(4, 8), f32()], attrs, owner.graph.computations)
    assert str(error.value) == (
        "to_apply 'add_s32' has signature (s32[], s32[]) -> s32[] but reduce needs "
        "(f32[], f32[]) -> f32[]"
    )


def test_reduce_of_bf16_with_an_f32_reducer_gives_f32_as_xla_mixed_precision_allows():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "add_f32", "add", F32)
    attrs = {"dimensions": (1,), "to_apply": "add_f32"}
    result = infer_shape("reduce", [array(BF16, [4, 8]), f32()], attrs, owner.graph.computations)
    assert result == f32(4)


def test_reduce_window_follows_xlas_window_output_formula():
    window = {"size": (2, 3), "stride": (2, 3)}
    assert infer_shape("reduce-window", [f32(4, 6), f32()], {"window": window}) == f32(2, 2)
    # SAME padding of a size-3, stride-2 window over 5 elements: (5 + 2 - 3) // 2 + 1 = 3.
    same = {"size": (3,), "stride": (2,), "pad": ((1, 1),)}
    assert infer_shape("reduce-window", [f32(5), f32()], {"window": same}) == f32(3)
    # Base dilation 2 makes 4 elements span 7; a size-2 window fits 6 times.
    dilated = {"size": (2,), "lhs_dilate": (2,)}
    assert infer_shape("reduce-window", [f32(4), f32()], {"window": dilated}) == f32(6)


def test_reduce_window_rejects_a_window_of_the_wrong_rank():
    with pytest.raises(ShapeError, match="window size has 1 entries but the window has 2"):
        infer_shape("reduce-window", [f32(4, 6), f32()], {"window": {"size": (2,)}})


def test_select_and_scatter_needs_a_source_of_the_windowed_shape():
    window = {"window": {"size": (2, 2), "stride": (2, 2)}}
    assert infer_shape("select-and-scatter", [f32(4, 6), f32(2, 3), f32()], window) == f32(4, 6)
    with pytest.raises(ShapeError, match=r"source\) has dims \[4,6\] but the window"):
        infer_shape("select-and-scatter", [f32(4, 6), f32(4, 6), f32()], window)


# -- data movement ------------------------------------------------------------------------------


def test_slice_takes_ceil_of_span_over_stride():
    attrs = {"slice": ((2, 10, 3), (0, 8, 1))}
    assert infer_shape("slice", [f32(10, 8)], attrs) == f32(3, 8)


def test_slice_rejects_bounds_past_the_dimension():
    with pytest.raises(ShapeError, match=r"slice of dimension 1: \[0:20\] does not fit in 0..8"):
        infer_shape("slice", [f32(10, 8)], {"slice": ((0, 10, 1), (0, 20, 1))})


def test_pad_adds_low_high_and_interior_padding():
    attrs = {"padding": ((1, 2, 0), (0, 0, 1))}
    assert infer_shape("pad", [f32(4, 5), f32()], attrs) == f32(7, 9)
    assert infer_shape("pad", [f32(4), f32()], {"padding": ((-1, 0, 0),)}) == f32(3)


def test_pad_rejects_padding_that_leaves_a_negative_size_or_a_non_scalar_value():
    with pytest.raises(ShapeError, match="makes size 4 negative"):
        infer_shape("pad", [f32(4), f32()], {"padding": ((-5, 0, 0),)})
    with pytest.raises(ShapeError, match=r"operand 1 \(padding value\) must be a scalar"):
        infer_shape("pad", [f32(4), f32(1)], {"padding": ((0, 0, 0),)})


def test_concatenate_sums_the_concatenated_dimension():
    result = infer_shape("concatenate", [f32(4, 8), f32(4, 3), f32(4, 1)], {"dimensions": (1,)})
    assert result == f32(4, 12)


def test_concatenate_rejects_operands_that_differ_in_another_dimension():
    with pytest.raises(ShapeError) as error:
        infer_shape("concatenate", [f32(4, 8), f32(5, 3)], {"dimensions": (1,)})
    assert str(error.value) == (
        "operand 1 has dims [5,3] but operand 0 has [4,8]; they may differ only in dimension 1"
    )


def test_reverse_keeps_the_shape_and_checks_its_dimensions():
    assert infer_shape("reverse", [f32(4, 8)], {"dimensions": (0, 1)}) == f32(4, 8)
    with pytest.raises(ShapeError, match="reverse dimension 2 is out of range"):
        infer_shape("reverse", [f32(4, 8)], {"dimensions": (2,)})


# -- indexed ops --------------------------------------------------------------------------------

TAKE_ROWS = {  # jnp.take(x, indices, axis=0) as XLA spells it
    "offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
    "index_vector_dim": 1, "slice_sizes": (1, 7),
}


def test_gather_of_rows_gives_batch_dims_then_offset_dims():
    assert infer_shape("gather", [f32(5, 7), s32(3, 1)], TAKE_ROWS) == f32(3, 7)


def test_gather_with_index_vector_dim_equal_to_rank_treats_indices_as_scalars():
    assert infer_shape("gather", [f32(5, 7), s32(3)], TAKE_ROWS) == f32(3, 7)


def test_gather_with_batching_dims_keeps_the_index_batch_dims():
    attrs = {
        "offset_dims": (2,), "collapsed_slice_dims": (1,), "start_index_map": (1,),
        "operand_batching_dims": (0,), "start_indices_batching_dims": (0,),
        "index_vector_dim": 2, "slice_sizes": (1, 1, 7),
    }
    assert infer_shape("gather", [f32(2, 5, 7), s32(2, 3, 1)], attrs) == f32(2, 3, 7)


def test_gather_rejects_a_slice_larger_than_the_operand():
    with pytest.raises(ShapeError, match=r"slice_sizes\[1\] = 9 does not fit in dimension 1"):
        infer_shape("gather", [f32(5, 7), s32(3, 1)], {**TAKE_ROWS, "slice_sizes": (1, 9)})


def test_gather_rejects_a_start_index_map_that_does_not_match_the_index_vectors():
    with pytest.raises(ShapeError, match="start_index_map .* has 1 entries but the index vec"):
        infer_shape("gather", [f32(5, 7), s32(3, 2)], TAKE_ROWS)


SCATTER_ROWS = {
    "update_window_dims": (1,), "inserted_window_dims": (0,),
    "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1,
}


def test_scatter_gives_the_operand_shape():
    assert infer_shape("scatter", [f32(5, 7), s32(3, 1), f32(3, 7)], SCATTER_ROWS) == f32(5, 7)


def test_scatter_rejects_updates_whose_scatter_dims_do_not_match_the_indices():
    with pytest.raises(ShapeError, match=r"updates dimension 0 \(size 4\) must match"):
        infer_shape("scatter", [f32(5, 7), s32(3, 1), f32(4, 7)], SCATTER_ROWS)


def test_dynamic_slice_gives_the_slice_sizes():
    shapes = [f32(8, 16), s32(), s32()]
    assert infer_shape("dynamic-slice", shapes, {"dynamic_slice_sizes": (2, 4)}) == f32(2, 4)


def test_dynamic_slice_needs_one_start_per_dimension_and_sizes_that_fit():
    with pytest.raises(ShapeError, match=r"takes 2 start indices \(one per dimension\) after "
                       r"operand 0, got 1"):
        infer_shape("dynamic-slice", [f32(8, 16), s32()], {"dynamic_slice_sizes": (2, 4)})
    with pytest.raises(ShapeError, match=r"dynamic_slice_sizes\[1\] = 17 does not fit"):
        infer_shape("dynamic-slice", [f32(8, 16), s32(), s32()],
                    {"dynamic_slice_sizes": (2, 17)})


def test_dynamic_update_slice_keeps_the_operand_shape_and_rejects_a_larger_update():
    shapes = [f32(8, 16), f32(2, 4), s32(), s32()]
    assert infer_shape("dynamic-update-slice", shapes, {}) == f32(8, 16)
    with pytest.raises(ShapeError, match=r"update\) dimension 1 \(size 20\) is larger"):
        infer_shape("dynamic-update-slice", [f32(8, 16), f32(2, 20), s32(), s32()], {})


# -- library calls ------------------------------------------------------------------------------


def test_dot_of_matrices_gives_lhs_free_then_rhs_free_dims():
    attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}
    assert infer_shape("dot", [f32(4, 8), f32(8, 16)], attrs) == f32(4, 16)


def test_dot_puts_batch_dims_first():
    attrs = {"lhs_batch_dims": (0,), "rhs_batch_dims": (0,),
             "lhs_contracting_dims": (2,), "rhs_contracting_dims": (1,)}
    assert infer_shape("dot", [f32(2, 4, 8), f32(2, 8, 16)], attrs) == f32(2, 4, 16)


def test_dot_keeps_free_dims_in_operand_order_whatever_the_contracting_dims():
    attrs = {"lhs_contracting_dims": (0,), "rhs_contracting_dims": (1,)}
    assert infer_shape("dot", [f32(8, 4), f32(16, 8)], attrs) == f32(4, 16)


def test_dot_rejects_contracting_dims_of_different_sizes():
    attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}
    with pytest.raises(ShapeError) as error:
        infer_shape("dot", [f32(4, 8), f32(6, 16)], attrs)
    assert str(error.value) == (
        "contracting dimension 1 of operand 0 f32[4,8] (size 8) does not match dimension 0 of "
        "operand 1 f32[6,16] (size 6)"
    )


def test_dot_takes_a_preferred_result_type():
    attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,), "dtype": F32}
    assert infer_shape("dot", [array(BF16, [4, 8]), array(BF16, [8, 2])], attrs) == f32(4, 2)


NHWC_CONV = {"dim_labels": "b01f_01io->b01f"}


def test_convolution_with_same_padding_keeps_the_spatial_size():
    attrs = {**NHWC_CONV, "window": {"size": (3, 3), "pad": ((1, 1), (1, 1))}}
    assert infer_shape("convolution", [f32(1, 28, 28, 3), f32(3, 3, 3, 16)], attrs) == f32(
        1, 28, 28, 16
    )


def test_convolution_with_stride_two_and_no_padding():
    attrs = {**NHWC_CONV, "window": {"size": (3, 3), "stride": (2, 2)}}
    # (28 - 3) // 2 + 1 = 13
    assert infer_shape("convolution", [f32(1, 28, 28, 3), f32(3, 3, 3, 16)], attrs) == f32(
        1, 13, 13, 16
    )


def test_depthwise_convolution_splits_input_features_into_groups():
    attrs = {**NHWC_CONV, "window": {"size": (3, 3), "pad": ((1, 1), (1, 1))},
             "feature_group_count": 8}
    assert infer_shape("convolution", [f32(2, 14, 14, 8), f32(3, 3, 1, 8)], attrs) == f32(
        2, 14, 14, 8
    )


def test_batch_grouped_convolution_divides_the_batch_among_the_groups():
    # The weight gradient of a depthwise convolution: XLA emits batch_group_count = features.
    attrs = {**NHWC_CONV, "window": {"size": (3, 3)}, "batch_group_count": 4}
    assert infer_shape("convolution", [f32(8, 5, 5, 1), f32(3, 3, 1, 4)], attrs) == f32(
        2, 3, 3, 4
    )


def test_convolution_reads_nchw_labels():
    attrs = {"dim_labels": "bf01_oi01->bf01", "window": {"size": (5, 5)}}
    assert infer_shape("convolution", [f32(4, 3, 32, 32), f32(6, 3, 5, 5)], attrs) == f32(
        4, 6, 28, 28
    )


def test_convolution_rejects_a_window_that_differs_from_the_kernel():
    attrs = {**NHWC_CONV, "window": {"size": (5, 5)}}
    with pytest.raises(ShapeError, match="window size 5 in spatial dimension 0 does not match"):
        infer_shape("convolution", [f32(1, 28, 28, 3), f32(3, 3, 3, 16)], attrs)


def test_convolution_rejects_input_features_that_the_kernel_does_not_take():
    attrs = {**NHWC_CONV, "window": {"size": (3, 3)}}
    with pytest.raises(ShapeError, match="operand 0 has 4 input features"):
        infer_shape("convolution", [f32(1, 28, 28, 4), f32(3, 3, 3, 16)], attrs)


def test_sort_of_one_array_keeps_its_shape_and_of_several_gives_a_tuple():
    assert infer_shape("sort", [f32(4, 8)], {"dimensions": (1,)}) == f32(4, 8)
    result = infer_shape("sort", [f32(4, 8), s32(4, 8)], {"dimensions": (1,)})
    assert result == TupleShape((f32(4, 8), s32(4, 8)))


def test_sort_checks_the_comparator_takes_two_scalars_per_operand():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "less", "compare", F32)
    attrs = {"dimensions": (0,), "to_apply": "less"}
    computations = owner.graph.computations
    assert infer_shape("sort", [f32(4)], attrs, computations) == f32(4)
    with pytest.raises(ShapeError, match=r"has signature \(f32\[\], f32\[\]\) -> pred\[\]"):
        infer_shape("sort", [f32(4), s32(4)], attrs, computations)


def test_topk_gives_values_and_s32_indices_of_the_k_largest_along_the_last_dimension():
    assert infer_shape("topk", [f32(4, 100)], {"k": 5}) == TupleShape((f32(4, 5), s32(4, 5)))
    with pytest.raises(ShapeError, match="topk k=101 must be between 0 and the last dimension"):
        infer_shape("topk", [f32(4, 100)], {"k": 101})


def test_batch_norm_training_gives_the_output_and_per_feature_mean_and_variance():
    shapes = [f32(8, 14, 14, 32), f32(32), f32(32)]
    attrs = {"feature_index": 3, "epsilon": 1e-3}
    assert infer_shape("batch-norm-training", shapes, attrs) == TupleShape(
        (f32(8, 14, 14, 32), f32(32), f32(32))
    )
    per_feature = [f32(32)] * 4
    assert infer_shape("batch-norm-inference", shapes[:1] + per_feature, attrs) == shapes[0]
    with pytest.raises(ShapeError, match=r"operand 2 must be f32\[32\] \(one value per feature"):
        infer_shape("batch-norm-training", [f32(8, 14, 14, 32), f32(32), f32(14)], attrs)


# -- tuples and control flow --------------------------------------------------------------------


def test_tuple_and_get_tuple_element():
    pair = infer_shape("tuple", [f32(4), s32()], {})
    assert pair == TupleShape((f32(4), s32()))
    assert infer_shape("get-tuple-element", [pair], {"index": 1}) == s32()
    with pytest.raises(ShapeError, match="index 2 is out of range for the 2-element tuple"):
        infer_shape("get-tuple-element", [pair], {"index": 2})
    with pytest.raises(ShapeError, match="must be a tuple"):
        infer_shape("get-tuple-element", [f32(4)], {"index": 0})


def test_while_gives_the_loop_state_and_checks_the_body_signature():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "step", "add", F32)
    state = TupleShape((f32(), s32()))
    assert infer_shape("while", [state], {"body": "step", "condition": "c"}) == state
    with pytest.raises(ShapeError) as error:
        infer_shape("while", [state], {"body": "step"}, owner.graph.computations)
    assert str(error.value) == (
        "body 'step' has signature (f32[], f32[]) -> f32[] but while needs "
        "((f32[], s32[])) -> (f32[], s32[])"
    )


def test_conditional_gives_the_branch_result_and_checks_branch_operands():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "identity", "identity", F32, params=1)
    computations = owner.graph.computations
    attrs = {"branch_computations": ("identity", "identity")}
    assert infer_shape("conditional", [pred(), f32(), f32()], attrs, computations) == f32()
    with pytest.raises(ShapeError, match="branch 1 'identity' has signature"):
        infer_shape("conditional", [pred(), f32(), s32()], attrs, computations)
    with pytest.raises(ShapeError, match="a conditional on a pred has 2 branches, got 1"):
        infer_shape("conditional", [pred(), f32()], {"branch_computations": ("identity",)})


def test_map_gives_the_operand_dims_with_the_functions_result_type():
    owner = GraphBuilder("entry")
    scalar_computation(owner, "less", "compare", F32)
    attrs = {"dimensions": (0, 1), "to_apply": "less"}
    shapes = [f32(2, 3), f32(2, 3)]
    assert infer_shape("map", shapes, attrs, owner.graph.computations) == pred(2, 3)
    assert infer_shape("map", shapes, attrs) is None


def test_ops_without_a_rule_and_unknown_ops_are_not_inferable():
    assert infer_shape("custom-call", [f32(4)], {"custom_call_target": "foo"}) is None
    assert infer_shape("all-gather", [f32(4)], {}) is None
    assert infer_shape("frobnicate", [f32(4)], {}) is None


def test_misc_plumbing_ops_have_fixed_results():
    assert infer_shape("partition-id", [], {}) == array(U32, [])
    assert infer_shape("get-dimension-size", [f32(4)], {}) == s32()


def test_operand_counts_follow_the_ops_table():
    with pytest.raises(ShapeError, match="add takes 2 operands, got 3"):
        check_operand_count("add", 3)
    with pytest.raises(ShapeError, match="scatter takes N inputs, the indices, then N updates"):
        check_operand_count("scatter", 4)
    check_operand_count("tuple", 0)


def test_attributes_of_the_wrong_type_raise_shape_errors_not_type_errors():
    with pytest.raises(ShapeError, match="must be a list of integers, got 'ab'"):
        infer_shape("transpose", [f32(2, 3)], {"dimensions": "ab"})
    with pytest.raises(ShapeError, match="needs the attribute 'slice'"):
        infer_shape("slice", [f32(2, 3)], {})
    with pytest.raises(ShapeError, match="must be an integer, got True"):
        infer_shape("get-tuple-element", [TupleShape((f32(),))], {"index": True})


# -- properties ---------------------------------------------------------------------------------


@given(st.lists(st.integers(0, 6), min_size=1, max_size=5).flatmap(
    lambda dims: st.tuples(st.just(dims), st.permutations(range(len(dims))))))
def test_transposing_by_a_permutation_and_its_inverse_gives_the_dims_back(case):
    dims, permutation = case
    inverse = [permutation.index(i) for i in range(len(permutation))]
    once = infer_shape("transpose", [f32(*dims)], {"dimensions": tuple(permutation)})
    assert infer_shape("transpose", [once], {"dimensions": tuple(inverse)}) == f32(*dims)


@given(st.lists(st.integers(0, 6), min_size=1, max_size=5).flatmap(
    lambda dims: st.tuples(st.just(dims), st.sets(st.integers(0, len(dims) - 1)))))
def test_reduce_keeps_the_unreduced_dims_in_order(case):
    dims, reduced = case
    result = infer_shape("reduce", [f32(*dims), f32()], {"dimensions": tuple(sorted(reduced))})
    assert result == f32(*[d for i, d in enumerate(dims) if i not in reduced])
