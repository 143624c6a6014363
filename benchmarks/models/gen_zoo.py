"""Generate the model zoo: real, realistically sized models from many families, for judging
the fusion strategies on more than a handful of files.

Run with the generator virtualenv (pinned versions in tests/data/requirements-gen.txt):

    /tmp/genvenv/bin/python benchmarks/models/gen_zoo.py              # every model
    /tmp/genvenv/bin/python benchmarks/models/gen_zoo.py --only llama  # names containing 'llama'

It writes into benchmarks/data/zoo/:
  <family>_<variant>.hlo.gz             gzipped un-optimised HLO text of a JAX function,
                                        jax.jit(f).lower(*avals).compiler_ir("hlo").as_hlo_text()
  <family>_<variant>.<exporter>.onnx.gz gzipped ONNX of a PyTorch module, exported with the
                                        TorchScript exporter (dynamo=False, opset 17) and with
                                        the dynamo exporter (its default opset)
  README.md                             a table of every file, rebuilt from the files on disk

Only shapes matter to the explorer, so the JAX functions are lowered from
jax.ShapeDtypeStruct arguments (nothing is computed) and the ONNX files carry their weights as
graph inputs instead of initializers (small files however large the model). The activations
are the sizes people train and serve at (batch 8-128, sequence 512-2048, hidden 768-4096),
so the bandwidth-bound ops move tens to hundreds of megabytes each, with bf16 activations and
f32 master weights and statistics where mixed precision is what people use.
"""

from __future__ import annotations

import argparse
import gzip
import math
import re
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_platforms", "cpu")  # un-optimised HLO does not depend on the backend

REPO = Path(__file__).resolve().parents[2]
ZOO_DIR = REPO / "benchmarks" / "data" / "zoo"
TORCHSCRIPT_OPSET = 17

F32 = jnp.float32
BF16 = jnp.bfloat16
F16 = jnp.float16
I32 = jnp.int32


@dataclass(frozen=True)
class ZooModel:
    name: str           # <family>_<variant>, the file stem
    family: str
    what: str           # one line for the README
    kind: str           # "hlo" (a JAX builder) or "onnx" (a PyTorch builder)
    builder: callable


ZOO: dict[str, ZooModel] = {}


def hlo_model(name, family, what):
    """Register a JAX builder: () -> (function, argument avals, weight count)."""

    def register(builder):
        ZOO[name] = ZooModel(name, family, what, "hlo", builder)
        return builder

    return register


def onnx_model(name, family, what):
    """Register a PyTorch builder: () -> (module in eval mode, tuple of example inputs)."""

    def register(builder):
        ZOO[name] = ZooModel(name, family, what, "onnx", builder)
        return builder

    return register


# --------------------------------------------------------------------------------------------
# JAX building blocks
# --------------------------------------------------------------------------------------------


def aval(shape, dtype=F32):
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def avals(shapes: dict) -> dict:
    """A tree of avals from a tree of shapes (tuples are shapes, dicts and lists nest)."""
    if isinstance(shapes, dict):
        return {key: avals(value) for key, value in shapes.items()}
    if isinstance(shapes, list):
        return [avals(value) for value in shapes]
    return aval(shapes)


def element_count(tree) -> int:
    return sum(math.prod(leaf.shape) for leaf in jax.tree_util.tree_leaves(tree))


def bf16(x):
    return x.astype(BF16)


def dense(x, w, b=None):
    """x @ w (+ b) with bf16 inputs and a bf16 result, the way mixed-precision models do it."""
    y = bf16(x) @ bf16(w)
    return y if b is None else y + bf16(b)


def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm with f32 statistics whatever the input dtype; the result has x's dtype."""
    xf = x.astype(F32)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    return ((xf - mean) * lax.rsqrt(var + eps) * gamma + beta).astype(x.dtype)


def rms_norm(x, weight, eps=1e-6):
    """RMSNorm (Llama, T5): no mean subtraction, no bias; f32 statistics."""
    xf = x.astype(F32)
    return (xf * lax.rsqrt(jnp.mean(jnp.square(xf), axis=-1, keepdims=True) + eps)
            * weight).astype(x.dtype)


def causal_mask(seq):
    return jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]


def attention(q, k, v, mask=None, bias=None, scale=None):
    """Multi-head attention over [batch, seq, heads, head_dim] bf16 tensors; k and v may have
    fewer heads (grouped-query attention), repeated as HF's repeat_kv does. Scores and the
    softmax are f32, the probabilities bf16."""
    b, s, heads, hd = q.shape
    groups = heads // k.shape[2]
    if groups > 1:
        k = jnp.repeat(k, groups, axis=2)
        v = jnp.repeat(v, groups, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=F32)
    if scale is not None:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = jnp.where(mask, scores, F32(-1e9))
    probs = bf16(jax.nn.softmax(scores, axis=-1))
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, heads * hd)


def cross_entropy(logits, labels):
    """Mean next-token / class cross-entropy of f32 logits (gather; its gradient scatters)."""
    logp = jax.nn.log_softmax(logits.astype(F32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def clip_by_global_norm(grads, max_norm=1.0):
    norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return jax.tree_util.tree_map(lambda g: g * scale, grads)


def adamw(params, grads, opt, lr=3e-4, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1):
    """One AdamW step in f32 over every parameter; opt = {"m", "v", "step"}."""
    step = opt["step"] + 1
    t = step.astype(F32)
    bc1 = 1.0 - jnp.power(b1, t)
    bc2 = 1.0 - jnp.power(b2, t)
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)

    def update(p, m, v):
        return p - lr * ((m / bc1) / (jnp.sqrt(v / bc2) + eps) + weight_decay * p)

    new_params = jax.tree_util.tree_map(update, params, m, v)
    return new_params, {"m": m, "v": v, "step": step}


def adamw_state(params):
    return {"m": params, "v": params, "step": aval((), I32)}


def train_step(loss_fn, clip=True):
    """value_and_grad of loss_fn(params, *batch), optional global-norm clipping, AdamW."""

    def step(params, opt, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        if clip:
            grads = clip_by_global_norm(grads)
        new_params, new_opt = adamw(params, grads, opt)
        return loss, new_params, new_opt

    return step


def forward_backward(forward):
    """The backward pass as a framework runs it: forward(params, x) and its VJP with an incoming
    cotangent dy (for the layer's output) -> (y, dparams, dx)."""

    def f(params, x, dy):
        y, vjp = jax.vjp(forward, params, x)
        return (y, *vjp(dy))

    return f


def conv(x, w, stride=1, groups=1, padding="SAME"):
    """NHWC x HWIO convolution, bf16 in and out."""
    return lax.conv_general_dilated(bf16(x), bf16(w), (stride, stride), padding,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)


# --------------------------------------------------------------------------------------------
# Llama-style decoder (training step)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaConfig:
    layers: int
    batch: int
    seq: int
    hidden: int
    heads: int
    kv_heads: int
    mlp: int
    vocab: int


def llama_shapes(cfg: LlamaConfig) -> dict:
    h, hd = cfg.hidden, cfg.hidden // cfg.heads
    layer = {"attn_norm": (h,), "wq": (h, cfg.heads * hd), "wk": (h, cfg.kv_heads * hd),
             "wv": (h, cfg.kv_heads * hd), "wo": (cfg.heads * hd, h), "mlp_norm": (h,),
             "w_gate": (h, cfg.mlp), "w_up": (h, cfg.mlp), "w_down": (cfg.mlp, h)}
    return {"embed": (cfg.vocab, h), "layers": [dict(layer) for _ in range(cfg.layers)],
            "final_norm": (h,), "lm_head": (h, cfg.vocab)}


def rope_tables(seq, head_dim, theta=10000.0):
    """cos and sin of the rotary angles, [1, seq, 1, head_dim] f32 from iotas; computed once
    per step and shared by every layer, as HF's LlamaRotaryEmbedding does."""
    inv_freq = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=F32) / head_dim))
    angles = jnp.arange(seq, dtype=F32)[:, None] * inv_freq[None, :]
    angles = jnp.concatenate([angles, angles], axis=-1)[None, :, None, :]
    return jnp.cos(angles), jnp.sin(angles)


