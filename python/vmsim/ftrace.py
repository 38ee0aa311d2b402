"""Reading ftrace text: event lines of /sys/kernel/tracing/trace, trace_pipe or `trace-cmd report`.

Shared by the reclaim report (``vmsim reclaim-report``) and ``vmsim fidelity``'s
tracepoint counts. A line is ``comm-pid``, an optional ``(tgid)`` column, ``[cpu]``,
the optional irq-info flags (4 characters on 2.6.35, 5 today), the timestamp,
``event:`` and the event's fields.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import NamedTuple

from vmsim import inputs
from vmsim.atomic import shown

__all__ = [
    "LINE_RE",
    "LOST_N_RE",
    "LONG_NUMBER_RE",
    "LOST_RE",
    "MAX_DIGITS",
    "MAX_LINE_BYTES",
    "TraceInputError",
    "TraceLine",
    "lines",
    "parse_line",
]

#: The longest line of ftrace text read [bytes]. The kernel prints an event into one
#: page (trace_seq, 4 KiB); trace-cmd report lines are as short.
MAX_LINE_BYTES = 64 * 1024


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

#: The most digits of a number in a trace line: the kernel prints 64-bit values (20
#: decimal digits at most); a longer run of digits is not ftrace's.
MAX_DIGITS = 20
LONG_NUMBER_RE = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")

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
    """The parts of an event line; None for anything else (headers, lost-event lines,
    a line with a number longer than MAX_DIGITS)."""
    if LONG_NUMBER_RE.search(line):
        return None
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


def _check_not_dat(head: bytes, source: str, error: type[TraceInputError]) -> None:
    """Refuses a binary trace-cmd .dat file by its magic."""
    if head.startswith(_TRACE_DAT_MAGIC):
        raise error(
            f"{source}: line 1: a binary trace-cmd .dat file; convert it with "
            "`trace-cmd report -i FILE > trace.txt` first"
        )


def _text_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """The lines of a trace given as text, as :func:`vmsim.inputs.iter_lines` gives them."""
    pieces = text.splitlines()
    ended = text.endswith(("\n", "\r"))
    for i, piece in enumerate(pieces):
        yield i + 1, piece, ended or i < len(pieces) - 1


def _is_text(path_or_text: str | os.PathLike[str] | bytes) -> bool:
    """Whether a str is a trace's text rather than a path (it has a newline, or is an
    event line naming no file)."""
    return isinstance(path_or_text, str) and (
        not path_or_text
        or "\n" in path_or_text
        or bool(LINE_RE.match(path_or_text))
        and not os.path.exists(path_or_text)
    )


@contextlib.contextmanager
def lines(
    path_or_text: str | os.PathLike[str] | bytes,
    name: str | None = None,
    error: type[TraceInputError] = TraceInputError,
) -> Iterator[tuple[str, Iterator[tuple[int, str, bool]]]]:
    """(source name, lines) of a trace: a path (``-`` is standard input), a trace text
    (a str with a newline) or trace bytes. Each line is (number, text, whether it ended
    in a newline); a file is read one line at a time, at most :data:`MAX_LINE_BYTES` a line.

    Raises ``error`` (one line) for a directory, a FIFO or device (unless ``-``), a
    missing or unreadable file, a line too long, or a binary trace-cmd .dat file.
    """
    if isinstance(path_or_text, bytes):
        src = name or "<text>"
        _check_not_dat(path_or_text, src, error)
        yield src, _text_lines(path_or_text.decode("utf-8", errors="replace"))
        return
    if _is_text(path_or_text):
        assert isinstance(path_or_text, str)
        yield name or "<text>", _text_lines(path_or_text)
        return
    path = os.fspath(path_or_text)
    src = name or (inputs.STDIN_NAME if path == "-" else shown(path))
    f = inputs.open_input(path, "a trace file", error)
    try:
        peek = getattr(f, "peek", None)  # a buffered reader: look without consuming
        if peek is not None:
            _check_not_dat(peek(len(_TRACE_DAT_MAGIC))[: len(_TRACE_DAT_MAGIC)], src, error)
        yield src, inputs.iter_lines(f, src, MAX_LINE_BYTES, error)
    finally:
        if path != "-":
            f.close()
