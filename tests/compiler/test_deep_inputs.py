"""Hostile inputs are refused with the limit's name, and what stays within the limits compiles:
no walk of a graph, a shape or a call chain may hit Python's recursion limit, no shape or chain
may make the importers build what no GPU could hold (issue 18).

Zip and gzip bombs are in test_upload_formats.py and test_hlo_import.py, ONNX's escaping
external-data paths and function bombs in test_onnx_import.py, MLIR bytecode that hangs MLIR's
reader in test_stablehlo_import.py."""

import json

import pytest
from onnx import TensorProto, helper

from compiler.errors import LimitError
from compiler.fusion.explore import OUR_STRATEGIES, explore
from compiler.importers import import_bytes
from compiler.kernels.plan import check_plan
from compiler.limits import Limits
from compiler.stages.codegen import generate
from compiler.target.devices import get_device

LIMITS = Limits()


def nested_tuple(depth: int) -> bytes:
    shape = "f32[2]"
    for _ in range(depth):
        shape = f"({shape})"
    return (f"HloModule t\nENTRY main {{\n  p0 = {shape} parameter(0)\n"
            f"  ROOT r = {shape} copy(p0)\n}}\n").encode()


def call_chain(depth: int) -> bytes:
    lines = ["HloModule calls", "c0 {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] negate(a)\n}"]
    for i in range(1, depth):
        lines.append(f"c{i} {{\n  a = f32[4] parameter(0)\n"
                     f"  ROOT b = f32[4] call(a), to_apply=c{i - 1}\n}}")
    lines.append(f"ENTRY main {{\n  p = f32[4] parameter(0)\n"
                 f"  ROOT r = f32[4] call(p), to_apply=c{depth - 1}\n}}")
    return "\n".join(lines).encode()


def elementwise_chain(length: int) -> bytes:
    lines = ["HloModule chain", "ENTRY main {", "  p0 = f32[256] parameter(0)"]
    previous = "p0"
    for i in range(length):
        lines.append(f"  n{i} = f32[256] add({previous}, p0)")
        previous = f"n{i}"
    lines += [f"  ROOT out = f32[256] negate({previous})", "}"]
    return "\n".join(lines).encode()


def test_tuples_nested_past_the_limit_are_refused_with_its_name():
    with pytest.raises(LimitError, match="nested more than 64 levels.*MAX_NESTING"):
        import_bytes(nested_tuple(LIMITS.max_nesting + 1), "deep.hlo")
    with pytest.raises(LimitError, match="MAX_NESTING"):
        import_bytes(nested_tuple(3000), "deeper.hlo")


def nested_tuple_in(fmt: str, depth: int) -> tuple[bytes, str]:
    """A parameter of `depth` nested tuples around an f32[2], returned, in JSON or StableHLO."""
    if fmt == "json":
        shape = '{"tuple": [' * depth + '{"dtype": "f32", "dims": [2]}' + "]}" * depth
        return (f'{{"format": "fusion-explorer-graph", "version": 1, "name": "deep", '
                f'"parameters": [{{"name": "p", "shape": {shape}}}], "nodes": [], '
                f'"outputs": ["p"]}}').encode(), "deep.json"
    mlir_type = "tuple<" * depth + "tensor<2xf32>" + ">" * depth
    return (f"module {{\n  func.func @main(%a: {mlir_type}) -> {mlir_type} {{\n"
            f"    return %a : {mlir_type}\n  }}\n}}\n").encode(), "deep.mlir"


@pytest.mark.parametrize("fmt, depth", [("json", 65), ("json", 450), ("stablehlo", 65),
                                        ("stablehlo", 3000)])
def test_tuples_nested_past_the_limit_are_refused_in_json_and_stablehlo_too(fmt, depth):
    """Found by fuzzing: only HLO text had the limit; 300 levels in JSON or StableHLO made the
    interpreter hit Python's recursion limit, 450 (JSON) or 900 (StableHLO) the importer."""
    data, filename = nested_tuple_in(fmt, depth)
    with pytest.raises(LimitError) as caught:
        import_bytes(data, filename)
    assert str(caught.value).startswith(filename)
    assert "nested more than 64 levels deep (FUSION_EXPLORER_MAX_NESTING)" in str(caught.value)
    within, filename = nested_tuple_in(fmt, LIMITS.max_nesting)
    (graph,) = import_bytes(within, filename)
    assert graph.nodes[graph.parameters[0]].shape.is_tuple


def test_call_chains_past_the_limit_are_refused_with_its_name():
    with pytest.raises(LimitError, match="nested more than 256 deep.*MAX_CALL_DEPTH"):
        import_bytes(call_chain(LIMITS.max_call_depth + 5), "calls.hlo")


