"""StableHLO constants in every form MLIR prints them, as JAX lowers them (issue 33).

MLIR prints a dense constant's elements one by one when it has at most 100 of them (NaNs and
infinities as their bits: `dense<[[1.5, 0x7FC0]]>`), as its raw buffer in hex when it has
more (`dense<"0x803F...">`), and as one element when all of them are equal (`dense<1.5>`). Each
test lowers a real JAX function whose constant takes one of these forms (and checks that it
did), imports the text and runs the graph with the reference interpreter against JAX's own
output on the same inputs.
"""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from compiler.errors import InputError, UnsupportedError
from compiler.importers import import_bytes
from compiler.ir.interpreter import evaluate
from tests.data.gen_stablehlo import llama_arguments, llama_rope_step, rope_tables

BF16 = ml_dtypes.bfloat16
# name -> (NumPy dtype of the constant, MLIR's name for it, dtype the function computes in).
# f8, f4, i4 and i1 constants are converted to f32 or i32 first, as JAX programs use them.
DTYPES = {
    "f64": (np.float64, "f64", np.float64),
    "f32": (np.float32, "f32", np.float32),
    "f16": (np.float16, "f16", np.float16),
    "bf16": (BF16, "bf16", BF16),
    "f8e4m3fn": (ml_dtypes.float8_e4m3fn, "f8E4M3FN", np.float32),
    "f8e5m2": (ml_dtypes.float8_e5m2, "f8E5M2", np.float32),
    "f8e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, "f8E4M3FNUZ", np.float32),
    "f4e2m1fn": (ml_dtypes.float4_e2m1fn, "f4E2M1FN", np.float32),
    "pred": (np.bool_, "i1", np.float32),
    "s4": (ml_dtypes.int4, "i4", np.int32),
    "s8": (np.int8, "i8", np.int8),
    "s16": (np.int16, "i16", np.int16),
    "s32": (np.int32, "i32", np.int32),
    "s64": (np.int64, "i64", np.int64),
    "u8": (np.uint8, "ui8", np.uint8),
    "u16": (np.uint16, "ui16", np.uint16),
    "u32": (np.uint32, "ui32", np.uint32),
    "u64": (np.uint64, "ui64", np.uint64),
    "c64": (np.complex64, "complex<f32>", np.complex64),
    "c128": (np.complex128, "complex<f64>", np.complex128),
}
# form -> (the constant's shape, how MLIR prints it). 12 and 30 elements are printed one by
# one (the splat as its one value), 384 as hex.
FORMS = {
    "listed": ((2, 2, 3), r'dense<\['),
    "hex": ((16, 24), r'dense<"0x[0-9A-F]+">'),
    "splat": ((5, 6), r'dense<[^\["]'),
}


def _values(dtype, shape, rng) -> np.ndarray:
    """Random values of `dtype` over its range; a float type's NaN and infinities among them
    (MLIR lists them as their bits)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        parts = rng.standard_normal((2, *shape)) * 3
        values = (parts[0] + 1j * parts[1]).astype(dtype)
        values.flat[:2] = [complex(np.inf, 1), complex(-2, np.nan)]
        return values
    if dtype.kind in "iu" or dtype in (ml_dtypes.int4, ml_dtypes.uint4):
        limits = ml_dtypes.iinfo(dtype)
        wide = np.uint64 if dtype == np.uint64 else np.int64
        return rng.integers(int(limits.min), int(limits.max), shape, wide,
                            endpoint=True).astype(dtype)
    values = (rng.standard_normal(shape) * 3).astype(dtype)
    special = np.array([np.inf, -np.inf, np.nan]).astype(dtype)
    special = special[~np.isfinite(special.astype(np.float64))]
    values.flat[:special.size] = special
    return values


def _function_of(table: np.ndarray, compute):
    """x + the constant `table` (converted to the dtype `x` computes in)."""
    def function(x):
        return x + jnp.asarray(table).astype(compute)
    return function


def _compare(ours, theirs, compute) -> None:
    """Our output against JAX's: equal, but for a rounding of the last bit of a 16-bit float
    (XLA:CPU adds two bf16 numbers in f32, then rounds)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if np.dtype(compute).kind in "iub":
        np.testing.assert_array_equal(ours, theirs)
        return
    wide = np.complex128 if np.dtype(compute).kind == "c" else np.float64
    tolerance = float(ml_dtypes.finfo(compute).eps) if np.dtype(compute).itemsize == 2 else 0
    np.testing.assert_allclose(ours.astype(wide), theirs.astype(wide), rtol=tolerance, atol=0)


