"""Tests of ``vmsim.reclaim_report``: trace-vmscan-postprocess.pl in Python.

The expected figures of the hand-made traces in tests/data/traces/ were counted
by hand from the trace lines (the comments say how). The report text of the two
legacy traces was also compared, byte for byte, with the output of the Perl
script itself (the torvalds/linux version, default regexes, with ``keys``
sorted), run on the same files; the only difference is that the script prints
an empty string where a total is zero because no row contributed to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from vmsim import cli
from vmsim.reclaim_report import (
    ReclaimReport,
    ReclaimReportError,
    parse,
    report_dict,
    report_text,
)

TRACES = Path(__file__).resolve().parent / "data" / "traces"
LEGACY_3_2 = TRACES / "legacy-kernel-formats-3.2.txt"
LEGACY_MIXED = TRACES / "legacy-mixed.txt"
MODERN_MIXED = TRACES / "modern-mixed.txt"
REAL_HEAD = TRACES / "real-6.18-dd-memcg-head.txt"
REAL_FULL = Path("/work/shared/formats/real-trace-dd-memcg.txt")

# KERNEL-FORMATS.md §3.2, the script's output for a synthetic legacy trace, with
# ^I written as \t. The two latency rows are in comm-pid order here (the script
# prints them in Perl hash order). legacy-kernel-formats-3.2.txt is a trace that
# produces exactly these numbers.
SECTION_3_2 = (
    "\n"
    "Reclaim latencies expressed as order-latency_in_ms\n"
    "dd-1234      0-2.89999999999418 \n"
    "kswapd0-35   0-9.5 \n"
    "\n"
    "Process        Direct     Wokeup      Pages    Pages     Pages    Pages     Time         \n"
    "details         Rclms     Kswapd    Scanned   Rclmed   Sync-IO ASync-IO  Stalled         \n"
    "dd-1234             1          1         32       30         0        0    0.003"
    "      direct-0=1       wakeup-0=1 \n"
    "\n"
    "Kswapd         Kswapd      Order      Pages      Pages    Pages    Pages\n"
    "Instance      Wakeups  Re-wakeup    Scanned     Rclmed  Sync-IO ASync-IO\n"
    "kswapd0-35          1          0         64       32         0        1      wake-0=1 \n"
    "\n"
    "Summary\n"
    "Direct reclaims:     \t\t\t1\n"
    "Direct reclaim pages scanned:\t\t32\n"
    "Direct reclaim pages reclaimed:\t\t30\n"
    "Direct reclaim write file sync I/O:\t0\n"
    "Direct reclaim write anon sync I/O:\t0\n"
    "Direct reclaim write file async I/O:\t0\n"
    "Direct reclaim write anon async I/O:\t0\n"
    "Wake kswapd requests:\t\t\t1\n"
    "Time stalled direct reclaim: \t\t0.00 seconds\n"
    "\n"
    "Kswapd wakeups:\t\t\t\t1\n"
    "Kswapd pages scanned:\t\t\t64\n"
    "Kswapd pages reclaimed:\t\t\t32\n"
    "Kswapd reclaim write file sync I/O:\t0\n"
    "Kswapd reclaim write anon sync I/O:\t0\n"
    "Kswapd reclaim write file async I/O:\t0\n"
    "Kswapd reclaim write anon async I/O:\t1\n"
    "Time kswapd awake:\t\t\t0.01 seconds\n"
)

HEADER = "# tracer: nop\n#\n"


def modern(comm_pid: str, ts: str, event: str, details: str, flags: str = ".....") -> str:
    """One trace line as a 6.18 kernel renders it (KERNEL-FORMATS.md §2.0)."""
    comm, pid = comm_pid.rsplit("-", 1)
    return f"{comm:>16s}-{int(pid):<7d} [000] {flags} {ts:>12s}: {event}: {details}\n"


def legacy(comm_pid: str, ts: str, event: str, details: str) -> str:
    """One trace line as 2.6.35 renders it (no irq-info column)."""
    comm, pid = comm_pid.rsplit("-", 1)
    return f"{comm:>16s}-{int(pid):<5d} [000] {ts:>12s}: {event}: {details}\n"


def script_part(text: str) -> str:
    """The part of the report the Perl script prints (before the seed's derived rows)."""
    return text.split("\nDerived rows", 1)[0]


# ---------------------------------------------------------------------------
# The report layout
# ---------------------------------------------------------------------------


def test_legacy_trace_gives_the_report_of_kernel_formats_3_2_byte_for_byte() -> None:
    assert script_part(report_text(LEGACY_3_2)) == SECTION_3_2


def test_report_ends_with_the_seed_rows_and_notes() -> None:
    text = report_text(LEGACY_3_2, user_seconds=1.0, sys_seconds=0.5, elapsed_seconds=3.0)
    derived = text.split("\nDerived rows", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [row[:40].rstrip() for row in derived] == [
        "Direct reclaims",
        "Direct reclaim pages scanned",
        "Direct reclaim write file async I/O",
        "Direct reclaim write anon async I/O",
        "Direct reclaim write file sync I/O",
        "Direct reclaim write anon sync I/O",
        "Wake kswapd requests",
        "Kswapd wakeups",
        "Kswapd pages scanned",
        "Kswapd reclaim write file async I/O",
        "Kswapd reclaim write anon async I/O",
        "Kswapd reclaim write file sync I/O",
        "Kswapd reclaim write anon sync I/O",
        "Time stalled direct reclaim (seconds)",
        "Time kswapd awake (seconds)",
        "Total pages scanned",
        "Percentage pages scanned/written",
        "User/Sys Time Running Test (seconds)",
        "Percentage Time Spent Direct Reclaim",
        "Total Elapsed Time (seconds)",
        "Percentage Time kswapd Awake",
    ]
    values = {row[:40].rstrip(): row[40:].strip() for row in derived}
    assert values["Total pages scanned"] == "96"  # 32 direct + 64 kswapd
    assert values["Percentage pages scanned/written"] == "1.04%"  # 1 write / 96
    assert values["User/Sys Time Running Test (seconds)"] == "1.50"
    # stall 0.0029 s / (1.5 + 0.0029) = 0.19 %; awake 0.0095 s / 3 s = 0.32 %
    assert values["Percentage Time Spent Direct Reclaim"] == "0.19%"
    assert values["Total Elapsed Time (seconds)"] == "3.00"
    assert values["Percentage Time kswapd Awake"] == "0.32%"
    assert "Counted as direct reclaims: mm_vmscan_direct_reclaim_begin 1" in text
    assert text.endswith("Lines not understood: 0\n")


def test_time_percentages_are_na_without_times() -> None:
    text = report_text(LEGACY_3_2)
    for label in (
        "User/Sys Time Running Test (seconds)",
        "Percentage Time Spent Direct Reclaim",
        "Total Elapsed Time (seconds)",
        "Percentage Time kswapd Awake",
    ):
        (row,) = [r for r in text.splitlines() if r.startswith(label)]
        assert row.split()[-1] == "n/a", row


def test_rows_are_sorted_by_comm_then_pid() -> None:
    trace = HEADER
    for comm_pid in ("zz-5", "aa-100", "aa-20"):
        trace += modern(
            comm_pid, "1.000000", "mm_vmscan_direct_reclaim_begin", "order=0 gfp_flags=GFP_KERNEL"
        )
        trace += modern(comm_pid, "1.000100", "mm_vmscan_direct_reclaim_end", "nr_reclaimed=1")
    text = report_text(trace)
    table = text.split("details", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [row.split()[0] for row in table] == ["aa-20", "aa-100", "zz-5"]
    assert report_text(trace) == text


# ---------------------------------------------------------------------------
# Counting, legacy formats (tests/data/traces/legacy-mixed.txt)
# ---------------------------------------------------------------------------


def test_legacy_mixed_counts_by_hand() -> None:
    d = report_dict(LEGACY_MIXED, user_seconds=10, sys_seconds=2, elapsed_seconds=20)
    expected = {
        # dd-100: begins at 10.000500 (order 0) and 12.000000 (order 3)
        "direct_reclaims": 2,
        # isolate_mode=1 nr_scanned=32 + isolate_mode=3 nr_scanned=16
        "direct_pages_scanned": 48,
        "direct_pages_reclaimed": 20,
        # one writepage line of each flag combination (one via "<...>-100")
        "direct_write_file_sync": 1,
        "direct_write_anon_sync": 1,
        "direct_write_file_async": 1,
        "direct_write_anon_async": 1,
        "direct_contig_dirty": 5,
        # dd-100 woke kswapd twice; cc1-200 once but it never direct-reclaimed
        "wake_kswapd_requests": 2,
        "wake_kswapd_requests_all": 3,
        # kswapd0-35 woke at 10.000000 (order 0) and 11.000000 (order 3); the wakes
        # at 10.001000 (order 2) and 10.002000 (order 0) came while it was awake
        "kswapd_wakeups": 2,
        "kswapd_rewakeups": 2,
        # isolate_mode=1 nr_scanned=100; isolate_mode=2 (active) nr_scanned=50 is rotation
        "kswapd_pages_scanned": 100,
        "kswapd_pages_reclaimed": 80,
        "kswapd_write_file_sync": 1,
        "kswapd_write_anon_sync": 0,
        "kswapd_write_file_async": 2,
        "kswapd_write_anon_async": 1,
        "total_pages_scanned": 148,
        "total_pages_written": 8,
        "user_sys_seconds": 12,
        "elapsed_seconds": 20,
        "lines_not_understood": 0,
        "unknown_events": 1,  # block_rq_issue
    }
    assert {k: d[k] for k in expected} == expected
    # 10.000500 -> 10.020500 and 12.000000 -> 12.100000: 20 ms + 100 ms
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.120)
    # 10.000000 -> 10.010000 and 11.000000 -> 11.250000: 10 ms + 250 ms
    assert d["time_kswapd_awake_seconds"] == pytest.approx(0.260)
    assert d["pct_scanned_written"] == pytest.approx(100 * 8 / 148)
    assert d["pct_time_direct_reclaim"] == pytest.approx(100 * 0.12 / 12.12)
    assert d["pct_time_kswapd_awake"] == pytest.approx(100 * 0.26 / 20)
    assert d["formats_seen"] == {"legacy": 20, "either": 8}
    (dd,) = d["processes"]
    assert dd["process"] == "dd-100"
    assert dd["direct_per_order"] == {"0": 1, "3": 1}
    (k,) = d["kswapd"]
    assert k["wake_per_order"] == {"0": 1, "3": 1}
    assert k["rewake_per_order"] == {"0": 1, "2": 1}


def test_legacy_mixed_rows_as_the_script_prints_them() -> None:
    lines = report_text(LEGACY_MIXED).splitlines()
    # the widest comm-pid is jbd2-sda1-300 (13 characters + 2)
    assert "dd-100          0-20 3-100 " in lines
    assert "kswapd0-35      0-10 3-250 " in lines
    assert (
        "dd-100                 2          2         48       20         2        2    0.120"
        "      direct-0=1 direct-3=1       wakeup-0=2       contig-dirty=5 "
    ) in lines
    assert (
        "kswapd0-35             2          2        100       80         1        3"
        "      wake-0=1 wake-3=1       rewake-0=1 rewake-2=1 "
    ) in lines


# ---------------------------------------------------------------------------
# Counting, 6.18 formats (tests/data/traces/modern-mixed.txt)
# ---------------------------------------------------------------------------


def test_modern_mixed_counts_by_hand() -> None:
    d = report_dict(MODERN_MIXED)
    expected = {
        # dd-4454: direct reclaim at 50.000100 and memcg reclaim at 51.000000;
        # sh-900: node reclaim. The soft-limit reclaim inside dd's direct reclaim
        # and the one by kswapd0-80 are not counted again.
        "direct_reclaims": 3,
        # inactive_file 64 + inactive_anon 16; the active_anon isolation (32) is rotation
        "direct_pages_scanned": 80,
        "direct_pages_reclaimed": 40,
        "direct_write_file_sync": 1,
        "direct_write_anon_sync": 0,
        "direct_write_file_async": 0,
        "direct_write_anon_async": 1,
        "wake_kswapd_requests": 1,
        "kswapd_wakeups": 1,
        "kswapd_rewakeups": 1,
        "kswapd_pages_scanned": 128,
        "kswapd_pages_reclaimed": 100,
        "kswapd_write_file_sync": 0,
        "kswapd_write_anon_sync": 1,
        "kswapd_write_file_async": 1,
        "kswapd_write_anon_async": 0,
        "total_pages_scanned": 208,
        "total_pages_written": 4,
        "nested_reclaims_not_counted": 2,
        # line 38 is an lru_isolate cut short, line 41 a timestamp cut short
        "lines_not_understood": 2,
        # mm_vmscan_throttled, writeback_start, mm_page_free
        "unknown_events": 3,
        "reclaim_counted_as_direct": {
            "mm_vmscan_direct_reclaim_begin": 1,
            "mm_vmscan_memcg_reclaim_begin": 1,
            "mm_vmscan_node_reclaim_begin": 1,
        },
        "pct_time_direct_reclaim": None,
        "pct_time_kswapd_awake": None,
    }
    assert {k: d[k] for k in expected} == expected
    # 2 ms (direct) + 5 ms (memcg) + 1 ms (node)
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.008)
    # 50.000150 -> 50.100150
    assert d["time_kswapd_awake_seconds"] == pytest.approx(0.100)
    assert d["pct_scanned_written"] == pytest.approx(100 * 4 / 208)
    assert [p["process"] for p in d["processes"]] == ["dd-4454", "sh-900"]
    assert d["kswapd"][0]["rewake_per_order"] == {"3": 1}
    text = report_text(MODERN_MIXED)
    assert "mm_vmscan_memcg_reclaim_begin 1 (memcg limit reclaim)" in text
    assert "Lines not understood: 2 (line 38: mm_vmscan_lru_isolate:" in text


def test_no_memcg_counts_only_direct_reclaim_like_the_script() -> None:
    d = report_dict(MODERN_MIXED, memcg_as_direct=False)
    assert d["direct_reclaims"] == 1
    assert [p["process"] for p in d["processes"]] == ["dd-4454"]
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.002)
    assert d["reclaim_counted_as_direct"] == {"mm_vmscan_direct_reclaim_begin": 1}


