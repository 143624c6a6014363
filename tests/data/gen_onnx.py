"""Generate real ONNX test inputs from small PyTorch models, with both torch exporters.

Run with the generator virtualenv (see tests/data/requirements-gen.txt):

    /tmp/genvenv/bin/python tests/data/gen_onnx.py                        # every model
    /tmp/genvenv/bin/python tests/data/gen_onnx.py --only moe_topk_einsum  # just these

For every model NAME this writes into tests/data/onnx/:
  NAME.torchscript.onnx  torch.onnx.export(..., dynamo=False, opset_version=17)
  NAME.dynamo.onnx       torch.onnx.export(..., dynamo=True) at its default opset
  NAME.inputs.npz        arg0..argN in graph-input order (shared by both files)
  NAME.outputs.npz       out0..outM in graph-output order, from torch's own eval forward
Weights are embedded in the .onnx files (no external data). Every file is checked with
onnx.checker and run with onnxruntime against the torch outputs (atol 1e-4), and
tests/data/onnx/README.md is rewritten with each file's opset and op types.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
ONNX_DIR = HERE / "onnx"
TORCHSCRIPT_OPSET = 17
ATOL = 1e-4

# name -> builder() returning (module in eval mode, tuple of example inputs)
MODELS: dict[str, callable] = {}


def model(name):
    """Register a model builder under `name` (the file stem in tests/data/onnx/)."""

    def register(builder):
        MODELS[name] = builder
        return builder

    return register


@model("transformer_encoder")
def build_transformer_encoder():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
    )
    # enable_nested_tensor=False: the nested-tensor fast path only matters for padding masks
    # and would just warn here.
    net = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 8, 32)
    return net, (x,)


@model("mlp_layernorm")
def build_mlp_layernorm():
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Linear(32, 64),
        nn.LayerNorm(64),
        nn.GELU(),  # exact (erf) GELU, torch's default
        nn.Linear(64, 32),
        nn.LayerNorm(32),
    )
    # Non-trivial LayerNorm affine parameters so a wrong scale/shift would show.
    with torch.no_grad():
        for mod in net:
            if isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1.0 + 0.1 * torch.randn_like(mod.weight))
                mod.bias.copy_(0.1 * torch.randn_like(mod.bias))
    x = torch.randn(4, 32)
    return net.eval(), (x,)


@model("conv_bn_silu")
def build_conv_bn_silu():
    torch.manual_seed(2)
    net = nn.Sequential(nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.SiLU())
    # Eval-mode BatchNorm uses running statistics; give them values far from the (0, 1)
    # defaults so an exporter or interpreter that ignores them gets visibly wrong numbers.
    bn = net[1]
    with torch.no_grad():
        bn.running_mean.copy_(0.5 * torch.randn(8))
        bn.running_var.copy_(0.5 + torch.rand(8) * 2.0)
        bn.weight.copy_(1.0 + 0.2 * torch.randn(8))
        bn.bias.copy_(0.2 * torch.randn(8))
    x = torch.randn(1, 3, 16, 16)
    return net.eval(), (x,)


# Both exporters fold eval-mode BatchNorm into the Conv weights by default (TorchScript's
# constant folding, the dynamo exporter's onnxscript optimizer), so conv_bn_silu has no
# BatchNormalization node. This variant exports the same network with folding/optimisation
# off, keeping a real BatchNormalization (with its running stats) in the graph.
UNFOLDED = {"conv_bn_silu_unfolded"}
model("conv_bn_silu_unfolded")(build_conv_bn_silu)


@model("unet_groupnorm_up")
def build_unet_groupnorm_up():
    # A diffusion-UNet decoder step: GroupNorm -> SiLU -> Conv, a residual add and a nearest
    # 2x upsample. torch exports GroupNorm as Reshape -> InstanceNormalization -> Reshape ->
    # Mul -> Add and the upsample as Resize.
    torch.manual_seed(19)

    class UNetUp(nn.Module):
        def __init__(self, channels=16, groups=4):
            super().__init__()
            self.norm = nn.GroupNorm(groups, channels)
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)

        def forward(self, x):
            h = self.conv(nn.functional.silu(self.norm(x)))
            return nn.functional.interpolate(x + h, scale_factor=2, mode="nearest")

    net = UNetUp()
    with torch.no_grad():  # affine parameters away from (1, 0) so ignoring them would show
        net.norm.weight.copy_(1.0 + 0.2 * torch.randn_like(net.norm.weight))
        net.norm.bias.copy_(0.2 * torch.randn_like(net.norm.bias))
    return net.eval(), (torch.randn(1, 16, 8, 8),)


@model("moe_topk_einsum")
def build_moe_topk_einsum():
    # A top-2 mixture-of-experts layer written with topk and einsum, as many MoE codebases do.
    torch.manual_seed(20)

    class TopTwoExperts(nn.Module):
        def __init__(self, dim=32, experts=4):
            super().__init__()
            self.gate = nn.Linear(dim, experts, bias=False)
            self.experts = nn.Parameter(0.2 * torch.randn(experts, dim, dim))

        def forward(self, x):
            probs = self.gate(x).softmax(-1)
            top, _ = probs.topk(2, dim=-1)
            kept = torch.where(probs >= top[:, -1:], probs, torch.zeros_like(probs))
            kept = kept / kept.sum(-1, keepdim=True)
            per_expert = torch.einsum("td,edf->tef", x, self.experts)
            return torch.einsum("te,tef->tf", kept, per_expert)

    return TopTwoExperts().eval(), (torch.randn(16, 32),)


# --------------------------------------------------------------------------------------------


def export_torchscript(name, net, args, path: Path):
    torch.onnx.export(
        net,
        args,
        str(path),
        dynamo=False,
        opset_version=TORCHSCRIPT_OPSET,
        input_names=[f"arg{i}" for i in range(len(args))],
        do_constant_folding=name not in UNFOLDED,
    )


def export_dynamo(name, net, args, path: Path):
    # external_data=False keeps the (small) weights inside the .onnx file.
    program = torch.onnx.export(
        net, args, dynamo=True, external_data=False, optimize=name not in UNFOLDED
    )
    program.save(str(path), external_data=False)


EXPORTERS = {"torchscript": export_torchscript, "dynamo": export_dynamo}


def op_types(m: onnx.ModelProto) -> list[str]:
    # Include ops inside subgraphs and local functions so nothing hides from the listing.
    ops = set()

    def walk(graph):
        for node in graph.node:
            ops.add(
                node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
            )
            for attr in node.attribute:
                if attr.g is not None and attr.g.node:
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)

    walk(m.graph)
    for fn in m.functions:
        for node in fn.node:
            ops.add(node.op_type)
    return sorted(ops)


def onnx_opset(m: onnx.ModelProto) -> int:
    return next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))


def check_file(path: Path, inputs: list[np.ndarray], expected: list[np.ndarray]) -> dict:
    leftovers = [p.name for p in path.parent.iterdir() if p.name.startswith(path.name + ".")]
    assert not leftovers, f"external data files next to {path.name}: {leftovers}"
    m = onnx.load(str(path), load_external_data=False)
    for init in m.graph.initializer:
        assert init.data_location != onnx.TensorProto.EXTERNAL, f"{path.name}: external tensor"
    onnx.checker.check_model(m, full_check=True)

    graph_inputs = [i.name for i in m.graph.input]
    assert len(graph_inputs) == len(inputs), f"{path.name}: graph inputs {graph_inputs}"
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, dict(zip(graph_inputs, inputs)))
    assert len(got) == len(expected), f"{path.name}: {len(got)} outputs vs {len(expected)}"
    worst = 0.0
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (path.name, g.shape, e.shape)
        worst = max(worst, float(np.max(np.abs(g - e))))
    assert worst <= ATOL, f"{path.name}: onnxruntime differs from torch by {worst}"
    return {
        "opset": onnx_opset(m),
        "ops": op_types(m),
        "inputs": graph_inputs,
        "outputs": [o.name for o in m.graph.output],
        "max_abs_err": worst,
        "bytes": path.stat().st_size,
    }


ONNX_README_HEAD = """\
# ONNX test models

