//! The parallel direct-reclaimer limit of seed 000 (`kernel.reclaim_throttle`).

use vmsim_core::{RunResult, Scenario};

/// Many tasks fault in more than RAM at once, so many enter direct reclaim together.
fn storm(throttle: &str, limit: u64) -> RunResult {
    let text = format!(
        r#"
duration = "60s"
[machine]
memory = "512MiB"
cpus = 8
nodes = 2
swap = "2GiB"
[kernel]
reclaim_throttle = "{throttle}"
reclaim_limit = {limit}
# 2.6.25 reclaim: direct reclaimers nap in congestion_wait inside try_to_free_pages.
reclaim_writeback = "traceonly"
[[task]]
name = "hog"
count = 40
program = [ {{ op = "touch", size = "12MiB" }}, {{ op = "sleep", time = "50ms" }}, {{ op = "touch", size = "32MiB" }} ]
"#
    );
    let sc = Scenario::from_toml(&text).unwrap();
    vmsim_core::run(&sc, &mut |_, _| {})
}

#[test]
fn without_a_limit_many_tasks_reclaim_at_once() {
    let r = storm("off", 0);
    assert!(
        r.summary.max_parallel_reclaimers > 8,
        "{}",
        r.summary.max_parallel_reclaimers
    );
    assert_eq!(r.summary.reclaim_throttled, 0);
}

#[test]
fn the_limit_is_never_exceeded_and_waiters_get_through() {
    // RECLAIM_LIMIT = 2 x nodes with memory = 4 on this two-node machine.
    let r = storm("limit", 0);
    assert!(
        r.summary.max_parallel_reclaimers <= 4,
        "{}",
        r.summary.max_parallel_reclaimers
    );
    assert!(r.summary.reclaim_throttled > 0, "nobody had to wait");
    // Waiters are woken and go on: the tasks keep faulting in their memory after waiting.
    let waited_and_progressed = r.tasks["hog"].faults > 40 * 3 * 1024;
    assert!(waited_and_progressed, "faults {}", r.tasks["hog"].faults);
    let r1 = storm("limit", 1);
    assert_eq!(r1.summary.max_parallel_reclaimers, 1);
}
