//! A high-order allocation on a 2.6.14-era kernel: how it fails and how often it tries.
//!
//! - `drain_pcp_on_failure = false` (2.6.14's __alloc_pages): a costly allocation
//!   that direct reclaim does not satisfy leaves every CPU's per-CPU pages in place;
//!   `true` (2.6.24+) drains them (drain_all_pages);
//! - `highorder_retry = 3` (seed 003's V19 005_largealloc_tryharder): an order >= 5
//!   request gets three direct-reclaim passes, returning to its caller to retry
//!   in between, and only then fails; orders below 5 and mainline kernels get one.

use vmsim_core::config::Scenario;
use vmsim_core::kernel::{AllocResult, Kernel};
use vmsim_core::mm::gfp::alloc_flags::ALLOC_NO_WATERMARKS;
use vmsim_core::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use vmsim_core::mm::mmzone::{Wmark, ZoneType};
use vmsim_core::mm::page::pg;
use vmsim_core::mm::rmap::Entry;

/// A 256 MiB machine whose DMA32 zone is clean page cache with an unmovable page every
/// 64 pages: reclaim makes progress, but no aligned order-10 block can ever come free.
/// Ten order-0 pages sit on CPU 1's per-CPU list. Returns the kernel and a task on CPU 0.
fn pinned_page_cache(kernel: &str) -> (Kernel, u32) {
    let sc = Scenario::from_toml(&format!(
        "[machine]\nmemory = \"256MiB\"\ncpus = 2\nreserved = \"8MiB\"\n[kernel]\n\
         reclaim_writeback = \"traceonly\"\nreclaim_congestion_wait = true\n\
         reclaim_flusher_wakeup = \"scanned\"\nalloc_retry = \"should_alloc_retry\"\ncompaction = false\nwatermark_boost_factor = 0\n\
         oom_killer = false\n{kernel}\n"
    ))
    .unwrap();
    let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
    let tid = k.alloc_task_struct("t", 0, false);
    assert!(k.copy_process(tid, 0));
    let ino = k.lookup_or_create("f");
    let zid = k.mm.nodes[0].zones[ZoneType::Dma32 as usize];
    let mut index = 0u64;
    loop {
        let z = &k.mm.zones[zid];
        if z.free_pages() < (z.wmark_pages(Wmark::High) * 2) as i64 {
            break;
        }
        assert!(matches!(
            k.file_write_page(tid, ino, index),
            AllocResult::Page(_)
        ));
        let slot = k.inodes[ino as usize].pages.slot(index).unwrap();
        if let Entry::Page(p) = k.rmap.get(slot) {
            k.mm.map[p as usize].flags &= !pg::DIRTY;
        }
        index += 1;
        if index.is_multiple_of(64) {
            assert!(matches!(
                k.alloc_pages(GFP_KERNEL, 0, tid),
                AllocResult::Page(_)
            ));
        }
    }
    k.mm.drain_all_pages();
    // Hold every free order-10 block left (DMA's among them), as if allocated.
    let ac = k.mm.prepare_alloc_pages(GFP_KERNEL, 0, 0);
    while k
        .mm
        .get_page_from_freelist(10, ALLOC_NO_WATERMARKS, &ac)
        .is_some()
    {}
    for _ in 0..10 {
        let AllocResult::Page(p) = k.alloc_pages(GFP_KERNEL, 0, tid) else {
            panic!("order-0 allocation failed");
        };
        k.mm.free_pages(p, 0, 1);
    }
    (k, tid)
}

/// Pages on CPU 1's per-CPU lists, over every zone.
fn cpu1_pcp(k: &Kernel) -> u32 {
    (0..k.mm.zones.len())
        .map(|zid| k.mm.pcp[zid * k.mm.nr_cpus + 1].count())
        .sum()
}

#[test]
fn a_failing_costly_allocation_drains_the_per_cpu_lists_only_when_told_to() {
    for drain in [false, true] {
        let (mut k, tid) = pinned_page_cache(&format!("drain_pcp_on_failure = {drain}"));
        assert_eq!(cpu1_pcp(&k), 10);
        let scanned = k.mm.events[vmsim_core::mm::vmstat::Event::PGSCAN_DIRECT as usize];
        assert_eq!(
            k.alloc_pages(GFP_HIGHUSER_MOVABLE, 10, tid),
            AllocResult::Failed
        );
        assert!(
            k.mm.events[vmsim_core::mm::vmstat::Event::PGSCAN_DIRECT as usize] > scanned,
            "direct reclaim ran"
        );
        assert_eq!(cpu1_pcp(&k), if drain { 0 } else { 10 }, "drain = {drain}");
        k.mm.check_invariants().unwrap();
    }
}

/// Calls alloc_pages as the workload does until it stops asking for a retry; returns the
/// outcome and the most direct-reclaim passes V19's highorder_retry counted on the way.
fn allocate(k: &mut Kernel, tid: u32, order: usize) -> (AllocResult, u32) {
    let mut passes = 0;
    for _ in 0..100 {
        let r = k.alloc_pages(GFP_HIGHUSER_MOVABLE, order, tid);
        if r != AllocResult::Retry {
            assert_eq!(k.tasks[tid as usize].highorder_passes, 0, "reset when done");
            return (r, passes);
        }
        passes = passes.max(k.tasks[tid as usize].highorder_passes);
    }
    panic!("order-{order} allocation still retrying after 100 calls");
}

#[test]
fn highorder_retry_gives_order_5_and_above_that_many_passes() {
    let (mut k, tid) = pinned_page_cache("highorder_retry = 3");
    assert_eq!(allocate(&mut k, tid, 10), (AllocResult::Failed, 2));
    assert_eq!(k.tasks[tid as usize].stats.alloc_failed, 1);
    // Below MAX_ORDER/2 no pass is counted (order 4 finds a block in DMA here).
    assert_eq!(allocate(&mut k, tid, 4).1, 0);
    // A mainline kernel: one pass.
    let (mut k, tid) = pinned_page_cache("");
    assert_eq!(allocate(&mut k, tid, 10), (AllocResult::Failed, 0));
}