def _single(outputs):
    return outputs[0] if isinstance(outputs, (list, tuple)) else outputs


def _constant_module(value: str, tensor: str) -> str:
    """A module returning `stablehlo.constant VALUE : TENSOR` (line 3)."""
    return (f"module @m {{\n  func.func public @main() -> {tensor} {{\n"
            f"    %0 = stablehlo.constant {value} : {tensor}\n"
            f"    return %0 : {tensor}\n  }}\n}}\n")


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("name", sorted(DTYPES))
def test_a_constant_computes_what_jax_computes_in_each_form_mlir_prints(name, form):
    dtype, mlir_type, compute = DTYPES[name]
    shape, printed = FORMS[form]
    rng = np.random.default_rng(sorted(DTYPES).index(name))
    table = _values(dtype, shape, rng)
    if form == "splat":
        table = np.full(shape, table.flat[3], dtype=dtype)
    function = _function_of(table, compute)
    x = _values(compute, shape, rng)
    x[~np.isfinite(x.astype(np.complex128))] = 1   # NaN and infinities in the constant alone
    with jax.enable_x64(True):
        text = jax.jit(function).lower(x).as_text()
        expected = jax.jit(function)(x)
    # The constant is printed as this form says, of this MLIR type.
    tensor = re.escape(f"tensor<{'x'.join(map(str, shape))}x{mlir_type}>")
    constant = re.search(rf"stablehlo\.constant (dense<.*>) : {tensor}", text)
    assert constant is not None, text
    assert re.match(printed, constant[1]), constant[1][:80]
    graph = import_bytes(text.encode(), f"{name}_{form}.mlir")[0]
    _compare(_single(evaluate(graph, [x])), expected, compute)


@pytest.mark.parametrize("name", ["bf16", "f32", "pred", "c64", "f8e4m3fn", "s16"])
def test_hex_of_one_elements_bytes_is_that_element_everywhere(name):
    """MLIR reads `dense<"0x...">` holding one element's bytes as a splat (and prints it back
    as `dense<value>`)."""
    dtype, mlir_type, _ = DTYPES[name]
    value = _values(dtype, (8,), np.random.default_rng(1))[7:]
    text = f"""module @m {{
  func.func public @main() -> tensor<3x5x{mlir_type}> {{
    %0 = stablehlo.constant dense<"0x{value.tobytes().hex().upper()}"> : tensor<3x5x{mlir_type}>
    return %0 : tensor<3x5x{mlir_type}>
  }}
}}
"""
    graph = import_bytes(text.encode(), "splat.mlir")[0]
    result = _single(evaluate(graph, []))
    assert result.dtype == value.dtype
    assert result.tobytes() == np.full((3, 5), value[0]).tobytes()


def test_an_i1_hex_byte_other_than_0_and_1_is_true_as_mlir_reads_it():
    from jaxlib.mlir import ir

    with ir.Context():
        mlir_reads = str(ir.Attribute.parse('dense<"0x02000180"> : tensor<4xi1>'))
    assert mlir_reads == "dense<[true, false, true, true]> : tensor<4xi1>"
    graph = import_bytes(_constant_module('dense<"0x02000180">', "tensor<4xi1>").encode(),
                         "i1.mlir")[0]
    result = _single(evaluate(graph, []))
    assert result.view(np.uint8).tolist() == [1, 0, 1, 1]


# -- a Llama-style training step with bf16 RoPE tables ----------------------------------------
#
# tests/data/gen_stablehlo.py's step: one decoder layer whose rotary cos and sin tables,
# [16, 8] bf16, are made in NumPy, so that JAX bakes them in as constants: hex, as MLIR prints
# more than 100 elements (once for q, once for k). It wrote the step's text with its inputs
# and JAX's outputs to tests/data/stablehlo/ (`STEP`); here it is also lowered by the JAX the
# tests run under.

