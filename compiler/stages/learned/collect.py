"""Collecting the learned cost model's data: every candidate kernel of a program emitted,
built and timed on a GPU, or, where there is none, labelled with the synthetic function.

    samples, summary = collect_program(graph, "softmax", "h100")      # on an H100
    summary = collect_dataset(["softmax.hlo", ...], "h100", "h100-2026-11-21.jsonl.gz")
    summary = collect_dataset(paths, "h100", out, synthetic=True)     # anywhere, for tests

Per program (`collect_program`):
1. Candidates: `samples.program_candidates`, every distinct generated kernel of the
   strategies' fusion plans under its `top_k` fastest projected CodeGen plans, which are the
   plans codegen chooses from.
2. Each candidate is emitted under its plan with a CUDA name of its own, and all of them are
   built in one nvcc batch (compiler/toolchain/nvcc.py: the headers are parsed once). A candidate
   the emitter cannot generate yet, or whose source does not compile, is dropped and its
   reason counted.
3. Each built candidate is projected again with ptxas' registers, shared memory and spills,
   so that its sample holds what codegen sees for the kernel it builds
   (`registers_from_ptxas` is 1).
4. Targets. Measured: the candidates run through `compiler.runtime.gpu.run_plan` on
   `random_inputs(graph, seed=0)`, as compiler/stages/measure.py runs plans: each one checked
   against the reference interpreter, then timed alone (TIMED_RUNS runs bracketed by CUDA
   events after WARMUP_RUNS warm-ups, the L2 flushed before each run). `target_us` is the
   median and the sample keeps the whole timing. A candidate that does not match the
   interpreter or does not run is dropped and its reason counted. Synthetic:
   `synthetic.label` with the seed, no GPU, and the data is labelled origin "synthetic".

`collect_dataset` does that for every program of some files and writes one dataset file
(compiler/cost/learned/dataset.py describes the format). Before any work a measured collection
finds its GPU (GpuUnavailable with the reason where there is none, as
compiler/stages/measure.py) and checks that it is the device the plans are made for, since the file
labels the timings with that device; every input file is read, and one that cannot be is an
InputError naming it. A program that fails to import or to collect is reported in the summary's
"errors" and the others' samples are still written.
"""

from __future__ import annotations

import time
from pathlib import Path

from compiler.codegen.c_syntax import CodegenUnsupported, c_identifier
from compiler.codegen.emit import emit_kernel
from compiler.cost.learned.dataset import dataset_header, family_of, write_dataset
from compiler.cost.learned.features import KernelSample
from compiler.cost.learned.synthetic import (DESCRIPTION as SYNTHETIC_DESCRIPTION,
                                             label as synthetic_label)
from compiler.cost.projected import project_kernel
from compiler.errors import InputError
from compiler.importers import import_bytes
from compiler.ir.graph import Graph
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import FusionPlan
from compiler.limits import Limits, read_limited
from compiler.runtime.gpu import TIMED_RUNS, WARMUP_RUNS, GpuRunner, run_plan
from compiler.stages.codegen import KernelCode, build_codes, built_resources
from compiler.stages.learned.samples import ALL_STRATEGIES, candidate_sample, program_candidates
from compiler.stages.measure import INPUT_SEED, gpu_matches_device
from compiler.stages.pipeline import Progress, StageCounter, canonical_options, no_progress
from compiler.target.devices import DEVICES, get_device
from compiler.toolchain import arch_for_device

# Why a candidate has no sample: the keys of a summary's "dropped" counts.
NOT_GENERATED = "not generated"
DOES_NOT_COMPILE = "does not compile"
MISMATCH = "does not match the interpreter"
DID_NOT_RUN = "did not run"

MEASURED_TARGET = (f"measured: median of {TIMED_RUNS} runs of the kernel alone, each timed "
                   f"with CUDA events after an L2 flush, after {WARMUP_RUNS} warm-up runs; "
                   f"inputs compiler.kernels.inputs.random_inputs seed {INPUT_SEED}; every "
                   f"kernel checked against the reference interpreter")


def _new_summary(program: str, family: str) -> dict:
    return {"program": program, "family": family, "candidates": 0, "built": 0, "checked": 0,
            "measured": 0, "samples": 0, "dropped": {}, "drops": []}


def _drop(summary: dict, group: str, plan: str, reason: str, detail: str) -> None:
    summary["dropped"][reason] = summary["dropped"].get(reason, 0) + 1
    # The first line says what went wrong; a compiler's excerpt of the source follows it.
    summary["drops"].append({"group": group, "plan": plan, "reason": reason,
                             "detail": detail.strip().splitlines()[0] if detail else ""})


def _check_gpu_is_device(runner: GpuRunner, device: str) -> None:
    """Timings are stored as the device's: refuse to time one GPU model for another."""
    if gpu_matches_device(runner.name, device):
        return
    matching = [name for name in DEVICES if gpu_matches_device(runner.name, name)]
    hint = f"collect with --device {matching[0]}" if matching else \
        "no device of the cost tables is this GPU"
    raise InputError(f"the GPU ({runner.name}) is not the {device} the plans are made for, "
                     f"and a dataset's timings must come from that device; {hint}")


