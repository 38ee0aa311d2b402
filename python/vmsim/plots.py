"""Pictures of a run (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vmsim import atomic

MIGRATETYPES = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"]
COLOURS = ["#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#7f7f7f"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_atomic(fig: Any, path: str | Path) -> None:
    """Writes a figure whole or not at all (:func:`vmsim.atomic.save_figure`)."""
    atomic.save_figure(fig, path, dpi=110)


def timeseries_figure(results: list[dict[str, Any]]):
    """Free pages, the watermarks and their boost on their own scale (free memory is often
    far above them), and pageblocks by migratetype; several runs side by side."""
    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(
        3,
        n,
        figsize=(6.5 * n, 9),
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": [3, 2, 3]},
    )
    for col, r in enumerate(results):
        ts = r["timeseries"]
        t = ts["time_seconds"]
        ax = axes[0][col]
        ax.plot(t, ts["vmstat"]["nr_free_pages"], label="nr_free_pages", color="black")
        ax.set_ylabel("free pages")
        ax.set_title(f"{r['scenario']} — kernel {r['kernel']}")
        ax.legend(fontsize=8, loc="upper right")
        ax = axes[1][col]
        wm = ts["watermarks"]
        for i, (name, colour) in enumerate(
            [("min", "#d62728"), ("low", "#ff7f0e"), ("high", "#2ca02c")]
        ):
            ax.plot(t, [w[i] for w in wm], label=f"{name} watermark (boost included)", color=colour)
        boost = ts.get("watermark_boost")
        if boost is not None:
            ax.fill_between(t, 0, boost, color="#17becf", alpha=0.4, label="watermark_boost")
        ax.set_ylabel("watermarks [pages]")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc="upper right")
        ax = axes[2][col]
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


def _per_interval(values: list[int]) -> list[int]:
    """Differences of a cumulative counter between samples (0 for the first)."""
    return [0] + [b - a for a, b in zip(values, values[1:], strict=False)]


def boost_figure(results: list[dict[str, Any]]):
    """Free pages against the three watermarks and their boost (top), and what kswapd and
    kcompactd did in each sampling interval (bottom); several runs side by side."""
    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(2, n, figsize=(6.5 * n, 7), squeeze=False, sharex="col")
    for col, r in enumerate(results):
        ts = r["timeseries"]
        t = ts["time_seconds"]
        v = ts["vmstat"]
        ax = axes[0][col]
        ax.plot(t, v["nr_free_pages"], label="nr_free_pages", color="black", linewidth=0.8)
        wm = ts["watermarks"]
        boost = ts["watermark_boost"]
        for i, (name, colour) in enumerate(
            [("min", "#d62728"), ("low", "#ff7f0e"), ("high", "#2ca02c")]
        ):
            ax.plot(t, [w[i] for w in wm], label=f"{name} (with boost)", color=colour)
        high = [w[2] for w in wm]
        ax.fill_between(
            t,
            [h - b for h, b in zip(high, boost, strict=False)],
            high,
            color="#2ca02c",
            alpha=0.25,
            label="watermark_boost",
        )
        ax.set_ylabel("pages")
        ax.set_title(f"{r['scenario']} — kernel {r['kernel']}")
        ax.legend(fontsize=8, loc="upper right")
        ax = axes[1][col]
        ax.plot(
            t, _per_interval(v["pgsteal_kswapd"]), label="kswapd: pages reclaimed", color="#1f77b4"
        )
        ax.plot(
            t,
            _per_interval(v["compact_daemon_migrate_scanned"]),
            label="kcompactd: pages scanned",
            color="#9467bd",
        )
        ax.set_ylabel("pages per interval")
        ax.set_xlabel("simulated time [s]")
        ax.legend(fontsize=8, loc="upper right")
    # Free memory starts far above the marks: show the band where the marks and the boost are.
    top = max(max(w[2] for w in r["timeseries"]["watermarks"]) for r in results) * 4
    for a in axes[0]:
        a.set_ylim(0, max(top, 1))
    bottom = max(max(a.get_ylim()[1] for a in axes[1]), 1)
    for a in axes[1]:
        a.set_ylim(0, bottom)
    fig.tight_layout()
    return fig
