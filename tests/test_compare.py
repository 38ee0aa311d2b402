"""Tests for vmsim.compare: mmtests-style comparison tables.

Expected strings are copied from real mmtests output quoted in kernel commit
messages (KERNEL-FORMATS.md section 4, seeds 002 and 004); the inputs are
samples constructed so that their statistics are exactly the quoted values.
"""

from __future__ import annotations

import json
import math

import pytest
from vmsim.compare import (
    QNORM_975,
    CompareError,
    amean,
    cidiff,
    coeffvar,
    compare_results,
    compare_table,
    duration_table,
    hmean,
    hstddev,
    is_significant,
    load_results,
    mean_ci,
    ops_table,
    pdiff,
    pndiff,
    seed_summary_block,
    significance_ratio,
    stddev,
)


def spread(mean: float, sd: float) -> list[float]:
    """Three samples whose mean is ``mean`` and sample stddev is ``sd``."""
    return [mean - sd, mean, mean + sd]


def hspread(h: float, e: float = 0.2) -> list[float]:
    """Two positive samples whose harmonic mean is ``h`` (reciprocals h^-1 +/- e/h)."""
    return [h / (1 + e), h / (1 - e)]


def lines_of(text: str) -> list[str]:
    assert text.endswith("\n")
    return text[:-1].split("\n")


# ---------------------------------------------------------------------------
# pdiff / pndiff
# ---------------------------------------------------------------------------


class TestPercentages:
    def test_pndiff_lower_is_better(self):
        assert pndiff(75.0, 100.0) == pytest.approx(25.0)
        assert pndiff(150.0, 100.0) == pytest.approx(-50.0)
        # 100 - 16819.86*100/13298.10 (KERNEL-FORMATS example 1)
        assert pndiff(16819.86, 13298.10) == pytest.approx(-26.483182, abs=1e-6)

    def test_pdiff_higher_is_better(self):
        assert pdiff(150.0, 100.0) == pytest.approx(50.0)
        assert pdiff(75.0, 100.0) == pytest.approx(-25.0)
        # 24696.23*100/32419.12 - 100 (mmtests Tutorial redis example)
        assert pdiff(24696.23, 32419.12) == pytest.approx(-23.822, abs=1e-3)

    def test_equal_values_give_zero(self):
        assert pndiff(42.0, 42.0) == 0.0
        assert pdiff(42.0, 42.0) == 0.0
        assert pndiff(0.0, 0.0) == 0.0
        assert pdiff(0.0, 0.0) == 0.0

    def test_base_zero(self):
        assert pdiff(5.0, 0.0) == 100.0
        assert pndiff(5.0, 0.0) == -99.0

    def test_new_zero(self):
        assert pdiff(0.0, 5.0) == 0.0
        assert pndiff(0.0, 5.0) == 100.0

    def test_nan_gives_zero(self):
        assert pdiff(math.nan, 5.0) == 0.0
        assert pndiff(5.0, math.nan) == 0.0


# ---------------------------------------------------------------------------
# statistics and significance
# ---------------------------------------------------------------------------