def rope(x, cos, sin):
    """Rotary position embedding in HF's rotate_half form, in f32."""
    half = x.shape[-1] // 2
    xf = x.astype(F32)
    rotated = jnp.concatenate([-xf[..., half:], xf[..., :half]], axis=-1)
    return bf16(xf * cos + rotated * sin)


def llama_loss(cfg: LlamaConfig):
    hd = cfg.hidden // cfg.heads

    def loss_fn(params, tokens, targets):
        b, s = tokens.shape
        x = bf16(params["embed"][tokens])  # the residual stream in bf16, as in Llama training
        mask = causal_mask(s)
        cos, sin = rope_tables(s, hd)
        for p in params["layers"]:  # unrolled: the module grows linearly with depth
            hx = rms_norm(x, p["attn_norm"])
            q = rope(dense(hx, p["wq"]).reshape(b, s, cfg.heads, hd), cos, sin)
            k = rope(dense(hx, p["wk"]).reshape(b, s, cfg.kv_heads, hd), cos, sin)
            v = dense(hx, p["wv"]).reshape(b, s, cfg.kv_heads, hd)
            x = x + dense(attention(q, k, v, mask=mask, scale=F32(hd ** -0.5)), p["wo"])
            hx = rms_norm(x, p["mlp_norm"])
            x = x + dense(jax.nn.silu(dense(hx, p["w_gate"])) * dense(hx, p["w_up"]),
                          p["w_down"])
        logits = dense(rms_norm(x, params["final_norm"]), params["lm_head"])
        return cross_entropy(logits, targets)

    return loss_fn


def llama_step(cfg: LlamaConfig):
    params = avals(llama_shapes(cfg))
    tokens = aval((cfg.batch, cfg.seq), I32)
    args = (params, adamw_state(params), tokens, tokens)
    return train_step(llama_loss(cfg)), args, element_count(params)


@hlo_model("llama_2l", "llama",
           "Llama-style decoder training step, 2 layers: RMSNorm, RoPE, GQA causal attention "
           "(16 q / 4 kv heads), SwiGLU, cross-entropy, grad clipping, AdamW; batch 8, seq 2048, "
           "hidden 2048, MLP 5632, vocab 32000; bf16 activations, f32 master weights")
def build_llama_2l():
    return llama_step(LlamaConfig(layers=2, batch=8, seq=2048, hidden=2048, heads=16,
                                  kv_heads=4, mlp=5632, vocab=32000))


@hlo_model("llama_96l", "llama",
           "the same Llama-style training step at 96 layers with small tensors, for explore-speed "
           "benchmarks: batch 4, seq 256, hidden 256, 4 q / 2 kv heads, MLP 688, vocab 2048")
def build_llama_96l():
    return llama_step(LlamaConfig(layers=96, batch=4, seq=256, hidden=256, heads=4,
                                  kv_heads=2, mlp=688, vocab=2048))


# --------------------------------------------------------------------------------------------
# GPT-2 (training step)
# --------------------------------------------------------------------------------------------


@hlo_model("gpt2_4l", "gpt2",
           "GPT-2 small-width training step, 4 layers: learned positions, pre-LN, fused QKV with "
           "biases, 12-head causal attention, GELU(tanh) MLP, tied embeddings, cross-entropy, "
           "grad clipping, AdamW; batch 8, seq 1024, hidden 768, vocab 50257")
