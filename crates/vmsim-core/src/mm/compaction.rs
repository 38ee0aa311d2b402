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
//! Simplifications: the reset samples every block for both LRU and free
//! pages (the kernel's first pass looks for sources, then targets) and
//! restarts the scanners at the zone's ends; the migrate scanner is
//! linear (no `fast_find_migrateblock`); the free scanner first searches the
//! movable free lists (`fast_isolate_freepages`, without its search-order
//! memory or `fast_isolate_around`), then scans linearly. Folios under
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
    /// compact_cached_migrate_pfn (0 = the zone start).
    pub cached_migrate_pfn: Pfn,
    /// compact_cached_free_pfn (0 = the zone end).
    pub cached_free_pfn: Pfn,
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
            self.zones.resize(zid + 1, ZoneCompact::default());
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

    /// Clears the skip bit of every pageblock that a sample of its pages (one in
    /// 1 << PAGE_ALLOC_COSTLY_ORDER) shows to hold an LRU page or a free page, once a
    /// direct compaction's scanners have met (__reset_isolation_suitable); the
    /// scanners start again from the zone's ends.
    pub fn __reset_isolation_suitable(&mut self, zid: usize) {
        if !self.compact.zone(zid).blockskip_flush {
            return;
        }
        let z = &self.mm.zones[zid];
        let (start, end) = (z.zone_start_pfn, z.zone_end_pfn());
        let mut suitable = Vec::new();
        let mut block = pageblock_start(start);
        while block < end {
            let lo = block.max(start);
            let hi = (block + PAGEBLOCK_NR_PAGES as Pfn).min(end);
            let has_source_or_target = (lo..hi).step_by(1 << PAGE_ALLOC_COSTLY_ORDER).any(|pfn| {
                let p = self.mm.frame(pfn);
                p.test(pg::LRU) || p.test(pg::BUDDY)
            });
            if has_source_or_target {
                suitable.push(lo);
            }
            block += PAGEBLOCK_NR_PAGES as Pfn;
        }
        let zc = self.compact.zone(zid);
        zc.blockskip_flush = false;
        for pfn in suitable {
            zc.set_skip(start, pfn, false);
        }
        zc.cached_migrate_pfn = 0;
        zc.cached_free_pfn = 0;
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
        cc.migrate_pfn =
            if !cc.whole_zone && zc.cached_migrate_pfn > start && zc.cached_migrate_pfn < end {
                zc.cached_migrate_pfn
            } else {
                start
            };
        cc.free_pfn =
            if !cc.whole_zone && zc.cached_free_pfn > start && zc.cached_free_pfn <= last_block {
                pageblock_start(zc.cached_free_pfn)
            } else {
                last_block
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
            zc.cached_migrate_pfn = 0;
            zc.cached_free_pfn = 0;
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

    /// Scans one pageblock from the migrate scanner's position and isolates movable
    /// folios, a large one whole with its tails skipped, until COMPACT_CLUSTER_MAX pages
    /// are isolated (isolate_migratepages / isolate_migratepages_block); sets
    /// cc.nr_migratepages.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> Vec<Pfn> {
        let start = cc.migrate_pfn;
        let block_end = (pageblock_start(start) + PAGEBLOCK_NR_PAGES as Pfn)
            .min(self.mm.zones[cc.zid].zone_end_pfn());
        self.mm.init_deferred_range(start, block_end);
        let mut taken = Vec::new();
        let mut pfn = start;
        let mut scanned = 0u64;
        let mut steps = 0u64;
        let mut nr_isolated = 0u64;
        let zone_start = self.mm.zones[cc.zid].zone_start_pfn;
        let at_block_start = start == pageblock_start(start) || start == zone_start;
        if at_block_start && !cc.ignore_skip_hint && !self.isolation_suitable(cc.zid, start) {
            pfn = block_end;
        } else if self.suitable_migration_source(cc, start) {
            // Async direct compaction gives up an order-aligned block at its first page
            // that cannot be isolated: the block cannot become a free page of the order.
            let skip_on_failure = cc.direct_compaction() && !cc.sync;
            let mut next_skip = block_end_pfn(pfn, cc.order);
            while pfn < block_end && nr_isolated < COMPACT_CLUSTER_MAX as u64 {
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
            if pfn >= block_end && taken.is_empty() {
                // Nothing isolated in a block scanned to its end: skip it next time.
                self.set_pageblock_skip(cc.zid, start);
            }
        } else {
            pfn = block_end;
        }
        let pfn = pfn.min(block_end);
        cc.migrate_pfn = pfn;
        cc.nr_migratepages = nr_isolated;
        cc.total_migrate_scanned += scanned;
        self.mm.cur.acc += steps * self.mm.cost.compact_scan_page;
        self.mm
            .count_vm_events(Event::COMPACT_MIGRATE_SCANNED, scanned);
        if cc.kcompactd {
            self.mm
                .count_vm_events(Event::COMPACT_DAEMON_MIGRATE_SCANNED, scanned);
        }
        self.mm
            .count_vm_events(Event::COMPACT_ISOLATED, nr_isolated);
        self.trace(TraceEvent::MmCompactionIsolateMigratepages {
            start_pfn: start,
            end_pfn: pfn as u64,
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

    /// Takes free pages straight off the MIGRATE_MOVABLE free lists, below the wanted
    /// order and in the upper half of the range left between the scanners
    /// (fast_isolate_freepages, without its search-order memory).
    fn fast_isolate_freepages(&mut self, cc: &mut CompactControl) {
        if cc.order == 0 || cc.free_pfn <= cc.migrate_pfn {
            return;
        }
        let distance = cc.free_pfn - cc.migrate_pfn;
        let min_pfn = pageblock_start(cc.free_pfn - (distance >> 1));
        let above = pageblock_start(cc.migrate_pfn) + PAGEBLOCK_NR_PAGES as Pfn;
        let min_pfn = min_pfn.max(above);
        let mut scanned = 0u64;
        let mut taken = 0u64;
        'orders: for order in (0..cc.order.min(PAGEBLOCK_ORDER)).rev() {
            // Look at a limited number of entries from the tail, as the kernel does.
            let limit = (PAGEBLOCK_NR_PAGES >> 4) as usize;
            let mut found = Vec::new();
            let mut pfn = self.mm.zones[cc.zid].free_area[order].free_list
                [MigrateType::Movable as usize]
                .tail;
            let mut seen = 0usize;
            while pfn != NIL && seen < limit {
                seen += 1;
                if pfn >= min_pfn && self.suitable_migration_target(pfn) {
                    found.push(pfn);
                }
                pfn = self.mm.map[pfn as usize].prev();
            }
            scanned += seen as u64;
            for p in found {
                if !self.mm.__isolate_free_page(p, order) {
                    break 'orders;
                }
                cc.freepages[order].push_back(p);
                cc.nr_freepages += 1 << order;
                taken += 1 << order;
                if cc.nr_freepages >= cc.nr_migratepages {
                    break 'orders;
                }
            }
        }
        self.count_free_scanned(cc, scanned, scanned, taken);
        self.trace(TraceEvent::MmCompactionFastIsolateFreepages {
            start_pfn: min_pfn as u64,
            end_pfn: cc.free_pfn,
            nr_scanned: scanned,
            nr_taken: taken,
        });
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
                    // The whole pageblock was scanned (update_pageblock_skip).
                    self.set_pageblock_skip(cc.zid, first);
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
    pub fn compact_zone_iter(&mut self, cc: &mut CompactControl) -> CompactResult {
        let ret = self.compact_finished(cc);
        if ret != CompactResult::Continue {
            return ret;
        }
        let folios = self.isolate_migratepages(cc);
        if folios.is_empty() {
            return CompactResult::Continue;
        }
        let nr_migratepages = cc.nr_migratepages;
        let out = self.migrate_pages(cc, &folios);
        cc.nr_migratepages = 0;
        cc.nr_migrated += out.nr_succeeded;
        self.trace(TraceEvent::MmCompactionMigratepages {
            nr_migrated: out.nr_succeeded,
            nr_failed: nr_migratepages - out.nr_succeeded,
        });
        if out.enomem && cc.free_pfn >> PAGEBLOCK_ORDER > cc.migrate_pfn >> PAGEBLOCK_ORDER {
            // Out of free pages before the scanners met: give up.
            return CompactResult::Contended;
        }
        CompactResult::Continue
    }

    /// Returns unused isolated free blocks at their order (release_free_list), caches
    /// the scanner positions and emits mm_compaction_end (the end of compact_zone).
    pub fn compact_zone_end(&mut self, cc: &mut CompactControl, ret: CompactResult) {
        for order in 0..NR_PAGE_ORDERS {
            for pfn in std::mem::take(&mut cc.freepages[order]) {
                let zid = self.mm.page_zone(pfn);
                let mt = self.mm.get_pageblock_migratetype(pfn);
                self.mm.pb_unaccount(pfn);
                self.mm.map[pfn as usize].flags = 0;
                self.mm.cur.acc += self.mm.cost.buddy_free;
                self.mm.__free_one_page(zid, pfn, order, mt, false);
            }
        }
        cc.nr_freepages = 0;
        if !matches!(ret, CompactResult::Complete | CompactResult::PartialSkipped) {
            let zc = self.compact.zone(cc.zid);
            zc.cached_migrate_pfn = cc.migrate_pfn;
            zc.cached_free_pfn = cc.free_pfn;
        }
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
