"""Tests of the seed 003 reproduction (vmsim.reproduce.fragmentation) at a small scale."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest
from vmsim.reproduce import fragmentation as frag

SCALE = 0.05
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METRICS = (
    "load_attempts",
    "load_success",
    "load_success_pct",
    "rest_attempts",
    "rest_success",
    "extfrag_events",
    "mixed_pageblocks",
)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[dict, str]:
    """The same arguments twice, each from its own working directory: the result of
    ``reproduce`` and what ``main(..., as_json=True)`` printed."""
    mp = pytest.MonkeyPatch()
    try:
        first = tmp_path_factory.mktemp("first")
        mp.chdir(first)
        result = frag.reproduce(1, SCALE)
        assert (first / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
        second = tmp_path_factory.mktemp("second")
        mp.chdir(second)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert frag.main(runs=1, scale=SCALE, as_json=True) == 0
        assert (second / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
    finally:
        mp.undo()
    return result, buf.getvalue()


def test_json_shape(outputs):
    printed = outputs[1]
    assert printed.count("\n") == 1, "--json prints one line"
    data = json.loads(printed)
    assert data["experiment"] == "fragmentation"
    assert set(data["kernels"]) == {"vanilla", "grouping"}
    for k, metrics in data["kernels"].items():
        for m in METRICS:
            assert m in metrics, (k, m)
            assert isinstance(metrics[m], int | float) and math.isfinite(metrics[m]), (k, m)
    assert data["seed"]["kernels"]["vanilla"]["load_success"] == 30
    assert data["seed"]["kernels"]["grouping"]["load_success"] == 76
    assert data["seed"]["kernels"]["vanilla"]["rest_success"] == 45
    assert data["seed"]["kernels"]["grouping"]["rest_success"] == 159
    for p in ("load", "rest"):
        a = data["agreement"][p]
        assert a["direction"] in {"same", "opposite", "none"}
        assert isinstance(a["agrees"], bool)


def test_attempts_as_designed(outputs):
    n = frag.attempts_per_pass(SCALE)
    assert n == round(160 * SCALE)
    for metrics in outputs[0]["kernels"].values():
        assert metrics["load_attempts"] == n
        assert metrics["rest_attempts"] == n
        assert 0 <= metrics["load_success"] <= metrics["load_attempts"]
        assert 0 <= metrics["rest_success"] <= metrics["rest_attempts"]
        assert metrics["load_success"] + metrics["load_failed"] == n
        assert 0 <= metrics["load_success_pct"] <= 100


def test_vanilla_has_no_extfrag_events(outputs):
    # One free list: no fallback between migratetypes can happen.
    assert outputs[0]["kernels"]["vanilla"]["extfrag_events"] == 0


def test_deterministic(outputs):
    # Same arguments, same bytes: the second run's printed JSON is the first's.
    assert json.dumps(frag.json_summary(outputs[0])) == outputs[1].rstrip("\n")


def test_report_text(outputs):
    text = frag.render_text(outputs[0])
    for needle in (
        "Attempted allocations:",
        "Success allocs:",
        "% Success:",
        "Under load",
        "At rest",
        "Direction",
        "seed Clean",
        "seed MBuddyV19",
    ):
        assert needle in text, needle


def test_scenario_passes(outputs):
    sc, plan = frag.build_scenario("grouping", 1, SCALE)
    names = [t["name"] for t in sc["task"]]
    assert names.count(frag.LOAD_COMM) == 1 and names.count(frag.REST_COMM) == 1
    assert names.count("cc1") == 14  # 7 trees at -j2
    passes = {t["name"]: t for t in sc["task"] if t["name"] in (frag.LOAD_COMM, frag.REST_COMM)}
    for t in passes.values():
        assert t["repeat"] == plan["attempts_per_pass"]
        alloc = t["program"][0]
        assert alloc == {"op": "alloc", "order": 10, "count": 1, "type": "movable"}
    assert plan["start_seconds"]["load_pass"] < plan["start_seconds"]["rest_pass"]
    assert sc["kernel"]["mobility_grouping"] is True
    assert frag.build_scenario("vanilla", 1, SCALE)[0]["kernel"]["mobility_grouping"] is False


@pytest.mark.parametrize("scale", [0, -0.5, 1.5, float("nan")])
def test_bad_scale_is_one_line_error(capsys, scale):
    assert frag.main(runs=1, scale=scale) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("vmsim: error: --scale")


def test_cli_reproduce_fragmentation(cli, tmp_path):
    out = tmp_path / "out"
    proc = cli(
        "reproduce",
        "fragmentation",
        "--runs",
        "1",
        "--scale",
        SCALE,
        "--json",
        "--output-dir",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["experiment"] == "fragmentation"
    assert data["kernels"]["grouping"]["load_attempts"] == frag.attempts_per_pass(SCALE)
    assert (out / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
    assert {"result.json", "report.txt"} <= {p.name for p in out.iterdir()}


@pytest.fixture(scope="module")
def quarter() -> dict:
    """Three runs per kernel at scale 0.25 (40 attempts per pass)."""
    mp = pytest.MonkeyPatch()
    try:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            mp.chdir(d)
            return frag.reproduce(3, 0.25, progress=False)
    finally:
        mp.undo()


@pytest.mark.parametrize("pass_", ["load", "rest"])
def test_small_scale_moves_in_the_seeds_direction(quarter, pass_):
    """Grouping (with V19's per-CPU lists and retries) succeeds more often than vanilla,
    by more than the noise threshold, under load and at rest, as in the seed."""
    a = quarter["agreement"][pass_]
    assert a["direction"] == "same", a
    assert a["vmsim_diff_points"] >= a["noise_points"], a


def test_kernels_differ_by_the_v19_patches_only():
    v, _ = frag.build_scenario("vanilla", 1, SCALE)
    g, _ = frag.build_scenario("grouping", 1, SCALE)
    differ = {
        k for k in set(v["kernel"]) | set(g["kernel"]) if v["kernel"].get(k) != g["kernel"].get(k)
    }
    assert differ == {
        "name",
        "mobility_grouping",
        "pcp_high_batches",
        "pcp_high_per_list",
        "highorder_retry",
    }
    assert v["kernel"]["drain_pcp_on_failure"] is False
    assert g["kernel"]["drain_pcp_on_failure"] is False


def test_ablation_table(tmp_path):
    rows = frag.ablation(1, SCALE, progress=False)
    assert [r["variant"] for r in rows] == [label for label, _ in frag.ABLATION]
    assert rows[-1]["kernel"] == frag.KERNEL_KNOBS["grouping"]
    text = frag.render_ablation(rows, 1, SCALE)
    assert "grouping by mobility only" in text and "seed: Clean 18 %" in text


def test_ablation_bad_scale_is_one_line_error():
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "vmsim.reproduce.fragmentation", "--ablation", "--scale", "2"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--scale" in lines[0], p.stderr