def build_gpt2_4l():
    layers, batch, seq, hidden, heads, vocab = 4, 8, 1024, 768, 12, 50257
    hd = hidden // heads
    layer = {"ln1_g": (hidden,), "ln1_b": (hidden,), "w_qkv": (hidden, 3 * hidden),
             "b_qkv": (3 * hidden,), "w_o": (hidden, hidden), "b_o": (hidden,),
             "ln2_g": (hidden,), "ln2_b": (hidden,), "w_fc": (hidden, 4 * hidden),
             "b_fc": (4 * hidden,), "w_proj": (4 * hidden, hidden), "b_proj": (hidden,)}
    params = avals({"wte": (vocab, hidden), "wpe": (seq, hidden),
                    "layers": [dict(layer) for _ in range(layers)],
                    "lnf_g": (hidden,), "lnf_b": (hidden,)})

    def loss_fn(params, tokens, targets):
        b, s = tokens.shape
        x = params["wte"][tokens] + params["wpe"][None]  # f32 residual stream
        mask = causal_mask(s)
        for p in params["layers"]:
            qkv = dense(layer_norm(x, p["ln1_g"], p["ln1_b"]), p["w_qkv"], p["b_qkv"])
            q, k, v = (t.reshape(b, s, heads, hd) for t in jnp.split(qkv, 3, axis=-1))
            attn = attention(q, k, v, mask=mask, scale=F32(hd ** -0.5))
            x = x + dense(attn, p["w_o"], p["b_o"]).astype(F32)
            hx = dense(layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w_fc"], p["b_fc"])
            x = x + dense(jax.nn.gelu(hx, approximate=True), p["w_proj"], p["b_proj"]).astype(F32)
        hx = layer_norm(x, params["lnf_g"], params["lnf_b"])
        return cross_entropy(dense(hx, params["wte"].T), targets)

    tokens = aval((batch, seq), I32)
    return train_step(loss_fn), (params, adamw_state(params), tokens, tokens), element_count(params)


# --------------------------------------------------------------------------------------------
# An optimizer step alone
# --------------------------------------------------------------------------------------------


@hlo_model("adamw_48t", "optimizer",
           "the optimizer step alone: global-norm gradient clipping and AdamW (f32) over the 48 "
           "parameter tensors of a 4-layer GPT-2-style model (12 per layer: LayerNorm scales "
           "and biases, fused QKV, attention output and MLP weights with their biases; hidden "
           "512, MLP 2048); the gradients are inputs")
def build_adamw_48t():
    hidden, mlp = 512, 2048
    layer = {"ln1_g": (hidden,), "ln1_b": (hidden,), "w_qkv": (hidden, 3 * hidden),
             "b_qkv": (3 * hidden,), "w_o": (hidden, hidden), "b_o": (hidden,),
             "ln2_g": (hidden,), "ln2_b": (hidden,), "w_fc": (hidden, mlp), "b_fc": (mlp,),
             "w_proj": (mlp, hidden), "b_proj": (hidden,)}
    params = avals({f"layer{index}": layer for index in range(4)})

    def step(params, grads, opt):
        return adamw(params, clip_by_global_norm(grads), opt)

    return step, (params, params, adamw_state(params)), element_count(params)


# --------------------------------------------------------------------------------------------
# Convolutional networks (forward + backward)
# --------------------------------------------------------------------------------------------


def group_norm(x, gamma, beta, groups=32, eps=1e-5):
    """GroupNorm over NHWC with f32 statistics per (sample, group)."""
    n, h, w, c = x.shape
    xg = x.astype(F32).reshape(n, h, w, groups, c // groups)
    mean = jnp.mean(xg, axis=(1, 2, 4), keepdims=True)
    var = jnp.mean(jnp.square(xg - mean), axis=(1, 2, 4), keepdims=True)
    y = ((xg - mean) * lax.rsqrt(var + eps)).reshape(n, h, w, c)
    return bf16(y * gamma + beta)


@hlo_model("unet_resblock", "unet",
           "diffusion UNet ResBlock forward + backward (VJP): GroupNorm(32) + SiLU, 3x3 NHWC conv, "
           "time-embedding projection added per channel, GroupNorm + SiLU, 3x3 conv, 1x1 conv "
           "skip (320 -> 640 channels); batch 16, 64x64 latents, bf16 activations")
def build_unet_resblock():
    batch, size, c_in, c_out, t_dim = 16, 64, 320, 640, 1280
    params = avals({"gn1_g": (c_in,), "gn1_b": (c_in,), "conv1_w": (3, 3, c_in, c_out),
                    "conv1_b": (c_out,), "temb_w": (t_dim, c_out), "temb_b": (c_out,),
                    "gn2_g": (c_out,), "gn2_b": (c_out,), "conv2_w": (3, 3, c_out, c_out),
                    "conv2_b": (c_out,), "skip_w": (1, 1, c_in, c_out), "skip_b": (c_out,)})

    def forward(params, inputs):
        x, temb = inputs
        p = params
        h = conv(jax.nn.silu(group_norm(x, p["gn1_g"], p["gn1_b"])), p["conv1_w"])
        h = h + bf16(p["conv1_b"])
        h = h + dense(jax.nn.silu(temb), p["temb_w"], p["temb_b"])[:, None, None, :]
        h = conv(jax.nn.silu(group_norm(h, p["gn2_g"], p["gn2_b"])), p["conv2_w"])
        h = h + bf16(p["conv2_b"])
        return conv(x, p["skip_w"]) + bf16(p["skip_b"]) + h

    inputs = (aval((batch, size, size, c_in), BF16), aval((batch, t_dim), F32))
    dy = aval((batch, size, size, c_out), BF16)
    return forward_backward(forward), (params, inputs, dy), element_count(params)


def batch_norm_train(x, p, momentum=0.9, eps=1e-5):
    """Training-mode BatchNorm over N, H, W with f32 batch statistics; also returns the
    updated running statistics (unbiased variance, as PyTorch keeps them)."""
    xf = x.astype(F32)
    mean = jnp.mean(xf, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(xf - mean), axis=(0, 1, 2))
    y = bf16((xf - mean) * lax.rsqrt(var + eps) * p["gamma"] + p["beta"])
    count = x.shape[0] * x.shape[1] * x.shape[2]
    running = {"mean": momentum * p["mean"] + (1 - momentum) * lax.stop_gradient(mean),
               "var": momentum * p["var"]
               + (1 - momentum) * lax.stop_gradient(var) * (count / (count - 1))}
    return y, running


def bn_shapes(channels):
    return {"gamma": (channels,), "beta": (channels,), "mean": (channels,), "var": (channels,)}


def forward_backward_with_stats(forward):
    """forward_backward for a forward(params, x) -> (y, running statistics)."""

    def f(params, x, dy):
        y, vjp, running = jax.vjp(forward, params, x, has_aux=True)
        return (y, running, *vjp(dy))

    return f


@hlo_model("resnet_bottleneck_stage", "resnet",
           "ResNet-50 stage conv2_x forward + backward (VJP): 3 bottleneck blocks (1x1 -> 3x3 -> "
           "1x1 convs, 64 -> 256 channels, projection shortcut on the first) with training-mode "
           "BatchNorm (batch statistics, running-stat updates) + ReLU; batch 64, 56x56, NHWC bf16")
def build_resnet_bottleneck_stage():
    batch, size, c_in, mid, c_out = 64, 56, 64, 64, 256
    blocks = []
    for i in range(3):
        cin = c_in if i == 0 else c_out
        block = {"w1": (1, 1, cin, mid), "bn1": bn_shapes(mid), "w2": (3, 3, mid, mid),
                 "bn2": bn_shapes(mid), "w3": (1, 1, mid, c_out), "bn3": bn_shapes(c_out)}
        if i == 0:
            block.update(w_proj=(1, 1, cin, c_out), bn_proj=bn_shapes(c_out))
        blocks.append(block)
    params = avals(blocks)

    def forward(params, x):
        running = []
        for p in params:
            h, r1 = batch_norm_train(conv(x, p["w1"]), p["bn1"])
            h, r2 = batch_norm_train(conv(jax.nn.relu(h), p["w2"]), p["bn2"])
            h, r3 = batch_norm_train(conv(jax.nn.relu(h), p["w3"]), p["bn3"])
            stats = [r1, r2, r3]
            shortcut = x
            if "w_proj" in p:
                shortcut, r_proj = batch_norm_train(conv(x, p["w_proj"]), p["bn_proj"])
                stats.append(r_proj)
            x = jax.nn.relu(h + shortcut)
            running.append(stats)
        return x, running

    x = aval((batch, size, size, c_in), BF16)
    dy = aval((batch, size, size, c_out), BF16)
    return forward_backward_with_stats(forward), (params, x, dy), element_count(params)


@hlo_model("efficientnet_mbconv", "efficientnet",
           "EfficientNet-B0 MBConv6 block forward + backward (VJP): 1x1 expand conv (24 -> 144), "
           "BatchNorm (training) + SiLU, 3x3 depthwise conv, BatchNorm + SiLU, squeeze-excite "
           "(global average pool, 144 -> 6 -> 144, sigmoid gate), 1x1 project conv, BatchNorm, "
           "residual; batch 128, 56x56, NHWC bf16")
def build_efficientnet_mbconv():
    batch, size, c, expand, se = 128, 56, 24, 144, 6
    params = avals({"w_expand": (1, 1, c, expand), "bn0": bn_shapes(expand),
                    "w_dw": (3, 3, 1, expand), "bn1": bn_shapes(expand),
                    "se_w1": (expand, se), "se_b1": (se,), "se_w2": (se, expand),
                    "se_b2": (expand,), "w_project": (1, 1, expand, c), "bn2": bn_shapes(c)})

    def forward(p, x):
        h, r0 = batch_norm_train(conv(x, p["w_expand"]), p["bn0"])
        h, r1 = batch_norm_train(conv(jax.nn.silu(h), p["w_dw"], groups=expand), p["bn1"])
        h = jax.nn.silu(h)
        pooled = jnp.mean(h.astype(F32), axis=(1, 2))
        gate = jax.nn.sigmoid(dense(jax.nn.silu(dense(pooled, p["se_w1"], p["se_b1"])),
                                    p["se_w2"], p["se_b2"]))
        h = h * gate[:, None, None, :]
        h, r2 = batch_norm_train(conv(h, p["w_project"]), p["bn2"])
        return x + h, [r0, r1, r2]

    x = aval((batch, size, size, c), BF16)
    return forward_backward_with_stats(forward), (params, x, x), element_count(params)


# --------------------------------------------------------------------------------------------
# Vision and language encoders (inference)
# --------------------------------------------------------------------------------------------


def encoder_layer_shapes(hidden, mlp):
    return {"ln1_g": (hidden,), "ln1_b": (hidden,), "w_qkv": (hidden, 3 * hidden),
            "b_qkv": (3 * hidden,), "w_o": (hidden, hidden), "b_o": (hidden,),
            "ln2_g": (hidden,), "ln2_b": (hidden,), "w1": (hidden, mlp), "b1": (mlp,),
            "w2": (mlp, hidden), "b2": (hidden,)}


def self_attention(x, p, heads):
    b, s, hidden = x.shape
    hd = hidden // heads
    qkv = dense(x, p["w_qkv"], p["b_qkv"])
    q, k, v = (t.reshape(b, s, heads, hd) for t in jnp.split(qkv, 3, axis=-1))
    return dense(attention(q, k, v, scale=F32(hd ** -0.5)), p["w_o"], p["b_o"])


@hlo_model("vit_b16", "vit",
           "ViT-B/16 encoder forward (inference): 16x16 patch conv, class token, learned "
           "positions, 12 pre-LN layers (12 heads, erf GELU MLP 3072), final LayerNorm, "
           "classifier; batch 128, 224x224 images, bf16")
def build_vit_b16():
    batch, size, patch, hidden, heads, mlp, layers, classes = 128, 224, 16, 768, 12, 3072, 12, 1000
    tokens = (size // patch) ** 2 + 1
    params = avals({"patch_w": (patch, patch, 3, hidden), "patch_b": (hidden,),
                    "cls": (1, 1, hidden), "pos": (1, tokens, hidden),
                    "layers": [encoder_layer_shapes(hidden, mlp) for _ in range(layers)],
                    "ln_g": (hidden,), "ln_b": (hidden,), "head_w": (hidden, classes),
                    "head_b": (classes,)})

    def forward(params, images):
        x = conv(images, params["patch_w"], stride=patch, padding="VALID")
        x = (x + bf16(params["patch_b"])).reshape(batch, tokens - 1, hidden)
        cls = jnp.broadcast_to(bf16(params["cls"]), (batch, 1, hidden))
        x = jnp.concatenate([cls, x], axis=1) + bf16(params["pos"])
        for p in params["layers"]:
            x = x + self_attention(layer_norm(x, p["ln1_g"], p["ln1_b"]), p, heads)
            h = dense(layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w1"], p["b1"])
            x = x + dense(jax.nn.gelu(h, approximate=False), p["w2"], p["b2"])
        x = layer_norm(x[:, 0], params["ln_g"], params["ln_b"])
        return dense(x, params["head_w"], params["head_b"]).astype(F32)

    images = aval((batch, size, size, 3), BF16)
    return forward, (params, images), element_count(params)


@hlo_model("bert_base", "bert",
           "BERT-base post-LN encoder forward (inference): word + position + token-type "
           "embeddings, LayerNorm, 12 layers (12 heads with an additive padding mask, erf GELU "
           "MLP 3072, LayerNorm after each residual), tanh pooler; batch 32, seq 512, f16")
def build_bert_base():
    batch, seq, hidden, heads, mlp, layers, vocab = 32, 512, 768, 12, 3072, 12, 30522
    params = avals({"word": (vocab, hidden), "position": (seq, hidden), "token_type": (2, hidden),
                    "emb_ln_g": (hidden,), "emb_ln_b": (hidden,),
                    "layers": [encoder_layer_shapes(hidden, mlp) for _ in range(layers)],
                    "pool_w": (hidden, hidden), "pool_b": (hidden,)})

    def half(x):
        return x.astype(F16)

    def fdense(x, w, b):
        return half(x) @ half(w) + half(b)

    def forward(params, input_ids, token_type_ids, attention_mask):
        x = params["word"][input_ids] + params["position"][None] \
            + params["token_type"][token_type_ids]
        x = half(layer_norm(x, params["emb_ln_g"], params["emb_ln_b"], eps=1e-12))
        # HF's extended attention mask: 0 where attended, a large negative number elsewhere.
        bias = half((1.0 - attention_mask.astype(F32)) * -10000.0)[:, None, None, :]
        b, s, _ = x.shape
        hd = hidden // heads
        for p in params["layers"]:
            qkv = fdense(x, p["w_qkv"], p["b_qkv"])
            q, k, v = (t.reshape(b, s, heads, hd) for t in jnp.split(qkv, 3, axis=-1))
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * F16(hd ** -0.5) + bias
            probs = half(jax.nn.softmax(scores.astype(F32), axis=-1))
            attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, hidden)
            x = layer_norm(x + fdense(attn, p["w_o"], p["b_o"]), p["ln1_g"], p["ln1_b"], 1e-12)
            h = jax.nn.gelu(fdense(x, p["w1"], p["b1"]), approximate=False)
            x = layer_norm(x + fdense(h, p["w2"], p["b2"]), p["ln2_g"], p["ln2_b"], 1e-12)
        pooled = jnp.tanh(fdense(x[:, 0], params["pool_w"], params["pool_b"]))
        return x, pooled

    ids = aval((batch, seq), I32)
    return forward, (params, ids, ids, ids), element_count(params)


# --------------------------------------------------------------------------------------------
# T5 (forward + backward)
# --------------------------------------------------------------------------------------------


def t5_relative_buckets(seq, num_buckets=32, max_distance=128):
    """T5's bidirectional relative-position buckets for a [seq, seq] attention, from iotas:
    exact buckets for small distances, logarithmic ones up to max_distance."""
    relative = jnp.arange(seq)[None, :] - jnp.arange(seq)[:, None]
    half_buckets = num_buckets // 2
    bucket = (relative > 0).astype(I32) * half_buckets
    distance = jnp.abs(relative)
    max_exact = half_buckets // 2
    log_bucket = max_exact + (jnp.log(distance.astype(F32) / max_exact + 1e-6)
                              / math.log(max_distance / max_exact)
                              * (half_buckets - max_exact)).astype(I32)
    log_bucket = jnp.minimum(log_bucket, half_buckets - 1)
    return bucket + jnp.where(distance < max_exact, distance, log_bucket)


@hlo_model("t5_block", "t5",
           "T5 v1.1-style encoder, 2 blocks forward + backward (VJP): RMSNorm without mean "
           "subtraction, 16-head attention without score scaling plus a bucketed relative "
           "position bias (gathered from a learned table, shared by the blocks), gated-GELU FFN "
           "2816; batch 32, seq 512, d_model 1024, bf16 activations")
def build_t5_block():
    batch, seq, d_model, heads, d_kv, d_ff, layers, buckets = 32, 512, 1024, 16, 64, 2816, 2, 32
    layer = {"ln1": (d_model,), "wq": (d_model, heads * d_kv), "wk": (d_model, heads * d_kv),
             "wv": (d_model, heads * d_kv), "wo": (heads * d_kv, d_model), "ln2": (d_model,),
             "wi_0": (d_model, d_ff), "wi_1": (d_model, d_ff), "wo_ff": (d_ff, d_model)}
    params = avals({"rel_bias": (buckets, heads), "layers": [dict(layer) for _ in range(layers)],
                    "final_ln": (d_model,)})

    def forward(params, x):
        b, s, _ = x.shape
        bias = params["rel_bias"][t5_relative_buckets(s, buckets)]  # [q, k, heads]
        bias = jnp.transpose(bias, (2, 0, 1))[None]
        for p in params["layers"]:
            hx = rms_norm(x, p["ln1"])
            q, k, v = (dense(hx, p[w]).reshape(b, s, heads, d_kv) for w in ("wq", "wk", "wv"))
            x = x + dense(attention(q, k, v, bias=bias), p["wo"])
            hx = rms_norm(x, p["ln2"])
            h = jax.nn.gelu(dense(hx, p["wi_0"]), approximate=True) * dense(hx, p["wi_1"])
            x = x + dense(h, p["wo_ff"])
        return rms_norm(x, params["final_ln"])

    x = aval((batch, seq, d_model), BF16)
    return forward_backward(forward), (params, x, x), element_count(params)


# --------------------------------------------------------------------------------------------
# Mixture of experts, MLP-Mixer, GNN, GRU
# --------------------------------------------------------------------------------------------


@hlo_model("moe_top2", "moe",
           "GShard/Switch-style mixture-of-experts layer forward + backward (VJP): router "
           "softmax, top-2 (lax.top_k), capacity 1.25 positions by cumsum, one-hot dispatch and "
           "combine einsums, 8 SwiGLU experts (2048 -> 4096), load-balancing loss; 8192 tokens, "
           "hidden 2048, bf16")
def build_moe_top2():
    tokens, hidden, experts, ffn, top_k = 8192, 2048, 8, 4096, 2
    capacity = int(1.25 * tokens * top_k / experts)
    params = avals({"router": (hidden, experts), "w_gate": (experts, hidden, ffn),
                    "w_up": (experts, hidden, ffn), "w_down": (experts, ffn, hidden)})

    def forward(params, x):
        router_probs = jax.nn.softmax(x.astype(F32) @ params["router"], axis=-1)  # [T, E]
        gates, expert_index = lax.top_k(router_probs, top_k)  # [T, k]
        gates = gates / jnp.sum(gates, axis=-1, keepdims=True)
        expert_mask = jax.nn.one_hot(expert_index, experts, dtype=I32)  # [T, k, E]
        # Slot of every (token, choice) in its expert's buffer: first choices come first.
        flat_mask = jnp.transpose(expert_mask, (1, 0, 2)).reshape(top_k * tokens, experts)
        position = (jnp.cumsum(flat_mask, axis=0) - 1) * flat_mask
        position = jnp.transpose(position.reshape(top_k, tokens, experts), (1, 0, 2))
        position = jnp.sum(position, axis=-1)  # [T, k]
        keep = (position < capacity).astype(F32)
        slot = jax.nn.one_hot(position, capacity, dtype=F32)  # [T, k, C]
        combine = jnp.einsum("tk,tke,tkc->tec", gates * keep, expert_mask.astype(F32), slot)
        dispatch = bf16(combine > 0)
        expert_in = jnp.einsum("tec,td->ecd", dispatch, bf16(x))
        h = jax.nn.silu(jnp.einsum("ecd,edf->ecf", expert_in, bf16(params["w_gate"])))
        h = h * jnp.einsum("ecd,edf->ecf", expert_in, bf16(params["w_up"]))
        expert_out = jnp.einsum("ecf,efd->ecd", h, bf16(params["w_down"]))
        y = jnp.einsum("tec,ecd->td", bf16(combine), expert_out)
        fraction = jnp.mean(expert_mask[:, 0].astype(F32), axis=0)
        aux_loss = experts * jnp.sum(fraction * jnp.mean(router_probs, axis=0))
        return x + y, aux_loss

    def f(params, x, dy):
        (y, aux), vjp = jax.vjp(forward, params, x)
        return (y, aux, *vjp((dy, jnp.ones((), F32))))

    x = aval((tokens, hidden), BF16)
    return f, (params, x, x), element_count(params)


@hlo_model("mixer_b16_step", "mixer",
           "MLP-Mixer-B/16 training step with 2 mixer blocks: patch conv, token-mixing MLP "
           "(transpose, 196 -> 384 -> 196, erf GELU, transpose back) and channel MLP (768 -> "
           "3072 -> 768) with pre-LayerNorm, global average pool, classifier, cross-entropy, "
           "AdamW; batch 128, 224x224 images, bf16 activations")
def build_mixer_b16_step():
    batch, size, patch, hidden, token_mlp, channel_mlp, blocks, classes = \
        128, 224, 16, 768, 384, 3072, 2, 1000
    tokens = (size // patch) ** 2
    block = {"ln1_g": (hidden,), "ln1_b": (hidden,), "tok_w1": (tokens, token_mlp),
             "tok_b1": (token_mlp,), "tok_w2": (token_mlp, tokens), "tok_b2": (tokens,),
             "ln2_g": (hidden,), "ln2_b": (hidden,), "ch_w1": (hidden, channel_mlp),
             "ch_b1": (channel_mlp,), "ch_w2": (channel_mlp, hidden), "ch_b2": (hidden,)}
    params = avals({"patch_w": (patch, patch, 3, hidden), "patch_b": (hidden,),
                    "blocks": [dict(block) for _ in range(blocks)], "ln_g": (hidden,),
                    "ln_b": (hidden,), "head_w": (hidden, classes), "head_b": (classes,)})

    def mlp(x, w1, b1, w2, b2):
        return dense(jax.nn.gelu(dense(x, w1, b1), approximate=False), w2, b2)

    def loss_fn(params, images, labels):
        x = conv(images, params["patch_w"], stride=patch, padding="VALID")
        x = (x + bf16(params["patch_b"])).reshape(batch, tokens, hidden)
        for p in params["blocks"]:
            h = jnp.swapaxes(layer_norm(x, p["ln1_g"], p["ln1_b"]), 1, 2)  # [b, hidden, tokens]
            h = mlp(h, p["tok_w1"], p["tok_b1"], p["tok_w2"], p["tok_b2"])
            x = x + jnp.swapaxes(h, 1, 2)
            h = layer_norm(x, p["ln2_g"], p["ln2_b"])
            x = x + mlp(h, p["ch_w1"], p["ch_b1"], p["ch_w2"], p["ch_b2"])
        pooled = jnp.mean(layer_norm(x, params["ln_g"], params["ln_b"]).astype(F32), axis=1)
        return cross_entropy(dense(pooled, params["head_w"], params["head_b"]), labels)

    images = aval((batch, size, size, 3), BF16)
    labels = aval((batch,), I32)
    args = (params, adamw_state(params), images, labels)
    return train_step(loss_fn, clip=False), args, element_count(params)


@hlo_model("gnn_mpnn", "gnn",
           "message-passing GNN layer training step (f32): gather source and destination node "
           "features per edge, edge MLP on [x_src, x_dst, e] (272 -> 128 -> 128, SiLU), "
           "segment_sum (scatter-add) to destinations, node MLP, LayerNorm, residual, MSE loss, "
           "AdamW; 100k nodes, 1M edges, hidden 128")
def build_gnn_mpnn():
    nodes, edges, hidden, edge_dim = 100_000, 1_000_000, 128, 16
    params = avals({"msg_w1": (2 * hidden + edge_dim, hidden), "msg_b1": (hidden,),
                    "msg_w2": (hidden, hidden), "msg_b2": (hidden,),
                    "upd_w1": (2 * hidden, hidden), "upd_b1": (hidden,),
                    "upd_w2": (hidden, hidden), "upd_b2": (hidden,),
                    "ln_g": (hidden,), "ln_b": (hidden,)})

    def loss_fn(p, x, edge_feat, src, dst, target):
        messages = jnp.concatenate([x[src], x[dst], edge_feat], axis=-1)
        messages = jax.nn.silu(messages @ p["msg_w1"] + p["msg_b1"]) @ p["msg_w2"] + p["msg_b2"]
        aggregated = jax.ops.segment_sum(messages, dst, num_segments=nodes)
        h = jnp.concatenate([x, aggregated], axis=-1)
        h = jax.nn.silu(h @ p["upd_w1"] + p["upd_b1"]) @ p["upd_w2"] + p["upd_b2"]
        y = x + layer_norm(h, p["ln_g"], p["ln_b"])
        return jnp.mean(jnp.square(y - target))

    x = aval((nodes, hidden))
    index = aval((edges,), I32)
    args = (params, adamw_state(params), x, aval((edges, edge_dim)), index, index, x)
    return train_step(loss_fn, clip=False), args, element_count(params)


@hlo_model("gru_16steps", "gru",
           "GRU unrolled over 16 steps, training step: input projections for all steps in one "
           "matmul, per step the recurrent matmul and the reset/update/candidate gates "
           "(sigmoid, tanh), MSE loss on every step's output, backprop through time, SGD with "
           "momentum; batch 2048, input 1024, hidden 2048, bf16 matmuls, f32 state")
def build_gru_16steps():
    steps, batch, n_in, hidden = 16, 2048, 1024, 2048
    params = avals({"w_x": (n_in, 3 * hidden), "w_h": (hidden, 3 * hidden),
                    "b_x": (3 * hidden,), "b_h": (3 * hidden,)})

    def loss_fn(p, xs, h0, targets):
        x_proj = dense(xs, p["w_x"], p["b_x"]).astype(F32)  # [steps, batch, 3 * hidden]
        h, loss = h0, 0.0
        for t in range(steps):  # unrolled, as cuDNN-less frameworks trace it
            h_proj = dense(h, p["w_h"], p["b_h"]).astype(F32)
            xr, xz, xn = jnp.split(x_proj[t], 3, axis=-1)
            hr, hz, hn = jnp.split(h_proj, 3, axis=-1)
            r = jax.nn.sigmoid(xr + hr)
            z = jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * hn)
            h = (1.0 - z) * n + z * h
            loss = loss + jnp.mean(jnp.square(h - targets[t].astype(F32)))
        return loss / steps

    def step(params, velocity, xs, h0, targets, lr=1e-2, momentum=0.9):
        loss, grads = jax.value_and_grad(loss_fn)(params, xs, h0, targets)
        velocity = jax.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
        return loss, params, velocity

    args = (params, params, aval((steps, batch, n_in), BF16), aval((batch, hidden)),
            aval((steps, batch, hidden), BF16))
    return step, args, element_count(params)


# --------------------------------------------------------------------------------------------
# PyTorch models for ONNX (eval mode; weights become graph inputs after export)
# --------------------------------------------------------------------------------------------


def torch_nn():
    # torch is imported on first use: the JAX models alone need no torch.
    import torch
    from torch import nn

    return torch, nn


@onnx_model("resnet_basicblock", "resnet",
            "torchvision ResNet BasicBlock (eval): 3x3 conv, BatchNorm, ReLU, 3x3 conv, "
            "BatchNorm, identity residual, ReLU; 64 channels, batch 128, 56x56, f32 (both "
            "exporters fold the eval-mode BatchNorm into the convolutions)")
def build_resnet_basicblock():
    torch, nn = torch_nn()

    class BasicBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + x)

    torch.manual_seed(0)
    return BasicBlock(64).eval(), (torch.randn(128, 64, 56, 56),)


@onnx_model("convnext_block", "convnext",
            "ConvNeXt-T block (eval): 7x7 depthwise conv, permute to channels-last, LayerNorm "
            "over channels, Linear 96 -> 384, erf GELU, Linear 384 -> 96, layer scale, permute "
            "back, residual; batch 64, 56x56, f32")
def build_convnext_block():
    torch, nn = torch_nn()

    class ConvNeXtBlock(nn.Module):
        def __init__(self, dim, layer_scale=1e-6):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(layer_scale * torch.ones(dim))

        def forward(self, x):
            h = self.dwconv(x).permute(0, 2, 3, 1)
            h = self.pwconv2(self.act(self.pwconv1(self.norm(h))))
            return x + (self.gamma * h).permute(0, 3, 1, 2)

    torch.manual_seed(0)
    return ConvNeXtBlock(96).eval(), (torch.randn(64, 96, 56, 56),)


@onnx_model("bert_layer", "bert",
            "Hugging Face-style BertLayer (eval): Q/K/V Linear, view + permute to heads, "
            "scaled scores + additive mask, softmax, context, output dense + residual + "
            "LayerNorm, intermediate dense + erf GELU, output dense + residual + LayerNorm; "
            "batch 32, seq 512, hidden 768, 12 heads, f32")
def build_bert_layer():
    torch, nn = torch_nn()

    class BertLayer(nn.Module):
        def __init__(self, hidden, heads, intermediate):
            super().__init__()
            self.heads, self.head_dim = heads, hidden // heads
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
            self.attn_out = nn.Linear(hidden, hidden)
            self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.intermediate = nn.Linear(hidden, intermediate)
            self.output = nn.Linear(intermediate, hidden)
            self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

        def split_heads(self, x):
            b, s, _ = x.shape
            return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

        def forward(self, hidden_states, attention_mask):
            q = self.split_heads(self.query(hidden_states))
            k = self.split_heads(self.key(hidden_states))
            v = self.split_heads(self.value(hidden_states))
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + attention_mask
            context = torch.softmax(scores, dim=-1) @ v
            b, _, s, _ = context.shape
            context = context.permute(0, 2, 1, 3).reshape(b, s, -1)
            x = self.attn_norm(self.attn_out(context) + hidden_states)
            h = nn.functional.gelu(self.intermediate(x))
            return self.out_norm(self.output(h) + x)

    torch.manual_seed(0)
    batch, seq, hidden = 32, 512, 768
    mask = torch.zeros(batch, 1, 1, seq)  # HF's extended mask: 0 attended, -10000 padded
    mask[:, :, :, seq - 64:] = -10000.0
    return BertLayer(hidden, 12, 3072).eval(), (torch.randn(batch, seq, hidden), mask)


@onnx_model("llama_layer", "llama",
            "Hugging Face-style LlamaDecoderLayer (eval, eager attention): RMSNorm, Q/K/V "
            "projections, rotary embedding from position ids (rotate_half), grouped-query "
            "attention (16 q / 4 kv heads, repeat_kv) with an additive causal mask input, "
            "SwiGLU MLP 5632, residuals; batch 4, seq 2048, hidden 2048, f32")
def build_llama_layer():
    torch, nn = torch_nn()

    class RMSNorm(nn.Module):
        def __init__(self, hidden, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))
            self.eps = eps

        def forward(self, x):
            variance = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(variance + self.eps))

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, hidden, heads, kv_heads, intermediate, theta=10000.0):
            super().__init__()
            self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
            self.input_norm = RMSNorm(hidden)
            self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
            self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
            self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
            self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
            self.post_norm = RMSNorm(hidden)
            self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
            self.up_proj = nn.Linear(hidden, intermediate, bias=False)
            self.down_proj = nn.Linear(intermediate, hidden, bias=False)
            inv_freq = 1.0 / theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim)
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def rotary(self, position_ids):
            freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos()[:, None], emb.sin()[:, None]  # [batch, 1, seq, head_dim]

        def forward(self, hidden_states, attention_mask, position_ids):
            b, s, _ = hidden_states.shape
            groups = self.heads // self.kv_heads
            x = self.input_norm(hidden_states)
            q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            cos, sin = self.rotary(position_ids)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim)
            k = k.reshape(b, self.heads, s, self.head_dim)
            v = v[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim)
            v = v.reshape(b, self.heads, s, self.head_dim)
            scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + attention_mask
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
            attn = (probs @ v).transpose(1, 2).reshape(b, s, -1)
            hidden_states = hidden_states + self.o_proj(attn)
            x = self.post_norm(hidden_states)
            x = self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))
            return hidden_states + x

    torch.manual_seed(0)
    batch, seq, hidden = 4, 2048, 2048
    mask = torch.full((seq, seq), float("-inf")).triu(1)[None, None]  # [1, 1, seq, seq]
    positions = torch.arange(seq)[None].expand(batch, seq).contiguous()
    net = LlamaDecoderLayer(hidden, 16, 4, 5632).eval()
    return net, (torch.randn(batch, seq, hidden), mask, positions)


