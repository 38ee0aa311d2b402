"""Seed 000: KOSAKI Motohiro, "[RFC][PATCH] the proposal of improve page reclaim by
throttle" (LKML, 2008-02-19), reproduced: ``vmsim reproduce throttle``.

The seed runs ``hackbench 120 process 1000`` on an IA64 machine with 8 CPUs,
8 GB of RAM in two nodes and 2 GB of swap, on 2.6.25 before and after a patch
that lets at most RECLAIM_LIMIT = 2 × nodes with memory (4) tasks into direct
reclaim at once. Two kernels:

- ``off`` (``kernel.reclaim_throttle = "off"``): any number of direct reclaimers;
- ``limit`` (``"limit"``): the patch.

Both use the 2.6.25-era reclaim of vmsim (``reclaim_scan = "classic"``, naps in
congestion_wait between priorities). Each kernel runs the scenario ``runs``
times (seeds 1..runs); the report gives the seed's table with vmsim's means and
the seed's figures beside them, and whether each of the seed's claims holds.
A sweep of the limit (1, 2, 4, 8, 16, 64, unlimited; seed 1) is printed as a
table and drawn to ``throttle-sweep.png`` in the output directory (default: the
current directory).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from vmsim import api
from vmsim._vmsim import ScenarioError
from vmsim.reproduce.common import (
    Progress,
    ReproduceError,
    check_args,
    check_output_dir,
    fmt_bytes,
    load_template,
    mean_metrics,
    parse_size,
    save_result,
)

NAME = "throttle"
TITLE = (
    'seed 000: KOSAKI Motohiro, "[RFC][PATCH] the proposal of improve page reclaim '
    'by throttle" (2008-02-19)'
)
TEMPLATE = "throttle"
PLOT_FILE = "throttle-sweep.png"

KERNELS = ("off", "limit")
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

# A change smaller than NOISE (as a fraction) is "no change"; the seed's ratio and
# vmsim's within a factor SIZE_FACTOR of each other (in log terms) are "similar".
NOISE = 0.10
SIZE_FACTOR = 2.0


def build_scenario(kernel: str, limit: int, scale: float) -> tuple[dict[str, Any], dict]:
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
    k["name"] = kernel if kernel in KERNELS else f"limit-{limit}"
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


def _run(scenario: dict[str, Any], seed: int, what: str) -> api.Result:
    try:
        return api.run(scenario, seed=seed)
    except ScenarioError as e:  # a template or scaling bug, not the user's input
        raise ReproduceError(f"{what}: {e}") from None


def _metrics(r: api.Result, notes: list[str], what: str) -> dict[str, float]:
    """The seed's figures of one run; a hackbench that did not finish is NaN."""
    d = r.data
    s = d["summary"]
    hb = d.get("workload", {}).get("hackbench_seconds")
    if hb is None or not s["completed"]:
        notes.append(f"{what}: hackbench did not finish within the time limit")
        hb = math.nan
    if s["oom_kills"]:
        notes.append(f"{what}: {s['oom_kills']} OOM kills")
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


def _finite(metrics: dict[str, float]) -> dict[str, float | None]:
    """NaN (no figure: the run did not finish) as None, so the result is valid JSON."""
    return {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}


