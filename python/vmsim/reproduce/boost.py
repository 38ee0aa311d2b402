"""Seed 004: watermark boosting against external fragmentation, on thpfioscale.

Mel Gorman's "mm: reclaim small amounts of memory when an external
fragmentation event occurs" (5.0) compared ``lowzone-v5r8`` (no boost) with
``boost-v5r8`` (``vm.watermark_boost_factor = 15000``) on mmtests'
thpfioscale: four fio threads write and then randomly read many 64 KiB files
(page cache and dentry/inode slab pressure) while 1 (1-socket Skylake) or 5
(2-socket Haswell) threads fault anonymous memory that wants huge pages, with
the default advice or MADV_HUGEPAGE. It reports the external-fragmentation
events below pageblock order, the fault latency of base and huge regions and
the share of huge regions.

vmsim runs today's kernel with the boost off (``lowzone``) and on
(``boost``); THP ``enabled = always``, ``defrag = madvise`` as in the seed's
kernels. The machines' memory sizes are not in the posting: the 1-socket
machine is modelled with 8 CPUs and 8 GiB, the 2-socket one with 48 CPUs and
2 × 8 GiB (``--scale`` shrinks memory and the workload together). The
experiment (:data:`EXPERIMENT`) runs on the shared skeleton
(:mod:`vmsim.reproduce.experiment`); the tables pool every region of every run
as mmtests does, the verdicts (:data:`CLAIMS`) compare the runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vmsim import api, plots
from vmsim._vmsim import ScenarioError
from vmsim.compare import amean, is_significant, pdiff, pndiff
from vmsim.reproduce.common import (
    Progress,
    ReproduceError,
    check_args,
    check_output_dir,
)
from vmsim.reproduce.experiment import (
    DEFAULT_RUNS,
    Experiment,
    Kernel,
    Metrics,
    ReproduceResult,
    Run,
    make_result,
    render_claims,
    run_kernels,
    total_runs,
    write_outputs,
)
from vmsim.reproduce.verdict import Claim, Exercised
from vmsim.units import fmt_bytes, human_bytes

NAME = "boost"
TITLE = (
    'seed 004: Mel Gorman, "mm: reclaim small amounts of memory when an external '
    'fragmentation event occurs" (2018-11-23)'
)
KERNELS = ("lowzone", "boost")
PLOT_FILE = "boost-timeseries.png"
PLOT_CONFIG = "2socket-madvhugepage"
BOOST_FACTOR = {"lowzone": 0, "boost": 15000}
SEED_LABELS = {"lowzone": "lowzone-v5r8", "boost": "boost-v5r8"}

HPAGE = 2 << 20
# The runs' time limit [s]: the write phase, a warm-up as long, then the THP threads
# (a 2-socket run at full size takes about 6,700 s).
RUN_LIMIT_S = 14400
FIO_FILE_SIZE = 64 << 10
FIO_THREADS = 4

# The seed's four configurations: machine and advice.
CONFIGS: dict[str, dict[str, Any]] = {
    "1socket-default": {
        "title": "1-socket Skylake, thpfioscale (no special madvise), 4 fio threads, 1 THP thread",
        "nodes": 1,
        "cpus": 8,
        "memory": 8 << 30,
        "thp_threads": 1,
        "madvise": False,
    },
    "1socket-madvhugepage": {
        "title": "1-socket Skylake, thpfioscale-madvhugepage (MADV_HUGEPAGE), 4 fio, 1 THP thread",
        "nodes": 1,
        "cpus": 8,
        "memory": 8 << 30,
        "thp_threads": 1,
        "madvise": True,
    },
    "2socket-default": {
        "title": "2-socket Haswell, thpfioscale (no special madvise), 4 fio threads, 5 THP threads",
        "nodes": 2,
        "cpus": 48,
        "memory": 16 << 30,
        "thp_threads": 5,
        "madvise": False,
    },
    "2socket-madvhugepage": {
        "title": "2-socket Haswell, thpfioscale-madvhugepage (MADV_HUGEPAGE), 4 fio, 5 THP threads",
        "nodes": 2,
        "cpus": 48,
        "memory": 16 << 30,
        "thp_threads": 5,
        "madvise": True,
    },
}

# The seed's figures (lowzone-v5r8 → boost-v5r8), and its extfrag counts:
# vanilla 4.20-rc3, +this patch alone, +patches 1-4.
SEED: dict[str, dict[str, Any]] = {
    "1socket-default": {
        "extfrag": {"vanilla": 804694, "patch": 408912, "patch1-4": 18421},
        "lowzone": {"fault_base_amean_us": 653.58, "fault_huge_amean_us": 0.00, "huge_pct": 0.00},
        "boost": {"fault_base_amean_us": 652.71, "fault_huge_amean_us": 178.93, "huge_pct": 5.12},
        "significant": {"fault_huge_amean_us"},
    },
    "1socket-madvhugepage": {
        "extfrag": {"vanilla": 291392, "patch": 191187, "patch1-4": 13464},
        "lowzone": {
            "fault_base_min_us": 912.00,
            "fault_huge_min_us": 127.00,
            "fault_base_amean_us": 1467.55,
            "fault_huge_amean_us": 1127.11,
            "huge_pct": 77.64,
        },
        "boost": {
            "fault_base_min_us": 905.00,
            "fault_huge_min_us": 135.00,
            "fault_base_amean_us": 1481.67,
            "fault_huge_amean_us": 1063.88,
            "huge_pct": 83.46,
        },
        "significant": {"fault_huge_amean_us"},
    },
    "2socket-default": {
        "extfrag": {"vanilla": 215698, "patch": 200210, "patch1-4": 14263},
        "lowzone": {
            "fault_base_amean_us": 1346.45,
            "fault_huge_amean_us": 3418.60,
            "huge_pct": 0.78,
        },
        "boost": {"fault_base_amean_us": 1306.87, "fault_huge_amean_us": 1348.94, "huge_pct": 7.91},
        "significant": set(),
    },
    "2socket-madvhugepage": {
        "extfrag": {"vanilla": 166352, "patch": 147463, "patch1-4": 11095},
        "lowzone": {
            "fault_base_amean_us": 6217.43,
            "fault_huge_amean_us": 3163.33,
            "huge_pct": 95.14,
        },
        "boost": {
            "fault_base_amean_us": 7419.67,
            "fault_huge_amean_us": 3263.80,
            "huge_pct": 87.98,
        },
        "significant": {"fault_base_amean_us"},
    },
}

METRICS = (
    "extfrag_events_below_pageblock",
    "fault_base_amean_us",
    "fault_huge_amean_us",
    "huge_pct",
)


def plan(config: str, scale: float) -> dict[str, Any]:
    """Sizes of one configuration at ``scale`` (mmtests' thpfioscale config arithmetic)."""
    c = CONFIGS[config]
    per_node = max(64 << 20, int(c["memory"] * scale) // c["nodes"] // HPAGE * HPAGE)
    memory = per_node * c["nodes"]
    fio_size = memory * 3 // 2
    files_per_thread = max(1, fio_size // FIO_FILE_SIZE // FIO_THREADS)
    threads = c["thp_threads"]
    thp_size = per_node * 3 // 4
    thread_size = max(HPAGE, thp_size // threads // HPAGE * HPAGE)
    # Each thread faults half its share (thpfioscale.c: nr_hpages = size/threads/2MiB/2).
    fault_size = max(HPAGE, thread_size // 2 // HPAGE * HPAGE)
    return {
        "config": config,
        "nodes": c["nodes"],
        "cpus": c["cpus"],
        "memory": memory,
        "fio_files_per_thread": files_per_thread,
        "thp_threads": threads,
        "thp_fault_size": fault_size,
        "madvise": c["madvise"],
    }


def build_scenario(
    config: str, kernel: str, seed: int, scale: float, *, sampling: str = "1s"
) -> dict[str, Any]:
    """The scenario of one run: a config's machine and workload on one kernel (sampling
    has no effect on the run, only on its time series)."""
    p = plan(config, scale)
    thp_prog: list[dict[str, Any]] = [
        {"op": "wait", "name": "synced"},
        # The random readers warm up for as long as the files took to write
        # (thpfioscale-bench of 2018-11-22: THPFIOSCALE_FIO_WARMUP defaults to INIT_TIME,
        # taken when fio's init ends, before the sync).
        {"op": "sleep_elapsed", "upto": "fio_written"},
    ]
    if p["madvise"]:
        thp_prog.append({"op": "madvise", "advice": "hugepage"})
    thp_prog += [
        {"op": "thp_fault", "size": fmt_bytes(p["thp_fault_size"])},
        {"op": "signal", "name": "thp_done"},
    ]
    return {
        "name": f"thpfioscale-{config}",
        "seed": seed,
        "duration": f"{RUN_LIMIT_S}s",
        # The seed-era cost figures, not this machine's measured profile: the seed ran on
        # hardware of its own (docs/cost-model.md).
        "costs": "seed-era",
        "machine": {
            "memory": fmt_bytes(p["memory"]),
            "cpus": p["cpus"],
            "nodes": p["nodes"],
        },
        "kernel": {
            "name": kernel,
            "watermark_boost_factor": BOOST_FACTOR[kernel],
            # Seed 004's thpfioscale wrote its files on XFS.
            "fs": "xfs",
            # 5.0: page-cache shadows (3.15+) but none for anonymous pages (5.9+).
            "workingset_anon": False,
            # New anonymous pages started on the active list before 5.9.
            "new_anon_active": True,
            "thp_enabled": "always",
            "thp_defrag": "madvise",
            # 5.0 retried as today (should_reclaim_retry, 4.7+) and woke the flushers for
            # unqueued dirty pages (4.13+); its wait_iff_congested() stalls are not modelled,
            # today's reclaim_throttle() (5.16+) stands in for them.
            "alloc_retry": "should_reclaim_retry",
            "reclaim_flusher_wakeup": "unqueued_dirty",
            "reclaim_congestion_wait": False,
            "reclaim_throttle": "modern",
            # 5.0 had no large page-cache folios; readahead keeps the fixed 32-page
            # window these runs were made with.
            "large_folios": False,
            # 5.0 freed boot memory to the lists' head (FPI_TO_TAIL came in 5.10).
            "boot_free_to_tail": False,
            # nor did its compaction sample pageblocks for free pages (5.1).
            "compaction_free_stride": False,
            # nor search the free lists for its scanners' blocks (5.1 too).
            "compaction_fast_search": False,
            # nor proactive compaction (vm.compaction_proactiveness came in 5.9).
            "compaction_proactiveness": 0,
            # 5.0's steal_suitable_fallback boosted on every fallback below pageblock
            # order, page cache stealing a page included (6.15+ boosts only on claims).
            "boost_on_steal": True,
            "ondemand_readahead": False,
        },
        "sampling": {"interval": sampling},
        "task": [
            {
                "name": "fio",
                "count": FIO_THREADS,
                "program": [
                    {
                        "op": "fio_write",
                        "files": p["fio_files_per_thread"],
                        "file_size": fmt_bytes(FIO_FILE_SIZE),
                    },
                    {"op": "signal", "name": "fio_written"},
                    {"op": "wait", "name": "synced"},
                    {"op": "fio_read", "until": "thp_done", "count": p["thp_threads"]},
                ],
            },
            {
                # thpfioscale-bench's shell: `sync` after fio's init, before the readers.
                "name": "bench",
                "program": [
                    {"op": "wait", "name": "fio_written", "count": FIO_THREADS},
                    {"op": "sync"},
                    {"op": "signal", "name": "synced"},
                ],
            },
            {"name": "thpfioscale", "count": p["thp_threads"], "program": thp_prog},
        ],
    }


def _run(scenario: dict[str, Any], what: str, scale: float) -> api.Result:
    try:
        return api.run(scenario)
    except ScenarioError as e:
        raise ReproduceError(f"boost {what} at --scale {scale}: {e}") from None


def run_samples(r: api.Result) -> dict[str, Any]:
    """What one run contributes: extfrag events and the region latencies [µs]."""
    d = r.data
    return {
        "extfrag_events_below_pageblock": d["fragmentation"]["extfrag_fragmenting"],
        "base_us": list(d["thp"]["region_base_us"]),
        "huge_us": list(d["thp"]["region_huge_us"]),
        "completed": d["summary"]["completed"],
    }


def metrics(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Means over runs of a kernel, as mmtests summarises thpfioscale: latencies over all
    fault samples (a lone 0 when a class has none), huge share over all faults."""
    base = [x for r in runs for x in r["base_us"]]
    huge = [x for r in runs for x in r["huge_us"]]
    n = len(base) + len(huge)
    return {
        "extfrag_events_below_pageblock": amean(
            [float(r["extfrag_events_below_pageblock"]) for r in runs]
        ),
        "fault_base_min_us": min(base) if base else 0.0,
        "fault_huge_min_us": min(huge) if huge else 0.0,
        "fault_base_amean_us": amean(base) if base else 0.0,
        "fault_huge_amean_us": amean(huge) if huge else 0.0,
        "huge_pct": 100.0 * len(huge) / n if n else -1.0,
    }


def _build(case: str, k: Kernel, seed: int, scale: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The skeleton's builder; the pictured run (run 1 of PLOT_CONFIG) samples finely."""
    sampling = "100ms" if case == PLOT_CONFIG and seed == 1 else "1s"
    return build_scenario(case, k.name, seed, scale, sampling=sampling), plan(case, scale)


def _measure(run: Run) -> Metrics:
    """One run's extfrag events and its regions: how many were huge, their mean latency."""
    s = run_samples(run.result)
    if not s["completed"]:
        run.notes.append(f"did not finish in {RUN_LIMIT_S} s")
    base, huge = s["base_us"], s["huge_us"]
    n = len(base) + len(huge)
    return {
        "extfrag_events_below_pageblock": float(s["extfrag_events_below_pageblock"]),
        "huge_pct": 100.0 * len(huge) / n if n else math.nan,
        "fault_base_amean_us": amean(base) if base else math.nan,
        "fault_huge_amean_us": amean(huge) if huge else math.nan,
        "regions_base": float(len(base)),
        "regions_huge": float(len(huge)),
    }


def _keep(run: Run) -> dict[str, Any]:
    """Every region latency of a run (the tables pool them) and the pictured run's data."""
    s = run_samples(run.result)
    pictured = run.case == PLOT_CONFIG and run.seed == 1
    return {**s, "data": run.result.data if pictured else None}


def _extfrag_claim(c: str) -> Claim:
    ex = SEED[c]["extfrag"]
    return Claim(
        f"{c}_extfrag_fewer",
        c,
        f"{c}: the boost cuts external fragmentation events (below pageblock order)",
        f"4.20-rc3 extfrag events < order 9: {ex['vanilla']}; 4.20-rc3+patch: {ex['patch']} "
        f"({round(100 * (1 - ex['patch'] / ex['vanilla']))}% reduction)",
        "extfrag_events_below_pageblock",
        "lowzone",
        "boost",
        expect="lower",
        seed_before=float(ex["vanilla"]),
        seed_after=float(ex["patch"]),
        exercised=_FALLBACKS,
    )


def _huge_claim(c: str, quote: str) -> Claim:
    low, high = SEED[c]["lowzone"]["huge_pct"], SEED[c]["boost"]["huge_pct"]
    return Claim(
        f"{c}_huge_more",
        c,
        f"{c}: the boost raises the share of huge regions",
        quote,
        "huge_pct",
        "lowzone",
        "boost",
        expect="higher",
        effect="points",
        seed_before=low,
        seed_after=high,
        exercised=_FALLBACKS,
    )


# The boost is raised by a fragmenting fallback (boost_watermark from the fallback path);
# without one it never acts.
_FALLBACKS = Exercised(
    "extfrag_events_below_pageblock",
    "lowzone",
    "fragmenting fallbacks (what raises the boost) happened",
)

CLAIMS: tuple[Claim, ...] = (
    *(_extfrag_claim(c) for c in CONFIGS),
    _huge_claim(
        "1socket-default",
        "The fault latency for huge pages appears to be increased but that is only because "
        "THP allocations were successful with the patch applied.",
    ),
    _huge_claim(
        "1socket-madvhugepage",
        "As before, massive reduction in external fragmentation events, some jitter on "
        "latencies and an increase in THP allocation success rates.",
    ),
    _huge_claim(
        "2socket-default",
        "There is a 93% reduction in fragmentation causing events, there is a big reduction "
        "in the huge page fault latency and allocation success rate is higher.",
    ),
    Claim(
        "2socket-default_huge_latency_lower",
        "2socket-default",
        "2socket-default: the boost cuts the huge regions' fault latency",
        "There is a 93% reduction in fragmentation causing events, there is a big reduction "
        "in the huge page fault latency and allocation success rate is higher.",
        "fault_huge_amean_us",
        "lowzone",
        "boost",
        expect="lower",
        seed_before=SEED["2socket-default"]["lowzone"]["fault_huge_amean_us"],
        seed_after=SEED["2socket-default"]["boost"]["fault_huge_amean_us"],
        exercised=_FALLBACKS,
    ),
)

EXPERIMENT = Experiment(
    name=NAME,
    title=TITLE,
    kernels=tuple(
        Kernel(k, SEED_LABELS[k], {"watermark_boost_factor": BOOST_FACTOR[k]}) for k in KERNELS
    ),
    cases=tuple(CONFIGS),
    seed={c: {k: v for k, v in SEED[c].items() if k != "significant"} for c in CONFIGS},
    claims=CLAIMS,
    build=_build,
    measure=_measure,
    keep=_keep,
)


def reproduce(
    runs: int = DEFAULT_RUNS,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> ReproduceResult:
    """Runs both kernels on the four configurations ``runs`` times each; draws the
    pictured run into ``output_dir`` (default: the current directory)."""
    check_args(runs, scale)
    check_output_dir(output_dir)
    with Progress(total_runs(EXPERIMENT, runs), "reproduce boost", enabled=progress) as bar:
        r = run_kernels(EXPERIMENT, runs, scale, bar, output_dir=output_dir)
    samples = r.kept
    pictured = [x["data"] for k in KERNELS for x in samples[PLOT_CONFIG][k] if x["data"]]
    out_dir = output_dir if output_dir is not None else Path(".")
    result = make_result(
        EXPERIMENT,
        r,
        configs={c: {k: metrics(samples[c][k]) for k in KERNELS} for c in CONFIGS},
        significant={
            c: {
                m: _significant(samples[c], m)
                for m in ("fault_base_amean_us", "fault_huge_amean_us")
            }
            for c in CONFIGS
        },
        plot=str(out_dir / PLOT_FILE),
    )
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    plots.save_atomic(plots.boost_figure(pictured), result["extra"]["plot"])
    write_outputs(output_dir, result, render_text(result))
    return result


def _significant(per_kernel: dict[str, list[dict[str, Any]]], metric: str) -> bool:
    """mmtests' mark of a significant difference of the pooled means (the '*' of its
    tables), as the seed's tables print it."""
    key = "base_us" if metric == "fault_base_amean_us" else "huge_us"
    base = [x for r in per_kernel["lowzone"] for x in r[key]] or [0.0]
    new = [x for r in per_kernel["boost"] for x in r[key]] or [0.0]
    return is_significant(new, base, "lower")


def _reduction(low: float, boost: float) -> float:
    return 100.0 * (low - boost) / low if low > 0 else 0.0


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


def _mm_row(stat: str, op: str, low: float, boost: float, kind: str, signif: bool) -> str:
    """One mmtests compare row: ``Amean     fault-base-1      653.58 (   0.00%) ...``."""
    pct = pndiff(boost, low) if kind == "lower" else pdiff(boost, low)
    cell = f"*{pct:6.2f}%*" if signif else f"({pct:6.2f}%)"
    label = f"{stat:<9} {op}"
    return f"{label:<24}{low:>12.2f} (  0.00%){boost:>12.2f} {cell}"


def _change(reduction: float) -> str:
    """``(49% reduction)`` or ``(294% more)``."""
    if reduction >= 0:
        return f"({reduction:.0f}% reduction)"
    return f"({-reduction:.0f}% more)"


def _config_block(result: ReproduceResult, c: str) -> list[str]:
    kern = result["extra"]["configs"][c]
    low, boost = kern["lowzone"], kern["boost"]
    seed = SEED[c]
    n = CONFIGS[c]["thp_threads"]
    sig = result["extra"]["significant"][c]
    p = result["plans"][c]
    reduction = _reduction(
        low["extfrag_events_below_pageblock"], boost["extfrag_events_below_pageblock"]
    )
    out = [
        "",
        CONFIGS[c]["title"],
        "-" * len(CONFIGS[c]["title"]),
        f"machine: {p['nodes']} node(s), {p['cpus']} CPUs, {human_bytes(p['memory'])}; "
        f"fio {FIO_THREADS} x {p['fio_files_per_thread']} files of 64 KiB; "
        f"{n} THP thread(s) x {human_bytes(p['thp_fault_size'])}",
        "",
        "extfrag events < order 9        vmsim                               seed",
        f"  lowzone     {low['extfrag_events_below_pageblock']:>10.1f}"
        f"{'':<26}4.20-rc3     {seed['extfrag']['vanilla']:>8d}",
        f"  boost       {boost['extfrag_events_below_pageblock']:>10.1f} "
        f"{_change(reduction):<25}"
        f"+patch       {seed['extfrag']['patch']:>8d} "
        f"{_change(_reduction(seed['extfrag']['vanilla'], seed['extfrag']['patch']))}",
        f"  {'':<48}+patch1-4    {seed['extfrag']['patch1-4']:>8d} "
        f"{_change(_reduction(seed['extfrag']['vanilla'], seed['extfrag']['patch1-4']))}",
        "",
        "thpfioscale Fault Latencies (vmsim)",
        f"{'':<24}{'lowzone':>12}{'':>10}{'boost':>12}",
    ]
    rows = [
        ("Min", f"fault-base-{n}", "fault_base_min_us", False),
        ("Min", f"fault-huge-{n}", "fault_huge_min_us", False),
        ("Amean", f"fault-base-{n}", "fault_base_amean_us", sig["fault_base_amean_us"]),
        ("Amean", f"fault-huge-{n}", "fault_huge_amean_us", sig["fault_huge_amean_us"]),
    ]
    for stat, op, key, s in rows:
        out.append(_mm_row(stat, op, low[key], boost[key], "lower", s))
    out += [
        "",
        f"{'':<24}{'lowzone':>12}{'':>10}{'boost':>12}",
        _mm_row("Percentage", f"huge-{n}", low["huge_pct"], boost["huge_pct"], "higher", False),
        "",
        "the seed's                  lowzone-v5r8            boost-v5r8",
    ]
    for stat, op, key, _ in rows:
        if key in seed["lowzone"]:
            out.append(
                _mm_row(
                    stat,
                    op,
                    seed["lowzone"][key],
                    seed["boost"][key],
                    "lower",
                    key in seed["significant"],
                )
            )
    out.append(
        _mm_row(
            "Percentage",
            f"huge-{n}",
            seed["lowzone"]["huge_pct"],
            seed["boost"]["huge_pct"],
            "higher",
            False,
        )
    )
    return out


def render_text(result: ReproduceResult) -> str:
    """The seed's tables, vmsim's figures first and the seed's beside them, then the
    verdict of every claim."""
    out = [
        TITLE,
        f"vmsim: lowzone (watermark_boost_factor = 0) against boost (15000); "
        f"{result['runs']} run(s) each, --scale {result['scale']:g}",
        "Latencies are per 2 MiB region in µs (first touch to the end of writing it, as",
        "thpfioscale.c times them); * marks a significant difference of the means.",
    ]
    for c in CONFIGS:
        out += _config_block(result, c)
    out += ["", *render_claims(result)]
    if result["notes"]:
        out += ["", "Notes"] + [f"  {n}" for n in result["notes"]]
    out += [
        "",
        f"Free pages, watermarks with the boost, kswapd and kcompactd over the "
        f"{PLOT_CONFIG} run: {result['extra']['plot']}",
        "See docs/reproduce-boost.md.",
    ]
    return "\n".join(out) + "\n"


__all__ = ["CONFIGS", "KERNELS", "METRICS", "build_scenario", "reproduce", "render_text"]
