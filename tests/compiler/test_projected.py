"""The projected cost model: workload counts, the throughput and latency terms, the breakdown,
plan ranking in the codegen stage, and calibration.

References are outside the model: hand counts of what a kernel must move and compute, the
emitted CUDA source (how often the emitter really evaluates an op), the SOL model's roofline
(a lower bound the projection must respect) and physical monotonicity (more bytes never take
less time, more registers never help).
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.codegen.emit import emit_kernel
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import enumerate_plans
from compiler.cost.calibrate import (Record, errors, fit, kendall_tau, load_records,
                                     record_from_dict)
from compiler.cost.projected import Derating, ProjectedModel, Resources, project_kernel, rank_plans
from compiler.codegen.schedules import kernel_workload
from compiler.codegen.workload import Workload
from compiler.errors import InputError
from compiler.importers.hlo_text import import_hlo
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import DEVICES, get_device
from compiler.target.launch import launch_for, terms_for
from compiler.target.sol import SolModel

ROOT = Path(__file__).resolve().parents[2]
H100 = get_device("h100")


def one_kernel(text: str, kind: str = "loop", device=H100, dominant: str | None = None):
    """The graph and one kernel holding every non-parameter node of the module."""
    graph = import_hlo(text, "test.hlo")
    nodes = [n for n, node in graph.nodes.items()
             if node.op not in ("parameter", "tuple") and not
             (node.op == "constant" and node.array_shape.size == 1)]
    model = SolModel(graph, device)
    spec = KernelSpec(nodes=nodes, kind=kind, dominant=dominant)
    (kernel,) = build_plan(graph, [spec], "t", model).kernels
    return graph, kernel


def elementwise_plan(kernel, size: int, width: int = 1, block: int = 256) -> CodeGenPlan:
    return CodeGenPlan(schedule="elementwise", dominant=kernel.outputs[0], block_size=block,
                       grid_size=max(1, min(65535, -(-size // (block * width)))),
                       vector_width=width)


def _bias_scale(rows: int, cols: int) -> str:
    return f"""
