"""The modules benchmarks/gpu_campaign.py measures, each defined once as a JAX function (what
`jax.jit` runs and what our compiler imports, lowered to HLO) and, where it is short, as the
same function in PyTorch (what eager PyTorch and `torch.compile` run).

    module = MODULES["softmax"]
    f, avals = module.jax_function("realistic")   # imports jax; avals in parameter order
    g = module.torch_function()                   # None where there is no PyTorch version

Sizes: "realistic" is what the GPU measures — the bandwidth-bound modules move tensors of 64 MB
or more (16M f32 elements), the training steps are small enough for the reference interpreter
to check every kernel on the CPU in seconds (it evaluates each module about six times, and the
whole campaign has 15 minutes of GPU time); "small" is the dry run's, small enough for the
CPU emulator. Every function takes flat arrays in parameter order, so the HLO's parameter k
is the function's argument k, for JAX, PyTorch and our plans alike. The two training steps
reuse benchmarks/models/gen_zoo.py's building blocks (its Llama step, its layers and AdamW).

Without JAX (CI) the functions cannot be lowered; the campaign then reads the HLO that
`gpu_campaign.py --freeze-modules` lowered once with JAX from these same functions,
benchmarks/data/campaign/<name>.<size>.hlo.gz (its README says with which JAX).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
GEN_ZOO = HERE / "models" / "gen_zoo.py"
SIZES = ("small", "realistic")


@dataclass(frozen=True)
class CampaignModule:
    name: str
    what: str
    bandwidth_bound: bool      # memory-bound: judged against XLA's geomean and copy bandwidth
    shapes: dict               # size -> parameters of `build`
    build: Callable            # (jax, jnp, **shape) -> (function, [(shape, dtype name)])
    torch_build: Callable | None = None   # (torch, **shape) -> function of torch tensors
    positive: bool = False     # float inputs drawn positive (second moments, variances)
    int_high: int = 1          # integer inputs drawn from [0, int_high)
    from_zoo: bool = False     # build needs gen_zoo (imported by path, see _gen_zoo)

    def jax_function(self, size: str):
        """(function, [jax.ShapeDtypeStruct] in parameter order) at `size`; ImportError
        without JAX."""
        import jax
        import jax.numpy as jnp

        shape = self._shape(size)
        if self.from_zoo:
            function, specs = self.build(jax, jnp, _gen_zoo(), **shape)
        else:
            function, specs = self.build(jax, jnp, **shape)
        avals = [jax.ShapeDtypeStruct(tuple(dims), jnp.dtype(dtype)) for dims, dtype in specs]
        return function, avals

    def torch_function(self, size: str):
        """The PyTorch version at `size`, or None; ImportError without torch."""
        if self.torch_build is None:
            return None
        import torch

        return self.torch_build(torch, **self._shape(size))

    def _shape(self, size: str) -> dict:
        if size not in self.shapes:
            raise ValueError(f"size must be one of {', '.join(SIZES)}, not {size!r}")
        return self.shapes[size]


def _gen_zoo():
    """benchmarks/models/gen_zoo.py, imported by path. It pins JAX to the CPU when imported
    (it only lowers); the campaign runs JAX on the GPU, so the platform setting it found is
    put back. That works because nothing has started a JAX backend yet at that point."""
    if "gen_zoo" in sys.modules:
        return sys.modules["gen_zoo"]
    import jax

    platforms = jax.config.jax_platforms
    spec = importlib.util.spec_from_file_location("gen_zoo", GEN_ZOO)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_zoo"] = module   # its dataclasses look their module up there
    spec.loader.exec_module(module)
    jax.config.update("jax_platforms", platforms or os.environ.get("JAX_PLATFORMS") or None)
    return module


# -- normalisations, softmax, losses, activations, optimiser ----------------------------------


def _layer_norm(jax, jnp, x, gamma, beta):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta


def build_layer_norm_fwd(jax, jnp, rows, cols):
    def layer_norm(x, gamma, beta):
        return _layer_norm(jax, jnp, x, gamma, beta)
    return layer_norm, [((rows, cols), "float32"), ((cols,), "float32"), ((cols,), "float32")]


def torch_layer_norm_fwd(torch, rows, cols):
    return lambda x, gamma, beta: torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5)


def build_layer_norm_bwd(jax, jnp, rows, cols):
    def layer_norm_bwd(x, gamma, dy):
        _, vjp = jax.vjp(lambda x, g: _layer_norm(jax, jnp, x, g, 0.0), x, gamma)
        return vjp(dy)
    return layer_norm_bwd, [((rows, cols), "float32"), ((cols,), "float32"),
                            ((rows, cols), "float32")]


def torch_layer_norm_bwd(torch, rows, cols):
    def layer_norm_bwd(x, gamma, dy):
        x, gamma = x.detach().requires_grad_(), gamma.detach().requires_grad_()
        y = torch.nn.functional.layer_norm(x, (cols,), gamma, None, 1e-5)
        return torch.autograd.grad(y, (x, gamma), dy)
    return layer_norm_bwd


def build_rms_norm(jax, jnp, rows, cols):
    def rms_norm(x, weight):
        return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + 1e-6) * weight
    return rms_norm, [((rows, cols), "float32"), ((cols,), "float32")]


def torch_rms_norm(torch, rows, cols):
    return lambda x, weight: x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * weight


def build_softmax(jax, jnp, dims):
    return (lambda x: jax.nn.softmax(x, axis=-1)), [(dims, "float32")]


def torch_softmax(torch, dims):
    return lambda x: torch.softmax(x, dim=-1)


def _cross_entropy(jax, jnp, logits, labels):
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=-1))


def build_cross_entropy(jax, jnp, rows, classes):
    def cross_entropy(logits, labels):
        return _cross_entropy(jax, jnp, logits, labels)
    return cross_entropy, [((rows, classes), "float32"), ((rows,), "int32")]


def torch_cross_entropy(torch, rows, classes):
    return lambda logits, labels: torch.nn.functional.cross_entropy(logits, labels.long())


def build_cross_entropy_grad(jax, jnp, rows, classes):
    function, specs = build_cross_entropy(jax, jnp, rows, classes)
    return jax.grad(function), specs


def torch_cross_entropy_grad(torch, rows, classes):
    def cross_entropy_grad(logits, labels):
        logits = logits.detach().requires_grad_()
        loss = torch.nn.functional.cross_entropy(logits, labels.long())
        return torch.autograd.grad(loss, logits)[0]
    return cross_entropy_grad


def build_bias_gelu(jax, jnp, rows, cols):
    return ((lambda x, b: jax.nn.gelu(x + b, approximate=False)),
            [((rows, cols), "float32"), ((cols,), "float32")])


def torch_bias_gelu(torch, rows, cols):
    return lambda x, b: torch.nn.functional.gelu(x + b)


ADAM = {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8}


def build_adam(jax, jnp, count):
    lr, b1, b2, eps = ADAM["lr"], ADAM["b1"], ADAM["b2"], ADAM["eps"]

    def adam(p, g, m, v, step):
        t = step.astype(jnp.float32)
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        p = p - lr * (m / (1.0 - b1 ** t)) / (jnp.sqrt(v / (1.0 - b2 ** t)) + eps)
        return p, m, v
    return adam, [((count,), "float32")] * 4 + [((), "int32")]


def torch_adam(torch, count):
    lr, b1, b2, eps = ADAM["lr"], ADAM["b1"], ADAM["b2"], ADAM["eps"]

    def adam(p, g, m, v, step):
        t = step.float()
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        p = p - lr * (m / (1.0 - b1 ** t)) / (torch.sqrt(v / (1.0 - b2 ** t)) + eps)
        return p, m, v
    return adam


# -- attention and training steps -------------------------------------------------------------


def build_attention_block(jax, jnp, batch, seq, hidden, heads):
    hd = hidden // heads

    def attention_block(x, wq, wk, wv, wo, gamma, beta):
        q, k, v = ((x @ w).reshape(batch, seq, heads, hd) for w in (wq, wk, wv))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (hd ** -0.5)
        causal = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
        probs = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
        attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, seq, hidden)
        return _layer_norm(jax, jnp, x + attn @ wo, gamma, beta)
    return attention_block, ([((batch, seq, hidden), "float32")]
                             + [((hidden, hidden), "float32")] * 4
                             + [((hidden,), "float32")] * 2)


def torch_attention_block(torch, batch, seq, hidden, heads):
    hd = hidden // heads

    def attention_block(x, wq, wk, wv, wo, gamma, beta):
        q, k, v = ((x @ w).reshape(batch, seq, heads, hd) for w in (wq, wk, wv))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * (hd ** -0.5)
        causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        probs = torch.softmax(torch.where(causal, scores, -1e9), dim=-1)
        attn = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, seq, hidden)
        return torch.nn.functional.layer_norm(x + attn @ wo, (hidden,), gamma, beta, 1e-5)
    return attention_block


def _flat(jax, function, args):
    """`function` of pytree `args` as a function of their leaves, with the leaves' specs."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    specs = [(leaf.shape, leaf.dtype.name) for leaf in leaves]
    return (lambda *flat: function(*jax.tree_util.tree_unflatten(tree, flat))), specs


