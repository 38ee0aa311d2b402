//! Memory compaction and kcompactd.
//!
//! Models mm/compaction.c (≈v6.17): `compact_zone()` with the migrate scanner
//! walking up from the zone start and the free scanner walking down from its
//! end, `isolate_migratepages_block()` taking movable LRU folios — a large
//! folio whole, unless its order is at least the target order or pageblock
//! order (`skip_isolation_on_order()`) — in batches of COMPACT_CLUSTER_MAX
//! pages, `isolate_freepages()` / `isolate_freepages_block()` taking free
//! buddy blocks whole from MIGRATE_MOVABLE pageblocks onto per-order lists
//! (a stride that doubles over empty blocks, a stop part-way once enough is
//! held, no scan while any isolated page is left), `compaction_alloc()`
//! giving each folio a block of its order from those lists (splitting a
//! larger one), `migrate_pages()` ([`super::migrate`]) moving each folio as
//! one, `__compact_finished()`, `compaction_suitable()` with
//! the fragmentation index of mm/vmstat.c and `vm.extfrag_threshold`, the
//! deferral of include/linux/compaction.h, direct compaction
//! (`try_to_compact_pages()`, called from the allocator's slow path) and the
//! per-node kcompactd thread with `wakeup_kcompactd()`.
//!
//! Pageblock skip bits (`PB_compact_skip`) as `isolation_suitable()`,
//! `update_pageblock_skip()` and `__reset_isolation_suitable()` keep them:
//! set on a block the free scanner scanned whole or the migrate scanner took
//! nothing from, cleared when kswapd goes to sleep or compaction restarts
//! after its longest deferral, once a direct compaction's scanners have met.
//!
//! Async direct compaction gives up an order-aligned block at the first page it
//! cannot isolate, putting back what the block gave (`skip_on_failure` in
//! `isolate_migratepages_block()`).
//!
//! For costly orders the migrate scanner first looks for a pageblock that already
//! has free pages on the movable free lists (`fast_find_migrateblock()`), and the
//! free scanner first takes a page from them (`fast_isolate_freepages()`, with its
//! round-robin search order, its scan limits, the list rotations and
//! `fast_isolate_around()`), before either scans linearly. A batch in the pageblock
//! the last one came from finishes that block (`finish_pageblock`); a scan from a
//! block's start marks it skipped as soon as it isolates a folio
//! (`test_and_set_skip()`). The scanners' cached positions move as the kernel moves
//! them: the migrate one forward past blocks finished or passed over
//! (`update_cached_migrate()`, async and sync apart), the free one down past blocks
//! scanned whole (`update_pageblock_skip()`), below the highest block a fast search
//! saw, and back up to the highest free block given back at the end.
//!
//! Simplifications: Folios under
//! writeback and swap-cache pages are not migrated (async compaction's rule,
//! applied to every mode); dirty ones are, but for the block device's.
//! Migration is immediate: a folio is copied to its target, the owner's slots
//! (page table or page cache, [`super::rmap`]) and its place on the LRU move
//! to the new block, and the old block goes straight back to the buddy lists;
//! each page costs `cost.migrate_page`. A free block isolated by the free
//! scanner is kept at its order, as 6.x's `cc->freepages[order]` lists keep
//! it. No proactive compaction.

use super::gfp::{alloc_flags::*, Gfp};
use super::mmzone::{
    MigrateType, Wmark, ZoneType, MAX_NR_ZONES, NR_PAGE_ORDERS, PAGEBLOCK_NR_PAGES,
    PAGEBLOCK_ORDER, PAGE_ALLOC_COSTLY_ORDER,
};
use super::page::{pg, PageKind, Pfn, NIL, NO_OWNER};
use super::vmstat::Event;
use crate::engine::{Program, Step, StepCtx, StepOut, TaskId};
use crate::kernel::Kernel;
use crate::trace::TraceEvent;
use std::collections::VecDeque;

/// Pages isolated for migration per batch (COMPACT_CLUSTER_MAX = SWAP_CLUSTER_MAX).
pub const COMPACT_CLUSTER_MAX: usize = 32;
/// Largest deferral shift: up to 64 skipped attempts (COMPACT_MAX_DEFER_SHIFT).
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;

/// The outcome of a compaction attempt (enum compact_result), with the kernel's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum CompactResult {
    /// COMPACT_NOT_SUITABLE_ZONE: failing for lack of memory, not fragmentation.
    NotSuitableZone = 0,
    /// COMPACT_SKIPPED: too little free memory to compact.
    Skipped = 1,
    /// COMPACT_DEFERRED: recent failures; not tried.
    Deferred = 2,
    /// COMPACT_NO_SUITABLE_PAGE: nothing suitable found yet.
    NoSuitablePage = 3,
    /// COMPACT_CONTINUE: keep going.
    Continue = 4,
    /// COMPACT_COMPLETE: the whole zone was scanned without success.
    Complete = 5,
    /// COMPACT_PARTIAL_SKIPPED: the scanners met on a partial scan.
    PartialSkipped = 6,
    /// COMPACT_CONTENDED: gave up (no free pages to migrate to).
    Contended = 7,
    /// COMPACT_SUCCESS: a page of the wanted order is free.
    Success = 8,
}

/// The events of mm_compaction_defer_template.
#[derive(Debug, Clone, Copy)]
enum DeferEvent {
    /// mm_compaction_deferred.
    Deferred,
    /// mm_compaction_defer_compaction.
    DeferCompaction,
    /// mm_compaction_defer_reset.
    DeferReset,
}

/// A zone's compaction state (the `compact_*` fields of struct zone).
#[derive(Debug, Clone, Default)]
pub struct ZoneCompact {
    /// compact_considered: attempts skipped since the last deferral.
    pub considered: u32,
    /// compact_defer_shift: skip up to 1 << shift attempts.
    pub defer_shift: u32,
    /// compact_order_failed: lowest order that failed recently.
    pub order_failed: usize,
    /// compact_cached_migrate_pfn[async, sync] (0 = the zone start).
    pub cached_migrate_pfn: [Pfn; 2],
    /// compact_cached_free_pfn (outside the zone, e.g. Pfn::MAX: the zone's last pageblock).
    pub cached_free_pfn: Pfn,
    /// compact_init_free_pfn: the highest pageblock the last reset found free pages in;
    /// a free scanner at or above it is starting its scan (0 before any reset).
    pub init_free_pfn: Pfn,
    /// PB_compact_skip of the zone's pageblocks, one bit each, from its first pageblock.
    pub skip: Vec<u64>,
    /// compact_blockskip_flush: a direct compaction's scanners met since the last reset.
    pub blockskip_flush: bool,
}

/// A node's kcompactd (the `kcompactd_*` fields of pg_data_t).
#[derive(Debug, Clone)]
pub struct NodeCompact {
    /// kcompactd_max_order: highest order asked for since it last ran (0 = not woken).
    pub max_order: usize,
    /// kcompactd_highest_zoneidx.
    pub highest_zoneidx: usize,
    /// Wait queue of kcompactd_wait (usize::MAX: no kcompactd thread).
    pub wait: usize,
    /// Whether kcompactd is asleep on its wait queue.
    pub sleeping: bool,
    /// A write of vm.compaction_proactiveness asked for a proactive pass now
    /// (proactive_compact_trigger).
    pub proactive_trigger: bool,
}

impl ZoneCompact {
    /// The bit of the pageblock holding `pfn` in a zone starting at `zone_start`.
    fn skip_bit(zone_start: Pfn, pfn: Pfn) -> (usize, u64) {
        let i = ((pfn >> PAGEBLOCK_ORDER) - (zone_start >> PAGEBLOCK_ORDER)) as usize;
        (i / 64, 1u64 << (i % 64))
    }

    /// get_pageblock_skip.
    pub fn get_skip(&self, zone_start: Pfn, pfn: Pfn) -> bool {
        let (w, b) = Self::skip_bit(zone_start, pfn);
        self.skip.get(w).is_some_and(|&x| x & b != 0)
    }

    /// set_pageblock_skip / clear_pageblock_skip.
    pub fn set_skip(&mut self, zone_start: Pfn, pfn: Pfn, on: bool) {
        let (w, b) = Self::skip_bit(zone_start, pfn);
        if self.skip.len() <= w {
            if !on {
                return;
            }
            self.skip.resize(w + 1, 0);
        }
        if on {
            self.skip[w] |= b;
        } else {
            self.skip[w] &= !b;
        }
    }
}

/// Compaction and kcompactd state of the whole machine.
#[derive(Debug, Clone, Default)]
pub struct CompactState {
    /// Per zone, by zone id.
    pub zones: Vec<ZoneCompact>,
    /// Per node.
    pub nodes: Vec<NodeCompact>,
}

impl CompactState {
    /// The state of zone `zid`, created on first use.
    pub fn zone(&mut self, zid: usize) -> &mut ZoneCompact {
        if self.zones.len() <= zid {
            self.zones.resize(
                zid + 1,
                ZoneCompact {
                    cached_free_pfn: Pfn::MAX,
                    ..ZoneCompact::default()
                },
            );
        }
        &mut self.zones[zid]
    }

    /// The kcompactd state of node `nid`, created on first use.
    pub fn node(&mut self, nid: usize) -> &mut NodeCompact {
        while self.nodes.len() <= nid {
            self.nodes.push(NodeCompact {
                max_order: 0,
                highest_zoneidx: MAX_NR_ZONES - 1,
                wait: usize::MAX,
                sleeping: false,
                proactive_trigger: false,
            });
        }
        &mut self.nodes[nid]
    }
}

/// How hard direct compaction tries (enum compact_priority): a lower value tries harder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum CompactPriority {
    /// COMPACT_PRIO_SYNC_FULL: synchronous, the whole zone, ignoring the skip bits.
    SyncFull = 0,
    /// COMPACT_PRIO_SYNC_LIGHT: synchronous (MIGRATE_SYNC_LIGHT).
    SyncLight = 1,
    /// COMPACT_PRIO_ASYNC: asynchronous (MIGRATE_ASYNC).
    Async = 2,
}

/// The first priority an allocation compacts at (INIT_COMPACT_PRIORITY).
pub const INIT_COMPACT_PRIORITY: CompactPriority = CompactPriority::Async;
/// The hardest priority for orders up to PAGE_ALLOC_COSTLY_ORDER (MIN_COMPACT_PRIORITY).
pub const MIN_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncFull;
/// The hardest priority for costly orders (MIN_COMPACT_COSTLY_PRIORITY).
pub const MIN_COMPACT_COSTLY_PRIORITY: CompactPriority = CompactPriority::SyncLight;
/// Compaction retries after a success that lost its page to a race (MAX_COMPACT_RETRIES).
pub const MAX_COMPACT_RETRIES: u32 = 16;

/// All the settings and progress of one compaction run (struct compact_control).
#[derive(Debug, Clone)]
pub struct CompactControl {
    /// Zone being compacted.
    pub zid: usize,
    /// Order wanted (cc->order).
    pub order: usize,
    /// Migratetype of the allocation (cc->migratetype).
    pub migratetype: MigrateType,
    /// MIGRATE_SYNC_LIGHT (true) or MIGRATE_ASYNC (false).
    pub sync: bool,
    /// Run by kcompactd (the compact_daemon_* counters).
    pub kcompactd: bool,
    /// Highest zone the allocation may use.
    pub highest_zoneidx: usize,
    /// Allocation flags of the request (cc->alloc_flags).
    pub alloc_flags: u32,
    /// Migrate scanner position.
    pub migrate_pfn: Pfn,
    /// Free scanner position (start of the pageblock it scans next).
    pub free_pfn: Pfn,
    /// Started from both ends of the zone (cc->whole_zone); set before the start to ask
    /// for it.
    pub whole_zone: bool,
    /// Scan blocks whatever their skip bits say (cc->ignore_skip_hint).
    pub ignore_skip_hint: bool,
    /// kcompactd's proactive pass (cc->proactive_compaction): it ends once the zone's
    /// fragmentation score is at the low mark, or when kswapd runs.
    pub proactive: bool,
    /// Asked for through /proc/sys/vm/compact_memory: cc->order is -1
    /// (is_via_compact_memory), so the run goes on until the scanners meet and `order`
    /// is 0.
    pub via_compact_memory: bool,
    /// Isolated free blocks by order, each the head frame of a block taken off the buddy
    /// lists (cc->freepages[order]).
    pub freepages: [VecDeque<Pfn>; NR_PAGE_ORDERS],
    /// Pages in `freepages` (cc->nr_freepages).
    pub nr_freepages: u64,
    /// Pages isolated for migration and not yet given a destination (cc->nr_migratepages).
    pub nr_migratepages: u64,
    /// Frames looked at by the migrate scanner.
    pub total_migrate_scanned: u64,
    /// Frames looked at by the free scanner.
    pub total_free_scanned: u64,
    /// Pages migrated.
    pub nr_migrated: u64,
    /// Fast free-list searches that found nothing in a row (cc->fast_search_fail).
    pub fast_search_fail: u32,
    /// Order the next fast free-page search starts at (cc->search_order).
    pub search_order: isize,
    /// Lowest free pfn a fast search picked a block by, where a linear scan resumes
    /// once a search fails (cc->fast_start_pfn; 0 none yet, Pfn::MAX used).
    pub fast_start_pfn: Pfn,
    /// Scan the current pageblock to its end in one batch and mark it skipped
    /// (cc->finish_pageblock).
    pub finish_pageblock: bool,
    /// Start of the pageblock the last batch was isolated from (compact_zone's
    /// last_migrated_pfn; 0 none).
    pub last_migrated_pfn: Pfn,
    /// Async run whose cached migrate pfns were equal at the start: keep them so
    /// until a batch is isolated (compact_zone's update_cached).
    pub update_cached: bool,
    /// Task doing the work (for traces and CPU).
    pub tid: TaskId,
}