HloModule bias
ENTRY main {{
  x = f32[{rows},{cols}] parameter(0)
  y = f32[{rows},{cols}] parameter(1)
  bias = f32[{cols}] parameter(2)
  scale = f32[{rows}] parameter(3)
  t = f32[{cols},{rows}] parameter(4)
  e = f32[{rows},{cols}] exponential(x)
  p = f32[{rows},{cols}] multiply(e, y)
  bb = f32[{rows},{cols}] broadcast(bias), dimensions={{1}}
  sb = f32[{rows},{cols}] broadcast(scale), dimensions={{0}}
  tt = f32[{rows},{cols}] transpose(t), dimensions={{1,0}}
  q = f32[{rows},{cols}] add(p, bb)
  r = f32[{rows},{cols}] multiply(q, sb)
  ROOT z = f32[{rows},{cols}] add(r, tt)
}}
"""


def test_access_patterns_and_byte_counts_follow_the_indexing():
    rows, cols = 512, 256
    graph, kernel = one_kernel(_bias_scale(rows, cols))
    n = rows * cols
    w = kernel_workload(graph, kernel, elementwise_plan(kernel, n), H100)
    patterns = {a.value: a.pattern for a in w.accesses if a.role == "read"}
    # x, y: consecutive threads read consecutive elements; bias[col] too (it varies along the
    # fast dimension); scale[row] is the same for a whole row; t is read across its rows
    # (through the transpose).
    assert patterns == {"x": "contiguous", "y": "contiguous", "bias": "contiguous",
                        "scale": "broadcast", "t": "transposed"}
    strided = next(a for a in w.accesses if a.value == "t")
    assert strided.sector_efficiency == pytest.approx(4 / 32)
    # Each value crosses DRAM once (everything fits in L2): 3 full inputs, 2 vectors, 1 output.
    assert w.dram_read_bytes == 4 * (3 * n + rows + cols)
    assert w.dram_write_bytes == 4 * n
    assert w.instructions["xu"] == n          # one exp per element, one MUFU op each
    assert w.instructions["lsu"] >= 6 * n     # 5 reads + 1 store per element, no vectors


def test_a_chain_of_thousands_of_fused_ops_is_counted_without_recursion():
    # 2 * 3000 ops in one kernel, each reading the last: deeper than Python's recursion limit.
    # Each add or multiply is one FP32 instruction per element; the dependency chain is one
    # FMA latency per op.
    ops, n = 6000, 1024
    lines = ["HloModule deep", "ENTRY main {", f"  p = f32[{n}] parameter(0)",
             f"  v0 = f32[{n}] add(p, p)"]
    lines += [f"  v{k} = f32[{n}] {'multiply' if k % 2 else 'add'}(v{k - 1}, p)"
              for k in range(1, ops)]
    lines += ["}"]
    lines[-2] = "  ROOT " + lines[-2].strip()
    graph, kernel = one_kernel("\n".join(lines))
    w = kernel_workload(graph, kernel, elementwise_plan(kernel, n), H100)
    assert w.instructions["fma"] == ops * n  # rank 1: no index arithmetic on the FMA pipe
    assert w.chain_cycles_per_iteration == ops * H100.fp32_fma_latency_cycles
    assert w.dram_read_bytes == 4 * n and w.dram_write_bytes == 4 * n


def test_vector_width_divides_the_load_instructions_of_contiguous_values_only():
    rows, cols = 512, 256
    graph, kernel = one_kernel(_bias_scale(rows, cols))
    n = rows * cols
    scalar = kernel_workload(graph, kernel, elementwise_plan(kernel, n, 1), H100)
    vector = kernel_workload(graph, kernel, elementwise_plan(kernel, n, 4), H100)
    by_value = {a.value: a for a in vector.accesses}
    assert by_value["x"].vectorized and by_value["z"].vectorized
    assert not by_value["t"].vectorized and not by_value["scale"].vectorized
    # x, y, bias reads and the z store: 4 per element become 1 per 4 elements.
    assert scalar.instructions["lsu"] - vector.instructions["lsu"] == pytest.approx(4 * n * 3 / 4)
    assert vector.dram_bytes == scalar.dram_bytes


SOFTMAX = """
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[ROWS,LEN] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[ROWS] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[ROWS,LEN] broadcast(mx), dimensions={0}
  d = f32[ROWS,LEN] subtract(x, mb)
  e = f32[ROWS,LEN] exponential(d)
  zero = f32[] constant(0)
  s = f32[ROWS] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[ROWS,LEN] broadcast(s), dimensions={0}
  ROOT out = f32[ROWS,LEN] divide(e, sb)
}
"""


def softmax(rows: int, length: int):
    text = SOFTMAX.replace("ROWS", str(rows)).replace("LEN", str(length))
    return one_kernel(text, kind="stitch-regional", dominant="s")


@pytest.mark.parametrize("schedule", ["row-reduce-warp", "row-reduce-block"])
def test_row_schedules_count_each_op_as_often_as_the_emitted_code_evaluates_it(schedule):
    """The emitter recomputes exp(x - max) in the sum's phase and in the epilogue: the
    workload must count what the source does, not what an ideal kernel would."""
    rows, length = 64, 1000
    graph, kernel = softmax(rows, length)
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == schedule)
    source = emit_kernel(graph, kernel, plan, "k").source
    # A value is computed by a `const` declaration ending with its node's tag:
    # `const float v4_exponential = expf(v3_subtract);  // v4_exponential`.
    tags = [line.rsplit("// ", 1)[-1] for line in source.splitlines()
            if line.strip().startswith("const ") and "// v" in line]
    exp_calls = sum(tag.endswith("_exponential") for tag in tags)
    divides = sum(tag.endswith("_divide") for tag in tags)
    assert exp_calls == 2 and divides == 1
    w = kernel_workload(graph, kernel, plan, H100)
    # Every evaluation is once per element of the rows; exp and divide each issue one MUFU op.
    assert w.instructions["xu"] == (exp_calls + divides) * rows * length
    assert w.dram_read_bytes == 4 * rows * length   # re-reads of x hit L2, not DRAM
    assert w.l2_bytes >= 3 * 4 * rows * length     # max phase, sum phase, epilogue


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_a_large_streaming_kernel_is_dram_bound_and_near_its_roofline(device):
    dev = get_device(device)
    text = """
