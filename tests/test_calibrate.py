"""Tests of ``vmsim calibrate``: the microbenchmarks on this machine's real kernel, the
profile they make, the trace parsing behind the reclaim figure, and bad input.

The quick calibration runs for real (as root, as CI does); each figure must be positive
and within a range a physical machine can have, and nothing the calibration made (memory
cgroups, the tracefs instance, temporary files) may be left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_cli import assert_ok, assert_one_line_error
from vmsim import _vmsim, api, calibrate, kprofile

# What a machine can physically take for each measured knob [ns]: a figure outside is a
# broken method, not a slow machine.
# The calibrations that make memory cgroups need the v1 controller.
needs_memcg_v1 = pytest.mark.skipif(
    not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists(),
    reason="no cgroup-v1 memory controller on this machine",
)

SANE = {
    "syscall": (20, 20_000),
    "touch_page": (0.5, 2_000),
    "clear_page": (20, 20_000),
    "copy_page": (20, 40_000),
    "page_fault": (50, 100_000),
    "context_switch": (100, 500_000),
    "fork": (1_000, 10_000_000),
    "unix_sendmsg": (50, 200_000),
    "unix_recvmsg": (50, 200_000),
    "msg_user": (0, 20_000),
    "submit_bio": (100, 5_000_000),
    "shrink_page": (10, 200_000),
    "memcg_charge": (0, 10_000),
    # An empty group's visit in a reclaim walk, split between the two knobs.
    "memcg_iter": (1, 20_000),
    "memcg_shrink_lruvec": (1, 20_000),
    "compact_scan_page": (0.1, 1_000),
    "migrate_page": (50, 200_000),
    # What the kernel spends on an anonymous page's reclaim beyond vmsim's own charge.
    "unmap_page": (0, 500_000),
    # The write and read path's parts are what the kernel spends beyond vmsim's own
    # charge for the rest of that path: 0 when vmsim's own is already as much.
    "write_call": (0, 500_000),
    "write_page": (0, 200_000),
    "read_call": (0, 500_000),
    "read_page": (0, 200_000),
    # A large folio's share of reclaim beyond vmsim's own charge: per folio, per page.
    "shrink_large_folio": (0, 500_000),
    "free_buffer_head": (0, 20_000),
    # The kernel's own time in its allocator, LRU and slab functions (perf samples); the
    # buddy parts are differences of two sampled times, 0 when within the noise.
    "pcp_alloc": (1, 20_000),
    "pcp_free": (1, 20_000),
    "buddy_alloc": (0, 20_000),
    "buddy_free": (0, 20_000),
    "lru_add": (0, 20_000),
    "lru_lock_page": (1, 20_000),
    "slab_object": (1, 20_000),
    # A dentry or inode freed by the superblock shrinker, ext4's eviction included.
    "shrink_object": (10, 200_000),
    # A free inode passed over as recently deleted by ext4 without a journal.
    "ext4_recently_deleted": (1, 20_000),
    # A create's open and close beyond vmsim's own charge for its objects and metadata.
    "create_call": (0, 500_000),
}


def vmsim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vmsim.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def leftovers(tag: str) -> list[str]:
    found = []
    memcg = Path("/sys/fs/cgroup/memory")
    if memcg.is_dir():
        found += [p.name for p in memcg.iterdir() if p.name.startswith(tag)]
    inst = Path("/sys/kernel/tracing/instances")
    if inst.is_dir():
        found += [p.name for p in inst.iterdir() if p.name.startswith(tag)]
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="calibrate's reclaim figure needs root")
@needs_memcg_v1
def test_quick_calibration_measures_every_knob_within_physical_bounds(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prof = tmp_path / "p.toml"
    out = assert_ok(vmsim("calibrate", "--quick", "--json", "-o", str(prof), "--dir", str(work)))
    data = json.loads(out)
    # Compaction alone may be left unmeasured, with its reason, when the machine's memory
    # gives compact_memory too little to move; every other knob is measured.
    compaction = {"migrate_page", "compact_scan_page"}
    # The recently-deleted figure needs ext4 without a journal under --dir.
    # Both need a scratch ext4 filesystem (root, mkfs.ext4).
    no_scratch = calibrate.scratch_unavailable()
    no_rd = calibrate.recently_deleted_unavailable(work) or no_scratch
    rd = {"ext4_recently_deleted"} if no_rd is not None else set()
    if calibrate.host.mount_of(work)[2] != "ext4" or no_scratch is not None:
        rd.add("create_call")
    unmeasured = set(data["skipped"])
    assert unmeasured in (rd, compaction | rd), data["skipped"]
    assert all("too little to tell" in data["skipped"][k] for k in unmeasured - rd)
    if no_rd is not None:
        assert data["skipped"]["ext4_recently_deleted"] == no_rd
    assert set(data["knobs"]) == set(SANE) - unmeasured, sorted(data["knobs"])
    for knob, (lo, hi) in SANE.items():
        if knob in unmeasured:
            continue
        k = data["knobs"][knob]
        assert len(k["values"]) >= 5, knob
        assert lo <= k["ns"] <= hi, (knob, k)
        # the knob is the median rounded to whole ns
        assert k["spread"][0] - 0.5 <= k["ns"] <= k["spread"][1] + 0.5, (knob, k)
    # Each knob is compared with the default profile's spread where that one measured it.
    assert set(data["overlaps_default"]) == set(data["knobs"])
    assert all(v in (True, False, None) for v in data["overlaps_default"].values())
    # Every knob is either measured or named as an estimate.
    assert set(data["knobs"]) | set(data["estimates"]) == set(data["profile"]["cost"])
    assert not set(data["knobs"]) & set(data["estimates"])
    # The profile written is the one printed, and a run takes it.
    written = api.cost_profile(str(prof))
    assert written["cost"] == data["profile"]["cost"]
    for knob in data["knobs"]:
        assert written["method"][knob].startswith("measured: "), knob
    for knob in data["estimates"]:
        assert written["method"][knob].startswith("estimate ("), knob
    assert_ok(vmsim("run", "--costs", str(prof), "--set", "duration=1s"))
    # The checks ran vmsim on the same operations.
    ops = {c["operation"] for c in data["checks"]}
    assert "anonymous write fault" in ops and "cached read, 1 MiB a call" in ops
    # The limit reclaim of the clean file, run in vmsim too: the same kind of reclaims.
    (reclaim,) = [c for c in data["checks"] if c["operation"] == "limit reclaim, clean file"]
    assert reclaim["note"].startswith("vmsim: ") and " reclaims of " in reclaim["note"]
    # The large-folio reclaims, run in vmsim too, one check per folio size.
    large = [c for c in data["checks"] if c["kernel_function"] == "mem_cgroup_resize_max"]
    assert [c["operation"] for c in large] == ["limit reclaim, readahead folios"] + [
        f"limit reclaim, clean {kib} KiB folios" for kib in (64, 256, 1024)
    ]
    assert all(c["vmsim_ns"] > 0 and c["measured_ns"] > 0 for c in data["checks"])
    # Nothing it made is left.
    assert list(work.iterdir()) == []
    assert leftovers("vmsim-calibrate-") == []
    assert str(work) not in Path("/proc/swaps").read_text()


def calibrate_family(family: str, work: Path, *extra: str) -> dict:
    """`vmsim calibrate --quick --json --only FAMILY --base measured-6.18 --dir WORK`,
    its JSON."""
    out = assert_ok(
        vmsim(
            "calibrate",
            "--quick",
            "--json",
            "--only",
            family,
            "--base",
            "measured-6.18",
            *extra,
            "--dir",
            str(work),
        )
    )
    return json.loads(out)


def test_reclaim_time_comes_from_begin_end_pairs_of_each_task() -> None:
    trace = "\n".join(
        [
            "# tracer: nop",
            "            read-4454    [000] .....   199.778439: mm_vmscan_memcg_reclaim_begin: "
            "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
            "            kswapd0-90   [001] .....   199.778500: mm_vmscan_memcg_reclaim_begin: "
            "order=0 gfp_flags=GFP_KERNEL",
            "            read-4454    [001] .....   199.778539: mm_vmscan_memcg_reclaim_end: "
            "nr_reclaimed=32",
            "            read-4454    [001] .....   199.779000: mm_vmscan_memcg_reclaim_begin: "
            "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
            "            read-4454    [000] .....   199.779050: mm_vmscan_memcg_reclaim_end: "
            "nr_reclaimed=64",
            # an end without its begin (the buffer started mid-call) is not counted
            "            other-77     [000] .....   199.779100: mm_vmscan_memcg_reclaim_end: "
            "nr_reclaimed=500",
        ]
    )
    run = calibrate.memcg_reclaim_calls(trace)
    assert run.calls == 2
    assert run.pages == 96
    assert run.ns == pytest.approx(150_000, abs=1)
    assert run.scanned == 0 and run.passes == 0


def test_a_reclaim_call_counts_its_passes_from_its_last_priority() -> None:
    """A call whose last shrink_inactive_list ran at priority 9 made 3 passes before the
    one that reached its goal; another task's events do not count for it."""

    def line(pid: int, ts: str, event: str) -> str:
        return f"            read-{pid}    [000] .....   {ts}: {event}"

    inactive = (
        "mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned={} nr_reclaimed=0 nr_dirty=0 "
        "nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 "
        "nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority={} "
        "flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
    )
    trace = "\n".join(
        [
            line(7, "10.000000", "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_KERNEL"),
            line(7, "10.000001", inactive.format(2, 11)),
            line(8, "10.000001", inactive.format(500, 2)),
            line(7, "10.000002", inactive.format(30, 9)),
            line(7, "10.000003", "mm_vmscan_memcg_reclaim_end: nr_reclaimed=32"),
        ]
    )
    run = calibrate.memcg_reclaim_calls(trace)
    assert (run.calls, run.pages, run.scanned, run.passes) == (1, 32, 32, 3)
    assert run.ns_per_call == pytest.approx(3000, abs=1)


