"""The skeleton every seed reproduction runs on.

An :class:`Experiment` is data: its kernels (each a name, the seed's label and
its ``[kernel]`` settings), its cases (workloads or configurations, each run
on every kernel), the seed's tables, its claims (:mod:`vmsim.reproduce.verdict`),
and two functions — ``build`` (case, kernel, run seed, scale → scenario and
plan, from the experiment's TOML template) and ``measure`` (one finished run
→ its metrics). :func:`run_kernels` runs every case on every kernel ``runs``
times; :func:`judge_claims` gives every claim its verdict from those runs;
:func:`make_result` wraps them in the one result shape all reproductions share
(:class:`ReproduceResult`), to which an experiment adds its own extras (a
sweep, a pageblock map, a plot). :func:`render_claims` prints the verdicts.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from vmsim import api, atomic
from vmsim._vmsim import ScenarioError
from vmsim.reclaim_report import report_dict
from vmsim.reproduce.common import Progress, ReproduceError
from vmsim.reproduce.verdict import Claim, ClaimResult, judge

__all__ = [
    "DEFAULT_RUNS",
    "Experiment",
    "Kernel",
    "KernelInfo",
    "Metrics",
    "ReproduceResult",
    "Run",
    "Runs",
    "calibrated_mark",
    "judge_claims",
    "make_result",
    "mean_metrics",
    "render_claims",
    "render_claims_of",
    "run_kernels",
    "total_runs",
    "write_outputs",
]

#: Runs per kernel by default: enough for Welch's t-test behind every verdict.
DEFAULT_RUNS = 5

#: One run's figures: metric name → value (NaN when the run gave none).
Metrics = dict[str, float]


@dataclass(frozen=True)
class Kernel:
    """One kernel of a seed: vmsim's name for it, the seed's label, its settings."""

    name: str
    label: str
    knobs: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    """One finished run, as ``measure`` sees it; ``notes`` collects what it should say."""

    case: str
    kernel: Kernel
    seed: int
    scale: float
    scenario: dict[str, Any]
    plan: dict[str, Any]
    result: api.Result
    report: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Experiment:
    """A seed experiment as data; see the module doc."""

    name: str
    title: str
    kernels: tuple[Kernel, ...]
    cases: tuple[str, ...]
    seed: Mapping[str, Any]
    claims: tuple[Claim, ...]
    build: Callable[[str, Kernel, int, float], tuple[dict[str, Any], dict[str, Any]]]
    measure: Callable[[Run], Metrics]
    #: Run with a 2.6.35-format trace and give ``measure`` its reclaim report.
    traced: bool = False
    #: Figures that come from a calibrated constant: metric → where the constant came from.
    calibrated: Mapping[str, str] = field(default_factory=dict)
    #: Called on every run; what it returns is kept in ``Runs.kept[case][kernel]``.
    keep: Callable[[Run], Any] | None = None

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise ReproduceError(f"{self.name}: unknown kernel '{name}'")


@dataclass
class Runs:
    """What :func:`run_kernels` measured: every run's metrics by case and kernel."""

    runs: int
    scale: float
    seeds: list[int]
    per_run: dict[str, dict[str, list[Metrics]]]
    plans: dict[str, dict[str, Any]]
    notes: list[str]
    kept: dict[str, dict[str, list[Any]]]


class KernelInfo(TypedDict):
    """A kernel in the result: vmsim's name, the seed's label, its settings."""

    name: str
    label: str
    knobs: dict[str, Any]


class ReproduceResult(TypedDict):
    """The ``--json`` object of every reproduction.

    ``means`` and ``per_run`` are by case, then kernel; a figure a run could not
    give (the workload did not finish) is None. ``claims`` holds one verdict per
    seed claim; ``calibrated`` names the figures that come from a calibrated
    constant; ``extra`` holds what only this experiment has (a sweep, a map…).
    """

    experiment: str
    title: str
    runs: int
    scale: float
    seeds: list[int]
    kernels: list[KernelInfo]
    cases: list[str]
    plans: dict[str, dict[str, Any]]
    means: dict[str, dict[str, dict[str, float | None]]]
    per_run: dict[str, dict[str, list[dict[str, float | None]]]]
    seed: dict[str, Any]
    claims: list[ClaimResult]
    calibrated: dict[str, str]
    notes: list[str]
    extra: dict[str, Any]


