"""`vmsim report`: one self-contained HTML page of a run, a reproduction or a sweep.

Every figure is a Plotly figure embedded as JSON, drawn by plotly.js inlined from
the pinned ``plotly`` package; the pageblock map is a PNG inlined as a data URL.
The page loads nothing from the network, so it opens offline and can be mailed
as one file. The same inputs give byte-identical pages.

Sources (:func:`load_source`):

* a run: a ``vmsim run --output-dir`` directory or its ``result.json`` (any file
  that ``vmsim run --json`` wrote);
* a reproduction: a ``vmsim reproduce --output-dir`` directory (or its
  ``result.json``), ``all``'s directory of experiments too;
* a sweep: its Parquet file.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmsim import atomic, inputs
from vmsim.atomic import shown

__all__ = ["ReportError", "Source", "load_source", "render_html", "write_report"]

#: The largest JSON file read [bytes] (as `vmsim compare` reads results).
MAX_JSON_BYTES = 256 * 1024 * 1024
#: The most sweep curves drawn (one per metric that varies).
MAX_SWEEP_FIGURES = 24
#: Prefixes of the /proc/vmstat items shown as reclaim counters.
RECLAIM_PREFIXES = (
    "allocstall",
    "pgscan",
    "pgsteal",
    "pgrefill",
    "pgactivate",
    "pgdeactivate",
    "pageoutrun",
    "kswapd",
    "slabs_scanned",
    "workingset",
    "nr_vmscan",
    "pgmigrate",
    "compact",
    "drop_",
    "oom_kill",
    "thp_",
    "pswp",
    "pgpg",
)
#: Per-interval activity drawn over time: (series, label, panel: 0 events, 1 pages).
ACTIVITY = (
    ("pageoutrun", "kswapd: balance_pgdat runs", 0),
    ("allocstall_normal", "direct reclaim: allocstall_normal", 0),
    ("allocstall_movable", "direct reclaim: allocstall_movable", 0),
    ("compact_stall", "direct compaction: compact_stall", 0),
    ("compact_daemon_wake", "kcompactd: wakeups", 0),
    ("oom_kill", "OOM kills", 0),
    ("pgscan_kswapd", "kswapd: pages scanned", 1),
    ("pgsteal_kswapd", "kswapd: pages reclaimed", 1),
    ("compact_migrate_scanned", "direct compaction: pages scanned", 1),
    ("compact_daemon_migrate_scanned", "kcompactd: pages scanned", 1),
    ("slabs_scanned", "shrinkers: slab objects scanned", 1),
)
MIGRATETYPES = ["Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate"]
MT_COLOURS = ["#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#7f7f7f"]
WM_COLOURS = {"min": "#d62728", "low": "#ff7f0e", "high": "#2ca02c"}
VERDICT_CLASS = {
    "agrees": "ok",
    "disagrees": "bad",
    "not observed": "meh",
    "by construction": "meh",
}


class ReportError(ValueError):
    """An input that is not a vmsim result; the message is one line naming it."""


@dataclass
class Source:
    """One input of a report: its kind (run, reproduction, sweep), name and data."""

    kind: str
    name: str
    path: Path
    data: Any
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # reproduction: kept runs


# ---------------------------------------------------------------------------
# Reading the inputs
# ---------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    """A JSON file read whole (at most MAX_JSON_BYTES), nesting and numbers checked as
    `vmsim compare` checks them; ReportError (one line) for anything else."""
    from vmsim.compare import CompareError, _check_depth, _number_parsers

    where = shown(path)
    try:
        f = inputs.open_input(str(path), "a result file", ReportError)
        try:
            raw = inputs.read_limited(f, where, MAX_JSON_BYTES, ReportError)
        finally:
            f.close()
        text = raw.decode("utf-8")
        _check_depth(text, where)
        return json.loads(text, **_number_parsers(where))
    except UnicodeDecodeError as e:
        raise ReportError(f"{where}: not a vmsim result: not UTF-8 text ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise ReportError(
            f"{where}: not a vmsim result: invalid JSON ({e.msg}, line {e.lineno})"
        ) from None
    except CompareError as e:
        raise ReportError(str(e)) from None


def _is_run(doc: Any) -> bool:
    """Whether ``doc`` is the object `vmsim run --json` writes."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("summary"), dict)
        and isinstance(doc.get("timeseries"), dict)
        and isinstance(doc.get("vmsim_version"), str)
    )


