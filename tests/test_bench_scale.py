"""`vmsim bench`'s speed at every size (python/vmsim/bench_scale.py): each case in a child
process, its figures and its own peak RSS, or a one-line reason when it cannot run."""

from __future__ import annotations

import json
import subprocess
import sys


def child(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m vmsim.bench_scale ARGS`."""
    return subprocess.run(
        [sys.executable, "-m", "vmsim.bench_scale", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_case_reports_speed_boot_and_its_own_peak_rss() -> None:
    p = child("swap-memcg")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    assert row["memory_bytes"] == 2 << 30
    assert 0 < row["boot_seconds"] <= row["wall_seconds"]
    assert row["simulated_seconds"] > 0
    speed = row["simulated_seconds"] / row["wall_seconds"]
    assert abs(row["sim_seconds_per_wall_second"] - speed) <= 1e-9 * speed
    # The child's resident set holds at least the 2 GiB machine's frame table (16 bytes a frame).
    assert row["peak_rss_bytes"] >= 16 * (2 << 30) // 4096


def test_a_machine_too_large_is_skipped_with_its_reason() -> None:
    p = child("32TiB")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    assert set(row) == {"skipped"}
    assert "32TiB" in row["skipped"] and "maximum 16TiB" in row["skipped"]


def test_no_case_name_is_a_usage_error() -> None:
    p = child()
    assert p.returncode == 2
    assert p.stderr.strip() == "usage: python -m vmsim.bench_scale NAME"


def test_peak_rss_is_the_childs_own_not_its_parents() -> None:
    # A parent holding 512 MiB when it starts the child: ru_maxrss would carry that into
    # the child across exec; the child's own peak (a 2 GiB machine) is far below it.
    code = (
        "import subprocess, sys\n"
        "hold = bytearray(512 << 20)\n"
        "for i in range(0, len(hold), 4096): hold[i] = 1\n"
        "p = subprocess.run([sys.executable, '-m', 'vmsim.bench_scale', 'swap-memcg'],"
        " capture_output=True, text=True, check=True)\n"
        "print(p.stdout)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    assert 16 * (2 << 30) // 4096 <= row["peak_rss_bytes"] < 400 << 20
