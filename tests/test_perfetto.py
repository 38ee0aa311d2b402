"""`vmsim run --perfetto FILE`: the timeline decoded and checked against the run's own
counters, its time series and its ftrace text; `vmsim perfetto-plot` draws it."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from vmsim import perfetto, plots

REPO = Path(__file__).resolve().parent.parent
SWAP_AND_DD = REPO / "scenarios" / "swap-and-dd.toml"


def _run(cli, tmp: Path, scenario: Path | None, name: str, *extra: str) -> tuple[dict, dict, str]:
    """(timeline, result, ftrace text) of one run with --perfetto and --trace."""
    args = [scenario, *extra] if scenario else list(extra)
    p = cli(
        "run", *args, "--json", "--perfetto", tmp / f"{name}.json", "--trace", tmp / f"{name}.txt"
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp / f"{name}.json").read_text())
    return doc, json.loads(p.stdout), (tmp / f"{name}.txt").read_text()


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, cli):
    # Under the seed-era costs the default scenario reclaims directly and compacts, which
    # the span checks need; under measured-6.18 it does not compact.
    return _run(cli, tmp_path_factory.mktemp("perfetto"), None, "default", "--costs", "seed-era")


@pytest.fixture(scope="module")
def dd_run(tmp_path_factory, cli):
    return _run(cli, tmp_path_factory.mktemp("perfetto"), SWAP_AND_DD, "dd")


def _spans(doc: dict, name: str) -> list[dict]:
    """The spans (not the state slices) called ``name``."""
    return [
        e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "mm" and e["name"] == name
    ]


def _threads(doc: dict) -> dict[int, tuple[int, str]]:
    """tid -> (process, comm-pid) of every span track."""
    return {
        e["tid"]: (e["pid"], e["args"]["name"])
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] < perfetto.STATE_TID
    }


def _lanes(doc: dict) -> dict[int, list[tuple[int, int, str]]]:
    """pid -> its state slices (start, end, state) [ns], by time."""
    out = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") == "state":
            t0 = round(e["ts"] * 1000)
            out[e["tid"] - perfetto.STATE_TID].append((t0, t0 + round(e["dur"] * 1000), e["name"]))
    return {pid: sorted(s) for pid, s in out.items()}


def _lane_names(doc: dict) -> dict[int, tuple[int, str]]:
    """pid -> (process, name) of every state lane."""
    return {
        e["tid"] - perfetto.STATE_TID: (e["pid"], e["args"]["name"])
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] >= perfetto.STATE_TID
    }


def _counters(doc: dict) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(process name, counter) -> its (time [us], pages) samples."""
    procs = {
        e["pid"]: e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    series = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "C":
            series[(procs[e["pid"]], e["name"])].append((e["ts"], e["args"]["pages"]))
    return series


def _state_time(doc: dict, states: set[str] | None = None) -> dict[str, int]:
    """Nanoseconds spent in each state, over every lane."""
    total: collections.Counter[str] = collections.Counter()
    for slices in _lanes(doc).values():
        for t0, t1, state in slices:
            if states is None or state in states:
                total[state] += t1 - t0
    return total


def _count(trace: str, event: str) -> int:
    return len(re.findall(rf" {event}: ", trace))


def test_spans_match_the_runs_own_counts(default_run):
    doc, result, trace = default_run
    delta = result["vmstat_delta"]
    allocstall = sum(v for k, v in delta.items() if k.startswith("allocstall_"))
    assert allocstall > 0, "the default run no longer reclaims directly: pick another run"
    assert len(_spans(doc, "direct reclaim")) == allocstall
    assert len(_spans(doc, "balance_pgdat")) == delta["pageoutrun"]
    assert len(_spans(doc, "kcompactd_do_work")) == delta.get("compact_daemon_wake", 0)
    assert len(_spans(doc, "compaction")) == _count(trace, "mm_compaction_begin") > 0
    assert len(_spans(doc, "shrink_slab")) == _count(trace, "mm_shrink_slab_start")
    # Each direct reclaim's result is its argument.
    reclaimed = sum(int(n) for n in re.findall(r"direct_reclaim_end: nr_reclaimed=(\d+)", trace))
    assert sum(s["args"]["nr_reclaimed"] for s in _spans(doc, "direct reclaim")) == reclaimed
    statuses = collections.Counter(s["args"]["status"] for s in _spans(doc, "compaction"))
    assert sum(statuses.values()) == len(_spans(doc, "compaction"))


def test_each_task_and_kernel_thread_has_its_tracks(default_run):
    doc, result, trace = default_run
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
    # A state lane for every task the run started, kernel threads apart.
    lanes = _lane_names(doc)
    assert (
        sum(1 for proc, _ in lanes.values() if proc == perfetto.PID_TASKS)
        == (result["summary"]["tasks_started"])
    )
    names = {name for _, name in lanes.values()}
    for kthread in ("kswapd0", "kcompactd0", "kworker/u8:0"):
        pid = next(p for p, (proc, n) in lanes.items() if n.startswith(f"{kthread}-"))
        assert lanes[pid][0] == perfetto.PID_KTHREADS
    assert {n.removesuffix(" state") for n in names} >= {n for _, n in threads.values()}


def test_counters_are_the_runs_time_series(default_run):
    doc, result, _ = default_run
    ts = result["timeseries"]
    series = {name: v for (proc, name), v in _counters(doc).items() if proc.startswith("memory")}
    times = [round(t * 1e6) for t in ts["time_seconds"]]
    assert series["nr_free_pages"] == list(zip(times, ts["vmstat"]["nr_free_pages"], strict=True))
    assert [v for _, v in series["watermark high"]] == [w[2] for w in ts["watermarks"]]
    assert [v for _, v in series["watermark min"]] == [w[0] for w in ts["watermarks"]]
    assert [v for _, v in series["watermark_boost"]] == ts["watermark_boost"]


@pytest.mark.parametrize("run", ["default_run", "dd_run"])
def test_zone_counters_sum_to_the_machines(run, request):
    doc, result, _ = request.getfixturevalue(run)
    ts = result["timeseries"]
    series = _counters(doc)
    zones = sorted({proc for proc, _ in series if proc.startswith("zone ")})
    assert zones == [f"zone {z['node']} {z['zone']}" for z in result["zones"]]

    def summed(name: str) -> list[float]:
        return [
            sum(v) for v in zip(*([p for _, p in series[(z, name)]] for z in zones), strict=True)
        ]

    # Each zone's free pages, watermarks and boost add up to the machine's at every sample.
    assert summed("free") == ts["vmstat"]["nr_free_pages"]
    for i, w in enumerate(("min", "low", "high")):
        assert summed(f"watermark {w}") == [m[i] for m in ts["watermarks"]]
    assert summed("watermark_boost") == ts["watermark_boost"]
    # A zone's free pages are those of its migratetypes' free lists.
    for z in zones:
        by_type = [series[(z, f"free {mt}")] for mt in plots.MIGRATETYPES]
        summed_types = [sum(v for _, v in pts) for pts in zip(*by_type, strict=True)]
        assert summed_types == [v for _, v in series[(z, "free")]]
    # The last sample of the dirty and writeback pages is the run's /proc/vmstat at its end.
    memory = "memory (summed over zones)"
    sampled = {t for t, _ in series[(memory, "nr_free_pages")]}
    for name in ("nr_dirty", "nr_writeback"):
        points = [p for p in series[(memory, name)] if p[0] in sampled]
        assert len(points) == len(ts["time_seconds"])
        assert points[-1][1] == result["vmstat"][name]


@pytest.mark.parametrize(
    "run",
    [
        "default_run",
        pytest.param(
            "dd_run",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known, cause not found: the lanes of swap-and-dd, which now runs to "
                "its end, miss 18,613 ns of CPU time, ten context switches (1,864 ns "
                "each); the build before showed the same with machine.memory=2GiB",
            ),
        ),
    ],
)
def test_state_lanes_are_the_engines_accounts(run, request):
    doc, result, _ = request.getfixturevalue(run)
    s = result["summary"]
    end = round(s["elapsed_seconds"] * 1e9)
    for slices in _lanes(doc).values():
        # One state at a time, within the run.
        for (_, a1, _), (b0, _, _) in zip(slices, slices[1:], strict=False):
            assert a1 <= b0
        assert slices and 0 <= slices[0][0] and slices[-1][1] <= end
    time = _state_time(doc)
    # Time on run queues is the run's runq wait; time on a CPU, in whatever kernel work, is
    # the CPUs' user and system time (a step takes at least a nanosecond).
    assert time["runnable"] == pytest.approx(s["runq_wait_seconds"] * 1e9, abs=1000)
    on_cpu = sum(v for k, v in time.items() if k == "running" or k in perfetto.WORK_STATES)
    busy = (s["user_seconds"] + s["sys_seconds"]) * 1e9
    # A run stopped at its time limit leaves steps in flight on its CPUs: their share of
    # the lanes and of the accounts may differ by up to a quantum (50 us) per CPU.
    cut = 0 if s["completed"] else 50_000 * len(result["cpus"])
    assert on_cpu == pytest.approx(busy, rel=1e-6, abs=cut)


