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
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")

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


# name -> (function, example arguments)
MODULES = {
    "softmax_of_matmul": (softmax_of_matmul, [np.ones((4, 8), F32), np.ones((8, 16), F32)]),
    "layer_norm": (layer_norm, [np.ones((4, 32), F32), np.ones(32, F32), np.ones(32, F32)]),
    "scan_argmax_and_cond": (scan_argmax_and_cond, [np.ones((2, 4), F32), np.ones((4, 4), F32)]),
    "nested_jit_and_slices": (nested_jit_and_slices, [np.ones((4, 3), F32), np.int32(1)]),
}
# Also written as bytecode.
BYTECODE = "softmax_of_matmul"


def main() -> None:
    from jax._src.interpreters import mlir

    OUT.mkdir(exist_ok=True)
    for name, (function, arguments) in MODULES.items():
        lowered = jax.jit(function).lower(*arguments)
        (OUT / f"{name}.mlir").write_text(lowered.as_text())
        if name == BYTECODE:
            bytecode = mlir.module_to_bytecode(lowered.compiler_ir("stablehlo"))
            (OUT / f"{name}.mlirbc").write_bytes(bytecode)
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
