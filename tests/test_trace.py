"""Tests of ``vmsim run --trace``: the ftrace text a run writes, and what
``vmsim reclaim-report`` reads back from it.

A swap-heavy run (tests/data/scenarios/swap_small.toml) is traced once in each
format; the trace's header and line prefixes must have the layout of a real 6.18
``/sys/kernel/tracing/trace`` (compared with /work/shared/formats/ when present),
and the reclaim report of the trace must give the totals /proc/vmstat gives for
the same run: pages scanned by kswapd and by direct reclaim (pgscan_kswapd,
pgscan_direct), pages written (pswpout) and direct reclaims (allocstall_*).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import vmsim
from vmsim import reclaim_report
from vmsim._vmsim import ScenarioError

RunCli = Callable[..., subprocess.CompletedProcess]

SWAP_SCENARIO = Path(__file__).resolve().parent / "data" / "scenarios" / "swap_small.toml"
REAL_TRACE = Path("/work/shared/formats/real-trace-dd-memcg.txt")
HEADER_LINES = 12

# trace_print_context(): "%16s-%-7d [%03d] " + 5 irq-info flags + " %5lu.%06lu: "
PREFIX_RE = re.compile(
    r"^(?P<comm>.{16})-(?P<pid>\d+ *) \[(?P<cpu>\d{3})\] (?P<flags>[.dDbN.Hhs0-9a-f]{5}) "
    r"(?P<ts> *\d+\.\d{6}): (?P<event>[a-z0-9_]+): "
)


def _normalise_header(lines: list[str]) -> list[str]:
    """The header with the entry counts and the CPU count blanked."""
    return [
        re.sub(r"#P:\d+", "#P:N", re.sub(r"\d+/\d+", "N/N", line)) if "entries-in" in line else line
        for line in lines
    ]


def _check_prefix(line: str) -> re.Match[str]:
    m = PREFIX_RE.match(line)
    assert m, f"not a 6.18 trace line: {line!r}"
    comm, pid = m.group("comm"), m.group("pid")
    assert comm.strip() and comm == comm.strip().rjust(16), f"comm not right-aligned: {line!r}"
    assert len(pid) >= 7 and pid == pid.strip().ljust(7), f"pid not left-aligned: {line!r}"
    assert len(m.group("ts")) >= 12, f"timestamp narrower than %5lu.%06lu: {line!r}"
    return m


def _assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    err = proc.stderr
    assert "Traceback" not in err and "panicked" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vmsim: error: "), lines[0]
    for needle in needles:
        assert needle.lower() in lines[0].lower(), (needle, lines[0])
    assert proc.stdout == ""
    return lines[0]


@dataclass
class TracedRun:
    trace: Path
    text: str
    vmstat: dict[str, int]
    result: dict
    report: dict


def _traced_run(cli: RunCli, out: Path, fmt: str) -> TracedRun:
    trace = out / f"{fmt}.txt"
    proc = cli("run", SWAP_SCENARIO, "--json", "--trace", trace, "--trace-format", fmt)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    rep = cli("reclaim-report", trace, "--json")
    assert rep.returncode == 0, rep.stderr
    return TracedRun(
        trace=trace,
        text=trace.read_text(encoding="utf-8"),
        vmstat=result["vmstat"],
        result=result,
        report=json.loads(rep.stdout),
    )


@pytest.fixture(scope="module")
def modern(cli: RunCli, tmp_path_factory: pytest.TempPathFactory) -> TracedRun:
    return _traced_run(cli, tmp_path_factory.mktemp("modern"), "modern")


@pytest.fixture(scope="module")
def legacy(cli: RunCli, tmp_path_factory: pytest.TempPathFactory) -> TracedRun:
    return _traced_run(cli, tmp_path_factory.mktemp("legacy"), "legacy")


def _allocstalls(v: dict[str, int]) -> int:
    return sum(v[f"allocstall_{z}"] for z in ("dma", "dma32", "normal", "movable"))


# ---------------------------------------------------------------------------
# The layout of the file
# ---------------------------------------------------------------------------


def test_the_run_swaps_and_reclaims_both_ways(modern: TracedRun) -> None:
    v = modern.vmstat
    assert modern.result["summary"]["completed"]
    assert v["oom_kill"] == 0
    assert v["pgscan_kswapd"] > 0 and v["pgscan_direct"] > 0
    assert v["pswpout"] > 0 and v["pswpin"] > 0
    assert _allocstalls(v) > 0


def test_header_is_the_real_6_18_header(modern: TracedRun) -> None:
    lines = modern.text.split("\n")
    header = lines[:HEADER_LINES]
    events = [line for line in lines[HEADER_LINES:] if line]
    assert all(line.startswith("#") for line in header), header
    assert not any(line.startswith("#") for line in events)
    assert header[2] == (
        f"# entries-in-buffer/entries-written: {len(events)}/{len(events)}   #P:2"
    ), header[2]
    assert modern.text.endswith("\n")
    if not REAL_TRACE.exists():
        pytest.skip(f"{REAL_TRACE} is not here to compare with")
    real = REAL_TRACE.read_text(encoding="utf-8").split("\n")[:HEADER_LINES]
    assert _normalise_header(header) == _normalise_header(real)


def test_every_line_has_the_6_18_prefix(modern: TracedRun) -> None:
    if REAL_TRACE.exists():
        # The checker itself accepts every line of a real recording.
        for line in REAL_TRACE.read_text(encoding="utf-8").split("\n")[HEADER_LINES:]:
            if line:
                _check_prefix(line)
    events: dict[str, int] = {}
    last_ts = -1.0
    for line in modern.text.split("\n")[HEADER_LINES:]:
        if not line:
            continue
        m = _check_prefix(line)
        events[m.group("event")] = events.get(m.group("event"), 0) + 1
        ts = float(m.group("ts"))
        assert ts >= last_ts, f"time goes backwards at {line!r}"
        last_ts = ts
        if m.group("event") == "mm_vmscan_lru_isolate":
            assert m.group("flags") == "d..1.", line
    for name in (
        "mm_vmscan_wakeup_kswapd",
        "mm_vmscan_kswapd_wake",
        "mm_vmscan_direct_reclaim_begin",
        "mm_vmscan_direct_reclaim_end",
        "mm_vmscan_lru_isolate",
        "mm_vmscan_lru_shrink_inactive",
        "mm_vmscan_write_folio",
    ):
        assert events.get(name, 0) > 0, (name, events)
    assert "mm_vmscan_writepage" not in events


def test_modern_fields_are_the_6_18_layouts(modern: TracedRun) -> None:
    text = modern.text
    assert re.search(
        r" mm_vmscan_lru_isolate: classzone=\d+ order=\d+ nr_requested=\d+ nr_scanned=\d+ "
        r"nr_skipped=\d+ nr_taken=\d+ lru=inactive_anon\n",
        text,
    )
    assert re.search(
        r" mm_vmscan_write_folio: page=[0-9a-f]{16} pfn=0x[0-9a-f]+ "
        r"flags=RECLAIM_WB_ANON\|RECLAIM_WB_ASYNC\n",
        text,
    )
    assert re.search(
        r" mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n", text
    )
    assert "may_writepage=" not in text and "isolate_mode=" not in text


# ---------------------------------------------------------------------------
# The report agrees with /proc/vmstat
# ---------------------------------------------------------------------------


def test_modern_report_totals_are_the_vmstat_counters(modern: TracedRun) -> None:
    v, rep = modern.vmstat, modern.report
    assert rep["lines_not_understood"] == 0
    assert rep["direct_pages_scanned"] == v["pgscan_direct"]
    assert rep["kswapd_pages_scanned"] == v["pgscan_kswapd"]
    assert rep["total_pages_written"] == v["pswpout"]
    assert rep["direct_write_anon_async"] + rep["kswapd_write_anon_async"] == v["pswpout"]
    assert rep["direct_reclaims"] == _allocstalls(v)
    assert (
        rep["direct_pages_reclaimed"] + rep["kswapd_pages_reclaimed"]
        == v["pgsteal_direct"] + v["pgsteal_kswapd"]
    )


def test_reclaim_report_api_reads_the_same_file(modern: TracedRun) -> None:
    assert reclaim_report.report_dict(modern.trace) == modern.report


def test_legacy_trace_uses_the_2_6_35_names_and_fields(legacy: TracedRun) -> None:
    text = legacy.text
    assert " mm_vmscan_writepage: " in text
    assert "mm_vmscan_write_folio" not in text
    assert re.search(
        r" mm_vmscan_writepage: page=[0-9a-f]{16} pfn=\d+ "
        r"flags=RECLAIM_WB_ANON\|RECLAIM_WB_ASYNC\n",
        text,
    )
    assert re.search(
        r" mm_vmscan_lru_isolate: isolate_mode=\d order=\d+ nr_requested=\d+ nr_scanned=\d+ "
        r"nr_taken=\d+ contig_taken=\d+ contig_dirty=\d+ contig_failed=\d+\n",
        text,
    )
    assert re.search(
        r" mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1 "
        r"gfp_flags=GFP_HIGHUSER_MOVABLE\n",
        text,
    )
    assert re.search(
        r" mm_vmscan_lru_shrink_inactive: nid=0 zid=\d nr_scanned=\d+ nr_reclaimed=\d+ "
        r"priority=\d+ flags=RECLAIM_WB_ANON\|RECLAIM_WB_ASYNC\n",
        text,
    )
    assert " lru=inactive_" not in text and " nr_skipped=" not in text
    assert legacy.report["formats_seen"].get("legacy", 0) > 0


def test_legacy_report_counts_writes_and_direct_reclaims_like_vmstat(legacy: TracedRun) -> None:
    v, rep = legacy.vmstat, legacy.report
    assert rep["lines_not_understood"] == 0
    assert rep["total_pages_written"] == v["pswpout"]
    assert rep["direct_reclaims"] == _allocstalls(v)


def test_legacy_report_scanned_totals_are_the_vmstat_counters(legacy: TracedRun) -> None:
    v, rep = legacy.vmstat, legacy.report
    assert rep["direct_pages_scanned"] == v["pgscan_direct"]
    assert rep["kswapd_pages_scanned"] == v["pgscan_kswapd"]


def test_both_formats_report_the_same_run(modern: TracedRun, legacy: TracedRun) -> None:
    # Tracing, in either format, does not change what is simulated.
    assert legacy.result == modern.result
    for key in ("direct_reclaims", "total_pages_written", "direct_pages_reclaimed"):
        assert legacy.report[key] == modern.report[key], key


def test_api_trace_is_what_the_cli_writes(modern: TracedRun, tmp_path: Path) -> None:
    trace = tmp_path / "api.txt"
    r = vmsim.run(SWAP_SCENARIO, trace=trace)
    assert trace.read_text(encoding="utf-8") == modern.text
    assert r.data == modern.result
    untraced = vmsim.run(SWAP_SCENARIO)
    assert untraced.json_text == r.json_text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api.txt"], "temporary files left"


# ---------------------------------------------------------------------------
# Failures leave no trace file behind
# ---------------------------------------------------------------------------


def test_failed_run_creates_no_trace_file(cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[machine]\nmemroy = "1GiB"\n', encoding="utf-8")
    trace = tmp_path / "t.txt"
    _assert_one_line_error(cli("run", bad, "--trace", trace), "memroy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]
    with pytest.raises(ScenarioError, match="memroy"):
        vmsim.run(bad, trace=trace)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_failed_run_keeps_an_existing_trace_file(cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text("an older trace\n", encoding="utf-8")
    proc = cli("run", SWAP_SCENARIO, "--trace", trace, "--set", "machine.memory=1MiB")
    _assert_one_line_error(proc, "memory")
    assert trace.read_text(encoding="utf-8") == "an older trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_trace_into_a_missing_directory_is_a_one_line_error(cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "no" / "such" / "t.txt"
    line = _assert_one_line_error(cli("run", SWAP_SCENARIO, "--trace", trace), "--trace")
    assert "does not exist" in line
    assert not (tmp_path / "no").exists()


def test_unknown_trace_format_is_rejected(cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    _assert_one_line_error(
        cli("run", SWAP_SCENARIO, "--trace", trace, "--trace-format", "perl"), "perl"
    )
    with pytest.raises(ScenarioError, match="perl"):
        vmsim.run(SWAP_SCENARIO, trace=trace, trace_format="perl")
    assert not trace.exists()


# ---------------------------------------------------------------------------
# Selecting events (--events, as set_event / trace-cmd -e)
# ---------------------------------------------------------------------------


def _event_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in text.split("\n")[HEADER_LINES:]:
        if line:
            name = _check_prefix(line).group("event")
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_default_events_are_vmscan_compaction_and_writeback(
    cli: RunCli, modern: TracedRun, tmp_path: Path
) -> None:
    trace = tmp_path / "t.txt"
    proc = cli(
        "run",
        SWAP_SCENARIO,
        "--trace",
        trace,
        "--events",
        "vmscan,compaction",
        "--events",
        "writeback",
    )
    assert proc.returncode == 0, proc.stderr
    assert trace.read_bytes() == modern.trace.read_bytes()
    assert not any(name.startswith("mm_page_") for name in _event_counts(modern.text))


def test_one_event_selected_is_all_the_trace_holds(
    cli: RunCli, modern: TracedRun, tmp_path: Path
) -> None:
    trace = tmp_path / "t.txt"
    proc = cli("run", SWAP_SCENARIO, "--trace", trace, "--events", "vmscan:mm_vmscan_kswapd_wake")
    assert proc.returncode == 0, proc.stderr
    text = trace.read_text(encoding="utf-8")
    counts = _event_counts(text)
    assert counts == {"mm_vmscan_kswapd_wake": _event_counts(modern.text)["mm_vmscan_kswapd_wake"]}
    # The lines are the default trace's lines of that event, and the header counts them.
    kept = [line for line in modern.text.split("\n") if " mm_vmscan_kswapd_wake: " in line]
    assert text.split("\n")[HEADER_LINES:-1] == kept
    assert f"entries-written: {len(kept)}/{len(kept)} " in text


def test_a_disabled_event_is_left_out(cli: RunCli, modern: TracedRun, tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    proc = cli(
        "run",
        SWAP_SCENARIO,
        "--trace",
        trace,
        "--events",
        "vmscan,compaction,writeback,!vmscan:mm_vmscan_write_folio",
    )
    assert proc.returncode == 0, proc.stderr
    counts = _event_counts(trace.read_text(encoding="utf-8"))
    want = dict(_event_counts(modern.text))
    assert want.pop("mm_vmscan_write_folio") > 0
    assert counts == want


@pytest.mark.parametrize(
    ("selector", "needle"),
    [
        ("vmscn", "'vmscn'"),
        ("vmscn:*", "'vmscn'"),
        ("kmem:mm_page_allok", "'mm_page_allok'"),
        ("kmem:mm_vmscan_kswapd_wake", "'mm_vmscan_kswapd_wake'"),
        ("vmscan,,kmem", "empty"),
    ],
)
def test_bad_event_selector_is_a_one_line_error(
    cli: RunCli, tmp_path: Path, selector: str, needle: str
) -> None:
    trace = tmp_path / "t.txt"
    _assert_one_line_error(
        cli("run", SWAP_SCENARIO, "--trace", trace, "--events", selector), needle
    )
    assert not trace.exists()


def test_events_without_a_trace_is_a_one_line_error(cli: RunCli) -> None:
    _assert_one_line_error(cli("run", SWAP_SCENARIO, "--events", "kmem"), "--events", "--trace")


def test_api_events(modern: TracedRun, tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    vmsim.run(SWAP_SCENARIO, trace=a, events="vmscan:mm_vmscan_kswapd_wake,compaction")
    vmsim.run(SWAP_SCENARIO, trace=b, events=["compaction", "mm_vmscan_kswapd_wake"])
    assert a.read_bytes() == b.read_bytes()
    counts = _event_counts(a.read_text(encoding="utf-8"))
    everything = _event_counts(modern.text)
    want = {n: c for n, c in everything.items() if n.startswith("mm_compaction_")}
    want["mm_vmscan_kswapd_wake"] = everything["mm_vmscan_kswapd_wake"]
    assert len(want) > 1
    assert counts == want
    with pytest.raises(ScenarioError, match="'nosuch'"):
        vmsim.run(SWAP_SCENARIO, trace=tmp_path / "c.txt", events="kmem:nosuch")
    with pytest.raises(ScenarioError, match="trace"):
        vmsim.run(SWAP_SCENARIO, events="kmem")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


# ---------------------------------------------------------------------------
# Every tracepoint vmsim models is emitted where the kernel emits it

# Seed-era costs: its reclaim must meet dirty pages the flushers have not queued
# (wakeup_flusher_threads, writeback_queue/exec). With the measured 6.18 write path
# the flusher keeps ahead of this writer and reclaim never wakes it.
EMIT_SCENARIO = """
duration = "8s"
costs = "seed-era"
[machine]
memory = "512MiB"
cpus = 2
swap = "256MiB"
[kernel]
thp_enabled = "never"
soft_limit_reclaim = "base"
# The flushers start late, so reclaim meets dirty pages no one queued and wakes them.
dirty_background_ratio = 50
dirty_ratio = 80
[[cgroup]]
path = "soft"
soft_limit_in_bytes = "16MiB"
[[task]]
name = "walker"
program = [ { op = "slab", cache = "dentry", objects = 600000 } ]
[[task]]
name = "dd"
cgroup = "soft"
start = "100ms"
program = [ { op = "write", file = "f", size = "200MiB" }, { op = "snapshot", name = "w" } ]
[[task]]
name = "hog"
start = "500ms"
program = [ { op = "touch", size = "400MiB" }, { op = "sleep", time = "1s" } ]
"""


def _events_in(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        m = PREFIX_RE.match(line)
        if m:
            counts[m["event"]] = counts.get(m["event"], 0) + 1
    return counts


def test_every_modelled_event_fires_where_the_kernel_fires_it(tmp_path: Path) -> None:
    scen = tmp_path / "emit.toml"
    scen.write_text(EMIT_SCENARIO)
    trace = tmp_path / "trace"
    r = vmsim.run(scen, trace=trace, events="all")
    seen = _events_in(trace)
    # kmem: every allocation and free, the zone-locked refills and per-CPU drains,
    # and the fallbacks counted by /proc/vmstat's and the result's extfrag figures.
    for ev in ("mm_page_alloc", "mm_page_free", "mm_page_alloc_zone_locked", "mm_page_pcpu_drain"):
        assert seen.get(ev, 0) > 1000, (ev, seen.get(ev))
    assert seen.get("mm_page_alloc_extfrag", 0) == r.data["fragmentation"]["extfrag_events"]
    # The shrinkers: dentries for global reclaim (and shadow nodes when they grow).
    assert seen.get("mm_shrink_slab_start", 0) > 0
    assert seen["mm_shrink_slab_start"] == seen["mm_shrink_slab_end"]
    # v1 soft-limit reclaim of the group over its soft limit.
    assert seen.get("mm_vmscan_memcg_softlimit_reclaim_begin", 0) > 0
    assert (
        seen["mm_vmscan_memcg_softlimit_reclaim_begin"]
        == seen["mm_vmscan_memcg_softlimit_reclaim_end"]
    )
    # Reading /proc/vmstat (the snapshot) computes the dirty limits.
    assert seen.get("global_dirty_state", 0) == 1
    # A work item the flushers were asked for starts (reclaim's wake-ups).
    assert seen.get("writeback_exec", 0) > 0
    assert seen.get("writeback_exec", 0) <= seen.get("writeback_queue", 0)


def test_kmem_events_are_off_unless_asked_for(tmp_path: Path) -> None:
    scen = tmp_path / "emit.toml"
    scen.write_text(EMIT_SCENARIO.replace('duration = "8s"', 'duration = "1s"'))
    trace = tmp_path / "trace"
    vmsim.run(scen, trace=trace)
    seen = _events_in(trace)
    assert not any(ev.startswith("mm_page_") for ev in seen), seen
