"""Tests of the ``vmsim`` command line, run as a subprocess.

Every error a user can cause must print exactly one line on stderr,
``vmsim: error: …`` naming the problem, exit with code 2, and never show a
Python traceback or a Rust panic. Successful runs print /proc files in the
kernel's exact formats (checked by the ``procfmt`` fixture in conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import vmsim

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JSON_KEYS = {
    "summary",
    "vmstat",
    "vmstat_delta",
    "proc",
    "timeseries",
    "zones",
    "cpus",
    "tasks",
    "fragmentation",
    "kernel",
    "seed",
    "scenario",
    "vmsim_version",
}
OUTPUT_FILES = {
    "result.json",
    "vmstat",
    "buddyinfo",
    "pagetypeinfo",
    "slabinfo",
    "meminfo",
    "timeseries.parquet",
}


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The process failed the way every user error must: one stderr line, exit code 2."""
    err = proc.stderr
    assert "Traceback" not in err, err
    assert "panicked" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    line = lines[0]
    assert line.startswith("vmsim: error: "), line
    assert len(line) > len("vmsim: error: ") + 3, line
    for needle in needles:
        assert needle.lower() in line.lower(), f"{needle!r} not named in {line!r}"
    assert proc.stdout == "", proc.stdout
    return line


def assert_ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    return proc.stdout


def section(stdout: str, name: str) -> str:
    """The text of the ``==> NAME <==`` section of ``vmsim run`` output."""
    lines = stdout.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("==> ") and name in line]
    assert len(starts) == 1, f"section {name!r} not found once in:\n{stdout}"
    body = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("==> "):
            break
        body.append(line)
    while body and body[-1] == "":
        body.pop()
    assert body, f"section {name!r} is empty"
    return "\n".join(body) + "\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# Bad input: one line, exit code 2
# ---------------------------------------------------------------------------

TASK = '[[task]]\nname = "a"\n'

BAD_SCENARIOS = [
    pytest.param('colour = "blue"\n', ["colour"], id="unknown-top-level-key"),
    pytest.param('[machine]\nmemroy = "1GiB"\n', ["memroy"], id="unknown-machine-key"),
    pytest.param(
        "[kernel]\nmobility_groupin = false\n", ["mobility_groupin"], id="unknown-kernel-key"
    ),
    pytest.param(
        TASK + 'program = [{ op = "compute", time = "1ms", bogus = 1 }]\n',
        ["bogus"],
        id="unknown-op-key",
    ),
    pytest.param(TASK + 'program = [{ op = "teleport" }]\n', ["teleport"], id="unknown-op"),
    pytest.param(TASK + "prio = 1\nprogram = []\n", ["prio"], id="unknown-task-key"),
    pytest.param('[cgroups]\nlimit = "1GiB"\n', ["cgroups"], id="unknown-table"),
    pytest.param('[cgroup]\nlimit = "1GiB"\n', ["[[cgroup]]"], id="cgroup-not-an-array"),
    pytest.param('[machine]\ncpus = "eight"\n', ["eight"], id="wrong-type"),
    pytest.param('[machine]\nmemory = "8 parsecs"\n', ["parsecs"], id="bad-size-unit"),
    pytest.param('duration = "10 fortnights"\n', ["fortnights"], id="bad-duration-unit"),
    pytest.param("duration = 10\n", ["unit"], id="duration-without-unit"),
    pytest.param(
        TASK + 'program = [{ op = "compute", time = 5 }]\n', ["unit"], id="op-time-without-unit"
    ),
    pytest.param("[machine]\ncpus = 0\n", ["cpus"], id="zero-cpus"),
    pytest.param('[machine]\nmemory = "1MiB"\n', ["memory", "1MiB"], id="memory-too-small"),
    pytest.param('[machine]\nmemory = "64TiB"\n', ["memory", "64TiB"], id="memory-too-large"),
    pytest.param(
        TASK + 'program = [{ op = "alloc", order = 11 }]\n', ["order 11"], id="alloc-order-11"
    ),
    pytest.param(
        TASK + 'program = [{ op = "slab", cache = "no_such_cache", objects = 1 }]\n',
        ["no_such_cache"],
        id="unknown-slab-cache",
    ),
    pytest.param(
        '[[task]]\nname = "a task name too long"\nprogram = []\n',
        ["name"],
        id="task-name-too-long",
    ),
    pytest.param("seed = -1\n", ["-1"], id="negative-seed-in-file"),
    pytest.param("[machine\ncpus = 2\n", [], id="toml-syntax-unclosed-table"),
    pytest.param('name = "unterminated\n', [], id="toml-syntax-unterminated-string"),
    pytest.param("cpus = = 2\n", [], id="toml-syntax-extra-equals"),
]


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize(("text", "needles"), BAD_SCENARIOS)
def test_bad_scenario_is_one_line_error(cli, tmp_path, command, text, needles):
    scen = write(tmp_path / "bad.toml", text)
    assert_one_line_error(cli(command, scen), *needles)


