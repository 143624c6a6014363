"""Generate real StableHLO test inputs from JAX: the fuzz suite's seed files for the StableHLO
importer (tests/compiler/fuzzing.py mutates them; test_stablehlo_import.py lowers its own
functions at test time and needs none of these).

Run with the generator virtualenv (see tests/data/requirements-gen.txt), or with the app's own
virtualenv, which pins the same JAX:

    .venv/bin/python tests/data/gen_stablehlo.py

For every module NAME this writes tests/data/stablehlo/NAME.mlir, the text JAX users get by
default, `jax.jit(f).lower(*args).as_text()`; one module is also written as MLIR bytecode
(NAME.mlirbc), the other form the importer reads. The modules are small on purpose (a few dozen
ops each): a fuzz case pays for parsing, exploring and generating code for each mutation.

One module is bigger: `llama_rope_step`, a Llama-style training step whose bf16 rotary tables
are constants MLIR prints in hex (issue 33). It is over the fuzz test's 32 KiB (only
benchmarks/fuzz.py mutates it), and comes with JAX's numbers for test_stablehlo_constants.py:
NAME.inputs.npz (arg0..argN, the leaves of the arguments in parameter order) and
NAME.outputs.npz (out0..outM, the leaves of `jax.jit(f)(*args)` on XLA:CPU, computed with
`--xla_allow_excess_precision=false` so bf16 values are rounded where the program says). That
test also lowers the step with the JAX it runs under, importing it from here: importing this
file sets nothing; `main` chooses the CPU and XLA's flags.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent / "stablehlo"
F32 = np.float32


def softmax_of_matmul(x, w):
    return jax.nn.softmax(x @ w, axis=-1)


def layer_norm(x, gain, bias):
    mean = jnp.mean(x, -1, keepdims=True)
    variance = jnp.var(x, -1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(variance + 1e-5) * gain + bias


def scan_argmax_and_cond(x, w):
    """Regions: a while loop (lax.scan), a variadic reduce (argmax), a case (lax.cond)."""
    def body(carry, _):
        return jnp.tanh(carry @ w), jnp.sum(carry)

    carry, sums = jax.lax.scan(body, x, None, length=3)
    scaled = jax.lax.cond(jnp.sum(carry) > 0, lambda a: a * 2, lambda a: a - 1, carry)
    return carry, sums, jnp.argmax(carry, -1), scaled


@jax.jit
def _inner(x):
    return jnp.exp(x) - 1.0


def nested_jit_and_slices(x, i):
    """func.call (a nested jit), pad, flip, dynamic slices and iota."""
    padded = jnp.flip(jnp.pad(_inner(x), ((1, 2), (0, 1))), 0)
    window = jax.lax.dynamic_slice(padded, (i, 0), (2, 3))
    return jax.lax.dynamic_update_slice(x, window * 2, (1, 0)) + jnp.arange(3, dtype=F32)


def rope_tables(length: int, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Llama's rotary-embedding cos and sin tables, [length, head_dim / 2] in bf16, made in
    NumPy: JAX bakes them into the module as constants."""
    inverse_frequencies = 1.0 / 10000 ** (np.arange(0, head_dim, 2) / head_dim)
    angles = np.outer(np.arange(length), inverse_frequencies)
    return np.cos(angles).astype(ml_dtypes.bfloat16), np.sin(angles).astype(ml_dtypes.bfloat16)


