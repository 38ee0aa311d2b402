"""Tests of the seed 003 reproduction (vmsim.reproduce.fragmentation) at a small scale."""

from __future__ import annotations

import json
import math

import pytest
from vmsim.reproduce import fragmentation as frag
from vmsim.reproduce.verdict import VERDICTS

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
def outputs(tmp_path_factory, cli) -> tuple[dict, str]:
    """The same arguments twice, each from its own working directory: the result of
    ``reproduce`` and what ``vmsim reproduce fragmentation --json`` printed."""
    mp = pytest.MonkeyPatch()
    try:
        first = tmp_path_factory.mktemp("first")
        mp.chdir(first)
        result = frag.reproduce(1, SCALE, progress=False)
        assert (first / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
    finally:
        mp.undo()
    second = tmp_path_factory.mktemp("second")
    proc = cli("reproduce", "fragmentation", "--runs", 1, "--scale", SCALE, "--json", cwd=second)
    assert proc.returncode == 0, proc.stderr
    assert (second / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
    return result, proc.stdout


def test_json_shape(outputs):
    printed = outputs[1]
    assert printed.count("\n") == 1, "--json prints one line"
    data = json.loads(printed)
    assert data["experiment"] == "fragmentation"
    means = data["means"][frag.CASE]
    assert set(means) == {"vanilla", "grouping"}
    for k, metrics in means.items():
        for m in METRICS:
            assert m in metrics, (k, m)
            assert isinstance(metrics[m], int | float) and math.isfinite(metrics[m]), (k, m)
    assert data["seed"]["kernels"]["vanilla"]["load_success"] == 30
    assert data["seed"]["kernels"]["grouping"]["load_success"] == 76
    assert data["seed"]["kernels"]["vanilla"]["rest_success"] == 45
    assert data["seed"]["kernels"]["grouping"]["rest_success"] == 159
    assert [c["id"] for c in data["claims"]] == ["load_success_higher", "rest_success_higher"]
    for c in data["claims"]:
        assert c["verdict"] in VERDICTS and c["effect"] == "points"
        assert c["seed"] == pytest.approx({"load": 28.75, "rest": 71.25}[c["id"][:4]])


def test_attempts_as_designed(outputs):
    n = frag.attempts_per_pass(SCALE)
    assert n == round(160 * SCALE)
    for metrics in outputs[0]["means"][frag.CASE].values():
        assert metrics["load_attempts"] == n
        assert metrics["rest_attempts"] == n
        assert 0 <= metrics["load_success"] <= metrics["load_attempts"]
        assert 0 <= metrics["rest_success"] <= metrics["rest_attempts"]
        assert metrics["load_success"] + metrics["load_failed"] == n
        assert 0 <= metrics["load_success_pct"] <= 100


def test_vanilla_has_no_extfrag_events(outputs):
    # One free list: no fallback between migratetypes can happen.
    assert outputs[0]["means"][frag.CASE]["vanilla"]["extfrag_events"] == 0


def test_grouping_keeps_reclaimable_pages_together(outputs):
    """The mechanism both claims rest on: with grouping, reclaimable slab sits in
    fewer pageblocks, and vanilla mixes mobilities in its blocks (what grouping
    prevents), so the claims are observed."""
    rest = outputs[0]["extra"]["rest_start"]
    assert rest["grouping"]["with_reclaimable"] < rest["vanilla"]["with_reclaimable"]
    assert outputs[0]["means"][frag.CASE]["vanilla"]["mixed_pageblocks_max"] > 0
    assert all(c["verdict"] != "not observed" for c in outputs[0]["claims"])


def test_deterministic(outputs):
    # Same arguments, same bytes: the CLI's JSON is the first run's.
    assert json.dumps(outputs[0]) == outputs[1].rstrip("\n")


def test_report_text(outputs):
    text = frag.render_text(outputs[0])
    for needle in (
        "Attempted allocations:",
        "Success allocs:",
        "% Success:",
        "Under load",
        "At rest",
        "Claims",
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


@pytest.mark.parametrize("scale", ["0", "-0.5", "1.5", "nan"])
def test_bad_scale_is_one_line_error(cli, scale):
    proc = cli("reproduce", "fragmentation", "--runs", "1", "--scale", scale)
    assert proc.returncode == 2
    err = proc.stderr
    assert len(err.splitlines()) == 1 and err.startswith("vmsim: error: --scale"), err


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
    assert data["means"][frag.CASE]["grouping"]["load_attempts"] == frag.attempts_per_pass(SCALE)
    assert (out / frag.MAP_FILE).read_bytes()[:8] == PNG_MAGIC
    assert {"result.json", "report.txt"} <= {p.name for p in out.iterdir()}


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


def test_ablation_from_the_cli(cli):
    proc = cli("reproduce", "fragmentation", "--ablation", "--runs", "1", "--scale", SCALE)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for label, _ in frag.ABLATION:
        assert label in out
    assert "seed: Clean 18 %" in out and "Claims" in out
    data = json.loads(
        cli(
            "reproduce", "fragmentation", "--ablation", "--runs", "1", "--scale", SCALE, "--json"
        ).stdout
    )
    assert data["ablation"] is True
    assert [r["variant"] for r in data["rows"]] == [label for label, _ in frag.ABLATION]
    assert data["rows"][-1]["kernel"] == frag.KERNEL_KNOBS["grouping"]
    assert [c["id"] for c in data["claims"]] == ["load_success_higher", "rest_success_higher"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (("fragmentation", "--ablation", "--scale", "2"), "--scale"),
        (("throttle", "--ablation"), "--ablation"),
        (("fragmentation", "--ablation", "--output-dir", "x"), "--ablation"),
    ],
)
def test_ablation_errors_are_one_line(cli, tmp_path, args, needle):
    p = cli("reproduce", *args, cwd=tmp_path)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr


class _FakeResult:
    """The parts of a run's result that `_metrics` reads."""

    def __init__(self, tasks: dict, made: int, fork_failures: int) -> None:
        """`made`: order-10 attempts of the whole run."""
        order = 10
        fail = [0] * 11
        success = [0] * 11
        success[order] = made
        self.data = {
            "tasks": tasks,
            "fragmentation": {"alloc_success": success, "alloc_fail": fail},
            "timeseries": {"time_seconds": [0.0, 300.0], "vmstat": {"nr_anon_pages": [0, 0]}},
            "summary": {
                "elapsed_seconds": 300.0,
                "oom_kills": 0,
                "fork_failures": fork_failures,
                "extfrag_events": 0,
                "mixed_pageblocks": 0,
                "mixed_pageblocks_max": 0,
            },
            "vmstat": {},
        }


def test_a_pass_whose_task_was_never_forked_counts_no_attempt():
    """A load pass whose task could not be forked made no attempt: the at-rest pass's
    160 attempts are not counted as its successes, nor its fork's failure as a failed
    attempt."""
    plan = {
        "attempts_per_pass": 160,
        "order": 10,
        "memory": 1 << 30,
        "start_seconds": {"load_pass": 95.0, "rest_pass": 200.0},
    }
    tasks = {
        frag.LOAD_COMM: {"mean_runtime_seconds": 0.0, "alloc_failed": 1},
        frag.REST_COMM: {"mean_runtime_seconds": 17.4, "alloc_failed": 50},
        "updatedb": {"mean_runtime_seconds": 120.0},
    }
    notes: list[str] = []
    m = frag._metrics(_FakeResult(tasks, 160, 1), plan, notes)
    assert m["load_attempts"] == 0 and m["load_success"] == 0 and m["load_failed"] == 0
    assert math.isnan(m["load_success_pct"])
    assert (m["rest_attempts"], m["rest_success"]) == (160, 110)
    assert notes == ["the load pass's task could not be forked (no memory for it)"]
    # A load pass that ran but was cut short keeps its own attempts.
    tasks[frag.LOAD_COMM]["alloc_failed"] = 3
    notes = []
    m = frag._metrics(_FakeResult(tasks, 160 + 40, 0), plan, notes)
    assert (m["load_attempts"], m["load_success"]) == (40, 37)
    assert notes == ["the load pass did not finish before the time limit"]