STEP = Path(__file__).parents[1] / "data" / "stablehlo" / "llama_rope_step"
ROPE_TABLE = r'stablehlo\.constant dense<"0x[0-9A-F]+"> : tensor<16x8xbf16>'


def _assert_close_to_jax(actual: list, expected: list) -> None:
    assert len(actual) == len(expected)
    for k, (ours, theirs) in enumerate(zip(actual, expected)):
        theirs = np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        # A bf16 rounding that goes the other way (after f32 sums in another order) moves a
        # gradient by 2^-8 of itself, and a parameter by the learning rate (1e-2) times that.
        # A table read wrong moves the loss and every gradient by far more.
        scale = max(1.0, float(np.max(np.abs(theirs))))
        assert float(np.max(np.abs(ours - theirs))) <= 1e-4 * scale, k


def test_a_llama_step_with_bf16_rope_tables_computes_what_jax_computes():
    arguments = llama_arguments()
    text = jax.jit(llama_rope_step).lower(*arguments).as_text()
    tables = re.findall(ROPE_TABLE, text)
    assert len(tables) == 4 and len(set(tables)) == 2, text
    graph = import_bytes(text.encode(), "llama_rope_step.mlir")[0]
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(arguments)]
    _assert_close_to_jax(evaluate(graph, leaves),
                         jax.tree_util.tree_leaves(jax.jit(llama_rope_step)(*arguments)))


def test_the_rope_tables_read_back_bit_exactly():
    """The graph's [16, 8] constants are the bits of the tables JAX baked in."""
    graph = import_bytes(STEP.with_suffix(".mlir").read_bytes(), "llama_rope_step.mlir")[0]
    constants = [node.attrs["value"] for node in graph.nodes.values()
                 if node.op == "constant" and node.attrs["value"].shape == (16, 8)]
    cos, sin = rope_tables(16, 16)
    assert sorted(c.tobytes() for c in constants) == sorted([cos.tobytes(), sin.tobytes()] * 2)


def test_the_committed_llama_step_computes_the_numbers_jax_computed():
    text = STEP.with_suffix(".mlir").read_text()
    assert len(re.findall(ROPE_TABLE, text)) == 4
    graph = import_bytes(text.encode(), "llama_rope_step.mlir")[0]
    inputs = np.load(STEP.with_suffix(".inputs.npz"))
    expected = np.load(STEP.with_suffix(".outputs.npz"))
    _assert_close_to_jax(evaluate(graph, [inputs[f"arg{k}"] for k in range(len(inputs))]),
                         [expected[f"out{k}"] for k in range(len(expected))])


# -- dense_resource blobs ---------------------------------------------------------------------

TABLE = np.linspace(-3, 3, 200).reshape(10, 20).astype(BF16)
MASK = (np.arange(200) % 3 == 0).reshape(10, 20)
RAMP = np.arange(200, dtype=np.float32).reshape(10, 20)


def _masked_add(x):
    return jnp.where(MASK, x + jnp.asarray(TABLE).astype(jnp.float32), x * RAMP)


def _as_resources(module) -> str:
    """A copy of JAX's module of `_masked_add` whose constants are dense_resource blobs made
    by MLIR's bindings, as MLIR prints it (torch-mlir's importer writes such modules)."""
    from jaxlib.mlir import ir

    by_type = {"bf16": TABLE.view(np.uint16), "i1": MASK, "f32": RAMP}
    with module.context:
        copy = module.operation.clone()   # JAX compiles the module itself
        main = copy.regions[0].blocks[0].operations[0]
        for op in main.regions[0].blocks[0].operations:
            if op.operation.name == "stablehlo.constant":
                tensor = op.results[0].type
                element = str(ir.RankedTensorType(tensor).element_type)
                op.attributes["value"] = ir.DenseResourceElementsAttr.get_from_buffer(
                    by_type[element], f"blob_{element}", tensor)
    return copy.get_asm()


