"""`vmsim calibrate`: measures this machine's per-operation costs on its running kernel.

Each figure comes from a microbenchmark of one operation (crates/vmsim-calibrate, run in
this process through the extension, or in a child it forks), repeated; the knob's value is
the median over the repetitions and its spread the lowest and highest. A knob derived from
two figures (a page fault less a touch, a round trip less its system calls) is derived
repetition by repetition. No experiment of ``vmsim fidelity`` and no seed figure is used:
calibration measures, it does not fit. Knobs no microbenchmark here can isolate keep the
values of the profile given as ``base`` and are listed as estimates. docs/cost-model.md
gives the method of each figure.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmsim import _vmsim, api

MEMCG_ROOT = Path("/sys/fs/cgroup/memory")


class CalibrateError(RuntimeError):
    """A calibration that cannot run here; the message is one line."""


@dataclass(frozen=True)
class Sizes:
    """How much each microbenchmark does in one repetition."""

    repeat: int
    mem: int  # bytes touched, cleared, copied, faulted
    syscalls: int
    round_trips: int
    messages: int
    forks_extra: int  # bytes of anonymous memory for the fork regression
    fork_vmas: int
    cache_bytes: int
    dio: int
    reclaim_file: int
    reclaim_limit: int


QUICK = Sizes(
    repeat=5,
    mem=64 << 20,
    syscalls=200_000,
    round_trips=20_000,
    messages=100_000,
    forks_extra=32 << 20,
    fork_vmas=1000,
    cache_bytes=16 << 20,
    dio=500,
    reclaim_file=48 << 20,
    reclaim_limit=16 << 20,
)
FULL = Sizes(
    repeat=7,
    mem=256 << 20,
    syscalls=2_000_000,
    round_trips=100_000,
    messages=1_000_000,
    forks_extra=128 << 20,
    fork_vmas=4000,
    cache_bytes=128 << 20,
    dio=4000,
    reclaim_file=256 << 20,
    reclaim_limit=64 << 20,
)


@dataclass
class Figure:
    """One measured figure: a value per repetition [ns]."""

    name: str
    values: list[float]
    method: str

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))


@dataclass
class Calibration:
    """What a calibration measured and the profile it makes."""

    figures: dict[str, Figure] = field(default_factory=dict)
    knobs: dict[str, Figure] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=dict)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, str]:
    """CPU, CPUs, memory and kernel of the machine measured."""
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {
        "machine": f"{cpu_model()}, {os.cpu_count()} CPUs, {mem_kb // 1024} MiB",
        "kernel": platform.release(),
        "date": datetime.date.today().isoformat(),
    }


def _bench(name: str, size: int, path: str | None = None, cpu: int = 0) -> dict[str, float]:
    try:
        return dict(_vmsim.calibrate_bench(name, size, path, cpu))
    except OSError as e:
        raise CalibrateError(f"calibrate {name}: {e}") from None


@contextmanager
def memcg(name: str, limit: int | None) -> Iterator[Path]:
    """A cgroup-v1 memory cgroup made for the measurement and always removed (its pages
    are dropped first with memory.force_empty)."""
    path = MEMCG_ROOT / name
    path.mkdir()
    try:
        if limit is not None:
            (path / "memory.limit_in_bytes").write_text(str(limit))
        yield path
    finally:
        try:
            (path / "memory.force_empty").write_text("0")
        except OSError:
            pass
        for _ in range(50):
            try:
                path.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def _memcg_stat(path: Path) -> dict[str, int]:
    out = {}
    for line in (path / "memory.stat").read_text().splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def _drop_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


TRACEFS = Path("/sys/kernel/tracing")
_TRACE_LINE = re.compile(
    r"^\s*\S.*?-(\d+)\s+\[\d+\].*?\s(\d+\.\d+): mm_vmscan_memcg_reclaim_(begin|end):(.*)$"
)


def reclaim_available() -> str | None:
    """Why the reclaim measurement cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (it makes a memory cgroup and a tracefs instance)"
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return f"needs the cgroup-v1 memory controller at {MEMCG_ROOT}"
    return None


