//! Compaction, watermark boosting and THP faults: the rules the kernel keeps.
//!
//! - compaction conserves pages, keeps every page-table and page-cache
//!   reference valid, and never moves an unmovable page;
//! - a watermark boost never exceeds its cap and is gone when kswapd is done;
//! - kswapd reclaiming only for a boost neither swaps nor writes;
//! - a THP fault with no free order-9 block falls back to a base page cleanly.

use vmsim_core::config::Scenario;
use vmsim_core::kernel::Engine;
use vmsim_core::kernel::{AllocResult, Kernel};
use vmsim_core::mm::compaction::{CompactControl, CompactResult};
use vmsim_core::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use vmsim_core::mm::huge_memory::HPAGE_PMD_NR;
use vmsim_core::mm::memory::Fault;
use vmsim_core::mm::mmzone::{Wmark, ZoneType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use vmsim_core::mm::page::{pg, PageKind, Pfn};
use vmsim_core::mm::rmap::{Entry, Owner};
use vmsim_core::mm::vmstat::Event;

const MS: u64 = 1_000_000;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn boot(kernel: &str) -> Kernel {
    let sc = scenario(&format!(
        "[machine]\nmemory = \"256MiB\"\ncpus = 2\nreserved = \"8MiB\"\n[kernel]\n{kernel}\n"
    ));
    Kernel::boot(&sc.machine, &sc.kernel, &sc.cost)
}

fn task(k: &mut Kernel) -> u32 {
    let tid = k.alloc_task_struct("t", 0, false);
    assert!(k.copy_process(tid, 0));
    tid
}

/// The DMA32 zone (the only big zone of a 256 MiB machine).
fn dma32(k: &Kernel) -> usize {
    k.mm.nodes[0].zones[ZoneType::Dma32 as usize]
}

/// Every resident anonymous page of the task is where its slot says, and back.
fn check_task_mappings(k: &Kernel, tid: u32) -> u64 {
    let mut n = 0;
    for index in 0..k.tasks[tid as usize].vsize {
        let Some(slot) = k.tasks[tid as usize].pt.slot(index) else {
            continue;
        };
        if let Entry::Page(p) = k.rmap.get(slot) {
            let page = &k.mm.map[p as usize];
            assert_eq!(
                page.kind(),
                PageKind::Anon,
                "slot {slot} maps a non-anon frame"
            );
            assert_eq!(
                page.owner, slot,
                "frame {p} does not point back to its slot"
            );
            assert!(page.test(pg::HEAD) && page.test(pg::LRU));
            assert_eq!(
                k.rmap.owner(slot).0,
                Owner::Task {
                    tid,
                    index: (index >> 9) as u32
                }
            );
            n += 1;
        }
    }
    n
}

/// Fills a zone with movable anon pages and unmovable pages, then frees half the anon
/// pages at random: free memory, but no free pageblock.
///
/// Boot memory goes to the free lists' head, so the zone fills from its top down and
/// the fragmented range is where the free scanner starts. (Filled from the bottom, the
/// whole free blocks taken above it would leave the free scanner at its widest stride,
/// 32, by the time it reached the range, and every 32nd frame of it is in use.)
fn fragmented() -> (Kernel, u32, Vec<Pfn>) {
    let mut k = boot("watermark_boost_factor = 0\nboot_free_to_tail = false");
    let tid = task(&mut k);
    let mut unmovable = Vec::new();
    let mut index = 0u64;
    // Anon faults until the zone is near its watermarks, one unmovable page every 64.
    loop {
        let z = &k.mm.zones[dma32(&k)];
        if z.free_pages() < (z.wmark_pages(Wmark::High) * 4) as i64 {
            break;
        }
        assert_eq!(k.handle_mm_fault(tid, index), Fault::Minor);
        index += 1;
        if index.is_multiple_of(64) {
            match k.alloc_pages(GFP_KERNEL, 0, tid) {
                AllocResult::Page(p) => unmovable.push(p),
                other => panic!("unmovable allocation failed: {other:?}"),
            }
        }
    }
    // Unmap every other page of each pair of 8 (munmap of scattered ranges).
    let cpu = 0;
    for i in 0..index {
        if (i / 8) % 2 == 1 {
            let slot = k.tasks[tid as usize].pt.slot(i).unwrap();
            k.zap_slot(tid, slot, cpu);
        }
    }
    k.mm.drain_all_pages();
    // Hold on to the whole free blocks left, so only compaction can make new ones.
    take_free_pageblocks(&mut k);
    (k, tid, unmovable)
}

/// Takes every free block of pageblock order or more off the free lists (left allocated).
fn take_free_pageblocks(k: &mut Kernel) {
    for zid in 0..k.mm.zones.len() {
        for order in PAGEBLOCK_ORDER..k.mm.zones[zid].free_area.len() {
            while k.mm.zones[zid].free_area[order].nr_free > 0 {
                let mt = (0..5)
                    .find(|&m| k.mm.zones[zid].free_area[order].nr_free_mt[m] > 0)
                    .unwrap();
                let head = k.mm.free_list_first(
                    zid,
                    order,
                    vmsim_core::mm::mmzone::MigrateType::from_u8(mt as u8),
                );
                assert!(k.mm.__isolate_free_page(head, order));
            }
        }
        assert_eq!(free_blocks_at_least(k, zid, PAGEBLOCK_ORDER), 0);
    }
}

fn free_blocks_at_least(k: &Kernel, zid: usize, order: usize) -> u64 {
    k.mm.zones[zid].free_area[order..]
        .iter()
        .map(|a| a.nr_free)
        .sum()
}

#[test]
fn compaction_conserves_pages_and_never_moves_unmovable_ones() {
    let (mut k, tid, unmovable) = fragmented();
    let zid = dma32(&k);
    let rss = k.tasks[tid as usize].rss;
    let free_before = k.mm.nr_free_pages();
    let blocks_before = free_blocks_at_least(&k, zid, PAGEBLOCK_ORDER);
    k.mm.check_invariants().unwrap();
    assert_eq!(check_task_mappings(&k, tid), rss);

    let mut cc = CompactControl::new(zid, PAGEBLOCK_ORDER, true, tid);
    let ret = k.compact_zone(&mut cc);
    assert!(
        matches!(ret, CompactResult::Success | CompactResult::Complete),
        "{ret:?}"
    );
    assert!(cc.nr_migrated > 0, "nothing was migrated");

    // Conservation: free lists, pcp lists and allocated blocks add up; per-node counters agree.
    k.mm.check_invariants().unwrap();
    k.check_accounting().unwrap();
    assert_eq!(k.mm.nr_free_pages(), free_before, "free pages changed");
    assert_eq!(k.tasks[tid as usize].rss, rss);
    // Every page-table reference is valid and points at a page that points back.
    assert_eq!(check_task_mappings(&k, tid), rss);
    // Unmovable pages stayed where they were, still allocated and not anon.
    for &p in &unmovable {
        let page = &k.mm.map[p as usize];
        assert!(
            page.test(pg::HEAD) && !page.test(pg::BUDDY),
            "unmovable {p} was freed"
        );
        assert_ne!(page.kind(), PageKind::Anon);
    }
    // And compaction did its job: more free pageblocks than before.
    assert!(free_blocks_at_least(&k, zid, PAGEBLOCK_ORDER) > blocks_before);
    assert!(k.mm.events[Event::PGMIGRATE_SUCCESS as usize] == cc.nr_migrated);
    assert!(k.mm.events[Event::COMPACT_MIGRATE_SCANNED as usize] > 0);
    assert!(k.mm.events[Event::COMPACT_FREE_SCANNED as usize] > 0);
}

#[test]
fn compaction_moves_page_cache_with_its_index() {
    let mut k = boot("watermark_boost_factor = 0");
    let tid = task(&mut k);
    let ino = k.lookup_or_create("f");
    for i in 0..4096 {
        assert!(matches!(
            k.file_write_page(tid, ino, i),
            AllocResult::Page(_)
        ));
    }
    // Clean them as writeback would, so compaction may move them.
    for i in 0..4096 {
        let slot = k.inodes[ino as usize].pages.slot(i).unwrap();
        if let Entry::Page(p) = k.rmap.get(slot) {
            k.mm.map[p as usize].flags &= !pg::DIRTY;
        }
    }
    let before: Vec<Pfn> = (0..4096)
        .map(
            |i| match k.rmap.get(k.inodes[ino as usize].pages.slot(i).unwrap()) {
                Entry::Page(p) => p,
                e => panic!("{e:?}"),
            },
        )
        .collect();
    let zid = k.mm.page_zone(before[0]);
    // Make the low part of the zone the migration source: migrate pfns below the free scanner.
    let mut cc = CompactControl::new(zid, PAGEBLOCK_ORDER + 1, true, tid);
    let _ = k.compact_zone(&mut cc);
    k.mm.check_invariants().unwrap();
    k.check_accounting().unwrap();
    let mut moved = 0;
    for (i, &old) in before.iter().enumerate() {
        let slot = k.inodes[ino as usize].pages.slot(i as u64).unwrap();
        let Entry::Page(p) = k.rmap.get(slot) else {
            panic!("page {i} lost")
        };
        let page = &k.mm.map[p as usize];
        assert_eq!(page.kind(), PageKind::File);
        assert_eq!(page.owner, slot);
        assert_eq!(k.rmap.owner(slot).1, i as u64, "page-cache index changed");
        moved += (p != old) as u64;
    }
    assert_eq!(moved, cc.nr_migrated);
}

/// A task that allocates unmovable pages a pageblock's worth at a time after filling
/// memory with movable page cache: every claim of a movable block boosts the watermarks.
const BOOST: &str = r#"
duration = "20s"
[machine]
memory = "1GiB"
cpus = 2
swap = "512MiB"
[kernel]
watermark_boost_factor = 15000
# Without THP's raise of min_free_kbytes (45 MiB here): with it, high watermark plus
# boost cannot be met without writeback or swap, which boost reclaim may not do,
# kswapd gives up on the node (kswapd_failures) and the boost stays, as it would in
# balance_pgdat.
thp_enabled = "never"
[[task]]
name = "anon"
program = [ { op = "touch", size = "600MiB" }, { op = "sleep", time = "15s" } ]
[[task]]
name = "writer"
program = [ { op = "write", file = "f", size = "300MiB" }, { op = "sleep", time = "15s" } ]
[[task]]
name = "kernel"
start = "6s"
program = [
  { op = "slab", cache = "dentry", objects = 200000 },
  { op = "alloc", order = 0, count = 30000, type = "unmovable" },
  { op = "sleep", time = "5s" },
]
"#;

#[test]
fn boost_stays_under_its_cap_and_is_gone_when_kswapd_is_done() {
    let sc = scenario(BOOST);
    let mut eng: Engine = vmsim_core::sim::build(&sc);
    let caps: Vec<u64> = eng
        .kernel
        .mm
        .zones
        .iter()
        .map(|z| (z.watermark[Wmark::High as usize] * 15000 / 10000).max(PAGEBLOCK_NR_PAGES))
        .collect();
    let mut max_boost = 0u64;
    let mut t = 0;
    while t < 12_000 * MS {
        t += 5 * MS;
        eng.run_until(t);
        for (z, cap) in eng.kernel.mm.zones.iter().zip(&caps) {
            assert!(
                z.watermark_boost <= *cap,
                "zone {} boost {} over its cap {cap}",
                z.zone_type.name(),
                z.watermark_boost
            );
            max_boost = max_boost.max(z.watermark_boost);
        }
    }
    assert!(max_boost > 0, "no fallback boosted the watermarks");
    assert!(eng.kernel.mm.events[Event::PAGEOUTRUN as usize] > 0);
    // Long after the last fallback, kswapd has reclaimed the boost and taken it away.
    for z in &eng.kernel.mm.zones {
        assert_eq!(
            z.watermark_boost,
            0,
            "zone {} still boosted",
            z.zone_type.name()
        );
    }
    eng.kernel.check_accounting().unwrap();
}

#[test]
fn kswapd_reclaiming_only_for_a_boost_neither_swaps_nor_writes() {
    let sc = scenario(BOOST);
    let mut eng: Engine = vmsim_core::sim::build(&sc);
    let mut boosted = false;
    let mut t = 0;
    while t < 12_000 * MS {
        t += 5 * MS;
        eng.run_until(t);
        boosted |= eng.kernel.mm.zones.iter().any(|z| z.watermark_boost > 0);
    }
    let e = |ev: Event| eng.kernel.mm.events[ev as usize];
    assert!(boosted);
    assert!(
        e(Event::PGSTEAL_KSWAPD) > 0,
        "kswapd reclaimed nothing for the boost"
    );
    assert_eq!(e(Event::PSWPOUT), 0, "kswapd swapped for a boost");
    let nr_vmscan_write =
        eng.kernel.mm.nodes[0].vm_stat[vmsim_core::mm::vmstat::NodeStat::NR_VMSCAN_WRITE as usize];
    assert_eq!(nr_vmscan_write, 0, "reclaim wrote pages for a boost");
}

#[test]
fn thp_fault_falls_back_when_no_pageblock_is_free() {
    let mut k =
        boot("thp_enabled = \"always\"\nthp_defrag = \"never\"\nwatermark_boost_factor = 0");
    let tid = task(&mut k);
    // Take every free page, then give back all but the first page of each pageblock.
    let mut held = Vec::new();
    while let AllocResult::Page(p) = k.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, tid) {
        held.push(p);
        if k.mm.nr_free_pages() < 2048 {
            break;
        }
    }
    k.mm.drain_all_pages();
    for &p in &held {
        if !p.is_multiple_of(PAGEBLOCK_NR_PAGES) {
            k.mm.free_pages(p, 0, 0);
        }
    }
    k.mm.drain_all_pages();
    // The small DMA zone still has whole free blocks: take them too.
    take_free_pageblocks(&mut k);
    let free = k.mm.nr_free_pages();

    assert_eq!(k.handle_mm_fault(tid, 0), Fault::Minor);
    let e = |ev: Event| k.mm.events[ev as usize];
    assert_eq!(e(Event::THP_FAULT_FALLBACK), 1);
    assert_eq!(e(Event::THP_FAULT_ALLOC), 0);
    assert_eq!(k.tasks[tid as usize].rss, 1, "one base page mapped");
    assert_eq!(k.thp.fault_base.count, 1);
    assert_eq!(k.thp.fault_huge.count, 0);
    assert!(k.mm.nr_free_pages() < free);
    k.mm.check_invariants().unwrap();
    assert_eq!(check_task_mappings(&k, tid), 1);
}