/// The end of the order-aligned block holding `pfn` (block_end_pfn).
fn block_end_pfn(pfn: Pfn, order: usize) -> Pfn {
    (pfn + 1).next_multiple_of(1 << order)
}

impl CompactControl {
    /// Compaction on an allocation's behalf (cc->direct_compaction): neither kcompactd
    /// nor /proc/sys/vm/compact_memory.
    pub fn direct_compaction(&self) -> bool {
        !self.kcompactd && !self.via_compact_memory && !self.proactive
    }

    /// A compaction of zone `zid` for an allocation of `order`.
    pub fn new(zid: usize, order: usize, sync: bool, tid: TaskId) -> Self {
        CompactControl {
            zid,
            order,
            migratetype: MigrateType::Movable,
            sync,
            kcompactd: false,
            highest_zoneidx: MAX_NR_ZONES - 1,
            alloc_flags: 0,
            migrate_pfn: 0,
            free_pfn: 0,
            whole_zone: false,
            ignore_skip_hint: false,
            proactive: false,
            via_compact_memory: false,
            freepages: std::array::from_fn(|_| VecDeque::new()),
            nr_freepages: 0,
            nr_migratepages: 0,
            total_migrate_scanned: 0,
            total_free_scanned: 0,
            nr_migrated: 0,
            fast_search_fail: 0,
            search_order: order as isize,
            fast_start_pfn: 0,
            finish_pageblock: false,
            last_migrated_pfn: 0,
            update_cached: false,
            tid,
        }
    }
}

impl CompactControl {
    /// cc->order as the tracepoints print it: -1 for /proc/sys/vm/compact_memory.
    pub fn trace_order(&self) -> i32 {
        if self.via_compact_memory {
            -1
        } else {
            self.order as i32
        }
    }
}

fn pageblock_start(pfn: Pfn) -> Pfn {
    pfn & !((PAGEBLOCK_NR_PAGES as Pfn) - 1)
}

/// Order the fragmentation score is measured for (COMPACTION_HPAGE_ORDER: HPAGE_PMD_ORDER).
pub const COMPACTION_HPAGE_ORDER: usize = 9;

/// kcompactd's proactive check interval (HPAGE_FRAG_CHECK_INTERVAL_MSEC) [ns].
pub const HPAGE_FRAG_CHECK_INTERVAL: u64 = 500_000_000;

impl super::Mm {
    /// The share of a zone's free memory not in blocks of `order` or larger, 0–100
    /// (extfrag_for_order in mm/vmstat.c); 0 with nothing free.
    pub fn extfrag_for_order(&self, zid: usize, order: usize) -> u64 {
        let (mut free_pages, mut suitable) = (0u64, 0u64);
        for (o, area) in self.zones[zid].free_area.iter().enumerate() {
            free_pages += area.nr_free << o;
            if o >= order {
                suitable += area.nr_free << (o - order);
            }
        }
        if free_pages == 0 {
            return 0;
        }
        (free_pages - (suitable << order)) * 100 / free_pages
    }

    /// A node's fragmentation score, 0–100 (fragmentation_score_node): each populated
    /// zone's fragmentation for COMPACTION_HPAGE_ORDER (fragmentation_score_zone),
    /// weighted by its share of the node's present pages.
    pub fn fragmentation_score_node(&self, nid: usize) -> u64 {
        let zones = self.nodes[nid].zones;
        let node_present: u64 = zones.iter().map(|&z| self.zones[z].present_pages).sum();
        zones
            .iter()
            .filter(|&&z| self.zones[z].populated())
            .map(|&z| {
                self.zones[z].present_pages * self.extfrag_for_order(z, COMPACTION_HPAGE_ORDER)
                    / (node_present + 1)
            })
            .sum()
    }

    /// The fragmentation score proactive compaction stops at (`low`) or starts above
    /// (fragmentation_score_wmark: 100 − proactiveness, plus a leeway of up to 10).
    pub fn fragmentation_score_wmark(&self, low: bool) -> u64 {
        let wmark_low = 100u64.saturating_sub(self.kcfg.compaction_proactiveness);
        let leeway = (wmark_low / 2).min(10);
        if low {
            wmark_low
        } else {
            (wmark_low + leeway).min(100)
        }
    }

    /// The fragmentation index of a zone for `order` (__fragmentation_index in mm/vmstat.c):
    /// -1000 if a block of the order is free, 0 with nothing free, else towards 1000 the more
    /// the failure is due to fragmentation rather than lack of memory.
    pub fn fragmentation_index(&self, zid: usize, order: usize) -> i64 {
        let z = &self.zones[zid];
        let mut free_pages = 0u64;
        let mut total = 0u64;
        let mut suitable = 0u64;
        for (o, area) in z.free_area.iter().enumerate() {
            total += area.nr_free;
            free_pages += area.nr_free << o;
            if o >= order {
                suitable += area.nr_free << (o - order);
            }
        }
        if total == 0 {
            return 0;
        }
        if suitable > 0 {
            return -1000;
        }
        1000 - ((1000 + ((free_pages * 1000) >> order)) / total) as i64
    }

    /// Whether compaction can help this zone for `order` (compaction_suitable): enough
    /// free memory to migrate into, and for costly orders a failure due to fragmentation.
    pub fn compaction_suitable(&self, zid: usize, order: usize, highest_zoneidx: usize) -> bool {
        let z = &self.zones[zid];
        let mark = if order > PAGE_ALLOC_COSTLY_ORDER {
            z.wmark_pages(Wmark::Low)
        } else {
            z.wmark_pages(Wmark::Min)
        } + (2u64 << order);
        let hz = ZoneType::ALL[highest_zoneidx.min(MAX_NR_ZONES - 1)];
        if !self.zone_watermark_ok(zid, 0, mark, hz, 0) {
            return false;
        }
        if order > PAGE_ALLOC_COSTLY_ORDER {
            let fragindex = self.fragmentation_index(zid, order);
            if fragindex >= 0 && fragindex <= self.kcfg.extfrag_threshold as i64 {
                return false;
            }
        }
        true
    }

    /// Whether a free page of at least `order` serves `mt`, directly or by claiming (the
    /// free-list test of __compact_finished).
    fn compact_page_available(&self, zid: usize, order: usize, mt: MigrateType) -> bool {
        for o in order..NR_PAGE_ORDERS {
            let area = &self.zones[zid].free_area[o];
            if area.nr_free_mt[mt as usize] > 0 {
                return true;
            }
            if o >= PAGEBLOCK_ORDER && area.nr_free > 0 {
                return true;
            }
            if (mt as usize) < 3 && self.find_suitable_fallback(zid, o, mt, true) >= 0 {
                return true;
            }
        }
        false
    }
}

impl Kernel {
    fn zone_trace_ids(&self, zid: usize) -> (i32, u32) {
        let z = &self.mm.zones[zid];
        (z.nid as i32, z.zone_type as u32)
    }

    /// Emits one event of the kernel's mm_compaction_defer_template with the zone's
    /// deferral state (trace_mm_compaction_deferred, _defer_compaction, _defer_reset).
    fn trace_defer(&mut self, which: DeferEvent, zid: usize, order: usize) {
        let zc = self.compact.zone(zid);
        let (considered, defer_shift) = (zc.considered, zc.defer_shift);
        let order_failed = zc.order_failed as i32;
        let (nid, idx) = self.zone_trace_ids(zid);
        let order = order as i32;
        let ev = match which {
            DeferEvent::Deferred => TraceEvent::MmCompactionDeferred {
                nid,
                idx,
                order,
                considered,
                defer_shift,
                order_failed,
            },
            DeferEvent::DeferCompaction => TraceEvent::MmCompactionDeferCompaction {
                nid,
                idx,
                order,
                considered,
                defer_shift,
                order_failed,
            },
            DeferEvent::DeferReset => TraceEvent::MmCompactionDeferReset {
                nid,
                idx,
                order,
                considered,
                defer_shift,
                order_failed,
            },
        };
        self.trace(ev);
    }

    /// Whether compaction of this zone at `order` is to be skipped after recent failures
    /// (compaction_deferred).
    pub fn compaction_deferred(&mut self, zid: usize, order: usize) -> bool {
        let zc = self.compact.zone(zid);
        if order < zc.order_failed {
            return false;
        }
        zc.considered = zc.considered.saturating_add(1);
        if zc.considered < 1 << zc.defer_shift {
            self.trace_defer(DeferEvent::Deferred, zid, order);
            return true;
        }
        false
    }

    /// Skips the next attempts at this order and above after a failure (defer_compaction).
    pub fn defer_compaction(&mut self, zid: usize, order: usize) {
        let zc = self.compact.zone(zid);
        zc.considered = 0;
        zc.defer_shift = (zc.defer_shift + 1).min(COMPACT_MAX_DEFER_SHIFT);
        zc.order_failed = zc.order_failed.min(order);
        self.trace_defer(DeferEvent::DeferCompaction, zid, order);
    }

    /// Clears the deferral after a success at `order` (compaction_defer_reset).
    pub fn compaction_defer_reset(&mut self, zid: usize, order: usize) {
        let zc = self.compact.zone(zid);
        zc.considered = 0;
        zc.defer_shift = 0;
        if order >= zc.order_failed {
            zc.order_failed = order + 1;
        }
        self.trace_defer(DeferEvent::DeferReset, zid, order);
    }

    /// Whether compaction is about to be retried after the longest deferral (compaction_restarting).
    pub fn compaction_restarting(&mut self, zid: usize, order: usize) -> bool {
        let zc = self.compact.zone(zid);
        order >= zc.order_failed
            && zc.defer_shift == COMPACT_MAX_DEFER_SHIFT
            && zc.considered >= 1 << zc.defer_shift
    }

    /// Clears the skip bit of the pageblock of `pfn` if a sample of its pages (one in
    /// 1 << PAGE_ALLOC_COSTLY_ORDER) shows an LRU page (`check_source`) or a free page
    /// (`check_target`); a block whose bit is clear counts when both are checked, and
    /// only a movable block can be the free scanner's first (__reset_isolation_pfn).
    fn __reset_isolation_pfn(
        &mut self,
        zid: usize,
        pfn: Pfn,
        check_source: bool,
        check_target: bool,
    ) -> bool {
        let z = &self.mm.zones[zid];
        let (start, end) = (z.zone_start_pfn, z.zone_end_pfn());
        if check_source && check_target && self.isolation_suitable(zid, pfn) {
            return true;
        }
        if !check_source
            && check_target
            && self.mm.get_pageblock_migratetype(pfn) != MigrateType::Movable
        {
            return false;
        }
        let lo = pageblock_start(pfn).max(start);
        let hi = (pageblock_start(pfn) + PAGEBLOCK_NR_PAGES as Pfn).min(end);
        let found = (lo..hi).step_by(1 << PAGE_ALLOC_COSTLY_ORDER).any(|q| {
            let p = self.mm.frame(q);
            (check_source && p.test(pg::LRU)) || (check_target && p.test(pg::BUDDY))
        });
        if found {
            self.compact.zone(zid).set_skip(start, lo, false);
        }
        found
    }