def reproduce(
    runs: int = 3,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Runs both kernels ``runs`` times and the limit sweep once; returns the
    JSON-ready result and draws the sweep into ``output_dir`` (default: here)."""
    check_args(runs, scale)
    check_output_dir(output_dir)
    seeds = list(range(1, runs + 1))
    per_run: dict[str, list[dict[str, float]]] = {k: [] for k in KERNELS}
    sweep: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    plan: dict[str, Any] = {}
    extra = [lim for lim in SWEEP if lim not in (0, 4)]
    with Progress(len(KERNELS) * runs + len(extra), "reproduce throttle", progress) as bar:
        for k in KERNELS:
            for seed in seeds:
                bar.describe(f"{k} run {seed}/{runs}")
                sc, plan = build_scenario(k, 0 if k == "off" else 4, scale)
                what = f"{k} run {seed}"
                per_run[k].append(_metrics(_run(sc, seed, what), notes, what))
                bar.advance()
        sweep["0"] = per_run["off"][0]
        sweep["4"] = per_run["limit"][0]
        for lim in extra:
            bar.describe(f"limit {lim}")
            sc, _ = build_scenario("sweep", lim, scale)
            what = f"limit {lim}"
            sweep[str(lim)] = _metrics(_run(sc, seeds[0], what), notes, what)
            bar.advance()
    means = {k: _finite(mean_metrics(per_run[k])) for k in KERNELS}
    per_run = {k: [_finite(r) for r in rs] for k, rs in per_run.items()}
    sweep = {lim: _finite(r) for lim, r in sweep.items()}
    out_dir = output_dir if output_dir is not None else Path(".")
    plot_path = out_dir / PLOT_FILE
    result: dict[str, Any] = {
        "experiment": NAME,
        "title": TITLE,
        "runs": runs,
        "scale": scale,
        "seeds": seeds,
        "plan": plan,
        "kernels": means,
        "per_run": per_run,
        "sweep": {str(lim): sweep[str(lim)] for lim in SWEEP},
        "seed": SEED,
        "agreement": agreement(means),
        "notes": notes,
        "plot": str(plot_path),
    }
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    draw_sweep(result["sweep"], plot_path)
    save_result(output_dir, result, render_text(result))
    return result


# ---------------------------------------------------------------------------
# Direction
# ---------------------------------------------------------------------------


def _verdict(vm_ratio: float, seed_ratio: float) -> str:
    """agrees / weaker / none / disagrees, from limit÷off ratios."""
    if not (math.isfinite(vm_ratio) and vm_ratio > 0):
        return "no figure"
    seed_down = seed_ratio < 1
    if abs(vm_ratio - 1) < NOISE:
        return "none"
    if (vm_ratio < 1) != seed_down:
        return "disagrees"
    if abs(math.log(vm_ratio) - math.log(seed_ratio)) <= math.log(SIZE_FACTOR):
        return "agrees"
    return "weaker" if abs(math.log(vm_ratio)) < abs(math.log(seed_ratio)) else "stronger"


def agreement(means: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    """For every metric the seed moves, vmsim's limit÷off ratio beside the seed's."""
    out: dict[str, Any] = {}
    for key, _, _ in METRICS:
        if key == "user_seconds":
            continue  # the seed's user time does not move
        a, b = means["off"].get(key), means["limit"].get(key)
        a = math.nan if a is None else a
        b = math.nan if b is None else b
        sa, sb = SEED["kernels"]["off"][key], SEED["kernels"]["limit"][key]
        vm_ratio = b / a if a and math.isfinite(a) and math.isfinite(b) else math.nan
        seed_ratio = sb / sa
        out[key] = {
            "vmsim_ratio": vm_ratio if math.isfinite(vm_ratio) else None,
            "seed_ratio": seed_ratio,
            "verdict": _verdict(vm_ratio, seed_ratio),
        }
    return out


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _cell(v: float | None, kind: str) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{round(v):d}" if kind == "int" else f"{v:.2f}"


def _limit_label(lim: str) -> str:
    return "unlimited" if lim == "0" else lim


def render_text(result: dict[str, Any]) -> str:
    """The seed's table with vmsim's means and the seed's figures, the sweep, and the
    direction of every claim."""
    m = result["kernels"]
    sd = SEED["kernels"]
    p = result["plan"]
    lines = [
        TITLE,
        f"vmsim: {result['runs']} runs per kernel (seeds {result['seeds'][0]}.."
        f"{result['seeds'][-1]}), scale {result['scale']:g}: {p['cpus']} CPUs, "
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
            f"{label:<40s}{_cell(m['off'].get(key), kind):>14s}"
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
    for lim, r in result["sweep"].items():
        lines.append(
            f"{_limit_label(lim):>10s}{_cell(r['hackbench_seconds'], 'sec'):>14s}"
            f"{_cell(r['sys_seconds'], 'sec'):>12s}{_cell(r['elapsed_seconds'], 'sec'):>12s}"
            f"{_cell(r['major_faults'], 'int'):>14s}"
            f"{_cell(r['max_parallel_reclaimers'], 'int'):>13s}"
            f"{_cell(r['max_try_to_free_pages_ms'], 'int'):>13s}"
        )
    lines += ["", f"Plot: {result['plot']}", "", "Does vmsim agree with the seed? (after ÷ before)"]
    for key, label, _ in METRICS:
        a = result["agreement"].get(key)
        if a is None:
            continue
        vr = a["vmsim_ratio"]
        vm = f"{vr:.3f}" if vr is not None else "-"
        lines.append(f"  {label:<40s} vmsim {vm:>7s}  seed {a['seed_ratio']:.3f}  {a['verdict']}")
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
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
