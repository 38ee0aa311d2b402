"""vmsim fidelity: experiment files, recordings, the comparison, and real runs on this kernel."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vmsim import api
from vmsim.cli import main
from vmsim.fidelity import compare as fc
from vmsim.fidelity import host
from vmsim.fidelity.experiment import (
    FidelityError,
    load_experiments,
    parse_experiment,
    parse_metric,
)
from vmsim.fidelity.record import (
    FORMAT,
    load_recording,
    record,
    settle_needed,
    unbuddied_pages,
    write_recording,
)

MACHINE = {
    "kernel": "6.18.44-test",
    "memory_bytes": 1 << 30,
    "cpus": 2,
    "nodes": 1,
    "swap_bytes": 0,
    "sysctl": {"vm.min_free_kbytes": 8192, "vm.watermark_boost_factor": 15000},
    "thp": {"enabled": "madvise", "defrag": "madvise"},
    "lru_gen": None,
    "device": "vda",
    "disk": {"write_bandwidth": 500_000_000, "read_bandwidth": 600_000_000, "latency_ns": 200000},
}

SMALL = """
name = "small"
description = "a test"
metrics = ["vmstat.nr_dirtied@write", "vmstat.pgscan_file", "memcg.cache@write",
           "time.seconds@read", "buddy.huge_free@read"]
[cgroup]
limit_in_bytes = "16MiB"
[[task]]
name = "dd"
cgroup = true
[[phase]]
name = "write"
steps = [{ task = "dd", op = "write", file = "data", size = "8MiB" }]
[[phase]]
name = "read"
steps = [{ task = "dd", op = "read", file = "data" }]
"""


def exp_of(text: str, name: str = "small"):
    return parse_experiment(text, Path(f"{name}.toml"))


def needs_real_memcg(work: Path) -> None:
    """Skips (saying why) unless this is root on a kernel with the v1 memory controller."""
    if os.geteuid() != 0:
        pytest.skip("real-kernel experiment: needs root")
    why = host.memcg_available()
    if why:
        pytest.skip(f"real-kernel experiment: {why}")
    fstype = host.mount_of(work)[2]
    if fstype in ("tmpfs", "ramfs"):
        pytest.skip(f"real-kernel experiment: the test's directory is on {fstype}, not a disk")


def needs_root_on_disk(work: Path) -> None:
    """Skips (saying why) unless this is root and ``work`` is on a disk filesystem."""
    if os.geteuid() != 0:
        pytest.skip("real-kernel experiment: needs root")
    if host.mount_of(work)[2] in ("tmpfs", "ramfs"):
        pytest.skip("real-kernel experiment: the work directory must be on a disk")


def leftovers(work: Path) -> list[str]:
    """What a recording may have left: cgroups, work files, tracefs instances, swap files."""
    out = [p.name for p in host.MEMCG_ROOT.glob("vmsim-fidelity-*")]
    out += [p for p in host.swaps_in_use() if "vmsim-fidelity-" in p]
    out += [p.name for p in work.glob("vmsim-fidelity-*")]
    out += [p.name for p in (host.TRACEFS / "instances").glob("vmsim-fidelity-*")]
    return out


# ---------------------------------------------------------------------------
# Experiment files


def test_shipped_experiments_are_six_or_more_with_five_metrics_each():
    exps = load_experiments()
    real = [e for n, e in exps.items() if n != "tiny-memcg"]
    assert len(real) >= 6
    for e in exps.values():
        assert len(e.metrics) >= 5, e.name
        sc, _ = fc.vmsim_scenario(e, MACHINE | {"memory_bytes": 24 << 30})
        api.load_scenario(sc)  # vmsim accepts every derived scenario


def test_experiment_errors_are_one_line():
    cases = {
        SMALL.replace('description = "a test"', 'colour = "blue"'): "unknown key 'colour'",
        SMALL.replace('size = "8MiB"', 'size = "8 parsecs"'): "unknown size unit 'parsecs'",
        SMALL.replace("@read", "@nowhere", 1): "no phase 'nowhere'",
        SMALL.replace('op = "read"', 'op = "teleport"'): "unknown op 'teleport'",
        SMALL.replace('task = "dd", op = "read"', 'task = "cat", op = "read"'): "unknown task",
        SMALL.replace('"vmstat.pgscan_file"', '"vmstat.pgscan_file", "vmstat.pgscan_file"'): (
            "listed twice"
        ),
    }
    for text, msg in cases.items():
        with pytest.raises(FidelityError, match=msg) as ei:
            exp_of(text)
        assert "\n" not in str(ei.value)


def test_swap_and_anon_touch_are_read_and_checked():
    text = SMALL.replace("[[task]]", '[swap]\nsize = "64MiB"\n[[task]]').replace(
        'op = "read", file = "data" }]',
        'op = "anon", size = "4MiB" }, { task = "dd", op = "anon_touch", write = false, '
        'order = "random" }]',
    )
    e = exp_of(text)
    assert e.swap_size == 64 << 20
    assert e.footprint()["disk"] == (8 << 20) + (64 << 20)
    assert e.sha256 != exp_of(text.replace('size = "64MiB"', 'size = "32MiB"')).sha256
    sc, _ = fc.vmsim_scenario(e, MACHINE)
    assert sc["machine"]["swap"] == "64MiB"
    ops = [o for o in sc["task"][0]["program"] if o["op"] == "touch"]
    assert ops[-1] == {"op": "touch", "size": 4 << 20, "write": False, "order": "random"}
    # Without [swap] the hash is what it was before swap experiments existed.
    assert exp_of(SMALL).sha256 == fc_sha(SMALL)
    cases = {
        text.replace('order = "random"', 'order = "sideways"'): "order: must be one of",
        text.replace("write = false", 'write = "no"'): "write: must be true or false",
        text.replace('size = "64MiB"', 'size = "1KiB"'): "size must be from 40KiB to 16GiB",
        text.replace('[swap]\nsize = "64MiB"', "[swap]\nbytes = 1"): "unknown key 'bytes'",
    }
    for t, msg in cases.items():
        with pytest.raises(FidelityError, match=msg) as ei:
            exp_of(t)
        assert "\n" not in str(ei.value)


def test_zswap_is_a_swap_key_the_hash_and_the_vmsim_kernel_follow():
    text = SMALL.replace("[[task]]", '[swap]\nsize = "64MiB"\nzswap = true\n[[task]]')
    e = exp_of(text)
    assert e.zswap and e.swap_size == 64 << 20
    plain = exp_of(text.replace("zswap = true\n", ""))
    assert not plain.zswap and plain.sha256 != e.sha256
    # zswap = false hashes as an experiment without the key (the recordings made before it).
    assert exp_of(text.replace("zswap = true", "zswap = false")).sha256 == plain.sha256
    sc, missing = fc.vmsim_scenario(e, MACHINE)
    assert sc["kernel"]["zswap"] is True
    # The recorder's pages hold one byte each: zsmalloc's smallest object, 4096 / 32.
    assert sc["kernel"]["zswap_comp_ratio"] == 128.0
    assert "zswap" not in missing
    # A machine with zswap on for an experiment that does not ask for it: not modelled.
    _, missing = fc.vmsim_scenario(plain, {**MACHINE, "zswap": "Y"})
    assert "zswap" in missing
    with pytest.raises(FidelityError, match="zswap must be true or false") as ei:
        exp_of(text.replace("zswap = true", 'zswap = "yes"'))
    assert "\n" not in str(ei.value)


def test_enable_zswap_turns_it_back_as_it_was(tmp_path):
    if os.geteuid() != 0 or not host.ZSWAP_ENABLED.exists():
        pytest.skip("needs root and a kernel with zswap")
    before = host.ZSWAP_ENABLED.read_text()
    with contextlib.ExitStack() as stack:
        host.enable_zswap(stack)
        assert host.ZSWAP_ENABLED.read_text().strip() in ("Y", "1")
    assert host.ZSWAP_ENABLED.read_text() == before
    # Also when the recording fails inside.
    with pytest.raises(RuntimeError), contextlib.ExitStack() as stack:
        host.enable_zswap(stack)
        raise RuntimeError("the experiment failed")
    assert host.ZSWAP_ENABLED.read_text() == before


FADVISING = """
name = "fadvising"
description = "advice, then reads"
metrics = ["vmstat.pgpgin@random", "vmstat.pgpgin@willneed"]
[[file]]
name = "data"
size = "8MiB"
[[task]]
name = "r"
[[phase]]
name = "random"
steps = [{ task = "r", op = "fadvise", file = "data", advice = "random" },
         { task = "r", op = "read", file = "data", bs = "16KiB" }]
