"""Tests of the one verdict function (vmsim.reproduce.verdict) on made-up runs.

Each test answers one question about the rule itself: which verdict a claim gets
for runs that clearly go the seed's way, clearly do not, cannot be tested, or
show that the mechanism never ran; none depends on a simulation.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats
from vmsim.reproduce.experiment import DEFAULT_RUNS
from vmsim.reproduce.verdict import ALPHA, VERDICTS, Claim, Exercised, judge, welch_p

RAN = Exercised("events", "old", "the mechanism ran")


def claim(**kw) -> Claim:
    base = dict(
        id="c",
        case="w",
        text="new is faster",
        quote="about 50% reduced",
        metric="seconds",
        before="old",
        after="new",
        expect="lower",
        exercised=RAN,
        seed_before=100.0,
        seed_after=50.0,
    )
    base.update(kw)
    return Claim(**base)


def test_default_runs_allow_a_test():
    assert DEFAULT_RUNS >= 5


def test_welch_p_is_scipys_one_sided_welch_test():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 4.0, 5.0, 6.0, 7.0]
    want = stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue
    assert welch_p(a, b, "less") == pytest.approx(want)
    assert welch_p([1.0], b, "less") is None  # one run: no test
    assert welch_p([1.0, 1.0], [2.0, 2.0], "less") is None  # no variance at all


def test_a_significant_move_of_the_seeds_size_agrees():
    r = judge(claim(), [100, 102, 98, 101, 99], [52, 49, 51, 50, 48], [3, 3])
    assert r["verdict"] == "agrees"
    assert r["p_value"] is not None and r["p_value"] < ALPHA
    assert r["vmsim"] == pytest.approx(0.5, abs=0.01) and r["seed"] == 0.5
    assert set(r) >= {"claim", "verdict", "seed", "vmsim", "p_value"}


def test_the_right_way_but_far_too_small_disagrees():
    # x0.9 where the seed has x0.1: nine times weaker.
    r = judge(claim(seed_after=10.0), [100, 102, 98, 101, 99], [90, 91, 89, 90, 92], [1])
    assert r["verdict"] == "disagrees"
    assert "not within x2" in r["detail"]


def test_noise_does_not_agree():
    before = [100, 120, 80, 110, 90]
    after = [95, 118, 80, 105, 92]  # 2 % lower on average, well inside the spread
    r = judge(claim(), before, after, [1])
    assert r["p_value"] is not None and r["p_value"] > ALPHA
    assert r["verdict"] == "disagrees"
    assert "not significant" in r["detail"]


def test_the_wrong_way_disagrees():
    r = judge(claim(), [50, 51, 49], [100, 101, 99], [1])
    assert r["verdict"] == "disagrees" and "not lower" in r["detail"]


def test_identical_runs_are_exact():
    r = judge(claim(), [100.0] * 3, [50.0] * 3, [1])
    assert r["verdict"] == "agrees" and r["p_value"] is None
    assert "identical" in r["detail"]


def test_one_run_cannot_agree():
    r = judge(claim(), [100.0], [50.0], [1])
    assert r["verdict"] == "disagrees" and r["p_value"] is None
    assert "fewer than 2 runs" in r["detail"]


def test_an_unexercised_mechanism_is_not_observed_whatever_the_numbers():
    r = judge(claim(), [100, 102, 98], [52, 49, 51], [0, 0, 0])
    assert r["verdict"] == "not observed" and r["p_value"] is None
    assert "the mechanism ran" in r["detail"]


def test_by_construction_is_labelled_and_still_needs_the_mechanism():
    c = claim(by_construction="the switch forbids it")
    assert judge(c, [10, 11], [0, 0], [5])["verdict"] == "by construction"
    assert judge(c, [0, 0], [0, 0], [0])["verdict"] == "not observed"


def test_no_change_needs_tost_inside_the_tolerance():
    c = claim(expect="same", effect="points", tolerance=10.0, tolerance_source="10 points")
    close = judge(c, [50, 51, 49, 50, 52], [51, 50, 52, 49, 51], [1])
    assert close["verdict"] == "agrees" and close["p_value"] < ALPHA
    far = judge(c, [50, 51, 49, 50, 52], [70, 71, 69, 72, 70], [1])
    assert far["verdict"] == "disagrees"
    # Too noisy to show anything: not evidence of no change.
    noisy = judge(c, [10, 90, 50, 20, 80], [15, 85, 55, 25, 75], [1])
    assert noisy["verdict"] == "disagrees"


def test_at_most_bounds_a_reduction_to_negligible_levels():
    c = claim(seed_after=1.4, size="at_most")  # the seed: x0.014
    eliminated = judge(c, [1000, 1010, 990], [0, 1, 0], [1])
    assert eliminated["verdict"] == "agrees"
    halved = judge(c, [1000, 1010, 990], [500, 505, 495], [1])
    assert halved["verdict"] == "disagrees"


def test_a_count_the_seed_saw_at_zero():
    c = claim(expect="none")
    assert judge(c, [0, 0], [0, 0], [3])["verdict"] == "agrees"
    assert judge(c, [0, 4], [0, 0], [3])["verdict"] == "disagrees"


def test_no_figure_is_not_observed():
    r = judge(claim(), [], [5.0, 6.0], [1])
    assert r["verdict"] == "not observed" and "no run of old" in r["detail"]


def test_points_and_verdicts_are_json_ready():
    r = judge(claim(effect="points", seed_before=18.0, seed_after=47.0), [20, 22], [48, 50], [1])
    assert r["verdict"] in VERDICTS
    assert r["vmsim"] == pytest.approx(28.0)
    assert all(v is None or isinstance(v, str | int | float | list) for v in r.values()), r
    assert r["p_value"] is None or math.isfinite(r["p_value"])
