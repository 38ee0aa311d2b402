"""What every seed reproduction shares: argument checks, scenario templates,
traced runs, means over runs, progress, tables and the output directory.

A reproduction (one module per seed experiment, e.g. ``writeback``) builds
its scenarios from TOML templates kept beside this file in ``scenarios/``,
runs every kernel of the seed on them a few times, and prints the seed's table
with vmsim's figures and the seed's own. Everything here is deterministic: the
same arguments give the same bytes.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from vmsim import api
from vmsim.reclaim_report import report_dict

__all__ = [
    "ReproduceError",
    "Progress",
    "check_args",
    "fmt_bytes",
    "human_bytes",
    "load_template",
    "mean_metrics",
    "parse_size",
    "run_traced",
    "scaled_bytes",
    "write_output_dir",
]

PAGE_SIZE = 4096
MAX_RUNS = 100


class ReproduceError(ValueError):
    """A problem with the arguments of a reproduction; the message is one line."""


def check_args(runs: int, scale: float) -> None:
    """Raises ReproduceError unless 1 <= runs <= MAX_RUNS and 0 < scale <= 1."""
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise ReproduceError(f"--runs {runs}: must be an integer from 1 to {MAX_RUNS}")
    if not isinstance(scale, int | float) or not math.isfinite(scale) or not 0 < scale <= 1:
        raise ReproduceError(
            f"--scale {scale}: must be a number with 0 < F <= 1 (1 is the seed's size)"
        )


# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------

_UNITS = {
    "": 1,
    "B": 1,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
    "TiB": 1 << 40,
}


def parse_size(text: str | float) -> int:
    """Bytes of a size written as in scenarios: ``"3GiB"``, ``"1.5MiB"``, ``"4096"``."""
    if isinstance(text, int | float):
        return int(text)
    s = str(text).strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if unit and s.endswith(unit):
            return int(float(s[: -len(unit)]) * _UNITS[unit])
    return int(float(s))


def scaled_bytes(size: str | float, scale: float, *, minimum: int = PAGE_SIZE) -> int:
    """``size`` times ``scale``, rounded down to whole pages, at least ``minimum``."""
    b = int(parse_size(size) * scale) // PAGE_SIZE * PAGE_SIZE
    return max(b, minimum)


def fmt_bytes(b: int) -> str:
    """A size as scenario text, exact: ``"3GiB"``, ``"300KiB"``, or plain bytes."""
    for unit in ("GiB", "MiB", "KiB"):
        if b and b % _UNITS[unit] == 0:
            return f"{b // _UNITS[unit]}{unit}"
    return str(b)


def human_bytes(b: int) -> str:
    """A size for people: ``"3 GiB"``, ``"307.2 MiB"``."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if b >= _UNITS[unit]:
            return f"{b / _UNITS[unit]:.4g} {unit}"
    return f"{b} B"


def fmt_ms(seconds: float) -> str:
    """A duration as scenario text in whole milliseconds (at least 1 ms)."""
    return f"{max(1, round(seconds * 1000))}ms"


# ---------------------------------------------------------------------------
# Scenario templates
# ---------------------------------------------------------------------------


def load_template(name: str) -> dict[str, Any]:
    """The scenario template ``scenarios/NAME.toml`` of this package, parsed."""
    path = resources.files("vmsim.reproduce").joinpath("scenarios", f"{name}.toml")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReproduceError(f"scenario template {name}.toml is missing") from None
    return tomllib.loads(text)


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


def run_traced(
    scenario: Mapping[str, Any], seed: int, keep_dir: Path | None = None
) -> tuple[api.Result, dict[str, Any]]:
    """Runs ``scenario`` with a legacy (2.6.35-format) trace and returns the result
    and the reclaim report of that trace (``reclaim_report.report_dict`` with the
    run's user, sys and elapsed seconds).

    With ``keep_dir`` the scenario (TOML), the trace, the result and the report are
    written there; otherwise the trace lives in a temporary directory only.
    """
    with tempfile.TemporaryDirectory(prefix="vmsim-reproduce-") as tmp:
        trace = Path(tmp) / "trace.txt"
        result = api.run(dict(scenario), seed=seed, trace=trace, trace_format="legacy")
        s = result.summary
        report = report_dict(
            trace,
            user_seconds=s["user_seconds"],
            sys_seconds=s["sys_seconds"],
            elapsed_seconds=s["elapsed_seconds"],
        )
        if keep_dir is not None:
            keep_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, keep_dir / "trace.txt")
            (keep_dir / "scenario.toml").write_text(
                api.load_scenario(dict(scenario)), encoding="utf-8"
            )
            (keep_dir / "result.json").write_text(result.json_text, encoding="utf-8")
            (keep_dir / "report.json").write_text(
                json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
    return result, report


def mean_metrics(samples: Sequence[Mapping[str, float | int]]) -> dict[str, float]:
    """The arithmetic mean of every metric over runs (keys of the first sample)."""
    if not samples:
        return {}
    return {k: sum(float(s[k]) for s in samples) / len(samples) for k in samples[0]}


def write_output_dir(out: Path, files: Mapping[str, str]) -> None:
    """Writes ``files`` (name → text) into ``out``, creating it; the runs' own
    subdirectories were written while they ran."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out / name)


def save_result(out: Path | None, result: Mapping[str, Any], report: str) -> None:
    """With an output directory, writes ``result.json`` and ``report.txt`` into it (whole or
    not at all, as :func:`write_output_dir`)."""
    if out is not None:
        write_output_dir(
            out, {"result.json": json.dumps(result, indent=1) + "\n", "report.txt": report}
        )


def check_output_dir(out: Path | None) -> None:
    """Raises ReproduceError if ``out`` cannot be used as the output directory."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise ReproduceError(f"--output-dir {out}: exists and is not a directory")
    if not out.resolve().parent.is_dir():
        raise ReproduceError(f"--output-dir {out}: directory {out.parent} does not exist")


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


ProgressFactory = Callable[[int, str], Progress]
