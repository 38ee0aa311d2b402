"""A fuzz campaign of a given length: ``python scripts/fuzz.py --seconds 600`` (``make fuzz``).

Runs vmsim.fuzz's two generators in rounds with fresh random seeds until the
time is up, printing the counts of cases tried and of their outcomes. A
failing case is shrunk by hypothesis, written to tests/data/fuzz-crashers/
(where tests/test_fuzz.py replays it for ever after) and the campaign exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from vmsim import fuzz

CRASHERS = Path(__file__).resolve().parent.parent / "tests" / "data" / "fuzz-crashers"
#: The case being run, for a failure that kills the process before it can be kept.
CURRENT = Path("/tmp/vmsim-fuzz-current.json")


#: Real trace lines the trace generator splices (tests/data/traces).
TRACE_LINES = [
    line
    for p in sorted((CRASHERS.parent / "traces").glob("*.txt"))
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines()
]


def keep(kind: str, scenario: dict[str, Any], error: BaseException) -> Path:
    """Writes a failing case where the tests replay it."""
    text = json.dumps({"kind": kind, "error": repr(error)[:500], "scenario": scenario},
                      indent=1, sort_keys=True, default=str)  # fmt: skip
    path = CRASHERS / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    CRASHERS.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


def main() -> int:
    """Runs rounds of both generators until ``--seconds`` have passed."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--round", type=int, default=200, help="cases per generator and round")
    args = ap.parse_args()
    outcomes: Counter[str] = Counter()
    last: dict[str, Any] = {}

    def count(kind: str, scenario: dict[str, Any], check: Any) -> None:
        last["case"] = (kind, scenario)
        # A case that kills the process (an abort, the host's OOM killer) is left here.
        CURRENT.write_text(json.dumps({"kind": kind, "scenario": scenario}, default=str))
        outcomes[f"{kind}: " + ("refused" if check(scenario) else "accepted")] += 1

    t0 = time.monotonic()
    rnd = 0
    while time.monotonic() - t0 < args.seconds:
        rnd += 1
        cfg = settings(max_examples=args.round, deadline=None, database=None,
                       suppress_health_check=list(HealthCheck))  # fmt: skip

        @seed(rnd)
        @cfg
        @given(fuzz.hostile_scenarios())
        def validations(s: dict[str, Any]) -> None:
            count("validate", s, fuzz.validate_case)

        @seed(rnd)
        @settings(cfg, max_examples=max(1, args.round // 5))
        @given(fuzz.small_runs())
        def runs(s: dict[str, Any]) -> None:
            count("run", s, fuzz.run_case)

        @seed(rnd)
        @cfg
        @given(fuzz.hostile_traces(TRACE_LINES))
        def traces(t: bytes) -> None:
            count(
                "trace",
                {"trace": t.decode("utf-8", "replace")},
                lambda c: fuzz.trace_case(c["trace"].encode()),
            )

        for test in (validations, runs, traces):
            try:
                test()
            except BaseException as e:  # a failure of the contract, shrunk by hypothesis
                if isinstance(e, KeyboardInterrupt):
                    raise
                kind, scenario = last["case"]
                print(f"round {rnd}: {kind} case failed: {e!r}"[:600], file=sys.stderr)
                print(f"kept as {keep(kind, scenario, e)}", file=sys.stderr)
                return 1
        elapsed = time.monotonic() - t0
        print(
            f"{elapsed:7.0f} s  round {rnd}  "
            + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        )
    print(json.dumps({"seconds": round(time.monotonic() - t0, 1), "rounds": rnd,
                      "cases": sum(outcomes.values()), "outcomes": dict(outcomes)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