Small PyTorch models exported with both torch exporters; generated by
`/tmp/genvenv/bin/python tests/data/gen_onnx.py` (pinned versions in `../requirements-gen.txt`).
torch {torch}, onnx {onnx}, onnxscript {onnxscript}, onnxruntime {ort}.

- `<model>.torchscript.onnx`: `torch.onnx.export(..., dynamo=False, opset_version={ts_opset})`
- `<model>.dynamo.onnx`: `torch.onnx.export(..., dynamo=True, external_data=False)`, the
  exporter's default opset and optimisation
- `<model>.inputs.npz`: `arg0..` in graph-input order (both files of a model have the same
  single input); `<model>.outputs.npz`: `out0..` in graph-output order, computed by torch's
  eval-mode forward. onnxruntime (CPU) reproduces them within {atol:g} for every file.
- Weights are embedded as initializers; there are no external data files.

Models (fixed seeds, eval mode):
- `transformer_encoder`: nn.TransformerEncoder, 2 layers, d_model 32, 4 heads,
  dim_feedforward 64, batch_first, input [2, 8, 32]
- `mlp_layernorm`: Linear(32,64) -> LayerNorm -> GELU(erf) -> Linear(64,32) -> LayerNorm,
  input [4, 32]
- `conv_bn_silu`: Conv2d(3,8,k3,p1) -> BatchNorm2d (non-trivial running stats) -> SiLU,
  input [1, 3, 16, 16]; both exporters fold the BatchNorm into the Conv by default