    /// Once a direct compaction's scanners have met, walks in from both ends of the
    /// zone to its middle clearing the skip bits of blocks that can be sources (from
    /// below) or targets (from above), and restarts the migrate scanner at the lowest
    /// source and the free scanner at the highest target (compact_init_free_pfn), or
    /// both where the walks met when that leaves no distance
    /// (__reset_isolation_suitable).
    pub fn __reset_isolation_suitable(&mut self, zid: usize) {
        if !self.compact.zone(zid).blockskip_flush {
            return;
        }
        self.compact.zone(zid).blockskip_flush = false;
        let z = &self.mm.zones[zid];
        let (start, end) = (z.zone_start_pfn, z.zone_end_pfn());
        let pb = PAGEBLOCK_NR_PAGES as Pfn;
        if !self.mm.kcfg.rules().compaction_fast_search {
            // Before 5.1: every block's mark cleared, the scanners back at the ends.
            let zc = self.compact.zone(zid);
            zc.skip.clear();
            zc.cached_migrate_pfn = [0; 2];
            zc.cached_free_pfn = Pfn::MAX;
            return;
        }
        let (mut migrate_pfn, mut free_pfn) = (start, end - 1);
        let (mut reset_migrate, mut reset_free) = (free_pfn, migrate_pfn);
        let (mut source_set, mut free_set) = (false, false);
        while migrate_pfn < free_pfn {
            if self.__reset_isolation_pfn(zid, migrate_pfn, true, source_set)
                && migrate_pfn < reset_migrate
            {
                source_set = true;
                reset_migrate = migrate_pfn;
                self.compact.zone(zid).cached_migrate_pfn = [reset_migrate; 2];
            }
            if self.__reset_isolation_pfn(zid, free_pfn, free_set, true) && free_pfn > reset_free {
                free_set = true;
                reset_free = free_pfn;
                let zc = self.compact.zone(zid);
                zc.init_free_pfn = reset_free;
                zc.cached_free_pfn = reset_free;
            }
            migrate_pfn += pb;
            free_pfn = free_pfn.saturating_sub(pb);
        }
        if reset_migrate >= reset_free {
            // Leave no distance if no suitable block was reset.
            let zc = self.compact.zone(zid);
            zc.cached_migrate_pfn = [migrate_pfn; 2];
            zc.cached_free_pfn = free_pfn;
        }
    }

    /// __reset_isolation_suitable for every zone of a node (reset_isolation_suitable).
    pub fn reset_isolation_suitable(&mut self, nid: usize) {
        for zid in 0..self.mm.zones.len() {
            if self.mm.zones[zid].nid == nid && self.mm.zones[zid].populated() {
                self.__reset_isolation_suitable(zid);
            }
        }
    }

    /// Whether the scanners may look at the pageblock of `pfn` (isolation_suitable).
    fn isolation_suitable(&mut self, zid: usize, pfn: Pfn) -> bool {
        let start = self.mm.zones[zid].zone_start_pfn;
        !self.compact.zone(zid).get_skip(start, pfn)
    }

    /// Marks the pageblock of `pfn` to be skipped by later runs (set_pageblock_skip).
    fn set_pageblock_skip(&mut self, zid: usize, pfn: Pfn) {
        let start = self.mm.zones[zid].zone_start_pfn;
        self.compact.zone(zid).set_skip(start, pfn, true);
    }

    /// Whether compacting is needed and can help (compaction_suit_allocation_order):
    /// Success if the allocation would already succeed, Skipped if compaction cannot help.
    pub fn compaction_suit_allocation_order(
        &mut self,
        zid: usize,
        order: usize,
        highest_zoneidx: usize,
        alloc_flags: u32,
    ) -> CompactResult {
        let wm = match alloc_flags & ALLOC_WMARK_MASK {
            ALLOC_WMARK_LOW => Wmark::Low,
            ALLOC_WMARK_HIGH => Wmark::High,
            _ => Wmark::Min,
        };
        let mark = self.mm.zones[zid].wmark_pages(wm);
        let hz = ZoneType::ALL[highest_zoneidx.min(MAX_NR_ZONES - 1)];
        if self.mm.zone_watermark_ok(zid, order, mark, hz, alloc_flags) {
            return CompactResult::Success;
        }
        let ok = self.mm.compaction_suitable(zid, order, highest_zoneidx);
        let ret = if ok {
            CompactResult::Continue
        } else {
            CompactResult::Skipped
        };
        let (nid, idx) = self.zone_trace_ids(zid);
        self.trace(TraceEvent::MmCompactionSuitable {
            nid,
            idx,
            order: order as i32,
            ret: ret as i32,
        });
        ret
    }

    /// Sets up the scanners and emits mm_compaction_begin (the start of compact_zone).
    pub fn compact_zone_begin(&mut self, cc: &mut CompactControl) {
        let z = &self.mm.zones[cc.zid];
        let start = z.zone_start_pfn;
        let end = z.zone_end_pfn();
        let last_block = pageblock_start(end - 1);
        let zc = self.compact.zone(cc.zid).clone();
        let cached_migrate = zc.cached_migrate_pfn[cc.sync as usize];
        cc.migrate_pfn = if !cc.whole_zone && cached_migrate > start && cached_migrate < end {
            cached_migrate
        } else {
            start
        };
        // Until a block with candidates is found, async runs keep the sync cache with
        // theirs.
        cc.update_cached = !cc.sync && zc.cached_migrate_pfn[0] == zc.cached_migrate_pfn[1];
        cc.fast_start_pfn = 0;
        cc.fast_search_fail = 0;
        cc.last_migrated_pfn = 0;
        cc.free_pfn = if cc.whole_zone {
            last_block
        } else {
            self.cached_free_pfn(cc.zid)
        };
        cc.whole_zone = cc.migrate_pfn == start && cc.free_pfn == last_block;
        self.trace(TraceEvent::MmCompactionBegin {
            zone_start: start,
            migrate_pfn: cc.migrate_pfn,
            free_pfn: cc.free_pfn,
            zone_end: end,
            sync: cc.sync,
        });
    }

    /// Whether compaction is done: the scanners met, or a page of the order is free
    /// (compact_finished / __compact_finished).
    fn compact_finished(&mut self, cc: &CompactControl) -> CompactResult {
        let ret = if cc.free_pfn >> PAGEBLOCK_ORDER <= cc.migrate_pfn >> PAGEBLOCK_ORDER {
            // compact_scanners_met(): reset the cached positions for the next run, and
            // let kswapd clear the skip bits when it next sleeps (direct compaction only).
            let zc = self.compact.zone(cc.zid);
            zc.cached_migrate_pfn = [0; 2];
            zc.cached_free_pfn = Pfn::MAX;
            if !cc.kcompactd && !cc.via_compact_memory {
                zc.blockskip_flush = true;
            }
            if cc.whole_zone {
                CompactResult::Complete
            } else {
                CompactResult::PartialSkipped
            }
        } else if cc.proactive {
            // A proactive pass gives way to kswapd and ends at the low mark.
            let nid = self.mm.zones[cc.zid].nid;
            if self.kswapd_is_running(nid) {
                CompactResult::PartialSkipped
            } else if self.mm.extfrag_for_order(cc.zid, COMPACTION_HPAGE_ORDER)
                > self.mm.fragmentation_score_wmark(true)
            {
                CompactResult::Continue
            } else {
                CompactResult::Success
            }
        } else if cc.migrate_pfn & (PAGEBLOCK_NR_PAGES as Pfn - 1) != 0 {
            // Only look at the free lists at pageblock boundaries.
            return CompactResult::Continue;
        } else if cc.via_compact_memory {
            CompactResult::Continue
        } else if self
            .mm
            .compact_page_available(cc.zid, cc.order, cc.migratetype)
        {
            CompactResult::Success
        } else {
            CompactResult::Continue
        };
        let (nid, idx) = self.zone_trace_ids(cc.zid);
        self.trace(TraceEvent::MmCompactionFinished {
            nid,
            idx,
            order: cc.trace_order(),
            ret: ret as i32,
        });
        ret
    }

    /// Whether the migrate scanner may take pages from this pageblock (suitable_migration_source):
    /// async compaction only from blocks of the request's type.
    fn suitable_migration_source(&self, cc: &CompactControl, pfn: Pfn) -> bool {
        let mt = self.mm.get_pageblock_migratetype(pfn);
        if mt == MigrateType::Isolate || mt == MigrateType::HighAtomic {
            return false;
        }
        cc.sync || mt == cc.migratetype
    }

    /// Whether a frame heads a folio compaction can move now (the checks of
    /// isolate_migratepages_block): an anon or file folio of any order on the LRU, not
    /// under writeback, not in the swap cache. A dirty folio is taken when its mapping
    /// can move it without writing it (`a_ops->migrate_folio`): anonymous memory and a
    /// regular file (ext4's buffer_migrate_folio), not the block device's metadata,
    /// whose buffers the journal holds (buffer_migrate_folio_norefs fails on them).
    pub fn page_is_migratable(&self, pfn: Pfn) -> bool {
        let p = &self.mm.map[pfn as usize];
        let movable = p.test(pg::HEAD)
            && matches!(p.kind(), PageKind::Anon | PageKind::File)
            && p.test(pg::LRU)
            && p.flags & (pg::WRITEBACK | pg::SWAPCACHE | pg::UNEVICTABLE | pg::RECLAIM) == 0
            && p.owner != NO_OWNER;
        movable && (!p.test(pg::DIRTY) || !self.is_bdev_slot(p.kind(), p.owner))
    }

    /// Whether a file page's slot belongs to the block device's page cache.
    fn is_bdev_slot(&self, kind: PageKind, slot: u32) -> bool {
        kind == PageKind::File
            && matches!(self.rmap.owner(slot).0,
                super::rmap::Owner::File { ino, .. } if Some(ino) == self.buffers.bdev_ino)
    }

    /// Whether a folio of `order` is left where it is: larger than what the allocation
    /// wants, unless compacting everything, and never a pageblock or more
    /// (skip_isolation_on_order).
    fn skip_isolation_on_order(order: usize, cc: &CompactControl) -> bool {
        (!cc.via_compact_memory && order >= cc.order) || order >= PAGEBLOCK_ORDER
    }

    /// Moves the cached migrate pfns (async, and sync for a sync run) forward to the end
    /// of the pageblock of `pfn`, never back (update_cached_migrate).
    fn update_cached_migrate(&mut self, cc: &CompactControl, pfn: Pfn) {
        let pfn = pageblock_start(pfn) + PAGEBLOCK_NR_PAGES as Pfn;
        let zc = self.compact.zone(cc.zid);
        zc.cached_migrate_pfn[0] = zc.cached_migrate_pfn[0].max(pfn);
        if cc.sync {
            zc.cached_migrate_pfn[1] = zc.cached_migrate_pfn[1].max(pfn);
        }
    }

    /// Free-list entries a fast search may look at: fewer after each search that failed
    /// (freelist_scan_limit).
    fn freelist_scan_limit(cc: &CompactControl) -> u64 {
        ((COMPACT_CLUSTER_MAX as u64) >> cc.fast_search_fail.min(63)) + 1
    }

    /// For a costly order, picks the migrate scanner's next pageblock from the movable
    /// free lists below the wanted order: a block in the first half of the range between
    /// the scanners (the first eighth once the scanner has moved) that already has free
    /// pages, so fewer pages must move to free it; rotates the searched entries to the
    /// tail; after a failed search, resumes the linear scan at the lowest pfn an earlier
    /// search picked (fast_find_migrateblock, update_fast_start_pfn, reinit_migrate_pfn).
    fn fast_find_migrateblock(&mut self, cc: &mut CompactControl) -> Pfn {
        let pfn = cc.migrate_pfn;
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        if !self.mm.kcfg.rules().compaction_fast_search
            || cc.ignore_skip_hint
            || cc.finish_pageblock
            || (pfn != zone_start && pfn != pageblock_start(pfn))
            || cc.via_compact_memory
            || cc.order <= PAGE_ALLOC_COSTLY_ORDER
            || (cc.direct_compaction() && cc.migratetype != MigrateType::Movable)
        {
            return pfn;
        }
        let limit = Self::freelist_scan_limit(cc);
        let mut distance = cc.free_pfn.saturating_sub(cc.migrate_pfn) >> 1;
        if cc.migrate_pfn != zone_start {
            distance >>= 2;
        }
        let high_pfn = pageblock_start(cc.migrate_pfn + distance);
        let mut nr_scanned = 0u64;
        let mut found = None;
        for order in (PAGE_ALLOC_COSTLY_ORDER..cc.order).rev() {
            if found.is_some() || nr_scanned >= limit {
                break;
            }
            if self.mm.zones[cc.zid].free_area[order].nr_free == 0 {
                continue;
            }
            let mut cur = self.mm.zones[cc.zid].free_area[order].free_list
                [MigrateType::Movable as usize]
                .head;
            while cur != NIL {
                let free_pfn = cur;
                cur = self.mm.map[free_pfn as usize].next();
                let at_limit = nr_scanned >= limit;
                nr_scanned += 1;
                // Skipped recently: ideally moved to the tail, but left where it is.
                let pick = !at_limit
                    && free_pfn < high_pfn
                    && !self.compact.zone(cc.zid).get_skip(zone_start, free_pfn);
                if at_limit || pick {
                    // move_freelist_tail: a later search starts after this entry.
                    let zone = &mut self.mm.zones[cc.zid];
                    zone.free_area[order].free_list[MigrateType::Movable as usize]
                        .move_to_tail_through(&mut self.mm.map, free_pfn);
                }
                if at_limit {
                    break;
                }
                if pick {
                    // update_fast_start_pfn.
                    if cc.fast_start_pfn != Pfn::MAX {
                        cc.fast_start_pfn = if cc.fast_start_pfn == 0 {
                            free_pfn
                        } else {
                            cc.fast_start_pfn.min(free_pfn)
                        };
                    }
                    cc.fast_search_fail = 0;
                    found = Some(pageblock_start(free_pfn).max(zone_start));
                    break;
                }
            }
        }
        self.count_migrate_scanned(cc, nr_scanned, nr_scanned);
        match found {
            Some(block) => block,
            None => {
                cc.fast_search_fail += 1;
                // reinit_migrate_pfn.
                if cc.fast_start_pfn != 0 && cc.fast_start_pfn != Pfn::MAX {
                    cc.migrate_pfn = cc.fast_start_pfn;
                    cc.fast_start_pfn = Pfn::MAX;
                }
                cc.migrate_pfn
            }
        }
    }

