"""Hostile scenarios: every one is refused with one line naming the problem and exit 2.

Each file of tests/data/hostile/ is one scenario whose first line says what the
message must contain (``# expect: …``); ``vmsim run FILE`` must exit 2 with exactly
one line on stderr, no traceback and no Rust panic, before anything is allocated.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from vmsim import _vmsim

HOSTILE = Path(__file__).resolve().parent / "data" / "hostile"
SMALL = Path(__file__).resolve().parent / "data" / "scenarios" / "small.toml"
CASES = sorted(HOSTILE.glob("*.toml"))


def expected(path: Path) -> str:
    """The fragment the message must contain, from the file's first line."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), path
    return first.removeprefix("# expect: ")


def assert_refused(proc, fragment: str) -> str:
    """Exit 2, one line on stderr holding ``fragment``, no traceback or panic."""
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert err.endswith("\n") and err.count("\n") == 1, err[-2000:]
    assert "Traceback" not in err and "panicked" not in err, err[-2000:]
    assert fragment in err, (fragment, err)
    return err


def available_bytes() -> int:
    """MemAvailable of /proc/meminfo [bytes]."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def test_the_corpus_is_there():
    assert len(CASES) >= 39


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_scenario_is_one_line_exit_2(cli, path):
    text = path.read_text(encoding="utf-8")
    if path.stem.startswith("capacity-"):
        need = json.loads(_vmsim.capacity_need(text))["at_start"]
        if need <= available_bytes():
            pytest.skip(f"this host has room for the {need} bytes of its start")
    assert_refused(cli("run", path), expected(path))


def _cli_with_rlimit_as(args: list[str], limit: int) -> subprocess.CompletedProcess:
    """``python -m vmsim.cli ARGS`` with its address space limited to ``limit`` bytes."""
    import resource

    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "vmsim.cli", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=preexec,
        timeout=60,
    )


def test_capacity_message_names_need_and_limit():
    """A frame table larger than the address space left under RLIMIT_AS is one line."""
    proc = _cli_with_rlimit_as(["run", "--set", "machine.memory=8TiB"], 16 << 30)
    err = assert_refused(proc, "of address space for its frame table")
    assert err.startswith("vmsim: error: machine.memory = 8TiB needs 34.4 GB of address space")
    assert "GB in all); this host has " in err
    assert err.rstrip().endswith("left under RLIMIT_AS")


def test_a_machine_larger_than_the_host_runs_when_its_start_fits(cli):
    """16 TiB, the largest machine: a 69 GB frame table, more than this host's memory, of
    which the run writes what boot and the workload use (its start and growth are watched,
    not refused)."""
    need = json.loads(_vmsim.capacity_need('[machine]\nmemory = "16TiB"\n'))
    if need["at_start"] + (2 << 30) > available_bytes():
        pytest.skip("this host cannot hold a 16 TiB machine's start and a workload")
    proc = cli("run", "--set", "machine.memory=16TiB", "--set", "duration=200ms")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\nelapsed 0.200 s " in proc.stdout, proc.stdout[:500]
    faults = re.search(r"^pgfault (\d+)$", proc.stdout, re.M)
    assert faults and int(faults.group(1)) > 100_000, proc.stdout[-2000:]


def test_capacity_need_arithmetic_through_the_binding():
    need = json.loads(_vmsim.capacity_need('[machine]\nmemory = "8TiB"\nswap = "4TiB"\n'))
    frames, slots = (8 << 40) // 4096, (4 << 40) // 4096
    assert need["frame_table"] == frames * 16
    # Partial blocks at the ends of ranges, and the pageblock arrays (3 bytes a pageblock).
    assert frames // 512 * 3 < need["frame_table_boot"] < frames // 512 * 3 + (1 << 20)
    assert need["swap"] == slots * 13
    assert need["page_tables"] == (frames + slots) * 8
    parts = ("frame_table", "swap", "page_tables", "tasks", "memcgs", "samples")
    assert need["total"] == sum(need[p] for p in parts)
    start = ("frame_table_boot", "swap", "tasks", "memcgs", "samples")
    assert need["at_start"] == sum(need[p] for p in start)


def test_a_megabyte_name_is_clipped(cli, tmp_path):
    name = "n" * 1_000_000
    cases = {
        "task-name": f'[[task]]\nname = "{name}"\nprogram = []\n',
        "key": f"[machine]\n{name} = 1\n",
        "size": f'[machine]\nmemory = "1{name}"\n',
        "cgroup": f'[[cgroup]]\npath = "{name}"\n[[task]]\nname = "a"\ncgroup = "x{name}"\n'
        "program = []\n",
    }
    for what, text in cases.items():
        path = tmp_path / f"{what}.toml"
        path.write_text(text)
        err = assert_refused(cli("run", path), "…")
        assert len(err) < 1000, (what, len(err))


def test_set_of_an_unknown_table_names_no_other_table(cli):
    err = assert_refused(cli("run", SMALL, "--set", "a.b=1"), "unknown table [a]")
    assert "[[task] (after --set)]" not in err
    assert "--set a.b: " in err


def test_set_error_in_an_array_table_keeps_its_brackets(cli, tmp_path):
    # A scenario whose own text is fine, made wrong by --set: the table keeps both brackets.
    err = assert_refused(
        cli("run", SMALL, "--set", "sampling.interval=true"), "[sampling] (after --set)"
    )
    assert "expected a duration" in err


def _peak(text: str) -> int:
    """Peak resident set (VmHWM) of a fresh interpreter running ``text`` [bytes]."""
    code = (
        "import re, sys; from vmsim import api; api.run(sys.stdin.read()); "
        "s = open('/proc/self/status').read(); "
        "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', s).group(1)) * 1024)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, check=True
    )
    return int(p.stdout)


def test_per_task_and_per_sample_figures_bound_a_measured_run():
    base = '[machine]\nmemory = "256MiB"\ncpus = 2\n'
    sleeper = 'program = [{ op = "sleep", time = "10000s" }]\n'

    def tasks(n: int) -> str:
        return f'duration = "1s"\n{base}[[task]]\nname = "t"\ncount = {n}\n{sleeper}'

    def samples(n: int) -> str:
        sampling = '[sampling]\ninterval = "1ms"\n'
        return f'duration = "{n}ms"\n{base}{sampling}[[task]]\nname = "t"\n{sleeper}'

    per_task = (_peak(tasks(20_001)) - _peak(tasks(1))) / 20_000
    per_sample = (_peak(samples(101_000)) - _peak(samples(1_000))) / 100_000
    need = json.loads(_vmsim.capacity_need(tasks(1000)))["tasks"] / 1000
    assert per_task <= need < 4 * per_task, (per_task, need)
    need = json.loads(_vmsim.capacity_need(samples(1000)))["samples"] / 1001
    assert per_sample <= need < 4 * per_sample, (per_sample, need)
