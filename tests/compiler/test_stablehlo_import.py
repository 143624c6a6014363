"""StableHLO import: JAX's default text form of a jitted function becomes the same graph as its
HLO form, and computes what JAX computes.

Each function below is lowered by JAX (on the CPU, here and now) to both of its text forms:
`lowered.as_text()` (StableHLO MLIR, what JAX users get by default) and
`lowered.as_text(dialect="hlo")` (the HLO XLA turns it into). Both are imported; the two graphs
must hold the same computation (the same ops, but for shape plumbing), and the reference
interpreter must reproduce JAX's own outputs from the StableHLO graph.
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import InputError, LimitError, UnsupportedError
from compiler.importers import detect_format, import_bytes
from compiler.ir.interpreter import evaluate
from compiler.limits import Limits

jax = pytest.importorskip("jax")
jnp = jax.numpy

# Ops that only move or relabel data, which the two forms may spell differently (StableHLO's
# broadcast_in_dim of a size-1 dimension is HLO's reshape then broadcast).
PLUMBING = {"reshape", "bitcast", "copy", "tuple", "get-tuple-element", "parameter",
            "constant", "broadcast"}
# Relative tolerance per output dtype: XLA:CPU's own approximations of exp, log, tanh, erf.
TOLERANCE = {np.dtype("float32"): 2e-5, np.dtype("int32"): 0, np.dtype("bool"): 0}


def softmax_of_matmul(x, w):
    return jax.nn.softmax(x @ w, axis=-1)


def layer_norm(x, gain, bias):
    mean = jnp.mean(x, -1, keepdims=True)
    variance = jnp.var(x, -1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(variance + 1e-5) * gain + bias


def mlp_with_exact_gelu(x, w1, w2):
    return jax.nn.gelu(x @ w1, approximate=False) @ w2


def attention(q, k, v):
    scores = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    causal = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
    scores = jnp.where(causal, scores, -1e9)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, -1), v)


def selects_slices_and_iota(x):
    leaky = jnp.where(x > 0, x, 0.1 * x)
    both = jnp.concatenate([leaky, jnp.tanh(leaky)], axis=0)[4:8]  # rows of both parts
    return both.T.reshape(-1) + jnp.arange(both.size, dtype=jnp.float32), jnp.max(x)


def pads_flips_and_dynamic_slices(x, i):
    padded = jnp.flip(jnp.pad(x, ((1, 2), (0, 1))), 0)
    window = jax.lax.dynamic_slice(padded, (i, 0), (2, 3))
    return jax.lax.dynamic_update_slice(x, window * 2, (1, 0)), jnp.sum(window)


@jax.jit
def _inner(x):
    return jnp.exp(x) - 1.0


def nested_jit(x):
    return _inner(x) * _inner(x + 1.0)


def scan_argmax_and_cond(x, w):
    """A while loop (lax.scan, whose body calls a function), a variadic reduce (argmax) and a
    case whose branches read values from outside them (lax.cond)."""
    def body(carry, _):
        return jnp.tanh(carry @ w), jnp.sum(carry)

    carry, sums = jax.lax.scan(body, x, None, length=3)
    scaled = jax.lax.cond(jnp.sum(carry) > 0, lambda a: a * 2, lambda a: a - 1, carry)
    return carry, sums, jnp.argmax(carry, -1), scaled


def small_cnn(x, kernel, kernel2):
    """Convolutions (SAME, then strided with explicit padding), ReLU, max pooling
    (reduce_window) and a global mean, in NHWC."""
    numbers = ("NHWC", "HWIO", "NHWC")
    y = jax.nn.relu(jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME",
                                                 dimension_numbers=numbers))
    y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    z = jax.lax.conv_general_dilated(y, kernel2, (2, 2), ((1, 1), (1, 1)),
                                     dimension_numbers=numbers)
    return jnp.mean(z, axis=(1, 2))


def small_cnn_gradients(x, kernel, kernel2):
    """The CNN's weight gradients: transposed convolutions and the max pool's
    select_and_scatter."""
    return jax.grad(lambda *a: jnp.sum(small_cnn(*a)), argnums=(1, 2))(x, kernel, kernel2)


def sorts_top_k_and_remat(x):
    """sort, top_k (chlo), argsort (a sort of two arrays) and a rematerialised function's
    gradient (its optimization_barrier)."""
    values, indices = jax.lax.top_k(x, 3)
    remat = jax.grad(lambda a: jnp.sum(jax.checkpoint(lambda b: jnp.sin(b) * 2)(a)))(x)
    return jnp.sort(x, axis=-1), values, indices, jnp.argsort(x[0]), remat


def bodies_that_are_no_reducer_and_fft(x, rows):
    """Scatters and a reduction whose body is no reducer of the IR's (`.at[].set` returns the
    update, as an fp8 recipe's amax history and a cache update make it; `.at[].apply` a
    function of the operand; a maximum written as a select), and FFTs (rfft, ifft)."""
    history = jnp.roll(x[0], 1).at[0].set(jnp.max(jnp.abs(x)))
    squared = jnp.asarray(x).at[rows].apply(lambda v: v * v)
    largest = jax.lax.reduce(x, -np.inf, lambda a, b: jnp.where(a > b, a, b), (1,))
    spectrum = jnp.abs(jnp.fft.ifft(jnp.fft.rfft(x) * jnp.fft.rfft(x[::-1])))
    return history, squared, largest, spectrum


def inverse_and_hyperbolic_trig(x):
    bounded = jnp.tanh(x) * 0.9
    return (jnp.arcsin(bounded), jnp.arccos(bounded), jnp.arctan(x), jnp.arctanh(bounded),
            jnp.sinh(x), jnp.cosh(x), jnp.arcsinh(x), jnp.arccosh(jnp.abs(x) + 1.0))


def normal_samples_and_erf_inv(x, seed):
    """jax.random.normal inside the jit (threefry bits, then inverse-CDF sampling through
    chlo.erf_inv) and erfinv of f32 and of bf16 (which XLA computes in f32). The argument
    stays in [-0.9, 0.9]: nearer +-1 erfinv's slope turns a 1-ulp difference between XLA's tanh
    and NumPy's into more than the tolerance."""
    noise = jax.random.normal(jax.random.PRNGKey(seed), x.shape)
    inside = 0.9 * jnp.tanh(x)
    as_bf16 = jax.scipy.special.erfinv(inside.astype(jnp.bfloat16)).astype(jnp.float32)
    return x + noise, jax.scipy.special.erfinv(inside), as_bf16


