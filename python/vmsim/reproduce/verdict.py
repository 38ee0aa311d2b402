"""One verdict per seed claim, computed the same way for every reproduction.

A :class:`Claim` says, in the seed's words, how one metric moves from one
kernel to another (lower, higher, about the same) and, where the seed gives
figures, by how much. :func:`judge` turns the runs of the two kernels into one
of four verdicts:

- **not observed** — the mechanism the claim rests on did not run (a counter
  of the runs says so, e.g. no page was scanned, no fragmenting fallback
  happened), so the runs cannot speak for or against it;
- **by construction** — the claim holds because of what the kernel switch
  *is* (the limit kernel cannot have more than its limit of reclaimers) or
  because a cost constant was derived from the seed's own figure;
- **agrees** — the move is in the seed's direction and significant by Welch's
  t-test (one-sided, in the seed's direction, over the runs, p < ``ALPHA``)
  and, where the seed gives figures, vmsim's effect is within ×``SIZE_FACTOR``
  of the seed's; a "no change" claim agrees when two one-sided Welch tests
  (TOST) put the difference inside the tolerance quoted with the claim; a
  "none" claim (a count the seed saw at zero) agrees when every run of both
  kernels counts zero;
- **disagrees** — otherwise; the detail says which test failed.

Runs of a workload that draws nothing at random are identical: then there is
no run-to-run noise, the difference is exact, and the p-value is reported as
``None`` with the detail saying so. With one run of a kernel that is not
identical across runs there is no test at all: the p-value is ``None`` and
the claim cannot agree (``runs`` ≥ 5 is the default for that reason).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from scipy import stats

__all__ = [
    "ALPHA",
    "SIZE_FACTOR",
    "VERDICTS",
    "Claim",
    "ClaimResult",
    "Exercised",
    "judge",
    "welch_p",
]

#: Significance level of every test.
ALPHA = 0.05
#: vmsim's effect must be within this factor of the seed's to agree in size.
SIZE_FACTOR = 2.0

Verdict = Literal["agrees", "disagrees", "not observed", "by construction"]
VERDICTS: tuple[Verdict, ...] = ("agrees", "disagrees", "not observed", "by construction")
Expect = Literal["lower", "higher", "same", "none"]
Effect = Literal["ratio", "points"]
Size = Literal["within", "at_most"]
Alternative = Literal["less", "greater", "two-sided"]


@dataclass(frozen=True)
class Exercised:
    """The evidence that a claim's mechanism ran: the mean of ``metric`` over the runs
    of ``kernel`` is at least ``at_least`` ("what" names it for the report)."""

    metric: str
    kernel: str
    what: str
    at_least: float = 1.0


@dataclass(frozen=True)
class Claim:
    """One claim of a seed: ``metric`` moves from kernel ``before`` to ``after`` as
    ``expect`` says, in case (workload) ``case``.

    ``quote`` is the seed's own sentence the claim and its threshold come from.
    ``seed_before``/``seed_after`` are the seed's figures (None where it gives
    none). ``effect`` is how sizes compare: ``ratio`` (after ÷ before) or
    ``points`` (after − before, for percentages); ``size`` is ``within`` (vmsim's
    effect within ×SIZE_FACTOR of the seed's) or ``at_most`` (the seed's words
    give a bound, "reduced to negligible levels": vmsim's ratio at most
    ×SIZE_FACTOR the seed's). ``tolerance`` (same claims
    only) is the largest change that counts as none — in points, or as a
    fraction of before for ratios — and ``tolerance_source`` says where it comes
    from. ``by_construction`` gives the reason when the claim holds because of
    what the switch is or of a calibration. ``exercised`` names the counter
    showing that the mechanism ran.
    """

    id: str
    case: str
    text: str
    quote: str
    metric: str
    before: str
    after: str
    expect: Expect
    exercised: Exercised
    seed_before: float | None = None
    seed_after: float | None = None
    effect: Effect = "ratio"
    size: Size = "within"
    tolerance: float | None = None
    tolerance_source: str = ""
    by_construction: str | None = None


class ClaimResult(TypedDict):
    """A judged claim, as it appears in every reproduction's ``--json`` ``claims``."""

    id: str
    case: str
    claim: str
    quote: str
    verdict: Verdict
    seed: float | None
    vmsim: float | None
    p_value: float | None
    effect: Effect
    test: str
    seed_values: list[float | None]
    vmsim_values: list[float | None]
    runs: list[int]
    detail: str


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _effect(before: float | None, after: float | None, kind: Effect) -> float | None:
    """after ÷ before (ratio) or after − before (points); None when undefined."""
    if before is None or after is None or not (math.isfinite(before) and math.isfinite(after)):
        return None
    if kind == "points":
        return after - before
    return after / before if before > 0 else None


