"""A fusion autotuner (issue 37): search fusion plans on the CPU with a cost model, as Kaufman et
al. (MLSys'21, "A Learned Performance Model for Tensor Processing Units", section 6) use their
learned model: score many plans on the host, then spend the GPU's time on the few best.

The search starts from every strategy's plan and moves with plan edits (compiler/fusion/
edits.py): merge a kernel with one that reads it, move an op of a reader into the kernel it
reads from, split an op out of its kernel, split a kernel into its ops. Each candidate plan is
scored with one model (`Scorer`): the sum of its kernels' times under the plan's runtime
(device work plus launch term, compiler/target/launch.py), the device work being

- `projected`: the projected model's (compiler/cost/projected.py), as the cost strategy prices;
- `sol`: the kernel's speed of light;
- `learned`: the learned model's prediction (compiler/cost/learned/predict.py) less what a lone
  launch adds; a kernel it cannot describe (a library call) keeps its projected time.

Scoring is incremental: a kernel is priced once per structure (its kind, owned and recomputed
nodes), so a move pays only for the kernels it makes, and the editor re-plans only those.

Two searches (`SEARCHES`), compared on the model zoo by benchmarks/autotune.py:

- `beam`: keep the `width` best distinct plans; each round, draw `moves` moves from each and
  keep the best `width` of parents and children;
- `anneal`: one chain from the best start, simulated annealing whose temperature falls from
  0.5 % of the start's score to 1/1000 of that over the evaluation budget.

Both are deterministic for a seed: moves are drawn from a seeded generator over plans in a fixed
order, and with an evaluation budget (`max_evaluations`) the same run gives the same plans
anywhere; a time budget (`budget_s`) cuts the same sequence short wherever the clock says.

What to measure (`TuneResult.measure`): the paper's "CPU first, then minutes on hardware" spends
the GPU on the model's best plans, and here also on the plans where the models disagree most
(the learned model against the projected one, or the projected against SOL without a learned
model): a plan the models rank very differently is where a measurement teaches the most.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from compiler.errors import InputError
from compiler.fusion.edits import EditRefused, Merge, Move, PlanEditor, Split
from compiler.ir.graph import Graph
from compiler.kernels.plan import Decision, FusionPlan, Kernel
from compiler.target.devices import get_device
from compiler.target.launch import device_work_of_alone, terms_for
from compiler.target.sol import SolModel

MODELS = ("projected", "learned", "sol")
SEARCHES = ("beam", "anneal")
STRATEGY = "tuned"
# Without a budget of evaluations, annealing cools over this many (a time budget may stop it
# sooner: the temperature schedule stays the same, so the run is the same up to where it stops).
DEFAULT_HORIZON = 4000
# Annealing starts again from one of the best plans after this many refused moves in a row.
RESTART_AFTER = 40
# The share of moves of each kind (merge, move an op up, split an op out, split into ops).
MOVE_WEIGHTS = (("merge", 0.45), ("move", 0.25), ("split-op", 0.2), ("split", 0.1))


# -- scoring ----------------------------------------------------------------------------------


class Scorer:
    """A plan's total under one model (module docstring), each kernel priced once per
    structure. `predictor`: the learned model (LearnedPredictor) for `learned`."""

    def __init__(self, graph: Graph, device: str, runtime: str, model: str, predictor=None):
        if model not in MODELS:
            raise InputError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
        if model == "learned" and predictor is None:
            raise InputError("the learned model needs a model file (--learned-model)")
        self.graph, self.device, self.runtime, self.model = graph, device, runtime, model
        self.predictor = predictor
        self.launch = terms_for(device).launch(runtime)
        self.device_us: dict[tuple, float] = {}

    @staticmethod
    def key(kernel: Kernel) -> tuple:
        return (kernel.kind, kernel.nodes, kernel.recomputed)

    def score(self, plan: FusionPlan) -> float:
        """The plan's total in µs under this scorer's model."""
        self._price([k for k in plan.kernels if self.key(k) not in self.device_us])
        return sum(self.launch.kernel_us(self.device_us[self.key(k)]) for k in plan.kernels)

    def _price(self, kernels: list[Kernel]) -> None:
        kernels = list({self.key(k): k for k in kernels}.values())
        if not kernels:
            return
        learned = [None] * len(kernels)
        if self.model == "learned":
            batch = FusionPlan(STRATEGY, self.device, kernels, [], runtime=self.runtime)
            learned = self.predictor.predict_plan(self.graph, batch)
        for kernel, predicted in zip(kernels, learned):
            projected = kernel.projected.projected_us if kernel.projected is not None \
                else kernel.sol.total_us
            if self.model == "sol":
                work = kernel.sol.total_us
            elif predicted is not None:
                work = device_work_of_alone(self.device, predicted)
            else:
                work = projected
            self.device_us[self.key(kernel)] = work


# -- moves ------------------------------------------------------------------------------------


def draw_moves(graph: Graph, plan: FusionPlan, rng: random.Random, count: int) -> list:
    """Up to `count` distinct edits of `plan`, drawn by MOVE_WEIGHTS from its kernels (library
    calls take part in none): the same list for the same plan and generator state."""
    generated = [k for k in plan.kernels if k.kind != "library"]
    if not generated:
        return []
    writer = {value: k for k in generated for value in k.outputs}
    readers: dict[str, list[Kernel]] = {k.name: [] for k in generated}
    for kernel in generated:
        for producer in dict.fromkeys(writer[v].name for v in kernel.inputs if v in writer):
            if producer != kernel.name:
                readers[producer].append(kernel)
    kinds, weights = zip(*MOVE_WEIGHTS)
    found: dict[str, object] = {}
    for _ in range(count * 4):
        if len(found) >= count:
            break
        kind = rng.choices(kinds, weights)[0]
        kernel = rng.choice(generated)
        edit = None
        if kind == "merge" and readers[kernel.name]:
            edit = Merge((kernel.name, rng.choice(readers[kernel.name]).name))
        elif kind == "move" and readers[kernel.name]:
            reader = rng.choice(readers[kernel.name])
            # An op of the reader that reads this kernel's output directly.
            ops = [n for n in reader.nodes
                   if set(graph.nodes[n].operands) & set(kernel.outputs)]
            if ops and len(reader.nodes) > 1:
                edit = Move((rng.choice(ops),), kernel.name)
        elif kind == "split-op" and len(kernel.nodes) > 1:
            edit = Split(kernel.name, (rng.choice((kernel.nodes[0], kernel.nodes[-1])),))
        elif kind == "split" and len(kernel.nodes) > 1:
            edit = Split(kernel.name)
        if edit is not None:
            found.setdefault(edit.describe(), edit)
    return list(found.values())


# -- the search -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TunerMove:
    """One move of a search's chain: the edit, the gain the model predicted for it, and the
    kernels it took away and made (each as its sorted nodes), which a measurement of plans
    holding both can price (compiler/stages/tune.py `measured_tuning`)."""
    edit: str
    gain_us: float
    before: tuple[tuple[str, ...], ...]
    after: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict:
        return {"edit": self.edit, "gain_us": round(self.gain_us, 4),
                "before": [list(nodes) for nodes in self.before],
                "after": [list(nodes) for nodes in self.after]}


def groups(kernels: list[Kernel]) -> tuple[tuple[str, ...], ...]:
    """Kernels as their sorted nodes, in a stable order."""
    return tuple(sorted(tuple(sorted(k.nodes)) for k in kernels))


@dataclass
class Candidate:
    score: float
    plan: FusionPlan
    start: str                                   # the strategy it was reached from
    moves: tuple[TunerMove, ...] = ()

    @property
    def signature(self) -> frozenset:
        return frozenset(frozenset(k.nodes) for k in self.plan.kernels)


@dataclass
class TuneResult:
    model: str
    search: str
    seed: int
    device: str
    runtime: str
    starts: dict[str, float]                     # strategy -> its plan's score
    top: list[Candidate]                         # the best distinct plans, best first
    history: list[tuple[int, float, float]]      # (evaluations, seconds, best score so far)
    evaluations: int = 0
    refused: int = 0
    seconds: float = 0.0
    totals: list[dict] = field(default_factory=list)   # per top plan: each model's total
    measure: list[dict] = field(default_factory=list)  # which top plans to measure, and why

    @property
    def best(self) -> Candidate:
        return self.top[0]

    @property
    def first_improvement_s(self) -> float | None:
        baseline = min(self.starts.values())
        return next((seconds for _, seconds, best in self.history if best < baseline - 1e-9),
                    None)

    def tuned_plan(self) -> FusionPlan:
        """The best plan as the strategy `tuned`: its decisions are its moves, each with the
        gain the model predicted for it."""
        best = self.best
        decisions = [Decision("edit", move.edit, f"{self.model}: predicted gain "
                                                 f"{move.gain_us:+.3f} µs (from {best.start})",
                              move.gain_us, move.before, move.after)
                     for move in best.moves]
        return dataclasses.replace(best.plan, strategy=STRATEGY, decisions=decisions,
                                   cost_model=self.model)

    def to_dict(self) -> dict:
        baseline = min(self.starts.values())
        return {
            "model": self.model, "search": self.search, "seed": self.seed,
            "device": self.device, "runtime": self.runtime,
            "starts": {name: round(score, 4) for name, score in self.starts.items()},
            "best": {"score_us": round(self.best.score, 4), "start": self.best.start,
                     "gain_us": round(baseline - self.best.score, 4),
                     "kernels": len(self.best.plan.kernels),
                     "moves": [move.to_dict() for move in self.best.moves]},
            "top": [{"rank": rank, "score_us": round(c.score, 4), "start": c.start,
                     "kernels": len(c.plan.kernels), "moves": len(c.moves),
                     "plan_id": plan_id(c), **totals}
                    for rank, (c, totals) in enumerate(zip(self.top, self.totals), 1)],
            "measure": self.measure,
            "history": [[evals, round(seconds, 3), round(best, 4)]
                        for evals, seconds, best in self.history],
            "evaluations": self.evaluations, "refused": self.refused,
            "seconds": round(self.seconds, 3),
            "ms_per_evaluation": round(1e3 * self.seconds / max(1, self.evaluations), 3),
            "first_improvement_s": (None if self.first_improvement_s is None
                                    else round(self.first_improvement_s, 3)),
        }


def plan_id(candidate: Candidate) -> str:
    """A short name of a plan's grouping, the same wherever it is reached from."""
    text = "|".join(sorted(",".join(sorted(group)) for group in candidate.signature))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class Budget:
    """When the search stops: after `seconds` of wall time or `evaluations` plans scored,
    whichever comes first (at least one of them)."""
    seconds: float | None = None
    evaluations: int | None = None

    def __post_init__(self):
        if self.seconds is None and self.evaluations is None:
            raise InputError("give the search a budget: seconds, evaluations or both")
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def spent(self, evaluations: int) -> bool:
        return ((self.evaluations is not None and evaluations >= self.evaluations)
                or (self.seconds is not None and self.elapsed() >= self.seconds))