HloModule add
ENTRY main {
  a = f32[8192,4096] parameter(0)
  b = f32[8192,4096] parameter(1)
  ROOT c = f32[8192,4096] add(a, b)
}
"""
    graph, kernel = one_kernel(text, device=dev)
    n = 8192 * 4096
    best_plan, best = rank_plans(graph, kernel, enumerate_plans(graph, kernel), dev)[0]
    assert best.limiter == "dram"
    bytes_moved = 3 * 4 * n
    roofline_us = bytes_moved / dev.dram_bytes_per_s * 1e6
    # Above the speed of light, within the documented DRAM derating of it and the idle round
    # trips the loaded latency exposes (a thread waits for one vector load a wave; later
    # waves hide behind the other resident blocks): under 1 % of a 400-MB stream.
    fill_us = best.loaded_latency_us - best.terms_us["dram"]
    assert 0 < fill_us < 0.01 * best.projected_us
    assert best.sol_us == pytest.approx(roofline_us, rel=1e-3)
    assert roofline_us < best.projected_us
    assert best.projected_us == pytest.approx(roofline_us / Derating().dram_efficiency + fill_us)
    assert best.utilisation["dram"] == pytest.approx(100.0, rel=0.01)
    assert best.arithmetic_intensity == pytest.approx(n / bytes_moved)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 4000), st.sampled_from(sorted(DEVICES)))
def test_more_bytes_never_predicts_less_time(small, extra, device):
    dev = get_device(device)

    def time_for(n: int) -> float:
        text = f"""
HloModule m
ENTRY main {{
  a = f32[{n}] parameter(0)
  e = f32[{n}] exponential(a)
  ROOT c = f32[{n}] multiply(e, a)
}}
"""
        graph, kernel = one_kernel(text, device=dev)
        return project_kernel(graph, kernel, elementwise_plan(kernel, n), dev).projected_us

    n = small * 64
    assert time_for(n + extra * 64) >= time_for(n) - 1e-9


def test_more_registers_never_lower_occupancy_or_predict_less_time():
    graph, kernel = softmax(4096, 1024)
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == "row-reduce-warp"
                and p.block_size == 256)
    w = kernel_workload(graph, kernel, plan, H100)
    model = ProjectedModel(H100)
    previous = None
    for registers in range(16, 256, 8):
        b = model.project(w, Resources(registers=registers))
        if previous is not None:
            assert b.occupancy <= previous.occupancy
            assert b.projected_us >= previous.projected_us - 1e-9
        previous = b


def test_few_long_rows_are_reported_as_using_few_sms_and_are_slower_than_many_short_rows():
    """The same bytes and ops as 4 rows of 262144 or 4096 rows of 256: a row schedule gives the
    first 4 busy SMs out of 132."""
    few_graph, few = softmax(4, 262144)
    many_graph, many = softmax(4096, 256)
    rows_only = {"row-reduce-warp", "row-reduce-block", "row-reduce-multirow"}
    few_best = next(b for p, b in rank_plans(few_graph, few, enumerate_plans(few_graph, few),
                                             H100) if p.schedule in rows_only)
    many_best = next(b for p, b in rank_plans(many_graph, many,
                                              enumerate_plans(many_graph, many), H100)
                     if p.schedule in rows_only)
    assert few_best.sms_used == 4
    assert few_best.limiter in ("latency", "fma", "xu", "alu", "lsu")
    assert many_best.limiter == "dram"
    assert few_best.projected_us > 3 * many_best.projected_us


def test_waves_and_the_tail_follow_from_blocks_per_sm():
    graph, kernel = softmax(4096, 1024)
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == "row-reduce-block"
                and p.block_size == 256)
    b = project_kernel(graph, kernel, plan, H100, Resources(registers=32))
    capacity = b.blocks_per_sm * H100.sm_count
    assert b.blocks_per_sm == 8               # 256 threads x 32 registers: the warp limit
    assert b.waves == pytest.approx(plan.grid_size / capacity)
    assert b.tail_fraction == pytest.approx(math.ceil(b.waves) - b.waves)


def test_library_kernels_are_projected_from_their_roofline():
    text = """
