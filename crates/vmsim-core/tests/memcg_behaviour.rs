//! Memory cgroups in whole runs: charges balance up the tree, the hard limit holds
//! (reclaim, then the memcg OOM), soft-limit reclaim takes from groups in excess
//! first in every kernel, the walk's cost grows with the hierarchy as the seed 002
//! kernels' do, large hierarchies stay cheap, scenarios without groups are
//! untouched, and runs are deterministic.
//!
//! Machines are small with one CPU and a fast disk, so each run takes milliseconds.

use vmsim_core::config::Scenario;
use vmsim_core::RunResult;

/// A one-CPU machine with `memory` of RAM and `swap`; `kernel` lines go into `[kernel]`,
/// `rest` (cgroups and tasks) is appended.
fn scenario(memory: &str, swap: &str, kernel: &str, rest: &str) -> Scenario {
    let text = format!(
        r#"
duration = "60s"
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
    let sc = scenario(
        "256MiB",
        "256MiB",
        "",
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
            &format!("soft_limit_reclaim = \"{kernel}\""),
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
        ("[[cgroup]]\npath = \"A/b\"\n", "parent 'A'"),
        ("[[cgroup]]\npath = \"/A\"\n", "relative"),
        (
            "[[cgroup]]\npath = \"A\"\ngenerate = { shape = \"ternary\", groups = 3 }\n",
            "ternary",
        ),
        (
            "[[task]]\nname = \"t\"\ncgroup = \"nowhere\"\nprogram = []\n",
            "'nowhere' is not declared",
        ),
        ("[kernel]\nsoft_limit_reclaim = \"fast\"\n", "fast"),
        ("[cgroup]\npath = \"A\"\n", "[[cgroup]]"),
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
{prot}
[[cgroup]]
path = "Q"
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
    let r = run_checked(&scenario("256MiB", "0", "", &groups("")));
    assert!(stat(&r, "P", "total_pgsteal") > 0);
    for prot in ["min = \"64MiB\"", "low = \"64MiB\""] {
        let r = run_checked(&scenario("256MiB", "0", "", &groups(prot)));
        assert_eq!(stat(&r, "P", "total_pgsteal"), 0, "{prot}");
        assert!(stat(&r, "Q", "total_pgsteal") > 0, "{prot}");
        assert_eq!(
            r.memcg.as_ref().unwrap().groups["P"].usage_in_bytes,
            60 << 20,
            "{prot}"
        );
    }
}

/// A writer of `size` then a reader of the same file, in a group limited to `limit`.
fn dd_through(limit: &str, size: &str, kernel: &str) -> RunResult {
    let sc = scenario(
        "512MiB",
        "0",
        kernel,
        &format!(
            r#"
[[cgroup]]
path = "L"
limit_in_bytes = "{limit}"
[[task]]
name = "dd"
cgroup = "L"
program = [ {{ op = "write", file = "f", size = "{size}" }}, {{ op = "read", file = "f" }} ]
"#
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
