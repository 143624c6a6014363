"""View-ready data and charts (inline SVG, explorer/charts.py) from a run's artifact.

Pure functions: they take the ARTIFACT compiler.stages.pipeline.compile_graph returns (or one
device's part of it, or one kernel's entry) and return plain dicts and lists a template renders, or
a chart's SVG markup. They never recompute what the compiler decided; the occupancy curves and the
roofline ask compiler.cost for the same formulas the projected model used.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import math
import re
from collections import defaultdict

from django.utils.safestring import SafeString

from compiler.cost.outliers import OUTLIER_MIN_US, OUTLIER_RATIO
from compiler.cost.projected import Breakdown
from compiler.fusion.attribution import explain, summary_text
from compiler.stages.measure import EMULATOR
from compiler.target.devices import Device
from compiler.target.launch import (RUNTIMES, RUNTIME_DETAILS, RUNTIME_LABELS,
                                    device_work_of_alone, terms_for)
from compiler.target.occupancy import LaunchLimitError, occupancy
from compiler.toolchain.nvcc import BuildResult
from explorer import charts

# Strategies in the order the comparison lists them; others follow alphabetically.
STRATEGY_ORDER = ("unfused", "xla", "stitch", "cost", "xla-gpu")
# What an empty measured cell says on hover (the page's GPU measurement line says why).
NOT_MEASURED = "not measured"

HIGHLIGHT_COLOUR = "#d62728"
LEARNED_COLOUR = "#8c6bb1"
BAR_COLOUR = "#9bb3e8"


def ordered_strategies(strategies: dict) -> list[str]:
    known = [name for name in STRATEGY_ORDER if name in strategies]
    return known + sorted(name for name in strategies if name not in STRATEGY_ORDER)


def plans_by_device(devices: list[str], strategies: list[str],
                    compiled: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Each device of a run with its plans' names, in `ordered_strategies`' order: the run's
    strategies and its compiled saved plans (`compiled`: (device, strategy) pairs), which is
    what its artifact holds, known without reading the artifact (megabytes for a big graph)."""
    return [(device, ordered_strategies(list(strategies) + [name for where, name in compiled
                                                            if where == device]))
            for device in devices]


def plan_names(by_device: list[tuple[str, list[str]]]) -> list[str]:
    """The names of a run's plans over all its devices (`plans_by_device`'s), strategies first,
    then the saved plans some device has."""
    return ordered_strategies(dict.fromkeys(name for _, names in by_device for name in names))


# -- measurements -----------------------------------------------------------------------------

def measurement_state(measurement, gpu: dict | None, run_version: str = "") -> dict:
    """What the pages say about measuring a run: `measurement` is its latest Measurement (or
    None), `gpu` explorer/presence.gpu_status() (None when not asked), `run_version` the
    compiler version the run was compiled with. "text" explains an empty measured cell;
    "can_request" whether asking for a measurement makes sense now."""
    online = bool(gpu and gpu["online"])
    no_worker = (gpu or {}).get("summary", "no GPU worker online")
    if measurement is None:
        text = "not measured yet" if online else f"not measured — {no_worker}"
        return {"state": "none", "text": text, "can_request": True, "gpu_online": online}
    status = measurement.status
    if status == "queued":
        text = ("queued: waiting for the GPU worker" if online else
                f"queued: waits until a GPU worker comes online ({no_worker})")
    elif status == "running":
        text = (f"measuring on {measurement.claimed_by}: {measurement.stage} "
                f"{measurement.progress_done} / {measurement.progress_total}")
    elif status == "failed":
        text = f"the last measurement failed ({measurement.error_stage}): {measurement.error}"
    elif measurement.gpu == EMULATOR:
        text = ("kernels checked on the CPU emulator by an emulated GPU worker, against the "
                "reference interpreter: nothing was timed, not measured")
    else:
        text = f"measured on {measurement.gpu}"
        if run_version and measurement.compiler_version not in ("", run_version):
            text += (f" by compiler {measurement.compiler_version}, not the run's "
                     f"{run_version}: its kernels may differ from the ones shown")
    return {"state": status, "text": text, "gpu_online": online,
            "can_request": status in ("failed", "done")}


def apply_measurement(devices: dict, result: dict | None) -> dict:
    """The artifact's "devices" with the measured fields filled in from a measurement's
    MEASUREMENTS (compiler/stages/measure.py): each kernel's "measured_us" (timed alone), its
    device work "measured_device_us" (that time less what a lone launch adds on the device,
    compiler/target/launch.py) and its whole record under "measured", each plan's total
    "measured_us" (the plan run back to back in a stream), "measured_graph_us" (the plan
    captured once as a CUDA graph and replayed) or "graph_not_measured" (why not: a capture that
    failed, a measurement made before graph replays) and, per device, "eager" (the
    unfused CuPy baseline) and "measured_on": the GPU, whether it is the plans' device model, what
    the pages say the figures came from ("label": the GPU, or an imported campaign's "origin":
    its GPU, driver and date) and whether an emulated worker made it, with no time in it. New
    dicts: `devices` is unchanged."""
    if not result:
        return devices
    merged = {}
    for name, device_result in devices.items():
        measured = result.get("devices", {}).get(name)
        if measured is None:
            merged[name] = device_result
            continue
        strategies = {}
        for strategy, plan in device_result["strategies"].items():
            run = measured["strategies"].get(strategy)
            strategies[strategy] = _measured_plan(plan, run, name) if run else plan
        merged[name] = {**device_result, "strategies": strategies,
                        "eager": measured.get("eager"),
                        "measured_on": {"gpu": result.get("gpu"),
                                        "matches_gpu": measured.get("matches_gpu", False),
                                        "label": result.get("origin") or result.get("gpu"),
                                        "emulated": bool(result.get("emulated"))}}
    return merged


def _measured_plan(plan: dict, run: dict, device: str) -> dict:
    by_name = {kernel["name"]: kernel for kernel in run["kernels"]}
    kernels = []
    for kernel in plan["kernels"]:
        record = by_name.get(kernel["name"])
        measured = record["measured_us"] if record else None
        kernels.append({**kernel, "measured_us": measured,
                        "measured_device_us": None if measured is None
                        else device_work_of_alone(device, measured),
                        "measured": record})
    end_to_end, replay = run.get("end_to_end"), run.get("graph_replay")
    total = {**plan["total"], "measured_us": end_to_end["median_us"] if end_to_end else None,
             "measured_graph_us": replay["median_us"] if replay else None,
             "graph_not_measured": None if replay else
             run.get("graph_not_measured") or run.get("not_measured") or GRAPH_NOT_TIMED,
             "measured_kernel_sum_us": run.get("total_us"),
             "not_measured": run.get("not_measured")}
    return {**plan, "kernels": kernels, "total": total}


# Why a measurement made before the GPU runner replayed plans as CUDA graphs has no graph time.
GRAPH_NOT_TIMED = ("not measured as a CUDA graph replay: this measurement timed the plan "
                   "launched in a stream only (measure it again for a graph replay)")


