"""How well each cost model ranks whole plans, against plans whose kernels were all measured on
the H200 campaign of 2026-11-27: per module, each model's top-1 regret and Kendall's tau, and
the regret of the plan the cost search picks when it decides with each model (issue 37,
point 4: ground truth without a GPU).

    .venv/bin/python benchmarks/plan_regret.py [--modules a,b] [--runtime stream|graph]
                                               [--plans] [--json] [--write]

What the campaign holds (benchmarks/results/gpu-campaign-h200/):
- plans/<module>.json: the four strategies' plans as the compiler of 2026-11-27 cut them, each
  kernel under the one CodeGen plan codegen picked, timed alone, and each plan run back to back
  in a stream. At most four plans a module, and often three (stitch and cost make the same
  plan on the norms and softmax): a tau over three plans can only be -1, -1/3, 1/3 or 1.
- dataset/h200-<module>.jsonl.gz, for six modules (layer_norm_fwd, rms_norm, softmax,
  cross_entropy, adam, cross_entropy_grad): every distinct kernel of those four plans under the
  four CodeGen plans the projected model ranked first, each timed alone (median of 20 runs,
  L2 flushed), with its nodes, the values it reads and writes and the nodes it recomputes.
  Nothing there was run back to back.

The table is built from the datasets, which let more plans be formed whose kernels were all
measured:
- A plan is a set of measured kernels that computes the module: every value the graph returns,
  and every value a chosen kernel reads, is written by exactly one chosen kernel
  (`kernel_sets`); the compiler's plan checker accepts it (`plan_files.plan_from_kernels`:
  ownership, cycles, the kernel caps) and derives every kernel of it exactly as measured (kind,
  nodes, inputs, outputs). Kernels that strategies share make mixed plans: one strategy's
  kernels for part of a module beside another's for the rest.
- Each kernel runs under the CodeGen plan codegen picks for it today: the projected model's
  first (`rank_plans`, estimated registers) among the measured ones.
- A plan's measured total under the runtime (`--runtime`; stream by default) is what
  compiler/target/launch.py adds up for every plan: each kernel's time alone less what a lone
  launch adds (alone_us), plus the runtime's launch term (the plan's start, the same for every
  plan, is left out). Stream is the default because the campaign ran plans back to back in a
  stream, and `back_to_back_check` compares these totals with those runs. Under "graph" the
  measured totals lean on NVIDIA's published graph gap: no CUDA graph was timed.
- Each model's total is its device work for the same kernels under the same CodeGen plans
  plus the same launch terms: SOL (the explorer shows it as device work alone; here it gets
  the launch terms too, so the models differ only in device work), projected (estimated
  registers, as codegen and the search rank plans before anything is built) and the shipped
  learned model (compiler/cost/learned/models/learned-h200-v2.pt; its time alone less
  alone_us, as compiler/cost/learned/predict.py takes it), asked twice: "learned" on each
  kernel's features as the campaign built it (the dataset's samples, with ptxas' registers: as
  it was trained, and as the explorer shows a compiled plan), "learned_estimated" on the
  features today's code gives before a build (estimated registers: what `pricing.LearnedPricer`
  gives the cost search). The two differ only in the columns that follow from the registers
  (occupancy, blocks per SM, waves, the latency term). A kernel outside the model's training
  support (compiler/cost/learned/support.py) keeps its projected time, as in the explorer.

Per module it reports each model's Kendall tau-b between its totals and the measured ones and
its top-1 regret (compiler/cost/plan_ranking.py); the tuner's picks (`cost_search_picks`: the
plan `explore`'s cost strategy makes deciding with each model under the same runtime, and its
regret against the table's fastest plan, or why it has none); and the regret over every
choice: every plan of the table with each kernel under any of its measured CodeGen plans, the
model choosing those too (`regret_over_choices`; a model that ties CodeGen plans is a random
pick among them, and SOL ties them all), beside the regret of codegen's own picks (the
table's fastest plan against the fastest of every choice).

What the table cannot show, said where it is printed:
- The learned model was trained on adam, cross_entropy, rms_norm and softmax kernels (the
  very kernels these plans are made of); only cross_entropy_grad and layer_norm_fwd were held
  out. Its figures on the other four are training-set figures, not generalisation.
- cross_entropy_grad's scatter is a library call the GPU runner could not run then: it is in
  every plan and measured in none, so it is left out of every total, measured and predicted.
  Tau is unaffected; the regret is a share of the generated kernels' time, an upper bound on
  the whole plan's.
- The same kernel timed in two sessions of the campaign differs by 0.4-2.6 % (median per module)
  and up to 17 % (`session_check`): regrets of that size are within the measurement's noise.
- Kernels that were not measured (the layer_norm_bwd, bias_gelu and attention_block datasets
  were not collected; llama_step's plans never ran) make no plan here.

`regret_of(module, predicted_totals_by_plan)` scores any ranking of a module's plans the same
way; the autotuner of issue 37 can price each `module_table(module).plans[k].fusion_plan`
with its own pricer and pass the totals by plan name, or find its pick with `plan_named`.

--write stores benchmarks/results/plan_regret.json (benchmarks/README.md quotes its table).
The modules' HLO is lowered again with JAX at the campaign's size, "realistic" (the committed
results keep no HLO, and benchmarks/data/campaign/ holds only the small size); the lowered
graph must hold every measured kernel exactly, or the module is refused.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from compiler.codegen.plan import CodeGenPlan  # noqa: E402
from compiler.codegen.schedules import enumerate_plans  # noqa: E402
from compiler.cost.learned.dataset import read_dataset  # noqa: E402
from compiler.cost.learned.features import (KERNEL_FEATURES, NODE_FEATURES,  # noqa: E402
                                            KernelSample, kernel_sample)
from compiler.cost.plan_ranking import (kendall_tau, rank_plans_by_models,  # noqa: E402
                                        regret_over_choices)
from compiler.cost.projected import Breakdown, Resources, rank_plans  # noqa: E402
from compiler.errors import InputError  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.fusion.plan_files import plan_from_kernels  # noqa: E402
from compiler.importers import load_graphs  # noqa: E402
from compiler.ir.graph import Graph  # noqa: E402
from compiler.kernels.grouping import LEAF, graph_output_sources, node_role  # noqa: E402
from compiler.kernels.plan import KINDS, FusionPlan, Kernel  # noqa: E402
from compiler.stages.learned.samples import kernel_key  # noqa: E402
from compiler.target.devices import get_device  # noqa: E402
from compiler.target.launch import RUNTIMES, device_work_of_alone, terms_for  # noqa: E402
from compiler.target.sol import SolModel  # noqa: E402

CAMPAIGN = HERE / "results" / "gpu-campaign-h200"
DATASETS = CAMPAIGN / "dataset"
LEARNED_MODEL = REPO / "compiler" / "cost" / "learned" / "models" / "learned-h200-v2.pt"
RESULTS = HERE / "results" / "plan_regret.json"
DEVICE = "h200"
SIZE = "realistic"
# The models whose totals rank the plans. The learned model is asked twice: on the features of
# the kernels as the campaign built them (ptxas' registers, what it was trained on and what the
# explorer shows once a plan is compiled), and on the features the cost search prices with
# before anything is built (estimated registers: `pricing.LearnedPricer`).
MODELS = ("sol", "projected", "learned", "learned_estimated")
MODEL_LABELS = {"sol": "SOL", "projected": "projected", "learned": "learned",
                "learned_estimated": "learned, estimated registers"}
# The models the cost search can decide with (`pricing.PRICERS`).
SEARCH_MODELS = ("sol", "projected", "learned")
STRATEGIES = ("unfused", "xla", "stitch", "cost")
# More kernel sets than this for one module means a dataset far larger than the campaign's:
# the search below lists them all.
MAX_KERNEL_SETS = 10_000

_INPUT = NODE_FEATURES.index("is_input")
_OUTPUT = NODE_FEATURES.index("is_output")
_RECOMPUTED = NODE_FEATURES.index("is_recomputed")
_KIND = KERNEL_FEATURES.index(f"kind_{KINDS[0]}")


# -- the measured kernels ---------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredKernel:
    """One kernel of a module as the campaign measured it: a dataset group (its samples are its
    CodeGen plans), or a library call that was not measured (`alone_us` empty)."""

    name: str                      # the dataset's group, "<module>/<strategy>/<kernel>"
    kind: str
    dominant: str | None
    owned: tuple[str, ...]
    recomputed: tuple[str, ...]
    inputs: frozenset[str]
    outputs: frozenset[str]
    alone_us: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    # The dataset's sample of each CodeGen plan: the features as the campaign built the kernel.
    samples: dict[str, KernelSample] = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> tuple:
        """What compiler.stages.learned.samples.kernel_key says of the kernel measured."""
        return (self.kind, frozenset(self.owned + self.recomputed), self.inputs, self.outputs)

    @property
    def measured(self) -> bool:
        return bool(self.alone_us)


def measured_kernels(samples: list[KernelSample]) -> dict[str, MeasuredKernel]:
    """The dataset's kernels, by group, each with its CodeGen plans' times alone."""
    kernels: dict[str, MeasuredKernel] = {}
    for sample in samples:
        if sample.group not in kernels:
            roles = list(zip(sample.node_names, sample.node_features))
            kind_columns = [int(v) for v in sample.kernel_features[_KIND:_KIND + len(KINDS)]]
            kernels[sample.group] = MeasuredKernel(
                name=sample.group, kind=KINDS[kind_columns.index(1)],
                dominant=sample.extra["codegen_plan"]["dominant"],
                owned=tuple(n for n, f in roles if not f[_INPUT] and not f[_RECOMPUTED]),
                recomputed=tuple(n for n, f in roles if not f[_INPUT] and f[_RECOMPUTED]),
                inputs=frozenset(n for n, f in roles if f[_INPUT]),
                outputs=frozenset(n for n, f in roles if f[_OUTPUT]))
        kernels[sample.group].alone_us[sample.plan] = sample.target_us
        kernels[sample.group].samples[sample.plan] = sample
    return kernels


def library_kernels(module: str, plans: dict[str, FusionPlan]) -> dict[str, MeasuredKernel]:
    """The library calls of the strategies' plans (the datasets hold generated kernels only):
    a plan needs them to be whole, though none was measured."""
    found: dict[tuple, MeasuredKernel] = {}
    for strategy, plan in plans.items():
        for kernel in plan.kernels:
            if kernel.kind == "library" and kernel_key(kernel) not in found:
                found[kernel_key(kernel)] = MeasuredKernel(
                    f"{module}/{strategy}/{kernel.name}", "library", kernel.dominant,
                    kernel.nodes, kernel.recomputed, frozenset(kernel.inputs),
                    frozenset(kernel.outputs))
    return {kernel.name: kernel for kernel in found.values()}


# -- plans made of them -----------------------------------------------------------------------


def kernel_sets(graph: Graph, kernels: dict[str, MeasuredKernel]) -> list[frozenset[str]]:
    """Every set of `kernels` in which each value the graph returns, and each value a chosen
    kernel reads, is written by exactly one chosen kernel; values no kernel writes must be the
    graph's parameters and constants (InputError otherwise: a kernel is missing)."""
    writers: dict[str, list[str]] = {}
    for name in sorted(kernels):
        for value in kernels[name].outputs:
            writers.setdefault(value, []).append(name)
    outputs = frozenset(graph_output_sources(graph))
    read = outputs.union(*(kernel.inputs for kernel in kernels.values()))
    unwritten = sorted(v for v in read - writers.keys() if node_role(graph.nodes[v]) != LEAF)
    if unwritten:
        raise InputError(f"{graph.name}: {unwritten[0]} is read, but no kernel of the campaign "
                         f"writes it")
    found: set[frozenset[str]] = set()

    def extend(chosen: frozenset[str], written: frozenset[str], needed: frozenset[str]):
        missing = sorted(v for v in needed - written if v in writers)
        if not missing:
            found.add(chosen)
            if len(found) > MAX_KERNEL_SETS:
                raise InputError(f"{graph.name}: more than {MAX_KERNEL_SETS} sets of measured "
                                 f"kernels make the module")
            return
        for name in writers[missing[0]]:
            kernel = kernels[name]
            if not kernel.outputs & written:
                extend(chosen | {name}, written | kernel.outputs, needed | kernel.inputs)

    extend(frozenset(), frozenset(), outputs)
    return sorted(found, key=lambda chosen: (len(chosen), sorted(chosen)))