def autotune(graph: Graph, starts: dict[str, FusionPlan], model: str = "projected",
             search: str = "beam", budget: Budget | None = None, seed: int = 0,
             top_k: int = 5, predictor=None, width: int = 8, moves: int = 12,
             progress: Callable[[int, float], None] | None = None) -> TuneResult:
    """Search plans from `starts` (strategy -> plan, all for one device and runtime) with
    `model` (module docstring); the `top_k` best distinct plans found, each model's totals
    for them, and which to measure. `progress(evaluations, best)` is told as it goes."""
    if search not in SEARCHES:
        raise InputError(f"unknown search {search!r}; choose from {', '.join(SEARCHES)}")
    plans = {name: plan for name, plan in starts.items()
             if plan.unavailable is None and plan.kernels}
    if not plans:
        raise InputError("no plan to start from")
    first = next(iter(plans.values()))
    device, runtime = first.device, first.runtime
    budget = budget or Budget(evaluations=DEFAULT_HORIZON)
    scorer = Scorer(graph, device, runtime, model, predictor)
    editor = PlanEditor(graph, SolModel(graph, get_device(device)),
                        dataclasses.replace(first, kernels=[]))
    state = _Search(scorer, editor, budget, random.Random(seed), top_k, progress)
    for name, plan in plans.items():
        state.offer(Candidate(scorer.score(plan), plan, name), counted=False)
    state.history.append((0, 0.0, state.best_score))
    if search == "beam":
        state.beam(width, moves)
    else:
        state.anneal()
    result = TuneResult(model, search, seed, device, runtime,
                        {name: c.score for name, c in state.starts.items()},
                        state.ranked(), state.history, state.evaluations, state.refused,
                        budget.elapsed())
    _judge(result, graph, scorer, predictor)
    return result


