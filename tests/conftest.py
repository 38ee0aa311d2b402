"""Shared fixtures for the CLI and API tests.

The /proc format checkers re-render every parsed line with the kernel's own
printf formats (mm/vmstat.c: ``frag_show_print`` and ``pagetypeinfo_show``,
see /work/shared/formats/KERNEL-FORMATS.md section 1) and require the result
to be byte-identical, so a wrong width or a missing trailing space fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
DATA_DIR = TESTS_DIR / "data"
SCENARIO_DIR = DATA_DIR / "scenarios"
SMALL_SCENARIO = SCENARIO_DIR / "small.toml"
REPO_DIR = TESTS_DIR.parent
CONFIG_RS = REPO_DIR / "crates" / "vmsim-core" / "src" / "config.rs"

MAX_ORDER = 10
MIGRATETYPES = ("Unmovable", "Movable", "Reclaimable", "HighAtomic", "Isolate")

BUDDYINFO_RE = re.compile(r"^Node (\d+), zone +(\w+)((?: +\d+){11}) $")
PAGETYPE_FREE_RE = re.compile(r"^Node +(\d+), zone +(\w+), type +(\w+)((?: +\d+){11}) $")
PAGETYPE_BLOCKS_RE = re.compile(r"^Node (\d+), zone +(\w+)((?: +\d+){5}) $")
# pagetypeinfo_showfree: seq_printf(m, "%-43s ", "Free pages count per migrate type at order")
PAGETYPE_ORDER_HEADER = f"{'Free pages count per migrate type at order':<43s} " + "".join(
    f"{o:6d} " for o in range(MAX_ORDER + 1)
)
PAGETYPE_BLOCKS_HEADER = f"{'Number of blocks type ':<23s}" + "".join(
    f"{t:>12s} " for t in MIGRATETYPES
)


class ProcFormats:
    """Parsers that assert the kernel's /proc formats line by line."""

    @staticmethod
    def buddyinfo(text: str) -> list[tuple[int, str, list[int]]]:
        """Parses /proc/buddyinfo; every line must be exactly what the kernel prints."""
        assert text.endswith("\n"), repr(text[-40:])
        rows = []
        for line in text[:-1].split("\n"):
            m = BUDDYINFO_RE.match(line)
            assert m, f"not a buddyinfo line: {line!r}"
            node, zone = int(m.group(1)), m.group(2)
            counts = [int(c) for c in m.group(3).split()]
            rendered = f"Node {node}, zone {zone:>8s} " + "".join(f"{c:6d} " for c in counts)
            assert line == rendered, f"buddyinfo widths differ:\n{line!r}\n{rendered!r}"
            rows.append((node, zone, counts))
        assert rows, "empty buddyinfo"
        return rows

    @staticmethod
    def buddyinfo_free_pages(text: str) -> int:
        """The number of free pages buddyinfo implies: sum of count << order."""
        return sum(
            c << order
            for _, _, counts in ProcFormats.buddyinfo(text)
            for order, c in enumerate(counts)
        )

    @staticmethod
    def pagetypeinfo(text: str) -> dict:
        """Parses /proc/pagetypeinfo, asserting every line's layout and width."""
        assert text.endswith("\n"), repr(text[-40:])
        lines = text[:-1].split("\n")
        m = re.fullmatch(r"Page block order: (\d+)", lines[0])
        assert m, lines[0]
        pb_order = int(m.group(1))
        assert lines[1] == f"Pages per block:  {1 << pb_order}"
        assert lines[2] == ""
        assert lines[3] == PAGETYPE_ORDER_HEADER
        free: dict[tuple[int, str], dict[str, list[int]]] = {}
        i = 4
        while lines[i] != "":
            line = lines[i]
            m = PAGETYPE_FREE_RE.match(line)
            assert m, f"not a pagetypeinfo free line: {line!r}"
            node, zone, mt = int(m.group(1)), m.group(2), m.group(3)
            counts = [int(c) for c in m.group(4).split()]
            rendered = f"Node {node:4d}, zone {zone:>8s}, type {mt:>12s} " + "".join(
                f"{c:6d} " for c in counts
            )
            assert line == rendered, f"pagetypeinfo widths differ:\n{line!r}\n{rendered!r}"
            free.setdefault((node, zone), {})[mt] = counts
            i += 1
        for key, per_type in free.items():
            assert tuple(per_type) == MIGRATETYPES, (key, list(per_type))
        i += 1
        assert lines[i] == PAGETYPE_BLOCKS_HEADER, repr(lines[i])
        blocks: dict[tuple[int, str], list[int]] = {}
        for line in lines[i + 1 :]:
            m = PAGETYPE_BLOCKS_RE.match(line)
            assert m, f"not a pagetypeinfo block line: {line!r}"
            node, zone = int(m.group(1)), m.group(2)
            counts = [int(c) for c in m.group(3).split()]
            rendered = f"Node {node}, zone {zone:>8s} " + "".join(f"{c:12d} " for c in counts)
            assert line == rendered, f"pagetypeinfo widths differ:\n{line!r}\n{rendered!r}"
            blocks[(node, zone)] = counts
        assert list(blocks) == list(free), "zones differ between the two tables"
        return {"pageblock_order": pb_order, "free": free, "blocks": blocks}

    @staticmethod
    def vmstat(text: str) -> list[tuple[str, int]]:
        """Parses /proc/vmstat: ``name value`` lines."""
        assert text.endswith("\n")
        rows = []
        for line in text[:-1].split("\n"):
            m = re.fullmatch(r"([a-z0-9_]+) (-?\d+)", line)
            assert m, f"not a vmstat line: {line!r}"
            rows.append((m.group(1), int(m.group(2))))
        return rows

    @staticmethod
    def reference_vmstat_names() -> list[str]:
        """The counter names of a real 6.18 /proc/vmstat, in the kernel's order."""
        text = (DATA_DIR / "proc-vmstat.txt").read_text()
        return [line.split()[0] for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def procfmt() -> type[ProcFormats]:
    return ProcFormats


@pytest.fixture(scope="session")
def small_scenario() -> Path:
    """A scenario file that runs in a few milliseconds."""
    return SMALL_SCENARIO


@pytest.fixture(scope="session")
def small_scenario_text() -> str:
    return SMALL_SCENARIO.read_text()


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env["COLUMNS"] = "200"
    env["NO_COLOR"] = "1"
    env["MPLBACKEND"] = "Agg"
    return env


RunCli = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="session")
def cli() -> RunCli:
    """Runs ``python -m vmsim.cli ARGS`` and returns the CompletedProcess (text)."""
    env = _cli_env()

    def run(
        *args: object, cwd: Path | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "vmsim.cli", *map(str, args)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            timeout=timeout,
        )

    return run


