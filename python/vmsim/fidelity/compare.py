"""``vmsim fidelity``: vmsim beside the recorded real kernel, metric by metric.

For every recording found (one directory per recorded machine and kernel),
vmsim runs the experiment's scenario derived from the recorded machine, and
each metric is judged: the real value is the mean of the recorded runs, with
their range; vmsim's is within when it is within ±25 % of that mean or inside
the real range (whichever is wider). A metric vmsim cannot produce (no
/proc/meminfo, a step it cannot express) counts as compared and not within.
"""

from __future__ import annotations

import math
import re
import statistics
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from vmsim import api
from vmsim.fidelity import host
from vmsim.fidelity.experiment import Experiment, FidelityError, Metric
from vmsim.fidelity.record import load_recording
from vmsim.units import fmt_bytes

TOLERANCE = 0.25
CGROUP = "fidelity"
# Recorded sysctls that are vmsim kernel knobs of the same name.
SYSCTL_KNOBS = {
    "vm.min_free_kbytes": "min_free_kbytes",
    "vm.watermark_scale_factor": "watermark_scale_factor",
    "vm.watermark_boost_factor": "watermark_boost_factor",
    "vm.swappiness": "swappiness",
    "vm.dirty_ratio": "dirty_ratio",
    "vm.dirty_background_ratio": "dirty_background_ratio",
    "vm.dirty_expire_centisecs": "dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs": "dirty_writeback_centisecs",
    "vm.extfrag_threshold": "extfrag_threshold",
}
# Recorded sysctls whose value vmsim has no knob for, and the value vmsim behaves as.
SYSCTL_FIXED = {
    "vm.compaction_proactiveness": None,
    "vm.vfs_cache_pressure": 100,
    "vm.overcommit_memory": None,
    "vm.page-cluster": None,
    "vm.nr_hugepages": 0,
}
MEMCG_FILES = ("failcnt", "max_usage_in_bytes", "usage_in_bytes", "limit_in_bytes")


def recordings_dir() -> Path:
    """The recordings that ship with vmsim."""
    return Path(str(resources.files("vmsim.fidelity") / "recordings"))


# ---------------------------------------------------------------------------
# The vmsim side
# ---------------------------------------------------------------------------