class _Search:
    """The search's state: the scorer, the editor that makes moves, every distinct plan seen
    with its best score, the history of the best score."""

    def __init__(self, scorer: Scorer, editor: PlanEditor, budget: Budget, rng: random.Random,
                 top_k: int, progress):
        self.scorer, self.editor, self.budget, self.rng = scorer, editor, budget, rng
        self.top_k, self.progress = top_k, progress
        self.seen: dict[frozenset, Candidate] = {}
        self.starts: dict[str, Candidate] = {}
        self.history: list[tuple[int, float, float]] = []
        self.evaluations = self.refused = 0
        self.best_score = math.inf

    def offer(self, candidate: Candidate, counted: bool = True) -> None:
        if not counted:
            self.starts[candidate.start] = candidate
        known = self.seen.get(candidate.signature)
        if known is None or candidate.score < known.score - 1e-9:
            self.seen[candidate.signature] = candidate
        if candidate.score < self.best_score - 1e-9:
            self.best_score = candidate.score
            if counted:
                self.history.append((self.evaluations, self.budget.elapsed(), candidate.score))

    def ranked(self) -> list[Candidate]:
        return sorted(self.seen.values(), key=lambda c: (c.score, plan_id(c)))[:self.top_k]

    def step(self, parent: Candidate, edit) -> Candidate | None:
        """The plan `edit` makes of `parent`, scored (None when the editor refuses it)."""
        try:
            plan, replaced, made = self.editor.tried(edit, parent.plan)
        except EditRefused:
            self.refused += 1
            return None
        self.evaluations += 1
        score = self.scorer.score(plan)
        move = TunerMove(edit.describe(), parent.score - score, groups(replaced), groups(made))
        child = Candidate(score, plan, parent.start, parent.moves + (move,))
        self.offer(child)
        if self.progress and self.evaluations % 50 == 0:
            self.progress(self.evaluations, self.best_score)
        return child

    def beam(self, width: int, moves: int) -> None:
        beam = sorted(self.starts.values(), key=lambda c: c.score)[:width]
        while not self.budget.spent(self.evaluations):
            children = []
            for parent in beam:
                for edit in draw_moves(self.editor.graph, parent.plan, self.rng, moves):
                    if self.budget.spent(self.evaluations):
                        break
                    child = self.step(parent, edit)
                    if child is not None:
                        children.append(child)
            if not children:
                break
            pool: dict[frozenset, Candidate] = {}
            for candidate in sorted(beam + children, key=lambda c: c.score):
                pool.setdefault(candidate.signature, candidate)
            beam = list(pool.values())[:width]

    def anneal(self) -> None:
        current = min(self.starts.values(), key=lambda c: c.score)
        horizon = self.budget.evaluations or DEFAULT_HORIZON
        hot = 0.005 * current.score
        stuck = attempts = 0
        while not self.budget.spent(self.evaluations) and attempts < 20 * horizon:
            attempts += 1
            edits = draw_moves(self.editor.graph, current.plan, self.rng, 1)
            child = self.step(current, edits[0]) if edits else None
            if child is None:
                stuck += 1
                if stuck >= RESTART_AFTER:      # a plan with few legal moves: start again
                    current = self.restart()
                    stuck = 0
                continue
            stuck = 0
            temperature = hot * (1e-3 ** min(1.0, self.evaluations / horizon))
            worse = child.score - current.score
            if worse <= 0 or self.rng.random() < math.exp(-worse / max(temperature, 1e-12)):
                current = child

    def restart(self) -> Candidate:
        """Where a stuck chain starts again: one of the best plans seen or a start."""
        pool = self.ranked() + sorted(self.starts.values(), key=lambda c: c.score)
        return self.rng.choice(pool)


