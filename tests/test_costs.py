"""Tests of cost profiles: ``vmsim run --costs``, a scenario's ``costs`` key, ``vmsim costs``.

A profile gives every ``[cost]`` figure; the scenario's own ``[cost]`` keys override it
and ``--set cost.x=…`` overrides both. The built-in default profile changes no run, and
neither does the same figures given as a file. A bad profile is one line and exit 2.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import polars as pl
import pytest
import vmsim
from test_cli import assert_ok, assert_one_line_error
from vmsim import api

SMALL = Path(__file__).resolve().parent / "data" / "scenarios" / "small.toml"
DEFAULT = api.default_cost_profile()
DEF = api.cost_profile(DEFAULT)["cost"]


def profile_text(base: str = DEFAULT, **changes: int) -> str:
    """The default profile's TOML with some figures changed, named ``mine``."""
    text = api.cost_profile_text(base).replace(f'name = "{base}"', 'name = "mine"')
    for knob, ns in changes.items():
        # The first line of the knob is in [cost]; [method] has one too.
        text = re.sub(rf"^{knob} = \d+$", f"{knob} = {ns}", text, count=1, flags=re.M)
    return text


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def baseline(cli) -> str:
    """The small scenario's JSON result without any cost profile given."""
    return assert_ok(cli("run", SMALL, "--json"))


@pytest.fixture(scope="module")
def slow_faults(cli, tmp_path_factory) -> tuple[Path, str]:
    """A profile file whose page faults cost ten times the default, and the small
    scenario's JSON result with it."""
    path = write(tmp_path_factory.mktemp("costs") / "slow.toml", profile_text(page_fault=7000))
    return path, assert_ok(cli("run", SMALL, "--json", "--costs", path))


def sys_seconds(result: str) -> float:
    return float(json.loads(result)["summary"]["sys_seconds"])


def test_the_default_profile_changes_nothing(cli, tmp_path, baseline):
    assert assert_ok(cli("run", SMALL, "--json", "--costs", DEFAULT)) == baseline
    # The same figures from a file: the [cost] table is rewritten, the run is the same.
    copy = write(tmp_path / "copy.toml", api.cost_profile_text(DEFAULT))
    assert assert_ok(cli("run", SMALL, "--json", "--costs", copy)) == baseline
    scen = write(tmp_path / "s.toml", f'costs = "{DEFAULT}"\n' + SMALL.read_text())
    assert assert_ok(cli("run", scen, "--json")) == baseline


def test_a_profile_with_one_different_knob_changes_the_run(baseline, slow_faults):
    _, result = slow_faults
    assert sys_seconds(result) > 2 * sys_seconds(baseline)
    assert (
        json.loads(result)["summary"]["user_seconds"]
        == json.loads(baseline)["summary"]["user_seconds"]
    )


def test_a_scenario_s_costs_key_is_relative_to_its_file(cli, tmp_path, slow_faults):
    path, result = slow_faults
    scen = write(tmp_path / "sub" / "s.toml", 'costs = "p.toml"\n' + SMALL.read_text())
    write(tmp_path / "sub" / "p.toml", path.read_text())
    # Run from elsewhere: the profile is found beside the scenario, not in the cwd.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert assert_ok(cli("run", scen, "--json", cwd=elsewhere)) == result
    assert assert_ok(cli("validate", scen, cwd=elsewhere)) == f"{scen}: ok\n"
    # --costs replaces the key.
    assert assert_ok(cli("run", scen, "--json", "--costs", DEFAULT, cwd=elsewhere)) != result


def test_scenario_text_without_a_file_is_relative_to_the_cwd(tmp_path, monkeypatch, slow_faults):
    path, result = slow_faults
    write(tmp_path / "here.toml", path.read_text())
    monkeypatch.chdir(tmp_path)
    text = 'costs = "here.toml"\n' + SMALL.read_text()
    assert vmsim.run(text).json_text == result.rstrip("\n")
    data = tomllib.loads(vmsim.load_scenario(text))
    assert "costs" not in data and data["cost"]["page_fault"] == 7000
    assert len(data["cost"]) == len(api.cost_profile(DEFAULT)["cost"])


