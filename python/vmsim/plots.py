"""Pictures of a run (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MIGRATETYPES = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"]
COLOURS = ["#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#7f7f7f"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_atomic(fig: Any, path: str | Path) -> None:
    """Writes a figure whole or not at all (temporary file, then rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=110)
    tmp.replace(path)


def timeseries_figure(results: list[dict[str, Any]]):
    """Free pages with watermarks, and pageblocks by migratetype; several runs side by side."""
    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(2, n, figsize=(6.5 * n, 7), squeeze=False, sharex="col")
    for col, r in enumerate(results):
        ts = r["timeseries"]
        t = ts["time_seconds"]
        ax = axes[0][col]
        ax.plot(t, ts["vmstat"]["nr_free_pages"], label="nr_free_pages", color="black")
        wm = ts["watermarks"]
        for i, name in enumerate(["min", "low", "high"]):
            ax.plot(t, [w[i] for w in wm], label=f"{name} watermark", linestyle="--")
        ax.set_ylabel("pages")
        ax.set_title(f"{r['scenario']} — kernel {r['kernel']}")
        ax.legend(fontsize=8, loc="upper right")
        ax = axes[1][col]
        pb = ts["pageblocks"]
        ax.stackplot(
            t,
            *[[row[i] for row in pb] for i in range(len(MIGRATETYPES))],
            labels=MIGRATETYPES,
            colors=COLOURS,
        )
        ax.set_ylabel("pageblocks")
        ax.set_xlabel("simulated time [s]")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
