"""What-if: one plan of a graph under edit, as the web app's fusion view and the API drive it
(issue 36, point 2).

A `WhatIf` opens a plan from its kernels as a run stores them (their owned and recomputed nodes)
and answers for a list of edits (compiler/fusion/edits.py, in their JSON form) what the plan
becomes: its total before and after, each edit's replaced and new kernels with their figures
(SOL, projected with limiter, occupancy and waves, learned when a model is given) and the
edit's before/after split by cause. The list is the whole story from the stored plan, so the
caller keeps no state: a session that has applied a prefix of the list applies only the rest,
and one that went further undoes back to the shared prefix (a stateless web server keeps a few
sessions per process and any of them answers any request).

The plan is priced as edits price kernels: by the quick projection of the CodeGen plan the
projected model ranks fastest, before nvcc (no ptxas registers). Its kernels keep the kinds
their strategy gave them, so the base total is the stored plan's explored total; once the run
is built, its figures (ptxas's registers, the chosen CodeGen plan) can differ a little from
these, and the answer gives the base it edits from. A new kernel's kind is the kernel
analysis's. A saved plan (`plan_file`) is compiled like any strategy's, its kinds the kernel
analysis's (a plan file holds none), and its built figures replace these.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from compiler.errors import InputError
from compiler.fusion.edits import EditRefused, PlanEditor, edit_from_dict, edit_to_dict
from compiler.fusion.plan_files import plan_from_kernels, plan_to_file
from compiler.ir.graph import Graph
from compiler.kernels.plan import FusionPlan, Kernel
from compiler.stages.codegen import emit_code
from compiler.stages.pipeline import has_source
from compiler.target.devices import get_device
from compiler.target.launch import device_work_of_alone, terms_for
from compiler.target.sol import SolModel

# The longest edit list a session takes: past it the user saves the plan and edits that.
MAX_EDITS = 500
# The kernels of one edit listed with their figures (a "split every loop kernel" may make
# thousands); the answer counts the rest.
LISTED_KERNELS = 40
# The fields of a kernel's entry (Kernel.to_dict) an answer shows.
KERNEL_FIELDS = ("name", "kind", "sol_us", "proj_us", "device_us", "launch_us", "limiter",
                 "occupancy", "waves", "block_size", "grid_size", "registers", "schedule",
                 "dram_bytes", "dominant")

# `predict(plan)`: a learned model's time in µs of each kernel of `plan` (None where it has
# none): compiler/cost/learned/predict.py LearnedPredictor.predict_plan, bound to the graph.
Predict = Callable[[FusionPlan], list]


class WhatIf:
    """One stored plan under edit (module docstring). `lock` serialises a session's use by the
    threads of one server process."""

    def __init__(self, graph: Graph, device: str, runtime: str, strategy: str,
                 kernels: list[dict], predict: Predict | None = None,
                 learned_label: str | None = None):
        self.graph, self.device, self.runtime, self.strategy = graph, device, runtime, strategy
        self.model = SolModel(graph, get_device(device))
        plan = plan_from_kernels(graph, self.model, stored_kernels(kernels, graph),
                                 f"the {strategy} plan", runtime, keep_kinds=True)
        plan = _named_as_stored(plan, kernels)
        plan.strategy = strategy
        self.editor = PlanEditor(graph, self.model, plan)
        self.base = plan
        self.applied: list[dict] = []
        self.predict, self.learned_label = predict, learned_label
        self._learned: dict[tuple, float | None] = {}
        self.lock = threading.Lock()

    # -- edits --------------------------------------------------------------------------------

    def replay(self, edits: list) -> dict:
        """The answer for the plan after `edits` (JSON edits, the whole list from the stored
        plan). An edit the editor refuses stops the list there: the answer is the plan after
        the edits before it, and says which edit was refused and why. InputError for a list
        that is not one of edits."""
        if not isinstance(edits, list):
            raise InputError("\"edits\" must be a list of edits")
        if len(edits) > MAX_EDITS:
            raise InputError(f"{len(edits)} edits, over the {MAX_EDITS} a plan takes at once: "
                             f"save the plan and edit the saved one")
        wanted = [edit_to_dict(edit_from_dict(edit, f"edit {index + 1}"))
                  for index, edit in enumerate(edits)]
        shared = 0
        while (shared < min(len(wanted), len(self.applied))
               and wanted[shared] == self.applied[shared]):
            shared += 1
        while len(self.applied) > shared:
            self.editor.undo()
            self.applied.pop()
        refused = None
        for index in range(shared, len(wanted)):
            try:
                self.editor.apply(edit_from_dict(wanted[index]))
            except EditRefused as refusal:
                refused = {"index": index, "edit": wanted[index], "reason": str(refusal)}
                break
            self.applied.append(wanted[index])
        return self.answer(refused)

    @property
    def plan(self) -> FusionPlan:
        return self.editor.plan

    def answer(self, refused: dict | None = None) -> dict:
        """The JSON answer: the plan's totals (base and now), each applied edit with what it
        did, and the refusal, if any."""
        plan = self.plan
        base_learned, learned = self._learned_total(self.base), self._learned_total(plan)
        return {
            "strategy": self.strategy, "device": self.device, "runtime": self.runtime,
            "base": {"proj_us": _total(self.base), "kernels": len(self.base.kernels),
                     "sol_us": _sol(self.base), "learned_us": base_learned},
            "now": {"proj_us": _total(plan), "kernels": len(plan.kernels),
                    "sol_us": _sol(plan), "learned_us": learned},
            "learned_model": self.learned_label if self.predict else None,
            "edits": [self._edit_entry(result, applied)
                      for result, applied in zip(self.editor.log, self.applied)],
            "refused": refused,
            "priced_by": "the projected model's quick projection, before nvcc",
        }

    def _edit_entry(self, result, applied: dict) -> dict:
        return {"edit": applied, "describe": result.edit.describe(),
                "before_us": result.before_us, "after_us": result.after_us,
                "gain_us": result.gain_us,
                "removed": self._kernels(result.removed), "added": self._kernels(result.added),
                "removed_count": len(result.removed), "added_count": len(result.added),
                "explanation": result.explanation()}

    def _kernels(self, kernels: list[Kernel]) -> list[dict]:
        listed = kernels[:LISTED_KERNELS]
        learned = self._learned_times(listed)
        rows = []
        for kernel, learned_us in zip(listed, learned):
            entry = kernel.to_dict(self.device, self.runtime)
            row = {key: entry.get(key) for key in KERNEL_FIELDS}
            row.update(nodes=len(kernel.nodes), recomputed=len(kernel.recomputed),
                       ops=list(kernel.nodes[:8]), learned_us=learned_us)
            rows.append(row)
        return rows

    # -- learned ------------------------------------------------------------------------------

    def _learned_times(self, kernels: list[Kernel]) -> list[float | None]:
        """Each kernel's learned time (launch included, under the plan's runtime), predicted
        once per kernel structure in one forward for those not seen before."""
        if self.predict is None:
            return [None] * len(kernels)
        keys = [(k.nodes, k.recomputed) for k in kernels]
        unseen = [k for k, key in zip(kernels, keys) if key not in self._learned]
        if unseen:
            plan = dataclasses.replace(self.plan, kernels=unseen)
            launch = terms_for(self.device).launch(self.runtime)
            for kernel, time in zip(unseen, self.predict(plan)):
                self._learned[(kernel.nodes, kernel.recomputed)] = None if time is None else \
                    launch.kernel_us(device_work_of_alone(self.device, time))
        return [self._learned[key] for key in keys]

    def _learned_total(self, plan: FusionPlan) -> float | None:
        """The plan's learned total: each kernel's learned time, else its projected one (as
        compiler/cost/learned/predict.py sums a plan's)."""
        if self.predict is None:
            return None
        times = self._learned_times(plan.kernels)
        entries = [k.to_dict(self.device, self.runtime) for k in plan.kernels]
        parts = [time if time is not None else entry.get("proj_us")
                 for time, entry in zip(times, entries)]
        return None if None in parts else sum(parts)

    # -- what the fusion view opens -----------------------------------------------------------

    def kernel_code(self, name: str) -> dict:
        """The CUDA the code generator emits for kernel `name` of the plan now (no nvcc):
        {"kernel", "kind", "function", "source", "error"}; InputError for an unknown name."""
        kernel = next((k for k in self.plan.kernels if k.name == name), None)
        if kernel is None:
            raise InputError(f"no kernel named {name} in the edited plan")
        code = emit_code(self.graph, self.plan, kernel, get_device(self.device))
        return {"kernel": name, "kind": kernel.kind, "function": code.function,
                "source": code.emitted.source if has_source(code) else None,
                "error": code.error}

    def kernel_nodes(self) -> list[dict]:
        """The plan now, kernel by kernel ({"name", "kind", "nodes", "recomputed"}): what the
        fusion view redraws its groups from."""
        return [{"name": k.name, "kind": k.kind, "nodes": list(k.nodes),
                 "recomputed": list(k.recomputed)} for k in self.plan.kernels]

    def kernel_entries(self) -> list[dict]:
        """The plan now as a plan's JSON kernel entries (Kernel.to_dict, learned times added):
        what the fusion view's object is made from (compiler/stages/graph_view.py)."""
        entries = [k.to_dict(self.device, self.runtime) for k in self.plan.kernels]
        for entry, learned in zip(entries, self._learned_times(self.plan.kernels)):
            entry["learned_us"] = learned
        return entries

    def plan_file(self, name: str | None = None) -> dict:
        """The plan now as a plan file (compiler/fusion/plan_files.py), with the plan it was
        edited from and the edits, so that a reader sees how it was made, and each kernel's
        kind (a saved plan keeps them: explorer.models.SavedPlan.keep_kinds)."""
        return {**plan_to_file(self.graph, self.plan, name, kinds=True),
                "based_on": self.strategy, "edits": list(self.applied)}


def stored_kernels(kernels: list[dict], graph: Graph) -> list[dict]:
    """A stored plan's kernels (a run's artifact entries) as plan_from_kernels takes them, with
    the kinds their strategy gave them; InputError when one names a node the graph does not
    have (a plan stored for another upload)."""
    found = []
    for entry in kernels:
        names = list(entry.get("nodes") or []) + list(entry.get("recomputed") or [])
        missing = next((name for name in names if name not in graph.nodes), None)
        if missing is not None:
            raise InputError(f"the stored plan's kernel {entry.get('name')} names node "
                             f"{missing}, which the graph does not have")
        found.append({"nodes": list(entry.get("nodes") or []),
                      "recomputed": list(entry.get("recomputed") or []),
                      "kind": entry.get("kind"), "dominant": entry.get("dominant"),
                      "xla_name": entry.get("xla_name")})
    return found


def _named_as_stored(plan: FusionPlan, kernels: list[dict]) -> FusionPlan:
    """The rebuilt plan with the stored plan's kernel names and order, which the first edit
    names kernels by (each rebuilt kernel owns what one stored kernel owns)."""
    stored = {frozenset(entry.get("nodes") or ()): (index, entry.get("name"))
              for index, entry in enumerate(kernels)}
    named = []
    for kernel in plan.kernels:
        index, name = stored.get(frozenset(kernel.nodes), (len(kernels), None))
        named.append((index, dataclasses.replace(kernel, name=name or kernel.name)))
    named.sort(key=lambda pair: pair[0])
    return dataclasses.replace(plan, kernels=[kernel for _, kernel in named])


def _total(plan: FusionPlan) -> float | None:
    totals = plan.projected_totals()
    return totals["proj_us"] if totals else None


def _sol(plan: FusionPlan) -> float:
    return sum(k.sol.total_us for k in plan.kernels)
