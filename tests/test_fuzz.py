"""The scenario fuzzer (vmsim.fuzz) for a bounded number of cases, and its kept crashers.

``make all`` runs ``VMSIM_FUZZ_CASES`` hostile scenarios through validation
(default 1000) and a fifth as many small runs (about 15 s); ``make fuzz`` runs the same
generators for as long as asked (scripts/fuzz.py). Every case a campaign
found failing is kept under tests/data/fuzz-crashers/ and replayed here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from vmsim import fuzz

CRASHERS = Path(__file__).parent / "data" / "fuzz-crashers"
CASES = int(os.environ.get("VMSIM_FUZZ_CASES", "1000"))
FUZZ_SETTINGS = settings(
    max_examples=CASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ_SETTINGS
@given(scenario=fuzz.hostile_scenarios())
def test_hostile_scenarios_are_validated_or_refused_in_one_line(scenario: dict[str, Any]) -> None:
    fuzz.validate_case(scenario)


@settings(FUZZ_SETTINGS, max_examples=max(1, CASES // 5))
@given(scenario=fuzz.small_runs())
def test_small_random_programs_run_or_are_refused_in_one_line(scenario: dict[str, Any]) -> None:
    fuzz.run_case(scenario)


def test_the_checks_can_fail() -> None:
    with pytest.raises(AssertionError):
        fuzz.check_message("data did not match any variant of untagged enum NumOrStr")
    with pytest.raises(AssertionError):
        fuzz.check_message("two\nlines")
    with pytest.raises(AssertionError):
        fuzz.check_message("x" * (fuzz.MAX_MESSAGE + 1))


def _crashers() -> list[Path]:
    return sorted(CRASHERS.glob("*.json"))


@pytest.mark.parametrize("path", _crashers(), ids=lambda p: p.stem)
def test_kept_crashers(path: Path) -> None:
    case = json.loads(path.read_text())
    if case["kind"] == "run":
        fuzz.run_case(case["scenario"])
    elif case["kind"] == "trace":
        fuzz.trace_case(case["scenario"]["trace"].encode())
    else:
        fuzz.validate_case(case["scenario"])


_TRACE_LINES = [
    line
    for p in sorted((Path(__file__).parent / "data" / "traces").glob("*.txt"))
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines()
]


@FUZZ_SETTINGS
@given(trace=fuzz.hostile_traces(_TRACE_LINES))
def test_hostile_traces_are_reported_or_refused_in_one_line(trace: bytes) -> None:
    """The trace reader (vmsim reclaim-report): a report, or one ReclaimReportError line."""
    fuzz.trace_case(trace)
