"""Tests of the seed 002 reproduction (vmsim.reproduce.softlimit) at a tiny scale.

The full reproduction runs 144 cases; here only the 0 and 8k hierarchies run,
once each, with memory and work scaled to 1/16.
"""

from __future__ import annotations

import json
import re

import pytest
import vmsim
from vmsim.reproduce import ReproduceError, names
from vmsim.reproduce import softlimit as sl
from vmsim.reproduce.verdict import VERDICTS

SCALE = 0.0625
FIGURE_KEYS = {"min", "max", "avg", "std", "runs"}
LINE = re.compile(
    r"^(seed )?[0-9.]+k?-(0|no)-limit/(base|rework|reworkoptim): "
    r"min: [0-9.]+( \[[0-9.]+%\])? max: [0-9.]+( \[[0-9.]+%\])? "
    r"avg: [0-9.]+( \[[0-9.]+%\])? std: [0-9.]+ runs: \d+$"
)


CASES = [
    sl.case_name(w, size, lim)
    for w in ("dd", "kbuild")
    for lim in sl.LIMITS
    for size in ("0", "8k")
]


@pytest.fixture(scope="module")
def result() -> dict:
    return sl.reproduce(1, SCALE, cases=CASES, progress=False)


def test_runs_are_deterministic():
    sc = sl.build_scenario("dd", "8k", "0-limit", "rework", 1, SCALE)
    assert vmsim.run(sc, seed=1).json_text == vmsim.run(sc, seed=1).json_text


def test_softlimit_is_offered():
    assert "softlimit" in names()


def test_json_has_the_issue_shape(result):
    assert result["experiment"] == "softlimit"
    assert result["cases"] == CASES
    cases = result["extra"]["figures"]
    assert set(cases) == set(CASES)
    for case, kernels in cases.items():
        assert set(kernels) == set(sl.KERNELS), case
        for k, figs in kernels.items():
            assert set(figs) == {"system_seconds", "elapsed_seconds"}
            for fig in figs.values():
                assert set(fig) == FIGURE_KEYS
                assert fig["runs"] == 1 and fig["std"] == 0.0
                assert 0 < fig["min"] <= fig["avg"] <= fig["max"], (case, k, fig)
    json.dumps(result)


def test_the_8k_walk_costs_rework_more_system_time(result):
    """The mechanism of the seed's claims: the rework walks every group, the patch
    skips subtrees with no group in excess, base reclaims from its soft-limit tree."""
    c = result["extra"]["figures"]["dd-8k-0-limit"]
    sys = {k: c[k]["system_seconds"]["avg"] for k in sl.KERNELS}
    assert sys["rework"] > 2 * sys["base"]
    assert sys["reworkoptim"] < sys["rework"] / 2
    walk = result["extra"]["walk"]["dd-8k-0-limit"]
    assert walk["rework"]["groups_visited"] > 100 * walk["reworkoptim"]["groups_visited"]
    assert walk["base"]["soft_limit_reclaim_calls"] > 0
    assert walk["rework"]["soft_limit_reclaim_calls"] == 0


def test_report_uses_the_seed_layout_with_the_seed_lines_beside(result):
    text = sl.render_text(result)
    lines = [ln for ln in text.splitlines() if "-limit/" in ln and "min:" in ln]
    assert lines, text
    for ln in lines:
        assert LINE.match(ln), ln
    # vmsim's block and then the seed's, for every case that ran.
    assert "8k-0-limit/rework: min:" in text
    assert (
        "seed 8k-0-limit/rework: min: 200.86 [504.9%] max: 265.42 [630.6%] "
        "avg: 241.80 [588.5%] std: 29.06 runs: 3"
    ) in text
    assert "Claims" in text
    # Only the claims of the cases that ran; each with the seed's figures.
    ran = [c for c in sl.CLAIMS if c.case in CASES]
    assert [c["id"] for c in result["claims"]] == [c.id for c in ran]
    for c in result["claims"]:
        assert c["seed"] is not None and c["verdict"] in VERDICTS
        assert c["p_value"] is None  # one run: no test


def test_seed_figures_are_parsed_from_every_line():
    # 4 sizes x 2 limits x 2 workloads, 3 kernels, System and Elapsed; the posting
    # lost the System lines of dd 0-0-limit.
    n = sum(len(m) for case in sl.SEED.values() for m in case.values())
    assert n == 4 * 2 * 2 * 3 * 2 - 3
    assert sl.SEED["dd-8k-0-limit"]["rework"]["system_seconds"]["avg"] == 241.80
    assert sl.SEED["kbuild-8k-no-limit"]["reworkoptim"]["elapsed_seconds"]["min"] == 545.89
    assert "system_seconds" not in sl.SEED["dd-0-0-limit"]["base"]


def test_scenarios_carry_the_case(tmp_path):
    sc = sl.build_scenario("dd", "2k", "no-limit", "reworkoptim", 2, 0.5)
    assert sc["kernel"]["soft_limit_reclaim"] == "reworkoptim"
    a = next(g for g in sc["cgroup"] if g["path"] == "A")
    assert "soft_limit_in_bytes" not in a
    bunch = next(g for g in sc["cgroup"] if g["path"] == "bunch")
    assert bunch["generate"] == {"shape": "binary", "groups": 2046}
    assert sc["machine"]["memory"] == "512MiB"
    assert sc["task"][0]["program"][0]["size"] == "2GiB"
    kb = sl.build_scenario("kbuild", "0", "0-limit", "base", 1, SCALE)
    assert all(t["cgroup"] == "A" for t in kb["task"])
    assert all("generate" not in g for g in kb["cgroup"])
    # Every scenario the reproduction builds is valid for the engine.
    vmsim.load_scenario(sc)
    vmsim.load_scenario(kb)


def test_bad_arguments_are_refused():
    with pytest.raises(ReproduceError):
        sl.reproduce(0, SCALE)
    with pytest.raises(ReproduceError):
        sl.reproduce(1, 0.0)


TINY_CGROUPS = """
duration = "30s"
[machine]
memory = "64MiB"
cpus = 1
[[cgroup]]
path = "A"
soft_limit_in_bytes = 0
[[task]]
name = "dd"
cgroup = "A"
program = [ { op = "write", file = "f", size = "96MiB" } ]
"""


def test_run_prints_a_groups_memory_stat(cli, tmp_path):
    sc = tmp_path / "cg.toml"
    sc.write_text(TINY_CGROUPS, encoding="utf-8")
    proc = cli("run", sc, "--memcg-stat", "A", "--memcg-stat", "/")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "==> /sys/fs/cgroup/memory/A/memory.stat <==" in out
    assert "==> /sys/fs/cgroup/memory/memory.stat <==" in out
    stat = dict(
        line.split(" ", 1)
        for line in out.split("==> /sys/fs/cgroup/memory/A/memory.stat <==")[1]
        .split("==>")[0]
        .strip()
        .splitlines()
    )
    assert int(stat["pgpgin"]) == 96 * 256
    assert int(stat["total_pgsteal"]) > 0
    assert int(stat["hierarchical_memory_limit"]) == 9223372036854771712
    bad = cli("run", sc, "--memcg-stat", "nowhere")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "nowhere" in bad.stderr
