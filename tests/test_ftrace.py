"""The shared ftrace line reader."""

from __future__ import annotations

import pytest
from vmsim import ftrace


def test_a_6_18_line_with_irq_flags() -> None:
    t = ftrace.parse_line(
        "              dd-4454    [001] .....   199.779487: mm_vmscan_throttled: "
        "nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK"
    )
    assert t == ftrace.TraceLine(
        "dd",
        4454,
        1,
        199.779487,
        "mm_vmscan_throttled",
        "nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK",
    )


def test_a_tgid_column_a_dashed_comm_and_no_flags() -> None:
    t = ftrace.parse_line(
        " kworker/u8:3-1155  (   1155) [000]   12.5: writeback_start: bdi 8:0: sb_dev 0:0"
    )
    assert t is not None
    assert (t.comm, t.pid, t.cpu, t.seconds, t.event) == (
        "kworker/u8:3",
        1155,
        0,
        12.5,
        "writeback_start",
    )


@pytest.mark.parametrize(
    "line", ["# tracer: nop", "CPU:1 [LOST 42 EVENTS]", "", "not a trace line at all"]
)
def test_other_lines_are_not_events(line: str) -> None:
    assert ftrace.parse_line(line) is None


def test_a_binary_trace_dat_is_refused_in_one_line(tmp_path) -> None:
    p = tmp_path / "trace.dat"
    p.write_bytes(b"\x17\x08\x44tracing6\x00")
    with pytest.raises(ftrace.TraceInputError, match=r"trace-cmd report"):
        with ftrace.lines(p):
            pass
