"""Fidelity against the real kernel: experiments recorded on a real machine, vmsim beside them.

- :mod:`vmsim.fidelity.experiment` — experiment definitions (TOML, one per shape of work);
- :mod:`vmsim.fidelity.host` — the running kernel: /proc, cgroups, sysctls, worker processes;
- :mod:`vmsim.fidelity.record` — ``vmsim fidelity --record``: a recording of N runs;
- :mod:`vmsim.fidelity.compare` — ``vmsim fidelity``: the table of real against vmsim.
"""

from vmsim.fidelity.compare import fidelity, recordings_dir, render_text, vmsim_scenario
from vmsim.fidelity.experiment import FidelityError, experiments_dir, load_experiments
from vmsim.fidelity.record import load_recording, record

__all__ = [
    "FidelityError",
    "experiments_dir",
    "fidelity",
    "load_experiments",
    "load_recording",
    "record",
    "recordings_dir",
    "render_text",
    "vmsim_scenario",
]