def test_large_folio_parts_are_the_least_squares_split_of_the_kernels_extra_time() -> None:
    # Three folio sizes whose extra time per reclaim is exactly 2000 ns a folio plus 150
    # ns a page: the fit gives both back, whatever vmsim's own time was.
    real, own = {}, {}
    for kib, folios in ((64, 2), (256, 1), (1024, 1)):
        pages = folios * kib // 4
        own_ns = 100.0 * pages
        real[kib] = calibrate.ReclaimTrace(
            10 * (own_ns + 2000 * folios + 150 * pages), 10 * pages, 10, 10 * pages, 0
        )
        own[kib] = calibrate.ReclaimTrace(10 * own_ns, 10 * pages, 10, 10 * pages, 0)
    a, b = calibrate._large_folio_parts(real, own)
    assert a == pytest.approx(2000) and b == pytest.approx(150)
    # A size whose limit never reclaimed cannot be fitted.
    own[256] = calibrate.ReclaimTrace(0, 0, 0, 0, 0)
    with pytest.raises(calibrate.CalibrateError, match="no limit reclaim with 256 KiB"):
        calibrate._large_folio_parts(real, own)


def test_vmsim_charges_a_grouped_page_two_memcg_charge_more_than_a_root_one() -> None:
    """The charge measurement divides by this: a page charged to a group one level below
    the root costs one more level at the charge and one more at the uncharge."""
    cost = api.cost_profile("measured-6.18")["cost"]
    assert calibrate._vmsim_charge_units(cost) == pytest.approx(2.0, abs=0.01)


