"""The kernel's invariants hold under load: every scenario under scenarios/ (shortened)
and every reproduction (at a small scale, one run per kernel) run with
--check-invariants, which checks at every sample that every frame is in exactly one
state, the free, LRU, slab and anon counters equal their recounts, the LRU sizes equal
the lists' lengths and memcg charges balance. A broken invariant exits 70 and names it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

#: Per reproduction, the scale its checked run uses: small, a few seconds each.
REPRODUCTIONS = {
    "throttle": "0.05",
    "writeback": "0.05",
    "softlimit": "0.02",
    "fragmentation": "0.02",
    "boost": "0.01",
}


def vmsim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vmsim.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )


def test_every_reproduction_is_covered() -> None:
    from vmsim import reproduce

    assert sorted(REPRODUCTIONS) == reproduce.names()


#: Scenarios whose checked run is shorter still: each check walks every frame, and a
#: 25 GiB machine has 6.5 million.
DURATION = {"replay-background": "2s"}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_keeps_the_invariants(path: Path) -> None:
    duration = DURATION.get(path.stem, "10s")
    p = vmsim("run", str(path), "--check-invariants", "--set", f"duration={duration}", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""


@pytest.mark.parametrize("name", sorted(REPRODUCTIONS))
def test_reproduction_keeps_the_invariants(name: str, tmp_path: Path) -> None:
    p = vmsim(
        "reproduce",
        name,
        "--runs",
        "1",
        "--scale",
        REPRODUCTIONS[name],
        "--check-invariants",
        "--json",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr


def test_checking_does_not_change_the_run() -> None:
    # The checks read the state, never change it: same bytes with and without them (that
    # they catch a broken invariant is tested in crates/vmsim-core/tests/run_control.rs).
    from vmsim import api

    plain = api.run(ROOT / "scenarios" / "swap-and-dd.toml", overrides={"duration": "5s"})
    checked = api.run(
        ROOT / "scenarios" / "swap-and-dd.toml",
        overrides={"duration": "5s"},
        check_invariants=True,
    )
    assert checked.json_text == plain.json_text