def _one_run(
    exp: Experiment, case: str, k: Kernel, seed: int, scale: float, keep_dir: Path | None
) -> Run:
    """Builds and runs one case on one kernel; keeps its files in ``keep_dir``, which
    appears with all of them or not at all (an interrupt never leaves a run half kept)."""
    sc, plan = exp.build(case, k, seed, scale)
    with tempfile.TemporaryDirectory(prefix="vmsim-reproduce-") as tmp:
        trace = Path(tmp) / "trace.txt"
        report: dict[str, Any] | None = None
        try:
            if exp.traced:
                r = api.run(sc, seed=seed, trace=trace, trace_format="legacy")
                s = r.summary
                report = report_dict(
                    trace,
                    user_seconds=s["user_seconds"],
                    sys_seconds=s["sys_seconds"],
                    elapsed_seconds=s["elapsed_seconds"],
                )
            else:
                r = api.run(sc, seed=seed)
        except ScenarioError as e:  # a template or scaling bug, not the user's input
            raise ReproduceError(f"{exp.name} {case} {k.name} at --scale {scale:g}: {e}") from None
        if keep_dir is not None:
            files: dict[str, str | bytes | Path] = {
                "scenario.toml": api.load_scenario(sc),
                "result.json": r.json_text,
            }
            if exp.traced:
                files["trace.txt"] = trace
            if report is not None:
                files["report.json"] = json.dumps(report, indent=1, sort_keys=True) + "\n"
            keep_dir.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_dir(keep_dir, files)
    return Run(case, k, seed, scale, sc, plan, r, report)


def run_kernels(
    exp: Experiment,
    runs: int,
    scale: float,
    bar: Progress,
    *,
    output_dir: Path | None = None,
    cases: Sequence[str] | None = None,
) -> Runs:
    """Runs every case (or ``cases``) on every kernel with seeds 1..runs; with
    ``output_dir`` each run's scenario, result (and trace and report) go to
    ``DIR/CASE/KERNEL/run-N``."""
    seeds = list(range(1, runs + 1))
    out = Runs(runs, scale, seeds, {}, {}, [], {})
    for case in cases if cases is not None else exp.cases:
        out.per_run[case] = {}
        out.kept[case] = {}
        for k in exp.kernels:
            out.per_run[case][k.name] = []
            out.kept[case][k.name] = []
            for seed in seeds:
                bar.describe(f"{case} {k.name} run {seed}/{runs}")
                keep = output_dir / case / k.name / f"run-{seed}" if output_dir else None
                run = _one_run(exp, case, k, seed, scale, keep)
                out.per_run[case][k.name].append(exp.measure(run))
                if exp.keep is not None:
                    out.kept[case][k.name].append(exp.keep(run))
                out.plans[case] = run.plan
                out.notes += [f"{case} {k.name} run {seed}: {n}" for n in run.notes]
                bar.advance()
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def mean_metrics(samples: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of every metric over runs (keys of the first run), ignoring NaN; NaN
    when no run gave the metric."""
    if not samples:
        return {}
    out: dict[str, float] = {}
    for key in samples[0]:
        vals = [float(s[key]) for s in samples if math.isfinite(float(s[key]))]
        out[key] = sum(vals) / len(vals) if vals else math.nan
    return out


def _values(runs: Sequence[Mapping[str, float]], metric: str) -> list[float]:
    """The finite values of ``metric`` over runs."""
    return [float(r[metric]) for r in runs if metric in r and math.isfinite(float(r[metric]))]


def judge_claims(
    exp: Experiment, per_run: Mapping[str, Mapping[str, Sequence[Metrics]]]
) -> list[ClaimResult]:
    """Every claim of ``exp`` judged on the runs (claims of cases not run are left out)."""
    out: list[ClaimResult] = []
    for c in exp.claims:
        if c.case not in per_run:
            continue
        runs = per_run[c.case]
        out.append(
            judge(
                c,
                _values(runs[c.before], c.metric),
                _values(runs[c.after], c.metric),
                _values(runs[c.exercised.kernel], c.exercised.metric),
            )
        )
    return out


def make_result(exp: Experiment, r: Runs, **extra: Any) -> ReproduceResult:
    """The shared result of an experiment's runs, claims judged; ``extra`` is its own."""
    means = {
        case: {k: {m: _finite(v) for m, v in mean_metrics(rs).items()} for k, rs in ks.items()}
        for case, ks in r.per_run.items()
    }
    per_run = {
        case: {k: [{m: _finite(v) for m, v in run.items()} for run in rs] for k, rs in ks.items()}
        for case, ks in r.per_run.items()
    }
    return {
        "experiment": exp.name,
        "title": exp.title,
        "runs": r.runs,
        "scale": r.scale,
        "seeds": r.seeds,
        "kernels": [
            {"name": k.name, "label": k.label, "knobs": dict(k.knobs)} for k in exp.kernels
        ],
        "cases": list(r.per_run),
        "plans": r.plans,
        "means": means,
        "per_run": per_run,
        "seed": dict(exp.seed),
        "claims": judge_claims(exp, r.per_run),
        "calibrated": dict(exp.calibrated),
        "notes": r.notes,
        "extra": extra,
    }


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if abs(x) >= 1000 or float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.3g}"