[[phase]]
name = "willneed"
steps = [{ task = "r", op = "fadvise", file = "data", advice = "dontneed" },
         { task = "r", op = "fadvise", file = "data", advice = "willneed" }]
"""


def test_fadvise_steps_and_read_bs_are_read_checked_and_translated():
    e = exp_of(FADVISING, "fadvising")
    steps = e.phases[0].steps
    assert steps[0].args == {"file": "data", "advice": "random"}
    assert steps[1].args["bs"] == 16 << 10
    sc, missing = fc.vmsim_scenario(e, MACHINE)
    ops = [o for o in sc["task"][0]["program"] if o["op"] in ("fadvise", "read")]
    assert ops[:2] == [
        {"op": "fadvise", "file": "data", "advice": "random"},
        {"op": "read", "file": "data", "bs": 16 << 10},
    ]
    assert not missing
    cases = {
        FADVISING.replace('advice = "random"', 'advice = "sometimes"'): "advice: must be one of",
        FADVISING.replace('bs = "16KiB"', 'bs = "1000"'): "bs: must be a multiple of 4KiB",
        FADVISING.replace('op = "fadvise", file = "data", advice = "random"', 'op = "fadvise"'): (
            "'file' is required"
        ),
    }
    for t, msg in cases.items():
        with pytest.raises(FidelityError, match=msg) as ei:
            exp_of(t, "fadvising")
        assert "\n" not in str(ei.value)


FILES = """
name = "few-files"
description = "a few small files made"
metrics = ["vmstat.nr_dirtied@make"]
[[task]]
name = "creat"
[[phase]]
name = "make"
steps = [{ task = "creat", op = "files", dir = "small", count = 50, size = "1KiB" }]
"""


def test_runs_that_make_files_on_ext4_without_a_journal_let_the_deleted_inodes_age():
    e = exp_of(FILES, "few-files")
    no_journal = {"filesystem": "ext4", "fs_journal": False}
    assert settle_needed(e, no_journal)
    assert not settle_needed(e, no_journal | {"fs_journal": True})
    assert not settle_needed(e, {"filesystem": "xfs", "fs_journal": None})
    assert not settle_needed(exp_of(SMALL), no_journal)


def test_a_recording_that_makes_files_waits_after_each_run_where_the_kernel_needs_it(tmp_path):
    needs_root_on_disk(tmp_path)
    e = exp_of(FILES, "few-files")
    rec = load_recording(
        record(e, 1, tmp_path / "rec", tmp_path, trace=False, disk_probe=False, settle_seconds=0.2)
    )
    waited = rec["runs"][0].get("settled_seconds")
    assert waited == (0.2 if settle_needed(e, rec["machine"]) else None)
    assert leftovers(tmp_path) == []


def test_fadvise_recording_keeps_the_advice_on_the_readers_file(tmp_path):
    needs_root_on_disk(tmp_path)
    e = parse_experiment(FADVISING, Path("fadvising.toml"))
    run = load_recording(record(e, 1, tmp_path / "rec", tmp_path, disk_probe=False))["runs"][0]
    got = {
        ph: fc.real_value(
            parse_metric(f"vmstat.pgpgin@{ph}", ["random", "willneed"], "t"),
            run,
            ["random", "willneed"],
        )
        for ph in ("random", "willneed")
    }
    # The whole file from the disk, then WILLNEED's one window (at least 128 KiB).
    assert got["random"] >= 8 << 10
    assert 128 <= got["willneed"] <= 8 << 10
    assert leftovers(tmp_path) == []


def fc_sha(text: str) -> str:
    """The workload hash as computed without the swap field (recordings made before it)."""
    from vmsim.fidelity.experiment import workload_sha256

    e = exp_of(text)
    return workload_sha256(
        e.cgroup_limit, e.sysctl, {t.name: t for t in e.tasks}, e.phases, e.trace
    )


def test_metric_specs():
    m = parse_metric("trace.mm_page_alloc_extfrag:fallback_order<9@load", ["load"], "t")
    assert (m.source, m.name, m.phase, m.filter_key) == (
        "trace",
        "mm_page_alloc_extfrag",
        "load",
        "mm_page_alloc_extfrag:fallback_order<9",
    )
    with pytest.raises(FidelityError, match="only trace metrics"):
        parse_metric("vmstat.pgfault:order<3", [], "t")
    with pytest.raises(FidelityError, match="unknown source"):
        parse_metric("sysfs.thing", [], "t")


def test_footprint_counts_what_is_held_at_once():
    e = exp_of(
        SMALL.replace(
            'steps = [{ task = "dd", op = "read", file = "data" }]',
            'steps = [{ task = "dd", op = "anon", size = "1GiB" }, '
            '{ task = "dd", op = "anon_free" }, { op = "nr_hugepages", pages = 100 }]',
        )
    )
    # 1 GiB held, freed, then a 200 MiB pool: the peak is 1 GiB, not their sum.
    assert e.footprint() == {"memory": 1 << 30, "disk": 8 << 20}
    # vmsim has a hugetlb pool now: nothing of this experiment is missing.
    assert e.missing == []


ON_DISK = """
name = "on-disk"
description = "a file on the disk read after drop_caches, then compact_memory"
metrics = ["vmstat.pgpgin@read", "vmstat.drop_pagecache@drop", "vmstat.pgscan_file",
           "time.seconds@read", "vmstat.compact_migrate_scanned@compact"]