def test_dense_resource_blobs_compute_what_jax_computes():
    x = np.random.default_rng(2).standard_normal((10, 20)).astype(np.float32)
    lowered = jax.jit(_masked_add).lower(x)
    text = _as_resources(lowered.compiler_ir("stablehlo"))
    assert len(re.findall(r"stablehlo\.constant dense_resource<blob_", text)) == 3, text
    assert "dialect_resources" in text
    # Twice: the second time MLIR renames the blobs (`blob_bf16_1`), as the first are known.
    for _ in range(2):
        graph = import_bytes(text.encode(), "resources.mlir")[0]
        np.testing.assert_array_equal(_single(evaluate(graph, [x])),
                                      np.asarray(jax.jit(_masked_add)(x)))


def test_an_elided_constant_is_refused_at_its_line():
    x = np.zeros((10, 20), np.float32)
    text = jax.jit(_masked_add).lower(x).compiler_ir("stablehlo").operation.get_asm(
        large_elements_limit=16)
    line = next(k for k, text_line in enumerate(text.splitlines(), 1)
                if "dense_resource<__elided__>" in text_line)
    with pytest.raises(InputError) as error:
        import_bytes(text.encode(), "elided.mlir")
    assert re.match(rf"elided\.mlir:{line}:\d+: the constant's values were left out when the "
                    r"module was printed \(dense_resource<__elided__>", str(error.value))


RESOURCE_MODULE = """module @m {{
  func.func public @main() -> tensor<3xf32> {{
    %0 = stablehlo.constant dense_resource<{name}> : tensor<3xf32>
    return %0 : tensor<3xf32>
  }}
}}
{{-#
  dialect_resources: {{
    builtin: {{
      weights: "0x04000000{data}"
    }}
  }}
#-}}
"""


def test_a_blob_of_the_wrong_size_is_refused_at_its_line():
    data = np.array([1, 2], np.float32).tobytes().hex()   # two floats for three
    text = RESOURCE_MODULE.format(name="weights", data=data)
    with pytest.raises(InputError) as error:
        import_bytes(text.encode(), "blob.mlir")
    assert str(error.value) == ("blob.mlir:3:10: the constant's dense_resource blob holds 8 "
                                "bytes, and a tensor<3xf32> 12")


def test_a_resource_without_a_blob_is_refused_at_its_line():
    text = RESOURCE_MODULE.format(name="other", data="")
    with pytest.raises(InputError) as error:
        import_bytes(text.encode(), "blob.mlir")
    assert str(error.value) == ("blob.mlir:3:10: the constant's dense_resource names no blob "
                                "of the module's dialect_resources")


# -- malformed constants ----------------------------------------------------------------------

def test_hex_of_the_wrong_size_is_refused_at_its_line_and_column():
    with pytest.raises(InputError) as error:
        import_bytes(_constant_module('dense<"0x803F0040">', "tensor<3xbf16>").encode(),
                     "hex.mlir")
    assert re.match(r"hex\.mlir:3:\d+: not a valid MLIR module: .*hex data size is invalid",
                    str(error.value)), str(error.value)


def test_a_list_of_the_wrong_shape_is_refused_at_its_line_and_column():
    with pytest.raises(InputError) as error:
        import_bytes(_constant_module("dense<[[1.0, 2.0], [3.0]]>", "tensor<2x2xbf16>").encode(),
                     "list.mlir")
    assert re.match(r"list\.mlir:3:\d+: not a valid MLIR module: ", str(error.value))


def test_a_constant_of_an_element_type_the_ir_lacks_is_refused_at_its_line():
    with pytest.raises(UnsupportedError) as error:
        import_bytes(_constant_module("dense<[1, -1]>", "tensor<2xi2>").encode(), "i2.mlir")
    assert str(error.value) == "i2.mlir:3:10: element type i2 is not supported"


def test_a_sparse_constant_is_refused_at_its_line():
    """MLIR's other elements attribute: nothing JAX writes, and not read."""
    with pytest.raises(UnsupportedError) as error:
        import_bytes(_constant_module("sparse<[[0]], [1.5]>", "tensor<3xf32>").encode(),
                     "sparse.mlir")
    assert str(error.value).startswith("sparse.mlir:3:10: a constant sparse<")