def checked_plan(graph: Graph, model: SolModel, kernels: dict[str, MeasuredKernel],
                 chosen: frozenset[str]) -> tuple[FusionPlan | None, dict[str, str], str | None]:
    """(the plan of `chosen` as the compiler builds it, its kernels' measured names by kernel
    name, None), or (None, {}, why not): the plan checker refuses it, or it derives a kernel
    otherwise than it was measured."""
    entries = [{"name": name, "nodes": list(kernels[name].owned),
                "recomputed": list(kernels[name].recomputed), "kind": kernels[name].kind,
                "dominant": kernels[name].dominant, "xla_name": None}
               for name in sorted(chosen)]
    try:
        plan = plan_from_kernels(graph, model, entries, graph.name, "stream", keep_kinds=True)
    except InputError as refusal:
        return None, {}, str(refusal)
    by_owned = {frozenset(kernels[name].owned): name for name in chosen}
    names = {}
    for kernel in plan.kernels:
        name = by_owned.get(frozenset(kernel.nodes))
        if name is None or kernel_key(kernel) != kernels[name].key:
            return None, {}, f"{kernel.name} is not derived as any kernel was measured"
        names[kernel.name] = name
    return plan, names, None


# -- what each model says of them -------------------------------------------------------------


class Predictor:
    """The shipped learned model (LEARNED_MODEL), and which programs it was trained on."""

    def __init__(self, path: Path = LEARNED_MODEL):
        from compiler.cost.learned.predict import LearnedPredictor

        self.path = path
        self.learned = LearnedPredictor.load(path)
        programs = self.learned.header.get("programs") or {}
        self.trained_on = sorted(programs.get("train") or [])
        self.held_out = sorted(programs.get("test") or [])

    def predict_samples(self, samples: list[KernelSample]) -> list[float]:
        from compiler.cost.learned.model import predict_us   # torch

        return predict_us(self.learned.model, samples).tolist() if samples else []