#[test]
fn thp_fault_maps_a_whole_region_when_a_block_is_free() {
    let mut k = boot("thp_enabled = \"always\"\nwatermark_boost_factor = 0");
    let tid = task(&mut k);
    assert_eq!(k.handle_mm_fault(tid, 5), Fault::Minor);
    assert_eq!(k.mm.events[Event::THP_FAULT_ALLOC as usize], 1);
    assert_eq!(k.tasks[tid as usize].rss, HPAGE_PMD_NR);
    assert_eq!(k.thp.fault_huge.count, 1);
    let first = match k.rmap.get(k.tasks[tid as usize].pt.slot(0).unwrap()) {
        Entry::Page(p) => p,
        e => panic!("{e:?}"),
    };
    assert_eq!(
        first as u64 % PAGEBLOCK_NR_PAGES,
        0,
        "huge page not aligned"
    );
    for i in 0..HPAGE_PMD_NR {
        let slot = k.tasks[tid as usize].pt.slot(i).unwrap();
        assert_eq!(k.rmap.get(slot), Entry::Page(first + i as Pfn));
    }
    // The rest of the region is already there: touching it faults no more.
    assert_eq!(k.handle_mm_fault(tid, 511), Fault::Access);
    k.mm.check_invariants().unwrap();
    k.check_accounting().unwrap();
    assert_eq!(check_task_mappings(&k, tid), HPAGE_PMD_NR);
}