def build_transformer_step(jax, jnp, zoo, layers, batch, seq, hidden, heads, vocab):
    """A GPT-style pre-LN training step from gen_zoo's blocks (bf16 activations, f32 master
    weights, tied embeddings, cross-entropy, global-norm clipping, AdamW)."""
    hd = hidden // heads
    layer = {"ln1_g": (hidden,), "ln1_b": (hidden,), "w_qkv": (hidden, 3 * hidden),
             "w_o": (hidden, hidden), "ln2_g": (hidden,), "ln2_b": (hidden,),
             "w_fc": (hidden, 4 * hidden), "w_proj": (4 * hidden, hidden)}
    params = zoo.avals({"wte": (vocab, hidden), "layers": [dict(layer) for _ in range(layers)],
                        "lnf_g": (hidden,), "lnf_b": (hidden,)})

    def loss_fn(params, tokens, targets):
        b, s = tokens.shape
        x = params["wte"][tokens]
        mask = zoo.causal_mask(s)
        for p in params["layers"]:
            qkv = zoo.dense(zoo.layer_norm(x, p["ln1_g"], p["ln1_b"]), p["w_qkv"])
            q, k, v = (t.reshape(b, s, heads, hd) for t in jnp.split(qkv, 3, axis=-1))
            attn = zoo.attention(q, k, v, mask=mask, scale=zoo.F32(hd ** -0.5))
            x = x + zoo.dense(attn, p["w_o"]).astype(zoo.F32)
            hx = zoo.dense(zoo.layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w_fc"])
            x = x + zoo.dense(jax.nn.gelu(hx, approximate=True), p["w_proj"]).astype(zoo.F32)
        hx = zoo.layer_norm(x, params["lnf_g"], params["lnf_b"])
        return zoo.cross_entropy(zoo.dense(hx, params["wte"].T), targets)

    tokens = zoo.aval((batch, seq), zoo.I32)
    args = (params, zoo.adamw_state(params), tokens, tokens)
    return _flat(jax, zoo.train_step(loss_fn), args)


def build_llama_step(jax, jnp, zoo, **config):
    """gen_zoo's Llama-style training step (RMSNorm, RoPE, GQA, SwiGLU, AdamW) at `config`."""
    function, args, _ = zoo.llama_step(zoo.LlamaConfig(**config))
    return _flat(jax, function, args)


# -- the table --------------------------------------------------------------------------------

# 16M f32 elements: 64 MB per tensor.
_ROWS, _COLS = 16384, 1024

MODULES: dict[str, CampaignModule] = {m.name: m for m in (
    CampaignModule("layer_norm_fwd", "LayerNorm forward over the last axis", True,
                   {"small": {"rows": 64, "cols": 128},
                    "realistic": {"rows": _ROWS, "cols": _COLS}},
                   build_layer_norm_fwd, torch_layer_norm_fwd),
    CampaignModule("layer_norm_bwd", "LayerNorm backward (dx, dgamma) from dy", True,
                   {"small": {"rows": 64, "cols": 128},
                    "realistic": {"rows": _ROWS, "cols": _COLS}},
                   build_layer_norm_bwd, torch_layer_norm_bwd),
    CampaignModule("rms_norm", "RMSNorm x * rsqrt(mean(x^2) + eps) * w", True,
                   {"small": {"rows": 64, "cols": 128},
                    "realistic": {"rows": _ROWS, "cols": _COLS}},
                   build_rms_norm, torch_rms_norm),
    CampaignModule("softmax", "softmax over the last axis of attention scores", True,
                   {"small": {"dims": (2, 4, 16, 32)},
                    "realistic": {"dims": (16, 16, 256, 256)}},
                   build_softmax, torch_softmax),
    CampaignModule("cross_entropy", "mean cross-entropy of f32 logits and int32 labels", True,
                   {"small": {"rows": 32, "classes": 256},
                    "realistic": {"rows": 8192, "classes": 2048}},
                   build_cross_entropy, torch_cross_entropy, int_high=256),
    CampaignModule("cross_entropy_grad", "gradient of the cross-entropy w.r.t. the logits",
                   True, {"small": {"rows": 32, "classes": 256},
                          "realistic": {"rows": 8192, "classes": 2048}},
                   build_cross_entropy_grad, torch_cross_entropy_grad, int_high=256),
    CampaignModule("bias_gelu", "x + b then exact (erf) GELU", True,
                   {"small": {"rows": 64, "cols": 128},
                    "realistic": {"rows": _ROWS, "cols": _COLS}},
                   build_bias_gelu, torch_bias_gelu),
    CampaignModule("adam", "one Adam step with bias correction (p, g, m, v, step)", True,
                   {"small": {"count": 4096}, "realistic": {"count": _ROWS * _COLS}},
                   build_adam, torch_adam, positive=True, int_high=10),
    CampaignModule("attention_block", "causal self-attention, projections, residual, post-LN",
                   False, {"small": {"batch": 2, "seq": 16, "hidden": 64, "heads": 4},
                           "realistic": {"batch": 8, "seq": 1024, "hidden": 1024,
                                         "heads": 16}},
                   build_attention_block, torch_attention_block),
    CampaignModule("transformer_step", "GPT-style training step, 2 layers (gen_zoo blocks)",
                   False, {"small": {"layers": 1, "batch": 2, "seq": 16, "hidden": 32,
                                     "heads": 2, "vocab": 64},
                           "realistic": {"layers": 2, "batch": 4, "seq": 256, "hidden": 512,
                                         "heads": 8, "vocab": 8192}},
                   build_transformer_step, positive=True, int_high=64, from_zoo=True),
    CampaignModule("llama_step", "Llama-style training step, 2 layers (gen_zoo's)", False,
                   {"small": {"layers": 1, "batch": 2, "seq": 16, "hidden": 32, "heads": 4,
                              "kv_heads": 2, "mlp": 64, "vocab": 64},
                    "realistic": {"layers": 2, "batch": 2, "seq": 512, "hidden": 512,
                                  "heads": 8, "kv_heads": 2, "mlp": 1408, "vocab": 8192}},
                   build_llama_step, positive=True, int_high=64, from_zoo=True),
)}
