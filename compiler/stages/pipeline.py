"""The whole compiler as one call: import → explore → codegen → build → cost.

`compile_graph(...)` is what a web worker runs for an uploaded graph. It returns the ARTIFACT, a
plain JSON-ready dict: for every device, the object `python -m compiler codegen --json` prints
less each kernel's "candidate_plans", and under "sources", per kernel, what only its own page
shows: the CUDA source, PTX, line → node map, ptxas resources and the candidate CodeGen plans
with their headline projections (projected time, limiter, occupancy, estimated registers; not
their whole breakdowns), a kernel that generated no code having its candidates and no source.
It reports progress as it goes, stage by stage and kernel by kernel (the explore stage plan by
plan), so a page can show a progress bar. Nothing here knows about Django or Celery.

A page need not wait for the build to show the plans: as each plan is explored, `explored` gets
a PREVIEW, the artifact as far as exploration knows it: {"compiler_version", "graph",
"devices": the plans explored so far, each as `explore --json` gives it (kernels and totals
priced by the explore stage's quick projection, with estimated registers), "explored":
{"plans": how many, "of": how many the run will have}}, and no "sources". What needs the
build stays null there (registers, shared memory, spills, PTX; DESIGN.md: fields a stage has
not produced yet are null), and the occupancy, waves and projected times are the explored ones,
which the built projection, with ptxas' registers, replaces in the artifact.

With `learned_models` (device -> learned cost model file), the cost stage also fills each
plan's learned fields (compiler/cost/learned/predict.py) with that device's model: one batched
forward per plan. A model file that cannot be loaded does not fail the compile: the plans of
its device say why under "learned_model" ({"error": ...}) and their learned times stay null.

The artifact's "compiler_version" is `compiler.version.compiler_version()`.

`compile_plans(...)` is the same for plans a user made (plan files: a run's saved plans, issue
36): each is applied to the graph and checked, then its kernels are generated, built and
costed as a strategy's are; the caller adds the entries to the run's artifact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from compiler.errors import InputError
from compiler.fusion.explore import STRATEGIES, exploration_to_dict, explore
from compiler.fusion.plan_files import plan_from_file
from compiler.importers import import_bytes, pick_module
from compiler.ir.graph import Graph
from compiler.ir.summary import summarize
from compiler.kernels.plan import FusionPlan
from compiler.stages.codegen import (KernelCode, build_codes, emit_code, emulate as emulate_codes,
                                     project_code)
from compiler.target.devices import DEVICES, get_device
from compiler.target.launch import DEFAULT_RUNTIME
from compiler.target.sol import SolModel
from compiler.toolchain import arch_for_device
from compiler.version import compiler_version

# The stages in the order they run; `progress` callbacks see them in this order.
STAGES = ("import", "explore", "codegen", "build", "cost")

# `progress(stage, done, total, detail="")`: `detail` says what the stage is doing where its
# count alone would stand still for a while (build: "compiling 949 kernels to PTX").
Progress = Callable[..., None]

def canonical_options(devices, strategies) -> tuple[list[str], list[str]]:
    """Devices sorted by name and strategies in exploration order (the cost search reuses the
    xla plan when xla runs first), each checked; InputError names an unknown one."""
    device_names = sorted({get_device(name).name for name in devices})
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        raise InputError(f"unknown strategy {', '.join(unknown) or '(none given)'}; choose "
                         f"from {', '.join(STRATEGIES)}")
    if not device_names:
        raise InputError(f"no device given; choose from {', '.join(DEVICES)}")
    return device_names, [name for name in STRATEGIES if name in strategies]


def import_graph(data: bytes, filename: str) -> Graph:
    """The graph an upload holds (the first module of a multi-module HLO file)."""
    return pick_module(import_bytes(data, filename), 0, filename)


@dataclass
class _Target:
    """One fusion plan on one device, and its kernels' code once generated."""
    device: str
    strategy: str
    plan: FusionPlan
    codes: list[KernelCode] = field(default_factory=list)


class StageCounter:
    """Calls `progress(stage, done, total)` as units of work finish."""

    def __init__(self, progress: Progress, stage: str, total: int):
        self.progress, self.stage, self.total, self.done = progress, stage, total, 0
        progress(stage, 0, total)

    def advance(self, count: int = 1) -> None:
        self.done += count
        self.progress(self.stage, self.done, self.total)

    def note(self, detail: str) -> None:
        """Say what the stage is doing now (its count unchanged)."""
        self.progress(self.stage, self.done, self.total, detail)


def no_progress(stage: str, done: int, total: int, detail: str = "") -> None:
    pass


