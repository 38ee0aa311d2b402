"""Seed 001: Mel Gorman, "Reduce writeback from page reclaim context V6" (linux-mm,
2010-07-30), reproduced: ``vmsim reproduce writeback``.

The seed compares three kernels, each a setting of ``kernel.reclaim_writeback``:

- ``traceonly-v6`` (patches 1-4, tracing only): direct reclaim and kswapd both
  write dirty file pages they meet at the end of the LRU;
- ``nodirect-v6`` (+ patch 5): direct reclaim never writes file pages, only kswapd;
- ``flushforward-v6`` (+ patch 6): as nodirect, and reclaim that meets dirty
  pages kicks the flusher threads to clean them.

on the X86-64 machine (AMD Phenom 4-core, 3 GB, one disk, dirty_ratio 20) with
two workloads (scenario templates in ``scenarios/writeback-*.toml``):
kernbench and stress-highalloc. The experiment (:data:`EXPERIMENT`) runs on the
shared skeleton (:mod:`vmsim.reproduce.experiment`): each kernel runs each
workload ``runs`` times (seeds 1..runs) with a trace in the 2.6.35 formats; the
seed's report rows come from that trace through
``vmsim.reclaim_report.report_dict`` (Mel's post-processing script), with user,
sys and elapsed seconds from the run, and are averaged over the runs. The text
report puts the seed's own X86-64 figures beside vmsim's and gives the verdict
of each of the seed's claims (:data:`CLAIMS`).

The run's seed also draws each compile job's anonymous size and CPU time, so
runs differ as repeated real runs do; the same arguments give the same bytes.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

from vmsim import api
from vmsim.reclaim_report import SEED_ROWS
from vmsim.reproduce.common import (
    Progress,
    ReproduceError,
    check_args,
    check_output_dir,
    finite_or_none,
    fmt_value,
    load_template,
    scaled_bytes,
    side_by_side,
)
from vmsim.reproduce.experiment import (
    DEFAULT_RUNS,
    Experiment,
    Kernel,
    Metrics,
    ReproduceResult,
    Run,
    make_result,
    mean_metrics,
    render_claims,
    run_kernels,
    total_runs,
    write_outputs,
)
from vmsim.reproduce.kernbench import Jobs, compile_job, kernbench_tasks, untar
from vmsim.reproduce.verdict import Claim, Exercised
from vmsim.units import fmt_bytes, fmt_ms, human_bytes, parse_duration, parse_size

NAME = "writeback"
TITLE = 'seed 001: Mel Gorman, "Reduce writeback from page reclaim context V6" (2010-07-30)'

KERNELS = ("traceonly", "nodirect", "flushforward")
LABELS = {k: f"{k}-v6" for k in KERNELS}
# Each kernel is a setting of kernel.reclaim_writeback.
KERNEL_DEFS = tuple(Kernel(k, LABELS[k], {"reclaim_writeback": k}) for k in KERNELS)
WORKLOADS = ("kernbench", "stress-highalloc")
TEMPLATES = {w: f"writeback-{w}" for w in WORKLOADS}

# "Little impact on the success rates": the seed gives no rates, so how little is our
# reading, stated with the claim.
SUCCESS_TOLERANCE_POINTS = 10.0

# The comm names of the three high-order passes and of the builds' tasks.
PASSES = (("pass1", "highalloc-1"), ("pass2", "highalloc-2"), ("rest", "highalloc-rest"))

# ---------------------------------------------------------------------------
# The seed's figures, transcribed verbatim from the posting (X86-64 machine)
# ---------------------------------------------------------------------------

# "Stress HighAlloc" section, table "X86-64" (columns traceonly-v6, nodirect-v6,
# flushforward-v6), copied line by line from the seed text.
_SEED_X86_64_STRESS_HIGHALLOC = """\
Direct reclaims 1159 1112 1066
Direct reclaim pages scanned 172491 147763 142100
Direct reclaim write file async I/O 2496 0 0
Direct reclaim write anon async I/O 32486 19527 15355
Direct reclaim write file sync I/O 1913 0 0
Direct reclaim write anon sync I/O 14434 2806 3704
Wake kswapd requests 1159 1101 1061
Kswapd wakeups 1110 827 785
Kswapd pages scanned 23467327 8064964 4873397
Kswapd reclaim write file async I/O 652531 86003 9135
Kswapd reclaim write anon async I/O 2476541 500556 205612
Kswapd reclaim write file sync I/O 0 0 0
Kswapd reclaim write anon sync I/O 0 0 0
Time stalled direct reclaim (seconds) 7906.48 1355.70 428.86
Time kswapd awake (seconds) 4263.89 1029.43 468.59
Total pages scanned 23639818 8212727 5015497
Percentage pages scanned/written 13.45% 7.41% 4.66%
User/Sys Time Running Test (seconds) 2806.01 2744.46 2789.54
Percentage Time Spent Direct Reclaim 73.81% 33.06% 13.33%
Total Elapsed Time (seconds) 10274.33 3705.47 2812.54
Percentage Time kswapd Awake 41.50% 27.78% 16.66%
"""

# "SysBench" section, table "X86-64" (the seed gives no figures for kernbench and
# IOzone: "No writeback from reclaim initiated"). vmsim has no SysBench (OLTP)
# workload yet; the figures are kept for reference in the JSON output.
_SEED_X86_64_SYSBENCH = """\
Direct reclaims 906 700 897
Direct reclaim pages scanned 161635 221601 62442
Direct reclaim write file async I/O 16881 0 0
Direct reclaim write anon async I/O 2558 562 706
Direct reclaim write file sync I/O 24 0 0
Direct reclaim write anon sync I/O 0 0 0
Wake kswapd requests 844622 688841 803158
Kswapd wakeups 1480 1466 1529
Kswapd pages scanned 16194333 16558633 15386430
Kswapd reclaim write file async I/O 460459 843545 193560
Kswapd reclaim write anon async I/O 243146 269235 210824
Kswapd reclaim write file sync I/O 0 0 0
Kswapd reclaim write anon sync I/O 0 0 0
Time stalled direct reclaim (seconds) 19.75 29.33 5.71
Time kswapd awake (seconds) 2067.45 2058.20 2108.51
Total pages scanned 16355968 16780234 15448872
Percentage pages scanned/written 4.42% 6.63% 2.62%
User/Sys Time Running Test (seconds) 634.69 637.54 659.72
Percentage Time Spent Direct Reclaim 3.02% 4.40% 0.86%
Total Elapsed Time (seconds) 6197.20 6234.80 6591.33
Percentage Time kswapd Awake 33.36% 33.01% 31.99%
"""

# What the seed says in words where it gives no table, quoted.
SEED_QUOTES = {
    "kernbench": "No writeback from reclaim initiated and no performance change of significance.",
    "stress-highalloc": "The patches have little impact on the success rates.",
    "stress-highalloc-time": "Again, the test completes far faster with the full series and "
    "fewer dirty pages are encountered. File writebacks from kswapd are reduced to negligible "
    "levels.",
}

_LABEL_KEY = {label: key for label, key, _ in SEED_ROWS}
_KIND = {key: kind for _, key, kind in SEED_ROWS}


def _parse_seed_table(text: str) -> dict[str, dict[str, float | int]]:
    """{kernel: {metric: value}} of a table transcribed above (percentages as 4.66)."""
    out: dict[str, dict[str, float | int]] = {k: {} for k in KERNELS}
    for line in text.splitlines():
        words = line.split()
        label, cells = " ".join(words[:-3]), words[-3:]
        key = _LABEL_KEY[label]
        for k, cell in zip(KERNELS, cells, strict=True):
            c = cell.rstrip("%")
            out[k][key] = float(c) if "." in c or cell.endswith("%") else int(c)
    return out


SEED: dict[str, Any] = {
    "posting": "Mel Gorman, Reduce writeback from page reclaim context V6, linux-mm, 2010-07-30",
    "machine": "X86-64: AMD Phenom 4-core, 3 GB RAM, one disk, XFS, dirty_ratio 20",
    "kernels": {k: LABELS[k] for k in KERNELS},
    "stress-highalloc": _parse_seed_table(_SEED_X86_64_STRESS_HIGHALLOC),
    "sysbench": _parse_seed_table(_SEED_X86_64_SYSBENCH),
    "kernbench": None,
    "quotes": SEED_QUOTES,
    "highalloc_success": None,
    "tables_verbatim": {
        "stress-highalloc": _SEED_X86_64_STRESS_HIGHALLOC,
        "sysbench": _SEED_X86_64_SYSBENCH,
    },
}

# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

_KNOB_DEFAULTS = None


def _knob_default(key: str) -> Any:
    global _KNOB_DEFAULTS
    if _KNOB_DEFAULTS is None:
        _KNOB_DEFAULTS = {f"{k['section']}.{k['name']}": k["default"] for k in api.knobs()}
    return _KNOB_DEFAULTS[key]


def _highalloc_count(memory: int, wl: dict[str, Any]) -> int:
    """Attempts per pass: HIGHALLOC_PERCENTAGE of MemTotal in huge pages."""
    huge = 4096 << int(wl["order"])
    return max(1, memory * int(wl["percentage"]) // 100 // huge)


def _stress_tasks(
    wl: dict[str, Any], scale: float, rng: random.Random, memory: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    jobs = int(wl["jobs"])
    tree = scaled_bytes(parse_size(wl["tree"]) / jobs, scale)
    obj = scaled_bytes(wl["object"], scale)
    inodes = max(0, round(int(wl["inodes"]) * scale))
    draw = Jobs(wl, scale, rng)
    tasks: list[dict[str, Any]] = []
    for b in range(int(wl["builds"])):
        prefix = f"b{b}/"
        prog = untar(prefix, jobs, tree, inodes)
        for j in range(jobs):
            anon, cpu = draw.draw()
            prog += compile_job(prefix, j, anon, cpu, obj)
        # The tree is deleted (mmtests deletes it after killing the build).
        for j in range(jobs):
            prog.append({"op": "unlink", "file": f"{prefix}src{j}"})
            prog.append({"op": "unlink", "file": f"{prefix}obj{j}"})
        if inodes:
            prog.append({"op": "slab_free", "cache": "xfs_inode", "objects": inodes})
            prog.append({"op": "slab_free", "cache": "dentry", "objects": inodes})
        tasks.append({"name": f"build-{b + 1}", "program": prog})

    order = int(wl["order"])
    count = _highalloc_count(memory, wl)
    delay = parse_duration(wl["delay"])
    nominal = count * delay
    attempt: list[dict[str, Any]] = [
        {"op": "alloc", "order": order, "count": 1, "type": "movable"},
        {"op": "sleep", "time": fmt_ms(delay)},
    ]
    start1 = parse_duration(wl["warmup"]) * scale
    start2 = start1 + float(wl["pass_gap"]) * nominal
    start3 = start2 + float(wl["pass_gap"]) * nominal + parse_duration(wl["settle"]) * scale
    tasks.append(
        {"name": "highalloc-1", "start": fmt_ms(start1), "repeat": count, "program": attempt}
    )
    tasks.append(
        {"name": "highalloc-2", "start": fmt_ms(start2), "repeat": count, "program": attempt}
    )
    rest: list[dict[str, Any]] = [
        {"op": "write", "file": "rest/dd", "size": fmt_bytes(memory)},
        {"op": "read", "file": "rest/dd"},
        {"op": "unlink", "file": "rest/dd"},
    ]
    rest += attempt * count
    tasks.append({"name": "highalloc-rest", "start": fmt_ms(start3), "program": rest})
    plan = {
        "order": order,
        "attempts_per_pass": count,
        "nominal_pass_seconds": nominal,
        "start_seconds": {
            "pass1": round(start1, 3),
            "pass2": round(start2, 3),
            "rest": round(start3, 3),
        },
        "builds": int(wl["builds"]),
        "settle_seconds": parse_duration(wl["settle"]) * scale,
    }
    return tasks, plan


def build_scenario(
    workload: str, kernel: str, seed: int, scale: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine scenario (a dict) of ``workload`` on ``kernel`` for run ``seed`` at
    ``scale``, and the plan of the highalloc passes (empty for kernbench)."""
    tpl = copy.deepcopy(load_template(TEMPLATES[workload]))
    wl = tpl.pop("workload")
    m = tpl["machine"]
    memory = scaled_bytes(m["memory"], scale, minimum=1 << 20)
    m["memory"] = fmt_bytes(memory)
    if "swap" in m:
        m["swap"] = fmt_bytes(scaled_bytes(m["swap"], scale, minimum=0))
    k = tpl.setdefault("kernel", {})
    k["name"] = LABELS[kernel]
    k["reclaim_writeback"] = kernel
    # The flusher's timers shrink with the workload's timeline.
    for knob in ("dirty_expire_centisecs", "dirty_writeback_centisecs"):
        k[knob] = max(1, round(int(k.get(knob, _knob_default(f"kernel.{knob}"))) * scale))
    disk = tpl.get("disk", {})
    if "latency" in disk:
        disk["latency"] = max(1, round(int(disk["latency"]) * scale))
    smp = tpl.get("sampling", {})
    if "interval" in smp:
        smp["interval"] = fmt_ms(parse_duration(smp["interval"]) * scale)
    tpl["duration"] = fmt_ms(parse_duration(tpl.get("duration", "3600s")) * scale)
    tpl["name"] = f"{tpl.get('name', TEMPLATES[workload])}-{kernel}"
    tpl["seed"] = seed
    rng = random.Random(f"{workload}:{seed}")
    if wl["kind"] == "kernbench":
        tasks, plan = kernbench_tasks(wl, scale, rng)
    elif wl["kind"] == "stress-highalloc":
        tasks, plan = _stress_tasks(wl, scale, rng, memory)
    else:
        raise ReproduceError(f"{TEMPLATES[workload]}.toml: unknown workload kind {wl['kind']}")
    tpl["task"] = tasks
    return tpl, plan