@lru_cache(maxsize=1)
def shipped_predictor() -> Predictor:
    return Predictor()


@dataclass(frozen=True)
class Choice:
    """One measured kernel under one of its measured CodeGen plans."""

    plan: str                     # CodeGenPlan.key()
    alone_us: float               # measured, timed alone
    device_us: dict[str, float]   # per model, predicted device work


@dataclass(frozen=True)
class PricedKernel:
    """A measured kernel's measured CodeGen plans, in codegen's order today (its pick first)."""

    name: str
    choices: tuple[Choice, ...]
    codegen_pick_measured: bool   # False: codegen's first plan today was not measured
    # CodeGen plans whose features, as today's code computes them with the registers ptxas
    # gave the campaign's build, differ from the dataset's (the model's training features)
    # in more than the projected model's figures.
    features_differ: int = 0

    @property
    def pick(self) -> Choice:
        return self.choices[0]

    def to_dict(self) -> dict:
        """Codegen's pick, as the plans' totals count it, and how many plans were measured."""
        return {"codegen_plan": self.pick.plan, "alone_us": self.pick.alone_us,
                "device_us": self.pick.device_us, "codegen_pick_measured":
                self.codegen_pick_measured, "codegen_plans_measured": len(self.choices)}


_REGISTERS = KERNEL_FEATURES.index("registers_over_64")
_SHARED = KERNEL_FEATURES.index("log2_shared_bytes")
_SPILLS = KERNEL_FEATURES.index("log2_spill_bytes")
# The columns the projected model's figures fill: they follow that model as it improves (the
# loaded latency of 2026-11-29 moved them), the learned model's weights stay as trained.
_PROJECTED = [k for k, name in enumerate(KERNEL_FEATURES)
              if name in ("log2_projected_us", "log2_throughput_us", "log2_latency_us",
                          "log2_grid_sync_us") or name.startswith("limiter_")]
_KERNEL_OWN = [k for k in range(len(KERNEL_FEATURES)) if k not in _PROJECTED]
# Features are stored to 6 significant digits (compiler/cost/learned/dataset.py).
_SAME_FEATURE = 1e-4