def test_direct_reclaim_and_compaction_states_lie_in_their_spans(default_run):
    doc, _, _ = default_run
    spans = collections.defaultdict(list)
    for name in ("direct reclaim", "compaction"):
        for e in _spans(doc, name):
            spans[(e["tid"], name)].append((e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000))
    seen = collections.Counter()
    for pid, slices in _lanes(doc).items():
        for t0, t1, state in slices:
            if state in ("direct reclaim", "compaction"):
                seen[state] += 1
                assert any(a <= t0 and t1 <= b for a, b in spans[(pid, state)]), (pid, t0, state)
    # Every direct reclaim and every compaction run shows on its task's lane.
    for (pid, name), intervals in spans.items():
        lane = [(t0, t1) for t0, t1, st in _lanes(doc)[pid] if st == name]
        for a, b in intervals:
            assert b == a or any(a <= t0 and t1 <= b for t0, t1 in lane), (pid, name, a)
    assert seen["direct reclaim"] >= len(_spans(doc, "direct reclaim")) > 0
    assert seen["compaction"] > 0


def test_spans_nest_on_every_track(default_run, dd_run):
    # Perfetto draws a thread's complete events as a stack: none may cross another.
    for doc, result, _ in (default_run, dd_run):
        # The run's end to the microsecond; a span may end up to half of one past it.
        end = round(result["summary"]["elapsed_seconds"] * 1e6) * 1000 + 500
        by_track = collections.defaultdict(list)
        for e in doc["traceEvents"]:
            if e["ph"] == "X":
                t0, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
                assert 0 <= t0 and dur >= 0 and t0 + dur <= max(end, t0)
                by_track[e["tid"]].append((t0, -dur, t0 + dur))
        for spans in by_track.values():
            stack: list[int] = []
            for t0, _, t1 in sorted(spans):
                while stack and stack[-1] <= t0:
                    stack.pop()
                assert not stack or t1 <= stack[-1], (t0, t1, stack)
                stack.append(t1)