def llama_loss(params, tokens, targets):
    """A one-layer Llama-style decoder's mean cross-entropy: embedding, RMSNorm, two-head
    causal attention with rotary embeddings, the SwiGLU MLP; f32 weights, bf16 matmuls."""
    batch, length = tokens.shape
    width = params["embedding"].shape[1]
    heads, head_dim = 2, width // 2
    cos, sin = rope_tables(length, head_dim)

    def rms_norm(x, gain):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * gain

    def matmul(x, w):
        return (x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)).astype(jnp.float32)

    def rotate(x):   # [batch, length, heads, head_dim] in bf16
        half = head_dim // 2
        first, second = x[..., :half], x[..., half:]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return jnp.concatenate([first * c - second * s, first * s + second * c], -1)

    x = params["embedding"][tokens]
    h = rms_norm(x, params["attention_gain"])
    q, k, v = (matmul(h, params[w]).astype(jnp.bfloat16).reshape(batch, length, heads, head_dim)
               for w in ("wq", "wk", "wv"))
    q, k = rotate(q), rotate(k)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / np.sqrt(head_dim)
    scores = jnp.where(np.tril(np.ones((length, length), bool)), scores, -1e9)
    mixed = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, -1).astype(jnp.bfloat16), v)
    x = x + matmul(mixed.reshape(batch, length, width).astype(jnp.float32), params["wo"])
    h = rms_norm(x, params["mlp_gain"])
    x = x + matmul(jax.nn.silu(matmul(h, params["w_gate"])) * matmul(h, params["w_up"]),
                   params["w_down"])
    logits = matmul(rms_norm(x, params["final_gain"]), params["embedding"].T)
    picked = jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], -1)
    return -jnp.mean(picked)


def llama_rope_step(params, tokens, targets):
    """The loss and the parameters after one SGD step."""
    loss, grads = jax.value_and_grad(llama_loss)(params, tokens, targets)
    return loss, jax.tree_util.tree_map(lambda p, g: p - 1e-2 * g, params, grads)


def llama_arguments(vocab: int = 64, width: int = 32, length: int = 16):
    rng = np.random.default_rng(33)

    def weight(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(F32)

    params = {"embedding": weight(vocab, width), "wq": weight(width, width),
              "wk": weight(width, width), "wv": weight(width, width), "wo": weight(width, width),
              "w_gate": weight(width, 3 * width), "w_up": weight(width, 3 * width),
              "w_down": weight(3 * width, width), "attention_gain": np.ones(width, F32),
              "mlp_gain": np.ones(width, F32), "final_gain": np.ones(width, F32)}
    tokens = rng.integers(0, vocab, (2, length)).astype(np.int32)
    return [params, tokens, np.roll(tokens, -1, axis=1)]


# name -> (function, example arguments)
MODULES = {
    "softmax_of_matmul": (softmax_of_matmul, [np.ones((4, 8), F32), np.ones((8, 16), F32)]),
    "layer_norm": (layer_norm, [np.ones((4, 32), F32), np.ones(32, F32), np.ones(32, F32)]),
    "scan_argmax_and_cond": (scan_argmax_and_cond, [np.ones((2, 4), F32), np.ones((4, 4), F32)]),
    "nested_jit_and_slices": (nested_jit_and_slices, [np.ones((4, 3), F32), np.int32(1)]),
    "llama_rope_step": (llama_rope_step, llama_arguments()),
}
# Also written as bytecode.
BYTECODE = "softmax_of_matmul"
# Also written with JAX's inputs and outputs.
WITH_NUMBERS = "llama_rope_step"


def main() -> None:
    from jax._src.interpreters import mlir

    # Before JAX starts its backend, which reads them once. XLA may keep bf16 intermediates in
    # f32 ("excess precision") unless told not to.
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_allow_excess_precision=false").strip()
    jax.config.update("jax_platforms", "cpu")
    OUT.mkdir(exist_ok=True)
    for name, (function, arguments) in MODULES.items():
        lowered = jax.jit(function).lower(*arguments)
        (OUT / f"{name}.mlir").write_text(lowered.as_text())
        if name == BYTECODE:
            bytecode = mlir.module_to_bytecode(lowered.compiler_ir("stablehlo"))
            (OUT / f"{name}.mlirbc").write_bytes(bytecode)
        if name == WITH_NUMBERS:
            leaves = jax.tree_util.tree_leaves(arguments)
            outputs = jax.tree_util.tree_leaves(jax.jit(function)(*arguments))
            np.savez(OUT / f"{name}.inputs.npz",
                     **{f"arg{k}": np.asarray(a) for k, a in enumerate(leaves)})
            np.savez(OUT / f"{name}.outputs.npz",
                     **{f"out{k}": np.asarray(o) for k, o in enumerate(outputs)})
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
