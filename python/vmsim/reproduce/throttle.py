"""Seed 000: KOSAKI Motohiro, "[RFC][PATCH] the proposal of improve page reclaim by
throttle" (LKML, 2008-02-19), reproduced: ``vmsim reproduce throttle``.

The seed runs ``hackbench 120 process 1000`` on an IA64 machine with 8 CPUs,
8 GB of RAM in two nodes and 2 GB of swap, on 2.6.25 before and after a patch
that lets at most RECLAIM_LIMIT = 2 × nodes with memory (4) tasks into direct
reclaim at once. Two kernels:

- ``off`` (``kernel.reclaim_throttle = "off"``): any number of direct reclaimers;
- ``limit`` (``"limit"``): the patch.

Both use the 2.6.25-era reclaim of vmsim (``reclaim_scan = "classic"``, naps in
congestion_wait between priorities). The experiment (:data:`EXPERIMENT`) runs on
the shared skeleton (:mod:`vmsim.reproduce.experiment`): each kernel runs the
scenario ``runs`` times (seeds 1..runs); the report gives the seed's table with
vmsim's means and the seed's figures beside them, and the verdict of each of the
seed's claims. A sweep of the limit (1, 2, 4, 8, 16, 64, unlimited; seed 1) is
printed as a table and drawn to ``throttle-sweep.png`` in the output directory
(default: the current directory).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from vmsim import api, atomic
from vmsim.reproduce.common import (
    Progress,
    ReproduceError,
    check_args,
    check_output_dir,
    load_template,
)
from vmsim.reproduce.experiment import (
    DEFAULT_RUNS,
    Experiment,
    Kernel,
    Metrics,
    ReproduceResult,
    Run,
    calibrated_mark,
    make_result,
    render_claims,
    run_kernels,
    total_runs,
    write_outputs,
)
from vmsim.reproduce.verdict import Claim, Exercised
from vmsim.units import fmt_bytes, parse_size

NAME = "throttle"
TITLE = (
    'seed 000: KOSAKI Motohiro, "[RFC][PATCH] the proposal of improve page reclaim '
    'by throttle" (2008-02-19)'
)
TEMPLATE = "throttle"
PLOT_FILE = "throttle-sweep.png"
CASE = "hackbench"

# The seed's two kernels: 2.6.25 without the patch, and with RECLAIM_LIMIT = 2 x 2 nodes.
KERNELS = (
    Kernel("off", "before", {"reclaim_throttle": "off", "reclaim_limit": 0}),
    Kernel("limit", "after", {"reclaim_throttle": "limit", "reclaim_limit": 4}),
)
SWEEP = (1, 2, 4, 8, 16, 64, 0)  # 0: unlimited (the off kernel)
SEED_GROUPS = 120
MIN_NODE_MEMORY = 64 << 20

# (metric, label in the seed's table, kind)
METRICS: tuple[tuple[str, str, str], ...] = (
    ("hackbench_seconds", "hackbench result (s)", "sec"),
    ("user_seconds", "user (s)", "sec"),
    ("sys_seconds", "sys (s)", "sec"),
    ("elapsed_seconds", "elapse (s)", "sec"),
    ("major_faults", "major fault", "int"),
    ("max_parallel_reclaimers", "max parallel reclaim tasks", "int"),
    ("max_try_to_free_pages_ms", "max time of try_to_free_pages() (ms)", "int"),
)

SEED: dict[str, Any] = {
    "source": "KOSAKI Motohiro, [RFC][PATCH] the proposal of improve page reclaim by "
    "throttle, LKML 2008-02-19 (average of 3 runs)",
    "machine": "IA64 x8, 8GB RAM, 2GB swap, 2.6.25-rc",
    "kernels": {
        "off": {
            "hackbench_seconds": 282.30,
            "user_seconds": 14.16,
            "sys_seconds": 1248.47,
            "elapsed_seconds": 432.93,
            "major_faults": 29026,
            "max_parallel_reclaimers": 1298,
            "max_try_to_free_pages_ms": 70394,
        },
        "limit": {
            "hackbench_seconds": 30.36,
            "user_seconds": 14.26,
            "sys_seconds": 294.44,
            "elapsed_seconds": 118.01,
            "major_faults": 3064,
            "max_parallel_reclaimers": 4,
            "max_try_to_free_pages_ms": 12234,
        },
    },
}

# The gate acts only when more tasks want to reclaim at once than the limit admits.
_STORM = Exercised(
    "max_parallel_reclaimers", "off", "more direct reclaimers at once than the limit (4)", 5
)


def _claim(cid: str, metric: str, text: str, quote: str, **kw: Any) -> Claim:
    """A claim that the patch moves ``metric`` (off -> limit), with the seed's figures."""
    seed = SEED["kernels"]
    kw.setdefault("expect", "lower")
    kw.setdefault("exercised", _STORM)
    return Claim(
        cid,
        CASE,
        text,
        quote,
        metric,
        "off",
        "limit",
        seed_before=seed["off"][metric],
        seed_after=seed["limit"][metric],
        **kw,
    )


