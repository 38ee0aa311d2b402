"""``vmsim fidelity --record``: runs an experiment on the running kernel and writes a recording.

A recording is one JSON file, ``<recordings>/<kernel>-<memory>GiB-<cpus>cpu/NAME.json``:

```
{"format": "vmsim-fidelity-recording/1", "experiment": NAME,
 "experiment_sha256": …, "recorded": ISO time, "machine": {…},
 "runs": [{"wall_seconds": …,
           "snapshots": [{"name": "start" | PHASE, "vmstat": {…}, "meminfo": {…},
                          "buddyinfo": TEXT, "memcg_stat": {…} | null,
                          "memcg": {"failcnt": …, …} | null, "trace": {…} | null,
                          "diskstats": {"reads": …, "read_ms": …, …} | null}, …],
           "phases": [{"name": PHASE, "seconds": …, "killed": [TASK…],
                       "nr_hugepages": [asked, got]…, "trace_lost": N}, …]}, …]}
```

The snapshot named after a phase is /proc read at its end; ``start`` is read
before the first phase. Nothing of the experiment outlives the recording: its
cgroup, sysctls, ``nr_hugepages``, tracefs instance, swap file (``swapoff``,
then deleted) and files are undone on
success, error, Ctrl-C or SIGTERM alike.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vmsim import atomic
from vmsim.fidelity import host
from vmsim.fidelity.experiment import Experiment, FidelityError

FORMAT = "vmsim-fidelity-recording/1"
MAX_RUNS = 20
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def check_can_record(exp: Experiment, work_root: Path) -> None:
    """Refuses (one line) when this process or machine cannot run the experiment."""
    if os.geteuid() != 0:
        raise FidelityError(
            "--record needs root (it makes a memory cgroup and writes /proc/sys/vm); run it as root"
        )
    if exp.cgroup_limit is not None or any(t.cgroup for t in exp.tasks):
        why = host.memcg_available()
        if why:
            raise FidelityError(f"{exp.name}: {why}")
    if not work_root.is_dir():
        raise FidelityError(f"--work-dir {work_root}: no such directory")
    if exp.swap_size is not None:
        other = host.swaps_in_use()
        if other:
            raise FidelityError(
                f"{exp.name}: this machine already swaps to {', '.join(other)}; the experiment "
                "needs its own swap file alone (swapoff the others first)"
            )
    _, mnt, fstype = host.mount_of(work_root)
    if fstype in ("tmpfs", "ramfs", "devtmpfs", "proc", "sysfs"):
        raise FidelityError(
            f"--work-dir {work_root} is on {fstype} ({mnt}): experiments need a disk filesystem"
        )
    host.check_fits(exp.footprint(), work_root)


def _snapshot(
    name: str, cg: Path | None, tracer: host.TraceInstance | None, dev: str = ""
) -> dict[str, Any]:
    stat = files = None
    if cg is not None:
        stat, files = host.cgroup_state(cg)
    return {
        "name": name,
        "vmstat": host.read_vmstat(),
        "meminfo": host.read_meminfo(),
        "buddyinfo": host.read_text(host.PROC / "buddyinfo"),
        "memcg_stat": stat,
        "memcg": files,
        "trace": tracer.snapshot() if tracer else None,
        "diskstats": host.read_diskstats(dev) if dev else None,
    }


def run_once(
    exp: Experiment, work_root: Path, *, trace: bool = True, log: Log = _quiet
) -> dict[str, Any]:
    """Runs the experiment once on this kernel and returns the run's record."""
    tag = f"vmsim-fidelity-{os.getpid()}"
    t_start = time.monotonic()
    with contextlib.ExitStack() as stack, host.signals_as_interrupt():
        work = work_root / tag
        work.mkdir()
        stack.callback(shutil.rmtree, work, True)
        cg = None
        if exp.cgroup_limit is not None or any(t.cgroup for t in exp.tasks):
            cg = host.make_cgroup(stack, tag, exp.cgroup_limit)
        for name, value in exp.sysctl.items():
            host.set_sysctl(stack, name, value)
        if exp.swap_size is not None:
            host.make_swapfile(stack, work / "swapfile", exp.swap_size)
            log(f"  swap file of {exp.swap_size >> 20} MiB on")
            if exp.zswap:
                host.enable_zswap(stack)
                log("  zswap on")
        if any(s.op == "nr_hugepages" for p in exp.phases for s in p.steps):
            host.set_sysctl(stack, "vm.nr_hugepages", host.read_sysctl("vm.nr_hugepages"))
        workers: dict[str, host.Worker] = {}
        for t in exp.tasks:
            w = host.Worker(t.name, cg / "cgroup.procs" if (cg and t.cgroup) else None, work)
            stack.callback(w.stop)
            workers[t.name] = w
        tracer = None
        if trace and exp.trace:
            keys = [m.filter_key for m in exp.metrics if m.source == "trace"]
            keys += [e.split(":")[1] for e in exp.trace]
            tracer = host.TraceInstance(stack, tag, exp.trace, sorted(set(keys)))
        for fname, size in exp.files:
            host.make_uncached_file(work / fname, size)
        dev = host.mount_of(work)[0]
        snapshots = [_snapshot("start", cg, tracer, dev)]
        phases = []
        for ph in exp.phases:
            t0 = time.monotonic()
            deadline = t0 + exp.timeout
            for name, w in workers.items():
                steps = [s for s in ph.steps if s.task == name]
                if steps:
                    w.send(steps)
            record: dict[str, Any] = {"name": ph.name}
            for s in ph.steps:
                if s.task is not None:
                    continue
                if s.op == "nr_hugepages":
                    got = host.set_nr_hugepages(s.args["pages"])
                    record.setdefault("nr_hugepages", []).append([s.args["pages"], got])
                elif s.op == "compact_memory":
                    host.sysctl_path("vm.compact_memory").write_text("1\n")
                elif s.op == "sync":
                    os.sync()
                elif s.op == "drop_caches":
                    host.sysctl_path("vm.drop_caches").write_text(f"{s.args['value']}\n")
                elif s.op == "cgroup_limit" and cg is not None:
                    # The kernel refuses a limit reclaim cannot reach (EBUSY): recorded.
                    try:
                        (cg / "memory.limit_in_bytes").write_text(f"{s.args['size']}\n")
                        outcome = "ok"
                    except OSError as e:
                        outcome = errno.errorcode.get(e.errno or 0, str(e))
                    record.setdefault("cgroup_limit", []).append([s.args["size"], outcome])
                elif s.op == "sleep":
                    time.sleep(s.args["time"])
            for w in workers.values():
                w.wait(deadline)
            record["seconds"] = round(time.monotonic() - t0, 6)
            record["killed"] = [n for n, w in workers.items() if w.killed]
            snapshots.append(_snapshot(ph.name, cg, tracer, dev))
            if tracer:
                record["trace_lost"] = tracer.lost()
            phases.append(record)
            log(f"  {ph.name}: {record['seconds']:.1f} s")
    return {
        "wall_seconds": round(time.monotonic() - t_start, 3),
        "snapshots": snapshots,
        "phases": phases,
    }