def test_a_profile_names_what_was_measured_and_what_is_estimated() -> None:
    base = api.cost_profile("seed-era")
    cal = calibrate.Calibration(machine={"machine": "m", "kernel": "k", "date": "2026-01-01"})
    cal.knobs["page_fault"] = calibrate.Figure("page_fault", [700.0, 710.0, 690.4], "a fault")
    cal.knobs["msg_user"] = calibrate.Figure("msg_user", [0.0, 0.0, 0.2], "ticks")
    cal.skipped["shrink_page"] = "reclaim: needs root"
    prof = calibrate.profile(cal, base, "mine")
    assert prof["cost"]["page_fault"] == 700
    assert prof["spread"]["page_fault"] == [690.4, 710.0]
    assert prof["method"]["page_fault"] == "measured: a fault; median of 3"
    # A figure below the measurement's resolution is 1 ns and says so.
    assert prof["cost"]["msg_user"] == 1
    assert "below what the measurement resolves" in prof["method"]["msg_user"]
    assert prof["method"]["shrink_page"].startswith("estimate (reclaim: needs root)")
    assert prof["cost"]["shrink_page"] == base["cost"]["shrink_page"]
    parsed = json.loads(_vmsim.cost_profile(calibrate.profile_toml(prof)))
    assert parsed["name"] == "mine" and parsed["cost"] == prof["cost"]


