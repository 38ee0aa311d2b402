"""The guest driver: inside the virtual machine, records an experiment as on a host.

``/init`` runs ``python -m vmsim.fidelity.guest /run/vmsim/job.json`` in a
chroot of the host's root. The job (written by :mod:`vmsim.fidelity.vm`) names
the experiment, the runs and whether MGLRU is on; the driver sets
``/sys/kernel/mm/lru_gen/enabled`` accordingly, runs the same recorder as on a
host (:func:`vmsim.fidelity.record.record`) on the guest's own /proc, with
its files on the experiment's disk (``/run/vmsim-disk``), and writes the recording
and a status file into the share:

```
job.json     {"experiment": NAME, "experiments": DIR, "runs": N, "trace": BOOL,
              "mglru": BOOL, "disk_probe": BOOL (optional, default true),
              "thp": "always" | "madvise" | "never" (optional: the kernel's default)}
             or {"calibrate": {"quick": BOOL, "base": PROFILE NAME}}
status.json  {"ok": true, "recording": PATH} | {"ok": false, "error": ONE LINE}
out/         the recording (<machine>/NAME.json), or the calibration: costs.toml (the
             cost profile) and calibration.json (every figure, as `vmsim calibrate --json`)
```

A calibration job runs ``vmsim calibrate`` (:func:`vmsim.calibrate.measure`) on the
guest's kernel, its file microbenchmarks on the experiment's disk: the costs of the
guest's (emulated) machine, which vmsim runs a guest's recordings with.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from vmsim.fidelity.experiment import FidelityError, load_experiments
from vmsim.fidelity.initramfs import DISK_DIR
from vmsim.fidelity.record import record, write_json

LRU_GEN = Path("/sys/kernel/mm/lru_gen/enabled")
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_CHOICES = ("always", "madvise", "never")
WORK = Path(DISK_DIR)
JOB_KEYS = {"experiment": str, "experiments": str, "runs": int, "trace": bool, "mglru": bool}
CALIBRATE_KEYS = {"quick": bool, "base": str}


def load_job(path: Path) -> dict[str, Any]:
    """Reads and checks a job file; raises FidelityError (one line)."""
    try:
        job = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise FidelityError(f"{path}: not a job ({e})") from None
    if not isinstance(job, dict):
        raise FidelityError(f"{path}: not a job (not an object)")
    if "calibrate" in job:
        cal = job["calibrate"]
        if not isinstance(cal, dict):
            raise FidelityError(f"{path}: 'calibrate' is not an object")
        for k, t in CALIBRATE_KEYS.items():
            if not isinstance(cal.get(k), t):
                raise FidelityError(f"{path}: 'calibrate.{k}' is missing or not a {t.__name__}")
        return job
    for k, t in JOB_KEYS.items():
        if not isinstance(job.get(k), t) or (t is int and isinstance(job[k], bool)):
            raise FidelityError(f"{path}: '{k}' is missing or not a {t.__name__}")
    if job.get("thp") not in (None, *THP_CHOICES):
        raise FidelityError(f"{path}: 'thp' must be one of {', '.join(THP_CHOICES)}")
    return job


def set_lru_gen(on: bool, path: Path = LRU_GEN) -> str:
    """Switches MGLRU on (all its features) or off and returns the state the kernel reports."""
    if not path.exists():
        if on:
            raise FidelityError("this kernel has no MGLRU (/sys/kernel/mm/lru_gen/enabled)")
        return "absent"
    path.write_text("y\n" if on else "n\n")
    state = path.read_text(encoding="utf-8").strip()
    if (state != "0x0000") != on:
        want = "on" if on else "off"
        raise FidelityError(f"lru_gen/enabled is {state} after switching MGLRU {want}")
    return state


def set_thp(mode: str, path: Path = THP_ENABLED) -> None:
    """Sets transparent_hugepage/enabled (the guest is rebooted for every recording)."""
    path.write_text(f"{mode}\n")
    got = re.search(r"\[(\w+)\]", path.read_text(encoding="utf-8"))
    if not got or got.group(1) != mode:
        raise FidelityError(f"transparent_hugepage/enabled did not become {mode}")


def run_job(
    job: dict[str, Any],
    share: Path,
    *,
    lru_gen: Path = LRU_GEN,
    thp: Path = THP_ENABLED,
    work: Path = WORK,
) -> Path:
    """Does a job: MGLRU and THP as asked, then the recording into ``share/out``."""
    exps = load_experiments(Path(job["experiments"]))
    if job["experiment"] not in exps:
        raise FidelityError(f"unknown experiment '{job['experiment']}'")
    set_lru_gen(job["mglru"], lru_gen)
    if job.get("thp"):
        set_thp(job["thp"], thp)
    return record(
        exps[job["experiment"]],
        job["runs"],
        share / "out",
        work,
        trace=job["trace"],
        log=lambda m: print(m, flush=True),
        disk_probe=job.get("disk_probe", True),
    )


def run_calibration(job: dict[str, Any], share: Path, *, work: Path = WORK) -> Path:
    """Does a calibration job: ``vmsim calibrate`` on this kernel, the profile and every
    figure into ``share/out``; returns the profile's path."""
    from vmsim import api, calibrate

    opts = job["calibrate"]
    base = api.cost_profile(opts["base"])
    cal = calibrate.measure(
        opts["quick"],
        work,
        base["cost"],
        lambda m: print(f"measuring {m}", flush=True),
        base["name"],
    )
    prof = calibrate.profile(cal, base, f"calibrated-{cal.machine['kernel']}", None)
    out = share / "out"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "calibration.json", calibrate.as_json(cal, prof))
    path = out / "costs.toml"
    path.write_text(calibrate.profile_toml(prof), encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    """Entry point in the guest: always leaves a status file beside the job."""
    job_path = Path(argv[0])
    share = job_path.parent
    try:
        job = load_job(job_path)
        path = run_calibration(job, share) if "calibrate" in job else run_job(job, share)
        status: dict[str, Any] = {"ok": True, "recording": str(path.relative_to(share))}
    except FidelityError as e:
        status = {"ok": False, "error": str(e)}
    except BaseException as e:  # noqa: BLE001 - any failure is reported to the host as one line
        traceback.print_exc()
        status = {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0]}
    write_json(share / "status.json", status)
    return 0 if status["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