# --------------------------------------------------------------------------------------------
# Writing and describing files
# --------------------------------------------------------------------------------------------

DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
               "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8}
HLO_SHAPE = re.compile(r"\b(" + "|".join(DTYPE_BYTES) + r")\[([\d,]*)\]")


def write_gz(path: Path, data: bytes):
    # mtime=0 keeps the gzip bytes reproducible across regenerations.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(data)


def emit_hlo(model: ZooModel) -> Path:
    f, args, _ = model.builder()
    text = jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text(print_large_constants=True)
    assert "{...}" not in text, f"{model.name}: elided constant in the HLO text"
    path = ZOO_DIR / f"{model.name}.hlo.gz"
    write_gz(path, text.encode())
    return path


def weights_to_inputs(proto, min_elements=16):
    """Turn every floating-point initializer with at least `min_elements` elements into a graph
    input, so the file stores the weights' shapes but not their values. Small and integer
    initializers (shapes, axes, scalars) stay: importers need those as constants."""
    import onnx

    floating = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                onnx.TensorProto.DOUBLE}
    keep = []
    for init in proto.graph.initializer:
        if init.data_type in floating and math.prod(init.dims) >= min_elements:
            proto.graph.input.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
        else:
            keep.append(init)
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(keep)
    return proto


def export_torchscript(net, args):
    import io

    import onnx
    import torch

    buffer = io.BytesIO()
    torch.onnx.export(net, args, buffer, dynamo=False, opset_version=TORCHSCRIPT_OPSET,
                      input_names=[f"arg{i}" for i in range(len(args))])
    return onnx.load_from_string(buffer.getvalue())


