//! The parallel direct-reclaimer limit of seed 000 (`kernel.reclaim_throttle`).

use vmsim_core::{RunResult, Scenario};

/// Many tasks fault in more than RAM at once, so many enter direct reclaim together.
fn storm(throttle: &str, limit: u64) -> RunResult {
    let sc = Scenario::from_toml(&storm_text(throttle, limit)).unwrap();
    vmsim_core::run(&sc, &mut |_, _| {})
}

/// The scenario of [`storm`].
fn storm_text(throttle: &str, limit: u64) -> String {
    format!(
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
reclaim_congestion_wait = true
reclaim_flusher_wakeup = "scanned"
alloc_retry = "should_alloc_retry"
[[task]]
name = "hog"
count = 40
program = [ {{ op = "touch", size = "12MiB" }}, {{ op = "sleep", time = "50ms" }}, {{ op = "touch", size = "32MiB" }} ]
"#
    )
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

/// A kernel with the seed's limit and one task, outside any engine.
fn gated_kernel() -> (vmsim_core::kernel::Kernel, u32) {
    let sc = Scenario::from_toml(
        "[machine]\nmemory = \"512MiB\"\ncpus = 2\nnodes = 2\nswap = \"64MiB\"\n\
         [kernel]\nreclaim_throttle = \"limit\"\nreclaim_limit = 1\n",
    )
    .unwrap();
    let mut k = vmsim_core::kernel::Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
    let tid = k.alloc_task_struct("waiter", 0, false);
    (k, tid)
}

#[test]
fn a_waiter_that_slept_over_a_second_skips_reclaim_when_memory_is_back() {
    use vmsim_core::mm::gfp::GFP_KERNEL;
    let (mut k, tid) = gated_kernel();
    k.mm.cur.now = 5_000_000_000;
    let ac = k.mm.prepare_alloc_pages(GFP_KERNEL, 0, 0);
    // Freshly booted: every zone has far more than 4 x high free.
    k.tasks[tid as usize].throttled_since = Some(k.mm.cur.now - 1_500_000_000);
    assert_eq!(k.try_to_free_pages_gated(GFP_KERNEL, 0, tid, &ac), Some(1));
    assert_eq!(k.reclaim_skipped, 1);
    assert_eq!(
        k.nr_reclaimers, 0,
        "a skipped reclaim never counts as a reclaimer"
    );
    // Half a second of waiting is not enough: reclaim runs (and finds nothing to do).
    k.tasks[tid as usize].throttled_since = Some(k.mm.cur.now - 500_000_000);
    assert!(k.try_to_free_pages_gated(GFP_KERNEL, 0, tid, &ac).is_some());
    assert_eq!(k.reclaim_skipped, 1);
    assert_eq!(k.max_parallel_reclaimers, 1);
}

#[test]
fn at_the_limit_a_reclaimer_waits_on_the_queue_until_one_leaves() {
    use vmsim_core::mm::gfp::GFP_KERNEL;
    let (mut k, tid) = gated_kernel();
    k.reclaim_wq = 7;
    let ac = k.mm.prepare_alloc_pages(GFP_KERNEL, 0, 0);
    // Someone else is inside reclaim: the limit of 1 is reached.
    k.nr_reclaimers = 1;
    assert_eq!(k.try_to_free_pages_gated(GFP_KERNEL, 0, tid, &ac), None);
    assert_eq!(
        k.mm.cur.block_on,
        Some(7),
        "the waiter sleeps on reclaim_throttle_waitq"
    );
    assert_eq!(k.reclaim_throttled, 1);
    assert!(k.tasks[tid as usize].throttled_since.is_some());
    // The other reclaimer leaves: wake_up_all on the queue, and the waiter gets in.
    let other = k.alloc_task_struct("other", 1, false);
    k.reclaim_done(other);
    assert_eq!(k.mm.cur.wake, vec![7]);
    k.mm.cur.block_on = None;
    assert!(k.try_to_free_pages_gated(GFP_KERNEL, 0, tid, &ac).is_some());
    assert_eq!(k.nr_reclaimers, 0);
}

#[test]
fn spinning_on_the_lru_and_zone_locks_is_system_time() {
    let sc = Scenario::from_toml(&storm_text("off", 0)).unwrap();
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(60_000_000_000);
    let k = &eng.kernel;
    let spin: u64 =
        k.mm.nodes
            .iter()
            .map(|n| n.lruvec.lru_lock.wait_ns)
            .sum::<u64>()
            + k.mm.zones.iter().map(|z| z.lock.wait_ns).sum::<u64>();
    let sys: u64 = k.tasks.iter().map(|t| t.stats.sys_ns).sum();
    assert!(spin > 0, "no CPU ever spun on a lock in a reclaim storm");
    assert!(
        sys >= spin,
        "spin {spin} ns is not within system time {sys} ns"
    );
}

/// A small hackbench: 2 groups (80 workers) on 2 CPUs, no memory pressure, with the
/// seed-era costs of the 2.6.25 kernel it models.
fn hackbench(memory: &str, swap: &str, worker_memory: &str) -> RunResult {
    let text = format!(
        r#"
duration = "600s"
costs = "seed-era"
[machine]
memory = "{memory}"
cpus = 2
swap = "{swap}"
[kernel]
reclaim_writeback = "traceonly"
reclaim_scan = "classic"
reclaim_throttle = "off"
reclaim_congestion_wait = true
reclaim_flusher_wakeup = "scanned"
alloc_retry = "should_alloc_retry"
[[hackbench]]
groups = 2
loops = 50
worker_memory = "{worker_memory}"
"#
    );
    vmsim_core::run(&Scenario::from_toml(&text).unwrap(), &mut |_, _| {})
}

#[test]
fn hackbench_delivers_every_message_and_reports_its_time() {
    let r = hackbench("512MiB", "0", "64KiB");
    assert!(r.summary.completed);
    let t = r.workload["hackbench_seconds"];
    // 2 groups x 20 senders x 20 receivers x 50 loops = 40,000 messages, each costing
    // unix_sendmsg + unix_recvmsg + 2 x msg_user = 3.8 us of CPU on 2 CPUs: at least 76 ms.
    assert!(t >= 0.076 && t < r.summary.elapsed_seconds, "{t}");
    assert_eq!(r.tasks["hackbench"].count, 81);
    // Every skb was read: the sockets' slab pages all went back.
    let slab = r.vmstat["nr_slab_unreclaimable"];
    let boot = slab
        - r.vmstat_delta
            .get("nr_slab_unreclaimable")
            .copied()
            .unwrap_or(0);
    assert_eq!(slab, boot, "socket pages were left behind");
}

#[test]
fn hackbench_under_memory_pressure_swaps_and_is_deterministic() {
    let a = hackbench("256MiB", "512MiB", "4MiB");
    assert!(a.summary.completed);
    assert!(a.vmstat_delta["pswpout"] > 0, "no swapping");
    assert!(a.summary.max_parallel_reclaimers > 1);
    let b = hackbench("256MiB", "512MiB", "4MiB");
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn throttled_reclaimers_are_traced_with_their_reason() {
    // dd beside swapping tasks on today's kernel: kswapd finds every dirty page it meets
    // already queued for writeback, tags the node congested (LRUVEC_NODE_CONGESTED), and
    // direct reclaimers then sleep with VMSCAN_THROTTLE_CONGESTED.
    let text = include_str!("../../../scenarios/swap-and-dd.toml");
    let sc = Scenario::from_toml(text).unwrap();
    let (_, tracer) = vmsim_core::sim::run_traced(
        &sc,
        Some((
            vmsim_core::trace::TraceFormat::Modern,
            vmsim_core::trace::EventFilter::default(),
        )),
        &mut |_, _| {},
    );
    let mut out = Vec::new();
    tracer.unwrap().write_to(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let reasons: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" mm_vmscan_throttled: "))
        .map(|l| l.rsplit("reason=").next().unwrap())
        .collect();
    assert!(
        reasons.contains(&"VMSCAN_THROTTLE_CONGESTED"),
        "{reasons:?}"
    );
    // The tracepoint records 1 << reason: every line names one reason.
    assert!(
        reasons
            .iter()
            .all(|r| r.starts_with("VMSCAN_THROTTLE_") && *r != "VMSCAN_THROTTLE_NONE"),
        "{reasons:?}"
    );
}

/// A kernel with `reclaim_throttle = throttle` whose task has faulted in `pages`
/// anonymous pages, outside any engine.
fn kernel_with_anon(throttle: &str, pages: u64) -> (vmsim_core::kernel::Kernel, u32) {
    kernel_with_anon_and(&format!("reclaim_throttle = \"{throttle}\""), pages)
}

/// A kernel with the `[kernel]` lines `knobs` whose task has faulted in `pages`
/// anonymous pages, outside any engine.
fn kernel_with_anon_and(knobs: &str, pages: u64) -> (vmsim_core::kernel::Kernel, u32) {
    let sc = Scenario::from_toml(&format!(
        "[machine]\nmemory = \"256MiB\"\ncpus = 1\nswap = \"256MiB\"\n\
         [kernel]\n{knobs}\n"
    ))
    .unwrap();
    let mut k = vmsim_core::kernel::Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
    let tid = k.alloc_task_struct("hog", 0, false);
    k.tasks[tid as usize].alive = true;
    for i in 0..pages {
        k.handle_mm_fault(tid, i);
    }
    (k, tid)
}

#[test]
fn too_many_isolated_pages_throttle_todays_direct_reclaimers() {
    use vmsim_core::mm::gfp::GFP_KERNEL;
    use vmsim_core::mm::vmstat::NodeStat;
    use vmsim_core::trace::{TraceFormat, Tracer};
    for (throttle, throttled) in [("modern", true), ("off", false), ("limit", false)] {
        let (mut k, tid) = kernel_with_anon(throttle, 20_000);
        k.mm.tracer = Some(Tracer::new(TraceFormat::Modern, 1));
        // Other reclaimers, asleep in get_request_wait, hold more than an eighth of the
        // inactive anon list isolated.
        let inactive = k.mm.nodes[0].vm_stat[NodeStat::NR_INACTIVE_ANON as usize];
        assert!(inactive > 1000, "{inactive}");
        k.mm.nodes[0].vm_stat[NodeStat::NR_ISOLATED_ANON as usize] = inactive / 8 + 1;
        let r = k.try_to_free_pages(GFP_KERNEL, 0, tid);
        let mut out = Vec::new();
        k.mm.tracer.take().unwrap().write_to(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let isolated = text.contains("reason=VMSCAN_THROTTLE_ISOLATED");
        assert_eq!(isolated, throttled, "{throttle}");
        if throttled {
            // reclaim_throttle(VMSCAN_THROTTLE_ISOLATED) sleeps HZ/50; reclaim resumes after it.
            assert_eq!(r, None);
            assert_eq!(k.mm.cur.sleep, 1_000_000_000 / 50);
            assert!(k.tasks[tid as usize].reclaim.is_some());
        }
    }
}

#[test]
fn congestion_wait_naps_in_direct_reclaim_are_the_2_6_era_switch() {
    use vmsim_core::mm::gfp::GFP_KERNEL;
    // do_try_to_free_pages of 2.6.35: after a pass that scanned below DEF_PRIORITY - 2,
    // "take a nap" in congestion_wait(BLK_RW_ASYNC, HZ/10); today's kernels do not.
    let mut slept = Vec::new();
    for naps in [true, false] {
        let (mut k, tid) = kernel_with_anon_and(
            &format!("reclaim_throttle = \"off\"\nreclaim_congestion_wait = {naps}"),
            60_000,
        );
        let mut calls = 0u32;
        while k.try_to_free_pages(GFP_KERNEL, 9, tid).is_none() {
            calls += 1;
            k.mm.cur.sleep = 0;
            assert!(calls < 20, "reclaim never finishes");
        }
        slept.push(calls);
    }
    // Both sleep in get_request_wait when swap writes find the disk's request slots full;
    // only 2.6.35 also naps between priorities.
    assert!(
        slept[0] > slept[1],
        "2.6.35 reclaim naps as well: {slept:?}"
    );
}
