"""How fast one plan edit answers on a whole training step (issue 36: under 300 ms of server CPU
for one edit on the 48-layer step).

Run:  .venv/bin/python benchmarks/plan_edit_speed.py [--module transformer_48l] [--edits 60]
                                                      [--seed 0] [--write]

Explores the module with the cost strategy (not timed), then applies `--edits` edits to its plan
through compiler/fusion/edits.py's PlanEditor, as the fusion view would, cycling through the
kinds of edit: a merge of a kernel with one that reads its output (a producer and a consumer,
the usual what-if), a split of a kernel of several ops back into its ops, a split of its last
op out, and a forbidden edge inside a kernel; kernels drawn at random (`--seed`). Each edit
is timed on its own (wall clock and process CPU time); refused edits (a cycle, the caps) are
timed too, since the user waits for the refusal as well. Reports the median, 90th percentile
and largest CPU time per edit, by kind of edit, and how many were refused.

Then the same through the web app's path (compiler/stages/whatif.py, what explorer/plan_edits.py
runs per request): a WhatIf opened on the stored plan's kernels as a run's artifact holds them
(timed: what the first request of a web process pays, the upload's import aside), and each
request the whole JSON edit list so far, answered with totals, the edit's kernels and its
explanation by cause; and once, the edited plan's fusion-view object laid out (the second
request the page makes after an edit, to redraw). --write stores the figures in
benchmarks/results/plan_edit_speed.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

from compiler.fusion.edits import (EditRefused, Forbid, Merge, PlanEditor, Split,  # noqa: E402
                                   edit_to_dict)
from compiler.stages.graph_view import laid_out  # noqa: E402
from compiler.stages.whatif import WhatIf  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.importers import load_graph  # noqa: E402
from compiler.target.devices import get_device  # noqa: E402
from compiler.target.sol import SolModel  # noqa: E402

MODULES = {"transformer_12l": "transformer_12l.hlo.gz",
           "transformer_48l": "transformer_48l.hlo.gz"}
KINDS = ("merge", "split", "split-last", "forbid")


def pick(editor: PlanEditor, kind: str, rng: random.Random):
    """An edit of `kind` on the editor's current plan, or None when none applies."""
    plan = editor.plan
    generated = [k for k in plan.kernels if k.kind != "library"]
    if kind == "merge":
        producer = rng.choice(generated)
        consumers = [k for k in generated if k is not producer
                     and set(k.inputs) & set(producer.outputs)]
        return Merge((producer.name, rng.choice(consumers).name)) if consumers else None
    several = [k for k in generated if len(k.nodes) > 1]
    if not several:
        return None
    kernel = rng.choice(several)
    if kind == "split":
        return Split(kernel.name)
    if kind == "split-last":
        return Split(kernel.name, (kernel.nodes[-1],))
    users = editor.facts.users
    inside = set(kernel.nodes)
    edges = [(n, u) for n in kernel.nodes for u in users[n] if u in inside]
    return Forbid(*rng.choice(edges)) if edges else None


def web_path(graph, plan, args) -> dict:
    """The web app's path (module docstring): open, then one request per edit, each sending
    the whole list so far."""
    kernels = plan.to_dict()["kernels"]
    start = time.process_time()
    session = WhatIf(graph, "h100", plan.runtime, "cost", kernels)
    open_ms = (time.process_time() - start) * 1e3
    rng = random.Random(args.seed)
    edits, cpu_ms = [], []
    for index in range(args.edits):
        edit = pick(session.editor, KINDS[index % len(KINDS)], rng)
        if edit is None:
            continue
        asked = edits + [edit_to_dict(edit)]
        start = time.process_time()
        answer = session.replay(asked)
        cpu_ms.append((time.process_time() - start) * 1e3)
        if not answer["refused"]:
            edits = asked
    start = time.process_time()
    laid_out(graph, session.kernel_entries())
    layout_ms = (time.process_time() - start) * 1e3
    cpu_ms.sort()
    return {"open_ms": round(open_ms, 1), "requests": len(cpu_ms),
            "median_ms": round(statistics.median(cpu_ms), 1),
            "p90_ms": round(cpu_ms[int(0.9 * (len(cpu_ms) - 1))], 1),
            "max_ms": round(cpu_ms[-1], 1), "layout_ms": round(layout_ms, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="transformer_48l", choices=sorted(MODULES))
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    graph = load_graph(str(HERE / "data" / MODULES[args.module]))
    plan = explore(graph, "h100", ["cost"])["cost"]
    model = SolModel(graph, get_device("h100"))
    start = time.process_time()
    editor = PlanEditor(graph, model, plan)
    setup_s = time.process_time() - start
    rng = random.Random(args.seed)
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    refused: dict[str, int] = {kind: 0 for kind in KINDS}
    walls = []
    for index in range(args.edits):
        kind = KINDS[index % len(KINDS)]
        edit = pick(editor, kind, rng)
        if edit is None:
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            editor.apply(edit)
        except EditRefused:
            refused[kind] += 1
        times[kind].append((time.process_time() - cpu) * 1e3)
        walls.append((time.perf_counter() - wall) * 1e3)

    whatif = web_path(graph, plan, args)

    every = [t for kind in KINDS for t in times[kind]]
    every.sort()
    p90 = every[int(0.9 * (len(every) - 1))]
    print(f"{args.module} ({len(graph)} nodes, {len(plan.kernels)} kernels in the cost plan): "
          f"{len(every)} edits, editor set-up {setup_s * 1e3:.0f} ms")
    print(f"  CPU per edit: median {statistics.median(every):.0f} ms, 90th percentile "
          f"{p90:.0f} ms, largest {every[-1]:.0f} ms (wall median "
          f"{statistics.median(walls):.0f} ms)")
    for kind in KINDS:
        if times[kind]:
            print(f"  {kind:<11} {len(times[kind]):>3} edits ({refused[kind]} refused): median "
                  f"{statistics.median(times[kind]):.0f} ms, largest {max(times[kind]):.0f} ms")
    print(f"  web path: open {whatif['open_ms']:.0f} ms; CPU per request: median "
          f"{whatif['median_ms']:.0f} ms, 90th percentile {whatif['p90_ms']:.0f} ms, largest "
          f"{whatif['max_ms']:.0f} ms over {whatif['requests']} requests; the edited plan laid "
          f"out for the view {whatif['layout_ms']:.0f} ms")
    if args.write:
        out = HERE / "results" / "plan_edit_speed.json"
        out.write_text(json.dumps({
            "date": date.today().isoformat(), "machine": platform.machine(),
            "module": args.module, "nodes": len(graph), "kernels": len(plan.kernels),
            "edits": len(every), "setup_ms": round(setup_s * 1e3, 1),
            "cpu_ms": {"median": round(statistics.median(every), 1), "p90": round(p90, 1),
                       "max": round(every[-1], 1)},
            "by_kind": {kind: {"edits": len(times[kind]), "refused": refused[kind],
                               "median_ms": round(statistics.median(times[kind]), 1)}
                        for kind in KINDS if times[kind]},
            "web_path": whatif,
        }, indent=2) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