CLAIMS: tuple[Claim, ...] = (
    _claim(
        "hackbench_faster",
        "hackbench_seconds",
        "the limit cuts hackbench's time",
        "2. improve throughput performance (see above hackbench result. about 90% reduced)",
    ),
    _claim(
        "sys_lower",
        "sys_seconds",
        "the limit cuts system time",
        "4. reduce lock contention. (see above sys time. about 80% reduced)",
    ),
    _claim(
        "elapsed_lower",
        "elapsed_seconds",
        "the limit cuts the elapsed time",
        "elapse: 432.93 (before), 118.01 (after)",
    ),
    _claim(
        "major_faults_lower",
        "major_faults",
        "the limit cuts major faults",
        "1. reduce unnecessary swap (see above major fault. about 90% reduced)",
        exercised=Exercised("pswpout", "off", "reclaim swapped pages out"),
    ),
    _claim(
        "ttfp_shorter",
        "max_try_to_free_pages_ms",
        "the limit cuts the longest try_to_free_pages",
        "3. improve interactive performance. (see above max consumption of "
        "try_to_free_pages. about 80% reduced)",
    ),
    _claim(
        "reclaimers_limited",
        "max_parallel_reclaimers",
        "at most RECLAIM_LIMIT = 4 tasks reclaim at once with the patch",
        "max parallel reclaim tasks: 1298 (before), 4 (after)",
        by_construction="reclaim_throttle = limit admits at most reclaim_limit = 4 direct "
        "reclaimers; what the runs show is that the off kernel needed the gate",
    ),
    _claim(
        "user_unchanged",
        "user_seconds",
        "user time does not move",
        "user: 14.16 (before), 14.26 (after)",
        expect="same",
        tolerance=0.05,
        tolerance_source="5 %",
        by_construction="cost.msg_user was derived from this seed's own user time "
        "(docs/cost-model.md)",
    ),
)


