//! Property tests of the buddy allocator (mm/page_alloc.rs) against the kernel's rules.
//!
//! A random sequence of allocations (orders 0..=10, the four common GFP
//! masks, random CPUs), frees and pcp drains is applied to a freshly booted
//! machine. After every step the allocator's own expensive check
//! (`Mm::check_invariants`: every frame in exactly one state, free counts
//! equal list contents, no two free buddies left unmerged, pages conserved)
//! must hold, plus checks made here from the public state:
//!
//! * every free block sits on the free list of its pageblock's migratetype
//!   (the kernel's VM_WARN in `__add_to_free_list()` /
//!   `__del_page_from_free_list()`);
//! * free + per-CPU + held pages equal the free pages at boot;
//! * every held block is an allocated, naturally aligned head of its order.
//!
//! At the end everything is freed and drained: the free page count and
//! /proc/buddyinfo must be back to their boot values. This holds with the
//! kernel's rules even after fallbacks have changed pageblock types:
//! `__free_one_page()` refuses to merge across pageblocks only when one side
//! is MIGRATE_HIGHATOMIC or MIGRATE_ISOLATE (not mergeable). The fast path
//! used here never reserves highatomic blocks (that needs ALLOC_HIGHATOMIC,
//! set only by the slow path) and nothing isolates, so every pair of free
//! buddies merges again (taking one type) and the free frames decompose
//! into the same maximal aligned blocks as at boot. Only the *migratetypes*
//! of those blocks may differ (claims moved pageblocks between types), so
//! /proc/pagetypeinfo is not compared.

use proptest::prelude::*;
use proptest::test_runner::Config;
use vmsim_core::mm::gfp::{
    Gfp, GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE,
};
use vmsim_core::mm::mmzone::{MigrateType, MAX_PAGE_ORDER, PAGEBLOCK_ORDER};
use vmsim_core::mm::page::{pg, Pfn};
use vmsim_core::mm::Mm;
use vmsim_core::Scenario;

const GFPS: [Gfp; 4] = [
    GFP_KERNEL,
    GFP_HIGHUSER_MOVABLE,
    GFP_KERNEL_RECLAIMABLE,
    GFP_ATOMIC,
];

#[derive(Debug, Clone)]
enum Op {
    /// `count` allocations of `order` with GFPS[gfp] on `cpu`.
    Alloc {
        gfp: usize,
        order: usize,
        cpu: usize,
        count: usize,
    },
    /// Free `count` held blocks chosen by `pick` on `cpu`.
    Free {
        pick: usize,
        cpu: usize,
        count: usize,
    },
    /// drain_all_pages().
    Drain,
    /// Allocate blocks of `order` with GFPS[gfp] on `cpu` until the fast path fails
    /// (memory pressure: later requests of other types must fall back).
    Fill {
        gfp: usize,
        order: usize,
        cpu: usize,
    },
}

fn boot(memory: &str, cpus: u32, grouping: bool) -> Mm {
    // No THP, so the watermarks come from calculate_min_free_kbytes alone (THP would
    // raise min_free_kbytes to 5 % of these small machines).
    boot_kernel(
        memory,
        cpus,
        &format!("mobility_grouping={grouping}\nthp_enabled=\"never\""),
    )
}

/// A machine booted with the `[kernel]` lines `kernel`.
fn boot_kernel(memory: &str, cpus: u32, kernel: &str) -> Mm {
    let sc = Scenario::from_toml(&format!(
        "[machine]\nmemory=\"{memory}\"\ncpus={cpus}\nreserved=\"8MiB\"\n[kernel]\n{kernel}\n"
    ))
    .unwrap();
    Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
}

fn order_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => Just(0usize),
        3 => 1usize..=3,
        3 => 4usize..=MAX_PAGE_ORDER,
    ]
}

fn op_strategy(cpus: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        7 => (0usize..GFPS.len(), order_strategy(), 0..cpus, 1usize..=64).prop_map(
            |(gfp, order, cpu, count)| Op::Alloc {
                gfp,
                order,
                cpu,
                // Many small blocks, a few large ones.
                count: if order <= 3 { count } else { 1 + count % 4 },
            }
        ),
        3 => (any::<usize>(), 0..cpus, 1usize..=24)
            .prop_map(|(pick, cpu, count)| Op::Free { pick, cpu, count }),
        1 => Just(Op::Drain),
        1 => (0usize..GFPS.len(), 0usize..=3, 0..cpus)
            .prop_map(|(gfp, order, cpu)| Op::Fill { gfp, order, cpu }),
    ]
}

