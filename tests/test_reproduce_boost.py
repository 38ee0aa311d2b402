"""Tests of the seed 004 reproduction (vmsim.reproduce.boost) at a tiny scale."""

from __future__ import annotations

import json
import math

import pytest
from vmsim import api
from vmsim.reproduce import boost
from vmsim.reproduce.verdict import VERDICTS

SCALE = 0.02
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIGS = {"1socket-default", "1socket-madvhugepage", "2socket-default", "2socket-madvhugepage"}


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("boost")
    r = boost.reproduce(1, SCALE, output_dir=out)
    assert (out / boost.PLOT_FILE).read_bytes()[:8] == PNG_MAGIC
    assert (out / "report.txt").read_text() == boost.render_text(r)
    return r


def test_json_has_every_config_kernel_and_metric(result):
    data = json.loads(json.dumps(result))
    assert data["experiment"] == "boost"
    assert set(data["cases"]) == CONFIGS
    assert set(data["extra"]["configs"]) == CONFIGS
    for c, kernels in data["extra"]["configs"].items():
        assert set(kernels) == {"lowzone", "boost"}
        for k, m in kernels.items():
            for name in boost.METRICS:
                v = m[name]
                assert isinstance(v, int | float) and math.isfinite(v), (c, k, name)
            assert 0 <= m["huge_pct"] <= 100
            # Regions that fell back to base pages have a latency; with none, it is 0.
            if m["huge_pct"] < 100:
                assert m["fault_base_amean_us"] > 0, (c, k)
            else:
                assert m["fault_base_amean_us"] == 0, (c, k)
    assert [c["id"] for c in data["claims"]] == [c.id for c in boost.CLAIMS]
    for c in data["claims"]:
        assert c["verdict"] in VERDICTS
        assert c["seed"] is not None and c["quote"]


def test_claims_are_observed_only_where_fallbacks_happened(result):
    """The boost is raised by a fragmenting fallback: where lowzone had none, its
    claims are not observed; where it had some, they are judged."""
    for c in result["claims"]:
        events = result["means"][c["case"]]["lowzone"]["extfrag_events_below_pageblock"]
        if events < 1:
            assert c["verdict"] == "not observed", c
        else:
            assert c["verdict"] != "not observed" or "gave a figure" in c["detail"], c


def test_scenarios_follow_the_seed_configs():
    one = boost.plan("1socket-default", 1.0)
    two = boost.plan("2socket-madvhugepage", 1.0)
    assert (one["nodes"], one["thp_threads"], one["madvise"]) == (1, 1, False)
    assert (two["nodes"], two["thp_threads"], two["madvise"]) == (2, 5, True)
    # mmtests: FIO_SIZE = 1.5 x memory in 64 KiB files over 4 threads; THP threads fault
    # half of 3/4 of a node.
    assert one["fio_files_per_thread"] * 4 * (64 << 10) == one["memory"] * 3 // 2
    assert one["thp_fault_size"] == (one["memory"] * 3 // 4) // 2
    low = boost.build_scenario("1socket-madvhugepage", "lowzone", 1, SCALE)
    high = boost.build_scenario("1socket-madvhugepage", "boost", 1, SCALE)
    assert low["kernel"]["watermark_boost_factor"] == 0
    assert high["kernel"]["watermark_boost_factor"] == 15000

    def program(sc, name):
        return [op["op"] for t in sc["task"] if t["name"] == name for op in t["program"]]

    ops = program(high, "thpfioscale")
    assert "madvise" in ops and "thp_fault" in ops
    default = boost.build_scenario("1socket-default", "boost", 1, SCALE)
    assert "madvise" not in program(default, "thpfioscale")
    # thpfioscale-bench: fio's init, `sync`, then the readers and the warm-up.
    assert program(default, "bench") == ["wait", "sync", "signal"]
    fio = program(default, "fio")
    assert fio.index("wait") < fio.index("fio_read")


def test_the_files_are_on_xfs_with_its_metadata():
    """Seed 004's thpfioscale-xfs: creates make XFS's unmovable metadata buffers, so the
    1-socket runs have unmovable allocations beside the page cache."""
    sc = boost.build_scenario("1socket-default", "lowzone", 1, SCALE)
    assert sc["kernel"]["fs"] == "xfs"
    data = api.run(sc).data
    x = data["xfs"]
    files = boost.plan("1socket-default", SCALE)["fio_files_per_thread"] * boost.FIO_THREADS
    assert x["creates"] == files
    assert x["inode_chunks"] == -(-files // 64)
    assert x["buffer_pages_allocated"] >= 8 * x["inode_chunks"]


def test_text_has_the_seed_tables(result):
    text = boost.render_text(result)
    assert "extfrag events < order 9" in text
    assert "Amean     fault-base-1" in text
    assert "Amean     fault-huge-5" in text
    assert "Percentage huge-5" in text
    # The seed's figures are printed beside vmsim's.
    assert "653.58" in text and "1063.88" in text and "*  5.61%*" in text
    assert "804694" in text


def test_mmtests_rows_use_the_compare_rules():
    # Lower is better (pndiff): no huge page before, some after, is -99% (mmtests' rule).
    row = boost._mm_row("Amean", "fault-huge-1", 0.0, 178.93, "lower", True)
    assert row.startswith("Amean     fault-huge-1")
    assert row.endswith("178.93 *-99.00%*")
    # Higher is better (pdiff).
    row = boost._mm_row("Percentage", "huge-5", 0.78, 7.91, "higher", False)
    assert row.startswith("Percentage huge-5")
    assert row.endswith("7.91 (914.10%)")


def test_cli_errors_are_one_line(cli):
    p = cli("reproduce", "boost", "--scale", "0")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "--scale" in p.stderr


def test_runs_are_deterministic_and_sampling_does_not_change_them():
    sc = boost.build_scenario("1socket-madvhugepage", "boost", 1, SCALE)
    a = boost._run(sc, "a", SCALE)
    b = boost._run(sc, "b", SCALE)
    assert a.json_text == b.json_text
    fine = boost.build_scenario("1socket-madvhugepage", "boost", 1, SCALE, sampling="100ms")
    c = boost._run(fine, "c", SCALE)
    assert boost.run_samples(c) == boost.run_samples(a)
    assert len(c.timeseries["time_seconds"]) > len(a.timeseries["time_seconds"])
