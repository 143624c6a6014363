"""Generate real XLA HLO test inputs (and two big benchmark modules) from JAX.

Run with the generator virtualenv (see tests/data/requirements-gen.txt):

    /tmp/genvenv/bin/python tests/data/gen_hlo.py            # tests + benchmarks
    /tmp/genvenv/bin/python tests/data/gen_hlo.py --no-bench # only tests/data/hlo/
    /tmp/genvenv/bin/python tests/data/gen_hlo.py --only NAME...  # only these modules' files

For every test module NAME this writes into tests/data/hlo/:
  NAME.hlo          the un-optimised HLO text of jax.jit(f).lower(*args)
  NAME.inputs.npz   arg0..argN, the jax.tree_util.tree_leaves(args), i.e. ENTRY parameter order
  NAME.outputs.npz  out0..outM, the leaves of jax.jit(f)(*args) computed by XLA:CPU
The benchmark modules (12- and 48-layer transformer training steps) only get their HLO text,
gzipped, in benchmarks/data/; so does tests/data/views/adam_48.hlo.gz, a wide graph for the
browser tests of the views.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import re
import zlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import os

# XLA may skip rounding steps the HLO spells out for bf16/f16 intermediates ("excess
# precision"). The reference outputs must be what the HLO as written computes, so it is off.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_allow_excess_precision=false").strip()

import jax  # noqa: E402  (after XLA_FLAGS: the backend reads it once, at start-up)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# Pin everything to the CPU backend: the reference outputs are XLA:CPU numbers, and the
# un-optimised HLO we print does not depend on the backend anyway.
jax.config.update("jax_platforms", "cpu")

HERE = Path(__file__).resolve().parent
HLO_DIR = HERE / "hlo"
BENCH_DIR = HERE.parent.parent / "benchmarks" / "data"
VIEWS_DIR = HERE / "views"

F32 = np.float32
BF16 = jnp.bfloat16

# name -> (builder(rng) returning (f, args), one-line description for the README).
MODULES: dict[str, tuple[callable, str]] = {}


def module(name, doc):
    """Register a test-module builder under `name` (the file stem in tests/data/hlo/)."""

    def register(builder):
        MODULES[name] = (builder, doc)
        return builder

    return register


def rng_for(name: str) -> np.random.Generator:
    # A per-module seed derived from the name keeps every module's inputs stable even when
    # modules are added, removed or reordered.
    return np.random.default_rng(zlib.crc32(name.encode()))


def normal(rng, shape, scale=1.0, dtype=F32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# --------------------------------------------------------------------------------------------
# HLO text helpers
# --------------------------------------------------------------------------------------------


def hlo_text(f, args) -> str:
    # print_large_constants=True: the default elides any constant with more than a handful of
    # elements as `constant({...})`, which no interpreter could run. For modules without large
    # constants the text is byte-identical to the default as_hlo_text().
    return jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text(print_large_constants=True)


def entry_block(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY "))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start + 1 : end]


def entry_param_count(text: str) -> int:
    return sum(1 for line in entry_block(text) if re.search(r"\sparameter\(\d+\)", line))


def split_top_level(s: str) -> list[str]:
    """Split 'a, (b, c), d[1,2]{1,0}' on commas that are not nested in (), [] or {}."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def entry_output_count(text: str) -> int:
    # The result half of entry_computation_layout={(params)->result}; JAX always returns
    # either one array or a flat tuple of arrays.
    header = text.splitlines()[0]
    layout = header.split("entry_computation_layout={", 1)[1]
    result = layout.split(")->", 1)[1].rsplit("}", 1)[0]
    if result.startswith("("):
        return len(split_top_level(result[1:-1]))
    return 1


def instruction_count(text: str) -> int:
    # Every instruction line in every computation looks like `[ROOT ]name = shape opcode(...)`.
    return sum(1 for line in text.splitlines() if re.match(r"^\s+(ROOT )?\S+ = ", line))


def opcodes(text: str) -> set[str]:
    ops = set()
    for line in text.splitlines():
        m = re.match(r"^\s+(?:ROOT )?\S+ = (.*)$", line)
        if not m:
            continue
        rest = m.group(1)
        # Skip the (possibly tuple-typed) shape, then the opcode is the word before '('.
        if rest.startswith("("):
            depth = 0
            for i, ch in enumerate(rest):
                depth += ch == "("
                depth -= ch == ")"
                if depth == 0:
                    rest = rest[i + 1 :]
                    break
        else:
            rest = rest.split(" ", 1)[1]
        ops.add(re.match(r"\s*([\w-]+)\(", rest).group(1))
    return ops


def to_numpy(x) -> np.ndarray:
    # np.asarray keeps bf16 as an ml_dtypes.bfloat16 array (saved in .npz as raw '|V2').
    return np.asarray(x)


def leaf_names(tree, top_names=None) -> list[str]:
    """Readable names for the flattened leaves, e.g. "params['layers'][0]['w1']"."""
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if top_names is not None and path:  # replace the positional index by the arg name
            names.append(top_names[path[0].idx] + jax.tree_util.keystr(path[1:]))
        else:
            names.append(jax.tree_util.keystr(path) or "result")
    return names


def emit_test_module(name: str, builder, write: bool = True) -> dict:
    """Lower and run the module; write its three files unless `write` is False (then only its
    README figures are computed)."""
    f, args = builder(rng_for(name))
    text = hlo_text(f, args)
    assert "{...}" not in text, f"{name}: elided constant in HLO text"

    leaves = [to_numpy(a) for a in jax.tree_util.tree_leaves(args)]
    n_params = entry_param_count(text)
    assert n_params == len(leaves), f"{name}: {n_params} ENTRY params vs {len(leaves)} args"

    outs = [to_numpy(o) for o in jax.tree_util.tree_leaves(jax.jit(f)(*args))]
    n_outs = entry_output_count(text)
    assert n_outs == len(outs), f"{name}: {n_outs} ENTRY outputs vs {len(outs)} result leaves"

    if write:
        (HLO_DIR / f"{name}.hlo").write_text(text)
        np.savez(HLO_DIR / f"{name}.inputs.npz", **{f"arg{i}": a for i, a in enumerate(leaves)})
        np.savez(HLO_DIR / f"{name}.outputs.npz", **{f"out{i}": o for i, o in enumerate(outs)})
    try:
        top_names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        top_names = [f"arg{i}" for i in range(len(args))]
    return {
        "params": n_params,
        "outputs": n_outs,
        "instructions": instruction_count(text),
        "opcodes": opcodes(text),
        "arg_names": leaf_names(tuple(args), top_names),
        "out_names": leaf_names(jax.eval_shape(f, *args)),
        "arg_types": [f"{a.dtype}{list(a.shape)}" for a in leaves],
        "out_types": [f"{o.dtype}{list(o.shape)}" for o in outs],
    }