@pytest.mark.parametrize("command", ["validate", "run"])
def test_missing_file(cli, tmp_path, command):
    assert_one_line_error(cli(command, tmp_path / "nosuch.toml"), "nosuch.toml")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_directory_instead_of_file(cli, tmp_path, command):
    d = tmp_path / "adir.toml"
    d.mkdir()
    assert_one_line_error(cli(command, d), "adir.toml")


def test_directory_error_says_it_is_a_directory(cli, tmp_path):
    d = tmp_path / "adir.toml"
    d.mkdir()
    line = assert_one_line_error(cli("validate", d), "adir.toml")
    assert "no such file" not in line.lower()


@pytest.mark.parametrize("command", ["validate", "run"])
def test_binary_non_utf8_file(cli, tmp_path, command):
    f = tmp_path / "binary.toml"
    f.write_bytes(b"\xff\xfe\x00\x01name = \x80\x81\n\x00\xc3\x28")
    assert_one_line_error(cli(command, f), "binary.toml", "utf-8")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_unreadable_file(cli, tmp_path, small_scenario, command):
    f = tmp_path / "secret.toml"
    shutil.copy(small_scenario, f)
    f.chmod(0)
    try:
        try:
            f.read_bytes()
        except PermissionError:
            pass
        else:
            pytest.skip("running with privileges that ignore file permissions (root)")
        assert_one_line_error(cli(command, f), "secret.toml")
    finally:
        f.chmod(0o644)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        pytest.param(["run", "--frobnicate"], ["--frobnicate"], id="unknown-run-option"),
        pytest.param(["knobs", "--frobnicate"], ["--frobnicate"], id="unknown-knobs-option"),
        pytest.param(["--frobnicate"], ["--frobnicate"], id="unknown-global-option"),
        pytest.param(["frobnicate"], ["frobnicate"], id="unknown-command"),
        pytest.param(["validate"], ["missing"], id="validate-without-file"),
        pytest.param(["compare"], ["missing"], id="compare-without-files"),
        pytest.param(["run", "SMALL", "--set", "machine.cpus"], ["machine.cpus"], id="set-no-eq"),
        pytest.param(
            ["run", "SMALL", "--set", "machine.colour=red"], ["colour"], id="set-unknown-machine"
        ),
        pytest.param(
            ["run", "SMALL", "--set", "kernel.no_such_knob=1"], ["no_such_knob"], id="set-unknown"
        ),
        pytest.param(["run", "SMALL", "--set", "colour=1"], ["colour"], id="set-unknown-top"),
        pytest.param(
            ["run", "SMALL", "--set", "machine..cpus=2"], ["machine..cpus"], id="set-empty-part"
        ),
        pytest.param(["run", "--set", "machine.cpus=0"], ["cpus"], id="set-impossible-value"),
        pytest.param(["run", "--set", "machine.memory=8 parsecs"], ["parsecs"], id="set-bad-unit"),
        pytest.param(["run", "SMALL", "--seed", "-1"], ["-1"], id="seed-negative"),
        pytest.param(["run", "SMALL", "--seed", str(2**64)], [str(2**64)], id="seed-too-big"),
        pytest.param(["run", "SMALL", "--seed", "seven"], ["seven"], id="seed-not-a-number"),
        pytest.param(["run", "SMALL", "--plot", "out.txt"], ["out.txt"], id="plot-not-png"),
    ],
)
def test_bad_command_line_is_one_line_error(cli, tmp_path, small_scenario, args, needles):
    args = [str(small_scenario) if a == "SMALL" else a for a in args]
    assert_one_line_error(cli(*args, cwd=tmp_path), *needles)
    assert list(tmp_path.iterdir()) == [], "a failed command left files behind"


def test_compare_missing_file(cli, tmp_path):
    assert_one_line_error(cli("compare", tmp_path / "nosuch.json"), "nosuch.json")