#[test]
fn madvise_policy_decides_who_gets_huge_pages() {
    let mut k = boot("thp_enabled = \"madvise\"\nwatermark_boost_factor = 0");
    let plain = task(&mut k);
    let advised = task(&mut k);
    k.madvise_hugepage(advised, true);
    assert_eq!(k.handle_mm_fault(plain, 0), Fault::Minor);
    assert_eq!(k.handle_mm_fault(advised, 0), Fault::Minor);
    assert_eq!(k.tasks[plain as usize].rss, 1);
    assert_eq!(k.tasks[advised as usize].rss, HPAGE_PMD_NR);
}

/// thpfioscale in small: fio page cache and slab, then MADV_HUGEPAGE faults. Compaction,
/// kcompactd and boosting all run; at the end every counter and list still adds up.
const THPFIOSCALE: &str = r#"
duration = "600s"
[machine]
memory = "256MiB"
cpus = 4
[kernel]
thp_enabled = "always"
[[task]]
name = "fio"
count = 2
program = [
  { op = "fio_write", files = 3072, file_size = "64KiB" },
  { op = "signal", name = "written" },
  { op = "fio_read", until = "thp_done" },
]
[[task]]
name = "thp"
program = [
  { op = "wait", name = "written", count = 2 },
  { op = "madvise", advice = "hugepage" },
  { op = "thp_fault", size = "96MiB" },
  { op = "signal", name = "thp_done" },
]
"#;