def test_a_repetition_below_zero_starts_the_spread_at_zero_and_says_so() -> None:
    # migrate_page is compact_migrated less buddy_free: on a busy machine one of the
    # two-pass solves can land below zero; the profile stays valid.
    base = api.cost_profile("seed-era")
    cal = calibrate.Calibration(machine={"machine": "m", "kernel": "k", "date": "2026-01-01"})
    cal.knobs["migrate_page"] = calibrate.Figure(
        "migrate_page", [-1275.0, 900.0, 2875.3], "a difference"
    )
    prof = calibrate.profile(cal, base, "mine")
    assert prof["cost"]["migrate_page"] == 900
    assert prof["spread"]["migrate_page"] == [0.0, 2875.3]
    assert "1 of 3 below zero" in prof["method"]["migrate_page"]
    parsed = json.loads(_vmsim.cost_profile(calibrate.profile_toml(prof)))
    assert parsed["cost"]["migrate_page"] == 900


def test_a_family_measured_alone_joins_its_base_profile_unchanged_elsewhere() -> None:
    base = api.cost_profile("measured-6.18")
    cal = calibrate.Calibration(machine={"machine": "m", "kernel": "k", "date": "2026-12-01"})
    cal.knobs["shrink_large_folio"] = calibrate.Figure(
        "shrink_large_folio", [900.0, 1100.0, 1000.0], "fit"
    )
    cal.knobs["free_buffer_head"] = calibrate.Figure(
        "free_buffer_head", [90.0, 110.0, 100.0], "fit"
    )
    prof = calibrate.profile(cal, base, "measured-6.18", "large-folio-reclaim")
    assert prof["cost"]["shrink_large_folio"] == 1000
    assert prof["cost"]["free_buffer_head"] == 100
    assert (
        "2026-12-01 by vmsim calibrate --only large-folio-reclaim"
        in (prof["method"]["shrink_large_folio"])
    )
    # Every other knob keeps its base figure, spread and method, and the profile its date.
    for knob in set(base["cost"]) - set(cal.knobs):
        assert prof["cost"][knob] == base["cost"][knob], knob
        assert prof["method"][knob] == base["method"][knob], knob
        assert prof["spread"].get(knob) == base["spread"].get(knob), knob
    assert prof["profile"]["date"] == base["date"]
    text = calibrate.profile_toml(prof)
    head = text.splitlines()[0]
    assert head.startswith(
        f"# Cost profile measured-6.18: made by `vmsim calibrate` on {base['date']}; its "
    ), head
    # Each family measured again alone is named once, with its own knobs and date.
    assert (
        "; its shrink_large_folio, free_buffer_head measured again on 2026-12-01 "
        "(--only large-folio-reclaim)"
    ) in head
    assert head.count("(--only large-folio-reclaim)") == 1
    assert json.loads(_vmsim.cost_profile(text))["cost"] == prof["cost"]


def test_the_pcp_cycle_fits_a_small_machine_and_is_unchanged_on_a_large_one() -> None:
    # A 2 GiB guest has about 1.8 GiB available: a quarter of it, in whole MiB.
    small = calibrate.sizes_for(True, 1_800 << 20)
    assert small.pcp_cycle == 450 << 20
    assert small.mem == calibrate.QUICK.mem and small.repeat == calibrate.QUICK.repeat
    assert calibrate.sizes_for(False, 20 << 30) == calibrate.FULL
    assert calibrate.sizes_for(True, 100 << 20).pcp_cycle == 64 << 20  # a floor


def test_an_unknown_family_is_one_line() -> None:
    assert_one_line_error(
        vmsim("calibrate", "--only", "everything"),
        "--only: no family everything (one of large-folio-reclaim, kernel-paths, shrinker, ext4)",
    )


def test_a_guest_calibration_of_an_unknown_kernel_or_one_family_is_one_line() -> None:
    assert_one_line_error(
        vmsim("calibrate", "--kernel", "debian-99"),
        "--kernel debian-99: not one of debian-6.1",
    )
    assert_one_line_error(
        vmsim("calibrate", "--kernel", "debian-6.1", "--only", "ext4"),
        "--only: not with --kernel (a guest calibration measures every family)",
    )