[cgroup]
limit_in_bytes = "16MiB"
[[file]]
name = "data"
size = "8MiB"
[[task]]
name = "cat"
cgroup = true
[[phase]]
name = "drop"
steps = [{ op = "drop_caches", value = 3 }]
[[phase]]
name = "read"
steps = [{ task = "cat", op = "read", file = "data" }]
[[phase]]
name = "compact"
steps = [{ op = "compact_memory" }]
"""


def test_files_and_operator_steps_reach_the_vmsim_scenario():
    e = exp_of(ON_DISK, "on-disk")
    assert e.files == [("data", 8 << 20)] and e.missing == []
    assert e.footprint()["disk"] == 8 << 20
    sc, missing = fc.vmsim_scenario(e, MACHINE)
    assert missing == [] and sc["file"] == [{"name": "data", "size": 8 << 20}]
    ops = [op["op"] for op in sc["task"][0]["program"]]
    assert ops.index("drop_caches") < ops.index("read") < ops.index("compact_memory")
    drop = next(op for op in sc["task"][0]["program"] if op["op"] == "drop_caches")
    assert drop["value"] == 3
    api.load_scenario(sc)
    # The file hashes into the workload: a recording of another file is stale.
    assert exp_of(ON_DISK.replace('"8MiB"', '"9MiB"'), "on-disk").sha256 != e.sha256
    sim = fc.run_vmsim(e, MACHINE)
    names = ["start", *e.phase_names()]
    value = {m.spec: fc.vmsim_value(m, sim, e.phase_names()) for m in e.metrics}
    assert len(names) == len(sim["snapshots"])
    assert value["vmstat.pgpgin@read"] == 8 << 10  # read from the disk [KiB]
    assert value["vmstat.drop_pagecache@drop"] == 1
    assert value["vmstat.compact_migrate_scanned@compact"] > 0


def test_file_and_drop_caches_errors_are_one_line():
    cases = {
        ON_DISK.replace("value = 3", "value = 7"): "value: must be 1, 2 or 3",
        ON_DISK.replace('size = "8MiB"\n', 'size = "8MiB"\ncolour = 1\n'): "unknown key 'colour'",
        ON_DISK.replace("[[task]]", '[[file]]\nname = "data"\nsize = 1\n[[task]]', 1): (
            "'data' is declared twice"
        ),
        ON_DISK.replace('{ op = "drop_caches", value = 3 }', '{ op = "drop_caches" }'): (
            "'value' is required"
        ),
    }
    for text, msg in cases.items():
        with pytest.raises(FidelityError, match=msg) as ei:
            exp_of(text, "on-disk")
        assert "\n" not in str(ei.value)


# ---------------------------------------------------------------------------
# The vmsim side


def test_the_ordered_reads_make_the_round_trip_and_the_rest_positioning():
    machine = dict(MACHINE, disk=dict(MACHINE["disk"], latency_ns=60_000, latency_seq_ns=50_000))
    sc, _ = fc.vmsim_scenario(exp_of(SMALL), machine)
    assert sc["disk"]["request_latency"] == 50_000 and sc["disk"]["latency"] == 10_000
    # 1 MiB at 600 MB/s took 1,747.6 µs with one round trip in it: 1,697.6 µs of transfer.
    per_mib = (1 << 20) * 1e9 / 600e6
    assert sc["disk"]["read_bandwidth"] == round((1 << 20) * 1e9 / (per_mib - 50_000))
    # A disk as fast in order as at random positions nothing.
    machine["disk"]["latency_seq_ns"] = 61_000
    assert fc.vmsim_scenario(exp_of(SMALL), machine)[0]["disk"]["latency"] == 0
    # Recordings without the ordered reads: the random latency is all positioning.
    sc, _ = fc.vmsim_scenario(exp_of(SMALL), MACHINE)
    assert "request_latency" not in sc["disk"] and sc["disk"]["read_bandwidth"] == 600_000_000


def test_transfer_bandwidth_leaves_a_round_trip_that_would_take_everything():
    assert fc.transfer_bandwidth(1_000_000_000, 1_000_000) == 1_000_000_000
    assert fc.transfer_bandwidth(1 << 30, 0) == 1 << 30


def test_vmsim_scenario_reads_proc_after_every_phase():
    text = SMALL.replace("[cgroup]", '[sysctl]\n"vm.watermark_boost_factor" = 0\n[cgroup]')
    sc, missing = fc.vmsim_scenario(exp_of(text), MACHINE)
    prog = sc["task"][0]["program"]
    snaps = [op["name"] for op in prog if op["op"] == "snapshot"]
    assert snaps == ["start", "write", "read"]
    ops = [op["op"] for op in prog if op["op"] not in ("signal", "wait", "snapshot")]
    assert ops == ["write", "read"]
    assert sc["kernel"]["watermark_boost_factor"] == 0  # the experiment's sysctl wins
    assert sc["kernel"]["min_free_kbytes"] == 8192  # the recorded machine's
    assert sc["disk"]["latency"] == 200000 and sc["machine"]["memory"] == "1GiB"
    assert sc["cgroup"] == [{"path": "fidelity", "limit_in_bytes": 16 << 20}]
    assert missing == []


def test_vmsim_scenario_takes_whether_the_recorded_ext4_had_a_journal():
    for journal in (False, True):
        machine = MACHINE | {"filesystem": "ext4", "fs_journal": journal}
        sc, _ = fc.vmsim_scenario(exp_of(SMALL), machine)
        assert sc["kernel"]["ext4_journal"] is journal
    # Not recorded, or not ext4: vmsim's default stands.
    sc, _ = fc.vmsim_scenario(exp_of(SMALL), MACHINE | {"filesystem": "ext4"})
    assert "ext4_journal" not in sc["kernel"]
    sc, _ = fc.vmsim_scenario(exp_of(SMALL), MACHINE | {"filesystem": "xfs", "fs_journal": None})
    assert "ext4_journal" not in sc["kernel"]


def test_ext4_journal_reads_the_journal_thread_of_the_mount(tmp_path, monkeypatch):
    sysfs = tmp_path / "sys"
    (sysfs / "vdz").mkdir(parents=True)
    monkeypatch.setattr(host, "mount_of", lambda _p: ("/dev/vdz", "/", "ext4"))
    (sysfs / "vdz" / "journal_task").write_text("<none>\n")
    assert host.ext4_journal(tmp_path, sysfs) is False
    (sysfs / "vdz" / "journal_task").write_text("jbd2/vdz-8\n")
    assert host.ext4_journal(tmp_path, sysfs) is True
    (sysfs / "vdz" / "journal_task").unlink()
    assert host.ext4_journal(tmp_path, sysfs) is None
    monkeypatch.setattr(host, "mount_of", lambda _p: ("/dev/vdz", "/", "xfs"))
    assert host.ext4_journal(tmp_path, sysfs) is None


def test_the_recorded_machines_say_whether_their_ext4_had_a_journal():
    # Every shipped recording was made on ext4: the host's without a journal, the
    # guests' (mkfs.ext4 defaults) with one.
    for d in fc.recordings_dir().iterdir():
        for f in d.glob("*.json"):
            m = json.loads(f.read_text())["machine"]
            assert m["filesystem"] == "ext4"
            assert m["fs_journal"] is ("tcg" in d.name), f


def test_vmsim_scenario_takes_the_recorded_read_ahead_and_the_recorders_call_size():
    machine = MACHINE | {"disk": MACHINE["disk"] | {"read_ahead_kb": 8192}}
    sc, missing = fc.vmsim_scenario(exp_of(SMALL), machine)
    assert sc["disk"]["read_ahead_kb"] == 8192 and missing == []
    io = [op for op in sc["task"][0]["program"] if op["op"] in ("write", "read")]
    assert [op["bs"] for op in io] == [host.IO_CHUNK, host.IO_CHUNK] == [1 << 20] * 2
    # Without a recorded value, vmsim's default (128 KiB) stands.
    sc, _ = fc.vmsim_scenario(exp_of(SMALL), MACHINE)
    assert "read_ahead_kb" not in sc["disk"]


def test_a_recorded_kernel_runs_vmsim_with_its_kernel_version():
    e = exp_of(SMALL)
    six_one = MACHINE | {"kernel": "6.1.0-56-amd64", "kernel_version": "6.1.192"}
    sc, missing = fc.vmsim_scenario(e, six_one)
    assert sc["kernel"]["version"] == "6.1" and missing == []
    sc, missing = fc.vmsim_scenario(e, MACHINE)
    assert sc["kernel"]["version"] == "6.18" and missing == []
    # A series vmsim has no rules for runs 6.18's, and says so.
    sc, missing = fc.vmsim_scenario(e, MACHINE | {"kernel": "5.15.0-91-generic"})
    assert "version" not in sc["kernel"]
    assert missing == ["Linux 5.15.0-91-generic's own rules (vmsim runs 6.18's)"]


def test_vmsim_run_gives_snapshots_at_phase_ends():
    sim = fc.run_vmsim(exp_of(SMALL), MACHINE)
    names = [s["name"] for s in sim["snapshots"]]
    assert names == ["start", "write", "read"]
    t = [s["time_seconds"] for s in sim["snapshots"]]
    assert t[0] <= t[1] <= t[2]
    dirtied = (
        sim["snapshots"][1]["vmstat"]["nr_dirtied"] - sim["snapshots"][0]["vmstat"]["nr_dirtied"]
    )
    # 8 MiB written in the first phase; the four ext4 metadata blocks its create journaled
    # (inode bitmap, group descriptors, inode table, directory leaf) are dirtied by the
    # journal's commit, 5 s on, after the phase.
    assert dirtied == 2048


def test_vmsim_runs_trace_the_experiments_own_tracepoints():
    # kmem is off in a run without an event selection: the experiment's `trace`
    # list must reach vmsim, or its kmem counts are 0 whatever the model does.
    text = SMALL.replace(
        'metrics = ["vmstat.nr_dirtied@write",',
        'trace = ["kmem:mm_page_alloc"]\n'
        'metrics = ["trace.mm_page_alloc@write", "vmstat.nr_dirtied@write",',
    )
    assert text != SMALL
    sim = fc.run_vmsim(exp_of(text), MACHINE)
    # 8 MiB written in 1 MiB write(2) calls into large folios of at most 1 MiB each:
    # at least eight allocations (without the experiment's trace list: none traced).
    assert sim["trace"][0]["mm_page_alloc"] >= 8


# ---------------------------------------------------------------------------
# Recordings and the arithmetic


def fake_run(dirtied: int, scanned: int, seconds: float) -> dict:
    buddy = "Node 0, zone   Normal " + "".join(f"{c:7d}" for c in [1] + [0] * 8 + [2, 3]) + " \n"
    start = {
        "name": "start",
        "vmstat": {"nr_dirtied": 100, "pgscan_file": 5},
        "meminfo": {},
        "buddyinfo": buddy,
        "memcg_stat": {"cache": 0},
        "memcg": {"failcnt": 0},
        "trace": None,
    }
    mid = dict(
        start,
        name="write",
        vmstat={"nr_dirtied": 100 + dirtied, "pgscan_file": 5},
        memcg_stat={"cache": 8 << 20},
    )
    end = dict(mid, name="read", vmstat={"nr_dirtied": 100 + dirtied, "pgscan_file": 5 + scanned})
    return {
        "wall_seconds": 1.0,
        "snapshots": [start, mid, end],
        "phases": [
            {"name": "write", "seconds": 0.5, "killed": []},
            {"name": "read", "seconds": seconds, "killed": []},
        ],
    }


def fake_recording(runs: list[dict]) -> dict:
    return {
        "format": FORMAT,
        "experiment": "small",
        "experiment_sha256": "x",
        "recorded": "2026-11-25T00:00:00Z",
        "machine": MACHINE,
        "runs": runs,
    }


def test_recording_round_trip_and_damage(tmp_path):
    rec = fake_recording([fake_run(2048, 10, 0.25), fake_run(2050, 30, 0.35)])
    path = tmp_path / "m" / "small.json"
    write_recording(path, rec)
    assert load_recording(path) == rec
    assert [p.name for p in path.parent.iterdir()] == ["small.json"]  # no temporary left
    path.write_text(path.read_text()[:-40])
    with pytest.raises(FidelityError, match="bad JSON"):
        load_recording(path)
    bad = json.loads(json.dumps(rec))
    bad["runs"][0]["snapshots"].pop()
    write_recording(path, bad)
    with pytest.raises(FidelityError, match="snapshots do not match"):
        load_recording(path)


def test_real_values_per_phase_and_whole():
    e = exp_of(SMALL)
    run = fake_run(2048, 10, 0.25)
    got = {m.spec: fc.real_value(m, run, e.phase_names()) for m in e.metrics}
    assert got == {
        "vmstat.nr_dirtied@write": 2048,
        "vmstat.pgscan_file": 10,
        "memcg.cache@write": 8 << 20,
        "time.seconds@read": 0.25,
        "buddy.huge_free@read": 2 * 512 + 3 * 1024,
    }


def test_judge():
    assert fc.judge([100.0], 125.0)["ok"] and not fc.judge([100.0], 126.0)["ok"]
    assert fc.judge([100.0], 75.0)["ok"] and not fc.judge([100.0], 74.0)["ok"]
    # The real range is wider than ±25 %: inside it is within.
    j = fc.judge([10.0, 100.0], 95.0)
    assert j["ok"] and j["real"] == 55.0 and j["real_min"] == 10.0 and j["ratio"] == 95 / 55
    assert fc.judge([0.0, 0.0], 0.0) == {
        "real": 0.0,
        "real_min": 0.0,
        "real_max": 0.0,
        "runs": 2,
        "vmsim": 0.0,
        "ratio": 1.0,
        "ok": True,
    }
    zero = fc.judge([0.0], 3.0)
    assert zero["ratio"] is None and not zero["ok"]
    assert not fc.judge([5.0], None)["ok"]  # vmsim has no such figure: a miss


def test_fidelity_over_a_recording_directory(tmp_path):
    e = exp_of(SMALL)
    rec = fake_recording([fake_run(2048, 10, 0.25), fake_run(2050, 30, 0.35)])
    rec["experiment_sha256"] = e.sha256
    write_recording(tmp_path / "6.18-1GiB-2cpu" / "small.json", rec)
    out = fc.fidelity({"small": e}, [], tmp_path)
    ex = out["experiments"]["small"]["kernels"]["6.18-1GiB-2cpu"]
    assert out["kernels"]["6.18-1GiB-2cpu"]["label"] == "6.18"
    assert ex["total"] == 5 and out["total"] == 5 and out["score"] == round(out["ok"] / 5, 4)
    m = ex["metrics"]["vmstat.nr_dirtied@write"]
    # vmsim: the 2,048 data pages (the create's metadata blocks wait for the commit).
    assert (m["real"], m["real_min"], m["real_max"], m["vmsim"]) == (2049, 2048, 2050, 2048)
    assert m["ok"] and abs(m["ratio"] - 2048 / 2049) < 1e-12
    assert not ex["stale_recording"]
    text = fc.render_text(out)
    assert "vmstat.nr_dirtied@write" in text and text.rstrip().endswith(f"({out['score']:.2f})")
    with pytest.raises(FidelityError, match="unknown experiment 'nope'"):
        fc.fidelity({"small": e}, ["nope"], tmp_path)


def test_count_trace_by_phase_with_filters(tmp_path):
    t = tmp_path / "trace"
    line = (
        "  fio-12  [001] .....   {ts:.6f}: mm_page_alloc_extfrag: page=0x1 pfn=0x1 "
        "alloc_order=0 fallback_order={fo} alloc_migratetype=0 fallback_migratetype=1 "
        "fragmenting=1 change_ownership=0\n"
    )
    t.write_text(
        "# tracer: nop\n"
        + line.format(ts=0.5, fo=3)
        + line.format(ts=1.5, fo=9)
        + line.format(ts=1.6, fo=2)
        + line.format(ts=3.5, fo=1)
    )
    keys = ["mm_page_alloc_extfrag", "mm_page_alloc_extfrag:fallback_order<9"]
    got = fc.count_trace(t, keys, [0.0, 1.0, 2.0])
    assert got == [
        {"mm_page_alloc_extfrag": 1, "mm_page_alloc_extfrag:fallback_order<9": 1},
        {"mm_page_alloc_extfrag": 2, "mm_page_alloc_extfrag:fallback_order<9": 1},
    ]


# ---------------------------------------------------------------------------
# The command line


def test_cli_fidelity_json_on_the_shipped_recording(capsys):
    main(["fidelity", "tiny-memcg", "--json"])
    out = json.loads(capsys.readouterr().out)
    kernels = out["experiments"]["tiny-memcg"]["kernels"]
    # The host's 6.18 and the 6.1 guest with the classic LRU and with MGLRU.
    assert [out["kernels"][k]["label"] for k in kernels] == ["6.18", "6.1", "6.1+mglru"]
    specs = {m.spec for m in load_experiments()["tiny-memcg"].metrics}
    for e in kernels.values():
        assert set(e["metrics"]) == specs
        for m in e["metrics"].values():
            assert set(m) >= {"real", "vmsim", "ratio", "ok"}
    host_e = kernels["6.18.44-24GiB-2cpu"]
    assert host_e["total"] == len(specs) and 0 <= out["score"] <= 1
    # The emulated guest's time is shown and not scored; MGLRU is real numbers only.
    guest = kernels["6.1.192-2GiB-2cpu-tcg"]
    assert guest["total"] == len(specs) - 1 and not guest["metrics"]["time.seconds@write"]["scored"]
    mglru = kernels["6.1.192-2GiB-2cpu-tcg-mglru"]
    assert mglru["total"] == 0 and out["kernels"]["6.1.192-2GiB-2cpu-tcg-mglru"]["score"] is None
    assert all(m["vmsim"] is None and m["real"] is not None for m in mglru["metrics"].values())
    assert out["total"] == host_e["total"] + guest["total"]
    main(["fidelity", "tiny-memcg", "--json"])
    assert json.loads(capsys.readouterr().out) == out  # deterministic


def test_cli_errors_are_one_line(capsys, monkeypatch, tmp_path):
    for argv, msg in (
        (["fidelity", "nope"], "unknown experiment 'nope'"),
        (["fidelity", "--recordings", str(tmp_path / "none")], "no such directory"),
        (["fidelity", "--record", "nope"], "unknown experiment 'nope'"),
        (["fidelity", "--record", "tiny-memcg", "--runs", "0"], "--runs 0"),
    ):
        with pytest.raises(SystemExit) as ei:
            main(argv)
        assert ei.value.code == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as ei:
        main(["fidelity", "--record", "tiny-memcg", "--recordings", str(tmp_path)])
    assert ei.value.code == 2
    assert "needs root" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_record_refuses_what_does_not_fit(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the size check comes after the root check")
    e = exp_of(
        SMALL.replace(
            'size = "8MiB"', 'size = "8MiB" }, { task = "dd", op = "anon", size = "64TiB"'
        )
    )
    with pytest.raises(FidelityError, match="too large"):
        record(e, 1, tmp_path / "rec", tmp_path)
    assert not (tmp_path / "rec").exists()


# ---------------------------------------------------------------------------
# Real experiments on this kernel (CI runs as root on the same kind of machine)


def test_tiny_real_experiment_records_and_compares(tmp_path):
    needs_real_memcg(tmp_path)
    e = load_experiments()["tiny-memcg"]
    boost = host.read_sysctl("vm.watermark_boost_factor")
    path = record(e, 1, tmp_path / "rec", tmp_path, disk_probe=False)
    rec = load_recording(path)
    assert rec["machine"]["kernel"] == os.uname().release
    run = rec["runs"][0]
    dirtied = fc.real_value(
        parse_metric("vmstat.nr_dirtied@write", ["write", "read"], "t"), run, e.phase_names()
    )
    assert dirtied >= 16384  # the kernel dirtied at least the 64 MiB written
    assert run["snapshots"][1]["memcg"]["max_usage_in_bytes"] <= 32 << 20
    # The group is charged for the experiment's memory, not for the recorder's copy.
    assert run["snapshots"][0]["memcg"]["usage_in_bytes"] < 2 << 20
    assert leftovers(tmp_path) == [] and host.read_sysctl("vm.watermark_boost_factor") == boost
    out = fc.fidelity({e.name: e}, [], tmp_path / "rec")
    assert out["total"] == len(e.metrics)


def test_median_disk_keeps_each_figures_median_over_the_probes():
    probes = [
        {"write_bandwidth": 1e9, "read_bandwidth": 2e9, "latency_ns": 169_000},
        {"write_bandwidth": 3e9, "read_bandwidth": 1e9, "latency_ns": 49_000},
        {"write_bandwidth": 2e9, "read_bandwidth": 3e9, "latency_ns": 65_000},
    ]
    for p in probes:
        p["latency_from"] = "diskstats"
    d = host.median_disk(probes)
    assert d == {
        "write_bandwidth": 2e9,
        "read_bandwidth": 2e9,
        "latency_ns": 65_000,
        "probes": 3,
        "latency_from": "diskstats",
    }
    # A probe whose latency is the user-side time makes the median say nothing of its source.
    del probes[0]["latency_from"]
    assert "latency_from" not in host.median_disk(probes)


def test_free_list_order_tells_boot_order_from_mixed_lists():
    blk = host.MAX_ORDER_PAGES
    # Boot order: pages fill one max-order block after another, upward (or downward).
    up = [0x100000 + i for i in range(8 * blk)]
    assert host.free_list_order(up)["adjacent_fraction"] == 1.0
    assert host.free_list_order(up[::-1])["order"] == "boot"
    # Mixed: each 1 MiB (256 pages) lands in a block far from the last one.
    far = [0x100000 + ((i // 256) * 37 % 101) * blk + i % 256 for i in range(32 * 256)]
    got = host.free_list_order(far)
    assert got["order"] == "mixed" and got["block_steps"] == 31
    assert got["adjacent_steps"] == 0 and got["pages"] == len(far)
    # Pages not present (pfn 0) are left out; one block alone is boot order.
    assert host.free_list_order([0, 5, 6])["order"] == "boot"
    assert host.free_lists_of([{"adjacent_fraction": f} for f in (0.0, 0.9, 0.01)]) == {
        "adjacent_fraction": 0.01,
        "order": "mixed",
        "probes": 3,
    }


def test_mixed_free_lists_reach_the_vmsim_scenario():
    e = exp_of(SMALL)
    m = json.loads(json.dumps(MACHINE))
    assert fc.vmsim_scenario(e, m)[0]["machine"]["mixed_free_lists"] is False
    m["free_lists"] = {"adjacent_fraction": 0.01, "order": "mixed", "probes": 2}
    assert fc.vmsim_scenario(e, m)[0]["machine"]["mixed_free_lists"] is True


def _start_snapshot(vm: dict[str, int], mem_total_kb: int, mem_free_kb: int) -> dict:
    return {
        "name": "start",
        "vmstat": vm,
        "meminfo": {"MemTotal": mem_total_kb, "MemFree": mem_free_kb},
    }


def test_the_rest_of_the_system_is_what_the_start_snapshots_held():
    vm = {
        "nr_anon_pages": 3000,
        "nr_shmem": 100,
        "nr_active_file": 8000,
        "nr_inactive_file": 4000,
        "nr_slab_reclaimable": 1000,
        "nr_slab_unreclaimable": 500,
    }
    runs = [
        {"snapshots": [_start_snapshot(vm, 1 << 20, (1 << 20) - 4 * 20_000)]},
        {
            "snapshots": [
                _start_snapshot(vm | {"nr_anon_pages": 5000}, 1 << 20, (1 << 20) - 4 * 22_000)
            ]
        },
    ]
    got = fc.system_in_use({"runs": runs})
    # Run means; the kernel's own part is what MemTotal - MemFree leaves.
    assert got == {
        "anon": 4100,
        "file_active": 8000,
        "file_inactive": 4000,
        "slab_reclaimable": 1000,
        "slab_unreclaimable": 500,
        "kernel": 21_000 - 4100 - 12_000 - 1500,
    }
    assert fc.system_in_use({"runs": [{"snapshots": [{"name": "start", "meminfo": None}]}]}) is None


def test_the_rest_of_the_system_holds_its_memory_before_the_start_snapshot():
    in_use = {
        "anon": 4096,
        "file_active": 2048,
        "file_inactive": 1024,
        "slab_reclaimable": 64,
        "slab_unreclaimable": 32,
        "kernel": 512,
    }
    e = exp_of(SMALL)
    sc, _ = fc.vmsim_scenario(e, MACHINE, in_use=in_use)
    system = sc["task"][-1]
    assert system["name"] == fc.SYSTEM_TASK and system["daemon"] is True
    # The experiment's own task keeps its place (CPU, random stream) and waits for it.
    assert sc["task"][0]["name"] == "dd"
    assert sc["task"][0]["program"][0] == {"op": "wait", "name": "system-up"}
    reads = [op["file"] for op in system["program"] if op["op"] == "read"]
    assert reads == [f"{fc.SYSTEM_TASK}/active"] * 2 + [f"{fc.SYSTEM_TASK}/inactive"]
    sim = fc.run_vmsim(e, MACHINE, in_use=in_use)
    alone = fc.run_vmsim(e, MACHINE)
    start = sim["snapshots"][0]["vmstat"]
    base = alone["snapshots"][0]["vmstat"]
    assert start["nr_active_file"] >= 2048 and start["nr_inactive_file"] >= 1024
    assert start["nr_anon_pages"] - base["nr_anon_pages"] == 4096
    held = base["nr_free_pages"] - start["nr_free_pages"]
    total = sum(in_use.values())
    # Slab rounds to whole slabs, and the daemon's own page tables and stack add a few.
    assert total <= held <= total * 1.05, (held, total)
    # The run ends with the experiment, not when the daemon would.
    assert sim["completed"]
    assert sim["snapshots"][-1]["time_seconds"] < 60


def test_the_start_buddyinfo_is_the_run_mean_of_each_zone():
    starts = [
        {"buddyinfo": "Node 0, zone      DMA   0 0 0 0 0 0 0 0 1 1 3 \n"
         "Node 0, zone    DMA32  10 20 0 0 0 0 0 0 0 0 200 \n"},
        {"buddyinfo": "Node 0, zone      DMA   0 0 0 0 0 0 0 0 1 1 3 \n"
         "Node 0, zone    DMA32  30 21 0 0 0 0 0 0 0 0 100 \n"},
    ]  # fmt: skip
    assert fc.start_buddyinfo(starts) == (
        "Node 0, zone DMA 0 0 0 0 0 0 0 0 1 1 3\nNode 0, zone DMA32 20 20 0 0 0 0 0 0 0 0 150"
    )
    # A run without it, or runs whose zones differ, give none.
    assert fc.start_buddyinfo(starts + [{"buddyinfo": None}]) is None
    assert (
        fc.start_buddyinfo(starts + [{"buddyinfo": "Node 0, zone DMA 1 2 3 4 5 6 7 8 9 0 1"}])
        is None
    )


def test_the_rest_of_the_system_sits_between_free_blocks_as_the_start_buddyinfo_shows():
    """The start snapshot's free lists below max order are the recorded ones, near enough."""
    target = [40, 30, 20, 10, 8, 6, 4, 3, 2, 1]
    in_use = {
        "anon": 4096,
        "file_active": 2048,
        "file_inactive": 4096,
        "slab_reclaimable": 64,
        "slab_unreclaimable": 32,
        "kernel": 512,
        "buddyinfo": "Node 0, zone DMA32 " + " ".join(map(str, target)) + " 200",
    }
    e = exp_of(SMALL)
    sc, _ = fc.vmsim_scenario(e, MACHINE, in_use=in_use)
    ops = [op["op"] for op in sc["task"][-1]["program"]]
    # Slab and kernel memory first, then the layout, the movable memory, the end of it.
    assert ops.index("slab") < ops.index("alloc") < ops.index("shape_free_lists")
    assert ops.index("shape_free_lists") < ops.index("touch") < ops.index("read")
    assert ops.index("read") < ops.index("shape_free_lists_end") < ops.index("signal")
    shaped = fc.run_vmsim(e, MACHINE, in_use=in_use)["snapshots"][0]["buddyinfo"]
    plain = fc.run_vmsim(e, MACHINE, in_use={k: v for k, v in in_use.items() if k != "buddyinfo"})
    plain_line = next(ln for ln in plain["snapshots"][0]["buddyinfo"].splitlines() if "DMA32" in ln)
    line = next(ln for ln in shaped.splitlines() if "DMA32" in ln)
    got = [int(w) for w in line.split()[4:]]
    base = [int(w) for w in plain_line.split()[4:]]
    # Each order the target's count, give or take what the tasks' own first pages took.
    for order, want in enumerate(target):
        assert abs(got[order] - want) <= max(2, want // 5), (order, got, base)
    # Without the layout the same memory leaves next to nothing below max order.
    assert sum(base[:10]) < sum(target) // 4, base


def test_unbuddied_pages_are_memfree_less_the_free_lists():
    snap = {"meminfo": {"MemFree": 4 << 20}, "vmstat": {"nr_free_pages": 1 << 18}}
    assert unbuddied_pages(snap) == (1 << 20) - (1 << 18)
    snap["vmstat"]["nr_free_pages"] = (1 << 20) + 13
    assert unbuddied_pages(snap) == 0
    assert unbuddied_pages({"meminfo": None, "vmstat": {}}) == 0


def test_a_recording_probes_the_disk_before_each_run(tmp_path):
    needs_real_memcg(tmp_path)
    e = exp_of(SMALL)
    rec = load_recording(record(e, 2, tmp_path / "rec", tmp_path, trace=False))
    probes = [r["disk_probe"] for r in rec["runs"]]
    assert len(probes) == 2 and all(p["latency_ns"] > 0 for p in probes)
    for p in probes:
        # The device's time of a read is part of the time the process waited for it.
        assert p["latency_from"] == "diskstats"
        assert p["latency_ns"] <= p["latency_user_ns"] * 1.05
    disk = rec["machine"]["disk"]
    assert rec["machine"]["fs_journal"] == host.ext4_journal(tmp_path)
    assert disk["probes"] == 2
    # The recording's figure is the probes' median (of two: their mean, rounded).
    assert abs(disk["latency_ns"] - sum(p["latency_ns"] for p in probes) / 2) <= 1
    # Reads in order are timed too: every request's round trip, positioning or not.
    assert all(p["latency_seq_ns"] > 0 for p in probes) and disk["latency_seq_ns"] > 0
    # The block layer's writeback throttle as sysfs shows it, where the queue has one.
    q = host.block_queue(host.mount_of(tmp_path)[0] or "")
    if q is not None and (q / "wbt_lat_usec").exists():
        assert disk["wbt_lat_usec"] == int((q / "wbt_lat_usec").read_text())
        assert disk["write_cache"] == int((q / "write_cache").read_text().strip() == "write back")
    # And where fresh allocations land, before each run too.
    lists = [r["free_list_probe"] for r in rec["runs"]]
    assert all(p["block_steps"] > 0 and 0 <= p["adjacent_fraction"] <= 1 for p in lists)
    assert rec["machine"]["free_lists"]["probes"] == 2
    assert rec["machine"]["free_lists"]["order"] in ("boot", "mixed")
    assert leftovers(tmp_path) == []


def test_a_file_on_the_disk_is_read_from_it_after_drop_caches(tmp_path):
    needs_real_memcg(tmp_path)
    e = exp_of(ON_DISK, "on-disk")
    path = record(e, 1, tmp_path / "rec", tmp_path, trace=False, disk_probe=False)
    run = load_recording(path)["runs"][0]
    value = {m.spec: fc.real_value(m, run, e.phase_names()) for m in e.metrics}
    # The recorder's copy was dropped from the cache: the read comes from the disk [KiB].
    assert value["vmstat.pgpgin@read"] >= 8 << 10
    # The disk's own counters saw it too: at least the 8 MiB in 512-byte sectors.
    disk = {s["name"]: s["diskstats"] for s in run["snapshots"]}
    assert disk["read"]["sectors_read"] - disk["drop"]["sectors_read"] >= 8 << 11
    assert disk["read"]["reads"] > disk["drop"]["reads"]
    assert value["vmstat.drop_pagecache@drop"] == 1
    assert value["vmstat.compact_migrate_scanned@compact"] >= 0
    assert leftovers(tmp_path) == []


FAILING = """
name = "failing"
description = "the second phase reads a file that does not exist"
metrics = ["vmstat.nr_dirtied", "vmstat.pgscan_file", "vmstat.pgsteal_file",
           "vmstat.oom_kill", "time.seconds"]
trace = ["vmscan:mm_vmscan_memcg_reclaim_begin"]
[sysctl]
"vm.dirty_expire_centisecs" = {expire}
[cgroup]
limit_in_bytes = "16MiB"
[[task]]
name = "dd"
cgroup = true
[[phase]]
name = "write"
steps = [{{ task = "dd", op = "write", file = "data", size = "4MiB" }},
         {{ task = "dd", op = "anon", size = "4MiB" }}]
[[phase]]
name = "read"
steps = [{{ task = "dd", op = "{last}", {args} }}]
"""


def test_failing_experiment_leaves_nothing_behind(tmp_path):
    needs_real_memcg(tmp_path)
    expire = host.read_sysctl("vm.dirty_expire_centisecs")
    text = FAILING.format(expire=int(expire) + 7, last="read", args='file = "absent"')
    e = parse_experiment(text, Path("failing.toml"))
    with pytest.raises(FidelityError, match="task dd: FileNotFoundError"):
        record(e, 1, tmp_path / "rec", tmp_path, disk_probe=False)
    assert leftovers(tmp_path) == []
    assert host.read_sysctl("vm.dirty_expire_centisecs") == expire
    assert not (tmp_path / "rec").exists()


def test_interrupted_recording_leaves_nothing_behind(tmp_path):
    needs_real_memcg(tmp_path)
    expire = host.read_sysctl("vm.dirty_expire_centisecs")
    text = FAILING.format(expire=int(expire) + 7, last="sleep", args='time = "60s"')
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "failing.toml").write_text(text)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vmsim.cli",
            "fidelity",
            "--record",
            "failing",
            "--experiments",
            str(tmp_path / "exp"),
            "--recordings",
            str(tmp_path / "rec"),
            "--work-dir",
            str(tmp_path),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(host.MEMCG_ROOT.glob("vmsim-fidelity-*")):
            break
        time.sleep(0.1)
    time.sleep(2.0)  # well inside the 60 s sleep of the last phase
    assert host.read_sysctl("vm.dirty_expire_centisecs") != expire  # set while it runs
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err
    assert leftovers(tmp_path) == []
    assert host.read_sysctl("vm.dirty_expire_centisecs") == expire
    assert not (tmp_path / "rec").exists()