def measured_rows(kernel: dict) -> list[tuple[str, object, str]] | None:
    """The kernel page's "measured vs predicted" table: (label, value, unit), or None when the
    kernel has no measurement record. Predictions and the measurement are device work (the
    measurement: the kernel timed alone less what a lone launch adds); errors compare device
    work, from ERROR_MIN_DEVICE_US of it up."""
    record = kernel.get("measured")
    if not record:
        return None
    # A library call's time is its replay as a CUDA graph of its own (compiler/runtime/gpu.py):
    # launched on the stream, PyTorch's host dispatch is most of it.
    replayed = record.get("clock") == "graph replay"
    timing = (record.get("replay") if replayed else record.get("timing")) or {}
    measured = record.get("measured_us")
    separate = kernel.get("device_us") is not None
    device_measured = kernel.get("measured_device_us") if separate else measured
    projected = kernel.get("device_us") if separate else kernel.get("proj_us")
    # Only kernels a learned model predicted have learned rows.
    learned = kernel.get("learned_device_us") if separate else kernel.get("learned_us")
    rows = [("replayed alone as a CUDA graph (median)" if replayed else "timed alone (median)",
             measured, "µs")]
    if replayed:
        rows.append(("launched on the stream (median)",
                     (record.get("timing") or {}).get("median_us"), "µs"))
    rows += [("fastest run", timing.get("min_us"), "µs"),
             ("variation (cv)", timing.get("cv"), ""),
             ("timed runs", timing.get("runs"), "")]
    if separate and measured is not None and device_measured is not None:
        rows += [("a lone launch adds", measured - device_measured, "µs"),
                 ("measured device work", device_measured, "µs")]
    rows += [("SOL", kernel.get("sol_us"), "µs"), ("projected", projected, "µs")]
    if learned is not None:
        rows.append(("learned", learned, "µs"))
    rows += [("model error (projected)", device_error(projected, device_measured), "%"),
             ("model error (SOL)", device_error(kernel.get("sol_us"), device_measured), "%")]
    if learned is not None:
        rows.append(("model error (learned)", device_error(learned, device_measured), "%"))
    rows += [("largest error vs the interpreter", record.get("max_abs_error"), ""),
             ("outputs differing", len(record.get("mismatches") or []), "")]
    if record.get("not_measured"):
        rows.insert(0, ("not measured", record["not_measured"], ""))
    return rows


def kernel_figures(kernel: dict, device: Device) -> dict:
    """The kernel page's headline: device work (projected, learned, measured), the launch
    term and the limiter under each runtime, theoretical occupancy with where it comes from
    (ptxas' registers once built), the SMs the grid uses. An artifact compiled before launch
    terms were separate has no launches and its one limiter."""
    separate = kernel.get("device_us") is not None
    device_us = kernel["device_us"] if separate else kernel.get("proj_us")
    launches = kernel.get("launch") or {}
    breakdown = kernel.get("projected") or {}
    limiter = kernel.get("device_limiter") or kernel.get("limiter")
    runtimes = [runtime for runtime in RUNTIMES if runtime in launches]
    source = breakdown.get("registers_source")
    return {
        "device_us": device_us,
        "learned_device_us": kernel.get("learned_device_us") if separate
        else kernel.get("learned_us"),
        "measured_device_us": kernel.get("measured_device_us") if separate
        else kernel.get("measured_us"),
        "alone_us": terms_for(device).alone_us,
        "launches": [(runtime, f"as {RUNTIME_LABELS[runtime]}", launches[runtime])
                     for runtime in runtimes],
        "limiters": [(runtime, f"as {RUNTIME_LABELS[runtime]}",
                      "launch" if device_us is not None and launches[runtime] > device_us
                      else limiter or "–") for runtime in runtimes],
        "occupancy": breakdown.get("occupancy", kernel.get("occupancy")),
        "occupancy_source": {"ptxas": "ptxas' registers", "estimated": "estimated registers"
                             }.get(source),
        "sms_used": breakdown.get("sms_used"), "sm_count": device.sm_count,
    }


# -- strategy comparison ----------------------------------------------------------------------

def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def learned_model(*strategy_results: dict) -> dict | None:
    """The learned model that predicted these plans (a device's plans share one), as pages
    name it: {"label", "origin", "device", "synthetic"}, or {"error", "synthetic": False}
    when its file could not be used; None when no model predicted them."""
    for result in strategy_results:
        model = result.get("learned_model")
        if model:
            return {**model, "synthetic": model.get("origin") == "synthetic"}
    return None


def comparison_rows(device_result: dict) -> list[dict]:
    """One row per strategy: kernels, DRAM bytes, SOL and projected device work, the launch
    terms and the projected, learned and measured totals under each runtime, the speedups
    over the unfused and the XLA plans (their total over this one's), projected and, where
    both were measured, measured, and who decided its fusions (`decided_by`).

    `by_runtime` is [(runtime, figures)] for every runtime (compiler/target/launch.py) the
    artifact has totals for; an artifact compiled before launch terms were separate has one
    entry, (None, its totals). The measured total of the stream runtime is the plan run back to
    back in a stream, the graph runtime's the plan replayed as one CUDA graph; a missing one
    says why in its figures' "not_measured". `fastest` names the runtimes under which the row
    has the lowest projected total."""
    strategies = device_result["strategies"]
    rows = []
    for name in ordered_strategies(strategies):
        result, total = strategies[name], strategies[name]["total"]
        rows.append({
            "strategy": name,
            "kernels": result.get("kernel_count", len(result["kernels"])),
            "dram_bytes": total.get("dram_bytes"),
            "sol_us": total["sol_us"],
            "device_us": total.get("device_us"),
            "proj_us": total["proj_us"],
            "measured_us": total["measured_us"],
            # Artifacts compiled before the learned model have no learned fields.
            "learned_us": total.get("learned_us"),
            "learned_kernels": total.get("learned_kernels"),
            "learned_outside": total.get("learned_outside"),
            "explore_ms": result.get("explore_ms"),
            "decided_by": decided_by(name, result),
            # Why the strategy has no plan here (xla-gpu without XLA's CUDA plugin).
            "unavailable": result.get("unavailable"),
            "figures": runtime_figures(total),
        })
    for runtime in {runtime for row in rows for runtime in row["figures"]}:
        _speedups_and_fastest(rows, runtime)
    # The row's own figures are the runtime it was compiled for (its total's proj_us).
    compiled = {"figures": {row["strategy"]: {"proj_us": row["proj_us"],
                                              "measured_us": row["measured_us"]}
                            for row in rows}}
    _speedups_and_fastest([{"strategy": row["strategy"], "figures": {
        "compiled": compiled["figures"][row["strategy"]]}} for row in rows], "compiled")
    for row in rows:
        own = compiled["figures"][row["strategy"]]
        row.update({key: own[key] for key in own if key not in ("proj_us", "measured_us")})
        row["by_runtime"] = sorted(row.pop("figures").items(),
                                   key=lambda item: RUNTIMES.index(item[0])
                                   if item[0] in RUNTIMES else -1)
        row["fastest_in"] = [runtime or "compiled" for runtime, figures in row["by_runtime"]
                             if figures["fastest"]]
    return rows


def shown_runtimes(rows: list[dict]) -> list[str | None]:
    """The runtimes the comparison's rows have figures for: those of its first plan that is
    available (an unavailable one has no totals under any runtime)."""
    available = [row for row in rows if not row["unavailable"]]
    return [runtime for runtime, _ in available[0]["by_runtime"]] if available else []