@pytest.mark.parametrize(
    ("flags", "key"),
    [
        ("RECLAIM_WB_FILE|RECLAIM_WB_SYNC", "write_file_sync"),
        ("RECLAIM_WB_ANON|RECLAIM_WB_SYNC", "write_anon_sync"),
        ("RECLAIM_WB_FILE|RECLAIM_WB_ASYNC", "write_file_async"),
        ("RECLAIM_WB_ANON|RECLAIM_WB_ASYNC", "write_anon_async"),
        ("RECLAIM_WB_MIXED|RECLAIM_WB_ASYNC", "write_anon_async"),
        ("RECLAIM_WB_NONE", "write_anon_async"),
    ],
)
@pytest.mark.parametrize("era", ["legacy", "6.18"])
def test_write_flags_classify_file_anon_sync_async(flags: str, key: str, era: str) -> None:
    if era == "legacy":
        trace = legacy(
            "dd-7",
            "5.000000",
            "mm_vmscan_direct_reclaim_begin",
            "order=0 may_writepage=1 gfp_flags=GFP_KERNEL",
        )
        trace += legacy(
            "dd-7", "5.000100", "mm_vmscan_writepage", f"page=ffffea0000001000 pfn=64 flags={flags}"
        )
        trace += legacy("kswapd0-30", "5.000200", "mm_vmscan_kswapd_wake", "nid=0 order=0")
        trace += legacy(
            "kswapd0-30",
            "5.000300",
            "mm_vmscan_writepage",
            f"page=ffffea0000001040 pfn=65 flags={flags}",
        )
    else:
        trace = modern(
            "dd-7", "5.000000", "mm_vmscan_direct_reclaim_begin", "order=0 gfp_flags=GFP_KERNEL"
        )
        trace += modern(
            "dd-7",
            "5.000100",
            "mm_vmscan_write_folio",
            f"page=00000000a1b2c3d4 pfn=0x40 flags={flags}",
        )
        trace += modern("kswapd0-30", "5.000200", "mm_vmscan_kswapd_wake", "nid=0 order=0")
        trace += modern(
            "kswapd0-30",
            "5.000300",
            "mm_vmscan_write_folio",
            f"page=00000000a1b2c3d5 pfn=0x41 flags={flags}",
        )
    d = report_dict(trace)
    for who in ("direct", "kswapd"):
        got = {
            k: d[f"{who}_{k}"]
            for k in ("write_file_sync", "write_anon_sync", "write_file_async", "write_anon_async")
        }
        assert got == {k: int(k == key) for k in got}, (who, got)