@pytest.mark.parametrize("data", [nested_tuple(LIMITS.max_nesting), call_chain(250),
                                  elementwise_chain(2000)],
                         ids=["tuple-64-deep", "calls-250-deep", "chain-2000"])
def test_inputs_within_the_limits_explore_and_generate(data):
    (graph,) = import_bytes(data, "module.hlo")
    plans = explore(graph, "h100", OUR_STRATEGIES)
    for plan in plans.values():
        check_plan(graph, plan)
    codes = generate(graph, plans["cost"], get_device("h100"))
    assert all(code.error is None for code in codes)


def test_a_chain_past_the_recursive_emitters_depth_still_computes_the_graph():
    """The elemental emitter computes a deep elementwise chain without recursion
    (codegen/elemental.py, DEEP_CHAIN); the kernel matches the interpreter on the emulator."""
    from compiler.codegen.elemental import DEEP_CHAIN
    from compiler.stages.codegen import emulate

    (graph,) = import_bytes(elementwise_chain(DEEP_CHAIN + 150), "chain.hlo")
    plan = explore(graph, "h100", ["xla"])["xla"]
    assert len(plan.kernels) == 1
    codes = generate(graph, plan, get_device("h100"))
    emulate(graph, codes)
    (code,) = codes
    assert code.not_checked is None and not code.mismatches
    assert code.max_abs_error is not None


def centring_chain(steps: int) -> bytes:
    """`steps` times x = x - broadcast(sum of x's rows): each step reduces the one before."""
    lines = ["HloModule centring", "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT s = f32[] add(a, b)\n}", "ENTRY main {", "  x0 = f32[64,128] parameter(0)",
             "  zero = f32[] constant(0)"]
    for i in range(steps):
        lines += [f"  r{i} = f32[64] reduce(x{i}, zero), dimensions={{1}}, to_apply=add",
                  f"  b{i} = f32[64,128] broadcast(r{i}), dimensions={{0}}",
                  f"  x{i + 1} = f32[64,128] subtract(x{i}, b{i})"]
    lines += [f"  ROOT out = f32[64,128] negate(x{steps})", "}"]
    return "\n".join(lines).encode()


def test_reductions_of_reductions_fused_deep_are_priced_and_planned():
    """150 chained reduce-broadcast-subtract steps (450 ops, within the kernel cap). Fused into
    one kernel, a schedule whose threads compute their own reductions would recompute each
    inner one for every element reduced: 128^150 evaluations, which the workload count once
    overflowed a float with (OverflowError); it is priced finite, past any other plan. Such a
    kernel's code is over the code budget under any schedule (each reduction's loop computes
    its operand from x0 again, through every subtract before it: the emitter's own count
    passes 20,000 statements), so the strategies cut the chain into kernels within the budget,
    each priced at a finite time under a schedule that hands reduction results on."""
    import math

    from compiler.codegen.emission import emission_refusal
    from compiler.codegen.plan import CodeGenPlan
    from compiler.cost.projected import project_kernel
    from compiler.kernels.grouping import FUSIBLE, node_role
    from compiler.kernels.plan import KernelSpec, build_plan
    from compiler.target.sol import SolModel

    (graph,) = import_bytes(centring_chain(150), "centring.hlo")
    device = get_device("h100")
    nodes = [node.name for node in graph if node_role(node) == FUSIBLE]
    one = build_plan(graph, [KernelSpec(nodes, "stitch-global", dominant="r149")], "test",
                     SolModel(graph, device))
    (kernel,) = one.kernels
    serial = CodeGenPlan(schedule="elementwise", dominant="out", block_size=256, grid_size=32)
    priced = project_kernel(graph, kernel, serial, device).projected_us
    assert math.isfinite(priced) and priced > 1e6
    assert "MAX_KERNEL_STATEMENTS" in emission_refusal(graph, kernel.computed, kernel.outputs)

    plans = explore(graph, "h100", ["stitch", "cost"])
    for plan in plans.values():
        assert 1 < len(plan.kernels) < 10, plan.strategy
        for kernel in plan.kernels:
            assert emission_refusal(graph, kernel.computed, kernel.outputs) is None
            assert math.isfinite(kernel.projected.projected_us)
            assert kernel.projected.projected_us < 1e3


# -- shapes and chains past the limits, in every format -------------------------------------------

TEN_TO_THE_11 = (100_000, 1_000_000)   # 10^11 elements: 400 GB of f32


