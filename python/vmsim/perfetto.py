"""`vmsim run --perfetto FILE`: a run as a timeline that Perfetto's UI (ui.perfetto.dev,
or any Chrome trace viewer) opens: Chrome's JSON trace-event format.

Built from three things a run gives: the engine's timeline (every task's changes of
scheduling state, the zones' counters at every sample; ``api.run(timeline=FILE)``), the
ftrace text of its tracepoints (vmscan, compaction, writeback, as ``vmsim run --trace``
writes them) and its result's time series.

* **State lanes**: one thread per task and per kernel thread (``comm-pid state``) whose
  slices are its states: ``running``, ``runnable``, ``sleeping``, ``throttled``
  (reclaim_throttle, balance_dirty_pages, congestion_wait, the memory.high penalty, the
  reclaimer limit), ``io_wait``, and, where it runs inside one of the spans below, the
  span's name (``direct reclaim``, ``compaction``, ``memcg reclaim``, ...).
* **Span tracks**: one thread per task or kernel thread (``comm-pid``) that appears in the
  trace, in two processes: "tasks" and "kernel threads" (kswapd*, kcompactd*, the
  flusher, jbd2), carrying:
* **Spans** (complete events): each direct reclaim
  (``mm_vmscan_direct_reclaim_begin``/``_end``; nr_reclaimed as an argument), memcg
  and soft-limit reclaim, each compaction run (``mm_compaction_begin``/``_end``;
  mode and status), each balance_pgdat() run of kswapd (from its
  ``mm_vmscan_kswapd_wake`` to its next wake or ``_sleep``) and each run of
  kcompactd, each shrinker call (``mm_shrink_slab_start``/``_end``), each
  reclaim throttle (``mm_vmscan_throttled``: its usec_delayed from the event on, as
  vmsim stamps the event when the task goes to sleep, the kernel when it wakes) and each
  dirty-page pause (``balance_dirty_pages``: the pause after it).
* **Instants**: wakeups of kswapd and kcompactd, and direct compaction tries, on the
  waker's track.
* **Counters**: process "memory": free pages, the min/low/high watermarks (boost
  included, summed over zones) and the boost at every sample; dirty and writeback
  pages at every sample and at every ``global_dirty_state`` event, and their sum (the
  kernel's ``gdtc->dirty``) at every ``balance_dirty_pages``. One process per zone
  ("zone N Name"): its free pages, watermarks, boost and free pages of each migratetype
  at every sample.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from vmsim import atomic, ftrace

__all__ = ["PerfettoError", "KERNEL_THREADS", "build", "write"]

#: Comm prefixes of kernel threads.
KERNEL_THREADS = ("kswapd", "kcompactd", "kworker", "flush-", "writeback", "jbd2")
PID_COUNTERS, PID_TASKS, PID_KTHREADS = 1, 2, 3
#: Processes of the zones' counters: PID_ZONES + the zone's index among populated zones.
PID_ZONES = 10
#: A task's state lane is thread STATE_TID + its pid (its span track is its pid).
STATE_TID = 1_000_000
#: Spans that name the state of a task running inside them, innermost first.
WORK_STATES = (
    "compaction",
    "direct reclaim",
    "memcg reclaim",
    "memcg soft-limit reclaim",
    "node reclaim",
)
_FIELD = re.compile(r"(\w+)=([^\s,]*)")

#: begin event -> (end event, span name, category).
PAIRS = {
    "mm_vmscan_direct_reclaim_begin": ("mm_vmscan_direct_reclaim_end", "direct reclaim"),
    "mm_vmscan_memcg_reclaim_begin": ("mm_vmscan_memcg_reclaim_end", "memcg reclaim"),
    "mm_vmscan_memcg_softlimit_reclaim_begin": (
        "mm_vmscan_memcg_softlimit_reclaim_end",
        "memcg soft-limit reclaim",
    ),
    "mm_vmscan_node_reclaim_begin": ("mm_vmscan_node_reclaim_end", "node reclaim"),
    "mm_compaction_begin": ("mm_compaction_end", "compaction"),
    "mm_shrink_slab_start": ("mm_shrink_slab_end", "shrink_slab"),
}
#: Events that start a span lasting until the thread's next event of the same set: a
#: kswapd wake is one balance_pgdat() run (pageoutrun), lasting until kswapd wakes for
#: the next one or goes to sleep; kcompactd's likewise.
CHAINS = {
    "mm_vmscan_kswapd_wake": ("balance_pgdat", ("mm_vmscan_kswapd_sleep",)),
    "mm_compaction_kcompactd_wake": ("kcompactd_do_work", ("mm_compaction_kcompactd_sleep",)),
}
INSTANTS = {
    "mm_vmscan_wakeup_kswapd": "wake kswapd",
    "mm_compaction_wakeup_kcompactd": "wake kcompactd",
    "mm_compaction_try_to_compact_pages": "try_to_compact_pages",
}


class PerfettoError(ftrace.TraceInputError):
    """A trace that cannot become a Perfetto timeline; one line."""


def fields(details: str) -> dict[str, str]:
    """The ``key=value`` fields of an event's text."""
    return {k: v for k, v in _FIELD.findall(details)}


