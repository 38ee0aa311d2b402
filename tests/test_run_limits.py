"""Every run ends: programs of zero-time operations repeated 10^12 times reach their time
limit in bounded wall time, `--max-wall` cuts a run with its partial results written and
exit code 3, and a time series too long to hold is refused before the run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vmsim import ScenarioError, api

ZERO_TIME_OPS = [
    '{ op = "compute", time = "0s" }',
    '{ op = "signal", name = "x" }',
    '{ op = "free" }',
    '{ op = "sleep", time = "0s" }',
    '{ op = "madvise", advice = "hugepage" }',
    '{ op = "unlink", file = "nobody-wrote-it" }',
]


def zero_time_scenario(ops: list[str], duration: str = "1s") -> str:
    return f"""
name = "zero-time"
duration = "{duration}"
[machine]
memory = "256MiB"
cpus = 2
[[task]]
name = "spin"
repeat = 1000000000000
program = [{", ".join(ops)}]
"""


@pytest.mark.parametrize("op", ZERO_TIME_OPS)
def test_a_program_of_zero_time_operations_ends(op: str) -> None:
    t0 = time.monotonic()
    r = api.run(zero_time_scenario([op]))
    assert time.monotonic() - t0 < 30
    if "compute" in op:
        # Nothing to do, however often: the task exits at once.
        assert r.summary["completed"] and r.summary["elapsed_seconds"] < 0.001
    else:
        # Each operation is a system call of 150 ns: the task is busy in the kernel
        # until the time limit.
        assert not r.summary["completed"] and r.summary["elapsed_seconds"] == 1.0
        assert 0.99 <= r.summary["sys_seconds"] <= 1.001


def test_the_issue_s_program_ends() -> None:
    # All of them in one program.
    t0 = time.monotonic()
    r = api.run(zero_time_scenario(ZERO_TIME_OPS, duration="2s"))
    assert time.monotonic() - t0 < 30
    assert r.summary["elapsed_seconds"] == 2.0 and not r.summary["completed"]


def long_scenario(tmp: Path) -> Path:
    path = tmp / "long.toml"
    path.write_text(zero_time_scenario(['{ op = "signal", name = "x" }'], "10000s"))
    return path


def test_max_wall_cuts_the_run_and_writes_the_partial_results(tmp_path: Path) -> None:
    sc = long_scenario(tmp_path)
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run", str(sc), "--max-wall", "1"]
        + ["--output-dir", str(tmp_path / "out"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert time.monotonic() - t0 < 10
    assert p.returncode == 3, p.stderr
    err = p.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("vmsim: run cut at simulated time "), err
    assert "wall-clock budget of 1 s reached (--max-wall)" in err[0]
    r = json.loads(p.stdout)
    cut = r["cut"]
    assert 0 < cut["at_seconds"] < 10000
    assert r["summary"]["elapsed_seconds"] == cut["at_seconds"]
    assert not r["summary"]["completed"]
    assert json.loads((tmp_path / "out" / "result.json").read_text())["cut"] == cut


def test_max_wall_summary_says_where_the_run_was_cut(tmp_path: Path) -> None:
    sc = long_scenario(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run", str(sc), "--max-wall", "0.5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 3
    line = p.stdout.splitlines()[2]
    assert "[cut at " in line and "wall-clock budget of 0.5 s reached]" in line, line


def test_a_run_within_its_budget_is_not_cut() -> None:
    r = api.run(zero_time_scenario(['{ op = "signal", name = "x" }'], "10ms"), max_wall=60)
    assert r.cut is None and "cut" not in r.data


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e10"])
def test_a_bad_max_wall_is_one_line(bad: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run", "--max-wall", bad],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "--max-wall" in p.stderr, p.stderr


def test_api_rejects_a_bad_max_wall() -> None:
    with pytest.raises(ScenarioError, match="max_wall"):
        api.run(max_wall=0)


def test_too_many_samples_are_refused_before_the_run() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run"]
        + ["--set", "duration=100000s", "--set", "sampling.interval=1ms"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2
    assert p.stderr == (
        "vmsim: error: scenario: --set duration: duration = 100000s sampled every "
        "sampling.interval = 1ms needs 100000001 samples; the maximum is 200000 "
        "(raise sampling.interval)\n"
    )
