//! The buddy page allocator.
//!
//! Models mm/page_alloc.c of v6.15+ (read from the ≈v6.17 tree): free lists
//! per order and migratetype, `expand()` and `__free_one_page()`, the
//! per-CPU lists of order-0 pages, the fallback escalation
//! `__rmqueue()` → `__rmqueue_smallest()` / `__rmqueue_claim()` /
//! `__rmqueue_steal()` with `try_to_claim_block()`, MIGRATE_HIGHATOMIC
//! reserves, watermarks (`__setup_per_zone_wmarks()`, `__zone_watermark_ok()`)
//! and `get_page_from_freelist()`. The slow path lives in
//! [`crate::kernel`] because it calls reclaim and the OOM killer; boot-time
//! layout of nodes, zones and the frame table is in mm_init.rs.
//!
//! Simplifications: per-CPU lists hold order-0 pages only (the kernel also
//! keeps orders 1..3 and the THP order); pcp->high is fixed rather than
//! adapted; no CMA, no memory hotplug, no page shuffling, no debug guards.
//! Pages on per-CPU lists are not counted as free, as in the kernel.

use super::gfp::{alloc_flags::*, gfp_migratetype, gfp_zone, Gfp};
use super::mmzone::*;
use super::page::{pfn32, pg, ListHead, Pfn, NIL, NO_OWNER, PAGE_SHIFT, PAGE_SIZE};
use super::vmstat_items::{Event, NumaStat, ZoneStat};
use super::Mm;
use crate::trace::{TraceEvent, TraceEventId};

/// Lower boundary of ZONE_DMA32 [pfn] (16 MiB).
pub const DMA32_START_PFN: u64 = (16 << 20) >> PAGE_SHIFT;
/// Lower boundary of ZONE_NORMAL [pfn] (4 GiB).
pub const NORMAL_START_PFN: u64 = (4u64 << 30) >> PAGE_SHIFT;
/// Frames reserved by firmware at the bottom of ZONE_DMA [pages] (BIOS data, real-mode trampoline).
pub const DMA_FIRMWARE_PAGES: u64 = 256;
/// Node sizes are rounded down to this [pages] so every buddy block lies in one node.
pub const NODE_ALIGN_PAGES: u64 = 1 << MAX_PAGE_ORDER;

/// Escalation state of `__rmqueue()` (enum rmqueue_mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmqueueMode {
    /// Own migratetype only.
    Normal,
    /// Claim a whole pageblock of another type.
    Claim,
    /// Take a single block of another type.
    Steal,
}

/// What `prepare_alloc_pages()` works out once per request (struct alloc_context).
#[derive(Debug, Clone, Copy)]
pub struct AllocContext {
    /// Preferred node.
    pub nid: usize,
    /// Highest usable zone type (highest_zoneidx).
    pub highest_zoneidx: ZoneType,
    /// Requested migratetype: the free lists the request takes from.
    pub migratetype: MigrateType,
    /// Mobility of what is allocated, from the gfp flags even without grouping
    /// (PageLRU/__PageMovable in the kernel); recorded on the page.
    pub mobility: MigrateType,
    /// Index into [`Mm::zonelists`].
    pub zonelist: usize,
    /// CPU the request runs on.
    pub cpu: usize,
}

/// Integer square root, rounded down (int_sqrt, lib/math/int_sqrt.c).
pub(crate) fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// Largest power of two not above `x` (rounddown_pow_of_two), x > 0.
fn rounddown_pow_of_two(x: u64) -> u64 {
    1 << (63 - x.leading_zeros())
}

impl Mm {
    /// Default vm.min_free_kbytes (calculate_min_free_kbytes): sqrt(lowmem_kbytes * 16), clamped to [128, 262144].
    pub fn calculate_min_free_kbytes(&self) -> u64 {
        let lowmem_kbytes: u64 =
            self.zones.iter().map(|z| z.managed_pages).sum::<u64>() * (PAGE_SIZE >> 10);
        int_sqrt(lowmem_kbytes * 16).clamp(128, 262_144)
    }

    /// Sets min/low/high/promo watermarks of every zone (__setup_per_zone_wmarks).
    pub fn setup_per_zone_wmarks(&mut self) {
        let pages_min = self.min_free_kbytes >> (PAGE_SHIFT - 10);
        let lowmem_pages: u64 = self.zones.iter().map(|z| z.managed_pages).sum();
        let wsf = self.kcfg.watermark_scale_factor;
        for z in &mut self.zones {
            let managed = z.managed_pages;
            let tmp = (pages_min * managed).checked_div(lowmem_pages).unwrap_or(0);
            let min = tmp;
            let delta = (tmp >> 2).max(managed * wsf / 10000);
            z.watermark[Wmark::Min as usize] = min;
            z.watermark[Wmark::Low as usize] = min + delta;
            z.watermark[Wmark::High as usize] = min + 2 * delta;
            z.watermark[Wmark::Promo as usize] = min + 3 * delta;
            z.watermark_boost = 0;
        }
    }

    /// Sets lowmem_reserve[] from vm.lowmem_reserve_ratio (setup_per_zone_lowmem_reserve).
    pub fn setup_per_zone_lowmem_reserve(&mut self) {
        for nid in 0..self.nodes.len() {
            let zids = self.nodes[nid].zones;
            for i in 0..MAX_NR_ZONES - 1 {
                let ratio = self.kcfg.lowmem_reserve_ratio[i];
                let clear = ratio == 0 || self.zones[zids[i]].managed_pages == 0;
                let mut managed = 0;
                for j in i + 1..MAX_NR_ZONES {
                    managed += self.zones[zids[j]].managed_pages;
                    self.zones[zids[i]].lowmem_reserve[j] = if clear { 0 } else { managed / ratio };
                }
            }
        }
    }

    /// pcp->batch of a zone (zone_batchsize).
    pub fn zone_batchsize(&self, zid: usize) -> u32 {
        let managed = self.zones[zid].managed_pages;
        let mut batch = (managed >> 10).min((1 << 20) / PAGE_SIZE) / 4;
        if batch < 1 {
            batch = 1;
        }
        let batch = rounddown_pow_of_two(batch + batch / 2) - 1;
        batch.max(1) as u32
    }

    /// pcp->high of a zone (zone_highsize, without CPU hotplug; setup_pageset's multiple of batch
    /// when `pcp_high_batches` is set).
    pub fn zone_highsize(&self, zid: usize, batch: u32) -> u32 {
        if self.kcfg.pcp_high_batches > 0 {
            return (self.kcfg.pcp_high_batches as u32).saturating_mul(batch);
        }
        let z = &self.zones[zid];
        let total = match self.kcfg.percpu_pagelist_high_fraction {
            0 => z.watermark[Wmark::Low as usize],
            f => z.managed_pages / f,
        };
        let nr_split_cpus = self.nodes[z.nid].cpus.len().max(1) as u64;
        ((total / nr_split_cpus) as u32).max(batch << 2)
    }

    /// Creates every CPU's per-CPU lists for every zone (setup_per_cpu_pageset).
    pub(super) fn setup_per_cpu_pageset(&mut self) {
        let mut pcp = Vec::with_capacity(self.zones.len() * self.nr_cpus);
        for zid in 0..self.zones.len() {
            let batch = self.zone_batchsize(zid);
            let high = self.zone_highsize(zid, batch);
            for _ in 0..self.nr_cpus {
                pcp.push(PerCpuPages {
                    counts: [0; MIGRATE_PCPTYPES],
                    high,
                    batch,
                    lists: Default::default(),
                });
            }
        }
        self.pcp = pcp;
    }

    /// Migratetype of the pageblock holding `pfn` (get_pfnblock_migratetype).
    #[inline(always)]
    pub fn get_pageblock_migratetype(&self, pfn: Pfn) -> MigrateType {
        MigrateType::from_u8(self.pageblock_mt[(pfn >> PAGEBLOCK_ORDER) as usize])
    }

    /// Sets the migratetype of the pageblock holding `pfn` (set_pageblock_migratetype).
    #[inline(always)]
    pub fn set_pageblock_migratetype(&mut self, pfn: Pfn, mt: MigrateType) {
        let pb = (pfn >> PAGEBLOCK_ORDER) as usize;
        let old = self.pageblock_mt[pb];
        self.pageblock_mt[pb] = mt as u8;
        self.pb_set_mt(pb, old, mt as u8);
    }

    /// Sets every pageblock of a block of `order` >= pageblock_order (change_pageblock_range).
    fn change_pageblock_range(&mut self, pfn: Pfn, order: usize, mt: MigrateType) {
        let n: Pfn = 1 << (order - PAGEBLOCK_ORDER);
        for i in 0..n {
            self.set_pageblock_migratetype(pfn + (i << PAGEBLOCK_ORDER), mt);
        }
    }

    /// Adjusts NR_FREE_PAGES and the highatomic count (account_freepages).
    #[inline(always)]
    pub(super) fn account_freepages(&mut self, zid: usize, nr: i64, mt: MigrateType) {
        let z = &mut self.zones[zid];
        if mt == MigrateType::Isolate {
            return;
        }
        z.vm_stat[ZoneStat::NR_FREE_PAGES as usize] += nr;
        if mt == MigrateType::HighAtomic {
            z.nr_free_highatomic = (z.nr_free_highatomic as i64 + nr) as u64;
        }
    }

    /// Puts a free block on a list (__add_to_free_list).
    #[inline(always)]
    fn add_to_free_list(
        &mut self,
        zid: usize,
        pfn: Pfn,
        order: usize,
        mt: MigrateType,
        tail: bool,
    ) {
        // Frees clear an allocated head's state first (free_pages, the per-CPU drain,
        // compaction): a frame joining a free list is no allocated head.
        debug_assert!(!self.map[pfn as usize].test(pg::HEAD));
        {
            let p = &mut self.map[pfn as usize];
            p.flags = pg::BUDDY;
            p.ok = order as u8;
            p.mt = mt as u8;
            p.owner = NO_OWNER;
        }
        if !tail {
            self.deferred_note_push_front(zid, order, mt, pfn);
        }
        let list = &mut self.zones[zid].free_area[order].free_list[mt as usize];
        if tail {
            list.push_back(&mut self.map, pfn);
        } else {
            list.push_front(&mut self.map, pfn);
        }
        self.count_free_block(zid, order, mt);
    }