def _judge(result: TuneResult, graph: Graph, scorer: Scorer, predictor) -> None:
    """Each model's total for the top plans, the spread between the models, and which plans
    to measure: the best ones, and those where the models disagree most."""
    scorers = {scorer.model: scorer}
    for model in MODELS:
        if model not in scorers and (model != "learned" or predictor is not None):
            scorers[model] = Scorer(graph, result.device, result.runtime, model, predictor)
    for candidate in result.top:
        totals = {f"{model}_us": round(s.score(candidate.plan), 4)
                  for model, s in scorers.items()}
        pair = ("learned_us", "projected_us") if "learned_us" in totals \
            else ("projected_us", "sol_us")
        a, b = totals[pair[0]], totals[pair[1]]
        totals["disagreement"] = round(abs(a - b) / max(min(a, b), 1e-9), 4)
        totals["disagreement_between"] = f"{pair[0][:-3]} and {pair[1][:-3]}"
        result.totals.append(totals)


def choose_to_measure(result: TuneResult, count: int) -> list[dict]:
    """The top plans worth measuring, at most `count` (`measure_choices`), kept on the
    result."""
    result.measure = measure_choices(result.totals, result.model, count)
    return result.measure


def measure_choices(totals: list[dict], model: str, count: int) -> list[dict]:
    """Of the top plans (best first, each with its "disagreement" and
    "disagreement_between"), those worth measuring, at most `count`: the best by the tuner's
    model first (two thirds, at least one), then those where the models disagree most
    (module docstring); each {"rank", "why"}."""
    count = min(count, len(totals))
    best = max(1, math.ceil(2 * count / 3)) if count else 0
    chosen = [{"rank": rank, "why": f"among the {best} best by the {model} model"}
              for rank in range(1, best + 1)]
    rest = sorted(range(best, len(totals)),
                  key=lambda i: (-totals[i]["disagreement"], i))[:count - best]
    chosen += [{"rank": i + 1, "why": f"the {totals[i]['disagreement_between']} models "
                                      f"disagree by {100 * totals[i]['disagreement']:.1f} %"}
               for i in rest]
    return chosen


