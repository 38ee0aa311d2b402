"""`vmsim perfetto-plot FILE.json`: a picture of a `vmsim run --perfetto` timeline, drawn
with matplotlib from the file itself: the memory counters on top, then one lane per task
and kernel thread coloured by its state over time (what Perfetto's UI shows of the same
file, for where the UI cannot be opened, and for the docs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vmsim import atomic, perfetto
from vmsim.atomic import shown

__all__ = ["PerfettoPlotError", "STATE_COLOURS", "read", "lanes", "counters", "figure", "plot"]

#: A colour per state, in the legend's order.
STATE_COLOURS = {
    "running": "#2ca02c",
    "direct reclaim": "#9467bd",
    "memcg reclaim": "#8c564b",
    "memcg soft-limit reclaim": "#e377c2",
    "node reclaim": "#bcbd22",
    "compaction": "#1f77b4",
    "runnable": "#ffbf00",
    "throttled": "#d62728",
    "io_wait": "#ff7f0e",
    "sleeping": "#e0e0e0",
}

#: (time [s], duration [s], state) of one state slice.
Slice = tuple[float, float, str]


class PerfettoPlotError(ValueError):
    """A file that is not a `vmsim run --perfetto` timeline; one line."""


def read(path: str | Path) -> dict[str, Any]:
    """The timeline in ``path``; PerfettoPlotError (one line) if it is not one with state
    lanes."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise PerfettoPlotError(f"{shown(p)}: is a directory, not a timeline") from None
    except FileNotFoundError:
        raise PerfettoPlotError(f"{shown(p)}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        why = atomic.reason(e) if isinstance(e, OSError) else "not UTF-8 text"
        raise PerfettoPlotError(f"{shown(p)}: {why}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PerfettoPlotError(f"{shown(p)}: not JSON ({e.msg} at line {e.lineno})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise PerfettoPlotError(f"{shown(p)}: not a Chrome JSON trace (no traceEvents list)")
    try:
        found = lanes(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise PerfettoPlotError(f"{shown(p)}: a malformed trace event ({e!r})") from None
    if not found:
        raise PerfettoPlotError(
            f"{shown(p)}: no task state lanes: not written by `vmsim run --perfetto`"
        )
    return doc


def lanes(doc: Mapping[str, Any]) -> list[tuple[str, bool, list[Slice]]]:
    """Each state lane as (name, kernel thread, slices by time): the kernel threads first,
    then the tasks, each by pid."""
    names: dict[int, tuple[str, bool]] = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e["tid"] >= perfetto.STATE_TID:
            name = str(e["args"]["name"]).removesuffix(" state")
            names[int(e["tid"])] = (name, e["pid"] == perfetto.PID_KTHREADS)
    slices: dict[int, list[Slice]] = {tid: [] for tid in names}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "state" and e["tid"] in slices:
            slices[e["tid"]].append((float(e["ts"]) / 1e6, float(e["dur"]) / 1e6, str(e["name"])))
    order = sorted(names, key=lambda tid: (not names[tid][1], tid))
    return [(names[t][0], names[t][1], sorted(slices[t])) for t in order]


def counters(doc: Mapping[str, Any]) -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """Every counter as (process name, counter name) -> (times [s], values), by time."""
    procs = {
        e["pid"]: str(e["args"]["name"])
        for e in doc["traceEvents"]
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    points: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "C":
            key = (procs.get(e["pid"], str(e["pid"])), str(e["name"]))
            points.setdefault(key, []).append((float(e["ts"]) / 1e6, float(e["args"]["pages"])))
    out = {}
    for key, pts in points.items():
        pts.sort()
        out[key] = ([t for t, _ in pts], [v for _, v in pts])
    return out


def _memory_panels(axes: list[Any], series: Mapping[tuple[str, str], Any]) -> None:
    """Free pages per zone and in all; the watermarks and boost; dirty and writeback."""
    memory = "memory (summed over zones)"
    ax = axes[0]
    if (memory, "nr_free_pages") in series:
        ax.plot(*series[(memory, "nr_free_pages")], color="black", label="nr_free_pages")
    for (proc, name), (t, v) in sorted(series.items()):
        if proc.startswith("zone ") and name == "free":
            ax.plot(t, v, label=f"{proc} free", linewidth=1)
    ax.set_ylabel("free pages")
    ax.legend(fontsize=7, loc="upper right")
    ax = axes[1]
    for w, colour in (("min", "#d62728"), ("low", "#ff7f0e"), ("high", "#2ca02c")):
        if (memory, f"watermark {w}") in series:
            ax.plot(*series[(memory, f"watermark {w}")], color=colour, label=f"watermark {w}")
    if (memory, "watermark_boost") in series:
        t, v = series[(memory, "watermark_boost")]
        ax.fill_between(t, 0, v, color="#17becf", alpha=0.4, label="watermark_boost")
    ax.set_ylabel("watermarks\n[pages]")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper right")
    ax = axes[2]
    for name, colour in (("nr_dirty", "#8c564b"), ("nr_writeback", "#e377c2")):
        if (memory, name) in series:
            ax.step(*series[(memory, name)], where="post", color=colour, label=name)
    ax.set_ylabel("pages")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper right")


def figure(doc: Mapping[str, Any], max_lanes: int = 40, title: str | None = None) -> Any:
    """The picture of a timeline: memory counters, then up to ``max_lanes`` state lanes
    (kernel threads first). Returns a matplotlib figure."""
    from matplotlib.patches import Patch

    from vmsim.plots import _pyplot

    plt = _pyplot()
    shown_lanes = lanes(doc)[:max_lanes]
    fig, axes = plt.subplots(
        4,
        1,
        figsize=(11, 5.5 + 0.22 * len(shown_lanes)),
        sharex=True,
        gridspec_kw={"height_ratios": [2.2, 1.4, 1.4, max(2.0, 0.22 * len(shown_lanes))]},
    )
    _memory_panels(list(axes), counters(doc))
    ax = axes[3]
    seen: set[str] = set()
    for y, (_, _, slices) in enumerate(shown_lanes):
        by_state: dict[str, list[tuple[float, float]]] = {}
        for t, d, state in slices:
            by_state.setdefault(state, []).append((t, d))
        for state, bars in by_state.items():
            seen.add(state)
            ax.broken_barh(bars, (y - 0.4, 0.8), color=STATE_COLOURS.get(state, "#7f7f7f"))
    ax.set_yticks(range(len(shown_lanes)))
    ax.set_yticklabels([name for name, _, _ in shown_lanes], fontsize=7)
    ax.set_ylim(len(shown_lanes) - 0.5, -0.5)
    ax.set_xlabel("time [s]")
    handles = [Patch(color=c, label=s) for s, c in STATE_COLOURS.items() if s in seen]
    handles += [Patch(color="#7f7f7f", label=s) for s in sorted(seen - set(STATE_COLOURS))]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    other = doc.get("otherData", {})
    axes[0].set_title(
        title or f"{other.get('scenario', '?')} — kernel {other.get('kernel', '?')}", fontsize=10
    )
    fig.tight_layout()
    return fig


def plot(src: str | Path, out: str | Path, max_lanes: int = 40) -> str:
    """Draws the timeline in ``src`` into the PNG ``out`` (whole or not at all); returns a
    line saying what was drawn. Raises PerfettoPlotError for a file that is not one."""
    from vmsim.plots import _pyplot

    doc = read(src)
    all_lanes = lanes(doc)
    fig = figure(doc, max_lanes)
    try:
        atomic.save_figure(fig, out)
    finally:
        _pyplot().close(fig)
    drawn = all_lanes[:max_lanes]
    kthreads = sum(1 for _, k, _ in drawn if k)
    end = max((t + d for _, _, s in all_lanes for t, d, _ in s), default=0.0)
    more = f" (of {len(all_lanes)})" if len(all_lanes) > len(drawn) else ""
    return (
        f"wrote {out}: {len(drawn)} state lanes{more} ({kthreads} kernel threads, "
        f"{len(drawn) - kthreads} tasks), 0 to {end:.3f} s\n"
    )