# ---------------------------------------------------------------------------
# Metrics of one run
# ---------------------------------------------------------------------------

# Report rows kept per run: the seed's rows, plus reclaimed pages and user/sys apart.
REPORT_KEYS = tuple(key for _, key, _ in SEED_ROWS) + (
    "direct_pages_reclaimed",
    "kswapd_pages_reclaimed",
    "user_seconds",
    "sys_seconds",
)

HIGHALLOC_KEYS = (
    "highalloc_pass1_pct",
    "highalloc_pass2_pct",
    "highalloc_rest_pct",
    "highalloc_pass1_seconds",
    "highalloc_pass2_seconds",
    "highalloc_rest_seconds",
    "builds_seconds",
    "chained_elapsed_seconds",
    "pass1_overrun_seconds",
    "pass2_overrun_seconds",
    "builds_overrun_seconds",
)


def _report_metrics(report: dict[str, Any]) -> Metrics:
    """The seed's report rows of one run's trace, and the sums the claims compare."""
    out: Metrics = {}
    for key in REPORT_KEYS:
        v = finite_or_none(report.get(key))
        # A percentage of nothing (no page scanned, no CPU time) is 0 %.
        out[key] = 0.0 if v is None else v
    out["direct_write_file"] = out["direct_write_file_async"] + out["direct_write_file_sync"]
    out["kswapd_write_file"] = out["kswapd_write_file_async"] + out["kswapd_write_file_sync"]
    out["reclaim_writes"] = sum(out[key] for key in REPORT_KEYS if "_write_" in key)
    return out