def _exact(after: Sequence[float], before: Sequence[float]) -> bool:
    """Two runs or more of each kernel, every kernel's runs identical: no noise at all."""
    return len(after) >= 2 and len(before) >= 2 and len(set(after)) == len(set(before)) == 1


def welch_p(
    after: Sequence[float], before: Sequence[float], alternative: Alternative
) -> float | None:
    """The p-value of Welch's t-test of ``after`` against ``before`` (scipy), or None
    when it is undefined: fewer than two runs on a side, or no variance on either."""
    if len(after) < 2 or len(before) < 2 or _exact(after, before):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's precision note on a zero-variance side
        r = stats.ttest_ind(list(after), list(before), equal_var=False, alternative=alternative)
    p = float(r.pvalue)
    return p if math.isfinite(p) else None


def _within_factor(vm: float, seed: float, kind: Effect, size: Size = "within") -> bool:
    """vmsim's effect within ×SIZE_FACTOR of the seed's (same sign required), or for
    ``at_most`` a ratio no larger than SIZE_FACTOR times the seed's."""
    if size == "at_most":
        return vm <= SIZE_FACTOR * seed if kind == "ratio" else abs(vm) >= abs(seed) / SIZE_FACTOR
    if kind == "points":
        return seed != 0 and 1 / SIZE_FACTOR <= vm / seed <= SIZE_FACTOR
    if vm <= 0 or seed <= 0:
        return False
    return abs(math.log(vm) - math.log(seed)) <= math.log(SIZE_FACTOR)


def _fmt(x: float | None, kind: Effect) -> str:
    if x is None:
        return "-"
    return f"{x:+.1f} points" if kind == "points" else f"x{x:.3g}"


def _directional(
    c: Claim, before: Sequence[float], after: Sequence[float]
) -> tuple[Verdict, float | None, str, str]:
    """Verdict, p-value, test name and detail of a lower/higher claim."""
    alt: Alternative = "less" if c.expect == "lower" else "greater"
    test = f"Welch's t-test, one-sided ({c.after} {c.expect} than {c.before}), alpha {ALPHA}"
    mb, ma = _mean(before), _mean(after)
    assert mb is not None and ma is not None
    vm = _effect(mb, ma, c.effect)
    seed = _effect(c.seed_before, c.seed_after, c.effect)
    right_way = ma < mb if c.expect == "lower" else ma > mb
    p = welch_p(after, before, alt)
    if _exact(after, before):
        significant = right_way
        why = "runs identical, the difference exact"
    elif p is None:
        significant = False
        why = "no test: fewer than 2 runs of a kernel"
    else:
        significant = p < ALPHA
        why = "significant" if significant else "not significant"
    if not right_way:
        return "disagrees", p, test, f"not {c.expect}"
    if not significant:
        return "disagrees", p, test, f"{c.expect}, but {why}"
    if seed is None:
        return "agrees", p, test, f"{c.expect}, {why}"
    bound = f"within x{SIZE_FACTOR:g}" if c.size == "within" else f"at most x{SIZE_FACTOR:g}"
    ok = vm is not None and _within_factor(vm, seed, c.effect, c.size)
    return (
        "agrees" if ok else "disagrees",
        p,
        test,
        f"{c.expect}, {why}; {'' if ok else 'not '}{bound} of the seed's {_fmt(seed, c.effect)}",
    )


