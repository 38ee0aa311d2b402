"""Reading a sweep's Parquet file: columns by name, groups of rows, runs for `vmsim compare`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vmsim import inputs
from vmsim.sweep.grid import SweepError
from vmsim.sweep.store import knob_columns


def read(path: str | Path) -> pl.DataFrame:
    """The rows of a sweep's Parquet file; SweepError (one line) if it is not one."""
    p = Path(path)
    inputs.check_regular(p, "a sweep's Parquet file", SweepError, stream=False)
    try:
        df = pl.read_parquet(p)
    except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
        first = (str(e).strip().splitlines() or [""])[0]
        raise SweepError(f"{path}: not a Parquet file: {first}") from None
    if "run_key" not in df.columns:
        raise SweepError(f"{path}: not a vmsim sweep (no run_key column)")
    return df


def column(df: pl.DataFrame, name: str, what: str) -> str:
    """The column ``name`` names: itself, or the one column whose last dotted part it is."""
    if name in df.columns:
        return name
    hits = [c for c in df.columns if c.rsplit(".", 1)[-1] == name]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise SweepError(f"{what} {name}: ambiguous, one of {', '.join(hits)}")
    knobs = ", ".join(knob_columns(df.columns)) or "none"
    raise SweepError(
        f"{what} {name}: no such column (knobs: {knobs}; "
        "figures: summary.*, workload.*, vmstat.*, vmstat_delta.*)"
    )


def text(value: Any) -> str:
    """A cell as the user writes it on the command line (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_filter(spec: str, what: str) -> tuple[str, str]:
    """``KEY=VALUE`` as (key, value text)."""
    if "=" not in spec:
        raise SweepError(f"{what} {spec}: expected KEY=VALUE")
    key, value = (s.strip() for s in spec.split("=", 1))
    if not key or not value:
        raise SweepError(f"{what} {spec}: expected KEY=VALUE")
    return key, value


def where(df: pl.DataFrame, filters: Sequence[tuple[str, str]], what: str) -> pl.DataFrame:
    """The rows whose knobs have the given values (compared as the user writes them)."""
    for key, value in filters:
        col = column(df, key, what)
        df = df.filter(pl.col(col).cast(pl.String) == value)
        if df.height == 0:
            raise SweepError(f"{what} {key}={value}: no row has that value")
    return df


def ok_rows(df: pl.DataFrame) -> pl.DataFrame:
    """The rows of runs that succeeded."""
    return df.filter(pl.col("error").is_null()) if "error" in df.columns else df


def varying_knobs(df: pl.DataFrame, keep: Sequence[str] = ()) -> list[str]:
    """The knob columns, other than ``keep``, that take more than one value in ``df``."""
    return [c for c in knob_columns(df.columns) if c not in keep and df[c].n_unique() > 1]


def points(df: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """The points of a sweep in file order, named by their knob values (``4GiB/0``)."""
    knobs = knob_columns(df.columns)
    if not knobs:
        return [(df["scenario"][0] or "sweep", df)]
    groups = df.with_row_index("_pos").group_by(knobs, maintain_order=True)
    out = []
    for values, rows in groups:
        name = "/".join(text(v) for v in values)
        out.append((name, rows.drop("_pos")))
    return out


def run_dicts(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows as the run objects `vmsim compare` reads (``summary``, ``vmstat``, ``vmstat_delta``)."""
    runs = []
    sections = ("summary", "workload", "vmstat", "vmstat_delta")
    for row in ok_rows(df).iter_rows(named=True):
        run: dict[str, Any] = {"kernel": row.get("kernel"), "seed": row.get("seed")}
        for s in sections:
            run[s] = {
                c.split(".", 1)[1]: v
                for c, v in row.items()
                if c.startswith(s + ".") and v is not None
            }
        # vmsim run --json lists only the items that changed.
        run["vmstat_delta"] = {k: v for k, v in run["vmstat_delta"].items() if v != 0}
        runs.append(run)
    return runs


def compare_columns(spec: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """`vmsim compare` columns from ``[NAME=]FILE.parquet[:KEY=VALUE…]``.

    Without a filter every point of the file is a column, named by its knob
    values; with filters the matching rows are one column, named NAME or by
    the filter values.
    """
    name, rest = None, spec
    if "=" in spec.split(".parquet", 1)[0]:
        name, rest = spec.split("=", 1)
    path, _, filt = rest.partition(".parquet")
    path += ".parquet"
    filters = [parse_filter(f, "compare") for f in filt.lstrip(":").split(":")] if filt else []
    df = ok_rows(read(path))
    if filters:
        df = where(df, filters, f"compare {path}:")
        return [(name or "/".join(v for _, v in filters), run_dicts(df))]
    groups = points(df)
    if name is not None and len(groups) > 1:
        raise SweepError(
            f"compare {spec}: the file has {len(groups)} points; pick one with {path}:KEY=VALUE"
        )
    if name is not None:
        return [(name, run_dicts(df))]
    return [(n, run_dicts(rows)) for n, rows in groups]


def is_parquet_spec(spec: str) -> bool:
    """Whether a `vmsim compare` argument names a Parquet file."""
    return ".parquet" in spec