def complex_rotary(x, angles):
    """Rotary embedding written with complex numbers, as some JAX Llama ports write it: pairs
    of features as complex numbers (stablehlo.complex) times exp(i theta), back through
    real and imag."""
    rotated = jax.lax.complex(x[..., 0], x[..., 1]) * jnp.exp(1j * angles)
    return jnp.stack([rotated.real, rotated.imag], -1)


def integer_math(a, b):
    return (a * b + 3) // 2, (a & b) | (a >> 1), jnp.minimum(a, b)


FUNCTIONS = {
    "softmax_of_matmul": (softmax_of_matmul, [(4, 8), (8, 16)]),
    "layer_norm": (layer_norm, [(4, 32), (32,), (32,)]),
    "mlp_with_exact_gelu": (mlp_with_exact_gelu, [(4, 16), (16, 64), (64, 8)]),
    "attention": (attention, [(2, 8, 16), (2, 8, 16), (2, 8, 16)]),
    "selects_slices_and_iota": (selects_slices_and_iota, [(6, 3)]),
    "pads_flips_and_dynamic_slices": (pads_flips_and_dynamic_slices, [(4, 3), "i32"]),
    "nested_jit": (nested_jit, [(5, 7)]),
    "complex_rotary": (complex_rotary, [(4, 8, 2), (4, 8)]),
    "normal_samples_and_erf_inv": (normal_samples_and_erf_inv, [(4, 16), "i32"]),
    "integer_math": (integer_math, ["i32[6]", "i32[6]"]),
    "scan_argmax_and_cond": (scan_argmax_and_cond, [(2, 4), (4, 4)]),
    "sorts_top_k_and_remat": (sorts_top_k_and_remat, [(3, 7)]),
    "small_cnn": (small_cnn, [(2, 8, 8, 3), (3, 3, 3, 4), (3, 3, 4, 5)]),
    "small_cnn_gradients": (small_cnn_gradients, [(2, 8, 8, 3), (3, 3, 3, 4), (3, 3, 4, 5)]),
    "bodies_that_are_no_reducer_and_fft": (bodies_that_are_no_reducer_and_fft,
                                           [(4, 16), "i32[2]"]),
    "inverse_and_hyperbolic_trig": (inverse_and_hyperbolic_trig, [(3, 5)]),
}