#[test]
fn thpfioscale_runs_to_the_end_with_consistent_state() {
    let sc = scenario(THPFIOSCALE);
    let mut eng: Engine = vmsim_core::sim::build(&sc);
    let mut t = 0;
    while eng.live_user_tasks > 0 && t < 600_000 * MS {
        t += 1_000 * MS;
        eng.run_until(t);
        eng.kernel.mm.check_invariants().unwrap();
    }
    assert_eq!(
        eng.live_user_tasks, 0,
        "the readers stop when the THP thread is done"
    );
    eng.kernel.check_accounting().unwrap();
    let k = &eng.kernel;
    let regions = k.thp.regions.len() as u64;
    assert_eq!(regions, 96 / 2, "one record per 2 MiB region");
    let huge = k.thp.regions.iter().filter(|r| r.0).count() as u64;
    assert_eq!(huge, k.mm.events[Event::THP_FAULT_ALLOC as usize]);
    assert_eq!(k.thp.fault_huge.count, huge);
    assert!(
        k.mm.events[Event::COMPACT_STALL as usize] > 0,
        "no direct compaction"
    );
    assert!(k.thp.regions.iter().all(|r| r.1 > 0));
}

/// Takes every free page of the machine as movable pages held by nobody (not on the
/// LRU, so compaction cannot move them), ignoring watermarks.
fn take_all_free_pages(k: &mut Kernel) {
    use vmsim_core::mm::gfp::alloc_flags::ALLOC_NO_WATERMARKS;
    let ac = k.mm.prepare_alloc_pages(GFP_HIGHUSER_MOVABLE, 0, 0);
    for _ in 0..8 {
        for order in (0..=10).rev() {
            while k
                .mm
                .get_page_from_freelist(order, ALLOC_NO_WATERMARKS, &ac)
                .is_some()
            {}
        }
        k.mm.drain_all_pages();
    }
    assert_eq!(k.mm.nr_free_pages(), 0);
}