PERF_SCRIPT = """\
84611.239707:
\tffffffff81633255 clear_page_erms
\tffffffff81633000 get_page_from_freelist
\tffffffff81632000 __alloc_frozen_pages_noprof
\tffffffff81631000 do_anonymous_page

84611.240707:
\tffffffff81633255 __rmqueue_pcplist
\tffffffff81633000 get_page_from_freelist
\tffffffff81632000 __alloc_frozen_pages_noprof

84611.241707:
\tffffffff81633255 _raw_spin_unlock_irqrestore
\tffffffff81633000 __alloc_frozen_pages_noprof
\tffffffff81632000 clear_page_erms

84612.5:
\t          24fd40 [unknown]
"""


def test_kernel_samples_are_read_as_call_chains_leaf_first() -> None:
    parsed = kprofile.parse_script(PERF_SCRIPT)
    assert [t for t, _ in parsed] == [84611.239707, 84611.240707, 84611.241707, 84612.5]
    s = kprofile.Samples([stack for _, stack in parsed], 1000)
    assert s.stacks[0] == [
        "clear_page_erms",
        "get_page_from_freelist",
        "__alloc_frozen_pages_noprof",
        "do_anonymous_page",
    ]
    assert len(s.stacks) == 4 and s.stacks[3] == ["[unknown]"]
    assert s.count("__alloc_frozen_pages_noprof") == 3
    assert s.ns("__alloc_frozen_pages_noprof") == 3000
    # Less what was called below it: clear_page_erms above it (a caller) does not count.
    assert s.ns("__alloc_frozen_pages_noprof", ["clear_page_erms"]) == 2000
    assert s.ns("get_page_from_freelist", ["__rmqueue_pcplist"]) == 1000
    assert s.ns("no_such_function") == 0


def test_one_recording_gives_each_benchmark_the_samples_of_its_own_window() -> None:
    parsed = kprofile.parse_script(PERF_SCRIPT)
    windows = [("a", 84611.0, 84611.2400), ("b", 84611.2401, 84611.3), ("idle", 84613.0, 84614.0)]
    got = kprofile.by_window(parsed, windows)
    assert [s[0] for s in got["a"]] == ["clear_page_erms"]
    assert [s[0] for s in got["b"]] == ["__rmqueue_pcplist", "_raw_spin_unlock_irqrestore"]
    # A window with no sample is empty, and a sample outside every window is no one's.
    assert got["idle"] == []
    assert sum(len(v) for v in got.values()) == 3


def test_kernel_paths_time_6_1s_functions_by_their_own_names() -> None:
    # 6.1's names (mm/page_alloc.c, mm/swap.c, mm/slub.c of 6.1), leaf first; 1 ms a sample.
    small = kprofile.Samples(
        [["clear_page_rep", "__alloc_pages"]] * 3
        + [["__alloc_pages"]] * 2
        + [["free_unref_page_list", "release_pages"]] * 4,
        1_000_000,
    )
    large = kprofile.Samples(
        [["__rmqueue_pcplist"]] * 6
        + [["folio_batch_move_lru", "folio_add_lru"]] * 5
        + [["release_pages", "folio_batch_move_lru"]] * 7
        + [["folio_add_lru"]],
        1_000_000,
    )
    slab = kprofile.Samples([["kmem_cache_alloc_lru"]] * 2 + [["kmem_cache_alloc"]], 1_000_000)
    sizes = calibrate.QUICK
    n_small = 32 * sizes.recycle_rounds
    got = calibrate._kernel_path_rep(
        small,
        large,
        slab,
        {"pages": 1000.0, "refilled": 0.0, "drained": 0.0},
        {"kmem_cache_alloc": 30, "kmem_cache_free": 30},
        sizes,
        15.0,
    )
    assert got["pcp_alloc"] == pytest.approx(2e6 / n_small)  # the zeroing left out
    assert got["pcp_free"] == pytest.approx(4e6 / n_small)
    assert got["lru_lock_page"] == pytest.approx(5e6 / 1000)  # release_pages left out
    assert got["lru_add"] == pytest.approx(1e6 / 1000)
    assert got["slab_object"] == pytest.approx(3e6 / 60)


