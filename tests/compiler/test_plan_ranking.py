"""compiler/cost/plan_ranking.py: Kendall's tau-b, the top-k regret and the regret over every
plan a few fusion plans and their kernels' CodeGen plans make, against hand-computed values
(and scipy's tau-b where scipy is installed)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from compiler.cost.plan_ranking import (kendall_tau, rank_plans_by_models, regret_over_choices,
                                        regret_percent)


def test_tau_is_one_for_the_same_order_and_minus_one_for_the_reverse():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0


def test_tau_counts_one_swapped_pair_of_ten():
    # 9 concordant pairs, 1 discordant: (9 - 1) / 10.
    assert kendall_tau([1, 2, 3, 4, 5], [1, 3, 2, 4, 5]) == pytest.approx(0.8)


def test_tau_b_takes_ties_on_either_side_out_of_that_side_of_the_denominator():
    # Pairs of [1, 1, 2, 2] against [1, 2, 2, 3]: 3 concordant, 0 discordant, 2 tied in x
    # only, 1 tied in y only: 3 / sqrt((3 + 2) * (3 + 1)).
    assert kendall_tau([1, 1, 2, 2], [1, 2, 2, 3]) == pytest.approx(3 / math.sqrt(20))


def test_a_pair_tied_on_both_sides_counts_for_nothing():
    assert kendall_tau([1, 1, 2], [5, 5, 6]) == 1.0


def test_tau_is_none_when_it_cannot_say():
    assert kendall_tau([1], [2]) is None
    assert kendall_tau([7, 7, 7], [1, 2, 3]) is None


def test_tau_refuses_rankings_of_different_lengths():
    with pytest.raises(ValueError, match="2 values against 3"):
        kendall_tau([1, 2], [1, 2, 3])


def test_tau_b_agrees_with_scipy_on_random_rankings_with_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(37)
    for _ in range(200):
        n = rng.randint(2, 12)
        xs = [rng.randint(0, 4) for _ in range(n)]
        ys = [rng.randint(0, 4) for _ in range(n)]
        ours = kendall_tau(xs, ys)
        theirs = stats.kendalltau(xs, ys, variant="b").statistic
        if math.isnan(theirs):
            assert ours is None
        else:
            assert ours == pytest.approx(theirs)


def test_the_regret_is_how_much_slower_the_pick_is_than_the_fastest():
    # The model ranks plan 1 first (measured 12); the fastest measured is 10: 20 % slower.
    assert regret_percent([3, 1, 2], [10, 12, 11]) == pytest.approx(20.0)
    assert regret_percent([1, 3, 2], [10, 12, 11]) == 0.0


def test_plans_predicted_equally_fast_are_a_random_pick():
    # Plans 0 and 1 tie: the expected pick measures (10 + 14) / 2 = 12; the fastest is 9.
    assert regret_percent([1, 1, 5], [10, 14, 9]) == pytest.approx(100 * (12 - 9) / 9)


def test_the_top_two_regret_is_the_better_of_the_two_picks():
    assert regret_percent([1, 2, 3, 4], [13, 12, 11, 10], top=2) == pytest.approx(20.0)
    assert regret_percent([1, 2], [13, 12], top=2) == 0.0


def test_models_are_ranked_over_the_same_plans():
    measured = [30.0, 10.0, 20.0]
    rankings = rank_plans_by_models(measured, {"oracle": measured,
                                               "reversed": [-m for m in measured],
                                               "flat": [5.0, 5.0, 5.0]})
    assert rankings["oracle"].kendall_tau == 1.0
    assert rankings["oracle"].top1_regret_percent == 0.0
    assert rankings["oracle"].picks == (1,)
    assert rankings["reversed"].kendall_tau == -1.0
    assert rankings["reversed"].top1_regret_percent == pytest.approx(200.0)   # 30 against 10
    assert rankings["flat"].kendall_tau is None
    assert rankings["flat"].top1_regret_percent == pytest.approx(100.0)       # mean 20
    assert rankings["flat"].picks == (0, 1, 2)


def test_a_model_needs_a_total_for_every_plan():
    with pytest.raises(ValueError, match="sol: 2 predicted totals for 3 measured plans"):
        rank_plans_by_models([1, 2, 3], {"sol": [1, 2]})


def test_the_regret_over_choices_picks_each_kernels_predicted_fastest_plan():
    # Grouping 0: two kernels, the first with two CodeGen plans; grouping 1: one kernel.
    # The fastest plan measured is grouping 1 (12); the model picks grouping 0 with the first
    # kernel's (1, 10): 10 + 5 = 15, 25 % slower.
    groupings = [[[(1, 10), (2, 8)], [(1, 5)]], [[(3, 12)]]]
    assert regret_over_choices(groupings) == pytest.approx(25.0)


def test_ties_over_choices_weigh_every_plan_they_make():
    # Three plans predicted equally fast: grouping 0's two (10 and 6) and grouping 1's (11):
    # a random pick measures 9 on average against the fastest 6.
    groupings = [[[(1, 10), (1, 6)]], [[(1, 11)]]]
    assert regret_over_choices(groupings) == pytest.approx(50.0)


def test_the_regret_over_choices_is_the_regret_over_the_plans_they_make():
    rng = random.Random(4)
    for _ in range(300):
        groupings = [[[(rng.randint(1, 3), rng.randint(5, 20))
                       for _ in range(rng.randint(1, 3))]
                      for _ in range(rng.randint(1, 3))]
                     for _ in range(rng.randint(1, 3))]
        plans = [(sum(p for p, _ in pick), sum(m for _, m in pick))
                 for kernels in groupings for pick in itertools.product(*kernels)]
        expected = regret_percent([p for p, _ in plans], [m for _, m in plans])
        assert regret_over_choices(groupings) == pytest.approx(expected)


def test_the_regret_over_choices_needs_a_choice_for_every_kernel():
    with pytest.raises(ValueError, match="every kernel a choice"):
        regret_over_choices([[[(1, 2)], []]])