SWAPPING = """
name = "swapping"
description = "anonymous memory swapped out of a small group, then a long sleep or a failure"
metrics = ["vmstat.pswpout", "vmstat.pswpin", "vmstat.swap_ra", "vmstat.pgmajfault",
           "memcg.memsw_max_usage_in_bytes@swap"]
[cgroup]
limit_in_bytes = "16MiB"
[swap]
size = "64MiB"
[[task]]
name = "hog"
cgroup = true
[[phase]]
name = "swap"
steps = [{{ task = "hog", op = "anon", size = "32MiB" }},
         {{ task = "hog", op = "anon_touch", write = false }}]
[[phase]]
name = "last"
steps = [{{ task = "hog", op = "{last}", {args} }}]
"""


def test_swap_recording_swaps_to_its_own_file_and_removes_it(tmp_path):
    needs_real_memcg(tmp_path)
    if host.swaps_in_use():
        pytest.skip("this machine swaps already: a swap experiment refuses to run")
    e = parse_experiment(SWAPPING.format(last="sleep", args='time = "10ms"'), Path("swapping.toml"))
    path = record(e, 1, tmp_path / "rec", tmp_path, disk_probe=False)
    run = load_recording(path)["runs"][0]
    swapped = fc.real_value(
        parse_metric("vmstat.pswpout", ["swap", "last"], "t"), run, ["swap", "last"]
    )
    assert swapped >= (16 << 20) // 4096  # at least the 16 MiB over the limit went out
    assert run["snapshots"][1]["memcg"]["memsw_max_usage_in_bytes"] >= 32 << 20
    assert run["snapshots"][1]["meminfo"]["SwapTotal"] > 0
    assert leftovers(tmp_path) == [] and host.swaps_in_use() == []
    # A failing swap recording leaves nothing either.
    bad = parse_experiment(
        SWAPPING.format(last="read", args='file = "absent"'), Path("swapping.toml")
    )
    with pytest.raises(FidelityError, match="task hog: FileNotFoundError"):
        record(bad, 1, tmp_path / "rec2", tmp_path, disk_probe=False)
    assert leftovers(tmp_path) == [] and host.swaps_in_use() == []


