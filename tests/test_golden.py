"""Golden runs: the whole output of a few scenarios must not change unless a change means it to.

After an intended change, re-approve with `python scripts/golden.py --approve` and read
the diff before committing it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "golden.py"
_spec = importlib.util.spec_from_file_location("golden", SCRIPT)
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
sys.modules["golden"] = golden
_spec.loader.exec_module(golden)


@pytest.mark.parametrize("name", sorted(golden.CASES))
def test_golden_run_is_byte_identical(name: str) -> None:
    now = golden.run_case(golden.CASES[name])
    d = golden.diff(name, now)
    assert not d, (
        f"`vmsim run` output of {name} changed; if intended, run "
        "`python scripts/golden.py --approve` and commit the new outputs:\n" + "\n".join(d[:60])
    )


def test_a_changed_output_is_reported() -> None:
    # The comparison itself: a one-character change yields a diff naming the line.
    was = (golden.GOLDEN / "swap-and-dd.txt").read_text(encoding="utf-8")
    d = golden.diff("swap-and-dd", was.replace("elapsed", "elapsd", 1))
    assert any(line.startswith("-elapsed") for line in d)
    assert any(line.startswith("+elapsd") for line in d)
