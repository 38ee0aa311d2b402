"""`vmsim replay kmem`: a recording of this machine replayed against the allocator,
perf script's format, bad input and the machine-size check."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from vmsim import replay

RECORDING = Path(__file__).parent / "data" / "replay" / "kmem-files-6.18.trace.gz"
ALLOC = (
    "  python3-21132   [001] ..... 34872.{us:06d}: mm_page_alloc: page=00000000a8516e57 "
    "pfn={pfn:#x} order={order} migratetype=0 gfp_flags=GFP_KERNEL|__GFP_COMP"
)
FREE = (
    "  python3-21132   [001] ..... 34872.{us:06d}: mm_page_free: page=0000000 "
    "pfn={pfn:#x} order={order}"
)
PERF_ALLOC = (
    "         python3 21132 [001] 34872.{us:06d}: kmem:mm_page_alloc: page=0xffffea000e8088c0 "
    "pfn={pfn:#x} order={order} migratetype=0 gfp_flags=GFP_KERNEL|__GFP_COMP"
)
PERF_FREE = (
    "         python3 21132 [001] 34872.{us:06d}: kmem:mm_page_free: page=0xffffea000e8088c0 "
    "pfn={pfn:#x} order={order}"
)


def test_the_recording_replays_on_a_machine_of_its_size(cli):
    p = cli("replay", "kmem", RECORDING, "--set", "machine.memory=25GiB", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(p.stdout)["runs"]
    # The recording: 132,188 lines of one process's file creation with THP faults
    # over three minutes.
    assert r["lines"] == 132188
    assert r["allocs"] + r["failed_allocs"] == 47044
    assert r["allocs_by_order"][9] == 256, "its THP faults"
    assert r["frees"] > 0 and r["unknown_frees"] > 0
    assert r["malformed"] == 0 and r["migratetype_mismatch"] == 0
    times = [s["time_seconds"] for s in r["samples"]]
    assert times == sorted(times) and 181 < times[-1] < 183
    assert abs(r["seconds"] - times[-1]) < 1e-6 and not r["killed"]
    assert all(0 <= s["largest_free_order"] <= 10 for s in r["samples"])
    assert r["buddyinfo"].startswith("Node 0, zone      DMA ")
    assert "Number of blocks type" in r["pagetypeinfo"]


def test_a_list_of_values_replays_once_each_side_by_side(cli):
    p = cli(
        "replay",
        "kmem",
        RECORDING,
        "--set",
        "machine.memory=25GiB",
        "--set",
        "kernel.watermark_boost_factor=0,15000",
        "--interval",
        "20",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    header = p.stdout.splitlines()[2]
    assert "kernel.watermark_boost_factor=0" in header
    assert "kernel.watermark_boost_factor=15000" in header
    assert p.stdout.count("over time (") == 2


SMALL_BACKGROUND = """
[machine]
memory = "256MiB"
cpus = 2
[disk]
read_bandwidth = 2000000000
[[file]]
name = "f"
size = "512MiB"
[[task]]
name = "reader"
program = [{ op = "read", file = "f" }]
"""


def test_the_scenarios_workloads_run_beside_the_replay_with_workloads(cli, tmp_path):
    lines = [ALLOC.format(us=i * 500, pfn=0x1000 + i, order=0) for i in range(2000)]
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "bg.toml").write_text(SMALL_BACKGROUND)
    reports = []
    for extra in ([], ["--workloads"]):
        p = cli("replay", "kmem", tmp_path / "t.txt", tmp_path / "bg.toml", "--json", *extra)
        assert p.returncode == 0, p.stderr
        (r,) = json.loads(p.stdout)["runs"]
        reports.append(r)
    alone, beside = (replay.vmstat_counters(r["vmstat"]) for r in reports)
    # Alone, nothing fills the page cache; beside the reader, kswapd reclaims it.
    assert alone["pgsteal_kswapd"] == 0 and alone["nr_file_pages"] < 1000
    assert beside["pgsteal_kswapd"] > 0
    assert [r["allocs"] for r in reports] == [2000, 2000]
    p = cli("replay", "kmem", tmp_path / "t.txt", tmp_path / "bg.toml", "--workloads")
    assert p.returncode == 0, p.stderr
    assert "pgsteal_kswapd" in p.stdout and "extfrag events of the replayed allocations" in p.stdout


def test_a_machine_smaller_than_the_recording_is_refused_naming_the_memory(cli):
    p = cli("replay", "kmem", RECORDING, "--set", "machine.memory=4GiB")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1
    assert "beyond the simulated machine's 1048576 frames" in p.stderr
    assert "--set machine.memory=11GiB" in p.stderr


def test_perf_script_and_tracefs_text_replay_alike(cli, tmp_path):
    def trace(alloc: str, free: str) -> str:
        lines = [alloc.format(us=i, pfn=0x1000 + 8 * i, order=3) for i in range(200)]
        lines += [free.format(us=300 + i, pfn=0x1000 + 16 * i, order=3) for i in range(100)]
        return "\n".join(lines) + "\n"

    (tmp_path / "t.txt").write_text("# tracer: nop\n#\n" + trace(ALLOC, FREE))
    with gzip.open(tmp_path / "p.txt.gz", "wt") as f:
        f.write(trace(PERF_ALLOC, PERF_FREE))
    out = []
    for name in ("t.txt", "p.txt.gz"):
        p = cli("replay", "kmem", tmp_path / name, "--set", "machine.memory=1GiB", "--json")
        assert p.returncode == 0, p.stderr
        (r,) = json.loads(p.stdout)["runs"]
        assert (r["allocs"], r["frees"], r["allocs_by_order"][3]) == (200, 100, 200)
        assert r["samples"][-1]["held_pages"] == 800
        out.append(r["buddyinfo"])
    assert out[0] == out[1]


def test_malformed_lines_are_counted_with_their_numbers(cli, tmp_path):
    t = tmp_path / "bad.txt"
    good = ALLOC.format(us=1, pfn=0x1000, order=0)
    t.write_text(
        "\n".join(
            [
                good,
                "garbage",
                good.replace("order=0", "order=11"),
                good,
                good.replace("GFP_KERNEL", "GFP_BOGUS"),
            ]
        )
        + "\n"
    )
    p = cli("replay", "kmem", t, "--set", "machine.memory=1GiB", "--json")
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(p.stdout)["runs"]
    assert r["malformed"] == 3
    assert [n for n, _ in r["malformed_examples"]] == [2, 3, 5]
    assert r["realloc_live"] == 1, "pfn 0x1000 allocated twice without a free"
    assert p.stderr.startswith("vmsim: warning: 3 malformed lines skipped (first: line 2: ")
    assert "order=11 is above the largest order 10" in p.stderr
    assert "unknown gfp flag" in p.stderr and "GFP_BOGUS" in p.stderr


def test_replays_are_byte_identical(cli):
    outs = [
        cli(
            "replay",
            "kmem",
            RECORDING,
            "--set",
            "machine.memory=25GiB",
            "--interval",
            "5",
            timeout=300,
        ).stdout
        for _ in range(2)
    ]
    assert outs[0] == outs[1] and "allocations replayed" in outs[0]


def test_an_unreadable_trace_is_one_line_and_exit_2(cli, tmp_path):
    p = cli("replay", "kmem", tmp_path / "missing.txt")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "missing.txt: no such file" in p.stderr
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    p = cli("replay", "kmem", bad, "--set", "machine.memory=1GiB")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "could not be read to its end" in p.stderr


PEAK_RSS = """
import resource, sys
from vmsim import replay
replay.replay_kmem(sys.argv[1], None, ("machine.memory=1GiB",), 60.0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _pairs_trace(path: Path, pairs: int) -> None:
    """`pairs` allocations each freed at once, over a thousand pfns: a trace whose
    length grows while what it holds does not."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        for i in range(pairs):
            us = i * 10
            sec, us = 34872 + us // 1_000_000, us % 1_000_000
            pfn = 0x1000 + i % 1000
            f.write(ALLOC.format(us=us, pfn=pfn, order=0).replace("34872.", f"{sec}.") + "\n")
            f.write(FREE.format(us=us + 1, pfn=pfn, order=0).replace("34872.", f"{sec}.") + "\n")


def test_a_long_trace_is_read_in_constant_memory(tmp_path):
    import subprocess
    import sys

    peaks = []
    for pairs in (50_000, 500_000):
        trace = tmp_path / f"t{pairs}.txt.gz"
        _pairs_trace(trace, pairs)
        p = subprocess.run(
            [sys.executable, "-c", PEAK_RSS, str(trace)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr
        peaks.append(int(p.stdout.split()[-1]))
    # Ten times the trace (a million lines, over 100 MB of text) and the same peak: within
    # 8 MB, where reading it whole would take the text's size.
    assert peaks[1] - peaks[0] < 8 << 10, peaks
