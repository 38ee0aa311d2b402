"""Replay of recorded data (``vmsim replay``): page-access traces through the
kernel's page cache and LRU (the engine's ``replay::access``), with the
miss-ratio curve over a list of cache sizes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vmsim import _vmsim, atomic, inputs
from vmsim.units import parse_size

PAGE_SIZE = 4096
#: Formats of ``vmsim replay access`` (libCacheSim's names).
ACCESS_FORMATS = ("csv", "txt", "oracleGeneral", "vscsi")


class ReplayError(Exception):
    """A replay that cannot start: the message is one line."""


def cache_sizes(text: str) -> list[int]:
    """Pages of each size in a comma-separated list (``64MiB,128MiB``; a bare number
    is bytes, as in scenarios); at least one page each."""
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            b = parse_size(part)
        except ValueError as e:
            raise ReplayError(f"--cache-size {part!r}: {e}") from None
        if b < PAGE_SIZE:
            raise ReplayError(f"--cache-size {part!r}: smaller than one 4 KiB page")
        out.append(b // PAGE_SIZE)
    return out


def replay_access(
    trace: str,
    fmt: str,
    pages: list[int],
    *,
    obj_id_col: int = 1,
    delimiter: str = ",",
    has_header: bool = False,
) -> dict[str, Any]:
    """Replays a page-access trace at each cache size [pages]; the engine's report."""
    if fmt not in ACCESS_FORMATS:
        raise ReplayError(f"--format {fmt}: unknown ({', '.join(ACCESS_FORMATS)})")
    inputs.check_regular(trace, "a trace file", ReplayError, stream=False)
    try:
        text = _vmsim.replay_access(
            trace,
            fmt,
            pages,
            obj_id_col=obj_id_col,
            delimiter=delimiter,
            has_header=has_header,
        )
    except ValueError as e:
        raise ReplayError(str(e)) from None
    report: dict[str, Any] = json.loads(text)
    report["trace"] = os.path.basename(trace)
    report["format"] = fmt
    return report


def _mib(pages: int) -> str:
    """A cache size in MiB, or KiB when not a whole MiB."""
    b = pages * PAGE_SIZE
    return f"{b >> 20} MiB" if b % (1 << 20) == 0 else f"{b >> 10} KiB"


def format_access(report: dict[str, Any]) -> str:
    """The report as text: the trace, then one row per cache size."""
    lines = [
        f"trace {report['trace']} ({report['format']}): {report['requests']:,} requests, "
        f"{report['distinct_pages']:,} distinct pages",
        "",
        f"{'cache':>12s} {'hit ratio':>9s} {'miss ratio':>10s} {'refaults':>10s} "
        f"{'activated':>10s} {'pgscan':>10s} {'pgsteal':>10s} {'pgdeactivate':>12s}",
    ]
    for s in report["sizes"]:
        lines.append(
            f"{_mib(s['cache_pages']):>12s} {s['hit_ratio']:9.4f} {1 - s['hit_ratio']:10.4f} "
            f"{s['refaults']:10d} {s['refault_activations']:10d} {s['pgscan']:10d} "
            f"{s['pgsteal']:10d} {s['pgdeactivate']:12d}"
        )
    return "\n".join(lines)


def bad_input_lines(report: dict[str, Any]) -> list[str]:
    """What did not parse and why the trace ended early, one line each (empty if clean)."""
    bad = report["bad_input"]
    out = []
    if bad["malformed"]:
        shown = "; ".join(f"line {n}: {t!r}" for n, t in bad["examples"])
        out.append(f"{bad['malformed']:,} malformed lines skipped (first: {shown})")
    if bad["truncated"]:
        out.append(f"{bad['truncated']}; the results are those of the requests before it")
    return out