_THROTTLE = re.compile(
    r"^\s*\S+-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): "
    r"(?:mm_vmscan_throttled: .*usect_delayed=(\d+)|balance_dirty_pages: .* pause=(\d+))",
    re.M,
)


def test_throttled_time_is_the_traced_throttles(dd_run):
    doc, result, trace = dd_run
    end = round(result["summary"]["elapsed_seconds"] * 1e9)
    # Each throttle the trace shows, as bounds of its sleep [ns]: the trace prints
    # usect_delayed truncated to microseconds and the pause to milliseconds.
    traced = collections.defaultdict(list)
    for m in _THROTTLE.finditer(trace):
        at = round(float(m.group(2)) * 1e6) * 1000
        if m.group(3) is not None:
            us = int(m.group(3))
            traced[int(m.group(1))].append((at, us * 1000, (us + 1) * 1000))
        elif int(m.group(4)) > 0:
            ms = int(m.group(4))
            traced[int(m.group(1))].append((at, ms * 10**6, (ms + 1) * 10**6))
    slices = 0
    for pid, lane in _lanes(doc).items():
        events = sorted(traced.get(pid, []))
        i = 0
        for t0, t1, state in lane:
            if state != "throttled":
                continue
            # The throttles of the step that ended where this sleep begins.
            lo = hi = 0
            while i < len(events) and events[i][0] <= t0:
                lo, hi, i = lo + events[i][1], hi + events[i][2], i + 1
            assert lo <= t1 - t0 < hi or (t1 == end and t1 - t0 < hi), (pid, t0, t1, lo, hi)
            slices += 1
        assert i == len(events), f"{pid}: throttles without a throttled state"
    assert slices > 0 and _state_time(doc)["io_wait"] > 0


def test_throttling_and_dirty_pages_of_a_writing_run(dd_run):
    doc, _, trace = dd_run
    throttled = _spans(doc, "reclaim throttled")
    assert len(throttled) == _count(trace, "mm_vmscan_throttled") > 0
    delayed = [int(x) for x in re.findall(r"usect_delayed=(\d+)", trace)]
    assert sorted(s["dur"] for s in throttled) == sorted(delayed)
    pauses = [int(x) for x in re.findall(r"balance_dirty_pages: .* pause=(\d+)", trace)]
    assert len(_spans(doc, "balance_dirty_pages pause")) == sum(1 for p in pauses if p > 0) > 0
    dirty = [
        e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "nr_dirty + nr_writeback"
    ]
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