def _us(seconds: float) -> int:
    """Microseconds of a trace timestamp (ftrace prints them to the microsecond)."""
    return round(seconds * 1e6)


def _args(f: Mapping[str, str]) -> dict[str, Any]:
    """Span arguments: numbers as numbers."""
    out: dict[str, Any] = {}
    for k, v in f.items():
        out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def _is_kthread(comm: str) -> bool:
    """Whether a trace's comm names a kernel thread."""
    return comm.startswith(KERNEL_THREADS)


def _trace_events(lines: Iterable[ftrace.TraceLine], end_us: int) -> Iterator[dict[str, Any]]:
    """Spans and instants of the trace's lines, tracks named as they first appear."""
    named: set[int] = set()
    open_: dict[tuple[int, str], list[tuple[int, dict[str, str]]]] = {}
    ends = {end: (begin, name) for begin, (end, name) in PAIRS.items()}
    chain_ends = {e: w for w, (_, es) in CHAINS.items() for e in (w, *es)}
    running: dict[tuple[int, str], tuple[int, dict[str, str]]] = {}
    where: dict[int, int] = {}
    asleep_until: dict[int, int] = {}
    for ln in lines:
        pid = PID_KTHREADS if _is_kthread(ln.comm) else PID_TASKS
        where[ln.pid] = pid
        if ln.pid not in named:
            named.add(ln.pid)
            yield {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": ln.pid,
                "args": {"name": f"{ln.comm}-{ln.pid}"},
            }
            yield {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": ln.pid,
                "args": {"sort_index": 2 * ln.pid + 1},
            }
        ts = _us(ln.seconds)
        f = fields(ln.details)
        if ln.event in chain_ends:
            wake = chain_ends[ln.event]
            prev = running.pop((ln.pid, wake), None)
            if prev is not None:
                yield _span(CHAINS[wake][0], pid, ln.pid, prev[0], ts, _args(prev[1]))
            if ln.event == wake:
                running[(ln.pid, wake)] = (ts, f)
        elif ln.event in PAIRS:
            open_.setdefault((ln.pid, ln.event), []).append((ts, f))
        elif ln.event in ends:
            begin, name = ends[ln.event]
            stack = open_.get((ln.pid, begin))
            if stack:
                t0, f0 = stack.pop()
                yield _span(name, pid, ln.pid, t0, ts, {**_args(f0), **_args(f)})
        elif ln.event == "mm_vmscan_throttled":
            # vmsim stamps the event when the task goes to sleep (the kernel when it wakes);
            # a task's sleeps follow one another.
            delayed = int(f.get("usect_delayed", f.get("usec_delayed", "0")) or 0)
            t0 = max(ts, asleep_until.get(ln.pid, 0))
            t1 = min(t0 + delayed, max(end_us, t0))
            asleep_until[ln.pid] = t1
            yield _span("reclaim throttled", pid, ln.pid, t0, t1, _args(f))
        elif ln.event == "balance_dirty_pages":
            # The kernel's gdtc->dirty: file dirty plus writeback pages.
            yield _counter("nr_dirty + nr_writeback", ts, int(f.get("dirty", "0") or 0))
            pause_ms = int(f.get("pause", "0") or 0)
            if pause_ms > 0:
                # A pause still running when the run ended stops there.
                t1 = min(ts + 1000 * pause_ms, max(end_us, ts))
                yield _span("balance_dirty_pages pause", pid, ln.pid, ts, t1, _args(f))
        elif ln.event == "global_dirty_state":
            for key, name in (("dirty", "nr_dirty"), ("writeback", "nr_writeback")):
                if key in f:
                    yield _counter(name, ts, int(f[key]))
        elif ln.event in INSTANTS:
            yield {
                "ph": "i",
                "s": "t",
                "name": INSTANTS[ln.event],
                "pid": pid,
                "tid": ln.pid,
                "ts": ts,
                "args": _args(f),
            }
    # What was still going on when the run ended.
    for (tid, wake), (t0, f0) in sorted(running.items()):
        yield _span(
            CHAINS[wake][0], where[tid], tid, t0, max(end_us, t0), {**_args(f0), "unfinished": 1}
        )
    for (tid, begin), stack in sorted(open_.items()):
        for t0, f0 in stack:
            name = PAIRS[begin][1]
            yield _span(name, where[tid], tid, t0, max(end_us, t0), {**_args(f0), "unfinished": 1})