# Functions with a CHLO op that XLA's conversion to HLO expands into its own approximation.
XLA_EXPANDS = {"mlp_with_exact_gelu": "chlo.erfc (exact GELU), a polynomial in the HLO form",
               "inverse_and_hyperbolic_trig": "chlo.asin, chlo.cosh, ...: formulas of atan2, "
                                              "exp, log and sqrt in the HLO form",
               "complex_rotary": "exp of a complex number, real exp, cos and sin in the HLO form"}


def _arguments(specs) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    arguments = []
    for spec in specs:
        if spec == "i32":
            arguments.append(np.int32(1))
        elif spec == "i32[2]":   # rows of a [4, ...] array, one of them twice
            arguments.append(np.array([2, 2], np.int32))
        elif isinstance(spec, str):
            arguments.append(rng.integers(-50, 50, size=6).astype(np.int32))
        else:
            arguments.append(rng.standard_normal(spec).astype(np.float32))
    return arguments


def _both_forms(name: str):
    function, specs = FUNCTIONS[name]
    arguments = _arguments(specs)
    lowered = jax.jit(function).lower(*arguments)
    return function, arguments, lowered.as_text(), lowered.as_text(dialect="hlo")


def _compute_ops(graph) -> collections.Counter:
    return collections.Counter(node.op for node in graph.nodes.values()
                               if node.op not in PLUMBING)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_stablehlo_and_hlo_of_one_function_are_one_graph_computing_what_jax_computes(name):
    function, arguments, stablehlo, hlo = _both_forms(name)
    from_mlir = import_bytes(stablehlo.encode(), f"{name}.mlir")[0]
    from_hlo = import_bytes(hlo.encode(), f"{name}.hlo")[0]
    # The same computation (`_assert_same_computation`). A CHLO op is one node here and XLA's
    # expansion of it there.
    expanded = name in XLA_EXPANDS
    if not expanded:
        _assert_same_computation(_compute_ops(from_mlir), _compute_ops(from_hlo))
    assert len(from_mlir.parameters) == len(from_hlo.parameters) == len(arguments)

    expected = function(*arguments)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    actual = evaluate(from_mlir, arguments)
    actual = list(actual) if isinstance(actual, (list, tuple)) else [actual]
    through_hlo = evaluate(from_hlo, arguments)
    through_hlo = list(through_hlo) if isinstance(through_hlo, (list, tuple)) else [through_hlo]
    assert len(actual) == len(expected)
    for ours, theirs, other in zip(actual, expected, through_hlo):
        theirs = np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        scale = max(1.0, float(np.max(np.abs(theirs)))) if theirs.size else 1.0
        tolerance = TOLERANCE[theirs.dtype] * scale
        assert float(np.max(np.abs(ours - theirs), initial=0)) <= tolerance
        if expanded:  # XLA's polynomial for the CHLO op, against the interpreter's own
            assert float(np.max(np.abs(other - theirs), initial=0)) <= tolerance
        else:
            np.testing.assert_array_equal(ours, other)  # the same graph: the same numbers


# What JAX's conversion to HLO folds: identities (x + 0, x / 1, x & ~0 of a PRNG seed, a
# double transpose, a no-op negation pair) and a pad and slice it moves into a convolution's
# window.
FOLDABLE = {"add", "subtract", "multiply", "divide", "negate", "transpose", "pad", "slice",
            "and"}


