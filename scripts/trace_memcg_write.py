"""Records the real kernel's reclaim, writeback and block trace of a write through a
cgroup-v1 memory group (docs/simplifications.md, "reclaim_throttle").

A child process joins a new memory group limited to LIMIT MiB and writes SIZE MiB to
a new file in 1 MiB write(2) calls, while a private tracefs instance records
vmscan's throttle, limit-reclaim and shrink_inactive events, writeback's work events
and block requests; the trace is written to OUT (gzip when it ends in .gz). The
group, the instance (and tracefs, if this script mounted it) and the file are removed
on any exit. Needs root.

    python scripts/trace_memcg_write.py OUT [--limit-mib 32] [--size-mib 64] [--dir /var/tmp]
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

from vmsim import calibrate

EVENTS = [
    "vmscan:mm_vmscan_throttled",
    "vmscan:mm_vmscan_memcg_reclaim_begin",
    "vmscan:mm_vmscan_memcg_reclaim_end",
    "vmscan:mm_vmscan_lru_shrink_inactive",
    "vmscan:mm_vmscan_lru_shrink_active",
    "block:block_rq_issue",
    "block:block_rq_complete",
    "writeback:writeback_start",
    "writeback:writeback_written",
    "writeback:writeback_queue",
]

# The writer: joins the group, then writes the file 1 MiB a call.
CHILD = r"""
import os, sys
with open(sys.argv[2], "w") as f:
    f.write(str(os.getpid()))
buf = b"\x5a" * (1 << 20)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
for _ in range(int(sys.argv[3])):
    os.write(fd, buf)
os.close(fd)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--limit-mib", type=int, default=32)
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp"))
    a = ap.parse_args()
    tag = calibrate._tag()
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="vmsim-trace-write-") as d:
        with (
            calibrate.trace_instance(tag, EVENTS) as inst,
            calibrate.memcg(tag + "-g", a.limit_mib << 20) as group,
        ):
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    str(Path(d) / "data"),
                    str(group / "cgroup.procs"),
                    str(a.size_mib),
                ],
                check=True,
            )
            (inst / "tracing_on").write_text("0\n")
            text = (inst / "trace").read_text(errors="replace")
    if a.out.suffix == ".gz":
        with gzip.open(a.out, "wt") as f:
            f.write(text)
    else:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
