"""Reproductions of the seed experiments: ``vmsim reproduce NAME``.

Each experiment is a module of this package with:

- ``TITLE`` — one line naming the seed posting;
- ``reproduce(runs, scale, *, output_dir=None, progress=None) -> dict`` — runs
  every kernel of the seed on the experiment's scenarios and returns one
  JSON-ready object (``{"experiment": NAME, "workloads": …, "seed": …,
  "agreement": …}``);
- ``render_text(result) -> str`` — the seed's tables with vmsim's figures and
  the seed's own, and the direction checks.

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

__all__ = ["EXPERIMENTS", "ReproduceError", "names", "render_text", "reproduce"]

# Experiment name → module (imported when used), one per seed posting.
EXPERIMENTS: dict[str, str] = {
    "throttle": "vmsim.reproduce.throttle",  # seed 000
    "writeback": "vmsim.reproduce.writeback",  # seed 001
    "softlimit": "vmsim.reproduce.softlimit",  # seed 002
    "fragmentation": "vmsim.reproduce.fragmentation",  # seed 003
    "boost": "vmsim.reproduce.boost",  # seed 004
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
    runs: int = 3,
    scale: float = 1.0,
    *,
    output_dir: Path | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Runs experiment ``name`` (or ``all``) and returns its JSON-ready result.

    ``progress``: True/False forces the progress bar on stderr on or off; None
    shows it only when stderr is a terminal.
    """
    check_args(runs, scale)
    check_output_dir(output_dir)
    if name == "all":
        out: dict[str, Any] = {"experiment": "all", "experiments": {}}
        for n in names():
            sub = output_dir / n if output_dir is not None else None
            out["experiments"][n] = _module(n).reproduce(
                runs, scale, output_dir=sub, progress=progress
            )
        return out
    return _module(name).reproduce(runs, scale, output_dir=output_dir, progress=progress)


def render_text(result: dict[str, Any]) -> str:
    """The text report of a result returned by ``reproduce``."""
    if result.get("experiment") == "all":
        return "\n".join(
            _module(n).render_text(r) for n, r in sorted(result["experiments"].items())
        )
    return _module(result["experiment"]).render_text(result)
