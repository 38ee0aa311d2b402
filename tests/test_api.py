"""Tests of the Python API: vmsim.run(), Result, ScenarioError, knobs()."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import vmsim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CONFIG_RS = Path(__file__).resolve().parent.parent / "crates" / "vmsim-core" / "src" / "config.rs"

SUMMARY_KEYS = {
    "elapsed_seconds",
    "user_seconds",
    "sys_seconds",
    "idle_seconds",
    "alloc_stall_seconds",
    "tasks_started",
    "fork_failures",
    "oom_kills",
    "alloc_failures",
    "extfrag_events",
    "mixed_pageblocks",
    "completed",
}

SMALL_DICT = {
    "name": "tiny",
    "seed": 5,
    "duration": "1s",
    "machine": {"memory": "128MiB", "cpus": 2},
    "kernel": {"name": "k1", "mobility_grouping": True},
    "task": [
        {
            "name": "t",
            "count": 2,
            "program": [
                {"op": "touch", "size": "8MiB"},
                {"op": "alloc", "order": 1, "count": 10},
                {"op": "compute", "time": "5ms"},
                {"op": "free"},
            ],
        }
    ],
}


def assert_one_line(e: BaseException) -> str:
    msg = str(e)
    assert msg.strip(), "empty error message"
    assert "\n" not in msg, msg
    assert "panicked" not in msg, msg
    return msg


# ---------------------------------------------------------------------------
# The forms of a scenario
# ---------------------------------------------------------------------------


def test_run_dict(small_scenario_text):
    r = vmsim.run(SMALL_DICT)
    assert isinstance(r, vmsim.Result)
    assert r.kernel == "k1"
    assert r.data["scenario"] == "tiny"
    assert r.data["seed"] == 5
    assert len(r.data["cpus"]) == 2
    assert r.summary["tasks_started"] == 2


def test_run_toml_text(small_scenario_text):
    r = vmsim.run(small_scenario_text)
    assert r.data["scenario"] == "small"
    assert r.kernel == "grouping"


def test_run_path_forms_agree(small_scenario, small_scenario_text):
    by_path = vmsim.run(small_scenario)
    by_str = vmsim.run(str(small_scenario))
    by_text = vmsim.run(small_scenario_text)
    assert by_path.json_text == by_str.json_text == by_text.json_text


def test_run_without_the_pageblock_map(small_scenario):
    """pageblocks=False leaves the map (a walk of every pageblock) out, and nothing else."""
    whole = vmsim.run(small_scenario).data
    lean = vmsim.run(small_scenario, pageblocks=False).data
    assert lean["pageblocks"] == [] and len(whole["pageblocks"]) >= 1
    whole["pageblocks"] = []
    assert json.dumps(lean) == json.dumps(whole)


def test_run_overrides(small_scenario):
    r = vmsim.run(
        small_scenario,
        overrides={
            "kernel.name": "vanilla",
            "kernel.mobility_grouping": False,
            "machine.cpus": 4,
            "machine.memory": "512MiB",
            "cost.pcp_alloc": 70,
        },
    )
    assert r.kernel == "vanilla"
    assert len(r.data["cpus"]) == 4
    assert sum(z["present"] for z in r.data["zones"]) == (512 << 20) // 4096


def test_cli_style_string_overrides(small_scenario):
    r = vmsim.run(
        small_scenario,
        overrides={"kernel.mobility_grouping": False, "machine.cpus": 3, "duration": "1s"},
    )
    assert len(r.data["cpus"]) == 3


def test_seed_keyword_overrides_scenario_seed(small_scenario):
    assert vmsim.run(small_scenario).data["seed"] == 3
    assert vmsim.run(small_scenario, seed=11).data["seed"] == 11
    assert vmsim.run(small_scenario, seed=2**64 - 1).data["seed"] == 2**64 - 1


def test_load_scenario_applies_overrides(small_scenario_text):
    text = vmsim.load_scenario(
        small_scenario_text, {"machine.cpus": 4, "sched.quantum": "10us", "kernel.name": "x"}
    )
    data = tomllib.loads(text)
    assert data["machine"]["cpus"] == 4
    assert data["machine"]["memory"] == "256MiB"
    assert data["sched"]["quantum"] == "10us"
    assert data["kernel"]["name"] == "x"
    assert len(data["task"]) == 2


def test_load_scenario_default():
    assert vmsim.load_scenario() == vmsim.default_scenario()
    assert tomllib.loads(vmsim.default_scenario())["task"]


def test_default_scenario_runs_with_overrides():
    r = vmsim.run(overrides={"duration": "1s", "machine.memory": "1GiB"})
    assert r.data["scenario"] == "default"
    assert r.summary["elapsed_seconds"] <= 1.0


# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_result(small_scenario):
    return vmsim.run(small_scenario)


def test_result_properties(small_result, procfmt):
    r = small_result
    assert r.data == json.loads(r.json_text)
    assert r.summary is r.data["summary"]
    assert SUMMARY_KEYS <= set(r.summary)
    assert r.summary["completed"] is True
    assert r.kernel == "grouping"
    assert list(r.vmstat) == procfmt.reference_vmstat_names()
    assert all(isinstance(v, int) and v >= 0 for v in r.vmstat.values())
    assert {"vmstat", "buddyinfo", "pagetypeinfo", "slabinfo"} <= set(r.proc)
    assert dict(procfmt.vmstat(r.proc["vmstat"])) == r.vmstat
    ts = r.timeseries
    n = len(ts["time_seconds"])
    assert n >= 2
    assert ts["time_seconds"] == sorted(ts["time_seconds"])
    assert all(len(series) == n for series in ts["vmstat"].values())
    assert set(r.data["tasks"]) == {
        "worker",
        "driver",
        "kswapd0",
        "kcompactd0",
        "kworker/u8:0",
        "jbd2/vda-8",
    }


def test_result_proc_files_are_kernel_formats(small_result, procfmt):
    buddy = procfmt.buddyinfo(small_result.proc["buddyinfo"])
    pti = procfmt.pagetypeinfo(small_result.proc["pagetypeinfo"])
    for node, zone, counts in buddy:
        per_type = pti["free"][(node, zone)].values()
        assert [sum(c) for c in zip(*per_type, strict=True)] == counts
    assert small_result.proc["slabinfo"].startswith("slabinfo - version: 2.1\n")


def test_progress_callback(small_scenario):
    calls = []
    vmsim.run(
        small_scenario,
        overrides={"sampling.interval": "10ms"},
        progress=lambda n, e: calls.append((n, e)),
    )
    assert calls
    assert all(end == 2_000_000_000 for _, end in calls)
    nows = [now for now, _ in calls]
    assert nows == sorted(set(nows))
    assert 0 < nows[-1] <= 2_000_000_000


def test_progress_callback_exception_propagates(small_scenario):
    def boom(now, end):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        vmsim.run(small_scenario, progress=boom)


def test_cpu_time_adds_up_to_elapsed(small_result):
    s = small_result.summary
    ncpus = len(small_result.data["cpus"])
    total = s["user_seconds"] + s["sys_seconds"] + s["idle_seconds"]
    assert total == pytest.approx(ncpus * s["elapsed_seconds"], abs=1e-3)


# ---------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------


def test_same_seed_gives_identical_json(small_scenario):
    a = vmsim.run(small_scenario, seed=7)
    b = vmsim.run(small_scenario, seed=7)
    assert a.json_text == b.json_text


def test_same_seed_identical_for_default_workload():
    ov = {"duration": "1s", "machine.memory": "512MiB", "machine.cpus": 4}
    a = vmsim.run(None, seed=42, overrides=ov)
    b = vmsim.run(None, seed=42, overrides=ov)
    assert a.json_text == b.json_text
    assert a.data["seed"] == 42


# ---------------------------------------------------------------------------
# ScenarioError
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "kwargs", "needle"),
    [
        pytest.param({"colour": "blue"}, {}, "colour", id="dict-unknown-top-key"),
        pytest.param({"machine": {"memroy": "1GiB"}}, {}, "memroy", id="dict-unknown-machine-key"),
        pytest.param({"kernel": {"grouping": True}}, {}, "grouping", id="dict-unknown-kernel-key"),
        pytest.param({"machine": {"cpus": "eight"}}, {}, "eight", id="dict-wrong-type"),
        pytest.param({"machine": {"memory": "8 parsecs"}}, {}, "parsecs", id="dict-bad-size"),
        pytest.param({"duration": "10 fortnights"}, {}, "fortnights", id="dict-bad-duration"),
        pytest.param({"duration": 10}, {}, "unit", id="dict-duration-no-unit"),
        pytest.param({"machine": {"memory": "64TiB"}}, {}, "64TiB", id="dict-memory-too-large"),
        pytest.param(
            {"task": [{"name": "a", "program": [{"op": "alloc", "order": 11}]}]},
            {},
            "order 11",
            id="dict-alloc-order-11",
        ),
        pytest.param(
            {"task": [{"name": "a", "program": [{"op": "slab", "cache": "nope", "objects": 1}]}]},
            {},
            "nope",
            id="dict-unknown-slab-cache",
        ),
        pytest.param("[machine]\ncpus = 0\n", {}, "cpus", id="text-zero-cpus"),
        pytest.param('[machine]\nmemory = "1MiB"\n', {}, "1MiB", id="text-memory-too-small"),
        pytest.param("[machine\ncpus = 2\n", {}, "", id="text-syntax"),
        pytest.param(
            "[machine\ncpus = 2\n", {"overrides": {"machine.cpus": 1}}, "", id="text-syntax-with-ov"
        ),
        pytest.param(None, {"overrides": {"kernel.no_such": 1}}, "no_such", id="override-unknown"),
        pytest.param(None, {"overrides": {"kernel..x": 1}}, "kernel..x", id="override-empty-part"),
        pytest.param(
            None, {"overrides": {"machine.memory.x": 1}}, "memory", id="override-through-value"
        ),
        pytest.param(None, {"seed": -1}, "-1", id="seed-negative"),
        pytest.param(None, {"seed": 2**64}, str(2**64), id="seed-too-large"),
    ],
)
def test_scenario_error_is_one_line(scenario, kwargs, needle):
    with pytest.raises(vmsim.ScenarioError) as info:
        vmsim.run(scenario, **kwargs)
    msg = assert_one_line(info.value)
    assert needle.lower() in msg.lower()


def test_scenario_error_is_a_value_error():
    assert issubclass(vmsim.ScenarioError, ValueError)


def test_missing_path(tmp_path):
    with pytest.raises(vmsim.ScenarioError) as info:
        vmsim.run(tmp_path / "nosuch.toml")
    assert "nosuch.toml" in assert_one_line(info.value)
    with pytest.raises(vmsim.ScenarioError):
        vmsim.run(str(tmp_path / "nosuch.toml"))


def test_directory_path(tmp_path):
    with pytest.raises(vmsim.ScenarioError) as info:
        vmsim.run(tmp_path)
    assert_one_line(info.value)


def test_non_utf8_path(tmp_path):
    f = tmp_path / "bin.toml"
    f.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(vmsim.ScenarioError) as info:
        vmsim.run(f)
    assert "bin.toml" in assert_one_line(info.value)


@pytest.mark.parametrize(
    ("scenario", "overrides"),
    [
        pytest.param({"machine": {"memory": None}}, None, id="dict"),
        pytest.param(None, {"kernel.name": None}, id="override"),
    ],
)
def test_unserialisable_value_is_scenario_error(scenario, overrides):
    with pytest.raises(vmsim.ScenarioError):
        vmsim.run(scenario, overrides=overrides)


def test_python_string_override_stays_a_string(small_scenario):
    assert vmsim.run(small_scenario, overrides={"kernel.name": "2024"}).kernel == "2024"


# ---------------------------------------------------------------------------
# knobs
# ---------------------------------------------------------------------------


def kernel_keys_in_config_rs() -> list[str]:
    """The field names of the ``Kernel, "kernel" { … }`` section of config.rs."""
    text = CONFIG_RS.read_text()
    m = re.search(r'Kernel,\s*"kernel"\s*\{(.*?)\n\s*\}\n', text, re.S)
    assert m, "Kernel section not found in config.rs"
    keys = re.findall(
        r"^\s*(\w+)\s*:\s*[^=\n]+=.*\"\[[^\"]*\]\"(?:, max [^;]+)?;\s*$", m.group(1), re.M
    )
    assert keys, "no kernel knobs parsed from config.rs"
    return keys


def test_knobs_cover_every_kernel_key():
    if not CONFIG_RS.is_file():
        pytest.skip("config.rs is not next to the tests")
    documented = [k["name"] for k in vmsim.knobs() if k["section"] == "kernel"]
    assert documented == kernel_keys_in_config_rs()
    for key in ("mobility_grouping", "min_free_kbytes", "watermark_scale_factor", "oom_killer"):
        assert key in documented


def test_knobs_are_complete_and_unique():
    knobs = vmsim.knobs()
    assert {"machine", "kernel", "cost", "sched", "sampling"} <= {k["section"] for k in knobs}
    keys = [(k["section"], k["name"]) for k in knobs]
    assert len(keys) == len(set(keys))
    for k in knobs:
        assert set(k) >= {"section", "name", "key", "unit", "doc", "default", "max"}
        assert k["unit"].startswith("[") and k["unit"].endswith("]"), k
        assert k["doc"].strip(), k
        assert k["default"] is not None, k


def test_knob_defaults_are_the_engine_defaults():
    scenario: dict = {}
    for k in vmsim.knobs():
        scenario.setdefault(k["section"], {})[k["name"]] = k["default"]
    assert vmsim.run(scenario).json_text == vmsim.run("").json_text


def test_table_knobs_carry_a_maximum():
    rows = vmsim.api.table_knobs()
    keys = {k["key"] for k in rows}
    assert {"duration", "[[task]] count", "[[cgroup]] generate.groups", "[[hackbench]] fds"} <= keys
    assert all(k["max"] for k in rows)
    assert next(k for k in rows if k["key"] == "[[task]] count")["max"] == "1000000"


def test_knob_docs_have_no_surrounding_whitespace():
    for k in vmsim.knobs():
        assert k["doc"] == k["doc"].strip(), k


# ---------------------------------------------------------------------------
# Property: free-page accounting holds for random machines and programs
# ---------------------------------------------------------------------------

SLAB_CACHES = ["dentry", "inode_cache", "kmalloc-64", "kmalloc-256", "kmalloc-4k"]
MIB = st.integers(min_value=1, max_value=192).map(lambda n: f"{n}MiB")
MS = st.integers(min_value=1, max_value=40).map(lambda n: f"{n}ms")

OPS = st.one_of(
    st.builds(lambda s: {"op": "touch", "size": s}, MIB),
    st.builds(lambda s: {"op": "unmap", "size": s}, MIB),
    st.builds(
        lambda o, c, t: {"op": "alloc", "order": o, "count": c, "type": t},
        st.integers(0, 10),
        st.integers(1, 64),
        st.sampled_from(["unmovable", "reclaimable", "movable", "atomic"]),
    ),
    st.builds(
        lambda c, w: {"op": "free", "count": c, "which": w},
        st.integers(1, 64),
        st.sampled_from(["oldest", "newest", "random"]),
    ),
    st.just({"op": "free"}),
    st.builds(
        lambda c, n: {"op": "slab", "cache": c, "objects": n},
        st.sampled_from(SLAB_CACHES),
        st.integers(1, 40_000),
    ),
    st.builds(lambda c: {"op": "slab_free", "cache": c}, st.sampled_from(SLAB_CACHES)),
    st.builds(lambda t: {"op": "compute", "time": t}, MS),
    st.builds(lambda t: {"op": "sleep", "time": t}, MS),
)

SCENARIOS = st.builds(
    lambda mem, cpus, grouping, seed, count, repeat, program: {
        "name": "prop",
        "seed": seed,
        "duration": "1s",
        "machine": {"memory": f"{mem}MiB", "cpus": cpus},
        "kernel": {"mobility_grouping": grouping},
        "task": [{"name": "t", "count": count, "repeat": repeat, "program": program}],
    },
    st.integers(64, 2048),
    st.integers(1, 8),
    st.booleans(),
    st.integers(0, 2**64 - 1),
    st.integers(1, 4),
    st.integers(1, 3),
    st.lists(OPS, min_size=1, max_size=6),
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(scenario=SCENARIOS)
def test_free_page_accounting_property(procfmt, scenario):
    r = vmsim.run(scenario)
    vm = r.vmstat
    assert vm["nr_free_pages"] == procfmt.buddyinfo_free_pages(r.proc["buddyinfo"])
    assert vm["nr_free_pages"] == sum(z["free"] for z in r.data["zones"])
    pgalloc = sum(v for k, v in vm.items() if k.startswith("pgalloc_"))
    # Compaction frees each page it migrates away (pgfree) into a target it took
    # off the free lists without an allocation (no pgalloc), as the kernel counts.
    assert vm["pgfree"] <= pgalloc + vm["pgmigrate_success"]
    assert all(v >= 0 for v in vm.values())
    assert len(r.data["cpus"]) == scenario["machine"]["cpus"]
    assert r.summary["elapsed_seconds"] <= 1.0
