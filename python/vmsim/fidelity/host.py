"""The running kernel: what /proc and sysfs say, and the processes an experiment runs.

Everything here reads or writes only what an experiment made or what it
restores afterwards: its own memory cgroup (cgroup v1, under
``/sys/fs/cgroup/memory``), the ``vm.*`` sysctls it sets, ``nr_hugepages``,
its own tracefs instance, its own work directory and the swap file it makes
there (``mkswap``/``swapon``/``swapoff`` of util-linux). Each change registers
its undo on a :class:`contextlib.ExitStack` the moment it is made, so an
error, Ctrl-C or SIGTERM half-way leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import multiprocessing
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vmsim import ftrace
from vmsim.fidelity.experiment import FidelityError, Step

PAGE_SIZE = 4096
MEMCG_ROOT = Path("/sys/fs/cgroup/memory")
TRACEFS = Path("/sys/kernel/tracing")
PROC = Path("/proc")
# Sysctls recorded with the machine (vmsim knobs of the same name where they exist).
RECORDED_SYSCTLS = (
    "vm.min_free_kbytes",
    "vm.watermark_scale_factor",
    "vm.watermark_boost_factor",
    "vm.swappiness",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.extfrag_threshold",
    "vm.compaction_proactiveness",
    "vm.overcommit_memory",
    "vm.nr_hugepages",
    "vm.vfs_cache_pressure",
    "vm.page-cluster",
)
IO_CHUNK = 1 << 20

#: posix_fadvise(2)'s advice by the name an experiment gives it.
FADVISE_ADVICE = {
    "normal": os.POSIX_FADV_NORMAL,
    "sequential": os.POSIX_FADV_SEQUENTIAL,
    "random": os.POSIX_FADV_RANDOM,
    "willneed": os.POSIX_FADV_WILLNEED,
    "dontneed": os.POSIX_FADV_DONTNEED,
}


# ---------------------------------------------------------------------------
# Reading /proc and sysfs
# ---------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """A whole procfs/sysfs file."""
    return path.read_text(encoding="utf-8")


def parse_kv(text: str) -> dict[str, int]:
    """``name value`` lines (/proc/vmstat, memory.stat) as a dict."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            with contextlib.suppress(ValueError):
                out[parts[0]] = int(parts[1])
    return out


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as a dict (kB figures in kB, counts as counts)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_()]+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def read_vmstat() -> dict[str, int]:
    """/proc/vmstat now."""
    return parse_kv(read_text(PROC / "vmstat"))


def read_meminfo() -> dict[str, int]:
    """/proc/meminfo now."""
    return parse_meminfo(read_text(PROC / "meminfo"))


def sysctl_path(name: str) -> Path:
    """The /proc/sys file of a dotted sysctl name."""
    return PROC / "sys" / name.replace(".", "/")


def read_sysctl(name: str) -> str:
    """A sysctl's value as text, stripped."""
    return read_text(sysctl_path(name)).strip()


def bracketed(text: str) -> str:
    """The selected word of a sysfs choice like ``always [madvise] never``."""
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text.strip()


def present_bytes() -> int:
    """Physical memory the zones span as present pages (/proc/zoneinfo) [bytes]."""
    total = 0
    for m in re.finditer(r"^\s+present\s+(\d+)$", read_text(PROC / "zoneinfo"), re.M):
        total += int(m.group(1))
    return total * PAGE_SIZE


