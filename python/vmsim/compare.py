"""mmtests-style comparison tables for vmsim results (pure Python, stdlib only; a
sweep's Parquet file is read through :mod:`vmsim.sweep.table`).

This module reproduces the text tables that gormanm/mmtests prints with
``bin/compare-mmtests.pl`` (``MMTests::Compare``, ``MMTests::Stat``,
``MMTests::PrintGeneric``), so that vmsim output can be read side by side with
the numbers quoted in kernel commit messages:

* :func:`compare_table` -- the benchmark table::

                                  4.20.0                 4.20.0
                         selective-v2r15          capture-v2r15
    Amean     fault-both-24    13298.10 (   0.00%)    16819.86 * -26.48%*

  Each row is ``%-<statwidth>s %-<opwidth>s`` followed, per column, by
  ``%12.<precision>f`` and `` (%7.2f%%)``.  The percentage is relative to
  column 0 and positive always means "better" (see :func:`pdiff` and
  :func:`pndiff`).  On the mean row (``Amean``, or ``Hmean`` for
  higher-is-better metrics) a difference whose 95% confidence intervals do
  not overlap is marked `` *%7.2f%%*`` instead (see :func:`is_significant`).
* :func:`duration_table` -- the ``Duration User/System/Elapsed`` monitor block.
* :func:`ops_table` -- the ``Ops <name>`` rows of the mmtests vmstat monitor.
* :func:`seed_summary_block` -- the ``min: .. max: .. avg: .. std: .. runs: N``
  layout used in Michal Hocko's memcg soft-limit commit message.
* :func:`load_results` / :func:`compare_results` -- what ``vmsim compare``
  prints for a set of run-result JSON files.

Data model: a metric is a name plus, for every column (kernel), a
:data:`Sample` -- the list of float measurements of that metric in that
column.  ``metrics[name][i]`` is the :data:`Sample` of column ``i``.

Deliberate, documented deviations from mmtests (it has no answer for them):

* Missing values are "NaN-safe": a statistic that cannot be computed (no
  samples, a standard deviation of a single sample, a harmonic mean of
  non-positive data) is printed as ``0.00`` with ``(   0.00%)``, which is what
  ``Compare.pm`` prints for a NaN summary value.  A NaN baseline also gives a
  ``0.00%`` difference instead of Perl's ``nan``.
* ``CoeffVar`` of fewer than two samples is undefined (like ``Stddev``)
  rather than 0, so a single-run column does not show a 100% gain.
* Header names that do not fit their column are printed after one space
  instead of running into the previous column.
* When kernel names are split over two header rows (only if some name contains
  a ``-``), a name without a ``-`` goes to the second row only (Perl would
  print it with its last character cut off in the first row).
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence

from vmsim.atomic import shown

__all__ = [
    "QNORM_975",
    "CompareError",
    "Sample",
    "amean",
    "cidiff",
    "coeffvar",
    "compare_results",
    "compare_table",
    "duration_table",
    "hmean",
    "hstddev",
    "is_significant",
    "load_results",
    "mean_ci",
    "ops_table",
    "pdiff",
    "pndiff",
    "seed_summary_block",
    "significance_ratio",
    "stddev",
]

#: The samples of one metric in one column (one kernel): a list of floats.
Sample = list[float]

#: ``qnorm(1 - 0.05/2)``: mmtests' ``_calc_meanci`` asks R for
#: ``qnorm(1-alpha/2, mean=0, sd=stddev)`` with ``alpha = 0.05``, i.e. this
#: factor times the standard deviation.
QNORM_975 = 1.959963984540054

#: ``_FieldLength`` of the benchmark table (``%12.2f``).
FIELD_LENGTH = 12
#: ``_CompareLength``: width of the percentage inside `` (%7.2f%%)``.
COMPARE_LENGTH = 7
#: Field length of the ``Ops`` rows of the vmstat monitor (``%15.2f``).
OPS_FIELD_LENGTH = 15
#: Minimum width of the statistic-name column.  mmtests' Multiops summary
#: always contains a ``BAmean-NN`` statistic (9 characters), so its tables
#: print ``Amean`` followed by five spaces before the operation name.
MIN_STAT_WIDTH = 9

_DURATION_STAT = "Duration"
_OPS_STAT = "Ops"


class CompareError(ValueError):
    """A one-line, user-facing error raised while loading or comparing results."""


# ---------------------------------------------------------------------------
# Percentages and statistics (MMTests::Stat)
# ---------------------------------------------------------------------------


def _isnan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


def pdiff(new: float, base: float) -> float:
    """Percentage change of a higher-is-better value (``MMTests::Stat::pdiff``).

    ``new*100/base - 100``; 0 when ``new == base`` or ``new == 0``; 100 when
    ``base == 0`` (and ``new != 0``).  If either value is NaN the result is 0.
    """
    if _isnan(new) or _isnan(base):
        return 0.0
    if new == base or new == 0:
        return 0.0
    if base == 0:
        return 100.0
    return new * 100 / base - 100


def pndiff(new: float, base: float) -> float:
    """Percentage gain of a lower-is-better value (``MMTests::Stat::pndiff``).

    ``100 - new*100/base``; 0 when ``new == base``; 100 when ``new == 0``;
    -99 when ``base == 0`` (and ``new != 0``).  If either value is NaN the
    result is 0.
    """
    if _isnan(new) or _isnan(base):
        return 0.0
    if new == base:
        return 0.0
    if new == 0:
        return 100.0
    if base == 0:
        return -99.0
    return 100 - new * 100 / base


def amean(samples: Sequence[float]) -> float:
    """Arithmetic mean, NaN for no samples."""
    if not samples:
        return math.nan
    return math.fsum(samples) / len(samples)


def hmean(samples: Sequence[float]) -> float:
    """Harmonic mean, NaN for no samples or if any sample is not positive."""
    if not samples or any(not x > 0 for x in samples):
        return math.nan
    return len(samples) / math.fsum(1.0 / x for x in samples)


def stddev(samples: Sequence[float]) -> float:
    """Sample standard deviation (n-1), NaN for fewer than two samples."""
    if len(samples) < 2:
        return math.nan
    return statistics.stdev(samples)


def hstddev(samples: Sequence[float]) -> float:
    """Standard deviation that mmtests pairs with the harmonic mean.

    ``sqrt(sum((1/x - 1/H)**2) * H**4 / n)`` (``calc_stddev("hmean", ...)``
    in ``MMTests::Stat``).  NaN for fewer than two samples or when the
    harmonic mean is undefined.
    """
    mean = hmean(samples)
    if _isnan(mean) or len(samples) < 2:
        return math.nan
    diff = math.fsum((1.0 / x - 1.0 / mean) ** 2 for x in samples)
    return math.sqrt(diff * mean**4 / len(samples))


def coeffvar(samples: Sequence[float], harmonic: bool = False) -> float:
    """Coefficient of variation in percent (``calc_coeffvar``).

    ``stddev*100/mean``, and 0 when the mean is 0 or undefined.  ``harmonic``
    selects :func:`hstddev` and :func:`hmean` instead of the arithmetic pair.
    Unlike mmtests (which prints 0 and then a ``pndiff`` of 100% against it),
    the result is NaN when the standard deviation is undefined (fewer than
    two samples), so that it prints like the ``Stddev`` row.
    """
    sd = hstddev(samples) if harmonic else stddev(samples)
    mean = hmean(samples) if harmonic else amean(samples)
    if len(samples) < 2:
        return math.nan
    if _isnan(mean) or mean == 0:
        return 0.0
    if _isnan(sd):
        sd = 0.0
    return sd * 100 / mean


def _higher(prefer: str) -> bool:
    p = prefer.lower() if isinstance(prefer, str) else prefer
    if p == "lower":
        return False
    if p == "higher":
        return True
    raise CompareError(f"preferred direction must be 'lower' or 'higher', not {prefer!r}")


def mean_ci(samples: Sequence[float], prefer: str = "lower") -> tuple[float, float] | None:
    """95% interval around the preferred mean, as mmtests' ``_calc_meanci``.

    Lower-is-better metrics use the arithmetic mean and the sample standard
    deviation; higher-is-better metrics the harmonic mean and
    :func:`hstddev`.  The interval is ``mean -/+ QNORM_975 * stddev`` (the
    standard deviation, not the standard error).  ``None`` when it cannot be
    computed (fewer than two samples, undefined mean).
    """
    if _higher(prefer):
        mean, sd = hmean(samples), hstddev(samples)
    else:
        mean, sd = amean(samples), stddev(samples)
    if _isnan(mean) or _isnan(sd):
        return None
    q = QNORM_975 * sd
    return (mean - q, mean + q)


def cidiff(
    new: float, new_ci: tuple[float, float], base: float, base_ci: tuple[float, float]
) -> float:
    """Distance between two means in units of their CI half-widths (``cidiff``).

    If ``new < base`` the denominator is ``(new_hi - new) + (base - base_lo)``,
    otherwise ``(new - new_lo) + (base_hi - base)``; when it is 0 the plain
    difference is returned.  ``abs(result) > 1`` means the intervals do not
    overlap.
    """
    diff = new - base
    if new < base:
        cisum = new_ci[1] - new + base - base_ci[0]
    else:
        cisum = new - new_ci[0] + base_ci[1] - base
    if cisum == 0:
        return diff
    return diff / cisum


def significance_ratio(
    new_samples: Sequence[float], base_samples: Sequence[float], prefer: str = "lower"
) -> float | None:
    """The :func:`cidiff` ratio of the preferred means, or ``None`` if a CI is missing."""
    new_ci = mean_ci(new_samples, prefer)
    base_ci = mean_ci(base_samples, prefer)
    if new_ci is None or base_ci is None:
        return None
    mean = hmean if _higher(prefer) else amean
    return cidiff(mean(new_samples), new_ci, mean(base_samples), base_ci)


def is_significant(
    new_samples: Sequence[float], base_samples: Sequence[float], prefer: str = "lower"
) -> bool:
    """True if the mean of ``new_samples`` differs significantly from the base.

    mmtests' rule: ``abs(cidiff(...)) > 1``.  Without a confidence interval on
    both sides (fewer than two samples) nothing is significant.
    """
    ratio = significance_ratio(new_samples, base_samples, prefer)
    return ratio is not None and abs(ratio) > 1


# ---------------------------------------------------------------------------
# Statistic rows
# ---------------------------------------------------------------------------


class _Stat:
    """A resolved statistic: display name, function, percentage op, is-mean flag."""

    __slots__ = ("name", "func", "op", "is_mean")

    def __init__(self, name, func, op, is_mean=False):
        self.name = name
        self.func = func
        self.op = op
        self.is_mean = is_mean


def _sorted_best_first(samples: Sequence[float], higher: bool) -> list[float]:
    return sorted(samples, reverse=higher)


def _best_count(n: int, pct: float) -> int:
    return max(1, int(n * pct / 100))


def _percentile(samples: Sequence[float], pct: float, higher: bool) -> float:
    if not samples:
        return math.nan
    data = _sorted_best_first(samples, higher)
    return data[_best_count(len(data), pct) - 1]


def _best_mean(samples: Sequence[float], pct: float, higher: bool) -> float:
    if not samples:
        return math.nan
    data = _sorted_best_first(samples, higher)
    data = data[: _best_count(len(data), pct)]
    return hmean(data) if higher else amean(data)


_PARAM_RE = re.compile(r"^(BAmean|BHmean|Max)-(\d+(?:\.\d+)?)$")


def _resolve_stat(name: str, higher: bool) -> _Stat:
    """Map a statistic name to how it is computed for one metric."""
    pref_op = pdiff if higher else pndiff
    if name == "Min":
        return _Stat("Min", lambda s: min(s) if s else math.nan, pref_op)
    if name == "Max":
        return _Stat("Max", lambda s: max(s) if s else math.nan, pref_op)
    if name in ("Amean", "Hmean"):
        if higher:
            return _Stat("Hmean", hmean, pdiff, is_mean=True)
        return _Stat("Amean", amean, pndiff, is_mean=True)
    if name == "Stddev":
        return _Stat("Stddev", stddev, pndiff)
    if name == "CoeffVar":
        return _Stat("CoeffVar", coeffvar, pndiff)
    if name == "HStddev":
        return _Stat("HStddev", hstddev, pndiff)
    if name == "HCoeffVar":
        return _Stat("HCoeffVar", lambda s: coeffvar(s, harmonic=True), pndiff)
    if name == "Samples":
        return _Stat("Samples", lambda s: float(len(s)), pdiff)
    m = _PARAM_RE.match(name)
    if m:
        kind, arg = m.group(1), m.group(2)
        pct = float(arg)
        if kind == "Max":
            return _Stat(name, lambda s: _percentile(s, pct, higher), pref_op)
        label = f"{'BHmean' if higher else 'BAmean'}-{int(pct)}"
        return _Stat(label, lambda s: _best_mean(s, pct, higher), pref_op)
    raise CompareError(
        f"unknown statistic {name!r} (known: Min, Max, Amean, Hmean, Stddev, CoeffVar, "
        "HStddev, HCoeffVar, Samples, BAmean-NN, BHmean-NN, Max-NN)"
    )


# ---------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------


def _finite_or_zero(value: float) -> float:
    return 0.0 if _isnan(value) else value


def _split_name(name: str) -> tuple[str, str]:
    """Split a kernel name over two header rows as ``Compare.pm`` does.

    The split is at the first ``-``; an ``-rcN`` right after it stays in the
    first row (``4.20.0-rc3-boost-v5r8`` -> ``4.20.0-rc3`` / ``boost-v5r8``).
    """
    index = name.find("-")
    if index < 0:
        return "", name
    # Perl: substr($testName, $index, $index+3) =~ /-rc[0-9]/
    if re.search(r"-rc[0-9]", name[index : index + index + 3]):
        index += 4
    return name[:index], name[index + 1 :]


def _cell(text: str, width: int) -> str:
    if len(text) < width:
        return text.rjust(width)
    return " " + text


def _header(columns: Sequence[str], label_width: int, col_width: int) -> list[str]:
    """One or two right-aligned header rows of column names."""
    if any("-" in c for c in columns):
        rows = list(zip(*(_split_name(c) for c in columns), strict=True))
    else:
        rows = [tuple(columns)]
    return [
        (" " * label_width + "".join(_cell(t, col_width) for t in row)).rstrip() for row in rows
    ]


def _check_columns(columns: Sequence[str]) -> list[str]:
    if isinstance(columns, str):
        raise CompareError("columns must be a list of names, not a string")
    cols = [str(c) for c in columns]
    if not cols:
        raise CompareError("at least one column is needed")
    return cols


def _clean(samples: Iterable[float] | None) -> list[float]:
    if samples is None:
        return []
    return [float(x) for x in samples if x is not None]


def _per_column(values: Sequence, ncols: int, what: str) -> list[list[float]]:
    """Normalise ``values[i]`` (a number, a list of numbers or None) per column."""
    values = [] if values is None else list(values)
    if len(values) > ncols:
        raise CompareError(f"{what}: {len(values)} entries for {ncols} columns")
    out: list[list[float]] = []
    for i in range(ncols):
        v = values[i] if i < len(values) else None
        if v is None:
            out.append([])
        elif isinstance(v, (int, float)):
            out.append([float(v)])
        else:
            out.append(_clean(v))
    return out


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def compare_table(
    columns: list[str],
    metrics: dict[str, list[list[float]]],
    prefer: dict[str, str] | None = None,
    stats: tuple[str, ...] = ("Min", "Max", "Amean", "Stddev", "CoeffVar"),
    precision: int = 2,
) -> str:
    """Render the mmtests comparison table.

    ``columns`` are the kernel names (column 0 is the baseline).
    ``metrics[name][i]`` is the :data:`Sample` list of metric ``name`` in
    column ``i``; missing or empty lists are allowed.  ``prefer[name]`` is
    ``"lower"`` (default) or ``"higher"``.  ``stats`` lists the statistics to
    print, one block of rows per statistic as mmtests does (all ``Min`` rows,
    then all ``Max`` rows, ...).  ``Amean`` (or ``Hmean``) prints the
    preferred mean: ``Amean`` for lower-is-better and ``Hmean`` for
    higher-is-better metrics.  Also known: ``HStddev``, ``HCoeffVar``,
    ``Samples``, ``BAmean-NN`` (mean of the best NN%), ``Max-NN`` (NN-th
    percentile in the preferred order).

    Percentages are against column 0 with :func:`pndiff` for lower-is-better
    statistics and :func:`pdiff` for higher-is-better ones; the spread
    statistics always use :func:`pndiff` and ``Samples`` :func:`pdiff`.  The
    mean row of a non-baseline column is rendered `` *%7.2f%%*`` when
    :func:`is_significant` holds.  Values that cannot be computed print as
    ``0.00`` with ``(   0.00%)``.  Returns the table with a trailing newline.
    """
    cols = _check_columns(columns)
    prefer = dict(prefer or {})
    unknown = sorted(set(prefer) - set(metrics))
    if unknown:
        raise CompareError(f"prefer names unknown metrics: {', '.join(unknown)}")
    if isinstance(stats, str):
        stats = (stats,)
    ncols = len(cols)

    data = {
        name: _per_column(per_col, ncols, f"metric {name!r}") for name, per_col in metrics.items()
    }
    higher = {name: _higher(prefer.get(name, "lower")) for name in data}
    resolved = {name: [_resolve_stat(s, higher[name]) for s in stats] for name in data}

    stat_width = max([MIN_STAT_WIDTH] + [len(st.name) for sts in resolved.values() for st in sts])
    op_width = max([0] + [len(name) for name in data])
    label_width = stat_width + 1 + op_width
    col_width = FIELD_LENGTH + COMPARE_LENGTH + 4

    lines = _header(cols, label_width, col_width)
    for k in range(len(stats)):
        for name, per_col in data.items():
            st = resolved[name][k]
            values = [st.func(s) for s in per_col]
            base = values[0]
            row = f"{st.name:<{stat_width}} {name:<{op_width}}"
            for i, value in enumerate(values):
                if _isnan(value):
                    shown, pct = 0.0, 0.0
                else:
                    shown, pct = value, st.op(value, base)
                sig = (
                    st.is_mean
                    and i > 0
                    and not _isnan(value)
                    and not _isnan(base)
                    and is_significant(per_col[i], per_col[0], _dir(higher[name]))
                )
                row += f"{shown:{FIELD_LENGTH}.{precision}f}"
                open_, close = ("*", "*") if sig else ("(", ")")
                row += f" {open_}{pct:{COMPARE_LENGTH}.2f}%{close}"
            lines.append(row)
    return "\n".join(lines) + "\n"


def _dir(higher: bool) -> str:
    return "higher" if higher else "lower"


def _row_table(
    columns: Sequence[str],
    stat: str,
    rows: Sequence[tuple[str, Sequence[float]]],
    field_length: int,
) -> str:
    """A row-orientated monitor table (``Duration``/``Ops``): no percentages."""
    cols = _check_columns(columns)
    op_width = max([0] + [len(name) for name, _ in rows])
    label_width = len(stat) + 1 + op_width
    lines = _header(cols, label_width, field_length)
    for name, values in rows:
        row = f"{stat} {name:<{op_width}}"
        row += "".join(f"{_finite_or_zero(v):{field_length}.2f}" for v in values)
        lines.append(row)
    return "\n".join(lines) + "\n"


def duration_table(
    columns: list[str],
    user: Sequence[float | Sequence[float] | None],
    system: Sequence[float | Sequence[float] | None],
    elapsed: Sequence[float | Sequence[float] | None],
) -> str:
    """Render the mmtests ``Duration`` monitor block.

    ``user[i]``, ``system[i]`` and ``elapsed[i]`` are the seconds of column
    ``i``: a number, or a list of per-run numbers whose mean is printed.
    Missing values print as ``0.00``.  Layout (``%12.2f`` per column)::

                          vanilla     patched
        Duration User        6989.03     2368.70
        Duration System      7308.12      843.35
        Duration Elapsed     2277.67     2131.77
    """
    cols = _check_columns(columns)
    n = len(cols)
    rows = []
    for label, values in (("User", user), ("System", system), ("Elapsed", elapsed)):
        per_col = _per_column(values, n, f"duration {label}")
        rows.append((label, [amean(s) for s in per_col]))
    return _row_table(cols, _DURATION_STAT, rows, FIELD_LENGTH)


def ops_table(columns: list[str], ops: dict[str, list[float]]) -> str:
    """Render ``Ops <name>`` rows as the mmtests vmstat monitor does.

    ``ops[name][i]`` is the value of ``name`` in column ``i`` (a number, or a
    list whose mean is printed; missing values print as ``0.00``).  Each value
    is ``%15.2f``; names are left-aligned to the longest one.  Returns an
    empty string when ``ops`` is empty.
    """
    cols = _check_columns(columns)
    if not ops:
        return ""
    rows = [
        (name, [amean(s) for s in _per_column(values, len(cols), f"ops {name!r}")])
        for name, values in ops.items()
    ]
    return _row_table(cols, _OPS_STAT, rows, OPS_FIELD_LENGTH)


def _seed_pct(value: float, base: float) -> str:
    if _isnan(value) or _isnan(base):
        return " [n/a]"
    if base == 0:
        return " [100.0%]" if value == 0 else " [n/a]"
    return f" [{value * 100 / base:.1f}%]"


def seed_summary_block(
    title: str,
    columns: list[str],
    samples: list[list[float]],
    base: int = 0,
    *,
    prefix: str = "",
) -> str:
    """Render the ``min/max/avg/std/runs`` summary used in commit 7d910c054b.

    ``title`` is printed on its own line first (``System``, ``Elapsed``;
    nothing if empty), then one line per column::

        0-0-limit/base: min: 88.21 max: 94.61 avg: 91.73 std: 2.65 runs: 3
        0-0-limit/rework: min: 76.05 [86.2%] max: 79.08 [83.6%] avg: 77.84 [84.9%] std: 1.30 runs: 3

    The label is the column name, or ``prefix/column`` when ``prefix`` is
    given.  ``std`` is the population standard deviation (that is what the
    quoted numbers are).  Lines other than the ``base`` column carry
    ``[value*100/base%]`` (one decimal) after min, max and avg, never after
    std.  Where no percentage can be computed (no samples, base 0 with a
    non-zero value) ``[n/a]`` is printed; missing values print as ``0.00``.
    """
    cols = _check_columns(columns)
    per_col = _per_column(samples, len(cols), "samples")
    if not 0 <= base < len(cols):
        raise CompareError(f"base column {base} out of range for {len(cols)} columns")

    def summary(s: list[float]) -> tuple[float, float, float, float]:
        if not s:
            return (math.nan, math.nan, math.nan, math.nan)
        return (min(s), max(s), amean(s), statistics.pstdev(s))

    sums = [summary(s) for s in per_col]
    lines = [title] if title else []
    for i, col in enumerate(cols):
        label = f"{prefix}/{col}" if prefix else col
        mn, mx, avg, sd = sums[i]
        parts = []
        for key, value, base_value in zip(
            ("min", "max", "avg"), (mn, mx, avg), sums[base][:3], strict=True
        ):
            pct = "" if i == base else _seed_pct(value, base_value)
            parts.append(f"{key}: {_finite_or_zero(value):.2f}{pct}")
        parts.append(f"std: {_finite_or_zero(sd):.2f}")
        parts.append(f"runs: {len(per_col[i])}")
        lines.append(f"{label}: " + " ".join(parts))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# vmsim run results
# ---------------------------------------------------------------------------

_DURATION_KEYS = ("user_seconds", "sys_seconds", "elapsed_seconds")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_spec(spec: str) -> tuple[str | None, list[str]]:
    if not isinstance(spec, str) or not spec:
        raise CompareError(f"invalid result file argument {spec!r}")
    if spec == "-" or os.path.lexists(spec):
        return None, [spec]
    name: str | None = None
    rest = spec
    if "=" in spec:
        name, rest = spec.split("=", 1)
        if not name:
            raise CompareError(f"{spec}: empty column name before '='")
    paths = [p for p in rest.split(",") if p]
    if not paths:
        raise CompareError(f"{spec}: no result files given")
    return name, paths


def _validate_run(run: object, where: str) -> dict:
    if not isinstance(run, dict):
        raise CompareError(f"{where}: expected a JSON object, got {type(run).__name__}")
    summary = run.get("summary")
    if summary is None:
        raise CompareError(f"{where}: missing key 'summary'")
    if not isinstance(summary, dict):
        raise CompareError(f"{where}: 'summary' is not a JSON object")
    for key in _DURATION_KEYS:
        if key not in summary:
            raise CompareError(f"{where}: missing key 'summary.{key}'")
        if not _is_number(summary[key]):
            raise CompareError(f"{where}: 'summary.{key}' is not a number")
    for section in ("vmstat", "vmstat_delta"):
        value = run.get(section)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise CompareError(f"{where}: '{section}' is not a JSON object")
        for key, counter in value.items():
            if not _is_number(counter):
                raise CompareError(f"{where}: '{section}.{key}' is not a number")
    return run


#: The largest result file read [bytes]; a run's JSON is well under a megabyte.
MAX_RESULT_BYTES = 256 * 1024 * 1024
#: The deepest nesting of arrays and objects read (a run's JSON nests 5 deep).
MAX_JSON_DEPTH = 64
#: The largest magnitude of a number read: vmsim's counters are 64-bit.
MAX_NUMBER = 2**64

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_depth(text: str, path: str) -> None:
    """Refuses JSON nested deeper than MAX_JSON_DEPTH (strings skipped)."""
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                raise CompareError(
                    f"{path}: line {line}: nested more than {MAX_JSON_DEPTH} deep; "
                    "not a vmsim result"
                )
        elif c in "]}":
            depth -= 1


def _number_parsers(path: str) -> dict:
    """json.loads hooks that refuse NaN, infinities and numbers beyond MAX_NUMBER."""

    def out_of_range(text: str) -> CompareError:
        digits = f"{text[:20]}… ({len(text)} characters)" if len(text) > 24 else text
        return CompareError(
            f"{path}: the number {digits} is beyond the range of vmsim's figures (2^64)"
        )

    def parse_int(text: str) -> int:
        if len(text) > 21 or abs(int(text)) > MAX_NUMBER:
            raise out_of_range(text)
        return int(text)

    def parse_float(text: str) -> float:
        value = float(text)
        if not abs(value) <= MAX_NUMBER:
            raise out_of_range(text)
        return value

    def parse_constant(text: str) -> float:
        raise CompareError(f"{path}: {text} is not a number (vmsim never writes it)")

    return {"parse_int": parse_int, "parse_float": parse_float, "parse_constant": parse_constant}


def _read_runs(path: str) -> list[dict]:
    """The runs of one result file: read whole up to MAX_RESULT_BYTES (a regular file,
    or - for standard input), nesting and numbers checked before and while parsing."""
    from vmsim import inputs

    where = inputs.STDIN_NAME if path == "-" else shown(path)
    f = inputs.open_input(path, "a result file", CompareError)
    try:
        data = inputs.read_limited(f, where, MAX_RESULT_BYTES, CompareError)
    finally:
        if path != "-":
            f.close()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompareError(f"{where}: not UTF-8 text: {exc.reason}") from None
    _check_depth(text, where)
    try:
        doc = json.loads(text, **_number_parsers(where))
    except json.JSONDecodeError as exc:
        raise CompareError(
            f"{where}: invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    if isinstance(doc, list):
        if not doc:
            raise CompareError(f"{where}: the list of runs is empty")
        return [_validate_run(run, f"{where}: run {k}") for k, run in enumerate(doc)]
    return [_validate_run(doc, where)]


def load_results(paths: list[str]) -> list[tuple[str, list[dict]]]:
    """Load vmsim run-result JSON files, one column per argument.

    Each argument is ``NAME=path1,path2,...`` or ``path1,path2,...`` (an
    existing path is always taken literally), or a sweep's Parquet file:
    ``[NAME=]FILE.parquet[:KEY=VALUE...]`` (see
    :func:`vmsim.sweep.table.compare_columns`; needs polars).  Every file holds one run
    object or a JSON list of run objects; all runs of one argument form one
    column.  The column name is ``NAME``, else the ``"kernel"`` field of the
    first run, else the stem of the first file.

    A run object needs ``summary`` with numeric ``user_seconds``,
    ``sys_seconds`` and ``elapsed_seconds``; ``vmstat``/``vmstat_delta`` are
    optional objects of numbers.  Unreadable files, bad JSON and missing or
    mistyped keys raise :class:`CompareError` with a one-line message.
    Returns ``[(column_name, [run, ...]), ...]``.
    """
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise CompareError("no result files given")
    results: list[tuple[str, list[dict]]] = []
    for spec in paths:
        if isinstance(spec, str) and ".parquet" in spec:
            results.extend(_parquet_columns(spec))
            continue
        name, files = _parse_spec(spec)
        runs: list[dict] = []
        for path in files:
            runs.extend(_read_runs(path))
        if name is None:
            kernel = runs[0].get("kernel")
            if isinstance(kernel, str) and kernel:
                name = kernel
            else:
                name = os.path.splitext(os.path.basename(files[0]))[0]
        results.append((name, runs))
    return results


def _parquet_columns(spec: str) -> list[tuple[str, list[dict]]]:
    """Columns from a sweep's Parquet file (``vmsim.sweep.table.compare_columns``)."""
    from vmsim.sweep import SweepError
    from vmsim.sweep.table import compare_columns

    try:
        columns = compare_columns(spec)
    except SweepError as e:
        raise CompareError(str(e)) from None
    for name, runs in columns:
        if not runs:
            raise CompareError(f"{spec}: column {name} has no run that succeeded")
    return columns