def built_sample(graph: Graph, kernel: Kernel, plan: CodeGenPlan, breakdown: Breakdown,
                 stored: KernelSample) -> tuple[KernelSample, bool]:
    """(the kernel's sample under `plan` as today's code computes it with the resources ptxas
    gave the campaign's build, read back from the dataset's sample `stored`; whether its
    features differ from `stored`'s, but for the projected model's figures). `breakdown`: the
    plan's projection with estimated registers, whose shared memory is the plan's own (ptxas
    adds the static part)."""
    features = stored.kernel_features
    static_shared = round(2 ** float(features[_SHARED]) - 1) - (breakdown.shared_bytes or 0)
    resources = Resources(registers=round(64 * float(features[_REGISTERS])),
                          static_shared_bytes=max(0, static_shared),
                          spill_bytes=round(2 ** float(features[_SPILLS]) - 1))
    sample = kernel_sample(graph, kernel, plan, get_device(DEVICE), resources=resources)
    differ = sample.node_features.shape != stored.node_features.shape \
        or not np.allclose(sample.node_features, stored.node_features, rtol=_SAME_FEATURE,
                           atol=_SAME_FEATURE) \
        or not np.allclose(np.asarray(sample.kernel_features)[_KERNEL_OWN],
                           np.asarray(features, dtype=float)[_KERNEL_OWN],
                           rtol=_SAME_FEATURE, atol=_SAME_FEATURE)
    return sample, differ


def priced_kernels(graph: Graph, kernels: dict[str, Kernel],
                   measured: dict[str, MeasuredKernel], predictor: Predictor
                   ) -> dict[str, PricedKernel]:
    """Every measured kernel (`kernels`: the compiler's Kernel of each, by measured name) under
    its measured CodeGen plans, with each model's device work; the learned model's in one
    batch on each kind of features."""
    device = get_device(DEVICE)
    ranked: dict[str, list] = {}
    firsts: dict[str, str] = {}
    differ: dict[str, int] = {}
    built: list[KernelSample] = []
    estimated: list[KernelSample] = []
    for name, kernel in kernels.items():
        ranking = rank_plans(graph, kernel, enumerate_plans(graph, kernel), device)
        keys = [plan.key() for plan, _ in ranking]
        lost = sorted(set(measured[name].alone_us) - set(keys))
        if lost:
            raise InputError(f"{name}: CodeGen plan {lost[0]} was measured, but today's code "
                             f"generator does not enumerate it")
        firsts[name] = keys[0]
        ranked[name] = [(plan, breakdown) for plan, breakdown in ranking
                        if plan.key() in measured[name].alone_us]
        differ[name] = 0
        for plan, breakdown in ranked[name]:
            sample, changed = built_sample(graph, kernel, plan, breakdown,
                                           measured[name].samples[plan.key()])
            built.append(sample)
            differ[name] += changed
            estimated.append(kernel_sample(graph, kernel, plan, device, breakdown))
    # As the explorer prices: a sample outside the model's training support keeps its
    # projected time (compiler/cost/learned/support.py).
    outside = predictor.learned.outside
    learned = iter(zip(predictor.predict_samples(built), map(outside, built)))
    learned_estimated = iter(zip(predictor.predict_samples(estimated), map(outside, estimated)))
    priced = {}
    for name, kernel in kernels.items():
        choices = []
        for plan, breakdown in ranked[name]:
            device_us = {"sol": kernel.sol.total_us, "projected": breakdown.projected_us}
            for model, times in (("learned", learned),
                                 ("learned_estimated", learned_estimated)):
                time, outside = next(times)
                device_us[model] = (breakdown.projected_us if outside
                                    else device_work_of_alone(DEVICE, time))
            choices.append(Choice(plan.key(), measured[name].alone_us[plan.key()], device_us))
        priced[name] = PricedKernel(name, tuple(choices), firsts[name] == choices[0].plan,
                                    differ[name])
    return priced


# -- the table --------------------------------------------------------------------------------


@dataclass
class PlanRow:
    """A plan whose kernels were all measured, each under codegen's pick."""

    name: str                         # its strategies' names ("stitch=cost"), or "mixed-N"
    kernels: tuple[str, ...]          # measured kernels, as the plan orders them
    measured_us: float
    predicted_us: dict[str, float]
    fusion_plan: FusionPlan = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"name": self.name, "measured_us": self.measured_us,
                "predicted_us": self.predicted_us, "kernels": list(self.kernels)}


@dataclass
class ModuleTable:
    module: str
    runtime: str
    plans: list[PlanRow]                   # fastest measured first
    priced: dict[str, PricedKernel]
    kernels: dict[str, MeasuredKernel]     # the measured kernels and the library calls
    library: list[str]                     # in every plan, measured in none, left out
    strategies: dict[str, str | None]      # today's plan of each strategy: its row, or None
    kernel_sets: int                       # sets of measured kernels that make the module
    refused: list[str]                     # why the others are not plans
    graph: Graph = field(repr=False)

    def row(self, name: str) -> PlanRow:
        for row in self.plans:
            if row.name == name:
                return row
        raise KeyError(f"{self.module} has no plan {name!r}: its plans are "
                       f"{', '.join(r.name for r in self.plans)}")

    @property
    def fastest_us(self) -> float:
        return self.plans[0].measured_us


