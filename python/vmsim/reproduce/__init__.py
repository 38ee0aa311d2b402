"""Reproductions of the seed experiments: ``vmsim reproduce NAME``.

Every experiment runs on one skeleton (:mod:`vmsim.reproduce.experiment`): a
module of this package declares its kernels, its scenario template, the seed's
tables and the seed's claims, and has

- ``TITLE`` — one line naming the seed posting;
- ``EXPERIMENT`` — the :class:`~vmsim.reproduce.experiment.Experiment` (data);
- ``reproduce(runs, scale, *, output_dir=None, progress=None)`` — runs it and
  returns a :class:`~vmsim.reproduce.experiment.ReproduceResult` (the
  ``--json`` object, with one verdict per seed claim under ``claims``);
- ``render_text(result) -> str`` — the seed's tables with vmsim's figures and
  the seed's own, then the verdicts.

One verdict function judges every claim (:mod:`vmsim.reproduce.verdict`).
Register a new experiment with one line in ``EXPERIMENTS``; an experiment
whose module is not there (yet) is not offered.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from vmsim.reproduce.common import ReproduceError, check_args, check_output_dir
from vmsim.reproduce.experiment import DEFAULT_RUNS

__all__ = [
    "DEFAULT_RUNS",
    "EXPERIMENTS",
    "ReproduceError",
    "names",
    "render_text",
    "reproduce",
]

# Experiment name → module (imported when used), one per seed posting.
EXPERIMENTS: dict[str, str] = {
    "throttle": "vmsim.reproduce.throttle",  # seed 000
    "writeback": "vmsim.reproduce.writeback",  # seed 001
    "softlimit": "vmsim.reproduce.softlimit",  # seed 002
    "fragmentation": "vmsim.reproduce.fragmentation",  # seed 003
    "boost": "vmsim.reproduce.boost",  # seed 004
}

# Experiments with an ablation (``--ablation``): a function of (runs, scale, progress=)
# and its renderer, in the experiment's module.
ABLATIONS: dict[str, tuple[str, str]] = {
    "fragmentation": ("ablation", "render_ablation"),
}


def names() -> list[str]:
    """The experiments that can be reproduced (their module exists), sorted."""
    return sorted(n for n, mod in EXPERIMENTS.items() if importlib.util.find_spec(mod))


def _module(name: str) -> ModuleType:
    if name not in names():
        raise ReproduceError(
            f"unknown experiment '{name}': choose one of {', '.join(names())} or all"
        )
    return importlib.import_module(EXPERIMENTS[name])


def reproduce(
    name: str,
    runs: int = DEFAULT_RUNS,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
    ablation: bool = False,
) -> dict[str, Any]:
    """Runs experiment ``name`` (or ``all``) and returns its JSON-ready result; with
    ``ablation`` its ablation instead (fragmentation only).

    ``progress``: True/False forces the progress bar on stderr on or off; None
    shows it only when stderr is a terminal.
    """
    check_args(runs, scale)
    check_output_dir(output_dir)
    if ablation:
        if name not in ABLATIONS:
            raise ReproduceError(
                f"--ablation: only {', '.join(sorted(ABLATIONS))} has one, not '{name}'"
            )
        run_ablation = getattr(_module(name), ABLATIONS[name][0])
        return dict(run_ablation(runs, scale, progress=progress))
    if name == "all":
        out: dict[str, Any] = {"experiment": "all", "experiments": {}}
        for n in names():
            sub = output_dir / n if output_dir is not None else None
            out["experiments"][n] = _module(n).reproduce(
                runs, scale, output_dir=sub, progress=progress
            )
        return out
    return dict(_module(name).reproduce(runs, scale, output_dir=output_dir, progress=progress))


def render_text(result: dict[str, Any]) -> str:
    """The text report of a result returned by ``reproduce``."""
    if result.get("experiment") == "all":
        return "\n".join(
            _module(n).render_text(r) for n, r in sorted(result["experiments"].items())
        )
    if result.get("ablation"):
        name = result["experiment"]
        render: Any = getattr(_module(name), ABLATIONS[name][1])
        return str(render(result))
    return str(_module(result["experiment"]).render_text(result))