def _foldings(ops: collections.Counter) -> int:
    """How many more ops the StableHLO form may hold than the HLO form of `ops` (all of
    FOLDABLE kinds): three, or 3 %."""
    return max(3, 3 * sum(ops.values()) // 100)


def _assert_same_computation(ours: collections.Counter, theirs: collections.Counter) -> None:
    """Every op of the HLO form is in the StableHLO one, which may hold a few more that XLA
    folds away (`_foldings`)."""
    assert not theirs - ours, f"missing from the StableHLO graph: {theirs - ours}"
    extra = ours - theirs
    assert set(extra) <= FOLDABLE, f"not what XLA folds: {extra}"
    assert sum(extra.values()) <= _foldings(theirs), f"more than XLA's foldings: {extra}"


def _training_step():
    """A 2-layer decoder's training step as JAX users write one: an embedding gather, RMSNorm,
    causal attention and the MLP in bf16, cross-entropy through take_along_axis (a batched
    gather), the gradients (scatters back into the embedding) and an SGD update."""
    def rms_norm(x, gain):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * gain

    def loss(params, tokens, targets):
        x = params["embedding"][tokens]
        for layer in params["layers"]:
            h = rms_norm(x, layer["gain"]).astype(jnp.bfloat16)
            q, k, v = (h @ layer[w].astype(jnp.bfloat16) for w in ("wq", "wk", "wv"))
            scores = jnp.einsum("bqd,bkd->bqk", q, k).astype(jnp.float32) / 8.0
            length = tokens.shape[1]
            scores = jnp.where(jnp.tril(jnp.ones((length, length), bool)), scores, -1e9)
            mixed = jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, -1).astype(jnp.bfloat16),
                               v)
            x = x + mixed.astype(jnp.float32)
            x = x + jax.nn.gelu(rms_norm(x, layer["gain"]) @ layer["w1"]) @ layer["w2"]
        logits = x @ params["embedding"].T
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], -1)
        return -jnp.mean(picked)

    def step(params, tokens, targets):
        value, grads = jax.value_and_grad(loss)(params, tokens, targets)
        return value, jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)

    rng = np.random.default_rng(3)
    d, vocab = 32, 64

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    params = {"embedding": weight(vocab, d),
              "layers": [{"wq": weight(d, d), "wk": weight(d, d), "wv": weight(d, d),
                          "w1": weight(d, 4 * d), "w2": weight(4 * d, d),
                          "gain": np.ones(d, np.float32)} for _ in range(2)]}
    tokens = rng.integers(0, vocab, (2, 8)).astype(np.int32)
    return step, (params, tokens, np.roll(tokens, -1, axis=1))


def test_a_bf16_training_step_imports_as_its_hlo_does_and_computes_what_jax_computes():
    step, arguments = _training_step()
    lowered = jax.jit(step).lower(*arguments)
    from_mlir = import_bytes(lowered.as_text().encode(), "step.mlir")[0]
    from_hlo = import_bytes(lowered.as_text(dialect="hlo").encode(), "step.hlo")[0]
    ours = _compute_ops(from_mlir)
    assert {"gather", "scatter", "dot", "reduce", "convert"} <= set(ours)
    _assert_same_computation(ours, _compute_ops(from_hlo))

    flat = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(arguments)]
    expected = jax.tree_util.tree_leaves(jax.jit(step)(*arguments))
    actual = evaluate(from_mlir, flat)
    assert len(actual) == len(expected)
    for ours_out, theirs_out in zip(actual, expected):
        theirs_out = np.asarray(theirs_out)
        # bf16 roundings inside: a one-ulp f32 difference before one flips it (2^-8).
        scale = max(1.0, float(np.max(np.abs(theirs_out))))
        assert float(np.max(np.abs(ours_out - theirs_out))) <= 1e-4 * scale


def test_every_node_points_at_its_line_of_the_upload():
    _, _, stablehlo, _ = _both_forms("layer_norm")
    graph = import_bytes(stablehlo.encode(), "layer_norm.mlir")[0]
    lines = stablehlo.splitlines()
    rsqrt = next(node for node in graph.nodes.values() if node.op == "rsqrt")
    assert rsqrt.loc.file == "layer_norm.mlir"
    assert "stablehlo.rsqrt" in lines[rsqrt.loc.line - 1]
    assert lines[rsqrt.loc.line - 1][rsqrt.loc.col - 1:].startswith("stablehlo.rsqrt")


