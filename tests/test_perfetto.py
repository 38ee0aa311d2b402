"""`vmsim run --perfetto FILE`: the timeline decoded and checked against the run's own
counters and its ftrace text."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from vmsim import perfetto

REPO = Path(__file__).resolve().parent.parent
SWAP_AND_DD = REPO / "scenarios" / "swap-and-dd.toml"


def _run(cli, tmp: Path, scenario: Path | None, name: str) -> tuple[dict, dict, str]:
    """(timeline, result, ftrace text) of one run with --perfetto and --trace."""
    args = [scenario] if scenario else []
    p = cli(
        "run", *args, "--json", "--perfetto", tmp / f"{name}.json", "--trace", tmp / f"{name}.txt"
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp / f"{name}.json").read_text())
    return doc, json.loads(p.stdout), (tmp / f"{name}.txt").read_text()


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, cli):
    return _run(cli, tmp_path_factory.mktemp("perfetto"), None, "default")


@pytest.fixture(scope="module")
def dd_run(tmp_path_factory, cli):
    return _run(cli, tmp_path_factory.mktemp("perfetto"), SWAP_AND_DD, "dd")


def _spans(doc: dict, name: str) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == name]


def _threads(doc: dict) -> dict[int, tuple[int, str]]:
    """tid -> (process, comm-pid) of every track."""
    return {
        e["tid"]: (e["pid"], e["args"]["name"])
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _count(trace: str, event: str) -> int:
    return len(re.findall(rf" {event}: ", trace))


def test_spans_match_the_runs_own_counts(default_run):
    doc, result, trace = default_run
    delta = result["vmstat_delta"]
    allocstall = sum(v for k, v in delta.items() if k.startswith("allocstall_"))
    assert allocstall > 0, "the default run no longer reclaims directly: pick another run"
    assert len(_spans(doc, "direct reclaim")) == allocstall
    assert len(_spans(doc, "balance_pgdat")) == delta["pageoutrun"]
    assert len(_spans(doc, "kcompactd_do_work")) == delta["compact_daemon_wake"]
    assert len(_spans(doc, "compaction")) == _count(trace, "mm_compaction_begin") > 0
    assert len(_spans(doc, "shrink_slab")) == _count(trace, "mm_shrink_slab_start")
    # Each direct reclaim's result is its argument.
    reclaimed = sum(int(n) for n in re.findall(r"direct_reclaim_end: nr_reclaimed=(\d+)", trace))
    assert sum(s["args"]["nr_reclaimed"] for s in _spans(doc, "direct reclaim")) == reclaimed
    statuses = collections.Counter(s["args"]["status"] for s in _spans(doc, "compaction"))
    assert sum(statuses.values()) == len(_spans(doc, "compaction"))


def test_each_task_and_kernel_thread_has_its_track(default_run):
    doc, _, trace = default_run
    threads = _threads(doc)
    comms = {
        (int(m.group(2)), f"{m.group(1)}-{m.group(2)}")
        for m in re.finditer(r"^\s*(\S+)-(\d+)\s+\[", trace, re.M)
    }
    assert {(tid, name) for tid, (_, name) in threads.items()} == comms
    kthreads = {name for pid, name in threads.values() if pid == perfetto.PID_KTHREADS}
    assert any(n.startswith("kswapd0-") for n in kthreads)
    assert any(n.startswith("kcompactd0-") for n in kthreads)
    for s in _spans(doc, "direct reclaim"):
        assert threads[s["tid"]][0] == perfetto.PID_TASKS
    for s in _spans(doc, "balance_pgdat"):
        assert threads[s["tid"]][1].startswith("kswapd")


def test_counters_are_the_runs_time_series(default_run):
    doc, result, _ = default_run
    ts = result["timeseries"]
    series = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "C":
            series[e["name"]].append((e["ts"], e["args"]["pages"]))
    times = [round(t * 1e6) for t in ts["time_seconds"]]
    assert series["nr_free_pages"] == list(zip(times, ts["vmstat"]["nr_free_pages"], strict=True))
    assert [v for _, v in series["watermark high"]] == [w[2] for w in ts["watermarks"]]
    assert [v for _, v in series["watermark min"]] == [w[0] for w in ts["watermarks"]]
    assert [v for _, v in series["watermark_boost"]] == ts["watermark_boost"]


def test_spans_nest_on_every_track(default_run, dd_run):
    # Perfetto draws a thread's complete events as a stack: none may cross another.
    for doc, result, _ in (default_run, dd_run):
        end = round(result["summary"]["elapsed_seconds"] * 1e6)
        by_track = collections.defaultdict(list)
        for e in doc["traceEvents"]:
            if e["ph"] == "X":
                assert 0 <= e["ts"] and e["dur"] >= 0 and e["ts"] + e["dur"] <= max(end, e["ts"])
                by_track[e["tid"]].append((e["ts"], -e["dur"], e["ts"] + e["dur"]))
        for spans in by_track.values():
            stack: list[int] = []
            for t0, _, t1 in sorted(spans):
                while stack and stack[-1] <= t0:
                    stack.pop()
                assert not stack or t1 <= stack[-1], (t0, t1, stack)
                stack.append(t1)


def test_throttling_and_dirty_pages_of_a_writing_run(dd_run):
    doc, _, trace = dd_run
    throttled = _spans(doc, "reclaim throttled")
    assert len(throttled) == _count(trace, "mm_vmscan_throttled") > 0
    delayed = [int(x) for x in re.findall(r"usect_delayed=(\d+)", trace)]
    assert sorted(s["dur"] for s in throttled) == sorted(delayed)
    pauses = [int(x) for x in re.findall(r"balance_dirty_pages: .* pause=(\d+)", trace)]
    assert len(_spans(doc, "balance_dirty_pages pause")) == sum(1 for p in pauses if p > 0) > 0
    dirty = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"].startswith("nr_dirty")]
    assert len(dirty) == len(pauses)


def test_the_same_run_gives_the_same_bytes(cli, tmp_path, small_scenario):
    for name in ("a", "b"):
        p = cli("run", small_scenario, "--perfetto", tmp_path / f"{name}.json")
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert list(tmp_path.iterdir()) and not list(tmp_path.glob("*.txt"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--perfetto", "{d}/t.txt"], "name it *.json"),
        (["--perfetto", "{d}/no/t.json"], "does not exist"),
        (["--perfetto", "{d}"], "is a directory"),
        (
            ["--perfetto", "{d}/t.json", "--trace", "{d}/x.txt", "--trace-format", "legacy"],
            "--perfetto reads the trace in the modern format",
        ),
        (
            ["--perfetto", "{d}/t.json", "--trace", "/dev/null"],
            "--perfetto reads --trace back: /dev/null is not a regular file",
        ),
    ],
)
def test_bad_perfetto_arguments_are_one_line(args, message, cli, tmp_path, small_scenario):
    p = cli("run", small_scenario, *[a.format(d=tmp_path) for a in args])
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert not (tmp_path / "t.json").exists()