def _highalloc_metrics(result: api.Result, plan: dict[str, Any], notes: list[str]) -> Metrics:
    tasks = result.data["tasks"]
    count = plan["attempts_per_pass"]
    starts = plan["start_seconds"]
    out: Metrics = {"highalloc_attempts": float(3 * count)}
    ends: dict[str, float] = {}
    successes = 0
    for name, comm in PASSES:
        t = tasks.get(comm)
        if t is None:
            notes.append(f"{comm} never ran (the run hit its time limit)")
            out[f"highalloc_{name}_pct"] = 0.0
            out[f"highalloc_{name}_seconds"] = 0.0
            ends[name] = starts[name]
            continue
        failed = int(t["alloc_failed"])
        if t["oom_killed"]:
            notes.append(f"{comm} was OOM-killed; its unattempted allocations count as failed")
        ok = max(0, count - failed) if not t["oom_killed"] else 0
        successes += ok
        out[f"highalloc_{name}_pct"] = 100.0 * ok / count
        out[f"highalloc_{name}_seconds"] = float(t["mean_runtime_seconds"])
        ends[name] = starts[name] + float(t["mean_runtime_seconds"])
    builds = [
        float(tasks[f"build-{b + 1}"]["mean_runtime_seconds"])
        for b in range(plan["builds"])
        if f"build-{b + 1}" in tasks
    ]
    out["builds_seconds"] = max(builds, default=0.0)
    # The elapsed time had the passes run back to back as mmtests runs them: pass 2
    # right after pass 1, the rest pass `settle` later (or once the builds ended,
    # since vmsim cannot kill them).
    out["chained_elapsed_seconds"] = (
        max(
            starts["pass1"]
            + out["highalloc_pass1_seconds"]
            + out["highalloc_pass2_seconds"]
            + plan["settle_seconds"],
            out["builds_seconds"],
        )
        + out["highalloc_rest_seconds"]
    )
    out["pass1_overrun_seconds"] = max(0.0, ends["pass1"] - starts["pass2"])
    out["pass2_overrun_seconds"] = max(0.0, ends["pass2"] - starts["rest"])
    out["builds_overrun_seconds"] = max(0.0, out["builds_seconds"] - starts["rest"])
    frag_ok = result.data["fragmentation"]["alloc_success"][plan["order"]]
    if frag_ok != successes:
        notes.append(
            f"order-{plan['order']} successes: {frag_ok} in the allocator's counters, "
            f"{successes} from the passes' failures"
        )
    return out