def test_perfetto_plot_draws_the_lanes_and_counters(dd_run, cli, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np
    from vmsim import perfetto_plot

    doc, _, _ = dd_run
    src = tmp_path / "dd.json"
    src.write_text(json.dumps(doc))
    png = tmp_path / "timeline.png"
    p = cli("perfetto-plot", src, "-o", png)
    assert p.returncode == 0, p.stderr
    lanes = _lane_names(doc)
    kthreads = sum(1 for proc, _ in lanes.values() if proc == perfetto.PID_KTHREADS)
    assert p.stdout.startswith(
        f"wrote {png}: {len(lanes)} state lanes ({kthreads} kernel threads, "
        f"{len(lanes) - kthreads} tasks), 0 to "
    )
    img = mpimg.imread(png)[..., :3]
    assert img.shape[0] > 400 and img.shape[1] > 800
    # Not blank, and the states of a writing run are there in their colours.
    assert (img.min(axis=2) < 0.9).mean() > 0.1
    for state in ("throttled", "io_wait", "running"):
        rgb = np.array([int(perfetto_plot.STATE_COLOURS[state][i : i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(img - rgb / 255).max(axis=2) < 0.03).sum() > 50, state
    # The docs' picture is this one (docs/report.md: the same scenario and command).
    docs = mpimg.imread(REPO / "docs" / "img" / "perfetto-timeline.png")[..., :3]
    assert docs.shape == img.shape and np.abs(docs - img).mean() < 0.01


def test_the_api_writes_the_timeline_whole(small_scenario, tmp_path):
    from vmsim import api, atomic

    path = tmp_path / "t.json"
    r = api.run(small_scenario, timeline=path)
    tl = json.loads(path.read_text())
    assert "timeline" not in r.data
    assert tl["states"] == ["runnable", "running", "sleeping", "throttled", "io_wait", "dead"]
    assert len(tl["time_ns"]) == len(r.data["timeseries"]["time_seconds"])
    assert [t[1] for t in tl["tasks"]].count("kswapd0") == 1 and tl["changes"]
    with pytest.raises(atomic.OutputError, match="does not exist|No such file"):
        api.run(small_scenario, timeline=tmp_path / "no" / "t.json")
    assert not (tmp_path / "no").exists()


def test_perfetto_plot_bad_input_is_one_line(cli, tmp_path, default_run):
    (tmp_path / "r.json").write_text(json.dumps(default_run[1]))
    (tmp_path / "t.txt").write_text("not json\n")
    no_lanes = {
        "traceEvents": [
            e
            for e in default_run[0]["traceEvents"]
            if e.get("cat") != "state"
            and not (e["ph"] == "M" and e.get("tid", 0) >= perfetto.STATE_TID)
        ]
    }
    (tmp_path / "old.json").write_text(json.dumps(no_lanes))
    for src, message in (
        ("r.json", "not a Chrome JSON trace"),
        ("t.txt", "not JSON"),
        ("missing.json", "no such file"),
        ("old.json", "no task state lanes"),
        (".", "is a directory"),
    ):
        p = cli("perfetto-plot", tmp_path / src, "-o", tmp_path / "x.png")
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
        assert not (tmp_path / "x.png").exists()


def test_lanes_stop_where_the_timeline_filled():
    # Task 0 runs from 0, sleeps from 40 (planned at its step), wakes at 90; task 1 is
    # killed at 30 while it waits for I/O, before the sleep planned from 50 on.
    tl = {
        "states": ["runnable", "running", "sleeping", "throttled", "io_wait", "dead"],
        "changes": [
            [0, 0, 1],
            [10, 1, 1],
            [20, 1, 4],
            [50, 1, 2],
            [40, 0, 2],
            [30, 1, 5],
            [90, 0, 0],
        ],
        "changes_full_at": None,
    }
    assert perfetto._lanes(tl, 100) == {
        0: [(0, 40, "running"), (40, 90, "sleeping"), (90, 100, "runnable")],
        1: [(10, 20, "running"), (20, 30, "io_wait")],
    }
    tl["changes_full_at"] = 50
    assert perfetto._lanes(tl, 100)[0] == [(0, 40, "running"), (40, 50, "sleeping")]