#[test]
fn skip_bits_spare_later_runs_the_blocks_a_failed_run_scanned_until_reset() {
    use std::collections::BTreeSet;
    use vmsim_core::trace::{EventFilter, TraceFormat, Tracer};
    let (mut k, tid, _) = fragmented();
    take_all_free_pages(&mut k);
    let zid = dma32(&k);
    // Runs one compaction and returns how it ended and the pageblocks its free scanner
    // scanned (mm_compaction_isolate_freepages ranges).
    let run = |k: &mut Kernel| {
        let filter = EventFilter::parse(["compaction:mm_compaction_isolate_freepages"]).unwrap();
        k.mm.set_tracer(Some(Tracer::with_events(TraceFormat::Modern, 1, filter)));
        let mut cc = CompactControl::new(zid, PAGEBLOCK_ORDER, true, tid);
        k.compact_zone_begin(&mut cc);
        let ret = loop {
            let r = k.compact_zone_iter(&mut cc);
            if r != CompactResult::Continue {
                break r;
            }
        };
        k.compact_zone_end(&mut cc, ret);
        let mut out = Vec::new();
        k.mm.tracer.take().unwrap().write_to(&mut out).unwrap();
        let blocks: BTreeSet<u64> = String::from_utf8(out)
            .unwrap()
            .lines()
            .filter_map(|l| l.split("range=(0x").nth(1))
            .map(|r| u64::from_str_radix(r.split(' ').next().unwrap(), 16).unwrap())
            .map(|pfn| pfn & !(PAGEBLOCK_NR_PAGES - 1))
            .collect();
        (ret, blocks)
    };
    // Nothing to migrate to: the free scanner walks movable blocks down to the migrate
    // scanner and marks each it scans whole.
    let (ret, blocks1) = run(&mut k);
    assert_eq!(ret, CompactResult::Complete);
    assert!(
        blocks1.len() > 10,
        "first run scanned {} blocks",
        blocks1.len()
    );
    assert!(k.compact.zone(zid).blockskip_flush, "direct compaction met");
    // Again before any reset: no marked block is scanned again.
    let (_, blocks2) = run(&mut k);
    let again: Vec<_> = blocks1.intersection(&blocks2).collect();
    assert!(again.is_empty(), "scanned again: {again:x?}");
    // kswapd going to sleep walks in from both ends: blocks of the lower half that
    // hold LRU pages can be sources again; with no free page anywhere no block can be
    // a target, so the scanners restart where the walks met and the next run ends at
    // once.
    let seen: Vec<u64> = blocks1.union(&blocks2).copied().collect();
    let marked = |k: &mut Kernel| {
        let start = k.mm.zones[zid].zone_start_pfn;
        let zc = k.compact.zone(zid).clone();
        seen.iter().filter(|&&b| zc.get_skip(start, b)).count()
    };
    let before = marked(&mut k);
    k.reset_isolation_suitable(0);
    assert!(!k.compact.zone(zid).blockskip_flush);
    let after = marked(&mut k);
    assert!(after < before, "marks {before} -> {after}");
    assert!(
        after > 0,
        "the blocks of the upper half hold no free page: still marked"
    );
    let (ret, blocks3) = run(&mut k);
    assert_eq!(ret, CompactResult::PartialSkipped);
    assert!(blocks3.is_empty(), "{blocks3:x?}");
    k.mm.check_invariants().unwrap();
}