def test_precedence_scenario_cost_over_profile_and_set_over_both(cli, tmp_path, baseline):
    slow = write(tmp_path / "slow.toml", profile_text(page_fault=7000, clear_page=900))
    own = SMALL.read_text().replace(
        "[machine]", f"[cost]\npage_fault = {DEF['page_fault']}\n\n[machine]"
    )
    scen = write(tmp_path / "s.toml", 'costs = "slow.toml"\n' + own)
    text = vmsim.load_scenario(scen)
    cost = tomllib.loads(text)["cost"]
    assert (cost["page_fault"], cost["clear_page"]) == (DEF["page_fault"], 900)
    # The scenario's [cost] keeps page_fault; clear_page still comes from the profile.
    with_file = assert_ok(cli("run", scen, "--json"))
    assert with_file != baseline
    back = assert_ok(cli("run", scen, "--json", "--set", f"cost.clear_page={DEF['clear_page']}"))
    assert back == baseline
    # --set over the scenario's own [cost] and over --costs.
    cost = tomllib.loads(vmsim.load_scenario(scen, {"cost.page_fault": 5}))["cost"]
    assert (cost["page_fault"], cost["clear_page"]) == (5, 900)
    cost = tomllib.loads(vmsim.load_scenario(SMALL, {"cost.page_fault": 5}, costs=slow))["cost"]
    assert (cost["page_fault"], cost["clear_page"]) == (5, 900)
    # A built-in profile by name under a scenario's own [cost]: the engine merges them.
    plain = write(tmp_path / "plain.toml", own)
    assert assert_ok(cli("run", plain, "--json", "--costs", DEFAULT)) == baseline


def test_set_costs_chooses_the_profile_too(tmp_path, monkeypatch, slow_faults):
    path, result = slow_faults
    monkeypatch.chdir(path.parent)
    assert vmsim.run(SMALL, overrides={"costs": path.name}).json_text == result.rstrip("\n")
    with pytest.raises(vmsim.ScenarioError, match=r"^--set costs=3: not a cost profile"):
        vmsim.load_scenario(SMALL, {"costs": 3})


BAD_PROFILES = [
    pytest.param(
        lambda t: t.replace("page_fault = 700\n", "").replace("clear_page = 250\n", ""),
        ["cost profile mine: [cost] lacks page_fault, clear_page"],
        id="missing-knobs",
    ),
    pytest.param(
        lambda t: t.replace("[cost]\n", "[cost]\npagefault = 1\n"),
        ["cost profile mine: [cost] has unknown key pagefault"],
        id="unknown-key",
    ),
    pytest.param(
        lambda t: t + "\n[colour]\nblue = 1\n",
        ["unknown table [colour]"],
        id="unknown-table",
    ),
    pytest.param(
        lambda t: t + "\n[spread]\nbogus = [1, 2]\n",
        ["[spread] has unknown key bogus"],
        id="unknown-spread-key",
    ),
    pytest.param(
        lambda t: t.replace("page_fault = 700", "page_fault = 1000000001"),
        ["cost.page_fault = 1000000001 is above the maximum 1000000000"],
        id="above-maximum",
    ),
    pytest.param(
        lambda t: t.replace("page_fault = 700", 'page_fault = "fast"'),
        ["in [cost]: page_fault"],
        id="wrong-type",
    ),
    pytest.param(lambda t: "[profile\nname = 1\n", ["cost profile: line 1"], id="malformed-toml"),
    pytest.param(lambda t: "", ["missing field `profile`"], id="empty"),
]


@pytest.mark.parametrize(("edit", "needles"), BAD_PROFILES)
def test_a_bad_profile_is_one_line(cli, tmp_path, edit, needles):
    # seed-era: a profile without a [spread] table, which some edits add.
    bad = write(tmp_path / "bad.toml", edit(profile_text("seed-era")))
    assert_one_line_error(cli("run", SMALL, "--costs", bad), "--costs", "bad.toml", *needles)
    scen = write(tmp_path / "s.toml", 'costs = "bad.toml"\n' + SMALL.read_text())
    assert_one_line_error(cli("run", scen), 'costs = "bad.toml"', *needles)
    assert_one_line_error(cli("costs", bad), "bad.toml", *needles)