    /// Finds the first pageblock from the migrate scanner's position (or the fast
    /// search's pick) that may be scanned — not marked skipped, a suitable source, below
    /// the free scanner — and isolates folios from it (isolate_migratepages); returns
    /// the heads isolated.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> Vec<Pfn> {
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        let pb = PAGEBLOCK_NR_PAGES as Pfn;
        let mut low_pfn = self.fast_find_migrateblock(cc);
        // The fast search checked the skip bit of the block it picked.
        let mut fast_find_block = low_pfn != cc.migrate_pfn && cc.fast_search_fail == 0;
        let mut block_end = pageblock_start(low_pfn) + pb;
        while block_end <= cc.free_pfn {
            let aligned = low_pfn == pageblock_start(low_pfn) || low_pfn == zone_start;
            let skip = aligned
                && !fast_find_block
                && !cc.ignore_skip_hint
                && !self.isolation_suitable(cc.zid, low_pfn);
            if !skip {
                if self.suitable_migration_source(cc, low_pfn) {
                    return self.isolate_migratepages_block(cc, low_pfn, block_end);
                }
                self.update_cached_migrate(cc, block_end);
            }
            fast_find_block = false;
            low_pfn = block_end;
            cc.migrate_pfn = block_end;
            block_end += pb;
        }
        cc.nr_migratepages = 0;
        Vec::new()
    }

    /// Scans one pageblock from `start` and isolates movable folios, a large one whole
    /// with its tails skipped, until COMPACT_CLUSTER_MAX pages are isolated, or to the
    /// block's end when it is to be finished; a scan that started at the block's start
    /// marks it skipped at its first isolation (test_and_set_skip, under the LRU lock),
    /// or at its end when it isolated nothing; a block scanned to its end with nothing
    /// isolated, or finished, moves the cached migrate pfn (isolate_migratepages_block);
    /// sets cc.migrate_pfn and cc.nr_migratepages.
    fn isolate_migratepages_block(
        &mut self,
        cc: &mut CompactControl,
        start: Pfn,
        block_end: Pfn,
    ) -> Vec<Pfn> {
        let block_end = block_end.min(self.mm.zones[cc.zid].zone_end_pfn());
        self.mm.init_deferred_range(start, block_end);
        let mut taken = Vec::new();
        let mut pfn = start;
        let mut scanned = 0u64;
        let mut steps = 0u64;
        let mut nr_isolated = 0u64;
        // Only a scan from the block's start may mark it (valid_page).
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        let valid_page = start == pageblock_start(start) || start == zone_start;
        // Before 5.1 a block was only marked once a scan of it had isolated nothing.
        let mut skip_updated = !self.mm.kcfg.rules().compaction_fast_search;
        // Async direct compaction gives up an order-aligned block at its first page that
        // cannot be isolated: the block cannot become a free page of the order.
        let skip_on_failure = cc.direct_compaction() && !cc.sync;
        let mut next_skip = block_end_pfn(pfn, cc.order);
        while pfn < block_end && (cc.finish_pageblock || nr_isolated < COMPACT_CLUSTER_MAX as u64) {
            if skip_on_failure && pfn >= next_skip {
                // The previous block gave all its candidates: migrate them now.
                if nr_isolated > 0 {
                    break;
                }
                next_skip = block_end_pfn(pfn, cc.order);
            }
            let p = &self.mm.map[pfn as usize];
            scanned += 1;
            steps += 1;
            if p.test(pg::BUDDY) {
                // A free block counts all its pages and is stepped over whole.
                scanned += (1u64 << p.order()) - 1;
                pfn += 1 << p.order();
                continue;
            }
            let order = if p.test(pg::HEAD) { p.order() } else { 0 };
            let nr = 1u64 << order;
            // A compound page counts all its pages, isolated or skipped.
            scanned += nr - 1;
            pfn += nr as Pfn;
            if (order == 0 || !Self::skip_isolation_on_order(order, cc))
                && self.page_is_migratable(pfn - nr as Pfn)
            {
                if valid_page && !skip_updated {
                    // test_and_set_skip: the block is marked as soon as the scan holds
                    // its first folio, so that no other run scans it meanwhile.
                    skip_updated = true;
                    if !cc.ignore_skip_hint {
                        self.set_pageblock_skip(cc.zid, start);
                    }
                }
                taken.push(pfn - nr as Pfn);
                nr_isolated += nr;
            } else if skip_on_failure {
                // isolate_fail: put back what this block gave and go to the next one.
                taken.clear();
                nr_isolated = 0;
                if pfn < next_skip {
                    pfn = next_skip;
                    next_skip += 1 << cc.order;
                }
            }
        }
        let pfn = pfn.min(block_end);
        if pfn == block_end && (taken.is_empty() || cc.finish_pageblock) {
            // Nothing isolated, or the block finished: skip it next time.
            if valid_page && (!skip_updated || taken.is_empty()) {
                self.set_pageblock_skip(cc.zid, start);
            }
            self.update_cached_migrate(cc, pfn);
        }
        cc.migrate_pfn = pfn;
        cc.nr_migratepages = nr_isolated;
        self.count_migrate_scanned(cc, scanned, steps);
        self.mm
            .count_vm_events(Event::COMPACT_ISOLATED, nr_isolated);
        self.trace(TraceEvent::MmCompactionIsolateMigratepages {
            start_pfn: start,
            end_pfn: pfn,
            nr_scanned: scanned,
            nr_taken: nr_isolated,
        });
        taken
    }

    /// Whether the free scanner may take free pages from this pageblock
    /// (suitable_migration_target): movable blocks only, never a free whole pageblock.
    fn suitable_migration_target(&self, pfn: Pfn) -> bool {
        let p = &self.mm.map[pfn as usize];
        if p.test(pg::BUDDY) && p.order() >= PAGEBLOCK_ORDER {
            return false;
        }
        self.mm.get_pageblock_migratetype(pfn) == MigrateType::Movable
    }

    /// The zone's cached free-scanner pfn, put back at the zone's last pageblock when it
    /// is not inside the zone (compact_cached_free_pfn as compact_zone() checks it).
    fn cached_free_pfn(&mut self, zid: usize) -> Pfn {
        let z = &self.mm.zones[zid];
        let (start, end) = (z.zone_start_pfn, z.zone_end_pfn());
        let zc = self.compact.zone(zid);
        if zc.cached_free_pfn < start || zc.cached_free_pfn >= end {
            zc.cached_free_pfn = pageblock_start(end - 1);
        }
        zc.cached_free_pfn
    }

    /// The next order a fast free search looks at, round-robin below the wanted order; -1
    /// once it has come round to where it started, which starts the next search one
    /// order lower (next_search_order).
    fn next_search_order(cc: &mut CompactControl, order: isize) -> isize {
        let mut order = order - 1;
        if order < 0 {
            order = cc.order as isize - 1;
        }
        if order == cc.search_order {
            cc.search_order -= 1;
            if cc.search_order < 0 {
                cc.search_order = cc.order as isize - 1;
            }
            return -1;
        }
        order
    }

    /// Takes one free page off the MIGRATE_MOVABLE free lists, searched from their tails
    /// order by order round-robin below the wanted order from where the last search
    /// succeeded: the first in the top quarter of the range between the scanners, else
    /// the highest in its top half; a few entries per order (more at a scan's start,
    /// fewer after failures); rotates the searched entries to the heads' far side; moves
    /// the zone's cached free pfn below the highest block seen; when a scan's first
    /// search finds nothing, the free scanner starts at the highest block seen (or, for
    /// direct compaction, at the half-way mark); then isolates the rest of the page's
    /// pageblock unless async direct (fast_isolate_freepages, fast_isolate_around).
    fn fast_isolate_freepages(&mut self, cc: &mut CompactControl) {
        if cc.order == 0
            || cc.via_compact_memory
            || cc.free_pfn <= cc.migrate_pfn
            || !self.mm.kcfg.rules().compaction_fast_search
        {
            return;
        }
        let zid = cc.zid;
        let zone_start = self.mm.zones[zid].zone_start_pfn;
        let mut limit = (Self::freelist_scan_limit(cc) >> 1).max(1);
        let mut scan_start = false;
        if cc.free_pfn >= self.compact.zone(zid).init_free_pfn {
            // Starting the scan: a deeper search, the highest pfn seen as a fallback.
            limit = PAGEBLOCK_NR_PAGES >> 1;
            scan_start = true;
        }
        let distance = cc.free_pfn - cc.migrate_pfn;
        let min_pfn = pageblock_start(cc.free_pfn - (distance >> 1));
        let low_pfn = pageblock_start(cc.free_pfn - (distance >> 2)).max(min_pfn);
        cc.search_order = cc.search_order.min(cc.order as isize - 1);
        let mut nr_scanned = 0u64;
        // List entries looked at (the CPU charged), apart from the pages counted.
        let mut steps = 0u64;
        let mut total_isolated = 0u64;
        let mut highest: Pfn = 0;
        let mut page: Option<Pfn> = None;
        let mut order = cc.search_order;
        while page.is_none() && order >= 0 {
            let o = order as usize;
            if self.mm.zones[zid].free_area[o].nr_free == 0 {
                order = Self::next_search_order(cc, order);
                continue;
            }
            let mut order_scanned = 0u64;
            let mut high_pfn: Pfn = 0;
            let mut last = NIL;
            let mut cur =
                self.mm.zones[zid].free_area[o].free_list[MigrateType::Movable as usize].tail;
            while cur != NIL {
                let pfn = cur;
                cur = self.mm.map[pfn as usize].prev();
                last = pfn;
                order_scanned += 1;
                nr_scanned += 1;
                steps += 1;
                if pfn >= highest {
                    highest = pageblock_start(pfn).max(zone_start);
                }
                if pfn >= low_pfn {
                    cc.fast_search_fail = 0;
                    cc.search_order = order;
                    page = Some(pfn);
                    break;
                }
                if pfn >= min_pfn && pfn > high_pfn {
                    high_pfn = pfn;
                    // Shorten the scan once a candidate is found.
                    limit >>= 1;
                }
                if order_scanned >= limit {
                    break;
                }
            }
            if page.is_none() && high_pfn != 0 {
                page = Some(high_pfn);
                last = high_pfn;
            }
            // move_freelist_head: the entries not searched are searched first next time
            // (a search that went through the whole list leaves it as it was).
            if last != NIL && (page.is_some() || cur != NIL) {
                let list =
                    &mut self.mm.zones[zid].free_area[o].free_list[MigrateType::Movable as usize];
                let first = list.head;
                if last != first {
                    let before = self.mm.map[last as usize].prev();
                    list.move_to_tail_through(&mut self.mm.map, before);
                }
            }
            if let Some(p) = page {
                if self.mm.__isolate_free_page(p, o) {
                    let nr = 1u64 << o;
                    nr_scanned += nr - 1;
                    total_isolated += nr;
                    cc.nr_freepages += nr;
                    cc.freepages[o].push_back(p);
                    self.mm.count_vm_events(Event::COMPACT_ISOLATED, nr);
                } else {
                    // Isolation failed (the watermark): end the search.
                    order = cc.search_order + 1;
                    page = None;
                }
            }
            if cc.nr_freepages >= cc.nr_migratepages {
                break;
            }
            if order_scanned >= limit {
                limit = (limit >> 1).max(1);
            }
            if page.is_none() {
                order = Self::next_search_order(cc, order);
            }
        }
        self.trace(TraceEvent::MmCompactionFastIsolateFreepages {
            start_pfn: min_pfn as u64,
            end_pfn: cc.free_pfn,
            nr_scanned,
            nr_taken: total_isolated,
        });
        let mut around = page;
        if page.is_none() {
            cc.fast_search_fail += 1;
            if scan_start {
                if highest >= min_pfn {
                    around = Some(highest);
                    cc.free_pfn = highest;
                } else if cc.direct_compaction() {
                    around = self.suitable_migration_target(min_pfn).then_some(min_pfn);
                    cc.free_pfn = min_pfn;
                }
            }
        }
        if highest != 0 && highest >= self.cached_free_pfn(zid) {
            self.compact.zone(zid).cached_free_pfn = highest - PAGEBLOCK_NR_PAGES as Pfn;
        }
        self.count_free_scanned(cc, nr_scanned, steps, 0);
        if let Some(pfn) = around {
            self.fast_isolate_around(cc, pfn);
        }
    }

    /// Isolates the rest of the pageblock a fast search took a page from, and marks the
    /// block skipped if it was scanned whole; not for async direct compaction
    /// (fast_isolate_around).
    fn fast_isolate_around(&mut self, cc: &mut CompactControl, pfn: Pfn) {
        if cc.nr_freepages >= cc.nr_migratepages || (cc.direct_compaction() && !cc.sync) {
            return;
        }
        let z = &self.mm.zones[cc.zid];
        let start = pageblock_start(pfn).max(z.zone_start_pfn);
        let end = (pageblock_start(pfn) + PAGEBLOCK_NR_PAGES as Pfn).min(z.zone_end_pfn());
        self.mm.init_deferred_range(start, end);
        let (_, stopped) = self.isolate_freepages_block(cc, start, end, 1);
        if stopped == end {
            self.set_pageblock_skip(cc.zid, start);
        }
    }

    /// Charges and counts a migrate-scanner pass: `steps` frames or list entries looked
    /// at, `scanned` pages in compact_migrate_scanned (and the kcompactd copy), which
    /// the kernel adds up from cc->total_migrate_scanned at the end of compact_zone().
    fn count_migrate_scanned(&mut self, cc: &mut CompactControl, scanned: u64, steps: u64) {
        cc.total_migrate_scanned += scanned;
        self.mm.cur.acc += steps * self.mm.cost.compact_scan_page;
        self.mm
            .count_vm_events(Event::COMPACT_MIGRATE_SCANNED, scanned);
        if cc.kcompactd {
            self.mm
                .count_vm_events(Event::COMPACT_DAEMON_MIGRATE_SCANNED, scanned);
        }
    }

    /// Charges and counts a free-scanner pass: `steps` frames looked at, `scanned` pages
    /// in compact_free_scanned (and the kcompactd copy, a block stepped over counting
    /// its pages), compact_isolated (the accounting at the end of isolate_freepages_block).
    fn count_free_scanned(
        &mut self,
        cc: &mut CompactControl,
        scanned: u64,
        steps: u64,
        taken: u64,
    ) {
        cc.total_free_scanned += scanned;
        self.mm.cur.acc += steps * self.mm.cost.compact_scan_page;
        self.mm
            .count_vm_events(Event::COMPACT_FREE_SCANNED, scanned);
        if cc.kcompactd {
            self.mm
                .count_vm_events(Event::COMPACT_DAEMON_FREE_SCANNED, scanned);
        }
        self.mm.count_vm_events(Event::COMPACT_ISOLATED, taken);
    }

    /// Moves the free scanner down pageblock by pageblock from where it stopped last,
    /// isolating free blocks at their order until it holds as many pages as are left to
    /// migrate (isolate_freepages): nothing if the fast search (or an earlier call) left
    /// free pages isolated; a block scanned with no free page doubles the stride of the
    /// next (up to COMPACT_CLUSTER_MAX; sync compaction starts at 1, async at
    /// COMPACT_CLUSTER_MAX); a block left part-way is resumed at the same pfn next time.
    fn isolate_freepages(&mut self, cc: &mut CompactControl) {
        self.fast_isolate_freepages(cc);
        if cc.nr_freepages > 0 {
            return;
        }
        let pb = PAGEBLOCK_NR_PAGES as Pfn;
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        let zone_end = self.mm.zones[cc.zid].zone_end_pfn();
        let mut isolate_start = cc.free_pfn;
        let mut block_start = pageblock_start(cc.free_pfn);
        let mut block_end = (block_start + pb).min(zone_end);
        let low = pageblock_start(cc.migrate_pfn) + pb;
        let sampled = self.mm.kcfg.rules().compaction_free_stride;
        let mut stride: Pfn = if cc.sync || !sampled {
            1
        } else {
            COMPACT_CLUSTER_MAX as Pfn
        };
        while block_start >= low {
            let first = block_start.max(zone_start);
            self.mm.init_deferred_range(first, block_end);
            if self.suitable_migration_target(first)
                && (cc.ignore_skip_hint || self.isolation_suitable(cc.zid, first))
            {
                let from = isolate_start.max(first);
                let (nr_isolated, stopped) =
                    self.isolate_freepages_block(cc, from, block_end, stride);
                if stopped == block_end {
                    // The whole pageblock was scanned: skip it, and restart the free
                    // scanner below it (update_pageblock_skip).
                    self.set_pageblock_skip(cc.zid, first);
                    let below = block_start.saturating_sub(pb);
                    if below < self.cached_free_pfn(cc.zid) {
                        self.compact.zone(cc.zid).cached_free_pfn = below;
                    }
                }
                if cc.nr_freepages >= cc.nr_migratepages {
                    // Enough: start at this block again if it has more, else below it.
                    isolate_start = if stopped >= block_end {
                        block_start.saturating_sub(pb)
                    } else {
                        stopped
                    };
                    break;
                } else if stopped < block_end {
                    // Isolation failed part-way (the watermark): do not go on needlessly.
                    isolate_start = stopped;
                    break;
                }
                stride = if nr_isolated > 0 || !sampled {
                    1
                } else {
                    (stride << 1).min(COMPACT_CLUSTER_MAX as Pfn)
                };
            }
            // low is at least one pageblock up, so this does not wrap.
            block_end = block_start;
            block_start -= pb;
            isolate_start = block_start;
        }
        cc.free_pfn = isolate_start;
    }

    /// Isolates the free blocks of one pageblock from `from` towards `end`, looking at
    /// every `stride`-th frame and stepping over compound pages whole, each free block at
    /// its order onto cc.freepages, stopping as soon as the pages isolated cover those
    /// left to migrate or the watermark refuses one (isolate_freepages_block, not
    /// strict); returns the pages isolated and the pfn it stopped at.
    fn isolate_freepages_block(
        &mut self,
        cc: &mut CompactControl,
        from: Pfn,
        end: Pfn,
        stride: Pfn,
    ) -> (u64, Pfn) {
        let mut pfn = from;
        let mut scanned = 0u64;
        let mut steps = 0u64;
        let mut taken = 0u64;
        while pfn < end {
            let p = self.mm.map[pfn as usize];
            scanned += 1;
            steps += 1;
            if p.test(pg::BUDDY) {
                let order = p.order();
                if !self.mm.__isolate_free_page(pfn, order) {
                    break;
                }
                cc.freepages[order].push_back(pfn);
                let isolated = 1u64 << order;
                cc.nr_freepages += isolated;
                taken += isolated;
                scanned += isolated - 1;
                if cc.nr_migratepages <= cc.nr_freepages {
                    pfn += isolated as Pfn;
                    break;
                }
                pfn += isolated as Pfn - 1;
            } else if p.test(pg::HEAD) && p.order() > 0 {
                let nr = 1 << p.order();
                if pfn + nr <= end {
                    pfn += nr - 1;
                    scanned += nr - 1;
                }
            }
            pfn += stride;
        }
        let stopped = pfn.min(end);
        self.count_free_scanned(cc, scanned, steps, taken);
        self.trace(TraceEvent::MmCompactionIsolateFreepages {
            start_pfn: from,
            end_pfn: stopped,
            nr_scanned: scanned,
            nr_taken: taken,
        });
        (taken, stopped)
    }

    /// Gives a folio of `order` a free block of its order from the isolated lists,
    /// splitting the smallest larger block and isolating more free blocks once when none
    /// is left; None when there is still none (compaction_alloc_noprof).
    pub fn compaction_alloc(&mut self, cc: &mut CompactControl, order: usize) -> Option<Pfn> {
        let mut has_isolated_pages = false;
        let start_order = loop {
            match (order..NR_PAGE_ORDERS).find(|&o| !cc.freepages[o].is_empty()) {
                Some(o) => break o,
                None if has_isolated_pages => return None,
                None => {
                    self.isolate_freepages(cc);
                    has_isolated_pages = true;
                }
            }
        };
        let page = cc.freepages[start_order].pop_front()?;
        let mt = self.mm.map[page as usize].mt;
        let mut o = start_order;
        while o > order {
            // The upper half goes back on the next lower list, at its head.
            o -= 1;
            let half = page + (1 << o);
            self.mm.pb_unaccount(half);
            let h = &mut self.mm.map[half as usize];
            h.flags = pg::HEAD;
            h.ok = o as u8;
            h.mt = mt;
            h.owner = NO_OWNER;
            self.mm.pb_account(half);
            cc.freepages[o].push_front(half);
        }
        self.mm.pb_unaccount(page);
        let p = &mut self.mm.map[page as usize];
        p.flags = pg::HEAD;
        p.ok = order as u8;
        self.mm.pb_account(page);
        cc.nr_freepages -= 1 << order;
        cc.nr_migratepages = cc.nr_migratepages.saturating_sub(1 << order);
        Some(page)
    }

    /// One batch of compact_zone(): isolate folios, migrate them to blocks of their order;
    /// returns Continue or how the run ends (-ENOMEM before the scanners met: Contended).
    /// A batch in the pageblock the last one came from finishes that block; a batch that
    /// failed to migrate part-way through a block rescans the rest of it at once.
    pub fn compact_zone_iter(&mut self, cc: &mut CompactControl) -> CompactResult {
        let ret = self.compact_finished(cc);
        if ret != CompactResult::Continue {
            return ret;
        }
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        let fast = self.mm.kcfg.rules().compaction_fast_search;
        cc.finish_pageblock =
            fast && pageblock_start(cc.last_migrated_pfn) == pageblock_start(cc.migrate_pfn);
        loop {
            let folios = self.isolate_migratepages(cc);
            if folios.is_empty() {
                // ISOLATE_NONE.
                if cc.update_cached {
                    let zc = self.compact.zone(cc.zid);
                    zc.cached_migrate_pfn[1] = zc.cached_migrate_pfn[0];
                }
                break;
            }
            cc.update_cached = false;
            cc.last_migrated_pfn = pageblock_start(cc.migrate_pfn - 1).max(zone_start);
            let nr_migratepages = cc.nr_migratepages;
            let out = self.migrate_pages(cc, &folios);
            cc.nr_migratepages = 0;
            cc.nr_migrated += out.nr_succeeded;
            self.trace(TraceEvent::MmCompactionMigratepages {
                nr_migrated: out.nr_succeeded,
                nr_failed: nr_migratepages - out.nr_succeeded,
            });
            if out.nr_succeeded == nr_migratepages {
                break;
            }
            if out.enomem && cc.free_pfn >> PAGEBLOCK_ORDER > cc.migrate_pfn >> PAGEBLOCK_ORDER {
                // Out of free pages before the scanners met: give up.
                return CompactResult::Contended;
            }
            // Rescan the rest of the block in one batch, marking it skipped, so that the
            // fast search does not come back to a block it left part-way.
            if fast
                && cc.migrate_pfn & (PAGEBLOCK_NR_PAGES as Pfn - 1) != 0
                && !cc.ignore_skip_hint
                && !cc.finish_pageblock
                && !cc.via_compact_memory
            {
                cc.finish_pageblock = true;
                if cc.order == COMPACTION_HPAGE_ORDER {
                    cc.last_migrated_pfn = 0;
                }
                continue;
            }
            break;
        }
        // check_drain: once the scanner has left the order-aligned block it migrated
        // from, the next batch starts a new block.
        if cc.order > 0 && cc.last_migrated_pfn != 0 {
            let current_block_start = cc.migrate_pfn & !((1 << cc.order) - 1);
            if cc.last_migrated_pfn < current_block_start {
                cc.last_migrated_pfn = 0;
            }
        }
        CompactResult::Continue
    }

    /// Returns unused isolated free blocks at their order (release_free_list), moves the
    /// free scanner's cached position back up to the highest block given back, and emits
    /// mm_compaction_end (the end of compact_zone).
    pub fn compact_zone_end(&mut self, cc: &mut CompactControl, ret: CompactResult) {
        // The highest pfn given back (release_free_list's return).
        let mut high: Pfn = 0;
        for order in 0..NR_PAGE_ORDERS {
            for pfn in std::mem::take(&mut cc.freepages[order]) {
                high = high.max(pfn);
                let zid = self.mm.page_zone(pfn);
                let mt = self.mm.get_pageblock_migratetype(pfn);
                self.mm.pb_unaccount(pfn);
                self.mm.map[pfn as usize].flags = 0;
                self.mm.cur.acc += self.mm.cost.buddy_free;
                self.mm.__free_one_page(zid, pfn, order, mt, false);
            }
        }
        if cc.nr_freepages > 0 {
            // The free scanner restarts no lower than the highest block given back: only
            // go back, not forward (the scanners' caches otherwise move as they scan).
            let free_pfn = pageblock_start(high);
            if free_pfn > self.cached_free_pfn(cc.zid) {
                self.compact.zone(cc.zid).cached_free_pfn = free_pfn;
            }
        }
        cc.nr_freepages = 0;
        let z = &self.mm.zones[cc.zid];
        let (start, end) = (z.zone_start_pfn, z.zone_end_pfn());
        self.trace(TraceEvent::MmCompactionEnd {
            zone_start: start,
            migrate_pfn: cc.migrate_pfn,
            free_pfn: cc.free_pfn,
            zone_end: end,
            sync: cc.sync,
            status: ret as i32,
        });
    }

    /// Compacts one zone to the end (compact_zone).
    pub fn compact_zone(&mut self, cc: &mut CompactControl) -> CompactResult {
        if !cc.via_compact_memory {
            let ret = self.compaction_suit_allocation_order(
                cc.zid,
                cc.order,
                cc.highest_zoneidx,
                cc.alloc_flags,
            );
            if ret != CompactResult::Continue {
                return ret;
            }
            // Clear the skip bits if compaction is retried after the longest deferral
            // (never for order -1, below every compact_order_failed).
            if self.compaction_restarting(cc.zid, cc.order) {
                self.__reset_isolation_suitable(cc.zid);
            }
        }
        self.compact_zone_begin(cc);
        let ret = loop {
            let r = self.compact_zone_iter(cc);
            if r != CompactResult::Continue {
                break r;
            }
        };
        self.compact_zone_end(cc, ret);
        ret
    }

    /// Compacts every populated zone of a node whole, as a write to
    /// /proc/sys/vm/compact_memory does (compact_node with proactive = false): order -1,
    /// MIGRATE_SYNC, the whole zone, skip bits ignored, GFP_KERNEL's migratetype.
    pub fn compact_node(&mut self, nid: usize, tid: TaskId) {
        for zid in self.mm.nodes[nid].zones {
            if self.mm.zones[zid].managed_pages == 0 {
                continue;
            }
            let mut cc = CompactControl::new(zid, 0, true, tid);
            cc.via_compact_memory = true;
            cc.whole_zone = true;
            cc.ignore_skip_hint = true;
            cc.migratetype = MigrateType::Unmovable;
            self.compact_zone(&mut cc);
        }
    }

    /// `echo 1 > /proc/sys/vm/compact_memory` (sysctl_compaction_handler → compact_nodes):
    /// every zone of every node compacted whole.
    pub fn compact_nodes(&mut self, tid: TaskId) {
        for nid in 0..self.mm.nodes.len() {
            self.compact_node(nid, tid);
        }
    }

    /// Direct compaction of every eligible zone for an allocation (try_to_compact_pages).
    pub fn try_to_compact_pages(
        &mut self,
        gfp: Gfp,
        order: usize,
        alloc_flags: u32,
        ac: &super::page_alloc::AllocContext,
        prio: CompactPriority,
        tid: TaskId,
    ) -> CompactResult {
        self.trace(TraceEvent::MmCompactionTryToCompactPages {
            order: order as i32,
            gfp_mask: gfp.0,
            prio: prio as i32,
        });
        let mut rc = CompactResult::Skipped;
        for i in 0..self.mm.zonelists[ac.zonelist].len() {
            let zid = self.mm.zonelists[ac.zonelist][i];
            if self.mm.zones[zid].zone_type as usize > ac.highest_zoneidx as usize
                || self.mm.zones[zid].managed_pages == 0
            {
                continue;
            }
            if self.compaction_deferred(zid, order) {
                rc = rc.max(CompactResult::Deferred);
                continue;
            }
            // compact_zone_order(): the mode, whole zone and skip hints from the priority.
            let mut cc = CompactControl::new(zid, order, prio != CompactPriority::Async, tid);
            cc.whole_zone = prio == MIN_COMPACT_PRIORITY;
            cc.ignore_skip_hint = prio == MIN_COMPACT_PRIORITY;
            cc.migratetype = ac.migratetype;
            cc.highest_zoneidx = ac.highest_zoneidx as usize;
            cc.alloc_flags = alloc_flags;
            let status = self.compact_zone(&mut cc);
            rc = rc.max(status);
            if status == CompactResult::Success {
                // Not reset here: the caller resets the deferral when it gets its page.
                break;
            }
            if matches!(
                status,
                CompactResult::Complete | CompactResult::PartialSkipped
            ) && cc.sync
            {
                self.defer_compaction(zid, order);
            }
        }
        rc
    }

    /// Direct compaction from the allocator's slow path and one more try at the free
    /// lists (__alloc_pages_direct_compact).
    pub fn __alloc_pages_direct_compact(
        &mut self,
        gfp: Gfp,
        order: usize,
        alloc_flags: u32,
        ac: &super::page_alloc::AllocContext,
        prio: CompactPriority,
        tid: TaskId,
    ) -> (Option<Pfn>, CompactResult) {
        if order == 0 || !self.mm.kcfg.compaction {
            return (None, CompactResult::Skipped);
        }
        let rc = self.try_to_compact_pages(gfp, order, alloc_flags, ac, prio, tid);
        if rc == CompactResult::Skipped {
            return (None, rc);
        }
        self.mm.count_vm_events(Event::COMPACT_STALL, 1);
        let page = self.mm.get_page_from_freelist(order, alloc_flags, ac);
        match page {
            Some(p) => {
                let zid = self.mm.page_zone(p);
                self.compaction_defer_reset(zid, order);
                self.mm.count_vm_events(Event::COMPACT_SUCCESS, 1);
            }
            None => self.mm.count_vm_events(Event::COMPACT_FAIL, 1),
        }
        (page, rc)
    }

    /// Whether another round of reclaim and compaction is worth it for a high-order
    /// allocation, raising the compaction priority when compaction failed
    /// (should_compact_retry).
    pub fn should_compact_retry(
        &mut self,
        ac: &super::page_alloc::AllocContext,
        order: usize,
        compact_result: CompactResult,
        compact_priority: &mut CompactPriority,
        compaction_retries: &mut u32,
    ) -> bool {
        if order == 0 {
            return false;
        }
        // Skipped for lack of free order-0 targets: go on if reclaim can help.
        if compact_result == CompactResult::Skipped {
            return self.compaction_zonelist_suitable(ac, order);
        }
        let mut max_retries = MAX_COMPACT_RETRIES;
        if compact_result == CompactResult::Success {
            // A success whose page went to someone else: retry some (costly ones less).
            if order > PAGE_ALLOC_COSTLY_ORDER {
                max_retries /= 4;
            }
            *compaction_retries += 1;
            if *compaction_retries <= max_retries {
                return true;
            }
        }
        // Compaction failed: retry with a higher priority.
        let min_priority = if order > PAGE_ALLOC_COSTLY_ORDER {
            MIN_COMPACT_COSTLY_PRIORITY
        } else {
            MIN_COMPACT_PRIORITY
        };
        if *compact_priority > min_priority {
            *compact_priority = match *compact_priority {
                CompactPriority::Async => CompactPriority::SyncLight,
                _ => CompactPriority::SyncFull,
            };
            *compaction_retries = 0;
            return true;
        }
        false
    }

    /// Whether some zone would pass compaction's watermark if part of its reclaimable
    /// pages were freed (compaction_zonelist_suitable).
    fn compaction_zonelist_suitable(
        &self,
        ac: &super::page_alloc::AllocContext,
        order: usize,
    ) -> bool {
        for &zid in &self.mm.zonelists[ac.zonelist] {
            let z = &self.mm.zones[zid];
            // Not all the reclaimable memory: a single high-order allocation should not
            // thrash everything.
            let available =
                z.free_pages() + (self.zone_reclaimable_pages(zid) / order as u64) as i64;
            let mark = z.wmark_pages(Wmark::Min) + (2u64 << order);
            if self
                .mm
                .__zone_watermark_ok(zid, 0, mark, ac.highest_zoneidx, 0, available)
            {
                return true;
            }
        }
        false
    }

    /// Asks a node's kcompactd to compact for `order` (wakeup_kcompactd).
    pub fn wakeup_kcompactd(&mut self, nid: usize, order: usize, highest_zoneidx: usize) {
        if order == 0 || !self.mm.kcfg.compaction {
            return;
        }
        let node = self.compact.node(nid);
        if node.max_order < order {
            node.max_order = order;
        }
        node.highest_zoneidx = node.highest_zoneidx.min(highest_zoneidx);
        if !node.sleeping || node.wait == usize::MAX {
            return;
        }
        if !self.kcompactd_node_suitable(nid) {
            return;
        }
        let node = self.compact.node(nid);
        node.sleeping = false;
        let wq = node.wait;
        self.trace(TraceEvent::MmCompactionWakeupKcompactd {
            nid: nid as i32,
            order: order as i32,
            highest_zoneidx: highest_zoneidx as u32,
        });
        self.mm.cur.wake.push(wq);
    }

    /// Whether some zone of the node needs and can use compaction (kcompactd_node_suitable).
    fn kcompactd_node_suitable(&mut self, nid: usize) -> bool {
        let (order, highest) = {
            let n = self.compact.node(nid);
            (n.max_order, n.highest_zoneidx)
        };
        for zt in 0..=highest.min(MAX_NR_ZONES - 1) {
            let zid = self.mm.nodes[nid].zones[zt];
            if !self.mm.zones[zid].populated() {
                continue;
            }
            if self.compaction_suit_allocation_order(zid, order, highest, ALLOC_WMARK_MIN)
                == CompactResult::Continue
            {
                return true;
            }
        }
        false
    }
}