def test_interrupted_swap_recording_turns_its_swap_off(tmp_path):
    needs_real_memcg(tmp_path)
    if host.swaps_in_use():
        pytest.skip("this machine swaps already: a swap experiment refuses to run")
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "swapping.toml").write_text(
        SWAPPING.format(last="sleep", args='time = "60s"')
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vmsim.cli",
            "fidelity",
            "--record",
            "swapping",
            "--experiments",
            str(tmp_path / "exp"),
            "--recordings",
            str(tmp_path / "rec"),
            "--work-dir",
            str(tmp_path),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not host.swaps_in_use():
        time.sleep(0.1)
    time.sleep(3.0)  # inside the 60 s sleep of the last phase
    assert any("vmsim-fidelity-" in p for p in host.swaps_in_use())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, err
    assert leftovers(tmp_path) == [] and host.swaps_in_use() == []
    assert not (tmp_path / "rec").exists()


def test_a_phase_vmsim_did_not_finish_is_not_within(monkeypatch):
    e = exp_of(SMALL)
    rec = fake_recording([fake_run(2048, 10, 0.25)])
    real = rec["runs"][0]["snapshots"]
    # vmsim's task died in 'read': its last snapshot is /proc at the end of the run.
    died = dict(real[2], time_seconds=0.9, incomplete=True)
    snaps = [dict(real[0], time_seconds=0.0), dict(real[1], time_seconds=0.5), died]
    snaps = [dict(s, memcg={"groups": {"fidelity": {"stat": s["memcg_stat"]}}}) for s in snaps]
    sim = {
        "snapshots": snaps,
        "trace": None,
        "missing": [],
        "killed": 1,
        "elapsed": 0.9,
        "completed": True,
    }
    monkeypatch.setattr(fc, "run_vmsim", lambda *a: sim)
    out = fc.compare_experiment(e, rec)
    m = out["metrics"]
    # Same figures as the real run, but the read phase never ended in vmsim.
    assert m["vmstat.pgscan_file"]["vmsim"] == 10 and not m["vmstat.pgscan_file"]["ok"]
    assert "killed before the end of phase read" in m["vmstat.pgscan_file"]["note"]
    assert m["vmstat.nr_dirtied@write"]["ok"] and "note" not in m["vmstat.nr_dirtied@write"]
    assert out["vmsim_unfinished_phases"] == ["read"]
    # Where the real task was killed in that phase too, the figures compare as usual.
    rec["runs"][0]["phases"][1]["killed"] = ["dd"]
    assert fc.compare_experiment(e, rec)["metrics"]["vmstat.pgscan_file"]["ok"]


def test_kernel_axis_scores_each_kernel_and_leaves_mglru_unscored(tmp_path):
    e = exp_of(SMALL)
    guest = MACHINE | {
        "kernel": "6.1.0-56-amd64",
        "kernel_version": "6.1.192",
        "lru_gen": "0x0000",
        "vm": {"emulation": "tcg"},
    }
    machines = {
        "6.18-1GiB-2cpu": MACHINE,
        "6.1.192-1GiB-2cpu-tcg": guest,
        "6.1.192-1GiB-2cpu-tcg-mglru": guest | {"lru_gen": "0x0007"},
    }
    for i, (key, machine) in enumerate(machines.items()):
        rec = fake_recording([fake_run(2048, 10 * (i + 1), 0.25), fake_run(2050, 30, 0.35)])
        rec["experiment_sha256"] = e.sha256
        rec["machine"] = machine
        write_recording(tmp_path / key / "small.json", rec)
    out = fc.fidelity({"small": e}, [], tmp_path)
    assert [k["label"] for k in out["kernels"].values()] == ["6.18", "6.1", "6.1+mglru"]
    ks = out["experiments"]["small"]["kernels"]
    host_e, guest_e, mglru_e = ks.values()
    # Same vmsim figures on the two modelled kernels (the same machine otherwise).
    assert host_e["total"] == 5 and guest_e["total"] == 4  # the guest's time is not scored
    t = guest_e["metrics"]["time.seconds@read"]
    assert t["ok"] is None and not t["scored"] and t["real"] == 0.3 and t["vmsim"] is not None
    assert mglru_e["total"] == 0 and mglru_e["not_modelled"] == "MGLRU"
    m = mglru_e["metrics"]["vmstat.pgscan_file"]
    assert m["vmsim"] is None and m["real"] == 30.0  # (30 + 30) / 2
    assert m["vs_classic"] == 30.0 / 25.0  # against the classic LRU's (20 + 30) / 2
    assert out["kernels"]["6.1.192-1GiB-2cpu-tcg-mglru"]["score"] is None
    assert out["total"] == 9 and out["ok"] == host_e["ok"] + guest_e["ok"]
    text = fc.render_text(out)
    assert "not modelled (1.20 × classic LRU)" in text
    assert "score 6.1 (6.1.192-1GiB-2cpu-tcg):" in text and "not scored *" in text


def test_machine_keys_name_the_upstream_version_emulation_and_mglru():
    ver = (
        "Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian "
        "12.2.0-14+deb12u1) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2025-11-10)\n"
    )
    assert host.kernel_version(ver) == "6.1.192"
    assert host.kernel_version("Linux version 6.18.44-fc (gcc 15.3.0) #1 SMP @0\n") is None
    m = {"kernel": "6.1.0-56-amd64", "kernel_version": "6.1.192", "memory_bytes": 2 << 30}
    m |= {"cpus": 2, "lru_gen": "0x0000"}
    assert host.machine_key(m) == "6.1.192-2GiB-2cpu"
    assert host.machine_key(m | {"vm": {"emulation": "tcg"}}) == "6.1.192-2GiB-2cpu-tcg"
    assert host.machine_key(m | {"lru_gen": "0x0007"}) == "6.1.192-2GiB-2cpu-mglru"
    thp = m | {"vm": {"emulation": "tcg", "thp_set": "madvise"}}
    assert host.machine_key(thp) == "6.1.192-2GiB-2cpu-tcg-thp-madvise"
    assert fc.kernel_label(thp) == "6.1+thp-madvise"
    assert host.machine_key(MACHINE) == "6.18.44-1GiB-2cpu"  # a host's key as before


def test_kernel_diff_marks_only_differences_beyond_the_spread(capsys):
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "kernel_diff.py"
    spec = importlib.util.spec_from_file_location("kernel_diff", path)
    kd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kd)
    assert kd.differs([100, 110], [200, 210])  # disjoint, 2x apart
    assert not kd.differs([100, 210], [200, 220])  # ranges overlap
    assert not kd.differs([100, 101], [110, 111])  # disjoint but within 25 %
    assert kd.main([]) == 0
    out = capsys.readouterr().out
    # memcg.failcnt differs wherever a limited group fills with page cache or anonymous
    # memory (6.1 fails the charge batch first, nearly every charge after a reclaim), not
    # where the group never reaches its limit (reread-memcg-fits) or where the swap
    # experiments' groups fill; nr_dirtied differs in none.
    exp, failcnt, dirtied = "", {}, []
    for ln in out.splitlines():
        if not ln.startswith(" "):
            exp = ln.strip()
        elif "memcg.failcnt" in ln:
            failcnt[exp] = "differs" in ln
        elif "nr_dirtied" in ln:
            dirtied.append("differs" in ln)
    filled = ["anon-memcg-oom", "dd-memcg", "small-files-memcg", "tiny-memcg"]
    assert all(failcnt[e] for e in filled), failcnt
    assert not failcnt["reread-memcg-fits"]
    assert dirtied and not any(dirtied)


