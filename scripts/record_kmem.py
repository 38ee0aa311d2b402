"""Records a kmem trace on this machine for `vmsim replay kmem` (docs/replay.md).

A file-creation load (small files written, synced and removed, with an anonymous
region faulted in under MADV_HUGEPAGE for THP faults) runs in a child process while
a private tracefs instance records kmem:mm_page_alloc, mm_page_free,
mm_page_free_batched and mm_page_alloc_extfrag of that process only (an event filter
on its pid), streamed into a gzip file. Everything this script changes is undone on
any exit: the instance is removed, and tracefs is unmounted if the script mounted it.
Needs root.

    python scripts/record_kmem.py OUT.trace.gz [--files N] [--thp-mib M] [--seconds S]
"""

from __future__ import annotations

import argparse
import gzip
import mmap
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("mm_page_alloc", "mm_page_free", "mm_page_free_batched", "mm_page_alloc_extfrag")
MADV_HUGEPAGE = 14


def load(files: int, thp_mib: int, seconds: float, go_r: int) -> None:
    """The recorded load: waits for the go byte, then creates, syncs and removes files
    over `seconds`, faulting in one 2 MiB-aligned huge page of the region now and then."""
    os.read(go_r, 1)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vmsim-kmem-load-") as d:
        region = mmap.mmap(-1, (thp_mib + 2) << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        base = (-_address(region)) % (2 << 20)
        try:
            region.madvise(MADV_HUGEPAGE)
        except OSError:
            pass
        for i in range(files):
            lag = start + seconds * i / files - time.monotonic()
            if lag > 0:
                time.sleep(lag)
            size = 4096 * (1 + i % 8)
            with open(os.path.join(d, f"f{i}"), "wb") as f:
                f.write(os.urandom(64) * (size // 64))
                if i % 100 == 0:
                    os.fsync(f.fileno())
            if i % (max(files // (thp_mib // 2 or 1), 1)) == 0:
                # Touch the next 2 MiB of the region: one THP fault (order 9) each.
                off = base + (i // max(files // (thp_mib // 2 or 1), 1)) * (2 << 20)
                if off < len(region) - (2 << 20):
                    region[off] = 1
            if i >= files // 2 and i % 2 == 0:
                os.unlink(os.path.join(d, f"f{i - files // 2}"))
        region.close()


def _address(region: mmap.mmap) -> int:
    """The address a mapping starts at."""
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(region))


def write(path: Path, text: str) -> None:
    path.write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--thp-mib", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=60.0)
    a = ap.parse_args()
    mounted = False
    inst = None
    child = None
    try:
        if not (TRACEFS / "instances").is_dir():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
            mounted = True
        inst = TRACEFS / "instances" / f"vmsim-kmem-{os.getpid()}"
        inst.mkdir()
        write(inst / "buffer_size_kb", "16384")
        go_r, go_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(go_w)
            try:
                load(a.files, a.thp_mib, a.seconds, go_r)
            finally:
                os._exit(0)
        os.close(go_r)
        for ev in EVENTS:
            d = inst / "events" / "kmem" / ev
            write(d / "filter", f"common_pid == {child}")
            write(d / "enable", "1")
        pipe = open(inst / "trace_pipe", "rb", buffering=0)
        os.set_blocking(pipe.fileno(), False)
        with gzip.open(a.out, "wb", compresslevel=9) as out:
            os.write(go_w, b"g")
            os.close(go_w)
            done = False
            while True:
                try:
                    chunk = pipe.read(1 << 16)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    out.write(chunk)
                    continue
                if done:
                    break
                if os.waitpid(child, os.WNOHANG)[0] == child:
                    child = None
                    for ev in EVENTS:
                        write(inst / "events" / "kmem" / ev / "enable", "0")
                    time.sleep(0.2)
                    done = True
                else:
                    time.sleep(0.05)
        pipe.close()
        lost = (inst / "per_cpu" / "cpu0" / "stats").read_text()
        print(f"wrote {a.out}; cpu0 buffer stats: {' '.join(lost.split()[:6])}")
    finally:
        if child:
            os.kill(child, 9)
            os.waitpid(child, 0)
        if inst is not None and inst.exists():
            for ev in EVENTS:
                d = inst / "events" / "kmem" / ev
                if d.exists():
                    write(d / "enable", "0")
            inst.rmdir()
        if mounted:
            subprocess.run(["umount", str(TRACEFS)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
