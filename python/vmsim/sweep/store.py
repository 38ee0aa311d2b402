"""Where a sweep's rows go: durable as they arrive, one Parquet file at the end.

Every finished run is written at once as its own file ``OUT.parts/<run_key>.json``
(a temporary file, fsync, then rename), so a row that was reported is on disk
even if the driver is killed the next moment. ``merge()`` folds the part files
into ``OUT`` (the Parquet file, rewritten whole: a temporary file, then
rename) and only then deletes them, so at every instant each finished row is
in ``OUT`` or in a part file, and one key is never two rows: where a key is in
both, the part file wins (it is newer). A lock (``flock`` on ``.OUT.lock``
beside it) keeps a second sweep from writing the same ``OUT`` at once.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vmsim import atomic
from vmsim.sweep.grid import SweepError
from vmsim.sweep.worker import ID_COLUMNS, RESULT_PREFIXES, RUN_COLUMNS

#: Column types that inference cannot know from a few rows (a seed may pass 2^63).
_FIXED_TYPES = {"seed": pl.UInt64, "error": pl.String, "kernel": pl.String, "host": pl.String}


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Writes ``path`` whole or not at all (:func:`vmsim.atomic.write_with`: a temporary
    file beside it, fsync, rename), then syncs the directory."""
    atomic.write_with(path, lambda tmp: tmp.write_bytes(data), suffix=".tmp")
    _fsync_dir(path.parent)


def knob_columns(columns: Iterable[str]) -> list[str]:
    """The columns of a table that are knobs: neither identity, run facts nor figures."""
    fixed = set(ID_COLUMNS) | set(RUN_COLUMNS)
    return [c for c in columns if c not in fixed and not c.startswith(RESULT_PREFIXES)]


def rows_frame(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """The rows as a table, columns in the order identity, knobs, run facts, figures."""
    if not rows:
        return pl.DataFrame(schema={c: _FIXED_TYPES.get(c, pl.String) for c in ID_COLUMNS})
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    knobs = knob_columns(seen)
    figures = [c for c in seen if c.startswith(RESULT_PREFIXES)]
    order = [*ID_COLUMNS, *knobs, *RUN_COLUMNS, *figures]
    overrides = {c: t for c, t in _FIXED_TYPES.items() if c in seen}
    df = pl.from_dicts(rows, schema_overrides=overrides, infer_schema_length=None)
    return df.select(order)


class ResultStore:
    """The Parquet file of a sweep and its part files, opened by one sweep at a time."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.parts = self.path.with_name(self.path.name + ".parts")
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._lock_fd: int | None = None
        self.target = self.path  # the file renamed over: a symbolic link's target

    def open(self) -> ResultStore:
        """Takes the lock, checks the file is a sweep's, removes half-written temporaries."""
        try:
            target, through = atomic.output_target(self.path)
        except atomic.OutputError as e:
            raise SweepError(str(e)) from None
        if through:
            raise SweepError(
                f"{atomic.shown(self.path)}: exists and is not a regular file (a sweep's "
                "results are a Parquet file, read and rewritten)"
            )
        self.target = target
        parent = self.path.parent
        if not parent.is_dir():
            raise SweepError(f"{atomic.shown(self.path)}: directory {parent} does not exist")
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SweepError(f"{self.path}: another vmsim sweep is writing it") from None
        self._lock_fd = fd
        self.parts.mkdir(exist_ok=True)
        stale_here = [*self.parts.glob(".*.tmp"), *parent.glob(f".{self.path.name}.*.tmp")]
        for stale in [*stale_here, *target.parent.glob(f".{target.name}.*.tmp")]:
            stale.unlink(missing_ok=True)
        self.read_file(["run_key"])  # a file not a sweep's is refused before anything runs
        return self

    def close(self) -> None:
        """Releases the lock (the part files stay until merged). The lock file stays:
        removing it would let two later sweeps lock two different files."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> ResultStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_file(self, columns: Sequence[str] | None = None) -> pl.DataFrame | None:
        """The rows already in the Parquet file (only ``columns`` if given), or None."""
        if not self.path.exists():
            return None
        try:
            schema = pl.read_parquet_schema(self.path)
            if "run_key" not in schema:
                raise SweepError(f"{self.path}: not a vmsim sweep (no run_key column)")
            cols = None if columns is None else [c for c in columns if c in schema]
            return pl.read_parquet(self.path, columns=cols)
        except SweepError:
            raise
        except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
            first = (str(e).strip().splitlines() or [""])[0]
            raise SweepError(f"{self.path}: not a Parquet file: {first}") from None

    def _part_files(self) -> list[Path]:
        return sorted(p for p in self.parts.glob("*.json") if not p.name.startswith("."))

    def read_parts(self) -> list[dict[str, Any]]:
        """The rows in part files (finished since the last merge)."""
        rows = []
        for p in self._part_files():
            try:
                rows.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
                raise SweepError(f"{p}: unreadable part file: {e}") from None
        return rows

    def done(self) -> dict[str, str | None]:
        """Every finished run: key → its error (None for a run that succeeded)."""
        out: dict[str, str | None] = {}
        df = self.read_file(["run_key", "error"])
        if df is not None:
            errors = df["error"] if "error" in df.columns else [None] * df.height
            out.update(zip(df["run_key"], errors, strict=True))
        for row in self.read_parts():
            out[row["run_key"]] = row.get("error")
        return out

    def add(self, row: dict[str, Any]) -> None:
        """Makes one finished row durable (its part file, written whole)."""
        data = json.dumps(row).encode()
        write_atomic(self.parts / f"{row['run_key']}.json", data)

    def merge(self, order: Sequence[str] = ()) -> pl.DataFrame:
        """Folds the part files into the Parquet file; returns the whole table.

        Rows whose key is in ``order`` come first, in that order; the others
        keep the order they had.
        """
        parts = self._part_files()
        new = rows_frame(self.read_parts())
        old = self.read_file()
        frames = [f for f in (old, new) if f is not None and f.height]
        df = pl.concat(frames, how="diagonal_relaxed") if frames else new
        df = df.unique(subset="run_key", keep="last", maintain_order=True)
        rank = {k: i for i, k in enumerate(order)}
        df = (
            df.with_row_index("_pos")
            .with_columns(
                pl.col("run_key")
                .replace_strict(rank, default=None, return_dtype=pl.Int64)
                .fill_null(len(rank) + pl.col("_pos").cast(pl.Int64))
                .alias("_rank")
            )
            .sort("_rank")
            .drop("_pos", "_rank")
        )
        df = _column_order(df)
        if parts:
            self._write(df)
            for p in parts:
                p.unlink(missing_ok=True)
        if not any(self.parts.iterdir()):
            self.parts.rmdir()
        return df

    def _write(self, df: pl.DataFrame) -> None:
        """Writes the whole table to the Parquet file (:func:`vmsim.atomic.write_with`:
        a temporary file, fsync, then rename)."""
        atomic.write_with(self.path, lambda tmp: df.write_parquet(tmp), suffix=".tmp")
        _fsync_dir(self.target.parent)


def _column_order(df: pl.DataFrame) -> pl.DataFrame:
    """Identity, knobs, run facts, then figures (rows of two sweeps may add columns)."""
    cols = df.columns
    ids = [c for c in ID_COLUMNS if c in cols]
    run = [c for c in RUN_COLUMNS if c in cols]
    figures = [c for c in cols if c.startswith(RESULT_PREFIXES)]
    return df.select([*ids, *knob_columns(cols), *run, *figures])
