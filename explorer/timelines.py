"""A done run's plan timelines, data-parallel overlaps and their downloads, worked out on request
from the stored artifact (compiler/stages/timeline.py, dp.py, perfetto_trace.py and
model_explorer.py do the work; this module only finds the plan and names the files).

A run's artifact carries its graph summary, whose "training" key names the step's loss and
gradient outputs (compiler/ir/training.py); a run compiled before that key existed has its upload
imported once to find them, and the answer is cached.
"""
from __future__ import annotations

from django.core.cache import cache
from django.urls import reverse

from compiler.errors import InputError
from compiler.ir.training import training_outputs
from compiler.stages.dp import DataParallel, dp_overlap
from compiler.stages.model_explorer import model_explorer_graph
from compiler.stages.perfetto_trace import timeline_trace
from compiler.stages.pipeline import import_graph
from compiler.stages.timeline import plan_timeline
from explorer.models import Measurement, Run
from explorer.runs import plan_graph, results_stamp

TRAINING_CACHE_S = 24 * 3600


def run_training(run: Run, artifact: dict) -> dict:
    """The run's training outputs ({"loss", "gradients", "reason"})."""
    found = artifact.get("graph", {}).get("training")
    if found is not None:
        return found
    key = f"training-outputs:{run.pk}:{results_stamp(run)}"
    found = cache.get(key)
    if found is None:
        try:
            found = training_outputs(import_graph(bytes(run.graph_bytes), run.filename))
        except (InputError, ValueError) as error:
            found = {"loss": [], "gradients": [],
                     "reason": f"the run's graph cannot be read again: {error}"}
        cache.set(key, found, TRAINING_CACHE_S)
    return found


def timeline_document(run: Run, artifact: dict, device: str, strategy: str, runtime: str,
                      setup: DataParallel | None) -> dict:
    """What GET /api/v1/runs/<id>/timeline answers (docs/api.md): the plan's timeline with a
    link to each kernel's page, and its data-parallel overlap under `setup` (null without)."""
    plan = artifact["devices"][device]["strategies"][strategy]
    timeline = plan_timeline(plan, device, runtime, artifact["graph"]["outputs"])
    for kernel in timeline["kernels"]:
        kernel["url"] = reverse("explorer-kernel", args=[run.pk, device, strategy,
                                                          kernel["name"]])
    dp = None if setup is None else dp_overlap(timeline, run_training(run, artifact), setup)
    return {"id": run.pk, "device": device, "strategy": strategy, "runtime": runtime,
            "training": run_training(run, artifact), "timeline": timeline, "dp": dp}


def trace_file(run: Run, artifact: dict, device: str, strategy: str, runtime: str,
               setup: DataParallel | None) -> bytes:
    """The plan's timeline as a Perfetto trace (compiler/stages/perfetto_trace.py)."""
    document = timeline_document(run, artifact, device, strategy, runtime, setup)
    return timeline_trace(document["timeline"], f"{device} {strategy} plan", document["dp"])


def model_explorer_file(run: Run, artifact: dict, measurement: Measurement | None,
                        device: str, strategy: str) -> dict:
    """The plan's op graph in Model Explorer's format (compiler/stages/model_explorer.py), from
    the fusion view's object the run page draws; PlanUnavailable when the plan does not fit
    the upload."""
    view = plan_graph(run, artifact, measurement, device, strategy)
    return model_explorer_graph(view, f"{run.name or run.filename}: {device} {strategy} plan")


def export_name(run: Run, device: str, strategy: str, suffix: str) -> str:
    """A download's file name: fusion-run-<id>-<device>-<strategy>.<suffix> (a saved plan's
    "custom:NAME" written without its colon)."""
    return f"fusion-run-{run.pk}-{device}-{strategy.replace(':', '_')}.{suffix}"
