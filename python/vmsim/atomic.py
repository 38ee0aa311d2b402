"""Results are written whole or not at all, and nothing that is not a regular file
is ever replaced. Every module that writes a result (the CLI, reproductions, sweeps,
``vmsim fidelity``, plots and maps) goes through here; the Rust extension's
``write_whole`` (crates/vmsim-py/src/output.rs) follows the same rules for traces.

Where a result for PATH goes (:func:`output_target`):

* PATH does not exist, or is a regular file: the result is written to a temporary
  file in PATH's directory and renamed to PATH, so PATH holds the old file or the
  whole new one, never a part.
* PATH is a symbolic link to a regular file (or a dangling one): the same in the
  directory of the file the link names, so the link stays a link.
* PATH exists and is not a regular file (a character or block device, a FIFO, a
  symbolic link to one, ``/dev/stdout``, anything under ``/proc/*/fd`` or
  ``/dev/fd``): the result is made whole in a temporary file first, then written
  through, opening PATH for writing (a descriptor of this process, such as
  ``/dev/stdout``, is written as it is, sharing its offset, as a shell does); PATH
  itself is never replaced. A FIFO waits for its reader, as ``cat > FIFO`` does.
* PATH is a directory, a symbolic link loop, or cannot be written (no such
  directory, no permission, a full disk): :class:`OutputError`, one line naming
  PATH as the user gave it; an earlier file of that name is left as it was.

A directory of files (``--output-dir``) is built beside its target and renamed
into place (:func:`write_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "OutputError",
    "copy_file",
    "output_reason",
    "output_target",
    "save_figure",
    "shown",
    "write_bytes",
    "write_dir",
    "write_text",
    "write_with",
]

# The process's umask, so a result gets the permissions a plain open() would give it
# (mkstemp makes its file readable by its owner only).
_UMASK = os.umask(0)
os.umask(_UMASK)

#: The longest part of a user's path or name echoed in a message [characters].
SHOWN_MAX = 200
#: Links followed while looking for a /proc/*/fd or /dev/fd link (the kernel's MAXSYMLINKS).
_MAX_LINKS = 40
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FD_LINK = re.compile(r"^/(?:proc/[^/]+|dev)/fd/\d+$")


def shown(text: object, limit: int = SHOWN_MAX) -> str:
    """``text`` for a one-line message: control characters escaped, at most ``limit``
    characters (longer ones end in ``…``)."""
    s = str(text)
    if len(s) > 4 * limit:
        s = s[: 4 * limit]  # escaping a huge name whole would cost as much as echoing it
    s = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def reason(e: OSError) -> str:
    """The words of an OSError, as ``strerror`` has them (ELOOP: too many levels of
    symbolic links)."""
    return e.strerror or str(e)


class OutputError(OSError):
    """An output that cannot be written; ``str()`` is one line naming the user's path."""

    def __init__(self, path: str | Path, why: str, what: str = "cannot write") -> None:
        super().__init__(why)
        self.path = str(path)
        self.why = why
        self.what = what

    def __str__(self) -> str:
        return f"{shown(self.path)}: {self.what}: {self.why}"


def _fd_link(path: str | Path) -> str | None:
    """The /proc/PID/fd/N or /dev/fd/N that ``path`` is or leads to through links (the
    kind of /dev/stdout: it names an open file rather than a place in a directory)."""
    p = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        if _FD_LINK.match(p):
            return p
        if not os.path.islink(p):
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return None


def _own_fd(path: str | Path) -> int | None:
    """The descriptor N of this process that ``path`` names (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N): written through as it is, sharing its offset, as a shell does."""
    link = _fd_link(path)
    if link is None:
        return None
    parts = link.split("/")
    if parts[1] == "dev" or parts[2] in ("self", "thread-self", str(os.getpid())):
        return int(parts[-1])
    return None