# ---------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------


def _build(case: str, k: Kernel, seed: int, scale: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The skeleton's builder: workload ``case`` on kernel ``k``."""
    return build_scenario(case, k.name, seed, scale)


def _measure(run: Run) -> Metrics:
    """One run's report rows (from its trace) and, for stress-highalloc, the passes."""
    assert run.report is not None, "writeback runs are traced"
    metrics = _report_metrics(run.report)
    summary = run.result.summary
    if not summary["completed"]:
        run.notes.append("the run hit its time limit before every task exited")
    if summary["oom_kills"]:
        run.notes.append(f"{summary['oom_kills']} tasks were OOM-killed")
    if run.case == "stress-highalloc":
        metrics.update(_highalloc_metrics(run.result, run.plan, run.notes))
    return metrics


def _sh(metric: str, text: str, quote: str, **kw: Any) -> Claim:
    """A stress-highalloc claim, traceonly -> flushforward unless said otherwise, with
    the seed's X86-64 figures of ``metric`` (where the table has it)."""
    before, after = kw.pop("kernels", ("traceonly", "flushforward"))
    table = SEED["stress-highalloc"]
    seed_metric = kw.pop("seed_metric", metric)
    figures: dict[str, Any] = {}
    if seed_metric is not None:
        figures = {
            "seed_before": sum(float(table[before][m]) for m in seed_metric.split("+")),
            "seed_after": sum(float(table[after][m]) for m in seed_metric.split("+")),
        }
    kw.setdefault("expect", "lower")
    kw.setdefault("exercised", Exercised("direct_reclaims", "traceonly", "direct reclaim ran"))
    return Claim(
        kw.pop("id"), "stress-highalloc", text, quote, metric, before, after, **figures, **kw
    )


_LITTLE = (
    f"{SUCCESS_TOLERANCE_POINTS:g} points: vmsim's reading of 'little' (the seed gives no rates)"
)
_ATTEMPTS = Exercised("highalloc_attempts", "traceonly", "order-9 allocations were attempted")
_RECLAIM = Exercised("total_pages_scanned", "traceonly", "reclaim scanned pages")

CLAIMS: tuple[Claim, ...] = (
    _sh(
        "direct_write_file",
        "direct reclaim writes no file pages under nodirect",
        "Direct reclaim of filesystem pages is eliminated as expected",
        id="direct_file_writes_zero",
        kernels=("traceonly", "nodirect"),
        seed_metric="direct_write_file_async+direct_write_file_sync",
        exercised=Exercised(
            "direct_write_file", "traceonly", "traceonly's direct reclaim wrote file pages"
        ),
        by_construction="reclaim_writeback = nodirect (and flushforward) never lets direct "
        "reclaim write a file page; traceonly's writes show the dirty pages were there",
    ),
    _sh(
        "kswapd_write_file",
        "flushforward cuts kswapd's file writes to negligible levels",
        "File writebacks from kswapd are reduced to negligible levels.",
        id="kswapd_file_writes_cut",
        seed_metric="kswapd_write_file_async+kswapd_write_file_sync",
        size="at_most",
        exercised=Exercised("kswapd_write_file", "traceonly", "kswapd wrote file pages"),
    ),
    _sh(
        "pct_scanned_written",
        "flushforward cuts the share of scanned pages that reclaim writes",
        "Again, the test completes far faster with the full series and fewer dirty pages "
        "are encountered.",
        id="pct_scanned_written_cut",
        exercised=Exercised("reclaim_writes", "traceonly", "reclaim wrote pages"),
    ),
    _sh(
        "chained_elapsed_seconds",
        "stress-highalloc finishes far sooner under flushforward (passes back to back)",
        "Again, the test completes far faster with the full series",
        id="highalloc_elapsed_shorter",
        seed_metric="elapsed_seconds",
    ),
    _sh(
        "time_stalled_direct_reclaim_seconds",
        "direct reclaim stalls far less under flushforward",
        "Time stalled direct reclaim (seconds) 7906.48 1355.70 428.86",
        id="direct_stall_shorter",
    ),
    *(
        _sh(
            f"highalloc_{p}_pct",
            f"the patches have little impact on huge page success ({label})",
            "The patches have little impact on the success rates.",
            id=f"highalloc_{p}_unchanged",
            seed_metric=None,
            expect="same",
            effect="points",
            tolerance=SUCCESS_TOLERANCE_POINTS,
            tolerance_source=_LITTLE,
            exercised=_ATTEMPTS,
        )
        for p, label in (("pass1", "pass 1"), ("pass2", "pass 2"), ("rest", "at rest"))
    ),
    Claim(
        "kernbench_no_reclaim_writeback",
        "kernbench",
        "kernbench: no writeback from reclaim (direct or kswapd, file or anon)",
        "No writeback from reclaim initiated and no performance change of significance.",
        "reclaim_writes",
        "traceonly",
        "flushforward",
        expect="none",
        exercised=_RECLAIM,
    ),
    Claim(
        "kernbench_elapsed_unchanged",
        "kernbench",
        "kernbench: no performance change",
        "No writeback from reclaim initiated and no performance change of significance.",
        "elapsed_seconds",
        "traceonly",
        "flushforward",
        expect="same",
        tolerance=0.05,
        tolerance_source="5 %: vmsim's reading of 'no performance change of significance'",
        exercised=_RECLAIM,
    ),
)

EXPERIMENT = Experiment(
    name=NAME,
    title=TITLE,
    kernels=KERNEL_DEFS,
    cases=WORKLOADS,
    seed=SEED,
    claims=CLAIMS,
    build=_build,
    measure=_measure,
    traced=True,
)


def reproduce(
    runs: int = DEFAULT_RUNS,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> ReproduceResult:
    """Runs every workload on every kernel ``runs`` times; with ``output_dir`` every
    run's scenario, trace, result and report are kept there."""
    check_args(runs, scale)
    check_output_dir(output_dir)
    with Progress(total_runs(EXPERIMENT, runs), "reproduce writeback", progress) as bar:
        r = run_kernels(EXPERIMENT, runs, scale, bar, output_dir=output_dir)
    for k in KERNELS:
        m = mean_metrics(r.per_run["stress-highalloc"][k])
        for key, what in (
            ("pass1_overrun_seconds", "pass 1 ran into pass 2"),
            ("pass2_overrun_seconds", "pass 2 ran into the rest pass"),
            ("builds_overrun_seconds", "the builds ran into the rest pass"),
        ):
            if m[key] > 0:
                r.notes.append(f"stress-highalloc {LABELS[k]}: {what} by {m[key]:.1f} s (mean)")
    result = make_result(EXPERIMENT, r, machine=_machine_text(scale))
    write_outputs(output_dir, result, render_text(result))
    return result


def _machine_text(scale: float) -> str:
    tpl = load_template(TEMPLATES["stress-highalloc"])
    m = tpl["machine"]
    mem = human_bytes(scaled_bytes(m["memory"], scale, minimum=1 << 20))
    swap = human_bytes(scaled_bytes(m["swap"], scale, minimum=0))
    return (
        f"{mem} RAM, {m['cpus']} CPUs, {swap} swap (assumed), "
        f"dirty_ratio {tpl['kernel']['dirty_ratio']}"
    )


# ---------------------------------------------------------------------------
# Text report
# ---------------------------------------------------------------------------

_HIGHALLOC_ROWS = (
    ("Success pass 1 (% of attempts)", "highalloc_pass1_pct", "pct"),
    ("Success pass 2 (% of attempts)", "highalloc_pass2_pct", "pct"),
    ("Success at rest (% of attempts)", "highalloc_rest_pct", "pct"),
    ("Pass 1 duration (seconds)", "highalloc_pass1_seconds", "sec"),
    ("Pass 2 duration (seconds)", "highalloc_pass2_seconds", "sec"),
    ("Rest: dd, cat, pass (seconds)", "highalloc_rest_seconds", "sec"),
    ("Longest build (seconds)", "builds_seconds", "sec"),
    ("Elapsed, passes back to back (seconds)", "chained_elapsed_seconds", "sec"),
)


def _table(result: ReproduceResult, w: str) -> list[str]:
    means = result["means"][w]
    seed_tab = result["seed"].get(w)
    cols = [LABELS[k] for k in KERNELS]
    rows = []
    for label, key, kind in SEED_ROWS:
        left = [fmt_value(means[k][key], kind) for k in KERNELS]
        right = [fmt_value(seed_tab[k][key], kind) if seed_tab else "-" for k in KERNELS]
        rows.append((label, left, right))
    if w == "stress-highalloc":
        for label, key, kind in _HIGHALLOC_ROWS:
            left = [fmt_value(means[k][key], kind) for k in KERNELS]
            rows.append((label, left, ["-"] * len(KERNELS)))
    runs = result["runs"]
    left_title = f"vmsim (mean of {runs} run{'s' if runs != 1 else ''})"
    right_title = "seed X86-64" if seed_tab else "seed (no table)"
    return side_by_side(rows, left_title, right_title, cols)


def render_text(result: ReproduceResult) -> str:
    """The seed's tables with vmsim's means and the seed's X86-64 figures, then the
    verdict of every claim."""
    seeds = result["seeds"]
    runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    out = [
        f"vmsim reproduce writeback: {result['title']}",
        f"X86-64 machine at scale {result['scale']:g}: {result['extra']['machine']}; "
        f"{result['runs']} run{'s' if result['runs'] != 1 else ''} per kernel ({runs})",
        "",
        "kernbench",
        *_table(result, "kernbench"),
        f'Seed (no table): "{SEED_QUOTES["kernbench"]}"',
        "",
        "stress-highalloc",
        *_table(result, "stress-highalloc"),
    ]
    plan = result["plans"].get("stress-highalloc") or {}
    if plan:
        st = plan["start_seconds"]
        out.append(
            f"Passes: {plan['attempts_per_pass']} order-{plan['order']} attempts each, "
            f"nominally {plan['nominal_pass_seconds']:.1f} s; they start at {st['pass1']:g} s, "
            f"{st['pass2']:g} s and (rest) {st['rest']:g} s."
        )
    out.append(
        f'Seed: success rates not given ("{SEED_QUOTES["stress-highalloc"]}"). '
        "The seed-era kernels here use lumpy reclaim; vmsim has no compaction yet: "
        "see docs/reproduce-writeback.md."
    )
    out += ["", *render_claims(result)]
    if result["notes"]:
        out += ["", "Notes"]
        out += [f"  {n}" for n in result["notes"]]
    out.append("")
    out.append(
        "The seed's SysBench tables have no vmsim workload yet; the X86-64 one is in the "
        "--json output under seed.sysbench."
    )
    return "\n".join(out) + "\n"