def export_dynamo(net, args):
    import torch

    program = torch.onnx.export(net, args, dynamo=True, external_data=False)
    return program.model_proto


EXPORTERS = {"torchscript": export_torchscript, "dynamo": export_dynamo}


def emit_onnx(model: ZooModel) -> tuple[list[Path], dict[str, str]]:
    import onnx
    import torch

    net, args = model.builder()
    written, errors = [], {}
    for exporter, export in EXPORTERS.items():
        path = ZOO_DIR / f"{model.name}.{exporter}.onnx.gz"
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # deprecation chatter from the exporters
                proto = weights_to_inputs(export(net, args))
            onnx.checker.check_model(proto, full_check=True)
        except Exception as exc:  # noqa: BLE001 - record the real failure, fake nothing
            errors[path.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            path.unlink(missing_ok=True)
            continue
        write_gz(path, proto.SerializeToString())
        written.append(path)
    return written, errors


def hlo_facts(text: str) -> dict:
    instructions = sum(1 for line in text.splitlines() if re.match(r"^\s+(ROOT )?\S+ = ", line))
    largest = max(DTYPE_BYTES[dtype] * math.prod(int(d) for d in dims.split(",") if d)
                  for dtype, dims in HLO_SHAPE.findall(text))
    return {"exporter": "jax.jit(...).lower", "size": f"{instructions} instructions",
            "largest": largest}


def onnx_facts(data: bytes, exporter: str) -> dict:
    import onnx

    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(data))
    graph = proto.graph
    largest = 0
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor = value.type.tensor_type
        dims = [d.dim_value for d in tensor.shape.dim]
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).itemsize
        largest = max(largest, itemsize * math.prod(dims))
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    return {"exporter": f"{exporter} (opset {opset})", "size": f"{len(graph.node)} nodes",
            "largest": largest}


