"""Results are written whole or not at all: a temporary file beside the target,
then ``os.replace``; a directory of files is built beside its target and renamed
into place. Every module that writes a result (the CLI, reproductions,
``vmsim fidelity``, plots and maps) goes through here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["copy_file", "save_figure", "write_bytes", "write_dir", "write_text", "write_with"]

# The process's umask, so a result gets the permissions a plain open() would give it
# (mkstemp makes its file readable by its owner only).
_UMASK = os.umask(0)
os.umask(_UMASK)


def write_with(path: str | Path, write: Callable[[Path], object]) -> None:
    """Calls ``write(tmp)`` to fill a temporary file beside ``path``, then renames it to
    ``path``; on any error the temporary file is removed and ``path`` is untouched."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
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


def write_dir(out: str | Path, files: Mapping[str, str]) -> None:
    """Writes text files (name → text) into directory ``out``, each whole or not at all.

    A new directory is filled beside its target and renamed into place, so it appears
    with every file or not at all; into an existing directory each file is replaced by
    itself. The parent directory must exist.
    """
    out = Path(out).resolve()
    if out.exists():
        for name, text in files.items():
            write_text(out / name, text)
        return
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
