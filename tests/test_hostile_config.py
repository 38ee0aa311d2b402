"""Hostile scenarios: every one is refused with one line naming the problem and exit 2.

Each file of tests/data/hostile/ is one scenario whose first line says what the
message must contain (``# expect: …``); ``vmsim run FILE`` must exit 2 with exactly
one line on stderr, no traceback and no Rust panic, before anything is allocated.
"""

from __future__ import annotations

import json
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
        need = json.loads(_vmsim.capacity_need(text))["total"]
        if need <= available_bytes():
            pytest.skip(f"this host has room for {need} bytes")
    assert_refused(cli("run", path), expected(path))


def test_capacity_message_names_need_and_limit(cli):
    err = assert_refused(
        cli("run", HOSTILE / "capacity-16tib-memory-4tib-swap.toml"), "for its frame table"
    )
    assert err.startswith("vmsim: error: machine.memory = 16TiB needs 68.7 GB of host memory")
    assert "GB in all); this host has " in err and err.rstrip().endswith("available")


def test_capacity_need_arithmetic_through_the_binding():
    need = json.loads(_vmsim.capacity_need('[machine]\nmemory = "16TiB"\nswap = "4TiB"\n'))
    frames, slots = (16 << 40) // 4096, (4 << 40) // 4096
    assert need["frame_table"] == frames * 16
    assert need["swap"] == slots * 5
    assert need["page_tables"] == (frames + slots) * 4
    parts = ("frame_table", "swap", "page_tables", "tasks", "memcgs", "samples")
    assert need["total"] == sum(need[p] for p in parts)


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
    assert "(after --set)" in err


def test_set_error_in_an_array_table_keeps_its_brackets(cli, tmp_path):
    # A scenario whose own text is fine, made wrong by --set: the table keeps both brackets.
    err = assert_refused(
        cli("run", SMALL, "--set", "sampling.interval=true"), "[sampling] (after --set)"
    )
    assert "expected a duration" in err