def vmsim_scenario(exp: Experiment, machine: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The vmsim scenario of an experiment on a recorded machine, and what it leaves out.

    Machine, sysctls, THP settings and the disk come from the recording; each
    phase ends with a barrier (``signal``/``wait``) after which the first task
    takes a ``snapshot`` named after the phase, so that /proc is read at the
    same points as on the real kernel.
    """
    missing = list(exp.missing)
    kernel: dict[str, Any] = {"name": f"linux-{machine['kernel'].split('-')[0]}"}
    sysctl = dict(machine.get("sysctl", {}))
    sysctl.update(exp.sysctl)
    for name, value in sysctl.items():
        if name in SYSCTL_KNOBS:
            kernel[SYSCTL_KNOBS[name]] = value
        elif name in exp.sysctl or (
            name in SYSCTL_FIXED and SYSCTL_FIXED[name] not in (None, value)
        ):
            missing.append(f"the sysctl {name} (= {value})")
    thp = machine.get("thp", {})
    if "enabled" in thp:
        kernel["thp_enabled"] = thp["enabled"]
    if "defrag" in thp:
        kernel["thp_defrag"] = thp["defrag"]
    if machine.get("lru_gen") not in (None, "0x0000"):
        missing.append(f"MGLRU (lru_gen enabled = {machine['lru_gen']})")
    disk: dict[str, Any] = {"name": machine.get("device") or "disk"}
    d = machine.get("disk", {})
    for k in ("read_bandwidth", "write_bandwidth"):
        if k in d:
            disk[k] = int(d[k])
    if "latency_ns" in d:
        disk["latency"] = int(d["latency_ns"])
    if "nr_requests" in d:
        disk["nr_requests"] = int(d["nr_requests"])
    if "max_sectors_kb" in d:
        disk["max_sectors_kb"] = int(d["max_sectors_kb"])
    if d.get("read_ahead_kb", 128) != 128:
        missing.append(f"read_ahead_kb = {d['read_ahead_kb']} (vmsim reads ahead 32 pages)")
    mem = machine["memory_bytes"] // (4 << 20) * (4 << 20)
    sc: dict[str, Any] = {
        "name": f"fidelity-{exp.name}",
        "seed": 1,
        "duration": f"{round(exp.vmsim_duration)}s",
        "machine": {
            "memory": fmt_bytes(mem),
            "cpus": int(machine["cpus"]),
            "nodes": int(machine.get("nodes", 1)),
            "swap": fmt_bytes(int(machine.get("swap_bytes", 0))),
        },
        "kernel": kernel,
        "disk": disk,
        "sampling": {"interval": "1s"},
    }
    if exp.cgroup_limit is not None or any(t.cgroup for t in exp.tasks):
        cg: dict[str, Any] = {"path": CGROUP}
        if exp.cgroup_limit is not None:
            cg["limit_in_bytes"] = exp.cgroup_limit
        sc["cgroup"] = [cg]
    n = len(exp.tasks)
    programs: dict[str, list[dict[str, Any]]] = {t.name: [] for t in exp.tasks}
    anon = {t.name: 0 for t in exp.tasks}
    advised = {t.name: False for t in exp.tasks}
    first = exp.tasks[0].name
    _barrier(programs, first, "start", n)
    for i, ph in enumerate(exp.phases):
        for s in ph.steps:
            who = s.task if s.task is not None else first
            ops = _vmsim_ops(s, anon, advised, who)
            programs[who].extend(ops)
        _barrier(programs, first, ph.name, n, i)
    sc["task"] = []
    for t in exp.tasks:
        task: dict[str, Any] = {"name": t.name, "program": programs[t.name]}
        if t.cgroup:
            task["cgroup"] = CGROUP
        sc["task"].append(task)
    return sc, missing


def _barrier(
    programs: dict[str, list[dict[str, Any]]], first: str, name: str, n: int, i: int = -1
) -> None:
    """Every task waits for the others; then the first reads /proc and lets them go on."""
    for prog in programs.values():
        prog.append({"op": "signal", "name": f"done-{i}"})
        prog.append({"op": "wait", "name": f"done-{i}", "count": n})
    for who, prog in programs.items():
        if who == first:
            prog.append({"op": "snapshot", "name": name})
            prog.append({"op": "signal", "name": f"read-{i}"})
        else:
            prog.append({"op": "wait", "name": f"read-{i}"})


def _vmsim_ops(step: Any, anon: dict[str, int], advised: dict[str, bool], who: str) -> list[dict]:
    """The vmsim operations of one experiment step (none for a step vmsim cannot express)."""
    a = step.args
    if step.op == "write":
        return [{"op": "write", "file": a["file"], "size": a["size"]}]
    if step.op == "read":
        op = {"op": "read", "file": a["file"]}
        if "size" in a:
            op["size"] = a["size"]
        return [op]
    if step.op == "unlink":
        return [{"op": "unlink", "file": a["file"]}]
    if step.op == "anon":
        out: list[dict[str, Any]] = []
        if a.get("hugepage") and not advised[who]:
            advised[who] = True
            out.append({"op": "madvise", "advice": "hugepage"})
        anon[who] += a["size"] // 4096 * 4096
        if anon[who]:
            out.append({"op": "touch", "size": anon[who]})
        return out
    if step.op == "anon_free":
        size, anon[who] = anon[who], 0
        return [{"op": "unmap", "size": size}] if size else []
    if step.op == "files":
        return [{"op": "fio_write", "files": a["count"], "file_size": max(a["size"], 4096)}]
    if step.op == "sleep":
        return [{"op": "sleep", "time": f"{round(a['time'] * 1000)}ms"}]
    if step.op == "nr_hugepages":
        return [{"op": "nr_hugepages", "pages": a["pages"]}]
    return []


def count_trace(path: Path, keys: list[str], bounds: list[float]) -> list[dict[str, int]]:
    """Trace counts per interval between consecutive ``bounds`` [s] of an ftrace text file."""
    counters = [host.TraceCounter(keys) for _ in range(len(bounds) - 1)]
    i = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            parsed = host.parse_trace_line(line)
            if parsed is None or not bounds[0] < parsed[0] <= bounds[-1]:
                continue
            while i < len(counters) - 1 and parsed[0] > bounds[i + 1]:
                i += 1
            counters[i].add(parsed[1], parsed[2])
    return [c.snapshot() for c in counters]


def run_vmsim(exp: Experiment, machine: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    """Runs vmsim on the experiment and returns its snapshots as the real side has them."""
    sc, missing = vmsim_scenario(exp, machine)
    trace_keys = sorted({m.filter_key for m in exp.metrics if m.source == "trace"})
    with tempfile.TemporaryDirectory(prefix="vmsim-fidelity-") as tmp:
        tpath = Path(tmp) / "trace" if trace_keys else None
        r = api.run(sc, seed=seed, trace=tpath)
        snaps = {s["name"]: s for s in r.data.get("snapshots", [])}
        names = ["start", *exp.phase_names()]
        final = {
            "name": "end",
            "time_seconds": r.summary["elapsed_seconds"],
            "vmstat": r.vmstat,
            "buddyinfo": r.proc["buddyinfo"],
            "meminfo": r.proc["meminfo"],
            "memcg": r.data.get("memcg"),
        }
        ordered = []
        for n in names:
            s = snaps.get(n)
            if s is None:
                # A phase whose barrier was never reached (its tasks were killed): /proc at the end.
                s = dict(final, name=n, incomplete=True)
            ordered.append(s)
        counts = None
        if tpath is not None:
            bounds = [s["time_seconds"] for s in ordered]
            counts = count_trace(tpath, trace_keys, bounds)
    return {
        "snapshots": ordered,
        "trace": counts,
        "missing": missing,
        "killed": r.summary["oom_kills"],
        "elapsed": r.summary["elapsed_seconds"],
        "completed": r.summary["completed"],
    }


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------


def huge_free(buddyinfo: str, min_order: int = 9) -> int:
    """Free pages in blocks of order >= ``min_order``, from /proc/buddyinfo text."""
    total = 0
    for line in buddyinfo.splitlines():
        m = re.match(r"^Node\s+\d+, zone\s+\S+\s+(.*)$", line)
        if not m:
            continue
        for order, c in enumerate(m.group(1).split()):
            if order >= min_order:
                total += int(c) << order
    return total


def _span(m: Metric, names: list[str]) -> tuple[int, int]:
    """Snapshot indices (first, last) a metric spans: a phase, or the whole experiment."""
    if m.phase is None:
        return 0, len(names) - 1
    i = names.index(m.phase)
    return i - 1, i


def _state_index(m: Metric, names: list[str]) -> int:
    return names.index(m.phase) if m.phase else len(names) - 1


def _end_phase(m: Metric, phases: list[str]) -> str:
    """The phase at whose end a metric is read (the last one for whole-experiment metrics)."""
    return m.phase or phases[-1]


def _vmstat_delta(m: Metric, snaps: list[dict[str, Any]], names: list[str]) -> float | None:
    """A /proc/vmstat counter's change over a metric's span (None: the kernel has no such item)."""
    a, b = _span(m, names)
    if m.name not in snaps[b]["vmstat"]:
        return None
    return snaps[b]["vmstat"][m.name] - snaps[a]["vmstat"].get(m.name, 0)


def real_value(m: Metric, run: dict[str, Any], phases: list[str]) -> float | None:
    """A metric's value in one recorded run."""
    names = ["start", *phases]
    snaps = run["snapshots"]
    if m.source == "vmstat":
        return _vmstat_delta(m, snaps, names)
    if m.source == "time":
        a, b = _span(m, names)
        return sum(p["seconds"] for p in run["phases"][a:b])
    if m.source == "trace":
        a, b = _span(m, names)
        if snaps[b].get("trace") is None:
            return None
        return snaps[b]["trace"].get(m.filter_key, 0) - snaps[a]["trace"].get(m.filter_key, 0)
    s = snaps[_state_index(m, names)]
    if m.source == "buddy":
        return huge_free(s["buddyinfo"])
    if m.source == "meminfo":
        return s["meminfo"].get(m.name)
    if m.source == "memcg":
        if m.name in MEMCG_FILES:
            return (s.get("memcg") or {}).get(m.name)
        return (s.get("memcg_stat") or {}).get(m.name)
    return None


def vmsim_value(m: Metric, sim: dict[str, Any], phases: list[str]) -> float | None:
    """A metric's value in vmsim's run (None when vmsim has no such figure)."""
    names = ["start", *phases]
    snaps = sim["snapshots"]
    if m.source == "vmstat":
        return _vmstat_delta(m, snaps, names)
    if m.source == "time":
        a, b = _span(m, names)
        return snaps[b]["time_seconds"] - snaps[a]["time_seconds"]
    if m.source == "trace":
        if sim["trace"] is None:
            return None
        a, b = _span(m, names)
        return sum(c[m.filter_key] for c in sim["trace"][a:b])
    s = snaps[_state_index(m, names)]
    if m.source == "buddy":
        return huge_free(s["buddyinfo"])
    if m.source == "memcg":
        g = ((s.get("memcg") or {}).get("groups") or {}).get(CGROUP)
        if g is None:
            return None
        if m.name in MEMCG_FILES:
            return g.get(m.name)
        return g.get("stat", {}).get(m.name)
    if m.source == "meminfo":
        return host.parse_meminfo(s["meminfo"]).get(m.name)
    return None


def judge(real: list[float], v: float | None, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """Real mean and range beside vmsim's value; ok within ±tolerance of the mean or the range."""
    mean = statistics.fmean(real)
    lo, hi = min(real), max(real)
    out: dict[str, Any] = {"real": mean, "real_min": lo, "real_max": hi, "runs": len(real)}
    out["vmsim"] = v
    if v is None:
        out["ratio"] = None
        out["ok"] = False
        return out
    out["ratio"] = v / mean if mean != 0 else (1.0 if v == 0 else None)
    out["ok"] = bool(abs(v - mean) <= tolerance * abs(mean) or lo <= v <= hi)
    return out


def compare_experiment(exp: Experiment, rec: dict[str, Any], seed: int = 1) -> dict[str, Any]:
    """One experiment against one recording: every metric judged, and the counts."""
    phases = exp.phase_names()
    for i, r in enumerate(rec["runs"]):
        got = [s["name"] for s in r["snapshots"]]
        if got != ["start", *phases]:
            raise FidelityError(
                f"{exp.name}: recording run {i + 1} has phases {got[1:]}, the experiment {phases}"
            )
    sim = run_vmsim(exp, rec["machine"], seed)
    unfinished = {s["name"] for s in sim["snapshots"] if s.get("incomplete")}
    real_killed = {p["name"] for r in rec["runs"] for p in r["phases"] if p["killed"]}
    metrics = {}
    for m in exp.metrics:
        vals = [real_value(m, r, phases) for r in rec["runs"]]
        real = [float(v) for v in vals if v is not None]
        if not real:
            metrics[m.spec] = {
                "real": None,
                "vmsim": None,
                "ratio": None,
                "ok": False,
                "note": "not in the recording",
            }
            continue
        v = vmsim_value(m, sim, phases)
        j = judge(real, None if v is None else float(v))
        end = _end_phase(m, phases)
        if end in unfinished and not any(p in real_killed for p in phases[: phases.index(end) + 1]):
            # vmsim's figure is /proc at its tasks' death, not at the end of the phase.
            j["ok"] = False
            j["note"] = (
                f"vmsim's tasks were killed before the end of phase {end}; the real ones were not"
            )
        metrics[m.spec] = j
    ok = sum(1 for x in metrics.values() if x["ok"])
    stale = rec.get("experiment_sha256") != exp.sha256
    killed_real = sorted({k for r in rec["runs"] for p in r["phases"] for k in p["killed"]})
    return {
        "description": exp.description,
        "machine": rec["machine"]["kernel"],
        "runs": len(rec["runs"]),
        "metrics": metrics,
        "ok": ok,
        "total": len(metrics),
        "missing": sim["missing"],
        "stale_recording": stale,
        "real_killed": killed_real,
        "vmsim_oom_kills": sim["killed"],
        "vmsim_completed": sim["completed"],
        "vmsim_unfinished_phases": [p for p in phases if p in unfinished],
    }


def find_recordings(root: Path) -> dict[str, dict[str, Path]]:
    """Recording files under ``root``, by machine directory and experiment name."""
    if not root.is_dir():
        raise FidelityError(f"{root}: no such directory of recordings")
    out: dict[str, dict[str, Path]] = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files = {p.stem: p for p in sorted(d.glob("*.json"))}
        if files:
            out[d.name] = files
    return out


def fidelity(
    experiments: dict[str, Experiment],
    names: list[str],
    root: Path,
    *,
    seed: int = 1,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Compares vmsim with every recording of the named experiments (all when empty)."""
    for n in names:
        if n not in experiments:
            raise FidelityError(f"unknown experiment '{n}' (known: {', '.join(experiments)})")
    machines = find_recordings(root)
    if not machines:
        raise FidelityError(f"{root}: no recordings in it (record one with --record NAME)")
    wanted = names or list(experiments)
    todo = [(mk, n, files[n]) for mk, files in machines.items() for n in wanted if n in files]
    if not todo:
        raise FidelityError(f"no recordings of {', '.join(wanted)} under {root}")
    several = len(machines) > 1
    result: dict[str, Any] = {"experiments": {}, "unrecorded": []}
    for i, (mk, n, path) in enumerate(todo):
        if progress:
            progress(n, i, len(todo))
        key = f"{mk}/{n}" if several else n
        rec = load_recording(path)
        if rec["experiment"] != n:
            raise FidelityError(f"{path}: holds experiment '{rec['experiment']}', not '{n}'")
        entry = compare_experiment(experiments[n], rec, seed)
        entry["recording"] = f"{mk}/{path.name}"
        result["experiments"][key] = entry
    recorded = {n for files in machines.values() for n in files}
    result["unrecorded"] = [n for n in wanted if n not in recorded]
    ok = sum(e["ok"] for e in result["experiments"].values())
    total = sum(e["total"] for e in result["experiments"].values())
    result["ok"], result["total"] = ok, total
    result["score"] = round(ok / total, 4) if total else 0.0
    return result


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


def _num(v: float | None) -> str:
    if v is None:
        return "—"
    if math.isfinite(v) and v == int(v) and abs(v) >= 1000:
        return f"{int(v):,}"
    if abs(v) >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def render_text(result: dict[str, Any]) -> str:
    """The comparison as text: a table per experiment, a line per experiment, the score."""
    lines = []
    for name, e in result["experiments"].items():
        lines.append(f"{name}: {e['description']}")
        runs = f"{e['runs']} run{'s' if e['runs'] != 1 else ''}"
        lines.append(f"  recorded on Linux {e['machine']}, {runs} ({e['recording']})")
        if e["stale_recording"]:
            lines.append("  note: the experiment changed since this recording; record it again")
        if e["missing"]:
            lines.append("  vmsim cannot express yet: " + "; ".join(e["missing"]))
        if e["real_killed"] or e["vmsim_oom_kills"]:
            lines.append(
                f"  OOM kills: real {', '.join(e['real_killed']) or 'none'}; "
                f"vmsim {e['vmsim_oom_kills']}"
            )
        w = max(len(m) for m in e["metrics"])
        lines.append(
            f"  {'metric':<{w}}  {'real mean':>13}  {'real range':>25}  "
            f"{'vmsim':>13}  {'ratio':>7}  within"
        )
        for spec, m in e["metrics"].items():
            rng = (
                f"{_num(m.get('real_min'))}–{_num(m.get('real_max'))}"
                if m.get("real") is not None
                else "—"
            )
            ratio = "—" if m["ratio"] is None else f"{m['ratio'] + 0.0:.2f}"
            lines.append(
                f"  {spec:<{w}}  {_num(m['real']):>13}  {rng:>25}  {_num(m['vmsim']):>13}  "
                f"{ratio:>7}  {'yes' if m['ok'] else 'no'}{' *' if m.get('note') else ''}"
            )
        notes = sorted({m["note"] for m in e["metrics"].values() if m.get("note")})
        for note in notes:
            lines.append(f"  * {note}")
        lines.append("")
    lines.append("summary")
    w = max((len(n) for n in result["experiments"]), default=10)
    for name, e in result["experiments"].items():
        lines.append(f"  {name:<{w}}  {e['ok']:>2} of {e['total']:>2} within")
    for n in result.get("unrecorded", []):
        lines.append(f"  {n:<{w}}  not recorded")
    lines.append(
        f"score: {result['ok']} of {result['total']} metrics within ±25 % or the real range "
        f"({result['score']:.2f})"
    )
    return "\n".join(lines) + "\n"


def json_view(result: dict[str, Any]) -> dict[str, Any]:
    """The --json object (documented layout, with the extra fields kept)."""
    return result