impl Kernel {
    /// Whether reclaim for a costly order should go on so compaction has room to work
    /// (should_continue_reclaim in mm/vmscan.c, with in_reclaim_compaction()).
    pub fn should_continue_reclaim(
        &mut self,
        nid: usize,
        nr_reclaimed: u64,
        sc: &super::vmscan::ScanControl,
    ) -> bool {
        use super::mmzone::lru;
        let in_reclaim_compaction = self.mm.kcfg.compaction
            && !self.mm.kcfg.lumpy_reclaim
            && sc.order > 0
            && (sc.order > PAGE_ALLOC_COSTLY_ORDER
                || sc.priority < super::vmscan::DEF_PRIORITY - 2);
        if !in_reclaim_compaction || nr_reclaimed == 0 {
            return false;
        }
        for zt in 0..=sc.reclaim_idx.min(MAX_NR_ZONES - 1) {
            let zid = self.mm.nodes[nid].zones[zt];
            if !self.mm.zones[zid].populated() {
                continue;
            }
            let min = self.mm.zones[zid].wmark_pages(Wmark::Min);
            let hz = ZoneType::ALL[sc.reclaim_idx.min(MAX_NR_ZONES - 1)];
            if self.mm.zone_watermark_ok(zid, sc.order, min, hz, 0)
                || self.mm.compaction_suitable(zid, sc.order, sc.reclaim_idx)
            {
                return false;
            }
        }
        let pages_for_compaction = 2u64 << sc.order;
        let lv = &self.mm.nodes[nid].lruvec;
        let mut inactive = lv.nr[lru::INACTIVE_FILE];
        if self.can_reclaim_anon_pages() {
            inactive += lv.nr[lru::INACTIVE_ANON];
        }
        inactive > pages_for_compaction
    }
}

