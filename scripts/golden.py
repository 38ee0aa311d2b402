"""Golden runs: whole `vmsim run` outputs of a few scenarios, checked in and compared byte for byte.

    python scripts/golden.py            # compare; exit 1 and show the first differing lines
    python scripts/golden.py --approve  # re-run and write the outputs (after an intended change)

Each case is a command line of `vmsim run` from the repository root; its standard output
is kept in tests/golden/NAME.txt. tests/test_golden.py runs the same comparison under pytest.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

from vmsim import atomic

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"

# name -> arguments after `vmsim run`; small scenarios that cover the default kernel,
# swap with a writer beside it, cgroup v1 (soft limit, hard limit) and cgroup v2.
CASES: dict[str, list[str]] = {
    "default": [],
    "swap-and-dd": ["scenarios/swap-and-dd.toml"],
    "memcg-two-groups": [
        "scenarios/memcg-two-groups.toml",
        "--memcg-stat",
        "web",
        "--memcg-stat",
        "batch",
    ],
    "memcg-v2-high": [
        "scenarios/memcg-v2-high.toml",
        "--memcg-stat",
        "capped",
        "--memcg-stat",
        "grower",
    ],
}


def run_case(args: list[str]) -> str:
    """Standard output of `vmsim run ARGS` from the repository root."""
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"vmsim run {' '.join(args)}: exit {proc.returncode}: {proc.stderr}")
    return proc.stdout


def diff(name: str, now: str) -> list[str]:
    """Unified diff of a case's golden output against `now` (empty when equal)."""
    path = GOLDEN / f"{name}.txt"
    was = path.read_text(encoding="utf-8") if path.exists() else ""
    if was == now:
        return []
    return list(
        difflib.unified_diff(
            was.splitlines(),
            now.splitlines(),
            f"{path.name} (golden)",
            f"{name} (now)",
            lineterm="",
        )
    )


def main(argv: list[str]) -> int:
    approve = "--approve" in argv
    changed = 0
    for name, args in CASES.items():
        now = run_case(args)
        if approve:
            atomic.write_text(GOLDEN / f"{name}.txt", now)
            print(f"{name}: written")
            continue
        d = diff(name, now)
        if d:
            changed += 1
            print("\n".join(d[:40]))
        else:
            print(f"{name}: same")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
