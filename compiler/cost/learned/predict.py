"""Learned predictions for a compiled plan: the trained cost model applied to every generated
kernel of a fusion plan, and the fields they fill in the `explore` / `codegen` JSON.

`LearnedPredictor` wraps a trained `CostModel` and its file header (train.save_model). It
predicts the kernels of one device only, the device its training samples were made for: an
h100 model says nothing about an a100 plan, and asking it is an InputError.

`predict_plan(graph, plan, codes=None)` gives one time per kernel of the plan, in order:
- a generated kernel is described under its CodeGen plan: with `codes` (the codegen stage's
  KernelCode list), the emitted plan and its breakdown with ptxas' resources; without, the
  plan the projected model ranks first, as codegen's emit_code chooses it, with rank_plans'
  breakdown (estimated registers);
- a library kernel (cuBLAS, cuDNN), a kernel without a CodeGen plan, one whose schedule
  the workload model does not cover (features.kernel_sample raises ValueError), and one
  outside what the model was trained on (support.py: a schedule or kind no training sample
  had, a size beyond the training range) get None;
- all kernels of the plan go through the model in one batched forward.
`predictions(graph, plan, codes=None)` gives the same with, for every None, why.

`attach_learned(strategy_result, graph, plan, codes, predictor)` writes the predictions into
one strategy's entry of the JSON. The model predicts a kernel timed alone (its training
targets are); what a lone launch adds on the device (compiler/target/launch.py, alone_us) is
taken off to give its device work, to which the plan's launch term is added as to the
projected device work:
- each kernel's "learned_device_us" (device work) and "learned_us" (with the launch term of the
  plan's runtime), or null where it predicted none, and then its "learned_skipped": why;
- the total's "learned_us": the sum over the plan's kernels of the learned time where the model
  predicted one and the kernel's projected time elsewhere (library kernels), so plans with and
  without library calls compare; null when a kernel has neither, or the model predicted none;
  and under every runtime in the total's "runtimes";
- the total's "learned_kernels": how many kernels the model predicted (the rest are projected),
  and "learned_outside": how many of the rest were outside its training support;
- the strategy's "learned_model": {"label", "origin", "device"} of the model used.
Without a predictor all of them are null, as every field a stage has not produced is.

A model's "origin" is "measured" (trained on GPU timings) or "synthetic" (trained on a known
function, compiler/cost/learned/synthetic.py): a synthetic model's times prove the pipeline
runs and are no GPU prediction; pages that show them say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned.dataset import ORIGINS
from compiler.cost.learned.features import KernelSample, kernel_sample
from compiler.cost.learned.model import CostModel, predict_us
from compiler.cost.learned.support import TrainingSupport
from compiler.cost.learned.train import load_model
from compiler.cost.projected import Breakdown, rank_plans
from compiler.errors import InputError
from compiler.ir.graph import Graph
from compiler.kernels.plan import FusionPlan, Kernel
from compiler.target.devices import Device, get_device
from compiler.target.launch import RUNTIMES, device_work_of_alone, terms_for

# Decimal places of a learned time in the JSON, as for the projected times.
_DIGITS = 4
# How a kernel's "learned_skipped" starts when it lies outside the model's training support.
OUTSIDE = "outside its training"


class KernelCode(Protocol):
    """What the prediction reads of a kernel's generated code (compiler/stages/codegen.py's
    KernelCode): the CodeGen plan codegen chose and its breakdown with ptxas' resources."""

    @property
    def chosen(self) -> CodeGenPlan | None: ...

    breakdown: Breakdown | None