def test_jax_text_is_recognised_as_stablehlo_whatever_the_file_is_called():
    _, _, stablehlo, hlo = _both_forms("softmax_of_matmul")
    assert detect_format("f.mlir", stablehlo.encode()) == "stablehlo"
    assert detect_format("f.txt", stablehlo.encode()) == "stablehlo"
    assert detect_format("upload", stablehlo.encode()) == "stablehlo"
    assert detect_format("f.txt", hlo.encode()) == "hlo"
    assert detect_format("upload", hlo.encode()) == "hlo"


def test_a_syntax_error_is_reported_at_its_line_and_column():
    _, _, stablehlo, _ = _both_forms("softmax_of_matmul")
    lines = stablehlo.splitlines()
    broken = next(k for k, line in enumerate(lines) if "stablehlo.exponential" in line)
    lines[broken] = lines[broken].replace("stablehlo.exponential", "stablehlo.exponentia")
    with pytest.raises(InputError) as error:
        import_bytes("\n".join(lines).encode(), "broken.mlir")
    assert re.search(rf"broken\.mlir:{broken + 1}:\d+", str(error.value)), str(error.value)
    assert "exponentia" in str(error.value)


def test_an_op_the_importer_does_not_know_is_named_with_its_line_and_the_way_around_it():
    text = jax.jit(jax.lax.lgamma).lower(np.ones(8, np.float32)).as_text()
    line = next(k for k, text_line in enumerate(text.splitlines(), 1)
                if "chlo.lgamma" in text_line)
    with pytest.raises(UnsupportedError) as error:
        import_bytes(text.encode(), "lgamma.mlir")
    assert str(error.value).startswith(f"lgamma.mlir:{line}:")
    assert "chlo.lgamma" in str(error.value)
    assert "as_hlo_text()" in str(error.value)   # the HLO form, where XLA expanded it, imports
    hlo = jax.jit(jax.lax.lgamma).lower(np.ones(8, np.float32)).as_text(dialect="hlo")
    import_bytes(hlo.encode(), "lgamma.hlo")


def test_random_bits_import_as_in_the_hlo_form_and_have_no_reference_value():
    def dropout(key, x):
        keep = jax.random.bernoulli(jax.random.wrap_key_data(key, impl="rbg"), 0.8, x.shape)
        return jnp.where(keep, x / 0.8, 0.0)

    arguments = [np.array([0, 42, 1, 7], np.uint32), np.ones((4, 8), np.float32)]
    lowered = jax.jit(dropout).lower(*arguments)
    from_mlir = import_bytes(lowered.as_text().encode(), "dropout.mlir")[0]
    from_hlo = import_bytes(lowered.as_text(dialect="hlo").encode(), "dropout.hlo")[0]
    generators = [[([(part.dtype, part.dims) for part in node.shape.elements], node.extra)
                   for node in graph.nodes.values() if node.op == "rng-bit-generator"]
                  for graph in (from_mlir, from_hlo)]
    assert generators[0] == generators[1] and len(generators[0]) == 1
    with pytest.raises(UnsupportedError, match="random numbers have no reference value"):
        evaluate(from_mlir, arguments)


def test_erf_inv_is_infinite_at_plus_and_minus_one_as_in_jax():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)
    text = jax.jit(jax.scipy.special.erfinv).lower(x).as_text()
    graph = import_bytes(text.encode(), "erfinv.mlir")[0]
    np.testing.assert_allclose(evaluate(graph, [x])[0], jax.scipy.special.erfinv(x),
                               rtol=2e-6)


def test_erf_inv_of_f64_is_refused_at_its_line():
    text = """func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = chlo.erf_inv %x : tensor<4xf64> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}"""
    with pytest.raises(UnsupportedError) as error:
        import_bytes(text.encode(), "erfinv64.mlir")
    assert str(error.value).startswith("erfinv64.mlir:2:")
    assert "chlo.erf_inv of f64" in str(error.value)