/// Where kcompactd is in its loop (kcompactd()).
#[derive(Debug, Clone)]
enum KcompactdState {
    /// About to wait for work (the top of kcompactd()'s loop).
    Sleep,
    /// Back from waiting: woken for work, by the proactive trigger, or at the timeout.
    Waited,
    /// A proactive pass (compact_node(pgdat, true)) over zone type `zt` and those above.
    Proactive {
        zt: usize,
        cc: Option<Box<CompactControl>>,
        prev_score: u64,
    },
    /// Compacting zone type `zt` (and the lower ones left) of the node.
    Work {
        order: usize,
        highest: usize,
        zt: usize,
        cc: Option<Box<CompactControl>>,
    },
}

/// A node's kcompactd kernel thread (kcompactd() and kcompactd_do_work()).
pub struct Kcompactd {
    nid: usize,
    state: KcompactdState,
    /// How long the next wait lasts before the proactive check [ns].
    timeout: u64,
}

impl Kcompactd {
    /// The kcompactd of node `nid`.
    pub fn new(nid: usize) -> Self {
        Kcompactd {
            nid,
            state: KcompactdState::Sleep,
            timeout: HPAGE_FRAG_CHECK_INTERVAL,
        }
    }

    /// The start of kcompactd_do_work(): the order and zones asked for, counted as a wake.
    fn start_work(k: &mut Kernel, nid: usize) -> KcompactdState {
        let node = k.compact.node(nid);
        let (order, highest) = (node.max_order, node.highest_zoneidx);
        node.max_order = 0;
        node.highest_zoneidx = MAX_NR_ZONES - 1;
        k.trace(TraceEvent::MmCompactionKcompactdWake {
            nid: nid as i32,
            order: order as i32,
            highest_zoneidx: highest as u32,
        });
        k.mm.count_vm_events(Event::COMPACT_DAEMON_WAKE, 1);
        KcompactdState::Work {
            order,
            highest,
            zt: 0,
            cc: None,
        }
    }

    /// After a wait that was not for work: a proactive pass if the node's fragmentation
    /// score is above the high mark (should_proactive_compact_node), else the next wait.
    fn proactive_check(&mut self, k: &mut Kernel) -> KcompactdState {
        self.timeout = HPAGE_FRAG_CHECK_INTERVAL;
        if k.should_proactive_compact_node(self.nid) {
            return KcompactdState::Proactive {
                zt: 0,
                cc: None,
                prev_score: k.mm.fragmentation_score_node(self.nid),
            };
        }
        k.compact.node(self.nid).proactive_trigger = false;
        KcompactdState::Sleep
    }
}

