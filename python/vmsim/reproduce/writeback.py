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
kernbench and stress-highalloc. Each kernel runs each workload ``runs`` times
(seeds 1..runs) with a trace in the 2.6.35 formats; the seed's report rows
come from that trace through ``vmsim.reclaim_report.report_dict`` (Mel's
post-processing script), with user, sys and elapsed seconds from the run, and
are averaged over the runs. The text report puts the seed's own X86-64
figures beside vmsim's and checks the direction of each of the seed's claims
from the numbers.

The run's seed also draws each compile job's anonymous size and CPU time, so
runs differ as repeated real runs do; the same arguments give the same bytes.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

from vmsim import api
from vmsim._vmsim import ScenarioError
from vmsim.reclaim_report import SEED_ROWS
from vmsim.reproduce.common import (
    Progress,
    ReproduceError,
    check_args,
    check_output_dir,
    finite_or_none,
    fmt_bytes,
    fmt_ms,
    fmt_value,
    human_bytes,
    load_template,
    mean_metrics,
    parse_size,
    run_traced,
    save_result,
    scaled_bytes,
    side_by_side,
)

NAME = "writeback"
TITLE = 'seed 001: Mel Gorman, "Reduce writeback from page reclaim context V6" (2010-07-30)'

KERNELS = ("traceonly", "nodirect", "flushforward")
LABELS = {k: f"{k}-v6" for k in KERNELS}
WORKLOADS = ("kernbench", "stress-highalloc")
TEMPLATES = {w: f"writeback-{w}" for w in WORKLOADS}

# Verdict thresholds: "far sooner" is at least FAR_SOONER shorter (the seed's are 64 %
# and 73 %); success rates "little" changed stay within SUCCESS_SPREAD_POINTS.
FAR_SOONER = 0.25
SUCCESS_SPREAD_POINTS = 10.0

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