def test_a_kernel_function_perf_never_saw_is_one_clear_error_not_a_zero() -> None:
    # A kernel whose functions are named otherwise (or hidden symbols): no sample in them.
    empty = kprofile.Samples([["[unknown]"], ["do_syscall_64"]], 1_000_000)
    with pytest.raises(
        calibrate.CalibrateError,
        match="perf saw no sample in __alloc_frozen_pages_noprof or __alloc_pages, "
        "free_unref_folios or free_unref_page_list during fault_cycles",
    ):
        calibrate._kernel_path_rep(
            empty,
            empty,
            empty,
            {"pages": 1.0, "refilled": 0.0, "drained": 0.0},
            {"kmem_cache_alloc": 1, "kmem_cache_free": 1},
            calibrate.QUICK,
            15.0,
        )


def test_without_perf_the_kernel_path_families_say_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(kprofile.shutil, "which", lambda _name: None)
    why = "perf not found" if os.geteuid() == 0 else "needs root"
    for family in ("kernel-paths", "shrinker"):
        with pytest.raises(calibrate.CalibrateError, match=f"--only {family}: .*{why}"):
            calibrate.measure_family(family, quick=True, workdir=tmp_path)
    # The reason a full calibration prints beside the estimates it keeps.
    assert kprofile.unavailable() is not None and why in kprofile.unavailable()


def test_kernel_path_knobs_take_the_repetitions_that_exercised_them() -> None:
    def rep(alloc: float, buddy: float | None) -> dict[str, float | None]:
        return {
            "pcp_alloc": alloc,
            "pcp_free": 30.0,
            "buddy_alloc": buddy,
            "buddy_free": None,
            "lru_add": -2.0,
            "lru_lock_page": 90.0,
            "slab_object": 80.0,
            "pages_refilled": 1e5,
            "pages_drained": 0.0,
            "slab_objects_per_file": 12.0,
        }

    cal = calibrate.Calibration()
    calibrate._kernel_path_knobs(
        cal, [rep(100.0, 60.0), rep(120.0, None), rep(110.0, 70.0)], calibrate.QUICK
    )
    assert cal.knobs["pcp_alloc"].values == [100.0, 120.0, 110.0]
    assert cal.knobs["buddy_alloc"].values == [60.0, 70.0]
    assert cal.knobs["buddy_alloc"].method.endswith("; 2 of 3 repetitions")
    assert cal.knobs["lru_add"].values == [0.0, 0.0, 0.0]
    assert "below 0 counts as 0" in cal.knobs["lru_add"].method
    assert "buddy_free" not in cal.knobs
    assert cal.skipped["buddy_free"].startswith("kernel paths: no repetition moved pages")
    assert cal.figures["pages_drained"].values == [0.0, 0.0, 0.0]


@pytest.mark.skipif(
    kprofile.unavailable() is not None, reason=f"kernel paths: {kprofile.unavailable()}"
)
def test_the_kernel_path_family_alone_measures_its_knobs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    mounts = kprofile._trace_mounts()
    data = calibrate_family("kernel-paths", work)
    assert set(data["knobs"]) == set(calibrate.KERNEL_PATH_KNOBS), data["skipped"]
    for knob in data["knobs"]:
        lo, hi = SANE[knob]
        assert lo <= data["knobs"][knob]["ns"] <= hi, (knob, data["knobs"][knob])
    # The large cycle went past the per-CPU lists both ways, as its method says.
    assert min(data["figures"]["pages_refilled"]["values"]) > 0
    assert min(data["figures"]["pages_drained"]["values"]) > 0
    assert [c["operation"] for c in data["checks"]] == [
        "anonymous write fault",
        "anonymous read fault",
    ]
    assert list(work.iterdir()) == []
    assert leftovers("vmsim-calibrate-") == []
    # perf mounts tracefs to count tracepoints; what it mounted is unmounted again.
    assert kprofile._trace_mounts() == mounts
    assert not [p for p in Path("/dev/shm").iterdir() if p.name.startswith("vmsim-")]