impl Kernel {
    /// Runs compact_zone()'s loop until it ends or has used about `quantum` of CPU, so
    /// that kcompactd lets other tasks run in between (its cond_resched()).
    fn compact_zone_for(&mut self, cc: &mut CompactControl, quantum: u64) -> CompactResult {
        loop {
            let r = self.compact_zone_iter(cc);
            if r != CompactResult::Continue || self.mm.cur.acc >= quantum {
                return r;
            }
        }
    }

    /// Whether a node's kswapd is awake (kswapd_is_running: its task is running).
    pub fn kswapd_is_running(&self, nid: usize) -> bool {
        self.mm.kcfg.kswapd && !self.mm.nodes[nid].kswapd_sleeping
    }

    /// Whether kcompactd should compact the node proactively (should_proactive_compact_node):
    /// proactiveness on, kswapd asleep, and the fragmentation score above the high mark.
    pub fn should_proactive_compact_node(&self, nid: usize) -> bool {
        self.mm.kcfg.compaction_proactiveness != 0
            && !self.kswapd_is_running(nid)
            && self.mm.fragmentation_score_node(nid) > self.mm.fragmentation_score_wmark(false)
    }

    /// A write of vm.compaction_proactiveness (compaction_proactiveness_sysctl_handler): a
    /// non-zero value asks every node's kcompactd for a proactive check now.
    pub fn compaction_proactiveness_sysctl_handler(&mut self, value: u64) {
        self.mm.kcfg.compaction_proactiveness = value;
        if value == 0 {
            return;
        }
        for nid in 0..self.mm.nodes.len() {
            let node = self.compact.node(nid);
            if node.proactive_trigger || node.wait == usize::MAX {
                continue;
            }
            node.proactive_trigger = true;
            let wq = node.wait;
            self.trace(TraceEvent::MmCompactionWakeupKcompactd {
                nid: nid as i32,
                order: -1,
                highest_zoneidx: (MAX_NR_ZONES - 1) as u32,
            });
            self.mm.cur.wake.push(wq);
        }
    }
}