def lowered_graph(module: str) -> Graph:
    """The module's graph at the campaign's size, lowered with JAX as the campaign lowered it."""
    if importlib.util.find_spec("jax") is None:
        raise InputError(f"{module}: jax is not installed, and the realistic size the campaign "
                         f"measured is lowered with it (benchmarks/data/campaign/ keeps the "
                         f"small size only)")
    from gpu_campaign import lower_or_frozen
    from gpu_campaign_modules import MODULES

    recorded = json.loads((CAMPAIGN / "modules.json").read_text())[module]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{module}.hlo"
        lower_or_frozen(MODULES[module], SIZE, path)
        graph = load_graphs(path)[0]
    if len(graph.nodes) != recorded["nodes"]:
        raise InputError(f"{module}: lowered again it has {len(graph.nodes)} nodes; the "
                         f"campaign's had {recorded['nodes']}")
    return graph


def dataset_modules() -> list[str]:
    """The modules the campaign collected a dataset for, in the order it collected them."""
    return [Path(path).name.removeprefix(f"{DEVICE}-").removesuffix(".jsonl.gz")
            for path in json.loads((CAMPAIGN / "dataset.json").read_text())["out"]]


@lru_cache(maxsize=None)
def module_table(module: str, runtime: str = "stream") -> ModuleTable:
    """The plans of `module` whose kernels were all measured, with measured and predicted
    totals under `runtime` (module docstring)."""
    if runtime not in RUNTIMES:
        raise InputError(f"unknown runtime {runtime!r}: choose one of {', '.join(RUNTIMES)}")
    graph = lowered_graph(module)
    _, samples = read_dataset(DATASETS / f"{DEVICE}-{module}.jsonl.gz")
    measured = measured_kernels(samples)
    strategy_plans = explore(graph, DEVICE, list(STRATEGIES), runtime=runtime)
    library = library_kernels(module, strategy_plans)
    every = {**measured, **library}
    sets = kernel_sets(graph, every)
    built, refused = measured_plans(graph, every, sets)
    kernels = {name: kernel for plan, names in built for kernel in plan.kernels
               if (name := names[kernel.name]) in measured}
    priced = priced_kernels(graph, kernels, measured, shipped_predictor())
    rows = plan_rows(built, priced, runtime)
    strategies = {s: _row_of(rows, every, plan) for s, plan in strategy_plans.items()}
    mixed = 0
    for row in rows:
        named = [s for s, found in strategies.items() if found is row]
        if not named:
            mixed += 1
        row.name = "=".join(named) if named else f"mixed-{mixed}"
    return ModuleTable(module, runtime, rows, priced, every, sorted(library),
                       {s: row.name if row else None for s, row in strategies.items()},
                       len(sets), refused, graph)


def measured_plans(graph: Graph, kernels: dict[str, MeasuredKernel],
                   sets: list[frozenset[str]]
                   ) -> tuple[list[tuple[FusionPlan, dict[str, str]]], list[str]]:
    """The plans the checker builds of `sets` ((plan, measured name by kernel name) each), and
    why it refused the others. InputError when a library call, measured in no plan and so left
    out of every total, is in some plans only: leaving it out would favour those without."""
    model = SolModel(graph, get_device(DEVICE))
    built, refused = [], []
    for chosen in sets:
        plan, names, refusal = checked_plan(graph, model, kernels, chosen)
        if plan is None:
            refused.append(refusal)
        else:
            built.append((plan, names))
    library = {name for name, kernel in kernels.items() if not kernel.measured}
    if any(not library <= set(names.values()) for _, names in built):
        raise InputError(f"{graph.name}: a library call that was not measured is in some plans "
                         f"only")
    return built, refused


def plan_rows(built: list[tuple[FusionPlan, dict[str, str]]], priced: dict[str, PricedKernel],
              runtime: str) -> list[PlanRow]:
    """A row per plan, its kernels under codegen's picks, fastest measured first (unnamed)."""
    launch = terms_for(DEVICE).launch(runtime)
    rows = []
    for plan, names in built:
        order = tuple(names[k.name] for k in plan.kernels if names[k.name] in priced)
        picks = [priced[name].pick for name in order]
        rows.append(PlanRow(
            name="", kernels=order,
            measured_us=sum(launch.kernel_us(device_work_of_alone(DEVICE, c.alone_us))
                            for c in picks),
            predicted_us={m: sum(launch.kernel_us(c.device_us[m]) for c in picks)
                          for m in MODELS},
            fusion_plan=plan))
    return sorted(rows, key=lambda row: (row.measured_us, row.kernels))


def _row_of(rows: list[PlanRow], kernels: dict[str, MeasuredKernel],
            plan: FusionPlan) -> PlanRow | None:
    """The row whose kernels are `plan`'s, or None when some of its kernels were not measured."""
    by_key = {kernel.key: name for name, kernel in kernels.items()}
    names = [by_key.get(kernel_key(kernel)) for kernel in plan.kernels]
    if None in names:
        return None
    wanted = {name for name in names if kernels[name].measured}
    return next((row for row in rows if set(row.kernels) == wanted), None)


def plan_named(module: str, plan: FusionPlan, runtime: str = "stream") -> str | None:
    """The name of `module`'s plan made of `plan`'s kernels (a tuner's pick), or None when it
    is none of them: some kernel of it was not measured."""
    table = module_table(module, runtime)
    found = _row_of(table.plans, table.kernels, plan)
    return found.name if found else None


