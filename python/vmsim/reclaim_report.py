"""The reclaim report of Documentation/trace/postprocess/trace-vmscan-postprocess.pl.

A pure-Python re-implementation of Mel Gorman's script (torvalds/linux, read at
04421fe2671c1790ab6529fad87ce8c73af0e1eb) plus the derived rows of the tables in
his posting "Reduce writeback from page reclaim context" (seed 001). It reads
ftrace text (``/sys/kernel/tracing/trace``, ``trace_pipe`` or ``trace-cmd
report``) written either in the 2.6.35-era event formats the script's default
regexes expect or in today's (6.18) formats, deciding per line by its keys.

What it counts, as the script does (per ``comm-pid``):

- a *direct reclaim* per ``mm_vmscan_direct_reclaim_begin``; its stall is the
  time to the matching ``…_end``. ``mm_vmscan_memcg_reclaim_begin``,
  ``mm_vmscan_memcg_softlimit_reclaim_begin`` and ``mm_vmscan_node_reclaim_begin``
  are process-context reclaim too and are counted the same way (the script
  ignores them; ``memcg_as_direct=False`` restores that). A begin inside an
  already open reclaim of the same task (soft-limit reclaim runs inside global
  direct reclaim and kswapd) is not counted again, nor is any reclaim by kswapd;
- pages scanned = Σ ``mm_vmscan_lru_isolate.nr_scanned`` of inactive-list
  isolations (legacy: ``isolate_mode != 2``; 6.18: ``lru=inactive_*``);
- pages reclaimed = Σ ``mm_vmscan_lru_shrink_inactive.nr_reclaimed``;
- writes = ``mm_vmscan_writepage`` / ``mm_vmscan_write_folio`` split by their
  flags into file/anon × sync/async;
- a kswapd wakeup per ``mm_vmscan_kswapd_wake`` while asleep (a wake while
  awake is a *re-wakeup*); awake time runs to ``mm_vmscan_kswapd_sleep``.

Deviations from the Perl script, all deliberate: rows are sorted by
``comm-pid`` instead of hash order; a comm is taken whole (the script's regex
turns ``kworker/u8:3-1155`` into ``3-1155``); zero totals print ``0`` where the
script prints an empty string; ``--ignore-pid`` aggregates every field (the
script drops contig-dirty and re-wakeup orders and overwrites latencies of all
but the last pid of a name); a ``kswapd_sleep`` without a preceding wake is not
counted (the script adds the absolute timestamp).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from vmsim import ftrace

__all__ = ["ReclaimReport", "ReclaimReportError", "parse", "report_dict", "report_text"]


class ReclaimReportError(ftrace.TraceInputError):
    """The input is not ftrace text this report can read; the message is one line."""


# ---------------------------------------------------------------------------
# Line parsing
# ---------------------------------------------------------------------------

_END = r"(?=\s|$)"
_GFP = r"[A-Za-z0-9_|]+"
_WB_FLAGS = r"(?P<flags>[A-Z_|]+(?:\|0x[0-9a-f]+)?|0x[0-9a-f]+)"


def _fmt(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern + _END)


# Per event: the formats it may have, tried in order, as (label, regex). "legacy" is
# the script's default regex (2.6.35), "6.18" the format read on a 6.18 kernel (the
# few intermediate kernels' variants that differ only in optional keys are folded
# in), "either" a format both eras share.
_BEGIN_FORMATS = [
    ("legacy", _fmt(rf"order=(?P<order>\d+) may_writepage=\d+ gfp_flags={_GFP}")),
    ("6.18", _fmt(rf"order=(?P<order>-?\d+) gfp_flags={_GFP}")),
]
_END_FORMATS = [("either", _fmt(r"nr_reclaimed=\d+"))]
_FORMATS: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "mm_vmscan_direct_reclaim_begin": _BEGIN_FORMATS,
    "mm_vmscan_memcg_reclaim_begin": _BEGIN_FORMATS,
    "mm_vmscan_memcg_softlimit_reclaim_begin": _BEGIN_FORMATS,
    "mm_vmscan_node_reclaim_begin": [
        ("6.18", _fmt(rf"nid=\d+ order=(?P<order>-?\d+) gfp_flags={_GFP}")),
    ],
    "mm_vmscan_direct_reclaim_end": _END_FORMATS,
    "mm_vmscan_memcg_reclaim_end": _END_FORMATS,
    "mm_vmscan_memcg_softlimit_reclaim_end": _END_FORMATS,
    "mm_vmscan_node_reclaim_end": _END_FORMATS,
    "mm_vmscan_kswapd_wake": [
        ("either", _fmt(r"nid=\d+ order=(?P<order>-?\d+)")),
        ("legacy", _fmt(r"nid=\d+ zid=\d+ order=(?P<order>-?\d+)")),
    ],
    "mm_vmscan_kswapd_sleep": [("either", _fmt(r"nid=\d+"))],
    "mm_vmscan_wakeup_kswapd": [
        ("legacy", _fmt(r"nid=\d+ zid=\d+ order=(?P<order>\d+)")),
        ("6.18", _fmt(rf"nid=\d+ order=(?P<order>-?\d+) gfp_flags={_GFP}")),
    ],
    "mm_vmscan_lru_isolate": [
        (
            "legacy",
            _fmt(
                r"isolate_mode=(?P<isolate_mode>\d+) order=\d+ nr_requested=\d+ "
                r"nr_scanned=(?P<nr_scanned>\d+) nr_taken=\d+ contig_taken=\d+ "
                r"contig_dirty=(?P<contig_dirty>\d+) contig_failed=\d+"
            ),
        ),
        (
            "6.18",
            _fmt(
                r"(?:isolate_mode=\d+ )?classzone(?:_idx)?=\d+ order=-?\d+ nr_requested=\d+ "
                r"nr_scanned=(?P<nr_scanned>\d+) nr_skipped=\d+ nr_taken=\d+ "
                r"lru=(?P<lru>inactive_anon|active_anon|inactive_file|active_file|unevictable)"
            ),
        ),
    ],
    "mm_vmscan_lru_shrink_inactive": [
        (
            "legacy",
            _fmt(
                r"nid=\d+ zid=\d+ nr_scanned=-?\d+ nr_reclaimed=(?P<nr_reclaimed>-?\d+) "
                r"priority=-?\d+ flags=[A-Z_|]+"
            ),
        ),
        (
            "6.18",
            _fmt(
                r"nid=\d+ nr_scanned=-?\d+ nr_reclaimed=(?P<nr_reclaimed>-?\d+) "
                r"(?:[a-z_]+=-?\d+ )*priority=-?\d+ flags=[A-Z_|]+"
            ),
        ),
    ],
    "mm_vmscan_writepage": [
        ("legacy", _fmt(rf"page=\S+ pfn=\d+ flags={_WB_FLAGS}")),
        ("6.18", _fmt(rf"page=\S+ pfn=0x[0-9a-f]+ flags={_WB_FLAGS}")),
    ],
    "mm_vmscan_write_folio": [("6.18", _fmt(rf"page=\S+ pfn=0x[0-9a-f]+ flags={_WB_FLAGS}"))],
}

# Reclaim entry points counted as a "direct reclaim" stall of the calling task.
RECLAIM_BEGIN = {
    "mm_vmscan_direct_reclaim_begin": "direct",
    "mm_vmscan_memcg_reclaim_begin": "memcg",
    "mm_vmscan_memcg_softlimit_reclaim_begin": "softlimit",
    "mm_vmscan_node_reclaim_begin": "node",
}
RECLAIM_END = {
    "mm_vmscan_direct_reclaim_end": "direct",
    "mm_vmscan_memcg_reclaim_end": "memcg",
    "mm_vmscan_memcg_softlimit_reclaim_end": "softlimit",
    "mm_vmscan_node_reclaim_end": "node",
}
_KIND_EVENT = {kind: ev for ev, kind in RECLAIM_BEGIN.items()}
_KIND_MEANING = {
    "direct": "global direct reclaim",
    "memcg": "memcg limit reclaim",
    "softlimit": "memcg v1 soft-limit reclaim",
    "node": "node reclaim, zone_reclaim_mode",
}
_FORMAT_NAMES = {"legacy": "2.6.35", "6.18": "6.18", "either": "same in both"}
_MAX_EXAMPLES = 3


def _timestamp_to_ms(ts: str) -> float:
    """The script's timestamp_to_ms(): sec*1000 + usec/1000 (same float arithmetic)."""
    sec, _, frac = ts.partition(".")
    ms = int(sec) * 1000
    if not frac:
        return float(ms)
    if len(frac) >= 3:
        return ms + int(frac) / 10 ** (len(frac) - 3)
    return ms + int(frac) * 10 ** (3 - len(frac))