def _is_reproduction(doc: Any) -> bool:
    """Whether ``doc`` is the object `vmsim reproduce --json` writes for one experiment."""
    return isinstance(doc, dict) and isinstance(doc.get("claims"), list) and "experiment" in doc


def _check_run(doc: dict[str, Any], where: str) -> None:
    """Refuses a run object whose time series are not lists of the same length."""
    ts = doc["timeseries"]
    t = ts.get("time_seconds")
    if not isinstance(t, list):
        raise ReportError(f"{where}: not a vmsim result: timeseries.time_seconds is not a list")
    for key in ("watermarks", "watermark_boost", "buddyinfo", "pageblocks"):
        if not isinstance(ts.get(key), list) or len(ts[key]) != len(t):
            raise ReportError(f"{where}: timeseries.{key} does not match time_seconds")
    vm = ts.get("vmstat")
    if not isinstance(vm, dict) or any(
        not isinstance(v, list) or len(v) != len(t) for v in vm.values()
    ):
        raise ReportError(f"{where}: timeseries.vmstat does not match time_seconds")


def _kept_runs(root: Path, result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The first kept run (``CASE/KERNEL/run-1/result.json``) of every case and kernel of a
    reproduction's directory, by ``CASE / KERNEL``; runs not kept are left out."""
    out: dict[str, dict[str, Any]] = {}
    for case in result.get("cases", []):
        for k in result.get("kernels", []):
            p = root / str(case) / str(k.get("name")) / "run-1" / "result.json"
            if p.is_file():
                doc = _read_json(p)
                if _is_run(doc):
                    _check_run(doc, shown(p))
                    out[f"{case} / {k.get('name')}"] = doc
    return out


def _from_json(path: Path, root: Path | None) -> list[Source]:
    """The sources in a JSON file: a run, or a reproduction (its runs under ``root``)."""
    doc = _read_json(path)
    where = shown(path)
    if _is_run(doc):
        _check_run(doc, where)
        name = f"{doc.get('scenario', '?')} ({doc.get('kernel', '?')}, seed {doc.get('seed')})"
        return [Source("run", name, path, doc)]
    if _is_reproduction(doc):
        runs = _kept_runs(root, doc) if root is not None else {}
        name = f"vmsim reproduce {doc.get('experiment')}"
        return [Source("reproduction", name, path, doc, runs)]
    raise ReportError(
        f"{where}: not a vmsim result (neither `vmsim run --json` nor `vmsim reproduce` output)"
    )


def load_source(path: str | Path) -> list[Source]:
    """The sources a path names: a run's or a reproduction's directory or JSON, ``reproduce
    all``'s directory, or a sweep's Parquet file. ReportError (one line) otherwise."""
    p = Path(path)
    try:
        is_dir = p.is_dir()
        exists = p.exists()
    except OSError as e:
        raise ReportError(f"{shown(path)}: {atomic.reason(e)}") from None
    if not exists:
        raise ReportError(f"{shown(path)}: no such file or directory")
    if is_dir:
        if (p / "result.json").is_file():
            return _from_json(p / "result.json", p)
        subs = sorted(d for d in p.iterdir() if (d / "result.json").is_file())
        if subs:
            return [s for d in subs for s in _from_json(d / "result.json", d)]
        raise ReportError(
            f"{shown(path)}: not a vmsim output directory (no result.json; "
            "give a `vmsim run --output-dir` or `vmsim reproduce --output-dir` directory)"
        )
    if p.suffix.lower() == ".parquet":
        from vmsim.sweep.grid import SweepError
        from vmsim.sweep.table import read

        try:
            df = read(p)
        except SweepError as e:
            raise ReportError(str(e)) from None
        return [Source("sweep", f"sweep {p.name}", p, df)]
    return _from_json(p, p.parent if p.name == "result.json" else None)


# ---------------------------------------------------------------------------
# Figures (Plotly JSON)
# ---------------------------------------------------------------------------


def _per_interval(values: Sequence[float]) -> list[float]:
    """Differences of a cumulative counter between samples (0 for the first)."""
    return [0] + [b - a for a, b in zip(values, values[1:], strict=False)]


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    """A figure's layout: title, a legend below, white background, fixed height."""
    layout: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 15}},
        "height": 420,
        "margin": {"l": 70, "r": 30, "t": 50, "b": 50},
        "legend": {"orientation": "h", "y": -0.18},
        "template": "none",
        "hovermode": "x unified",
    }
    layout.update(extra)
    return layout