def runtime_figures(total: dict) -> dict:
    """A plan's totals under each runtime: {runtime: {"proj_us", "launch_us", "learned_us",
    "measured_us", "not_measured"}}; {None: ...} (its totals as they are) for an artifact
    compiled before launch terms were separate. The GPU runner times a plan both ways: back to
    back in a stream ("stream") and replayed as one CUDA graph ("graph")."""
    measured = {"stream": (total["measured_us"], total.get("not_measured")),
                "graph": (total.get("measured_graph_us"), total.get("graph_not_measured"))}
    runtimes = total.get("runtimes")
    if not runtimes:
        return {None: {"proj_us": total["proj_us"], "launch_us": None,
                       "learned_us": total.get("learned_us"),
                       "measured_us": total["measured_us"],
                       "not_measured": total.get("not_measured")}}
    return {runtime: {"proj_us": figures.get("proj_us"),
                      "launch_us": figures.get("launch_us"),
                      "learned_us": figures.get("learned_us"),
                      "measured_us": measured.get(runtime, (None, None))[0],
                      "not_measured": measured.get(runtime, (None, None))[1]}
            for runtime, figures in runtimes.items()}


def _speedups_and_fastest(rows: list[dict], runtime) -> None:
    totals = {row["strategy"]: row["figures"].get(runtime) or {} for row in rows}
    for row in rows:
        figures = row["figures"].get(runtime)
        if figures is None:
            continue
        for baseline in ("unfused", "xla"):
            base = totals.get(baseline, {})
            figures[f"speedup_vs_{baseline}"] = _ratio(base.get("proj_us"), figures["proj_us"])
            figures[f"measured_speedup_vs_{baseline}"] = _ratio(base.get("measured_us"),
                                                                figures["measured_us"])
    fastest = min((f["proj_us"] for f in totals.values() if f.get("proj_us") is not None),
                  default=None)
    for row in rows:
        figures = row["figures"].get(runtime)
        if figures is not None:
            figures["fastest"] = fastest is not None and figures["proj_us"] == fastest


# Which model's plan totals pick the fastest plan, in the order a verdict names them.
VERDICT_MODELS = (("projected", "proj_us"), ("learned", "learned_us"),
                  ("measured", "measured_us"))


def verdicts(rows: list[dict], learned: dict | None) -> list[dict]:
    """Per runtime, which plan each model says is fastest and whether they agree: [{"runtime",
    "label", "picks": [{"model", "strategy", "us"}], "agree", "text", "models": what each
    model's held-out error is, for a hover}]. The projected model gives the badge; where the
    learned model's or the measurement's pick differs, the verdict says so. A model that has a
    total for fewer than two plans picks nothing, nor does a learned model without a total for
    some plan the projected model priced (it predicted none of that plan's kernels: outside
    its training, or library calls), which would pick among the others."""
    figures = {row["strategy"]: dict(row["by_runtime"]) for row in rows}
    runtimes = shown_runtimes(rows)
    held_out = held_out_errors(learned)
    out = []
    for runtime in runtimes:
        picks = []
        priced = sum(runtime in figures[name] and figures[name][runtime]["proj_us"] is not None
                     for name in figures)
        for model, key in VERDICT_MODELS:
            totals = [(figures[name][runtime][key], name) for name in figures
                      if runtime in figures[name] and figures[name][runtime][key] is not None]
            if model == "learned" and len(totals) < priced:
                continue
            if len(totals) >= 2:
                us, strategy = min(totals)
                picks.append({"model": model, "strategy": strategy, "us": us})
        agree = len({pick["strategy"] for pick in picks}) <= 1
        if not picks:
            text = "no model has totals for two plans"
        elif agree:
            models = " and ".join(pick["model"] for pick in picks)
            text = f"fastest: {picks[0]['strategy']} ({models} agree)" if len(picks) > 1 \
                else f"fastest: {picks[0]['strategy']} (projected; no other model to check it)"
        else:
            text = "models disagree: " + "; ".join(
                f"{pick['model']} picks {pick['strategy']} ({pick['us']:,.1f} µs)"
                for pick in picks)
        out.append({"runtime": runtime, "label": RUNTIME_LABELS.get(runtime, "as compiled"),
                    "picks": picks, "agree": agree, "text": text, "models": held_out})
    return out


def held_out_errors(learned: dict | None) -> str:
    """What each cost model's error was on held-out kernels, in words for a hover: from the
    learned model's evaluation (programs it never saw in training, where the projected and SOL
    models were scored on the same kernels)."""
    evaluation = ((learned or {}).get("evaluation") or {}).get("program")
    if not evaluation:
        return ("no held-out figures for this device: no learned model trained on its "
                "measurements (see the cost models page)")
    parts = []
    for model in ("learned", "projected", "sol"):
        figures = evaluation.get(model) or {}
        if figures.get("mape") is None:
            continue
        tau = figures.get("mean_kendall_tau")
        parts.append(f"{model}: MAPE {figures['mape']:.1f} %" +
                     (f", ranking τ {tau:.2f}" if tau is not None else ""))
    programs = ", ".join(evaluation.get("test_programs") or [])
    return (f"held-out kernels of {programs or 'unseen programs'} "
            f"({(learned or {}).get('label', 'the learned model')}): " + "; ".join(parts))


def runtime_choices(default: str) -> list[dict]:
    """The runtime switch's buttons: [{"name", "label", "detail", "default"}]."""
    return [{"name": name, "label": RUNTIME_LABELS[name], "detail": RUNTIME_DETAILS[name],
             "default": name == default} for name in RUNTIMES]


def launch_sources(device_result: dict) -> str | None:
    """Where the device's launch figures come from, in a sentence (a hover)."""
    terms = device_result.get("launch")
    if not terms:
        return None
    sources = terms.get("sources") or {}
    return "; ".join(f"{key.removesuffix('_us').replace('_', ' ')} {terms[key]:.2f} µs "
                     f"({sources.get(key, 'no source recorded')})"
                     for key in ("graph_gap_us", "stream_gap_us", "stream_issue_us",
                                 "alone_us") if key in terms)


# -- who decided a plan's fusions --------------------------------------------------------------

# The cost models the cost strategy decides by (compiler/fusion/pricing.py): the name pages give
# each and what a candidate kernel's price is under it.
COST_MODELS = {
    "projected": ("projected model", "each candidate kernel is priced by the projected time of "
                                     "its best CodeGen plan"),
    "sol": ("SOL model", "each candidate kernel is priced by its speed-of-light time (its DRAM "
                         "bytes at peak bandwidth, its flops at peak)"),
    "learned": ("learned model", "each candidate kernel is priced by the learned model's time "
                                 "of its best CodeGen plan among the projected model's "
                                 "shortlist"),
}
# What decides the plans of the strategies no cost model decides.
STRATEGY_RULES = {"unfused": "one kernel per op", "xla": "XLA's fusion rules",
                  "stitch": "AStitch's stitching rules",
                  "xla-gpu": "XLA:GPU itself: its compiler's fusions, read back onto the graph"}


