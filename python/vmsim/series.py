"""A run's time series as one table: a row per sample (polars; Parquet and CSV files).

``vmsim run --output-dir DIR`` writes it as ``DIR/timeseries.parquet`` (and
``DIR/timeseries.csv`` with ``--csv``); ``Result.timeseries_frame()`` returns it.
The columns, in this order (docs/report.md lists them with their meaning):

* ``time_seconds`` (Float64): simulated time of the sample;
* one Int64 column per sampled /proc/vmstat item, under its /proc/vmstat name
  (``nr_free_pages``, ``allocstall_normal``, ``pgscan_kswapd``, …: counters are
  cumulative, as /proc/vmstat shows them);
* ``buddyinfo_order_0`` … ``buddyinfo_order_10`` (Int64): free blocks of each order,
  summed over zones (a /proc/buddyinfo row);
* ``pageblocks_unmovable``, ``_movable``, ``_reclaimable``, ``_highatomic``,
  ``_isolate`` (Int64): pageblocks of each migratetype, summed over zones;
* ``watermark_min``, ``watermark_low``, ``watermark_high`` (Int64): the zones'
  watermarks summed, boost included [pages];
* ``watermark_boost`` (Int64): the zones' boosts summed [pages];
* ``mixed_pageblocks`` (Int64): pageblocks holding allocations of more than one mobility.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import polars as pl

__all__ = ["MIGRATETYPES", "frame", "to_csv", "to_parquet"]

MIGRATETYPES = ("unmovable", "movable", "reclaimable", "highatomic", "isolate")


def frame(result: Mapping[str, Any]) -> pl.DataFrame:
    """The time series of a run result (``Result.data``) as a DataFrame, a row per sample."""
    ts = result["timeseries"]
    cols: dict[str, pl.Series] = {
        "time_seconds": pl.Series(ts["time_seconds"], dtype=pl.Float64),
    }
    for name, values in ts["vmstat"].items():
        cols[name] = pl.Series(values, dtype=pl.Int64)
    orders = len(ts["buddyinfo"][0]) if ts["buddyinfo"] else 11
    for o in range(orders):
        cols[f"buddyinfo_order_{o}"] = pl.Series([r[o] for r in ts["buddyinfo"]], dtype=pl.Int64)
    for i, mt in enumerate(MIGRATETYPES):
        cols[f"pageblocks_{mt}"] = pl.Series([r[i] for r in ts["pageblocks"]], dtype=pl.Int64)
    for i, name in enumerate(("min", "low", "high")):
        cols[f"watermark_{name}"] = pl.Series([w[i] for w in ts["watermarks"]], dtype=pl.Int64)
    cols["watermark_boost"] = pl.Series(ts["watermark_boost"], dtype=pl.Int64)
    cols["mixed_pageblocks"] = pl.Series(ts["mixed_pageblocks"], dtype=pl.Int64)
    return pl.DataFrame(cols)


def to_parquet(df: pl.DataFrame) -> bytes:
    """The table as Parquet bytes (zstd; statistics on)."""
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=True)
    return buf.getvalue()


def to_csv(df: pl.DataFrame) -> str:
    """The table as CSV text with a header row."""
    return df.write_csv()