def watermark_figure(run: Mapping[str, Any]) -> dict[str, Any]:
    """Free pages against the min/low/high watermarks (top), and the watermarks with their
    boost on their own scale (bottom): free memory is often far above the marks."""
    ts = run["timeseries"]
    t = ts["time_seconds"]
    free = ts["vmstat"].get("nr_free_pages", [])
    wm = ts["watermarks"]
    boost = ts["watermark_boost"]
    data: list[dict[str, Any]] = [
        {"x": t, "y": free, "name": "nr_free_pages", "line": {"color": "black"}, "yaxis": "y"}
    ]
    for i, name in enumerate(("min", "low", "high")):
        ys = [w[i] for w in wm]
        colour = WM_COLOURS[name]
        for axis, show in (("y", True), ("y2", False)):
            data.append(
                {
                    "x": t,
                    "y": ys,
                    "name": f"{name} watermark (boost included)",
                    "legendgroup": name,
                    "showlegend": show,
                    "line": {"color": colour, "dash": "dash" if axis == "y" else "solid"},
                    "yaxis": axis,
                }
            )
    high = [w[2] for w in wm]
    data.append(
        {
            "x": t,
            "y": [h - b for h, b in zip(high, boost, strict=False)],
            "name": "high watermark without boost",
            "line": {"color": "#2ca02c", "width": 0.5, "dash": "dot"},
            "yaxis": "y2",
        }
    )
    data.append(
        {
            "x": t,
            "y": boost,
            "name": "watermark_boost",
            "fill": "tozeroy",
            "line": {"color": "#17becf"},
            "yaxis": "y2",
        }
    )
    for d in data:
        d["type"] = "scatter"
        d["mode"] = "lines"
    return {
        "data": data,
        "layout": _layout(
            "Free pages, watermarks and boost",
            height=560,
            xaxis={"title": {"text": "simulated time [s]"}, "anchor": "y2"},
            yaxis={"title": {"text": "free pages"}, "domain": [0.45, 1]},
            yaxis2={"title": {"text": "watermarks [pages]"}, "domain": [0, 0.38]},
        ),
    }


def activity_figure(run: Mapping[str, Any]) -> dict[str, Any]:
    """What kswapd, kcompactd, direct reclaim and compaction did in each sampling interval:
    events (top) and pages (bottom)."""
    ts = run["timeseries"]
    t = ts["time_seconds"]
    vm = ts["vmstat"]
    data: list[dict[str, Any]] = []
    for key, label, panel in ACTIVITY:
        if key not in vm:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": t,
                "y": _per_interval(vm[key]),
                "name": label,
                "yaxis": "y" if panel == 0 else "y2",
                "line": {"shape": "hv"},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            "Reclaim and compaction per sampling interval",
            height=560,
            xaxis={"title": {"text": "simulated time [s]"}, "anchor": "y2"},
            yaxis={"title": {"text": "events"}, "domain": [0.55, 1]},
            yaxis2={"title": {"text": "pages"}, "domain": [0, 0.45]},
        ),
    }


def buddyinfo_figure(run: Mapping[str, Any]) -> dict[str, Any]:
    """Free blocks of every order over time (summed over zones), as a heat map in log scale
    (the raw counts on hover)."""
    import math

    ts = run["timeseries"]
    t = ts["time_seconds"]
    rows = ts["buddyinfo"]
    orders = len(rows[0]) if rows else 0
    z = [[math.log10(1 + r[o]) for r in rows] for o in range(orders)]
    raw = [[r[o] for r in rows] for o in range(orders)]
    return {
        "data": [
            {
                "type": "heatmap",
                "x": t,
                "y": list(range(orders)),
                "z": z,
                "customdata": raw,
                "hovertemplate": "t=%{x} s<br>order %{y}: %{customdata} free blocks<extra></extra>",
                "colorscale": "Viridis",
                "colorbar": {"title": {"text": "log10(1+blocks)"}},
            }
        ],
        "layout": _layout(
            "buddyinfo over time: free blocks per order",
            xaxis={"title": {"text": "simulated time [s]"}},
            yaxis={"title": {"text": "order"}, "dtick": 1},
            hovermode="closest",
        ),
    }


