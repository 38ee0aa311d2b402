"""Tests of ``vmsim sweep``, ``vmsim sweep-plot``, compare on Parquet and the sweep API.

A sweep's rows must be what single ``vmsim run --json`` runs print; a
sweep whose driver is killed must resume to exactly the full set of rows; a
worker that dies must have its run tried again; bad input must be one line
and exit code 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from test_cli import PNG_MAGIC, assert_one_line_error
from vmsim import sweep as sw
from vmsim.cli import main
from vmsim.sweep import capacity, grid
from vmsim.sweep.store import ResultStore
from vmsim.sweep.worker import result_columns

DATA = Path(__file__).resolve().parent / "data" / "scenarios"
SMALL = DATA / "small.toml"
SLOW = DATA / "sweep_slow.toml"
GRID_ARGS = (
    "--set",
    "kernel.min_free_kbytes=4096,8192",
    "--set",
    "machine.memory=256MiB,512MiB",
    "--seeds",
    "2",
)
#: Columns that differ between two executions of the same run.
WALL = ["wall_seconds", "host"]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", MPLBACKEND="Agg")
    return env


def _values(df: pl.DataFrame) -> pl.DataFrame:
    """A table without the wall time and host, rows by key: what must be reproducible."""
    return df.drop(WALL).sort("run_key")


@pytest.fixture(scope="module")
def local_sweep(cli, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The 2 × 2 × 2 grid run by `vmsim sweep` on the local cores."""
    out = tmp_path_factory.mktemp("sweep") / "grid.parquet"
    proc = cli("sweep", SMALL, *GRID_ARGS, "-j", "2", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out, proc


@pytest.fixture(scope="module")
def single_runs(cli) -> dict[tuple[int, str, int], dict]:
    """Each of the grid's eight runs as `vmsim run --json` prints it."""
    runs = {}
    for mfk in (4096, 8192):
        for mem in ("256MiB", "512MiB"):
            for seed in (1, 2):
                p = cli(
                    "run", SMALL, "--json", "--seed", seed,
                    "--set", f"kernel.min_free_kbytes={mfk}", "--set", f"machine.memory={mem}",
                )  # fmt: skip
                assert p.returncode == 0, p.stderr
                runs[(mfk, mem, seed)] = json.loads(p.stdout)
    return runs


# ---------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------


def test_set_values_with_units_arrays_and_ranges():
    assert grid.parse_set("machine.memory=4GiB,8GiB,16GiB") == (
        "machine.memory",
        ["4GiB", "8GiB", "16GiB"],
    )
    assert grid.parse_set("kernel.watermark_boost_factor=range(0,30001,15000)") == (
        "kernel.watermark_boost_factor",
        [0, 15000, 30000],
    )
    key, values = grid.parse_set("kernel.lowmem_reserve_ratio=[256,32,0],[128,16,0]")
    assert values == [[256, 32, 0], [128, 16, 0]]
    assert grid.parse_set('kernel.name="a,b",c')[1] == ["a,b", "c"]
    assert grid.parse_set("kernel.mobility_grouping=true,false")[1] == [True, False]
    assert grid.parse_set("kernel.swappiness=0,range(10,40,10),100")[1] == [0, 10, 20, 30, 100]


def test_cartesian_product_first_key_slowest():
    points = grid.cartesian({"a.x": [1, 2], "b.y": ["p", "q"]})
    assert points == [
        {"a.x": 1, "b.y": "p"},
        {"a.x": 1, "b.y": "q"},
        {"a.x": 2, "b.y": "p"},
        {"a.x": 2, "b.y": "q"},
    ]


def test_run_keys_follow_the_scenario_after_overrides_and_the_seed():
    a = sw.plan(SMALL, [{"kernel.min_free_kbytes": 4096}], [1, 2])
    b = sw.plan(SMALL, [{"kernel.min_free_kbytes": 4096}], [2, 1])
    assert {r.key for r in a} == {r.key for r in b} and len(a) == 2
    assert a[0].scenario_sha256 == a[1].scenario_sha256  # one point, two seeds
    c = sw.plan(SMALL, [{"kernel.min_free_kbytes": 8192}], [1])
    assert c[0].key not in {r.key for r in a}
    # The scenario's own seed (3 in small.toml) when no seed is given.
    assert [r.seed for r in sw.plan(SMALL, [{}])] == [3]
    # A point given twice is one run.
    assert len(sw.plan(SMALL, [{"kernel.swappiness": 10}, {"kernel.swappiness": 10}])) == 1


def test_invalid_point_is_a_run_with_its_error():
    runs = sw.plan(SMALL, [{"machine.memory": "12QB"}, {"machine.memory": "256MiB"}], [1])
    assert "unknown size unit 'QB'" in runs[0].error and runs[0].text == ""
    assert runs[1].error is None


# ---------------------------------------------------------------------------
# Local sweeps
# ---------------------------------------------------------------------------


def test_local_grid_rows_equal_single_runs(local_sweep, single_runs):
    out, proc = local_sweep
    df = pl.read_parquet(out)
    assert df.height == 8 and df["run_key"].n_unique() == 8
    assert df["error"].null_count() == 8
    assert "sweep: 8 runs (4 points)" in proc.stdout and "8 ran, 0 were there, 0 failed" in (
        proc.stdout
    )
    seen = set()
    for row in df.iter_rows(named=True):
        key = (row["kernel.min_free_kbytes"], row["machine.memory"], row["seed"])
        seen.add(key)
        data = single_runs[key]
        expected = result_columns(data)
        got = {c: row[c] for c in expected}
        assert got == expected, key
        figures = {c for c in df.columns if c.startswith(("summary.", "vmstat", "workload."))}
        assert figures == set(expected)
        assert (row["kernel"], row["scenario"], row["vmsim_version"]) == (
            data["kernel"],
            data["scenario"],
            data["vmsim_version"],
        )
    assert len(seen) == 8


def test_second_sweep_with_the_same_output_runs_nothing(cli, local_sweep):
    out, _ = local_sweep
    before = pl.read_parquet(out)
    proc = cli("sweep", SMALL, *GRID_ARGS, "-j", "2", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "0 ran, 8 were there, 0 failed" in proc.stdout
    assert pl.read_parquet(out).equals(before)


def test_grown_grid_runs_only_the_new_points(tmp_path):
    out = tmp_path / "g.parquet"
    first = sw.sweep(SMALL, {"kernel.swappiness": [10, 20]}, seeds=[1], jobs=1, output=out)
    assert (first.ran, first.already) == (2, 0)
    second = sw.sweep(SMALL, {"kernel.swappiness": [10, 20, 30]}, seeds=[1], jobs=1, output=out)
    assert (second.ran, second.already, second.total) == (1, 2, 3)
    df = pl.read_parquet(out)
    assert df["kernel.swappiness"].to_list() == [10, 20, 30]
    assert not (tmp_path / "g.parquet.parts").exists()


def test_failing_point_is_recorded_and_the_sweep_goes_on(cli, tmp_path):
    out = tmp_path / "f.parquet"
    proc = cli("sweep", SMALL, "--set", "machine.memory=256MiB,12QB", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "1 ran" not in proc.stdout and "2 ran, 0 were there, 1 failed" in proc.stdout
    msg = "1 failed: scenario: [machine] (after --set): memory: unknown size unit 'QB'"
    assert msg in proc.stdout
    df = pl.read_parquet(out)
    bad = df.filter(pl.col("error").is_not_null())
    assert bad["machine.memory"].to_list() == ["12QB"]
    assert bad["summary.elapsed_seconds"].to_list() == [None]
    # Recorded: not run again, unless asked.
    again = sw.sweep(SMALL, {"machine.memory": ["256MiB", "12QB"]}, output=out)
    assert (again.ran, again.failed) == (0, 1)
    retry = sw.sweep(SMALL, {"machine.memory": ["256MiB", "12QB"]}, output=out, retry_failed=True)
    assert (retry.ran, retry.failed) == (1, 1) and pl.read_parquet(out).height == 2


def test_run_grid_api_with_points_that_move_together():
    points = [
        {"kernel.reclaim_throttle": "off", "kernel.reclaim_limit": 0},
        {"kernel.reclaim_throttle": "limit", "kernel.reclaim_limit": 2},
    ]
    df = sw.run_grid(SMALL, points, seeds=[1, 2], jobs=2)
    assert df.height == 4
    assert df.select("kernel.reclaim_throttle", "kernel.reclaim_limit", "seed").rows() == [
        ("off", 0, 1),
        ("off", 0, 2),
        ("limit", 2, 1),
        ("limit", 2, 2),
    ]
    assert df["summary.elapsed_seconds"].null_count() == 0


def test_run_grid_from_a_script_without_a_main_guard():
    # Workers are fresh interpreters: the caller's script is not run again in them.
    code = (
        "from vmsim.sweep import run_grid; "
        f"print(run_grid({str(SMALL)!r}, {{}}, seeds=[1, 2]).height)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "2\n"), p.stderr


def _workers(pid: int) -> list[int]:
    """The worker processes of the sweep driver ``pid`` (Linux)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"vmsim.sweep.local" in cmdline:
                out.append(int(child))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _sweep_popen(*args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "vmsim.cli", "sweep", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )


def test_driver_killed_half_way_resumes_to_exactly_the_full_set(cli, tmp_path):
    out = tmp_path / "k.parquet"
    parts = tmp_path / "k.parquet.parts"
    args = (SLOW, "--seeds", 6, "-j", 2, "-o", out)
    proc = _sweep_popen(*args)
    _wait_for(lambda: parts.is_dir() and len(list(parts.glob("*.json"))) >= 2, 60, "two rows")
    workers = _workers(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    durable = len(list(parts.glob("*.json")))
    assert 2 <= durable < 6 and not out.exists()
    # The workers notice their driver is gone and exit after the run they are in.
    _wait_for(lambda: not any(_alive(p) for p in workers), 20, "orphaned workers to exit")
    resumed = cli(*(["sweep", *args]), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    line = resumed.stdout.splitlines()[0]
    ran = int(line.split(": ")[2].split(" ran")[0])
    there = int(line.split(", ")[1].split(" were there")[0])
    assert there >= durable and ran + there == 6 and ran < 6, line
    df = pl.read_parquet(out)
    assert df.height == 6 and df["run_key"].n_unique() == 6
    assert sorted(df["seed"].to_list()) == [1, 2, 3, 4, 5, 6]
    assert not parts.exists()
    reference = sw.run_grid(SLOW, {}, seeds=range(1, 7), jobs=2)
    assert _values(df).equals(_values(reference))


def test_killed_worker_has_its_run_tried_again(tmp_path):
    out = tmp_path / "w.parquet"
    parts = tmp_path / "w.parquet.parts"
    proc = _sweep_popen(SLOW, "--seeds", 3, "-j", 1, "-o", out)
    _wait_for(lambda: parts.is_dir() and len(list(parts.glob("*.json"))) >= 1, 60, "a row")
    (worker,) = [p for p in _workers(proc.pid) if _alive(p)]
    os.kill(worker, signal.SIGKILL)  # it holds the second run
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "3 ran, 0 were there, 0 failed, 1 retried after their worker died" in stdout
    assert "its worker was killed by SIGKILL" in stderr
    df = pl.read_parquet(out)
    assert df.height == 3 and df["error"].null_count() == 3


def test_run_that_kills_every_worker_is_recorded_as_failed(monkeypatch):
    from vmsim.sweep import local

    runs = sw.plan(SMALL, [{}], [1])
    rows, retried = [], []
    pool = local.LocalPool(1)
    # A worker that dies at once, whatever it is sent.
    monkeypatch.setattr(local, "worker_argv", lambda fd: [sys.executable, "-c", DIE])
    pool.run(runs, rows.append, lambda run, how: retried.append(how))
    assert len(retried) == local.MAX_RETRIES
    assert rows[0]["error"] == (f"worker process exited with code 3, {local.MAX_RETRIES + 1} times")


DIE = "import os, time; time.sleep(0.2); os._exit(3)"


# ---------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------


def test_row_in_both_the_file_and_a_part_is_one_row(tmp_path):
    out = tmp_path / "s.parquet"
    sw.sweep(SMALL, {"kernel.swappiness": [10, 20]}, seeds=[1], jobs=1, output=out)
    df = pl.read_parquet(out)
    # A driver killed after the merged file was renamed, before its parts were deleted.
    with ResultStore(out) as store:
        row = df.row(0, named=True) | {"wall_seconds": 123.0}
        store.add(row)
        merged = store.merge()
    assert merged.height == 2 and merged["run_key"].n_unique() == 2
    again = pl.read_parquet(out).filter(pl.col("run_key") == row["run_key"])
    assert again["wall_seconds"].to_list() == [123.0]  # the part, newer, wins


def test_second_sweep_on_the_same_output_is_refused(tmp_path):
    out = tmp_path / "l.parquet"
    with ResultStore(out):
        with pytest.raises(sw.SweepError, match="another vmsim sweep is writing it"):
            ResultStore(out).open()
    ResultStore(out).open().close()  # free again


def test_output_that_is_not_a_sweep_is_refused(cli, tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_text("not parquet")
    assert_one_line_error(cli("sweep", SMALL, "-o", bad), "not a Parquet file")
    other = tmp_path / "y.parquet"
    pl.DataFrame({"a": [1]}).write_parquet(other)
    assert_one_line_error(cli("sweep", SMALL, "-o", other), "not a vmsim sweep")


# ---------------------------------------------------------------------------
# Capacity
# ---------------------------------------------------------------------------


def _peak_rss(text: str) -> int:
    """The peak resident memory of a process that runs the scenario `text` [bytes]."""
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
    code = (
        "import re, sys; from vmsim import api; api.run(sys.stdin.read()); "
        "s = open('/proc/self/status').read(); "
        "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', s).group(1)) * 1024)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, check=True
    )
    return int(p.stdout)


def test_capacity_estimate_bounds_a_measured_worker(tmp_path):
    frames = (16 << 30) // 4096
    # A 16 GiB machine whose run touches little of it: the estimate bounds the peak,
    # and the frames never used cost nothing (written when first used).
    text = SMALL.read_text().replace('memory = "256MiB"', 'memory = "16GiB"')
    peak = _peak_rss(text)
    assert peak <= capacity.run_bytes(text)
    assert peak < frames * capacity.BYTES_PER_FRAME
    # One that fills it: the frame table is written, and the bound is not a loose one.
    full = (
        'duration = "30s"\n[machine]\nmemory = "16GiB"\ncpus = 1\n'
        '[[task]]\nname = "fill"\nprogram = [{ op = "touch", size = "15GiB" }]\n'
    )
    peak = _peak_rss(full)
    need = capacity.run_bytes(full)
    assert frames * capacity.BYTES_PER_FRAME < peak <= need < 2 * peak


def test_capacity_lowers_parallelism_or_refuses():
    runs = sw.plan(SMALL, [{"machine.memory": "64GiB"}], [1])
    need = capacity.run_bytes(runs[0].text)
    start = capacity.start_bytes(runs[0].text)
    room = capacity.HOST_RESERVE_BYTES
    assert capacity.fit_jobs(runs, 4, room + 2 * need + 1) == (2, need)
    assert capacity.gib(need) == "0.4 GiB"  # 16 Mi frames × 24 B + 64 MiB
    # Not even one whole need fits, but the run's start does: one worker at a time.
    assert capacity.fit_jobs(runs, 4, room + need - 1) == (1, need)
    assert start < need
    with pytest.raises(sw.SweepError, match=r"64GiB needs about 0\.1 GiB per worker to start"):
        capacity.fit_jobs(runs, 4, room + start - 1)


def test_grid_larger_than_the_host_runs_one_worker_at_a_time(cli, tmp_path):
    """An 8 TiB point needs 48 GiB if it used all its memory: more than this host has, so
    the sweep runs one worker at a time, and each run watches its own growth."""
    start = capacity.start_bytes(sw.plan(SMALL, [{"machine.memory": "8TiB"}], [1])[0].text)
    if start + capacity.HOST_RESERVE_BYTES + (2 << 30) > capacity.available_bytes():
        pytest.skip("this host cannot hold an 8 TiB machine's start")
    out = tmp_path / "c.parquet"
    proc = cli("sweep", SMALL, "--set", "machine.memory=256MiB,8TiB", "-j", "2", "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "1 worker(s) instead of 2: each needs about 48.1 GiB" in proc.stderr
    assert pl.read_parquet(out).height == 2


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


BAD_SETS = [
    (["--set", "kernel.swappiness"], "expected KEY=V1,V2"),
    (["--set", "kernel.swappiness="], "no value after '='"),
    (["--set", "kernel.swappiness=1,,2"], "empty value"),
    (["--set", "kernel.swappiness=range(1,2"], "missing ')'"),
    (["--set", "kernel.swappiness=range(a,b)"], "range() takes one to three integers"),
    (["--set", "kernel.swappiness=range(0,10,0)"], "step must not be zero"),
    (["--set", "kernel.swappiness=range(5,1)"], "is empty"),
    (["--set", "kernel.swappiness=1)"], "unbalanced ')'"),
    (["--set", "=1,2"], "not a dotted key"),
    (["--set", "kernel..swappiness=1"], "not a dotted key"),
    (["--set", "kernel.swappiness=1", "--set", "kernel.swappiness=2"], "given twice"),
    (["--set", "kernel.swapiness=1,2"], "unknown field `swapiness`"),
    (["--seeds", "0"], "--seeds 0: at least 1"),
    (["--seed-list", "1,x"], "'x' is not a seed"),
    (["--seeds", "2", "--runs", "3"], "--seeds and --runs: give one of them"),
    (["-j", "0"], "-j 0: at least one worker"),
]


@pytest.mark.parametrize("args,needle", BAD_SETS, ids=[" ".join(a) for a, _ in BAD_SETS])
def test_bad_sweep_input_is_one_line_exit_2(args, needle, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(SMALL), *args, "-o", str(tmp_path / "b.parquet")])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("vmsim: error: "), err
    assert needle in err, err
    assert not (tmp_path / "b.parquet").exists()


def test_bad_set_syntax_from_the_shell(cli, tmp_path):
    proc = cli("sweep", SMALL, "--set", "kernel.swappiness=range(1,", "-o", tmp_path / "b.parquet")
    assert_one_line_error(proc, "--set kernel.swappiness=range(1,", "missing ')'")


# ---------------------------------------------------------------------------
# Looking at a sweep
# ---------------------------------------------------------------------------


def test_sweep_plot_draws_mean_over_seeds(cli, local_sweep, single_runs, tmp_path):
    out, _ = local_sweep
    png = tmp_path / "p.png"
    proc = cli(
        "sweep-plot", out, "--x", "machine.memory", "--y", "sys_seconds",
        "--hue", "kernel.min_free_kbytes", "-o", png,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == PNG_MAGIC
    lines = proc.stdout.splitlines()
    assert lines[0] == "summary.sys_seconds"
    assert lines[1].split() == [
        "machine.memory", "kernel.min_free_kbytes", "mean", "std", "min", "max", "runs",
    ]  # fmt: skip
    for line in lines[2:]:
        mem, mfk, mean, *_, runs = line.split()
        ys = [single_runs[(int(mfk), mem, s)]["summary"]["sys_seconds"] for s in (1, 2)]
        assert float(mean) == pytest.approx(sum(ys) / 2, abs=5e-4) and runs == "2"
    assert len(lines) == 6


def test_sweep_plot_refuses_to_average_over_a_knob(cli, local_sweep, tmp_path):
    out, _ = local_sweep
    proc = cli("sweep-plot", out, "--x", "machine.memory", "--y", "sys_seconds")
    assert_one_line_error(proc, "also varies kernel.min_free_kbytes", "--where")
    ok = cli(
        "sweep-plot", out, "--x", "machine.memory", "--y", "sys_seconds",
        "--where", "kernel.min_free_kbytes=4096", "-o", tmp_path / "w.png",
    )  # fmt: skip
    assert ok.returncode == 0 and len(ok.stdout.splitlines()) == 4, ok.stderr
    assert_one_line_error(
        cli("sweep-plot", out, "--x", "machine.memory", "--y", "nosuch"), "--y nosuch"
    )


def test_compare_of_parquet_groups_equals_compare_of_json(cli, local_sweep, single_runs, tmp_path):
    out, _ = local_sweep
    specs = []
    for mem in ("256MiB", "512MiB"):
        files = []
        for seed in (1, 2):
            f = tmp_path / f"{mem}-{seed}.json"
            f.write_text(json.dumps(single_runs[(4096, mem, seed)]))
            files.append(str(f))
        specs.append((mem, ",".join(files)))
    from_json = cli("compare", *(f"m{mem}={files}" for mem, files in specs))
    from_parquet = cli(
        "compare",
        *(f"m{mem}={out}:kernel.min_free_kbytes=4096:machine.memory={mem}" for mem, _ in specs),
    )
    assert from_json.returncode == 0 and from_parquet.returncode == 0, from_parquet.stderr
    assert from_parquet.stdout == from_json.stdout
    every_point = cli("compare", out)
    assert every_point.stdout.splitlines()[0].split() == [
        "4096/256MiB", "4096/512MiB", "8192/256MiB", "8192/512MiB",
    ]  # fmt: skip
    assert_one_line_error(cli("compare", f"{out}:machine.memory=1GiB"), "no row has that value")


def test_bench_parallel_efficiency_is_a_ratio():
    from vmsim.sweep import bench

    eff, busy = bench.sweep_parallel_efficiency(runs=2, scenario=bench.TINY)
    assert 0 < eff < 1.5  # tiny runs: start-up dominates, the figure is still a ratio
    assert 0 < busy < 1