def test_kswapd_rewakeups_and_awake_time() -> None:
    t = HEADER
    t += modern("kswapd1-81", "7.000000", "mm_vmscan_kswapd_wake", "nid=1 order=0")
    t += modern("kswapd1-81", "7.100000", "mm_vmscan_kswapd_wake", "nid=1 order=2")
    t += modern("kswapd1-81", "7.200000", "mm_vmscan_kswapd_wake", "nid=1 order=2")
    t += modern("kswapd1-81", "7.500000", "mm_vmscan_kswapd_sleep", "nid=1")
    t += modern("kswapd1-81", "8.000000", "mm_vmscan_kswapd_wake", "nid=1 order=9")
    t += modern("kswapd1-81", "9.250000", "mm_vmscan_kswapd_sleep", "nid=1")
    t += modern("kswapd1-81", "9.300000", "mm_vmscan_kswapd_sleep", "nid=1")  # no wake: ignored
    d = report_dict(t)
    assert d["kswapd_wakeups"] == 2
    assert d["kswapd_rewakeups"] == 2
    assert d["kswapd"][0]["wake_per_order"] == {"0": 1, "9": 1}
    assert d["kswapd"][0]["rewake_per_order"] == {"2": 2}
    assert d["time_kswapd_awake_seconds"] == pytest.approx(0.5 + 1.25)
    assert d["kswapd_sleeps_without_wake"] == 1
    # the latency is labelled with the order of the last wake, as in the script
    assert "kswapd1-81   2-500 9-1250 " in report_text(t)