def plot_mrc(report: dict[str, Any], path: str | Path) -> None:
    """The miss-ratio curve (miss ratio against cache size) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(report["sizes"], key=lambda s: s["cache_pages"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(
        [s["cache_pages"] * PAGE_SIZE / (1 << 20) for s in sizes],
        [1 - s["hit_ratio"] for s in sizes],
        marker="o",
        label="vmsim kernel LRU",
    )
    ax.set_xlabel("page cache (memory.max) [MiB]")
    ax.set_ylabel("miss ratio")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{report['trace']}: {report['requests']:,} requests")
    ax.legend()
    fig.tight_layout()
    atomic.save_figure(fig, path)
    plt.close(fig)


#: The oracleGeneral record (libCacheSim's oracleGeneralBin.h), little-endian, packed.
ORACLE_GENERAL_DTYPE = [
    ("clock_time", "<u4"),
    ("obj_id", "<u8"),
    ("obj_size", "<u4"),
    ("next_access_vtime", "<i8"),
]


def write_zipf_trace(
    path: str | Path, requests: int, objects: int, alpha: float, seed: int = 1
) -> None:
    """Writes an oracleGeneral trace of `requests` page accesses drawn from a Zipf(`alpha`)
    popularity over `objects` pages (rank r with weight r^-alpha, ranks shuffled over the
    ids 1..objects), one million at a time; same arguments, same bytes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, objects + 1, dtype=np.float64) ** alpha)
    cdf /= cdf[-1]
    ids = rng.permutation(objects).astype(np.uint64) + 1
    chunk = 1_000_000

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            write_chunks(f)

    def write_chunks(f: Any) -> None:
        for start in range(0, requests, chunk):
            n = min(chunk, requests - start)
            rec = np.zeros(n, dtype=ORACLE_GENERAL_DTYPE)
            rec["clock_time"] = (np.arange(start, start + n) // 1000).astype(np.uint32)
            ranks = np.minimum(np.searchsorted(cdf, rng.random(n)), objects - 1)
            rec["obj_id"] = ids[ranks]
            rec["obj_size"] = PAGE_SIZE
            rec["next_access_vtime"] = -1
            f.write(rec.tobytes())

    atomic.write_with(path, write)


def libcachesim_hit_ratios(
    trace: str | Path, cache_pages: int, algorithms: tuple[str, ...] = ("LRU", "SLRU")
) -> dict[str, tuple[float, float]] | None:
    """Hit ratio and requests per wall second of libCacheSim's algorithms on an
    oracleGeneral trace, every object one page (ignore_obj_size); None when the
    libcachesim package is not installed."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    import time

    out = {}
    for name in algorithms:
        params = lcs.ReaderInitParam(ignore_obj_size=True)
        reader = lcs.TraceReader(str(trace), lcs.TraceType.ORACLE_GENERAL_TRACE, params)
        cache = getattr(lcs, name)(cache_pages)
        t0 = time.perf_counter()
        miss_ratio, _ = cache.process_trace(reader)
        dt = time.perf_counter() - t0
        n = reader.get_num_of_req()
        out[name] = (1.0 - miss_ratio, n / dt if dt > 0 else 0.0)
    return out


def bench_figures(requests: int) -> dict[str, Any]:
    """``vmsim bench``'s replay figures: a Zipf(1.2) oracleGeneral trace of `requests`
    accesses over requests/10 pages, with a cache of requests/100 pages (20 M requests,
    2 M pages, 200 k pages by default), replayed by vmsim and by libCacheSim's SLRU and
    LRU through its Python API, one after the other in this process; requests per
    wall second of each (file reading included in both), and the hit ratios."""
    import tempfile
    import time

    objects, cache = max(requests // 10, 1), max(requests // 100, 1)
    with tempfile.TemporaryDirectory(prefix="vmsim-bench-") as d:
        path = Path(d) / "zipf.oracleGeneral"
        write_zipf_trace(path, requests, objects, 1.2)
        t0 = time.perf_counter()
        r = replay_access(str(path), "oracleGeneral", [cache])
        dt = time.perf_counter() - t0
        out: dict[str, Any] = {
            "replay_access_req_per_sec": requests / dt,
            "replay_access_hit_ratio": r["sizes"][0]["hit_ratio"],
        }
        lcs = libcachesim_hit_ratios(path, cache)
        if lcs is None:
            out["libcachesim_slru_req_per_sec"] = None
            out["libcachesim_note"] = "libcachesim is not installed (pip install '.[test]')"
            return out
        out["libcachesim_slru_req_per_sec"] = lcs["SLRU"][1]
        out["libcachesim_slru_hit_ratio"] = lcs["SLRU"][0]
        out["libcachesim_lru_req_per_sec"] = lcs["LRU"][1]
        out["libcachesim_lru_hit_ratio"] = lcs["LRU"][0]
    return out


def replay_kmem(
    trace: str,
    scenario: str | None,
    sets: tuple[str, ...],
    interval: float = 1.0,
    workloads: bool = False,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Replays a kmem trace on the scenario's machine and kernel (the built-in default
    without one; its workloads run beside the replay when ``workloads``), once per
    combination of the ``--set`` values (``KEY=V1,V2`` as in ``vmsim sweep``); each
    combination's overrides with its report."""
    from vmsim import api
    from vmsim.sweep import grid

    inputs.check_regular(trace, "a trace file", ReplayError, stream=False)
    points = grid.cartesian(grid.parse_sets(sets)) if sets else [{}]
    out = []
    for overrides in points:
        text = api.load_scenario(scenario, overrides)
        try:
            report = json.loads(_vmsim.replay_kmem(trace, text, interval, workloads))
        except _vmsim.ScenarioError:
            raise
        except ValueError as e:
            raise ReplayError(f"{trace}: {e}") from None
        report["trace"] = os.path.basename(trace)
        out.append((overrides, report))
    return out


#: Rows of the kmem summary: (label, key).
KMEM_ROWS = (
    ("allocations replayed", "allocs"),
    ("allocations failed in vmsim", "failed_allocs"),
    ("allocations failed when recorded", "recorded_failed_allocs"),
    ("frees replayed", "frees"),
    ("frees of pages from before the recording", "unknown_frees"),
    ("extfrag events, vmsim (whole machine)", "extfrag"),
    ("  fragmenting", "extfrag_fragmenting"),
    ("extfrag events of the replayed allocations", "extfrag_replayed"),
    ("  fragmenting", "extfrag_replayed_fragmenting"),
    ("extfrag events, recorded", "recorded_extfrag"),
    ("  fragmenting, recorded", "recorded_extfrag_fragmenting"),
)

#: /proc/vmstat counters of the simulated kernel shown under the summary: what
#: kswapd, direct reclaim and compaction did while the trace was replayed.
KMEM_VMSTAT_ROWS = (
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "pgscan_direct",
    "allocstall_normal",
    "allocstall_movable",
    "compact_stall",
    "compact_daemon_wake",
)


def vmstat_counters(text: str) -> dict[str, int]:
    """/proc/vmstat text as a dict."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        out[name] = int(value)
    return out


def _labels(runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Each run's column name: the overrides that differ between the runs (``vmsim``
    for a single run)."""
    keys = [k for k in runs[0][0] if len({str(o.get(k)) for o, _ in runs}) > 1]
    return [" ".join(f"{k}={o[k]}" for k in keys) or "vmsim" for o, _ in runs]


def format_kmem(runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """The summary of one or more replays side by side, then the state over time and
    the final /proc files of each."""
    first = runs[0][1]
    labels = _labels(runs)
    width = max(16, *(len(lab) for lab in labels))
    lines = [f"trace {first['trace']}: {first['lines']:,} lines", ""]
    lines.append(f"{'':42s}" + "".join(f" {lab:>{width}s}" for lab in labels))
    for label, key in KMEM_ROWS:
        lines.append(f"{label:42s}" + "".join(f" {r[key]:>{width},}" for _, r in runs))
    lines.append(
        f"{'mixed pageblocks at the end':42s}"
        + "".join(f" {r['samples'][-1]['mixed_pageblocks']:>{width},}" for _, r in runs)
    )
    lines.append(
        f"{'simulated seconds':42s}" + "".join(f" {r['seconds']:>{width}.1f}" for _, r in runs)
    )
    if any(r["killed"] for _, r in runs):
        lines.append(
            f"{'replay task OOM-killed':42s}"
            + "".join(f" {'yes' if r['killed'] else 'no':>{width}s}" for _, r in runs)
        )
    counters = [vmstat_counters(r["vmstat"]) for _, r in runs]
    for name in KMEM_VMSTAT_ROWS:
        lines.append(f"{name:42s}" + "".join(f" {c[name]:>{width},}" for c in counters))
    for label, (_, r) in zip(labels, runs, strict=True):
        lines += [
            "",
            f"over time ({label}):",
            f"{'t [s]':>8s} {'free pages':>11s} {'largest order':>13s} "
            f"{'mixed blocks':>12s} {'extfrag':>8s} {'replayed':>8s} {'recorded':>8s} "
            f"{'held pages':>10s}",
        ]
        for s in r["samples"]:
            lines.append(
                f"{s['time_seconds']:8.1f} {s['free_pages']:11d} {s['largest_free_order']:13d} "
                f"{s['mixed_pageblocks']:12d} {s['extfrag']:8d} {s['extfrag_replayed']:8d} "
                f"{s['recorded_extfrag']:8d} {s['held_pages']:10d}"
            )
        lines += ["", f"/proc/buddyinfo at the end ({label}):", r["buddyinfo"].rstrip("\n")]
    return "\n".join(lines)


def kmem_bad_input_lines(report: dict[str, Any]) -> list[str]:
    """What did not parse, one line (empty if clean)."""
    if not report["malformed"]:
        return []
    shown = "; ".join(f"line {n}: {why}" for n, why in report["malformed_examples"])
    return [f"{report['malformed']:,} malformed lines skipped (first: {shown})"]


def plot_kmem(runs: list[tuple[dict[str, Any], dict[str, Any]]], path: str | Path) -> None:
    """Largest free order, mixed pageblocks and extfrag events over trace time (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    for label, (_, r) in zip(_labels(runs), runs, strict=True):
        t = [s["time_seconds"] for s in r["samples"]]
        axes[0].step(t, [s["largest_free_order"] for s in r["samples"]], where="post", label=label)
        axes[1].plot(t, [s["mixed_pageblocks"] for s in r["samples"]], label=label)
        (line,) = axes[2].plot(
            t, [s["extfrag"] for s in r["samples"]], label=f"{label} (whole machine)"
        )
        axes[2].plot(
            t,
            [s["extfrag_replayed"] for s in r["samples"]],
            ":",
            color=line.get_color(),
            label=f"{label} (replayed allocations)",
        )
    r0 = runs[0][1]
    axes[2].plot(
        [s["time_seconds"] for s in r0["samples"]],
        [s["recorded_extfrag"] for s in r0["samples"]],
        "k--",
        label="recorded",
    )
    axes[0].set_ylabel("largest free order")
    axes[1].set_ylabel("mixed pageblocks")
    axes[2].set_ylabel("extfrag events")
    axes[2].set_xlabel("trace time [s]")
    for ax in axes:
        ax.legend(fontsize=8)
    axes[0].set_title(f"{r0['trace']}: kmem replay")
    fig.tight_layout()
    atomic.save_figure(fig, path)
    plt.close(fig)