/// A zone full of a task's anonymous pages with nothing free but one order-3 block,
/// unmapped a quarter of the way up the zone; returns the kernel, the task, the zone and
/// the free block.
fn one_free_block_a_quarter_up(kernel: &str) -> (Kernel, u32, usize, Pfn) {
    let mut k = boot(&format!("watermark_boost_factor = 0\n{kernel}"));
    let tid = task(&mut k);
    let zid = dma32(&k);
    let mut index = 0u64;
    loop {
        let z = &k.mm.zones[zid];
        if z.free_pages() < (z.wmark_pages(Wmark::High) * 4) as i64 {
            break;
        }
        assert_eq!(k.handle_mm_fault(tid, index), Fault::Minor);
        index += 1;
    }
    take_all_free_pages(&mut k);
    let mut slot_of = std::collections::HashMap::new();
    for i in 0..index {
        let slot = k.tasks[tid as usize].pt.slot(i).unwrap();
        if let Entry::Page(p) = k.rmap.get(slot) {
            slot_of.insert(p, slot);
        }
    }
    let z = &k.mm.zones[zid];
    let pb = PAGEBLOCK_NR_PAGES;
    let mut block = (z.zone_start_pfn + (z.zone_end_pfn() - z.zone_start_pfn) / 4) & !(pb - 1);
    let run = loop {
        let run = block + 64;
        if (run..run + 8).all(|p| slot_of.contains_key(&p)) {
            break run;
        }
        block += pb;
    };
    for p in run..run + 8 {
        k.zap_slot(tid, slot_of[&p], 0);
    }
    k.mm.drain_all_pages();
    let head = &k.mm.map[run as usize];
    assert!(
        head.test(pg::BUDDY) && head.order() == 3,
        "an order-3 free block"
    );
    (k, tid, zid, run)
}

