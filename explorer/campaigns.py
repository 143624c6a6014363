"""A GPU campaign's measured plans as measurements of the app's runs (`manage.py
import_measurements DIR`).

`benchmarks/gpu_campaign.py` writes a folder: campaign.json (its device, whether it was a dry
run), environment.json (the GPU, its driver and clocks, the date), runs.json (each invocation and
the steps it finished) and, per module, plans/<module>.json (every strategy's kernels checked and
timed, the plan back to back) and anchors/<module>.json (the frameworks, CuPy's eager run among
them). A plans file records the SHA-256 of the module's graph and the compiler version that made
its plans (the campaigns made before it did, the committed H200 one among them, record
neither, and match nothing).

`import_campaign` turns each plans file into MEASUREMENTS, the shape
compiler.stages.measure.measure_graph gives a GPU worker's measurement, and stores it as a
finished Measurement of every done run of the same graph, device and compiler version: the run
pages then show the campaign's times beside the predictions as they show a GPU worker's. Each
such result says where it came from: "origin" (the line the pages show: GPU, driver, clocks, the
campaign's date, "imported"), and "imported" (the folder, module, device, driver, clocks, date
and the key that makes importing twice add nothing). A strategy whose kernels the run does not
have under the same names is left out; a run with none left, a module matching no run, a dry
run's synthetic timings are reported, never imported.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from compiler.stages.measure import gpu_matches_device
from compiler.target.devices import get_device
from explorer.models import Measurement, Run

# Where an imported eager baseline comes from: the campaign's CuPy anchor.
EAGER_ANCHOR = "cupy_eager"
INPUTS = "benchmarks/gpu_campaign_modules.py: the module's seeded inputs"


class CampaignError(ValueError):
    """A folder that is not a campaign's; the message names the file and what is wrong."""


@dataclass
class Report:
    """What an import did: one line per plans file and run, and the measurements it added."""
    lines: list[str] = field(default_factory=list)
    added: list[Measurement] = field(default_factory=list)


def import_campaign(folder: Path) -> Report:
    """Import every plans file of the campaign `folder` (see the module docstring)."""
    settings = _read(folder / "campaign.json")
    environment = _read(folder / "environment.json")
    report = Report()
    if settings.get("dry_run"):
        report.lines.append(f"{folder}: a dry run, whose timings are synthetic: nothing "
                            f"imported")
        return report
    device = settings.get("device")
    gpu = environment.get("gpu") or {}
    if not device or not gpu.get("name"):
        raise CampaignError(f"{folder}: campaign.json names no device or environment.json no "
                            f"GPU; not a campaign's folder")
    plans = sorted((folder / "plans").glob("*.json"))
    if not plans:
        report.lines.append(f"{folder}: no plans/<module>.json: no plan was measured")
    for path in plans:
        _import_module(folder, path, device, gpu, environment, report)
    return report


def _import_module(folder: Path, path: Path, device: str, gpu: dict, environment: dict,
                   report: Report) -> None:
    module = path.stem
    measured = _read(path)
    digest, version = measured.get("graph_sha256"), measured.get("compiler_version")
    where = f"{path.relative_to(folder)}"
    if not digest or not version:
        report.lines.append(f"{where}: records no graph_sha256 or compiler_version (a campaign "
                            f"made before they were recorded): matches no run, not imported")
        return
    runs = [run for run in Run.objects.filter(graph_sha256=digest, compiler_version=version,
                                              status=Run.DONE).order_by("created")
            if device in run.devices]
    if not runs:
        report.lines.append(f"{where}: no done run of graph {digest[:12]} for {device} made by "
                            f"compiler {version}: nothing imported")
        return
    date = _measured_date(folder, module, environment)
    key = hashlib.sha256(path.read_bytes() + device.encode()).hexdigest()
    origin = _origin(gpu, date)
    imported = {"folder": folder.name, "module": module, "device": device,
                "gpu": gpu["name"], "driver": gpu.get("driver_version"),
                "clocks": {name: gpu.get(f"clocks.{name}") for name in
                           ("sm", "mem", "max.sm", "max.mem")},
                "date": date, "key": key}
    eager = _eager(_read_optional(folder / "anchors" / f"{module}.json"))
    for run in runs:
        if run.measurements.filter(result__imported__key=key).exists():
            report.lines.append(f"{where}: run {run.pk}: imported before, nothing added")
            continue
        strategies, differing = _strategies(run, device, gpu["name"], measured["strategies"])
        for strategy in differing:
            report.lines.append(f"{where}: run {run.pk}: its {strategy} plan's kernels are not "
                                f"the campaign's: left out")
        if not strategies:
            report.lines.append(f"{where}: run {run.pk}: no plan in common, nothing imported")
            continue
        result = {"gpu": gpu["name"], "arch": get_device(device).arch,
                  "compiler_version": version, "inputs": INPUTS, "origin": origin,
                  "imported": imported,
                  "devices": {device: {"matches_gpu": gpu_matches_device(gpu["name"], device),
                                       "strategies": strategies, "eager": eager}}}
        report.added.append(Measurement.record_imported(run, result, origin))
        report.lines.append(f"{where}: run {run.pk}: imported {', '.join(strategies)} "
                            f"({origin})")