@contextmanager
def trace_instance(name: str, events: list[str]) -> Iterator[Path]:
    """A private tracefs instance (``instances/NAME``) with ``events`` enabled, removed
    afterwards; tracefs is mounted for it, and unmounted after, if it was not."""
    mounted = False
    if not (TRACEFS / "instances").is_dir():
        TRACEFS.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)],
                          capture_output=True).returncode != 0:
            raise CalibrateError(f"calibrate reclaim: tracefs cannot be mounted at {TRACEFS}")
        mounted = True
    inst = TRACEFS / "instances" / name
    try:
        inst.mkdir()
        try:
            (inst / "buffer_size_kb").write_text("8192\n")
            for ev in events:
                enable = inst / "events" / ev.replace(":", "/") / "enable"
                if not enable.exists():
                    raise CalibrateError(f"calibrate reclaim: this kernel has no tracepoint {ev}")
                enable.write_text("1\n")
            yield inst
        finally:
            with suppress(OSError):
                (inst / "events" / "enable").write_text("0\n")
            for _ in range(20):
                try:
                    inst.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
    finally:
        if mounted:
            subprocess.run(["umount", str(TRACEFS)], capture_output=True)


def memcg_reclaim_calls(trace: str) -> tuple[float, int, int]:
    """Time inside memory cgroup limit reclaim [ns], pages it reclaimed and calls, from
    mm_vmscan_memcg_reclaim_begin/_end pairs of each task in an ftrace text."""
    begun: dict[str, float] = {}
    spent, pages, calls = 0.0, 0, 0
    for line in trace.splitlines():
        m = _TRACE_LINE.match(line)
        if not m:
            continue
        pid, ts, what, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4)
        if what == "begin":
            begun[pid] = ts
        elif pid in begun:
            nr = re.search(r"nr_reclaimed=(\d+)", rest)
            if nr:
                spent += (ts - begun.pop(pid)) * 1e9
                pages += int(nr.group(1))
                calls += 1
    return spent, pages, calls


def reclaim_clean_file(workdir: Path, sizes: Sizes) -> tuple[float, int, int]:
    """One repetition of the clean page-cache reclaim measurement: a file read 4 KiB a
    pread (readahead off, so one order-0 folio a read) by a process in a memory cgroup
    whose limit is a third of the file; the time each limit reclaim took, from its
    mm_vmscan_memcg_reclaim_begin/_end events, and the pages it reclaimed."""
    tag = f"vmsim-calibrate-{os.getpid()}"
    file = workdir / "reclaim.dat"
    if not file.exists():
        with open(file, "wb") as f:
            block = b"\x5a" * (1 << 20)
            for _ in range(sizes.reclaim_file >> 20):
                f.write(block)
    _drop_file(file)
    events = ["vmscan:mm_vmscan_memcg_reclaim_begin", "vmscan:mm_vmscan_memcg_reclaim_end"]
    with trace_instance(tag, events) as inst, memcg(tag, sizes.reclaim_limit) as group:
        try:
            _, nbytes = _vmsim.calibrate_read_in_cgroup(str(file), str(group / "cgroup.procs"))
        except OSError as e:
            raise CalibrateError(f"calibrate reclaim: {e}") from None
        (inst / "tracing_on").write_text("0\n")
        trace = (inst / "trace").read_text(errors="replace")
        _drop_file(file)
    if nbytes != sizes.reclaim_file:
        raise CalibrateError(f"calibrate reclaim: read {nbytes} bytes of {file}")
    return memcg_reclaim_calls(trace)


def _per_rep(
    a: Figure, b: Figure, f: Callable[[float, float], float], name: str, method: str
) -> Figure:
    return Figure(name, [f(x, y) for x, y in zip(a.values, b.values, strict=True)], method)