def _perl_num(x: float) -> str:
    """How Perl stringifies a number (``%.15g``)."""
    return f"{x:.15g}"


# ---------------------------------------------------------------------------
# Per-task statistics
# ---------------------------------------------------------------------------


@dataclass
class _Task:
    """What the script keeps in $perprocesspid{comm-pid}."""

    direct_begin: int = 0
    direct_perorder: Counter[int] = field(default_factory=Counter)
    wakeup_kswapd: int = 0
    wakeup_kswapd_perorder: Counter[int] = field(default_factory=Counter)
    kswapd_wake: int = 0
    kswapd_wake_perorder: Counter[int] = field(default_factory=Counter)
    kswapd_rewake: int = 0
    kswapd_rewake_perorder: Counter[int] = field(default_factory=Counter)
    nr_scanned: int = 0
    nr_reclaimed: int = 0
    contig_dirty: int = 0
    write_file_sync: int = 0
    write_anon_sync: int = 0
    write_file_async: int = 0
    write_anon_async: int = 0
    # "order-latency_in_ms" strings, as the script keeps them
    direct_latencies: list[str] = field(default_factory=list)
    kswapd_latencies: list[str] = field(default_factory=list)
    # state while reading: open reclaims (kind, begin [ms], order, counted)
    open_reclaims: list[tuple[str, float, int, bool]] = field(default_factory=list)
    kswapd_begin: float | None = None
    kswapd_order: int = 0

    def merge(self, o: _Task) -> None:
        """Adds another task's figures (``--ignore-pid``)."""
        for name in (
            "direct_begin",
            "wakeup_kswapd",
            "kswapd_wake",
            "kswapd_rewake",
            "nr_scanned",
            "nr_reclaimed",
            "contig_dirty",
            "write_file_sync",
            "write_anon_sync",
            "write_file_async",
            "write_anon_async",
        ):
            setattr(self, name, getattr(self, name) + getattr(o, name))
        self.direct_perorder.update(o.direct_perorder)
        self.wakeup_kswapd_perorder.update(o.wakeup_kswapd_perorder)
        self.kswapd_wake_perorder.update(o.kswapd_wake_perorder)
        self.kswapd_rewake_perorder.update(o.kswapd_rewake_perorder)
        self.direct_latencies += o.direct_latencies
        self.kswapd_latencies += o.kswapd_latencies

    @property
    def sync_io(self) -> int:
        return self.write_file_sync + self.write_anon_sync

    @property
    def async_io(self) -> int:
        return self.write_file_async + self.write_anon_async

    @staticmethod
    def latency_ms(entries: list[str]) -> float:
        """Σ latency [ms], parsed back from the strings as the script does."""
        return sum(float(e.split("-", 1)[1]) for e in entries)