def test_compare_non_json_file(cli, tmp_path):
    f = write(tmp_path / "notes.json", "this is not JSON\n")
    assert_one_line_error(cli("compare", f), "notes.json", "json")


def test_compare_binary_file(cli, tmp_path):
    f = tmp_path / "blob.json"
    f.write_bytes(b"\xff\xfe\x00garbage\x80")
    assert_one_line_error(cli("compare", f), "blob.json")


def test_compare_json_that_is_not_a_result(cli, tmp_path):
    f = write(tmp_path / "other.json", '{"answer": 42}\n')
    assert_one_line_error(cli("compare", f), "other.json")


def test_compare_directory(cli, tmp_path):
    d = tmp_path / "results.json"
    d.mkdir()
    assert_one_line_error(cli("compare", d), "results.json")


def test_output_dir_with_missing_parent(cli, tmp_path, small_scenario):
    out = tmp_path / "no" / "such" / "dir"
    assert_one_line_error(cli("run", small_scenario, "--output-dir", out), "dir")
    assert not (tmp_path / "no").exists()


def test_output_dir_that_is_a_file(cli, tmp_path, small_scenario):
    f = write(tmp_path / "taken", "keep me\n")
    assert_one_line_error(cli("run", small_scenario, "--output-dir", f), "taken")
    assert f.read_text() == "keep me\n"


def test_no_arguments_prints_help_or_one_line(cli):
    proc = cli()
    assert "Traceback" not in proc.stderr
    if proc.returncode == 0:
        assert "Usage:" in proc.stdout
    else:
        assert_one_line_error(proc)


# ---------------------------------------------------------------------------
# vmsim run: /proc output in the kernel's formats
# ---------------------------------------------------------------------------


def test_format_checkers_accept_real_kernel_samples(procfmt):
    data = Path(__file__).parent / "data"
    rows = procfmt.buddyinfo((data / "proc-buddyinfo.txt").read_text())
    assert [zone for _, zone, _ in rows] == ["DMA", "DMA32", "Normal"]
    pti = procfmt.pagetypeinfo((data / "proc-pagetypeinfo.txt").read_text())
    assert pti["pageblock_order"] == 9
    assert pti["blocks"][(0, "Normal")] == [134, 447, 59, 0, 0]
    assert len(procfmt.reference_vmstat_names()) == 192


def check_buddy_and_pagetype(procfmt, buddy_text: str, pagetype_text: str) -> None:
    buddy = procfmt.buddyinfo(buddy_text)
    pti = procfmt.pagetypeinfo(pagetype_text)
    assert pti["pageblock_order"] == 9
    assert [(n, z) for n, z, _ in buddy] == list(pti["free"])
    for node, zone, counts in buddy:
        per_type = pti["free"][(node, zone)]
        summed = [sum(col) for col in zip(*per_type.values(), strict=True)]
        assert summed == counts, f"Node {node} {zone}: pagetypeinfo sums differ from buddyinfo"
    for z in buddy:
        assert z[1] in {"DMA", "DMA32", "Normal", "Movable"}


def test_run_prints_proc_files_in_kernel_format(cli, small_scenario, procfmt):
    out = assert_ok(cli("run", small_scenario))
    assert "scenario small" in out and "kernel grouping" in out
    buddy = section(out, "/proc/buddyinfo")
    check_buddy_and_pagetype(procfmt, buddy, section(out, "/proc/pagetypeinfo"))
    assert [z for _, z, _ in procfmt.buddyinfo(buddy)] == ["DMA", "DMA32"]
    delta = procfmt.vmstat(section(out, "/proc/vmstat"))
    names = set(procfmt.reference_vmstat_names())
    assert {name for name, _ in delta} <= names
    assert dict(delta)["pgfault"] > 0


def test_run_without_file_runs_default_with_overrides(cli, procfmt):
    out = assert_ok(cli("run", "--set", "duration=2s", "--set", "machine.memory=1GiB"))
    assert "scenario default" in out
    check_buddy_and_pagetype(
        procfmt, section(out, "/proc/buddyinfo"), section(out, "/proc/pagetypeinfo")
    )


def test_run_multi_node_vanilla_kernel_format(cli, small_scenario, procfmt):
    out = assert_ok(
        cli(
            "run",
            small_scenario,
            "--set",
            "machine.nodes=2",
            "--set",
            "machine.memory=6GiB",
            "--set",
            "kernel.mobility_grouping=false",
        )
    )
    buddy = section(out, "/proc/buddyinfo")
    check_buddy_and_pagetype(procfmt, buddy, section(out, "/proc/pagetypeinfo"))
    assert {n for n, _, _ in procfmt.buddyinfo(buddy)} == {0, 1}