    /// Counts a block joining a free list: the area's and the zone's free counts (the
    /// accounting half of __add_to_free_list).
    #[inline(always)]
    pub(super) fn count_free_block(&mut self, zid: usize, order: usize, mt: MigrateType) {
        let z = &mut self.zones[zid];
        let area = &mut z.free_area[order];
        area.nr_free += 1;
        area.nr_free_mt[mt as usize] += 1;
        z.nr_free_mt[mt as usize] += 1 << order;
        if order >= PAGEBLOCK_ORDER && mt != MigrateType::Isolate {
            z.vm_stat[ZoneStat::NR_FREE_PAGES_BLOCKS as usize] += 1 << order;
        }
    }

    /// Takes a free block off its list (__del_page_from_free_list).
    #[inline(always)]
    fn del_page_from_free_list(&mut self, zid: usize, pfn: Pfn, order: usize, mt: MigrateType) {
        debug_assert!(self.map[pfn as usize].test(pg::BUDDY));
        debug_assert_eq!(self.map[pfn as usize].order(), order);
        debug_assert_eq!(self.map[pfn as usize].mt, mt as u8);
        self.deferred_note_remove(zid, order, mt, pfn);
        let z = &mut self.zones[zid];
        let area = &mut z.free_area[order];
        area.free_list[mt as usize].remove(&mut self.map, pfn);
        area.nr_free -= 1;
        area.nr_free_mt[mt as usize] -= 1;
        z.nr_free_mt[mt as usize] -= 1 << order;
        if order >= PAGEBLOCK_ORDER && mt != MigrateType::Isolate {
            z.vm_stat[ZoneStat::NR_FREE_PAGES_BLOCKS as usize] -= 1 << order;
        }
        self.map[pfn as usize].flags &= !pg::BUDDY;
    }

    /// Moves a free block to another type's list, at the tail (move_to_free_list).
    fn move_to_free_list(
        &mut self,
        zid: usize,
        pfn: Pfn,
        order: usize,
        old: MigrateType,
        new: MigrateType,
    ) {
        self.del_page_from_free_list(zid, pfn, order, old);
        self.add_to_free_list(zid, pfn, order, new, true);
        self.account_freepages(zid, -(1i64 << order), old);
        self.account_freepages(zid, 1i64 << order, new);
    }

    /// Splits a block of order `high` down to `low`, freeing the upper halves (expand); returns pages put back.
    #[inline(always)]
    fn expand(
        &mut self,
        zid: usize,
        pfn: Pfn,
        low: usize,
        mut high: usize,
        mt: MigrateType,
    ) -> u64 {
        let mut nr_added = 0;
        while high > low {
            high -= 1;
            let size: Pfn = 1 << high;
            self.add_to_free_list(zid, pfn + size, high, mt, false);
            nr_added += size;
            self.cur.acc += self.cost.buddy_split;
        }
        nr_added
    }

    /// Removes a free block and splits it to the wanted order (page_del_and_expand).
    #[inline(always)]
    fn page_del_and_expand(
        &mut self,
        zid: usize,
        pfn: Pfn,
        low: usize,
        high: usize,
        mt: MigrateType,
    ) {
        self.del_page_from_free_list(zid, pfn, high, mt);
        let nr_added = self.expand(zid, pfn, low, high, mt);
        self.account_freepages(zid, -((1i64 << high) - nr_added as i64), mt);
    }

    /// Takes the smallest free block of `mt` of at least `order` (__rmqueue_smallest).
    #[inline]
    pub fn __rmqueue_smallest(&mut self, zid: usize, order: usize, mt: MigrateType) -> Option<Pfn> {
        for current_order in order..NR_PAGE_ORDERS {
            let head = self.free_list_first(zid, current_order, mt);
            if head == NIL {
                continue;
            }
            self.page_del_and_expand(zid, head, order, current_order, mt);
            if self.kmem_trace {
                self.trace_zone_locked(head, order, mt);
            }
            return Some(head);
        }
        None
    }

    /// Whether a fallback of this order may claim a whole pageblock (should_try_claim_block).
    pub fn should_try_claim_block(&self, order: usize, start_mt: MigrateType) -> bool {
        order >= PAGEBLOCK_ORDER
            || order >= PAGEBLOCK_ORDER / 2
            || start_mt == MigrateType::Reclaimable
            || start_mt == MigrateType::Unmovable
            || !self.grouping
    }

    /// First fallback type with a free block of this order (find_suitable_fallback):
    /// -2 if claiming is not allowed at this order, -1 if none.
    pub fn find_suitable_fallback(
        &self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        claimable: bool,
    ) -> i32 {
        if claimable && !self.should_try_claim_block(order, mt) {
            return -2;
        }
        let area = &self.zones[zid].free_area[order];
        if area.nr_free == 0 {
            return -1;
        }
        for fb in FALLBACKS[mt as usize] {
            if !self.free_list_empty(zid, order, fb) {
                return fb as i32;
            }
        }
        -1
    }

    /// Counts free and movable pages of the pageblock holding `pfn` (prep_move_freepages_block);
    /// None if the block is not wholly inside the zone.
    pub fn prep_move_freepages_block(&self, zid: usize, pfn: Pfn) -> Option<(Pfn, u64, u64)> {
        let start = pfn & !((1 << PAGEBLOCK_ORDER) - 1);
        let end = start + (1 << PAGEBLOCK_ORDER);
        let z = &self.zones[zid];
        if !z.spans(start) || !z.spans(end - 1) {
            return None;
        }
        let (mut free, mut movable) = (0u64, 0u64);
        let mut p = start;
        while p < end {
            let page = &self.map[p as usize];
            if page.test(pg::BUDDY) {
                let n: Pfn = 1 << page.order();
                free += n;
                p += n;
                continue;
            }
            if page.test(pg::HEAD) {
                let n: Pfn = 1 << page.order();
                if page.mt == MigrateType::Movable as u8 {
                    movable += n;
                }
                p += n;
                continue;
            }
            p += 1;
        }
        Some((start, free, movable))
    }

    /// Moves every free block of a pageblock from `old` to `new` lists (__move_freepages_block); returns pages moved.
    pub fn __move_freepages_block(
        &mut self,
        zid: usize,
        start: Pfn,
        old: MigrateType,
        new: MigrateType,
    ) -> u64 {
        let end = start + (1 << PAGEBLOCK_ORDER);
        let mut moved = 0;
        let mut p = start;
        while p < end {
            let page = self.map[p as usize];
            if !page.test(pg::BUDDY) {
                p += 1;
                continue;
            }
            let order = page.order();
            debug_assert_eq!(page.mt, old as u8);
            self.move_to_free_list(zid, p, order, old, new);
            moved += 1 << order;
            p += 1 << order;
        }
        moved
    }

    /// Raises the zone's watermarks by a pageblock after a fragmenting fallback, up to
    /// `watermark_boost_factor` of the high mark (boost_watermark); false when boosting is off.
    pub fn boost_watermark(&mut self, zid: usize) -> bool {
        let factor = self.kcfg.watermark_boost_factor;
        let z = &mut self.zones[zid];
        if factor == 0 || PAGEBLOCK_NR_PAGES * 4 > z.managed_pages {
            return false;
        }
        let max_boost = z.watermark[Wmark::High as usize] * factor / 10000;
        if max_boost == 0 {
            return false;
        }
        let max_boost = max_boost.max(PAGEBLOCK_NR_PAGES);
        z.watermark_boost = (z.watermark_boost + PAGEBLOCK_NR_PAGES).min(max_boost);
        true
    }

    /// Takes a free block off the buddy lists for compaction if the zone stays above its
    /// min watermark (__isolate_free_page); the block is left allocated, head of `order`.
    pub fn __isolate_free_page(&mut self, pfn: Pfn, order: usize) -> bool {
        let zid = self.page_zone(pfn);
        let mt = MigrateType::from_u8(self.map[pfn as usize].mt);
        if mt != MigrateType::Isolate {
            let mark = self.zones[zid].watermark[Wmark::Min as usize] + (1 << order);
            if !self.zone_watermark_ok(zid, 0, mark, ZoneType::Dma, 0) {
                return false;
            }
        }
        self.with_zone_lock(zid, |mm| {
            mm.del_page_from_free_list(zid, pfn, order, mt);
            mm.account_freepages(zid, -(1i64 << order), mt);
        });
        self.pb_unaccount(pfn);
        let p = &mut self.map[pfn as usize];
        p.flags = pg::HEAD;
        p.ok = order as u8;
        p.mt = mt as u8;
        p.owner = NO_OWNER;
        self.pb_account(pfn);
        true
    }

    /// Turns an allocated block of `order` into 2^order allocated order-0 pages (split_page).
    pub fn split_page(&mut self, pfn: Pfn, order: usize) {
        debug_assert!(self.map[pfn as usize].test(pg::HEAD));
        let mt = self.map[pfn as usize].mt;
        for q in pfn..pfn + (1 << order) {
            self.pb_unaccount(q);
            let p = &mut self.map[q as usize];
            p.flags = pg::HEAD;
            p.ok = 0;
            p.mt = mt;
            p.owner = NO_OWNER;
            p.next = pfn32(NIL);
            p.prev = pfn32(NIL);
            self.pb_account(q);
        }
    }

    /// mm_page_alloc_zone_locked (trace_mm_page_alloc_zone_locked in __rmqueue_smallest),
    /// out of line: the hot path tests only [`Mm::kmem_trace`].
    #[cold]
    #[inline(never)]
    fn trace_zone_locked(&mut self, pfn: Pfn, order: usize, mt: MigrateType) {
        if self.trace_enabled(TraceEventId::MmPageAllocZoneLocked) {
            self.trace(TraceEvent::MmPageAllocZoneLocked {
                pfn,
                order: order as u32,
                migratetype: mt as i32,
                percpu_refill: (order <= PAGE_ALLOC_COSTLY_ORDER
                    && (mt as usize) < MIGRATE_PCPTYPES) as i32,
            });
        }
    }

    /// mm_page_pcpu_drain (free_pcppages_bulk), out of line.
    #[cold]
    #[inline(never)]
    fn trace_pcpu_drain(&mut self, pfn: Pfn, mt: MigrateType) {
        if self.trace_enabled(TraceEventId::MmPagePcpuDrain) {
            self.trace(TraceEvent::MmPagePcpuDrain {
                pfn,
                order: 0,
                migratetype: mt as i32,
            });
        }
    }