def _task_sort_key(name: str) -> tuple[str, int, str]:
    comm, sep, pid = name.rpartition("-")
    if sep and pid.isdigit():
        return (comm, int(pid), name)
    return (name, -1, name)


# ---------------------------------------------------------------------------
# What was read, and the report
# ---------------------------------------------------------------------------


@dataclass
class ReclaimReport:
    """Everything read from one trace; ``text()`` and ``as_dict()`` render it."""

    source: str
    tasks: dict[str, _Task]
    lines: int = 0
    events: int = 0
    vmscan_events_read: int = 0
    unknown_events: Counter[str] = field(default_factory=Counter)
    formats_seen: Counter[str] = field(default_factory=Counter)
    reclaim_counted: Counter[str] = field(default_factory=Counter)
    nested_reclaims: int = 0
    unmatched_ends: int = 0
    unmatched_begins: int = 0
    sleeps_without_wake: int = 0
    not_understood: int = 0
    not_understood_examples: list[str] = field(default_factory=list)
    lost_events: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    memcg_as_direct: bool = True

    # -- rendering ---------------------------------------------------------

    def _rows(self, ignore_pid: bool) -> dict[str, _Task]:
        if not ignore_pid:
            return self.tasks
        agg: dict[str, _Task] = {}
        for name in sorted(self.tasks, key=_task_sort_key):
            comm = re.sub(r"-[0-9]*$", "", name) or "NO_PROCESS_NAME"
            agg.setdefault(comm, _Task()).merge(self.tasks[name])
        return agg

    def totals(self, ignore_pid: bool = False) -> dict[str, int | float]:
        """The Summary figures: totals over the rows of the two tables."""
        rows = self._rows(ignore_pid)
        t: Counter[str] = Counter()
        direct_ms = 0.0
        kswapd_ms = 0.0
        for name in sorted(rows, key=_task_sort_key):
            s = rows[name]
            direct_ms += _Task.latency_ms(s.direct_latencies)
            kswapd_ms += _Task.latency_ms(s.kswapd_latencies)
            t["wake_kswapd_requests_all"] += s.wakeup_kswapd
            if s.direct_begin:
                t["direct_reclaims"] += s.direct_begin
                t["wake_kswapd_requests"] += s.wakeup_kswapd
                t["direct_pages_scanned"] += s.nr_scanned
                t["direct_pages_reclaimed"] += s.nr_reclaimed
                t["direct_write_file_sync"] += s.write_file_sync
                t["direct_write_anon_sync"] += s.write_anon_sync
                t["direct_write_file_async"] += s.write_file_async
                t["direct_write_anon_async"] += s.write_anon_async
                t["direct_contig_dirty"] += s.contig_dirty
            if s.kswapd_wake:
                t["kswapd_wakeups"] += s.kswapd_wake
                t["kswapd_rewakeups"] += s.kswapd_rewake
                t["kswapd_pages_scanned"] += s.nr_scanned
                t["kswapd_pages_reclaimed"] += s.nr_reclaimed
                t["kswapd_write_file_sync"] += s.write_file_sync
                t["kswapd_write_anon_sync"] += s.write_anon_sync
                t["kswapd_write_file_async"] += s.write_file_async
                t["kswapd_write_anon_async"] += s.write_anon_async
        out: dict[str, int | float] = {k: int(t[k]) for k in _INT_KEYS}
        out["time_stalled_direct_reclaim_seconds"] = direct_ms / 1000
        out["time_kswapd_awake_seconds"] = kswapd_ms / 1000
        return out

    def derived(
        self,
        totals: dict[str, int | float],
        user_seconds: float | None = None,
        sys_seconds: float | None = None,
        elapsed_seconds: float | None = None,
    ) -> dict[str, float | int | None]:
        """The rows the seed's tables add to the script's Summary."""
        scanned = int(totals["direct_pages_scanned"]) + int(totals["kswapd_pages_scanned"])
        written = sum(int(totals[k]) for k in _WRITE_KEYS)
        stall = float(totals["time_stalled_direct_reclaim_seconds"])
        awake = float(totals["time_kswapd_awake_seconds"])
        user_sys = None
        if user_seconds is not None and sys_seconds is not None:
            user_sys = user_seconds + sys_seconds
        return {
            "total_pages_scanned": scanned,
            "total_pages_written": written,
            "pct_scanned_written": 100.0 * written / scanned if scanned else None,
            "user_seconds": user_seconds,
            "sys_seconds": sys_seconds,
            "user_sys_seconds": user_sys,
            "pct_time_direct_reclaim": (
                100.0 * stall / (user_sys + stall)
                if user_sys is not None and user_sys + stall > 0
                else None
            ),
            "elapsed_seconds": elapsed_seconds,
            "pct_time_kswapd_awake": (100.0 * awake / elapsed_seconds if elapsed_seconds else None),
        }

    def as_dict(
        self,
        ignore_pid: bool = False,
        user_seconds: float | None = None,
        sys_seconds: float | None = None,
        elapsed_seconds: float | None = None,
    ) -> dict:
        """The Summary and derived figures as snake_case keys, plus the rows and notes."""
        totals = self.totals(ignore_pid)
        d: dict = dict(totals)
        d.update(self.derived(totals, user_seconds, sys_seconds, elapsed_seconds))
        rows = self._rows(ignore_pid)
        d["processes"] = [
            {
                "process": name,
                "direct_reclaims": s.direct_begin,
                "wakeup_kswapd": s.wakeup_kswapd,
                "pages_scanned": s.nr_scanned,
                "pages_reclaimed": s.nr_reclaimed,
                "sync_io": s.sync_io,
                "async_io": s.async_io,
                "time_stalled_seconds": _Task.latency_ms(s.direct_latencies) / 1000,
                "direct_per_order": {str(o): c for o, c in sorted(s.direct_perorder.items())},
                "wakeup_per_order": {
                    str(o): c for o, c in sorted(s.wakeup_kswapd_perorder.items())
                },
                "contig_dirty": s.contig_dirty,
            }
            for name, s in sorted(rows.items(), key=lambda kv: _task_sort_key(kv[0]))
            if s.direct_begin
        ]
        d["kswapd"] = [
            {
                "process": name,
                "wakeups": s.kswapd_wake,
                "rewakeups": s.kswapd_rewake,
                "pages_scanned": s.nr_scanned,
                "pages_reclaimed": s.nr_reclaimed,
                "sync_io": s.sync_io,
                "async_io": s.async_io,
                "awake_seconds": _Task.latency_ms(s.kswapd_latencies) / 1000,
                "wake_per_order": {str(o): c for o, c in sorted(s.kswapd_wake_perorder.items())},
                "rewake_per_order": {
                    str(o): c for o, c in sorted(s.kswapd_rewake_perorder.items())
                },
            }
            for name, s in sorted(rows.items(), key=lambda kv: _task_sort_key(kv[0]))
            if s.kswapd_wake
        ]
        d["reclaim_counted_as_direct"] = {
            _KIND_EVENT[k]: self.reclaim_counted[k]
            for k in RECLAIM_BEGIN.values()
            if self.reclaim_counted[k]
        }
        d["nested_reclaims_not_counted"] = self.nested_reclaims
        d["memcg_as_direct"] = self.memcg_as_direct
        d["formats_seen"] = dict(sorted(self.formats_seen.items()))
        d["lines"] = self.lines
        d["events"] = self.events
        d["vmscan_events_read"] = self.vmscan_events_read
        d["unknown_events"] = sum(self.unknown_events.values())
        d["lines_not_understood"] = self.not_understood
        d["lost_events"] = self.lost_events
        d["unmatched_reclaim_begins"] = self.unmatched_begins
        d["unmatched_reclaim_ends"] = self.unmatched_ends
        d["kswapd_sleeps_without_wake"] = self.sleeps_without_wake
        d["trace_span_seconds"] = (
            (self.last_ts - self.first_ts) / 1000
            if self.first_ts is not None and self.last_ts is not None
            else None
        )
        d["source"] = self.source
        return d

    def text(
        self,
        ignore_pid: bool = False,
        user_seconds: float | None = None,
        sys_seconds: float | None = None,
        elapsed_seconds: float | None = None,
    ) -> str:
        """The script's report, then the seed's derived rows, then notes on the input."""
        out: list[str] = []
        w = max((len(k) for k in self.tasks), default=0) + 2
        rows = self._rows(ignore_pid)
        names = sorted(rows, key=_task_sort_key)

        if not ignore_pid:
            out.append("")
            out.append("Reclaim latencies expressed as order-latency_in_ms")
            for name in names:
                s = rows[name]
                if not s.direct_latencies and not s.kswapd_latencies:
                    continue
                lats = "".join(f"{e} " for e in s.direct_latencies + s.kswapd_latencies)
                out.append(f"{name:<{w}s} {lats}")

        out.append("")
        head = "{:<{w}s} {:>8s} {:>10s}   {:>8s} {:>8s}  {:>8s} {:>8s} {:>8s} {:>8s}"
        out.append(
            head.format(
                "Process", "Direct", "Wokeup", "Pages", "Pages", "Pages", "Pages", "Time", "", w=w
            )
        )
        out.append(
            head.format(
                "details",
                "Rclms",
                "Kswapd",
                "Scanned",
                "Rclmed",
                "Sync-IO",
                "ASync-IO",
                "Stalled",
                "",
                w=w,
            )
        )
        for name in names:
            s = rows[name]
            if not s.direct_begin:
                continue
            stall = _Task.latency_ms(s.direct_latencies) / 1000
            line = (
                f"{name:<{w}s} {s.direct_begin:8d} {s.wakeup_kswapd:10d}   "
                f"{s.nr_scanned:8d} {s.nr_reclaimed:8d}  {s.sync_io:8d} {s.async_io:8d} "
                f"{stall:8.3f}"
            )
            line += "      " + "".join(f"direct-{o}={c} " for o, c in _orders(s.direct_perorder))
            if s.wakeup_kswapd:
                line += "      " + "".join(
                    f"wakeup-{o}={c} " for o, c in _orders(s.wakeup_kswapd_perorder)
                )
            if s.contig_dirty:
                line += f"      contig-dirty={s.contig_dirty} "
            out.append(line)

        out.append("")
        khead = "{:<{w}s} {:>8s} {:>10s}   {:>8s}   {:>8s} {:>8s} {:>8s}"
        out.append(
            khead.format("Kswapd", "Kswapd", "Order", "Pages", "Pages", "Pages", "Pages", w=w)
        )
        out.append(
            khead.format(
                "Instance", "Wakeups", "Re-wakeup", "Scanned", "Rclmed", "Sync-IO", "ASync-IO", w=w
            )
        )
        for name in names:
            s = rows[name]
            if not s.kswapd_wake:
                continue
            line = (
                f"{name:<{w}s} {s.kswapd_wake:8d} {s.kswapd_rewake:10d}   "
                f"{s.nr_scanned:8d} {s.nr_reclaimed:8d}  {s.sync_io:8d} {s.async_io:8d}"
            )
            line += "      " + "".join(f"wake-{o}={c} " for o, c in _orders(s.kswapd_wake_perorder))
            if s.kswapd_rewake:
                line += "      " + "".join(
                    f"rewake-{o}={c} " for o, c in _orders(s.kswapd_rewake_perorder)
                )
            out.append(line)

        t = self.totals(ignore_pid)
        out += [
            "",
            "Summary",
            f"Direct reclaims:     \t\t\t{t['direct_reclaims']}",
            f"Direct reclaim pages scanned:\t\t{t['direct_pages_scanned']}",
            f"Direct reclaim pages reclaimed:\t\t{t['direct_pages_reclaimed']}",
            f"Direct reclaim write file sync I/O:\t{t['direct_write_file_sync']}",
            f"Direct reclaim write anon sync I/O:\t{t['direct_write_anon_sync']}",
            f"Direct reclaim write file async I/O:\t{t['direct_write_file_async']}",
            f"Direct reclaim write anon async I/O:\t{t['direct_write_anon_async']}",
            f"Wake kswapd requests:\t\t\t{t['wake_kswapd_requests']}",
            f"Time stalled direct reclaim: \t\t{t['time_stalled_direct_reclaim_seconds']:.2f}"
            " seconds",
            "",
            f"Kswapd wakeups:\t\t\t\t{t['kswapd_wakeups']}",
            f"Kswapd pages scanned:\t\t\t{t['kswapd_pages_scanned']}",
            f"Kswapd pages reclaimed:\t\t\t{t['kswapd_pages_reclaimed']}",
            f"Kswapd reclaim write file sync I/O:\t{t['kswapd_write_file_sync']}",
            f"Kswapd reclaim write anon sync I/O:\t{t['kswapd_write_anon_sync']}",
            f"Kswapd reclaim write file async I/O:\t{t['kswapd_write_file_async']}",
            f"Kswapd reclaim write anon async I/O:\t{t['kswapd_write_anon_async']}",
            f"Time kswapd awake:\t\t\t{t['time_kswapd_awake_seconds']:.2f} seconds",
        ]

        d: dict[str, int | float | None] = dict(t)
        d.update(self.derived(t, user_seconds, sys_seconds, elapsed_seconds))
        out += [
            "",
            'Derived rows (as in the tables of "Reduce writeback from page reclaim context")',
        ]
        for label, key, kind in SEED_ROWS:
            out.append(f"{label:<40s}{_fmt_value(d[key], kind):>14s}")

        out += ["", *self._notes()]
        return "\n".join(out) + "\n"

    def _notes(self) -> list[str]:
        fmts = (
            ", ".join(
                f"{_FORMAT_NAMES[k]} {self.formats_seen[k]}"
                for k in _FORMAT_NAMES
                if self.formats_seen[k]
            )
            or "none"
        )
        span = (
            f"{(self.last_ts - self.first_ts) / 1000:.6f}"
            if self.first_ts is not None and self.last_ts is not None
            else "0"
        )
        notes = [
            f"Input: {self.source}: {self.lines} lines, {self.events} events over {span} s; "
            f"{self.vmscan_events_read} reclaim events read (formats: {fmts}); "
            f"{sum(self.unknown_events.values())} other events skipped",
        ]
        counted = [
            f"{_KIND_EVENT[k]} {self.reclaim_counted[k]} ({_KIND_MEANING[k]})"
            for k in RECLAIM_BEGIN.values()
            if self.reclaim_counted[k]
        ]
        note = "Counted as direct reclaims: " + ("; ".join(counted) if counted else "none")
        if not self.memcg_as_direct:
            note += " (memcg, soft-limit and node reclaim not counted, as in the script)"
        notes.append(note)
        if self.nested_reclaims:
            notes.append(
                f"Not counted again: {self.nested_reclaims} reclaim begins inside an open "
                "reclaim of the same task or by kswapd"
            )
        if self.unmatched_ends or self.unmatched_begins or self.sleeps_without_wake:
            notes.append(
                f"Ignored: {self.unmatched_begins} reclaim begins without an end, "
                f"{self.unmatched_ends} reclaim ends without a begin, "
                f"{self.sleeps_without_wake} kswapd sleeps without a wake"
            )
        if self.lost_events:
            notes.append(f"Lost events reported by ftrace: {self.lost_events} (figures are low)")
        line = f"Lines not understood: {self.not_understood}"
        if self.not_understood_examples:
            line += " (" + "; ".join(self.not_understood_examples) + ")"
        notes.append(line)
        return notes


