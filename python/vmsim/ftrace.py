"""Reading ftrace text: event lines of /sys/kernel/tracing/trace, trace_pipe or `trace-cmd report`.

Shared by the reclaim report (``vmsim reclaim-report``) and ``vmsim fidelity``'s
tracepoint counts. A line is ``comm-pid``, an optional ``(tgid)`` column, ``[cpu]``,
the optional irq-info flags (4 characters on 2.6.35, 5 today), the timestamp,
``event:`` and the event's fields.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

__all__ = ["LINE_RE", "LOST_N_RE", "LOST_RE", "TraceInputError", "TraceLine", "load", "parse_line"]


class TraceInputError(ValueError):
    """The input is not ftrace text; the message is one line naming it."""


# The regex_traceevent of trace-vmscan-postprocess.pl, made whole-comm and anchored.
LINE_RE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+"
    r"(?:\(\s*(?:\d+|-+)\)\s+)?"
    r"\[(?P<cpu>\d+)\]\s+"
    r"(?:[dDbX.][NnpLBb.][ZzHhs.][0-9a-fA-F.]{1,2}\s+)?"
    r"(?P<ts>\d+(?:\.\d+)?):\s+"
    r"(?P<event>[A-Za-z_][A-Za-z0-9_]*):\s*(?P<details>.*?)\s*$"
)
# "CPU:1 [LOST 42 EVENTS]" lines of a trace whose ring buffer overflowed.
LOST_RE = re.compile(r"^\s*CPU:\s*\d+ \[LOST \d+ EVENTS\]\s*$")
LOST_N_RE = re.compile(r"\[LOST (\d+) EVENTS\]")

_TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"


class TraceLine(NamedTuple):
    """One event line."""

    comm: str
    pid: int
    cpu: int
    seconds: float
    event: str
    details: str


def parse_line(line: str) -> TraceLine | None:
    """The parts of an event line; None for anything else (headers, lost-event lines)."""
    m = LINE_RE.match(line)
    if m is None:
        return None
    return TraceLine(
        m.group("comm"),
        int(m.group("pid")),
        int(m.group("cpu")),
        float(m.group("ts")),
        m.group("event"),
        m.group("details"),
    )


def _decode(data: bytes, source: str, error: type[TraceInputError]) -> str:
    if data.startswith(_TRACE_DAT_MAGIC):
        raise error(
            f"{source}: line 1: a binary trace-cmd .dat file; convert it with "
            "`trace-cmd report -i FILE > trace.txt` first"
        )
    return data.decode("utf-8", errors="replace")


def load(
    path_or_text: str | os.PathLike[str] | bytes,
    name: str | None = None,
    error: type[TraceInputError] = TraceInputError,
) -> tuple[str, str]:
    """(source name, text) for a path, a trace text (str with a newline) or trace bytes.

    Raises ``error`` (one line) for a directory, a missing or unreadable file, or a
    binary trace-cmd .dat file.
    """
    if isinstance(path_or_text, bytes):
        return name or "<text>", _decode(path_or_text, name or "<text>", error)
    if isinstance(path_or_text, str) and (
        not path_or_text
        or "\n" in path_or_text
        or LINE_RE.match(path_or_text)
        and not os.path.exists(path_or_text)
    ):
        return name or "<text>", path_or_text
    path = Path(path_or_text)
    src = str(path_or_text)
    if path.is_dir():
        raise error(f"{src}: is a directory, not a trace file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{src}: no such file") from None
    except OSError as e:
        raise error(f"{src}: cannot read: {e.strerror or e}") from None
    src = name or src
    return src, _decode(data, src, error)