    /// mm_page_free (__free_pages), out of line.
    #[cold]
    #[inline(never)]
    fn trace_page_free(&mut self, pfn: Pfn, order: usize) {
        if self.trace_enabled(TraceEventId::MmPageFree) {
            self.trace(TraceEvent::MmPageFree {
                pfn,
                order: order as u32,
            });
        }
    }

    /// Counts and emits one mm_page_alloc_extfrag event (trace_mm_page_alloc_extfrag).
    fn trace_extfrag(
        &mut self,
        pfn: Pfn,
        alloc_order: usize,
        fallback_order: usize,
        alloc_mt: MigrateType,
        fallback_mt: MigrateType,
    ) {
        let change_ownership = self.get_pageblock_migratetype(pfn) == alloc_mt;
        if self.trace_enabled(TraceEventId::MmPageAllocExtfrag) {
            self.trace(TraceEvent::MmPageAllocExtfrag {
                pfn,
                alloc_order: alloc_order as i32,
                fallback_order: fallback_order as i32,
                alloc_migratetype: alloc_mt as i32,
                fallback_migratetype: fallback_mt as i32,
                change_ownership: change_ownership as i32,
            });
        }
        let fragmenting = fallback_order < PAGEBLOCK_ORDER;
        self.frag.extfrag_events += 1;
        if fragmenting {
            self.frag.extfrag_fragmenting += 1;
            if !change_ownership {
                self.frag.extfrag_mixed += 1;
            }
        }
        if change_ownership {
            self.frag.extfrag_change_ownership += 1;
        }
    }

