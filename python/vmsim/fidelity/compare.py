"""``vmsim fidelity``: vmsim beside the recorded real kernel, metric by metric.

For every recording found (one directory per recorded machine and kernel:
the kernel axis of the table), vmsim runs the experiment's scenario derived
from the recorded machine, and each metric is judged: the real value is the
mean of the recorded runs, with their range; vmsim's is within when it is
within ±25 % of that mean or inside the real range (whichever is wider). A
metric vmsim cannot produce (no /proc/meminfo, a step it cannot express)
counts as compared and not within. Two kinds of rows are shown and not
scored: the time metrics of a run in an emulated guest (its CPU is several
times slower than the host's), and every row of a kernel whose mechanism
vmsim does not model (MGLRU), which carry the ratio to the same kernel
without it instead.
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

from vmsim import api, ftrace, inputs
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
    "vm.vfs_cache_pressure": "vfs_cache_pressure",
    "vm.dirty_bytes": "dirty_bytes",
    "vm.dirty_background_bytes": "dirty_background_bytes",
    "vm.page-cluster": "page_cluster",
    "vm.compaction_proactiveness": "compaction_proactiveness",
}
# Recorded sysctls whose value vmsim has no knob for, and the value vmsim behaves as.
SYSCTL_FIXED = {
    "vm.overcommit_memory": None,
    "vm.nr_hugepages": 0,
}
MEMCG_FILES = (
    "failcnt",
    "max_usage_in_bytes",
    "usage_in_bytes",
    "limit_in_bytes",
    "memsw_failcnt",
    "memsw_max_usage_in_bytes",
    "memsw_usage_in_bytes",
    "memsw_limit_in_bytes",
)


# vmsim's kernel.version for each recorded kernel series (docs/kernel-6.1.md).
VMSIM_VERSIONS: dict[tuple[int, ...], str] = {(6, 18): "6.18", (6, 1): "6.1"}


def vmsim_version(machine: dict[str, Any]) -> str | None:
    """The ``kernel.version`` vmsim runs a recorded kernel with (None: not modelled)."""
    return VMSIM_VERSIONS.get(_version(machine)[:2])


def recordings_dir() -> Path:
    """The recordings that ship with vmsim."""
    return Path(str(resources.files("vmsim.fidelity") / "recordings"))


def machine_costs_dir() -> Path:
    """The cost profiles measured on recorded machines other than the default profile's
    (``vmsim calibrate --kernel K``): ``<cost key>.toml``, :func:`host.cost_key`."""
    return Path(str(resources.files("vmsim.fidelity") / "costs"))


def machine_costs(machine: dict[str, Any], root: Path | None = None) -> str | None:
    """The cost profile measured on a recording's own machine, if there is one (a path)."""
    path = (root or machine_costs_dir()) / f"{host.cost_key(machine)}.toml"
    return str(path) if path.is_file() else None


# ---------------------------------------------------------------------------
# The vmsim side
# ---------------------------------------------------------------------------


#: A page of one non-zero byte over zsmalloc's smallest object (ZS_MIN_ALLOC_SIZE, 32).
ZSWAP_ONE_BYTE_PAGE_RATIO = 128.0


