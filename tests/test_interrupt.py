"""Ctrl-C stops `vmsim run`, `vmsim reproduce` and `vmsim sweep` within a second, exits
130 and leaves no half-written file: SIGINT is sent to a real process in the middle of a
long run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vmsim import api

#: How long after SIGINT the process must be gone [s] (the engine looks every 4096 events).
DEADLINE = 2.0


def long_scenario(tmp: Path) -> Path:
    """The default scenario made to last minutes of wall time: its compile jobs repeat 100
    times over a 300 s limit."""
    text = api.default_scenario()
    longer = text.replace('duration = "20s"', 'duration = "300s"').replace(
        "repeat = 6\n", "repeat = 100\n"
    )
    assert longer.count("300s") == 1 and "repeat = 100" in longer
    path = tmp / "long.toml"
    path.write_text(longer, encoding="utf-8")
    return path


def interrupt(args: list[str], cwd: Path, after: float = 3.0) -> tuple[int, float, str]:
    """Runs `vmsim ARGS` in ``cwd``, sends SIGINT after ``after`` seconds; returns the exit
    code, the seconds from the signal to the exit, and stderr."""
    p = subprocess.Popen(
        [sys.executable, "-m", "vmsim.cli", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Python raises KeyboardInterrupt only if SIGINT is not ignored when it starts
        # (it is in a background job of a non-interactive shell).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(after)
    assert p.poll() is None, f"vmsim {' '.join(args)} ended before the signal: {p.stderr}"
    p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"vmsim {' '.join(args)} still running 30 s after SIGINT")
    return p.returncode, time.monotonic() - t0, err


def test_ctrl_c_stops_a_run_and_writes_nothing(tmp_path: Path) -> None:
    sc = long_scenario(tmp_path)
    code, took, err = interrupt(
        ["run", str(sc), "--output-dir", "out", "--trace", "trace.txt", "--plot", "p.png"],
        tmp_path,
    )
    assert code == 130, err
    assert took < DEADLINE, f"{took:.2f} s after SIGINT"
    # click ends the ^C line first, as a shell would.
    assert err.strip() == "vmsim: interrupted", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]


def test_ctrl_c_stops_a_reproduction(tmp_path: Path) -> None:
    # The whole reproduction takes far longer than the 3 s before the signal.
    code, took, err = interrupt(
        ["reproduce", "writeback", "--runs", "1", "--scale", "0.25", "--output-dir", "rep"],
        tmp_path,
    )
    assert code == 130, err
    assert took < DEADLINE, f"{took:.2f} s after SIGINT"
    assert err.strip() == "vmsim: interrupted", err
    # The runs finished before the signal are kept, each file whole; the run in progress
    # left nothing, no temporary file is left, and the summary was not written.
    rep = tmp_path / "rep"
    files = [p for p in rep.rglob("*") if p.is_file()] if rep.exists() else []
    assert not (rep / "result.json").exists() and not (rep / "report.txt").exists()
    for f in files:
        assert not f.name.startswith(".") and not f.name.endswith(".tmp"), f
        if f.suffix == ".json":
            json.loads(f.read_text())
    for run in {f.parent for f in files}:
        assert (run / "scenario.toml").is_file() and (run / "result.json").is_file(), run


def test_ctrl_c_stops_a_sweep(tmp_path: Path) -> None:
    sc = long_scenario(tmp_path)
    code, took, err = interrupt(
        ["sweep", str(sc), "--set", "kernel.mobility_grouping=true,false", "-j", "2"],
        tmp_path,
    )
    assert code == 130, err
    assert took < DEADLINE, f"{took:.2f} s after SIGINT"
    assert "interrupted: 0 of 2 runs are in sweep.parquet" in err
    # The workers are gone with their runs; no part file or temporary file is left (the
    # lock file stays by design: vmsim.sweep.store).
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".sweep.parquet.lock", "long.toml"], left