- `conv_bn_silu_unfolded`: the same network and input exported with `do_constant_folding=False`
  (TorchScript) / `optimize=False` (dynamo), so the graph keeps a BatchNormalization node
- `unet_groupnorm_up`: GroupNorm(4,16) -> SiLU -> Conv2d(16,16,k3,p1), residual add, nearest
  2x upsample, input [1, 16, 8, 8]; GroupNorm exports as InstanceNormalization, the upsample
  as Resize
- `moe_topk_einsum`: top-2 of 4 experts (softmax gate, topk, masked renormalisation) mixed with
  two einsums, dim 32, input [16, 32]

| file | opset | bytes | max abs err vs torch | op types |
| --- | --- | --- | --- | --- |
"""


def write_readme(results: dict, errors: dict):
    import onnxscript

    lines = ONNX_README_HEAD.format(
        torch=torch.__version__,
        onnx=onnx.__version__,
        onnxscript=onnxscript.__version__,
        ort=ort.__version__,
        ts_opset=TORCHSCRIPT_OPSET,
        atol=ATOL,
    ).splitlines()
    for fname, r in results.items():
        lines.append(
            f"| `{fname}` | {r['opset']} | {r['bytes']} | {r['max_abs_err']:.1e} | "
            f"{', '.join(r['ops'])} |"
        )
    if errors:
        lines += ["", "Exports that failed with this torch version:", ""]
        for fname, err in errors.items():
            lines.append(f"- `{fname}`: `{err}`")
    (ONNX_DIR / "README.md").write_text("\n".join(lines) + "\n")


def export_model(name: str, errors: dict) -> None:
    """Write NAME's inputs, torch outputs and both exports; failed exports go into `errors`."""
    net, args = MODELS[name]()
    with torch.no_grad():
        out = net(*args)
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    inputs = [a.numpy() for a in args]
    expected = [o.numpy() for o in outs]
    np.savez(ONNX_DIR / f"{name}.inputs.npz", **{f"arg{i}": a for i, a in enumerate(inputs)})
    np.savez(ONNX_DIR / f"{name}.outputs.npz", **{f"out{i}": o for i, o in enumerate(expected)})

    for exporter, export in EXPORTERS.items():
        fname = f"{name}.{exporter}.onnx"
        path = ONNX_DIR / fname
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecation chatter from the exporters
                export(name, net, args, path)
        except Exception as exc:  # noqa: BLE001 - record the real failure, fake nothing
            errors[fname] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            path.unlink(missing_ok=True)
            print(f"{fname}: EXPORT FAILED: {errors[fname]}")


def saved_arrays(path: Path, prefix: str) -> list[np.ndarray]:
    with np.load(path) as archive:
        return [archive[f"{prefix}{i}"] for i in range(len(archive.files))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(MODELS), metavar="NAME",
                        help="export only these models; the other files stay as they are")
    ONNX_DIR.mkdir(parents=True, exist_ok=True)
    errors = {}
    for name in parser.parse_args().only or MODELS:
        export_model(name, errors)
    # The README lists every file on disk, so exporting some models keeps the others' rows.
    results = {}
    for name in MODELS:
        if not (ONNX_DIR / f"{name}.inputs.npz").exists():
            continue
        inputs = saved_arrays(ONNX_DIR / f"{name}.inputs.npz", "arg")
        expected = saved_arrays(ONNX_DIR / f"{name}.outputs.npz", "out")
        for exporter in EXPORTERS:
            path = ONNX_DIR / f"{name}.{exporter}.onnx"
            if not path.exists():
                continue
            results[path.name] = r = check_file(path, inputs, expected)
            print(
                f"{path.name:36s} opset={r['opset']} bytes={r['bytes']} "
                f"err={r['max_abs_err']:.1e} ops={' '.join(r['ops'])}"
            )
    write_readme(results, errors)


if __name__ == "__main__":
    main()