def parameter_of_shape(fmt: str, dims: tuple[int, ...]) -> tuple[bytes, str]:
    """A graph returning its one f32 parameter of `dims`, in format `fmt`."""
    if fmt == "hlo":
        shape = f"f32[{','.join(map(str, dims))}]"
        return f"HloModule m\nENTRY e {{\n  ROOT p = {shape} parameter(0)\n}}\n".encode(), "m.hlo"
    if fmt == "stablehlo":
        tensor = f"tensor<{'x'.join(map(str, dims))}xf32>"
        return (f"module {{\n  func.func @main(%a: {tensor}) -> {tensor} {{\n"
                f"    return %a : {tensor}\n  }}\n}}\n").encode(), "m.mlir"
    if fmt == "json":
        return json.dumps({"format": "fusion-explorer-graph", "version": 1, "name": "m",
                           "parameters": [{"name": "p", "dtype": "f32", "shape": list(dims)}],
                           "nodes": [], "outputs": ["p"]}).encode(), "m.json"
    graph = helper.make_graph([helper.make_node("Identity", ["p"], ["y"])], "m",
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model.SerializeToString(), "m.onnx"


def negation_chain(fmt: str, length: int) -> tuple[bytes, str]:
    """`length` negations one after another, in format `fmt`."""
    if fmt == "hlo":
        lines = ["HloModule chain", "ENTRY e {", "  n0 = f32[4] parameter(0)"]
        lines += [f"  n{i} = f32[4] negate(n{i - 1})" for i in range(1, length + 1)]
        lines[-1] = lines[-1].replace(f"n{length} =", f"ROOT n{length} =")
        return "\n".join(lines + ["}"]).encode(), "chain.hlo"
    if fmt == "stablehlo":
        lines = ["module {", "  func.func @main(%n0: tensor<4xf32>) -> tensor<4xf32> {"]
        lines += [f"    %n{i} = stablehlo.negate %n{i - 1} : tensor<4xf32>"
                  for i in range(1, length + 1)]
        lines += [f"    return %n{length} : tensor<4xf32>", "  }", "}"]
        return "\n".join(lines).encode(), "chain.mlir"
    if fmt == "json":
        nodes = [{"name": f"n{i}", "op": "negate", "operands": [f"n{i - 1}"]}
                 for i in range(1, length + 1)]
        return json.dumps({"format": "fusion-explorer-graph", "version": 1, "name": "chain",
                           "parameters": [{"name": "n0", "dtype": "f32", "shape": [4]}],
                           "nodes": nodes, "outputs": [f"n{length}"]}).encode(), "chain.json"
    nodes = [helper.make_node("Neg", [f"n{i - 1}"], [f"n{i}"]) for i in range(1, length + 1)]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("n0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(f"n{length}", TensorProto.FLOAT,
                                                             [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model.SerializeToString(), "chain.onnx"


FORMATS = ["hlo", "stablehlo", "json", "onnx"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_shape_of_ten_to_the_eleven_elements_is_refused_with_the_limits_name(fmt):
    data, filename = parameter_of_shape(fmt, TEN_TO_THE_11)
    with pytest.raises(LimitError) as caught:
        import_bytes(data, filename)
    assert str(caught.value).startswith(filename)
    assert "FUSION_EXPLORER_MAX_TENSOR_ELEMENTS" in str(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_chain_longer_than_the_node_limit_is_refused_with_the_limits_name(fmt):
    """The mechanism a 10^6-node chain meets under the default limit, at a thousand nodes (a
    million-node file takes a minute to parse; the ONNX one is below, at full size)."""
    limits = Limits(max_nodes=1000)
    within, filename = negation_chain(fmt, 990)
    assert len(import_bytes(within, filename, limits)[0]) == 991
    beyond, filename = negation_chain(fmt, 1000)
    with pytest.raises(LimitError) as caught:
        import_bytes(beyond, filename, limits)
    assert str(caught.value).startswith(filename)
    assert "FUSION_EXPLORER_MAX_NODES" in str(caught.value)


def test_a_million_node_onnx_model_is_refused_before_shape_inference():
    """At the default limit, in seconds: the nodes are counted as soon as the protobuf is read
    (shape inference of a million nodes took 40 s and 4.8 GB before the builder refused).
    The million nodes are one serialised node repeated: the count does not read them."""
    model = helper.make_model(helper.make_graph([], "g", [], []))
    node = helper.make_node("Neg", ["n0"], ["n1"]).SerializeToString()
    graph_field = b"\x0a" + _varint(len(node)) + node    # GraphProto.node is field 1
    nodes = graph_field * 1_000_000
    graph = helper.make_graph([], "chain",
                              [helper.make_tensor_value_info("n0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("n1", TensorProto.FLOAT, [4])])
    graph_bytes = nodes + graph.SerializeToString()
    model.ClearField("graph")
    model.opset_import[0].version = 18
    data = model.SerializeToString() + b"\x3a" + _varint(len(graph_bytes)) + graph_bytes
    with pytest.raises(LimitError) as caught:
        import_bytes(data, "million.onnx")
    assert str(caught.value) == (
        "million.onnx: the model has 1000001 nodes and inputs with its local functions "
        "inlined; the limit is 1000000 (FUSION_EXPLORER_MAX_NODES)")


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)