def pageblocks_figure(run: Mapping[str, Any]) -> dict[str, Any]:
    """Pageblocks by migratetype over time (stacked) and the mixed ones."""
    ts = run["timeseries"]
    t = ts["time_seconds"]
    pb = ts["pageblocks"]
    data: list[dict[str, Any]] = []
    for i, name in enumerate(MIGRATETYPES):
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": t,
                "y": [row[i] for row in pb],
                "name": name,
                "stackgroup": "mt",
                "line": {"color": MT_COLOURS[i], "width": 0.5},
            }
        )
    if "mixed_pageblocks" in ts:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": t,
                "y": ts["mixed_pageblocks"],
                "name": "mixed pageblocks",
                "line": {"color": "black", "dash": "dot"},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            "Pageblocks by migratetype",
            xaxis={"title": {"text": "simulated time [s]"}},
            yaxis={"title": {"text": "pageblocks"}},
        ),
    }


def sweep_figures(df: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """One figure per varying metric of a sweep: mean ± std against the first varying knob
    (one line per value of the second), min to max as a band; and notes on what was not
    drawn."""
    from vmsim.sweep.grid import SweepError
    from vmsim.sweep.plot import summarise
    from vmsim.sweep.table import ok_rows, text, varying_knobs

    notes: list[str] = []
    ok = ok_rows(df)
    knobs = varying_knobs(ok)
    if ok.height == 0:
        return [], ["no run of the sweep succeeded: nothing to draw"]
    if not knobs:
        return [], ["the sweep varies no knob: only its comparison table is shown"]
    # A numeric knob goes along x; a knob that x's value decides (a kernel named after
    # its limit) adds nothing and is left out.
    knobs = sorted(knobs, key=lambda c: not ok[c].dtype.is_numeric())
    x = knobs[0]
    free = [k for k in knobs[1:] if ok.select(x, k).n_unique() > ok[x].n_unique()]
    ok = ok.drop([k for k in knobs[1:] if k not in free])
    hue = free[0] if free else None
    if len(free) > 1:
        notes.append(
            f"the sweep varies {', '.join(knobs)} independently: curves against one knob "
            "by another need the rest fixed; draw them with vmsim sweep-plot --where"
        )
        return [], notes
    metrics = [
        c
        for c in ok.columns
        if c.startswith(("summary.", "workload."))
        and ok[c].dtype.is_numeric()
        and ok[c].n_unique() > 1
    ]
    if len(metrics) > MAX_SWEEP_FIGURES:
        notes.append(f"{len(metrics) - MAX_SWEEP_FIGURES} more varying metrics not drawn")
    figs = []
    for y in metrics[:MAX_SWEEP_FIGURES]:
        try:
            summary, cols = summarise(ok, x, y, hue, [])
        except SweepError as e:
            notes.append(f"{y}: {e}")
            continue
        parts = summary.partition_by(cols["hue"], maintain_order=True) if hue else [summary]
        data: list[dict[str, Any]] = []
        for part in parts:
            xs = [text(v) if not isinstance(v, int | float) else v for v in part[cols["x"]]]
            name = f"{hue} = {text(part[cols['hue']][0])}" if hue else "mean ± std"
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "x": xs,
                    "y": part["mean"].to_list(),
                    "error_y": {"type": "data", "array": part["std"].fill_null(0).to_list()},
                    "name": name,
                    "legendgroup": name,
                }
            )
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": xs + xs[::-1],
                    "y": part["max"].to_list() + part["min"].to_list()[::-1],
                    "fill": "toself",
                    "opacity": 0.15,
                    "line": {"width": 0},
                    "name": f"{name}: min to max",
                    "legendgroup": name,
                    "showlegend": False,
                    "hoverinfo": "skip",
                }
            )
        runs = summary["runs"]
        layout = _layout(
            f"{y} against {x}",
            xaxis={"title": {"text": x}},
            yaxis={"title": {"text": y}},
            hovermode="closest",
        )
        layout["annotations"] = [
            {
                "text": f"mean ± std over {_span(runs.min(), runs.max())} run(s) per point; "
                "min to max shaded",
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": 1.06,
                "showarrow": False,
                "font": {"size": 11, "color": "#555"},
            }
        ]
        figs.append((y, {"data": data, "layout": layout}))
    return figs, notes