@pytest.mark.skipif(os.geteuid() != 0, reason="the large-folio reclaim needs root")
@needs_memcg_v1
def test_the_large_folio_family_alone_measures_its_two_knobs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prof = tmp_path / "p.toml"
    data = calibrate_family("large-folio-reclaim", work, "-o", str(prof))
    assert set(data["knobs"]) == {"shrink_large_folio", "free_buffer_head"}
    for knob, (lo, hi) in SANE.items():
        if knob in data["knobs"]:
            assert lo <= data["knobs"][knob]["ns"] <= hi, (knob, data["knobs"][knob])
    # One check per folio size, run in vmsim with the new figures, and the readahead
    # shape's (folios without buffer heads).
    assert [c["operation"] for c in data["checks"]] == ["limit reclaim, readahead folios"] + [
        f"limit reclaim, clean {kib} KiB folios" for kib in (64, 256, 1024)
    ]
    written = api.cost_profile(str(prof))
    base = api.cost_profile("measured-6.18")
    assert {k for k in base["cost"] if written["cost"][k] != base["cost"][k]} <= set(data["knobs"])
    assert list(work.iterdir()) == []
    assert leftovers("vmsim-calibrate-") == []


@pytest.mark.skipif(
    kprofile.unavailable() is not None, reason=f"the shrinker's figure: {kprofile.unavailable()}"
)
@needs_memcg_v1
def test_the_shrinker_family_alone_frees_a_dentry_and_an_inode_a_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    data = calibrate_family("shrinker", work)
    assert set(data["knobs"]) == {"shrink_object"}, data["skipped"]
    lo, hi = SANE["shrink_object"]
    assert lo <= data["knobs"]["shrink_object"]["ns"] <= hi, data["knobs"]
    # The limit reclaim freed the group's dentries and inodes: two objects a file.
    files = calibrate.QUICK.slab_files
    assert all(files <= n <= 2.2 * files for n in data["figures"]["shrunk_objects"]["values"])
    assert list(work.iterdir()) == []
    assert leftovers("vmsim-calibrate-") == []


@pytest.mark.skipif(
    calibrate.recently_deleted_unavailable(Path(tempfile.gettempdir())) is not None,
    reason=f"{calibrate.recently_deleted_unavailable(Path(tempfile.gettempdir()))}",
)
def test_the_ext4_family_alone_measures_creates_past_recently_deleted_inodes(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    data = calibrate_family("ext4", work)
    assert set(data["knobs"]) == {"create_call", "ext4_recently_deleted"}
    for knob in data["knobs"]:
        lo, hi = SANE[knob]
        assert lo <= data["knobs"][knob]["ns"] <= hi, data["knobs"]
    # A create costs the kernel more than the knob: vmsim's own part is the rest.
    assert all(c > 0 for c in data["figures"]["create_close"]["values"])
    # Each repetition has a scratch filesystem of its own, so every second batch passed
    # over the thousand inodes just deleted and no first batch met any: dearer, each one.
    before = data["figures"]["create_before_deletes"]["values"]
    after = data["figures"]["create_after_deletes"]["values"]
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    assert list(work.iterdir()) == []
    assert not scratch_leftovers()


def scratch_leftovers() -> list[str]:
    """Scratch filesystem images in /dev/shm and scratch mounts anywhere."""
    images = [p.name for p in calibrate.SCRATCH_IMAGES.glob("vmsim-calibrate-*.ext4")]
    mounts = Path("/proc/mounts").read_text().splitlines()
    return images + [m for m in mounts if "/scratch-" in m.split()[1]]


@pytest.mark.skipif(
    calibrate.scratch_unavailable() is not None, reason=f"{calibrate.scratch_unavailable()}"
)
@pytest.mark.parametrize("journal", [False, True])
def test_a_scratch_ext4_is_made_as_asked_and_leaves_nothing_even_on_an_error(
    tmp_path: Path, journal: bool
) -> None:
    with (
        pytest.raises(RuntimeError, match="inside"),
        calibrate.scratch_ext4(tmp_path, journal) as fs,
    ):
        assert calibrate.host.mount_of(fs)[2] == "ext4"
        assert calibrate.host.ext4_journal(fs) is journal
        (fs / "f").write_text("x")
        raise RuntimeError("inside")
    assert list(tmp_path.iterdir()) == []
    assert not scratch_leftovers()


def test_no_scratch_filesystem_without_mkfs_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate.os, "geteuid", lambda: 0)
    monkeypatch.setattr(calibrate.shutil, "which", lambda t: None if t == "mkfs.ext4" else t)
    assert calibrate.scratch_unavailable() == "mkfs.ext4 is not installed (e2fsprogs, mount)"
    monkeypatch.setattr(calibrate.os, "geteuid", lambda: 1000)
    assert "needs root" in (calibrate.scratch_unavailable() or "")


