"""The xla-gpu strategy: XLA:GPU's own fusions, compiled deviceless, read back onto our graph.

References: XLA's optimised module itself (its fusion instructions and the op_name each
instruction keeps) and the reference interpreter (a plan run kernel by kernel must give the
graph's outputs).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.cli import main as cli_main
from compiler.fusion import xla_gpu
from compiler.fusion.explore import OUR_STRATEGIES, explore, parse_strategies
from compiler.importers import import_bytes, load_graphs
from compiler.ir.interpreter import evaluate
from compiler.kernels.grouping import FUSIBLE, LIBRARY, node_role
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import check_plan, execute_plan
from compiler.stages.graph_view import fusion_graph
from compiler.stages.pipeline import import_graph
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"
CORPUS = HLO.parent / "xla"        # XLA's own HLO test inputs, vendored

pytest.importorskip("jax_plugins.xla_cuda12", reason="the xla-gpu strategy needs "
                    "jax-cuda12-plugin (requirements.txt)")


def _graph(name: str):
    path = HLO / f"{name}.hlo"
    return import_graph(path.read_bytes(), str(path))


def _inputs(name: str, graph) -> list:
    archive = np.load(HLO / f"{name}.inputs.npz")
    return [archive[f"arg{i}"] for i in range(len(graph.parameters))]


@pytest.fixture(scope="module")
def optimised() -> dict:
    """XLA:GPU's optimised module (H100) of a few test graphs, compiled once, imported."""
    out = {}
    for name in ("layer_norm_fwd", "softmax", "transformer_step_bf16", "ops_gather_scatter"):
        graph = _graph(name)
        text = xla_gpu.compile_optimised(graph, get_device("h100"))
        out[name] = (graph, import_bytes(text.encode(), f"{name}.optimised.hlo")[0], text)
    return out


def _launches(graph, module):
    return xla_gpu.xla_kernels(module, xla_gpu.printed_names(graph))


def _plan(graph, module):
    return xla_gpu.plan_from_launches(graph, _launches(graph, module),
                                      SolModel(graph, get_device("h100")))


def test_every_instruction_sent_to_xla_carries_its_own_name():
    graph = _graph("softmax")
    text = xla_gpu.named_hlo(graph)
    for node in graph:
        assert f'metadata={{op_name="{node.name}"}}' in text
    # The text is what XLA parses: printing dropped no node.
    assert import_bytes(text.encode(), "named.hlo")[0].nodes.keys() == graph.nodes.keys()


@pytest.mark.parametrize("name", ["layer_norm_fwd", "softmax", "transformer_step_bf16",
                                  "ops_gather_scatter"])
