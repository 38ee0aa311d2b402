"""`vmsim report`: the page's contents, its inputs, bad inputs, determinism.

The page drawn in a real browser is tested in test_report_browser.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from vmsim import api, report


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, small_scenario, cli) -> Path:
    """A `vmsim run --output-dir` directory of the small scenario."""
    d = tmp_path_factory.mktemp("report") / "run"
    p = cli("run", small_scenario, "--output-dir", d)
    assert p.returncode == 0, p.stderr
    return d


@pytest.fixture(scope="module")
def repro_dir(tmp_path_factory, cli) -> Path:
    """A `vmsim reproduce throttle --output-dir` directory (small)."""
    d = tmp_path_factory.mktemp("report") / "repro"
    p = cli("reproduce", "throttle", "--runs", "2", "--scale", "0.05", "--output-dir", d)
    assert p.returncode == 0, p.stderr
    return d


def _figures(page: str) -> list[dict]:
    """The Plotly figures embedded in a page."""
    blobs = re.findall(r'<script type="application/json" id="fig-\d+">(.*?)</script>', page)
    return [json.loads(b) for b in blobs]


def test_a_run_report_has_every_section_and_nothing_from_outside(run_dir, cli, tmp_path):
    out = tmp_path / "r.html"
    p = cli("report", run_dir, "-o", out)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"wrote {out}: run small")
    page = out.read_text()
    # Self-contained: no script, style or image is fetched.
    assert not re.search(r"<(script|img|link)[^>]+(src|href)=\"(https?:|//)", page)
    assert "Plotly" in page and "data:image/png;base64," in page
    figs = _figures(page)
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert titles == [
        "Free pages, watermarks and boost",
        "Reclaim and compaction per sampling interval",
        "buddyinfo over time: free blocks per order",
        "Pageblocks by migratetype",
    ]
    result = json.loads((run_dir / "result.json").read_text())
    ts = result["timeseries"]
    free = figs[0]["data"][0]
    assert free["name"] == "nr_free_pages" and free["y"] == ts["vmstat"]["nr_free_pages"]
    boost = next(d for d in figs[0]["data"] if d["name"] == "watermark_boost")
    assert boost["y"] == ts["watermark_boost"] and boost["yaxis"] == "y2"
    heat = figs[2]["data"][0]
    assert heat["customdata"][3] == [row[3] for row in ts["buddyinfo"]]
    # The summary, the comparison table and the reclaim counters are in the page's text.
    assert f'<td>extfrag_events</td><td class="num">{result["summary"]["extfrag_events"]}' in page
    assert "Amean" in page or "Duration" in page
    assert "/proc/buddyinfo at the end" in page


def test_a_result_json_gives_the_same_page_as_its_directory(run_dir, tmp_path):
    report.write_report([run_dir], tmp_path / "a.html")
    report.write_report([run_dir / "result.json"], tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_the_same_inputs_give_the_same_bytes(run_dir, tmp_path):
    report.write_report([run_dir], tmp_path / "a.html")
    report.write_report([run_dir], tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_two_runs_are_compared(run_dir, tmp_path, small_scenario):
    other = tmp_path / "other.json"
    other.write_text(api.run(small_scenario, seed=9).json_text)
    report.write_report([run_dir, other], tmp_path / "two.html")
    page = (tmp_path / "two.html").read_text()
    assert '<h2 id="s0-comparison-mmtests-style' in page
    assert "small (grouping, seed 3)" in page and "small (grouping, seed 9)" in page
    assert len(_figures(page)) == 8


def test_a_reproduction_has_its_claims_and_the_seed_tables(repro_dir):
    page = (repro_dir / "report.html").read_text()
    result = json.loads((repro_dir / "result.json").read_text())
    for c in result["claims"]:
        assert f"<td>{c['verdict']}</td><td>{report._esc(c['claim'])}</td>" in page
    assert "The seed&#x27;s tables beside vmsim&#x27;s" in page
    # The first line of report.txt, as vmsim reproduce printed it.
    first = (repro_dir / "report.txt").read_text().splitlines()[0]
    assert report._esc(first) in page
    kernels = [k["name"] for k in result["kernels"]]
    titles = [f["layout"]["title"]["text"] for f in _figures(page)]
    for k in kernels:
        assert f"hackbench / {k}: free pages, watermarks, boost" in titles


def test_a_sweep_draws_each_varying_metric_against_its_knob(repro_dir, tmp_path):
    sweep = repro_dir / "throttle-sweep.parquet"
    report.write_report([sweep], tmp_path / "s.html")
    figs = _figures((tmp_path / "s.html").read_text())
    df = pl.read_parquet(sweep)
    assert figs, "no curve drawn"
    elapsed = next(f for f in figs if f["layout"]["title"]["text"].startswith("summary.elapsed"))
    assert elapsed["layout"]["xaxis"]["title"]["text"] == "kernel.reclaim_limit"
    mean = elapsed["data"][0]
    by_x = dict(zip(df["kernel.reclaim_limit"], df["summary.elapsed_seconds"], strict=True))
    assert mean["y"] == [by_x[x] for x in mean["x"]]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing", "missing: no such file or directory"),
        (lambda d: d, "not a vmsim output directory (no result.json"),
        (lambda d: _write(d / "x.json", '{"a": 1}'), "not a vmsim result (neither"),
        (lambda d: _write(d / "x.json", "[1, 2"), "not a vmsim result: invalid JSON"),
        (lambda d: _write(d / "x.txt", "hello\n"), "not a vmsim result: invalid JSON"),
        (lambda d: _write(d / "x.parquet", "not parquet"), "x.parquet: not a Parquet file"),
        (lambda d: _write(d / "x.json", "[" * 100), "nested more than 64 deep"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(make, message, cli, tmp_path):
    src = make(tmp_path)
    out = tmp_path / "r.html"
    p = cli("report", src, "-o", out)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert not out.exists()


def test_a_broken_series_is_refused(run_dir, cli, tmp_path):
    doc = json.loads((run_dir / "result.json").read_text())
    doc["timeseries"]["watermarks"].pop()
    bad = _write(tmp_path / "bad.json", json.dumps(doc))
    p = cli("report", bad, "-o", tmp_path / "r.html")
    assert p.returncode == 2
    assert "timeseries.watermarks does not match time_seconds" in p.stderr


def test_the_output_must_be_html_and_its_directory_exist(run_dir, cli, tmp_path):
    p = cli("report", run_dir, "-o", tmp_path / "r.txt")
    assert p.returncode == 2 and "name it *.html" in p.stderr
    p = cli("report", run_dir, "-o", tmp_path / "no" / "r.html")
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_a_failed_write_leaves_the_earlier_page(run_dir, cli, tmp_path, monkeypatch):
    import errno
    import os

    from vmsim import atomic

    out = tmp_path / "r.html"
    out.write_text("earlier")

    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(atomic.OutputError, match="No space left on device"):
        report.write_report([run_dir], out)
    assert out.read_text() == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_reproduction_page_is_the_same_twice(repro_dir, tmp_path):
    report.write_report([repro_dir], tmp_path / "a.html")
    report.write_report([repro_dir], tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    assert (tmp_path / "a.html").read_bytes() == (repro_dir / "report.html").read_bytes()


def test_reproduce_all_s_directory_has_a_section_per_experiment(repro_dir, tmp_path):
    import shutil

    # `vmsim reproduce all --output-dir D` keeps each experiment in D/NAME.
    shutil.copytree(repro_dir, tmp_path / "all" / "throttle")
    shutil.copytree(repro_dir, tmp_path / "all" / "again")
    sources = report.load_source(tmp_path / "all")
    assert [s.kind for s in sources] == ["reproduction", "reproduction"]
    assert [s.path.parent.name for s in sources] == ["again", "throttle"]
    assert all(s.runs for s in sources)