def decided_by(strategy: str, strategy_result: dict) -> dict | None:
    """Who decided a plan's fusions, from its "cost_model": {"model": the model's name, or None
    where rules decided; "label": "projected model", "SOL model", "learned model" or "rules";
    "detail": what a price is under the model, or which rules}. None for an artifact stored
    before plans recorded it: pages then say nothing."""
    if "cost_model" not in strategy_result:
        return None
    model = strategy_result["cost_model"]
    if model is None and strategy == "xla-gpu":
        return {"model": None, "label": "XLA:GPU", "detail": STRATEGY_RULES[strategy]}
    if model is None and strategy.startswith("custom"):
        return {"model": None, "label": "a user",
                "detail": "a plan made by hand: edited in the fusion view, or a plan file"}
    if model is None:
        return {"model": None, "label": "rules",
                "detail": STRATEGY_RULES.get(strategy, f"the {strategy} strategy's rules")}
    label, detail = COST_MODELS.get(
        model, (f"{model} model", f"each candidate kernel is priced by the {model} model"))
    return {"model": model, "label": label, "detail": detail}


# What the xla-gpu plan's panel and kernel pages say of the CUDA they show: the kernels are
# XLA's, the code is ours (the deviceless compile gives XLA's fusions, not its binaries).
XLA_GPU_CUDA_NOTE = ("The CUDA shown is ours, generated for XLA's grouping of the ops; XLA:GPU's "
                     "own kernels need a GPU to be shown and timed.")


def cuda_note(strategy: str) -> str | None:
    """What a plan's pages say of the CUDA they show when its kernels are not ours: the
    xla-gpu plan's (XLA_GPU_CUDA_NOTE); None for our strategies."""
    return XLA_GPU_CUDA_NOTE if strategy == "xla-gpu" else None


def comparison_charts(rows: list[dict], eager_us: float | None = None
                      ) -> list[tuple[str | None, SafeString]]:
    """Per runtime of the rows (`comparison_rows`' by_runtime), grouped bars (an inline SVG,
    explorer/charts.py) of each strategy's SOL, projected and (where there are some) learned
    and measured totals, and the measured eager baseline as a dashed line across them."""
    runtimes = shown_runtimes(rows)
    charted = []
    for runtime in runtimes:
        figures = [dict(row["by_runtime"]).get(runtime) or {} for row in rows]
        series = [charts.Series("SOL", [row["sol_us"] for row in rows], "#b8c7ea")]
        series += [charts.Series(label, [f.get(key) for f in figures], colour)
                   for label, key, colour in (("projected", "proj_us", "#3b6fd8"),
                                              ("learned", "learned_us", LEARNED_COLOUR),
                                              ("measured", "measured_us", "#1f9e89"))]
        line = ("eager CuPy (measured)", eager_us) \
            if eager_us is not None and runtime in (None, "stream") else None
        title = "Total time per strategy" + \
            (f" ({RUNTIME_LABELS[runtime]})" if runtime in RUNTIME_LABELS else "")
        charted.append((runtime, charts.grouped_bars(
            title, [row["strategy"] for row in rows], series, "µs", line)))
    return charted


def why_faster(device_result: dict, rows: list[dict], runtime: str) -> dict | None:
    """Why the fastest plan (under `runtime`, the run's) is faster than the one a user most
    wants it compared with: XLA:GPU's own plan when there is one, else our XLA-rules plan,
    else the next fastest. {"a", "b" (strategy names), "by_runtime": [(runtime, explanation
    with its "summary")]}; None for an artifact without launch terms or fewer than two
    plans."""
    available = [row for row in rows if not row["unavailable"]]
    figures = {row["strategy"]: dict(row["by_runtime"]) for row in available}
    timed = [(f[runtime]["proj_us"], name) for name, f in figures.items()
             if runtime in f and f[runtime]["proj_us"] is not None]
    if len(timed) < 2:
        return None
    fastest = min(timed)[1]
    others = [name for name in ("xla-gpu", "xla") if name in figures and name != fastest]
    other = others[0] if others else sorted(timed)[1][1]
    strategies = device_result["strategies"]
    by_runtime = []
    for name in RUNTIMES:
        explanation = explain(strategies[other], strategies[fastest], name)
        if explanation is None:
            return None
        explanation["summary"] = summary_text(explanation, other, fastest)
        by_runtime.append((name, explanation))
    return {"a": other, "b": fastest, "by_runtime": by_runtime}


# -- kernel table and decisions ---------------------------------------------------------------

def model_error(predicted: float | None, measured: float | None) -> float | None:
    """Relative error of a prediction against the measurement: (predicted - measured) / measured."""
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured


def sms_used(kernel: dict, sm_count: int | None) -> str | None:
    """"8 of 132 SMs" when the kernel's grid keeps fewer SMs busy than the device has (its
    occupancy is per busy SM: 100 % on 8 of 132 SMs is a mostly idle GPU); None otherwise."""
    used = (kernel.get("projected") or {}).get("sms_used")
    if used is None or sm_count is None or used >= sm_count:
        return None
    return f"{used} of {sm_count} SMs"


# A model error is shown for kernels of at least this much measured device work: below it, a
# kernel timed alone measures mostly its launch, and what is left after taking a lone launch's
# time off is within the timing's noise (tenths of a microsecond).
ERROR_MIN_DEVICE_US = 1.0


def device_error(predicted: float | None, measured_device: float | None) -> float | None:
    """A prediction's error on a kernel's device work (`model_error`), None below
    ERROR_MIN_DEVICE_US of measured device work."""
    if measured_device is None or measured_device < ERROR_MIN_DEVICE_US:
        return None
    return model_error(predicted, measured_device)


def kernel_rows(strategy_result: dict, sm_count: int | None = None) -> list[dict]:
    """The kernel table's rows; `sm_count`: the device's, to say when a grid leaves SMs idle.

    Times are device work (SOL, projected, learned, measured: a kernel timed alone less what a
    lone launch adds) beside the launch term under each runtime (`launch`: [(runtime, µs)],
    one (None, None) entry for an artifact compiled before launch terms were separate), and
    the limiter under each runtime ("launch" where the launch term is the larger part). Model
    errors compare device work, from ERROR_MIN_DEVICE_US of it up."""
    rows = []
    for kernel in strategy_result["kernels"]:
        separate = kernel.get("device_us") is not None
        device_us = kernel["device_us"] if separate else kernel["proj_us"]
        measured_device = kernel.get("measured_device_us") if separate \
            else kernel["measured_us"]
        learned_device = kernel.get("learned_device_us") if separate \
            else kernel.get("learned_us")
        time_us = measured_device or device_us
        dram = kernel.get("dram_bytes")
        launches = kernel.get("launch") or {}
        limiter = kernel.get("device_limiter") or kernel["limiter"]
        rows.append({
            "sms_used": sms_used(kernel, sm_count),
            "dram_bytes": dram,
            # DRAM bytes over the measured device work, else the projected one.
            "bandwidth_gbs": dram / time_us / 1e3 if dram is not None and time_us else None,
            "bandwidth_of": "measured" if measured_device else "projected",
            "name": kernel["name"],
            # XLA:GPU's name for the launch it is (xla-gpu plans; artifacts stored before
            # plans kept it have none).
            "xla_name": kernel.get("xla_name"),
            "kind": kernel["kind"],
            "node_count": len(kernel["nodes"]),
            "nodes": kernel["nodes"],
            "sol_us": kernel["sol_us"],
            "proj_us": kernel["proj_us"],
            "device_us": device_us,
            "launch": [(runtime, launches.get(runtime)) for runtime in RUNTIMES
                       if runtime in launches] or [(None, None)],
            "limiters": [(runtime, "launch" if launch is not None and device_us is not None
                          and launch > device_us else limiter)
                         for runtime, launch in ([(r, launches.get(r)) for r in RUNTIMES
                                                   if r in launches] or [(None, None)])],
            "limiter": kernel["limiter"],
            "occupancy": kernel["occupancy"],
            "waves": kernel["waves"],
            "registers": kernel["registers"],
            "measured_us": kernel["measured_us"],
            "measured_device_us": measured_device,
            "measured_note": (kernel.get("measured") or {}).get("not_measured")
            or "not measured",
            "mismatched": bool((kernel.get("measured") or {}).get("mismatches")),
            "model_error": device_error(device_us, measured_device),
            "learned_us": kernel.get("learned_us"),
            # Why the learned model has no time for it (a library call, outside its training).
            "learned_skipped": kernel.get("learned_skipped"),
            "learned_device_us": learned_device,
            "learned_error": device_error(learned_device, measured_device),
            # Artifacts stored before the outlier flag have neither field.
            "proj_over_sol": kernel.get("proj_over_sol"),
            "outlier_reason": kernel.get("outlier_reason"),
            "has_source": bool(kernel.get("function")),
            "codegen_error": kernel.get("codegen_error"),
        })
    return rows