def _span(name: str, pid: int, tid: int, t0: int, t1: int, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "ph": "X",
        "name": name,
        "cat": "mm",
        "pid": pid,
        "tid": tid,
        "ts": t0,
        "dur": max(t1 - t0, 0),
        "args": args,
    }


def _counter(name: str, ts: float, value: float, pid: int = PID_COUNTERS) -> dict[str, Any]:
    """A counter sample [pages] of process ``pid``."""
    return {"ph": "C", "name": name, "pid": pid, "ts": ts, "args": {"pages": value}}


def _ns_us(ns: int) -> float:
    """Microseconds of engine nanoseconds, exact to the nanosecond."""
    return ns / 1000


def _timeline_counters(tl: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every sample's dirty and writeback pages, and each zone's free pages, watermarks,
    boost and free pages per migratetype."""
    times = [_ns_us(t) for t in tl["time_ns"]]
    for i, us in enumerate(times):
        yield _counter("nr_dirty", us, tl["nr_dirty"][i])
        yield _counter("nr_writeback", us, tl["nr_writeback"][i])
    for zi, z in enumerate(tl["zones"]):
        pid = PID_ZONES + zi
        for i, us in enumerate(times):
            yield _counter("free", us, z["free"][i], pid)
            for j, name in enumerate(("min", "low", "high")):
                yield _counter(f"watermark {name}", us, z["watermarks"][i][j], pid)
            yield _counter("watermark_boost", us, z["boost"][i], pid)
            for mt, pages in zip(tl["migratetypes"], z["free_by_migratetype"][i], strict=True):
                yield _counter(f"free {mt}", us, pages, pid)


def _lanes(tl: Mapping[str, Any], end_ns: int) -> dict[int, list[tuple[int, int, str]]]:
    """Each task's (start, end, state) slices [ns] from the engine's changes of state, up
    to the run's end, or to where the changes reached their maximum; a change earlier
    than the ones before it (an OOM kill during a sleep) cancels them."""
    names = tl["states"]
    if tl.get("changes_full_at") is not None:
        end_ns = min(end_ns, int(tl["changes_full_at"]))
    changes: dict[int, list[tuple[int, int]]] = {}
    for t, tid, st in tl["changes"]:
        lane = changes.setdefault(tid, [])
        while lane and lane[-1][0] > t:
            lane.pop()
        lane.append((t, st))
    out: dict[int, list[tuple[int, int, str]]] = {}
    for tid, lane in changes.items():
        slices = []
        for (t0, st), (t1, _) in zip(lane, [*lane[1:], (end_ns, -1)], strict=True):
            t1 = min(t1, end_ns)
            if names[st] != "dead" and t1 > t0:
                slices.append((t0, t1, names[st]))
        out[tid] = slices
    return out


def _work_spans(events: list[dict[str, Any]]) -> dict[int, list[tuple[int, int, str]]]:
    """Each thread's spans that name a state (WORK_STATES) as (start, end, name) [ns],
    by start."""
    out: dict[int, list[tuple[int, int, str]]] = {}
    for e in events:
        if e["ph"] == "X" and e["name"] in WORK_STATES:
            t0 = e["ts"] * 1000
            out.setdefault(e["tid"], []).append((t0, t0 + e["dur"] * 1000, e["name"]))
    for spans in out.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    return out


def _overlay(
    slices: list[tuple[int, int, str]], work: list[tuple[int, int, str]]
) -> Iterator[tuple[int, int, str]]:
    """The state slices, with each stretch of ``running`` inside a work span renamed
    after the innermost such span (the latest begun)."""
    i = 0
    active: list[tuple[int, int, str]] = []
    for t0, t1, state in slices:
        if state != "running":
            yield t0, t1, state
            continue
        while i < len(work) and work[i][0] < t1:
            active.append(work[i])
            i += 1
        active = [w for w in active if w[1] > t0]
        cuts = sorted({t0, t1, *(x for w in active for x in w[:2] if t0 < x < t1)})
        for a, b in zip(cuts, cuts[1:], strict=False):
            inside = [w for w in active if w[0] <= a and w[1] >= b]
            yield a, b, max(inside, key=lambda w: w[0])[2] if inside else "running"


def _state_lanes(
    tl: Mapping[str, Any], events: list[dict[str, Any]], end_ns: int
) -> Iterator[dict[str, Any]]:
    """A named thread per task holding its state slices."""
    work = _work_spans(events)
    for tid, slices in sorted(_lanes(tl, end_ns).items()):
        pid, comm, kthread = tl["tasks"][tid]
        proc = PID_KTHREADS if kthread else PID_TASKS
        lane = STATE_TID + pid
        yield {
            "ph": "M",
            "name": "thread_name",
            "pid": proc,
            "tid": lane,
            "args": {"name": f"{comm}-{pid} state"},
        }
        yield {
            "ph": "M",
            "name": "thread_sort_index",
            "pid": proc,
            "tid": lane,
            "args": {"sort_index": 2 * pid},
        }
        for t0, t1, state in _overlay(slices, work.get(pid, [])):
            yield {
                "ph": "X",
                "name": state,
                "cat": "state",
                "pid": proc,
                "tid": lane,
                "ts": _ns_us(t0),
                "dur": _ns_us(t1 - t0),
            }


def _series_counters(result: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Counter samples of the run's time series: free pages, watermarks, boost."""
    ts = result["timeseries"]
    free = ts["vmstat"].get("nr_free_pages", [])
    for i, t in enumerate(ts["time_seconds"]):
        us = _us(t)
        if i < len(free):
            yield _counter("nr_free_pages", us, free[i])
        for j, name in enumerate(("min", "low", "high")):
            yield _counter(f"watermark {name}", us, ts["watermarks"][i][j])
        yield _counter("watermark_boost", us, ts["watermark_boost"][i])


def _zone_name(z: Mapping[str, Any]) -> str:
    """A zone as /proc/zoneinfo names it."""
    return f"zone {z['node']} {z['zone']}"


def _metadata(timeline: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Names and order of the processes: memory, tasks, kernel threads, then the zones."""
    out = []
    procs = [
        (PID_COUNTERS, "memory (summed over zones)"),
        (PID_TASKS, "tasks"),
        (PID_KTHREADS, "kernel threads"),
    ]
    if timeline is not None:
        procs += [(PID_ZONES + i, _zone_name(z)) for i, z in enumerate(timeline["zones"])]
    for pid, name in procs:
        out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        out.append(
            {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}
        )
    return out


def build(
    result: Mapping[str, Any], trace: str | Path, timeline: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Chrome JSON trace of a run: ``result`` (``Result.data``), the ftrace text
    file it wrote (modern format) and its timeline (``api.run(timeline=FILE)``'s JSON),
    when there is one. Raises PerfettoError for a trace that is not one."""
    end_us = _us(float(result["summary"]["elapsed_seconds"]))
    with ftrace.lines(trace, error=PerfettoError) as (_, numbered):
        parsed = (ftrace.parse_line(text) for _, text, _ in numbered)
        events = list(_trace_events((p for p in parsed if p is not None), end_us))
    extra: list[dict[str, Any]] = []
    if timeline is not None:
        end_ns = round(float(result["summary"]["elapsed_seconds"]) * 1e9)
        extra = list(_timeline_counters(timeline)) + list(_state_lanes(timeline, events, end_ns))
    return {
        "traceEvents": _metadata(timeline) + list(_series_counters(result)) + extra + events,
        "displayTimeUnit": "ms",
        "otherData": {
            "vmsim_version": result.get("vmsim_version"),
            "scenario": result.get("scenario"),
            "kernel": result.get("kernel"),
            "seed": result.get("seed"),
        },
    }


def write(
    result: Mapping[str, Any],
    trace: str | Path,
    path: str | Path,
    timeline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds the trace and writes it to ``path`` whole or not at all; returns it."""
    doc = build(result, trace, timeline)
    atomic.write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")
    return doc