def test_the_plan_follows_xlas_fusions_and_computes_the_graph(name, optimised):
    graph, module, _ = optimised[name]
    plan = _plan(graph, module)
    check_plan(graph, plan)
    inputs = _inputs(name, graph)
    for got, want in zip(execute_plan(graph, plan, inputs), evaluate(graph, inputs)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

    # Every XLA launch that computes nodes of ours is a kernel owning some of them (a GEMM
    # fusion: the library call, with what it fused beside it), and no two launches share one.
    ours = {n.name for n in graph if node_role(n) in (FUSIBLE, LIBRARY)}
    owner = plan.owner()
    launches = [{n for n, _ in names} & ours for _, _, names in _launches(graph, module)]
    launches = [names for names in launches if names]
    seen = [n for names in launches for n in names]
    once = {n for n in seen if seen.count(n) == 1}   # XLA duplicates cheap ops into fusions
    homes = [{owner[n] for n in names & once if n in owner} for names in launches]
    assert all(homes[i] for i, names in enumerate(launches) if names & once)
    assert len(plan.kernels) >= len([names for names in launches if names & once])
    library = {k.name for k in plan.kernels if k.kind == "library"}
    for first, second in zip(homes, homes[1:]):
        assert not (first & second) - library


def test_xla_fuses_a_whole_layer_norm_into_one_kernel_as_xla_says(optimised):
    graph, module, _ = optimised["layer_norm_fwd"]
    (launch,) = [k for k in _launches(graph, module) if k[2]]
    named = {n for n, _ in launch[2]}
    assert launch[1].startswith("kCustom __triton") or launch[1].startswith("kInput")
    plan = _plan(graph, module)
    assert len(plan.kernels) == 1
    (kernel,) = plan.kernels
    assert named <= set(kernel.nodes) | set(kernel.recomputed) | {n.name for n in graph}
    assert named & set(kernel.nodes)
    assert kernel.kind in ("stitch-regional", "input")
    assert kernel.xla_name == launch[0]
    # The nodes XLA folded away (reshapes into layouts) are reported, not dropped.
    assert all(n in kernel.nodes or n in kernel.recomputed
               for n in graph.nodes if node_role(graph.nodes[n]) == FUSIBLE)


def test_a_gemm_fusion_is_our_library_call_with_its_epilogue_beside_it(optimised):
    graph, module, _ = optimised["transformer_step_bf16"]
    plan = _plan(graph, module)
    dots = [n.name for n in graph if n.op == "dot"]
    owner = plan.owner()
    assert all(dot in owner for dot in dots)
    for kernel in plan.kernels:
        if kernel.kind == "library":
            assert len(kernel.nodes) == 1
    assert any("__triton" in d.reason for d in plan.decisions)
    # The library call and the ops XLA fused with it, run beside it here, keep the name of
    # XLA's one launch.
    gemms = {k.xla_name for k in plan.kernels if k.kind == "library"}
    assert any(k.kind != "library" and k.xla_name in gemms for k in plan.kernels)


@pytest.mark.parametrize("name", ["layer_norm_fwd", "softmax", "transformer_step_bf16",
                                  "ops_gather_scatter"])
def test_each_kernel_carries_the_name_xla_gave_its_launch(name, optimised):
    graph, module, text = optimised[name]
    plan = _plan(graph, module)
    launches = {launch: {n for n, _ in instructions}
                for launch, _, instructions in _launches(graph, module)}
    named = [k for k in plan.kernels if k.xla_name is not None]
    assert named
    for kernel in named:
        assert re.search(rf"^\s*(ROOT )?%?{re.escape(kernel.xla_name)} = ", text, re.MULTILINE)
        assert kernel.to_dict(plan.device)["xla_name"] == kernel.xla_name
    # A kernel owns nodes of the launch it is named after, or nodes the decisions say were
    # placed there (XLA computed them ahead of an operand, or left no instruction named after
    # them).
    moved = {d.subject for d in plan.decisions
             if "ahead of a kernel" in d.reason or "beyond recognition" in d.reason}
    for kernel in named:
        assert launches[kernel.xla_name] & set(kernel.nodes) or set(kernel.nodes) <= moved
    # Kernels of ours XLA has no launch for (a node XLA rewrote beyond recognition, placed in
    # a kernel of its own) carry no name.
    for kernel in plan.kernels:
        if kernel.xla_name is None:
            assert not any(set(kernel.nodes) & nodes for nodes in launches.values())


# The graphs of XLA's own test modules that hold bitcasts or copies (modules taken after its
# layout assignment), which XLA's compile through StableHLO has no form for.
LAYOUT_OPS = [(path, index) for path in sorted(CORPUS.glob("*.hlo"))
              if re.search(r" (bitcast|copy)\(", path.read_text())
              for index, graph in enumerate(load_graphs(str(path)))
              if {"bitcast", "copy"} & {node.op for node in graph}]


@pytest.mark.parametrize("path, index", LAYOUT_OPS,
                         ids=lambda value: getattr(value, "name", str(value)))
def test_bitcasts_and_copies_are_sent_as_ops_that_compute_the_same(path, index):
    graph = load_graphs(str(path))[index]
    sent = xla_gpu.compilable(graph)
    assert not {"bitcast", "copy"} & {node.op for node in sent}
    assert set(graph.nodes) <= set(sent.nodes)       # each keeps its name: XLA's op_name
    inputs = random_inputs(graph)
    for got, want in zip(evaluate(sent, inputs), evaluate(graph, inputs)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["transpose__packed_transpose_multiple_heroes",
                                  "transpose__multiple_roots"])
def test_a_module_with_bitcasts_between_layouts_or_copies_gets_xlas_plan(name):
    (graph,) = load_graphs(str(CORPUS / f"{name}.hlo"))
    assert {"bitcast", "copy"} & {node.op for node in graph}
    plan = explore(graph, "h100", ["xla-gpu"])["xla-gpu"]
    assert plan.unavailable is None and plan.kernels
    check_plan(graph, plan)
    inputs = random_inputs(graph)
    for got, want in zip(execute_plan(graph, plan, inputs), evaluate(graph, inputs)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_all_keeps_meaning_our_four_strategies_and_xla_gpu_is_named_explicitly():
    assert parse_strategies("all") == list(OUR_STRATEGIES)
    assert parse_strategies("xla,xla-gpu,cost") == ["xla", "xla-gpu", "cost"]


def test_explore_puts_xla_gpu_beside_our_plans_and_cost_ignores_it():
    graph = _graph("softmax")
    plans = explore(graph, "h100", ["xla", "xla-gpu", "cost"])
    assert list(plans) == ["xla", "xla-gpu", "cost"]
    assert plans["xla-gpu"].unavailable is None and plans["xla-gpu"].kernels
    assert plans["xla-gpu"].total_projected_us is not None
    check_plan(graph, plans["xla-gpu"])


def test_the_cli_shows_xla_gpu_in_json_and_text(capsys):
    path = str(HLO / "softmax.hlo")
    assert cli_main(["explore", path, "--strategy", "xla,xla-gpu,cost", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["strategies"]) == ["xla", "xla-gpu", "cost"]
    assert result["strategies"]["xla-gpu"]["unavailable"] is None
    assert result["strategies"]["xla-gpu"]["kernel_count"] >= 1
    # XLA's names for the kernels are in the xla-gpu plan only.
    (kernel,) = result["strategies"]["xla-gpu"]["kernels"]
    assert kernel["xla_name"]
    assert all(k["xla_name"] is None for k in result["strategies"]["xla"]["kernels"])
    assert cli_main(["explore", path, "--strategy", "xla-gpu"]) == 0
    text = capsys.readouterr().out
    assert "== xla-gpu: 1 kernels" in text and f"(XLA: {kernel['xla_name']})" in text


def test_the_fusion_view_carries_xlas_names_for_its_search(optimised):
    graph, module, _ = optimised["transformer_step_bf16"]
    plan = _plan(graph, module)
    view = fusion_graph(graph, plan.to_dict()["kernels"])
    assert [k["xla_name"] for k in view["kernels"]] == [k.xla_name for k in plan.kernels]


def test_a_stablehlo_upload_gets_xlas_plan_too():
    jax = pytest.importorskip("jax")

    def norm(x, g):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g

    x = np.linspace(-1, 1, 4 * 64, dtype=np.float32).reshape(4, 64)
    g = np.ones(64, np.float32)
    text = jax.jit(norm).lower(x, g).as_text()
    graph = import_bytes(text.encode(), "norm.mlir")[0]
    plan = explore(graph, "h100", ["xla-gpu"])["xla-gpu"]
    assert plan.unavailable is None
    check_plan(graph, plan)
    assert len(plan.kernels) == 1           # XLA:GPU: one (Triton) normalisation fusion
    (got,) = execute_plan(graph, plan, [x, g])
    np.testing.assert_allclose(got, np.asarray(norm(x, g)), rtol=1e-5, atol=1e-6)


def test_without_the_plugin_the_strategy_says_why_and_the_others_run(monkeypatch, tmp_path):
    """The child's answer when it cannot compile (exit 4, a reason) becomes the plan's
    `unavailable`; explore still makes the other plans."""
    monkeypatch.setenv("FUSION_EXPLORER_CACHE_DIR", str(tmp_path))

    reason = ("XLA:GPU cannot compile here without a GPU: install the pip packages "
              "jax-cuda12-plugin and jax-cuda12-pjrt")

    def missing(command, **kwargs):
        return subprocess.CompletedProcess(command, 4, "",
                                           f"noise\nxla-gpu: {json.dumps(reason)}\n")

    monkeypatch.setattr(xla_gpu.subprocess, "run", missing)
    graph = _graph("softmax")
    plans = explore(graph, "h100", ["xla", "xla-gpu"])
    assert plans["xla"].kernels
    assert plans["xla-gpu"].kernels == []
    assert "jax-cuda12-plugin" in plans["xla-gpu"].unavailable
    entry = plans["xla-gpu"].to_dict()
    assert entry["total"]["proj_us"] is None and entry["unavailable"]


def _refused_text(graph) -> str:
    """`graph`'s HLO with one opcode XLA has never heard of."""
    lines = xla_gpu.named_hlo(graph).splitlines()
    index = next(i for i, line in enumerate(lines) if " exponential(" in line)
    lines[index] = lines[index].replace(" exponential(", " exponentialish(")
    return "\n".join(lines) + "\n"


def test_a_module_xla_refuses_is_reported_with_all_of_xlas_message(monkeypatch, capsys,
                                                                     tmp_path):
    """XLA's parser says where it stopped over several lines (the error, the line it was
    reading, a caret under the column): the plan's `unavailable` and the CLI give them all."""
    monkeypatch.setenv("FUSION_EXPLORER_CACHE_DIR", str(tmp_path))
    graph = _graph("softmax")
    text = _refused_text(graph)
    monkeypatch.setattr(xla_gpu, "named_hlo", lambda _: text)
    bad = next(line for line in text.splitlines() if "exponentialish" in line)

    reason = explore(graph, "h100", ["xla-gpu"])["xla-gpu"].unavailable
    lines = reason.splitlines()
    assert lines[0].startswith("XLA:GPU refused the module: ") and "Syntax error" in lines[0]
    where = next(line for line in lines if line.startswith("was parsing "))
    row, column = map(int, re.match(r"was parsing (\d+):(\d+):", where).groups())
    assert text.splitlines()[row - 1] == bad and "exponentialish" in where
    quoted = lines.index(bad)               # the line XLA points at, then its caret
    assert lines[quoted + 1] == " " * (column - 1) + "^"

    path = str(HLO / "softmax.hlo")
    assert cli_main(["explore", path, "--strategy", "xla-gpu"]) == 0
    assert reason in capsys.readouterr().out
    assert cli_main(["explore", path, "--strategy", "xla-gpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategies"]["xla-gpu"]["unavailable"] == reason


def test_a_reason_the_child_was_killed_while_writing_is_passed_on_as_it_is():
    stderr = 'noise\nxla-gpu: "XLA:GPU refused the module: INVALID_ARGUMENT: Syntax err'
    assert xla_gpu._reported(stderr) == '"XLA:GPU refused the module: INVALID_ARGUMENT: Syntax err'
    assert xla_gpu._reported("a crash, no reason\n") == ""


def test_a_line_of_xlas_message_longer_than_the_limit_is_cut_around_its_caret():
    """A syntax error in a constant quotes a line of megabytes: what is kept is the part
    around the caret, with the cut said and the caret still under the same character."""
    limit = xla_gpu.MESSAGE_LINE_LIMIT
    line = "".join(chr(ord("a") + i % 26) for i in range(5 * limit))
    column = 3 * limit + 7
    message = f"INVALID_ARGUMENT: Syntax error\nwas parsing 5:{column + 1}\n{line}\n"
    message += " " * column + "^\nafter"
    kept = xla_gpu._shortened(message).splitlines()
    assert kept[:2] == message.splitlines()[:2] and kept[-1] == "after"
    assert len(kept[2]) < limit + 80
    assert kept[2].startswith(f"[{column - limit // 2:,} characters] ")
    assert kept[2].endswith(f" [{5 * limit - column - limit // 2:,} more characters]")
    assert kept[3].strip() == "^" and kept[2][kept[3].index("^")] == line[column]
    short = "error\n  x = f32[] constant(1)\n  ^"
    assert xla_gpu._shortened(short) == short


def test_the_child_names_the_packages_when_the_plugin_is_missing(monkeypatch, capsys):
    from jax.experimental import topologies

    def no_cuda(**kwargs):
        raise NotImplementedError("topology not implemented for cuda")

    monkeypatch.setattr(topologies, "get_topology_desc", no_cuda)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(xla_gpu.named_hlo(
        _graph("softmax"))))
    assert xla_gpu.main(["h100"]) == 4
    error = capsys.readouterr().err
    assert "jax-cuda12-plugin and jax-cuda12-pjrt" in error and error.startswith("xla-gpu: ")


def test_the_target_description_comes_from_our_device_table():
    text = xla_gpu.target_config(get_device("h200"))
    assert "core_count: 132" in text and "memory_bandwidth: 4800000000000" in text
    assert "major: 9" in text and 'device_description_str: "NVIDIA H200 SXM 141GB"' in text


def test_an_uploaded_optimised_dump_shows_xlas_own_fusions_as_the_plan(optimised):
    """A dump XLA already optimised (what --xla_dump_to writes): the importer records each
    fusion's kind and backend, and xla-gpu's kernels are those fusions, without compiling."""
    _, module, text = optimised["transformer_step_bf16"]
    dump = import_bytes(text.encode(), "module.after_optimizations.txt")[0]
    fusions = [line for line in text.split("\nENTRY")[-1].splitlines() if " fusion(" in line]
    assert len(dump.fusions) == len(fusions)
    kinds = {f["kind"] for f in dump.fusions.values()}
    assert kinds <= {"kLoop", "kInput", "kOutput", "kCustom"} and "kLoop" in kinds
    assert any(f["backend_kind"] == "__triton_nested_gemm_fusion" for f in dump.fusions.values())
    plan = explore(dump, "h100", ["xla-gpu"])["xla-gpu"]
    assert plan.unavailable is None
    check_plan(dump, plan)
    assert "optimised output" in plan.decisions[0].reason
    assert {k.xla_name for k in plan.kernels if k.kind != "library"} <= set(dump.fusions)
    # Each fusion is one kernel, or (a GEMM fusion) its library call and the ops beside it.
    assert len(fusions) <= len(plan.kernels)
    library = sum(1 for k in plan.kernels if k.kind == "library")
    assert len(plan.kernels) <= len(fusions) + 2 * library
    owner = plan.owner()
    for fusion in dump.fusions:
        members = [n.name for n in dump if n.fused_in == fusion
                   and node_role(n) in (FUSIBLE, LIBRARY)]
        kernels = {owner[n] for n in members if n in owner}
        assert kernels, fusion
        assert len(kernels) == 1 or any(k.startswith("library") for k in kernels), fusion