/// The first block an order-9 compaction from the zone's start isolates from: by
/// kcompactd, or direct for an unmovable allocation.
fn first_migrate_block(k: &mut Kernel, tid: u32, zid: usize, kcompactd: bool) -> u64 {
    use vmsim_core::trace::{EventFilter, TraceFormat, Tracer};
    let filter = EventFilter::parse(["compaction:mm_compaction_isolate_migratepages"]).unwrap();
    k.mm.set_tracer(Some(Tracer::with_events(TraceFormat::Modern, 1, filter)));
    let mut cc = CompactControl::new(zid, PAGEBLOCK_ORDER, true, tid);
    cc.kcompactd = kcompactd;
    if !kcompactd {
        cc.migratetype = vmsim_core::mm::mmzone::MigrateType::Unmovable;
    }
    cc.whole_zone = true;
    k.compact_zone_begin(&mut cc);
    assert_eq!(k.compact_zone_iter(&mut cc), CompactResult::Continue);
    let mut out = Vec::new();
    k.mm.tracer.take().unwrap().write_to(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let first = text
        .lines()
        .find_map(|l| l.split("range=(0x").nth(1))
        .expect("a block scanned");
    u64::from_str_radix(first.split(' ').next().unwrap(), 16).unwrap() & !(PAGEBLOCK_NR_PAGES - 1)
}

#[test]
fn a_costly_compaction_starts_in_a_block_that_already_has_free_pages() {
    // fast_find_migrateblock: for order 9 the migrate scanner goes straight to the block
    // holding the free order-3 page, in the first half between the scanners.
    let (mut k, tid, zid, free) = one_free_block_a_quarter_up("");
    let start = k.mm.zones[zid].zone_start_pfn;
    let first = first_migrate_block(&mut k, tid, zid, true);
    assert_eq!(first, free & !(PAGEBLOCK_NR_PAGES - 1));
    assert!(first > start + PAGEBLOCK_NR_PAGES);
    // Direct compaction for an unmovable allocation does not clear out a movable block
    // that way: it scans from the zone's start.
    let (mut k, tid, zid, _) = one_free_block_a_quarter_up("");
    let first = first_migrate_block(&mut k, tid, zid, false);
    assert_eq!(first, start & !(PAGEBLOCK_NR_PAGES - 1));
    // Nor did any compaction before 5.1.
    let (mut k, tid, zid, _) = one_free_block_a_quarter_up("compaction_fast_search = false");
    let first = first_migrate_block(&mut k, tid, zid, true);
    assert_eq!(first, start & !(PAGEBLOCK_NR_PAGES - 1));
}

#[test]
fn compaction_restarts_with_fresh_skip_bits_after_the_longest_deferral() {
    let mut k = boot("watermark_boost_factor = 0");
    let zid = dma32(&k);
    for _ in 0..=vmsim_core::mm::compaction::COMPACT_MAX_DEFER_SHIFT {
        k.defer_compaction(zid, PAGEBLOCK_ORDER);
    }
    assert!(!k.compaction_restarting(zid, PAGEBLOCK_ORDER));
    while k.compaction_deferred(zid, PAGEBLOCK_ORDER) {}
    assert!(k.compaction_restarting(zid, PAGEBLOCK_ORDER));
    // A success clears the deferral, and with it the restart.
    k.compaction_defer_reset(zid, PAGEBLOCK_ORDER);
    assert!(!k.compaction_restarting(zid, PAGEBLOCK_ORDER));
}

#[test]
fn a_huge_fault_allocates_its_page_table_after_the_huge_page() {
    use vmsim_core::trace::{EventFilter, TraceFormat};
    let sc = scenario(
        r#"
duration = "5s"
[machine]
memory = "256MiB"
cpus = 1
[kernel]
thp_enabled = "always"
[[task]]
name = "t"
program = [{ op = "touch", size = "4MiB" }]
"#,
    );
    let filter = EventFilter::parse(["kmem:mm_page_alloc"]).unwrap();
    let (r, tracer) =
        vmsim_core::sim::run_traced(&sc, Some((TraceFormat::Modern, filter)), &mut |_, _| {});
    assert_eq!(r.vmstat["thp_fault_alloc"], 2);
    let mut out = Vec::new();
    tracer.unwrap().write_to(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let task: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("t-") && l.contains(" mm_page_alloc: "))
        .map(|l| {
            if l.contains(" order=9 ") {
                "huge"
            } else {
                "table"
            }
        })
        .skip_while(|&a| a == "table") // the fork's own pages
        .collect();
    // __do_huge_pmd_anonymous_page: vma_alloc_anon_folio_pmd, then pte_alloc_one (the
    // first region's upper levels come with its page table).
    assert_eq!(
        task,
        ["huge", "table", "table", "table", "table", "huge", "table"],
        "{text}"
    );
}

/// A 256 MiB machine whose task `t` sleeps while the test fragments its memory: the
/// task's anon pages fill the zone to four times its high watermark, one unmovable
/// page every 64, then every other run of 8 pages is unmapped and the free pageblocks
/// left are held; kswapd sleeps.
fn fragmented_engine(kernel: &str) -> (Engine, u32) {
    let sc = scenario(&format!(
        "duration = \"60s\"\n[machine]\nmemory = \"256MiB\"\ncpus = 2\nreserved = \"8MiB\"\n\
         [kernel]\nwatermark_boost_factor = 0\n{kernel}\n\
         [[task]]\nname = \"t\"\nprogram = [ {{ op = \"sleep\", time = \"30s\" }} ]\n"
    ));
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(MS);
    let k = &mut eng.kernel;
    let tid = k.tasks.iter().position(|t| t.comm == "t").unwrap() as u32;
    let mut index = 0u64;
    loop {
        let z = &k.mm.zones[dma32(k)];
        if z.free_pages() < (z.wmark_pages(Wmark::High) * 4) as i64 {
            break;
        }
        assert_eq!(k.handle_mm_fault(tid, index), Fault::Minor);
        index += 1;
        if index.is_multiple_of(64) {
            assert!(matches!(
                k.alloc_pages(GFP_KERNEL, 0, tid),
                AllocResult::Page(_)
            ));
        }
    }
    for i in 0..index {
        if (i / 8) % 2 == 1 {
            let slot = k.tasks[tid as usize].pt.slot(i).unwrap();
            k.zap_slot(tid, slot, 0);
        }
    }
    k.mm.drain_all_pages();
    // The free pageblocks left are held, so the free memory is all in small blocks.
    take_free_pageblocks(k);
    (eng, tid)
}

#[test]
fn kcompactd_compacts_proactively_while_the_node_is_fragmented_and_kswapd_sleeps() {
    let (mut eng, tid) = fragmented_engine("");
    let score = |k: &Kernel| k.mm.fragmentation_score_node(0);
    let (high, low) = (
        eng.kernel.mm.fragmentation_score_wmark(false),
        eng.kernel.mm.fragmentation_score_wmark(true),
    );
    // vm.compaction_proactiveness 20: start above 90, stop at 80.
    assert_eq!((high, low), (90, 80));
    let before = score(&eng.kernel);
    assert!(before > high, "score {before}");
    assert!(!eng.kernel.kswapd_is_running(0));
    let ev = |k: &Kernel, e: Event| k.mm.events[e as usize];
    // The next 500 ms check finds the score high and compacts the zones.
    eng.run_until(2_000 * MS);
    let k = &eng.kernel;
    assert!(ev(k, Event::COMPACT_DAEMON_MIGRATE_SCANNED) > 0);
    assert!(ev(k, Event::PGMIGRATE_SUCCESS) > 0);
    // Proactive passes are not kcompactd wakes for an allocation.
    assert_eq!(ev(k, Event::COMPACT_DAEMON_WAKE), 0);
    assert!(score(k) < before, "score {} after {before}", score(k));
    assert!(check_task_mappings(k, tid) > 0);
    k.check_accounting().unwrap();
    // With proactiveness 0 kcompactd never looks.
    let (mut eng, _) = fragmented_engine("compaction_proactiveness = 0");
    eng.run_until(5_000 * MS);
    assert_eq!(ev(&eng.kernel, Event::COMPACT_DAEMON_MIGRATE_SCANNED), 0);
    // Writing the sysctl wakes kcompactd for a check at once (proactive_compact_trigger).
    let now = eng.now;
    eng.kernel.compaction_proactiveness_sysctl_handler(20);
    for wq in std::mem::take(&mut eng.kernel.mm.cur.wake) {
        eng.wake_up_all(wq);
    }
    eng.run_until(now + 100 * MS);
    assert!(ev(&eng.kernel, Event::COMPACT_DAEMON_MIGRATE_SCANNED) > 0);
}