def test_the_ext4_family_refuses_a_filesystem_with_a_journal_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calibrate.host, "ext4_journal", lambda _p: True)
    why = calibrate.recently_deleted_unavailable(tmp_path)
    assert why is not None and "has a journal" in why
    monkeypatch.setattr(calibrate.host, "ext4_journal", lambda _p: None)
    assert "not ext4" in (calibrate.recently_deleted_unavailable(tmp_path) or "")
    with pytest.raises(calibrate.CalibrateError, match="calibrate --only ext4: .*not ext4"):
        calibrate.measure_family("ext4", quick=True, workdir=tmp_path)


def test_microbenchmarks_give_positive_figures() -> None:
    assert calibrate._bench("syscall", 10_000)["ns"] > 0
    w = calibrate._bench("fault_write", 4 << 20)["ns"]
    r = calibrate._bench("fault_read", 4 << 20)["ns"]
    assert w > r > 0
    with pytest.raises(calibrate.CalibrateError, match="calibrate touch_random: "):
        calibrate._bench("touch_random", 100)


def test_bad_base_profile_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(vmsim("calibrate", "--quick", "--base", "nosuch"), "nosuch")


def test_output_that_cannot_be_written_is_refused_before_measuring(tmp_path: Path) -> None:
    assert_one_line_error(vmsim("calibrate", "--quick", "-o", str(tmp_path)), str(tmp_path))


def test_work_dir_must_exist(tmp_path: Path) -> None:
    proc = vmsim("calibrate", "--quick", "--dir", str(tmp_path / "absent"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_a_work_dir_that_refuses_files_is_one_line() -> None:
    # /proc is a directory in which nobody, root included, can make one.
    assert_one_line_error(vmsim("calibrate", "--quick", "--dir", "/proc"), "--dir /proc")


def test_agreement_compares_spreads_with_the_default_profile() -> None:
    """A knob agrees with a profile when the two spreads overlap; a knob the profile only
    estimates is not compared."""
    cal = calibrate.Calibration(machine={"machine": "m", "kernel": "k", "date": "2026-01-01"})
    cal.knobs["page_fault"] = calibrate.Figure("page_fault", [700.0, 720.0], "a fault")
    cal.knobs["fork"] = calibrate.Figure("fork", [1000.0, 1100.0], "clone")
    cal.knobs["slab_object"] = calibrate.Figure("slab_object", [40.0], "made up")
    default = {
        "name": "d",
        "cost": {},
        "spread": {"page_fault": [710.0, 800.0], "fork": [1200.0, 1300.0]},
    }
    assert calibrate.agreement(cal, default) == {
        "page_fault": True,
        "fork": False,
        "slab_object": None,
    }


def test_compaction_that_cannot_be_measured_leaves_its_two_knobs_named_not_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def too_little(sizes: calibrate.Sizes) -> tuple[float, float, int]:
        raise calibrate.CalibrateError(
            "calibrate compaction: the passes migrated 0 pages and, with the layout, 162; "
            "too little to tell migration from scanning"
        )

    monkeypatch.setattr(calibrate, "compaction_available", lambda: None)
    monkeypatch.setattr(calibrate, "compaction_costs", too_little)
    cal = calibrate.Calibration(machine={})
    said: list[str] = []
    # measure() goes on with what this returns: nothing, and the two knobs named.
    assert calibrate._measure_compaction(cal, calibrate.QUICK, said.append) == []
    assert said == ["compaction (compact_memory, the whole machine)"]
    assert set(cal.skipped) == {"migrate_page", "compact_scan_page"}
    assert cal.skipped["migrate_page"].startswith("compaction: the passes migrated 0 pages")
    # Without root, the reason is that, and nothing is tried.
    monkeypatch.setattr(calibrate, "compaction_available", lambda: "needs root")
    cal = calibrate.Calibration(machine={})
    assert calibrate._measure_compaction(cal, calibrate.QUICK, said.append) == []
    assert cal.skipped["compact_scan_page"] == "compaction: needs root" and len(said) == 1
