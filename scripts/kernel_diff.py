"""The recorded metrics that differ between two real kernels by more than the run-to-run spread.

    python scripts/kernel_diff.py [MACHINE_A MACHINE_B]

Reads the shipped recordings (python/vmsim/fidelity/recordings): for every
experiment recorded on both machines, every metric's real mean and range on
each, and whether they differ: the ranges do not overlap and the means are
more than 25 % apart (the table's tolerance). Time metrics of an emulated
run are listed but never called different (the guest's CPU is slower).
docs/kernel-6.1.md quotes its output.
"""

from __future__ import annotations

import statistics
import sys

from vmsim.fidelity import compare as fc
from vmsim.fidelity import load_experiments, load_recording, recordings_dir

DEFAULT = ("6.18.44-24GiB-2cpu", "6.1.192-2GiB-2cpu-tcg")


def spread(vals: list[float]) -> tuple[float, float, float]:
    """(mean, min, max) of a metric's runs."""
    return statistics.fmean(vals), min(vals), max(vals)


def differs(a: list[float], b: list[float]) -> bool:
    """Ranges disjoint and means more than 25 % apart (of the larger): fc.real_differs."""
    ja, jb = (dict(zip(("real", "real_min", "real_max"), spread(v), strict=True)) for v in (a, b))
    return fc.real_differs(ja, jb)


def main(argv: list[str]) -> int:
    """Prints one line per metric of every experiment recorded on both machines."""
    ka, kb = argv if len(argv) == 2 else DEFAULT
    root = recordings_dir()
    exps = load_experiments()
    found = fc.find_recordings(root)
    for name, exp in exps.items():
        if name not in found.get(ka, {}) or name not in found.get(kb, {}):
            continue
        ra, rb = load_recording(found[ka][name]), load_recording(found[kb][name])
        emulated = fc.emulated(ra["machine"]) or fc.emulated(rb["machine"])
        print(f"{name}")
        for m in exp.metrics:
            va = [fc.real_value(m, r, exp.phase_names()) for r in ra["runs"]]
            vb = [fc.real_value(m, r, exp.phase_names()) for r in rb["runs"]]
            if None in va or None in vb:
                continue
            a, b = spread(va), spread(vb)
            mark = "differs" if differs(va, vb) else ""
            if m.source == "time" and emulated:
                mark = "(time, emulated)"
            print(
                f"  {m.spec:<42} {a[0]:>12,.6g} [{a[1]:,.6g}–{a[2]:,.6g}]"
                f"  {b[0]:>12,.6g} [{b[1]:,.6g}–{b[2]:,.6g}]  {mark}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