def vmsim_scenario(
    exp: Experiment,
    machine: dict[str, Any],
    costs: str | None = None,
    in_use: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The vmsim scenario of an experiment on a recorded machine, and what it leaves out.

    Machine, sysctls, THP settings and the disk come from the recording, the
    cost profile from ``costs`` (the default profile when None); each
    phase ends with a barrier (``signal``/``wait``) after which the first task
    takes a ``snapshot`` named after the phase, so that /proc is read at the
    same points as on the real kernel. ``in_use`` (from :func:`system_in_use`)
    is the memory the rest of the recorded system held when the experiment
    started: a task of its own takes it before the start snapshot and holds
    it to the end.
    """
    missing = list(exp.missing)
    kernel: dict[str, Any] = {"name": f"linux-{machine['kernel'].split('-')[0]}"}
    version = vmsim_version(machine)
    if version is not None:
        kernel["version"] = version
    else:
        missing.append(f"Linux {machine['kernel']}'s own rules (vmsim runs 6.18's)")
    if machine.get("filesystem") == "ext4" and machine.get("fs_journal") is not None:
        # The work directory's ext4 with or without a journal (the machine kind's root
        # filesystem has none: docs/ext4.md).
        kernel["ext4_journal"] = bool(machine["fs_journal"])
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
    if host.mglru_on(machine):
        missing.append(f"MGLRU (lru_gen enabled = {machine['lru_gen']})")
    if exp.zswap:
        kernel["zswap"] = True
        # The recorder's anonymous pages hold one non-zero byte each: every one
        # compresses to less than zsmalloc's smallest object (32 bytes, 4096/32 = 128).
        kernel["zswap_comp_ratio"] = ZSWAP_ONE_BYTE_PAGE_RATIO
    elif machine.get("zswap") in ("Y", "1"):
        missing.append("zswap")
    disk: dict[str, Any] = {"name": machine.get("device") or "disk"}
    d = machine.get("disk", {})
    for k in ("read_bandwidth", "write_bandwidth"):
        if k in d:
            disk[k] = int(d[k])
    if "latency_ns" in d:
        disk["latency"] = int(d["latency_ns"])
    if "latency_seq_ns" in d and "latency_ns" in d:
        # A request in order costs the round trip every request pays (overlapping the
        # others in flight); what a random one costs beyond it is positioning.
        rtt = int(d["latency_seq_ns"])
        disk["request_latency"] = rtt
        disk["latency"] = max(0, int(d["latency_ns"]) - rtt)
        # The bandwidths were timed one 1 MiB request after another, each with its round
        # trip in it: the transfer alone is what is left.
        for k in ("read_bandwidth", "write_bandwidth"):
            if k in disk:
                disk[k] = transfer_bandwidth(disk[k], rtt)
    if "nr_requests" in d:
        disk["nr_requests"] = int(d["nr_requests"])
    if "max_sectors_kb" in d:
        disk["max_sectors_kb"] = int(d["max_sectors_kb"])
    if "rotational" in d:
        disk["rotational"] = bool(d["rotational"])
    if "read_ahead_kb" in d:
        disk["read_ahead_kb"] = int(d["read_ahead_kb"])
    mem = machine["memory_bytes"] // (4 << 20) * (4 << 20)
    sc: dict[str, Any] = {
        "name": f"fidelity-{exp.name}",
        "seed": 1,
        "duration": f"{round(exp.vmsim_duration)}s",
        "machine": {
            "memory": fmt_bytes(mem),
            "cpus": int(machine["cpus"]),
            "nodes": int(machine.get("nodes", 1)),
            "swap": fmt_bytes(exp.swap_size or int(machine.get("swap_bytes", 0))),
            # The recording's allocation probe found the free lists mixed, not in boot order.
            "mixed_free_lists": machine.get("free_lists", {}).get("order") == "mixed",
        },
        "kernel": kernel,
        "disk": disk,
        "sampling": {"interval": "1s"},
    }
    if costs is not None:
        sc["costs"] = costs
    if exp.files:
        sc["file"] = [{"name": n, "size": size} for n, size in exp.files]
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
    if in_use:
        _add_rest_of_system(sc, in_use)
    return sc, missing


#: The task that holds what the rest of the recorded system had in use.
SYSTEM_TASK = "rest-of-system"
#: Objects per page of the caches the rest of the system's slab is made of.
_SLAB_OBJECTS_PER_PAGE = {"dentry": 4096 // 192, "kmalloc-256": 4096 // 256}


def system_in_use(rec: dict[str, Any]) -> dict[str, Any] | None:
    """What the rest of the system held at the recording's start, in pages (run means).

    From each run's ``start`` snapshot: anonymous and shmem pages, the file LRU's
    active and inactive pages, reclaimable and unreclaimable slab, and the rest of
    MemTotal − MemFree (kernel stacks, page tables, vmalloc, per-CPU and other kernel
    memory), and under ``buddyinfo`` the start snapshots' free lists (:func:`start_buddyinfo`).
    None when the recording has no start snapshot with /proc/meminfo.
    """
    starts = [
        r["snapshots"][0]
        for r in rec.get("runs", [])
        if r.get("snapshots")
        and r["snapshots"][0].get("name") == "start"
        and r["snapshots"][0].get("meminfo")
    ]
    if not starts:
        return None

    def mean(f: Any) -> int:
        return round(sum(f(s) for s in starts) / len(starts))

    def vm(k: str) -> Any:
        return lambda s: s["vmstat"].get(k, 0)

    used = mean(lambda s: (s["meminfo"]["MemTotal"] - s["meminfo"]["MemFree"]) // 4)
    out = {
        "anon": mean(vm("nr_anon_pages")) + mean(vm("nr_shmem")),
        "file_active": mean(vm("nr_active_file")),
        "file_inactive": mean(vm("nr_inactive_file")),
        "slab_reclaimable": mean(vm("nr_slab_reclaimable")),
        "slab_unreclaimable": mean(vm("nr_slab_unreclaimable")),
    }
    out["kernel"] = max(used - sum(out.values()), 0)
    full: dict[str, Any] = dict(out)
    buddyinfo = start_buddyinfo(starts)
    if buddyinfo:
        full["buddyinfo"] = buddyinfo
    return full


def start_buddyinfo(starts: list[dict[str, Any]]) -> str | None:
    """The start snapshots' /proc/buddyinfo, each zone's counts the mean over the runs.

    None when a start snapshot has none (older recordings) or the runs' zones differ.
    """
    tables = []
    for s in starts:
        text = s.get("buddyinfo")
        if not text:
            return None
        rows = {}
        for line in text.splitlines():
            head, _, counts = line.partition("zone")
            words = counts.split()
            if not words:
                continue
            rows[(head.strip(), words[0])] = [int(w) for w in words[1:]]
        tables.append(rows)
    if any(t.keys() != tables[0].keys() for t in tables):
        return None
    lines = []
    for key in tables[0]:
        cols = zip(*(t[key] for t in tables), strict=True)
        mean = [round(sum(c) / len(tables)) for c in cols]
        lines.append(f"{key[0]} zone {key[1]} " + " ".join(str(n) for n in mean))
    return "\n".join(lines)


def _add_rest_of_system(sc: dict[str, Any], in_use: dict[str, Any]) -> None:
    """A task that takes ``in_use`` before the start snapshot and keeps it to the end.

    Slab objects are allocated first (held in use, off the shrinkers' lists), then the
    rest of the kernel's memory as unmovable pages; then, when the recording has the
    start's /proc/buddyinfo, the free lists are laid out as it shows them
    (``shape_free_lists``), so that the anonymous memory touched next and the file LRU's
    pages read from files on disk (the active ones twice, so that they are activated)
    sit between free blocks of every order as on the real machine. The experiment's
    tasks wait for it before their first barrier; it holds its memory to the end of the
    run, which does not wait for it.
    """
    prog: list[dict[str, Any]] = []
    for key, cache in (("slab_reclaimable", "dentry"), ("slab_unreclaimable", "kmalloc-256")):
        if in_use.get(key):
            objects = in_use[key] * _SLAB_OBJECTS_PER_PAGE[cache]
            # In use: the start snapshots do not say how much of the reclaimable slab
            # the shrinkers could free (on this machine at rest, /proc/sys/fs/dentry-state
            # and inode-state count 19,840 unused dentries and 4 unused inodes of 9,090
            # pages of it), so none of it is offered to them.
            op = {"op": "slab", "cache": cache, "objects": objects, "in_use": True}
            prog.append(op)
    if in_use.get("kernel"):
        prog.append({"op": "alloc", "order": 0, "count": in_use["kernel"], "type": "unmovable"})
    movable = in_use.get("anon", 0) + in_use.get("file_active", 0) + in_use.get("file_inactive", 0)
    shaped = bool(in_use.get("buddyinfo")) and movable > 0
    if shaped:
        prog.append(
            {"op": "shape_free_lists", "buddyinfo": in_use["buddyinfo"], "size": movable * 4096}
        )
    if in_use.get("anon"):
        prog.append({"op": "touch", "size": in_use["anon"] * 4096})
    files = sc.setdefault("file", [])
    for name, reads in (("active", 2), ("inactive", 1)):
        pages = in_use.get(f"file_{name}", 0)
        if pages:
            path = f"{SYSTEM_TASK}/{name}"
            files.append({"name": path, "size": pages * 4096})
            prog += [{"op": "read", "file": path, "bs": host.IO_CHUNK}] * reads
    if not files:
        del sc["file"]
    if shaped:
        prog.append({"op": "shape_free_lists_end"})
    prog.append({"op": "signal", "name": "system-up"})
    # It holds its memory until the run ends, which it does not wait for.
    prog.append({"op": "wait", "name": "never"})
    for t in sc["task"]:
        t["program"].insert(0, {"op": "wait", "name": "system-up"})
    sc["task"].append({"name": SYSTEM_TASK, "program": prog, "daemon": True})


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
        # The recorder writes and reads in write(2)/read(2) calls of host.IO_CHUNK bytes.
        return [{"op": "write", "file": a["file"], "size": a["size"], "bs": host.IO_CHUNK}]
    if step.op == "read":
        op = {"op": "read", "file": a["file"], "bs": a.get("bs", host.IO_CHUNK)}
        if "size" in a:
            op["size"] = a["size"]
        return [op]
    if step.op == "unlink":
        return [{"op": "unlink", "file": a["file"]}]
    if step.op == "fadvise":
        return [{"op": "fadvise", "file": a["file"], "advice": a["advice"]}]
    if step.op == "anon":
        out: list[dict[str, Any]] = []
        if a.get("hugepage") and not advised[who]:
            advised[who] = True
            out.append({"op": "madvise", "advice": "hugepage"})
        anon[who] += a["size"] // 4096 * 4096
        if anon[who]:
            out.append({"op": "touch", "size": anon[who]})
        return out
    if step.op == "anon_touch":
        if not anon[who]:
            return []
        op = {"op": "touch", "size": anon[who], "write": a.get("write", True)}
        op["order"] = a.get("order", "sequential")
        return [op]
    if step.op == "anon_free":
        size, anon[who] = anon[who], 0
        return [{"op": "unmap", "size": size}] if size else []
    if step.op == "files":
        # The recorder writes each file with one write(2) of its whole content.
        size = max(a["size"], 4096)
        bs = -(-min(size, host.IO_CHUNK) // 4096) * 4096
        return [{"op": "fio_write", "files": a["count"], "file_size": size, "bs": bs}]
    if step.op == "sleep":
        return [{"op": "sleep", "time": f"{round(a['time'] * 1000)}ms"}]
    if step.op == "nr_hugepages":
        return [{"op": "nr_hugepages", "pages": a["pages"]}]
    if step.op == "compact_memory":
        return [{"op": "compact_memory"}]
    if step.op == "sync":
        return [{"op": "sync"}]
    if step.op == "drop_caches":
        return [{"op": "drop_caches", "value": a["value"]}]
    if step.op == "cgroup_limit":
        return [
            {
                "op": "cgroup_write",
                "cgroup": CGROUP,
                "file": "memory.limit_in_bytes",
                "value": a["size"],
            }
        ]
    return []


def count_trace(path: Path, keys: list[str], bounds: list[float]) -> list[dict[str, int]]:
    """Trace counts per interval between consecutive ``bounds`` [s] of an ftrace text file."""
    counters = [host.TraceCounter(keys) for _ in range(len(bounds) - 1)]
    i = 0
    with inputs.open_input(str(path), "a trace file", FidelityError) as f:
        for _, line, _ in inputs.iter_lines(f, str(path), ftrace.MAX_LINE_BYTES, FidelityError):
            parsed = host.parse_trace_line(line)
            if parsed is None or not bounds[0] < parsed[0] <= bounds[-1]:
                continue
            while i < len(counters) - 1 and parsed[0] > bounds[i + 1]:
                i += 1
            counters[i].add(parsed[1], parsed[2])
    return [c.snapshot() for c in counters]


def transfer_bandwidth(bandwidth: int, rtt_ns: int, request: int = host.IO_CHUNK) -> int:
    """The transfer rate [bytes/s] of a disk that moved ``request``-byte requests one at a
    time at ``bandwidth``, each with a round trip of ``rtt_ns`` in it (kept as measured when
    the round trip would take all of a request's time)."""
    per_request = request * 1e9 / bandwidth
    if per_request <= 2 * rtt_ns:
        return bandwidth
    return round(request * 1e9 / (per_request - rtt_ns))


def run_vmsim(
    exp: Experiment,
    machine: dict[str, Any],
    seed: int = 1,
    costs: str | None = None,
    in_use: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Runs vmsim on the experiment and returns its snapshots as the real side has them."""
    sc, missing = vmsim_scenario(exp, machine, costs, in_use)
    trace_keys = sorted({m.filter_key for m in exp.metrics if m.source == "trace"})
    with tempfile.TemporaryDirectory(prefix="vmsim-fidelity-") as tmp:
        tpath = Path(tmp) / "trace" if trace_keys else None
        # The experiment's own tracepoints, as the recorder enables them (kmem is off by default).
        events = list(exp.trace) if exp.trace else None
        r = api.run(sc, seed=seed, trace=tpath, events=events)
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
    out["ratio"] = _ratio(mean, v)
    out["ok"] = bool(abs(v - mean) <= tolerance * abs(mean) or lo <= v <= hi)
    return out


def real_differs(a: dict[str, Any], b: dict[str, Any], tolerance: float = TOLERANCE) -> bool:
    """Whether two kernels' real runs of a metric differ beyond their run-to-run spread: the
    ranges of runs do not overlap and the means are more than ``tolerance`` apart (of the
    larger)."""
    disjoint = a["real_max"] < b["real_min"] or b["real_max"] < a["real_min"]
    gap = abs(a["real"] - b["real"])
    return bool(disjoint and gap > tolerance * max(abs(a["real"]), abs(b["real"])))


def follows(real: tuple[float, float], sim: tuple[float | None, float | None]) -> str:
    """Which way vmsim moves between two kernels beside the real move: ``follows`` (the
    same way, by more than the tolerance), ``too little`` (the same way, within it),
    ``does not move``, ``opposite`` (by more than the tolerance the other way) or
    ``cannot tell`` (vmsim has no figure on one side)."""
    ra, rb = real
    va, vb = sim
    if va is None or vb is None:
        return "cannot tell"
    dv = vb - va
    same = (dv > 0) == (rb > ra)
    if abs(dv) > TOLERANCE * max(abs(va), abs(vb)):
        return "follows" if same else "opposite"
    if dv == 0:
        return "does not move"
    return "too little" if same else "does not move"


def _ratio(a: float | None, b: float | None) -> float | None:
    """b ÷ a: 1 when both are 0, None when only a is or either is missing."""
    if a is None or b is None:
        return None
    return b / a if a != 0 else (1.0 if b == 0 else None)


def between_kernels(result: dict[str, Any]) -> dict[str, Any]:
    """For each experiment recorded on two or more kernels vmsim models, every metric whose
    real runs differ between the newest kernel and another beyond the spread (time left
    out where either ran emulated), and which way vmsim moves between the same two
    recordings (each run on its own recorded machine with its kernel's rules)."""
    kernels = result["kernels"]
    modelled = [k for k in kernels if not kernels[k]["not_modelled"]]
    rows = []
    for name, ex in result["experiments"].items():
        keys = [k for k in modelled if k in ex["kernels"]]
        for other in keys[1:]:
            ref = keys[0]
            emulated = kernels[ref]["emulated"] or kernels[other]["emulated"]
            a, b = ex["kernels"][ref]["metrics"], ex["kernels"][other]["metrics"]
            for spec, ma in a.items():
                mb = b.get(spec)
                if mb is None or ma.get("real") is None or mb.get("real") is None:
                    continue
                if emulated and spec.startswith("time."):
                    continue
                if not real_differs(ma, mb):
                    continue
                rows.append(
                    {
                        "experiment": name,
                        "metric": spec,
                        "from": ref,
                        "to": other,
                        "real": [ma["real"], mb["real"]],
                        "real_ratio": _ratio(ma["real"], mb["real"]),
                        "vmsim": [ma["vmsim"], mb["vmsim"]],
                        "vmsim_ratio": _ratio(ma["vmsim"], mb["vmsim"]),
                        "verdict": follows((ma["real"], mb["real"]), (ma["vmsim"], mb["vmsim"])),
                    }
                )
    followed = sum(1 for r in rows if r["verdict"] == "follows")
    return {"differences": rows, "followed": followed, "total": len(rows)}


def not_modelled(machine: dict[str, Any]) -> str | None:
    """What of a recorded kernel vmsim does not model at all (its rows are not scored)."""
    if host.mglru_on(machine):
        return "MGLRU"
    return None


def emulated(machine: dict[str, Any]) -> bool:
    """Whether the recording ran in a guest under software emulation (time is not comparable)."""
    return bool(machine.get("vm"))


def _real_only(exp: Experiment, rec: dict[str, Any], why: str) -> dict[str, Any]:
    """The real side of a recording of a kernel vmsim does not model: no vmsim run, no score."""
    phases = exp.phase_names()
    metrics: dict[str, Any] = {}
    for m in exp.metrics:
        vals = [real_value(m, r, phases) for r in rec["runs"]]
        real = [float(v) for v in vals if v is not None]
        j: dict[str, Any] = judge(real, None) if real else {"real": None, "ratio": None}
        j.update(vmsim=None, ratio=None, ok=None, scored=False, note=f"not modelled: {why}")
        metrics[m.spec] = j
    return {
        "description": exp.description,
        "machine": rec["machine"]["kernel"],
        "runs": len(rec["runs"]),
        "metrics": metrics,
        "ok": 0,
        "total": 0,
        "not_modelled": why,
        "missing": [],
        "stale_recording": rec.get("experiment_sha256") != exp.sha256,
        "real_killed": sorted({k for r in rec["runs"] for p in r["phases"] for k in p["killed"]}),
        "vmsim_oom_kills": None,
        "vmsim_completed": None,
        "vmsim_unfinished_phases": [],
    }


def _check_phases(exp: Experiment, rec: dict[str, Any]) -> None:
    phases = exp.phase_names()
    for i, r in enumerate(rec["runs"]):
        got = [s["name"] for s in r["snapshots"]]
        if got != ["start", *phases]:
            raise FidelityError(
                f"{exp.name}: recording run {i + 1} has phases {got[1:]}, the experiment {phases}"
            )


def compare_experiment(
    exp: Experiment, rec: dict[str, Any], seed: int = 1, costs: str | None = None
) -> dict[str, Any]:
    """One experiment against one recording: every metric judged, and the counts."""
    phases = exp.phase_names()
    _check_phases(exp, rec)
    why = not_modelled(rec["machine"])
    if why:
        return _real_only(exp, rec, why)
    slow_cpu = emulated(rec["machine"])
    in_use = system_in_use(rec)
    # The profile given, else the one measured on the recording's machine, else the default.
    own = costs if costs is not None else machine_costs(rec["machine"])
    sim = run_vmsim(exp, rec["machine"], seed, own, in_use)
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
        if slow_cpu and m.source == "time":
            j["ok"] = None
            j["scored"] = False
            j["note"] = "time in an emulated guest: shown, not scored"
        metrics[m.spec] = j
    ok = sum(1 for x in metrics.values() if x["ok"])
    scored = sum(1 for x in metrics.values() if x.get("scored", True))
    stale = rec.get("experiment_sha256") != exp.sha256
    killed_real = sorted({k for r in rec["runs"] for p in r["phases"] for k in p["killed"]})
    return {
        "description": exp.description,
        "machine": rec["machine"]["kernel"],
        "runs": len(rec["runs"]),
        "metrics": metrics,
        "ok": ok,
        "total": scored,
        "not_modelled": None,
        "costs": None if own is None else api.cost_profile(own)["name"],
        "missing": sim["missing"],
        "rest_of_system_pages": in_use,
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


def _version(machine: dict[str, Any]) -> tuple[int, ...]:
    """A recorded kernel's upstream version as numbers (6.1.192 -> (6, 1, 192))."""
    text = machine.get("kernel_version") or machine["kernel"]
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups(default="0")) if m else (0,)


def kernel_label(machine: dict[str, Any]) -> str:
    """A short name of a recorded kernel for the table: ``6.18``, ``6.1``, ``6.1+mglru``."""
    label = ".".join(str(v) for v in _version(machine)[:2])
    thp_set = (machine.get("vm") or {}).get("thp_set")
    if thp_set:
        label += f"+thp-{thp_set}"
    return label + ("+mglru" if host.mglru_on(machine) else "")


def describe_machine(machine: dict[str, Any]) -> str:
    """One line on a recorded machine: kernel, where it ran, memory, CPUs, LRU."""
    ver = machine.get("kernel_version")
    kernel = f"Linux {machine['kernel']}" + (f" ({ver})" if ver else "")
    vm = machine.get("vm")
    where = f" in QEMU {vm['emulation'].upper()}" if vm else ""
    gib = round(machine["memory_bytes"] / (1 << 30))
    lru = f", MGLRU on (lru_gen {machine['lru_gen']})" if host.mglru_on(machine) else ""
    thp = machine.get("thp", {}).get("enabled", "?")
    return f"{kernel}{where}, {gib} GiB, {machine['cpus']} CPUs, THP {thp}{lru}"


def _kernel_order(machines: dict[str, dict[str, Any]]) -> list[str]:
    """Machine keys, newest kernel first, each kernel's classic LRU before its MGLRU."""
    return sorted(
        machines,
        key=lambda k: (
            tuple(-v for v in _version(machines[k])),
            host.mglru_on(machines[k]),
            bool((machines[k].get("vm") or {}).get("thp_set")),
            k,
        ),
    )


def _classic_twin(key: str, keys: list[str]) -> str | None:
    """The recording of the same machine with the classic LRU, beside one with MGLRU."""
    twin = key.removesuffix("-mglru")
    return twin if twin != key and twin in keys else None


def _against_classic(entry: dict[str, Any], classic: dict[str, Any], twin: str) -> None:
    """Ratios of MGLRU's real means to the classic LRU's, metric by metric."""
    entry["classic"] = twin
    for spec, m in entry["metrics"].items():
        m["vs_classic"] = _ratio(classic["metrics"].get(spec, {}).get("real"), m.get("real"))


def fidelity(
    experiments: dict[str, Experiment],
    names: list[str],
    root: Path,
    *,
    seed: int = 1,
    costs: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Compares vmsim with every recording of the named experiments (all when empty).

    ``costs`` names the cost profile vmsim runs with (its default when None).

    The result has one entry per experiment with one entry per recorded
    kernel (``experiments[NAME]["kernels"][MACHINE]``), and a score per kernel
    (``kernels[MACHINE]``) beside the total.
    """
    for n in names:
        if n not in experiments:
            raise FidelityError(f"unknown experiment '{n}' (known: {', '.join(experiments)})")
    found = find_recordings(root)
    if not found:
        raise FidelityError(f"{root}: no recordings in it (record one with --record NAME)")
    wanted = names or list(experiments)
    todo = [(mk, n, files[n]) for mk, files in found.items() for n in wanted if n in files]
    if not todo:
        raise FidelityError(f"no recordings of {', '.join(wanted)} under {root}")
    entries: dict[str, dict[str, dict[str, Any]]] = {}
    machines: dict[str, dict[str, Any]] = {}
    for i, (mk, n, path) in enumerate(todo):
        if progress:
            progress(f"{n} on {mk}", i, len(todo))
        rec = load_recording(path)
        if rec["experiment"] != n:
            raise FidelityError(f"{path}: holds experiment '{rec['experiment']}', not '{n}'")
        entry = compare_experiment(experiments[n], rec, seed, costs)
        entry["recording"] = f"{mk}/{path.name}"
        entries.setdefault(n, {})[mk] = entry
        machines.setdefault(mk, rec["machine"])
    order = _kernel_order(machines)
    labels = {k: kernel_label(machines[k]) for k in order}
    if len(set(labels.values())) < len(labels):
        labels = {k: k for k in order}  # two machines of one kernel: their directories
    kernels: dict[str, Any] = {}
    for k in order:
        es = [e[k] for e in entries.values() if k in e]
        ok, total = sum(e["ok"] for e in es), sum(e["total"] for e in es)
        kernels[k] = {
            "label": labels[k],
            "machine": describe_machine(machines[k]),
            "emulated": emulated(machines[k]),
            "not_modelled": not_modelled(machines[k]),
            # The cost profile vmsim ran this kernel's experiments with (None: the default).
            "costs": next((e.get("costs") for e in es if e.get("costs")), None),
            "experiments": len(es),
            "ok": ok,
            "total": total,
            "score": round(ok / total, 4) if total else None,
        }
    result: dict[str, Any] = {
        "costs": costs,
        "kernels": kernels,
        "experiments": {},
        "unrecorded": [],
    }
    for n in wanted:
        if n not in entries:
            result["unrecorded"].append(n)
            continue
        per = {k: entries[n][k] for k in order if k in entries[n]}
        for k, e in per.items():
            twin = _classic_twin(k, list(per)) if e["not_modelled"] else None
            if twin:
                _against_classic(e, per[twin], twin)
        result["experiments"][n] = {"description": experiments[n].description, "kernels": per}
    result["between_kernels"] = between_kernels(result)
    ok = sum(kv["ok"] for kv in kernels.values())
    total = sum(kv["total"] for kv in kernels.values())
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


def _within(m: dict[str, Any]) -> str:
    """The last column of a row: yes, no, or why it is not scored."""
    if m.get("scored", True):
        return ("yes" if m["ok"] else "no") + (" *" if m.get("note") else "")
    if m.get("vmsim", 0) is None and m.get("note", "").startswith("not modelled"):
        vs = m.get("vs_classic")
        return "not modelled" + ("" if vs is None else f" ({vs + 0.0:.2f} × classic LRU)")
    return "not scored *"


def _rest_of_system(in_use: dict[str, Any]) -> str:
    """One line: what the rest of the recorded system held at the start, in MiB."""
    mib = {k: v * 4096 / (1 << 20) for k, v in in_use.items() if isinstance(v, int)}
    parts = [
        f"anon {mib['anon']:.0f}",
        f"file {mib['file_active'] + mib['file_inactive']:.0f} ({mib['file_active']:.0f} active)",
        f"slab {mib['slab_reclaimable'] + mib['slab_unreclaimable']:.0f}",
        f"kernel {mib['kernel']:.0f}",
    ]
    total = sum(mib.values())
    return f"rest of the system at the start: {total:,.0f} MiB (" + ", ".join(parts) + ")"


def render_text(result: dict[str, Any]) -> str:
    """The comparison as text: a table per experiment with a row per metric and kernel, scores."""
    lines = []
    kernels = result["kernels"]
    kw = max(len(kv["label"]) for kv in kernels.values())
    if result.get("costs"):
        lines.append(f"vmsim runs with the cost profile {result['costs']}")
        lines.append("")
    for name, ex in result["experiments"].items():
        lines.append(f"{name}: {ex['description']}")
        missing: dict[str, list[str]] = {}
        for k, e in ex["kernels"].items():
            runs = f"{e['runs']} run{'s' if e['runs'] != 1 else ''}"
            lines.append(
                f"  {kernels[k]['label']:<{kw}}  {kernels[k]['machine']}, {runs} ({e['recording']})"
            )
            if e["stale_recording"]:
                lines.append(f"  {'':<{kw}}  note: the experiment changed since this recording")
            if e.get("rest_of_system_pages"):
                lines.append(f"  {'':<{kw}}  {_rest_of_system(e['rest_of_system_pages'])}")
            if e["real_killed"] or e["vmsim_oom_kills"]:
                vk = "—" if e["vmsim_oom_kills"] is None else e["vmsim_oom_kills"]
                rk = ", ".join(e["real_killed"]) or "none"
                lines.append(f"  {'':<{kw}}  OOM kills: real {rk}; vmsim {vk}")
            for x in e["missing"]:
                missing.setdefault(x, []).append(kernels[k]["label"])
        if missing:
            every = len(ex["kernels"])
            what = [
                x if len(ks) == every else f"{x} [{', '.join(ks)}]" for x, ks in missing.items()
            ]
            lines.append("  vmsim cannot express yet: " + "; ".join(what))
        w = max(len(m) for e in ex["kernels"].values() for m in e["metrics"])
        lines.append(
            f"  {'metric':<{w}}  {'kernel':<{kw}}  {'real mean':>13}  {'real range':>25}  "
            f"{'vmsim':>13}  {'ratio':>7}  within"
        )
        notes: list[str] = []
        specs = list(next(iter(ex["kernels"].values()))["metrics"])
        for spec in specs:
            for i, (k, e) in enumerate(ex["kernels"].items()):
                m = e["metrics"][spec]
                rng = (
                    f"{_num(m.get('real_min'))}–{_num(m.get('real_max'))}"
                    if m.get("real") is not None
                    else "—"
                )
                ratio = "—" if m["ratio"] is None else f"{m['ratio'] + 0.0:.2f}"
                first = spec if i == 0 else ""
                lines.append(
                    f"  {first:<{w}}  {kernels[k]['label']:<{kw}}  {_num(m['real']):>13}  "
                    f"{rng:>25}  {_num(m['vmsim']):>13}  {ratio:>7}  {_within(m)}"
                )
                note = m.get("note")
                if note and m.get("scored", True) or note and not note.startswith("not modelled"):
                    if note not in notes:
                        notes.append(note)
        for note in notes:
            lines.append(f"  * {note}")
        lines.append("")
    lines += _render_between(result)
    labels = [kv["label"] for kv in kernels.values()]
    w = max((len(n) for n in result["experiments"]), default=10)
    cw = max(12, *(len(x) for x in labels))
    lines.append(f"summary{'':<{w - 5}}" + "".join(f"  {x:>{cw}}" for x in labels))
    for name, ex in result["experiments"].items():
        cells = []
        for k in kernels:
            e = ex["kernels"].get(k)
            if e is None:
                cells.append("—")
            elif e["not_modelled"]:
                cells.append("not modelled")
            else:
                cells.append(f"{e['ok']} of {e['total']}")
        lines.append(f"  {name:<{w}}" + "".join(f"  {c:>{cw}}" for c in cells))
    for n in result.get("unrecorded", []):
        lines.append(f"  {n:<{w}}  not recorded")
    for k, kv in kernels.items():
        head = f"{kv['label']} ({k}):"
        if kv["not_modelled"]:
            lines.append(f"score {head} not modelled ({kv['not_modelled']}): real numbers only")
            continue
        extra = "; time of the emulated runs not scored" if kv["emulated"] else ""
        if kv.get("costs") and not result.get("costs"):
            extra += f"; vmsim with the costs measured on it ({kv['costs']})"
        score = kv["score"] if kv["score"] is not None else 0.0
        lines.append(f"score {head} {kv['ok']} of {kv['total']} within ({score:.2f}){extra}")
    lines.append(
        f"score: {result['ok']} of {result['total']} metrics within ±25 % or the real range "
        f"({result['score']:.2f})"
    )
    return "\n".join(lines) + "\n"


def _move(pair: list[float | None], ratio: float | None) -> str:
    """``a → b (×r)`` of one side of a difference between kernels."""
    times = "" if ratio is None else f" (×{ratio:.3g})"
    return f"{_num(pair[0])} → {_num(pair[1])}{times}"


def _render_between(result: dict[str, Any]) -> list[str]:
    """The lines on the differences between kernels, none when no experiment has two."""
    between = result.get("between_kernels") or {}
    rows = between.get("differences", [])
    if not rows:
        return []
    labels = {k: kv["label"] for k, kv in result["kernels"].items()}
    cells = [
        (
            r["experiment"],
            r["metric"],
            f"{labels[r['from']]} → {labels[r['to']]}",
            _move(r["real"], r["real_ratio"]),
            _move(r["vmsim"], r["vmsim_ratio"]),
            r["verdict"],
        )
        for r in rows
    ]
    head = ("experiment", "metric", "kernels", "real", "vmsim", "vmsim moves")
    ws = [max(len(c[i]) for c in [head, *cells]) for i in range(5)]
    out = [
        "between kernels: the metrics whose real means differ by more than "
        f"{TOLERANCE:.0%} with the runs' ranges apart, and which way vmsim moves "
        "(time left out for emulated runs)",
    ]
    for c in [head, *cells]:
        out.append(
            "  " + "  ".join(f"{x:<{w}}" for x, w in zip(c[:5], ws, strict=True)) + f"  {c[5]}"
        )
    tally: dict[str, int] = {}
    for r in rows:
        tally[r["verdict"]] = tally.get(r["verdict"], 0) + 1
    rest = ", ".join(f"{n} {v}" for v, n in tally.items() if v != "follows")
    out.append(
        f"between kernels: vmsim follows {between['followed']} of {between['total']} real "
        "differences" + (f" ({rest})" if rest else "")
    )
    out.append("")
    return out


def json_view(result: dict[str, Any]) -> dict[str, Any]:
    """The --json object (documented layout, with the extra fields kept)."""
    return result