def build_scenario(kernel: str, limit: int, scale: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scenario of one run: the template with the kernel's switch and the sizes
    scaled by ``scale``; also returns the plan (sizes actually used)."""
    sc = copy.deepcopy(load_template(TEMPLATE))
    hb = sc["hackbench"][0]
    hb["groups"] = max(1, round(SEED_GROUPS * scale))
    # Memory follows the groups actually run, so every scale has the seed's ratio of
    # workers to RAM and swap; the boot-time reservation shrinks with it.
    eff = hb["groups"] / SEED_GROUPS
    m = sc["machine"]
    nodes = int(m["nodes"])
    mem = int(parse_size(m["memory"]) * eff) // (4096 * nodes) * 4096 * nodes
    mem = max(mem, MIN_NODE_MEMORY * nodes)
    swap = max(int(parse_size(m["swap"]) * eff) // 4096 * 4096, 4096)
    reserved = max(int(parse_size(m.get("reserved", "32MiB")) * eff) // 4096 * 4096, 1 << 20)
    m["memory"] = fmt_bytes(mem)
    m["swap"] = fmt_bytes(swap)
    m["reserved"] = fmt_bytes(reserved)
    k = sc.setdefault("kernel", {})
    k["name"] = kernel if kernel in ("off", "limit") else f"limit-{limit}"
    k["reclaim_throttle"] = "off" if limit == 0 else "limit"
    k["reclaim_limit"] = limit
    plan = {
        "memory": m["memory"],
        "swap": m["swap"],
        "cpus": m["cpus"],
        "nodes": nodes,
        "groups": hb["groups"],
        "loops": hb["loops"],
        "workers": 2 * hb["groups"] * hb["fds"],
        "worker_memory": hb["worker_memory"],
    }
    return sc, plan


def _build(case: str, k: Kernel, seed: int, scale: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The skeleton's builder: one of the seed's two kernels."""
    return build_scenario(k.name, int(k.knobs["reclaim_limit"]), scale)


def _metrics(r: api.Result, notes: list[str]) -> Metrics:
    """The seed's figures of one run; a hackbench that did not finish is NaN."""
    d = r.data
    s = d["summary"]
    hb = d.get("workload", {}).get("hackbench_seconds")
    if hb is None or not s["completed"]:
        notes.append("hackbench did not finish within the time limit")
        hb = math.nan
    if s["oom_kills"]:
        notes.append(f"{s['oom_kills']} OOM kills")
    return {
        "hackbench_seconds": float(hb),
        "user_seconds": s["user_seconds"],
        "sys_seconds": s["sys_seconds"],
        "elapsed_seconds": s["elapsed_seconds"],
        "major_faults": float(d["vmstat_delta"].get("pgmajfault", 0)),
        "max_parallel_reclaimers": float(s["max_parallel_reclaimers"]),
        "max_try_to_free_pages_ms": s["max_try_to_free_pages_ms"],
        "pswpout": float(d["vmstat_delta"].get("pswpout", 0)),
        "reclaim_throttled": float(s["reclaim_throttled"]),
    }


def _measure(run: Run) -> Metrics:
    return _metrics(run.result, run.notes)


EXPERIMENT = Experiment(
    name=NAME,
    title=TITLE,
    kernels=KERNELS,
    cases=(CASE,),
    seed=SEED,
    claims=CLAIMS,
    build=_build,
    measure=_measure,
    calibrated={
        "user_seconds": "cost.msg_user was derived from seed 000's own user time "
        "(14 s over 48 M messages; docs/cost-model.md), so user time agrees by construction"
    },
)


def _sweep_point(lim: int) -> dict[str, Any]:
    """The knobs of one point of the limit sweep (0: no limit, the off kernel)."""
    return {
        "kernel.name": f"limit-{lim}",
        "kernel.reclaim_throttle": "off" if lim == 0 else "limit",
        "kernel.reclaim_limit": lim,
    }


def _row_metrics(row: dict[str, Any], notes: list[str]) -> Metrics:
    """The seed's figures of one sweep row (vmsim sweep's columns), as _metrics reads a run."""

    def num(col: str) -> float:
        v = row.get(col)
        return 0.0 if v is None else float(v)

    hb = row.get("workload.hackbench_seconds")
    if hb is None or not row.get("summary.completed"):
        notes.append("hackbench did not finish within the time limit")
        hb = math.nan
    if num("summary.oom_kills"):
        notes.append(f"{int(num('summary.oom_kills'))} OOM kills")
    return {
        "hackbench_seconds": float(hb),
        "user_seconds": num("summary.user_seconds"),
        "sys_seconds": num("summary.sys_seconds"),
        "elapsed_seconds": num("summary.elapsed_seconds"),
        "major_faults": num("vmstat_delta.pgmajfault"),
        "max_parallel_reclaimers": num("summary.max_parallel_reclaimers"),
        "max_try_to_free_pages_ms": num("summary.max_try_to_free_pages_ms"),
        "pswpout": num("vmstat_delta.pswpout"),
        "reclaim_throttled": num("summary.reclaim_throttled"),
    }


def _sweep(
    limits: list[int], scale: float, seed: int, bar: Progress, output_dir: Path | None
) -> list[tuple[int, Metrics, list[str]]]:
    """The limit sweep's points, one run each, through vmsim sweep's grid (parallel worker
    processes; kept in ``throttle-sweep.parquet`` of the output directory)."""
    from vmsim.sweep import run_grid

    base, _ = build_scenario("sweep", 4, scale)
    done = 0

    def advance(ran: int, total: int, failed: int) -> None:
        nonlocal done
        while done < ran:
            bar.advance()
            done += 1

    parquet = output_dir / "throttle-sweep.parquet" if output_dir is not None else None
    table = run_grid(
        base,
        [_sweep_point(lim) for lim in limits],
        seeds=[seed],
        output=parquet,
        progress=advance,
    )
    out = []
    for lim, row in zip(limits, table.iter_rows(named=True), strict=True):
        if row.get("error"):
            # A template or scaling bug, not the user's input.
            raise ReproduceError(f"limit {lim}: {row['error']}")
        notes: list[str] = []
        out.append((lim, _row_metrics(row, notes), notes))
    return out


def _finite(metrics: Metrics) -> dict[str, float | None]:
    """NaN (no figure: the run did not finish) as None, so the result is valid JSON."""
    return {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}


def reproduce(
    runs: int = DEFAULT_RUNS,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> ReproduceResult:
    """Runs both kernels ``runs`` times and the limit sweep once; returns the
    result and draws the sweep into ``output_dir`` (default: here)."""
    check_args(runs, scale)
    check_output_dir(output_dir)
    extra = [lim for lim in SWEEP if lim not in (0, 4)]
    total = total_runs(EXPERIMENT, runs) + len(extra)
    with Progress(total, "reproduce throttle", progress) as bar:
        r = run_kernels(EXPERIMENT, runs, scale, bar, output_dir=output_dir)
        sweep: dict[str, Metrics] = {
            "0": r.per_run[CASE]["off"][0],
            "4": r.per_run[CASE]["limit"][0],
        }
        bar.describe("the limit sweep")
        for lim, metrics, notes in _sweep(extra, scale, r.seeds[0], bar, output_dir):
            sweep[str(lim)] = metrics
            r.notes += [f"limit {lim}: {n}" for n in notes]
    out_dir = output_dir if output_dir is not None else Path(".")
    plot_path = out_dir / PLOT_FILE
    result = make_result(
        EXPERIMENT,
        r,
        sweep={str(lim): _finite(sweep[str(lim)]) for lim in SWEEP},
        plot=str(plot_path),
    )
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    draw_sweep(result["extra"]["sweep"], plot_path)
    write_outputs(output_dir, result, render_text(result))
    return result


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _cell(v: float | None, kind: str) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{round(v):d}" if kind == "int" else f"{v:.2f}"


def _limit_label(lim: str) -> str:
    return "unlimited" if lim == "0" else lim


def render_text(result: ReproduceResult) -> str:
    """The seed's table with vmsim's means and the seed's figures, the sweep, and the
    verdict of every claim."""
    m = result["means"][CASE]
    sd = SEED["kernels"]
    p = result["plans"][CASE]
    seeds = result["seeds"]
    lines = [
        TITLE,
        f"vmsim: {result['runs']} runs per kernel (seeds {seeds[0]}..{seeds[-1]}), "
        f"scale {result['scale']:g}: {p['cpus']} CPUs, "
        f"{p['nodes']} nodes, {p['memory']} RAM, {p['swap']} swap; hackbench "
        f"{p['groups']} process {p['loops']} ({p['workers']} workers of "
        f"{p['worker_memory']})",
        f"seed:  {SEED['machine']}",
        "",
        f"{'':<40s}{'vmsim':>28s}   |{'seed':>26s}",
        f"{'':<40s}{'before (off)':>14s}{'after (limit)':>14s}   |{'before':>14s}{'after':>14s}",
    ]
    for key, label, kind in METRICS:
        lines.append(
            f"{label + calibrated_mark(result, key):<40s}{_cell(m['off'].get(key), kind):>14s}"
            f"{_cell(m['limit'].get(key), kind):>14s}   |"
            f"{_cell(sd['off'][key], kind):>14s}{_cell(sd['limit'][key], kind):>14s}"
        )
    lines.append(
        f"{'pages swapped out (pswpout)':<40s}{_cell(m['off'].get('pswpout'), 'int'):>14s}"
        f"{_cell(m['limit'].get('pswpout'), 'int'):>14s}   |{'-':>14s}{'-':>14s}"
    )
    lines += ["", "Limit sweep (seed 1; the seed measured only unlimited and 4):"]
    lines.append(
        f"{'limit':>10s}{'hackbench s':>14s}{'sys s':>12s}{'elapsed s':>12s}"
        f"{'major faults':>14s}{'max reclaim':>13s}{'max ttfp ms':>13s}"
    )
    for lim, r in result["extra"]["sweep"].items():
        lines.append(
            f"{_limit_label(lim):>10s}{_cell(r['hackbench_seconds'], 'sec'):>14s}"
            f"{_cell(r['sys_seconds'], 'sec'):>12s}{_cell(r['elapsed_seconds'], 'sec'):>12s}"
            f"{_cell(r['major_faults'], 'int'):>14s}"
            f"{_cell(r['max_parallel_reclaimers'], 'int'):>13s}"
            f"{_cell(r['max_try_to_free_pages_ms'], 'int'):>13s}"
        )
    lines += ["", f"Plot: {result['extra']['plot']}", ""]
    lines += render_claims(result)
    if result["notes"]:
        lines += ["", "Notes:"] + [f"  {n}" for n in result["notes"]]
    return "\n".join(lines) + "\n"


def draw_sweep(sweep: dict[str, dict[str, float | None]], path: Path) -> None:
    """Four panels against the reclaimer limit: hackbench time, system time, major
    faults and the longest try_to_free_pages; unlimited at the right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [_limit_label(k) for k in sweep]
    xs = list(range(len(labels)))
    panels = (
        ("hackbench_seconds", "hackbench result [s]"),
        ("sys_seconds", "system time [s]"),
        ("major_faults", "major faults"),
        ("max_try_to_free_pages_ms", "longest try_to_free_pages [ms]"),
    )
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for ax, (key, title) in zip(axes.flat, panels, strict=True):
        ys = [math.nan if sweep[k][key] is None else sweep[k][key] for k in sweep]
        ax.plot(xs, ys, marker="o", color="tab:blue", label="vmsim")
        # The seed measured two points: unlimited (before) and the limit of 4 (after).
        seed_x = [list(sweep).index(k) for k in ("4", "0") if k in sweep]
        seed_y = [SEED["kernels"][k][key] for k in ("limit", "off")][: len(seed_x)]
        ax.plot(seed_x, seed_y, "s", color="tab:orange", label="seed")
        ax.legend(loc="upper left")
        ax.set_xticks(xs, labels)
        ax.set_xlabel("direct reclaimers allowed at once (reclaim_limit)")
        ax.set_title(title)
        if key == "max_try_to_free_pages_ms":
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle("vmsim: hackbench 120 process 1000 against the reclaimer limit (seed 000)")
    atomic.save_figure(fig, path, dpi=100)
    plt.close(fig)
