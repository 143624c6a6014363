"""Plan edits: a fusion plan as a value that edits produce (issue 36, point 1).

A user, or a tuner, changes a plan one decision at a time and sees what it costs:

- `Merge(kernels)`: the kernels become one;
- `Split(kernel, ops)`: `ops` (owned nodes of `kernel`) leave it for a kernel of their own;
  with no ops, the kernel falls back into one kernel per op;
- `Move(ops, into)`: owned nodes leave their kernels for kernel `into`;
- `Forbid(producer, consumer)`: the two nodes never share a kernel from now on (a kernel
  holding both is split: the consumer, and what in the kernel reads it, leave it);
- `Force(producer, consumer)`: the two nodes share a kernel (their kernels merge);
- `SplitKind(kind)`: every kernel of that kind falls back into one kernel per op.

Kernels are named as in the plan the edit applies to ("loop.3"); nodes by their graph names.
Each edit is checked before anything changes (`PlanEditor.apply` raises `EditRefused` with a
reason a user can act on, and the plan stays as it was): every node named exists and is where
the edit says; a library call (cuBLAS, cuDNN) stays alone; the new kernels form no cycle with
the others ("merge loop.3, input.7: the input kernel of ... makes a cycle through loop.5
(add.41)": the kernel between them, and the value of it the cycle reads); each is within the kernel caps (MAX_KERNEL_NODES computed
nodes; and for a merge or a move, MAX_KERNEL_PARAMETERS operands and outputs, unless the
kernels it joins had more already); its code is within the budget
(compiler/codegen/emission.py); and no forbidden pair ends up in one kernel.

Re-pricing is incremental: the kernels an edit touches (those it replaces, and any other whose
outputs change because a reader of its values moved) are built again and priced; every other
kernel keeps its figures, and the pricer's cache (by a kernel's structure) serves the kernels
whose shape it has priced before. A new kernel's kind is the kernel analysis's
(compiler/kernels/analysis.py): its owned nodes fall into parts joined by data flow, each
judged alone, and `combine_parts` says what they make together.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from compiler.errors import InputError
from compiler.fusion.attribution import explain
from compiler.fusion.pricing import ProjectedPricer
from compiler.ir.graph import Graph
from compiler.kernels.analysis import GraphFacts, analyse, combine_parts, independent_parts
from compiler.kernels.grouping import (FUSIBLE, LIBRARY, graph_output_sources, node_role,
                                       plumbing_sources, value_readers)
from compiler.kernels.plan import (LIBRARY_OPERAND_VIEWS, MAX_KERNEL_PARAMETERS, FusionPlan,
                                   Kernel, KernelCycle, KernelSpec, make_kernel,
                                   order_kernels, too_many_nodes)
from compiler.target.sol import SolModel

STRATEGY = "custom"


# -- the edits --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Merge:
    kernels: tuple[str, ...]

    def describe(self) -> str:
        return "merge " + ", ".join(self.kernels)


@dataclass(frozen=True)
class Split:
    kernel: str
    ops: tuple[str, ...] = ()      # none: back into one kernel per op

    def describe(self) -> str:
        what = ", ".join(self.ops) if self.ops else "its ops"
        return f"split {what} out of {self.kernel}"


@dataclass(frozen=True)
class Move:
    ops: tuple[str, ...]
    into: str

    def describe(self) -> str:
        return f"move {', '.join(self.ops)} into {self.into}"


@dataclass(frozen=True)
class Forbid:
    producer: str
    consumer: str

    def describe(self) -> str:
        return f"forbid fusing {self.producer} -> {self.consumer}"


@dataclass(frozen=True)
class Force:
    producer: str
    consumer: str

    def describe(self) -> str:
        return f"force fusing {self.producer} -> {self.consumer}"


@dataclass(frozen=True)
class SplitKind:
    kind: str

    def describe(self) -> str:
        return f"split every {self.kind} kernel into its ops"


# -- edits as JSON ------------------------------------------------------------------------------

# The JSON form of each edit (what the web app's what-if and the API take): its "op" and fields.
_EDIT_FIELDS = {"merge": (Merge, {"kernels": list}),
                "split": (Split, {"kernel": str, "ops": list}),
                "move": (Move, {"ops": list, "into": str}),
                "forbid": (Forbid, {"producer": str, "consumer": str}),
                "force": (Force, {"producer": str, "consumer": str}),
                "split_kind": (SplitKind, {"kind": str})}
_OPTIONAL = {("split", "ops")}


def edit_from_dict(data, where: str = "edit") -> object:
    """The edit a JSON object describes ({"op": "merge", "kernels": ["loop.3", "input.7"]},
    {"op": "split", "kernel": "loop.3", "ops": ["add.4"]}, {"op": "move", "ops": [...],
    "into": ...}, {"op": "forbid" | "force", "producer": ..., "consumer": ...},
    {"op": "split_kind", "kind": "loop"}); InputError naming `where` and what is wrong."""
    if not isinstance(data, dict) or data.get("op") not in _EDIT_FIELDS:
        raise InputError(f"{where}: an edit is an object whose \"op\" is one of "
                         f"{', '.join(_EDIT_FIELDS)}")
    kind, fields = _EDIT_FIELDS[data["op"]]
    values = {}
    for name, expected in fields.items():
        value = data.get(name)
        if value is None and (data["op"], name) in _OPTIONAL:
            continue
        if not isinstance(value, expected) or (expected is list and not all(
                isinstance(item, str) for item in value)):
            shape = "a list of names" if expected is list else "a name"
            raise InputError(f"{where}: \"{name}\" of a {data['op']} edit must be {shape}")
        values[name] = tuple(value) if expected is list else value
    return kind(**values)


def edit_to_dict(edit) -> dict:
    """The JSON object of an edit (`edit_from_dict`'s inverse)."""
    op = next(name for name, (kind, _) in _EDIT_FIELDS.items() if isinstance(edit, kind))
    return {"op": op, **{name: list(value) if isinstance(value, tuple) else value
                         for name, value in dataclasses.asdict(edit).items()}}


class EditRefused(InputError):
    """The edit would make an illegal plan or names what is not there; the message says why."""


@dataclass
class EditResult:
    """What one edit did: the plan after it, the kernels it replaced (as they were) and the
    ones that replaced them (priced), and the plan's total before and after."""

    edit: object
    plan: FusionPlan
    removed: list[Kernel]
    added: list[Kernel]
    before_us: float
    after_us: float

    @property
    def gain_us(self) -> float:
        return self.before_us - self.after_us

    def explanation(self) -> dict | None:
        """The edit's before and after by cause (launches, DRAM, on-chip traffic, compute,
        grid barriers, latency) under the plan's runtime: compiler/fusion/attribution.py's
        `explain` of the kernels it replaced against those that replaced them, as two plans
        are compared. Its `delta_us` is the change of the plan's total."""
        device, runtime = self.plan.device, self.plan.runtime

        def as_plan(kernels: list[Kernel]) -> dict:
            return {"kernels": [k.to_dict(device, runtime) for k in kernels]}
        return explain(as_plan(self.removed), as_plan(self.added), runtime)


# -- the editor -------------------------------------------------------------------------------


@dataclass
class _State:
    plan: FusionPlan
    forbidden: frozenset[tuple[str, str]] = frozenset()


@dataclass
class PlanEditor:
    """A plan under edit, with its history (undo, redo) and its pricer.

    `pricer`: the projected pricer of the graph on the plan's device and runtime (explore's,
    when the caller has it, so that the kernels it priced are not priced again)."""

    graph: Graph
    model: SolModel
    plan: FusionPlan
    pricer: ProjectedPricer | None = None
    forbidden: frozenset[tuple[str, str]] = frozenset()
    log: list[EditResult] = field(default_factory=list)
    _undone: list[tuple[_State, EditResult]] = field(default_factory=list)
    _history: list[_State] = field(default_factory=list)

    def __post_init__(self):
        if self.pricer is None:
            self.pricer = ProjectedPricer(self.graph, self.model, self.plan.runtime)
        self.facts = GraphFacts.of(self.graph)
        self.roles = {node.name: node_role(node) for node in self.graph}
        for kernel in self.plan.kernels:
            if kernel.projected is None:
                self._price(kernel, check=False)

    # -- history ------------------------------------------------------------------------------

    def apply(self, edit) -> EditResult:
        """Apply one edit (module docstring); EditRefused leaves everything as it was."""
        before = _State(self.plan, self.forbidden)
        try:
            plan, removed, added, forbidden = self._edited(edit)
        except EditRefused as refusal:
            describe = getattr(edit, "describe", None)
            raise EditRefused(f"{describe()}: {refusal}" if describe else str(refusal)) from None
        result = EditResult(edit, plan, removed, added, _total(self.plan), _total(plan))
        self._history.append(before)
        self._undone.clear()
        self.plan, self.forbidden = plan, forbidden
        self.log.append(result)
        return result

    def edited(self, edit, plan: FusionPlan | None = None) -> FusionPlan:
        """The plan `edit` makes of `plan` (by default the editor's), checked and priced as
        `apply` does, without applying it: the editor's plan and history stay as they were
        (a tuner tries many edits of many plans). EditRefused as `apply`."""
        return self.tried(edit, plan)[0]

    def tried(self, edit, plan: FusionPlan | None = None
              ) -> tuple[FusionPlan, list[Kernel], list[Kernel]]:
        """`edited`'s plan with the kernels the edit replaced and the ones it made."""
        kept = self.plan
        self.plan = plan if plan is not None else kept
        try:
            edited, replaced, made, _ = self._edited(edit)
            return edited, replaced, made
        except EditRefused as refusal:
            describe = getattr(edit, "describe", None)
            raise EditRefused(f"{describe()}: {refusal}" if describe else str(refusal)) from None
        finally:
            self.plan = kept

    def undo(self) -> FusionPlan:
        if not self._history:
            raise EditRefused("nothing to undo")
        state = self._history.pop()
        self._undone.append((_State(self.plan, self.forbidden), self.log.pop()))
        self.plan, self.forbidden = state.plan, state.forbidden
        return self.plan

    def redo(self) -> FusionPlan:
        if not self._undone:
            raise EditRefused("nothing to redo")
        state, result = self._undone.pop()
        self._history.append(_State(self.plan, self.forbidden))
        self.log.append(result)
        self.plan, self.forbidden = state.plan, state.forbidden
        return self.plan

    def regroup(self, owned: list[set[str]], recomputed: list[list[str]],
                kinds: list[tuple[str, str | None, str | None]] | None = None) -> FusionPlan:
        """The plan whose kernels own `owned` and recompute `recomputed` (a plan file's), in
        place of every kernel of this one, built, checked and priced as an edit's kernels
        are (but for the operand budget: the kernels are the user's); not recorded as an
        edit. `kinds`: each kernel's (kind, dominant node, XLA:GPU name) as a strategy
        decided them (a stored plan's), kept instead of the kernel analysis's verdict, so
        that the plan is priced as its strategy priced it."""
        plan, *_ = self._rebuilt(list(self.plan.kernels), owned, self.forbidden, recomputed,
                                 kinds=kinds)
        return plan

    # -- one edit -----------------------------------------------------------------------------

    def _edited(self, edit):
        """(plan, replaced kernels, new kernels, forbidden pairs) after `edit`."""
        kernels = {k.name: k for k in self.plan.kernels}
        owner = self.plan.owner()
        forbidden = self.forbidden
        if isinstance(edit, Merge):
            chosen = [self._kernel(kernels, name) for name in dict.fromkeys(edit.kernels)]
            if len(chosen) < 2:
                raise EditRefused("a merge needs two kernels or more")
            replaced, pieces = chosen, [set().union(*(set(c.nodes) for c in chosen))]
        elif isinstance(edit, Split):
            kernel = self._kernel(kernels, edit.kernel)
            self._check_owned(edit.ops, kernel, owner)
            replaced = [kernel]
            if edit.ops:
                rest = set(kernel.nodes) - set(edit.ops)
                if not rest:
                    raise EditRefused(f"splitting every op out of {kernel.name} leaves it as "
                                      f"it is: name fewer ops, or none to split it into its ops")
                pieces = [rest, set(edit.ops)]
            else:
                pieces = [{name} for name in kernel.nodes]
        elif isinstance(edit, SplitKind):
            replaced = [k for k in self.plan.kernels if k.kind == edit.kind]
            if not replaced:
                raise EditRefused(f"the plan has no {edit.kind} kernel")
            pieces = [{name} for k in replaced for name in k.nodes]
        elif isinstance(edit, Move):
            into = self._kernel(kernels, edit.into)
            for op in edit.ops:
                if op not in self.graph.nodes:
                    raise EditRefused(f"no node named {op} in the graph")
                if op not in owner:
                    raise EditRefused(f"{op} is owned by no kernel (a view its readers "
                                      f"recompute): move the ops that read it")
            sources = {owner[op] for op in edit.ops} - {into.name}
            replaced = [into] + [kernels[name] for name in sorted(sources)]
            moved = set(edit.ops)
            pieces = [set(into.nodes) | moved] + [set(kernels[name].nodes) - moved
                                                  for name in sorted(sources)]
            pieces = [piece for piece in pieces if piece]
        elif isinstance(edit, Force):
            ends = self._pair(edit, owner)
            if owner[ends[0]] == owner[ends[1]]:
                raise EditRefused(f"{ends[0]} and {ends[1]} are in one kernel already "
                                  f"({owner[ends[0]]})")
            replaced = [kernels[owner[ends[0]]], kernels[owner[ends[1]]]]
            pieces = [set(replaced[0].nodes) | set(replaced[1].nodes)]
        elif isinstance(edit, Forbid):
            producer, consumer = self._pair(edit, owner)
            forbidden = forbidden | {(producer, consumer)}
            if owner[producer] != owner[consumer]:
                return self._rebuilt([], [], forbidden)  # nothing to split
            kernel = kernels[owner[producer]]
            leaving = self._downstream(kernel, consumer)
            if producer in leaving:
                raise EditRefused(f"{producer} reads {consumer} in {kernel.name}: they cannot "
                                  f"be parted by a split")
            replaced = [kernel]
            pieces = [set(kernel.nodes) - leaving, leaving]
        else:
            raise EditRefused(f"unknown edit {edit!r}")
        if any(k.kind == "library" for k in replaced) and not isinstance(edit, Forbid):
            library = next(k for k in replaced if k.kind == "library")
            if not (isinstance(edit, (Split, SplitKind)) and len(library.nodes) == 1):
                raise EditRefused(f"{library.name} is a library call ({library.nodes[0]}): it "
                                  f"runs alone, in no kernel with other ops")
            replaced = [k for k in replaced if k.kind != "library"]
            pieces = [p for p in pieces if not (p <= set(library.nodes))]
            if not replaced:
                raise EditRefused(f"{library.name} is one library call: nothing to split")
        for a, b in forbidden:
            for piece in pieces:
                if a in piece and b in piece:
                    raise EditRefused(f"fusing {a} -> {b} is forbidden (an earlier edit): "
                                      f"undo that edit first")
        return self._rebuilt(replaced, pieces, forbidden,
                             grows=isinstance(edit, (Merge, Move, Force)))

    def _rebuilt(self, replaced: list[Kernel], pieces: list[set[str]], forbidden,
                 recomputed: list[list[str]] | None = None, grows: bool = False,
                 kinds: list[tuple[str, str | None, str | None]] | None = None):
        """The plan with `replaced` kernels swapped for kernels owning `pieces`, checked; the
        new kernels recompute what they read of what the replaced kernels recomputed and of
        what no kernel owns, or, given `recomputed`, those lists (a plan file's)."""
        graph, position = self.graph, self.facts.position
        gone = {k.name for k in replaced}
        kept = [k for k in self.plan.kernels if k.name not in gone]
        recomputable = set().union(*(set(k.recomputed) for k in replaced))
        owned_anywhere = {n for k in kept for n in k.nodes}.union(*pieces)
        specs = []
        for index, piece in enumerate(pieces):
            nodes = sorted(piece, key=position.__getitem__)
            again = (self._recomputed(nodes, recomputable, owned_anywhere) if recomputed is None
                     else sorted(recomputed[index], key=position.__getitem__))
            kind = kinds[index] if kinds is not None else None
            if kind is not None and kind[0] != "library" and kind[1] in piece:
                specs.append(KernelSpec(nodes, kind[0], again, kind[1], kind[2]))
            else:
                specs.append(self._spec(nodes, again, derive=recomputed is None))
        written = self._written(kept, replaced, specs)
        # A kept kernel whose outputs change (a reader of its value moved into a kernel that
        # does not compute it) is built again too.
        rebuilt = [k for k in kept if tuple(n for n in k.nodes if n in written) != k.outputs]
        kept = [k for k in kept if k not in rebuilt]
        specs += [KernelSpec(list(k.nodes), k.kind, list(k.recomputed), k.dominant, k.xla_name)
                  for k in rebuilt]
        new = [make_kernel(graph, spec, [n for n in spec.nodes if n in written], self.model,
                           position) for spec in specs]
        # The operand budget holds for what an edit grows (`grows`: a merge, a move): no new
        # kernel passes it by more than the kernels it replaces already did (the strategies
        # count operands each their own way, as they merge, and their plans may pass it). A
        # split may add outputs to its pieces, which stay within what CUDA passes; a plan
        # file's kernels are the user's: for both, only the node cap holds.
        ceiling = max([MAX_KERNEL_PARAMETERS] + [self._parameters(k) for k in replaced]) \
            if grows else None
        for kernel in new:
            self._check(kernel, ceiling)
        ordered = self._ordered(kept, new)
        names = {}
        kernels = []
        for index, kernel in enumerate(ordered):
            copy = dataclasses.replace(kernel, name=f"{kernel.kind}.{index}")
            names[id(kernel)] = copy
            kernels.append(copy)
        for kernel in new:
            self._price(names[id(kernel)])
        plan = dataclasses.replace(self.plan, strategy=STRATEGY, kernels=kernels,
                                   decisions=list(self.plan.decisions))
        return plan, replaced + rebuilt, [names[id(k)] for k in new], forbidden

    def _written(self, kept: list[Kernel], replaced: list[Kernel],
                 specs: list[KernelSpec]) -> set[str]:
        """The values kernels write after the edit (`written_values`' rule), worked out again
        only for the values whose readers the edit regrouped: those the replaced and the new
        kernels read, and those the new kernels own. Every other value keeps its status."""
        graph = self.graph
        readers = graph.analysis_cache("edits.value_readers", lambda: value_readers(graph))
        memo = graph.analysis_cache("edits.plumbing_sources")
        outputs = graph_output_sources(graph)
        regrouped = [set(k.computed) for k in replaced] + [set(s.nodes) | set(s.recomputed)
                                                         for s in specs]
        asked = {n for spec in specs for n in spec.nodes}
        for names in regrouped:
            for name in names:
                for operand in graph.nodes[name].operands:
                    asked.update(plumbing_sources(graph, operand, memo))
        computed = [set(k.computed) for k in kept] + regrouped[len(replaced):]
        needed = {reader for value in asked for reader in readers[value]}
        computed_in: dict[str, list[int]] = {}
        for index, names in enumerate(computed):
            for name in names & needed:
                computed_in.setdefault(name, []).append(index)
        written = {n for k in kept for n in k.outputs if n not in asked}
        for value in asked:
            if value in outputs or any(value not in computed[k] for reader in readers[value]
                                       for k in computed_in.get(reader, ())):
                written.add(value)
        return written

    # -- the pieces of a rebuilt kernel -------------------------------------------------------

    def _recomputed(self, nodes: list[str], recomputable: set[str],
                    owned: set[str]) -> list[str]:
        """The cheap nodes a kernel owning `nodes` computes again: those it reads (through
        chains of them) that the kernels it came from recomputed, or that no kernel owns."""
        inside, found = set(nodes), set()
        stack = [o for n in nodes for o in self.graph.nodes[n].operands]
        while stack:
            name = stack.pop()
            if name in inside or name in found or self.roles[name] != FUSIBLE:
                continue
            if name in recomputable or name not in owned:
                found.add(name)
                stack.extend(self.graph.nodes[name].operands)
        return sorted(found, key=self.facts.position.__getitem__)

    def _spec(self, nodes: list[str], recomputed: list[str], derive: bool = True) -> KernelSpec:
        """A kernel's spec with its kind and dominant node from the kernel analysis (a library
        call keeps, of derived recomputed nodes, only the views it reads as they are)."""
        if len(nodes) == 1 and self.roles[nodes[0]] == LIBRARY:
            views = [n for n in recomputed if not derive
                     or self.graph.nodes[n].op in LIBRARY_OPERAND_VIEWS]
            return KernelSpec(nodes, "library", views, dominant=nodes[0])
        for name in nodes:
            if self.roles[name] == LIBRARY:
                raise EditRefused(f"{name} is a library call: it runs alone, in no kernel "
                                  f"with other ops")
        parts = [set(owned) | set(again)
                 for owned, again in independent_parts(self.graph, nodes, recomputed)]
        verdicts = [analyse(self.graph, part, self.model.device, moved_rows_local=False)
                    for part in parts]
        elements = self.facts.elements
        works = [max(elements[n] for n in part) for part in parts]
        kind, _ = combine_parts(verdicts, works)
        reductions = [verdict.dominant for verdict in verdicts if verdict.dominant]
        if reductions:
            dominant = self.facts.dominant_reduction(reductions)
        else:
            position = self.facts.position
            dominant = max(nodes, key=lambda n: (elements[n], -position[n]))
        return KernelSpec(nodes, kind, recomputed, dominant)

    # -- checks -------------------------------------------------------------------------------

    def _check(self, kernel: Kernel, ceiling: int | None) -> None:
        if kernel.kind == "library":
            return
        what = self._what(kernel)
        too_large = too_many_nodes(len(kernel.computed))
        if too_large:
            raise EditRefused(f"{what} would compute {too_large}")
        parameters = self._parameters(kernel)
        if ceiling is not None and parameters > ceiling:
            raise EditRefused(f"{what} would have {parameters} operands and outputs, over "
                              f"{MAX_KERNEL_PARAMETERS} (XLA's fusion budget)")

    def _parameters(self, kernel: Kernel) -> int:
        """A kernel's operands and outputs as the cost search counts them: a one-element
        constant is folded into the code, not passed."""
        nodes, elements = self.graph.nodes, self.facts.elements
        return len(kernel.outputs) + sum(1 for v in kernel.inputs
                                         if not (nodes[v].op == "constant" and elements[v] == 1))

    def _what(self, kernel: Kernel) -> str:
        nodes = ", ".join(kernel.nodes[:3]) + (f" (+{len(kernel.nodes) - 3})"
                                               if len(kernel.nodes) > 3 else "")
        return f"the {kernel.kind} kernel of {nodes}"

    def _ordered(self, kept: list[Kernel], new: list[Kernel]) -> list[Kernel]:
        """All kernels, producers first (graph order among the independent); EditRefused
        naming a kernel and a node on the cycle when there is one."""
        kernels = kept + new
        owner = {n: i for i, k in enumerate(kernels) for n in k.nodes}
        position = self.facts.position
        first = [min(position[n] for n in k.nodes) for k in kernels]
        try:
            return order_kernels(self.graph, kernels, owner, first.__getitem__)
        except KernelCycle as cycle:
            raise EditRefused(self._cycle(kernels, cycle.producers, cycle.cycle,
                                          len(kept))) from None

    def _cycle(self, kernels, producers, cycle: list[int], first_new: int) -> str:
        """The refusal of a cycle: a new kernel on it, and the kernel it passes through (one
        the edit kept, when there is one), with the node of it that the cycle reaches."""
        new = [i for i in cycle if i >= first_new]
        start = new[0] if new else cycle[0]
        others = [i for i in cycle if i != start]
        through = next((i for i in others if i < first_new), others[0] if others else start)
        # Each kernel on the cycle reads from the next one (its producer): the one before
        # `through` reads this value of it.
        reader = cycle[(cycle.index(through) - 1) % len(cycle)]
        value = producers[reader].get(through) or kernels[through].nodes[0]
        name = kernels[through].name if through < first_new else self._what(kernels[through])
        return f"{self._what(kernels[start])} makes a cycle through {name} ({value})"

    def _kernel(self, kernels: dict[str, Kernel], name: str) -> Kernel:
        if name not in kernels:
            raise EditRefused(f"no kernel named {name} in the plan")
        return kernels[name]

    def _check_owned(self, ops, kernel: Kernel, owner: dict[str, str]) -> None:
        for op in ops:
            if op not in self.graph.nodes:
                raise EditRefused(f"no node named {op} in the graph")
            if owner.get(op) != kernel.name:
                where = owner.get(op)
                raise EditRefused(f"{op} is not owned by {kernel.name}"
                                  + (f" but by {where}" if where else " (nor by any kernel)"))

    def _pair(self, edit, owner: dict[str, str]) -> tuple[str, str]:
        for name in (edit.producer, edit.consumer):
            if name not in self.graph.nodes:
                raise EditRefused(f"no node named {name} in the graph")
            if name not in owner:
                raise EditRefused(f"{name} is owned by no kernel (a view or a leaf): name the "
                                  f"ops around it")
        if edit.producer not in self._reads(edit.consumer, owner):
            raise EditRefused(f"{edit.consumer} does not read {edit.producer}: no edge to "
                              f"fuse across")
        return edit.producer, edit.consumer

    def _reads(self, name: str, owner: dict[str, str]) -> set[str]:
        """The owned values `name` reads: its operands, looking through what no kernel owns
        (plumbing, and views its kernel recomputes)."""
        found, seen, stack = set(), set(), list(self.graph.nodes[name].operands)
        while stack:
            operand = stack.pop()
            if operand in seen:
                continue
            seen.add(operand)
            if operand in owner:
                found.add(operand)
            else:
                stack.extend(self.graph.nodes[operand].operands)
        return found

    def _downstream(self, kernel: Kernel, start: str) -> set[str]:
        """`start` and the owned nodes of `kernel` that read it, directly or through others."""
        inside = set(kernel.computed)
        users = self.facts.users
        found, stack = set(), [start]
        while stack:
            name = stack.pop()
            if name in found:
                continue
            found.add(name)
            stack.extend(u for u in users[name] if u in inside)
        return found & set(kernel.nodes)

    def _price(self, kernel: Kernel, check: bool = True) -> None:
        """Set the kernel's projection; EditRefused (with `check`) when its code would pass
        the budget. A kernel of ops the code generator cannot emit yet (4-bit integers, say)
        stays unprojected, as the strategies leave it."""
        price = self.pricer.plan_kernel(kernel)
        if check and price.refusal:
            raise EditRefused(f"{self._what(kernel)} is not a legal kernel: {price.refusal}")
        kernel.projected = price.breakdown
        kernel.schedule = price.plan.schedule if price.plan is not None else None


def _total(plan: FusionPlan) -> float:
    """The plan's projected total under its runtime (every kernel has its projection)."""
    totals = plan.projected_totals()
    return totals["proj_us"] if totals is not None else float("nan")