HloModule dot
ENTRY main {
  a = bf16[4096,4096] parameter(0)
  b = bf16[4096,4096] parameter(1)
  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    from compiler.cost.projected import LIBRARY_COMPUTE_EFFICIENCY, project_library

    graph, kernel = one_kernel(text, kind="library")
    b = project_library(kernel, H100)
    flops = 2 * 4096 ** 3
    peak = H100.peak_tensor_flops("bf16")
    assert b.limiter.startswith("tensor")
    assert b.projected_us == pytest.approx(flops / peak * 1e6 / LIBRARY_COMPUTE_EFFICIENCY,
                                           rel=1e-3)
    assert b.occupancy is None and b.registers is None


def test_codegen_emits_the_fastest_projected_plan_and_reports_ptxas_resources():
    from compiler.stages.codegen import generate
    from compiler.fusion.explore import explore

    graph = import_hlo((ROOT / "tests/data/hlo/layer_norm_fwd.hlo").read_text(), "ln.hlo")
    plan = explore(graph, "h100", ["stitch"])["stitch"]
    codes = generate(graph, plan, H100)
    for code in codes:
        if code.kernel.kind == "library":
            continue
        times = [b.projected_us for _, b in code.ranking]
        assert times == sorted(times) and len(code.ranking) == len(code.candidates)
        assert code.chosen == code.ranking[0][0]
        assert code.breakdown.registers_source == "ptxas"
        assert code.breakdown.registers == code.build.registers
        fields = code.fields("h100", "stream")
        # The kernel's time in the plan: its device work and the stream launch term for it.
        device_us = code.breakdown.projected_us
        stream = launch_for("h100", "stream")
        assert fields["device_us"] == pytest.approx(device_us, abs=1e-3)
        assert fields["launch_us"] == pytest.approx(stream.us(device_us), abs=1e-3)
        assert fields["proj_us"] == pytest.approx(device_us + stream.us(device_us), abs=1e-3)
        assert fields["candidate_plans"][0]["projected_us"] == pytest.approx(times[0], abs=1e-3)


# -- calibration ------------------------------------------------------------------------------


def _synthetic_records(device, truth: Derating, noise: float, seed: int = 0) -> list[Record]:
    """Kernels of many shapes and schedules 'measured' alone by the model with known constants
    (device work and what a lone launch adds), times a log-normal noise: a fit must recover
    the constants."""
    rng = random.Random(seed)
    model = ProjectedModel(device, truth)
    records = []
    for rows, length in [(4096, 1024), (64, 1000), (8, 30000), (100000, 32), (1024, 4096),
                         (16, 100), (2048, 2048), (4, 262144)]:
        graph, kernel = softmax(rows, length)
        for plan in enumerate_plans(graph, kernel)[::3]:
            try:
                w = kernel_workload(graph, kernel, plan, device)
                resources = Resources(registers=rng.choice([24, 32, 48, 64, 96]))
                t = model.project(w, resources).projected_us + terms_for(device).alone_us
            except ValueError:
                continue
            measured = t * math.exp(rng.gauss(0, noise))
            records.append(Record(device.name, f"softmax_{rows}x{length}", plan.key(), w,
                                  resources, measured))
    return records


def test_calibration_recovers_known_constants_and_reduces_the_error():
    truth = Derating(dram_efficiency=0.72, l2_efficiency=0.55, pipe_efficiency=0.6,
                     latency_scale=1.7)
    records = _synthetic_records(H100, truth, noise=0.02)
    assert len(records) > 40
    fitted, report = fit(H100, records)
    assert report["after"]["mape"] < report["before"]["mape"]
    assert report["after"]["median_ape"] < 3.0
    assert fitted.dram_efficiency == pytest.approx(truth.dram_efficiency, rel=0.05)
    assert fitted.latency_scale == pytest.approx(truth.latency_scale, rel=0.1)
    assert errors(ProjectedModel(H100, fitted), records).mape < 3.0


def test_the_calibrate_command_reads_records_and_reports_errors(tmp_path):
    truth = Derating(dram_efficiency=0.8, latency_scale=1.3)
    records = _synthetic_records(H100, truth, noise=0.0)
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in records) + "\n")
    assert len(load_records(path)) == len(records)
    result = subprocess.run([sys.executable, "-m", "compiler", "calibrate", str(path),
                             "--device", "h100", "--json"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["after"]["mape"] < 1.0 <= report["before"]["mape"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(records[0].to_dict()) + "\n{not json\n")
    result = subprocess.run([sys.executable, "-m", "compiler", "calibrate", str(bad)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "bad.jsonl:2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_records_of_another_device_or_without_a_time_are_refused():
    records = _synthetic_records(H100, Derating(), noise=0.0)[:3]
    with pytest.raises(InputError, match="cannot calibrate a100"):
        fit(get_device("a100"), records)
    data = records[0].to_dict()
    data["measured_us"] = 0
    with pytest.raises(InputError, match="positive"):
        record_from_dict(data)


def test_kendall_tau_matches_textbook_values():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # 5 items, 1 discordant pair of 10: (9 - 1) / 10.
    assert kendall_tau([1, 2, 3, 4, 5], [1, 3, 2, 4, 5]) == pytest.approx(0.8)
    # tau-b with a tie in x: pairs (C, D, Tx) = (5, 0, 1): 5 / sqrt(6 * 5).
    assert kendall_tau([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau([1], [2]) is None and kendall_tau([1, 1], [2, 3]) is None


def test_calibration_reports_how_well_plans_are_ranked():
    records = _synthetic_records(H100, Derating(latency_scale=1.4), noise=0.0)
    _, report = fit(H100, records)
    ranking = report["ranking_after"]
    assert ranking["kernels"] >= 5
    assert ranking["mean_tau"] > 0.95   # noise-free: the fitted model orders plans as measured


def test_a_record_round_trips_through_json_and_projects_the_same():
    from compiler.cost.calibrate import make_record

    graph, kernel = softmax(256, 700)
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == "row-reduce-warp")
    resources = Resources(registers=40, static_shared_bytes=0, spill_bytes=0)
    record = make_record(graph, kernel, plan, H100, resources, 12.5, name="softmax.k0")
    again = record_from_dict(json.loads(json.dumps(record.to_dict())))
    model = ProjectedModel(H100)
    assert again.kernel == "softmax.k0" and again.plan == plan.key()
    assert model.project(again.workload, again.resources).projected_us == pytest.approx(
        project_kernel(graph, kernel, plan, H100, resources).projected_us, rel=1e-6)


def test_among_plans_bound_by_the_same_dram_traffic_the_one_asking_less_else_wins():
    """A 4096 x 1024 softmax is DRAM-bound with or without the register row cache; the cached
    plan moves half the L2 traffic and computes exp once, so it ranks first."""
    graph, kernel = softmax(4096, 1024)
    best, breakdown = rank_plans(graph, kernel, enumerate_plans(graph, kernel), H100)[0]
    assert breakdown.limiter == "dram"
    assert best.row_cache > 0


@pytest.mark.parametrize("width", [2, 1024])
def test_a_reduce_window_is_counted_once_per_element_of_its_window(width):
    """Each output element of a window sum adds its window's elements: the adds the workload
    counts follow the window's size (as the interpreter's loop over it), not one per output."""
    text = f"""
    HloModule window
    add {{
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b)
    }}
    ENTRY main {{
      p = f32[64,1024] parameter(0)
      z = f32[] constant(0)
      ROOT w = f32[64,1024] reduce-window(p, z), window={{size=1x{width} pad=0_0x0_{width - 1}}},
          to_apply=add
    }}
    """
    graph, kernel = one_kernel(text)
    w = kernel_workload(graph, kernel, elementwise_plan(kernel, 64 * 1024), H100)
    assert w.instructions["fma"] >= 64 * 1024 * width
    assert w.instructions["fma"] < 64 * 1024 * (width + 8)


COLUMN_SUMS = """
HloModule column_sums
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[ROWS,512] parameter(0)
  z = f32[] constant(0)
  c = f32[512] reduce(p, z), dimensions={0}, to_apply=add
  q = f32[512] multiply(c, c)
  s = f32[] reduce(q, z), dimensions={0}, to_apply=add
  ROOT t = (f32[512], f32[]) tuple(c, s)
}
"""


def _column_sums(rows: int):
    return one_kernel(COLUMN_SUMS.replace("ROWS", str(rows)), kind="input", dominant="c")


@pytest.mark.parametrize("device", [H100, get_device("h200")], ids=lambda d: d.name)
def test_a_reduction_one_thread_computes_waits_on_its_loads(device):
    """The elementwise schedule sums each column on one thread: a loop of `rows` loads, NVVM
    unrolling it by 4, so rows / 4 memory round trips one after another (the H200 measured such
    a kernel, eight column sums of 1024 rows, at 1,568 µs where the model said 8). Doubling the
    rows doubles that wait, and the column schedule, which spreads the rows over a block's
    threads, is projected faster."""
    latency = {}
    for rows in (1024, 2048):
        graph, kernel = _column_sums(rows)
        plan = CodeGenPlan(schedule="elementwise", dominant="c", block_size=128, grid_size=4,
                           vector_width=1)
        source = emit_kernel(graph, kernel, plan, "k").source
        assert f"k < {rows}; ++k)" in source          # the emitted serial loop over the rows
        b = project_kernel(graph, kernel, plan, device, Resources(registers=32))
        latency[rows] = b.latency_us
        floor_cycles = rows / 4 * device.l2_hit_latency_cycles
        assert b.latency_us >= floor_cycles / device.clock_hz * 1e6
        best = {}
        for p, pb in rank_plans(graph, kernel, enumerate_plans(graph, kernel), device):
            best.setdefault(p.schedule, pb.projected_us)
        assert min(v for k, v in best.items() if k.startswith("column")) < best["elementwise"]
    assert latency[2048] == pytest.approx(2 * latency[1024], rel=0.1)


def test_the_loop_after_the_column_tiles_pays_for_the_sums_it_recomputes():
    """A column schedule's tiles leave each column's sum in its own thread's registers; the
    loop after them (the total of the squared sums) recomputes every column sum on the one
    thread that makes the total, as the emitted code shows. The H200 measured kernels like
    this at 18-19 ms where the model said 13 µs: the projection must hold that serial walk,
    512 columns of 1024 rows, at least at L2 latency per unrolled round trip."""
    graph, kernel = _column_sums(1024)
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == "column-reduce")
    source = emit_kernel(graph, kernel, plan, "k").source
    trailing = source[source.index("// out1"):] if "// out1" in source else \
        source[source.rindex("for (int i"):]
    assert "< 1024; ++" in trailing and "< 512; ++" in trailing   # columns, then their rows
    b = project_kernel(graph, kernel, plan, H100, Resources(registers=32))
    serial_cycles = 512 * 1024 / 4 * H100.l2_hit_latency_cycles
    assert b.latency_us >= serial_cycles / H100.clock_hz * 1e6
    assert b.limiter == "latency"


def _streaming_wave(grid: int, cycles_per_thread: float, dram_bytes: int,
                    block: int = 512) -> Workload:
    """A launch of `grid` blocks, each thread waiting `cycles_per_thread` on its round trips,
    the launch moving `dram_bytes` (read) and nothing else worth a term."""
    return Workload(schedule="elementwise", grid=grid, block=block, shared_bytes=0,
                    instructions={"fma": 1.0}, dram_read_bytes=dram_bytes,
                    l2_bytes=dram_bytes, iterations_per_thread=1,
                    latency_cycles_per_thread=cycles_per_thread)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_a_wave_waits_its_idle_round_trips_and_then_the_bytes_queued_ahead_of_them(device):
    """Little's law with a queue at the memory system (Hong and Kim, ISCA 2009: a request waits
    its idle latency and the departure delays of the requests ahead of it). Summed over a
    wave's round trips, the queueing is the wave's bytes over the bandwidth, whatever the bytes
    in flight per SM: one wave takes its idle round trips plus its DRAM time, where the larger
    of the two (the bounds the model had) says two thirds of that here."""
    dev = get_device(device)
    model = ProjectedModel(dev)
    dram_s = dev.dram_bytes_per_s * model.derating.dram_efficiency
    cycles = 20 * dev.dram_latency_cycles       # a thread's 20 idle round trips
    idle_us = cycles / dev.clock_hz * 1e6
    wave_bytes = round(2 * idle_us * 1e-6 * dram_s)   # DRAM time: twice the idle round trips
    resources = Resources(registers=32)
    one_wave = model.project(_streaming_wave(dev.sm_count, cycles, wave_bytes), resources)
    assert one_wave.waves <= 1
    assert one_wave.projected_us == pytest.approx(3 * idle_us, rel=1e-6)
    assert one_wave.limiter == "dram"             # the queue's part is the larger
    # Half the SMs, the same bytes: twice the bytes in flight per SM, the same time.
    half = model.project(_streaming_wave(dev.sm_count // 2, cycles, wave_bytes), resources)
    assert half.projected_us == pytest.approx(one_wave.projected_us, rel=1e-6)
    # No bytes to wait for: the serial waves' latency alone, as before.
    idle = model.project(_streaming_wave(dev.sm_count, cycles, 0), resources)
    assert idle.projected_us == pytest.approx(idle_us, rel=1e-6)
    assert idle.limiter == "latency"


@pytest.mark.parametrize("block", [256, 512, 1024])
def test_later_waves_expose_their_round_trips_over_the_blocks_that_share_an_sm(block):
    """Ten waves moving ten waves' bytes: a later wave's block starts beside the SM's other
    resident blocks, which keep their bytes in flight, and exposes 1/k of its idle round trips
    (k blocks per SM, from CUDA's occupancy rules: 2048 threads per SM on the H100). One block
    per SM overlaps nothing: every wave's round trips add to the memory time."""
    dev = H100
    model = ProjectedModel(dev)
    dram_s = dev.dram_bytes_per_s * model.derating.dram_efficiency
    cycles = 20 * dev.dram_latency_cycles
    idle_us = cycles / dev.clock_hz * 1e6
    resources = Resources(registers=32 if block < 1024 else 64)
    per_sm = {256: 8, 512: 4, 1024: 1}[block]
    ten = model.project(_streaming_wave(10 * per_sm * dev.sm_count, cycles,
                                        round(20 * idle_us * 1e-6 * dram_s), block), resources)
    assert ten.blocks_per_sm == per_sm and ten.waves == pytest.approx(10)
    assert ten.latency_us == pytest.approx(10 * idle_us, rel=1e-6)
    assert ten.projected_us == pytest.approx((1 + 9 / per_sm) * idle_us + 20 * idle_us,
                                             rel=1e-6)