def collect_program(graph: Graph, program: str, device: str, strategies=ALL_STRATEGIES,
                    top_k: int = 4, runner: GpuRunner | None = None,
                    synthetic_seed: int | None = None, family: str | None = None,
                    progress: Progress | None = None) -> tuple[list[KernelSample], dict]:
    """(samples with targets, summary) of one program (see the module docstring). Timed on
    the GPU (`runner`, or a GpuRunner started here: GpuUnavailable without one) unless
    `synthetic_seed` is given, which labels the samples with synthetic.label instead. The
    summary counts candidates, built, checked (against the interpreter), measured (timed on
    the GPU) and samples; "dropped" counts the candidates left out by reason and "drops"
    says which they were and why. Progress stages: "emit", "build", then "measure" or
    "label"."""
    progress = progress or no_progress
    measured = synthetic_seed is None
    if not measured and runner is not None:
        raise ValueError("synthetic targets need no GPU runner: pass a runner or a seed")
    if measured:
        runner = runner or GpuRunner()
        _check_gpu_is_device(runner, device)
    spec = get_device(device)
    family = family if family is not None else family_of(program)
    summary = _new_summary(program, family)

    candidates = program_candidates(graph, program, device, strategies, top_k)
    summary["candidates"] = len(candidates)
    counter = StageCounter(progress, "emit", len(candidates))
    emitted = []
    for index, candidate in enumerate(candidates):
        # The index makes every candidate's name unique in the batch: the plans of one
        # kernel would otherwise share it.
        code = KernelCode(candidate.kernel,
                          c_identifier(f"c{index}_{candidate.strategy}_{candidate.kernel.name}"))
        try:
            code.emitted = emit_kernel(graph, candidate.kernel, candidate.plan, code.function)
        except CodegenUnsupported as error:
            _drop(summary, candidate.group, candidate.plan.key(), NOT_GENERATED, str(error))
        else:
            emitted.append((candidate, code))
        counter.advance()

    counter = StageCounter(progress, "build", len(emitted))
    build_codes([code for _, code in emitted], arch_for_device(device))
    counter.advance(len(emitted))
    built, samples = [], []
    for candidate, code in emitted:
        if not code.build.ok:
            _drop(summary, candidate.group, candidate.plan.key(), DOES_NOT_COMPILE,
                  code.build.error or "")
            continue
        breakdown = project_kernel(graph, candidate.kernel, candidate.plan, spec,
                                   built_resources(code.build))
        built.append((candidate, code))
        samples.append(candidate_sample(graph, candidate, device, program, family, breakdown))
    summary["built"] = len(built)

    if measured:
        samples = _measure(graph, device, built, samples, runner, summary, progress)
    else:
        counter = StageCounter(progress, "label", len(samples))
        synthetic_label(samples, seed=synthetic_seed)
        counter.advance(len(samples))
    summary["samples"] = len(samples)
    return samples, summary


def _measure(graph: Graph, device: str, built: list, samples: list[KernelSample],
             runner: GpuRunner, summary: dict, progress: Progress) -> list[KernelSample]:
    """The samples whose kernels match the interpreter and ran, with their timings."""
    counter = StageCounter(progress, "measure", len(built))
    # The candidates as one "plan" so that run_plan evaluates the interpreter once for all
    # of them; they are timed alone, never as a sequence (several are the same kernel).
    plan = FusionPlan("candidates", device, [candidate.kernel for candidate, _ in built], [])
    run = run_plan(graph, plan, [code for _, code in built],
                   random_inputs(graph, seed=INPUT_SEED), runner, end_to_end=False)
    kept = []
    for (candidate, _), sample, result in zip(built, samples, run.kernels):
        plan_key = candidate.plan.key()
        if result.not_measured is not None:
            _drop(summary, candidate.group, plan_key, DID_NOT_RUN, result.not_measured)
            continue
        summary["checked"] += 1
        if result.mismatches:
            worst = max(result.mismatches, key=lambda m: m.max_abs_error)
            _drop(summary, candidate.group, plan_key, MISMATCH,
                  f"{worst.node}: got {worst.got}, expected {worst.expected} at {worst.where}")
            continue
        sample.target_us = result.timing.median_us
        sample.extra["timing"] = result.timing.to_dict()
        sample.extra["max_abs_error"] = result.max_abs_error
        kept.append(sample)
    summary["measured"] = len(kept)
    counter.advance(len(built))
    return kept


# -- a dataset of program files ---------------------------------------------------------------