def test_direct_reclaim_latency_in_seconds() -> None:
    t = HEADER
    t += modern(
        "cc1-9", "100.000000", "mm_vmscan_direct_reclaim_begin", "order=2 gfp_flags=GFP_KERNEL"
    )
    t += modern("cc1-9", "100.250000", "mm_vmscan_direct_reclaim_end", "nr_reclaimed=32")
    t += modern("cc1-9", "101.000000", "mm_vmscan_direct_reclaim_end", "nr_reclaimed=0")  # no begin
    t += modern(
        "cc1-9", "102.000000", "mm_vmscan_direct_reclaim_begin", "order=0 gfp_flags=GFP_KERNEL"
    )
    t += modern(
        "cc1-9", "102.500000", "mm_vmscan_direct_reclaim_begin", "order=0 gfp_flags=GFP_KERNEL"
    )
    t += modern("cc1-9", "102.500001", "mm_vmscan_direct_reclaim_end", "nr_reclaimed=1")
    d = report_dict(t)
    # three begins; the second lost its end (counted, like the script, but no latency)
    assert d["direct_reclaims"] == 3
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.250001)
    assert d["processes"][0]["direct_per_order"] == {"0": 2, "2": 1}
    assert d["unmatched_reclaim_ends"] == 1
    assert d["unmatched_reclaim_begins"] == 1
    row = [r for r in report_text(t).splitlines() if r.startswith("cc1-9 ") and "direct-" in r]
    assert row and row[0].split()[7] == "0.250"


