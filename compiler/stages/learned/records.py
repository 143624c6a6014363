"""Training samples from the web app's measurements: the kernels of a run that a GPU worker
timed, as `KernelSample`s whose target is the measured median.

    samples, skipped = measurement_samples(data, filename, device, measurement, results,
                                           program)

`measurement` is a finished measurement's result (compiler/stages/measure.py's MEASUREMENTS) and
`results` the run's artifact entry for `device` (compile_graph's ARTIFACT["devices"][device]).
The fusion plans and each kernel's CodeGen plan are made again here by the calls
compile_graph makes (explore, then emit_code): the compiler is deterministic, so for the
compiler version that made the measurement these are the kernels that were timed. The ptxas
resources (registers, shared memory, spills) come from the run's kernel entry, so the
features are those of the built kernel, without running nvcc again.

A kernel becomes a sample only when its timing can be trusted as that of this plan on this
device; every other kernel is counted under the reason it was left out (`SKIP_REASONS`).
The samples hold one CodeGen plan per kernel (the one codegen chose), so they teach absolute
runtimes but give the ranking loss no pairs: ranking data comes from
`python -m compiler collect-costmodel-data`, which times every candidate plan.
"""

from __future__ import annotations

import json
from collections import Counter

from compiler.cost.learned.dataset import family_of
from compiler.cost.learned.features import KernelSample, kernel_sample
from compiler.cost.projected import Resources
from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.stages.codegen import emit_code
from compiler.stages.learned.samples import kernel_key
from compiler.stages.pipeline import canonical_options, import_graph
from compiler.target.devices import get_device
from compiler.version import compiler_version

# Why a kernel of a measured run is not a sample, as `measurement_samples` counts them.
OTHER_GPU = "plans made for another GPU"
OTHER_COMPILER = "measured by another compiler version"
NOT_MEASURED = "not measured"
MISMATCHED = "mismatched the reference"
LIBRARY = "library call"
NO_PLAN = "no CodeGen plan"
UNMODELLED = "schedule the projected model does not cover"
PLAN_DIFFERS = "plan differs from the run's"
DUPLICATE = "same kernel as another strategy's"
SKIP_REASONS = (OTHER_GPU, OTHER_COMPILER, NOT_MEASURED, MISMATCHED, LIBRARY, NO_PLAN,
                UNMODELLED, PLAN_DIFFERS, DUPLICATE)


def measurement_samples(data: bytes, filename: str, device: str, measurement: dict,
                        results: dict, program: str,
                        family: str | None = None) -> tuple[list[KernelSample], dict]:
    """(samples, skipped): a sample per measured generated kernel of the run's plans for
    `device` (group "<program>/<strategy>/<kernel>", family `family` or the file name's
    family), and how many kernels were left out for each reason of SKIP_REASONS that
    occurred. InputError for a graph that does not import, an unknown device, or results
    without strategies."""
    strategies = results.get("strategies") or {}
    if not strategies:
        raise InputError(f"{filename}: the run has no plans for {device}")
    kernel_count = sum(len(result["kernels"]) for result in strategies.values())
    measured_device = (measurement.get("devices") or {}).get(device)
    if measured_device is None:
        return [], {NOT_MEASURED: kernel_count}
    if not measured_device.get("matches_gpu"):
        return [], {OTHER_GPU: kernel_count}
    if measurement.get("compiler_version") != compiler_version():
        return [], {OTHER_COMPILER: kernel_count}

    spec = get_device(device)
    graph = import_graph(data, filename)
    family = family if family is not None else family_of(filename)
    # compile_graph's order: the cost search starts from xla's plan when xla runs first.
    _, ordered = canonical_options([device], list(strategies))
    samples, skipped, seen = [], Counter(), set()
    for strategy, plan in explore(graph, device, ordered).items():
        entries = {entry["name"]: entry for entry in strategies[strategy]["kernels"]}
        timed = (measured_device.get("strategies") or {}).get(strategy) or {}
        runs = {run["name"]: run for run in timed.get("kernels", [])}
        for kernel in plan.kernels:
            reason = _skip_reason(kernel, runs.get(kernel.name))
            if reason is not None:
                skipped[reason] += 1
                continue
            code = emit_code(graph, plan, kernel, spec)
            entry = entries.get(kernel.name, {})
            if code.chosen is None or code.error is not None:
                skipped[NO_PLAN] += 1
            elif entry.get("codegen_plan") != _as_stored(code.chosen.to_dict()):
                skipped[PLAN_DIFFERS] += 1
            elif kernel_key(kernel) in seen:
                skipped[DUPLICATE] += 1
            else:
                try:
                    sample = _sample(graph, code, spec, entry, runs[kernel.name])
                except ValueError:
                    skipped[UNMODELLED] += 1
                    continue
                seen.add(kernel_key(kernel))
                sample.program, sample.family = program, family
                sample.group = f"{program}/{strategy}/{kernel.name}"
                sample.extra["strategy"] = strategy
                samples.append(sample)
    return samples, dict(skipped)


def _as_stored(value: dict) -> dict:
    """`value` as the run's artifact holds it after a JSON round trip (tuples as lists)."""
    return json.loads(json.dumps(value))


def _skip_reason(kernel, run: dict | None) -> str | None:
    """Why the measured `run` of `kernel` gives no target, or None when it does."""
    if kernel.kind == "library":
        return LIBRARY
    if run is None or run.get("timing") is None:
        return NOT_MEASURED
    if run.get("mismatches"):
        return MISMATCHED
    return None


def _sample(graph, code, spec, entry: dict, run: dict) -> KernelSample:
    """The sample of an emitted kernel with the run's ptxas resources and the measured
    median as its target; ValueError for a schedule the workload model does not cover."""
    resources = None
    if entry.get("registers") is not None:
        # The entry's shared memory is the launch's dynamic bytes plus ptxas' static bytes.
        resources = Resources(
            registers=entry["registers"],
            static_shared_bytes=max(0, (entry.get("shared_bytes") or 0)
                                    - code.emitted.shared_bytes),
            spill_bytes=entry.get("spill_bytes") or 0)
    sample = kernel_sample(graph, code.kernel, code.chosen, spec, resources=resources)
    sample.target_us = float(run["timing"]["median_us"])
    sample.extra.update(codegen_plan=code.chosen.to_dict(), timing=run["timing"],
                        origin="measured")
    return sample
