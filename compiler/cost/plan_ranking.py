"""How well a cost model ranks plans against measured times: Kendall's tau and the regret.

A model is used to choose: codegen picks the CodeGen plan it ranks first, the cost search the
fusion plan it prices lowest, an autotuner the plan it predicts fastest. What matters is then
not its error in microseconds but what the choice costs, measured against the fastest plan
that was measured:

- `regret_percent(predicted, measured, top)`: how much slower, in %, the fastest measured time
  among the `top` plans predicted fastest is than the fastest measured time of all. Plans
  predicted equally fast are picked at random, and the regret is the expected one: a model
  that gives every plan one time (the speed of light does not depend on the CodeGen plan) is
  scored as a random pick, not credited with whatever order the plans were listed in.
- `kendall_tau(xs, ys)`: Kendall's tau-b of two orderings of the same plans (ties count for
  neither side and shrink the denominator, Kendall 1945): 1 when the model orders every pair as
  measured, -1 when it reverses every pair, None when it cannot say (fewer than two plans, or
  one side all ties).
- `rank_plans_by_models(measured, predicted_by_model)`: both figures for every model over one
  set of plans, and the plans each ranks first.
- `regret_over_choices(groupings)`: the top-1 regret over every plan that can be put together
  from a few fusion plans whose kernels each have several measured CodeGen plans, without
  listing the product (a kernel's time in a plan is its own, so the fastest plan of a fusion
  plan is its kernels' fastest choices).

Pure functions of numbers: no compiler types, so the learned model's training metrics, the
projected model's calibration and the plan benchmarks (benchmarks/plan_regret.py) share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b of two rankings of the same items (ties count for neither side, as in
    Kendall 1945); None for fewer than two items or when either side is all ties."""
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} values against {len(ys)}: tau compares one ranking of "
                         f"the same items with another")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x)
                            * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else None


def regret_percent(predicted: Sequence[float], measured: Sequence[float], top: int = 1) -> float:
    """How much slower, in %, the fastest measured time among the `top` plans predicted fastest
    is than the fastest measured time of all (0 when the fastest plan is among them); the
    expectation over a random pick among plans predicted equally fast."""
    if len(predicted) != len(measured) or not measured:
        raise ValueError(f"{len(predicted)} predictions for {len(measured)} measured plans")
    if top < 1:
        raise ValueError(f"top must be at least 1, not {top}")
    best = min(measured)
    if top >= len(predicted):
        return 0.0
    boundary = sorted(predicted)[top - 1]
    # Chosen whatever the tie-break: predicted faster than the boundary.
    sure_best = min((m for p, m in zip(predicted, measured) if p < boundary), default=math.inf)
    surely = sum(p < boundary for p in predicted)
    tied = sorted(m for p, m in zip(predicted, measured) if p == boundary)
    picks = top - surely   # drawn at random from the plans tied at the boundary
    # The fastest of `picks` drawn from m tied plans is the i-th fastest (0-based) with
    # probability C(m - 1 - i, picks - 1) / C(m, picks).
    count = len(tied)
    expected = 0.0
    for i, value in enumerate(tied):
        chance = math.comb(count - 1 - i, picks - 1) / math.comb(count, picks)
        expected += chance * min(value, sure_best)
    return 100.0 * (expected - best) / best


@dataclass(frozen=True)
class Ranking:
    """One model's figures over one set of plans."""

    kendall_tau: float | None
    top1_regret_percent: float
    picks: tuple[int, ...]      # the plans it ranks first (several when it predicts a tie)

    def to_dict(self) -> dict:
        return {"kendall_tau": self.kendall_tau, "top1_regret_percent": self.top1_regret_percent,
                "picks": list(self.picks)}


def rank_plans_by_models(measured: Sequence[float],
                         predicted_by_model: Mapping[str, Sequence[float]]) -> dict[str, Ranking]:
    """Per model, its Kendall tau-b against the measured totals, its top-1 regret and the plans
    it ranks first: plan k is measured[k] and predicted_by_model[model][k] (totals in one unit,
    a plan's whole time)."""
    rankings = {}
    for model, predicted in predicted_by_model.items():
        if len(predicted) != len(measured):
            raise ValueError(f"{model}: {len(predicted)} predicted totals for {len(measured)} "
                             f"measured plans")
        fastest = min(predicted)
        rankings[model] = Ranking(kendall_tau(predicted, measured),
                                  regret_percent(predicted, measured, 1),
                                  tuple(k for k, p in enumerate(predicted) if p == fastest))
    return rankings


# A kernel's choices: (predicted, measured) time of each of its measured CodeGen plans.
Choices = Sequence[tuple[float, float]]


def regret_over_choices(groupings: Sequence[Sequence[Choices]]) -> float:
    """The top-1 regret, in %, over every plan made of one of `groupings` (a fusion plan: its
    kernels) with one choice per kernel (a kernel's (predicted, measured) times under each of
    its CodeGen plans), a plan's time being the sum of its kernels'.

    The model's pick is the plan with the least predicted sum: in each grouping, every kernel's
    predicted-fastest choice, and the grouping whose sum of those is least. Ties are picked at
    random over the whole plans they make, as `regret_percent` picks: a grouping tied at the
    least sum weighs as many plans as its kernels' tied choices multiply to, and within it each
    kernel's measured time is the mean over its tied choices."""
    if not groupings or any(not kernels for kernels in groupings) \
            or any(not choices for kernels in groupings for choices in kernels):
        raise ValueError("every grouping needs kernels, and every kernel a choice")
    best = min(sum(min(m for _, m in choices) for choices in kernels) for kernels in groupings)
    least = [sum(min(p for p, _ in choices) for choices in kernels) for kernels in groupings]
    fastest = min(least)
    weight_sum = expected_sum = 0.0
    for kernels, predicted in zip(groupings, least):
        if predicted != fastest:
            continue
        weight, expected = 1, 0.0
        for choices in kernels:
            floor = min(p for p, _ in choices)
            tied = [m for p, m in choices if p == floor]
            weight *= len(tied)
            expected += sum(tied) / len(tied)
        weight_sum += weight
        expected_sum += weight * expected
    return 100.0 * (expected_sum / weight_sum - best) / best