def compile_graph(data: bytes, filename: str, devices: list[str], strategies: list[str],
                  progress: Progress | None = None, emulate: bool = False,
                  learned_models: dict[str, str] | None = None,
                  runtime: str = DEFAULT_RUNTIME,
                  explored: Callable[[dict], None] | None = None) -> dict:
    """The ARTIFACT of an uploaded graph (see the module docstring); InputError on bad input
    or an unknown device or strategy. `emulate` runs every kernel on the CPU emulator against
    the reference interpreter, each on its own made-up inputs (codegen.stage.emulate), and
    records the largest error (slow on big graphs).
    `learned_models`: the learned cost model file to predict each device's kernels with
    (devices without one get null learned times). `runtime`: how the plans' kernels are
    launched, which the cost search decides under (compiler/target/launch.py); every plan's
    totals are given under each runtime too.
    `explored(preview)`: called each time a plan is explored, before anything is built, with
    the PREVIEW (module docstring) of the plans explored so far."""
    progress = progress or no_progress
    devices, strategies = canonical_options(devices, strategies)
    graph, summary = _imported(data, filename, progress)

    # Counted in plans, each reported (and previewed) as soon as it is explored.
    counter = StageCounter(progress, "explore", len(devices) * len(strategies))
    preview = _Preview(summary, len(devices) * len(strategies), explored)
    results, targets = {}, []
    for device in devices:
        counter.note(f"{device}: {', '.join(strategies)} on {len(graph)} nodes")

        def plan_explored(name: str, plan: FusionPlan, device: str = device) -> None:
            preview.add(device, name, plan)
            counter.advance()

        plans = explore(graph, device, strategies, runtime=runtime, on_plan=plan_explored)
        # Before codegen, which replaces each kernel's quick projection with its built one.
        results[device] = exploration_to_dict(summary, device, plans)
        targets += [_Target(device, name, plan) for name, plan in plans.items()]

    sources = _generate(graph, devices, targets, results, progress, emulate, learned_models)
    return {"compiler_version": compiler_version(), "graph": summary, "devices": results,
            "sources": sources}


def compile_plans(data: bytes, filename: str, plans: list[dict],
                  progress: Progress | None = None,
                  learned_models: dict[str, str] | None = None,
                  runtime: str = DEFAULT_RUNTIME) -> dict:
    """The artifact's part for plans given as plan files (compiler/fusion/plan_files.py): a
    run's saved plans, each {"device", "strategy" (its name, "custom:NAME"), "file",
    "keep_kinds" (optional: plan_files.plan_from_file's, for files the explorer wrote)}. Each is
    applied to the graph, checked, then generated, built and costed as compile_graph does a
    strategy's plan: {"compiler_version", "devices": {device: {"strategies": {strategy:
    entry}}}, "sources"}. InputError (naming the plan) when a file does not apply."""
    progress = progress or no_progress
    graph, summary = _imported(data, filename, progress)

    counter = StageCounter(progress, "explore", len(plans))
    results, targets = {}, []
    for entry in plans:
        device = get_device(entry["device"]).name
        counter.note(f"{device}: applying {entry['strategy']}")
        plan = plan_from_file(graph, SolModel(graph, get_device(device)), entry["file"],
                              entry["strategy"], runtime, entry.get("keep_kinds", False))
        plan.strategy = entry["strategy"]
        result = results.setdefault(device, exploration_to_dict(summary, device, {}))
        result["strategies"][plan.strategy] = plan.to_dict()
        targets.append(_Target(device, plan.strategy, plan))
        counter.advance()
    sources = _generate(graph, sorted(results), targets, results, progress, False,
                        learned_models)
    return {"compiler_version": compiler_version(), "devices": results, "sources": sources}


def _imported(data: bytes, filename: str, progress: Progress) -> tuple[Graph, dict]:
    """The import stage: the upload's graph and its summary."""
    counter = StageCounter(progress, "import", 1)
    graph = import_graph(data, filename)
    summary = summarize(graph)
    counter.advance()
    return graph, summary


def _generate(graph: Graph, devices: list[str], targets: list[_Target], results: dict,
              progress: Progress, emulate: bool,
              learned_models: dict[str, str] | None) -> dict:
    """Generate, build and cost the targets' kernels (the codegen, build and cost stages),
    fill their entries in `results` ({device: explore --json object}) with the code fields
    and learned times; the artifact's "sources" of their kernels."""
    kernel_count = sum(len(target.plan.kernels) for target in targets)
    counter = StageCounter(progress, "codegen", kernel_count)
    for target in targets:
        for kernel in target.plan.kernels:
            target.codes.append(emit_code(graph, target.plan, kernel, get_device(target.device)))
            counter.advance()

    counter = StageCounter(progress, "build", kernel_count)
    # One nvcc batch per device holding every strategy's kernels (their names carry the
    # strategy): the CUDA headers are parsed once per batch, and kernels two plans share are
    # compiled once (compiler/toolchain/nvcc.py).
    for device in devices:
        codes = [code for target in targets if target.device == device
                 for code in target.codes]
        build_codes(codes, arch_for_device(device), progress=counter.advance,
                    phase=lambda text, device=device: counter.note(f"{device}: {text}"))
    if emulate:
        for target in targets:
            emulate_codes(graph, target.codes)

    counter = StageCounter(progress, "cost", kernel_count)
    for target in targets:
        for code in target.codes:
            project_code(graph, code, get_device(target.device))
            counter.advance()

    sources = {}
    for target in targets:
        strategy_result = results[target.device]["strategies"][target.strategy]
        # Kernel pages show the candidates' headline figures, not their whole breakdowns.
        attach_codes(strategy_result, target.plan, target.codes, candidate_breakdowns=False)
        for entry, code in zip(strategy_result["kernels"], target.codes):
            # The candidates are most of a big plan's bytes and only a kernel page shows them.
            candidates = entry.pop("candidate_plans", None) or []
            if has_source(code) or candidates:
                key = f"{target.device}/{target.strategy}/{code.kernel.name}"
                sources[key] = {**kernel_source(code), "candidate_plans": candidates}
    if learned_models:
        _predict_learned(graph, targets, results, learned_models)
    return sources


