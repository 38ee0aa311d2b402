"""The time series as a table: Result.timeseries_frame(), timeseries.parquet and .csv."""

from __future__ import annotations

import json

import polars as pl
import pytest
from vmsim import api, series


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory, cli, small_scenario):
    d = tmp_path_factory.mktemp("series") / "run"
    p = cli("run", small_scenario, "--output-dir", d, "--csv")
    assert p.returncode == 0, p.stderr
    return d


def test_every_series_is_a_column_of_its_own(out_dir):
    result = json.loads((out_dir / "result.json").read_text())
    ts = result["timeseries"]
    df = pl.read_parquet(out_dir / "timeseries.parquet")
    assert df.height == len(ts["time_seconds"]) > 1
    assert df["time_seconds"].to_list() == ts["time_seconds"]
    for name, values in ts["vmstat"].items():
        assert df[name].to_list() == values, name
    for o in range(11):
        assert df[f"buddyinfo_order_{o}"].to_list() == [r[o] for r in ts["buddyinfo"]]
    for i, mt in enumerate(series.MIGRATETYPES):
        assert df[f"pageblocks_{mt}"].to_list() == [r[i] for r in ts["pageblocks"]]
    assert df["watermark_low"].to_list() == [w[1] for w in ts["watermarks"]]
    assert df["watermark_boost"].to_list() == ts["watermark_boost"]
    assert df["mixed_pageblocks"].to_list() == ts["mixed_pageblocks"]
    expected = 1 + len(ts["vmstat"]) + 11 + 5 + 3 + 2
    assert df.width == expected
    assert df.schema["time_seconds"] == pl.Float64
    assert all(t == pl.Int64 for c, t in df.schema.items() if c != "time_seconds")


def test_the_csv_holds_the_same_table(out_dir):
    parquet = pl.read_parquet(out_dir / "timeseries.parquet")
    csv = pl.read_csv(out_dir / "timeseries.csv", schema=parquet.schema)
    assert csv.equals(parquet)
    assert (
        (out_dir / "timeseries.csv")
        .read_text()
        .splitlines()[0]
        .startswith("time_seconds,nr_free_pages,")
    )


def test_the_api_returns_the_same_frame(out_dir, small_scenario):
    r = api.run(small_scenario)
    assert r.timeseries_frame().equals(pl.read_parquet(out_dir / "timeseries.parquet"))


def test_the_same_run_writes_the_same_bytes(cli, small_scenario, tmp_path):
    for name in ("a", "b"):
        p = cli("run", small_scenario, "--output-dir", tmp_path / name, "--csv")
        assert p.returncode == 0, p.stderr
    for f in ("timeseries.parquet", "timeseries.csv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_csv_without_an_output_dir_is_one_line(cli, small_scenario):
    p = cli("run", small_scenario, "--csv")
    assert p.returncode == 2
    assert p.stderr == (
        "vmsim: error: --csv writes into the --output-dir: give --output-dir DIR too\n"
    )


def test_without_csv_no_csv_is_written(cli, small_scenario, tmp_path):
    p = cli("run", small_scenario, "--output-dir", tmp_path / "d")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "d" / "timeseries.parquet").is_file()
    assert not (tmp_path / "d" / "timeseries.csv").exists()