def cost_search_picks(module: str, runtime: str = "stream") -> dict[str, dict]:
    """The tuner we have today: the plan `explore`'s cost strategy makes deciding with each
    model (under `runtime`), found among the measured plans with `plan_named` and scored with
    `regret_of`, as an autotuner's pick would be. Per model: {"plan": its name or None,
    "regret_percent", "not_measured": what keeps a plan that is no row out, or None}."""
    table = module_table(module, runtime)
    measured_keys = {kernel.key for kernel in table.kernels.values()}
    picks = {}
    for model in SEARCH_MODELS:
        learned = shipped_predictor().learned if model == "learned" else None
        plan = explore(table.graph, DEVICE, list(STRATEGIES), cost_model=model,
                       learned=learned, runtime=runtime)["cost"]
        name = plan_named(module, plan, runtime)
        if name is None:
            missing = sum(kernel_key(k) not in measured_keys for k in plan.kernels)
            picks[model] = {"plan": None, "regret_percent": None,
                            "not_measured": f"{missing} of its {len(plan.kernels)} kernels "
                                            f"were not measured"}
        else:
            regret = regret_of(module, {name: 0.0}, runtime)["top1_regret_percent"]
            picks[model] = {"plan": name, "regret_percent": regret, "not_measured": None}
    return picks


def autotuner_picks(module: str, runtime: str = "stream", evaluations: int = 300,
                    seed: int = 0) -> dict[str, dict]:
    """The autotuner's best plan (compiler/fusion/autotune.py: annealing from the strategies'
    plans, `evaluations` plans scored, `seed`) under each model, found among the measured
    plans and scored as `cost_search_picks` scores the cost search's. Per model: {"moves": how
    many edits from its start, "plan", "regret_percent", "not_measured"}."""
    from compiler.fusion.autotune import Budget, autotune

    table = module_table(module, runtime)
    starts = explore(table.graph, DEVICE, list(STRATEGIES), runtime=runtime)
    measured_keys = {kernel.key for kernel in table.kernels.values()}
    picks = {}
    for model in SEARCH_MODELS:
        learned = shipped_predictor().learned if model == "learned" else None
        best = autotune(table.graph, starts, model, "anneal", Budget(evaluations=evaluations),
                        seed, predictor=learned).best
        name = plan_named(module, best.plan, runtime)
        missing = sum(kernel_key(k) not in measured_keys for k in best.plan.kernels)
        picks[model] = {
            "moves": len(best.moves), "plan": name,
            "regret_percent": (regret_of(module, {name: 0.0}, runtime)["top1_regret_percent"]
                               if name else None),
            "not_measured": None if name else f"{missing} of its {len(best.plan.kernels)} "
                                              f"kernels were not measured"}
    return picks


# -- scoring ----------------------------------------------------------------------------------


def score(table: ModuleTable, predicted_totals_by_plan: dict[str, float]) -> dict:
    """A ranking of some of the table's plans (predicted totals in µs by plan name) scored:
    Kendall's tau-b over the plans ranked, and the top-1 regret of the plan ranked first
    against the fastest measured plan of the whole table (a ranking that leaves the fastest
    plan out is not let off). Ties are a random pick, the expected regret counted."""
    if not predicted_totals_by_plan:
        raise ValueError(f"{table.module}: no plan was ranked")
    rows = [table.row(name) for name in predicted_totals_by_plan]
    ranking = rank_plans_by_models([row.measured_us for row in rows],
                                   {"ranking": list(predicted_totals_by_plan.values())})
    ranked = ranking["ranking"]
    picked_us = statistics.fmean(rows[k].measured_us for k in ranked.picks)
    return {"plans": len(rows), "of": len(table.plans), "kendall_tau": ranked.kendall_tau,
            "top1_regret_percent": 100.0 * (picked_us - table.fastest_us) / table.fastest_us,
            "picks": [rows[k].name for k in ranked.picks], "fastest": table.plans[0].name}


def regret_of(module: str, predicted_totals_by_plan: dict[str, float],
              runtime: str = "stream") -> dict:
    """Score a tuner's ranking of `module`'s measured plans as the cost models are scored here.

    `predicted_totals_by_plan`: the tuner's total in µs for some or all of
    `module_table(module, runtime).plans`, by `PlanRow.name`; each row's `fusion_plan` is the
    compiler's plan of those kernels, to price with the tuner's own pricer
    (`compiler.fusion.pricing.plan_price`), and `plan_named` finds the row of a plan the tuner
    made. Its totals should be of the same runtime (`runtime`).

    Returns {"plans": ranked, "of": the table's plans, "kendall_tau": tau-b over the ranked
    plans (None for one), "top1_regret_percent": how much slower its first plan measured than
    the table's fastest, "picks": the plans it ranks first, "fastest": the fastest measured}.
    KeyError for a name the table does not have."""
    return score(module_table(module, runtime), predicted_totals_by_plan)