    /// Claims a whole pageblock of another type if enough of it is free or alike (try_to_claim_block).
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        zid: usize,
        pfn: Pfn,
        current_order: usize,
        order: usize,
        start_mt: MigrateType,
        block_mt: MigrateType,
        alloc_flags: u32,
    ) -> Option<Pfn> {
        if current_order >= PAGEBLOCK_ORDER {
            self.del_page_from_free_list(zid, pfn, current_order, block_mt);
            self.change_pageblock_range(pfn, current_order, start_mt);
            let nr_added = self.expand(zid, pfn, order, current_order, start_mt);
            self.account_freepages(zid, -(1i64 << current_order), block_mt);
            self.account_freepages(zid, nr_added as i64, start_mt);
            return Some(pfn);
        }
        // A claim attempt below pageblock order fragments: boost the watermarks
        // and, if the caller may wake kswapd, flag the zone (ZONE_BOOSTED_WATERMARK).
        if self.boost_watermark(zid) && alloc_flags & ALLOC_KSWAPD != 0 {
            self.zones[zid].boosted_watermark = true;
        }
        let (start, free, movable) = self.prep_move_freepages_block(zid, pfn)?;
        let alike = if start_mt == MigrateType::Movable {
            movable
        } else if block_mt == MigrateType::Movable {
            PAGEBLOCK_NR_PAGES - (free + movable)
        } else {
            0
        };
        if free + alike >= 1 << (PAGEBLOCK_ORDER - 1) || !self.grouping {
            self.__move_freepages_block(zid, start, block_mt, start_mt);
            self.set_pageblock_migratetype(start, start_mt);
            self.frag.blocks_claimed += 1;
            return self.__rmqueue_smallest(zid, order, start_mt);
        }
        None
    }

    /// Claims a pageblock of a fallback type, largest blocks first (__rmqueue_claim).
    fn __rmqueue_claim(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        alloc_flags: u32,
    ) -> Option<Pfn> {
        let min_order = if order < PAGEBLOCK_ORDER && alloc_flags & ALLOC_NOFRAGMENT != 0 {
            PAGEBLOCK_ORDER
        } else {
            order
        };
        for current_order in (min_order..NR_PAGE_ORDERS).rev() {
            let fb = self.find_suitable_fallback(zid, current_order, mt, true);
            if fb == -1 {
                continue;
            }
            if fb == -2 {
                break;
            }
            let fb = MigrateType::from_u8(fb as u8);
            let head = self.free_list_first(zid, current_order, fb);
            if let Some(page) =
                self.try_to_claim_block(zid, head, current_order, order, mt, fb, alloc_flags)
            {
                self.trace_extfrag(page, order, current_order, mt, fb);
                return Some(page);
            }
        }
        None
    }

    /// Takes the smallest block of a fallback type without claiming its pageblock
    /// (__rmqueue_steal); under `kernel.boost_on_steal` a steal below pageblock order
    /// boosts the watermarks first, as 5.0–6.14's steal_suitable_fallback did.
    fn __rmqueue_steal(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        alloc_flags: u32,
    ) -> Option<Pfn> {
        for current_order in order..NR_PAGE_ORDERS {
            let fb = self.find_suitable_fallback(zid, current_order, mt, false);
            if fb < 0 {
                continue;
            }
            let fb = MigrateType::from_u8(fb as u8);
            if current_order < PAGEBLOCK_ORDER
                && self.kcfg.rules().boost_on_steal
                && self.boost_watermark(zid)
                && alloc_flags & ALLOC_KSWAPD != 0
            {
                self.zones[zid].boosted_watermark = true;
            }
            let head = self.free_list_first(zid, current_order, fb);
            self.page_del_and_expand(zid, head, order, current_order, fb);
            self.trace_extfrag(head, order, current_order, mt, fb);
            return Some(head);
        }
        None
    }

    /// Takes one block under zone->lock, escalating own type → claim → steal (__rmqueue).
    #[inline]
    pub fn __rmqueue(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        alloc_flags: u32,
        mode: &mut RmqueueMode,
    ) -> Option<Pfn> {
        self.cur.acc += self.cost.buddy_alloc;
        if *mode == RmqueueMode::Normal {
            if let Some(p) = self.__rmqueue_smallest(zid, order, mt) {
                return Some(p);
            }
            *mode = RmqueueMode::Claim;
        }
        if *mode == RmqueueMode::Claim {
            if let Some(p) = self.__rmqueue_claim(zid, order, mt, alloc_flags) {
                *mode = RmqueueMode::Normal;
                return Some(p);
            }
            *mode = RmqueueMode::Steal;
        }
        if alloc_flags & ALLOC_NOFRAGMENT == 0 {
            if let Some(p) = self.__rmqueue_steal(zid, order, mt, alloc_flags) {
                return Some(p);
            }
        }
        None
    }

    /// Runs `f` as a zone->lock critical section: its cost is the hold time, and spinning is added.
    #[inline(always)]
    fn with_zone_lock<R>(&mut self, zid: usize, f: impl FnOnce(&mut Self) -> R) -> R {
        let t0 = self.cur.acc;
        let r = f(self);
        let hold = self.cur.acc - t0;
        let at = self.cur.now + t0;
        let spin = self.zones[zid].lock.acquire(at, hold);
        self.cur.acc += spin;
        r
    }

    /// Refills a per-CPU list with up to `count` pages (rmqueue_bulk).
    fn rmqueue_bulk(
        &mut self,
        zid: usize,
        cpu: usize,
        count: u32,
        mt: MigrateType,
        alloc_flags: u32,
    ) -> u32 {
        let idx = zid * self.nr_cpus + cpu;
        self.with_zone_lock(zid, |mm| {
            let mut mode = RmqueueMode::Normal;
            let mut n = 0;
            while n < count {
                let Some(p) = mm.__rmqueue(zid, 0, mt, alloc_flags, &mut mode) else {
                    break;
                };
                {
                    let page = &mut mm.map[p as usize];
                    page.flags = pg::PCP;
                    page.ok = 0;
                    page.mt = mt as u8;
                }
                mm.pcp[idx].lists[mt as usize].push_back(&mut mm.map, p);
                n += 1;
            }
            mm.pcp[idx].counts[mt as usize] += n;
            n
        })
    }

    /// Takes an order-0 page from this CPU's list, refilling it if empty (rmqueue_pcplist).
    #[inline]
    fn rmqueue_pcplist(
        &mut self,
        zid: usize,
        cpu: usize,
        mt: MigrateType,
        alloc_flags: u32,
    ) -> Option<Pfn> {
        let idx = zid * self.nr_cpus + cpu;
        debug_assert!((mt as usize) < MIGRATE_PCPTYPES);
        if self.pcp[idx].lists[mt as usize].is_empty() {
            let batch = self.pcp[idx].batch;
            self.rmqueue_bulk(zid, cpu, batch, mt, alloc_flags);
        }
        let pcp = &mut self.pcp[idx];
        let p = pcp.lists[mt as usize].pop_front(&mut self.map)?;
        pcp.counts[mt as usize] -= 1;
        self.cur.acc += self.cost.pcp_alloc;
        Some(p)
    }

    /// Takes a block from the buddy lists under zone->lock (rmqueue_buddy).
    fn rmqueue_buddy(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        alloc_flags: u32,
    ) -> Option<Pfn> {
        self.with_zone_lock(zid, |mm| {
            let mut page = None;
            if alloc_flags & ALLOC_HIGHATOMIC != 0 {
                page = mm.__rmqueue_smallest(zid, order, MigrateType::HighAtomic);
            }
            if page.is_none() {
                let mut mode = RmqueueMode::Normal;
                page = mm.__rmqueue(zid, order, mt, alloc_flags, &mut mode);
                if page.is_none() && alloc_flags & (ALLOC_OOM | ALLOC_NON_BLOCK) != 0 {
                    page = mm.__rmqueue_smallest(zid, order, MigrateType::HighAtomic);
                }
            }
            page
        })
    }

    /// Allocates from one zone, through the per-CPU lists for order 0 (rmqueue).
    #[inline]
    fn rmqueue(
        &mut self,
        zid: usize,
        cpu: usize,
        order: usize,
        alloc_flags: u32,
        mt: MigrateType,
    ) -> Option<Pfn> {
        if order == 0 && (mt as usize) < MIGRATE_PCPTYPES {
            if let Some(p) = self.rmqueue_pcplist(zid, cpu, mt, alloc_flags) {
                return Some(p);
            }
        }
        self.rmqueue_buddy(zid, order, mt, alloc_flags)
    }

    /// Pages that may not be used for this request (__zone_watermark_unusable_free).
    #[inline(always)]
    fn zone_watermark_unusable_free(&self, zid: usize, order: usize, alloc_flags: u32) -> i64 {
        let mut unusable = (1i64 << order) - 1;
        if alloc_flags & ALLOC_RESERVES == 0 {
            unusable += self.zones[zid].nr_free_highatomic as i64;
        }
        unusable
    }

    /// Whether the zone stays above `mark` after this allocation (__zone_watermark_ok).
    pub fn __zone_watermark_ok(
        &self,
        zid: usize,
        order: usize,
        mark: u64,
        highest_zoneidx: ZoneType,
        alloc_flags: u32,
        mut free_pages: i64,
    ) -> bool {
        let z = &self.zones[zid];
        let mut min = mark as i64;
        free_pages -= self.zone_watermark_unusable_free(zid, order, alloc_flags);
        if alloc_flags & ALLOC_RESERVES != 0 {
            if alloc_flags & ALLOC_MIN_RESERVE != 0 {
                min -= min / 2;
                if alloc_flags & ALLOC_NON_BLOCK != 0 {
                    min -= min / 4;
                }
            }
            if alloc_flags & ALLOC_OOM != 0 {
                min -= min / 2;
            }
        }
        if free_pages <= min + z.lowmem_reserve[highest_zoneidx as usize] as i64 {
            return false;
        }
        if order == 0 {
            return true;
        }
        for o in order..NR_PAGE_ORDERS {
            let area = &z.free_area[o];
            if area.nr_free == 0 {
                continue;
            }
            if (0..MIGRATE_PCPTYPES)
                .any(|mt| !self.free_list_empty(zid, o, MigrateType::from_u8(mt as u8)))
            {
                return true;
            }
            if alloc_flags & (ALLOC_HIGHATOMIC | ALLOC_OOM) != 0
                && !area.free_list[MigrateType::HighAtomic as usize].is_empty()
            {
                return true;
            }
        }
        false
    }

    /// zone_watermark_ok() with the zone's current free pages.
    pub fn zone_watermark_ok(
        &self,
        zid: usize,
        order: usize,
        mark: u64,
        highest_zoneidx: ZoneType,
        alloc_flags: u32,
    ) -> bool {
        self.__zone_watermark_ok(
            zid,
            order,
            mark,
            highest_zoneidx,
            alloc_flags,
            self.zones[zid].free_pages(),
        )
    }

    /// The fast watermark check with an order-0 shortcut (zone_watermark_fast).
    #[inline]
    fn zone_watermark_fast(
        &self,
        zid: usize,
        order: usize,
        mark: u64,
        highest_zoneidx: ZoneType,
        alloc_flags: u32,
    ) -> bool {
        let z = &self.zones[zid];
        let free_pages = z.free_pages();
        if order == 0 {
            let reserved = self.zone_watermark_unusable_free(zid, 0, alloc_flags);
            let usable = free_pages - free_pages.min(reserved);
            if usable > (mark + z.lowmem_reserve[highest_zoneidx as usize]) as i64 {
                return true;
            }
        }
        if self.__zone_watermark_ok(zid, order, mark, highest_zoneidx, alloc_flags, free_pages) {
            return true;
        }
        if order == 0
            && alloc_flags & ALLOC_MIN_RESERVE != 0
            && z.watermark_boost > 0
            && alloc_flags & ALLOC_WMARK_MASK == ALLOC_WMARK_MIN
        {
            let mark = z.watermark[Wmark::Min as usize];
            return self.__zone_watermark_ok(
                zid,
                order,
                mark,
                highest_zoneidx,
                alloc_flags,
                free_pages,
            );
        }
        false
    }

    /// Works out the zonelist and migratetype of a request (prepare_alloc_pages).
    pub fn prepare_alloc_pages(&self, gfp: Gfp, nid: usize, cpu: usize) -> AllocContext {
        let highest_zoneidx = gfp_zone(gfp);
        AllocContext {
            nid,
            highest_zoneidx,
            migratetype: gfp_migratetype(gfp, self.grouping),
            mobility: gfp_migratetype(gfp, true),
            // __GFP_THISNODE uses the node's ZONELIST_NOFALLBACK (after the fallback lists).
            zonelist: if gfp.has(super::gfp::__GFP_THISNODE) {
                (self.nodes.len() + nid) * MAX_NR_ZONES + highest_zoneidx as usize
            } else {
                nid * MAX_NR_ZONES + highest_zoneidx as usize
            },
            cpu,
        }
    }

    /// ALLOC_NOFRAGMENT for Normal-zone requests when DMA32 is populated (alloc_flags_nofragment).
    pub fn alloc_flags_nofragment(&self, ac: &AllocContext, gfp: Gfp) -> u32 {
        let mut flags = if gfp.has(super::gfp::__GFP_KSWAPD_RECLAIM) {
            ALLOC_KSWAPD
        } else {
            0
        };
        if !self.kcfg.alloc_nofragment || !self.grouping {
            return flags;
        }
        let Some(&zid) = self.zonelists[ac.zonelist].first() else {
            return flags;
        };
        let z = &self.zones[zid];
        if z.zone_type != ZoneType::Normal {
            return flags;
        }
        let dma32 = self.nodes[z.nid].zones[ZoneType::Dma32 as usize];
        if self.zones[dma32].populated() {
            flags |= ALLOC_NOFRAGMENT;
        }
        flags
    }

    /// Walks the zonelist and allocates from the first zone whose watermark allows (get_page_from_freelist).
    pub fn get_page_from_freelist(
        &mut self,
        order: usize,
        mut alloc_flags: u32,
        ac: &AllocContext,
    ) -> Option<Pfn> {
        'retry: loop {
            let no_fallback = alloc_flags & ALLOC_NOFRAGMENT != 0;
            let n = self.zonelists[ac.zonelist].len();
            let preferred = self.zonelists[ac.zonelist][0];
            for i in 0..n {
                let zid = self.zonelists[ac.zonelist][i];
                if no_fallback
                    && self.nodes.len() > 1
                    && self.zones[zid].nid != self.zones[preferred].nid
                {
                    // Locality matters more than fragmentation avoidance.
                    alloc_flags &= !ALLOC_NOFRAGMENT;
                    continue 'retry;
                }
                let mark = self.zones[zid].wmark_pages(match alloc_flags & ALLOC_WMARK_MASK {
                    ALLOC_WMARK_MIN => Wmark::Min,
                    ALLOC_WMARK_LOW => Wmark::Low,
                    _ => Wmark::High,
                });
                if alloc_flags & ALLOC_NO_WATERMARKS == 0
                    && !self.zone_watermark_fast(zid, order, mark, ac.highest_zoneidx, alloc_flags)
                {
                    continue;
                }
                if let Some(p) = self.rmqueue(zid, ac.cpu, order, alloc_flags, ac.migratetype) {
                    self.prep_new_page(p, order, ac.mobility);
                    self.count_alloc(zid, preferred, ac.cpu, order);
                    if alloc_flags & ALLOC_HIGHATOMIC != 0
                        && self.kcfg.highatomic_reserve
                        && self.grouping
                    {
                        self.reserve_highatomic_pageblock(p, order, zid);
                    }
                    return Some(p);
                }
            }
            if no_fallback {
                alloc_flags &= !ALLOC_NOFRAGMENT;
                continue 'retry;
            }
            return None;
        }
    }

    /// pgalloc_<zone> and the NUMA counters (zone_statistics).
    #[inline(always)]
    pub(crate) fn count_alloc(&mut self, zid: usize, preferred: usize, cpu: usize, order: usize) {
        let zt = self.zones[zid].zone_type;
        let ev = match zt {
            ZoneType::Dma => Event::PGALLOC_DMA,
            ZoneType::Dma32 => Event::PGALLOC_DMA32,
            ZoneType::Normal => Event::PGALLOC_NORMAL,
        };
        self.events[ev as usize] += 1 << order;
        let nid = self.zones[zid].nid;
        if nid == self.zones[preferred].nid {
            self.numa[NumaStat::NUMA_HIT as usize] += 1;
        } else {
            self.numa[NumaStat::NUMA_MISS as usize] += 1;
            self.numa[NumaStat::NUMA_FOREIGN as usize] += 1;
        }
        if nid == self.cpu_to_node[cpu] {
            self.numa[NumaStat::NUMA_LOCAL as usize] += 1;
        } else {
            self.numa[NumaStat::NUMA_OTHER as usize] += 1;
        }
    }

    /// Marks a block allocated (prep_new_page): its head records order and mobility.
    #[inline(always)]
    fn prep_new_page(&mut self, pfn: Pfn, order: usize, mt: MigrateType) {
        // The frame comes off a free list (buddy or per-CPU): it is no allocated head yet.
        debug_assert!(!self.map[pfn as usize].test(pg::HEAD));
        let p = &mut self.map[pfn as usize];
        p.flags = pg::HEAD;
        p.ok = order as u8;
        p.mt = mt as u8;
        p.owner = NO_OWNER;
        p.next = pfn32(NIL);
        p.prev = pfn32(NIL);
        self.pb_account(pfn);
        self.frag.alloc_success[order] += 1;
    }

    /// Turns a pageblock into a MIGRATE_HIGHATOMIC reserve after a high-order atomic allocation (reserve_highatomic_pageblock).
    fn reserve_highatomic_pageblock(&mut self, pfn: Pfn, order: usize, zid: usize) {
        let z = &self.zones[zid];
        if z.managed_pages / 100 < PAGEBLOCK_NR_PAGES {
            return;
        }
        let max_managed = (z.managed_pages / 100).div_ceil(PAGEBLOCK_NR_PAGES) * PAGEBLOCK_NR_PAGES;
        if z.nr_reserved_highatomic >= max_managed {
            return;
        }
        let mt = self.get_pageblock_migratetype(pfn);
        if !mt.is_mergeable() {
            return;
        }
        self.with_zone_lock(zid, |mm| {
            if order < PAGEBLOCK_ORDER {
                if let Some((start, _, _)) = mm.prep_move_freepages_block(zid, pfn) {
                    mm.__move_freepages_block(zid, start, mt, MigrateType::HighAtomic);
                    mm.set_pageblock_migratetype(start, MigrateType::HighAtomic);
                    mm.zones[zid].nr_reserved_highatomic += PAGEBLOCK_NR_PAGES;
                }
            } else {
                mm.change_pageblock_range(pfn, order, MigrateType::HighAtomic);
                mm.zones[zid].nr_reserved_highatomic += 1 << order;
            }
        });
    }

    /// Gives a MIGRATE_HIGHATOMIC pageblock back to the requested type (unreserve_highatomic_pageblock).
    pub fn unreserve_highatomic_pageblock(&mut self, ac: &AllocContext, force: bool) -> bool {
        for i in 0..self.zonelists[ac.zonelist].len() {
            let zid = self.zonelists[ac.zonelist][i];
            if !force && self.zones[zid].nr_reserved_highatomic <= PAGEBLOCK_NR_PAGES {
                continue;
            }
            for order in 0..NR_PAGE_ORDERS {
                let head = self.zones[zid].free_area[order].free_list
                    [MigrateType::HighAtomic as usize]
                    .head;
                if head == NIL {
                    continue;
                }
                let done = self.with_zone_lock(zid, |mm| {
                    let mt = mm.get_pageblock_migratetype(head);
                    let size = PAGEBLOCK_NR_PAGES.max(1 << order);
                    if mt == MigrateType::HighAtomic {
                        let z = &mut mm.zones[zid];
                        z.nr_reserved_highatomic -= size.min(z.nr_reserved_highatomic);
                    }
                    if order < PAGEBLOCK_ORDER {
                        let (start, _, _) = match mm.prep_move_freepages_block(zid, head) {
                            Some(x) => x,
                            None => return false,
                        };
                        mm.__move_freepages_block(zid, start, mt, ac.migratetype);
                        mm.set_pageblock_migratetype(start, ac.migratetype);
                    } else {
                        mm.move_to_free_list(zid, head, order, mt, ac.migratetype);
                        mm.change_pageblock_range(head, order, ac.migratetype);
                    }
                    true
                });
                if done {
                    return true;
                }
            }
        }
        false
    }

    /// Whether the free block at `buddy` is the buddy of order `order` (find_buddy_page_pfn).
    #[inline(always)]
    fn is_free_buddy(&self, zid: usize, buddy: Pfn, order: usize) -> bool {
        let Some(b) = self.map.get(buddy as usize) else {
            return false;
        };
        b.test(pg::BUDDY) && b.order() == order && self.zones[zid].spans(buddy)
    }

    /// Frees a block into the buddy lists, merging with free buddies (__free_one_page).
    pub fn __free_one_page(
        &mut self,
        zid: usize,
        mut pfn: Pfn,
        mut order: usize,
        mt: MigrateType,
        to_tail_forced: bool,
    ) {
        self.account_freepages(zid, 1i64 << order, mt);
        let mut buddy_pfn = pfn;
        while order < MAX_PAGE_ORDER {
            buddy_pfn = pfn ^ (1 << order);
            if !self.is_free_buddy(zid, buddy_pfn, order) {
                break;
            }
            let buddy_mt = MigrateType::from_u8(self.map[buddy_pfn as usize].mt);
            if order >= PAGEBLOCK_ORDER
                && buddy_mt != mt
                && (!mt.is_mergeable() || !buddy_mt.is_mergeable())
            {
                break;
            }
            self.del_page_from_free_list(zid, buddy_pfn, order, buddy_mt);
            if buddy_mt != mt {
                // Match the buddy's type so a later expand() uses the right lists.
                self.account_freepages(zid, -(1i64 << order), buddy_mt);
                self.account_freepages(zid, 1i64 << order, mt);
                self.change_pageblock_range(buddy_pfn, order.max(PAGEBLOCK_ORDER), mt);
            }
            self.cur.acc += self.cost.buddy_split;
            pfn &= buddy_pfn;
            order += 1;
        }
        let to_tail = if to_tail_forced {
            true
        } else if order >= super::shuffle::SHUFFLE_ORDER && self.shuffle.is_some() {
            self.shuffle_pick_tail()
        } else {
            self.buddy_merge_likely(zid, pfn, buddy_pfn, order)
        };
        self.add_to_free_list(zid, pfn, order, mt, to_tail);
    }

    /// Whether the next-higher buddy is free, so this block should wait at the tail (buddy_merge_likely).
    #[inline(always)]
    fn buddy_merge_likely(&self, zid: usize, pfn: Pfn, buddy_pfn: Pfn, order: usize) -> bool {
        if order >= MAX_PAGE_ORDER - 1 {
            return false;
        }
        let higher = buddy_pfn & pfn;
        self.is_free_buddy(zid, higher ^ (1 << (order + 1)), order + 1)
    }

    /// Frees a block under zone->lock (free_one_page).
    fn free_one_page(&mut self, zid: usize, pfn: Pfn, order: usize, mt: MigrateType) {
        self.with_zone_lock(zid, |mm| {
            mm.cur.acc += mm.cost.buddy_free;
            mm.__free_one_page(zid, pfn, order, mt, false);
        });
    }

    /// Returns `count` pages of a per-CPU list set to the buddy lists, coldest first (free_pcppages_bulk).
    fn free_pcppages_bulk(&mut self, zid: usize, cpu: usize, mut count: u32, pindex: usize) {
        let idx = zid * self.nr_cpus + cpu;
        self.with_zone_lock(zid, |mm| {
            let mut pindex = pindex + MIGRATE_PCPTYPES - 1;
            while count > 0 && mm.pcp[idx].count() > 0 {
                loop {
                    pindex = (pindex + 1) % MIGRATE_PCPTYPES;
                    if !mm.pcp[idx].lists[pindex].is_empty() {
                        break;
                    }
                }
                while count > 0 {
                    let tail = mm.pcp[idx].lists[pindex].tail;
                    if tail == NIL {
                        break;
                    }
                    mm.pcp[idx].lists[pindex].remove(&mut mm.map, tail);
                    mm.pcp[idx].counts[pindex] -= 1;
                    count -= 1;
                    mm.pb_unaccount(tail);
                    mm.map[tail as usize].flags = 0;
                    let mt = mm.get_pageblock_migratetype(tail);
                    if mm.kmem_trace {
                        mm.trace_pcpu_drain(tail, mt);
                    }
                    mm.cur.acc += mm.cost.buddy_free;
                    mm.__free_one_page(zid, tail, 0, mt, false);
                }
            }
        });
    }

    /// Frees an order-0 page onto this CPU's list, draining a batch when it is full (free_unref_page).
    #[inline]
    fn free_unref_page(&mut self, zid: usize, pfn: Pfn, cpu: usize) {
        let mut mt = self.get_pageblock_migratetype(pfn);
        if mt as usize >= MIGRATE_PCPTYPES {
            if mt == MigrateType::Isolate {
                self.free_one_page(zid, pfn, 0, mt);
                return;
            }
            mt = MigrateType::Movable;
        }
        let idx = zid * self.nr_cpus + cpu;
        self.pb_unaccount(pfn);
        {
            let p = &mut self.map[pfn as usize];
            p.flags = pg::PCP;
            p.mt = mt as u8;
            p.ok = 0;
            p.owner = NO_OWNER;
        }
        let pcp = &mut self.pcp[idx];
        pcp.lists[mt as usize].push_front(&mut self.map, pfn);
        pcp.counts[mt as usize] += 1;
        self.cur.acc += self.cost.pcp_free;
        let pcp = &self.pcp[idx];
        let held = if self.kcfg.pcp_high_per_list {
            pcp.counts[mt as usize]
        } else {
            pcp.count()
        };
        if held >= pcp.high {
            let batch = pcp
                .batch
                .clamp(1, pcp.high.saturating_sub(pcp.batch).max(1));
            self.free_pcppages_bulk(zid, cpu, batch, mt as usize);
        }
    }

    /// Frees a block of `order` allocated by [`Mm::alloc_pages_fast`] or the slow path (__free_pages).
    #[inline]
    pub fn free_pages(&mut self, pfn: Pfn, order: usize, cpu: usize) {
        debug_assert!(
            self.map[pfn as usize].test(pg::HEAD),
            "freeing pfn {pfn} that is not allocated"
        );
        debug_assert_eq!(self.map[pfn as usize].order(), order);
        if self.kmem_trace {
            self.trace_page_free(pfn, order);
        }
        self.events[Event::PGFREE as usize] += 1 << order;
        let zid = self.page_zone(pfn);
        if order == 0 {
            self.free_unref_page(zid, pfn, cpu);
        } else {
            self.pb_unaccount(pfn);
            self.map[pfn as usize].flags = 0;
            let mt = self.get_pageblock_migratetype(pfn);
            self.free_one_page(zid, pfn, order, mt);
        }
    }

    /// Returns every per-CPU page of every zone to the buddy lists (drain_all_pages).
    pub fn drain_all_pages(&mut self) {
        for zid in 0..self.zones.len() {
            for cpu in 0..self.nr_cpus {
                let count = self.pcp[zid * self.nr_cpus + cpu].count();
                if count > 0 {
                    self.free_pcppages_bulk(zid, cpu, count, 0);
                }
            }
        }
    }

    /// The allocator's first attempt at the low watermark (the fast path of __alloc_pages).
    #[inline]
    pub fn alloc_pages_fast(
        &mut self,
        gfp: Gfp,
        order: usize,
        nid: usize,
        cpu: usize,
    ) -> (Option<Pfn>, AllocContext) {
        let ac = self.prepare_alloc_pages(gfp, nid, cpu);
        let alloc_flags = ALLOC_WMARK_LOW | self.alloc_flags_nofragment(&ac, gfp);
        (self.get_page_from_freelist(order, alloc_flags, &ac), ac)
    }

    /// Total free pages in the buddy lists of every zone.
    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.free_pages() as u64).sum()
    }

    /// Pages on per-CPU lists of every zone and CPU.
    pub fn nr_pcp_pages(&self) -> u64 {
        self.pcp.iter().map(|p| p.count() as u64).sum()
    }

    /// Checks every free-list invariant; returns the first violation found.
    ///
    /// Every frame is in exactly one state; list contents match the counts;
    /// no two free buddies of the same order are left unmerged; pages are
    /// conserved. This is the `expensive-checks` VM_BUG_ON.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_pageblock_stat()?;
        self.check_deferred()?;
        let n = self.map.len();
        let mut seen = vec![false; n];
        let mut free_total = 0u64;
        for z in &self.zones {
            let mut zone_free = 0i64;
            let mut zone_free_blocks = 0i64;
            let mut free_mt = [0u64; MIGRATE_TYPES];
            for (order, area) in z.free_area.iter().enumerate() {
                let mut nr = 0;
                for mt in MigrateType::ALL {
                    let list: &ListHead = &area.free_list[mt as usize];
                    let mut cnt = 0;
                    let mut prev = NIL;
                    for p in list.iter(&self.map) {
                        let page = &self.map[p as usize];
                        if page.prev() != prev {
                            return Err(format!("pfn {p}: broken prev link"));
                        }
                        prev = p;
                        if !page.test(pg::BUDDY) || page.order() != order || page.mt != mt as u8 {
                            return Err(format!("pfn {p} on free list order {order} {mt:?} has flags {:#x} order {} mt {}", page.flags, page.order(), page.mt));
                        }
                        if p & ((1 << order) - 1) != 0 {
                            return Err(format!("pfn {p} misaligned for order {order}"));
                        }
                        if !z.spans(p) || !z.spans(p + (1 << order) - 1) {
                            return Err(format!(
                                "free block {p} order {order} outside zone {}",
                                z.zone_type.name()
                            ));
                        }
                        for q in p..p + (1 << order) {
                            if seen[q as usize] {
                                return Err(format!("pfn {q} is in two free blocks"));
                            }
                            seen[q as usize] = true;
                        }
                        if order < MAX_PAGE_ORDER {
                            let b = p ^ (1 << order);
                            if self.is_free_buddy(z.id, b, order) {
                                let bmt = MigrateType::from_u8(self.map[b as usize].mt);
                                let blocked = order >= PAGEBLOCK_ORDER
                                    && bmt != mt
                                    && (!mt.is_mergeable() || !bmt.is_mergeable());
                                if !blocked {
                                    return Err(format!(
                                        "free buddies {p} and {b} of order {order} left unmerged"
                                    ));
                                }
                            }
                        }
                        if order >= PAGEBLOCK_ORDER && mt != MigrateType::Isolate {
                            zone_free_blocks += 1 << order;
                        }
                        if mt != MigrateType::Isolate {
                            zone_free += 1 << order;
                        }
                        free_mt[mt as usize] += 1 << order;
                        cnt += 1;
                    }
                    if self.deferred.holds(z.id, order, mt) {
                        // The blocks whose frames are not written yet hold their place
                        // in this list ([`Mm::check_deferred`] checks their frames).
                        for p in self.deferred.blocks(z.id) {
                            if !z.spans(p) || p & ((1 << order) - 1) != 0 {
                                return Err(format!("deferred block {p} misplaced"));
                            }
                            for q in p..p + (1 << order) {
                                if seen[q as usize] {
                                    return Err(format!("pfn {q} is in two free blocks"));
                                }
                                seen[q as usize] = true;
                            }
                            if mt != MigrateType::Isolate {
                                zone_free_blocks += 1 << order;
                                zone_free += 1 << order;
                            }
                            free_mt[mt as usize] += 1 << order;
                            cnt += 1;
                        }
                    }
                    if cnt != area.nr_free_mt[mt as usize] {
                        return Err(format!(
                            "zone {} order {order} {mt:?}: list has {cnt} blocks, count says {}",
                            z.zone_type.name(),
                            area.nr_free_mt[mt as usize]
                        ));
                    }
                    nr += cnt;
                }
                if nr != area.nr_free {
                    return Err(format!(
                        "zone {} order {order}: nr_free {} but {nr} blocks",
                        z.zone_type.name(),
                        area.nr_free
                    ));
                }
            }
            if zone_free != z.free_pages() {
                return Err(format!(
                    "zone {}: NR_FREE_PAGES {} but lists hold {zone_free}",
                    z.zone_type.name(),
                    z.free_pages()
                ));
            }
            if zone_free_blocks != z.vm_stat[ZoneStat::NR_FREE_PAGES_BLOCKS as usize] {
                return Err(format!(
                    "zone {}: NR_FREE_PAGES_BLOCKS mismatch",
                    z.zone_type.name()
                ));
            }
            if free_mt != z.nr_free_mt {
                return Err(format!(
                    "zone {}: per-migratetype free counts mismatch",
                    z.zone_type.name()
                ));
            }
            free_total += zone_free as u64;
        }
        let mut pcp_total = 0u64;
        for (i, pcp) in self.pcp.iter().enumerate() {
            let mut cnt = 0u32;
            for (li, l) in pcp.lists.iter().enumerate() {
                let before = cnt;
                for p in l.iter(&self.map) {
                    let page = &self.map[p as usize];
                    if !page.test(pg::PCP) || seen[p as usize] {
                        return Err(format!(
                            "pfn {p} on pcp list {i} has flags {:#x}",
                            page.flags
                        ));
                    }
                    if self.page_zone(p) != i / self.nr_cpus {
                        return Err(format!("pfn {p} on the pcp list of another zone"));
                    }
                    seen[p as usize] = true;
                    cnt += 1;
                }
                if cnt - before != pcp.counts[li] {
                    return Err(format!(
                        "pcp {i}: list {li} count {} but the list holds {}",
                        pcp.counts[li],
                        cnt - before
                    ));
                }
            }
            if cnt != pcp.count() {
                return Err(format!(
                    "pcp {i}: count {} but lists hold {cnt}",
                    pcp.count()
                ));
            }
            pcp_total += cnt as u64;
        }
        // Every remaining frame is allocated (head or inside an allocated block) or reserved.
        let mut p = 0usize;
        let mut allocated = 0u64;
        let mut reserved = 0u64;
        while p < n {
            if seen[p] {
                p += 1;
                continue;
            }
            let page = &self.frame(p as Pfn);
            if page.test(pg::RESERVED) {
                reserved += 1;
                p += 1;
            } else if page.test(pg::HEAD) {
                let end = p + (1 << page.order());
                if (p & ((1 << page.order()) - 1)) != 0
                    || end > n
                    || seen[p..end].iter().any(|&s| s)
                {
                    return Err(format!(
                        "allocated block {p} order {} overlaps free memory",
                        page.order()
                    ));
                }
                allocated += 1 << page.order();
                p = end;
            } else {
                return Err(format!("pfn {p} is in no state (flags {:#x})", page.flags));
            }
        }
        let managed: u64 = self.zones.iter().map(|z| z.managed_pages).sum();
        if free_total + pcp_total + allocated != managed || managed + reserved != n as u64 {
            return Err(format!(
                "pages not conserved: free {free_total} + pcp {pcp_total} + allocated {allocated} != managed {managed} (reserved {reserved}, frames {n})"
            ));
        }
        Ok(())
    }
}