def weight_count(model: ZooModel) -> int:
    if model.kind == "hlo":
        return model.builder()[2]
    net, _ = model.builder()
    return sum(p.numel() for p in net.parameters())


def zoo_files(model: ZooModel) -> list[Path]:
    if model.kind == "hlo":
        candidates = [ZOO_DIR / f"{model.name}.hlo.gz"]
    else:
        candidates = [ZOO_DIR / f"{model.name}.{e}.onnx.gz" for e in EXPORTERS]
    return [path for path in candidates if path.exists()]


README_HEAD = """\
# Model zoo

Real models from many families at the sizes people train and serve them, for judging the
fusion strategies (`benchmarks/fusion_quality.py`) and the explorer's speed on more than a
handful of files. Generated by

```
/tmp/genvenv/bin/python benchmarks/models/gen_zoo.py
```

with JAX {jax} / jaxlib {jaxlib} (CPU lowering) and torch {torch}, onnx {onnx}, onnxscript
{onnxscript} (pinned versions in `tests/data/requirements-gen.txt`).

- `*.hlo.gz`: gzipped un-optimised HLO text,
  `jax.jit(f).lower(*avals).compiler_ir("hlo").as_hlo_text()`, lowered from
  `jax.ShapeDtypeStruct` arguments (nothing is computed). Training steps take
  `(params, optimizer state, batch...)` and return the loss and the updated state;
  "forward + backward" modules take `(params, inputs, dy)` and return the output (with the
  BatchNorm running statistics or the MoE auxiliary loss where the model has them), the
  parameter gradients and the input gradients of a `jax.vjp`.
- `*.torchscript.onnx.gz`: `torch.onnx.export(..., dynamo=False, opset_version={ts_opset})`;
  `*.dynamo.onnx.gz`: `torch.onnx.export(..., dynamo=True)` at its default opset and
  optimisation. The exported floating-point initializers (weights, BatchNorm statistics) are
  then turned into graph inputs, so the files hold shapes, not values; each file passes
  `onnx.checker.check_model(full_check=True)`. Both exporters fold eval-mode BatchNorm into
  the convolutions. The dynamo files keep the exporter's node metadata (module names, stack
  traces into `gen_zoo.py`), as real exports do, so their bytes change when the script's line
  numbers do.
- Parameters: the model's weight count. Size: HLO instructions in all computations, or ONNX
  nodes in the main graph. Largest tensor: the biggest array any instruction or value has.

| file | family | what | exporter | parameters | size | largest tensor MB | text bytes | gz bytes |
| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |
"""