class _Preview:
    """The PREVIEWs handed to `compile_graph`'s `explored` callback. Each plan's entry is made
    once, when it is explored (a big plan's takes a tenth of a second), and not changed after:
    each call's preview holds the entries so far, and codegen fills entries of its own."""

    def __init__(self, summary: dict, plans: int, explored: Callable[[dict], None] | None):
        self.summary, self.plans, self.explored = summary, plans, explored
        self.plans_of: dict[str, dict[str, FusionPlan]] = {}
        self.entries_of: dict[str, dict[str, dict]] = {}

    def add(self, device: str, name: str, plan: FusionPlan) -> None:
        if self.explored is None:
            return
        self.plans_of.setdefault(device, {})[name] = plan
        self.entries_of.setdefault(device, {})[name] = plan.to_dict()
        devices = {device: exploration_to_dict(self.summary, device, plans,
                                               self.entries_of[device])
                   for device, plans in self.plans_of.items()}
        explored = sum(len(plans) for plans in self.plans_of.values())
        self.explored({"compiler_version": compiler_version(), "graph": self.summary,
                       "devices": devices, "explored": {"plans": explored, "of": self.plans}})


def _predict_learned(graph: Graph, targets: list[_Target], results: dict,
                     learned_models: dict[str, str]) -> None:
    """Fill the learned fields of every plan of a device that has a model file (null
    otherwise, as FusionPlan.to_dict leaves them), or say why its model cannot be used."""
    # Imported here: the learned model needs torch, seconds to import, which a compile
    # without a model (the CLI, most tests) should not pay.
    from compiler.cost.learned.predict import LearnedPredictor, attach_learned

    predictors: dict[str, LearnedPredictor | str] = {}   # device -> predictor, or why none
    for device in {target.device for target in targets} & set(learned_models):
        path = learned_models[device]
        try:
            predictor = LearnedPredictor.load(path)
        except InputError as error:
            predictors[device] = f"the learned model could not be loaded: {error}"
            continue
        predictors[device] = predictor if predictor.device == device else (
            f"the learned model {path} predicts {predictor.device} kernels, not {device} ones")
    for target in targets:
        predictor = predictors.get(target.device)
        strategy_result = results[target.device]["strategies"][target.strategy]
        if isinstance(predictor, str):
            strategy_result["learned_model"] = {"error": predictor}
        elif predictor is not None:
            attach_learned(strategy_result, graph, target.plan, target.codes, predictor)


def attach_codes(strategy_result: dict, plan: FusionPlan, codes: list[KernelCode],
                 candidate_breakdowns: bool = True) -> None:
    """Add the code fields to a plan's `explore --json` entry (`codegen --json`'s shape)."""
    for entry, code in zip(strategy_result["kernels"], codes):
        entry.update(code.fields(plan.device, plan.runtime, candidate_breakdowns))
    strategy_result["total"].update(plan.projected_totals() or {
        "proj_us": None, "device_us": None, "launch_us": None, "runtimes": None})


def has_source(code: KernelCode) -> bool:
    """Whether the kernel has generated CUDA source (library calls and refusals have none)."""
    return code.emitted is not None and not code.emitted.library and bool(code.emitted.source)


def kernel_source(code: KernelCode) -> dict:
    """What a kernel page shows: the source, its PTX, which nodes each line computes, and the
    resources ptxas reports (none when the kernel did not build)."""
    if not has_source(code):
        return {"function": code.function, "source": None, "ptx": None, "line_nodes": {},
                "resources": None}
    built = code.build is not None and code.build.ok
    resources = None
    if built:
        resources = {key: value for key, value in code.build.to_dict().items()
                     if key not in ("ptx", "name", "arch", "ok", "error")}
    return {"function": code.function, "source": code.emitted.source,
            "ptx": code.build.ptx if built and code.build.ptx else None,
            "line_nodes": {str(line): list(nodes)
                           for line, nodes in sorted(code.emitted.line_nodes.items())},
            "resources": resources}