/// Retries of reclaim without progress before the OOM killer (MAX_RECLAIM_RETRIES).
pub use super::vmscan::MAX_RECLAIM_RETRIES;

/// The slow-path allocation flags of a gfp mask (gfp_to_alloc_flags).
pub fn gfp_to_alloc_flags(gfp: Gfp, order: usize) -> u32 {
    use super::gfp::{__GFP_DIRECT_RECLAIM, __GFP_HIGH, __GFP_KSWAPD_RECLAIM, __GFP_NOMEMALLOC};
    let mut flags = ALLOC_WMARK_MIN | ALLOC_CPUSET;
    if gfp.has(__GFP_HIGH) {
        flags |= ALLOC_MIN_RESERVE;
    }
    if gfp.has(__GFP_KSWAPD_RECLAIM) {
        flags |= ALLOC_KSWAPD;
    }
    if !gfp.has(__GFP_DIRECT_RECLAIM) {
        if !gfp.has(__GFP_NOMEMALLOC) {
            flags |= ALLOC_NON_BLOCK;
            if order > 0 {
                flags |= ALLOC_HIGHATOMIC;
            }
        }
        if flags & ALLOC_MIN_RESERVE != 0 {
            flags &= !ALLOC_CPUSET;
        }
    }
    flags
}