def sol_ratio(value: float | None) -> str:
    """Projected time over speed of light as the pages write it: "1.4×", "23×", "1,250×" (one
    decimal where it tells kernels apart, none once the kernel is far off); a dash when
    unknown."""
    if value is None:
        return "–"
    # 9.95 and above would round to "10.0×".
    return f"{value:.1f}×" if value < 9.95 else f"{value:,.0f}×"


# The plan panel names this many outliers; the kernel table flags every one.
OUTLIERS_LISTED = 10


def outlier_summary(strategy_result: dict, limit: int | None = None) -> dict | None:
    """The kernels the compiler flagged as projecting far above their speed of light (those
    with an "outlier_reason": OUTLIER_RATIO times it or more, and OUTLIER_MIN_US or more), the
    highest ratio first: {"count", "threshold", "min_us", "listed": the first `limit`
    [{"name", "proj_over_sol", "proj_us", "sol_us", "reason"}], "more": how many are not
    listed} (`limit`: OUTLIERS_LISTED unless given). None when no kernel is flagged (or the
    artifact predates the flag)."""
    outliers = [kernel for kernel in strategy_result["kernels"] if kernel.get("outlier_reason")]
    if not outliers:
        return None
    outliers.sort(key=lambda kernel: (-(kernel.get("proj_over_sol") or 0),
                                      -(kernel.get("proj_us") or 0)))
    listed = [{"name": kernel["name"], "proj_over_sol": kernel.get("proj_over_sol"),
               "proj_us": kernel.get("proj_us"), "sol_us": kernel.get("sol_us"),
               "reason": kernel["outlier_reason"]}
              for kernel in outliers[:OUTLIERS_LISTED if limit is None else limit]]
    return {"count": len(outliers), "threshold": OUTLIER_RATIO, "min_us": OUTLIER_MIN_US,
            "listed": listed, "more": len(outliers) - len(listed)}


def decision_rows(strategy_result: dict, measured_moves: list[dict] | None = None
                  ) -> list[dict]:
    """The plan's decisions, each with the plan's kernels that hold the nodes its subject
    names: a decision speaks of nodes, a user looks for it by the kernel it made or split.
    `measured_moves`: a tuned plan's moves as a measurement priced them (compiler/stages/
    tune.py `measured_tuning`), in the order of its decisions: each row's "measured_gain_us"
    and, without one, "measured_why"."""
    kernels_of = defaultdict(list)
    for kernel in strategy_result.get("kernels", []):
        for node in kernel.get("nodes", []):
            kernels_of[node].append(kernel["name"])
    rows = []
    for decision in strategy_result.get("decisions", []):
        subject = decision.get("subject", "")
        # A subject is node names joined by words and signs: "a.1 + b.2 -> c.3 (both read x)".
        named = (word.strip("(),;:") for word in subject.split())
        kernels = [kernel for node in named for kernel in kernels_of.get(node, ())]
        rows.append({"action": decision.get("action", ""), "subject": subject,
                     "reason": decision.get("reason", ""), "gain_us": decision.get("gain_us"),
                     "kernels": list(dict.fromkeys(kernels)),
                     "measured_gain_us": None, "measured_why": None})
    if measured_moves and [m["edit"] for m in measured_moves] == [r["subject"] for r in rows]:
        for row, move in zip(rows, measured_moves):
            row["measured_gain_us"], row["measured_why"] = move["measured_gain_us"], move["why"]
    return rows


def decision_actions(rows: list[dict]) -> list[str]:
    return sorted({row["action"] for row in rows if row["action"]})


BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")


def format_bytes(value: float | None) -> str:
    """A size in binary units, as every page writes sizes: 512 B, 836.0 KiB, 1.5 MiB."""
    if value is None:
        return "–"
    if abs(value) < 1024:
        return f"{int(value)} B"
    for unit in BYTE_UNITS:
        value /= 1024
        if abs(value) < 1024 or unit == BYTE_UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


# -- one kernel ------------------------------------------------------------------------------

def find_kernel(artifact: dict, device: str, strategy: str, name: str) -> dict | None:
    strategies = artifact.get("devices", {}).get(device, {}).get("strategies", {})
    for kernel in strategies.get(strategy, {}).get("kernels", []):
        if kernel["name"] == name:
            return kernel
    return None


def source_lines(source: str, line_nodes: dict) -> list[dict]:
    """Each line of the source with the graph nodes it computes (line_nodes is 1-based)."""
    return [{"number": number, "text": text, "nodes": line_nodes.get(str(number), [])}
            for number, text in enumerate(source.splitlines(), start=1)]


def node_lines(line_nodes: dict) -> dict[str, list[int]]:
    """The inverse map: node -> the source lines that compute it, in order."""
    lines: dict[str, list[int]] = defaultdict(list)
    for line in sorted(line_nodes, key=int):
        for node in line_nodes[line]:
            lines[node].append(int(line))
    return dict(lines)


def pipe_utilisation_chart(kernel: dict) -> SafeString | None:
    """Horizontal bars of each pipe's (and DRAM's, L2's) utilisation, busiest first, the
    limiter in red."""
    breakdown = kernel.get("projected") or {}
    utilisation = breakdown.get("utilisation") or {}
    if not utilisation:
        return None
    names = sorted(utilisation, key=lambda name: -utilisation[name])
    limiter = breakdown.get("limiter")
    colours = [HIGHLIGHT_COLOUR if name == limiter else BAR_COLOUR for name in names]
    terms = breakdown.get("terms_us") or {}
    hover = [f"{name}: {utilisation[name]:.1f} % busy, {terms.get(name, 0):.4f} µs"
             for name in names]
    title = f"Pipe utilisation of its device work — limiter: {limiter or '–'}"
    if limiter and limiter not in utilisation:
        # Latency or launch bound: no unit is busy enough to be the limiter, so no bar is red.
        title += " (no unit saturated)"
    return charts.horizontal_bars(title, names, [utilisation[name] for name in names],
                                  colours, "% of the kernel's time the unit is busy", "%",
                                  high=100.0, hover=hover, value_labels=True, left=70)