def _program_name(path: Path) -> str:
    """The file's name without its format suffixes ("softmax.hlo.gz" -> "softmax")."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return Path(name).stem


def _read_inputs(paths: list[str]) -> list[tuple[Path, bytes]]:
    """Every file's bytes; InputError naming a file that cannot be read, or two files that
    would give their programs the same name (samples are split by program name)."""
    limits = Limits.from_env()
    files, names = [], {}
    for given in paths:
        path = Path(given)
        try:
            data = read_limited(path, limits)
        except OSError as error:
            raise InputError(f"cannot read the file: {error.strerror or error}",
                             str(path)) from None
        name = _program_name(path)
        if name in names:
            raise InputError(f"both this file and {names[name]} give programs the name "
                             f"'{name}'; rename one", str(path))
        names[name] = path
        files.append((path, data))
    return files


def collect_dataset(paths: list[str], device: str, out: str | Path,
                    strategies=ALL_STRATEGIES, top_k: int = 4, synthetic: bool = False,
                    seed: int = 0, families: dict[str, str] | None = None,
                    progress: Progress | None = None,
                    runner: GpuRunner | None = None) -> dict:
    """Collect every program of `paths` (an HLO file of several modules gives programs
    "<stem>#0", "<stem>#1", ...) and write the dataset file `out`; returns the summary:
    out, device, origin, gpu, files, programs, samples, candidates, built, measured,
    dropped (counts by reason), errors ([{"file", "program", "error"}]), seconds and
    per_program (collect_program's summaries). `synthetic`: targets from synthetic.label,
    program k of the collection seeded with `seed + k`; no GPU. `families`: program ->
    family where family_of's guess is not wanted. Progress stages: "import" (files),
    "collect" (programs), and collect_program's for each program."""
    started = time.perf_counter()
    progress = progress or no_progress
    if synthetic and runner is not None:
        raise ValueError("synthetic targets need no GPU runner: pass a runner or synthetic")
    _, strategies = canonical_options([device], strategies)
    if not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be a positive number of plans per kernel, not {top_k!r}")
    if not synthetic:
        runner = runner or GpuRunner()
        _check_gpu_is_device(runner, device)
    out = Path(out)
    if not out.parent.is_dir():
        raise InputError("the output directory does not exist", str(out.parent))
    if out.exists():
        raise InputError("the dataset file exists already; collect into a new file",
                         str(out))
    if not paths:
        raise InputError("no program files given")
    families = families or {}
    files = _read_inputs(list(paths))

    counter = StageCounter(progress, "import", len(files))
    programs, errors = [], []
    for path, data in files:
        stem = _program_name(path)
        try:
            graphs = import_bytes(data, path.name)
        except Exception as error:  # noqa: BLE001 - one bad file must not lose the others
            errors.append({"file": str(path), "program": stem, "error": _describe(error)})
        else:
            for k, graph in enumerate(graphs):
                name = stem if len(graphs) == 1 else f"{stem}#{k}"
                # Modules of one file share its family: family_of cannot read "#k".
                programs.append((path, name, graph, families.get(name) or family_of(stem)))
        counter.advance()

    counter = StageCounter(progress, "collect", len(programs))
    samples, summaries = [], []
    for index, (path, name, graph, family) in enumerate(programs):
        try:
            program_samples, summary = collect_program(
                graph, name, device, strategies, top_k, runner,
                synthetic_seed=seed + index if synthetic else None, family=family,
                progress=progress)
        except Exception as error:  # noqa: BLE001 - hours of GPU work on the others count
            errors.append({"file": str(path), "program": name, "error": _describe(error)})
        else:
            samples += program_samples
            summaries.append(summary)
        counter.advance()
    if not samples:
        problems = "; ".join(f"{e['program']}: {e['error']}" for e in errors[:3])
        raise InputError(f"no samples collected from {len(files)} file(s), nothing written"
                         + (f" ({problems})" if problems else ""))

    origin = "synthetic" if synthetic else "measured"
    target = f"{SYNTHETIC_DESCRIPTION}; seed {seed} + the program's index" if synthetic \
        else MEASURED_TARGET
    gpu = None if synthetic else runner.name
    header = dataset_header(device, origin, target, gpu=gpu)
    header["collection"] = {"strategies": strategies, "top_k": top_k,
                            "programs": [s["program"] for s in summaries], "errors": errors}
    write_dataset(out, header, samples)
    return {"out": str(out), "device": device, "origin": origin, "gpu": gpu,
            "files": len(files), "programs": len(summaries), "samples": len(samples),
            **added_up(summaries, ("candidates", "built", "measured")), "errors": errors,
            "seconds": round(time.perf_counter() - started, 3), "per_program": summaries}


def added_up(summaries: list[dict], keys) -> dict:
    """The sums of `keys` over `summaries` (a program's, or a whole collection's), and their
    "dropped" counts merged by reason."""
    dropped: dict[str, int] = {}
    for summary in summaries:
        for reason, count in summary["dropped"].items():
            dropped[reason] = dropped.get(reason, 0) + count
    return {**{key: sum(s[key] for s in summaries) for key in keys}, "dropped": dropped}


def _describe(error: Exception) -> str:
    """An input error as the user sees it; anything else (a bug) with its type."""
    return str(error) if isinstance(error, InputError) else f"{type(error).__name__}: {error}"