def test_run_vmstat_flag_prints_all_counters_in_kernel_order(cli, small_scenario, procfmt):
    out = assert_ok(cli("run", small_scenario, "--vmstat"))
    rows = procfmt.vmstat(section(out, "/proc/vmstat <=="))
    assert [name for name, _ in rows] == procfmt.reference_vmstat_names()


# ---------------------------------------------------------------------------
# --json and determinism
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def json_runs(cli, tmp_path_factory):
    """Two identical grouping runs and one vanilla run, seed 7, as written files."""
    d = tmp_path_factory.mktemp("json-runs")
    scen = str(Path(__file__).parent / "data" / "scenarios" / "small.toml")
    runs = {
        "a": cli("run", scen, "--json", "--seed", "7"),
        "a2": cli("run", scen, "--json", "--seed", "7"),
        "b": cli(
            "run",
            scen,
            "--json",
            "--seed",
            "7",
            "--set",
            "kernel.mobility_grouping=false",
            "--set",
            "kernel.name=vanilla",
        ),
    }
    paths = {}
    for name, proc in runs.items():
        assert_ok(proc)
        paths[name] = d / f"{name}.json"
        paths[name].write_text(proc.stdout, encoding="utf-8")
    return {"stdout": {k: p.stdout for k, p in runs.items()}, "paths": paths}


def test_json_is_a_single_object_with_documented_keys(json_runs):
    out = json_runs["stdout"]["a"]
    obj, end = json.JSONDecoder().raw_decode(out)
    assert out[end:].strip() == "", "more than one JSON value on stdout"
    assert isinstance(obj, dict)
    assert JSON_KEYS <= set(obj), JSON_KEYS - set(obj)
    assert obj["seed"] == 7
    assert obj["scenario"] == "small"
    assert obj["kernel"] == "grouping"
    assert obj["vmsim_version"] == vmsim.__version__


def test_same_seed_gives_byte_identical_json(json_runs):
    assert json_runs["stdout"]["a"] == json_runs["stdout"]["a2"]


def test_cli_json_equals_api_json(json_runs, small_scenario):
    r = vmsim.run(small_scenario, seed=7)
    assert json_runs["stdout"]["a"].rstrip("\n") == r.json_text


def test_different_seed_is_reported(cli, small_scenario):
    obj = json.loads(assert_ok(cli("run", small_scenario, "--json", "--seed", "8")))
    assert obj["seed"] == 8


def test_set_overrides_reach_the_engine(json_runs, cli, small_scenario):
    b = json.loads(json_runs["stdout"]["b"])
    assert b["kernel"] == "vanilla"
    obj = json.loads(assert_ok(cli("run", small_scenario, "--json", "--set", "machine.cpus=4")))
    assert len(obj["cpus"]) == 4


def test_kernel_version_is_set_as_a_name_and_a_bad_one_is_one_line(cli, small_scenario):
    runs = [cli("run", small_scenario, "--json", "--set", "kernel.version=6.1") for _ in range(2)]
    assert assert_ok(runs[0]) == assert_ok(runs[1])
    bad = cli("run", small_scenario, "--set", "kernel.version=6.0")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        'vmsim: error: scenario: [kernel] (after --set): version: "6.0" is not a '
        'modelled kernel (known: "6.18", "6.1")'
    ]


# ---------------------------------------------------------------------------
# --output-dir and --plot
# ---------------------------------------------------------------------------


