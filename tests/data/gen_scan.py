"""Generate the selective scan test inputs (issue 35) from JAX: a Mamba-style selective scan
written with `jax.lax.associative_scan`, forward and gradient, as StableHLO text.

Run with the app's own virtualenv, which pins the JAX of tests/data/requirements-gen.txt:

    .venv/bin/python tests/data/gen_scan.py

It writes tests/data/scan/NAME.mlir, `jax.jit(f).lower(*args).as_text()` as
tests/data/gen_stablehlo.py writes its modules, for

- `selective_scan`: y = C h + D x, where h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t over
  the sequence, the recurrence solved by `associative_scan` with the pair combine
  (a1, b1), (a2, b2) -> (a1 a2, a2 b1 + b2), as Mamba's reference JAX implementations do;
- `selective_scan_grad`: `jax.grad` of sum(y^2) with respect to all six inputs.

Shapes are Mamba's at a small size: batch 2, length 256, d_inner 64, d_state 16 (x and delta
[2, 256, 64], A [64, 16], B and C [2, 256, 16], D [64]). associative_scan's up-sweep takes even
and odd elements (strided slices), its down-sweep interleaves them again (interior pads and a
concatenate), log2(256) = 8 levels deep: fused into one kernel, the elemental emitter would
compute the values of each level again for every index and branch that reads them
(compiler/codegen/emission.py). The files live apart from tests/data/stablehlo, whose small
modules seed the fuzz tests (a fuzz case explores and generates code for each mutation).
No inputs are stored: the tests check each kernel on made-up inputs
(compiler/stages/codegen.py, `emulate`).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

OUT = Path(__file__).resolve().parent / "scan"
F32 = np.float32
BATCH, LENGTH, D_INNER, D_STATE = 2, 256, 64, 16


def selective_scan(x, delta, a, b, c, d):
    """Mamba's selective scan: x, delta [batch, length, d_inner]; a [d_inner, d_state]; b, c
    [batch, length, d_state]; d [d_inner] -> y [batch, length, d_inner]."""
    decay = jnp.exp(delta[..., None] * a)                       # [b, l, d_inner, d_state]
    drive = delta[..., None] * b[:, :, None, :] * x[..., None]

    def combine(left, right):
        a1, b1 = left
        a2, b2 = right
        return a1 * a2, a2 * b1 + b2

    _, h = jax.lax.associative_scan(combine, (decay, drive), axis=1)
    return jnp.einsum("bldn,bln->bld", h, c) + d * x


def selective_scan_grad(x, delta, a, b, c, d):
    """The gradient of sum(y^2) with respect to every input."""
    def loss(*inputs):
        return jnp.sum(selective_scan(*inputs) ** 2)

    return jax.grad(loss, argnums=(0, 1, 2, 3, 4, 5))(x, delta, a, b, c, d)


def arguments():
    """Inputs of Mamba's ranges: a positive step (softplus), a negative real A (S4D)."""
    rng = np.random.default_rng(35)
    x = rng.standard_normal((BATCH, LENGTH, D_INNER)).astype(F32)
    delta = (0.1 * np.log1p(np.exp(rng.standard_normal((BATCH, LENGTH, D_INNER))))).astype(F32)
    a = (-np.exp(rng.standard_normal((D_INNER, D_STATE)))).astype(F32)
    b = rng.standard_normal((BATCH, LENGTH, D_STATE)).astype(F32)
    c = rng.standard_normal((BATCH, LENGTH, D_STATE)).astype(F32)
    d = np.ones(D_INNER, F32)
    return [x, delta, a, b, c, d]


MODULES = {"selective_scan": selective_scan, "selective_scan_grad": selective_scan_grad}


def main() -> None:
    # As gen_stablehlo.py: before JAX starts its backend, which reads them once.
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_allow_excess_precision=false").strip()
    jax.config.update("jax_platforms", "cpu")
    OUT.mkdir(exist_ok=True)
    for name, function in MODULES.items():
        (OUT / f"{name}.mlir").write_text(jax.jit(function).lower(*arguments()).as_text())
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
