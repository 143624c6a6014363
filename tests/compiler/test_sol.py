"""The speed-of-light model against bytes and flops counted by hand."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from compiler.importers.hlo_text import import_hlo
from compiler.target.devices import DEVICES, get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).parents[1] / "data" / "hlo"
H100 = get_device("h100")
KIB = 1024
MIB = 1024 * KIB
N = 1024 * 1024  # elements of an f32[1024,1024]: 4 MiB


def model(hlo: str, device=H100) -> SolModel:
    return SolModel(import_hlo(textwrap.dedent(hlo), "test.hlo"), device)


CHAIN = """
    ENTRY e {
      p = f32[1024,1024] parameter(0)
      a = f32[1024,1024] exponential(p)
      b = f32[1024,1024] negate(a)
      ROOT c = f32[1024,1024] multiply(b, b)
    }
"""


def test_a_fused_elementwise_chain_moves_its_input_and_output_once():
    sol = model(CHAIN)
    fused = sol.estimate(["a", "b", "c"])
    assert fused.read_bytes == 4 * MIB
    assert fused.write_bytes == 4 * MIB
    assert fused.dram_bytes == 8 * MIB
    assert fused.flops == 3 * N
    assert fused.transcendentals == N


def test_the_same_chain_unfused_moves_every_intermediate_through_dram():
    sol = model(CHAIN)
    separate = [sol.estimate([name]) for name in ("a", "b", "c")]
    assert [e.dram_bytes for e in separate] == [8 * MIB, 8 * MIB, 8 * MIB]
    assert sum(e.dram_bytes for e in separate) == 3 * 8 * MIB


def test_the_speed_of_light_is_device_work_alone_with_no_launch():
    sol = model(CHAIN)
    fused = sol.estimate(["a", "b", "c"])
    # 8 MiB at the H100's 3.35 TB/s: the launch is priced by the runtime, not here.
    assert fused.total_us == max(fused.memory_us, fused.compute_us)
    assert fused.total_us == pytest.approx(8 * MIB / 3.35e12 * 1e6, rel=1e-3)
    separate = [sol.estimate([name]) for name in ("a", "b", "c")]
    assert sum(e.total_us for e in separate) == pytest.approx(3 * fused.total_us, rel=1e-9)


@pytest.mark.parametrize("name", DEVICES)
def test_memory_time_is_bytes_over_peak_bandwidth(name):
    device = DEVICES[name]
    fused = model(CHAIN, device).estimate(["a", "b", "c"])
    assert fused.memory_us == 8 * MIB / (device.dram_bandwidth_gbs * 1e9) * 1e6


def test_an_exponential_chain_is_memory_bound_and_its_compute_limit_is_the_xu_pipe():
    fused = model(CHAIN).estimate(["a", "b", "c"])
    assert fused.bound == "memory"
    assert fused.compute_pipe == "xu"
    assert fused.compute_us == N / H100.peak_transcendentals_per_s * 1e6


BIAS = """
    ENTRY e {
      x = f32[1024,1024] parameter(0)
      bias = f32[1024] parameter(1)
      rows = f32[1024,1024] broadcast(bias), dimensions={1}
      cols = f32[1024,1024] broadcast(bias), dimensions={0}
      s = f32[1024,1024] add(x, rows)
      ROOT m = f32[1024,1024] multiply(s, cols)
    }
"""


def test_a_broadcast_small_parameter_is_read_once():
    fused = model(BIAS).estimate(["rows", "cols", "s", "m"])
    assert fused.read_bytes == 4 * MIB + 4 * KIB
    assert fused.write_bytes == 4 * MIB


def test_a_broadcast_left_outside_the_kernel_is_read_at_full_size():
    kernel = model(BIAS).estimate(["s", "m"])
    assert kernel.read_bytes == 3 * 4 * MIB  # x and both materialised broadcasts


SCALE = """
    ENTRY e {
      p = f32[1024,1024] parameter(0)
      two = f32[] constant(2)
      twos = f32[1024,1024] broadcast(two), dimensions={}
      ROOT m = f32[1024,1024] multiply(p, twos)
    }