def format_tuning(result: dict) -> str:
    """The text form of `TuneResult.to_dict()`: what `python -m compiler autotune` prints."""
    best = result["best"]
    lines = [f"autotune on {result['device']} ({result['runtime']} launches), model "
             f"{result['model']}, {result['search']} search, seed {result['seed']}: "
             f"{result['evaluations']} plans scored ({result['refused']} moves refused) in "
             f"{result['seconds']:.1f} s, {result['ms_per_evaluation']:.2f} ms each",
             "start plans (µs under the model): " + ", ".join(
                 f"{name} {score:,.3f}" for name, score in result["starts"].items()),
             f"best: {best['score_us']:,.3f} µs from {best['start']}, "
             f"{best['gain_us']:+,.3f} µs against the best start, {best['kernels']} kernels"
             + (f", first better plan after {result['first_improvement_s']:.2f} s"
                if result["first_improvement_s"] is not None else ", no better plan found")]
    if best["moves"]:
        lines.append("its moves (predicted gain):")
        lines += [f"  {move['edit']}  {move['gain_us']:+.3f} µs" for move in best["moves"]]
    models = [key for key in ("projected_us", "learned_us", "sol_us")
              if result["top"] and key in result["top"][0]]
    lines.append("best distinct plans: rank, score, " + ", ".join(
        m[:-3] for m in models) + ", disagreement, plan")
    for entry in result["top"]:
        lines.append(f"  {entry['rank']:>2}  {entry['score_us']:>12,.3f}  "
                     + "  ".join(f"{entry[m]:>12,.3f}" for m in models)
                     + f"  {100 * entry['disagreement']:6.1f} %  {entry['plan_id']} "
                       f"({entry['kernels']} kernels, {entry['moves']} moves from "
                       f"{entry['start']})")
    if result["measure"]:
        lines.append("measure on a GPU: " + "; ".join(
            f"#{choice['rank']} ({choice['why']})" for choice in result["measure"]))
    return "\n".join(lines)

