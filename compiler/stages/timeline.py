"""A plan's timeline: when each kernel runs and when each graph output is ready.

A plan's kernels run one after another on one stream, in the plan's order (a topological order
of its kernel graph, compiler/kernels/plan.py). Under a runtime (compiler/target/launch.py) a
kernel first waits its launch term after the previous kernel ends (a CUDA graph's node gap, or
a stream's gap or the host's issue time), then runs its device work:

    start(k) = end(k - 1) + launch(k),   end(k) = start(k) + device work(k)

so the last kernel ends at the plan's total under that runtime: the sum over its kernels of
device work + launch term, what `FusionPlan.projected_totals` adds up.

The timeline is drawn under each model that priced every kernel: "projected" (each kernel's
projected device work), "learned" (its learned device work where the learned model predicted
it, else its projected one, as compiler/cost/learned/predict.py sums a plan's learned total)
and "measured" (its time timed alone less what a lone launch adds, when every kernel was
measured). A graph output is ready when the kernel that writes it ends; an output no kernel
writes (a parameter or constant returned as it is) is ready at 0.

The critical path is the longest chain of kernels that each read a value the one before it
writes, weighted by kernel time (launch term and device work): the time the plan would take if
every kernel started as soon as its inputs were written (several streams, no limit on
concurrency). The one-stream timeline takes the plan's total; the difference is what running
independent kernels side by side could at most win back.

`plan_timeline` reads a plan as `explore --json` and the stored artifact hold it (its kernel
entries with "device_us", "inputs" and "outputs"), so the command line and the web app draw the
same timeline; plans made before kernels carried their device work apart have none.
"""

from __future__ import annotations

from compiler.stages.dp import DataParallel, dp_overlap
from compiler.target.launch import RUNTIMES, device_work_of_alone, launch_for

MODELS = ("projected", "learned", "measured")
_DIGITS = 4


def plan_timeline(plan: dict, device: str, runtime: str, outputs: list[dict]) -> dict:
    """The plan's timeline under `runtime` (module docstring): {"runtime", "models": the models
    drawn, "total_us": {model: us}, "kernels": [{"name", "kind", "limiter", "launch_us",
    "start_us", "end_us" (each {model: us})}], "outputs": [{"name", "bytes", "kernel" (its
    writer, or null), "ready_us": {model: us}}], "critical_path": {model: {"us", "kernels"}},
    "unavailable": why there is none, or null}. `outputs`: the graph summary's outputs
    ({"name", "bytes"}, in output-tuple order)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}")
    kernels = plan.get("kernels") or []
    reason = _unavailable(plan, kernels)
    if reason is not None:
        return {"runtime": runtime, "models": [], "total_us": {}, "kernels": [],
                "outputs": [], "critical_path": {}, "unavailable": reason}
    works = {model: work for model in MODELS
             if (work := _device_works(kernels, model, device)) is not None}
    launch = launch_for(device, runtime)
    spans = {model: _spans(work, launch) for model, work in works.items()}
    writer = {value: index for index, kernel in enumerate(kernels)
              for value in kernel.get("outputs") or ()}
    entries = []
    for index, kernel in enumerate(kernels):
        entries.append({
            "name": kernel["name"], "kind": kernel.get("kind"),
            "limiter": kernel.get("limiter"),
            "launch_us": {model: _round(launch.us(works[model][index])) for model in works},
            "start_us": {model: _round(spans[model][index][0]) for model in works},
            "end_us": {model: _round(spans[model][index][1]) for model in works}})
    ready = []
    for output in outputs:
        index = writer.get(output["name"])
        if index is None:
            index = next((i for i, kernel in enumerate(kernels)
                          if output["name"] in kernel["nodes"]), None)
        ready.append({"name": output["name"], "bytes": output.get("bytes"),
                      "kernel": None if index is None else kernels[index]["name"],
                      "ready_us": {model: 0.0 if index is None
                                   else _round(spans[model][index][1]) for model in works}})
    return {"runtime": runtime, "models": list(works),
            "total_us": {model: _round(spans[model][-1][1]) if kernels else 0.0
                         for model in works},
            "kernels": entries, "outputs": ready,
            "critical_path": {model: _critical_path(kernels, writer, works[model], launch)
                              for model in works},
            "unavailable": None}


def _unavailable(plan: dict, kernels: list[dict]) -> str | None:
    if plan.get("unavailable"):
        return plan["unavailable"]
    if any(kernel.get("device_us") is None for kernel in kernels):
        return ("the plan's kernels carry no projected device work (a plan compiled before "
                "launch terms were priced apart): recompile the run to draw its timeline")
    return None


def _device_works(kernels: list[dict], model: str, device: str) -> list[float] | None:
    """Each kernel's device work under `model`, or None when the model did not price the
    plan (module docstring)."""
    if model == "projected":
        return [kernel["device_us"] for kernel in kernels]
    if model == "learned":
        if all(kernel.get("learned_device_us") is None for kernel in kernels):
            return None
        return [kernel["device_us"] if kernel.get("learned_device_us") is None
                else kernel["learned_device_us"] for kernel in kernels]
    if not kernels or any(kernel.get("measured_us") is None for kernel in kernels):
        return None
    return [kernel["measured_device_us"] if kernel.get("measured_device_us") is not None
            else device_work_of_alone(device, kernel["measured_us"]) for kernel in kernels]


def _spans(works: list[float], launch) -> list[tuple[float, float]]:
    spans, end = [], 0.0
    for work in works:
        start = end + launch.us(work)
        end = start + work
        spans.append((start, end))
    return spans


def _critical_path(kernels: list[dict], writer: dict[str, int], works: list[float],
                   launch) -> dict:
    """The longest chain of dependent kernels (module docstring): {"us", "kernels": names}."""
    longest: list[float] = []
    before: list[int | None] = []
    for index, kernel in enumerate(kernels):
        producers = {writer[value] for value in kernel.get("inputs") or ()
                     if writer.get(value, index) < index}
        previous = max(producers, key=lambda i: longest[i], default=None)
        longest.append((longest[previous] if previous is not None else 0.0)
                       + launch.kernel_us(works[index]))
        before.append(previous)
    if not kernels:
        return {"us": 0.0, "kernels": []}
    last = max(range(len(kernels)), key=lambda i: longest[i])
    chain = []
    at: int | None = last
    while at is not None:
        chain.append(kernels[at]["name"])
        at = before[at]
    return {"us": _round(longest[last]), "kernels": chain[::-1]}


def _round(value: float) -> float:
    return round(value, _DIGITS)


def attach_timelines(result: dict, setup: DataParallel | None = None) -> None:
    """Add to every plan of an `explore --json` object its "timeline" under the object's
    runtime and, with a data-parallel `setup`, its "dp" overlap (compiler/stages/dp.py)."""
    graph = result["graph"]
    for plan in result["strategies"].values():
        plan["timeline"] = plan_timeline(plan, result["device"], result["runtime"],
                                         graph["outputs"])
        if setup is not None:
            plan["dp"] = dp_overlap(plan["timeline"], graph.get("training"), setup)