#: Test modules that use this machine's real kernel (cgroups, sysctls, swap, tracefs,
#: qemu guests) or time the host (microbenchmarks, Ctrl-C, wall-clock limits, peak RSS,
#: worker pools): under ``pytest -n 2 --dist loadgroup`` (``make test-python``) they all
#: run on one worker, one after another, while the other worker runs simulations.
HOST_MODULES = frozenset(
    {
        "test_atomic",
        "test_bench_scale",
        "test_calibrate",
        "test_fidelity",
        "test_fidelity_vm",
        "test_ftrace",
        "test_hostile_cli",
        "test_hostile_config",
        "test_interrupt",
        "test_memcg_walk_real",
        "test_outputs",
        "test_reproduce_softlimit",
        "test_run_limits",
        "test_swap_devices",
        "test_sweep",
        "test_sweep_ray",
        "test_trace",
    }
)


#: Single tests elsewhere that do the same: docs/cost-model.md's examples run
#: `vmsim calibrate` on the real kernel.
HOST_TESTS = frozenset({"test_console_examples_print_what_the_docs_show[cost-model.md]"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts every test of a [`HOST_MODULES`] module, and every [`HOST_TESTS`] test, in
    xdist's "host" group (before xdist reads the groups)."""
    for item in items:
        if item.path.stem in HOST_MODULES or item.name in HOST_TESTS:
            item.add_marker(pytest.mark.xdist_group("host"))