def mount_of(path: Path) -> tuple[str, str, str]:
    """(device, mount point, filesystem type) of the mount holding ``path``."""
    best = ("", "/", "")
    rp = str(path.resolve())
    for line in read_text(PROC / "mounts").splitlines():
        dev, mnt, fstype = line.split()[:3]
        mnt = mnt.replace("\\040", " ")
        if (rp == mnt or rp.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
            best = (dev, mnt, fstype)
    return best


def ext4_journal(path: Path, sysfs: Path = Path("/sys/fs/ext4")) -> bool | None:
    """Whether the ext4 filesystem holding ``path`` has a journal (None: not ext4, or
    not known): /sys/fs/ext4/DEV/journal_task names the jbd2 thread, or reads
    ``<none>`` when the filesystem was made or mounted without one."""
    dev, _mnt, fstype = mount_of(path)
    if fstype != "ext4":
        return None
    task = sysfs / Path(dev).name / "journal_task"
    try:
        text = task.read_text().strip()
    except OSError:
        return None
    return text != "<none>"


def block_queue(dev: str) -> Path | None:
    """The sysfs queue directory of the disk under a block device node."""
    name = Path(dev).name
    p = Path("/sys/class/block") / name
    if not p.exists():
        return None
    q = p / "queue"
    if q.is_dir():
        return q
    parent = p.resolve().parent / "queue"  # a partition: its disk's queue
    return parent if parent.is_dir() else None


#: /proc/diskstats' fields after the device name (Documentation/admin-guide/iostats.rst).
DISKSTATS_FIELDS = (
    "reads",
    "reads_merged",
    "sectors_read",
    "read_ms",
    "writes",
    "writes_merged",
    "sectors_written",
    "write_ms",
    "in_flight",
    "io_ms",
    "weighted_io_ms",
)


def read_diskstats(dev: str) -> dict[str, int] | None:
    """The /proc/diskstats counters of a block device node's disk or partition, if listed."""
    name = Path(dev).name
    for line in read_text(PROC / "diskstats").splitlines():
        f = line.split()
        if len(f) >= 3 + len(DISKSTATS_FIELDS) and f[2] == name:
            return {k: int(v) for k, v in zip(DISKSTATS_FIELDS, f[3:], strict=False)}
    return None


def memcg_available() -> str | None:
    """None when a cgroup-v1 memory controller is mounted, else why not."""
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return f"no cgroup-v1 memory controller at {MEMCG_ROOT}"
    return None


# ---------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------


def measure_disk(work: Path, size: int = 256 << 20, reads: int = 1024) -> dict[str, Any]:
    """Sequential O_DIRECT write and read bandwidth [bytes/s] and 4 KiB read latency [ns],
    random and in order.

    Measured on a file of ``size`` in the work directory (deleted after), with
    1 MiB requests for bandwidth and ``reads`` 4 KiB reads in order, then as
    many at random offsets, for latency, bypassing the page cache so that the
    figures are the device's. The latency is the device's own: the time
    /proc/diskstats counts from a request's allocation (blk_mq_rq_ctx_init's
    ``start_time_ns``) to its completion (``read_ms`` over the reads), random
    (``latency_ns``) and in order (``latency_seq_ns``). What the random reads
    take beyond the ordered ones is positioning, vmsim's ``disk.latency``; the
    ordered reads' time is every request's round trip, its
    ``disk.request_latency``. The time the random reads took as this
    process saw them (system call, filesystem, wake-up: 20-25 µs more on
    this VM) is kept beside it as ``latency_user_ns``, with its median. The
    disk's counters are the whole device's, so reads are repeated when another
    process read the disk meanwhile (``_device_reads``).
    """
    dev = mount_of(work)[0]
    path = work / "disk-probe"
    buf = mmap.mmap(-1, IO_CHUNK)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(4096) * (IO_CHUNK // 4096))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
        try:
            t0 = time.perf_counter()
            for _ in range(size // IO_CHUNK):
                os.write(fd, buf)
            os.fsync(fd)
            write_s = time.perf_counter() - t0
        finally:
            os.close(fd)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        try:
            t0 = time.perf_counter()
            while os.readv(fd, [buf]) > 0:
                pass
            read_s = time.perf_counter() - t0
            small = mmap.mmap(-1, 4096)
            # The same reads in order first: what a request costs with no positioning.
            _, seq = _device_reads(fd, small, dev, [i * 4096 for i in range(reads)])
            rng = random.Random(1)
            offsets = [rng.randrange(size // 4096) * 4096 for _ in range(reads)]
            lats, rand = _device_reads(fd, small, dev, offsets)
            small.close()
        finally:
            os.close(fd)
    finally:
        buf.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    user = statistics.fmean(lats) * 1e9
    out: dict[str, Any] = {
        "write_bandwidth": round(size / write_s),
        "read_bandwidth": round(size / read_s),
        "latency_ns": round(user),
        "latency_user_ns": round(user),
        "latency_user_p50_ns": round(statistics.median(lats) * 1e9),
        "probe_bytes": size,
    }
    if rand is not None:
        out["latency_ns"] = rand
        out["latency_from"] = "diskstats"
    if seq is not None:
        out["latency_seq_ns"] = seq
    return out


#: Times the probe's reads are repeated when another process read the disk meanwhile.
PROBE_ATTEMPTS = 4


def _device_reads(
    fd: int, buf: mmap.mmap, dev: str | None, offsets: list[int]
) -> tuple[list[float], int | None]:
    """4 KiB O_DIRECT reads at ``offsets``: each one's time as this process saw it [s],
    and the device's mean time per read [ns] from /proc/diskstats.

    The disk's counters are the whole device's: a window in which another process
    also read (more reads completed than the probe made) is repeated, up to
    ``PROBE_ATTEMPTS`` times, and without a clean window the device's time is None.
    """
    lats: list[float] = []
    for _ in range(PROBE_ATTEMPTS):
        lats = []
        before = read_diskstats(dev) if dev else None
        for off in offsets:
            t0 = time.perf_counter()
            os.preadv(fd, [buf], off)
            lats.append(time.perf_counter() - t0)
        after = read_diskstats(dev) if dev else None
        if before is None or after is None:
            return lats, None
        if after["reads"] - before["reads"] == len(offsets):
            return lats, round((after["read_ms"] - before["read_ms"]) * 1e6 / len(offsets))
    return lats, None


#: Pages of a max-order block (MAX_PAGE_ORDER 10 on x86-64: 4 MiB).
MAX_ORDER_PAGES = 1 << 10


def free_list_order(pfns: list[int]) -> dict[str, Any]:
    """How a run of fresh allocations walked physical memory, from their pfns in order.

    Among the steps from one page to the next that leave a max-order block, the
    fraction that go to a neighbouring block (``adjacent_fraction``): close to 1
    when the free lists hand out blocks in pfn order, as a kernel does after boot
    (``__free_pages_core`` freed them in ascending order to the tail), close to 0
    when their order has been mixed, as on a machine whose lists years of frees
    have stirred. ``order`` is "boot" for a fraction of at least one half, else
    "mixed".
    """
    blocks = [p // MAX_ORDER_PAGES for p in pfns if p]
    steps = [(a, b) for a, b in zip(blocks, blocks[1:], strict=False) if a != b]
    adjacent = sum(1 for a, b in steps if abs(a - b) == 1)
    frac = adjacent / len(steps) if steps else 1.0
    return {
        "pages": len(blocks),
        "block_steps": len(steps),
        "adjacent_steps": adjacent,
        "adjacent_fraction": round(frac, 4),
        "order": "boot" if frac >= 0.5 else "mixed",
    }


def probe_free_lists(work: Path, size: int = 128 << 20) -> dict[str, Any]:
    """Where fresh page-cache pages land: :func:`free_list_order` of a new file's pfns.

    Writes a file of ``size`` in 1 MiB writes to the work directory's
    filesystem, maps it and reads each page's pfn from /proc/self/pagemap
    (root), in file order; the file is deleted after.
    """
    path = work / "free-list-probe"
    chunk = b"\x5a" * IO_CHUNK
    try:
        with open(path, "wb") as f:
            for _ in range(size // IO_CHUNK):
                f.write(chunk)
        fd = os.open(path, os.O_RDONLY)
        try:
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        try:
            for off in range(0, size, 4096):
                m[off]
            base = _mapping_start(path)
            pm = os.open("/proc/self/pagemap", os.O_RDONLY)
            try:
                raw = os.pread(pm, size // 4096 * 8, base // 4096 * 8)
            finally:
                os.close(pm)
        finally:
            m.close()
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    entries = np.frombuffer(raw, dtype="<u8")
    pfns = (entries & np.uint64((1 << 55) - 1)).astype(np.int64).tolist()
    if not any(pfns):
        raise FidelityError("/proc/self/pagemap shows no pfns (root is needed)")
    out = free_list_order(pfns)
    out["probe_bytes"] = size
    return out


def _mapping_start(path: Path) -> int:
    """The start address of this process's mapping of ``path`` (/proc/self/maps)."""
    name = str(path.resolve())
    for line in read_text(PROC / "self" / "maps").splitlines():
        if line.endswith(name):
            return int(line.split("-", 1)[0], 16)
    raise FidelityError(f"{name} is not mapped")


def free_lists_of(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The free lists' order over a recording's probes: the median fraction and its verdict."""
    frac = round(statistics.median(p["adjacent_fraction"] for p in probes), 4)
    return {
        "adjacent_fraction": frac,
        "order": "boot" if frac >= 0.5 else "mixed",
        "probes": len(probes),
    }


#: The disk figures a probe measures, whose median over a recording's probes it keeps.
PROBED = (
    "write_bandwidth",
    "read_bandwidth",
    "latency_ns",
    "latency_seq_ns",
    "latency_user_ns",
    "latency_user_p50_ns",
)


def median_disk(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each probed figure over several disk probes, and how many there were.

    A virtual machine's disk has moments of stalls: one probe's mean can be
    several times another's (49 to 169 µs here), so a recording keeps the
    median of a probe taken before each of its runs.
    """
    out: dict[str, Any] = {}
    for k in PROBED:
        vals = [p[k] for p in probes if k in p]
        if vals:
            out[k] = round(statistics.median(vals))
    out["probes"] = len(probes)
    if probes and all(p.get("latency_from") == "diskstats" for p in probes):
        out["latency_from"] = "diskstats"
    return out


def machine_info(work: Path, disk: bool = True) -> dict[str, Any]:
    """What the recording says of the machine: kernel, memory, CPUs, sysctls, THP, disk."""
    mi = read_meminfo()
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or 1
    sysctl = {}
    for name in RECORDED_SYSCTLS:
        with contextlib.suppress(OSError, ValueError):
            sysctl[name] = int(read_sysctl(name))
    thp = {}
    for k in ("enabled", "defrag"):
        with contextlib.suppress(OSError):
            thp[k] = bracketed(read_text(Path("/sys/kernel/mm/transparent_hugepage") / k))
    dev, mnt, fstype = mount_of(work)
    q = block_queue(dev)
    queue: dict[str, int] = {}
    if q is not None:
        for k in ("read_ahead_kb", "nr_requests", "max_sectors_kb", "rotational", "wbt_lat_usec"):
            with contextlib.suppress(OSError, ValueError):
                queue[k] = int(read_text(q / k).strip())
        # blk-wbt's inputs beside wbt_lat_usec (disk.queue_depth, disk.write_cache):
        # recorded, not yet given to vmsim (docs/fidelity.md, "Writeback throttling").
        with contextlib.suppress(OSError, ValueError):
            queue["queue_depth"] = int(read_text(q.parent / "mq" / "0" / "nr_tags").strip())
        with contextlib.suppress(OSError):
            queue["write_cache"] = int(read_text(q / "write_cache").strip() == "write back")
    lru_gen = None
    with contextlib.suppress(OSError):
        lru_gen = read_text(Path("/sys/kernel/mm/lru_gen/enabled")).strip()
    zswap = None
    with contextlib.suppress(OSError):
        zswap = read_text(Path("/sys/module/zswap/parameters/enabled")).strip()
    info: dict[str, Any] = {
        "kernel": os.uname().release,
        "kernel_version": kernel_version(read_text(PROC / "version")),
        "arch": os.uname().machine,
        "memory_bytes": present_bytes(),
        "mem_total_kb": mi.get("MemTotal", 0),
        "cpus": os.cpu_count() or 1,
        "nodes": nodes,
        "swap_bytes": mi.get("SwapTotal", 0) * 1024,
        "hugepagesize_kb": mi.get("Hugepagesize", 2048),
        "sysctl": sysctl,
        "thp": thp,
        "lru_gen": lru_gen,
        "zswap": zswap,
        "filesystem": fstype,
        "fs_journal": ext4_journal(work),
        "device": Path(dev).name,
        "disk": dict(queue),
    }
    if disk:
        info["disk"].update(measure_disk(work))
    return info


def machine_key(info: dict[str, Any]) -> str:
    """The recordings directory of a machine: ``<kernel>-<memory>GiB-<cpus>cpu[-tcg…][-mglru]``.

    The kernel is its upstream version where the distribution names it
    (Debian's 6.1.0-56-amd64 is 6.1.192), else the release; ``-tcg`` marks
    a guest under software emulation (``-thp-MODE`` one whose THP was set
    for the run), ``-mglru`` a kernel with MGLRU on.
    """
    key = cost_key(info)
    if info.get("vm") and info["vm"].get("thp_set"):
        key += f"-thp-{info['vm']['thp_set']}"
    if mglru_on(info):
        key += "-mglru"
    return key


def cost_key(info: dict[str, Any]) -> str:
    """The machine itself, as its costs depend on it: ``<kernel>-<memory>GiB-<cpus>cpu[-tcg]``
    (a recording directory's name less the settings of the run, THP and MGLRU)."""
    version = info.get("kernel_version") or info["kernel"]
    release = re.match(r"^\d+\.\d+(?:\.\d+)?", version)
    rel = release.group(0) if release else re.sub(r"[^A-Za-z0-9.]", "_", version)
    gib = round(info["memory_bytes"] / (1 << 30))
    key = f"{rel}-{gib}GiB-{info['cpus']}cpu"
    if info.get("vm"):
        key += f"-{info['vm']['emulation']}"
    return key


def mglru_on(info: dict[str, Any]) -> bool:
    """Whether a recorded machine ran with MGLRU (lru_gen/enabled other than 0x0000)."""
    return info.get("lru_gen") not in (None, "0x0000")


def kernel_version(proc_version: str) -> str | None:
    """The upstream version a distribution's /proc/version names (``Debian 6.1.192-2``)."""
    m = re.search(r"#\S+ .*?\b(?:Debian|Ubuntu) (\d+\.\d+\.\d+)", proc_version)
    return m.group(1) if m else None


def disk_free(path: Path) -> int:
    """Bytes free for unprivileged use on the filesystem of ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


# ---------------------------------------------------------------------------
# Changes that are undone
# ---------------------------------------------------------------------------


def set_sysctl(stack: contextlib.ExitStack, name: str, value: int | str) -> None:
    """Writes a sysctl and registers writing its old value back."""
    old = read_sysctl(name)
    stack.callback(_write_quiet, sysctl_path(name), old)
    sysctl_path(name).write_text(f"{value}\n")


def _write_quiet(path: Path, value: str) -> None:
    with contextlib.suppress(OSError):
        path.write_text(f"{value}\n")


def set_nr_hugepages(pages: int) -> int:
    """Asks for a hugetlb pool of ``pages`` and returns the pool the kernel made."""
    sysctl_path("vm.nr_hugepages").write_text(f"{pages}\n")
    return int(read_sysctl("vm.nr_hugepages"))


def make_uncached_file(path: Path, size: int) -> None:
    """Writes a file of ``size`` bytes to the disk and drops its pages from the page cache.

    The file is written in 1 MiB ``write(2)``s, ``fsync``-ed (so every page is
    clean) and invalidated with ``posix_fadvise(POSIX_FADV_DONTNEED)``, which
    frees the file's clean pages (invalidate_mapping_pages) and no other:
    the file is on the disk and nothing of it is cached, as after a reboot.
    """
    data = bytes([0x5A]) * IO_CHUNK
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        left = size
        while left > 0:
            left -= os.write(fd, data[: min(left, len(data))])
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def make_cgroup(stack: contextlib.ExitStack, name: str, limit: int | None) -> Path:
    """Creates a v1 memory cgroup and registers its removal."""
    why = memcg_available()
    if why:
        raise FidelityError(why)
    path = MEMCG_ROOT / name
    path.mkdir()
    stack.callback(remove_cgroup, path)
    if limit is not None:
        (path / "memory.limit_in_bytes").write_text(f"{limit}\n")
    return path


def remove_cgroup(path: Path) -> None:
    """Removes a memory cgroup once its processes are gone (kills any left in it)."""
    if not path.exists():
        return
    for _ in range(50):
        try:
            pids = [int(p) for p in read_text(path / "cgroup.procs").split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not pids:
            with contextlib.suppress(OSError):
                (path / "memory.force_empty").write_text("0\n")
            try:
                path.rmdir()
                return
            except OSError as e:
                if e.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    raise
        time.sleep(0.1)
    path.rmdir()


def swaps_in_use() -> list[str]:
    """The swap areas the kernel has on (/proc/swaps, first column)."""
    lines = read_text(PROC / "swaps").splitlines()[1:]
    return [ln.split()[0].replace("\\040", " ") for ln in lines if ln.strip()]


def make_swapfile(stack: contextlib.ExitStack, path: Path, size: int) -> None:
    """Makes a swap file of ``size`` bytes and turns it on; registers swapoff and removal.

    The file is written in full (no holes, as swapon wants), ``mkswap``'d and
    ``swapon``'d; the undo is registered before anything is created, so an
    error or Ctrl-C at any point turns it off and deletes it.
    """
    stack.callback(remove_swapfile, path)
    buf = bytes(IO_CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        left = size
        while left > 0:
            left -= os.write(fd, buf[: min(left, IO_CHUNK)])
        os.fsync(fd)
    finally:
        os.close(fd)
    for cmd in (["mkswap", str(path)], ["swapon", str(path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            why = (r.stderr or r.stdout).strip().splitlines()
            raise FidelityError(f"{cmd[0]} {path}: {why[-1] if why else r.returncode}")


ZSWAP_ENABLED = Path("/sys/module/zswap/parameters/enabled")


def enable_zswap(stack: contextlib.ExitStack) -> None:
    """Turns zswap on (/sys/module/zswap/parameters/enabled) and registers turning it back.

    zswap's pages live in swap slots, so this comes after the swap file is on: the
    undo runs first, and pages still in zswap stay readable until swapoff brings
    them in.
    """
    if not ZSWAP_ENABLED.exists():
        raise FidelityError("this kernel has no zswap (/sys/module/zswap is missing)")
    old = read_text(ZSWAP_ENABLED).strip()
    stack.callback(_write_quiet, ZSWAP_ENABLED, old)
    ZSWAP_ENABLED.write_text("Y\n")


def remove_swapfile(path: Path) -> None:
    """Turns a swap file off if it is on (retrying through Ctrl-C) and deletes it."""
    for _ in range(5):
        try:
            if str(path) in swaps_in_use():
                subprocess.run(["swapoff", str(path)], capture_output=True, check=False)
            break
        except KeyboardInterrupt:
            continue
    if str(path) not in swaps_in_use():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


MEMSW_FILES = ("usage_in_bytes", "max_usage_in_bytes", "failcnt", "limit_in_bytes")


def cgroup_state(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(memory.stat, the limit files failcnt/max_usage_in_bytes/usage_in_bytes and the
    memsw ones as ``memsw_…``) of a group."""
    stat = parse_kv(read_text(path / "memory.stat"))
    files = {}
    for k in ("failcnt", "max_usage_in_bytes", "usage_in_bytes", "limit_in_bytes"):
        files[k] = int(read_text(path / f"memory.{k}").strip())
    for k in MEMSW_FILES:
        with contextlib.suppress(OSError, ValueError):
            files[f"memsw_{k}"] = int(read_text(path / f"memory.memsw.{k}").strip())
    with contextlib.suppress(OSError, ValueError):
        files["kmem.usage_in_bytes"] = int(read_text(path / "memory.kmem.usage_in_bytes").strip())
    return stat, files


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt (as Ctrl-C does), so undo steps run."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# ---------------------------------------------------------------------------
# Tracepoint counts
# ---------------------------------------------------------------------------

_FIELD = re.compile(r"(\w+)=(\S+)")
_CMP = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
}


def parse_trace_line(line: str) -> tuple[float, str, str] | None:
    """(timestamp [s], event, fields text) of an ftrace text line; None for other lines."""
    t = ftrace.parse_line(line)
    if t is None:
        return None
    return t.seconds, t.event, t.details


class TraceCounter:
    """Counts trace lines by event, and by event with field filters (``name:field<N``)."""

    def __init__(self, keys: list[str]) -> None:
        self.counts: dict[str, int] = {k: 0 for k in keys}
        self.filters: list[tuple[str, str, str, str, int]] = []
        for k in keys:
            m = re.fullmatch(r"(\w+):(\w+)(<=|>=|<|>|==)(-?\d+)", k)
            if m:
                self.filters.append((k, m.group(1), m.group(2), m.group(3), int(m.group(4))))

    def feed(self, line: str) -> float | None:
        """Counts one line; returns its timestamp [s] when it is an event line."""
        parsed = parse_trace_line(line)
        if parsed is None:
            return None
        self.add(parsed[1], parsed[2])
        return parsed[0]

    def add(self, event: str, fields_text: str) -> None:
        """Counts one event with the text of its fields."""
        if event in self.counts:
            self.counts[event] += 1
        for key, ev, fld, cmp, val in self.filters:
            if ev == event:
                fields = dict(_FIELD.findall(fields_text))
                try:
                    v = int(fields[fld], 0)
                except (KeyError, ValueError):
                    continue
                if _CMP[cmp](v, val):
                    self.counts[key] += 1

    def snapshot(self) -> dict[str, int]:
        """The counts so far."""
        return dict(self.counts)


class TraceInstance:
    """A private tracefs instance with some events enabled, read by a thread.

    Made with ``mkdir instances/NAME`` (the global buffer and its settings are
    not touched) and removed on close.
    """

    def __init__(self, stack: contextlib.ExitStack, name: str, events: list[str], keys: list[str]):
        if not (TRACEFS / "instances").is_dir():
            os.makedirs(TRACEFS, exist_ok=True)
            rc = os.system(f"mount -t tracefs nodev {TRACEFS} 2>/dev/null")
            if rc != 0 or not (TRACEFS / "instances").is_dir():
                raise FidelityError(f"tracefs is not mounted at {TRACEFS} and cannot be")
            stack.callback(os.system, f"umount {TRACEFS} 2>/dev/null")
        self.dir = TRACEFS / "instances" / name
        self.dir.mkdir()
        stack.callback(self._remove)
        (self.dir / "buffer_size_kb").write_text("8192\n")
        for ev in events:
            sysname, evname = ev.split(":")
            enable = self.dir / "events" / sysname / evname / "enable"
            if not enable.exists():
                raise FidelityError(f"this kernel has no tracepoint {ev}")
            enable.write_text("1\n")
        self.counter = TraceCounter(keys)
        self._stop = threading.Event()
        self._fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        rest = b""
        while not self._stop.is_set():
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                time.sleep(0.02)
                continue
            except OSError:
                return
            if not chunk:
                time.sleep(0.02)
                continue
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                self.counter.feed(line.decode("utf-8", "replace"))

    def snapshot(self) -> dict[str, int]:
        """Counts so far, after letting the reader drain the buffer."""
        time.sleep(0.3)
        return self.counter.snapshot()

    def lost(self) -> int:
        """Events the buffer overwrote before they were read (per-CPU overrun)."""
        total = 0
        for stats in (self.dir / "per_cpu").glob("cpu*/stats"):
            m = re.search(r"^overrun: (\d+)", read_text(stats), re.M)
            if m:
                total += int(m.group(1))
        return total

    def _remove(self) -> None:
        with contextlib.suppress(OSError):
            (self.dir / "events" / "enable").write_text("0\n")
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        for _ in range(20):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)


# ---------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------


def _touch(m: mmap.mmap) -> None:
    a = np.frombuffer(m, dtype=np.uint8)
    a[::PAGE_SIZE] = 1
    del a


def _retouch(m: mmap.mmap, write: bool, order: str, seed: int) -> int:
    """Reads or writes the first byte of every page of a mapping, in order or shuffled."""
    a = np.frombuffer(m, dtype=np.uint8)
    pages = len(m) // PAGE_SIZE
    if order == "random":
        idx = np.random.default_rng(seed).permutation(pages) * PAGE_SIZE
    else:
        idx = np.arange(pages) * PAGE_SIZE
    total = 0
    if write:
        a[idx] = 2
    else:
        total = int(a[idx].sum())
    del a
    return total


def run_step(
    step: Step,
    work: Path,
    anon: list[mmap.mmap],
    data: bytes,
    advised: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Does one task step in this process; returns what it observed.

    A file the task gave advice on (``fadvise``) stays open in ``advised``, as
    the advice belongs to the open file: the task's later reads of it use that
    descriptor (from the start), and unlinking it closes it.
    """
    a = step.args
    advised = {} if advised is None else advised
    if step.op == "write":
        fd = os.open(work / a["file"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            left = a["size"]
            while left > 0:
                left -= os.write(fd, data[: min(left, len(data))])
        finally:
            os.close(fd)
    elif step.op == "read":
        kept = advised.get(a["file"])
        fd = os.open(work / a["file"], os.O_RDONLY) if kept is None else os.dup(kept)
        if kept is not None:
            os.lseek(fd, 0, os.SEEK_SET)
        buf = bytearray(a.get("bs", IO_CHUNK))
        try:
            left = a.get("size", 1 << 62)
            while left > 0:
                n = os.readv(fd, [buf])
                if n == 0:
                    break
                left -= n
        finally:
            os.close(fd)
    elif step.op == "unlink":
        if a["file"] in advised:
            os.close(advised.pop(a["file"]))
        os.unlink(work / a["file"])
    elif step.op == "fadvise":
        if a["file"] not in advised:
            advised[a["file"]] = os.open(work / a["file"], os.O_RDONLY)
        os.posix_fadvise(advised[a["file"]], 0, 0, FADVISE_ADVICE[a["advice"]])
    elif step.op == "anon":
        if a["size"] > 0:
            m = mmap.mmap(-1, a["size"], flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if a.get("hugepage"):
                m.madvise(mmap.MADV_HUGEPAGE)
            anon.append(m)
            _touch(m)
    elif step.op == "anon_free":
        while anon:
            anon.pop().close()
    elif step.op == "anon_touch":
        for i, m in enumerate(anon):
            _retouch(m, a.get("write", True), a.get("order", "sequential"), seed=i + 1)
    elif step.op == "files":
        d = work / a["dir"]
        d.mkdir(exist_ok=True)
        content = data[: a["size"]]
        for i in range(a["count"]):
            fd = os.open(d / f"{i:08d}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                if content:
                    os.write(fd, content)
            finally:
                os.close(fd)
    elif step.op == "unlink_files":
        shutil.rmtree(work / a["dir"])
    elif step.op == "sleep":
        time.sleep(a["time"])
    else:
        raise FidelityError(f"op '{step.op}' is not a task step")
    return {}


def _worker_main(conn: Any, procs: str | None, work: str) -> None:
    """A task: joins the cgroup, then runs the step lists it is sent until told to stop.

    It is a fresh interpreter (spawned, not forked: a forked child's
    copy-on-write faults would charge the parent's memory to the group), and
    everything it needs is imported and allocated before it joins the group,
    so the group is charged for the experiment's own memory only.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    anon: list[mmap.mmap] = []
    advised: dict[str, int] = {}
    data = bytes([0x5A]) * IO_CHUNK
    if procs:
        Path(procs).write_text(f"{os.getpid()}\n")
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            break
        try:
            for step in msg:
                run_step(step, Path(work), anon, data, advised)
            conn.send(("ok", None))
        except Exception as e:  # noqa: BLE001 - reported to the recorder as one line
            conn.send(("error", f"{type(e).__name__}: {e}"))
    while anon:
        anon.pop().close()
    for fd in advised.values():
        os.close(fd)


class Worker:
    """A task of an experiment, as a child process driven over a pipe."""

    def __init__(self, name: str, procs: Path | None, work: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.name = name
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_worker_main, args=(child, str(procs) if procs else None, str(work))
        )
        self.proc.start()
        child.close()
        self.killed = False
        self.busy = False
        if not self.conn.poll(30):
            raise FidelityError(f"task {name}: did not start")
        self.conn.recv()

    def send(self, steps: list[Step]) -> None:
        """Starts a list of steps."""
        if self.killed:
            return
        self.conn.send(steps)
        self.busy = True

    def wait(self, deadline: float) -> None:
        """Waits for the steps to end; a task the kernel killed (OOM) is marked killed."""
        if not self.busy or self.killed:
            return
        left = deadline - time.monotonic()
        try:
            if not self.conn.poll(max(left, 0)):
                raise FidelityError(f"task {self.name}: phase did not end within the timeout")
            status, msg = self.conn.recv()
        except (EOFError, ConnectionResetError):
            self.proc.join(5)
            if self.proc.exitcode == -signal.SIGKILL:
                self.killed = True
                self.busy = False
                return
            raise FidelityError(
                f"task {self.name}: died (exit code {self.proc.exitcode})"
            ) from None
        self.busy = False
        if status != "ok":
            raise FidelityError(f"task {self.name}: {msg}")

    def stop(self) -> None:
        """Ends the process (its memory is freed)."""
        if self.proc.is_alive() and not self.killed:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(10)
        self.conn.close()


def check_fits(footprint: dict[str, int], work: Path) -> None:
    """Refuses an experiment whose memory or disk use would not fit well inside the machine."""
    mi = read_meminfo()
    total = mi.get("MemTotal", 0) * 1024
    avail = mi.get("MemAvailable", 0) * 1024
    mem = footprint["memory"]
    if mem > 0.75 * total or mem > 0.85 * avail:
        raise FidelityError(
            f"needs {mem >> 20} MiB of anonymous memory and hugetlb pool; this machine has "
            f"{total >> 20} MiB ({avail >> 20} MiB available): too large to run safely here"
        )
    free = disk_free(work)
    if footprint["disk"] > 0.5 * free:
        raise FidelityError(
            f"writes {footprint['disk'] >> 20} MiB; {work} has {free >> 20} MiB free: too large"
        )