"""


@pytest.mark.parametrize("kernel", [["twos", "m"], ["two", "twos", "m"]])
def test_a_scalar_constant_is_a_free_immediate(kernel):
    assert model(SCALE).estimate(kernel).dram_bytes == 8 * MIB


def test_a_constant_array_is_read_from_memory():
    sol = model("""
        ENTRY e {
          p = f32[4] parameter(0)
          c = f32[4] constant({1, 2, 3, 4})
          ROOT m = f32[4] multiply(p, c)
        }
    """)
    assert sol.estimate(["m"]).read_bytes == 32
    assert sol.estimate(["c", "m"]).read_bytes == 32


def test_a_fused_softmax_moves_input_and_output_only():
    graph = import_hlo((DATA / "softmax.hlo").read_text(), "softmax.hlo")
    sol = SolModel(graph, H100)
    fused = sol.estimate(graph.nodes)
    tensor_bytes = 4 * 4 * 8 * 8 * 4  # f32[4,4,8,8]
    assert fused.read_bytes == tensor_bytes
    assert fused.write_bytes == tensor_bytes
    assert fused.transcendentals == 4 * 4 * 8 * 8
    # One kernel per node instead: the two full-size reads of subtract and divide (12 KiB
    # each), exp (8 KiB), the reductions and the broadcasts back to full size (4.5 KiB each),
    # and eight small [4,4,8] steps (maximum 1.5 KiB, six reshapes and broadcasts 1 KiB each,
    # the broadcast constant 0.5 KiB).
    unfused = sum(sol.estimate([n.name]).dram_bytes for n in graph if n.op != "parameter")
    assert unfused == 2 * 12288 + 8192 + 4 * 4608 + 1536 + 6 * 1024 + 512


TWO_OUTPUTS = """
    ENTRY e {
      p = f32[1024,1024] parameter(0)
      a = f32[1024,1024] exponential(p)
      c = f32[1024,1024] negate(a)
      ROOT t = (f32[1024,1024], f32[1024,1024]) tuple(a, c)
    }
"""


def test_a_graph_output_is_written_even_when_the_kernel_also_uses_it():
    fused = model(TWO_OUTPUTS).estimate(["a", "c"])
    assert fused.read_bytes == 4 * MIB
    assert fused.write_bytes == 8 * MIB


def test_named_outputs_replace_the_inferred_ones():
    assert model(TWO_OUTPUTS).estimate(["a", "c"], outputs=["c"]).write_bytes == 4 * MIB


def test_the_output_tuple_is_plumbing_and_never_written_itself():
    assert model(TWO_OUTPUTS).estimate(["a", "c", "t"]).write_bytes == 8 * MIB


ARGMAX = """
    argmax {
      av = f32[] parameter(0)
      ai = s32[] parameter(1)
      bv = f32[] parameter(2)
      bi = s32[] parameter(3)
      gt = pred[] compare(av, bv), direction=GT
      v = f32[] select(gt, av, bv)
      i = s32[] select(gt, ai, bi)
      ROOT t = (f32[], s32[]) tuple(v, i)
    }
    ENTRY e {
      x = f32[1024,1024] parameter(0)
      iota = s32[1024,1024] iota(), iota_dimension=1
      ninf = f32[] constant(-inf)
      zero = s32[] constant(0)
      r = (f32[1024], s32[1024]) reduce(x, iota, ninf, zero), dimensions={1}, to_apply=argmax
      idx = s32[1024] get-tuple-element(r), index=1
      one = s32[] constant(1)
      ones = s32[1024] broadcast(one), dimensions={}
      ROOT out = s32[1024] add(idx, ones)
    }
