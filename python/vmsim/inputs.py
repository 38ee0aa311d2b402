"""Reading the files a user gives vmsim (traces, results): bounded in memory, and
never waiting on something that does not end.

* A path must name a regular file. A FIFO, a character or block device (``/dev/zero``),
  a socket or a directory is refused with one line; a stream is read only when it is
  given explicitly as ``-`` (standard input), e.g. ``vmsim reclaim-report - < FIFO``.
  The check opens the file without blocking, so a FIFO with no writer is refused at
  once instead of hanging.
* Text is read line by line; a line longer than the reader's maximum is refused with
  one line naming the file and the line (ftrace text: :data:`vmsim.ftrace.MAX_LINE_BYTES`).
* A whole document (a JSON result) is read up to a maximum size
  (:data:`vmsim.compare.MAX_RESULT_BYTES`) and refused beyond it.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterator
from typing import BinaryIO

from vmsim.atomic import reason, shown

__all__ = ["InputError", "check_regular", "iter_lines", "open_input", "read_limited"]

#: What a stream is called in messages.
STDIN_NAME = "<stdin>"


class InputError(ValueError):
    """An input that cannot be read; the message is one line naming it."""


def _kind(mode: int) -> str:
    """The kind of a non-regular file, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refusal(path: str, mode: int, what: str, stream: bool) -> str:
    """The message for an input path that is not a regular file; ``stream``: whether
    the reader takes ``-`` (standard input) instead."""
    if stat.S_ISDIR(mode):
        return f"{shown(path)}: is a directory, not {what}"
    hint = f"; to read a stream, give - and redirect it (< {shown(path, 60)})" if stream else ""
    return f"{shown(path)}: is {_kind(mode)}, not a regular file{hint}"


def check_regular(
    path: str | os.PathLike[str],
    what: str,
    error: type[Exception] = InputError,
    stream: bool = True,
) -> None:
    """Raises ``error`` (one line) unless ``path`` names a regular file (through links);
    ``what`` names what it should be ("a trace file"); ``stream``: whether the reader
    takes ``-`` instead, which the message then suggests."""
    try:
        st = os.stat(path)
    except OSError as e:
        why = "no such file" if e.errno == errno.ENOENT else reason(e)
        raise error(f"{shown(path)}: {why}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(_refusal(str(path), st.st_mode, what, stream))


def open_input(path: str, what: str, error: type[Exception] = InputError) -> BinaryIO:
    """A binary file object for ``path`` (``-`` is standard input), refused with one line
    (``error``) unless it is a regular file; ``what`` names what it should be
    ("a trace file")."""
    if path == "-":
        return sys.stdin.buffer
    check_regular(path, what, error)
    try:
        # O_NONBLOCK: if a FIFO took the file's place since the stat, open returns at once.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise error(f"{shown(path)}: cannot read: {reason(e)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise error(_refusal(path, mode, what, True))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def iter_lines(
    f: BinaryIO, source: str, max_line: int, error: type[Exception] = InputError
) -> Iterator[tuple[int, str, bool]]:
    """(line number, text without its end, whether it ended in a newline) for each line
    of ``f``, decoded as UTF-8 (bad bytes become U+FFFD), holding one line at a time.
    A line longer than ``max_line`` bytes raises ``error`` naming it. Lines are split as
    ``str.splitlines`` splits them, so numbers match an editor's."""
    lineno = 0
    while True:
        try:
            raw = f.readline(max_line + 1)
        except OSError as e:
            raise error(f"{source}: cannot read: {reason(e)}") from None
        if not raw:
            return
        if len(raw) > max_line and not raw.endswith(b"\n"):
            raise error(
                f"{source}: line {lineno + 1}: longer than {max_line} bytes, the longest "
                "line read; not a text file of this kind?"
            )
        text = raw.decode("utf-8", errors="replace")
        ended = text.endswith(("\n", "\r"))
        pieces = text.splitlines()
        for i, piece in enumerate(pieces):
            lineno += 1
            yield lineno, piece, ended or i < len(pieces) - 1


def read_limited(
    f: BinaryIO, source: str, limit: int, error: type[Exception] = InputError
) -> bytes:
    """The whole of ``f``, refused with one line if it is longer than ``limit`` bytes."""
    try:
        data = f.read(limit + 1)
    except OSError as e:
        raise error(f"{source}: cannot read: {reason(e)}") from None
    if len(data) > limit:
        raise error(f"{source}: longer than {limit} bytes, the largest input of this kind")
    return data