def launch_of(kernel: dict, resources: dict | None = None) -> dict | None:
    """The launch the projected model computed occupancy for: threads per block, registers per
    thread and shared memory per block (static from ptxas where known, the rest dynamic)."""
    breakdown = kernel.get("projected") or {}
    block = breakdown.get("block") or kernel.get("block_size")
    registers = breakdown.get("registers") or kernel.get("registers")
    if not block or registers is None:
        return None
    shared = breakdown.get("shared_bytes") or 0
    static = min(shared, (resources or {}).get("shared_static_bytes") or 0)
    return {"threads_per_block": block, "registers_per_thread": max(1, registers),
            "shared_static_bytes": static, "shared_dynamic_bytes": shared - static}


def _occupancy_or_none(device: Device, **launch) -> float | None:
    try:
        return occupancy(device, **launch).occupancy
    except LaunchLimitError:
        return None


def occupancy_curves(kernel: dict, device: Device, resources: dict | None = None) -> dict | None:
    """Occupancy as each of registers per thread, block size and shared memory per block varies
    with the other two held at the kernel's launch, as Nsight Compute's occupancy view draws
    them: {"current": {...}, "registers": {x, y}, "block_size": {x, y}, "shared": {x, y}}."""
    launch = launch_of(kernel, resources)
    if launch is None:
        return None
    current = occupancy(device, **launch)
    sweeps = {
        "registers": ("registers_per_thread", range(1, device.max_registers_per_thread + 1)),
        "block_size": ("threads_per_block", range(device.warp_size,
                                                   device.max_threads_per_block + 1,
                                                   device.warp_size)),
        "shared": ("shared_dynamic_bytes",
                   range(0, device.shared_memory_per_block_bytes - launch["shared_static_bytes"]
                         + 1, 512)),
    }
    curves = {"current": {**launch, "occupancy": current.occupancy, "limiter": current.limiter,
                          "summary": current.summary}}
    for key, (argument, values) in sweeps.items():
        xs = list(values)
        ys = [_occupancy_or_none(device, **{**launch, argument: value}) for value in xs]
        curves[key] = {"x": xs, "y": ys, "current_x": launch[argument]}
    curves["shared"]["x"] = [x + launch["shared_static_bytes"] for x in curves["shared"]["x"]]
    curves["shared"]["current_x"] += launch["shared_static_bytes"]
    return curves


OCCUPANCY_AXES = {"registers": "registers per thread", "block_size": "threads per block",
                  "shared": "shared memory per block (bytes)"}


def occupancy_charts(curves: dict) -> dict[str, SafeString]:
    """One step-line chart per curve with the kernel's launch marked."""
    current = curves["current"]["occupancy"] * 100
    drawn = {}
    for key, label in OCCUPANCY_AXES.items():
        curve = curves[key]
        ys = [None if y is None else 100 * y for y in curve["y"]]
        drawn[key] = charts.line_chart(
            f"vs {label}", [charts.Line("occupancy", curve["x"], ys, "#3b6fd8", steps=True)],
            [charts.Point("this kernel", curve["current_x"], current, HIGHLIGHT_COLOUR)],
            label, "occupancy %", y_range=(0.0, 105.0))
    return drawn


def roofline(kernel: dict, device: Device) -> dict | None:
    """The kernel's point on the device's FP32 roofline: arithmetic intensity (flops per DRAM
    byte) and achieved flops per second, projected and (where measured) measured."""
    breakdown = kernel.get("projected") or {}
    flops = breakdown.get("flops")
    dram_bytes = breakdown.get("dram_bytes") or kernel.get("dram_bytes")
    if not flops or not dram_bytes:
        return None
    intensity = flops / dram_bytes
    point = {"intensity": intensity, "peak_flops": device.peak_fp32_flops,
             "peak_bandwidth": device.dram_bytes_per_s,
             "ridge": device.peak_fp32_flops / device.dram_bytes_per_s}
    separate = kernel.get("device_us") is not None
    times = (("projected_flops", "device_us" if separate else "proj_us"),
             ("measured_flops", "measured_device_us" if separate else "measured_us"))
    for key, time_key in times:
        seconds = kernel.get(time_key)
        point[key] = flops / (seconds * 1e-6) if seconds else None
    return point


def roofline_chart(point: dict) -> SafeString:
    """The device's roof (bandwidth times intensity up to the compute peak) on log axes, two
    decades either side of the kernel and the ridge, with the kernel's projected and measured
    points."""
    low = min(point["intensity"], point["ridge"]) / 100
    high = max(point["intensity"], point["ridge"]) * 100
    xs = [low * (high / low) ** (step / 60) for step in range(61)]
    roof = [min(point["peak_flops"], x * point["peak_bandwidth"]) / 1e9 for x in xs]
    points = [charts.Point(label, point["intensity"], point[key] / 1e9, colour)
              for key, label, colour in (("projected_flops", "projected", "#3b6fd8"),
                                         ("measured_flops", "measured", "#1f9e89"))
              if point[key] is not None]
    return charts.line_chart("Roofline (FP32, DRAM)", [charts.Line("roof", xs, roof, "#1d2330")],
                             points, "arithmetic intensity (flop / byte)", "GFLOP/s", log=True,
                             height=320)


# CodeGenPlan fields worth a column; the rest are zero for most schedules.
PLAN_FIELDS = ("schedule", "block_size", "grid_size", "vector_width", "threads_per_row",
               "rows_per_block", "shared_bytes", "splits", "tile", "cooperative", "row_cache")


def candidate_rows(kernel: dict, candidates: list[dict]) -> list[dict]:
    """The kernel's candidate CodeGen plans (stored with its source), fastest projected first,
    the emitted one marked. The candidates are ranked with estimated registers; the emitted
    one shows the kernel's own figures (ptxas' registers, the occupancy and device work that
    follow), which the page's headline shows too. A plan listed twice (the same fields) is
    shown once."""
    chosen = kernel.get("codegen_plan") or {}
    breakdown = kernel.get("projected") or {}
    rows, seen = [], set()
    for plan in candidates:
        identity = tuple(sorted((key, repr(value)) for key, value in plan.items()
                                if key not in ("projected_us", "limiter", "occupancy",
                                               "registers_estimated", "projected")))
        if identity in seen:
            continue
        seen.add(identity)
        fields = {name: plan.get(name) for name in PLAN_FIELDS}
        is_chosen = bool(chosen) and all(plan.get(key) == value
                                         for key, value in chosen.items())
        row = {**fields,
               "projected_us": plan.get("projected_us"),
               "limiter": plan.get("limiter"),
               "occupancy": plan.get("occupancy"),
               "registers": plan.get("registers_estimated"),
               "registers_source": "est." if plan.get("registers_estimated") is not None
               else "",
               "chosen": is_chosen}
        if is_chosen and breakdown.get("registers_source") == "ptxas":
            row.update(projected_us=breakdown.get("projected_us", row["projected_us"]),
                       limiter=breakdown.get("limiter", row["limiter"]),
                       occupancy=breakdown.get("occupancy", row["occupancy"]),
                       registers=breakdown.get("registers"), registers_source="ptxas")
        rows.append(row)
    rows.sort(key=lambda row: (row["projected_us"] is None, row["projected_us"] or 0))
    return rows