_INT_KEYS = (
    "direct_reclaims",
    "direct_pages_scanned",
    "direct_pages_reclaimed",
    "direct_write_file_sync",
    "direct_write_anon_sync",
    "direct_write_file_async",
    "direct_write_anon_async",
    "direct_contig_dirty",
    "wake_kswapd_requests",
    "wake_kswapd_requests_all",
    "kswapd_wakeups",
    "kswapd_rewakeups",
    "kswapd_pages_scanned",
    "kswapd_pages_reclaimed",
    "kswapd_write_file_sync",
    "kswapd_write_anon_sync",
    "kswapd_write_file_async",
    "kswapd_write_anon_async",
)
_WRITE_KEYS = tuple(k for k in _INT_KEYS if "_write_" in k)

# The rows of the seed's tables, in its order: (label, key, kind).
SEED_ROWS = (
    ("Direct reclaims", "direct_reclaims", "int"),
    ("Direct reclaim pages scanned", "direct_pages_scanned", "int"),
    ("Direct reclaim write file async I/O", "direct_write_file_async", "int"),
    ("Direct reclaim write anon async I/O", "direct_write_anon_async", "int"),
    ("Direct reclaim write file sync I/O", "direct_write_file_sync", "int"),
    ("Direct reclaim write anon sync I/O", "direct_write_anon_sync", "int"),
    ("Wake kswapd requests", "wake_kswapd_requests", "int"),
    ("Kswapd wakeups", "kswapd_wakeups", "int"),
    ("Kswapd pages scanned", "kswapd_pages_scanned", "int"),
    ("Kswapd reclaim write file async I/O", "kswapd_write_file_async", "int"),
    ("Kswapd reclaim write anon async I/O", "kswapd_write_anon_async", "int"),
    ("Kswapd reclaim write file sync I/O", "kswapd_write_file_sync", "int"),
    ("Kswapd reclaim write anon sync I/O", "kswapd_write_anon_sync", "int"),
    ("Time stalled direct reclaim (seconds)", "time_stalled_direct_reclaim_seconds", "sec"),
    ("Time kswapd awake (seconds)", "time_kswapd_awake_seconds", "sec"),
    ("Total pages scanned", "total_pages_scanned", "int"),
    ("Percentage pages scanned/written", "pct_scanned_written", "pct"),
    ("User/Sys Time Running Test (seconds)", "user_sys_seconds", "sec"),
    ("Percentage Time Spent Direct Reclaim", "pct_time_direct_reclaim", "pct"),
    ("Total Elapsed Time (seconds)", "elapsed_seconds", "sec"),
    ("Percentage Time kswapd Awake", "pct_time_kswapd_awake", "pct"),
)