# --------------------------------------------------------------------------------------------
# Shared building blocks
# --------------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps=1e-5):
    # Two-pass mean/variance in the input dtype, like flax.linen.LayerNorm with f32 inputs.
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * gamma + beta


def cross_entropy_loss(logits, labels):
    # Mean negative log-likelihood; take_along_axis lowers to a gather, its gradient to a
    # scatter-add.
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    return jnp.mean(nll)


# --------------------------------------------------------------------------------------------
# 1-4: normalisation and softmax
# --------------------------------------------------------------------------------------------


@module(
    "layer_norm_fwd", "LayerNorm forward over the last axis (x [4,8,32], gamma, beta; eps 1e-5)"
)
def build_layer_norm_fwd(rng):
    x = normal(rng, (4, 8, 32), 2.0) + F32(0.5)  # non-zero mean so centring matters
    gamma = (1.0 + normal(rng, (32,), 0.1)).astype(F32)
    beta = normal(rng, (32,), 0.1)
    return layer_norm, (x, gamma, beta)


@module("layer_norm_bwd", "LayerNorm backward: jax.vjp with cotangent dy -> (dx, dgamma, dbeta)")
def build_layer_norm_bwd(rng):
    # The backward pass as a framework runs it: a VJP with an incoming cotangent dy, giving
    # (dx, dgamma, dbeta). No gradient depends on beta's value, so beta is not a parameter
    # (jax.jit would prune the unused argument from the ENTRY computation anyway).
    def f(x, gamma, dy):
        beta = jnp.zeros_like(gamma)
        _, vjp = jax.vjp(layer_norm, x, gamma, beta)
        return vjp(dy)

    x = normal(rng, (4, 8, 32), 2.0) + F32(0.5)
    gamma = (1.0 + normal(rng, (32,), 0.1)).astype(F32)
    dy = normal(rng, (4, 8, 32), 0.1)
    return f, (x, gamma, dy)


@module("softmax", "jax.nn.softmax over the last axis of [4,4,8,8] scores (max-subtract form)")
def build_softmax(rng):
    # Attention-score shaped [batch, heads, q, k]; a wide range so max-subtraction matters.
    x = normal(rng, (4, 4, 8, 8), 4.0)
    return (lambda s: jax.nn.softmax(s, axis=-1)), (x,)


@module("rms_norm", "RMSNorm x * rsqrt(mean(x^2) + 1e-6) * weight")
def build_rms_norm(rng):
    def rms_norm(x, weight, eps=1e-6):
        return x * lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + eps) * weight

    x = normal(rng, (4, 8, 32), 1.5)
    weight = (1.0 + normal(rng, (32,), 0.1)).astype(F32)
    return rms_norm, (x, weight)


# --------------------------------------------------------------------------------------------
# 5: bias + GELU, both formulations
# --------------------------------------------------------------------------------------------


def _bias_gelu(approximate):
    def build(rng):
        x = normal(rng, (4, 8, 128), 2.0)
        b = normal(rng, (128,), 0.5)
        return (lambda x, b: jax.nn.gelu(x + b, approximate=approximate)), (x, b)

    return build


module("bias_gelu_tanh", "x + b then jax.nn.gelu(approximate=True) (tanh form)")(_bias_gelu(True))
module("bias_gelu_erf", "x + b then jax.nn.gelu(approximate=False) (erfc form, expanded by JAX)")(
    _bias_gelu(False)
)


# --------------------------------------------------------------------------------------------
# 6-8: optimizer, recurrent cell, loss
# --------------------------------------------------------------------------------------------