def _origin(gpu: dict, date: str) -> str:
    """The line the pages show for an imported figure."""
    clocks = ""
    if gpu.get("clocks.max.sm") and gpu.get("clocks.max.mem"):
        clocks = f", clocks up to {gpu['clocks.max.sm']} SM, {gpu['clocks.max.mem']} memory"
    driver = f", driver {gpu['driver_version']}" if gpu.get("driver_version") else ""
    return f"{gpu['name']}{driver}{clocks}, campaign of {date[:10]}, imported"


def _measured_date(folder: Path, module: str, environment: dict) -> str:
    """The date of the campaign run that measured the module's plans (runs.json), else the
    environment's."""
    step = f"plans:{module}"
    dates = [entry["date"] for entry in _read_optional(folder / "runs.json") or []
             if step in entry.get("done", ())]
    return dates[-1] if dates else environment.get("date", "")


def _strategies(run: Run, device: str, gpu: str, measured: dict) -> tuple[dict, list[str]]:
    """The campaign's plans the run has with the same kernels (name and kind, in order), each
    as a GPU worker's PlanRun.to_dict(); and the strategies whose kernels differ."""
    shown = run.artifact["devices"][device]["strategies"]
    strategies, differing = {}, []
    for strategy, plan in measured.items():
        if strategy not in shown:
            continue
        ours = [(kernel["name"], kernel["kind"]) for kernel in shown[strategy]["kernels"]]
        if ours != [(kernel["name"], kernel["kind"]) for kernel in plan["kernels"]]:
            differing.append(strategy)
            continue
        strategies[strategy] = _plan_run(strategy, gpu, plan, shown[strategy]["kernels"])
    return strategies, differing


def _plan_run(strategy: str, gpu: str, plan: dict, shown: list[dict]) -> dict:
    """A campaign plan (gpu_campaign.py plan_result) as PlanRun.to_dict(), its kernels' nodes
    those of the run's same kernels (`shown`): the timings keep what the campaign kept (median,
    cv, runs); a mismatch only its count."""
    end_to_end = replay = None
    if plan.get("end_to_end_us") is not None:
        end_to_end = {"median_us": plan["end_to_end_us"], "cv": plan.get("end_to_end_cv")}
    if plan.get("graph_replay_us") is not None:
        replay = {"median_us": plan["graph_replay_us"], "cv": plan.get("graph_replay_cv")}
    return {"strategy": strategy, "device": gpu, "total_us": plan.get("measured_sum_us")
            if plan.get("not_measured") is None else None,
            "end_to_end": end_to_end, "graph_replay": replay,
            "graph_not_measured": plan.get("graph_not_measured"),
            "not_measured": plan.get("not_measured"),
            "kernels": [_kernel_run(kernel, ours["nodes"])
                        for kernel, ours in zip(plan["kernels"], shown)]}


def _kernel_run(kernel: dict, nodes: list[str]) -> dict:
    timed = kernel.get("measured_us") is not None
    # The campaign kept one timing per kernel: a library call's graph replay where it had one.
    replayed = kernel.get("clock") == "graph replay"
    timing = {"median_us": kernel["measured_us"], "cv": kernel.get("cv"),
              "runs": kernel.get("runs")} if timed else None
    return {"name": kernel["name"], "kind": kernel["kind"], "nodes": list(nodes),
            "function": kernel.get("function"),
            "measured_us": kernel.get("measured_us"), "clock": kernel.get("clock"),
            "timing": None if replayed else timing, "replay": timing if replayed else None,
            "max_abs_error": kernel.get("max_abs_error"),
            "mismatches": [{"note": "beyond tolerance (the campaign kept only the count)"}]
            * int(kernel.get("mismatches") or 0),
            "not_measured": kernel.get("not_measured")}


def _eager(anchors: dict | None) -> dict:
    """The campaign's CuPy eager anchor as measure_graph's eager baseline."""
    anchor = (anchors or {}).get(EAGER_ANCHOR) or {}
    if anchor.get("status") != "measured" or anchor.get("median_us") is None:
        why = anchor.get("note") or "the campaign has no CuPy eager time of this module"
        return {"measured_us": None, "timing": None, "not_measured": f"not measured: {why}"}
    return {"measured_us": anchor["median_us"],
            "timing": {"median_us": anchor["median_us"], "cv": anchor.get("cv"),
                       "runs": anchor.get("runs")}, "not_measured": None}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise CampaignError(f"{path}: not found; a campaign's folder holds campaign.json, "
                            f"environment.json and plans/") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CampaignError(f"{path}: not JSON ({error})") from None


def _read_optional(path: Path):
    return _read(path) if path.exists() else None
