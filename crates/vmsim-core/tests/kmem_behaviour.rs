//! Kernel memory charged to memory cgroups in whole runs (mm/memcg_kmem.rs): a group's
//! buffer_heads and page tables are charged to it and balance against the frame table
//! and the stocks; limit reclaim that frees a large ext4 folio returns its buffer_heads'
//! pages to the charge stock, so anonymous charges after it fail twice per reclaim (the
//! batch, then the page) rather than once per page near the limit; off, nothing kernel
//! is charged.

use vmsim_core::config::Scenario;
use vmsim_core::RunResult;

/// A two-CPU machine with a 32 MiB v1 group whose task writes 16 MiB in 1 MiB writes,
/// then touches 64 MiB of anonymous memory (more than the group holds: reclaim, then the
/// memcg OOM kill); `kernel` lines go into `[kernel]`.
fn cache_then_anon(kernel: &str) -> Scenario {
    let text = format!(
        r#"
duration = "30s"
[machine]
memory = "1GiB"
cpus = 2
[kernel]
{kernel}
[sampling]
interval = "30s"
[disk]
latency = 20000
read_bandwidth = 2000000000
write_bandwidth = 2000000000
[[cgroup]]
path = "G"
limit_in_bytes = "32MiB"
[[task]]
name = "t"
cgroup = "G"
program = [
  {{ op = "write", file = "f", size = "16MiB", bs = "1MiB" }},
  {{ op = "touch", size = "64MiB" }},
]
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs to the end, checking the memcg charges against the frame table, the stocks and
/// the kernel memory every 100 ms.
fn run_checked(sc: &Scenario) -> RunResult {
    let mut eng = vmsim_core::sim::build(sc);
    let mut t = 0;
    while eng.live_user_tasks > 0 && t < sc.duration.0 {
        t += 100_000_000;
        eng.run_until(t);
        eng.kernel
            .check_memcg()
            .unwrap_or_else(|e| panic!("at {t} ns: {e}"));
    }
    vmsim_core::sim::run(sc, &mut |_, _| {})
}

#[test]
fn buffer_heads_freed_by_limit_reclaim_feed_the_charge_stock() {
    let on = run_checked(&cache_then_anon(""));
    let m = on.memcg.as_ref().unwrap();
    let g = &m.groups["G"];
    // 16 MiB of 1 MiB folios: 4,096 buffer_heads of 112 bytes (112 pages) and the page
    // tables were charged.
    assert!(g.kmem_max_usage_in_bytes.unwrap() >= 112 << 12, "{g:?}");
    assert_eq!(on.summary.oom_kills, 1);
    let reclaims = m.walk.limit_reclaims;
    assert!(reclaims > 0);
    // Each reclaim that freed a folio: the batch fails, the page fails (2 failcnt).
    assert!(
        g.failcnt <= 3 * reclaims,
        "failcnt {} for {reclaims} limit reclaims",
        g.failcnt
    );
    let off = run_checked(&cache_then_anon("memcg_kmem = false"));
    let m = off.memcg.as_ref().unwrap();
    let g = &m.groups["G"];
    assert_eq!(g.kmem_max_usage_in_bytes, Some(0));
    // The retried page leaves usage off the batch: every later batch fails near the limit.
    assert!(
        g.failcnt > 10 * m.walk.limit_reclaims,
        "failcnt {} for {} limit reclaims",
        g.failcnt,
        m.walk.limit_reclaims
    );
}

#[test]
fn kernel_memory_without_the_charge_batch_is_uncharged_at_once() {
    let r = run_checked(&cache_then_anon("memcg_charge_batch = false"));
    let g = &r.memcg.as_ref().unwrap().groups["G"];
    assert!(g.kmem_max_usage_in_bytes.unwrap() > 0);
    assert_eq!(r.summary.oom_kills, 1);
}