def module_figures(table: ModuleTable) -> dict:
    """Each model's tau and top-1 regret over the table's plans, and its regret when it also
    picks every kernel's CodeGen plan."""
    launch = terms_for(DEVICE).launch(table.runtime)

    def measured_us(choice: Choice) -> float:
        return launch.kernel_us(device_work_of_alone(DEVICE, choice.alone_us))

    rankings = {m: score(table, {row.name: row.predicted_us[m] for row in table.plans})
                for m in MODELS}
    fastest_us = min(sum(min(measured_us(c) for c in table.priced[k].choices)
                         for k in row.kernels) for row in table.plans)
    every_choice = {"plans": sum(math.prod(len(table.priced[k].choices) for k in row.kernels)
                                 for row in table.plans),
                    "fastest_us": fastest_us,
                    # The table's fastest plan, every kernel under codegen's pick, against the
                    # fastest of every choice: what codegen's choices leave.
                    "codegen_regret_percent": 100.0 * (table.fastest_us - fastest_us)
                    / fastest_us,
                    "regret_percent": {}}
    for m in MODELS:
        groupings = [[[(launch.kernel_us(c.device_us[m]), measured_us(c))
                       for c in table.priced[k].choices] for k in row.kernels]
                     for row in table.plans]
        every_choice["regret_percent"][m] = regret_over_choices(groupings)
    return {"plans": len(table.plans), "kernel_sets": table.kernel_sets,
            "refused": len(table.refused),
            "fastest": {"plan": table.plans[0].name, "measured_us": table.fastest_us},
            "models": {m: {key: rankings[m][key] for key in
                           ("kendall_tau", "top1_regret_percent", "picks")} for m in MODELS},
            "strategies": table.strategies, "every_choice": every_choice,
            "library_left_out": table.library,
            "codegen_pick_not_measured": sorted(k for k, p in table.priced.items()
                                                if not p.codegen_pick_measured),
            "learned_features_differing": sum(p.features_differ for p in table.priced.values()),
            "codegen_plans_measured": sum(len(p.choices) for p in table.priced.values())}


# -- checks on the measurements ---------------------------------------------------------------


def back_to_back_check(module: str) -> dict | None:
    """How the stream totals made from kernels timed alone compare with the campaign's plans
    run back to back (plans/<module>.json, the strategies' plans as cut on 2026-11-27, each
    plan once where two strategies made the same): Kendall's tau between the two, and each
    plan's difference in % with the plan's start added (a run starts with a lone launch, which
    launch.py's totals leave out). None when no plan of the module has both."""
    path = CAMPAIGN / "plans" / f"{module}.json"
    if not path.exists():
        return None
    terms = terms_for(DEVICE)
    stream = terms.launch("stream")
    start_us = terms.alone_us - terms.stream_gap_us
    seen, names, made, whole = set(), [], [], []
    for strategy, entry in json.loads(path.read_text())["strategies"].items():
        alone = [k["measured_us"] for k in entry["kernels"]]
        same = tuple((k["name"], k["kind"], k["schedule"], k["dram_bytes"])
                     for k in entry["kernels"])
        if entry["end_to_end_us"] is None or None in alone or same in seen:
            continue
        seen.add(same)
        names.append(strategy)
        made.append(start_us + sum(stream.kernel_us(device_work_of_alone(DEVICE, t))
                                   for t in alone))
        whole.append(entry["end_to_end_us"])
    if not made:
        return None
    return {"plans": names, "kendall_tau": kendall_tau(made, whole),
            "difference_percent": [100.0 * (m - w) / w for m, w in zip(made, whole)]}


def session_check(module: str) -> dict | None:
    """How the same kernel under the same CodeGen plan measured in the dataset's session and in
    the plans' (plans/<module>.json, first session): the median and largest difference in %,
    over the kernels both hold under the same name. None when they share none."""
    path = CAMPAIGN / "plans" / f"{module}.json"
    if not path.exists():
        return None
    _, samples = read_dataset(DATASETS / f"{DEVICE}-{module}.jsonl.gz")
    dataset = {(s.group, s.plan): s.target_us for s in samples}
    differences = [100.0 * (dataset[key] - r["measured_us"]) / r["measured_us"]
                   for r in json.loads(path.read_text())["calibration_records"]
                   if (key := (r["kernel"], r["plan"])) in dataset]
    if not differences:
        return None
    return {"kernels": len(differences),
            "median_abs_difference_percent": statistics.median(abs(d) for d in differences),
            "largest_difference_percent": max(differences, key=abs)}


# -- output -----------------------------------------------------------------------------------


def results(modules: list[str], runtime: str) -> dict:
    predictor = shipped_predictor()
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": "benchmarks/plan_regret.py " + " ".join(sys.argv[1:]),
           "campaign": str(CAMPAIGN.relative_to(REPO)), "device": DEVICE, "runtime": runtime,
           "launch": terms_for(DEVICE).to_dict(),
           "learned_model": {"file": str(predictor.path.relative_to(REPO)),
                             "trained_on": predictor.trained_on,
                             "held_out": predictor.held_out},
           "modules": {}}
    for module in modules:
        table = module_table(module, runtime)
        out["modules"][module] = {
            "learned_model_saw_it": module in predictor.trained_on,
            **module_figures(table),
            "tuner": cost_search_picks(module, runtime),
            "checks": {"back_to_back": back_to_back_check(module) if runtime == "stream"
                       else None,
                       "sessions": session_check(module)},
            "plan_rows": [row.to_dict() for row in table.plans],
            "kernels": {name: kernel.to_dict() for name, kernel in table.priced.items()}}
    return out