def test_a_library_call_is_a_custom_call_as_in_the_hlo_form():
    # A Cholesky factorisation: a LAPACK call on the CPU.
    lowered = jax.jit(jnp.linalg.cholesky).lower(np.eye(3, dtype=np.float32))
    from_mlir = import_bytes(lowered.as_text().encode(), "cholesky.mlir")[0]
    from_hlo = import_bytes(lowered.as_text(dialect="hlo").encode(), "cholesky.hlo")[0]
    targets = [sorted(node.attrs["custom_call_target"] for node in graph.nodes.values()
                      if node.op == "custom-call") for graph in (from_mlir, from_hlo)]
    assert targets[0] == targets[1] and targets[0][0].startswith("lapack_")
    with pytest.raises(UnsupportedError, match="cannot evaluate custom-call target"):
        evaluate(from_mlir, [np.eye(3, dtype=np.float32)])


def test_sharding_annotations_pass_their_value():
    """A program sharded over a mesh (Shardy's `sdy.sharding_constraint`) imports as the
    single-device computation it annotates."""
    text = """module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<4x4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<4x4xf32>
    %2 = stablehlo.custom_call @Sharding(%1) {mhlo.sharding = "{replicated}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
}
"""
    graph = import_bytes(text.encode(), "sharded.mlir")[0]
    assert [node.op for node in graph.nodes.values()] == ["parameter", "tanh"]
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
    result = evaluate(graph, [x])
    result = result[0] if isinstance(result, (list, tuple)) else result
    np.testing.assert_allclose(result, np.tanh(x), rtol=2e-6)


def test_a_module_without_an_entry_function_says_so():
    text = ("module @m {\n  func.func private @f(%a: tensor<f32>) -> tensor<f32> {\n"
            "    return %a : tensor<f32>\n  }\n  func.func private @g(%a: tensor<f32>) -> "
            "tensor<f32> {\n    return %a : tensor<f32>\n  }\n}\n")
    with pytest.raises(InputError, match="no function 'main'"):
        import_bytes(text.encode(), "m.mlir")


def test_the_cli_inspects_and_explores_jax_default_text(tmp_path):
    _, _, stablehlo, _ = _both_forms("layer_norm")
    path = tmp_path / "layer_norm.mlir"
    path.write_text(stablehlo)
    inspected = subprocess.run([sys.executable, "-m", "compiler", "inspect", str(path)],
                               capture_output=True, text=True)
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stdout.startswith("graph jit_layer_norm  (layer_norm.mlir)")
    explored = subprocess.run([sys.executable, "-m", "compiler", "explore", str(path),
                               "--json"], capture_output=True, text=True)
    assert explored.returncode == 0, explored.stderr
    plans = json.loads(explored.stdout)["strategies"]
    assert plans["cost"]["total"]["proj_us"] <= plans["unfused"]["total"]["proj_us"]


def test_bytecode_imports_as_its_text_does():
    from jax._src.interpreters import mlir

    function, arguments = FUNCTIONS["softmax_of_matmul"][0], _arguments(
        FUNCTIONS["softmax_of_matmul"][1])
    lowered = jax.jit(function).lower(*arguments)
    bytecode = mlir.module_to_bytecode(lowered.compiler_ir("stablehlo"))
    assert detect_format("f.mlirbc", bytecode) == detect_format("upload", bytecode) == "stablehlo"
    from_bytecode = import_bytes(bytecode, "f.mlirbc")[0]
    from_text = import_bytes(lowered.as_text().encode(), "f.mlir")[0]
    assert _compute_ops(from_bytecode) == _compute_ops(from_text)
    np.testing.assert_array_equal(evaluate(from_bytecode, arguments),
                                  evaluate(from_text, arguments))
    # Its ops' locations are Python lines, not the upload's: the nodes name only the upload.
    assert all(node.loc is None or not node.loc.line for node in from_bytecode.nodes.values())


# -- bytecode that breaks MLIR's reader (found by the fuzz suite) ---------------------------------

BYTECODE = Path(__file__).parents[1] / "data" / "stablehlo" / "softmax_of_matmul.mlirbc"