def _effect(x: float | None, kind: str) -> str:
    if x is None:
        return "-"
    return f"{x:+.1f} points" if kind == "points" else f"x{x:.3g}"


def render_claims(result: ReproduceResult) -> list[str]:
    """The verdict of every claim of a result, and what is calibrated."""
    return render_claims_of(result["claims"], result["runs"], result["calibrated"])


def render_claims_of(
    claims: Sequence[ClaimResult], runs: int, calibrated: Mapping[str, str] | None = None
) -> list[str]:
    """The verdict of every claim: the seed's words and figures beside vmsim's, the test."""
    out = [
        f"Claims (vmsim over {runs} run{'s' if runs != 1 else ''} per kernel; verdicts as in "
        "docs/reproduce.md):"
    ]
    for c in claims:
        sb, sa = c["seed_values"]
        vb, va = c["vmsim_values"]
        out.append(f"  [{c['verdict']}] {c['claim']}")
        out.append(f'      seed:  "{c["quote"]}"')
        if sb is not None or sa is not None:
            out.append(f"             {_num(sb)} -> {_num(sa)} ({_effect(c['seed'], c['effect'])})")
        p = "" if c["p_value"] is None else f", p = {c['p_value']:.3g}"
        out.append(
            f"      vmsim: {_num(vb)} -> {_num(va)} ({_effect(c['vmsim'], c['effect'])}{p}; "
            f"{c['detail']})"
        )
    for metric, why in (calibrated or {}).items():
        out.append(f"  † {metric}: from a calibrated constant: {why}")
    return out


def calibrated_mark(result: ReproduceResult, metric: str) -> str:
    """``" †"`` when ``metric`` comes from a calibrated constant, else ``""``."""
    return " †" if metric in result["calibrated"] else ""


def write_outputs(out: Path | None, result: ReproduceResult, report: str) -> None:
    """With an output directory, writes ``result.json`` and ``report.txt`` into it."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        atomic.write_text(out / "result.json", json.dumps(result, indent=1) + "\n")
        atomic.write_text(out / "report.txt", report)


def total_runs(exp: Experiment, runs: int, cases: Iterable[str] | None = None) -> int:
    """The runs :func:`run_kernels` will make (for the progress bar)."""
    n = len(list(cases)) if cases is not None else len(exp.cases)
    return n * len(exp.kernels) * runs