use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

impl Kernel {
    /// Allocates 2^order pages for task `tid` on its CPU's node (__alloc_pages).
    #[inline]
    pub fn alloc_pages(&mut self, gfp: Gfp, order: usize, tid: TaskId) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        let nid = self.mm.cpu_to_node[cpu];
        self.alloc_pages_node(gfp, order, nid, tid)
    }

    /// Allocates 2^order pages for task `tid` preferring node `nid`, only from it with
    /// __GFP_THISNODE (__alloc_pages with a preferred node, alloc_pages_node).
    pub fn alloc_pages_node(
        &mut self,
        gfp: Gfp,
        order: usize,
        nid: usize,
        tid: TaskId,
    ) -> AllocResult {
        if self.layout_pools > 0 {
            if let Some(r) = self.alloc_from_layout_pool(gfp, order, tid) {
                return r;
            }
        }
        let cpu = self.tasks[tid as usize].cpu;
        let (page, ac) = if self.tasks[tid as usize].reclaim.is_some()
            && gfp.has(super::gfp::__GFP_DIRECT_RECLAIM)
        {
            // Still inside try_to_free_pages (it slept in a nap): reclaim goes on first.
            (None, self.mm.prepare_alloc_pages(gfp, nid, cpu))
        } else {
            self.mm.alloc_pages_fast(gfp, order, nid, cpu)
        };
        let r = match page {
            Some(p) => {
                self.wakeup_kswapd_for_boost(p);
                AllocResult::Page(p)
            }
            None => {
                let (t0, s0) = (self.mm.cur.acc, self.mm.cur.sleep);
                let r = self.__alloc_pages_slowpath(gfp, order, &ac, tid);
                let task = &mut self.tasks[tid as usize];
                let stats = &mut task.stats;
                stats.alloc_slowpath += 1;
                // Stall: CPU time in the slow path plus time throttled or waiting for I/O.
                stats.alloc_stall_ns += (self.mm.cur.acc - t0) + (self.mm.cur.sleep - s0);
                match r {
                    AllocResult::Page(p) => {
                        task.no_progress_loops = 0;
                        task.highorder_passes = 0;
                        self.wakeup_kswapd_for_boost(p);
                    }
                    AllocResult::Retry => {}
                    AllocResult::Failed | AllocResult::Killed => {
                        task.no_progress_loops = 0;
                        task.highorder_passes = 0;
                        stats.alloc_failed += 1;
                        self.mm.frag.alloc_fail[order] += 1;
                    }
                }
                r
            }
        };
        // The request's outcome, a page or none (a throttled retry is not an outcome yet).
        if r != AllocResult::Retry && self.mm.kmem_trace_enabled(TraceEventId::MmPageAlloc) {
            let pfn = match r {
                AllocResult::Page(p) => p,
                _ => crate::trace::PFN_NONE,
            };
            self.trace(TraceEvent::MmPageAlloc {
                pfn,
                order: order as u32,
                gfp_flags: gfp.0,
                migratetype: ac.migratetype as i32,
            });
        }
        r
    }

    /// V19's 005_largealloc_tryharder (__alloc_pages): an order >= MAX_ORDER/2 request that direct
    /// reclaim did not satisfy rebalances until `--highorder_retry` reaches 0, after a
    /// blk_congestion_wait(WRITE, HZ/50) nap when reclaim made progress.
    fn highorder_retry(&mut self, gfp: Gfp, order: usize, progress: bool, tid: TaskId) -> bool {
        use super::gfp::__GFP_NORETRY;
        const HIGHORDER_MIN: usize = 5; // MAX_ORDER / 2 on i386, MAX_ORDER = 11
        if order < HIGHORDER_MIN || gfp.has(__GFP_NORETRY) || self.mm.cur.atomic {
            return false;
        }
        let task = &mut self.tasks[tid as usize];
        task.highorder_passes += 1;
        if (task.highorder_passes as u64) < self.mm.kcfg.highorder_retry {
            if progress {
                self.congestion_wait(self.mm.kcfg.hz / 50);
            }
            return true;
        }
        false
    }

    /// Whether another round of reclaim might let this allocation succeed (should_reclaim_retry).
    fn should_reclaim_retry(
        &mut self,
        order: usize,
        ac: &AllocContext,
        alloc_flags: u32,
        did_some_progress: bool,
        no_progress_loops: &mut u32,
    ) -> bool {
        if did_some_progress && order <= PAGE_ALLOC_COSTLY_ORDER {
            *no_progress_loops = 0;
        } else {
            *no_progress_loops += 1;
        }
        if *no_progress_loops <= MAX_RECLAIM_RETRIES {
            for i in 0..self.mm.zonelists[ac.zonelist].len() {
                let zid = self.mm.zonelists[ac.zonelist][i];
                let available =
                    self.mm.zones[zid].free_pages() + self.zone_reclaimable_pages(zid) as i64;
                let min = self.mm.zones[zid].wmark_pages(Wmark::Min);
                if self.mm.__zone_watermark_ok(
                    zid,
                    order,
                    min,
                    ac.highest_zoneidx,
                    alloc_flags,
                    available,
                ) {
                    return true;
                }
            }
        }
        // Before OOM, exhaust the highatomic reserve.
        self.mm.unreserve_highatomic_pageblock(ac, true)
    }

    /// Direct reclaim then one more try, draining the per-CPU lists if that fails (__alloc_pages_direct_reclaim).
    fn __alloc_pages_direct_reclaim(
        &mut self,
        gfp: Gfp,
        order: usize,
        alloc_flags: u32,
        ac: &AllocContext,
        tid: TaskId,
    ) -> (Option<Pfn>, Option<bool>) {
        let Some(nr) = self.try_to_free_pages_gated(gfp, order, tid, ac) else {
            return (None, None);
        };
        let progress = nr > 0;
        if !progress {
            return (None, Some(false));
        }
        if let Some(p) = self.mm.get_page_from_freelist(order, alloc_flags, ac) {
            return (Some(p), Some(true));
        }
        self.mm.unreserve_highatomic_pageblock(ac, false);
        if !self.mm.kcfg.drain_pcp_on_failure {
            return (None, Some(true));
        }
        self.mm.drain_all_pages();
        (
            self.mm.get_page_from_freelist(order, alloc_flags, ac),
            Some(true),
        )
    }

    /// The OOM killer's last try at the high watermark, then a kill (__alloc_pages_may_oom).
    fn __alloc_pages_may_oom(
        &mut self,
        gfp: Gfp,
        order: usize,
        ac: &AllocContext,
        tid: TaskId,
    ) -> (AllocResult, bool) {
        use super::gfp::{__GFP_RETRY_MAYFAIL, __GFP_THISNODE};
        if let Some(p) = self
            .mm
            .get_page_from_freelist(order, ALLOC_WMARK_HIGH | ALLOC_CPUSET, ac)
        {
            return (AllocResult::Page(p), false);
        }
        if order > PAGE_ALLOC_COSTLY_ORDER
            || gfp.has(__GFP_RETRY_MAYFAIL)
            || gfp.has(__GFP_THISNODE)
            || ac.highest_zoneidx < ZoneType::Normal
            || !self.mm.kcfg.oom_killer
        {
            return (AllocResult::Failed, false);
        }
        let now = self.mm.clock();
        match self.out_of_memory(now) {
            Some(v) if v == tid => (AllocResult::Killed, true),
            Some(_) => (AllocResult::Failed, true),
            None => (AllocResult::Failed, false),
        }
    }

    /// The allocator's slow path (__alloc_pages_slowpath).
    ///
    /// The places where the mechanisms plug in, in the kernel's order:
    /// wake_all_kswapds(), the first direct compaction for costly orders
    /// ([`crate::mm::compaction`]), direct reclaim (try_to_free_pages),
    /// the retry policy (should_reclaim_retry), then the OOM killer for
    /// orders <= 3.
    pub fn __alloc_pages_slowpath(
        &mut self,
        gfp: Gfp,
        order: usize,
        ac: &AllocContext,
        tid: TaskId,
    ) -> AllocResult {
        use super::gfp::{__GFP_DIRECT_RECLAIM, __GFP_NORETRY, __GFP_RETRY_MAYFAIL};
        self.mm.cur.acc += self.mm.cost.slowpath;
        let can_direct_reclaim = gfp.has(__GFP_DIRECT_RECLAIM);
        let costly_order = order > PAGE_ALLOC_COSTLY_ORDER;
        let alloc_flags = gfp_to_alloc_flags(gfp, order);
        // Carried across throttled retries (the kernel keeps it on the stack while it sleeps).
        let mut no_progress_loops = self.tasks[tid as usize].no_progress_loops;
        // A simulator safeguard, not a kernel rule: give up rather than spin forever.
        let mut passes = 0u32;
        let mut compact_priority = super::compaction::INIT_COMPACT_PRIORITY;
        let mut compaction_retries = 0u32;

        // A task that slept inside try_to_free_pages resumes it before anything else.
        let mut resuming = self.tasks[tid as usize].reclaim.is_some() && can_direct_reclaim;
        if alloc_flags & ALLOC_KSWAPD != 0 && !resuming {
            self.wake_all_kswapds(order, gfp, ac);
        }
        if !resuming {
            if let Some(p) = self.mm.get_page_from_freelist(order, alloc_flags, ac) {
                return AllocResult::Page(p);
            }
        }
        // Costly orders, and unmovable high orders, try direct compaction before reclaim.
        if can_direct_reclaim
            && self.mm.kcfg.compaction
            && (costly_order || (order > 0 && ac.migratetype != MigrateType::Movable))
        {
            let (page, rc) = self.__alloc_pages_direct_compact(
                gfp,
                order,
                alloc_flags,
                ac,
                super::compaction::INIT_COMPACT_PRIORITY,
                tid,
            );
            if let Some(p) = page {
                return AllocResult::Page(p);
            }
            if costly_order
                && gfp.has(__GFP_NORETRY)
                && matches!(
                    rc,
                    super::compaction::CompactResult::Skipped
                        | super::compaction::CompactResult::Deferred
                )
            {
                return AllocResult::Failed;
            }
        }
        loop {
            passes += 1;
            if passes > 1000 {
                return AllocResult::Failed;
            }
            if !std::mem::take(&mut resuming) {
                self.mm.cur.acc += self.mm.cost.slowpath;
                if alloc_flags & ALLOC_KSWAPD != 0 {
                    self.wake_all_kswapds(order, gfp, ac);
                }
                if let Some(p) = self.mm.get_page_from_freelist(order, alloc_flags, ac) {
                    return AllocResult::Page(p);
                }
            }
            if !can_direct_reclaim {
                return AllocResult::Failed;
            }
            let (page, progress) =
                self.__alloc_pages_direct_reclaim(gfp, order, alloc_flags, ac, tid);
            if let Some(p) = page {
                return AllocResult::Page(p);
            }
            let Some(progress) = progress else {
                // Waiting at the direct-reclaimer limit: sleep, then retry the allocation.
                self.tasks[tid as usize].no_progress_loops = no_progress_loops;
                return AllocResult::Retry;
            };
            // Compaction after reclaim (__alloc_pages_direct_compact).
            let (page, rc) = self.__alloc_pages_direct_compact(
                gfp,
                order,
                alloc_flags,
                ac,
                compact_priority,
                tid,
            );
            if let Some(p) = page {
                return AllocResult::Page(p);
            }
            let compact_result = rc;
            if self.highorder_retry(gfp, order, progress, tid) {
                return AllocResult::Retry;
            }
            if gfp.has(__GFP_NORETRY) || (costly_order && !gfp.has(__GFP_RETRY_MAYFAIL)) {
                return AllocResult::Failed;
            }
            if self.mm.kcfg.alloc_retry == crate::config::AllocRetry::ShouldAllocRetry {
                // 2.6.35's should_alloc_retry(): orders <= 3 retry while reclaim makes
                // progress, after congestion_wait(BLK_RW_ASYNC, HZ/50) in the kernels of
                // that era; without progress the OOM killer is next.
                if progress && !self.mm.cur.atomic {
                    self.tasks[tid as usize].no_progress_loops = 0;
                    if self.mm.kcfg.reclaim_congestion_wait {
                        self.congestion_wait(self.mm.kcfg.hz / 50);
                    }
                    return AllocResult::Retry;
                }
            } else if self.should_reclaim_retry(
                order,
                ac,
                alloc_flags,
                progress,
                &mut no_progress_loops,
            ) {
                if !progress && self.consider_reclaim_throttle(ac) {
                    // Throttled for lack of progress: sleep, then retry the allocation.
                    self.tasks[tid as usize].no_progress_loops = no_progress_loops;
                    return AllocResult::Retry;
                }
                continue;
            } else if progress
                && self.mm.kcfg.compaction
                && self.should_compact_retry(
                    ac,
                    order,
                    compact_result,
                    &mut compact_priority,
                    &mut compaction_retries,
                )
            {
                continue;
            }
            match self.__alloc_pages_may_oom(gfp, order, ac, tid) {
                (AllocResult::Page(p), _) => return AllocResult::Page(p),
                (AllocResult::Killed, _) => return AllocResult::Killed,
                (_, true) => {
                    no_progress_loops = 0;
                    continue;
                }
                (_, false) => return AllocResult::Failed,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gfp::*;
    use super::*;
    use crate::config::Scenario;

    /// A 2-CPU machine of `mem` booted with the `[kernel]` lines `kernel`.
    fn mm_kernel(mem: &str, kernel: &str) -> Mm {
        let sc = Scenario::from_toml(&format!(
            "[machine]\nmemory=\"{mem}\"\ncpus=2\n[kernel]\n{kernel}\n"
        ))
        .unwrap();
        Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
    }

    fn mm(mem: &str, grouping: bool) -> Mm {
        mm_kernel(mem, &format!("mobility_grouping={grouping}"))
    }

    #[test]
    fn boot_state_is_consistent() {
        let m = mm("1GiB", true);
        m.check_invariants().unwrap();
        // All free memory starts in MOVABLE pageblocks, mostly as order-10 blocks.
        let dma32 = &m.zones[1];
        assert_eq!(dma32.zone_type, ZoneType::Dma32);
        assert!(dma32.free_area[MAX_PAGE_ORDER].nr_free_mt[MigrateType::Movable as usize] > 200);
        assert_eq!(dma32.nr_free_mt[MigrateType::Unmovable as usize], 0);
        // 1 GiB lies wholly below 4 GiB: Normal is empty.
        assert!(!m.zones[2].populated());
    }

    #[test]
    fn thp_raises_min_free_kbytes_as_khugepaged_does() {
        // This machine (24 GiB, THP madvise, Linux 6.18): /proc/sys/vm/min_free_kbytes 67584.
        for mem in ["24GiB", "8GiB"] {
            assert_eq!(
                mm_kernel(mem, "thp_enabled = \"madvise\"").min_free_kbytes,
                67584
            );
        }
        // Two zones below 4 GiB: (2 + 3 * 3) pageblocks per zone.
        assert_eq!(mm_kernel("1GiB", "").min_free_kbytes, 45056);
        // Not without THP, nor over the administrator's value.
        let m = mm_kernel("8GiB", "thp_enabled = \"never\"");
        assert_eq!(m.min_free_kbytes, m.calculate_min_free_kbytes());
        assert_eq!(
            mm_kernel("8GiB", "min_free_kbytes = 20000").min_free_kbytes,
            20000
        );
        // At most 5 % of lowmem.
        let small = mm_kernel("128MiB", "");
        let managed: u64 = small.zones.iter().map(|z| z.managed_pages).sum();
        assert!(
            small.min_free_kbytes <= managed * 4 / 20,
            "{}",
            small.min_free_kbytes
        );
    }

    #[test]
    fn watermarks_follow_the_kernel_formula() {
        let m = mm_kernel("8GiB", "thp_enabled = \"never\"");
        let managed: u64 = m.zones.iter().map(|z| z.managed_pages).sum();
        assert_eq!(
            m.min_free_kbytes,
            int_sqrt(managed * 4 * 16).clamp(128, 262144)
        );
        let pages_min = m.min_free_kbytes / 4;
        for z in &m.zones {
            let tmp = pages_min * z.managed_pages / managed;
            let delta = (tmp / 4).max(z.managed_pages * 10 / 10000);
            assert_eq!(
                z.watermark,
                [tmp, tmp + delta, tmp + 2 * delta, tmp + 3 * delta]
            );
        }
        // lowmem_reserve of DMA32 against Normal allocations = Normal managed / 256.
        let normal = m.zones[2].managed_pages;
        assert_eq!(m.zones[1].lowmem_reserve[2], normal / 256);
        assert_eq!(m.zones[0].lowmem_reserve[1], m.zones[1].managed_pages / 256);
    }

    #[test]
    fn batch_matches_zone_batchsize() {
        let m = mm("8GiB", true);
        // ~1M managed pages: min(1020, 256) / 4 = 64 -> rounddown_pow_of_two(96) - 1 = 63.
        assert_eq!(m.pcp[m.nr_cpus].batch, 63);
        // The tiny DMA zone gets batch 1.
        assert_eq!(m.pcp[0].batch, 1);
    }

    #[test]
    fn split_and_merge_restore_state() {
        let mut m = mm("256MiB", true);
        let before = m.nr_free_pages();
        let (p, _) = m.alloc_pages_fast(GFP_KERNEL, 3, 0, 0);
        let p = p.unwrap();
        assert_eq!(p % 8, 0);
        m.check_invariants().unwrap();
        m.free_pages(p, 3, 0);
        m.drain_all_pages();
        m.check_invariants().unwrap();
        assert_eq!(m.nr_free_pages(), before);
    }

    #[test]
    fn unmovable_fallback_claims_a_movable_block() {
        let mut m = mm("256MiB", true);
        let (p, _) = m.alloc_pages_fast(GFP_KERNEL, 0, 0, 0);
        let p = p.unwrap();
        // A whole order-10 MOVABLE block is claimed: its pageblocks become UNMOVABLE.
        assert_eq!(m.get_pageblock_migratetype(p), MigrateType::Unmovable);
        assert_eq!(m.frag.extfrag_events, 1);
        assert_eq!(
            m.frag.extfrag_fragmenting, 0,
            "claiming an order-10 block does not fragment"
        );
        m.check_invariants().unwrap();
    }

    /// DMA32 of a 256 MiB machine with one unmovable block holding free pages and no free
    /// movable page left; then one movable page is taken (a steal). Returns the zone's
    /// boost and whether it was flagged for kswapd.
    fn boost_after_a_movable_steal(kernel: &str) -> (u64, bool) {
        let mut m = mm_with(kernel);
        let zid = 1;
        let mut mode = RmqueueMode::Normal;
        // An unmovable page claims a whole movable block.
        m.__rmqueue(zid, 0, MigrateType::Unmovable, ALLOC_KSWAPD, &mut mode)
            .unwrap();
        for o in (0..NR_PAGE_ORDERS).rev() {
            while m.__rmqueue_smallest(zid, o, MigrateType::Movable).is_some() {}
        }
        // Only chunks below pageblock_order / 2 stay free in it: a movable request may
        // not claim the block, only steal a page.
        for o in (PAGEBLOCK_ORDER / 2..NR_PAGE_ORDERS).rev() {
            while m
                .__rmqueue_smallest(zid, o, MigrateType::Unmovable)
                .is_some()
            {}
        }
        assert_eq!(m.zones[zid].watermark_boost, 0);
        let mut mode = RmqueueMode::Normal;
        let p = m.__rmqueue(zid, 0, MigrateType::Movable, ALLOC_KSWAPD, &mut mode);
        assert!(
            p.is_some(),
            "the movable page comes from the unmovable block"
        );
        assert_eq!(m.frag.extfrag_fragmenting, 1, "{:?}", m.frag);
        (m.zones[zid].watermark_boost, m.zones[zid].boosted_watermark)
    }

    #[test]
    fn a_movable_steal_boosts_only_under_the_5_0_rule() {
        assert_eq!(
            boost_after_a_movable_steal(""),
            (0, false),
            "6.15+: a steal does not boost"
        );
        let (boost, flagged) = boost_after_a_movable_steal("boost_on_steal = true");
        assert_eq!(
            boost, PAGEBLOCK_NR_PAGES,
            "5.0: steal_suitable_fallback boosts by a block"
        );
        assert!(flagged);
        // 6.1 kept 5.0's rule.
        assert_eq!(
            boost_after_a_movable_steal("version = \"6.1\"").0,
            PAGEBLOCK_NR_PAGES
        );
    }

    #[test]
    fn without_grouping_there_is_one_list() {
        let mut m = mm("256MiB", false);
        for gfp in [GFP_KERNEL, GFP_HIGHUSER_MOVABLE, GFP_KERNEL_RECLAIMABLE] {
            m.alloc_pages_fast(gfp, 2, 0, 0).0.unwrap();
        }
        assert_eq!(m.frag.extfrag_events, 0);
        for z in &m.zones {
            assert_eq!(z.nr_free_mt[MigrateType::Movable as usize], 0);
            assert_eq!(z.nr_free_mt[MigrateType::Reclaimable as usize], 0);
        }
        m.check_invariants().unwrap();
    }

    fn mm_with(kernel: &str) -> Mm {
        mm_kernel("256MiB", kernel)
    }

    #[test]
    fn pcp_high_batches_sizes_high_as_setup_pageset_did() {
        let modern = mm_with("");
        let old = mm_with("pcp_high_batches = 8");
        for (a, b) in modern.pcp.iter().zip(&old.pcp) {
            assert_eq!(b.batch, a.batch);
            assert_eq!(b.high, 8 * b.batch);
        }
        let zid = 1;
        assert_eq!(
            modern.pcp[zid * modern.nr_cpus].high,
            modern.zone_highsize(zid, modern.pcp[zid * modern.nr_cpus].batch)
        );
    }

    /// Frees `n` pages of each of the movable and the unmovable pageblocks onto CPU 0's
    /// lists; returns the lists' counts afterwards and pcp->high.
    fn free_onto_pcp(per_list: bool) -> ([u32; MIGRATE_PCPTYPES], u32) {
        let mut m = mm_with(&format!(
            "pcp_high_batches = 4\npcp_high_per_list = {per_list}"
        ));
        let zid = 1;
        let idx = zid * m.nr_cpus;
        let high = m.pcp[idx].high;
        let n = (high - 1) as usize;
        let mut pages = Vec::new();
        for gfp in [GFP_HIGHUSER_MOVABLE, GFP_KERNEL] {
            let want = if gfp == GFP_KERNEL {
                MigrateType::Unmovable
            } else {
                MigrateType::Movable
            };
            let mut got = 0;
            while got < n {
                let p = m.alloc_pages_fast(gfp, 0, 0, 0).0.unwrap();
                assert_eq!(m.page_zone(p), zid);
                if m.get_pageblock_migratetype(p) == want {
                    pages.push(p);
                    got += 1;
                }
            }
        }
        m.drain_all_pages();
        assert_eq!(m.pcp[idx].count(), 0);
        for p in pages {
            m.free_pages(p, 0, 0);
        }
        m.check_invariants().unwrap();
        (m.pcp[idx].counts, high)
    }

    #[test]
    fn pcp_high_per_list_drains_each_list_by_itself() {
        let (counts, high) = free_onto_pcp(true);
        assert_eq!(counts[MigrateType::Movable as usize], high - 1);
        assert_eq!(counts[MigrateType::Unmovable as usize], high - 1);
        assert!(
            counts.iter().sum::<u32>() > high,
            "V19: the lists together may hold more than high"
        );
        let (counts, high) = free_onto_pcp(false);
        assert!(
            counts.iter().sum::<u32>() < high,
            "today: all lists together stay below high"
        );
    }
}