def test_ignore_pid_aggregates_by_comm() -> None:
    t = HEADER
    for pid, ts in ((10, "1"), (11, "2")):
        t += modern(
            f"dd-{pid}",
            f"{ts}.000000",
            "mm_vmscan_direct_reclaim_begin",
            "order=0 gfp_flags=GFP_KERNEL",
        )
        t += modern(
            f"dd-{pid}",
            f"{ts}.000100",
            "mm_vmscan_lru_isolate",
            "classzone=2 order=0 nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 "
            "lru=inactive_file",
        )
        t += modern(f"dd-{pid}", f"{ts}.100000", "mm_vmscan_direct_reclaim_end", "nr_reclaimed=30")
    d = report_dict(t, ignore_pid=True)
    assert [(p["process"], p["direct_reclaims"], p["pages_scanned"]) for p in d["processes"]] == [
        ("dd", 2, 64)
    ]
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.2)
    text = report_text(t, ignore_pid=True)
    assert "Reclaim latencies" not in text
    assert text.startswith("\nProcess ")


def test_other_prefix_variants_are_read() -> None:
    # tgid column (options/record-tgid), kworker comm, "<...>" comm, lost-events marker
    t = HEADER
    t += (
        "          dd-4454    (   4454) [000] .....   199.778439: "
        "mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n"
        "    kworker/u8:3-1155    [001] ...1.   199.778562: "
        "mm_vmscan_wakeup_kswapd: nid=0 order=0 gfp_flags=GFP_NOFS\n"
        "CPU:1 [LOST 12 EVENTS]\n"
        "           <...>-4454    [000] .....   199.778500: "
        "mm_vmscan_direct_reclaim_end: nr_reclaimed=1\n"
    )
    d = report_dict(t)
    assert d["direct_reclaims"] == 1
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.000061)
    assert d["wake_kswapd_requests_all"] == 1
    assert d["lost_events"] == 12
    assert d["lines_not_understood"] == 0
    assert "Lost events reported by ftrace: 12" in report_text(t)