def adam_step(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step (Kingma & Ba, with bias correction) over any number of parameter tensors."""

    def adam(params, grads, m, v, step):
        t = step.astype(jnp.float32)
        bc1 = 1.0 - jnp.power(b1, t)  # step is a runtime scalar, so this is a real `power`
        bc2 = 1.0 - jnp.power(b2, t)
        new_p, new_m, new_v = [], [], []
        for p, g, mi, vi in zip(params, grads, m, v):
            mi = b1 * mi + (1.0 - b1) * g
            vi = b2 * vi + (1.0 - b2) * g * g
            new_p.append(p - lr * (mi / bc1) / (jnp.sqrt(vi / bc2) + eps))
            new_m.append(mi)
            new_v.append(vi)
        return tuple(new_p), tuple(new_m), tuple(new_v)

    return adam


def adam_args(rng, shapes):
    params = tuple(normal(rng, s, 0.1) for s in shapes)
    grads = tuple(normal(rng, s, 0.01) for s in shapes)
    m = tuple(normal(rng, s, 0.005) for s in shapes)
    v = tuple(np.abs(normal(rng, s, 1e-4)) for s in shapes)  # second moments are >= 0
    step = np.array(7, dtype=np.int32)
    return params, grads, m, v, step


@module("adam", "one Adam step over 3 tensors (p, g, m, v; int32 step scalar) -> new p, m, v")
def build_adam(rng):
    return adam_step(), adam_args(rng, [(32, 32), (32,), (4, 32)])


@module("lstm_cell", "LSTM cell (x, h, c, W, U, b) -> (h', c') with sigmoid/tanh gates")
def build_lstm_cell(rng):
    def lstm_cell(x, h, c, w, u, b):
        gates = x @ w + h @ u + b
        i, f, g, o = jnp.split(gates, 4, axis=-1)
        c_new = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
        return h_new, c_new

    batch, n_in, n_hid = 4, 16, 32
    x = normal(rng, (batch, n_in))
    h = np.tanh(normal(rng, (batch, n_hid))).astype(F32)
    c = normal(rng, (batch, n_hid))
    w = normal(rng, (n_in, 4 * n_hid), 1 / np.sqrt(n_in))
    u = normal(rng, (n_hid, 4 * n_hid), 1 / np.sqrt(n_hid))
    b = normal(rng, (4 * n_hid,), 0.1)
    return lstm_cell, (x, h, c, w, u, b)


def _cross_entropy_inputs(rng):
    logits = normal(rng, (8, 64), 3.0)
    labels = rng.integers(0, 64, size=(8,), dtype=np.int32)
    return logits, labels


@module(
    "cross_entropy",
    "mean cross-entropy of f32 logits [8,64] and int32 labels (log_softmax + take_along_axis)",
)
def build_cross_entropy(rng):
    return cross_entropy_loss, _cross_entropy_inputs(rng)


@module("cross_entropy_grad", "jax.grad of cross_entropy w.r.t. the logits (gather -> scatter-add)")
def build_cross_entropy_grad(rng):
    return jax.grad(cross_entropy_loss, argnums=0), _cross_entropy_inputs(rng)


# --------------------------------------------------------------------------------------------
# 9: attention block
# --------------------------------------------------------------------------------------------


def causal_mask(seq):
    # Built from iotas inside the graph (no baked-in constant array).
    return jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]


@module(
    "attention_block",
    "4-head causal self-attention + output projection + residual + post-LayerNorm",
)
def build_attention_block(rng):
    heads = 4

    def attention_block(x, wq, bq, wk, bk, wv, bv, wo, bo, gamma, beta):
        b, s, d = x.shape
        hd = d // heads
        q = (x @ wq + bq).reshape(b, s, heads, hd)
        k = (x @ wk + bk).reshape(b, s, heads, hd)
        v = (x @ wv + bv).reshape(b, s, heads, hd)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd).astype(F32)
        scores = jnp.where(causal_mask(s), scores, F32(-1e9))
        probs = jax.nn.softmax(scores, axis=-1)
        attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
        return layer_norm(x + attn @ wo + bo, gamma, beta)  # post-LN residual block

    d = 32
    x = normal(rng, (4, 8, d))
    args = [x]
    for _ in range(4):  # q, k, v, o projections
        args += [normal(rng, (d, d), 1 / np.sqrt(d)), normal(rng, (d,), 0.02)]
    args += [(1.0 + normal(rng, (d,), 0.1)).astype(F32), normal(rng, (d,), 0.1)]
    return attention_block, tuple(args)


# --------------------------------------------------------------------------------------------
# 10 (and the benchmarks): pre-LN transformer training step with bf16 activations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransformerConfig:
    layers: int
    batch: int
    seq: int
    hidden: int
    heads: int
    mlp: int
    vocab: int
    lr: float = 1e-2


def init_transformer_params(cfg: TransformerConfig, rng) -> dict:
    h, m = cfg.hidden, cfg.mlp

    def ln():
        return (1.0 + normal(rng, (h,), 0.1)).astype(F32), normal(rng, (h,), 0.02)

    layers = []
    for _ in range(cfg.layers):
        ln1_g, ln1_b = ln()
        ln2_g, ln2_b = ln()
        layers.append(
            {
                "ln1_g": ln1_g,
                "ln1_b": ln1_b,
                "wqkv": normal(rng, (h, 3 * h), 1 / np.sqrt(h)),
                "bqkv": normal(rng, (3 * h,), 0.02),
                "wo": normal(rng, (h, h), 1 / np.sqrt(h)),
                "bo": normal(rng, (h,), 0.02),
                "ln2_g": ln2_g,
                "ln2_b": ln2_b,
                "w1": normal(rng, (h, m), 1 / np.sqrt(h)),
                "b1": normal(rng, (m,), 0.02),
                "w2": normal(rng, (m, h), 1 / np.sqrt(m)),
                "b2": normal(rng, (h,), 0.02),
            }
        )
    lnf_g, lnf_b = ln()
    return {
        "embed": normal(rng, (cfg.vocab, h), 0.2),  # tied: logits std ~ 0.2 * sqrt(h)
        "pos": normal(rng, (cfg.seq, h), 0.1),
        "lnf_g": lnf_g,
        "lnf_b": lnf_b,
        "layers": layers,  # a Python list: every layer is unrolled into the HLO
    }


def transformer_train_step(cfg: TransformerConfig):
    """Mixed precision as usual on GPUs: f32 master weights, residual stream and LayerNorm in
    f32, matmul inputs and activations in bf16 (scores accumulate in f32), SGD update in f32."""
    nh, hd = cfg.heads, cfg.hidden // cfg.heads
    scale = F32(1.0 / np.sqrt(hd))

    def bf16(x):
        return x.astype(BF16)

    def loss_fn(params, tokens, targets):
        b, s = tokens.shape
        x = params["embed"][tokens] + params["pos"][None]  # f32 [b, s, h]; gather
        mask = causal_mask(s)
        for p in params["layers"]:  # deliberately unrolled, not lax.scan
            hx = bf16(layer_norm(x, p["ln1_g"], p["ln1_b"]))
            qkv = hx @ bf16(p["wqkv"]) + bf16(p["bqkv"])
            q, k, v = (t.reshape(b, s, nh, hd) for t in jnp.split(qkv, 3, axis=-1))
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
            scores = jnp.where(mask, scores * scale, F32(-1e9))
            probs = bf16(jax.nn.softmax(scores, axis=-1))
            attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, cfg.hidden)
            x = x + (attn @ bf16(p["wo"]) + bf16(p["bo"])).astype(jnp.float32)
            hx = bf16(layer_norm(x, p["ln2_g"], p["ln2_b"]))
            hx = jax.nn.gelu(hx @ bf16(p["w1"]) + bf16(p["b1"]), approximate=True)
            x = x + (hx @ bf16(p["w2"]) + bf16(p["b2"])).astype(jnp.float32)
        hx = bf16(layer_norm(x, params["lnf_g"], params["lnf_b"]))
        logits = (hx @ bf16(params["embed"]).T).astype(jnp.float32)  # tied embeddings
        return cross_entropy_loss(logits, targets), bf16(logits)

    def train_step(params, tokens, targets):
        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, tokens, targets)
        new_params = jax.tree_util.tree_map(lambda w, g: w - cfg.lr * g, params, grads)
        return loss, logits, new_params

    return train_step


def transformer_args(cfg: TransformerConfig, rng):
    params = init_transformer_params(cfg, rng)
    tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq), dtype=np.int32)
    targets = np.roll(tokens, -1, axis=1)  # next-token prediction
    return params, tokens, targets


@module(
    "transformer_step_bf16",
    "2-layer pre-LN transformer training step (fwd + loss + grad + SGD), bf16 activations, "
    "f32 master weights",
)
def build_transformer_step_bf16(rng):
    cfg = TransformerConfig(layers=2, batch=4, seq=8, hidden=32, heads=4, mlp=128, vocab=64)
    return transformer_train_step(cfg), transformer_args(cfg, rng)


# --------------------------------------------------------------------------------------------
# 11: single-op modules for checking interpreter semantics against XLA's numbers
# --------------------------------------------------------------------------------------------


@module(
    "ops_gather_scatter",
    "row/point gathers, scatter-add with duplicate indices, scatter-set, scatter-max",
)
def build_ops_gather_scatter(rng):
    def f(table, rows, cols, upd_rows, updates, set_rows, set_vals):
        gathered_rows = table[rows]  # row gather (embedding lookup)
        gathered_pts = table[rows, cols]  # point gather, 2 index dims
        added = table.at[upd_rows].add(updates)  # scatter-add; upd_rows has duplicates
        setted = table.at[set_rows].set(set_vals)  # scatter (overwrite), unique rows
        maxed = table.at[rows, cols].max(F32(0.5))  # scatter with a max combiner
        return gathered_rows, gathered_pts, added, setted, maxed

    table = normal(rng, (16, 8))
    rows = np.array([3, 0, 15, 7, 3], dtype=np.int32)
    cols = np.array([1, 7, 0, 4, 2], dtype=np.int32)
    upd_rows = np.array([2, 5, 2, 9, 2, 14], dtype=np.int32)
    updates = normal(rng, (6, 8))
    set_rows = np.array([1, 11, 6], dtype=np.int32)
    set_vals = normal(rng, (3, 8))
    return f, (table, rows, cols, upd_rows, updates, set_rows, set_vals)


@module("ops_reduce_window", "max-pool 2x2/2 VALID, sum-pool 3x3/1 SAME, padded strided min-pool")
def build_ops_reduce_window(rng):
    def f(x):
        # 2x2/2 max-pool (VALID), then a 3x3/1 SAME sum-pool (padding with the init value 0),
        # then a strided, padded min-pool to exercise padding with +inf init.
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        sm = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
        mn = lax.reduce_window(
            x, jnp.inf, lax.min, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0))
        )
        return mx, sm, mn

    return f, (normal(rng, (2, 8, 8, 4)),)


@module(
    "ops_conv",
    "NHWC convolutions: SAME, strided+dilated+asymmetric padding, depthwise (feature groups)",
)
def build_ops_conv(rng):
    dn = ("NHWC", "HWIO", "NHWC")

    def f(x, w1, w2, w_dw):
        same = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
        # strided + dilated kernel + asymmetric padding
        strided = lax.conv_general_dilated(
            x, w2, (2, 2), ((1, 2), (1, 2)), rhs_dilation=(2, 2), dimension_numbers=dn
        )
        # depthwise: feature_group_count == input channels
        depthwise = lax.conv_general_dilated(
            x, w_dw, (1, 1), "VALID", dimension_numbers=dn, feature_group_count=3
        )
        return same, strided, depthwise

    x = normal(rng, (2, 8, 8, 3))
    w1 = normal(rng, (3, 3, 3, 8), 0.3)
    w2 = normal(rng, (3, 3, 3, 4), 0.3)
    w_dw = normal(rng, (3, 3, 1, 6), 0.3)  # 2 outputs per input channel
    return f, (x, w1, w2, w_dw)


@module(
    "ops_dot_general",
    "batched einsums: bij,bjk; bhqd,bhkd; batch/contracting dims in odd positions",
)
def build_ops_dot_general(rng):
    def f(a, b, q, k, m, n):
        bmm = jnp.einsum("bij,bjk->bik", a, b)  # one batch dim
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k)  # two batch dims, contract the minor dim
        odd = jnp.einsum("kib,kjb->bij", m, n)  # batch/contracting dims not in minor positions
        return bmm, scores, odd

    a = normal(rng, (3, 4, 5))
    b = normal(rng, (3, 5, 6))
    q = normal(rng, (2, 4, 8, 8))
    k = normal(rng, (2, 4, 8, 8))
    m = normal(rng, (5, 3, 2))
    n = normal(rng, (5, 4, 2))
    return f, (a, b, q, k, m, n)


@module(
    "ops_while",
    "lax.fori_loop (static trip count) and a data-dependent lax.while_loop (Newton sqrt)",
)
def build_ops_while(rng):
    def f(x, w, target):
        # fori_loop with static bounds lowers to an HLO `while` whose tuple carries the
        # counter; the body depends on the loop index.
        def body(i, carry):
            h, acc = carry
            h = jnp.tanh(h @ w + i.astype(jnp.float32) * 0.1)
            return h, acc + jnp.sum(h * h)

        h, acc = lax.fori_loop(0, 6, body, (x, jnp.zeros((), jnp.float32)))

        # A data-dependent trip count: Newton iterations for sqrt(target) until converged.
        def cond(state):
            y, n = state
            return jnp.logical_and(jnp.max(jnp.abs(y * y - target)) > 1e-4, n < 50)

        def newton(state):
            y, n = state
            return 0.5 * (y + target / y), n + 1

        root, iters = lax.while_loop(cond, newton, (target, jnp.zeros((), jnp.int32)))
        return h, acc, root, iters

    x = normal(rng, (4, 16))
    w = normal(rng, (16, 16), 1 / np.sqrt(16))
    target = rng.uniform(0.5, 20.0, size=(8,)).astype(F32)
    return f, (x, w, target)


@module("ops_cond", "lax.cond on a runtime pred and lax.switch on a runtime int32 index")
def build_ops_cond(rng):
    def f(pred, index, x, y):
        # Two-branch conditional on a runtime predicate...
        a = lax.cond(pred, lambda x, y: x @ y, lambda x, y: x - y.T, x, y)
        # ...and an N-way one (lax.switch clamps the index into range).
        branches = [lambda v: v * 2.0, lambda v: jnp.exp(v), lambda v: jnp.sin(v) + 1.0]
        b = lax.switch(index, branches, x)
        return a, b

    pred = np.array(True)
    index = np.array(2, dtype=np.int32)
    x = normal(rng, (4, 4))
    y = normal(rng, (4, 4))
    return f, (pred, index, x, y)


@module(
    "ops_sort_cumsum", "jnp.sort (two axes), argsort (variadic sort), cumsum f32/int32, cumprod"
)
def build_ops_sort_cumsum(rng):
    def f(x, xi):
        return (
            jnp.sort(x, axis=-1),  # single-operand sort along the minor dim
            jnp.sort(x, axis=0),  # along a major dim
            jnp.argsort(x, axis=-1).astype(jnp.int32),  # variadic (key, iota) sort
            jnp.cumsum(x, axis=-1),
            jnp.cumsum(xi, axis=0),  # integer cumsum, exact
            jnp.cumprod(x * 0.5 + 1.0, axis=1),
        )

    x = normal(rng, (4, 12))
    x[0, 3] = x[0, 7]  # a tie, so sort stability is visible in argsort
    xi = rng.integers(-50, 50, size=(4, 12), dtype=np.int32)
    return f, (x, xi)


@module(
    "ops_misc",
    "elementwise/data-movement/integer/bit/rounding/f16 ops, argmax/argmin (variadic reduce)",
)
def build_ops_misc(rng):
    def f(x, y, z, r, i, j, d, h, start):
        out = {}
        # data movement
        out["pad"] = jnp.pad(x, ((1, 2), (0, 3)), constant_values=-1.0)
        out["pad_interior_neg"] = lax.pad(x, F32(0.0), ((-1, 1, 1), (2, -3, 0)))
        out["concat"] = jnp.concatenate([x, y, x], axis=1)
        out["rev"] = jnp.flip(x, axis=(0, 1))
        out["iota"] = jnp.arange(32, dtype=jnp.float32).reshape(4, 8) + x
        out["iota_2d"] = lax.broadcasted_iota(jnp.int32, (3, 5), 1)
        out["dyn_slice"] = lax.dynamic_slice(x, (start, 2), (2, 4))  # start is clamped
        out["dyn_update"] = lax.dynamic_update_slice(x, y[:2, :3], (start, 6))  # clamped col
        out["clamp"] = lax.clamp(F32(-0.5), x, F32(0.5))
        out["select"] = jnp.where(x > y, x, y)
        out["transpose"] = jnp.transpose(x) @ y
        out["bitcast"] = lax.bitcast_convert_type(x, jnp.int32)
        # integer arithmetic and bit ops (XLA semantics: shifts >= 32 give 0 / sign fill,
        # x / 0 == -1 and x % 0 == x for signed ints)
        out["int_add_mul"] = i * j + i - j
        out["int_div"] = lax.div(i, d)  # C-style truncating division, d has zeros
        out["int_rem"] = lax.rem(i, d)
        out["floor_div"] = jnp.floor_divide(i, j)  # j has no zeros
        out["int_mod"] = jnp.mod(i, j)  # Python-style sign of the divisor
        out["bit_and_or_xor"] = (i & j) ^ (i | 0x0F0F) ^ ~j
        out["shl"] = lax.shift_left(i, d)
        out["shr_arith"] = lax.shift_right_arithmetic(i, d)
        out["shr_logical"] = lax.shift_right_logical(i, d)
        out["popcnt_clz"] = lax.population_count(i) + lax.clz(i)
        out["int_max_min"] = jnp.maximum(i, j) - jnp.minimum(i, d)
        out["int_abs_sign"] = jnp.abs(i) * jnp.sign(j)
        out["int_to_float"] = i.astype(jnp.float32) / 3.0
        out["float_to_int"] = (x * 10.0).astype(jnp.int32)  # truncation toward zero
        # floating-point math
        out["fmod"] = jnp.fmod(x, y)  # HLO remainder
        out["remainder"] = jnp.remainder(x, y)  # remainder + sign fix-up
        out["power"] = jnp.power(jnp.abs(x) + 0.1, y)
        out["int_power"] = x**3
        out["erf"] = lax.erf(x)
        out["expm1"] = jnp.expm1(x * 1e-3)  # small arguments, where expm1 != exp - 1
        out["log1p"] = jnp.log1p(jnp.abs(x) * 1e-3)
        out["rsqrt"] = lax.rsqrt(jnp.abs(x) + 0.01)
        out["tanh"] = jnp.tanh(x * 3.0)
        out["logistic"] = jax.nn.sigmoid(x * 4.0)
        out["round_even"] = jnp.round(r)  # round-nearest-even on exact halves
        out["round_afz"] = lax.round(r, lax.RoundingMethod.AWAY_FROM_ZERO)
        out["floor_ceil"] = jnp.floor(r * 1.3) + 10.0 * jnp.ceil(r * 1.3)
        out["sign"] = jnp.sign(r)
        out["is_finite"] = jnp.isfinite(z)
        out["atan2"] = jnp.arctan2(x, y)
        out["sqrt_cbrt"] = jnp.sqrt(jnp.abs(x)) + jnp.cbrt(x)
        out["exp_log"] = jnp.exp(x) + jnp.log(jnp.abs(y) + 1e-3)
        out["sin_cos"] = jnp.sin(x) * jnp.cos(y)
        out["max_nan"] = jnp.maximum(z, 0.0)  # NaN propagates through max
        # reductions
        out["argmax"] = jnp.argmax(x, axis=1)  # variadic (value, index) reduce
        out["argmin_axis0"] = jnp.argmin(y, axis=0)
        out["reduce_multi"] = jnp.sum(x, axis=(0, 1)) + jnp.max(y) * jnp.min(x) + jnp.prod(y[0])
        out["any_all"] = jnp.stack([jnp.any(x > 2.0), jnp.all(r > -100.0)])
        # f16
        out["f16_arith"] = h * h + h - h / (jnp.abs(h) + jnp.float16(1.0))
        out["f16_exp_tanh"] = jnp.exp(h) + jnp.tanh(h)
        out["f16_sum"] = jnp.sum(h, axis=1)  # jnp accumulates f16 sums in f32, then rounds
        out["f16_to_bf16"] = h.astype(jnp.bfloat16) * jnp.bfloat16(1.5)
        return out  # dict: outputs are the leaves in sorted-key order

    x = normal(rng, (4, 8))
    y = normal(rng, (4, 8))
    y[np.abs(y) < 0.1] = 0.5  # keep fmod/remainder divisors away from 0
    z = normal(rng, (4, 8))
    z[0, 0], z[1, 3], z[2, 5], z[3, 7] = np.inf, -np.inf, np.nan, np.nan
    # -8.0, -7.5, ..., 7.5: exact halves (round-to-even vs away-from-zero differ there) and
    # integers, every 4th nudged by +0.25.
    r = np.arange(-16, 16, dtype=F32) / 2.0
    r[::4] += 0.25
    r = r.reshape(4, 8)
    i = rng.integers(-1000, 1000, size=(4, 8), dtype=np.int32)
    i[0, 0] = np.iinfo(np.int32).min  # INT_MIN / -1 and INT_MIN % -1 are defined in XLA
    i[0, 1] = -1
    j = rng.integers(1, 40, size=(4, 8), dtype=np.int32) * rng.choice([-1, 1], size=(4, 8))
    j = j.astype(np.int32)
    d = rng.integers(0, 40, size=(4, 8), dtype=np.int32)  # shift amounts/divisors, some >= 32
    d[0, 0], d[0, 1], d[0, 2], d[1, 0] = -1, 0, 0, 32
    h = normal(rng, (4, 8), 1.5, dtype=np.float16)
    start = np.array(3, dtype=np.int32)
    return f, (x, y, z, r, i, j, d, h, start)


# --------------------------------------------------------------------------------------------
# 12: training-step numerics (gradient accumulation, loss scaling, quantisation, GNN scatters)
# --------------------------------------------------------------------------------------------


@module(
    "grad_accum_scan",
    "gradient accumulation over 4 microbatches with lax.scan (a while loop of static trip "
    "count 4) of a tanh layer's MSE value_and_grad, then an SGD step",
)
def build_grad_accum_scan(rng):
    def loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    def f(w, xs, ys):
        def microbatch(total, batch):
            value, grad = jax.value_and_grad(loss)(w, *batch)
            return (total[0] + value, total[1] + grad), value

        zero = (jnp.zeros((), jnp.float32), jnp.zeros_like(w))
        (loss_sum, grad_sum), losses = lax.scan(microbatch, zero, (xs, ys))
        return w - 0.1 * grad_sum / xs.shape[0], loss_sum, losses

    return f, (normal(rng, (8, 8), 0.3), normal(rng, (4, 6, 8)), normal(rng, (4, 6, 8)))


@module(
    "f16_loss_scale",
    "f16 training step with dynamic loss scaling: scaled f16 grads, all-finite check "
    "(is-finite, reduce-and), update or skip by select, scale doubled or halved",
)
def build_f16_loss_scale(rng):
    def loss(w, x, y):
        return jnp.mean(((x @ w).astype(jnp.float32) - y) ** 2)

    def f(w, x, y, scale):
        grad = jax.grad(lambda w: loss(w, x, y) * scale)(w).astype(jnp.float32) / scale
        finite = jnp.all(jnp.isfinite(grad))
        new_w = jnp.where(finite, w - (1e-2 * grad).astype(jnp.float16), w)
        return new_w, jnp.where(finite, scale * 2.0, scale * 0.5), finite

    w = normal(rng, (16, 8), 0.3, np.float16)
    x = normal(rng, (4, 16), 1.0, np.float16)
    x[0, 0] = np.float16(60000)  # the scaled f16 gradient overflows: the step is skipped
    return f, (w, x, normal(rng, (4, 8)), np.array(65536.0, F32))


@module(
    "int8_weight_only",
    "int8 weight-only quantised matmul: per-channel absmax scales, round/clip/convert to s8, "
    "bf16 dequantised matmul, and an s8 x s8 -> s32 dot",
)
def build_int8_weight_only(rng):
    def f(x, w):
        scale = jnp.max(jnp.abs(w), axis=0) / 127.0
        q = jnp.clip(jnp.round(w / scale), -128, 127).astype(jnp.int8)
        dequantised = q.astype(jnp.bfloat16) * scale.astype(jnp.bfloat16)
        y = (x.astype(jnp.bfloat16) @ dequantised).astype(jnp.float32)
        return y, q, lax.dot(q, q.T, preferred_element_type=jnp.int32)

    return f, (normal(rng, (8, 32)), normal(rng, (32, 16)))


@module(
    "gnn_segment_grad",
    "GNN message passing: gathered messages, segment_sum and segment_max (two empty segments) "
    "by destination, MSE-style loss, value_and_grad (scatter-add back to nodes)",
)
def build_gnn_segment_grad(rng):
    nodes, edges, hidden = 12, 40, 16

    def loss(w, x, src, dst):
        messages = jnp.tanh(x[src] @ w)
        summed = jax.ops.segment_sum(messages, dst, num_segments=nodes)
        largest = jax.ops.segment_max(messages, dst, num_segments=nodes)  # -inf when empty
        largest = jnp.where(jnp.isfinite(largest), largest, 0.0)
        return jnp.mean((summed + largest) ** 2)

    def f(w, x, src, dst):
        value, (grad_w, grad_x) = jax.value_and_grad(loss, argnums=(0, 1))(w, x, src, dst)
        return value, grad_w, grad_x

    src = rng.integers(0, nodes, edges).astype(np.int32)
    dst = rng.integers(0, nodes - 2, edges).astype(np.int32)  # the last two nodes get nothing
    return f, (normal(rng, (hidden, hidden), 0.3), normal(rng, (nodes, hidden)), src, dst)


# --------------------------------------------------------------------------------------------
# Model families of the JAX robustness sweep: op mixes the modules above do not have
# --------------------------------------------------------------------------------------------


@module(
    "swin_window_attn",
    "Swin block: shifted windows (roll), window partition reshapes/transposes, 2-head window "
    "attention with a relative position bias gathered from a learned table, residual",
)
def build_swin_window_attn(rng):
    batch, height, width, channels, heads, window = 2, 8, 8, 32, 2, 4
    head_dim = channels // heads
    tokens = window * window
    # Swin's relative position index: every pair of positions in a window, as an index into
    # the (2w-1)^2 table of learned biases.
    coords = np.stack(np.meshgrid(np.arange(window), np.arange(window), indexing="ij"))
    relative = (coords.reshape(2, -1)[:, :, None] - coords.reshape(2, -1)[:, None, :])
    relative = relative.transpose(1, 2, 0) + (window - 1)
    index = (relative[..., 0] * (2 * window - 1) + relative[..., 1]).astype(np.int32)

    def windows(x):
        x = x.reshape(batch, height // window, window, width // window, window, -1)
        return x.transpose(0, 1, 3, 2, 4, 5).reshape(-1, tokens, x.shape[-1])

    def merge(x):
        x = x.reshape(batch, height // window, width // window, window, window, -1)
        return x.transpose(0, 1, 3, 2, 4, 5).reshape(batch, height, width, -1)

    def f(x, gamma, beta, w_qkv, w_out, bias_table, bias_index):
        shift = window // 2
        h = windows(jnp.roll(layer_norm(x, gamma, beta), (-shift, -shift), axis=(1, 2)))
        qkv = (h @ w_qkv).reshape(-1, tokens, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
        scores = jnp.einsum("bhqd,bhkd->bhqk", qkv[0], qkv[1]) * head_dim ** -0.5
        bias = bias_table[bias_index.reshape(-1)].reshape(tokens, tokens, heads)
        probs = jax.nn.softmax(scores + bias.transpose(2, 0, 1)[None], axis=-1)
        mixed = jnp.einsum("bhqk,bhkd->bhqd", probs, qkv[2]).transpose(0, 2, 1, 3)
        out = merge(mixed.reshape(-1, tokens, channels) @ w_out)
        return x + jnp.roll(out, (shift, shift), axis=(1, 2))

    return f, (normal(rng, (batch, height, width, channels)),
               (1.0 + normal(rng, (channels,), 0.1)).astype(F32), normal(rng, (channels,), 0.1),
               normal(rng, (channels, 3 * channels), channels ** -0.5),
               normal(rng, (channels, channels), channels ** -0.5),
               normal(rng, ((2 * window - 1) ** 2, heads), 0.5), index)


@module(
    "rwkv_time_mix",
    "RWKV-4 time mixing: token shift, receptance/key/value projections, the WKV recurrence "
    "as a lax.scan (while) with a running max for stable exponentials",
)
def build_rwkv_time_mix(rng):
    length, dim = 16, 32

    def f(x, x_last, mix_k, mix_v, mix_r, w_k, w_v, w_r, w_out, decay, bonus):
        shifted = jnp.concatenate([x_last[None], x[:-1]], 0)
        k = (x * mix_k + shifted * (1 - mix_k)) @ w_k
        v = (x * mix_v + shifted * (1 - mix_v)) @ w_v
        r = jax.nn.sigmoid((x * mix_r + shifted * (1 - mix_r)) @ w_r)
        w = -jnp.exp(decay)

        def step(state, kv):
            num, den, top = state   # exponent-shifted numerator, denominator and their shift
            k_t, v_t = kv
            now = bonus + k_t
            shift = jnp.maximum(top, now)
            old, new = jnp.exp(top - shift), jnp.exp(now - shift)
            out = (old * num + new * v_t) / (old * den + new)
            decayed = top + w
            shift = jnp.maximum(decayed, k_t)
            old, new = jnp.exp(decayed - shift), jnp.exp(k_t - shift)
            return (old * num + new * v_t, old * den + new, shift), out

        start = (jnp.zeros(dim), jnp.zeros(dim), jnp.full(dim, -1e38))
        _, wkv = lax.scan(step, start, (k, v))
        return (r * wkv) @ w_out, x[-1]

    def uniform():
        return rng.uniform(0, 1, dim).astype(F32)

    def weight():
        return normal(rng, (dim, dim), dim ** -0.5)

    return f, (normal(rng, (length, dim)), normal(rng, (dim,)), uniform(), uniform(), uniform(),
               weight(), weight(), weight(), weight(), normal(rng, (dim,), 0.5),
               normal(rng, (dim,), 0.5))


@module(
    "kv_decode_step",
    "one decoding step: bf16 KV cache written by dynamic_update_slice at a runtime position, "
    "grouped-query attention (4 q / 2 kv heads) masked past it, tied logits, lax.top_k",
)
def build_kv_decode_step(rng):
    batch, cache, q_heads, kv_heads, head_dim, dim, vocab = 2, 32, 4, 2, 16, 64, 128

    def f(x, position, k_cache, v_cache, w_q, w_k, w_v, w_out, embedding):
        q = (x @ w_q).reshape(batch, q_heads, head_dim)
        k = (x @ w_k).reshape(batch, 1, kv_heads, head_dim).astype(BF16)
        v = (x @ w_v).reshape(batch, 1, kv_heads, head_dim).astype(BF16)
        k_cache = lax.dynamic_update_slice(k_cache, k, (0, position, 0, 0))
        v_cache = lax.dynamic_update_slice(v_cache, v, (0, position, 0, 0))
        keys = jnp.repeat(k_cache, q_heads // kv_heads, axis=2).astype(F32)
        values = jnp.repeat(v_cache, q_heads // kv_heads, axis=2).astype(F32)
        scores = jnp.einsum("bhd,bshd->bhs", q, keys) * head_dim ** -0.5
        scores = jnp.where(jnp.arange(cache)[None, None] <= position, scores, -1e30)
        mixed = jnp.einsum("bhs,bshd->bhd", jax.nn.softmax(scores, -1), values)
        logits = (x + mixed.reshape(batch, dim) @ w_out) @ embedding.T
        top, token = lax.top_k(logits, 5)
        return k_cache, v_cache, jax.nn.softmax(top), token

    return f, (normal(rng, (batch, dim)), np.int32(7),
               normal(rng, (batch, cache, kv_heads, head_dim)).astype(BF16),
               normal(rng, (batch, cache, kv_heads, head_dim)).astype(BF16),
               normal(rng, (dim, q_heads * head_dim), dim ** -0.5),
               normal(rng, (dim, kv_heads * head_dim), dim ** -0.5),
               normal(rng, (dim, kv_heads * head_dim), dim ** -0.5),
               normal(rng, (dim, dim), dim ** -0.5), normal(rng, (vocab, dim), 0.5))


# --------------------------------------------------------------------------------------------
# Part B: benchmark modules
# --------------------------------------------------------------------------------------------

BENCH_CONFIG = {"batch": 8, "seq": 128, "hidden": 256, "heads": 4, "mlp": 1024, "vocab": 1024}


def write_gzip(path: Path, text: str) -> None:
    # mtime=0 keeps the gzip bytes reproducible across regenerations.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(text.encode())


def emit_view_module() -> int:
    """tests/data/views/adam_48.hlo.gz: one Adam step over 48 parameter tensors, a graph far
    wider than it is deep (48 independent update chains), for the browser tests of the views.
    Only its HLO text: the tests draw it, nothing runs it. Returns its instruction count."""
    shapes = [(64, 64), (64,), (256, 64), (64, 256), (256,), (4, 64)] * 8
    text = hlo_text(adam_step(), adam_args(rng_for("adam_48"), shapes))
    VIEWS_DIR.mkdir(parents=True, exist_ok=True)
    write_gzip(VIEWS_DIR / "adam_48.hlo.gz", text)
    return instruction_count(text)


def emit_benchmark(layers: int) -> dict:
    cfg = TransformerConfig(layers=layers, **BENCH_CONFIG)
    # Only lowering happens (nothing is executed), so the inputs just need the right avals;
    # real arrays keep it identical to how the test module is produced.
    args = transformer_args(cfg, rng_for(f"transformer_{layers}l"))
    text = hlo_text(transformer_train_step(cfg), args)
    assert "{...}" not in text
    n_params = entry_param_count(text)
    assert n_params == len(jax.tree_util.tree_leaves(args))
    path = BENCH_DIR / f"transformer_{layers}l.hlo.gz"
    write_gzip(path, text)
    return {
        "params": n_params,
        "outputs": entry_output_count(text),
        "instructions": instruction_count(text),
        "lines": text.count("\n"),
        "text_bytes": len(text),
        "gz_bytes": path.stat().st_size,
    }


HLO_README_HEAD = """\
# HLO test modules

Generated with JAX {jax} / jaxlib {jaxlib} on CPU by
`/tmp/genvenv/bin/python tests/data/gen_hlo.py` (pinned versions in `../requirements-gen.txt`).
Verify with `/tmp/genvenv/bin/python tests/data/check_hlo.py`: it re-parses every `.hlo` with
XLA, runs it on the saved inputs and checks that the outputs are bit-identical.

Per module NAME:
- `NAME.hlo`: `jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text(print_large_constants=True)`,
  the un-optimised HLO. (The flag only stops XLA eliding big constants as `{{...}}`; no module
  here has one, so the text equals the default `as_hlo_text()`.)
- `NAME.inputs.npz`: `arg0..argN` = `jax.tree_util.tree_leaves(args)`, i.e. ENTRY
  `parameter(i)` order.
- `NAME.outputs.npz`: `out0..outM` = leaves of `jax.jit(f)(*args)` on XLA:CPU, in the order of
  the ENTRY result tuple (a single non-tuple result is `out0`), computed with
  `XLA_FLAGS=--xla_allow_excess_precision=false` so bf16/f16 intermediates are rounded where the
  HLO says (with excess precision on, XLA keeps some of them in f32).
- bf16 arrays are saved by `np.savez` as raw 2-byte void (`|V2`); `a.view(ml_dtypes.bfloat16)`
  restores them (no other dtype here is `|V2`). f16 is native `<f2`, predicates are `bool`.
- JAX emits `call` instructions for nested jitted helpers (`_where`, `log_softmax`,
  `take_along_axis`, `argmax`, ...). There is no `logistic` opcode: JAX lowers
  `jax.nn.sigmoid` to `1 / (1 + exp(-x))`, and `gelu(approximate=False)` to an expanded `erfc`
  polynomial.
- `ops_misc` deliberately probes XLA's edge semantics: integer `divide`/`remainder` by 0
  (x / 0 = -1, x % 0 = x) and INT_MIN / -1, shift amounts that are negative or >= 32, exact .5
  values for round-nearest-even vs round-nearest-afz, inf/NaN inputs for is-finite and maximum
  (NaN propagates).

| module | what | params | outputs | instructions |
| --- | --- | --- | --- | --- |
"""


def write_hlo_readme(infos: dict[str, dict], all_ops: set[str]):
    head = HLO_README_HEAD.format(jax=jax.__version__, jaxlib=metadata.version("jaxlib"))
    lines = head.splitlines()
    for name, info in infos.items():
        lines.append(
            f"| `{name}` | {MODULES[name][1]} | {info['params']} | {info['outputs']} | "
            f"{info['instructions']} |"
        )
    lines += ["", f"Distinct opcodes over all modules ({len(all_ops)}): "]
    lines += [
        " ".join(f"`{op}`" for op in sorted(all_ops)),
        "",
        "## Parameter and output order",
        "",
    ]
    for name, info in infos.items():
        args = ", ".join(f"{n}: {t}" for n, t in zip(info["arg_names"], info["arg_types"]))
        outs = ", ".join(f"{n}: {t}" for n, t in zip(info["out_names"], info["out_types"]))
        lines += [f"- `{name}`", f"  - args: {args}", f"  - outs: {outs}"]
    (HLO_DIR / "README.md").write_text("\n".join(lines) + "\n")


BENCH_README = """\
# Benchmark HLO modules

Large, real XLA HLO modules for timing the explorer's parser, graph building and fusion passes.
Generated with JAX {jax} / jaxlib {jaxlib} (CPU lowering) by
`/tmp/genvenv/bin/python tests/data/gen_hlo.py` (the same script as the test modules; pinned
versions in `tests/data/requirements-gen.txt`). `tests/data/check_hlo.py` re-parses them with
XLA.

Each file is the gzipped un-optimised HLO text,
`jax.jit(train_step).lower(params, tokens, targets).compiler_ir("hlo").as_hlo_text()`, of one
pre-LN transformer training step: token + position embedding (gather), N layers of causal
4-head self-attention and a GELU(tanh) MLP, final LayerNorm, tied-embedding logits, mean
cross-entropy, `jax.value_and_grad` over all parameters and a plain SGD update; it returns
(loss, bf16 logits, updated params). Mixed precision as on GPUs: f32 master weights, residual
stream and LayerNorm statistics, bf16 matmul inputs and activations (attention scores
accumulate in f32), so the HLO has many f32<->bf16 `convert`s. The layers are a Python loop
(unrolled, not `lax.scan`), so the module grows linearly with depth. Config: batch {batch},
seq {seq}, hidden {hidden}, {heads} heads, MLP {mlp}, vocab {vocab}. No inputs/outputs are
stored.

| file | layers | ENTRY params | outputs | instructions | text lines | text bytes | gz bytes |
| --- | --- | --- | --- | --- | --- | --- | --- |
"""


def write_bench_readme(infos: dict[int, dict]):
    lines = BENCH_README.format(
        jax=jax.__version__, jaxlib=metadata.version("jaxlib"), **BENCH_CONFIG
    ).splitlines()
    for layers, i in infos.items():
        lines.append(
            f"| `transformer_{layers}l.hlo.gz` | {layers} | {i['params']} | {i['outputs']} | "
            f"{i['instructions']} | {i['lines']} | {i['text_bytes']} | {i['gz_bytes']} |"
        )
    (BENCH_DIR / "README.md").write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-bench", action="store_true", help="skip benchmarks/data/")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(MODULES),
                        help="write only these test modules (the README still lists all); "
                             "skips views/ and benchmarks/data/")
    opts = parser.parse_args()

    HLO_DIR.mkdir(parents=True, exist_ok=True)
    infos, all_ops = {}, set()
    for name, (builder, _) in MODULES.items():
        write = opts.only is None or name in opts.only
        infos[name] = info = emit_test_module(name, builder, write)
        all_ops |= info["opcodes"]
        print(
            f"{name:24s} params={info['params']:3d} outputs={info['outputs']:3d} "
            f"instructions={info['instructions']}"
        )
    print(f"jax {jax.__version__}; distinct opcodes ({len(all_ops)}): {' '.join(sorted(all_ops))}")
    write_hlo_readme(infos, all_ops)
    if opts.only:
        return
    print(f"views/adam_48: instructions={emit_view_module()}")

    if not opts.no_bench:
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        bench = {}
        for layers in (12, 48):
            bench[layers] = info = emit_benchmark(layers)
            print(f"transformer_{layers}l: " + " ".join(f"{k}={v}" for k, v in info.items()))
        write_bench_readme(bench)


if __name__ == "__main__":
    main()