class TestStatistics:
    def test_means(self):
        assert amean([1.0, 2.0, 6.0]) == 3.0
        assert hmean([1.0, 2.0, 4.0]) == pytest.approx(3 / 1.75)
        assert math.isnan(amean([]))
        assert math.isnan(hmean([]))
        assert math.isnan(hmean([1.0, 0.0]))
        assert math.isnan(hmean([1.0, -2.0]))

    def test_stddev_is_sample_stddev(self):
        assert stddev([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == pytest.approx(math.sqrt(32 / 7))
        assert stddev(spread(10.0, 3.0)) == pytest.approx(3.0)
        assert math.isnan(stddev([1.0]))
        assert math.isnan(stddev([]))

    def test_hstddev(self):
        # H = 4/3, 1/x - 1/H = +-0.25, sqrt(2*0.0625 * H**4 / 2) = H**2/4 = 4/9
        assert hstddev([1.0, 2.0]) == pytest.approx(4 / 9)
        assert hstddev([5.0, 5.0]) == 0.0
        assert math.isnan(hstddev([5.0]))

    def test_coeffvar(self):
        assert coeffvar([1.0, 2.0, 3.0]) == pytest.approx(50.0)
        assert coeffvar([-1.0, 1.0]) == 0.0  # mean 0, as mmtests
        assert coeffvar([5.0, 5.0]) == 0.0
        # undefined for fewer than two samples (mmtests would say 0)
        assert math.isnan(coeffvar([7.0]))
        assert math.isnan(coeffvar([]))
        assert coeffvar([1.0, 2.0], harmonic=True) == pytest.approx((4 / 9) * 100 / (4 / 3))

    def test_mean_ci_uses_stddev_not_stderr(self):
        low, high = mean_ci([1.0, 2.0, 3.0])
        assert low == pytest.approx(2 - QNORM_975)
        assert high == pytest.approx(2 + QNORM_975)
        low, high = mean_ci([1.0, 2.0], "higher")
        assert low == pytest.approx(4 / 3 - QNORM_975 * 4 / 9)
        assert high == pytest.approx(4 / 3 + QNORM_975 * 4 / 9)
        assert mean_ci([1.0]) is None
        assert mean_ci([]) is None
        assert QNORM_975 == pytest.approx(1.96, abs=1e-4)

    def test_cidiff(self):
        # new > base: (new - new_lo) + (base_hi - base) = 2 + 1
        assert cidiff(10.0, (8.0, 12.0), 5.0, (4.0, 6.0)) == pytest.approx(5 / 3)
        # new < base: (new_hi - new) + (base - base_lo) = 1 + 2
        assert cidiff(5.0, (4.0, 6.0), 10.0, (8.0, 12.0)) == pytest.approx(-5 / 3)
        # zero-width intervals: the plain difference
        assert cidiff(3.0, (3.0, 3.0), 1.5, (1.5, 1.5)) == 1.5

    def test_significant_and_not(self):
        base = spread(100.0, 1.0)
        assert is_significant(spread(110.0, 1.0), base)  # ratio 10/3.92
        assert significance_ratio(spread(110.0, 1.0), base) == pytest.approx(10 / (2 * QNORM_975))
        assert not is_significant(spread(103.0, 1.0), base)  # ratio 3/3.92
        assert is_significant(spread(90.0, 1.0), base)
        assert not is_significant(spread(110.0, 10.0), base)

    def test_single_sample_is_never_significant(self):
        assert not is_significant([200.0], [100.0])
        assert significance_ratio([200.0], spread(100.0, 1.0)) is None

    def test_higher_uses_harmonic_mean(self):
        base = [100.0, 100.0, 100.0]
        assert is_significant([120.0, 120.0], base, "higher")  # zero widths: diff 20
        assert not is_significant(hspread(120.0, 0.2), base, "higher")
        with pytest.raises(CompareError):
            is_significant([1.0, 2.0], [1.0, 2.0], "sideways")


# ---------------------------------------------------------------------------
# compare_table: exact reproductions of real mmtests output
# ---------------------------------------------------------------------------

EXAMPLE1 = """\
                                        4.20.0                 4.20.0
                               selective-v2r15          capture-v2r15
Amean     fault-both-3      2624.85 (   0.00%)     2594.49 (   1.16%)
Amean     fault-both-5      3842.66 (   0.00%)     4088.32 (  -6.39%)
Amean     fault-both-7      5459.47 (   0.00%)     5936.54 (  -8.74%)
Amean     fault-both-12     9276.60 (   0.00%)    10160.85 (  -9.53%)
Amean     fault-both-18    14030.73 (   0.00%)    13908.92 (   0.87%)
Amean     fault-both-24    13298.10 (   0.00%)    16819.86 * -26.48%*
Amean     fault-both-30    17648.62 (   0.00%)    17901.74 (  -1.43%)
Amean     fault-both-32    19161.67 (   0.00%)    18621.32 (   2.82%)
"""


def test_example1_thpscale_table_is_reproduced_exactly():
    means = {
        "fault-both-3": (2624.85, 2594.49),
        "fault-both-5": (3842.66, 4088.32),
        "fault-both-7": (5459.47, 5936.54),
        "fault-both-12": (9276.60, 10160.85),
        "fault-both-18": (14030.73, 13908.92),
        "fault-both-24": (13298.10, 16819.86),
        "fault-both-30": (17648.62, 17901.74),
        "fault-both-32": (19161.67, 18621.32),
    }
    metrics = {}
    for name, (base, new) in means.items():
        # Tight spread only for fault-both-24: 1.96*(100+100) < 3521.76.
        sd = 100.0 if name == "fault-both-24" else 2000.0
        metrics[name] = [spread(base, sd), spread(new, sd)]
    out = compare_table(
        ["4.20.0-selective-v2r15", "4.20.0-capture-v2r15"], metrics, stats=("Amean",)
    )
    assert out == EXAMPLE1


def test_fault_both_24_row_significance_depends_on_spread():
    cols = ["4.20.0-selective-v2r15", "4.20.0-capture-v2r15"]
    row = "Amean     fault-both-24    13298.10 (   0.00%)    16819.86 * -26.48%*"
    tight = {"fault-both-24": [spread(13298.10, 500.0), spread(16819.86, 500.0)]}
    assert lines_of(compare_table(cols, tight, stats=("Amean",)))[2] == row
    # 1.96 * (900 + 900) = 3528 > 3521.76: the intervals overlap, no mark.
    wide = {"fault-both-24": [spread(13298.10, 900.0), spread(16819.86, 900.0)]}
    unmarked = "Amean     fault-both-24    13298.10 (   0.00%)    16819.86 ( -26.48%)"
    assert lines_of(compare_table(cols, wide, stats=("Amean",)))[2] == unmarked


EXAMPLE2 = """\
                              5.15.0-rc1             5.15.0-rc1
                                 vanilla mm-reclaimcongest-v4r2
Amean     mmap-4      31.4003 (   0.00%)    176.8729 (-463.28%)
Amean     mmap-7      38.1641 (   0.00%)    605.8866 (-1487.58%)
Amean     mmap-12     60.0981 (   0.00%)   2866.8561 (-4670.29%)
Amean     mmap-21    161.2699 (   0.00%)    118.6587 (  26.42%)
Amean     mmap-30    174.5589 (   0.00%)   3729.2263 (-2036.37%)
Amean     mmap-48   8106.8160 (   0.00%)   1463.7815 (  81.94%)
Stddev    mmap-4      41.3455 (   0.00%)   5847.5425 (-14043.13%)
"""


def test_example2_stutterp_precision4_and_rc_header():
    cols = ["5.15.0-rc1-vanilla", "5.15.0-rc1-mm-reclaimcongest-v4r2"]
    metrics = {
        # The quoted -14043.13% comes from unrounded stddevs.
        "mmap-4": [spread(31.4003, 41.34547), spread(176.8729, 5847.5425)],
    }
    for name, base, new in (
        ("mmap-7", 38.1641, 605.8866),
        ("mmap-12", 60.0981, 2866.8561),
        ("mmap-21", 161.2699, 118.6587),
        ("mmap-30", 174.5589, 3729.2263),
        ("mmap-48", 8106.8160, 1463.7815),
    ):
        metrics[name] = [spread(base, base), spread(new, new)]
    out = compare_table(cols, metrics, stats=("Amean", "Stddev"), precision=4)
    assert lines_of(out)[:9] == lines_of(EXAMPLE2)
    assert len(lines_of(out)) == 2 + 6 + 6


def test_example2_percentile_and_max_rows():
    cols = ["5.15.0-rc1-vanilla", "5.15.0-rc1-mm-reclaimcongest-v4r2"]
    metrics = {
        # 10 samples: Max-90 is the 9th smallest (int(10*90/100) = 9).
        "mmap-4": [
            [1.0, 2, 3, 4, 5, 6, 7, 8, 31.4243, 1000],
            [1.0, 2, 3, 4, 5, 6, 7, 8, 30.1957, 2000],
        ],
        "mmap-48": [[1.0, 477923.94], [2.0, 229791.8793]],
    }
    out = lines_of(compare_table(cols, metrics, stats=("Max-90", "Max"), precision=4))
    assert out[2] == "Max-90    mmap-4      31.4243 (   0.00%)     30.1957 (   3.91%)"
    assert out[5] == "Max       mmap-48 477923.9400 (   0.00%) 229791.8793 (  51.92%)"


def test_example2_second_machine_significant_gain():
    cols = ["5.15.0-rc1-vanilla", "5.15.0-rc1-mm-reclaimcongest-v4r2"]
    metrics = {
        "mmap-4": [spread(20.5437, 0.1), spread(19.1772, 0.1)],
        "mmap-6": [spread(39.2860, 10.0), spread(69.4987, 10.0)],
        "mmap-48": [[1.0], [1.0]],  # widens the operation column to 7 as in the posting
    }
    out = lines_of(compare_table(cols, metrics, stats=("Amean",), precision=4))
    assert out[2] == "Amean     mmap-4      20.5437 (   0.00%)     19.1772 *   6.65%*"
    assert out[3] == "Amean     mmap-6      39.2860 (   0.00%)     69.4987 ( -76.90%)"


def test_tutorial_redis_hmean_rows():
    cols = ["base", "new"]
    metrics = {
        "1-PING_INLINE": [[32419.12] * 3, [24696.23] * 3],
        "1-MSET-10": [hspread(27135.57), hspread(22407.46)],
        # The quoted -353.94% comes from an unrounded stddev.
        "1-LPUSH": [spread(30000.0, 1047.8125), spread(30000.0, 4756.49)],
    }
    prefer = dict.fromkeys(metrics, "higher")
    out = lines_of(compare_table(cols, metrics, prefer, stats=("Amean", "Stddev")))
    assert out[0] == " " * 23 + " " * 19 + "base" + " " * 20 + "new"
    assert out[1] == "Hmean     1-PING_INLINE    32419.12 (   0.00%)    24696.23 * -23.82%*"
    assert out[2] == "Hmean     1-MSET-10        27135.57 (   0.00%)    22407.46 ( -17.42%)"
    assert out[6] == "Stddev    1-LPUSH           1047.81 (   0.00%)     4756.49 (-353.94%)"


EXAMPLE_004_A = """\
                                   4.20.0-rc3             4.20.0-rc3
                                 lowzone-v5r8             boost-v5r8
Amean     fault-base-1      653.58 (   0.00%)      652.71 (   0.13%)
Amean     fault-huge-1        0.00 (   0.00%)      178.93 * -99.00%*
"""

EXAMPLE_004_B = """\
                                   4.20.0-rc3             4.20.0-rc3
                                 lowzone-v5r8             boost-v5r8
Min       fault-base-1      912.00 (   0.00%)      905.00 (   0.77%)
Min       fault-huge-1      127.00 (   0.00%)      135.00 (  -6.30%)
Amean     fault-base-1     1467.55 (   0.00%)     1481.67 (  -0.96%)
Amean     fault-huge-1     1127.11 (   0.00%)     1063.88 *   5.61%*
"""


def test_seed_004_tables():
    cols = ["4.20.0-rc3-lowzone-v5r8", "4.20.0-rc3-boost-v5r8"]
    a = {
        "fault-base-1": [spread(653.58, 100.0), spread(652.71, 100.0)],
        # base 0 -> pndiff -99; the all-zero baseline has a zero-width CI.
        "fault-huge-1": [[0.0, 0.0, 0.0], spread(178.93, 5.0)],
    }
    assert compare_table(cols, a, stats=("Amean",)) == EXAMPLE_004_A

    n = 10000

    def skewed(low: float, mean: float) -> list[float]:
        # one low outlier balanced by n-1 samples just above the mean
        delta = mean - low
        return [low] + [mean + delta / (n - 1)] * (n - 1)

    b = {
        "fault-base-1": [
            [912.0, 1467.55, 2023.10],
            [905.0, 1481.67, 2058.34],
        ],
        "fault-huge-1": [skewed(127.0, 1127.11), skewed(135.0, 1063.88)],
    }
    assert compare_table(cols, b, stats=("Min", "Amean")) == EXAMPLE_004_B


# ---------------------------------------------------------------------------
# compare_table: layout rules and edge cases
# ---------------------------------------------------------------------------


def test_default_stats_block_order_and_values():
    out = lines_of(compare_table(["a", "b"], {"lat": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]}))
    assert out == [
        "                                   a                      b",
        "Min       lat        1.00 (   0.00%)        2.00 (-100.00%)",
        "Max       lat        3.00 (   0.00%)        6.00 (-100.00%)",
        "Amean     lat        2.00 (   0.00%)        4.00 (-100.00%)",
        "Stddev    lat        1.00 (   0.00%)        2.00 (-100.00%)",
        "CoeffVar  lat       50.00 (   0.00%)       50.00 (   0.00%)",
    ]


def test_rows_are_grouped_by_statistic():
    metrics = {"x": [[1.0], [1.0]], "y": [[2.0], [2.0]]}
    out = lines_of(compare_table(["a", "b"], metrics, stats=("Min", "Max")))
    assert [line[:11] for line in out[1:]] == [
        "Min       x",
        "Min       y",
        "Max       x",
        "Max       y",
    ]


def test_higher_metric_uses_hmean_and_pdiff_but_stddev_uses_pndiff():
    metrics = {"tput": [[100.0, 100.0], [150.0, 150.0]]}
    out = lines_of(compare_table(["a", "b"], metrics, {"tput": "higher"}))
    assert out[1] == "Min       tput      100.00 (   0.00%)      150.00 (  50.00%)"
    # zero-width intervals: the difference itself (50 > 1) is the ratio
    assert out[3] == "Hmean     tput      100.00 (   0.00%)      150.00 *  50.00%*"
    assert out[4] == "Stddev    tput        0.00 (   0.00%)        0.00 (   0.00%)"
    # Stddev is pndiff even for higher-is-better metrics
    metrics = {"tput": [spread(100.0, 2.0), spread(100.0, 1.0)]}
    out = lines_of(compare_table(["a", "b"], metrics, {"tput": "Higher"}, stats=("Stddev",)))
    assert out[1] == "Stddev    tput        2.00 (   0.00%)        1.00 (  50.00%)"


def test_explicit_hmean_on_lower_metric_prints_amean():
    out = lines_of(compare_table(["a"], {"x": [[1.0, 3.0]]}, stats=("Hmean",)))
    assert out[1] == "Amean     x        2.00 (   0.00%)"


def test_extra_statistics():
    metrics = {"x": [[4.0, 1.0, 3.0, 2.0], [1.0, 2.0]]}
    out = lines_of(compare_table(["a", "b"], metrics, stats=("Samples", "BAmean-50", "HStddev")))
    assert out[1] == "Samples   x        4.00 (   0.00%)        2.00 ( -50.00%)"
    # best 50% of [1,2,3,4] for lower-is-better is [1,2]
    assert out[2] == "BAmean-50 x        1.50 (   0.00%)        1.00 (  33.33%)"
    # hstddev([1,2]) = 4/9; spread statistics always use pndiff
    h = hstddev([4.0, 1.0, 3.0, 2.0])
    assert out[3] == f"HStddev   x {h:11.2f} (   0.00%)        0.44 ({pndiff(4 / 9, h):7.2f}%)"
    out = lines_of(
        compare_table(["a"], {"x": [[4.0, 1.0, 3.0, 2.0]]}, {"x": "higher"}, stats=("BAmean-50",))
    )
    # best 50% for higher-is-better is [4,3], harmonic mean 24/7 = 3.43
    assert out[1] == "BHmean-50 x        3.43 (   0.00%)"


def test_stat_column_grows_for_long_names():
    out = lines_of(compare_table(["a"], {"x": [[1.0]]}, stats=("HCoeffVar", "Max-99.9")))
    assert out[1] == "HCoeffVar x        0.00 (   0.00%)"
    assert out[2] == "Max-99.9  x        1.00 (   0.00%)"


def test_unknown_statistic_raises():
    with pytest.raises(CompareError, match="unknown statistic"):
        compare_table(["a"], {"x": [[1.0]]}, stats=("Median",))


def test_missing_and_empty_samples_do_not_crash():
    metrics = {
        "empty": [[], []],
        "short": [[5.0]],  # no samples at all for column 1
        "newonly": [[], [3.0, 5.0]],
        "single": [[2.0], [4.0]],
    }
    out = lines_of(compare_table(["a", "b"], metrics))
    assert len(out) == 1 + 5 * 4
    table = {(line[:10].strip(), line[10:17].strip()): line[17:] for line in out[1:]}
    zero = "        0.00 (   0.00%)"
    for stat in ("Min", "Max", "Amean", "Stddev", "CoeffVar"):
        assert table[(stat, "empty")] == zero + zero
        assert table[(stat, "short")].endswith(zero)
    assert table[("Amean", "short")] == "        5.00 (   0.00%)" + zero
    # a missing baseline gives no percentage
    assert table[("Amean", "newonly")] == zero + "        4.00 (   0.00%)"
    assert table[("Stddev", "newonly")] == zero + "        1.41 (   0.00%)"
    assert table[("CoeffVar", "newonly")] == zero + "       35.36 (   0.00%)"
    # stddev/coeffvar of one sample are undefined -> 0.00, and no significance mark
    assert table[("Stddev", "single")] == zero + zero
    assert table[("CoeffVar", "single")] == zero + zero
    assert table[("Amean", "single")] == "        2.00 (   0.00%)        4.00 (-100.00%)"


def test_nonpositive_samples_for_hmean_print_zero():
    out = lines_of(
        compare_table(["a", "b"], {"t": [[0.0, 1.0], [2.0]]}, {"t": "higher"}, stats=("Amean",))
    )
    assert out[1] == "Hmean     t        0.00 (   0.00%)        2.00 (   0.00%)"


def test_base_zero_and_new_zero_in_table():
    metrics = {"z": [[0.0], [4.0]], "w": [[4.0], [0.0]]}
    out = lines_of(compare_table(["a", "b"], metrics, stats=("Amean",)))
    assert out[1].endswith("4.00 ( -99.00%)")
    assert out[2].endswith("0.00 ( 100.00%)")
    out = lines_of(
        compare_table(["a", "b"], metrics, dict.fromkeys(metrics, "higher"), stats=("Min",))
    )
    assert out[1].endswith("4.00 ( 100.00%)")
    assert out[2].endswith("0.00 (   0.00%)")


def test_three_columns_compare_against_column_zero():
    metrics = {"x": [[100.0], [50.0], [200.0]]}
    out = lines_of(compare_table(["a", "b", "c"], metrics, stats=("Amean",)))
    assert out[1] == (
        "Amean     x      100.00 (   0.00%)       50.00 (  50.00%)      200.00 (-100.00%)"
    )


def test_header_rows():
    # no dash anywhere: one row
    out = lines_of(compare_table(["base", "grouping"], {"x": [[1.0], [1.0]]}, stats=("Min",)))
    assert len(out) == 2
    assert out[0] == " " * 11 + " " * 19 + "base" + " " * 15 + "grouping"
    # a dash: split at the first dash; names without one go to the second row
    out = lines_of(compare_table(["mglru-on", "plain"], {"x": [[1.0], [1.0]]}, stats=("Min",)))
    assert out[0] == " " * 11 + "mglru".rjust(23)  # no trailing blanks
    assert out[1] == " " * 11 + "on".rjust(23) + "plain".rjust(23)
    # too long for its column: printed after a single space
    long = "x" * 30
    out = lines_of(compare_table(["a", long], {"x": [[1.0], [1.0]]}, stats=("Min",)))
    assert out[0] == " " * 11 + "a".rjust(23) + " " + long


def test_bad_arguments():
    with pytest.raises(CompareError):
        compare_table([], {"x": []})
    with pytest.raises(CompareError, match="3 entries for 2 columns"):
        compare_table(["a", "b"], {"x": [[1.0], [1.0], [1.0]]})
    with pytest.raises(CompareError, match="lower"):
        compare_table(["a"], {"x": [[1.0]]}, {"x": "up"})
    with pytest.raises(CompareError, match="unknown metrics"):
        compare_table(["a"], {"x": [[1.0]]}, {"y": "higher"})
    assert issubclass(CompareError, ValueError)


def test_no_metrics_prints_only_the_header():
    assert compare_table(["a", "b"], {}) == " " * 9 + " " + " " * 22 + "a" + " " * 22 + "b\n"


# ---------------------------------------------------------------------------
# Duration and Ops blocks
# ---------------------------------------------------------------------------

DURATION = """\
                  5.15.0-rc3  5.15.0-rc3
                     vanilla mm-reclaimcongest-v4r2
Duration User        6989.03     2368.70
Duration System      7308.12      843.35
Duration Elapsed     2277.67     2131.77
"""


def test_duration_table_matches_mmtests():
    cols = ["5.15.0-rc3-vanilla", "5.15.0-rc3-mm-reclaimcongest-v4r2"]
    out = duration_table(cols, [6989.03, 2368.70], [7308.12, 843.35], [2277.67, 2131.77])
    assert out == DURATION


def test_duration_table_means_and_missing():
    out = lines_of(duration_table(["a", "b"], [[1.0, 2.0], [4.0]], [[3.0], None], [[10.0, 20.0]]))
    assert out == [
        "                           a           b",
        "Duration User           1.50        4.00",
        "Duration System         3.00        0.00",
        "Duration Elapsed       15.00        0.00",
    ]


OPS = """\
                                     5.15.0-rc1     5.15.0-rc1
                                        vanilla mm-reclaimcongest-v4r2
Ops Direct pages scanned          1056608451.00    76886196.00
Ops Kswapd pages scanned           109795048.00    82179688.00
Ops Kswapd efficiency %                   57.62          33.35
Ops Compaction migrate scanned x           1.00           2.00
"""


def test_ops_table_matches_mmtests():
    cols = ["5.15.0-rc1-vanilla", "5.15.0-rc1-mm-reclaimcongest-v4r2"]
    ops = {
        "Direct pages scanned": [1056608451, 76886196],
        "Kswapd pages scanned": [109795048, 82179688],
        "Kswapd efficiency %": [57.62, 33.35],
        # The posting's name column is 28 wide (its longest row is not
        # quoted); a 28-character name reproduces that width.
        "Compaction migrate scanned x": [1, 2],
    }
    assert ops_table(cols, ops) == OPS


def test_ops_table_means_of_lists():
    out = lines_of(ops_table(["a", "b"], {"pgfree": [[1.0, 2.0], [10]]}))
    assert out[1] == "Ops pgfree           1.50          10.00"


def test_ops_table_missing_values_and_empty():
    out = lines_of(ops_table(["a", "b"], {"pgfree": [5]}))
    assert out[1] == "Ops pgfree           5.00           0.00"
    assert ops_table(["a"], {}) == ""


# ---------------------------------------------------------------------------
# Seed 002 layout
# ---------------------------------------------------------------------------

SEED_ELAPSED = """\
Elapsed
0-0-limit/base: min: 88.21 max: 94.61 avg: 91.73 std: 2.65 runs: 3
0-0-limit/rework: min: 76.05 [86.2%] max: 79.08 [83.6%] avg: 77.84 [84.9%] std: 1.30 runs: 3
0-0-limit/reworkoptim: min: 77.98 [88.4%] max: 80.36 [84.9%] avg: 78.92 [86.0%] std: 1.03 runs: 3
"""

SEED_SYSTEM = (
    "System\n"
    "8k-0-limit/base: min: 39.78 max: 42.09 avg: 41.09 std: 0.97 runs: 3\n"
    "8k-0-limit/rework: min: 200.86 [504.9%] max: 265.42 [630.6%] avg: 241.80 [588.5%] "
    "std: 29.06 runs: 3\n"
    "8k-0-limit/reworkoptim: min: 53.70 [135.0%] max: 54.89 [130.4%] avg: 54.43 [132.5%] "
    "std: 0.52 runs: 3\n"
)


def test_seed_002_blocks_are_reproduced_exactly():
    # the middle sample of each triple is 3*avg - min - max
    cols = ["base", "rework", "reworkoptim"]
    elapsed = [[88.21, 92.37, 94.61], [76.05, 78.39, 79.08], [77.98, 78.42, 80.36]]
    assert seed_summary_block("Elapsed", cols, elapsed, prefix="0-0-limit") == SEED_ELAPSED
    system = [[39.78, 41.40, 42.09], [200.86, 259.12, 265.42], [53.70, 54.70, 54.89]]
    labels = [f"8k-0-limit/{c}" for c in cols]
    assert seed_summary_block("System", labels, system) == SEED_SYSTEM


def test_seed_block_std_is_population_stddev():
    out = lines_of(seed_summary_block("", ["a"], [[1.0, 2.0, 3.0, 4.0]]))
    # population: sqrt(1.25) = 1.118; the sample stddev would be 1.29
    assert out == ["a: min: 1.00 max: 4.00 avg: 2.50 std: 1.12 runs: 4"]


def test_seed_block_other_base_and_edge_cases():
    out = lines_of(seed_summary_block("T", ["a", "b", "c", "d"], [[2.0], [4.0], [], [0.0]], base=1))
    assert out == [
        "T",
        "a: min: 2.00 [50.0%] max: 2.00 [50.0%] avg: 2.00 [50.0%] std: 0.00 runs: 1",
        "b: min: 4.00 max: 4.00 avg: 4.00 std: 0.00 runs: 1",
        "c: min: 0.00 [n/a] max: 0.00 [n/a] avg: 0.00 [n/a] std: 0.00 runs: 0",
        "d: min: 0.00 [0.0%] max: 0.00 [0.0%] avg: 0.00 [0.0%] std: 0.00 runs: 1",
    ]
    out = lines_of(seed_summary_block("", ["z", "y", "w"], [[0.0], [0.0], [1.0]]))
    assert out[1] == "y: min: 0.00 [100.0%] max: 0.00 [100.0%] avg: 0.00 [100.0%] std: 0.00 runs: 1"
    assert out[2] == "w: min: 1.00 [n/a] max: 1.00 [n/a] avg: 1.00 [n/a] std: 0.00 runs: 1"
    with pytest.raises(CompareError, match="base column"):
        seed_summary_block("", ["a"], [[1.0]], base=1)


# ---------------------------------------------------------------------------
# load_results / compare_results
# ---------------------------------------------------------------------------


def run(kernel, seed, user, sys_, elapsed, delta, **extra):
    return {
        "kernel": kernel,
        "seed": seed,
        "summary": {
            "elapsed_seconds": elapsed,
            "user_seconds": user,
            "sys_seconds": sys_,
            **extra,
        },
        "vmstat": {"pgfree": 1000},
        "vmstat_delta": delta,
    }


def write(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)


class TestLoadResults:
    def test_single_object_uses_kernel_field(self, tmp_path):
        p = write(tmp_path / "r1.json", run("grouping", 1, 1.0, 2.0, 3.0, {}))
        [(name, runs)] = load_results([p])
        assert name == "grouping"
        assert len(runs) == 1 and runs[0]["seed"] == 1

    def test_list_of_runs_and_several_files(self, tmp_path):
        a = write(tmp_path / "a.json", [run("k", 1, 1, 1, 1, {}), run("k", 2, 1, 1, 1, {})])
        b = write(tmp_path / "b.json", run("k", 3, 1, 1, 1, {}))
        [(name, runs)] = load_results([f"{a},{b}"])
        assert name == "k"
        assert [r["seed"] for r in runs] == [1, 2, 3]

    def test_name_prefix_and_order(self, tmp_path):
        a = write(tmp_path / "a.json", run("k1", 1, 1, 1, 1, {}))
        b = write(tmp_path / "b.json", run("k2", 1, 1, 1, 1, {}))
        results = load_results([f"new={b}", f"old={a},{b}"])
        assert [(n, len(r)) for n, r in results] == [("new", 1), ("old", 2)]

    def test_file_stem_without_kernel(self, tmp_path):
        doc = run("x", 1, 1, 1, 1, {})
        del doc["kernel"]
        p = write(tmp_path / "baseline-run.json", doc)
        assert load_results([p])[0][0] == "baseline-run"

    def test_unreadable_file(self, tmp_path):
        missing = str(tmp_path / "nope.json")
        with pytest.raises(CompareError, match="nope.json: no such file") as exc:
            load_results([missing])
        assert "\n" not in str(exc.value)
        with pytest.raises(CompareError, match="is a directory, not a result file"):
            load_results([str(tmp_path)])

    def test_bad_json(self, tmp_path):
        p = tmp_path / "bad.json"
        p.write_text('{"kernel": "k",\n "summary": ')
        with pytest.raises(CompareError, match=r"bad.json: invalid JSON: .*line 2") as exc:
            load_results([str(p)])
        assert "\n" not in str(exc.value)

    def test_missing_keys(self, tmp_path):
        doc = run("k", 1, 1, 1, 1, {})
        del doc["summary"]
        p = write(tmp_path / "a.json", doc)
        with pytest.raises(CompareError, match="a.json: missing key 'summary'"):
            load_results([p])
        doc = run("k", 1, 1, 1, 1, {})
        del doc["summary"]["sys_seconds"]
        p = write(tmp_path / "b.json", [run("k", 1, 1, 1, 1, {}), doc])
        with pytest.raises(CompareError, match=r"b.json: run 1: missing key 'summary.sys_seconds'"):
            load_results([p])

    def test_wrong_types(self, tmp_path):
        p = write(tmp_path / "a.json", [1, 2])
        with pytest.raises(CompareError, match="run 0: expected a JSON object"):
            load_results([p])
        p = write(tmp_path / "b.json", [])
        with pytest.raises(CompareError, match="empty"):
            load_results([p])
        doc = run("k", 1, 1, 1, "slow", {})
        p = write(tmp_path / "c.json", doc)
        with pytest.raises(CompareError, match="'summary.elapsed_seconds' is not a number"):
            load_results([p])
        doc = run("k", 1, 1, 1, 1, {"pgfree": "many"})
        p = write(tmp_path / "d.json", doc)
        with pytest.raises(CompareError, match="'vmstat_delta.pgfree' is not a number"):
            load_results([p])

    def test_bad_arguments(self, tmp_path):
        with pytest.raises(CompareError):
            load_results([])
        with pytest.raises(CompareError, match="empty column name"):
            load_results(["=x.json"])
        with pytest.raises(CompareError, match="no result files"):
            load_results(["name="])


COMPARE_OUTPUT = """\
                    baseline    grouping
Duration User          11.00       12.00
Duration System         2.00        1.00
Duration Elapsed       16.00       20.00

                        baseline       grouping
Ops pgscan_kswapd         100.00          20.00
Ops compact_stall           0.00           3.00

                                        baseline               grouping
Min       elapsed_seconds       15.00 (   0.00%)       20.00 ( -33.33%)
Min       user_seconds          10.00 (   0.00%)       12.00 ( -20.00%)
Min       sys_seconds            1.00 (   0.00%)        1.00 (   0.00%)
Min       faults_per_sec      1000.00 (   0.00%)     1500.00 (  50.00%)
Max       elapsed_seconds       17.00 (   0.00%)       20.00 ( -17.65%)
Max       user_seconds          12.00 (   0.00%)       12.00 (   0.00%)
Max       sys_seconds            3.00 (   0.00%)        1.00 (  66.67%)
Max       faults_per_sec      1000.00 (   0.00%)     1500.00 (  50.00%)
Amean     elapsed_seconds       16.00 (   0.00%)       20.00 ( -25.00%)
Amean     user_seconds          11.00 (   0.00%)       12.00 (  -9.09%)
Amean     sys_seconds            2.00 (   0.00%)        1.00 (  50.00%)
Hmean     faults_per_sec      1000.00 (   0.00%)     1500.00 (  50.00%)
Stddev    elapsed_seconds        1.41 (   0.00%)        0.00 (   0.00%)
Stddev    user_seconds           1.41 (   0.00%)        0.00 (   0.00%)
Stddev    sys_seconds            1.41 (   0.00%)        0.00 (   0.00%)
Stddev    faults_per_sec         0.00 (   0.00%)        0.00 (   0.00%)
CoeffVar  elapsed_seconds        8.84 (   0.00%)        0.00 (   0.00%)
CoeffVar  user_seconds          12.86 (   0.00%)        0.00 (   0.00%)
CoeffVar  sys_seconds           70.71 (   0.00%)        0.00 (   0.00%)
CoeffVar  faults_per_sec         0.00 (   0.00%)        0.00 (   0.00%)
"""


def test_compare_results_full_output(tmp_path):
    base = write(
        tmp_path / "base.json",
        [
            run(
                "baseline",
                1,
                10.0,
                1.0,
                15.0,
                {"pgscan_kswapd": 80, "pgfree": 0},
                faults_per_sec=1000.0,
                note="x",
                ok=True,
            ),
            run(
                "baseline",
                2,
                12.0,
                3.0,
                17.0,
                {"pgscan_kswapd": 120, "pgfree": 0},
                faults_per_sec=1000.0,
            ),
        ],
    )
    grouping = write(
        tmp_path / "grouping.json",
        run(
            "grouping",
            1,
            12.0,
            1.0,
            20.0,
            {"pgfree": 0, "pgscan_kswapd": 20, "compact_stall": 3},
            faults_per_sec=1500.0,
        ),
    )
    out = compare_results(load_results([base, grouping]))
    assert out == COMPARE_OUTPUT


def test_compare_results_without_changed_counters_and_errors(tmp_path):
    p = write(tmp_path / "a.json", run("k", 1, 1.0, 2.0, 3.0, {"pgfree": 0}))
    out = compare_results(load_results([p]))
    assert "Ops" not in out
    assert out.startswith(" " * 27 + "k\nDuration User           1.00\n")
    with pytest.raises(CompareError):
        compare_results([])
