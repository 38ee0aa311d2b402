"""`vmsim sweep-plot`: one figure of a sweep against one knob, mean and spread over seeds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vmsim.sweep import table as tbl
from vmsim.sweep.grid import SweepError

STATS = ("mean", "std", "min", "max", "runs")


def summarise(
    df: pl.DataFrame, x: str, y: str, hue: str | None, filters: Sequence[tuple[str, str]]
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Mean, sample standard deviation, min, max and number of runs of ``y`` per x (and hue).

    Returns the table (in the order the x values first appear, numbers sorted)
    and the resolved column names. A knob that varies besides x and hue is an
    error: averaging over it would mix different machines or kernels.
    """
    df = tbl.ok_rows(tbl.where(df, filters, "--where"))
    if df.height == 0:
        raise SweepError("no run of the sweep succeeded: nothing to plot")
    cols = {"x": tbl.column(df, x, "--x"), "y": tbl.column(df, y, "--y")}
    if hue is not None:
        cols["hue"] = tbl.column(df, hue, "--hue")
    if not df[cols["y"]].dtype.is_numeric():
        raise SweepError(f"--y {cols['y']}: not a number ({df[cols['y']].dtype})")
    keys = [cols["x"]] + ([cols["hue"]] if hue is not None else [])
    others = tbl.varying_knobs(df, keep=keys)
    if others:
        raise SweepError(
            f"the sweep also varies {', '.join(others)}: pick one value with "
            f"--where {others[0]}=VALUE or use it as --hue"
        )
    yc = pl.col(cols["y"]).cast(pl.Float64)
    out = df.group_by(keys, maintain_order=True).agg(
        yc.mean().alias("mean"),
        yc.std().alias("std"),
        yc.min().alias("min"),
        yc.max().alias("max"),
        pl.len().alias("runs"),
    )
    if df[cols["x"]].dtype.is_numeric():
        out = out.sort(keys, maintain_order=True)
    return out, cols


def render_text(summary: pl.DataFrame, cols: dict[str, str]) -> str:
    """The summary as a fixed-width text table, the metric named above it."""
    keys = [c for c in summary.columns if c not in STATS]
    widths = [max(len(k), *(len(tbl.text(v)) for v in summary[k])) for k in keys]
    head = "  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True))
    lines = [cols["y"], head + "".join(f"{s:>14s}" for s in STATS)]
    for row in summary.iter_rows(named=True):
        cells = "  ".join(tbl.text(row[k]).ljust(w) for k, w in zip(keys, widths, strict=True))
        stats = "".join(_num(row[s]) for s in STATS[:-1]) + f"{row['runs']:>14d}"
        lines.append(cells + stats)
    return "\n".join(lines) + "\n"


def _num(v: float | None) -> str:
    return f"{'-':>14s}" if v is None else f"{v:14.3f}"


def figure(summary: pl.DataFrame, cols: dict[str, str], title: str) -> Any:
    """Mean against x as lines (one per hue value), ±1 standard deviation as error bars,
    min to max shaded."""
    from vmsim.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    numeric = summary[cols["x"]].dtype.is_numeric()
    labels = list(dict.fromkeys(summary[cols["x"]].to_list()))
    hues = summary.partition_by(cols["hue"], maintain_order=True) if "hue" in cols else [summary]
    for part in hues:
        xs = part[cols["x"]].to_list()
        pos = xs if numeric else [labels.index(v) for v in xs]
        mean, std = part["mean"].to_numpy(), part["std"].fill_null(0).to_numpy()
        label = f"{cols['hue']} = {tbl.text(part[cols['hue']][0])}" if "hue" in cols else None
        line = ax.errorbar(pos, mean, yerr=std, marker="o", capsize=3, label=label)
        colour = line[0].get_color()
        ax.fill_between(
            pos,
            part["min"].to_numpy(),
            part["max"].to_numpy(),
            alpha=0.15,
            color=colour,
            linewidth=0,
        )
    if not numeric:
        ax.set_xticks(range(len(labels)), [tbl.text(v) for v in labels])
    ax.set_xlabel(cols["x"])
    ax.set_ylabel(cols["y"])
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if "hue" in cols:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def sweep_plot(
    path: str | Path,
    x: str,
    y: str,
    hue: str | None = None,
    filters: Sequence[tuple[str, str]] = (),
    output: str | Path | None = None,
) -> str:
    """Summarises ``y`` against ``x`` from a sweep's file, draws it into ``output`` (PNG)
    when given, and returns the text table."""
    summary, cols = summarise(tbl.read(path), x, y, hue, filters)
    if output is not None:
        from vmsim.plots import save_atomic

        runs = summary["runs"]
        lo, hi = int(runs.min()), int(runs.max())  # type: ignore[arg-type]
        spread = f"{lo}" if lo == hi else f"{lo}-{hi}"
        title = f"{Path(path).name}: mean ± std over {spread} runs per point, min-max shaded"
        save_atomic(figure(summary, cols, title), output)
    return render_text(summary, cols)