/// Every free block is on the list of its pageblock's migratetype, for every pageblock it covers.
fn check_list_types(mm: &Mm) -> Result<(), String> {
    for z in &mm.zones {
        for order in 0..z.free_area.len() {
            for mt in MigrateType::ALL {
                for p in mm.free_list_blocks(z.id, order, mt) {
                    let blocks = 1u64 << order.saturating_sub(PAGEBLOCK_ORDER);
                    for b in 0..blocks {
                        let q = p + (b << PAGEBLOCK_ORDER) as Pfn;
                        let pb = mm.get_pageblock_migratetype(q);
                        if pb != mt {
                            return Err(format!(
                                "free block {p} order {order} on the {mt:?} list but pageblock of pfn {q} is {pb:?}"
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn check_all(mm: &Mm, held: &[(Pfn, usize)], boot_free: u64) -> Result<(), String> {
    mm.check_invariants()?;
    check_list_types(mm)?;
    let held_pages: u64 = held.iter().map(|&(_, o)| 1u64 << o).sum();
    let total = mm.nr_free_pages() + mm.nr_pcp_pages() + held_pages;
    if total != boot_free {
        return Err(format!(
            "free {} + pcp {} + held {held_pages} = {total}, boot had {boot_free} free",
            mm.nr_free_pages(),
            mm.nr_pcp_pages()
        ));
    }
    Ok(())
}

/// Checks a freshly allocated block and marks its frames as held by the test.
fn take(
    mm: &Mm,
    owned: &mut [bool],
    p: Pfn,
    order: usize,
    step: usize,
) -> Result<(), TestCaseError> {
    let head = mm.map[p as usize];
    prop_assert!(
        head.test(pg::HEAD) && head.order() == order,
        "step {step}: pfn {p} returned for order {order} has flags {:#x} order {}",
        head.flags,
        head.order()
    );
    prop_assert_eq!(p % (1u64 << order), 0, "misaligned block");
    let frames = &mut owned[p as usize..p as usize + (1 << order)];
    prop_assert!(
        frames.iter().all(|&o| !o),
        "step {step}: block {p} order {order} overlaps a held block"
    );
    frames.fill(true);
    Ok(())
}

fn run_ops(mm: &mut Mm, ops: &[Op]) -> Result<(), TestCaseError> {
    let boot_free = mm.nr_free_pages();
    let boot_buddyinfo = mm.buddyinfo();
    prop_assert_eq!(mm.nr_pcp_pages(), 0);
    if let Err(e) = check_all(mm, &[], boot_free) {
        return Err(TestCaseError::fail(format!("at boot: {e}")));
    }
    let nid = 0;
    let mut held: Vec<(Pfn, usize)> = Vec::new();
    let mut owned = vec![false; mm.map.len()];
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Alloc {
                gfp,
                order,
                cpu,
                count,
            } => {
                for _ in 0..count {
                    let (page, _) = mm.alloc_pages_fast(GFPS[gfp], order, nid, cpu);
                    let Some(p) = page else { break };
                    take(mm, &mut owned, p, order, step)?;
                    held.push((p, order));
                }
            }
            Op::Free { pick, cpu, count } => {
                for i in 0..count {
                    if held.is_empty() {
                        break;
                    }
                    let idx = pick.wrapping_add(i.wrapping_mul(7919)) % held.len();
                    let (p, o) = held.swap_remove(idx);
                    owned[p as usize..p as usize + (1 << o)].fill(false);
                    mm.free_pages(p, o, cpu);
                }
            }
            Op::Fill { gfp, order, cpu } => {
                while let (Some(p), _) = mm.alloc_pages_fast(GFPS[gfp], order, nid, cpu) {
                    take(mm, &mut owned, p, order, step)?;
                    held.push((p, order));
                }
            }
            Op::Drain => {
                mm.drain_all_pages();
                prop_assert_eq!(mm.nr_pcp_pages(), 0, "drain left pages on pcp lists");
            }
        }
        if let Err(e) = check_all(mm, &held, boot_free) {
            return Err(TestCaseError::fail(format!(
                "after step {step} {op:?}: {e}"
            )));
        }
    }
    // Free everything, on alternating CPUs, and drain.
    for (i, (p, o)) in held.drain(..).enumerate() {
        mm.free_pages(p, o, i % mm.nr_cpus);
    }
    mm.drain_all_pages();
    if let Err(e) = check_all(mm, &[], boot_free) {
        return Err(TestCaseError::fail(format!(
            "after freeing everything: {e}"
        )));
    }
    prop_assert_eq!(mm.nr_pcp_pages(), 0);
    prop_assert_eq!(mm.nr_free_pages(), boot_free);
    prop_assert_eq!(
        mm.buddyinfo(),
        boot_buddyinfo,
        "free blocks did not merge back to the boot layout"
    );
    Ok(())
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// 256 MiB (DMA + DMA32), mobility grouping on: fallbacks claim and steal pageblocks.
    #[test]
    fn buddy_invariants_hold_with_grouping(ops in prop::collection::vec(op_strategy(2), 1..300)) {
        let mut mm = boot("128MiB", 2, true);
        run_ops(&mut mm, &ops)?;
    }

    /// Seed 003's V19 per-CPU lists (each list drains at 4 batches by itself) and
    /// 2.6.14's (8 batches for all lists together): the per-list counts stay exact.
    #[test]
    fn buddy_invariants_hold_with_seed_era_per_cpu_lists(
        ops in prop::collection::vec(op_strategy(2), 1..300),
        v19 in any::<bool>(),
    ) {
        let kernel = if v19 {
            "mobility_grouping=true\npcp_high_batches=4\npcp_high_per_list=true"
        } else {
            "mobility_grouping=false\npcp_high_batches=8"
        };
        let mut mm = boot_kernel("128MiB", 2, kernel);
        run_ops(&mut mm, &ops)?;
    }

    /// 256 MiB, grouping off: one effective free list per order (everything MIGRATE_UNMOVABLE).
    #[test]
    fn buddy_invariants_hold_without_grouping(ops in prop::collection::vec(op_strategy(2), 1..300)) {
        let mut mm = boot("128MiB", 2, false);
        run_ops(&mut mm, &ops)?;
        for z in &mm.zones {
            prop_assert_eq!(z.nr_free_mt[MigrateType::Movable as usize], 0);
            prop_assert_eq!(z.nr_free_mt[MigrateType::Reclaimable as usize], 0);
        }
        prop_assert!(mm.pageblock_mt.iter().all(|&t| t == MigrateType::Unmovable as u8));
        prop_assert_eq!(mm.frag.extfrag_events, 0);
    }
}

proptest! {
    #![proptest_config(config(6))]

    /// 5 GiB: DMA, DMA32 and Normal zones, zone fallback and ALLOC_NOFRAGMENT, grouping on.
    #[test]
    fn buddy_invariants_hold_on_three_zones_with_grouping(ops in prop::collection::vec(op_strategy(4), 1..120)) {
        let mut mm = boot("5GiB", 4, true);
        prop_assert!(mm.zones.iter().all(|z| z.populated()), "expected DMA, DMA32 and Normal");
        run_ops(&mut mm, &ops)?;
    }

    /// 5 GiB, grouping off.
    #[test]
    fn buddy_invariants_hold_on_three_zones_without_grouping(ops in prop::collection::vec(op_strategy(4), 1..120)) {
        let mut mm = boot("5GiB", 4, false);
        run_ops(&mut mm, &ops)?;
    }
}

/// Exhausting memory with every allocation type and returning it restores the boot layout
/// (a deterministic companion of the properties: the random sequences rarely reach
/// the zones' last pages).
#[test]
fn exhaust_and_return_restores_boot_layout() {
    for grouping in [true, false] {
        let mut mm = boot("256MiB", 2, grouping);
        let boot_free = mm.nr_free_pages();
        let boot_buddyinfo = mm.buddyinfo();
        let mut held = Vec::new();
        let mut i = 0usize;
        // Interleave types and orders until every type fails at every order.
        loop {
            let mut any = false;
            for order in [0usize, 3, 1, 9, 0, 2, 10, 4] {
                let gfp = GFPS[i % GFPS.len()];
                i += 1;
                if let (Some(p), _) = mm.alloc_pages_fast(gfp, order, 0, i % 2) {
                    held.push((p, order));
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        check_all(&mm, &held, boot_free).unwrap();
        // The fast path stops at the low watermark: the zones are nearly full.
        let managed: u64 = mm.zones.iter().map(|z| z.managed_pages).sum();
        assert!(
            mm.nr_free_pages() + mm.nr_pcp_pages() < managed / 20,
            "fast path left {} pages free of {managed}",
            mm.nr_free_pages()
        );
        if grouping {
            assert!(mm.frag.extfrag_events > 0, "exhaustion must fall back");
        }
        // Free in an order unrelated to allocation: every other block, then the rest backwards.
        let mut rest = Vec::new();
        for (k, (p, o)) in held.into_iter().enumerate() {
            if k % 2 == 0 {
                mm.free_pages(p, o, k % 2);
            } else {
                rest.push((p, o));
            }
        }
        check_all(&mm, &rest, boot_free).unwrap();
        for (p, o) in rest.into_iter().rev() {
            mm.free_pages(p, o, 1);
        }
        mm.drain_all_pages();
        check_all(&mm, &[], boot_free).unwrap();
        assert_eq!(mm.nr_free_pages(), boot_free);
        assert_eq!(mm.buddyinfo(), boot_buddyinfo, "grouping={grouping}");
    }
}

// ---------------------------------------------------------------------------
// The same through the kernel: slow path, direct reclaim of slab, highatomic reserves.

#[derive(Debug, Clone)]
enum KOp {
    /// Explicit held allocations through Kernel::alloc_pages (slow path when the fast one fails).
    Alloc {
        gfp: usize,
        order: usize,
        cpu: usize,
        count: usize,
    },
    /// Free held blocks.
    Free {
        pick: usize,
        count: usize,
    },
    /// Slab objects: dentries (reclaimable, left on the cache's LRU) or kmalloc-256 (held).
    Slab {
        reclaimable: bool,
        objects: usize,
    },
    /// Free held kmalloc-256 objects, oldest first.
    SlabFree {
        objects: usize,
    },
    /// Anonymous faults and unmaps.
    Touch {
        pages: usize,
    },
    Unmap {
        pages: usize,
    },
    /// Allocate until the kernel says no.
    Fill {
        gfp: usize,
        order: usize,
    },
    Drain,
}

fn kop_strategy() -> impl Strategy<Value = KOp> {
    prop_oneof![
        6 => (0usize..GFPS.len(), order_strategy(), 0usize..2, 1usize..=32).prop_map(
            |(gfp, order, cpu, count)| KOp::Alloc {
                gfp,
                order,
                cpu,
                count: if order <= 3 { count } else { 1 + count % 3 },
            }
        ),
        3 => (any::<usize>(), 1usize..=24).prop_map(|(pick, count)| KOp::Free { pick, count }),
        2 => (any::<bool>(), 1usize..=3000)
            .prop_map(|(reclaimable, objects)| KOp::Slab { reclaimable, objects }),
        1 => (1usize..=2000).prop_map(|objects| KOp::SlabFree { objects }),
        2 => (1usize..=4000).prop_map(|pages| KOp::Touch { pages }),
        1 => (1usize..=4000).prop_map(|pages| KOp::Unmap { pages }),
        1 => (0usize..GFPS.len(), 0usize..=3).prop_map(|(gfp, order)| KOp::Fill { gfp, order }),
        1 => Just(KOp::Drain),
    ]
}

fn kernel_ops(ops: &[KOp]) -> Result<(), TestCaseError> {
    use vmsim_core::kernel::{AllocResult, Kernel};
    use vmsim_core::mm::slab::builtin_cache;
    let sc =
        Scenario::from_toml("[machine]\nmemory=\"256MiB\"\ncpus=2\n[kernel]\noom_killer=false\n")
            .unwrap();
    let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
    let boot_free = k.mm.nr_free_pages();
    let boot_nr: Vec<Vec<u64>> =
        k.mm.zones
            .iter()
            .map(|z| z.free_area.iter().map(|a| a.nr_free).collect())
            .collect();
    let boot_max: Vec<(usize, Pfn)> =
        k.mm.zones
            .iter()
            .flat_map(|z| {
                let mm = &k.mm;
                MigrateType::ALL.into_iter().flat_map(move |mt| {
                    mm.free_list_blocks(z.id, MAX_PAGE_ORDER, mt)
                        .into_iter()
                        .map(move |p| (z.id, p))
                })
            })
            .collect();
    let tid = k.fork("prop", 0, false, 0).unwrap();
    let dentry = builtin_cache("dentry").unwrap();
    let kmalloc = builtin_cache("kmalloc-256").unwrap();
    for (step, op) in ops.iter().enumerate() {
        let check = |r: AllocResult| -> Result<bool, TestCaseError> {
            prop_assert!(r != AllocResult::Killed, "OOM killer is off");
            Ok(matches!(r, AllocResult::Page(_)))
        };
        match *op {
            KOp::Alloc {
                gfp,
                order,
                cpu,
                count,
            } => {
                k.tasks[tid as usize].cpu = cpu;
                for _ in 0..count {
                    if !check(k.alloc_held(tid, GFPS[gfp], order))? {
                        break;
                    }
                }
            }
            KOp::Free { pick, count } => {
                for i in 0..count {
                    let n = k.tasks[tid as usize].held.len();
                    if n == 0 {
                        break;
                    }
                    prop_assert!(k.free_held(tid, pick.wrapping_add(i * 31) % n));
                }
            }
            KOp::Slab {
                reclaimable,
                objects,
            } => {
                let c = if reclaimable { dentry } else { kmalloc };
                for _ in 0..objects {
                    if !check(k.kmem_cache_alloc(c, tid))? {
                        break;
                    }
                }
            }
            KOp::SlabFree { objects } => {
                for _ in 0..objects {
                    let Some((c, id)) = k.tasks[tid as usize].slab_held.pop_front() else {
                        break;
                    };
                    k.kmem_cache_free(c as usize, id, 0);
                }
            }
            KOp::Touch { pages } => {
                for _ in 0..pages {
                    if !check(k.do_anonymous_page(tid))? {
                        break;
                    }
                }
            }
            KOp::Unmap { pages } => {
                k.unmap_anon(tid, pages as u64);
            }
            KOp::Fill { gfp, order } => {
                for _ in 0..100_000 {
                    if !check(k.alloc_held(tid, GFPS[gfp], order))? {
                        break;
                    }
                }
            }
            KOp::Drain => k.mm.drain_all_pages(),
        }
        if let Err(e) = k.check_accounting().and_then(|_| check_list_types(&k.mm)) {
            return Err(TestCaseError::fail(format!(
                "after step {step} {op:?}: {e}"
            )));
        }
    }
    // Exit, drop every cached dentry, drain: all memory is free again.
    k.exit_task(tid, 0);
    for c in 0..k.slab.caches.len() {
        while let Some(id) = k.slab.lru_pop_any(c) {
            k.kmem_cache_free(c, id, 0);
        }
    }
    k.mm.drain_all_pages();
    if let Err(e) = k.check_accounting().and_then(|_| check_list_types(&k.mm)) {
        return Err(TestCaseError::fail(format!("after exit: {e}")));
    }
    prop_assert_eq!(k.mm.nr_free_pages(), boot_free);
    // MIGRATE_HIGHATOMIC blocks stay reserved and do not merge with a buddy pageblock of
    // another type (migratetype_is_mergeable), so each boot order-10 block with exactly one
    // highatomic half is now two order-9 blocks. Everything else is back as at boot.
    let mut expected = boot_nr.clone();
    for &(zid, p) in &boot_max {
        let ha = |q: Pfn| k.mm.get_pageblock_migratetype(q) == MigrateType::HighAtomic;
        if ha(p) != ha(p + (1 << PAGEBLOCK_ORDER)) {
            expected[zid][MAX_PAGE_ORDER] -= 1;
            expected[zid][PAGEBLOCK_ORDER] += 2;
        }
    }
    let now: Vec<Vec<u64>> =
        k.mm.zones
            .iter()
            .map(|z| z.free_area.iter().map(|a| a.nr_free).collect())
            .collect();
    prop_assert_eq!(now, expected);
    Ok(())
}

proptest! {
    #![proptest_config(config(32))]

    /// Kernel::alloc_pages, slab caches, faults and direct reclaim keep the allocator and the
    /// kernel's counters consistent (Kernel::check_accounting after every step).
    #[test]
    fn kernel_paths_keep_accounting(ops in prop::collection::vec(kop_strategy(), 1..150)) {
        kernel_ops(&ops)?;
    }
}

/// The checks above really detect a broken state (so a passing property means something).
#[test]
fn checks_detect_corruption() {
    let mut mm = boot("128MiB", 2, true);
    let boot_free = mm.nr_free_pages();
    let (p, _) = mm.alloc_pages_fast(GFP_HIGHUSER_MOVABLE, 3, 0, 0);
    let p = p.unwrap();
    check_all(&mm, &[(p, 3)], boot_free).unwrap();
    // A held block the test forgot about: pages not conserved.
    assert!(check_all(&mm, &[], boot_free).is_err());
    // A free block whose pageblock type disagrees with its list.
    let z = &mm.zones[mm.page_zone(p)];
    let zid = z.id;
    let free_head = mm.free_list_first(zid, MAX_PAGE_ORDER, MigrateType::Movable);
    let pb = (free_head >> PAGEBLOCK_ORDER) as usize;
    mm.pageblock_mt[pb] = MigrateType::Reclaimable as u8;
    let e = check_all(&mm, &[(p, 3)], boot_free).unwrap_err();
    assert!(e.contains("pageblock"), "{e}");
    mm.pageblock_mt[pb] = MigrateType::Movable as u8;
    check_all(&mm, &[(p, 3)], boot_free).unwrap();
}
