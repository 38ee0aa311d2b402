//! Memory cgroups in whole runs: charges balance up the tree, the hard limit holds
//! (reclaim, then the memcg OOM), soft-limit reclaim takes from groups in excess
//! first in every kernel, the walk's cost grows with the hierarchy as the seed 002
//! kernels' do, large hierarchies stay cheap, scenarios without groups are
//! untouched, and runs are deterministic.
//!
//! Machines are small with one CPU and a fast disk, so each run takes milliseconds.

use vmsim_core::config::Scenario;
use vmsim_core::RunResult;

/// `[kernel]` lines of tests whose usage figures count user pages only: no kernel
/// memory charged (page tables, slab objects and the charge stock their pages return
/// to are covered by memcg_kmem.rs and kmem_behaviour.rs).
const USER_PAGES_ONLY: &str = "memcg_kmem = false";

/// A one-CPU machine with `memory` of RAM and `swap`; `kernel` lines go into `[kernel]`,
/// `rest` (cgroups and tasks) is appended.
fn scenario(memory: &str, swap: &str, kernel: &str, rest: &str) -> Scenario {
    // Seed 002's mechanisms under the seed-era costs its reproduction uses: the walk's cost
    // against dd's is the claim, and the measured 6.18 write path would dilute it.
    let text = format!(
        r#"
duration = "60s"
costs = "seed-era"
[machine]
memory = "{memory}"
cpus = 1
swap = "{swap}"
[kernel]
{kernel}
[sampling]
interval = "60s"
[disk]
latency = 20000
read_bandwidth = 2000000000
write_bandwidth = 1000000000
{rest}
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(sc: &Scenario) -> RunResult {
    vmsim_core::sim::run(sc, &mut |_, _| {})
}

/// Runs to the end and checks the memcg invariants against the frame table.
fn run_checked(sc: &Scenario) -> RunResult {
    let mut eng = vmsim_core::sim::build(sc);
    let mut t = 0;
    while eng.live_user_tasks > 0 && t < sc.duration.0 {
        t += 500_000_000;
        eng.run_until(t);
        eng.kernel
            .check_memcg()
            .unwrap_or_else(|e| panic!("at {t} ns: {e}"));
    }
    run(sc)
}

fn stat(r: &RunResult, path: &str, key: &str) -> u64 {
    r.memcg.as_ref().expect("memcg report").groups[path].stat[key]
}

const DD_BESIDE_HOG: &str = r#"
[[cgroup]]
path = "A"
soft_limit_in_bytes = 0
[[cgroup]]
path = "B"
[[task]]
name = "writerB"
cgroup = "B"
program = [ { op = "write", file = "b", size = "80MiB" }, { op = "sleep", time = "30s" } ]
[[task]]
name = "writerA"
cgroup = "A"
start = "1s"
program = [ { op = "write", file = "a", size = "400MiB" } ]
"#;

#[test]
fn charges_balance_up_the_tree_during_a_run() {
    // User pages only: pgpgin and pgpgout count them, and kernel memory's pages would
    // stay in the charge stock after exit.
    let sc = scenario(
        "256MiB",
        "256MiB",
        USER_PAGES_ONLY,
        r#"
[[cgroup]]
path = "A"
[[cgroup]]
path = "A/x"
[[cgroup]]
path = "A/y"
generate = { shape = "binary", groups = 30 }
[[task]]
name = "anon"
cgroup = "A/x"
program = [ { op = "touch", size = "150MiB" }, { op = "touch", size = "150MiB" }, { op = "unmap", size = "100MiB" } ]
[[task]]
name = "file"
cgroup = "A/y"
program = [ { op = "write", file = "f", size = "300MiB" }, { op = "read", file = "f" }, { op = "unlink", file = "f" } ]
"#,
    );
    let r = run_checked(&sc);
    let m = r.memcg.as_ref().unwrap();
    assert_eq!(m.nr_groups, 1 + 3 + 30);
    // Everything was freed or unlinked at exit except page cache nobody owns any more.
    let a = &m.groups["A"];
    let x = &m.groups["A/x"];
    let y = &m.groups["A/y"];
    assert_eq!(a.usage_in_bytes, x.usage_in_bytes + y.usage_in_bytes);
    assert!(x.stat["pgpgin"] > 0 && y.stat["pgpgin"] > 0);
    assert_eq!(
        a.stat["total_pgpgin"],
        x.stat["pgpgin"] + y.stat["pgpgin"] + a.stat["pgpgin"]
    );
    // pgpgin - pgpgout is what is still charged.
    assert_eq!(
        (x.stat["pgpgin"] - x.stat["pgpgout"]) * 4096,
        x.usage_in_bytes
    );
    assert!(x.stat["pgfault"] > 0, "the anon task's faults are counted");
}

#[test]
fn the_hard_limit_is_never_exceeded_reclaim_first_then_oom() {
    // With swap: limit reclaim swaps the group's anon pages out and the task finishes.
    let with_swap = scenario(
        "256MiB",
        "512MiB",
        "",
        r#"
[[cgroup]]
path = "L"
limit_in_bytes = "64MiB"
[[task]]
name = "hog"
cgroup = "L"
program = [ { op = "touch", size = "120MiB" }, { op = "touch", size = "120MiB" } ]
"#,
    );
    let r = run_checked(&with_swap);
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert!(l.max_usage_in_bytes <= 64 << 20, "{}", l.max_usage_in_bytes);
    assert!(l.failcnt > 0, "the limit was hit");
    assert!(r.memcg.as_ref().unwrap().walk.limit_reclaims > 0);
    assert_eq!(r.summary.oom_kills, 0);
    assert!(r.vmstat["pswpout"] > 0, "limit reclaim swapped");
    // Without swap: nothing can be reclaimed, the memcg OOM killer kills the task.
    let no_swap = scenario(
        "256MiB",
        "0",
        "",
        r#"
[[cgroup]]
path = "L"
limit_in_bytes = "64MiB"
[[task]]
name = "hog"
cgroup = "L"
program = [ { op = "touch", size = "120MiB" } ]
[[task]]
name = "bystander"
program = [ { op = "touch", size = "100MiB" }, { op = "sleep", time = "5s" } ]
"#,
    );
    let r = run_checked(&no_swap);
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert!(l.max_usage_in_bytes <= 64 << 20);
    assert_eq!(r.tasks["hog"].oom_killed, 1);
    assert_eq!(r.tasks["bystander"].oom_killed, 0, "only the group's tasks");
    assert_eq!(r.memcg.as_ref().unwrap().walk.oom_kills, 1);
}

#[test]
fn soft_limit_reclaim_takes_from_the_group_in_excess_first() {
    for kernel in ["base", "rework", "reworkoptim"] {
        let sc = scenario(
            "256MiB",
            "0",
            &format!("soft_limit_reclaim = \"{kernel}\"\n{USER_PAGES_ONLY}"),
            DD_BESIDE_HOG,
        );
        let r = run_checked(&sc);
        let steal_a = stat(&r, "A", "total_pgsteal");
        let steal_b = stat(&r, "B", "total_pgsteal");
        assert!(steal_a > 50_000, "{kernel}: A reclaimed {steal_a}");
        assert_eq!(
            steal_b, 0,
            "{kernel}: B is under its soft limit and A always had pages to give"
        );
        let b = &r.memcg.as_ref().unwrap().groups["B"];
        assert_eq!(b.usage_in_bytes, 80 << 20, "{kernel}: B kept its cache");
    }
    // Without a soft limit anywhere, global reclaim takes B's older cache too.
    let plain = DD_BESIDE_HOG.replace("soft_limit_in_bytes = 0\n", "");
    let r = run(&scenario("256MiB", "0", "", &plain));
    assert!(stat(&r, "B", "total_pgsteal") > 0);
}

/// dd beside `groups` empty groups with soft limit 0 on dd's group; sys seconds.
fn dd_sys(kernel: &str, groups: u64, soft: bool) -> f64 {
    let limit = if soft { "soft_limit_in_bytes = 0" } else { "" };
    let sc = scenario(
        "128MiB",
        "0",
        &format!("soft_limit_reclaim = \"{kernel}\""),
        &format!(
            r#"
[[cgroup]]
path = "A"
{limit}
[[cgroup]]
path = "bunch"
generate = {{ shape = "binary", groups = {groups} }}
[[task]]
name = "dd"
cgroup = "A"
program = [ {{ op = "write", file = "f", size = "256MiB" }} ]
"#
        ),
    );
    run(&sc).summary.sys_seconds
}

#[test]
fn the_walk_costs_rework_most_and_reworkoptim_skips_empty_subtrees() {
    let base = dd_sys("base", 2046, true);
    let rework = dd_sys("rework", 2046, true);
    let optim = dd_sys("reworkoptim", 2046, true);
    assert!(rework > 2.0 * base, "rework {rework} vs base {base}");
    assert!(
        optim < rework / 2.0,
        "reworkoptim {optim} vs rework {rework}"
    );
    // More empty groups cost rework more.
    assert!(dd_sys("rework", 510, true) < rework);
    // No soft limit: rework walks twice (soft pass finds nothing, then all groups).
    let nl_rework = dd_sys("rework", 2046, false);
    let nl_optim = dd_sys("reworkoptim", 2046, false);
    assert!(nl_rework > nl_optim, "{nl_rework} vs {nl_optim}");
}

#[test]
fn a_hundred_thousand_groups_are_cheap() {
    let sc = scenario(
        "128MiB",
        "0",
        "soft_limit_reclaim = \"reworkoptim\"",
        r#"
[[cgroup]]
path = "A"
soft_limit_in_bytes = 0
[[cgroup]]
path = "bunch"
generate = { shape = "binary", groups = 100000 }
[[task]]
name = "dd"
cgroup = "A"
program = [ { op = "write", file = "f", size = "256MiB" } ]
"#,
    );
    let t0 = std::time::Instant::now();
    let r = run(&sc);
    let m = r.memcg.as_ref().unwrap();
    assert_eq!(
        m.nr_groups, 100_003,
        "root, A, bunch and the generated groups"
    );
    assert!(r.summary.completed);
    assert!(m.walk.shrink_node_memcgs > 0);
    assert!(t0.elapsed().as_secs_f64() < 20.0, "took {:?}", t0.elapsed());
}

#[test]
fn runs_are_deterministic_and_scenarios_without_groups_report_none() {
    let sc = scenario(
        "256MiB",
        "0",
        "soft_limit_reclaim = \"rework\"",
        DD_BESIDE_HOG,
    );
    let a = serde_json::to_string(&run(&sc)).unwrap();
    let b = serde_json::to_string(&run(&sc)).unwrap();
    assert_eq!(a, b);
    let plain = scenario(
        "256MiB",
        "0",
        "",
        r#"
[[task]]
name = "w"
program = [ { op = "write", file = "f", size = "400MiB" } ]
"#,
    );
    let r = run(&plain);
    assert!(r.memcg.is_none());
    assert!(!serde_json::to_string(&r).unwrap().contains("\"memcg\""));
}

#[test]
fn bad_cgroup_tables_are_one_line_errors() {
    let bad = [
        ("[[cgroup]]\npath = \"A\"\nsoft_limit = 0\n", "soft_limit"),
        ("[[cgroup]]\npath = \"A/b\"\n", "parent \"A\""),
        ("[[cgroup]]\npath = \"/A\"\n", "relative"),
        (
            "[[cgroup]]\npath = \"A\"\ngenerate = { shape = \"ternary\", groups = 3 }\n",
            "ternary",
        ),
        (
            "[[task]]\nname = \"t\"\ncgroup = \"nowhere\"\nprogram = []\n",
            "cgroup \"nowhere\" is not declared",
        ),
        ("[kernel]\nsoft_limit_reclaim = \"fast\"\n", "fast"),
        ("[cgroup]\npath = \"A\"\n", "[[cgroup]]"),
        (
            "[[cgroup]]\npath = \"A\"\nhierarchy = \"v2\"\n[[cgroup]]\npath = \"B\"\n",
            "bound to one hierarchy",
        ),
        (
            "[[cgroup]]\npath = \"A\"\nhigh = \"1MiB\"\n",
            "high is a cgroup v2 file",
        ),
        (
            "[[cgroup]]\npath = \"A\"\nlow = \"1MiB\"\n",
            "low is a cgroup v2 file",
        ),
        (
            "[[cgroup]]\npath = \"A\"\nhierarchy = \"v2\"\nlimit_in_bytes = \"1MiB\"\n",
            "v2 calls it max",
        ),
        ("[[cgroup]]\npath = \"A\"\nhierarchy = \"v3\"\n", "v3"),
    ];
    for (text, needle) in bad {
        let e = Scenario::from_toml(text).expect_err(text).to_string();
        assert!(e.contains(needle), "{text}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn memory_min_and_low_protect_a_group_from_global_reclaim() {
    let groups = |prot: &str| {
        format!(
            r#"
[[cgroup]]
path = "P"
hierarchy = "v2"
{prot}
[[cgroup]]
path = "Q"
hierarchy = "v2"
[[task]]
name = "keeper"
cgroup = "P"
program = [ {{ op = "write", file = "p", size = "60MiB" }}, {{ op = "sleep", time = "30s" }} ]
[[task]]
name = "streamer"
cgroup = "Q"
start = "1s"
program = [ {{ op = "write", file = "q", size = "400MiB" }} ]
"#
        )
    };
    // Unprotected, P's older cache is reclaimed with Q's.
    let r = run_checked(&scenario("256MiB", "0", USER_PAGES_ONLY, &groups("")));
    assert!(stat(&r, "P", "pgsteal") > 0);
    for prot in ["min = \"64MiB\"", "low = \"64MiB\""] {
        let r = run_checked(&scenario("256MiB", "0", USER_PAGES_ONLY, &groups(prot)));
        assert_eq!(stat(&r, "P", "pgsteal"), 0, "{prot}");
        assert!(stat(&r, "Q", "pgsteal") > 0, "{prot}");
        assert_eq!(
            r.memcg.as_ref().unwrap().groups["P"].usage_in_bytes,
            60 << 20,
            "{prot}"
        );
    }
}

/// A 512 MiB machine without swap (`kernel` lines in `[kernel]`) with one group "L"
/// declared with `files` (its limit lines) and one task in it running `program`. Files
/// carry no filesystem metadata (`fs = "bare"`), so that the page counts are the data's.
fn in_group(kernel: &str, files: &str, program: &str) -> Scenario {
    scenario(
        "512MiB",
        "0",
        &format!("fs = \"bare\"\n{kernel}"),
        &format!(
            "[[cgroup]]\npath = \"L\"\n{files}\n\
             [[task]]\nname = \"dd\"\ncgroup = \"L\"\nprogram = [ {program} ]\n"
        ),
    )
}

/// A writer of `size` then a reader of the same file, in a group limited to `limit`.
fn dd_through(limit: &str, size: &str, kernel: &str) -> RunResult {
    let sc = in_group(
        kernel,
        &format!("limit_in_bytes = \"{limit}\""),
        &format!(
            "{{ op = \"write\", file = \"f\", size = \"{size}\" }}, \
             {{ op = \"read\", file = \"f\" }}"
        ),
    );
    run_checked(&sc)
}

#[test]
fn a_writer_over_the_limit_waits_for_the_flusher_instead_of_being_killed() {
    // Every page the group can hold is dirty when the limit is first hit: limit reclaim
    // wakes the flusher, sleeps (VMSCAN_THROTTLE_WRITEBACK) and waits on writeback,
    // and the charge retries after the writes completed.
    let r = dd_through("16MiB", "64MiB", "");
    assert_eq!(r.summary.oom_kills, 0);
    assert!(r.summary.completed);
    assert_eq!(
        r.vmstat_delta["nr_written"], 16384,
        "every page written back"
    );
    assert!(
        r.vmstat_delta["pgsteal_file"] >= 16384 - 4096,
        "reclaimed as it went"
    );
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert!(l.max_usage_in_bytes <= 16 << 20);
    assert!(
        r.vmstat_delta
            .get("nr_vmscan_immediate_reclaim")
            .copied()
            .unwrap_or(0)
            > 0
    );
    // Limit reclaim is counted in pgscan_file and pgsteal_file only, not as direct reclaim.
    assert_eq!(r.vmstat_delta.get("pgscan_direct"), None);
    assert_eq!(r.vmstat_delta.get("pgsteal_direct"), None);
    assert_eq!(r.vmstat_delta.get("allocstall_normal"), None);
    assert_eq!(r.vmstat_delta.get("allocstall_movable"), None);
}

#[test]
fn a_file_read_back_through_a_smaller_group_refaults_every_page() {
    // 64 MiB through 16 MiB: by the time it is read back, every page was evicted and
    // left a shadow; the refault distance (48 MiB and more of evictions) exceeds the
    // group's working set, so nothing comes back active.
    let r = dd_through("16MiB", "64MiB", "");
    assert_eq!(r.vmstat_delta["workingset_refault_file"], 16384);
    assert_eq!(r.vmstat_delta.get("workingset_activate_file"), None);
    // Kernels before 3.15 had no shadow entries.
    let old = dd_through("16MiB", "64MiB", "workingset = false");
    assert_eq!(old.vmstat_delta.get("workingset_refault_file"), None);
}

#[test]
fn a_refault_within_the_working_set_comes_back_active() {
    // A 24 MiB file made active (written, then read) in a 32 MiB group; a second file
    // of 24 MiB deactivates and evicts part of it; read again, those pages refault
    // after fewer evictions than the group's active list holds.
    let sc = scenario(
        "512MiB",
        "0",
        "",
        r#"
[[cgroup]]
path = "L"
limit_in_bytes = "32MiB"
[[task]]
name = "dd"
cgroup = "L"
program = [
  { op = "write", file = "hot", size = "24MiB" },
  { op = "read", file = "hot" },
  { op = "write", file = "cold", size = "24MiB" },
  { op = "read", file = "hot" },
]
"#,
    );
    let r = run_checked(&sc);
    let refaults = r
        .vmstat_delta
        .get("workingset_refault_file")
        .copied()
        .unwrap_or(0);
    let activated = r
        .vmstat_delta
        .get("workingset_activate_file")
        .copied()
        .unwrap_or(0);
    assert!(refaults > 0, "the cold file pushed hot pages out");
    assert!(
        activated > 0 && activated <= refaults,
        "{activated} of {refaults}"
    );
}

/// A writer of `size` into group "L" declared with `files` (its limit lines), stepping
/// the run and returning it with the most dirty + writeback pages "L" ever held.
fn dd_watching_dirty(files: &str, size: &str) -> (RunResult, u64) {
    let sc = in_group(
        "",
        files,
        &format!("{{ op = \"write\", file = \"f\", size = \"{size}\" }}"),
    );
    let mut eng = vmsim_core::sim::build(&sc);
    let id = eng.kernel.mm.memcg.paths["L"];
    let (mut t, mut most) = (0, 0);
    while eng.live_user_tasks > 0 && t < sc.duration.0 {
        t += 10_000_000;
        eng.run_until(t);
        let e = eng.kernel.mm.memcg.ext(id);
        most = most.max(e.stat[vmsim_core::mm::memcontrol::stat::DIRTY]);
        eng.kernel
            .check_memcg()
            .unwrap_or_else(|e| panic!("at {t} ns: {e}"));
    }
    (run(&sc), most)
}

#[test]
fn a_v2_writer_is_paced_by_its_groups_dirty_limit_where_v1_fills_the_group() {
    // 64 MiB through a 16 MiB group (4,096 pages). cgroup v1 has no dirty domain per
    // group: the writer fills the group with dirty pages and limit reclaim waits for
    // the flusher. cgroup v2's balance_dirty_pages also obeys the group's domain:
    // dirty_ratio (20 %) of what the group can hold.
    let (v1, v1_most) = dd_watching_dirty("limit_in_bytes = \"16MiB\"", "64MiB");
    let (v2, v2_most) = dd_watching_dirty("hierarchy = \"v2\"\nmax = \"16MiB\"", "64MiB");
    for r in [&v1, &v2] {
        assert!(r.summary.completed);
        assert_eq!(r.summary.oom_kills, 0);
        assert_eq!(r.vmstat_delta["nr_written"], 16384);
    }
    assert!(
        v1_most > 3000,
        "v1 group filled with dirty pages: {v1_most}"
    );
    assert!(
        v2_most < 1200,
        "v2 group's dirty pages held near 20 %: {v2_most}"
    );
    // v2 limit reclaim never waits on writeback (case 3 is v1's) nor sleeps for the flusher.
    assert!(v1.vmstat_delta.get("nr_vmscan_immediate_reclaim").is_some());
    let ev = v2.memcg.as_ref().unwrap().groups["L"]
        .events
        .clone()
        .unwrap();
    assert!(ev["max"] > 0, "{ev:?}");
    assert_eq!(ev["oom"], 0);
    assert!(v1.memcg.as_ref().unwrap().groups["L"].events.is_none());
    // memory.stat in each hierarchy's own names: v2's are hierarchical, no total_ lines.
    let st = &v2.memcg.as_ref().unwrap().groups["L"].stat;
    assert!(st.contains_key("file_dirty") && !st.contains_key("total_cache"));
    assert!(st["file"] > 0 && st["file"] <= 16 << 20, "{}", st["file"]);
    assert!(v1.memcg.as_ref().unwrap().groups["L"]
        .stat
        .contains_key("total_cache"));
}

#[test]
fn memory_high_reclaims_on_the_way_back_to_user_space() {
    // With only memory.high, page cache above it is reclaimed as the writer returns to
    // user space: usage stays within a charge batch or so of high, nothing is killed.
    let (r, _) = dd_watching_dirty("hierarchy = \"v2\"\nhigh = \"16MiB\"", "64MiB");
    assert!(r.summary.completed);
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert!(
        l.max_usage_in_bytes <= (16 << 20) + (16 << 20) / 10,
        "max usage {} over high 16 MiB",
        l.max_usage_in_bytes
    );
    assert!(l.events.as_ref().unwrap()["high"] > 0);
    assert_eq!(l.events.as_ref().unwrap()["max"], 0);
    assert_eq!(l.high, Some(16 << 20));
}

#[test]
fn memory_high_throttles_growth_that_reclaim_cannot_stop() {
    // Anonymous memory without swap cannot be reclaimed: 2 MiB over a 16 MiB memory.high,
    // the task is made to sleep, longer as the overage grows (calculate_high_delay:
    // about 1 s per 64 pages at the end), but it is never killed.
    let anon = |files: &str| {
        let sc = scenario(
            "512MiB",
            "0",
            USER_PAGES_ONLY,
            &format!(
                r#"
[[cgroup]]
path = "H"
hierarchy = "v2"
{files}
[[task]]
name = "hog"
cgroup = "H"
program = [ {{ op = "touch", size = "18MiB" }} ]
"#
            ),
        );
        run_checked(&sc)
    };
    let free = anon("");
    let high = anon("high = \"16MiB\"");
    assert!(free.summary.completed && high.summary.completed);
    assert_eq!(high.summary.oom_kills, 0);
    assert!(
        free.summary.elapsed_seconds < 0.5,
        "{}",
        free.summary.elapsed_seconds
    );
    assert!(
        high.summary.elapsed_seconds > 2.0,
        "penalised: {} s",
        high.summary.elapsed_seconds
    );
    assert_eq!(
        high.memcg.as_ref().unwrap().groups["H"].max_usage_in_bytes,
        18 << 20
    );
}

#[test]
fn calculate_high_delay_is_quadratic_in_the_overage_and_scaled_by_the_batch() {
    use vmsim_core::mm::memcontrol::calculate_high_delay;
    let one = 1u64 << 20; // an overage of 100 %, in 1/2^20
    assert_eq!(calculate_high_delay(64, 0, 250), 0);
    // 100 % over, one batch: 2^40 * 250 >> 34 = 16,000 jiffies.
    assert_eq!(calculate_high_delay(64, one, 250), 16_000);
    assert_eq!(calculate_high_delay(64, one / 2, 250), 4_000);
    assert_eq!(calculate_high_delay(32, one, 250), 8_000);
}

#[test]
fn shadow_nodes_are_counted_and_trimmed_to_one_per_eight_cached_pages() {
    // 1.5 GiB of files through a 128 MiB machine: the evicted pages' shadows fill
    // ~5,600 xarray nodes, more than the 8 pages per node the LRU can back (about
    // 3,500 nodes), so the shadow-node shrinker frees the oldest.
    let sc = scenario(
        "128MiB",
        "0",
        "",
        r#"
[[task]]
name = "dd"
program = [
  { op = "write", file = "a", size = "512MiB" },
  { op = "write", file = "b", size = "512MiB" },
  { op = "write", file = "c", size = "512MiB" },
]
"#,
    );
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(sc.duration.0);
    let k = &eng.kernel;
    let gauge: i64 =
        k.mm.nodes
            .iter()
            .map(|n| n.vm_stat[vmsim_core::mm::vmstat::NodeStat::WORKINGSET_NODES as usize])
            .sum();
    assert_eq!(gauge as u64, k.shadows.nr_shadow_nodes());
    let lru: u64 =
        k.mm.nodes
            .iter()
            .map(|n| n.lruvec.nr.iter().sum::<u64>())
            .sum();
    assert!(gauge > 1000, "{gauge}");
    assert!(
        (gauge as u64) <= lru / 8 + 2 * 128,
        "{gauge} nodes for {lru} LRU pages"
    );
    let r = run(&sc);
    assert!(r.vmstat_delta["workingset_nodereclaim"] > 0);
    // Without workingset detection there are no shadows at all.
    let mut old = sc.clone();
    old.kernel.workingset = false;
    let r = run(&old);
    assert_eq!(r.vmstat_delta.get("workingset_nodereclaim"), None);
}

#[test]
fn a_groups_shadow_nodes_are_trimmed_against_its_own_pages() {
    // 400 MiB through a 16 MiB group on a 512 MiB machine: ~1,540 xarray nodes of
    // shadows against the ~510 (4,096 pages / 8) the group's lruvec can back. Only
    // limit reclaim runs, and its shrink_slab(memcg) trims the group's own list by
    // half the excess while the excess is a batch (128) or more: at most ~256 over.
    let sc = in_group(
        "",
        "limit_in_bytes = \"16MiB\"",
        "{ op = \"write\", file = \"f\", size = \"400MiB\" }",
    );
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(sc.duration.0);
    let k = &eng.kernel;
    let id = k.mm.memcg.paths["L"];
    let nodes = k.shadows.memcg_shadow_nodes(id);
    let pages: u64 = (0..k.mm.nodes.len())
        .map(|nid| k.mm.memcg.lruvec_pages(id, nid, &k.mm.nodes))
        .sum();
    assert!(nodes > 0);
    assert!(nodes <= pages / 8 + 256, "{nodes} nodes for {pages} pages");
    let r = run(&sc);
    assert!(r.vmstat_delta["workingset_nodereclaim"] > 0);
    assert_eq!(
        r.vmstat_delta.get("pgscan_kswapd"),
        None,
        "no global reclaim"
    );
}

#[test]
fn one_page_files_keep_their_shadow_in_the_xarray_head_not_in_a_node() {
    // 20,000 files of 4 KiB through a 16 MiB group: each file's one entry, page or
    // shadow, sits in its xarray's head (no xa_node), so evicting them adds no shadow
    // nodes and the shadow-node shrinker has nothing to do; files of 64 KiB have a
    // node each, which holds only shadows once the file is evicted.
    let run_files = |size: &str, files: u64| {
        let sc = in_group(
            "",
            "limit_in_bytes = \"16MiB\"",
            &format!("{{ op = \"fio_write\", files = {files}, file_size = \"{size}\" }}"),
        );
        let mut eng = vmsim_core::sim::build(&sc);
        eng.run_until(sc.duration.0);
        let k = &eng.kernel;
        (k.shadows.len(), k.shadows.nr_shadow_nodes())
    };
    let (shadows, nodes) = run_files("4KiB", 20_000);
    assert!(shadows > 10_000, "{shadows} shadows");
    assert_eq!(nodes, 0);
    let (shadows, nodes) = run_files("64KiB", 2_000);
    assert!(shadows > 10_000, "{shadows} shadows");
    // A fully evicted 16-page file is one node of 16 shadows.
    assert!(nodes > 0 && nodes <= shadows as u64 / 16, "{nodes} nodes");
    assert!(
        nodes >= shadows as u64 / 16 / 2,
        "{nodes} nodes for {shadows} shadows"
    );
}

#[test]
fn reclaim_throttle_off_runs_none_of_todays_throttles() {
    // The same writer through a 16 MiB group: today's kernel (modern) throttles limit
    // reclaim (VMSCAN_THROTTLE_WRITEBACK); `off` and `limit` are the kernels before
    // reclaim_throttle() existed and never call it.
    let throttled = |mode: &str| {
        let sc = in_group(
            &format!("reclaim_throttle = \"{mode}\""),
            "limit_in_bytes = \"16MiB\"",
            "{ op = \"write\", file = \"f\", size = \"64MiB\" }",
        );
        let (r, tracer) = vmsim_core::sim::run_traced(
            &sc,
            Some((
                vmsim_core::trace::TraceFormat::Modern,
                vmsim_core::trace::EventFilter::default(),
            )),
            &mut |_, _| {},
        );
        let tracer = tracer.unwrap();
        let n = tracer
            .lines()
            .iter()
            .filter(|l| l.contains(" mm_vmscan_throttled: "))
            .count();
        (n, r.summary.elapsed_seconds)
    };
    let (modern, t_modern) = throttled("modern");
    let (off, t_off) = throttled("off");
    let (limit, _) = throttled("limit");
    assert!(modern > 0);
    assert_eq!((off, limit), (0, 0));
    assert_ne!(t_modern, t_off, "off and modern are different kernels");
}

/// failcnt and limit-reclaim entries (mm_vmscan_memcg_reclaim_begin) of a 64 MiB write
/// through a 16 MiB group.
fn failcnt_and_reclaims(kernel: &str) -> (u64, u64) {
    let sc = in_group(
        kernel,
        "limit_in_bytes = \"16MiB\"",
        "{ op = \"write\", file = \"f\", size = \"64MiB\" }",
    );
    let mut eng = vmsim_core::sim::build(&sc);
    while eng.live_user_tasks > 0 {
        let t = eng.kernel.mm.clock() + 500_000_000;
        eng.run_until(t);
        // Stocked charges count in usage: the counters still balance.
        eng.kernel.check_memcg().unwrap_or_else(|e| panic!("{e}"));
    }
    let r = run(&sc);
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert!(l.max_usage_in_bytes <= 16 << 20, "{kernel}: limit exceeded");
    assert_eq!(r.vmstat_delta["nr_written"], 16384, "{kernel}");
    (l.failcnt, eng.kernel.mm.memcg.walk.limit_reclaims)
}

#[test]
fn the_charge_batch_fails_once_per_page_near_the_limit_as_6_1_does() {
    // Page by page (the batch off), every failed charge is a limit reclaim.
    let (per_page, reclaims) = failcnt_and_reclaims("memcg_charge_batch = false");
    assert_eq!(per_page, reclaims);
    // try_charge_memcg's batch: within 64 pages of the limit the batch of 64 fails and
    // the page alone is charged, so nearly every page after the limit is first reached
    // fails once (6.1's recordings: failcnt 0.8 per page written).
    let (batched, reclaims_b) = failcnt_and_reclaims("memcg_charge_batch = true");
    let after_limit = 16384 - 4096;
    assert!(batched > after_limit * 9 / 10, "{batched}");
    assert!(batched > 5 * per_page, "{batched} against {per_page}");
    // The reclaims themselves stay within a fifth of each other.
    assert!(reclaims_b * 5 > reclaims * 4 && reclaims_b * 4 < reclaims * 5);
}

#[test]
fn kernel_version_sets_the_switches_defaults_and_a_knob_overrides_it() {
    let parse = |k: &str| {
        Scenario::from_toml(&format!("[kernel]\n{k}\n"))
            .unwrap()
            .kernel
    };
    let v618 = parse("");
    let v61 = parse("version = \"6.1\"");
    assert_eq!(v618.version, vmsim_core::config::KernelVersion::V6_18);
    assert_eq!(
        (
            v618.memcg_charge_batch,
            v618.memcg_stock_groups,
            v618.lru_cost_rotations
        ),
        (Some(true), Some(7), Some(true))
    );
    assert_eq!(
        (
            v61.memcg_charge_batch,
            v61.memcg_stock_groups,
            v61.lru_cost_rotations
        ),
        (Some(true), Some(1), Some(false))
    );
    assert_eq!(v61.pgdat_dirty_needs_unqueued, Some(false));
    assert_eq!(
        (v618.swap_slot_cache, v61.swap_slot_cache),
        (Some(false), Some(true))
    );
    assert_eq!(
        (v618.large_folios, v61.large_folios),
        (Some(true), Some(false))
    );
    assert_eq!(
        (v618.ondemand_readahead, v61.ondemand_readahead),
        (Some(true), Some(true))
    );
    assert_eq!(
        (v618.boot_free_to_tail, v61.boot_free_to_tail),
        (Some(true), Some(true))
    );
    assert_eq!(
        (v618.compaction_free_stride, v61.compaction_free_stride),
        (Some(true), Some(true))
    );
    assert_eq!(
        (v618.compaction_fast_search, v61.compaction_fast_search),
        (Some(true), Some(true))
    );
    let over = parse("version = \"6.1\"\nmemcg_charge_batch = false");
    assert_eq!(over.memcg_charge_batch, Some(false));
    assert_eq!(over.lru_cost_rotations, Some(false));
    // The version's charging is the switches': 6.1 with the batch off charges as 6.18
    // without the batch (the writes are 4 KiB: order-0 folios under either).
    assert_eq!(
        failcnt_and_reclaims("version = \"6.1\"\nmemcg_charge_batch = false").0,
        failcnt_and_reclaims("memcg_charge_batch = false").0
    );
    assert_eq!(
        failcnt_and_reclaims("version = \"6.1\"").0,
        failcnt_and_reclaims("memcg_charge_batch = true\nmemcg_stock_groups = 1").0
    );
}

#[test]
fn a_bad_kernel_version_or_stock_size_is_one_line() {
    for (k, want) in [
        (
            "version = \"5.4\"",
            "version: \"5.4\" is not a modelled kernel",
        ),
        ("version = 6.1", "version: 6.1 must be a string"),
        (
            "memcg_stock_groups = 0",
            "kernel.memcg_stock_groups = 0 is out of range",
        ),
    ] {
        let e = Scenario::from_toml(&format!("[kernel]\n{k}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && !e.contains('\n'), "{k}: {e}");
    }
}

/// Nine groups of 24 MiB, each with a writer of 32 MiB, all on one CPU.
fn nine_writers(kernel: &str) -> Scenario {
    let mut rest = String::new();
    for g in 0..9 {
        rest += &format!(
            "[[cgroup]]\npath = \"g{g}\"\nlimit_in_bytes = \"24MiB\"\n\
             [[task]]\nname = \"w{g}\"\ncgroup = \"g{g}\"\n\
             program = [ {{ op = \"write\", file = \"f{g}\", size = \"32MiB\" }} ]\n"
        );
    }
    scenario("512MiB", "0", kernel, &rest)
}

#[test]
fn stocks_shared_by_more_groups_than_slots_balance_and_are_deterministic() {
    // 6.18's seven slots evict one at random (the seed's stream); 6.1's one slot
    // drains at every change of group. Both keep the counters exact.
    for groups in [1, 7] {
        let sc = nine_writers(&format!(
            "memcg_charge_batch = true\nmemcg_stock_groups = {groups}"
        ));
        let r = run_checked(&sc);
        assert_eq!(r.summary.oom_kills, 0);
        let a = serde_json::to_string(&r).unwrap();
        assert_eq!(a, serde_json::to_string(&run(&sc)).unwrap(), "{groups}");
        for g in 0..9 {
            let m = &r.memcg.as_ref().unwrap().groups[&format!("g{g}")];
            assert!(m.max_usage_in_bytes <= 24 << 20);
            assert!(m.failcnt > 0);
        }
    }
}

/// A THP fault in group A with `limit`, holding the huge page for 10 s (so the usage is read
/// while it is mapped).
fn thp_in_group(limit: &str, thp_enabled: &str) -> Scenario {
    scenario(
        "256MiB",
        "0B",
        &format!("thp_enabled = \"{thp_enabled}\"\n{USER_PAGES_ONLY}"),
        &format!(
            r#"
[[cgroup]]
path = "A"
limit_in_bytes = "{limit}"
[[task]]
name = "thp"
cgroup = "A"
program = [ {{ op = "thp_fault", size = "2MiB" }}, {{ op = "snapshot", name = "mapped" }}, {{ op = "sleep", time = "10s" }} ]
"#
        ),
    )
}

#[test]
fn a_thp_fault_is_charged_whole_or_falls_back() {
    // Room for the folio: charged whole (mem_cgroup_charge of 512 pages), as the base pages
    // of the same region would be.
    let r = run_checked(&thp_in_group("8MiB", "always"));
    assert_eq!(r.vmstat["thp_fault_alloc"], 1);
    assert_eq!(r.vmstat["thp_fault_fallback_charge"], 0);
    let mapped = &r.snapshots[0].memcg.as_ref().expect("groups").groups["A"];
    assert_eq!(mapped.usage_in_bytes, 2 << 20);
    assert_eq!(mapped.stat["rss"], 2 << 20);
    // No room: the huge page is freed and the fault falls back to base pages
    // (THP_FAULT_FALLBACK_CHARGE), which reclaim and the memcg OOM killer then handle.
    let r = run_checked(&thp_in_group("1MiB", "always"));
    assert_eq!(r.vmstat["thp_fault_alloc"], 0);
    assert_eq!(r.vmstat["thp_fault_fallback"], 1);
    assert_eq!(r.vmstat["thp_fault_fallback_charge"], 1);
}

/// A reader in a group limited to 16 MiB reading a 48 MiB file, with 100 empty groups
/// below it, under the walk `iter`: (groups visited, shrink_node_memcgs calls, limit
/// reclaims, pages reclaimed).
fn walk_beside_empty_groups(iter: &str) -> (u64, u64, u64, u64) {
    let sc = scenario(
        "1GiB",
        "0",
        &format!("memcg_reclaim_iter = \"{iter}\"\n{USER_PAGES_ONLY}"),
        r#"
[[file]]
name = "f"
size = "48MiB"
[[cgroup]]
path = "P"
limit_in_bytes = "16MiB"
[[cgroup]]
path = "P/e"
generate = { shape = "binary", groups = 99 }
[[task]]
name = "r"
cgroup = "P"
program = [ { op = "read", file = "f" } ]
"#,
    );
    let r = run_checked(&sc);
    let m = r.memcg.as_ref().unwrap();
    assert_eq!(m.nr_groups, 1 + 1 + 100);
    let w = &m.walk;
    (
        w.groups_visited,
        w.shrink_node_memcgs,
        w.limit_reclaims,
        m.groups["P"].stat["total_pgsteal"],
    )
}

/// How each walk visits a limited group's 100 empty children (kernel.memcg_reclaim_iter).
/// 6.1's full walk visits the whole subtree on every pass. 6.18's partial walk resumes
/// after the group where the last one stopped, so every reclaim pass that does not end
/// at the reader's group goes over the children again, about as often as the full walk
/// in this shape, where a pass seldom reclaims enough; vmsim's earlier walk started at
/// the reader's group each time and stopped there when it had enough.
#[test]
fn limit_reclaim_walks_the_children_as_the_walk_switch_says() {
    let (full, passes, _, steal) = walk_beside_empty_groups("full");
    assert_eq!(full, 101 * passes, "a full walk visits the whole subtree");
    let (cookie, passes, reclaims, cookie_steal) = walk_beside_empty_groups("cookie");
    assert_eq!(cookie_steal, steal, "the same pages go");
    assert!(
        cookie >= 100 * reclaims,
        "every reclaim goes over the children: {cookie} visits, {reclaims} reclaims"
    );
    assert!(
        cookie < 101 * passes,
        "a partial walk stops at the reader's group: {cookie} visits, {passes} passes"
    );
    let (restart, passes, _, _) = walk_beside_empty_groups("restart");
    assert!(
        restart * 10 < 101 * passes,
        "a walk from the reader's group seldom reaches the children: {restart} visits, {passes} passes"
    );
}

/// Anonymous memory twice a v1 group's limit, with swap: limit reclaims.
fn swap_through_limit() -> RunResult {
    let sc = scenario(
        "1GiB",
        "512MiB",
        "",
        r#"
[[cgroup]]
path = "L"
limit_in_bytes = "64MiB"
[[task]]
name = "hog"
cgroup = "L"
program = [ { op = "touch", size = "128MiB" } ]
"#,
    );
    run_checked(&sc)
}

#[test]
fn limit_reclaim_waits_for_its_swap_writes_and_goes_on() {
    // 6.18's v1 limit reclaim waits in shrink_folio_list for a folio it marked for
    // reclaim (folio_wait_writeback), then frees it in the same call: each call ends
    // with about its SWAP_CLUSTER_MAX pages (the kernel: 757 calls of 43 pages for
    // 192 MiB through 64 MiB), and a page is written once and then freed, so the
    // pages written to swap are about the pages stolen. Ending the call at the wait
    // (and handing out completions late) made 577 calls of 29 pages here and wrote
    // 21,491 pages for 16,490 stolen; now 370 of 44, and 16,734 for 16,465.
    let r = swap_through_limit();
    let calls = r.memcg.as_ref().unwrap().walk.limit_reclaims as i64;
    let (out, stolen) = (r.vmstat["pswpout"], r.vmstat["pgsteal_anon"]);
    assert!(stolen > 0 && calls > 0);
    assert!(stolen / calls >= 35, "{stolen} pages in {calls} reclaims");
    assert!(
        (out - stolen).abs() * 20 <= stolen,
        "{out} written against {stolen} stolen"
    );
}

/// A group "L" holding `setup` (a program's first operations) before `write` changes one
/// of its files; `kernel` and `hierarchy` as in [`scenario`].
fn cgroup_write_run(hierarchy: &str, setup: &str, write: &str, swap: &str) -> RunResult {
    let limit = if hierarchy == "v2" {
        "max = \"200MiB\""
    } else {
        "limit_in_bytes = \"200MiB\""
    };
    let sc = scenario(
        "512MiB",
        swap,
        USER_PAGES_ONLY,
        &format!(
            r#"
[[cgroup]]
path = "L"
hierarchy = "{hierarchy}"
{limit}
[[task]]
name = "t"
cgroup = "L"
program = [ {setup}, {{ op = "sleep", time = "40s" }}, {write}, {{ op = "sleep", time = "1s" }} ]
"#
        ),
    );
    run_checked(&sc)
}

#[test]
fn lowering_a_v1_limit_below_the_usage_reclaims_down_to_it_first() {
    // 96 MiB of page cache, clean after the flushers' 30 s, then the limit drops to 32 MiB:
    // mem_cgroup_resize_max reclaims until the usage is under it, then sets it.
    let r = cgroup_write_run(
        "v1",
        r#"{ op = "write", file = "f", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.limit_in_bytes", value = "32MiB" }"#,
        "0",
    );
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert_eq!(l.limit_in_bytes, 32 << 20);
    assert!(l.usage_in_bytes <= 32 << 20, "{}", l.usage_in_bytes);
    assert!(l.max_usage_in_bytes >= 96 << 20);
    assert!(stat(&r, "L", "total_pgsteal") >= (64 << 20) / 4096);
    assert!(r.memcg.as_ref().unwrap().walk.limit_reclaims > 0);
    assert_eq!(r.summary.oom_kills, 0);
}

#[test]
fn a_v1_limit_that_reclaim_cannot_reach_is_refused_and_the_old_one_kept() {
    // Anonymous memory and no swap: the first one-page reclaim frees nothing (EBUSY).
    let r = cgroup_write_run(
        "v1",
        r#"{ op = "touch", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.limit_in_bytes", value = "32MiB" }"#,
        "0",
    );
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert_eq!(l.limit_in_bytes, 200 << 20, "the old limit stays");
    assert!(l.max_usage_in_bytes >= 96 << 20);
    assert_eq!(stat(&r, "L", "total_pgsteal"), 0);
    assert_eq!(r.summary.oom_kills, 0, "v1's write never OOM-kills");
}

#[test]
fn a_v2_max_that_reclaim_cannot_reach_oom_kills_in_the_group() {
    // memory_max_write sets the limit, fails to reclaim MAX_RECLAIM_RETRIES times, then
    // OOM-kills the group's task.
    let r = cgroup_write_run(
        "v2",
        r#"{ op = "touch", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.max", value = "32MiB" }"#,
        "0",
    );
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert_eq!(l.limit_in_bytes, 32 << 20);
    assert_eq!(r.tasks["t"].oom_killed, 1);
}

#[test]
fn a_v2_high_write_reclaims_to_it_and_swaps_anonymous_memory_without_a_kill() {
    let r = cgroup_write_run(
        "v2",
        r#"{ op = "touch", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.high", value = "32MiB" }"#,
        "256MiB",
    );
    let l = &r.memcg.as_ref().unwrap().groups["L"];
    assert_eq!(l.high, Some(32 << 20));
    assert!(l.usage_in_bytes <= 32 << 20, "{}", l.usage_in_bytes);
    assert!(r.vmstat["pswpout"] >= (64 << 20) / 4096);
    assert_eq!(r.summary.oom_kills, 0);
}

#[test]
fn cgroup_write_names_a_declared_group_and_a_file_of_its_hierarchy() {
    let bad = |group: &str, file: &str, value: &str| {
        let text = format!(
            r#"
[[cgroup]]
path = "L"
[[task]]
name = "t"
program = [ {{ op = "cgroup_write", cgroup = "{group}", file = "{file}", value = {value} }} ]
"#
        );
        Scenario::from_toml(&text).unwrap_err().to_string()
    };
    let e = bad("M", "memory.limit_in_bytes", "\"1MiB\"");
    assert!(e.contains("no [[cgroup]] has path \"M\""), "{e}");
    let e = bad("L", "memory.max", "\"1MiB\"");
    assert!(
        e.contains("not a cgroup v1 file") && e.contains("memory.limit_in_bytes"),
        "{e}"
    );
    let e = bad("L", "memory.limit_in_bytes", "-2");
    assert!(e.contains("negative"), "{e}");
    let e = bad("L", "memory.limit_in_bytes", "\"lots\"");
    assert!(e.contains("not a size"), "{e}");
    let text = "[[cgroup]]\npath = \"L\"\nhierarchy = \"v2\"\n[[task]]\nname = \"t\"\nprogram = [ { op = \"cgroup_write\", cgroup = \"L\", file = \"memory.reclaim\", value = \"max\" } ]\n";
    let e = Scenario::from_toml(text).unwrap_err().to_string();
    assert!(e.contains("memory.reclaim takes a size"), "{e}");
    for ok in ["-1", "\"max\"", "\"-1\"", "1048576", "\"16MiB\""] {
        let text = format!(
            "[[cgroup]]\npath = \"L\"\n[[task]]\nname = \"t\"\nprogram = [ {{ op = \"cgroup_write\", cgroup = \"L\", file = \"memory.limit_in_bytes\", value = {ok} }} ]\n"
        );
        Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[test]
fn reclaiming_a_large_page_cache_folio_costs_its_folio_and_page_parts() {
    // 64 MiB written 256 KiB a call (order-6 folios), cleaned by the flushers, then the
    // limit lowered to 16 MiB: shrink_large_folio raised by 1000 ns adds 1000 ns per folio
    // reclaimed to the writer's system time, free_buffer_head 1000 ns per page (one
    // buffer_head a 4 KiB block).
    let sys = |folio: u64, page: u64| {
        let text = format!(
            r#"
duration = "120s"
[machine]
memory = "512MiB"
cpus = 1
[cost]
shrink_large_folio = {folio}
free_buffer_head = {page}
[[cgroup]]
path = "L"
[[task]]
name = "t"
cgroup = "L"
program = [ {{ op = "write", file = "f", size = "64MiB", bs = "256KiB" }},
            {{ op = "sleep", time = "60s" }},
            {{ op = "cgroup_write", cgroup = "L", file = "memory.limit_in_bytes", value = "16MiB" }} ]
"#
        );
        let r = run(&Scenario::from_toml(&text).unwrap());
        let steal = stat(&r, "L", "total_pgsteal") as i64;
        (steal, (r.tasks["t"].sys_seconds * 1e9).round() as i64)
    };
    // At least the 48 MiB over the limit (the group's slab is charged too), whole folios.
    let (steal, base) = sys(0, 0);
    assert!(steal >= 48 << 8 && steal % 64 == 0, "{steal}");
    assert_eq!(sys(1000, 0), (steal, base + steal / 64 * 1000));
    assert_eq!(sys(0, 1000), (steal, base + steal * 1000));
}

#[test]
fn memory_reclaim_takes_about_what_was_asked_and_gives_up_on_what_it_cannot_reclaim() {
    // 96 MiB of clean page cache; memory.reclaim of 32 MiB reclaims in quarters of what is
    // left (user_proactive_reclaim), so it ends close to 32 MiB, above it by at most a
    // reclaim's overshoot.
    let r = cgroup_write_run(
        "v2",
        r#"{ op = "write", file = "f", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.reclaim", value = "32MiB" }"#,
        "0",
    );
    let steal = stat(&r, "L", "pgsteal");
    assert!((8192..8192 + 1024).contains(&steal), "{steal}");
    assert_eq!(
        r.memcg.as_ref().unwrap().groups["L"].limit_in_bytes,
        200 << 20
    );
    // Anonymous memory without swap: every reclaim frees nothing, the write gives up
    // (EAGAIN) after MAX_RECLAIM_RETRIES + 1 of them, and nobody is killed.
    let r = cgroup_write_run(
        "v2",
        r#"{ op = "touch", size = "96MiB" }"#,
        r#"{ op = "cgroup_write", cgroup = "L", file = "memory.reclaim", value = "32MiB" }"#,
        "0",
    );
    assert_eq!(stat(&r, "L", "pgsteal"), 0);
    assert_eq!(r.memcg.as_ref().unwrap().walk.limit_reclaims, 17);
    assert_eq!(r.summary.oom_kills, 0);
}