def test_a_profile_that_is_not_a_readable_file_is_one_line(cli, tmp_path):
    proc = cli("run", SMALL, "--costs", tmp_path / "nosuch.toml")
    assert_one_line_error(proc, "--costs", "nosuch.toml: no such file")
    (tmp_path / "dir.toml").mkdir()
    proc = cli("run", SMALL, "--costs", tmp_path / "dir.toml")
    assert_one_line_error(proc, "dir.toml: is a directory, not a cost profile file")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    assert_one_line_error(cli("run", SMALL, "--costs", tmp_path / "bin.toml"), "not UTF-8")
    scen = write(tmp_path / "s.toml", 'costs = "gone.toml"\n' + SMALL.read_text())
    proc = cli("run", scen)
    assert_one_line_error(proc, 'scenario: costs = "gone.toml"', "gone.toml: no such file")
    assert_one_line_error(cli("sweep", SMALL, "--costs", "nosuch.toml"), "--costs nosuch.toml")


def test_an_unknown_profile_name_is_one_line(cli, tmp_path):
    assert_one_line_error(
        cli("run", SMALL, "--costs", "nope"), "--costs nope: no such cost profile", DEFAULT
    )
    scen = write(tmp_path / "s.toml", 'costs = "nope"\n' + SMALL.read_text())
    line = assert_one_line_error(cli("run", scen))
    assert line == (
        'vmsim: error: scenario: costs = "nope": no such cost profile (built in: '
        f"{', '.join(api.builtin_cost_profiles())}); give a profile file with vmsim run "
        "--costs FILE"
    )
    # A file name that reaches the engine unread says who reads it.
    with pytest.raises(vmsim.ScenarioError, match="a cost profile file is read by"):
        vmsim._vmsim.validate('costs = "x.toml"\n')


def test_sweep_costs_and_sweeping_over_profiles(cli, tmp_path, slow_faults):
    path, result = slow_faults
    out = tmp_path / "one.parquet"
    assert_ok(cli("sweep", SMALL, "--costs", path, "-j", "1", "-o", out))
    rows = pl.read_parquet(out)
    assert rows["summary.sys_seconds"].to_list() == [sys_seconds(result)]
    out = tmp_path / "two.parquet"
    assert_ok(cli("sweep", SMALL, "--set", f"costs={DEFAULT},{path}", "-j", "2", "-o", out))
    rows = pl.read_parquet(out).sort("summary.sys_seconds")
    assert rows["costs"].to_list() == [DEFAULT, str(path)]
    assert rows["summary.sys_seconds"][1] == sys_seconds(result)
    proc = cli("sweep", SMALL, "--costs", path, "--set", f"costs={DEFAULT}", "-o", out)
    assert_one_line_error(proc, "--costs and --set costs")


def test_costs_command_prints_lists_and_round_trips(cli, tmp_path):
    out = assert_ok(cli("costs"))
    assert out.startswith(f"cost profile {DEFAULT} (the default)\n")
    knobs = [k["name"] for k in api.knobs() if k["section"] == "cost"]
    rows = out.split("\nknob ")[1].splitlines()[1:]
    assert [r.split()[0] for r in rows] == knobs
    assert "back-solved from seed 000's own user time" in assert_ok(cli("costs", "seed-era"))
    listed = assert_ok(cli("costs", "--list"))
    assert listed.splitlines()[0].startswith(DEFAULT)
    assert [p["name"] for p in json.loads(assert_ok(cli("costs", "--list", "--json")))] == (
        api.builtin_cost_profiles()
    )
    assert json.loads(assert_ok(cli("costs", DEFAULT, "--json"))) == api.cost_profile(DEFAULT)
    # --toml is a profile file: edited, it is a profile of its own.
    mine = write(tmp_path / "mine.toml", assert_ok(cli("costs", "--toml")))
    assert api.cost_profile(mine) == api.cost_profile(DEFAULT)
    spread = profile_text("seed-era") + "\n[spread]\nsyscall = [149, 160.5]\n"
    shown = assert_ok(cli("costs", write(tmp_path / "s.toml", spread)))
    assert shown.startswith("cost profile mine\n")
    assert any(r.split()[:3] == ["syscall", "150", "149-160.5"] for r in shown.splitlines())
    assert_one_line_error(cli("costs", "--list", DEFAULT), "--list takes no PROFILE")
    assert_one_line_error(cli("costs", "nope"), "nope: no such cost profile")


def test_default_cost_profile_is_the_engine_s_defaults():
    knobs = {k["name"]: k["default"] for k in api.knobs() if k["section"] == "cost"}
    assert api.cost_profile(DEFAULT)["cost"] == knobs
    assert DEFAULT in api.builtin_cost_profiles()
