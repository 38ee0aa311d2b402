"""The hostile-input corpus (tests/data/hostile-cli/cases.toml, issue 17): every case
run through the ``vmsim`` command line in a subprocess with a timeout must exit with
code 2 and exactly one line on stderr naming the problem — no traceback, no internal
error, no hang, however the input tries (FIFOs, devices, link loops, huge numbers,
deep nesting, huge names)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import DATA_DIR, SMALL_SCENARIO

CORPUS = DATA_DIR / "hostile-cli"
CASES = tomllib.loads((CORPUS / "cases.toml").read_text(encoding="utf-8"))["case"]
#: Seconds a case may take: each is refused before any simulation starts.
TIMEOUT = 60
IS_ROOT = os.geteuid() == 0


def _expand(arg: str, tmp: Path, places: dict[str, str]) -> str:
    """``arg`` with the corpus placeholders filled in."""
    arg = re.sub(r"\{dots:(\d+)\}", lambda m: ".".join(["a"] * int(m.group(1))), arg)
    arg = re.sub(r"\{nest:(\d+)\}", lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), arg)
    arg = re.sub(r"\{long:(\d+)\}", lambda m: "n" * int(m.group(1)), arg)
    for key, value in places.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def _places(tmp: Path, case: dict) -> dict[str, str]:
    """Makes what the case's placeholders name inside ``tmp``."""
    os.mkfifo(tmp / "fifo")
    os.symlink("loop2", tmp / "loop")
    os.symlink("loop", tmp / "loop2")
    places = {
        "data": str(CORPUS),
        "small": str(SMALL_SCENARIO),
        "tmp": str(tmp),
        "fifo": str(tmp / "fifo"),
        "loop": str(tmp / "loop"),
    }
    if case.get("root"):
        # Our own node for the device /dev/full is (1, 7): writes fail with ENOSPC.
        os.mknod(tmp / "full", 0o666 | 0o020000, os.makedev(1, 7))
        places["full"] = str(tmp / "full")
    if "link" in case:
        os.symlink(_expand(case["link"], tmp, places), tmp / "full-link.png")
    if case.get("fifo_parquet"):
        os.mkfifo(tmp / "fifo.parquet")
    if case.get("zero_link"):
        os.symlink("/dev/zero", tmp / "zero.parquet")  # only looked at, never opened
    if case.get("full_vmstat"):
        os.mknod(tmp / "vmstat", 0o666 | 0o020000, os.makedev(1, 7))
    return places


def _stdin(case: dict) -> bytes | None:
    spec = case.get("stdin")
    if spec is None:
        return None
    if spec.startswith("zeros:"):
        return b"\0" * int(spec.split(":", 1)[1])
    return (CORPUS / spec).read_bytes()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hostile_case_is_one_line_exit_2(case: dict, tmp_path: Path) -> None:
    if case.get("root") and not IS_ROOT:
        pytest.skip("needs root to make a device node")
    places = _places(tmp_path, case)
    args = [_expand(a, tmp_path, places) for a in case["args"]]
    before = {p.name: p.lstat().st_mode for p in tmp_path.iterdir()}
    proc = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", *args],
        input=_stdin(case),
        capture_output=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    err = proc.stderr.decode("utf-8", errors="replace")
    assert "Traceback" not in err and "panicked" not in err, err[:2000]
    assert proc.returncode == 2, (proc.returncode, err[:2000])
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    line = lines[0]
    assert line.startswith("vmsim: error: "), line[:2000]
    for fragment in (case["expect"], case.get("also", "")):
        fragment = _expand(fragment, tmp_path, places)
        assert fragment.lower() in line.lower(), (fragment, line[:2000])
    assert len(line) <= case.get("max_len", 2000), len(line)
    # Nothing the case set up was replaced: a FIFO, a device, a link stay what they were.
    for name, mode in before.items():
        assert (tmp_path / name).lstat().st_mode == mode, name


def test_the_corpus_covers_the_issue() -> None:
    """Every command the issue names has cases, and case names are unique."""
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    commands = {c["args"][0] for c in CASES}
    assert {"run", "compare", "reclaim-report", "reproduce", "sweep", "validate"} <= commands
    assert len(CASES) >= 40
