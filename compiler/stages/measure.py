"""The measure stage as one call: an uploaded graph's plans timed on this machine's GPU.

    result = measure_graph(data, filename, devices, strategies, progress, custom_plans=...)

This is what a GPU worker runs when someone asks for a run to be measured (workers.measure_run);
`compile_graph` (compiler/stages/pipeline.py) is its CPU-side sibling. Without a GPU it raises
`GpuUnavailable` with the reason before doing any work, so a worker that cannot measure says so
at once. It returns MEASUREMENTS, a plain JSON-ready dict:

    {"gpu": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "compiler_version": "...",
     "inputs": "compiler.kernels.inputs.random_inputs, seed 0",
     "devices": {"h100": {"matches_gpu": true,
                          "strategies": {"cost": <PlanRun.to_dict()>, ...},
                          "eager": {"measured_us": ..., "timing": ..., "not_measured": ...}}}}

How:
- The plans are made again here, by the same explore → codegen → build calls compile_graph
  makes; a run's saved plans (`custom_plans`) from their plan files, as compile_plans makes
  them. The compiler is deterministic, so with the same compiler version (recorded above; the
  web app compares it with the run's) these are the kernels the run's pages show.
- Every plan runs through `compiler.runtime.gpu.run_plan`: each kernel checked against the
  reference interpreter on the device and timed alone (a library call as a replayed CUDA
  graph of its own, so PyTorch's host dispatch is not its time), then the whole plan timed
  two ways: back to back on a stream ("end_to_end", the "stream" runtime's measured total)
  and captured once as a CUDA graph and replayed ("graph_replay", the "graph" runtime's;
  "graph_not_measured" says why not when the capture failed).
- The eager baseline (`compiler.runtime.eager`) is the graph run op by op with CuPy's own
  functions, the way an unfused framework runs it: what a user compares every plan with.
- A run planned for another GPU model than the one present (a run for the A100 measured on
  an H100) is still measured, since a cubin for an older architecture runs through its PTX,
  but `matches_gpu` is false and the pages say so: the model error is only meaningful when
  the plan was made for the GPU that timed it.

`check_graph_emulated` is the same job for a GPU worker in its emulated mode (the web app's
GPU_WORKER_EMULATED, for rehearsing the whole stack where there is no GPU): the same plans made
again, every generated kernel checked on the CPU emulator against the reference interpreter
(`compiler.stages.codegen.emulate`), and nothing timed. Its MEASUREMENTS have the same shape,
with "emulated": true, the check's results in each kernel's "max_abs_error" and "mismatches",
and every "measured_us", "timing", "total_us", "end_to_end" and "graph_replay" null, each with
its "not_measured" (and "graph_not_measured") saying the kernels were checked on the emulator
and never timed.
"""

from __future__ import annotations

from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.fusion.plan_files import plan_from_file
from compiler.kernels.inputs import random_inputs
from compiler.runtime.eager import EagerUnsupported, eager_program, time_eager
from compiler.runtime.gpu import GpuRunner, KernelRun, PlanRun, run_plan
from compiler.stages.codegen import emulate, generate
from compiler.stages.pipeline import (Progress, StageCounter, canonical_options, import_graph,
                                      no_progress)
from compiler.target.devices import get_device
from compiler.target.launch import DEFAULT_RUNTIME
from compiler.target.sol import SolModel
from compiler.toolchain import arch_for_device
from compiler.version import compiler_version

INPUT_SEED = 0
# The stages a measurement reports, in order.
STAGES = ("codegen", "measure")
# What an emulated check names as its "gpu", and why none of its figures is a time.
EMULATOR = "CPU emulator (emulated GPU worker: kernels checked, never timed)"
EMULATED = "not measured: checked on the CPU emulator by an emulated GPU worker, never timed"


def gpu_matches_device(gpu_name: str, device: str) -> bool:
    """Whether the driver's GPU name ("NVIDIA H100 80GB HBM3") is the device model ("h100")."""
    return device.lower() in gpu_name.lower().replace("-", " ").split()


def measure_graph(data: bytes, filename: str, devices: list[str], strategies: list[str],
                  progress: Progress | None = None, runner: GpuRunner | None = None,
                  runtime: str = DEFAULT_RUNTIME, custom_plans: list[dict] | None = None
                  ) -> dict:
    """MEASUREMENTS of the graph's plans for `devices` x `strategies` (see the module
    docstring), made under `runtime` as the run's were (the cost plan depends on it), and of
    `custom_plans` (a run's saved plans, as compile_plans takes them: each measured under its
    "strategy", custom:NAME, a plan that no longer applies left out). GpuUnavailable without a
    GPU; InputError for a graph that does not import."""
    progress = progress or no_progress
    runner = runner or GpuRunner()
    graph = import_graph(data, filename)
    inputs = random_inputs(graph, seed=INPUT_SEED)
    devices, targets = plan_targets(graph, devices, strategies, progress, runtime, custom_plans)

    counter = StageCounter(progress, "measure",
                           sum(len(plan.kernels) for _, _, plan, _ in targets) + len(devices))
    results = {device: {"matches_gpu": gpu_matches_device(runner.name, device),
                        "strategies": {}, "eager": None} for device in devices}
    for device, strategy, plan, codes in targets:
        results[device]["strategies"][strategy] = run_plan(graph, plan, codes, inputs,
                                                           runner).to_dict()
        counter.advance(len(plan.kernels))
    eager = eager_baseline(graph, inputs, runner)
    for device in devices:  # one baseline per GPU: the same for every device's plans
        results[device]["eager"] = eager
        counter.advance()
    return {"gpu": runner.name, "arch": runner.arch, "compiler_version": compiler_version(),
            "inputs": f"compiler.kernels.inputs.random_inputs, seed {INPUT_SEED}",
            "devices": results}