# ---------------------------------------------------------------------------
# The seed's derived rows: their definitions reproduce the seed's own numbers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        # kernbench X86 traceonly-v6 and X86-64 traceonly-v6 of the posting
        (
            dict(
                ds=3766,
                ks=12822445,
                w=(1658, 0, 0, 0, 488806, 132832, 0, 0),
                stall=0.10,
                awake=1035.89,
                user_sys=1268.94,
                elapsed=7669.42,
            ),
            ("12826211", "4.86%", "0.01%", "13.51%"),
        ),
        (
            dict(
                ds=161635,
                ks=16194333,
                w=(16881, 2558, 24, 0, 460459, 243146, 0, 0),
                stall=19.75,
                awake=2067.45,
                user_sys=634.69,
                elapsed=6197.20,
            ),
            ("16355968", "4.42%", "3.02%", "33.36%"),
        ),
    ],
)
def test_derived_rows_match_the_seed_tables(column: dict, expected: tuple) -> None:
    keys = (
        "direct_write_file_async",
        "direct_write_anon_async",
        "direct_write_file_sync",
        "direct_write_anon_sync",
        "kswapd_write_file_async",
        "kswapd_write_anon_async",
        "kswapd_write_file_sync",
        "kswapd_write_anon_sync",
    )
    totals = dict(zip(keys, column["w"], strict=True))
    totals.update(
        direct_pages_scanned=column["ds"],
        kswapd_pages_scanned=column["ks"],
        time_stalled_direct_reclaim_seconds=column["stall"],
        time_kswapd_awake_seconds=column["awake"],
    )
    r = ReclaimReport(source="seed", tasks={})
    d = r.derived(
        totals, user_seconds=column["user_sys"], sys_seconds=0.0, elapsed_seconds=column["elapsed"]
    )
    got = (
        str(d["total_pages_scanned"]),
        f"{d['pct_scanned_written']:.2f}%",
        f"{d['pct_time_direct_reclaim']:.2f}%",
        f"{d['pct_time_kswapd_awake']:.2f}%",
    )
    assert got == expected


# ---------------------------------------------------------------------------
# The real 6.18 recording (cgroup-v1 memcg reclaim of dd, KERNEL-FORMATS.md §2.5)
# ---------------------------------------------------------------------------