def _fmt_value(v: float | int | None, kind: str) -> str:
    if v is None:
        return "n/a"
    if kind == "int":
        return str(int(v))
    if kind == "sec":
        return f"{v:.2f}"
    return f"{v:.2f}%"


def _orders(c: Counter[int]) -> list[tuple[int, int]]:
    return [(o, n) for o, n in sorted(c.items()) if n]


# ---------------------------------------------------------------------------
# Reading a trace
# ---------------------------------------------------------------------------


class _Reader:
    """Feeds lines into a ReclaimReport, the way the script's process_events() does."""

    def __init__(self, source: str, memcg_as_direct: bool) -> None:
        self.r = ReclaimReport(source=source, tasks={}, memcg_as_direct=memcg_as_direct)
        self.last_comm: dict[str, str] = {}
        self.first_bad: tuple[int, str] | None = None
        self.first_bad_vmscan: tuple[int, str] | None = None
        self.understood = 0
        self.truncated_at = 0  # the last line's number when the input ends without a newline

    def bad(self, lineno: int, why: str, vmscan: bool) -> None:
        r = self.r
        r.not_understood += 1
        if len(r.not_understood_examples) < _MAX_EXAMPLES:
            r.not_understood_examples.append(f"line {lineno}: {why}")
        if self.first_bad is None:
            self.first_bad = (lineno, why)
        if vmscan and self.first_bad_vmscan is None:
            self.first_bad_vmscan = (lineno, why)

    def line(self, lineno: int, raw: str) -> None:
        r = self.r
        r.lines += 1
        s = raw.strip()
        if not s or s.startswith("#"):
            return
        if ftrace.LONG_NUMBER_RE.search(s):
            why = f"a number of more than {ftrace.MAX_DIGITS} digits (the kernel's are 64-bit)"
            self.bad(lineno, why, vmscan="mm_vmscan_" in raw)
            return
        if ftrace.LOST_RE.match(s):
            m = ftrace.LOST_N_RE.search(s)
            r.lost_events += int(m.group(1)) if m else 0
            self.understood += 1
            return
        m = ftrace.LINE_RE.match(raw)
        if m is None:
            if "\x00" in raw or "\ufffd" in raw:
                why = "binary data, not ftrace text"
            elif s.startswith(("{", "[")):
                why = "looks like JSON, not ftrace text"
            elif self.truncated_at == lineno:
                why = "truncated line (no newline at the end of the input)"
            else:
                why = "not an ftrace event line"
            self.bad(lineno, why, vmscan="mm_vmscan_" in raw)
            return
        event = m.group("event")
        comm, pid = m.group("comm"), m.group("pid")
        if comm in ("", "<...>"):
            comm = self.last_comm.get(pid, comm)
        else:
            self.last_comm[pid] = comm
        name = f"{comm}-{pid}"
        ts = _timestamp_to_ms(m.group("ts"))
        formats = _FORMATS.get(event)
        task = r.tasks.get(name)
        if task is None:
            task = r.tasks[name] = _Task()
        r.events += 1
        if r.first_ts is None:
            r.first_ts = ts
        r.last_ts = ts
        if formats is None:
            r.unknown_events[event] += 1
            self.understood += 1
            return
        details = m.group("details")
        found = next(((lbl, fm) for lbl, rx in formats if (fm := rx.match(details))), None)
        if found is None:
            self.bad(lineno, f"{event}: fields not in a known format: {details[:60]!r}", True)
            return
        label, fm = found
        self.understood += 1
        r.vmscan_events_read += 1
        r.formats_seen[label] += 1
        self.apply(task, name, event, ts, fm)

    def apply(self, s: _Task, name: str, event: str, ts: float, fm: re.Match[str]) -> None:
        r = self.r
        if event in RECLAIM_BEGIN:
            kind = RECLAIM_BEGIN[event]
            order = int(fm.group("order"))
            for i in range(len(s.open_reclaims) - 1, -1, -1):
                if s.open_reclaims[i][0] == kind:
                    # The same kind cannot nest: the earlier begin lost its end (the
                    # script overwrites its start time the same way).
                    del s.open_reclaims[i:]
                    r.unmatched_begins += 1
                    break
            is_kswapd = s.kswapd_begin is not None or name.startswith("kswapd")
            counted = not s.open_reclaims and not is_kswapd
            if kind != "direct" and not r.memcg_as_direct:
                counted = False
            elif not counted:
                r.nested_reclaims += 1
            s.open_reclaims.append((kind, ts, order, counted))
            if counted:
                s.direct_begin += 1
                s.direct_perorder[order] += 1
                r.reclaim_counted[kind] += 1
        elif event in RECLAIM_END:
            kind = RECLAIM_END[event]
            for i in range(len(s.open_reclaims) - 1, -1, -1):
                if s.open_reclaims[i][0] == kind:
                    _, begin, order, counted = s.open_reclaims.pop(i)
                    if counted:
                        s.direct_latencies.append(f"{order}-{_perl_num(ts - begin)}")
                    break
            else:
                r.unmatched_ends += 1
        elif event == "mm_vmscan_kswapd_wake":
            order = int(fm.group("order"))
            s.kswapd_order = order
            if s.kswapd_begin is None:
                s.kswapd_wake += 1
                s.kswapd_begin = ts
                s.kswapd_wake_perorder[order] += 1
            else:
                s.kswapd_rewake += 1
                s.kswapd_rewake_perorder[order] += 1
        elif event == "mm_vmscan_kswapd_sleep":
            if s.kswapd_begin is None:
                r.sleeps_without_wake += 1
            else:
                s.kswapd_latencies.append(f"{s.kswapd_order}-{_perl_num(ts - s.kswapd_begin)}")
                s.kswapd_begin = None
        elif event == "mm_vmscan_wakeup_kswapd":
            order = int(fm.group("order"))
            s.wakeup_kswapd += 1
            s.wakeup_kswapd_perorder[order] += 1
        elif event == "mm_vmscan_lru_isolate":
            gd = fm.groupdict()
            if gd.get("isolate_mode") is not None:
                # the script: only isolate_inactive/isolate_both count as scanning
                if int(gd["isolate_mode"]) != 2:
                    s.nr_scanned += int(gd["nr_scanned"])
                s.contig_dirty += int(gd.get("contig_dirty") or 0)
            elif gd["lru"].startswith("inactive_"):
                s.nr_scanned += int(gd["nr_scanned"])
        elif event == "mm_vmscan_lru_shrink_inactive":
            s.nr_reclaimed += int(fm.group("nr_reclaimed"))
        else:  # writepage / write_folio
            flags = set(fm.group("flags").split("|"))
            file = "RECLAIM_WB_FILE" in flags
            if "RECLAIM_WB_SYNC" in flags:
                if file:
                    s.write_file_sync += 1
                else:
                    s.write_anon_sync += 1
            elif file:
                s.write_file_async += 1
            else:
                s.write_anon_async += 1

    def finish(self) -> ReclaimReport:
        r = self.r
        src = r.source
        if self.understood == 0:
            if self.first_bad is not None:
                lineno, why = self.first_bad
                raise ReclaimReportError(f"{src}: line {lineno}: {why}; no trace event parsed")
            if r.lines == 0:
                raise ReclaimReportError(f"{src}: line 1: empty input, no ftrace event lines")
            raise ReclaimReportError(
                f"{src}: line {r.lines}: only header/comment lines, no ftrace events "
                "(were the events enabled?)"
            )
        if r.vmscan_events_read == 0 and self.first_bad_vmscan is not None:
            lineno, why = self.first_bad_vmscan
            raise ReclaimReportError(
                f"{src}: line {lineno}: {why}; no reclaim event of this trace could be read"
            )
        for t in r.tasks.values():
            t.open_reclaims.clear()
        return r


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def parse(
    path_or_text: str | os.PathLike[str] | bytes,
    *,
    memcg_as_direct: bool = True,
    name: str | None = None,
) -> ReclaimReport:
    """Reads a trace: a file path (``-`` is standard input), or the trace itself as str
    (with a newline) or bytes; a file is read one line at a time.

    ``name`` is how messages call the input (default: the path, or ``<text>``).

    Raises ReclaimReportError (one line naming the file and line) if nothing in it
    is a trace event, or if it has reclaim events and none of them could be read.
    Unknown events are skipped; other unreadable lines are counted and reported.
    """
    with ftrace.lines(path_or_text, name, ReclaimReportError) as (source, lines):
        reader = _Reader(source, memcg_as_direct)
        for lineno, raw, ended in lines:
            if not ended:
                reader.truncated_at = lineno
            reader.line(lineno, raw)
    return reader.finish()