def check_graph_emulated(data: bytes, filename: str, devices: list[str], strategies: list[str],
                         progress: Progress | None = None, runtime: str = DEFAULT_RUNTIME,
                         custom_plans: list[dict] | None = None) -> dict:
    """MEASUREMENTS of an emulated GPU worker (see the module docstring): measure_graph's
    plans, each generated kernel checked on the CPU emulator against the interpreter, no
    figure timed. Needs no GPU; InputError for a graph that does not import."""
    progress = progress or no_progress
    graph = import_graph(data, filename)
    devices, targets = plan_targets(graph, devices, strategies, progress, runtime, custom_plans)
    counter = StageCounter(progress, "measure",
                           sum(len(plan.kernels) for _, _, plan, _ in targets) + len(devices))
    results = {device: {"matches_gpu": False, "strategies": {}} for device in devices}
    for device, strategy, plan, codes in targets:
        emulate(graph, codes, seed=INPUT_SEED)
        kernels = [KernelRun(code.kernel.name, code.kernel.kind, code.function,
                             max_abs_error=code.max_abs_error, mismatches=code.mismatches,
                             not_measured=_why_not_timed(code), nodes=list(code.kernel.nodes))
                   for code in codes]
        results[device]["strategies"][strategy] = PlanRun(strategy, EMULATOR, kernels,
                                                          not_measured=EMULATED).to_dict()
        counter.advance(len(plan.kernels))
    for device in devices:
        results[device]["eager"] = {"measured_us": None, "timing": None,
                                    "not_measured": EMULATED}
        counter.advance()
    return {"gpu": EMULATOR, "arch": None, "compiler_version": compiler_version(),
            "emulated": True,
            "inputs": f"compiler.kernels.inputs.kernel_inputs, seed {INPUT_SEED}",
            "devices": results}


def _why_not_timed(code) -> str:
    """An emulated kernel's "not_measured": never timed, and why it was not checked either
    when it was not (a library call, a kernel without code, one whose inputs cannot be made)."""
    if code.emitted is not None and code.emitted.library:
        return f"{EMULATED}; a library call, which the emulator does not run"
    if code.error:
        return f"{EMULATED}; not checked: {code.error}"
    if code.not_checked:
        return f"{EMULATED}; {code.not_checked}"
    return EMULATED


def plan_targets(graph, devices: list[str], strategies: list[str], progress: Progress,
                 runtime: str, custom_plans: list[dict] | None) -> tuple[list[str], list]:
    """The canonical devices, and (device, strategy, plan, codes) for every plan a run of
    `devices` x `strategies` under `runtime` holds and every saved plan of `custom_plans` that
    still applies, made again as the run's compile made them (the "codegen" stage)."""
    devices, strategies = canonical_options(devices, strategies)
    custom_plans = [entry for entry in custom_plans or () if entry["device"] in devices]
    counter = StageCounter(progress, "codegen",
                           len(devices) * len(strategies) + len(custom_plans))
    targets = []
    for device in devices:
        spec = get_device(device)
        for strategy, plan in explore(graph, device, strategies, runtime=runtime).items():
            targets.append((device, strategy, plan,
                            generate(graph, plan, spec, arch_for_device(device))))
            counter.advance()
    for entry in custom_plans:
        device = entry["device"]
        try:
            plan = plan_from_file(graph, SolModel(graph, get_device(device)), entry["file"],
                                  entry["strategy"], runtime, entry.get("keep_kinds", False))
        except InputError:
            counter.advance()
            continue   # the saved plan's own page says why it does not apply
        plan.strategy = entry["strategy"]
        targets.append((device, plan.strategy, plan,
                        generate(graph, plan, get_device(device), arch_for_device(device))))
        counter.advance()
    return devices, targets


def eager_baseline(graph, inputs, runner: GpuRunner) -> dict:
    """The eager baseline's timing, or why it could not run."""
    try:
        timing = time_eager(eager_program(graph), inputs, runner)
    except EagerUnsupported as reason:
        return {"measured_us": None, "timing": None, "not_measured": f"not measured: {reason}"}
    except runner.cuda_errors as error:
        return {"measured_us": None, "timing": None,
                "not_measured": f"not measured: CUDA error: {error}"}
    return {"measured_us": timing.median_us, "timing": timing.to_dict(), "not_measured": None}