def _ordered_keys(dicts: Iterable[Mapping]) -> list[str]:
    seen: dict[str, None] = {}
    for d in dicts:
        for key in d:
            seen.setdefault(key, None)
    return list(seen)


def _summary_prefer(key: str) -> str:
    return "higher" if key.endswith(("_per_sec", "_pct")) else "lower"


def compare_results(results: Sequence[tuple[str, Sequence[Mapping]]]) -> str:
    """The text ``vmsim compare`` prints for :func:`load_results` output.

    Three blocks separated by a blank line:

    1. :func:`duration_table` of ``summary.user_seconds``, ``sys_seconds``
       and ``elapsed_seconds`` (mean over the runs of a column);
    2. :func:`ops_table` of the ``vmstat_delta`` counters that are non-zero
       in some run, named by their kernel names, in the order they first
       appear (first run of the first column first); mean per column; left
       out when there is no such counter;
    3. :func:`compare_table` over every numeric ``summary`` key (same order
       rule) with one sample per run; lower is better unless the key ends in
       ``_per_sec`` or ``_pct``.
    """
    if not results:
        raise CompareError("nothing to compare")
    columns = [name for name, _ in results]
    all_runs = [run for _, runs in results for run in runs]

    def samples(section: str, key: str) -> list[list[float]]:
        out = []
        for _, runs in results:
            values = []
            for run in runs:
                value = (run.get(section) or {}).get(key)
                if isinstance(value, int | float) and _is_number(value):
                    values.append(float(value))
            out.append(values)
        return out

    blocks = [
        duration_table(
            columns,
            samples("summary", "user_seconds"),
            samples("summary", "sys_seconds"),
            samples("summary", "elapsed_seconds"),
        )
    ]

    delta_keys = _ordered_keys(run.get("vmstat_delta") or {} for run in all_runs)
    ops: dict[str, list[float]] = {}
    for key in delta_keys:
        if any((run.get("vmstat_delta") or {}).get(key, 0) != 0 for run in all_runs):
            # A counter absent from a run did not change in it.
            per_col = [
                [float((run.get("vmstat_delta") or {}).get(key, 0)) for run in runs]
                for _, runs in results
            ]
            ops[key] = [amean(v) for v in per_col]
    if ops:
        blocks.append(ops_table(columns, ops))

    summary_keys = [
        key
        for key in _ordered_keys(run.get("summary") or {} for run in all_runs)
        if any(_is_number((run.get("summary") or {}).get(key)) for run in all_runs)
    ]
    metrics = {key: samples("summary", key) for key in summary_keys}
    prefer = {key: _summary_prefer(key) for key in summary_keys}
    blocks.append(compare_table(columns, metrics, prefer))
    return "\n".join(blocks)