def _span(lo: Any, hi: Any) -> str:
    """``3`` or ``2–5``."""
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------


CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto;
  max-width: 1100px; padding: 1em 2em; color: #111; }
h1 { font-size: 1.6em; border-bottom: 2px solid #333; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #aaa; }
h3 { font-size: 1.1em; margin-top: 1.5em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 12px;
  line-height: 1.25; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plot { width: 100%; min-height: 420px; margin: 1em 0; }
.ok { background: #d8f3d8; } .bad { background: #f8d4d4; } .meh { background: #f3efd0; }
nav ul { columns: 2; font-size: 13px; }
img.pbmap { max-width: 100%; }
.note { color: #555; font-size: 13px; }
@media print {
  body { max-width: none; padding: 0; }
  nav, .modebar { display: none !important; }
  .plot, img.pbmap, table, pre { page-break-inside: avoid; break-inside: avoid; }
  pre { white-space: pre-wrap; font-size: 9px; }
  h2 { page-break-before: auto; break-after: avoid; }
}
"""

# Draws every figure of the page from its JSON; marks the page when all are drawn, and
# each plot's div with data-rendered, so a headless browser can check them.
RENDER_JS = """
(function () {
  var divs = document.querySelectorAll("div.plot[data-figure]");
  var pending = divs.length;
  function done() { pending -= 1; if (pending <= 0) document.body.dataset.rendered = "all"; }
  if (pending === 0) { document.body.dataset.rendered = "all"; return; }
  divs.forEach(function (div) {
    var fig = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false})
      .then(function () { div.dataset.rendered = "yes"; done(); },
            function (e) { div.dataset.rendered = "error: " + e; done(); });
  });
})();
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element (no ``</``, no ``<!--``)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


class _Page:
    """The HTML page being built: sections, figures and the table of contents."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []
        self.figures = 0

    def anchor(self, title: str) -> str:
        """An id for a heading, unique in the page."""
        base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
        return f"s{len(self.toc)}-{base}"

    def h2(self, title: str) -> None:
        a = self.anchor(title)
        self.toc.append((a, title))
        self.parts.append(f'<h2 id="{a}">{_esc(title)}</h2>')

    def h3(self, title: str) -> None:
        self.parts.append(f"<h3>{_esc(title)}</h3>")

    def figure(self, fig: dict[str, Any]) -> None:
        self.figures += 1
        n = self.figures
        self.parts.append(
            f'<div class="plot" id="plot-{n}" data-figure="fig-{n}"></div>'
            f'<script type="application/json" id="fig-{n}">{_script_json(fig)}</script>'
        )

    def pre(self, text: str) -> None:
        self.parts.append(f"<pre>{_esc(text)}</pre>")

    def note(self, text: str) -> None:
        self.parts.append(f'<p class="note">{_esc(text)}</p>')

    def table(self, head: Sequence[str], rows: Iterable[Sequence[object]], cls=None) -> None:
        """A table; numbers right-aligned; ``cls(row)`` gives a row's class."""
        out = ["<table><thead><tr>"]
        out += [f"<th>{_esc(h)}</th>" for h in head]
        out.append("</tr></thead><tbody>")
        for row in rows:
            c = cls(row) if cls else None
            out.append(f'<tr class="{c}">' if c else "<tr>")
            for v in row:
                num = isinstance(v, int | float) and not isinstance(v, bool)
                out.append(
                    f'<td class="num">{_esc(_fmt(v))}</td>' if num else f"<td>{_esc(v)}</td>"
                )
            out.append("</tr>")
        out.append("</tbody></table>")
        self.parts.append("".join(out))

    def image(self, png: bytes, alt: str) -> None:
        b64 = base64.b64encode(png).decode("ascii")
        self.parts.append(
            f'<img class="pbmap" alt="{_esc(alt)}" src="data:image/png;base64,{b64}">'
        )


def _fmt(v: object) -> str:
    """A number as a table shows it: integers whole, others to 4 significant digits."""
    if isinstance(v, float):
        return f"{v:.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
    return str(v)


def _pbmap_png(results: list[dict[str, Any]], titles: list[str]) -> bytes | None:
    """The pageblock map of runs side by side as PNG bytes (None without pageblock data)."""
    if not all(r.get("pageblocks") for r in results):
        return None
    from vmsim import pbmap
    from vmsim.plots import _pyplot

    fig = pbmap.pageblock_map_figure(results, titles)
    buf = io.BytesIO()
    # No metadata: the same run gives the same bytes whatever matplotlib's version string.
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    _pyplot().close(fig)
    return buf.getvalue()


def _run_section(page: _Page, run: dict[str, Any], title: str) -> None:
    """Everything about one run: summary, figures, the map, counters and /proc."""
    page.h2(title)
    s = run["summary"]
    page.table(["summary", "value"], [(k, v) for k, v in s.items()])
    if run.get("workload"):
        page.table(["workload", "value"], list(run["workload"].items()))
    page.figure(watermark_figure(run))
    page.figure(activity_figure(run))
    page.figure(buddyinfo_figure(run))
    page.figure(pageblocks_figure(run))
    png = _pbmap_png([run], [str(run.get("kernel", ""))])
    if png is not None:
        page.h3("Pageblock map at the end of the run")
        page.image(png, f"pageblock map of {title}")
    delta = run.get("vmstat_delta") or {}
    rows = [(k, v) for k, v in delta.items() if k.startswith(RECLAIM_PREFIXES)]
    page.h3("Reclaim, compaction and migration counters (change during the run)")
    if rows:
        page.table(["/proc/vmstat item", "change"], rows)
    else:
        page.note("No reclaim or compaction counter changed during the run.")
    proc = run.get("proc") or {}
    if "buddyinfo" in proc:
        page.h3("/proc/buddyinfo at the end")
        page.pre(proc["buddyinfo"])


def _compare_section(page: _Page, columns: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """The mmtests-style tables of `vmsim compare` for the runs given."""
    from vmsim.compare import CompareError, compare_results

    page.h2("Comparison (mmtests-style, as vmsim compare prints it)")
    try:
        page.pre(compare_results(columns))
    except CompareError as e:
        page.note(f"no comparison: {e}")


def _claim_rows(claims: Sequence[Mapping[str, Any]]) -> list[tuple[object, ...]]:
    """One table row per claim: verdict, claim, the seed's words, figures, p, test."""
    rows: list[tuple[object, ...]] = []
    for c in claims:
        sb, sa = c.get("seed_values") or (None, None)
        vb, va = c.get("vmsim_values") or (None, None)
        p = c.get("p_value")
        rows.append(
            (
                c.get("verdict", ""),
                c.get("claim", ""),
                c.get("quote", ""),
                f"{_num(sb)} → {_num(sa)}",
                f"{_num(vb)} → {_num(va)}",
                "-" if p is None else f"{p:.3g}",
                c.get("detail", ""),
            )
        )
    return rows


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, int | float):
        return _fmt(float(x))
    return str(x)


def _reproduction_section(page: _Page, src: Source) -> None:
    """A reproduction: the seed's tables beside vmsim's, the verdicts, every kernel's run."""
    from vmsim import reproduce

    r = src.data
    page.h2(f"{src.name}: {r.get('title', '')}")
    page.note(
        f"{r.get('runs')} run(s) per kernel at scale {r.get('scale')}; kernels: "
        + ", ".join(f"{k.get('name')} ({k.get('label')})" for k in r.get("kernels", []))
    )
    page.h3("Claims of the seed and their verdicts")
    page.table(
        ["verdict", "claim", "the seed says", "seed", "vmsim", "p", "test"],
        _claim_rows(r.get("claims", [])),
        cls=lambda row: VERDICT_CLASS.get(str(row[0]), ""),
    )
    text = None
    report_txt = src.path.parent / "report.txt"
    if report_txt.is_file():
        text = report_txt.read_text(encoding="utf-8", errors="replace")
    else:
        try:
            text = reproduce.render_text(r)
        except Exception as e:  # noqa: BLE001 - a hand-edited result: say so, draw the rest
            page.note(f"the seed's tables cannot be rendered from this result: {e}")
    if text is not None:
        page.h3("The seed's tables beside vmsim's")
        page.pre(text)
    for png_path in sorted(src.path.parent.glob("*.png")) if src.path.name == "result.json" else []:
        page.h3(f"{png_path.name} (drawn by the reproduction)")
        page.image(png_path.read_bytes(), png_path.name)
    if not src.runs:
        page.note(
            "No kept runs (CASE/KERNEL/run-1/result.json) beside this result: "
            "run vmsim reproduce with --output-dir to draw them."
        )
        return
    by_case: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, run in src.runs.items():
        case, kernel = key.split(" / ", 1)
        by_case.setdefault(case, []).append((kernel, run))
    for case, runs in by_case.items():
        page.h3(f"Case {case}: run 1 of every kernel")
        for kernel, run in runs:
            fig = watermark_figure(run)
            fig["layout"]["title"]["text"] = f"{case} / {kernel}: free pages, watermarks, boost"
            page.figure(fig)
            fig = activity_figure(run)
            fig["layout"]["title"]["text"] = f"{case} / {kernel}: reclaim and compaction"
            page.figure(fig)
        png = _pbmap_png([r for _, r in runs], [k for k, _ in runs])
        if png is not None:
            page.image(png, f"pageblock maps of case {case}")


def _sweep_section(page: _Page, src: Source) -> None:
    """A sweep: its runs, the metric-against-knob curves and the comparison of its points."""
    from vmsim.sweep.table import ok_rows, points, run_dicts, varying_knobs

    df = src.data
    ok = ok_rows(df)
    page.h2(src.name)
    page.note(
        f"{df.height} runs, {ok.height} succeeded; knobs varied: "
        + (", ".join(varying_knobs(ok)) or "none")
    )
    figs, notes = sweep_figures(df)
    for n in notes:
        page.note(n)
    for _, fig in figs:
        page.figure(fig)
    columns = [(name, run_dicts(rows)) for name, rows in points(ok)]
    columns = [(n, rs) for n, rs in columns if rs]
    if columns:
        _compare_section(page, columns)


def render_html(sources: Sequence[Source]) -> str:
    """The whole page for ``sources``: every figure's library and data inline."""
    from plotly.offline import get_plotlyjs

    page = _Page()
    runs = [s for s in sources if s.kind == "run"]
    if len(runs) > 1:
        _compare_section(page, [(s.name, [s.data]) for s in runs])
    for s in sources:
        if s.kind == "run":
            _run_section(page, s.data, s.name)
        elif s.kind == "reproduction":
            _reproduction_section(page, s)
        else:
            _sweep_section(page, s)
    if len(runs) == 1:
        col = runs[0].data.get("kernel") or "run"
        _compare_section(page, [(str(col), [runs[0].data])])
    version = next((s.data.get("vmsim_version") for s in runs), None) or _engine_version()
    title = "vmsim report: " + ", ".join(s.name for s in sources)
    toc = "".join(f'<li><a href="#{a}">{_esc(t)}</a></li>' for a, t in page.toc)
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f"<title>{_esc(title)}</title><style>{CSS}</style>",
            f"<script>{get_plotlyjs()}</script></head><body>",
            f"<h1>{_esc(title)}</h1>",
            f'<p class="note">vmsim {_esc(version)}. Figures are interactive: drag to zoom, '
            "double-click to reset, click a legend entry to hide it.</p>",
            f"<nav><ul>{toc}</ul></nav>",
            "\n".join(page.parts),
            f"<script>{RENDER_JS}</script></body></html>\n",
        ]
    )


def _engine_version() -> str:
    from vmsim import api

    return api.version()


def write_report(paths: Sequence[str | Path], output: str | Path) -> list[Source]:
    """Reads every path, renders the page and writes it to ``output`` whole or not at all;
    returns the sources read."""
    if not paths:
        raise ReportError("no input given: name a run, a reproduction or a sweep")
    sources = [s for p in paths for s in load_source(p)]
    atomic.write_text(output, render_html(sources))
    return sources