def test_which_way_vmsim_moves_beside_the_real_kernels():
    assert fc.follows((10, 100), (5, 50)) == "follows"
    assert fc.follows((100, 10), (5, 50)) == "opposite"
    assert fc.follows((10, 100), (50, 55)) == "too little"  # the right way, within 25 %
    assert fc.follows((10, 100), (55, 50)) == "does not move"  # the wrong way, within 25 %
    assert fc.follows((10, 100), (7, 7)) == "does not move"
    assert fc.follows((10, 100), (None, 7)) == "cannot tell"
    assert fc.follows((-10, 20), (-5, 3)) == "follows"  # a sign change is a move


def _kernel_entry(**metrics: tuple[float, float, float, float | None]) -> dict:
    return {
        "metrics": {
            spec.replace("__", "@").replace("_dot_", "."): {
                "real": m,
                "real_min": lo,
                "real_max": hi,
                "vmsim": v,
            }
            for spec, (m, lo, hi, v) in metrics.items()
        }
    }


def test_between_kernels_takes_differences_beyond_the_spread_of_modelled_kernels():
    kernels = {
        "new": {"label": "6.18", "emulated": False, "not_modelled": None},
        "old": {"label": "6.1", "emulated": True, "not_modelled": None},
        "old-mglru": {"label": "6.1+mglru", "emulated": True, "not_modelled": "MGLRU"},
    }
    new = _kernel_entry(
        a=(100, 90, 110, 100.0),  # differs from old's, vmsim follows
        b=(100, 50, 150, 100.0),  # old's range overlaps: no difference
        c=(100, 99, 101, 100.0),  # apart but within 25 %
        time_dot_seconds__x=(1, 1, 1, 1.0),  # emulated on one side: left out
        d=(10, 9, 11, 10.0),  # vmsim goes the other way
    )
    old = _kernel_entry(
        a=(400, 390, 410, 380.0),
        b=(140, 130, 150, 100.0),
        c=(110, 109, 111, 110.0),
        time_dot_seconds__x=(9, 9, 9, 1.0),
        d=(1, 1, 1, 30.0),
    )
    mglru = _kernel_entry(a=(1000, 1000, 1000, None))
    result = {
        "kernels": kernels,
        "experiments": {"e": {"kernels": {"new": new, "old": old, "old-mglru": mglru}}},
    }
    out = fc.between_kernels(result)
    rows = {r["metric"]: r for r in out["differences"]}
    assert set(rows) == {"a", "d"} and (out["followed"], out["total"]) == (1, 2)
    assert rows["a"]["verdict"] == "follows" and rows["a"]["to"] == "old"
    assert rows["a"]["real_ratio"] == 4.0 and rows["a"]["vmsim_ratio"] == 3.8
    assert rows["d"]["verdict"] == "opposite"
    result |= {"experiments": result["experiments"], "between_kernels": out}
    text = "\n".join(fc._render_between(result))
    assert "6.18 → 6.1" in text and "100 → 400 (×4)" in text
    assert text.endswith("vmsim follows 1 of 2 real differences (1 opposite)\n")


