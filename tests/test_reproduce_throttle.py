"""Tests of the seed 000 reproduction (vmsim.reproduce.throttle) at a small scale."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from vmsim.reproduce import throttle
from vmsim.reproduce.verdict import VERDICTS

SCALE = 0.05  # 6 groups (240 workers), 410 MiB of RAM, 102 MiB of swap
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METRICS = (
    "hackbench_seconds",
    "user_seconds",
    "sys_seconds",
    "elapsed_seconds",
    "major_faults",
    "max_parallel_reclaimers",
    "max_try_to_free_pages_ms",
)


@pytest.fixture(scope="module")
def cli_json(tmp_path_factory) -> tuple[dict, object]:
    """``vmsim reproduce throttle --json`` at SCALE, run from its own directory."""
    cwd = tmp_path_factory.mktemp("throttle")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vmsim.cli",
            "reproduce",
            "throttle",
            "--runs",
            "1",
            "--scale",
            str(SCALE),
            "--json",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.count("\n") == 1, "--json prints one line"
    return json.loads(out.stdout), cwd


def test_json_has_the_seed_table_for_both_kernels(cli_json):
    data, cwd = cli_json
    assert data["experiment"] == "throttle"
    assert [k["name"] for k in data["kernels"]] == ["off", "limit"]
    means = data["means"]["hackbench"]
    for k in ("off", "limit"):
        for m in METRICS:
            v = means[k][m]
            assert isinstance(v, int | float) and math.isfinite(v), (k, m, v)
    assert data["seed"]["kernels"]["off"]["max_parallel_reclaimers"] == 1298
    assert data["seed"]["kernels"]["limit"]["hackbench_seconds"] == 30.36
    assert (cwd / throttle.PLOT_FILE).read_bytes()[:8] == PNG_MAGIC


def test_the_limit_holds_and_the_sweep_follows_it(cli_json):
    """The mechanism every claim rests on: the gate admits at most the limit."""
    data, _ = cli_json
    k = data["means"]["hackbench"]
    # RECLAIM_LIMIT = 2 x 2 nodes; without it more tasks reclaim at once.
    assert k["limit"]["max_parallel_reclaimers"] <= 4
    assert k["off"]["max_parallel_reclaimers"] > k["limit"]["max_parallel_reclaimers"]
    assert k["limit"]["reclaim_throttled"] > 0 and k["off"]["reclaim_throttled"] == 0
    sweep = data["extra"]["sweep"]
    assert [int(x) for x in sweep] == [1, 2, 4, 8, 16, 64, 0]
    for lim, r in sweep.items():
        if lim != "0":
            assert r["max_parallel_reclaimers"] <= int(lim), (lim, r)
    assert sweep["4"] == data["per_run"]["hackbench"]["limit"][0]


def test_claims_carry_the_seeds_words_and_figures(cli_json):
    data, _ = cli_json
    claims = {c["id"]: c for c in data["claims"]}
    assert set(claims) == {c.id for c in throttle.CLAIMS}
    for c in claims.values():
        assert c["verdict"] in VERDICTS
        assert c["quote"] and c["claim"] and "p_value" in c
    # What holds because of the switch, or of a constant taken from the seed, says so.
    assert claims["reclaimers_limited"]["verdict"] == "by construction"
    assert claims["user_unchanged"]["verdict"] == "by construction"
    assert "user_seconds" in data["calibrated"]
    assert claims["hackbench_faster"]["seed_values"] == [282.30, 30.36]
    # One run: no test, so nothing can agree.
    assert all(c["p_value"] is None for c in claims.values())
    assert not any(c["verdict"] == "agrees" for c in claims.values())


def test_the_report_puts_the_seed_beside_vmsim(tmp_path):
    result = throttle.reproduce(1, SCALE, progress=False, output_dir=tmp_path)
    assert (tmp_path / "report.txt").read_text() == throttle.render_text(result)
    text = throttle.render_text(result)
    assert "hackbench result (s)" in text
    assert "282.30" in text and "30.36" in text  # the seed's figures
    assert "Limit sweep" in text and "unlimited" in text
    assert "user (s) †" in text and "† user_seconds: from a calibrated constant" in text
    assert "[by construction] at most RECLAIM_LIMIT = 4" in text


def test_scaling_keeps_the_machine_valid():
    for scale in (1.0, 0.5, 0.1, 1 / 64, 0.001):
        sc, plan = throttle.build_scenario("limit", 4, scale)
        assert plan["groups"] >= 1
        assert sc["kernel"]["reclaim_throttle"] == "limit"
    sc, _ = throttle.build_scenario("off", 0, 1.0)
    assert sc["kernel"]["reclaim_throttle"] == "off"
    assert sc["hackbench"][0]["groups"] == 120


def test_bad_arguments_are_one_line_and_exit_2():
    out = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "reproduce", "throttle", "--scale", "2"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--scale" in out.stderr


@pytest.mark.parametrize(
    "body, words",
    [
        ("groups = 0", "groups"),
        ('groups = 1\nsndbuf = "1KiB"', "sndbuf"),
        ('groups = 1\nflavour = "threads"', "flavour"),
    ],
)
def test_a_bad_hackbench_section_is_one_line(tmp_path, body, words):
    f = tmp_path / "hb.toml"
    f.write_text(f"[[hackbench]]\n{body}\n")
    out = subprocess.run(
        [sys.executable, "-m", "vmsim.cli", "run", str(f)], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and words in out.stderr, out.stderr
