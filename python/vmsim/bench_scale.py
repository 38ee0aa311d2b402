"""`vmsim bench`'s speed at every size: each case in a child process of its own, so that
its peak resident set size is its own.

    python -m vmsim.bench_scale NAME   # one case; prints one JSON object

The child prints the Rust side's figures (boot_seconds, wall_seconds, simulated_seconds,
sim_seconds_per_wall_second, memory_bytes) plus peak_rss_bytes (the child's VmHWM), or
{"skipped": REASON} when the case cannot run on this host (a machine above the largest
vmsim simulates, or one the capacity check says will not fit).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from typing import Any


def run_case(name: str) -> dict[str, Any]:
    """One case in this process: its figures and this process's peak RSS, or the skip note."""
    from vmsim import _vmsim

    try:
        data: dict[str, Any] = json.loads(_vmsim.bench_scale(name))
    except _vmsim.ScenarioError as e:
        return {"skipped": str(e)}
    data["peak_rss_bytes"] = peak_rss_bytes()
    return data


def peak_rss_bytes() -> int:
    """This process's peak resident set: VmHWM of /proc/self/status, the high-water mark of
    its own address space (ru_maxrss also counts what the parent held when it forked,
    carried across exec); ru_maxrss where there is no /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_all(timeout: float = 600.0) -> dict[str, dict[str, Any]]:
    """Every case (`_vmsim.bench_scale_cases()`), each in a child process, in order."""
    from vmsim import _vmsim

    out: dict[str, dict[str, Any]] = {}
    for name in _vmsim.bench_scale_cases():
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "vmsim.bench_scale", name],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            out[name] = {"skipped": f"did not finish within {timeout:.0f} s"}
            continue
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            out[name] = {"skipped": f"the run failed (exit {proc.returncode}): {last}"}
            continue
        out[name] = json.loads(proc.stdout)
    return out


def main(argv: list[str]) -> int:
    """Entry point of the child: one case by name."""
    if len(argv) != 1:
        print("usage: python -m vmsim.bench_scale NAME", file=sys.stderr)
        return 2
    print(json.dumps(run_case(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