def write_readme(errors: dict[str, str]):
    import onnx
    import onnxscript
    import torch

    lines = README_HEAD.format(
        jax=jax.__version__, jaxlib=metadata.version("jaxlib"), torch=torch.__version__,
        onnx=onnx.__version__, onnxscript=onnxscript.__version__, ts_opset=TORCHSCRIPT_OPSET,
    ).splitlines()
    for model in ZOO.values():
        files = zoo_files(model)
        if not files:
            continue
        weights = weight_count(model)
        for path in files:
            data = gzip.decompress(path.read_bytes())
            if model.kind == "hlo":
                facts = hlo_facts(data.decode())
            else:
                facts = onnx_facts(data, path.name.split(".")[-3])
            lines.append(
                f"| `{path.name}` | {model.family} | {model.what} | {facts['exporter']} | "
                f"{weights / 1e6:.1f}M | {facts['size']} | {facts['largest'] / 1e6:,.0f} | "
                f"{len(data):,} | {path.stat().st_size:,} |")
    total = sum(p.stat().st_size for p in ZOO_DIR.glob("*.gz"))
    lines += ["", f"Total: {total:,} bytes gzipped."]
    if errors:
        lines += ["", "Exports that failed with these versions:", ""]
        lines += [f"- `{name}`: `{error}`" for name, error in errors.items()]
    (ZOO_DIR / "README.md").write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="regenerate only the models whose name contains this")
    opts = parser.parse_args()

    ZOO_DIR.mkdir(parents=True, exist_ok=True)
    errors = {}
    for model in ZOO.values():
        if opts.only and opts.only not in model.name:
            continue
        if model.kind == "hlo":
            written = [emit_hlo(model)]
        else:
            written, failed = emit_onnx(model)
            errors.update(failed)
            for name, error in failed.items():
                print(f"{name}: EXPORT FAILED: {error}")
        for path in written:
            print(f"{path.name:44s} {path.stat().st_size:>9,} bytes")
    write_readme(errors)


if __name__ == "__main__":
    main()