#: Seconds the recorder waits, after syncing, when a run has deleted many files on ext4
#: without a journal: find_inode_bit passes over an inode deleted less than 60 s ago
#: (RECENTCY_MIN), and less than 360 s ago while its inode-table block is dirty
#: (RECENTCY_DIRTY) — which the next run's first creates in that block make it again —
#: so the next run's creates would be slowed by its predecessor's deletions.
SETTLE_SECONDS = 361.0


def settle_needed(exp: Experiment, machine: dict[str, Any]) -> bool:
    """Whether a run of ``exp`` leaves inodes the next run would pass over: it makes files
    (a ``files`` step) and its filesystem is ext4 without a journal."""
    makes_files = any(s.op == "files" for p in exp.phases for s in p.steps)
    return (
        makes_files and machine.get("filesystem") == "ext4" and machine.get("fs_journal") is False
    )


def record(
    exp: Experiment,
    runs: int,
    recordings: Path,
    work_root: Path,
    *,
    trace: bool = True,
    log: Log = _quiet,
    disk_probe: bool = True,
    settle_seconds: float = SETTLE_SECONDS,
) -> Path:
    """Records ``runs`` runs of an experiment and writes the recording file; returns its path.

    Runs that create many files on ext4 without a journal are each followed by a sync
    and ``settle_seconds`` of waiting (:func:`settle_needed`), so that no run's creates
    meet the inodes an earlier run deleted."""
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise FidelityError(f"--runs {runs}: must be an integer from 1 to {MAX_RUNS}")
    check_can_record(exp, work_root)
    with tempfile.TemporaryDirectory(dir=work_root, prefix="vmsim-fidelity-probe-") as probe:
        machine = host.machine_info(Path(probe), disk=False)
    out = []
    probes = []
    lists = []
    for i in range(runs):
        with tempfile.TemporaryDirectory(dir=work_root, prefix="vmsim-fidelity-probe-") as d:
            if disk_probe:
                # The disk as this run meets it: a probe just before the run.
                probes.append(host.measure_disk(Path(d)))
            # Where this run's first allocations will land (boot-ordered or mixed lists).
            lists.append(host.probe_free_lists(Path(d)))
        log(f"{exp.name}: run {i + 1} of {runs}")
        run = run_once(exp, work_root, trace=trace, log=log)
        if settle_needed(exp, machine) and settle_seconds > 0:
            log(
                f"  sync and {settle_seconds:.0f} s for the deleted inodes to age "
                "(ext4 without a journal passes over recently deleted ones)"
            )
            os.sync()
            time.sleep(settle_seconds)
            run["settled_seconds"] = settle_seconds
        if disk_probe:
            run["disk_probe"] = probes[-1]
        run["free_list_probe"] = lists[-1]
        _warn_unbuddied(run, log)
        out.append(run)
    if probes:
        machine["disk"].update(host.median_disk(probes))
    machine["free_lists"] = host.free_lists_of(lists)
    rec = {
        "format": FORMAT,
        "experiment": exp.name,
        "experiment_sha256": exp.sha256,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine,
        "runs": out,
    }
    path = recordings / host.machine_key(machine) / f"{exp.name}.json"
    write_recording(path, rec)
    return path