def _with_byte(offset: int, value: int) -> bytes:
    data = bytearray(BYTECODE.read_bytes())
    data[offset] = value
    return bytes(data)


def test_the_bytecode_file_imports():
    assert len(import_bytes(BYTECODE.read_bytes(), "f.mlirbc")[0]) == 19


@pytest.mark.parametrize("offset, value", [(18, 0x02), (877, 0xFF)])
def test_bytecode_that_makes_mlirs_reader_abort_is_an_input_error(offset, value):
    """One changed byte made MLIR's reader abort the whole process (a C++ exception from the
    Python binding, which cannot convert an error message of invalid UTF-8); it reads
    bytecode in a child process now, and this process lives on to say so."""
    with pytest.raises(InputError) as caught:
        import_bytes(_with_byte(offset, value), "f.mlirbc")
    assert str(caught.value).startswith("f.mlirbc: not valid MLIR bytecode: MLIR's bytecode "
                                        "reader failed on it")


def test_bytecode_that_makes_mlirs_reader_loop_is_stopped_at_the_time_limit():
    """One changed byte makes a location refer to itself, and MLIR's reader loops for ever."""
    with pytest.raises(LimitError) as caught:
        import_bytes(_with_byte(296, 0x55), "f.mlirbc", Limits(max_bytecode_seconds=3))
    assert str(caught.value).startswith(
        "f.mlirbc: MLIR's bytecode reader did not finish in 3 s "
        "(FUSION_EXPLORER_MAX_BYTECODE_SECONDS)")


def test_names_of_bytes_that_are_not_utf8_import():
    """MLIR allows any bytes in a quoted name; reading one through the binding raised
    RuntimeError (found by fuzzing the bytecode, which prints such names as these)."""
    text = r"""module @"jit_\FF" {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @"inner\FF"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @"target\FF"(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @"inner\FF"(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.negate %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
    graph = import_bytes(text.encode(), "names.mlir")[0]
    assert graph.name == "jit_\ufffd"
    (call,) = [node for node in graph.nodes.values() if node.op == "custom-call"]
    assert call.attrs["custom_call_target"] == "target\ufffd"


def test_a_use_of_a_huge_result_number_is_refused_before_mlir_allocates_for_it():
    """`%0#2147483647` made MLIR's parser allocate room for 2^31 results (std::bad_alloc,
    a MemoryError, under the fuzz suite's 8 GiB cap; the machine's memory without one)."""
    text = """module @m {
  func.func public @main(%a: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.negate %a : tensor<f32>
    return %0#2147483647 : tensor<f32>
  }
}
"""
    with pytest.raises(LimitError) as caught:
        import_bytes(text.encode(), "results.mlir")
    assert str(caught.value) == (
        "results.mlir:4:12: %0#2147483647 reads result 2147483647 of an op, more values than "
        "the limit of 1000000 nodes (FUSION_EXPLORER_MAX_NODES)")


def test_debug_locations_do_not_pass_for_lines_of_the_upload():
    function, specs = FUNCTIONS["layer_norm"]
    text = jax.jit(function).lower(*_arguments(specs)).as_text(debug_info=True)
    graph = import_bytes(text.encode(), "layer_norm.mlir")[0]
    rsqrt = next(node for node in graph.nodes.values() if node.op == "rsqrt")
    assert rsqrt.loc.file == "layer_norm.mlir" and not rsqrt.loc.line


def test_a_comparator_reading_a_value_from_outside_it_is_refused_at_its_line():
    """Only a while's and a case's regions get the values they capture handed in; a sort's
    comparator that reads one is named, at its line, not a KeyError."""
    text = """module @m {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
    %0 = "stablehlo.sort"(%a) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %1 = stablehlo.add %x, %b : tensor<f32>
      %2 = stablehlo.compare LT, %1, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
    with pytest.raises(UnsupportedError) as error:
        import_bytes(text.encode(), "sort.mlir")
    assert str(error.value).startswith("sort.mlir:5:")
    assert "stablehlo.add in the body of stablehlo.sort reads a value defined outside" \
        in str(error.value)