def test_real_recording_head_counts() -> None:
    # The first 251 lines of real-trace-dd-memcg.txt (4 memcg reclaim cycles of dd-4454).
    # Verified with:
    #   awk '/mm_vmscan_lru_isolate:/ {match($0,/nr_scanned=[0-9]+/);
    #                                  s+=substr($0,RSTART+11,RLENGTH-11)}
    #        /mm_vmscan_lru_shrink_inactive:/ {match($0,/nr_reclaimed=[0-9]+/);
    #                                          r+=substr($0,RSTART+13,RLENGTH-13)}
    #        /memcg_reclaim_begin:/ {b++; t=$4; sub(":","",t); bt=t}
    #        /memcg_reclaim_end:/ {t=$4; sub(":","",t); lat+=t-bt}
    #        END {print b, s, r, lat}' FILE          -> 4 1536 1024 0.007473
    #   grep -vc '^#' FILE -> 239 events; grep -c mm_vmscan_write FILE -> 0
    d = report_dict(REAL_HEAD)
    assert d["direct_reclaims"] == 4
    assert d["direct_pages_scanned"] == 1536
    assert d["direct_pages_reclaimed"] == 1024
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.007473)
    assert d["total_pages_written"] == 0
    assert d["events"] == 239
    # 4 begin + 4 end + 6 lru_isolate + 6 lru_shrink_inactive (2 mm_vmscan_throttled skipped)
    assert d["vmscan_events_read"] == 20
    assert d["lines_not_understood"] == 0
    assert d["reclaim_counted_as_direct"] == {"mm_vmscan_memcg_reclaim_begin": 4}


@pytest.mark.skipif(not REAL_FULL.exists(), reason="the shared real recording is not present")
def test_real_recording_parses_and_counts() -> None:
    # Verified independently with the awk program above, per comm-pid ($1):
    #   dd-4454 begins=777 scanned=250624 reclaimed=198912 stall=0.179825
    #   dd-4476 begins=518 scanned=260353 reclaimed=260353 stall=0.033023
    # and grep -c mm_vmscan_write -> 0. The scanned/reclaimed totals equal the
    # /proc/vmstat deltas of the run (pgscan_file +510977, pgsteal_file +459265).
    d = report_dict(REAL_FULL)
    assert d["direct_reclaims"] == 1295
    assert d["direct_pages_scanned"] == 510977
    assert d["direct_pages_reclaimed"] == 459265
    assert d["total_pages_written"] == 0
    assert d["time_stalled_direct_reclaim_seconds"] == pytest.approx(0.212848, abs=1e-6)
    assert [
        (p["process"], p["direct_reclaims"], p["pages_scanned"], p["pages_reclaimed"])
        for p in d["processes"]
    ] == [("dd-4454", 777, 250624, 198912), ("dd-4476", 518, 260353, 260353)]
    assert d["kswapd_wakeups"] == 0 and d["wake_kswapd_requests_all"] == 0
    assert d["events"] == 15137
    assert d["vmscan_events_read"] == 1750 + 1750 + 1295 + 1295
    assert d["lines_not_understood"] == 0
    assert d["formats_seen"] == {"6.18": 1750 + 1750 + 1295, "either": 1295}
    assert d["reclaim_counted_as_direct"] == {"mm_vmscan_memcg_reclaim_begin": 1295}


# ---------------------------------------------------------------------------
# Corrupt input
# ---------------------------------------------------------------------------


def one_line_error(src: object) -> str:
    with pytest.raises(ReclaimReportError) as e:
        parse(src)  # type: ignore[arg-type]
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_empty_input_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.txt"
    p.write_text("")
    assert one_line_error(p) == f"{p}: line 1: empty input, no ftrace event lines"
    assert "line 1" in one_line_error("")


def test_header_only_is_an_error() -> None:
    msg = one_line_error(HEADER + "#           TASK-PID     CPU#\n")
    assert msg.startswith("<text>: line 3: only header/comment lines")


def test_binary_junk_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "junk.bin"
    p.write_bytes(bytes(range(256)) * 8)
    msg = one_line_error(p)
    assert msg.startswith(f"{p}: line 1: binary data")
    dat = tmp_path / "trace.dat"
    dat.write_bytes(b"\x17\x08\x44tracing6\x00\x00\x00")
    assert "trace-cmd report" in one_line_error(dat)


def test_text_that_is_not_a_trace_is_an_error() -> None:
    assert (
        one_line_error("hello\nworld\n")
        == "<text>: line 1: not an ftrace event line; no trace event parsed"
    )
    assert "JSON" in one_line_error('{"summary": {}}\n')


def test_truncated_single_line_is_an_error() -> None:
    msg = one_line_error(HEADER + "              dd-4454    [000] .....   199.77")
    assert msg.startswith("<text>: line 3: truncated line")


