"""What every seed reproduction shares besides the skeleton (:mod:`.experiment`):
argument checks, scenario templates, scaled sizes, progress and table cells.

A reproduction builds its scenarios from TOML templates kept beside this file
in ``scenarios/``. Everything here is deterministic: the same arguments give
the same bytes. Sizes and times are read by :mod:`vmsim.units` (the engine's
own parser).
"""

from __future__ import annotations

import math
import sys
import tomllib
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from vmsim import atomic
from vmsim.units import PAGE_SIZE, parse_size

__all__ = [
    "MAX_RUNS",
    "Progress",
    "ReproduceError",
    "check_args",
    "check_output_dir",
    "finite_or_none",
    "fmt_value",
    "load_template",
    "scaled_bytes",
    "side_by_side",
    "template_text",
]

MAX_RUNS = 100
#: The smallest --scale: one thousandth of the seed's sizes (below it, memory and
#: workloads hit their minimum sizes and the experiment is another one).
MIN_SCALE = 0.001


class ReproduceError(ValueError):
    """A problem with the arguments of a reproduction; the message is one line."""


def check_args(runs: int, scale: float) -> None:
    """Raises ReproduceError unless 1 <= runs <= MAX_RUNS and MIN_SCALE <= scale <= 1."""
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise ReproduceError(f"--runs {runs}: must be an integer from 1 to {MAX_RUNS}")
    if not isinstance(scale, int | float) or not math.isfinite(scale) or not 0 < scale <= 1:
        raise ReproduceError(
            f"--scale {scale}: must be a number with 0 < F <= 1 (1 is the seed's size)"
        )
    if scale < MIN_SCALE:
        raise ReproduceError(
            f"--scale {scale}: below {MIN_SCALE} the experiment's sizes reach their minimums "
            f"and it is no longer the seed's; give {MIN_SCALE} <= F <= 1"
        )


def check_output_dir(out: Path | None) -> None:
    """Raises ReproduceError if ``out`` cannot be used as the output directory."""
    problem = None if out is None else atomic.output_dir_problem("--output-dir", out)
    if problem:
        raise ReproduceError(problem)


def scaled_bytes(size: str | float, scale: float, *, minimum: int = PAGE_SIZE) -> int:
    """``size`` times ``scale``, rounded down to whole pages, at least ``minimum``."""
    b = int(parse_size(size) * scale) // PAGE_SIZE * PAGE_SIZE
    return max(b, minimum)


# ---------------------------------------------------------------------------
# Scenario templates
# ---------------------------------------------------------------------------


def template_text(name: str) -> str:
    """The text of the scenario template ``scenarios/NAME.toml`` of this package."""
    path = resources.files("vmsim.reproduce").joinpath("scenarios", f"{name}.toml")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReproduceError(f"scenario template {name}.toml is missing") from None


def load_template(name: str) -> dict[str, Any]:
    """The scenario template ``scenarios/NAME.toml`` of this package, parsed."""
    return tomllib.loads(template_text(name))


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


class Progress:
    """A rich progress bar on stderr counting runs, shown only when stderr is a
    terminal (``enabled=None``); silent otherwise. Use as a context manager."""

    def __init__(self, total: int, label: str, enabled: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich import progress as rp
            from rich.console import Console

            self._bar = rp.Progress(
                rp.TextColumn("{task.description}"),
                rp.BarColumn(),
                rp.MofNCompleteColumn(),
                rp.TimeElapsedColumn(),
                transient=True,
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def describe(self, text: str) -> None:
        """Names the run now under way."""
        if self._bar is not None:
            self._bar.update(self._task, description=f"{self.label}: {text}")

    def advance(self) -> None:
        """One run done."""
        if self._bar is not None:
            self._bar.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def fmt_value(v: float | int | None, kind: str) -> str:
    """A table cell: ``int`` rounds to a whole number, ``sec`` two decimals,
    ``pct`` two decimals and %, None (no figure) a dash."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if kind == "int":
        return f"{round(v):d}"
    if kind == "sec":
        return f"{v:.2f}"
    return f"{v:.2f}%"


def side_by_side(
    rows: Iterable[tuple[str, Sequence[str], Sequence[str]]],
    left_title: str,
    right_title: str,
    columns: Sequence[str],
    label_width: int = 40,
    width: int = 16,
) -> list[str]:
    """Lines of a table: a label, then two groups of columns (vmsim's, the seed's)."""
    n = len(columns)
    group = width * n

    def grp(cells: Sequence[str]) -> str:
        return "".join(f"{c:>{width}s}" for c in cells)

    out = [
        f"{'':<{label_width}s}{left_title:>{group}s}   | {right_title:>{group - 2}s}",
        f"{'':<{label_width}s}{grp(columns)}   |{grp(columns)}",
    ]
    for label, left, right in rows:
        out.append(f"{label:<{label_width}s}{grp(left)}   |{grp(right)}")
    return out


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float, or None when it is missing or not finite."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