def _seconds(text: str) -> float:
    """Seconds of a duration written ``"5s"``, ``"125ms"``, ``"50us"``."""
    s = str(text).strip()
    for unit, mult in (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if s.endswith(unit):
            return float(s[: -len(unit)]) * mult
    return float(s)


class _Jobs:
    """Draws compile jobs (anonymous size [bytes], CPU time [s]) from a run's seed."""

    def __init__(self, wl: dict[str, Any], scale: float, rng: random.Random) -> None:
        self.amin = parse_size(wl["anon_min"])
        self.amax = parse_size(wl["anon_max"])
        self.cpu = _seconds(wl["cpu_time"])
        self.scale = scale
        self.rng = rng

    def draw(self) -> tuple[int, float]:
        anon = scaled_bytes(self.rng.uniform(self.amin, self.amax), self.scale)
        cpu = self.cpu * self.scale * self.rng.uniform(0.8, 1.2)
        return anon, cpu


def _untar(prefix: str, jobs: int, file_size: int, inodes: int) -> list[dict[str, Any]]:
    """tar: the tree's files (one per job), and the inodes and dentries they create."""
    ops: list[dict[str, Any]] = []
    per, extra = divmod(inodes, jobs)
    for j in range(jobs):
        n = per + (1 if j < extra else 0)
        ops.append({"op": "write", "file": f"{prefix}src{j}", "size": fmt_bytes(file_size)})
        if n:
            ops.append({"op": "slab", "cache": "xfs_inode", "objects": n})
            ops.append({"op": "slab", "cache": "dentry", "objects": n})
    return ops


def _compile(prefix: str, j: int, anon: int, cpu: float, obj: int) -> list[dict[str, Any]]:
    """One compile job: read sources, fault in anon memory, compute, write the object, exit."""
    return [
        {"op": "read", "file": f"{prefix}src{j}"},
        {"op": "touch", "size": fmt_bytes(anon)},
        {"op": "compute", "time": fmt_ms(cpu)},
        {"op": "unlink", "file": f"{prefix}obj{j}"},
        {"op": "write", "file": f"{prefix}obj{j}", "size": fmt_bytes(obj)},
        {"op": "unmap", "size": fmt_bytes(anon)},
    ]


def _kernbench_tasks(
    wl: dict[str, Any], scale: float, rng: random.Random
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    jobs = int(wl["jobs"])
    par = int(wl["parallel"])
    tree = scaled_bytes(parse_size(wl["tree"]) / jobs, scale)
    obj = scaled_bytes(wl["object"], scale)
    inodes = max(0, round(int(wl["inodes"]) * scale))
    draw = _Jobs(wl, scale, rng)
    job_list = [draw.draw() for _ in range(jobs)]
    tasks: list[dict[str, Any]] = [{"name": "tar", "program": _untar("", jobs, tree, inodes)}]
    start = fmt_ms(_seconds(wl["start"]) * scale)
    for i in range(par):
        prog: list[dict[str, Any]] = []
        for j in range(i, jobs, par):
            anon, cpu = job_list[j]
            prog += _compile("", j, anon, cpu, obj)
        tasks.append(
            {"name": "cc1", "start": start, "repeat": int(wl["iterations"]), "program": prog}
        )
    return tasks, {}


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
    draw = _Jobs(wl, scale, rng)
    tasks: list[dict[str, Any]] = []
    for b in range(int(wl["builds"])):
        prefix = f"b{b}/"
        prog = _untar(prefix, jobs, tree, inodes)
        for j in range(jobs):
            anon, cpu = draw.draw()
            prog += _compile(prefix, j, anon, cpu, obj)
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
    delay = _seconds(wl["delay"])
    nominal = count * delay
    attempt = [
        {"op": "alloc", "order": order, "count": 1, "type": "movable"},
        {"op": "sleep", "time": fmt_ms(delay)},
    ]
    start1 = _seconds(wl["warmup"]) * scale
    start2 = start1 + float(wl["pass_gap"]) * nominal
    start3 = start2 + float(wl["pass_gap"]) * nominal + _seconds(wl["settle"]) * scale
    tasks.append(
        {"name": "highalloc-1", "start": fmt_ms(start1), "repeat": count, "program": attempt}
    )
    tasks.append(
        {"name": "highalloc-2", "start": fmt_ms(start2), "repeat": count, "program": attempt}
    )
    rest = [
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
        "settle_seconds": _seconds(wl["settle"]) * scale,
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
        smp["interval"] = fmt_ms(_seconds(smp["interval"]) * scale)
    tpl["duration"] = fmt_ms(_seconds(tpl.get("duration", "3600s")) * scale)
    tpl["name"] = f"{tpl.get('name', TEMPLATES[workload])}-{kernel}"
    tpl["seed"] = seed
    rng = random.Random(f"{workload}:{seed}")
    if wl["kind"] == "kernbench":
        tasks, plan = _kernbench_tasks(wl, scale, rng)
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


def _report_metrics(report: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in REPORT_KEYS:
        v = finite_or_none(report.get(key))
        # A percentage of nothing (no page scanned, no CPU time) is 0 %.
        out[key] = 0.0 if v is None else v
    return out


def _highalloc_metrics(
    result: api.Result, plan: dict[str, Any], notes: list[str]
) -> dict[str, float]:
    tasks = result.data["tasks"]
    count = plan["attempts_per_pass"]
    starts = plan["start_seconds"]
    out: dict[str, float] = {}
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


def reproduce(
    runs: int = 3,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Runs every workload on every kernel ``runs`` times and returns the JSON-ready result."""
    check_args(runs, scale)
    check_output_dir(output_dir)
    seeds = list(range(1, runs + 1))
    per_run: dict[str, dict[str, list[dict[str, float]]]] = {}
    means: dict[str, dict[str, dict[str, float]]] = {}
    notes: list[str] = []
    plans: dict[str, dict[str, Any]] = {}
    total = len(WORKLOADS) * len(KERNELS) * runs
    with Progress(total, "reproduce writeback", enabled=progress) as bar:
        for w in WORKLOADS:
            per_run[w] = {}
            for k in KERNELS:
                per_run[w][k] = []
                for seed in seeds:
                    bar.describe(f"{w} {LABELS[k]} run {seed}/{runs}")
                    sc, plan = build_scenario(w, k, seed, scale)
                    plans[w] = plan
                    keep = output_dir / w / k / f"run-{seed}" if output_dir is not None else None
                    try:
                        result, report = run_traced(sc, seed, keep)
                    except ScenarioError as e:
                        raise ReproduceError(f"--scale {scale:g}: {w}: {e}") from None
                    metrics = _report_metrics(report)
                    run_notes: list[str] = []
                    if not result.summary["completed"]:
                        run_notes.append("the run hit its time limit before every task exited")
                    if result.summary["oom_kills"]:
                        run_notes.append(f"{result.summary['oom_kills']} tasks were OOM-killed")
                    if w == "stress-highalloc":
                        metrics.update(_highalloc_metrics(result, plan, run_notes))
                    notes += [f"{w} {LABELS[k]} run {seed}: {n}" for n in run_notes]
                    per_run[w][k].append(metrics)
                    bar.advance()
            means[w] = {k: mean_metrics(per_run[w][k]) for k in KERNELS}
    for w in WORKLOADS:
        if w == "stress-highalloc":
            for k in KERNELS:
                m = means[w][k]
                for key, what in (
                    ("pass1_overrun_seconds", "pass 1 ran into pass 2"),
                    ("pass2_overrun_seconds", "pass 2 ran into the rest pass"),
                    ("builds_overrun_seconds", "the builds ran into the rest pass"),
                ):
                    if m[key] > 0:
                        notes.append(f"{w} {LABELS[k]}: {what} by {m[key]:.1f} s (mean)")
    result = {
        "experiment": NAME,
        "title": TITLE,
        "runs": runs,
        "scale": scale,
        "seeds": seeds,
        "kernels": {k: LABELS[k] for k in KERNELS},
        "machine": _machine_text(scale),
        "workloads": means,
        "per_run": per_run,
        "highalloc_plan": plans.get("stress-highalloc", {}),
        "seed": SEED,
        "agreement": agreement(means),
        "notes": notes,
    }
    save_result(output_dir, result, render_text(result))
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
# Direction checks
# ---------------------------------------------------------------------------


def _pct_change(new: float, old: float) -> str:
    if old == 0:
        return "n/a" if new == 0 else "+inf"
    return f"{100.0 * (new - old) / old:+.0f}%"


def _triple(values: dict[str, float], kind: str = "int") -> str:
    return " / ".join(fmt_value(values[k], kind) for k in KERNELS)


def _check(
    cid: str,
    workload: str,
    claim: str,
    seed_text: str,
    vmsim: dict[str, float],
    verdict: str,
    detail: str,
    kind: str = "int",
) -> dict[str, Any]:
    return {
        "id": cid,
        "workload": workload,
        "claim": claim,
        "seed": seed_text,
        "vmsim": {k: vmsim[k] for k in KERNELS},
        "vmsim_text": _triple(vmsim, kind),
        "verdict": verdict,
        "detail": detail,
    }


def agreement(means: dict[str, dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    """The seed's claims, each checked against vmsim's means (never hard-coded)."""
    out: list[dict[str, Any]] = []
    sh = means["stress-highalloc"]
    seed_sh = SEED["stress-highalloc"]

    def col(m: dict[str, dict[str, float]], *keys: str) -> dict[str, float]:
        return {k: sum(float(m[k][key]) for key in keys) for k in KERNELS}

    # 1. nodirect: direct reclaim writes no file pages.
    fw_keys = ("direct_write_file_async", "direct_write_file_sync")
    v = col(sh, *fw_keys)
    s = col(seed_sh, *fw_keys)
    if v["nodirect"] == 0 and v["flushforward"] == 0:
        if v["traceonly"] > 0:
            verdict = "agrees"
            detail = "traceonly's direct reclaim writes file pages; the others none"
        else:
            verdict = "not observed"
            detail = (
                "nodirect and flushforward write none, but traceonly's direct reclaim wrote "
                "no file pages either, so there was no drop to see"
            )
    else:
        verdict, detail = "disagrees", "nodirect or flushforward direct reclaim wrote file pages"
    out.append(
        _check(
            "direct_file_writes_zero",
            "stress-highalloc",
            "Direct reclaim file writes (async + sync) drop to 0 under nodirect and flushforward",
            f"{_triple(s)} (X86-64)",
            v,
            verdict,
            detail,
        )
    )

    # 2. flushforward: kswapd writes far fewer file pages.
    kf_keys = ("kswapd_write_file_async", "kswapd_write_file_sync")
    v = col(sh, *kf_keys)
    s = col(seed_sh, *kf_keys)
    if v["traceonly"] == 0 and v["nodirect"] == 0 and v["flushforward"] == 0:
        verdict, detail = "not observed", "kswapd wrote no file pages under any kernel"
    elif v["flushforward"] < v["traceonly"] and v["flushforward"] <= v["nodirect"]:
        verdict = "agrees"
        detail = (
            f"flushforward {_pct_change(v['flushforward'], v['traceonly'])} against traceonly "
            f"(seed {_pct_change(s['flushforward'], s['traceonly'])})"
        )
    elif v["flushforward"] < v["traceonly"]:
        verdict = "partly"
        detail = "fewer than traceonly but not fewer than nodirect"
    else:
        verdict = "disagrees"
        detail = (
            f"flushforward {_pct_change(v['flushforward'], v['traceonly'])} against traceonly "
            f"(seed {_pct_change(s['flushforward'], s['traceonly'])})"
        )
    out.append(
        _check(
            "kswapd_file_writes_cut",
            "stress-highalloc",
            "flushforward cuts kswapd's file writes",
            f"{_triple(s)} (X86-64)",
            v,
            verdict,
            detail,
        )
    )

    # 3. flushforward: a smaller share of the scanned pages is written.
    v = {k: float(sh[k]["pct_scanned_written"]) for k in KERNELS}
    s = {k: float(seed_sh[k]["pct_scanned_written"]) for k in KERNELS}
    scanned = {k: float(sh[k]["total_pages_scanned"]) for k in KERNELS}
    if scanned["traceonly"] == 0 or scanned["flushforward"] == 0:
        verdict, detail = "not observed", "reclaim scanned no pages"
    elif v["traceonly"] == 0 and v["flushforward"] == 0:
        verdict, detail = "not observed", "reclaim wrote none of the pages it scanned"
    elif v["flushforward"] < v["traceonly"]:
        verdict = "agrees"
        detail = f"{v['traceonly']:.2f}% -> {v['flushforward']:.2f}%"
    else:
        verdict = "disagrees"
        detail = f"{v['traceonly']:.2f}% -> {v['flushforward']:.2f}%"
    out.append(
        _check(
            "pct_scanned_written_cut",
            "stress-highalloc",
            "flushforward cuts the percentage of scanned pages that reclaim writes",
            f"{_triple(s, 'pct')} (X86-64)",
            v,
            verdict,
            detail,
            "pct",
        )
    )

    # 4. stress-highalloc completes far sooner than under traceonly. mmtests runs the
    # passes back to back, so its elapsed time is compared with vmsim's passes chained
    # (the run itself starts them at fixed times; its elapsed time is in the table).
    v = {k: float(sh[k]["chained_elapsed_seconds"]) for k in KERNELS}
    run_elapsed = {k: float(sh[k]["elapsed_seconds"]) for k in KERNELS}
    s = {k: float(seed_sh[k]["elapsed_seconds"]) for k in KERNELS}
    ratios = [v[k] / v["traceonly"] for k in ("nodirect", "flushforward") if v["traceonly"]]
    change = ", ".join(
        f"{LABELS[k]} {_pct_change(v[k], v['traceonly'])}" for k in ("nodirect", "flushforward")
    )
    seed_change = ", ".join(
        f"{_pct_change(s[k], s['traceonly'])}" for k in ("nodirect", "flushforward")
    )
    if ratios and all(r <= 1 - FAR_SOONER for r in ratios):
        verdict = "agrees"
    elif ratios and all(r < 1 for r in ratios):
        verdict = "partly"
    else:
        verdict = "disagrees"
    out.append(
        _check(
            "highalloc_elapsed_shorter",
            "stress-highalloc",
            "stress-highalloc finishes far sooner than under traceonly "
            f"(agrees: both at least {FAR_SOONER:.0%} sooner; partly: sooner by less)",
            f"{_triple(s, 'sec')} s (X86-64; {seed_change})",
            v,
            verdict,
            f"elapsed with the passes back to back: {change} against traceonly; "
            "the run's own elapsed time: "
            + ", ".join(
                f"{LABELS[k]} {_pct_change(run_elapsed[k], run_elapsed['traceonly'])}"
                for k in ("nodirect", "flushforward")
            ),
            "sec",
        )
    )

    # 5. ... because direct reclaim stalls far less.
    v = {k: float(sh[k]["time_stalled_direct_reclaim_seconds"]) for k in KERNELS}
    s = {k: float(seed_sh[k]["time_stalled_direct_reclaim_seconds"]) for k in KERNELS}
    if all(v[k] == 0 for k in KERNELS):
        verdict, detail = "not observed", "no direct reclaim stall under any kernel"
    else:
        ratios = [
            v[k] / v["traceonly"] if v["traceonly"] else 1.0 for k in ("nodirect", "flushforward")
        ]
        if all(r <= 1 - FAR_SOONER for r in ratios):
            verdict = "agrees"
        elif all(r < 1 for r in ratios):
            verdict = "partly"
        else:
            verdict = "disagrees"
        elapsed = float(sh["traceonly"]["elapsed_seconds"])
        share = 100.0 * v["traceonly"] / elapsed if elapsed else 0.0
        detail = (
            ", ".join(
                f"{LABELS[k]} {_pct_change(v[k], v['traceonly'])}"
                for k in ("nodirect", "flushforward")
            )
            + f"; traceonly's stall is {share:.3f}% of its elapsed time "
            f"(seed {100.0 * s['traceonly'] / seed_sh['traceonly']['elapsed_seconds']:.0f}%)"
        )
    out.append(
        _check(
            "direct_stall_shorter",
            "stress-highalloc",
            "direct reclaim stalls far less under nodirect and flushforward "
            f"(agrees: both at least {FAR_SOONER:.0%} less; partly: less, but by less than that)",
            f"{_triple(s, 'sec')} s (X86-64)",
            v,
            verdict,
            detail,
            "sec",
        )
    )

    # 6. The patches have little impact on the high-order success rates.
    spreads = {}
    for p in ("pass1", "pass2", "rest"):
        vals = [float(sh[k][f"highalloc_{p}_pct"]) for k in KERNELS]
        spreads[p] = max(vals) - min(vals)
    worst = max(spreads.values())
    v = {k: float(sh[k]["highalloc_pass1_pct"]) for k in KERNELS}
    c = _check(
        "highalloc_success_unchanged",
        "stress-highalloc",
        "the patches have little impact on huge page success rates "
        f"(agrees: every pass within {SUCCESS_SPREAD_POINTS:g} points across kernels)",
        f'no figures; "{SEED_QUOTES["stress-highalloc"]}"',
        v,
        "agrees" if worst <= SUCCESS_SPREAD_POINTS else "disagrees",
        "largest spread across kernels: "
        + ", ".join(f"{p} {spreads[p]:.1f} points" for p in spreads),
        "pct",
    )
    c["vmsim"] = {
        k: {p: float(sh[k][f"highalloc_{p}_pct"]) for p in ("pass1", "pass2", "rest")}
        for k in KERNELS
    }
    c["vmsim_text"] = "pass 1 / pass 2 / rest: " + "; ".join(
        f"{k} " + "/".join(f"{sh[k][f'highalloc_{p}_pct']:.1f}" for p in ("pass1", "pass2", "rest"))
        for k in KERNELS
    )
    out.append(c)

    # 7. kernbench: no writeback from reclaim at all.
    kb = means["kernbench"]
    wkeys = [key for key in REPORT_KEYS if "_write_" in key]
    v = col(kb, *wkeys)
    out.append(
        _check(
            "kernbench_no_reclaim_writeback",
            "kernbench",
            "kernbench: no writeback from reclaim (direct or kswapd, file or anon)",
            f'no table; "{SEED_QUOTES["kernbench"]}"',
            v,
            "agrees" if all(v[k] == 0 for k in KERNELS) else "disagrees",
            "pages written by reclaim: " + _triple(v),
        )
    )
    return out


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


def _table(result: dict[str, Any], w: str) -> list[str]:
    means = result["workloads"][w]
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


def render_text(result: dict[str, Any]) -> str:
    """The seed's tables with vmsim's means and the seed's X86-64 figures, then the checks."""
    seeds = result["seeds"]
    runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    out = [
        f"vmsim reproduce writeback: {result['title']}",
        f"X86-64 machine at scale {result['scale']:g}: {result['machine']}; "
        f"{result['runs']} run{'s' if result['runs'] != 1 else ''} per kernel ({runs})",
        "",
        "kernbench",
        *_table(result, "kernbench"),
        f'Seed (no table): "{SEED_QUOTES["kernbench"]}"',
        "",
        "stress-highalloc",
        *_table(result, "stress-highalloc"),
    ]
    plan = result.get("highalloc_plan") or {}
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
    out += ["", "Direction (computed from the figures above)"]
    for c in result["agreement"]:
        out.append(f"  [{c['verdict']}] {c['claim']}")
        out.append(f"      seed:  {c['seed']}")
        out.append(f"      vmsim: {c['vmsim_text']} ({c['detail']})")
    if result["notes"]:
        out += ["", "Notes"]
        out += [f"  {n}" for n in result["notes"]]
    out.append("")
    out.append(
        "The seed's SysBench tables have no vmsim workload yet; the X86-64 one is in the "
        "--json output under seed.sysbench."
    )
    return "\n".join(out) + "\n"