impl Program<Kernel> for Kcompactd {
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let k = &mut *cx.k;
        let tid = cx.tid;
        let nid = self.nid;
        loop {
            match std::mem::replace(&mut self.state, KcompactdState::Sleep) {
                KcompactdState::Sleep => {
                    // wait_event_freezable_timeout(kcompactd_work_requested): no wait when
                    // work is already asked for; without proactiveness, no timeout.
                    let node = k.compact.node(nid);
                    if node.max_order > 0 || node.proactive_trigger {
                        self.state = KcompactdState::Waited;
                        continue;
                    }
                    node.sleeping = true;
                    let wq = node.wait;
                    k.trace(TraceEvent::MmCompactionKcompactdSleep { nid: nid as i32 });
                    self.state = KcompactdState::Waited;
                    let timeout = (k.mm.kcfg.compaction_proactiveness != 0).then_some(self.timeout);
                    return StepOut {
                        user_ns: 0,
                        next: Step::Block { wq, timeout },
                    };
                }
                KcompactdState::Waited => {
                    let node = k.compact.node(nid);
                    node.sleeping = false;
                    if node.max_order > 0 && !node.proactive_trigger {
                        // Woken for work: the proactive timeout starts over afterwards.
                        self.timeout = HPAGE_FRAG_CHECK_INTERVAL;
                        self.state = Self::start_work(k, nid);
                    } else {
                        self.state = self.proactive_check(k);
                    }
                }
                KcompactdState::Proactive { zt, cc, prev_score } => {
                    if zt >= MAX_NR_ZONES {
                        // No progress: wait 2^COMPACT_MAX_DEFER_SHIFT intervals.
                        if k.mm.fragmentation_score_node(nid) >= prev_score {
                            self.timeout = HPAGE_FRAG_CHECK_INTERVAL << COMPACT_MAX_DEFER_SHIFT;
                        }
                        k.compact.node(nid).proactive_trigger = false;
                        self.state = KcompactdState::Sleep;
                        continue;
                    }
                    let zid = k.mm.nodes[nid].zones[zt];
                    let mut cc = match cc {
                        Some(cc) => cc,
                        None => {
                            if !k.mm.zones[zid].populated() {
                                self.state = KcompactdState::Proactive {
                                    zt: zt + 1,
                                    cc: None,
                                    prev_score,
                                };
                                continue;
                            }
                            // compact_node(pgdat, true): order -1, MIGRATE_SYNC_LIGHT, the
                            // whole zone, skip bits ignored, GFP_KERNEL.
                            let mut cc = Box::new(CompactControl::new(zid, 0, true, tid));
                            cc.via_compact_memory = true;
                            cc.proactive = true;
                            cc.kcompactd = true;
                            cc.whole_zone = true;
                            cc.ignore_skip_hint = true;
                            cc.migratetype = MigrateType::Unmovable;
                            k.compact_zone_begin(&mut cc);
                            cc
                        }
                    };
                    let ret = k.compact_zone_for(&mut cc, cx.quantum);
                    self.state = if ret == CompactResult::Continue {
                        KcompactdState::Proactive {
                            zt,
                            cc: Some(cc),
                            prev_score,
                        }
                    } else {
                        k.compact_zone_end(&mut cc, ret);
                        KcompactdState::Proactive {
                            zt: zt + 1,
                            cc: None,
                            prev_score,
                        }
                    };
                    k.mm.cur.acc = k.mm.cur.acc.max(1);
                    return StepOut {
                        user_ns: 0,
                        next: Step::Run,
                    };
                }
                KcompactdState::Work {
                    order,
                    highest,
                    zt,
                    cc,
                } => {
                    if zt > highest.min(MAX_NR_ZONES - 1) {
                        self.state = KcompactdState::Sleep;
                        continue;
                    }
                    let zid = k.mm.nodes[nid].zones[zt];
                    let mut cc = match cc {
                        Some(cc) => cc,
                        None => {
                            if !k.mm.zones[zid].populated()
                                || k.compaction_deferred(zid, order)
                                || k.compaction_suit_allocation_order(
                                    zid,
                                    order,
                                    highest,
                                    ALLOC_WMARK_MIN,
                                ) != CompactResult::Continue
                            {
                                self.state = KcompactdState::Work {
                                    order,
                                    highest,
                                    zt: zt + 1,
                                    cc: None,
                                };
                                continue;
                            }
                            let mut cc = Box::new(CompactControl::new(zid, order, true, tid));
                            cc.kcompactd = true;
                            cc.highest_zoneidx = highest;
                            k.compact_zone_begin(&mut cc);
                            cc
                        }
                    };
                    let ret = k.compact_zone_for(&mut cc, cx.quantum);
                    if ret == CompactResult::Continue {
                        self.state = KcompactdState::Work {
                            order,
                            highest,
                            zt,
                            cc: Some(cc),
                        };
                        k.mm.cur.acc = k.mm.cur.acc.max(1);
                        return StepOut {
                            user_ns: 0,
                            next: Step::Run,
                        };
                    }
                    k.compact_zone_end(&mut cc, ret);
                    if ret == CompactResult::Success {
                        k.compaction_defer_reset(zid, order);
                    } else if matches!(ret, CompactResult::Complete | CompactResult::PartialSkipped)
                    {
                        k.mm.drain_all_pages();
                        k.defer_compaction(zid, order);
                    }
                    self.state = KcompactdState::Work {
                        order,
                        highest,
                        zt: zt + 1,
                        cc: None,
                    };
                    k.mm.cur.acc = k.mm.cur.acc.max(1);
                    return StepOut {
                        user_ns: 0,
                        next: Step::Run,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod compact_retry_tests {
    use crate::config::Scenario;
    use crate::kernel::Kernel;
    use crate::mm::compaction::{CompactPriority, CompactResult};

    #[test]
    fn fragmentation_score_and_its_marks_follow_the_kernel() {
        let boot = |p: u64| {
            let sc = Scenario::from_toml(&format!(
                "[machine]\nmemory = \"1GiB\"\ncpus = 2\n[kernel]\ncompaction_proactiveness = {p}\n"
            ))
            .unwrap();
            Kernel::boot(&sc.machine, &sc.kernel, &sc.cost)
        };
        // fragmentation_score_wmark(): low 100 - p, high low + min(10, low / 2).
        for (p, low, high) in [(20, 80, 90), (0, 100, 100), (95, 5, 7), (100, 0, 0)] {
            let k = boot(p);
            assert_eq!(k.mm.fragmentation_score_wmark(true), low);
            assert_eq!(k.mm.fragmentation_score_wmark(false), high);
        }
        // A freshly booted machine has its free memory in max-order blocks: score 0.
        let mut k = boot(20);
        assert_eq!(k.mm.fragmentation_score_node(0), 0);
        // extfrag_for_order() on counts alone (the lists are not walked): 300 free pages
        // of order 0 and one block of order 9 leave 300 of 812 free pages below order 9.
        let zid = k.mm.nodes[0].zones[crate::mm::mmzone::ZoneType::Dma32 as usize];
        for a in k.mm.zones[zid].free_area.iter_mut() {
            a.nr_free = 0;
        }
        k.mm.zones[zid].free_area[0].nr_free = 300;
        k.mm.zones[zid].free_area[9].nr_free = 1;
        assert_eq!(k.mm.extfrag_for_order(zid, 9), 300 * 100 / 812);
        assert_eq!(k.mm.extfrag_for_order(zid, 0), 0);
        // The node's score weighs the zone by its share of the node's present pages.
        let dma = k.mm.nodes[0].zones[crate::mm::mmzone::ZoneType::Dma as usize];
        let (p32, pdma) = (k.mm.zones[zid].present_pages, k.mm.zones[dma].present_pages);
        assert_eq!(
            k.mm.fragmentation_score_node(0),
            p32 * 36 / (p32 + pdma + 1)
        );
    }

    #[test]
    fn failed_compaction_retries_at_rising_priority_down_to_the_orders_minimum() {
        let sc = Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 2\n").unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let ac =
            k.mm.prepare_alloc_pages(crate::mm::gfp::GFP_HIGHUSER_MOVABLE, 0, 0);
        // Costly (order 9): async, then sync light, then no more.
        let (mut prio, mut retries) = (CompactPriority::Async, 0);
        assert!(k.should_compact_retry(&ac, 9, CompactResult::Complete, &mut prio, &mut retries));
        assert_eq!(prio, CompactPriority::SyncLight);
        assert!(!k.should_compact_retry(&ac, 9, CompactResult::Complete, &mut prio, &mut retries));
        // Not costly (order 3): down to sync full.
        let mut prio = CompactPriority::SyncLight;
        assert!(k.should_compact_retry(&ac, 3, CompactResult::Complete, &mut prio, &mut retries));
        assert_eq!(prio, CompactPriority::SyncFull);
        assert!(!k.should_compact_retry(&ac, 3, CompactResult::Complete, &mut prio, &mut retries));
        // A success that lost its page: costly orders retry MAX_COMPACT_RETRIES / 4 times.
        let (mut prio, mut retries) = (CompactPriority::SyncLight, 0);
        let n = (0..10)
            .take_while(|_| {
                k.should_compact_retry(&ac, 9, CompactResult::Success, &mut prio, &mut retries)
            })
            .count();
        assert_eq!(n, 4);
        // Order 0 never retries compaction.
        assert!(!k.should_compact_retry(&ac, 0, CompactResult::Complete, &mut prio, &mut retries));
    }
}

#[cfg(test)]
mod compact_memory_tests {
    use super::COMPACT_CLUSTER_MAX;
    use crate::config::Scenario;

    /// Free pages in blocks of order >= 9, from /proc/buddyinfo text.
    fn huge_free(buddyinfo: &str) -> u64 {
        buddyinfo
            .lines()
            .map(|l| {
                let counts: Vec<u64> = l
                    .split_whitespace()
                    .skip(4)
                    .map(|n| n.parse().unwrap())
                    .collect();
                (9..counts.len()).map(|o| counts[o] << o).sum::<u64>()
            })
            .sum()
    }

    #[test]
    fn compact_memory_rebuilds_free_huge_blocks_of_a_fragmented_layout() {
        // Two readers fill memory side by side, one file is deleted: holes everywhere.
        // Order-0 page cache (large_folios off); the next test has large folios.
        let text = "duration = \"60s\"\n[kernel]\nlarge_folios = false\n\
            [machine]\nmemory = \"1GiB\"\ncpus = 2\n\
            [disk]\nread_bandwidth = 500000000\nlatency = 100000\n\
            [[file]]\nname = \"a\"\nsize = \"400MiB\"\n[[file]]\nname = \"b\"\nsize = \"400MiB\"\n\
            [[task]]\nname = \"a\"\nprogram = [{ op = \"read\", file = \"a\" },\
              { op = \"signal\", name = \"read\" }, { op = \"wait\", name = \"read\", count = 2 },\
              { op = \"unlink\", file = \"a\" }, { op = \"snapshot\", name = \"holes\" },\
              { op = \"compact_memory\" }, { op = \"snapshot\", name = \"compacted\" }]\n\
            [[task]]\nname = \"b\"\nprogram = [{ op = \"read\", file = \"b\" },\
              { op = \"signal\", name = \"read\" }]\n";
        let sc = Scenario::from_toml(text).unwrap();
        let r = crate::sim::run(&sc, &mut |_, _| {});
        let (holes, done) = (&r.snapshots[0], &r.snapshots[1]);
        let d = |name: &str| done.vmstat[name] - holes.vmstat[name];
        let (before, after) = (huge_free(&holes.buddyinfo), huge_free(&done.buddyinfo));
        assert!(after > before + 50 * 512, "{before} -> {after}");
        assert!(d("compact_migrate_scanned") > 0);
        assert!(d("compact_free_scanned") > 0);
        assert!(d("compact_isolated") > 0);
        assert!(d("pgmigrate_success") > 0);
        // Not an allocation's compaction: no stall, and the file pages stayed cached.
        assert_eq!(d("compact_stall"), 0);
        assert_eq!(done.vmstat["nr_file_pages"], holes.vmstat["nr_file_pages"]);
    }

    /// Two readers of 1 MiB read(2) calls on a 1 MiB read_ahead_kb fill memory with
    /// folios of up to order 8 side by side, one file is deleted, then compact_memory.
    const LARGE_FOLIO_HOLES: &str = "duration = \"60s\"\n\
        [machine]\nmemory = \"1GiB\"\ncpus = 2\n\
        [disk]\nread_bandwidth = 500000000\nlatency = 100000\nread_ahead_kb = 1024\n\
        [[file]]\nname = \"a\"\nsize = \"400MiB\"\n[[file]]\nname = \"b\"\nsize = \"400MiB\"\n\
        [[task]]\nname = \"a\"\nprogram = [{ op = \"read\", file = \"a\", bs = \"1MiB\" },\
          { op = \"signal\", name = \"read\" }, { op = \"wait\", name = \"read\", count = 2 },\
          { op = \"unlink\", file = \"a\" }, { op = \"snapshot\", name = \"holes\" },\
          { op = \"compact_memory\" }, { op = \"snapshot\", name = \"compacted\" }]\n\
        [[task]]\nname = \"b\"\nprogram = [{ op = \"read\", file = \"b\", bs = \"1MiB\" },\
          { op = \"signal\", name = \"read\" }]\n";

    #[test]
    fn compact_memory_moves_large_folios_whole() {
        let sc = Scenario::from_toml(LARGE_FOLIO_HOLES).unwrap();
        let filter = crate::trace::EventFilter::parse(["compaction"]).unwrap();
        let (r, t) = crate::sim::run_traced(
            &sc,
            Some((crate::trace::TraceFormat::Modern, filter)),
            &mut |_, _| {},
        );
        let (holes, done) = (&r.snapshots[0], &r.snapshots[1]);
        let d = |name: &str| done.vmstat[name] - holes.vmstat[name];
        let (before, after) = (huge_free(&holes.buddyinfo), huge_free(&done.buddyinfo));
        assert!(after > before + 50 * 512, "{before} -> {after}");
        assert!(d("pgmigrate_success") > 0);
        assert_eq!(done.vmstat["nr_file_pages"], holes.vmstat["nr_file_pages"]);
        // A batch holds more than COMPACT_CLUSTER_MAX pages only when a large folio was
        // isolated whole (its pages counted in nr_taken).
        let t = t.unwrap();
        let taken: Vec<u64> = t
            .lines()
            .iter()
            .filter_map(|l| l.split("nr_taken=").nth(1))
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        assert!(
            taken.iter().any(|&n| n > COMPACT_CLUSTER_MAX as u64),
            "{taken:?}"
        );
        // Same scenario and seed: the same bytes.
        let again = crate::sim::run(&sc, &mut |_, _| {});
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
    }

    #[test]
    fn compact_memory_is_traced_with_order_minus_1_and_runs_to_the_scanners_meeting() {
        let text = "duration = \"10s\"\n[machine]\nmemory = \"256MiB\"\ncpus = 1\n\
            [[task]]\nname = \"root\"\nprogram = [{ op = \"touch\", size = \"64MiB\" },\
              { op = \"compact_memory\" }]\n";
        let sc = Scenario::from_toml(text).unwrap();
        let filter = crate::trace::EventFilter::parse(["compaction"]).unwrap();
        let (_, t) = crate::sim::run_traced(
            &sc,
            Some((crate::trace::TraceFormat::Modern, filter)),
            &mut |_, _| {},
        );
        let t = t.unwrap();
        let lines = t.lines();
        let finished: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains("mm_compaction_finished:"))
            .collect();
        assert!(!finished.is_empty());
        assert!(
            finished.iter().all(|l| l.contains("order=-1")),
            "{finished:?}"
        );
        // Every zone ends when its scanners meet (COMPACT_COMPLETE), never on a free page.
        let ends: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains("mm_compaction_end:"))
            .collect();
        assert!(!ends.is_empty());
        assert!(
            ends.iter().all(|l| l.contains("status=complete")),
            "{ends:?}"
        );
    }
}

#[cfg(test)]
mod isolate_order_tests {
    use super::*;
    use crate::config::Scenario;
    use crate::kernel::AllocResult;

    /// A booted 512 MiB kernel with a 1 MiB file written in one write(2): one clean
    /// order-8 folio; returns the kernel, the task and the folio.
    fn boot_with_folio() -> (Kernel, TaskId, Pfn) {
        let sc = Scenario::from_toml("[machine]\nmemory = \"512MiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        let ino = k.lookup_or_create("f");
        assert!(matches!(
            k.file_write_folio(tid, ino, 0, 1 << 20),
            AllocResult::Page(_)
        ));
        let p = k.filemap_get_folio(ino, 0).unwrap();
        k.folio_clear_dirty(p);
        assert_eq!(k.mm.map[p as usize].order(), 8);
        (k, tid, p)
    }

    /// What the migrate scanner takes from the folio's pageblock for a compaction of
    /// `order` (None: compact_memory's order -1).
    fn taken(order: Option<usize>) -> (Vec<Pfn>, Pfn, u64) {
        let (mut k, tid, p) = boot_with_folio();
        let mut cc = CompactControl::new(k.mm.page_zone(p), order.unwrap_or(0), true, tid);
        cc.via_compact_memory = order.is_none();
        cc.ignore_skip_hint = true;
        cc.migrate_pfn = pageblock_start(p);
        cc.free_pfn = pageblock_start(k.mm.zones[cc.zid].zone_end_pfn() - 1);
        let folios = k.isolate_migratepages(&mut cc);
        (folios, p, cc.nr_migratepages)
    }

    #[test]
    fn a_large_folio_is_isolated_whole_only_below_the_target_order() {
        // An order-8 folio is left alone for an order-8 (or smaller) allocation: a free
        // block of that order would already be there if moving it could make one.
        let (folios, p, _) = taken(Some(8));
        assert!(!folios.contains(&p));
        let (folios, p, _) = taken(Some(4));
        assert!(!folios.contains(&p));
        // Taken whole, its 256 pages counted, for order 9 and for compact_memory.
        let (folios, p, nr) = taken(Some(9));
        assert!(folios.contains(&p));
        assert!(nr >= 256);
        let (folios, p, _) = taken(None);
        assert!(folios.contains(&p));
    }

    #[test]
    fn async_direct_compaction_gives_up_a_block_at_its_first_page_it_cannot_take() {
        // A second order-8 folio after the first, which is under writeback: the pageblock
        // cannot become a free order-9 page.
        let (mut k, tid, p) = boot_with_folio();
        let ino = k.lookup_or_create("f");
        assert!(matches!(
            k.file_write_folio(tid, ino, 256, 1 << 20),
            AllocResult::Page(_)
        ));
        let q = k.filemap_get_folio(ino, 256).unwrap();
        k.folio_clear_dirty(q);
        assert_eq!(
            pageblock_start(p),
            pageblock_start(q),
            "both folios in one block"
        );
        assert!(p < q);
        k.mm.map[p as usize].flags |= pg::WRITEBACK;
        let scan = |k: &mut Kernel, sync: bool, kcompactd: bool| {
            let mut cc = CompactControl::new(k.mm.page_zone(p), 9, sync, tid);
            cc.kcompactd = kcompactd;
            cc.ignore_skip_hint = true;
            cc.migrate_pfn = pageblock_start(p);
            cc.free_pfn = pageblock_start(k.mm.zones[cc.zid].zone_end_pfn() - 1);
            let folios = k.isolate_migratepages(&mut cc);
            (folios, cc.migrate_pfn)
        };
        // isolate_migratepages_block's skip_on_failure: nothing taken, the block passed.
        let (folios, next) = scan(&mut k, false, false);
        assert!(folios.is_empty(), "{folios:?}");
        assert_eq!(next, pageblock_start(p) + PAGEBLOCK_NR_PAGES as Pfn);
        // Sync-light compaction and kcompactd take what they can.
        assert_eq!(scan(&mut k, true, false).0, vec![q]);
        assert_eq!(scan(&mut k, false, true).0, vec![q]);
    }
}

#[cfg(test)]
mod free_scanner_tests {
    use super::*;
    use crate::config::Scenario;
    use crate::kernel::Kernel;

    /// A 256 MiB kernel whose highest max-order block gave one page to an order-0
    /// allocation: its first pageblock holds free pieces of orders 0 to 8 after that
    /// page (expand), the second is a free order-9 block. Returns the kernel, the
    /// zone and the first pageblock's pfn.
    fn split_top_block() -> (Kernel, usize, Pfn) {
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"256MiB\"\ncpus = 1\n[kernel]\nboot_free_to_tail = false\n",
        )
        .unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let zid = (0..k.mm.zones.len())
            .max_by_key(|&z| k.mm.zones[z].managed_pages)
            .unwrap();
        let page =
            k.mm.__rmqueue_smallest(zid, 0, MigrateType::Movable)
                .unwrap();
        k.mm.map[page as usize].flags = pg::HEAD;
        (k, zid, page)
    }

    fn cc_at(zid: usize, block: Pfn, zone_start: Pfn) -> CompactControl {
        let mut cc = CompactControl::new(zid, 0, true, 0);
        cc.via_compact_memory = true;
        cc.ignore_skip_hint = true;
        cc.free_pfn = block;
        cc.migrate_pfn = zone_start;
        cc
    }

    #[test]
    fn the_free_scanner_stops_once_it_holds_enough_and_resumes_there() {
        let (mut k, zid, block) = split_top_block();
        let mut cc = cc_at(zid, block, k.mm.zones[zid].zone_start_pfn);
        cc.nr_migratepages = 3;
        k.isolate_freepages(&mut cc);
        // The order-0 piece after the allocated page, then the order-1 one: 3 pages.
        assert_eq!(cc.nr_freepages, 3);
        assert_eq!(Vec::from(cc.freepages[0].clone()), vec![block + 1]);
        assert_eq!(Vec::from(cc.freepages[1].clone()), vec![block + 2]);
        assert_eq!(cc.free_pfn, block + 4);
        // The block was left part-way: not marked to be skipped.
        assert!(k.isolation_suitable(zid, block));
        // Resumed where it stopped once nothing is isolated any more.
        cc.freepages = std::array::from_fn(|_| VecDeque::new());
        cc.nr_freepages = 0;
        cc.nr_migratepages = 4;
        k.isolate_freepages(&mut cc);
        assert_eq!(Vec::from(cc.freepages[2].clone()), vec![block + 4]);
        assert_eq!(cc.free_pfn, block + 8);
    }

    #[test]
    fn the_free_scanner_scans_nothing_while_an_isolated_page_is_left() {
        let (mut k, zid, block) = split_top_block();
        let mut cc = cc_at(zid, block, k.mm.zones[zid].zone_start_pfn);
        cc.nr_migratepages = 1;
        k.isolate_freepages(&mut cc);
        assert_eq!((cc.nr_freepages, cc.free_pfn), (1, block + 2));
        // An order-8 folio wants 256 pages: with one page still isolated the scanner
        // does not move, and compaction_alloc has no block of order 8 to give.
        cc.nr_migratepages = 256;
        let scanned = cc.total_free_scanned;
        assert_eq!(k.compaction_alloc(&mut cc, 8), None);
        assert_eq!((cc.free_pfn, cc.total_free_scanned), (block + 2, scanned));
        // With nothing isolated it goes on down the block and finds the order-8 piece.
        // Give the isolated page back as compact_zone_end does (release_free_list).
        let one = cc.freepages[0].pop_front().unwrap();
        k.mm.pb_unaccount(one);
        k.mm.map[one as usize].flags = 0;
        k.mm.__free_one_page(zid, one, 0, MigrateType::Movable, false);
        cc.nr_freepages = 0;
        assert_eq!(k.compaction_alloc(&mut cc, 8), Some(block + 256));
    }
}