def report_text(
    path_or_text: str | os.PathLike[str] | bytes,
    *,
    ignore_pid: bool = False,
    user_seconds: float | None = None,
    sys_seconds: float | None = None,
    elapsed_seconds: float | None = None,
    memcg_as_direct: bool = True,
    name: str | None = None,
) -> str:
    """The report as ``vmsim reclaim-report`` prints it."""
    _check_seconds(user_seconds, sys_seconds, elapsed_seconds)
    return parse(path_or_text, memcg_as_direct=memcg_as_direct, name=name).text(
        ignore_pid, user_seconds, sys_seconds, elapsed_seconds
    )


def report_dict(
    path_or_text: str | os.PathLike[str] | bytes,
    *,
    ignore_pid: bool = False,
    user_seconds: float | None = None,
    sys_seconds: float | None = None,
    elapsed_seconds: float | None = None,
    memcg_as_direct: bool = True,
    name: str | None = None,
) -> dict:
    """The Summary and the seed's derived figures as snake_case keys.

    Counts are ints; ``*_seconds`` are floats (unrounded); ``pct_*`` are
    percentages (4.86 means 4.86 %) or None when their inputs are missing
    (``pct_time_direct_reclaim`` needs user and sys seconds, ``pct_time_kswapd_awake``
    the elapsed seconds; a trace holds neither). ``processes`` and ``kswapd`` hold
    the two tables' rows; the rest describes the input.
    """
    _check_seconds(user_seconds, sys_seconds, elapsed_seconds)
    return parse(path_or_text, memcg_as_direct=memcg_as_direct, name=name).as_dict(
        ignore_pid, user_seconds, sys_seconds, elapsed_seconds
    )


def _check_seconds(*values: float | None) -> None:
    for name, v in zip(("user", "sys", "elapsed"), values, strict=True):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ReclaimReportError(f"--{name}-seconds {v}: must be a finite number >= 0")