def measure(
    quick: bool = False,
    workdir: Path | None = None,
    base_cost: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Runs every microbenchmark and derives the knobs they measure."""
    sizes = QUICK if quick else FULL
    base = dict(base_cost or api.cost_profile("seed-era")["cost"])
    cal = Calibration(machine=machine_facts())
    say = progress or (lambda _s: None)

    def rep(name: str, method: str, fn: Callable[[], float]) -> Figure:
        say(name)
        fig = Figure(name, [fn() for _ in range(sizes.repeat)], method)
        cal.figures[name] = fig
        return fig

    def rep_many(names: dict[str, tuple[str, str]], fn: Callable[[], dict[str, float]]) -> None:
        say(", ".join(names))
        runs = [fn() for _ in range(sizes.repeat)]
        for key, (name, method) in names.items():
            cal.figures[name] = Figure(name, [r[key] for r in runs], method)

    mem = sizes.mem
    syscall = rep(
        "syscall", "syscall(SYS_getppid) in a loop, thread CPU time per call",
        lambda: _bench("syscall", sizes.syscalls)["ns"],
    )
    touch_rand = rep(
        "touch_random", f"one read per page of a populated {mem >> 20} MiB anonymous buffer, "
        "pages in shuffled order (independent loads overlap, as in a workload's loop)",
        lambda: _bench("touch_random", mem)["ns"],
    )
    touch_seq = rep(
        "touch_sequential", "the same reads in address order (what a first-touch loop adds to "
        "each of its faults)", lambda: _bench("touch_seq", mem)["ns"],
    )
    clear = rep(
        "clear_page", f"memset of each 4 KiB page of a populated {mem >> 20} MiB buffer "
        "(rep stosb, as clear_page_erms)", lambda: _bench("clear", mem)["ns"],
    )
    copy = rep(
        "copy_page", f"memcpy of each 4 KiB page between two populated {mem >> 20} MiB buffers",
        lambda: _bench("copy", mem)["ns"],
    )
    fault_read = rep(
        "fault_read", "first read of each page of a fresh MADV_NOHUGEPAGE anonymous mapping "
        "(do_anonymous_page maps the zero page: no allocation, no zeroing)",
        lambda: _bench("fault_read", mem)["ns"],
    )
    rep(
        "fault_write", "first write of each page of a fresh anonymous mapping (allocation, "
        "clear_page, memcg charge, LRU add, rmap)", lambda: _bench("fault_write", mem)["ns"],
    )
    rep("munmap", "munmap of a populated anonymous mapping, per page",
        lambda: _bench("unmap", mem)["ns"])
    pair = rep(
        "pipe_pair", "write(2) of one byte to a pipe and its read(2) back in one task",
        lambda: _bench("pipe_pair", sizes.round_trips)["ns"],
    )
    rtt = rep(
        "ping_pong", "round trip of one byte between two processes pinned to CPU 0 through "
        "two pipes (wall time)", lambda: _bench("ping_pong", sizes.round_trips, cpu=0)["ns"],
    )
    rep_many(
        {
            "send": ("unix_send", "write(2) of a 100-byte message to an AF_UNIX stream socket, "
                     "batches of 32 with no reader asleep, thread CPU time"),
            "recv": ("unix_recv", "read(2) of a 100-byte message from it"),
            "user": ("unix_user", "user share (getrusage RUSAGE_THREAD) of the same calls' CPU "
                     "time, per call"),
        },
        lambda: _bench("unix", sizes.messages),
    )
    forks = sizes.forks_extra
    clone = rep(
        "clone_vm", "parent's side of clone(CLONE_VM|SIGCHLD), the child exiting at once: "
        "copy_process and wake_up_new_task without dup_mmap, median of 201",
        lambda: _bench("clone_vm", 201)["ns"],
    )
    fork0 = rep("fork_self", "parent's side of fork() of this process, the child _exiting at "
                "once, median of 9", lambda: _bench("fork", 0, cpu=1)["ns"])
    fork_mem = rep(
        "fork_anon", f"the same with {forks >> 20} MiB more populated anonymous memory in one "
        "mapping", lambda: _bench("fork", forks, cpu=1)["ns"],
    )
    vmas = sizes.fork_vmas
    fork_vma = rep(
        "fork_vmas", f"the same with {vmas} one-page anonymous mappings more",
        lambda: _bench("fork", vmas * 4096, cpu=vmas)["ns"],
    )
    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-", dir=workdir) as tmp:
        rep_many(
            {
                "write": ("pagecache_write", f"buffered pwrite(2) of 4 KiB pages appending to a "
                          f"new {sizes.cache_bytes >> 20} MiB file (ext4 here), thread CPU time "
                          "per page"),
                "read": ("pagecache_read", "pread(2) of the same pages, cached, 4 KiB a call"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=1),
        )
        rep_many(
            {
                "write": ("pagecache_write_64k", "the same writes 64 KiB a call, per page"),
                "read": ("pagecache_read_64k", "the same reads 64 KiB a call, per page"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=16),
        )
        rep_many(
            {
                "write": ("pagecache_write_1m", "the same writes 1 MiB a call, per page"),
                "read": ("pagecache_read_1m", "the same reads 1 MiB a call, per page"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=256),
        )
        dio = rep(
            "direct_write", "pwrite(2) of 4 KiB with O_DIRECT over allocated blocks: thread CPU "
            "time per write (the iomap path, submit_bio, sleep and wake-up, completion)",
            lambda: _bench("direct_write", sizes.dio, path=tmp)["ns"],
        )
        why = reclaim_available()
        reclaim = None
        if why is None:
            say("reclaim")
            runs = [reclaim_clean_file(Path(tmp), sizes) for _ in range(sizes.repeat)]
            reclaim = runs
        else:
            cal.skipped["shrink_page"] = f"reclaim of clean page cache: {why}"

    # The knobs, each from its figures, repetition by repetition.
    k = cal.knobs
    k["syscall"] = Figure("syscall", syscall.values, syscall.method)
    k["touch_page"] = Figure("touch_page", touch_rand.values, touch_rand.method)
    k["clear_page"] = Figure("clear_page", clear.values, clear.method)
    k["copy_page"] = Figure("copy_page", copy.values, copy.method)
    k["page_fault"] = _per_rep(
        fault_read, touch_seq, lambda a, b: a - b, "page_fault",
        "read fault of a fresh anonymous page (fault_read) less the sequential touch of a "
        "mapped one (touch_sequential): exception entry, handle_mm_fault, the PTE, return",
    )
    k["context_switch"] = _per_rep(
        rtt, pair, lambda a, b: a / 2 - b, "context_switch",
        "half a ping-pong round trip between two processes on one CPU less one write/read "
        "pair: try_to_wake_up, schedule, switch_mm",
    )
    k["unix_sendmsg"] = Figure("unix_sendmsg", cal.figures["unix_send"].values,
                               cal.figures["unix_send"].method)
    k["unix_recvmsg"] = Figure("unix_recvmsg", cal.figures["unix_recv"].values,
                               cal.figures["unix_recv"].method)
    k["msg_user"] = Figure("msg_user", cal.figures["unix_user"].values,
                           cal.figures["unix_user"].method)
    k["fork"] = Figure("fork", clone.values, clone.method)
    # What dup_mmap adds to a fork, which vmsim does not model: per anonymous page and
    # per mapping, from fork() of this process with more of each.
    cal.figures["fork_per_page"] = _per_rep(
        fork_mem, fork0, lambda m, z: (m - z) / (forks // 4096), "fork_per_page",
        "(fork_anon - fork_self) per anonymous page added: the page-table copy",
    )
    cal.figures["fork_per_mapping"] = Figure(
        "fork_per_mapping",
        [(v - z - p * vmas) / vmas for v, z, p in zip(
            fork_vma.values, fork0.values, cal.figures["fork_per_page"].values, strict=True)],
        "(fork_vmas - fork_self) per mapping added, less its page's copy: vm_area_dup, "
        "anon_vma_fork",
    )
    ctx = k["context_switch"]
    k["submit_bio"] = Figure(
        "submit_bio",
        [d - s - c for d, s, c in zip(dio.values, syscall.values, ctx.values, strict=True)],
        "an O_DIRECT 4 KiB write's CPU time (direct_write) less a system call and the "
        "context switch of its wait",
    )
    if reclaim is not None:
        others = base["lru_lock_page"] + base["pcp_free"] + base["memcg_charge"]
        for _spent, n, _calls in reclaim:
            if n <= 0:
                raise CalibrateError("calibrate reclaim: the limited group reclaimed nothing")
        per_page = [spent / n for spent, n, _ in reclaim]
        cal.figures["reclaim_clean"] = Figure(
            "reclaim_clean", per_page,
            f"time inside memory cgroup limit reclaim (mm_vmscan_memcg_reclaim_begin to _end) "
            f"per page it reclaimed, reading a {sizes.reclaim_file >> 20} MiB file 4 KiB a "
            f"pread (readahead off: order-0 folios) in a group limited to "
            f"{sizes.reclaim_limit >> 20} MiB; {reclaim[0][2]} reclaims of "
            f"{reclaim[0][1] / max(1, reclaim[0][2]):.0f} pages",
        )
        k["shrink_page"] = Figure(
            "shrink_page", [p - others for p in per_page],
            "reclaim_clean less what vmsim charges besides shrink_page for a clean order-0 "
            f"file page on that path (lru_lock_page + pcp_free + memcg_charge = {others} ns)",
        )
    # write_call/write_page and read_call/read_page: a call of n pages costs call + n·page.
    # Two lengths (4 KiB and 64 KiB a call) give both parts, for the real kernel and for
    # vmsim with these four at 0 and every other figure as measured; each knob is the
    # real part less vmsim's own.
    cost = {**base, **{n: f.median for n, f in k.items()}}
    cost.update(write_call=0, write_page=0, read_call=0, read_page=0)
    say("vmsim's own charge for writes and reads")
    v = {
        ("write", 1): _vmsim_sys_per_page(cost, _write(4), CHECK_PAGES),
        ("write", 16): _vmsim_sys_per_page(cost, _write(64), CHECK_PAGES),
        ("read", 1): _vmsim_sys_per_page(cost, _read(4), CHECK_PAGES, _write(4)),
        ("read", 16): _vmsim_sys_per_page(cost, _read(64), CHECK_PAGES, _write(64)),
    }
    for op in ("write", "read"):
        f1, f16 = cal.figures[f"pagecache_{op}"], cal.figures[f"pagecache_{op}_64k"]
        v_call, v_page = _split(v[(op, 1)], v[(op, 16)])
        parts = [_split(a, b) for a, b in zip(f1.values, f16.values, strict=True)]
        k[f"{op}_call"] = Figure(
            f"{op}_call", [c - v_call for c, _ in parts],
            f"the per-call part of pagecache_{op} and pagecache_{op}_64k (a call of n pages "
            f"costs call + n x page) less vmsim's own per-call part ({v_call:.0f} ns)",
        )
        k[f"{op}_page"] = Figure(
            f"{op}_page", [p - v_page for _, p in parts],
            f"the per-page part of the same less vmsim's own ({v_page:.0f} ns a page: "
            + ("allocation, copy, buffer_head, LRU add, charge)" if op == "write"
               else "the copy, the accessed marking)"),
        )
    for name in ("write_call", "write_page", "read_call", "read_page"):
        if k[name].median < 0:
            # vmsim's own charge for that part already exceeds the kernel's: nothing to add.
            fig = k[name]
            k[name] = Figure(
                name, [max(0.0, x) for x in fig.values],
                fig.method + f"; vmsim's own part exceeds the kernel's by "
                f"{-fig.median:.0f} ns, so 0",
            )
    for name in ("page_fault", "context_switch", "submit_bio", "shrink_page"):
        if name in k and k[name].median <= 0:
            raise CalibrateError(
                f"calibrate: {name} came out at {k[name].median:.0f} ns, not a cost; the "
                "machine is too busy or the method does not hold here"
            )
    cal.checks = _checks(cal, base)
    return cal


def _vmsim_sys_per_page(cost: dict[str, float], program: list[dict[str, Any]], pages: int,
                        before: list[dict[str, Any]] | None = None) -> float:
    """System time per page [ns] vmsim charges a task for ``program`` (less what
    ``before`` alone costs), on a 4 GiB machine with nothing else to do."""

    def sys_ns(prog: list[dict[str, Any]]) -> float:
        sc = {
            "name": "calibrate-check",
            "duration": "60s",
            "machine": {"memory": "4GiB", "cpus": 2},
            "cost": {k: int(round(v)) for k, v in cost.items()},
            "task": [{"name": "t", "program": prog}],
        }
        return float(api.run(sc).data["tasks"]["t"]["sys_seconds"]) * 1e9

    base = sys_ns(before) if before else 0.0
    return (sys_ns((before or []) + program) - base) / pages


CHECK_PAGES = 16 * 256


def _write(kib: int) -> list[dict[str, Any]]:
    return [{"op": "write", "file": "f", "size": "16MiB", "bs": f"{kib}KiB"}]


def _read(kib: int) -> list[dict[str, Any]]:
    return [{"op": "read", "file": "f", "bs": f"{kib}KiB"}]


def _split(per_page_4k: float, per_page_64k: float) -> tuple[float, float]:
    """(per call, per page) of an operation costing call + n·page for a call of n pages,
    from its cost per page at 1 and at 16 pages a call."""
    call = (per_page_4k - per_page_64k) * 16 / 15
    return call, per_page_4k - call


def _checks(cal: Calibration, base: dict[str, int]) -> list[dict[str, Any]]:
    """Whole operations measured here against what vmsim charges for the same operation
    with the new profile (a run of it): none of them sets a figure; printed so that a
    reader sees what the model leaves out."""
    cost: dict[str, float] = {**base, **{n: f.median for n, f in cal.knobs.items()}}
    f = cal.figures
    n = CHECK_PAGES
    rows = [
        ("anonymous write fault", f["fault_write"].median - f["touch_sequential"].median,
         _vmsim_sys_per_page(cost, [{"op": "touch", "size": "16MiB"}], n),
         "do_anonymous_page"),
        ("anonymous read fault", f["fault_read"].median - f["touch_sequential"].median,
         _vmsim_sys_per_page(cost, [{"op": "touch", "size": "16MiB", "write": False}], n),
         "do_anonymous_page (the zero page)"),
        ("buffered write, 1 MiB a call", f["pagecache_write_1m"].median,
         _vmsim_sys_per_page(cost, _write(1024), n), "generic_perform_write"),
        ("cached read, 1 MiB a call", f["pagecache_read_1m"].median,
         _vmsim_sys_per_page(cost, _read(1024), n, _write(1024)), "filemap_read"),
    ]
    return [
        {
            "operation": what,
            "measured_ns": round(measured, 1),
            "vmsim_ns": round(modelled, 1),
            "ratio": round(modelled / measured, 2) if measured > 0 else None,
            "kernel_function": fn,
        }
        for what, measured, modelled, fn in rows
    ]


def profile(cal: Calibration, base: dict[str, Any], name: str) -> dict[str, Any]:
    """The cost profile a calibration makes, as the TOML tables of a profile file: measured
    knobs from it, the rest from ``base`` (a profile as api.cost_profile gives it) and
    labelled as estimates."""
    cost = dict(base["cost"])
    spread: dict[str, list[float]] = {}
    method: dict[str, str] = {}
    for knob, fig in cal.knobs.items():
        cost[knob] = max(1 if knob == "msg_user" else 0, round(fig.median))
        lo, hi = fig.spread
        spread[knob] = [round(lo, 1), round(hi, 1)]
        method[knob] = f"measured: {fig.method}; median of {len(fig.values)}"
        if fig.median < 1 and knob == "msg_user":
            method[knob] += " (below what the measurement resolves: 1 ns)"
    for knob in cost:
        if knob not in cal.knobs:
            why = cal.skipped.get(knob, "no microbenchmark of vmsim calibrate isolates it")
            from_base = base.get("method", {}).get(knob, "")
            method[knob] = f"estimate ({why}), from profile {base['name']}: {from_base}"
    return {
        "profile": {
            "name": name,
            "machine": cal.machine["machine"],
            "kernel": cal.machine["kernel"],
            "date": cal.machine["date"],
            "source": f"vmsim calibrate {_vmsim.version()}",
        },
        "cost": cost,
        "spread": spread,
        "method": method,
    }


def profile_toml(prof: dict[str, Any]) -> str:
    """The profile file's text: a comment saying what made it, then its tables."""
    import tomli_w

    head = (
        f"# Cost profile {prof['profile']['name']}: made by `vmsim calibrate` on "
        f"{prof['profile']['date']}.\n# Every figure is in ns; docs/cost-model.md gives each "
        "method. Use it with vmsim run --costs FILE.\n\n"
    )
    return head + tomli_w.dumps(prof)


def as_json(cal: Calibration, prof: dict[str, Any]) -> dict[str, Any]:
    """Everything a calibration measured, and the profile it made, as one JSON object."""
    return {
        "machine": cal.machine,
        "knobs": {
            n: {"ns": prof["cost"][n], "spread": prof["spread"][n], "values": f.values,
                "method": f.method}
            for n, f in cal.knobs.items()
        },
        "figures": {
            n: {"median": f.median, "spread": list(f.spread), "values": f.values,
                "method": f.method}
            for n, f in cal.figures.items()
        },
        "estimates": sorted(set(prof["cost"]) - set(cal.knobs)),
        "skipped": cal.skipped,
        "checks": cal.checks,
        "profile": prof,
    }


def report_text(cal: Calibration, prof: dict[str, Any], default: dict[str, Any]) -> str:
    """The calibration as text: the knobs measured against the default profile's, the
    figures behind them, the checks and the estimates left."""
    m = cal.machine
    out = [f"{m['machine']}; Linux {m['kernel']}; {m['date']}", ""]
    out.append(f"{'knob':<16s} {'measured':>9s} {'spread':>17s} {default['name']:>14s}")
    for n, f in cal.knobs.items():
        lo, hi = f.spread
        out.append(
            f"{n:<16s} {prof['cost'][n]:>9d} {f'{lo:.0f}..{hi:.0f}':>17s} "
            f"{default['cost'][n]:>14d}"
        )
    out += ["", "figures [ns, median and spread]:"]
    for n, f in cal.figures.items():
        lo, hi = f.spread
        out.append(f"  {n:<18s} {f.median:>11.1f}  {lo:.1f}..{hi:.1f}")
    out += ["", "checks: whole operations, measured and as vmsim charges them with this profile "
            "(system time per page of a run; not used to set anything):"]
    for c in cal.checks:
        out.append(
            f"  {c['operation']:<30s} measured {c['measured_ns']:>7.0f}  vmsim "
            f"{c['vmsim_ns']:>7.0f}  ratio {c['ratio']}"
        )
    est = sorted(set(prof["cost"]) - set(cal.knobs))
    out += ["", f"estimates kept from the base profile (no microbenchmark isolates them): "
            f"{', '.join(est)}"]
    for k, why in cal.skipped.items():
        out.append(f"not measured: {k}: {why}")
    return "\n".join(out)