def unbuddied_pages(snapshot: dict[str, Any]) -> int:
    """Pages /proc/meminfo counts free that the buddy allocator's lists do not hold.

    MemFree less vmstat's nr_free_pages: 0 on a kernel whose free memory is all on
    the free lists; millions of pages on this machine's kernel for a while after
    it starts (its struct pages are initialised lazily, ``deferred_init=lazy`` on
    its command line), until memory pressure has brought them in.
    """
    mi = snapshot.get("meminfo") or {}
    vm = snapshot.get("vmstat") or {}
    if "MemFree" not in mi or "nr_free_pages" not in vm:
        return 0
    return max(0, int(mi["MemFree"]) // 4 - int(vm["nr_free_pages"]))


def _warn_unbuddied(run: dict[str, Any], log: Log) -> None:
    """Says so when a run's machine held free memory outside the buddy allocator."""
    worst = max((unbuddied_pages(s) for s in run["snapshots"]), default=0)
    if worst > 1024:
        log(
            f"warning: {worst:,} pages counted free were not on the buddy allocator's lists "
            "during this run (memory the kernel had not initialised yet); the machine it "
            "ran on was smaller than vmsim's"
        )


def write_recording(path: Path, rec: dict[str, Any]) -> None:
    """Writes a recording whole or not at all."""
    write_json(path, rec)


def write_json(path: Path, rec: dict[str, Any]) -> None:
    """Writes a JSON file whole or not at all (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(rec, indent=1, sort_keys=False) + "\n")


def load_recording(path: Path) -> dict[str, Any]:
    """Reads and checks a recording file; raises FidelityError (one line) if it is not one."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise FidelityError(f"{path}: cannot read: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FidelityError(f"{path}: not a recording (bad JSON: {e})") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise FidelityError(f"{path}: not a recording (format is not {FORMAT})")
    runs = rec.get("runs")
    if not isinstance(runs, list) or not runs:
        raise FidelityError(f"{path}: a recording without runs")
    machine = rec.get("machine")
    if not isinstance(machine, dict) or not {"kernel", "memory_bytes", "cpus"} <= set(machine):
        raise FidelityError(f"{path}: the machine description is incomplete")
    for i, r in enumerate(runs):
        snaps = r.get("snapshots") if isinstance(r, dict) else None
        phases = r.get("phases") if isinstance(r, dict) else None
        if not isinstance(snaps, list) or not isinstance(phases, list):
            raise FidelityError(f"{path}: run {i + 1} has no snapshots or phases")
        if len(snaps) != len(phases) + 1 or snaps[0].get("name") != "start":
            raise FidelityError(f"{path}: run {i + 1}: snapshots do not match its phases")
        for s in snaps:
            if not isinstance(s.get("vmstat"), dict) or not isinstance(s.get("buddyinfo"), str):
                raise FidelityError(f"{path}: run {i + 1}: snapshot '{s.get('name')}' is damaged")
    return rec