"""


def test_reading_one_element_of_a_multi_output_node_reads_that_element_only():
    sol = model(ARGMAX)
    consumer = sol.estimate(["ones", "out"])
    assert consumer.read_bytes == 1024 * 4  # s32[1024], not the whole (f32, s32) tuple
    producer = sol.estimate(["iota", "r"])
    assert producer.read_bytes == 4 * MIB
    assert producer.write_bytes == 2 * 1024 * 4


@pytest.mark.parametrize("kernel", [["iota", "r", "ones", "out"],
                                    ["iota", "r", "idx", "ones", "out"]])
def test_get_tuple_element_inside_or_outside_the_kernel_costs_nothing(kernel):
    fused = model(ARGMAX).estimate(kernel)
    assert fused.read_bytes == 4 * MIB
    assert fused.write_bytes == 1024 * 4


def dot_graph(dtype: str) -> str:
    return f"""
        ENTRY e {{
          a = {dtype}[2048,2048] parameter(0)
          b = {dtype}[2048,2048] parameter(1)
          ROOT d = {dtype}[2048,2048] dot(a, b), lhs_contracting_dims={{1}},
                                                 rhs_contracting_dims={{0}}
        }}
    """


def test_a_big_f32_dot_is_compute_bound_on_fp32_fma():
    dot = model(dot_graph("f32")).estimate(["d"])
    assert dot.flops == 2 * 2048**3
    assert dot.bound == "compute"
    assert dot.compute_pipe == "fp32"
    assert dot.compute_us == dot.flops / H100.peak_fp32_flops * 1e6


def test_a_bf16_dot_runs_at_the_tensor_core_peak():
    dot = model(dot_graph("bf16")).estimate(["d"])
    assert dot.compute_pipe == "tensor-bf16"
    assert dot.compute_us == dot.flops / H100.peak_tensor_flops("bf16") * 1e6
    assert dot.bound == "compute"


def test_a_bf16_dot_on_volta_falls_back_to_the_fp32_pipe():
    v100 = get_device("v100")
    dot = model(dot_graph("bf16"), v100).estimate(["d"])
    assert dot.compute_pipe == "fp32"
    assert dot.compute_us == dot.flops / v100.peak_fp32_flops * 1e6


@pytest.mark.parametrize("dtype, pipe", [("f16", "fp32"), ("bf16", "fp32"), ("f32", "fp32"),
                                         ("f64", "fp64"), ("s32", "int32")])
def test_elementwise_work_runs_on_the_pipe_of_its_dtype(dtype, pipe):
    sol = model(f"""
        ENTRY e {{
          x = {dtype}[256] parameter(0)
          ROOT y = {dtype}[256] add(x, x)
        }}
    """)
    assert sol.estimate(["y"]).compute_pipe == pipe


def test_a_compare_runs_on_the_pipe_of_its_operands():
    sol = model("""
        ENTRY e {
          x = f64[256] parameter(0)
          ROOT y = pred[256] compare(x, x), direction=LT
        }
    """)
    assert sol.estimate(["y"]).compute_pipe == "fp64"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.hlo")), ids=lambda p: p.stem)
def test_fusing_a_whole_graph_never_moves_more_bytes_than_one_kernel_per_node(path):
    graph = import_hlo(path.read_text(), path.name)
    sol = SolModel(graph, H100)
    fused = sol.estimate(graph.nodes)
    unfused = sum(sol.estimate([n.name]).dram_bytes for n in graph
                  if n.op not in ("parameter", "constant", "tuple", "get-tuple-element"))
    assert fused.dram_bytes <= unfused
    parameters_used = {o for n in graph for o in n.operands if graph.nodes[o].op == "parameter"}
    assert fused.read_bytes >= sum(graph.nodes[p].shape.nbytes for p in parameters_used)


def test_an_estimate_serialises_to_a_plain_dict():
    as_dict = model(CHAIN).estimate(["a", "b", "c"]).to_dict()
    assert as_dict["dram_bytes"] == 8 * MIB
    assert as_dict["bound"] == "memory"
    assert set(as_dict) >= {"read_bytes", "write_bytes", "flops", "transcendentals",
                            "memory_us", "compute_us", "total_us"}
    assert "launch_us" not in as_dict


def test_unknown_node_names_are_refused():
    with pytest.raises(ValueError, match="nope"):
        model(CHAIN).estimate(["a", "nope"])


def test_outputs_outside_the_kernel_are_refused():
    with pytest.raises(ValueError, match="'c'"):
        model(CHAIN).estimate(["a"], outputs=["c"])