def _same(
    c: Claim, before: Sequence[float], after: Sequence[float]
) -> tuple[Verdict, float | None, str, str]:
    """Verdict, p-value, test name and detail of a "no change" claim (TOST)."""
    assert c.tolerance is not None, f"claim {c.id}: a 'same' claim needs a tolerance"
    mb = _mean(before)
    assert mb is not None
    tol = c.tolerance if c.effect == "points" else c.tolerance * abs(mb)
    unit = "points" if c.effect == "points" else f"{c.tolerance:.0%} of {c.before}'s mean"
    test = f"two one-sided Welch's t-tests (TOST) for a change within +/-{unit}, alpha {ALPHA}"
    ma = _mean(after)
    assert ma is not None
    diff = ma - mb
    if _exact(after, before):
        ok = abs(diff) < tol
        return (
            "agrees" if ok else "disagrees",
            None,
            test,
            f"runs identical: the change {diff:+.3g} is exact, "
            f"{'inside' if ok else 'outside'} +/-{tol:.3g} ({c.tolerance_source})",
        )
    lo = welch_p([x + tol for x in after], before, "greater")
    hi = welch_p([x - tol for x in after], before, "less")
    if lo is None or hi is None:
        return "disagrees", None, test, "no test: a kernel has fewer than 2 runs"
    p = max(lo, hi)
    ok = p < ALPHA
    return (
        "agrees" if ok else "disagrees",
        p,
        test,
        f"change {diff:+.3g}, {'shown inside' if ok else 'not shown inside'} +/-{tol:.3g} "
        f"({c.tolerance_source})",
    )


def judge(
    c: Claim,
    before: Sequence[float],
    after: Sequence[float],
    evidence: Sequence[float],
) -> ClaimResult:
    """The verdict of claim ``c`` from the runs' values of its metric under its two
    kernels (``before``, ``after``) and of its evidence counter (``evidence``: the
    values of ``c.exercised.metric`` over the runs of ``c.exercised.kernel``)."""
    mb, ma = _mean(before), _mean(after)
    vm = _effect(mb, ma, c.effect)
    seed = _effect(c.seed_before, c.seed_after, c.effect)
    ev = _mean(evidence)
    p: float | None = None
    if ev is None or ev < c.exercised.at_least:
        verdict: Verdict = "not observed"
        test = "none: the mechanism did not run"
        detail = (
            f"{c.exercised.what}: {c.exercised.metric} is {0.0 if ev is None else ev:.3g} "
            f"on average under {c.exercised.kernel}"
        )
    elif not before or not after:
        verdict = "not observed"
        test = "none: no figure"
        missing = c.before if not before else c.after
        detail = f"no run of {missing} gave a figure of {c.metric}"
    elif c.by_construction is not None:
        verdict, test, detail = "by construction", "none: true by construction", c.by_construction
    elif c.expect == "same":
        verdict, p, test, detail = _same(c, before, after)
    elif c.expect == "none":
        nonzero = sum(1 for x in [*before, *after] if x != 0)
        verdict = "agrees" if nonzero == 0 else "disagrees"
        test = "none: a count, zero in every run or not"
        detail = f"{nonzero} of {len(before) + len(after)} runs count more than 0"
    else:
        verdict, p, test, detail = _directional(c, before, after)
    return {
        "id": c.id,
        "case": c.case,
        "claim": c.text,
        "quote": c.quote,
        "verdict": verdict,
        "seed": seed,
        "vmsim": vm,
        "p_value": p,
        "effect": c.effect,
        "test": test,
        "seed_values": [c.seed_before, c.seed_after],
        "vmsim_values": [mb, ma],
        "runs": [len(before), len(after)],
        "detail": detail,
    }