class LearnedPredictor:
    """A trained cost model for one device, with what pages say about it (label, origin)."""

    def __init__(self, model: CostModel, header: dict, source: str = "the model"):
        device = header.get("device")
        if not device:
            raise InputError(f"{source}: the header names no device; train the model with "
                             f"compiler.cost.learned.experiment.train_costmodel")
        origin = header.get("origin")
        if origin not in ORIGINS:
            raise InputError(f"{source}: origin must be one of {', '.join(ORIGINS)}, not "
                             f"{origin!r}")
        self.model, self.header = model, header
        self.device: str = get_device(device).name
        self.origin: str = origin
        # The registry's name for the model (registry.ModelFile.label); a model saved outside
        # a registry has no version number.
        version = header.get("version")
        self.label = f"learned-{self.device}" + (f"-v{version}" if version else "")
        # What its training samples covered (support.py); None in a file trained before the
        # header kept it: such a model predicts every kernel it can describe.
        try:
            self.support = (TrainingSupport.from_dict(header["support"])
                            if header.get("support") else None)
        except ValueError as error:
            raise InputError(f"{source}: its training support: {error}") from None

    @classmethod
    def load(cls, path: str | Path) -> LearnedPredictor:
        """The predictor of a model file; InputError when the file is not a model this code
        can run (train.load_model) or its header names no device or origin."""
        model, header = load_model(path)
        return cls(model, header, str(path))

    @classmethod
    def from_model(cls, model: CostModel, header: dict) -> LearnedPredictor:
        return cls(model, header)

    def info(self) -> dict:
        """The strategy's "learned_model" entry; with the model's held-out figures (per split,
        the learned, projected and SOL models' MAPE and Kendall tau on the same held-out
        kernels) where its header has them, so a page can say how far each model is to be
        trusted."""
        info = {"label": self.label, "origin": self.origin, "device": self.device}
        evaluation = self.header.get("evaluation")
        if isinstance(evaluation, dict):
            info["evaluation"] = {
                split: {**{model: {key: (figures.get(model) or {}).get(key)
                                   for key in ("mape", "mean_kendall_tau", "count")}
                           for model in ("learned", "projected", "sol")},
                        "test_programs": figures.get("test_programs") or []}
                for split, figures in evaluation.items() if isinstance(figures, dict)}
        return info

    def outside(self, sample: KernelSample) -> str | None:
        """Why `sample` lies outside what the model was trained on (support.py); None when it
        is inside, or when the model file keeps no support."""
        return self.support.outside(sample) if self.support is not None else None

    def predict_plan(self, graph: Graph, plan: FusionPlan,
                     codes: list[KernelCode] | None = None) -> list[float | None]:
        """Predicted time in µs of every kernel of `plan` (None where the model cannot
        describe it or was not trained on its like; see the module docstring), in one forward
        of the model."""
        return [time for time, _ in self.predictions(graph, plan, codes)]

    def predictions(self, graph: Graph, plan: FusionPlan,
                    codes: list[KernelCode] | None = None) -> list[tuple[float | None, str | None]]:
        """(predicted µs, None) of every kernel of `plan`, in order, or (None, why not)."""
        if plan.device != self.device:
            raise InputError(f"the learned model {self.label} predicts {self.device} kernels; "
                             f"this {plan.strategy} plan is for {plan.device}")
        if codes is not None and len(codes) != len(plan.kernels):
            raise ValueError(f"{len(codes)} kernel codes for a plan of {len(plan.kernels)} "
                             f"kernels")
        device = get_device(self.device)
        samples: list[KernelSample | str] = []
        for index, kernel in enumerate(plan.kernels):
            code = codes[index] if codes is not None else None
            samples.append(_sample(graph, kernel, device, code, self.outside))
        described = [sample for sample in samples if not isinstance(sample, str)]
        times = iter(predict_us(self.model, described).tolist()) if described else iter(())
        return [(None, sample) if isinstance(sample, str) else (float(next(times)), None)
                for sample in samples]


def _sample(graph: Graph, kernel: Kernel, device: Device, code: KernelCode | None,
            outside) -> KernelSample | str:
    """The kernel's sample under its CodeGen plan, or why the model says nothing of it
    (`outside`: LearnedPredictor.outside)."""
    if kernel.kind == "library":
        return "a library call"
    if code is not None:
        codegen_plan, breakdown = code.chosen, code.breakdown
    else:
        ranking = rank_plans(graph, kernel, enumerate_plans(graph, kernel), device)
        # No ranked plan: codegen falls back to a heuristic plan the workload model (and so
        # the features) cannot describe.
        codegen_plan, breakdown = ranking[0] if ranking else (None, None)
    if codegen_plan is None:
        return "no CodeGen plan the model describes"
    try:
        sample = kernel_sample(graph, kernel, codegen_plan, device, breakdown)
    except ValueError as error:
        return f"not described: {error}"
    why = outside(sample)
    return f"{OUTSIDE} ({why})" if why else sample


def attach_learned(strategy_result: dict, graph: Graph, plan: FusionPlan,
                   codes: list[KernelCode] | None, predictor: LearnedPredictor | None) -> None:
    """Fill one strategy's learned fields (see the module docstring) from `predictor`'s
    predictions for `plan`; all null without a predictor."""
    if predictor is None:
        for entry in strategy_result["kernels"]:
            entry.update(learned_us=None, learned_device_us=None, learned_skipped=None)
        strategy_result["total"].update(learned_us=None, learned_kernels=None,
                                        learned_outside=None)
        strategy_result["learned_model"] = None
        return
    predictions = predictor.predictions(graph, plan, codes)
    times = [time for time, _ in predictions]
    launches = {name: terms_for(plan.device).launch(name) for name in RUNTIMES}
    # Per runtime, the learned time of each kernel, else its projected time (may be None).
    parts: dict[str, list] = {name: [] for name in RUNTIMES}
    for entry, (time, skipped) in zip(strategy_result["kernels"], predictions):
        entry["learned_skipped"] = skipped
        if time is None:
            entry.update(learned_us=None, learned_device_us=None)
            device_us = entry.get("device_us")
        else:
            device_us = device_work_of_alone(plan.device, time)
            entry.update(learned_device_us=round(device_us, _DIGITS),
                         learned_us=round(launches[plan.runtime].kernel_us(device_us),
                                          _DIGITS))
        for name, launch in launches.items():
            parts[name].append(None if device_us is None else launch.kernel_us(device_us))
    predicted = sum(time is not None for time in times)
    totals = {name: None if not predicted or None in values else round(sum(values), _DIGITS)
              for name, values in parts.items()}
    outside = sum(bool(skipped) and skipped.startswith(OUTSIDE) for _, skipped in predictions)
    strategy_result["total"].update(learned_us=totals[plan.runtime], learned_kernels=predicted,
                                    learned_outside=outside)
    for name, runtime_total in (strategy_result["total"].get("runtimes") or {}).items():
        runtime_total["learned_us"] = totals[name]
    strategy_result["learned_model"] = predictor.info()