def _figure(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def summary_markdown(out: dict) -> str:
    """The README's two tables: per module, how each model ranks the plans (tau, top-1
    regret); then what choosing by each model costs: the cost search's plan, and every plan
    with every kernel's CodeGen plan chosen too."""
    models = " | ".join(f"{MODEL_LABELS[m]} τ / regret %" for m in MODELS)
    lines = [f"| module | learned model | plans | fastest (µs) | {models} |",
             "|---|---|---:|---|" + "---|" * len(MODELS)]
    for module, figures in out["modules"].items():
        fastest = figures["fastest"]
        cells = [f"{_figure(figures['models'][m]['kendall_tau'], 2)} / "
                 f"{_figure(figures['models'][m]['top1_regret_percent'])}" for m in MODELS]
        seen = "trained on" if figures["learned_model_saw_it"] else "**held out**"
        lines.append(f"| {module} | {seen} | {figures['plans']} | {fastest['plan']} "
                     f"{_figure(fastest['measured_us'])} | {' | '.join(cells)} |")
    search = " / ".join(MODEL_LABELS[m] for m in SEARCH_MODELS)
    every = " / ".join(MODEL_LABELS[m] for m in MODELS)
    lines += ["", f"| module | cost search with {search}: regret % | plans of every CodeGen "
              f"choice | fastest of them (µs) | codegen's picks: regret % | {every}: regret % |",
              "|---|---|---:|---:|---:|---|"]
    for module, figures in out["modules"].items():
        tuner = " / ".join(_figure(figures["tuner"][m]["regret_percent"])
                           for m in SEARCH_MODELS)
        choice = figures["every_choice"]
        regrets = " / ".join(_figure(choice["regret_percent"][m]) for m in MODELS)
        lines.append(f"| {module} | {tuner} | {choice['plans']:,} | "
                     f"{_figure(choice['fastest_us'])} | "
                     f"{_figure(choice['codegen_regret_percent'])} | {regrets} |")
    return "\n".join(lines)


def notes(out: dict) -> list[str]:
    """What each module's figures leave out or rest on."""
    lines = []
    for module, figures in out["modules"].items():
        missing = [s for s, row in figures["strategies"].items() if row is None]
        if missing:
            lines.append(f"{module}: today's {', '.join(missing)} plan is not among them (a "
                         f"kernel of it was not measured)")
        for m, pick in figures["tuner"].items():
            if pick["plan"] is None:
                lines.append(f"{module}: the cost search deciding with {MODEL_LABELS[m]} makes "
                             f"a plan that is not among them: {pick['not_measured']}")
        if figures["library_left_out"]:
            lines.append(f"{module}: {', '.join(figures['library_left_out'])} (a library call, "
                         f"not measured) is in every plan and left out of every total")
        if figures["codegen_pick_not_measured"]:
            lines.append(f"{module}: codegen's first CodeGen plan today was not measured for "
                         f"{', '.join(figures['codegen_pick_not_measured'])}; the first "
                         f"measured one stands in")
        if figures["learned_features_differing"]:
            lines.append(f"{module}: for {figures['learned_features_differing']} of "
                         f"{figures['codegen_plans_measured']} measured CodeGen plans, today's "
                         f"features differ from the campaign's (the learned model's training "
                         f"features)")
        checks = figures["checks"]
        if checks["back_to_back"]:
            b2b = checks["back_to_back"]
            spread = ", ".join(f"{name} {d:+.1f} %" for name, d
                               in zip(b2b["plans"], b2b["difference_percent"]))
            lines.append(f"{module}: stream totals from kernels alone against the strategies' "
                         f"plans run back to back: τ {_figure(b2b['kendall_tau'], 2)}; {spread}")
        if checks["sessions"]:
            s = checks["sessions"]
            lines.append(f"{module}: {s['kernels']} kernels timed in two sessions differ by "
                         f"{s['median_abs_difference_percent']:.1f} % (median), "
                         f"{s['largest_difference_percent']:+.1f} % at most")
    return lines


def plan_lines(out: dict) -> list[str]:
    lines = []
    for module, figures in out["modules"].items():
        lines += ["", f"{module}, totals in µs: measured | {' '.join(MODELS)}"]
        for row in figures["plan_rows"]:
            predicted = " ".join(f"{row['predicted_us'][m]:9.1f}" for m in MODELS)
            lines.append(f"  {row['name']:<28} {len(row['kernels']):3d} kernels "
                         f"{row['measured_us']:9.1f} | {predicted}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", help="comma-separated (default: every module with a "
                        "dataset: " + ", ".join(dataset_modules()) + ")")
    parser.add_argument("--runtime", choices=RUNTIMES, default="stream")
    parser.add_argument("--plans", action="store_true", help="list every plan's totals")
    parser.add_argument("--autotuner", action="store_true",
                        help="only score the autotuner's picks (300 plans scored, seed 0) "
                             "under each model, printed")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--write", action="store_true", help=f"store them in "
                        f"{RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    # JAX only lowers here: it need not look for a GPU (it warns at length where CUDA is half
    # installed). Set by the command alone, never by importing this module.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    known = dataset_modules()
    modules = args.modules.split(",") if args.modules else known
    if args.write and modules != known:
        print(f"plan_regret: --write stores every module's figures in "
              f"{RESULTS.relative_to(REPO)}: leave out --modules", file=sys.stderr)
        return 2
    unknown = [m for m in modules if m not in known]
    if unknown:
        print(f"plan_regret: no measured dataset for {unknown[0]}: the campaign has "
              f"{', '.join(known)}", file=sys.stderr)
        return 2
    if args.autotuner:
        for module in modules:
            picks = autotuner_picks(module, args.runtime)
            print(f"{module}: " + "; ".join(
                f"{MODEL_LABELS[m]}: {p['moves']} moves, "
                + (f"{p['plan']}, regret {p['regret_percent']:.1f} %" if p["plan"]
                   else f"not measured ({p['not_measured']})") for m, p in picks.items()))
        return 0
    try:
        out = results(modules, args.runtime)
    except InputError as error:
        print(f"plan_regret: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"Plans whose kernels were all measured ({DEVICE}, {out['campaign']}), "
              f"{args.runtime} launches:\n")
        print(summary_markdown(out))
        print()
        print("\n".join(notes(out)))
        if args.plans:
            print("\n".join(plan_lines(out)))
    if args.write:
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {RESULTS.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