def test_output_dir_writes_all_files(cli, tmp_path, small_scenario, procfmt):
    out = tmp_path / "out"
    stdout = assert_ok(cli("run", small_scenario, "--seed", "7", "--json", "--output-dir", out))
    assert {p.name for p in out.iterdir()} == OUTPUT_FILES
    assert (out / "result.json").read_text() == stdout.rstrip("\n")
    result = json.loads((out / "result.json").read_text())
    vmstat = procfmt.vmstat((out / "vmstat").read_text())
    assert [name for name, _ in vmstat] == procfmt.reference_vmstat_names()
    assert dict(vmstat) == result["vmstat"]
    assert (out / "buddyinfo").read_text() == result["proc"]["buddyinfo"]
    check_buddy_and_pagetype(
        procfmt, (out / "buddyinfo").read_text(), (out / "pagetypeinfo").read_text()
    )
    assert (out / "slabinfo").read_text().startswith("slabinfo - version: 2.1\n")
    assert (out / "meminfo").read_text() == result["proc"]["meminfo"]
    assert (out / "meminfo").read_text().startswith("MemTotal:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "temporary files left behind"


def test_output_dir_existing_directory_keeps_other_files(cli, tmp_path, small_scenario):
    out = tmp_path / "out"
    out.mkdir()
    write(out / "notes.txt", "mine\n")
    write(out / "vmstat", "stale\n")
    assert_ok(cli("run", small_scenario, "--output-dir", out))
    assert {p.name for p in out.iterdir()} == OUTPUT_FILES | {"notes.txt"}
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "vmstat").read_text().startswith("nr_free_pages ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_output_dir_not_created_when_run_fails(cli, tmp_path):
    bad = write(tmp_path / "bad.toml", "[machine]\ncpus = 0\n")
    out = tmp_path / "out"
    assert_one_line_error(cli("run", bad, "--output-dir", out), "cpus")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_output_dir_not_created_when_plot_name_is_wrong(cli, tmp_path, small_scenario):
    out = tmp_path / "out"
    assert_one_line_error(
        cli("run", small_scenario, "--output-dir", out, "--plot", tmp_path / "p.svg"), "p.svg"
    )
    assert list(tmp_path.iterdir()) == []


def test_plot_into_missing_directory(cli, tmp_path, small_scenario):
    assert_one_line_error(
        cli("run", small_scenario, "--plot", tmp_path / "nodir" / "p.png"), "p.png"
    )
    assert list(tmp_path.iterdir()) == []


def test_plot_error_names_the_users_path(cli, tmp_path, small_scenario):
    target = tmp_path / "nodir" / "p.png"
    line = assert_one_line_error(cli("run", small_scenario, "--plot", target))
    assert ".tmp" not in line and str(target) in line


def test_plot_writes_png(cli, tmp_path, small_scenario):
    png = tmp_path / "free.png"
    assert_ok(cli("run", small_scenario, "--plot", png))
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    assert data.endswith(b"IEND\xaeB`\x82")
    assert [p.name for p in tmp_path.iterdir()] == ["free.png"], "temporary file left behind"


# ---------------------------------------------------------------------------
# knobs, scenario, validate, --version
# ---------------------------------------------------------------------------


def test_knobs_lists_every_knob(cli):
    out = assert_ok(cli("knobs"))
    lines = out.splitlines()
    knobs, tables = vmsim.knobs(), vmsim.api.table_knobs()
    assert len(lines) == len(knobs) + len(tables)
    for line, k in zip(lines, knobs + tables, strict=True):
        assert line.startswith(f"{k['key']} "), line
        assert k["unit"] in line
        assert k["max"] is None or f" {k['max']} " in line, line


def test_knobs_markdown_is_a_table(cli):
    out = assert_ok(cli("knobs", "--markdown"))
    lines = out.splitlines()
    assert lines[0] == "| key | unit | default | maximum | meaning |"
    assert lines[1] == "|---|---|---|---|---|"
    knobs, tables = vmsim.knobs(), vmsim.api.table_knobs()
    assert len(lines) == 2 + len(knobs) + 5 + len(tables)
    for line, k in zip(lines[2 : 2 + len(knobs)], knobs, strict=True):
        assert line.startswith(f"| `{k['section']}.{k['name']}` | {k['unit']} | `"), line
        assert line.endswith(" |")
        assert line.count("|") - line.count("\\|") == 6, line
    for line, k in zip(lines[-len(tables) :], tables, strict=True):
        assert line.startswith(f"| `{k['key']}` | {k['unit']} | {k['max']} | "), line


def test_scenario_prints_a_valid_scenario(cli, tmp_path):
    out = assert_ok(cli("scenario"))
    data = tomllib.loads(out)
    assert data["task"], "the default scenario has a workload"
    assert out.rstrip("\n") == vmsim.default_scenario().rstrip("\n")
    f = write(tmp_path / "default.toml", out)
    assert assert_ok(cli("validate", f)).strip() == f"{f}: ok"


def test_validate_good_file(cli, small_scenario):
    proc = cli("validate", small_scenario)
    assert assert_ok(proc).strip() == f"{small_scenario}: ok"
    assert proc.stderr == ""


def test_validate_empty_file_uses_defaults(cli, tmp_path):
    f = write(tmp_path / "empty.toml", "")
    assert assert_ok(cli("validate", f)).strip() == f"{f}: ok"


def test_version(cli):
    out = assert_ok(cli("--version"))
    assert out.strip() == f"vmsim, version {vmsim.__version__}"


def test_help(cli):
    out = assert_ok(cli("--help"))
    for command in ("run", "compare", "knobs", "scenario", "validate"):
        assert command in out


def test_console_script_is_installed(tmp_path):
    exe = shutil.which("vmsim") or str(Path(sys.executable).with_name("vmsim"))
    if not os.path.exists(exe):
        pytest.skip("the vmsim console script is not installed")
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"vmsim, version {vmsim.__version__}"
    proc = subprocess.run(
        [exe, "validate", tmp_path / "nosuch.toml"], capture_output=True, text=True, timeout=60
    )
    assert_one_line_error(proc, "nosuch.toml")


# ---------------------------------------------------------------------------
# vmsim compare
# ---------------------------------------------------------------------------


def test_compare_two_kernels(cli, json_runs):
    p = json_runs["paths"]
    proc = cli("compare", p["a"], p["b"])
    out = assert_ok(proc)
    assert proc.stderr == ""
    assert "grouping" in out and "vanilla" in out
    lines = out.splitlines()
    assert any(line.startswith("Duration User") for line in lines), out
    assert any(line.startswith("Amean") for line in lines), out
    header = next(line for line in lines if "grouping" in line)
    assert header.index("grouping") < header.index("vanilla")


def test_compare_named_groups(cli, json_runs):
    p = json_runs["paths"]
    out = assert_ok(cli("compare", f"base={p['a']},{p['a2']}", f"new={p['b']}"))
    assert "base" in out and "new" in out
    assert any(line.startswith("Amean") for line in out.splitlines())


# ---------------------------------------------------------------------------
# The hugetlb pool, GFP modifiers and /proc/meminfo

POOL_SCENARIO = """
duration = "5s"
[machine]
memory = "1GiB"
cpus = 2
[kernel]
nr_hugepages = 10
[[task]]
name = "sysctl"
program = [ { op = "nr_hugepages", pages = 50 }, { op = "snapshot", name = "grown" },
            { op = "nr_hugepages", pages = 20 } ]
"""


def test_the_pool_grows_and_shrinks_and_meminfo_shows_it(cli, tmp_path):
    scen = tmp_path / "pool.toml"
    scen.write_text(POOL_SCENARIO)
    out = assert_ok(cli("run", scen, "--meminfo"))
    assert "==> /proc/meminfo <==\nMemTotal:" in out
    assert "HugePages_Total:      20\n" in out
    assert "Hugetlb:           40960 kB\n" in out
    r = json.loads(assert_ok(cli("run", scen, "--json")))
    grown = r["snapshots"][0]["meminfo"]
    assert "HugePages_Total:      50\n" in grown
    assert r["vmstat"]["nr_hugetlb"] == 20 * 512
    # 10 at boot, 40 more in the run.
    assert r["vmstat"]["htlb_buddy_alloc_success"] == 50
    assert r["vmstat_delta"]["htlb_buddy_alloc_success"] == 40


@pytest.mark.parametrize(
    "change, needles",
    [
        ('pages = 50 }, { op = "snapshot"', ("nr_hugepages",)),
        ("nr_hugepages = 10", ("kernel.nr_hugepages", "memory")),
        ("pages = 20 }", ("node", "does not exist")),
    ],
)
def test_impossible_pools_are_one_line_errors(cli, tmp_path, change, needles):
    bad = {
        'pages = 50 }, { op = "snapshot"': 'pages = 5000 }, { op = "snapshot"',
        "nr_hugepages = 10": "nr_hugepages = 100000",
        "pages = 20 }": "pages = 20, node = 3 }",
    }[change]
    scen = tmp_path / "bad.toml"
    scen.write_text(POOL_SCENARIO.replace(change, bad))
    assert_one_line_error(cli("run", scen), *needles)


def test_an_unknown_gfp_flag_is_one_line_error(cli, tmp_path):
    scen = tmp_path / "gfp.toml"
    scen.write_text(
        '[[task]]\nname = "a"\nprogram = [ { op = "alloc", order = 9, type = "movable", '
        'gfp = ["__GFP_RETRY_MAYFAIL", "__GFP_BOGUS"] } ]\n'
    )
    assert_one_line_error(cli("run", scen), "__GFP_BOGUS", "__GFP_NORETRY")