def output_target(path: str | Path) -> tuple[Path, bool]:
    """(where to write, whether to write through) for a result to be written to ``path``:
    the regular file to replace by rename (a link's target for a symbolic link), or
    ``path`` itself to open and write. Raises OutputError for a directory, a link loop,
    or a path that cannot be looked at."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):  # a dangling link: create the file it names
            return Path(os.path.realpath(p)), False
        return p, False
    except OSError as e:
        raise OutputError(path, reason(e)) from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(path, "is a directory")
    if stat.S_ISREG(st.st_mode) and _fd_link(p) is None:
        return Path(os.path.realpath(p)), False
    return p, True


def _write_through(src: Path, path: Path) -> None:
    """Copies ``src`` into the existing non-regular file ``path`` (opened, never replaced)."""
    own = _own_fd(path)
    fd = os.dup(own) if own is not None else os.open(path, os.O_WRONLY | os.O_NOCTTY)
    try:
        with open(src, "rb") as f:
            while chunk := f.read(1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _wrap(e: OSError, path: str | Path, *mine: str | Path) -> OSError:
    """``e`` as an OutputError naming ``path`` if it concerns the output (no file name,
    or one of ``mine``); an error about another file (a copy's source) stays itself."""
    if isinstance(e, OutputError):
        return e
    if e.filename is not None and str(e.filename) not in {str(m) for m in mine}:
        return e
    return OutputError(path, output_reason(e, Path(path)))


def output_reason(e: OSError, path: Path) -> str:
    """The words for an output's OSError: a missing directory is named as such."""
    parent = Path(os.path.abspath(path)).parent
    if e.errno == errno.ENOENT and not parent.is_dir():
        return f"directory {shown(parent)} does not exist"
    return reason(e)


def write_with(
    path: str | Path, write: Callable[[Path], object], suffix: str | None = None
) -> None:
    """Calls ``write(tmp)`` to fill a temporary file, then puts it at ``path`` by the
    rules of this module (rename, or write through); on any error ``path`` is left as
    it was, the temporary file is removed, and an OSError about the output is raised
    as OutputError. ``suffix`` is the temporary file's (default: ``path``'s)."""
    target, through = output_target(path)
    suffix = Path(path).suffix if suffix is None else suffix
    if through:
        with tempfile.TemporaryDirectory(prefix="vmsim-") as d:
            tmp = Path(d) / f"result{suffix}"
            try:
                write(tmp)
                _write_through(tmp, target)
            except OSError as e:
                raise _wrap(e, path, tmp, target, path) from None
        return
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as e:
        raise OutputError(path, output_reason(e, Path(path))) from None
    tmp = Path(name)
    try:
        try:
            os.fchmod(fd, 0o666 & ~_UMASK)
        finally:
            os.close(fd)
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # a full disk shows here at the latest, before the rename
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(e, OSError):
            raise _wrap(e, path, tmp, target, path) from None
        raise


def write_text(path: str | Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` whole or not at all."""
    write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes(path: str | Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` whole or not at all."""
    write_with(path, lambda tmp: tmp.write_bytes(data))


def copy_file(src: str | Path, dst: str | Path) -> None:
    """Copies ``src`` to ``dst`` whole or not at all."""
    write_with(dst, lambda tmp: shutil.copyfile(src, tmp))


def save_figure(fig: Any, path: str | Path, dpi: int = 110) -> None:
    """Saves a matplotlib figure whole or not at all, in the format of ``path``'s suffix."""
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    write_with(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi))


def output_dir_problem(option: str, path: Path) -> str | None:
    """Why ``path`` cannot become or be an output directory (one line naming ``option``
    and the user's path), or None if it can: checked before a run, so nothing is lost."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = Path(os.path.realpath(path)).parent
        if not parent.is_dir():
            return f"{option} {shown(path)}: directory {shown(parent)} does not exist"
        return None
    except OSError as e:
        return f"{option} {shown(path)}: {reason(e)}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{option} {shown(path)}: exists and is not a directory"
    return None


def write_dir(out: str | Path, files: Mapping[str, str | bytes | Path]) -> None:
    """Writes files (name → text, bytes, or a file to copy) into directory ``out``, each
    whole or not at all.

    A new directory is filled beside its target and renamed into place, so it appears
    with every file or not at all; into an existing directory each file is written by
    :func:`write_text`'s rules. The parent directory must exist. Raises OutputError
    naming ``out`` (never the temporary directory) if it cannot be written.
    """
    given = out
    try:
        st = os.stat(out)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(given, reason(e)) from None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise OutputError(given, "exists and is not a directory")
        for name, text in files.items():
            if isinstance(text, Path):
                copy_file(text, Path(out) / name)
            elif isinstance(text, bytes):
                write_bytes(Path(out) / name, text)
            else:
                write_text(Path(out) / name, text)
        return
    out = Path(os.path.realpath(out))
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as e:
        raise OutputError(
            given, output_reason(e, Path(given)), "cannot create the directory"
        ) from None
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)
        for name, text in files.items():
            if isinstance(text, Path):
                shutil.copyfile(text, tmp / name)
            elif isinstance(text, bytes):
                (tmp / name).write_bytes(text)
            else:
                (tmp / name).write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise OutputError(given, reason(e), "cannot create the directory") from None
        raise