def test_known_events_that_all_fail_to_parse_are_an_error() -> None:
    t = HEADER + modern("dd-1", "1.000000", "mm_vmscan_lru_isolate", "classzone=4 order=0 nr_req")
    t += modern("dd-1", "1.000100", "sched_switch", "prev_comm=dd prev_pid=1")
    msg = one_line_error(t)
    assert msg.startswith("<text>: line 3: mm_vmscan_lru_isolate: fields not in a known format")


def test_one_bad_line_among_good_ones_is_counted_not_fatal() -> None:
    good = LEGACY_3_2.read_text()
    d = report_dict(good + "\x00\x01\x02 junk\n" + good.splitlines()[-1][:40])
    assert d["lines_not_understood"] == 2
    assert d["direct_reclaims"] == 1


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert one_line_error(tmp_path / "nope.txt") == f"{tmp_path / 'nope.txt'}: no such file"
    assert "is a directory" in one_line_error(tmp_path)


def test_text_and_bytes_input_equal_the_file() -> None:
    by_path = report_dict(LEGACY_MIXED)
    by_text = report_dict(LEGACY_MIXED.read_text())
    by_bytes = report_dict(LEGACY_MIXED.read_bytes())
    for d in (by_text, by_bytes):
        d.pop("source")
    by_path.pop("source")
    assert by_path == by_text == by_bytes


def test_bad_seconds_are_rejected() -> None:
    with pytest.raises(ReclaimReportError, match="--elapsed-seconds"):
        report_dict(LEGACY_3_2, elapsed_seconds=-1.0)


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        cli.main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "reclaim-report", str(LEGACY_3_2))
    assert (code, err) == (0, "")
    assert out == report_text(LEGACY_3_2)
    assert script_part(out) == SECTION_3_2


def test_cli_json_and_times(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(
        capsys,
        "reclaim-report",
        str(LEGACY_MIXED),
        "--json",
        "--user-seconds",
        "10",
        "--sys-seconds",
        "2",
        "--elapsed-seconds",
        "20",
    )
    assert (code, err) == (0, "")
    d = json.loads(out)
    assert d["direct_reclaims"] == 2
    assert d["pct_time_kswapd_awake"] == pytest.approx(1.3)
    code, out, _ = run_main(capsys, "reclaim-report", str(LEGACY_MIXED), "--json", "--ignore-pid")
    assert code == 0 and json.loads(out)["processes"][0]["process"] == "dd"


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("missing", "no such file"),
        ("directory", "is a directory"),
        ("binary", "binary data"),
        ("empty", "empty input"),
        ("garbage", "not an ftrace event line"),
    ],
)
def test_cli_errors_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, needle: str
) -> None:
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\x00\xff" * 100)
    elif kind == "empty":
        path.write_text("")
    elif kind == "garbage":
        path.write_text("Reclaim latencies expressed as order-latency_in_ms\n")
    code, out, err = run_main(capsys, "reclaim-report", str(path))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("vmsim: error: ") and needle in err, err
    assert str(path) in err


def test_cli_bad_seconds_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "reclaim-report", str(LEGACY_3_2), "--sys-seconds", "-3")
    assert code == 2 and err.startswith("vmsim: error: --sys-seconds -3.0") and err.count("\n") == 1


def test_cli_reads_stdin_as_a_subprocess() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "reclaim-report", "-"],
        input=LEGACY_3_2.read_text(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert script_part(proc.stdout) == SECTION_3_2
    proc = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "reclaim-report", "-"],
        input="garbage\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr
        == "vmsim: error: <stdin>: line 1: not an ftrace event line; no trace event parsed\n"
    )


def test_a_number_longer_than_64_bits_is_a_line_not_understood() -> None:
    """A run of more than 20 digits is no kernel number: the line is counted as not
    understood (int() of 5000 digits would raise), the good lines are still read."""
    digits = "9" * 5000
    text = (
        "dd-100 [000] .... 1.0: mm_vmscan_direct_reclaim_begin: "
        f"order={digits} gfp_flags=GFP_KERNEL\n"
        "dd-100 [000] .... 1.0: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n"
        "dd-100 [000] .... 2.0: mm_vmscan_direct_reclaim_end: nr_reclaimed=1\n"
    )
    d = report_dict(text)
    assert d["lines_not_understood"] == 1
    assert d["direct_reclaims"] == 1