LOWERING = """
name = "lowering"
metrics = ["vmstat.pgsteal_file@lower", "memcg.cache@lower"]
[cgroup]
[[file]]
name = "data"
size = "16MiB"
[[task]]
name = "reader"
cgroup = true
[[phase]]
name = "read"
steps = [{ task = "reader", op = "read", file = "data" }]
[[phase]]
name = "lower"
steps = [{ op = "cgroup_limit", size = "8MiB" }]
"""


def test_a_cgroup_limit_step_is_root_writing_the_groups_limit_in_vmsim_too():
    e = exp_of(LOWERING, "lowering")
    sc, missing = fc.vmsim_scenario(e, MACHINE)
    ops = [op for t in sc["task"] for op in t["program"] if op["op"] == "cgroup_write"]
    assert ops == [
        {
            "op": "cgroup_write",
            "cgroup": fc.CGROUP,
            "file": "memory.limit_in_bytes",
            "value": 8 << 20,
        }
    ]
    assert not missing
    # A step that takes a task, or an experiment without a group, is one line.
    bad = LOWERING.replace('{ op = "cgroup_limit"', '{ task = "reader", op = "cgroup_limit"')
    with pytest.raises(FidelityError, match="is an operator step"):
        exp_of(bad, "lowering")
    no_group = LOWERING.replace("[cgroup]\n", "").replace("cgroup = true\n", "")
    with pytest.raises(FidelityError, match="a cgroup_limit step needs a \\[cgroup\\] table"):
        exp_of(no_group, "lowering")


def test_the_kernel_reclaims_down_to_a_lowered_limit_before_the_write_returns(tmp_path):
    needs_root_on_disk(tmp_path)
    e = exp_of(LOWERING, "lowering")
    run = load_recording(record(e, 1, tmp_path / "rec", tmp_path, disk_probe=False))["runs"][0]
    lower = [p for p in run["phases"] if p["name"] == "lower"][0]
    assert lower["cgroup_limit"] == [[8 << 20, "ok"]]
    cache = fc.real_value(
        parse_metric("memcg.cache@lower", ["read", "lower"], "t"), run, ["read", "lower"]
    )
    assert cache is not None and cache <= 8 << 20
    assert leftovers(tmp_path) == []