# Labels of the projected breakdown's fields where their names alone would mislead: its times
# are device work, the launch priced apart.
BREAKDOWN_LABELS = {"projected": "projected device work", "sol": "SOL (device work)"}
# Units of the projected breakdown's fields, by the suffix of their names.
BREAKDOWN_UNITS = (("_us", "µs"), ("_gbs", "GB/s"), ("_bytes", "bytes"))
# The order the kernel page lists a stored object's fields in: the compiler's, which a database
# need not keep (PostgreSQL's jsonb sorts an object's keys shortest first). Fields it does not
# know follow, alphabetically.
BREAKDOWN_ORDER = tuple(field.name for field in dataclasses.fields(Breakdown))
RESOURCE_ORDER = tuple(BuildResult("", "", "", ok=True).to_dict())


def in_order(mapping: dict, order: tuple[str, ...]) -> list[tuple[str, object]]:
    """`mapping`'s items, those named in `order` first and in that order."""
    rank = {key: index for index, key in enumerate(order)}
    return sorted(mapping.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def breakdown_rows(kernel: dict) -> list[tuple[str, object, str]]:
    """The projected breakdown's scalar fields as (label, value, unit) triples in the doc's
    order; the unit comes out of the label ("latency_us" is "latency", in µs). Sizes are
    written in binary units (`format_bytes`, the unit then in the value), occupancy and the
    tail as percentages, arithmetic intensity in flop/byte, waves to two decimals."""
    breakdown = kernel.get("projected") or {}
    rows = []
    for key, value in in_order(breakdown, BREAKDOWN_ORDER):
        if isinstance(value, (dict, list)):
            continue
        unit = ""
        for suffix, name in BREAKDOWN_UNITS:
            if key.endswith(suffix):
                key, unit = key.removesuffix(suffix), name
        if value is not None and not isinstance(value, (bool, str)):
            if unit == "bytes":
                value, unit = format_bytes(value), ""
            elif key in ("occupancy", "tail_fraction"):
                key = key.removesuffix("_fraction")
                value, unit = f"{100 * value:.1f}", "%"
            elif key == "arithmetic_intensity":
                value, unit = f"{value:.2f}", "flop/byte"
            elif key == "waves":
                value = f"{value:.2f}"
        rows.append((BREAKDOWN_LABELS.get(key, key.replace("_", " ")), value, unit))
    return rows


def resource_rows(resources: dict | None) -> list[tuple[str, object]]:
    """ptxas' figures as (label, value) pairs; its log is shown on its own."""
    return [(key.replace("_", " "), value)
            for key, value in in_order(resources or {}, RESOURCE_ORDER) if key != "ptxas_log"]


# -- comparing two plans ----------------------------------------------------------------------
#
# A "side" of a comparison is one plan: a run's result for one device and one strategy. Kernels
# of the two plans are matched by the graph nodes they own, never by name ("loop.3" of one plan
# has nothing to do with "loop.3" of another).

TOTAL_FIELDS = (("kernels", "kernels"), ("dram_bytes", "DRAM traffic"), ("sol_us", "SOL"),
                ("device_us", "projected device work"), ("launch_us", "launches"),
                ("proj_us", "projected"), ("learned_us", "learned"),
                ("measured_us", "measured"))
# Totals that depend on how the kernels are launched: one row per runtime.
RUNTIME_TOTALS = ("launch_us", "proj_us", "learned_us", "measured_us")
# Rows of the totals that only some plans have (a learned model's; launch terms, which plans
# compiled before they were separate lack).
OPTIONAL_TOTALS = ("learned_us", "device_us", "launch_us")
FASTER_COLOUR = "#1f9e89"
SLOWER_COLOUR = "#d62728"


def parse_side(text: str) -> tuple[str, str | None, str | None]:
    """"<run>[:<device>[:<strategy>]]" as (run, device or None, strategy or None)."""
    parts = text.strip().split(":")
    parts += [""] * (3 - len(parts))
    run_id, device, strategy = parts[0], parts[1] or None, ":".join(parts[2:]) or None
    return run_id, device, strategy


def default_plan(artifact: dict, device: str | None = None,
                 strategy: str | None = None) -> tuple[str, str] | None:
    """The (device, strategy) a side names, filling in what it leaves out: the first device and
    the lowest projected strategy. None when the artifact has no such plan."""
    devices = artifact.get("devices") or {}
    device = device or next(iter(sorted(devices)), None)
    strategies = devices.get(device, {}).get("strategies", {})
    if strategy is None:
        strategy = min(ordered_strategies(strategies), default=None,
                       key=lambda name: strategies[name]["total"]["proj_us"] or math.inf)
    if strategy not in strategies:
        return None
    return device, strategy


# Regions the compare page lists (largest change first); the causes cover them all.
REGIONS_LISTED = 50


def why_regions(side_a: dict, side_b: dict) -> dict | None:
    """The compare page's "why": per runtime, B's time against A's by cause and by region
    (compiler/fusion/attribution.py), each region with the link that opens it in the fusion
    view (B's plan, its region's first kernel picked; A's beside it when both are plans of one
    run). {"by_runtime": [(runtime, explanation + "summary")], "regions": the first
    REGIONS_LISTED regions of the first runtime's ranking, each with "links" and its deltas
    under every runtime}; None when a side has no launch terms (compiled before)."""
    explained = []
    for runtime in RUNTIMES:
        explanation = explain(side_a["result"], side_b["result"], runtime)
        if explanation is None:
            return None
        explanation["summary"] = summary_text(explanation, f"A ({side_a['strategy']})",
                                              f"B ({side_b['strategy']})")
        explained.append((runtime, explanation))
    first = explained[0][1]["regions"]
    keyed = {runtime: {(tuple(r["a"]), tuple(r["b"])): r for r in explanation["regions"]}
             for runtime, explanation in explained}
    regions = []
    for region in first[:REGIONS_LISTED]:
        key = (tuple(region["a"]), tuple(region["b"]))
        regions.append({**region, "by_runtime": [(runtime, keyed[runtime][key])
                                                 for runtime, _ in explained],
                        "link": _region_link(side_a, side_b, region)})
    return {"by_runtime": explained, "regions": regions, "count": len(first)}


def _region_link(side_a: dict, side_b: dict, region: dict) -> dict | None:
    """The run page's fusion view on the region: B's plan with the region's first kernel of
    B picked (else A's plan with its first kernel), and the other plan beside it when both
    are plans of one run."""
    picked, other = (side_b, side_a) if region["b"] else (side_a, side_b)
    kernels = region["b"] or region["a"]
    if not kernels:
        return None
    fragment = f"{picked['device']}/{picked['strategy']}/{kernels[0]}"
    if picked["run"].pk == other["run"].pk:
        fragment += f"~{other['device']}/{other['strategy']}"
    return {"run": picked["run"].pk, "fragment": fragment}


def plan_totals(strategy_result: dict) -> dict:
    """A plan's totals for the compare page: {key: value} for the runtime-free figures and
    {key: {runtime: value}} for RUNTIME_TOTALS (`runtime_figures`; one None runtime for a plan
    compiled before launch terms were separate)."""
    total = strategy_result["total"]
    figures = runtime_figures(total)
    return {"kernels": strategy_result.get("kernel_count", len(strategy_result["kernels"])),
            "dram_bytes": total.get("dram_bytes"), "sol_us": total.get("sol_us"),
            "device_us": total.get("device_us"),
            **{key: {runtime: f[key] for runtime, f in figures.items()}
               for key in RUNTIME_TOTALS}}


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def total_rows(totals_a: dict, totals_b: dict) -> list[dict]:
    """The two plans' totals side by side: B − A and B / A per figure, one row per runtime
    for the figures that depend on it ("runtime": None for the others, and for plans compiled
    before launch terms were separate); the optional ones only where a side has them."""
    rows = []
    for key, label in TOTAL_FIELDS:
        if key in RUNTIME_TOTALS:
            pairs = [(runtime, totals_a[key].get(runtime), totals_b[key].get(runtime))
                     for runtime in dict.fromkeys([*totals_a[key], *totals_b[key]])]
        else:
            pairs = [(None, totals_a[key], totals_b[key])]
        if key in OPTIONAL_TOTALS and all(a is None and b is None for _, a, b in pairs):
            continue
        rows += [{"key": key, "label": label, "runtime": runtime, "a": a, "b": b,
                  "delta": _delta(a, b), "ratio": _ratio(b, a)} for runtime, a, b in pairs]
    return rows


# The name both kernels' functions get in a CUDA diff, so that the name alone is no change.
DIFF_FUNCTION = "KERNEL"


def cuda_diff(source_a: str, function_a: str, source_b: str, function_b: str,
              context: int = 3) -> dict:
    """A unified diff of two kernels' CUDA sources, each function's own name replaced by
    DIFF_FUNCTION: {"rows": [{"kind": "hunk" | "same" | "removed" | "added", "a", "b" (line
    numbers, None where the line is not on that side), "text"}], "added", "removed" (line
    counts), "same_source" (bool)}."""
    lines_a = re.sub(rf"\b{re.escape(function_a)}\b", DIFF_FUNCTION, source_a).splitlines()
    lines_b = re.sub(rf"\b{re.escape(function_b)}\b", DIFF_FUNCTION, source_b).splitlines()
    rows, added, removed = [], 0, 0
    matcher = difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        rows.append({"kind": "hunk", "a": None, "b": None,
                     "text": f"@@ -{first[1] + 1},{last[2] - first[1]} "
                             f"+{first[3] + 1},{last[4] - first[3]} @@"})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [{"kind": "same", "a": i + 1, "b": j + 1, "text": lines_a[i]}
                         for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            rows += [{"kind": "removed", "a": i + 1, "b": None, "text": lines_a[i]}
                     for i in range(i1, i2)]
            rows += [{"kind": "added", "a": None, "b": j + 1, "text": lines_b[j]}
                     for j in range(j1, j2)]
            removed += i2 - i1
            added += j2 - j1
    return {"rows": rows, "added": added, "removed": removed,
            "same_source": lines_a == lines_b}


# The delta chart is shown at its own size (compare.css): stretched to the page, its labels
# were twice the page's text and 20 bars 900 px tall. Its labels ("loop.12 → loop.3") get 48
# characters.
DELTA_CHART_WIDTH = 780
DELTA_LABEL_WIDTH = 300


def kernel_delta_chart(rows: list[dict], limit: int = 20) -> SafeString | None:
    """Horizontal bars (an inline SVG) of the largest projected deltas (B − A), largest
    first, faster in green; None when no kernel's time changed."""
    rows = [row for row in rows if row["proj_delta"]][:limit]
    if not rows:
        return None
    deltas = [row["proj_delta"] for row in rows]
    return charts.horizontal_bars(
        "Largest projected deltas (B − A)",
        [f"{_kernel_name(row['a'])} → {_kernel_name(row['b'])}" for row in rows], deltas,
        [FASTER_COLOUR if delta < 0 else SLOWER_COLOUR for delta in deltas],
        "µs (negative: B is faster)", "µs", left=DELTA_LABEL_WIDTH, width=DELTA_CHART_WIDTH)


def _kernel_name(kernel: dict | None) -> str:
    return "–" if kernel is None else kernel["name"]


# -- run history ------------------------------------------------------------------------------

def best_totals(artifact: dict | None) -> list[dict]:
    """Per device, the strategy with the lowest projected total: [{device, strategy, proj_us}]."""
    best = []
    for device in sorted((artifact or {}).get("devices") or {}):
        plan = default_plan(artifact, device)
        if plan is None:
            continue
        strategy = plan[1]
        total = artifact["devices"][device]["strategies"][strategy]["total"]
        best.append({"device": device, "strategy": strategy, "proj_us": total["proj_us"]})
    return best


# --- The uploaded text -----------------------------------------------------------------------------

def nodes_by_line(view: dict) -> dict[int, list[dict]]:
    """Line of the upload -> the nodes defined there (compiler/stages/graph_view.py's
    entries), for the nodes whose line is known."""
    lines: dict[int, list[dict]] = defaultdict(list)
    for node in view["nodes"]:
        if node["line"]:
            lines[node["line"]].append(node)
    return dict(lines)


def nodes_by_outputs(view: dict, outputs: dict[int, list[str]]) -> dict[int, list[dict]]:
    """Line -> the nodes of `view` named in `outputs` (line -> names: the ONNX outputs a
    line of an ONNX model's text computes, which name the nodes computing them)."""
    index = {node["id"]: node for node in view["nodes"]}
    return {line: [index[name] for name in names if name in index]
            for line, names in outputs.items()}


def upload_lines(text: str, nodes: dict[int, list[dict]]) -> list[dict]:
    """Each line of the upload with the nodes it defines, the kernel that computes them
    (`kernel`: the kernel that owns the first one a kernel owns, else the first kernel that
    recomputes one, `recomputed` then true; None for nodes no kernel computes: parameters,
    tuples) and a hue for that kernel (the same kernel the same colour on every line)."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        kernel, recomputed = _line_kernel(nodes.get(number, []))
        lines.append({"number": number, "text": line, "nodes": nodes.get(number, []),
                      "kernel": kernel, "recomputed": recomputed, "hue": _hue(kernel)})
    return lines


def _line_kernel(nodes: list[dict]) -> tuple[str | None, bool]:
    owner = next((node["kernel"] for node in nodes if node["kernel"]), None)
    if owner is not None:
        return owner, False
    again = next((node["also_in"][0] for node in nodes if node["also_in"]), None)
    return again, again is not None


def _hue(kernel: str | None) -> int | None:
    """A stable hue (0-359) for a kernel name: consecutive kernels far apart on the wheel."""
    if kernel is None:
        return None
    digest = hashlib.sha256(kernel.encode()).digest()
    return int.from_bytes(digest[:2], "big") % 360
