//! Page reclaim: the LRU scanner, direct reclaim, kswapd and the shrinkers.
//!
//! Models mm/vmscan.c of v6.14+ with the classic two-list LRU (no MGLRU):
//! `struct scan_control`, get_scan_count() with swappiness and the
//! anon/file cost balance, shrink_lruvec() in SWAP_CLUSTER_MAX batches,
//! shrink_active_list() (deactivation; referenced executable file pages
//! excepted), shrink_inactive_list() → isolate_lru_folios() →
//! shrink_folio_list() with folio_check_references(), swap-out of anonymous
//! pages, and the writeback decisions of `reclaim_writeback`; shrink_node(),
//! try_to_free_pages() with its priority loop, wakeup_kswapd() and kswapd's
//! balance_pgdat(); reclaim_throttle() for NOPROGRESS, WRITEBACK, ISOLATED
//! and CONGESTED (`reclaim_throttle = modern`), seed 000's parallel-reclaimer
//! gate (`limit`); too_many_isolated(); the 2.6-era congestion_wait() naps
//! (`reclaim_congestion_wait`), flusher wake-ups for what a pass scanned
//! (`reclaim_flusher_wakeup = scanned`) and all_unreclaimable rule
//! (`alloc_retry = should_alloc_retry`); lumpy reclaim as a switch.
//! The shrinkers are in shrinker.rs, the memcg side (limit reclaim, the
//! hierarchy walk) in memcontrol.rs. MGLRU is not modelled.

use super::gfp::{gfp_zone, Gfp, __GFP_FS, __GFP_IO, GFP_KERNEL};
use super::mmzone::{lru, Wmark, ZoneType, MAX_NR_ZONES};
use super::page::{pg, PageKind, Pfn, NIL};
use super::vmstat::{Event, NodeStat};
use crate::config::{AllocRetry, FlusherWakeup};
use crate::engine::{Program, Step, StepCtx, StepOut, TaskId};
use crate::kernel::Kernel;
use crate::trace::TraceEvent;

/// Pages direct reclaim tries to free per call (SWAP_CLUSTER_MAX).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// Starting scan priority: scan 1/2^12 of the lists (DEF_PRIORITY).
pub const DEF_PRIORITY: i32 = 12;
/// kswapd failures after which a node is hopeless (MAX_RECLAIM_RETRIES).
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// sc->may_deactivate bit for anon (DEACTIVATE_ANON).
pub const DEACTIVATE_ANON: u8 = 1;
/// sc->may_deactivate bit for file (DEACTIVATE_FILE).
pub const DEACTIVATE_FILE: u8 = 2;
/// VMSCAN_THROTTLE_WRITEBACK.
pub const VMSCAN_THROTTLE_WRITEBACK: i32 = 0;
/// VMSCAN_THROTTLE_ISOLATED.
pub const VMSCAN_THROTTLE_ISOLATED: i32 = 1;
/// VMSCAN_THROTTLE_NOPROGRESS.
pub const VMSCAN_THROTTLE_NOPROGRESS: i32 = 2;
/// VMSCAN_THROTTLE_CONGESTED.
pub const VMSCAN_THROTTLE_CONGESTED: i32 = 3;

/// Per-call totals of shrink_folio_list (struct reclaim_stat) and of a shrink_node pass (sc->nr).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReclaimStat {
    /// Dirty or writeback pages seen.
    pub nr_dirty: u64,
    /// Dirty pages not yet queued for I/O.
    pub nr_unqueued_dirty: u64,
    /// Writeback pages already marked for immediate reclaim.
    pub nr_congested: u64,
    /// Pages under writeback.
    pub nr_writeback: u64,
    /// Pages marked for immediate reclaim seen again by kswapd.
    pub nr_immediate: u64,
    /// Pages written out.
    pub nr_pageout: u64,
    /// Pages activated: [anon, file].
    pub nr_activate: [u64; 2],
    /// Pages kept because referenced.
    pub nr_ref_keep: u64,
    /// Pages that could not be unmapped.
    pub nr_unmap_fail: u64,
    /// Pages isolated.
    pub nr_taken: u64,
    /// File pages isolated.
    pub nr_file_taken: u64,
}

/// Settings and results of one reclaim call (struct scan_control).
#[derive(Debug, Clone)]
pub struct ScanControl {
    /// Pages to reclaim before stopping.
    pub nr_to_reclaim: u64,
    /// Allocation context.
    pub gfp_mask: Gfp,
    /// Allocation order.
    pub order: usize,
    /// Scan priority: 1/2^priority of each list is scanned.
    pub priority: i32,
    /// Highest zone type reclaim is for.
    pub reclaim_idx: usize,
    /// May write dirty pages.
    pub may_writepage: bool,
    /// May unmap mapped pages.
    pub may_unmap: bool,
    /// May swap anonymous pages.
    pub may_swap: bool,
    /// May shrink slab caches (5.0's sc->may_shrinkslab: off while kswapd reclaims only for a boost).
    pub may_shrinkslab: bool,
    /// Which active lists may be deactivated (DEACTIVATE_ANON | DEACTIVATE_FILE).
    pub may_deactivate: u8,
    /// Reclaim only file pages while there are plenty of them.
    pub cache_trim_mode: bool,
    /// The file LRU is too small to be worth reclaiming alone.
    pub file_is_tiny: bool,
    /// Running in kswapd (current_is_kswapd).
    pub kswapd: bool,
    /// Recent anon reclaim cost (sc->anon_cost).
    pub anon_cost: u64,
    /// Recent file reclaim cost (sc->file_cost).
    pub file_cost: u64,
    /// Pages scanned.
    pub nr_scanned: u64,
    /// Pages reclaimed.
    pub nr_reclaimed: u64,
    /// Totals of this shrink_node pass (sc->nr).
    pub nr: ReclaimStat,
    /// Dirty file pages direct reclaim skipped (nodirect's nr_dirty).
    pub nr_dirty_skipped: u64,
    /// Lumpy reclaim mode for this pass (set_lumpy_reclaim_mode).
    pub lumpy: bool,
    /// The task doing the reclaim.
    pub tid: TaskId,
    /// Its CPU.
    pub cpu: usize,
    /// The group whose subtree is reclaimed; the root for global reclaim (target_mem_cgroup).
    pub target_mem_cgroup: u32,
    /// The last batch shrink_inactive_list isolated: (node, file, pages).
    pub last_isolated: (usize, bool, u64),
    /// The memory controller is on cgroup v2 (cgroup_subsys_on_dfl(memory_cgrp_subsys)).
    pub memcg_on_dfl: bool,
    /// Walk the whole subtree even where partial walks are allowed (sc->memcg_full_walk).
    pub memcg_full_walk: bool,
}

impl ScanControl {
    /// Whether this reclaims one memory cgroup's subtree rather than the node (cgroup_reclaim).
    pub fn cgroup_reclaim(&self) -> bool {
        self.target_mem_cgroup != super::memcontrol::ROOT_MEM_CGROUP
    }

    /// Whether dirty and writeback throttling works for this reclaimer
    /// (writeback_throttling_sane): always for global reclaim; for limit reclaim only
    /// with cgroup v2, whose writeback and dirty throttling are per group.
    pub fn writeback_throttling_sane(&self) -> bool {
        !self.cgroup_reclaim() || self.memcg_on_dfl
    }

    /// A scan_control for a reclaimer.
    pub fn new(gfp: Gfp, order: usize, nr_to_reclaim: u64, tid: TaskId, cpu: usize) -> Self {
        ScanControl {
            last_isolated: (0, false, 0),
            memcg_on_dfl: false,
            memcg_full_walk: false,
            nr_to_reclaim,
            gfp_mask: gfp,
            order,
            priority: DEF_PRIORITY,
            reclaim_idx: gfp_zone(gfp) as usize,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            may_shrinkslab: true,
            may_deactivate: 0,
            cache_trim_mode: false,
            file_is_tiny: false,
            kswapd: false,
            anon_cost: 0,
            file_cost: 0,
            nr_scanned: 0,
            nr_reclaimed: 0,
            nr: ReclaimStat::default(),
            nr_dirty_skipped: 0,
            lumpy: false,
            tid,
            cpu,
            target_mem_cgroup: super::memcontrol::ROOT_MEM_CGROUP,
        }
    }
}

/// What folio_check_references decides (enum folio_references).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FolioRef {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// The allocstall_<zone> item do_try_to_free_pages counts, by sc->reclaim_idx =
/// gfp_zone(gfp): as every movable allocation carries __GFP_HIGHMEM|__GFP_MOVABLE on
/// the kernel (trace::flags::gfp_to_kernel), GFP_ZONE_TABLE gives it ZONE_MOVABLE,
/// populated or not, so its stalls are counted in allocstall_movable.
fn allocstall_item(gfp: Gfp) -> Event {
    match super::gfp::gfp_zone(gfp) {
        ZoneType::Dma => Event::ALLOCSTALL_DMA,
        ZoneType::Dma32 => Event::ALLOCSTALL_DMA32,
        ZoneType::Normal if gfp.has(super::gfp::__GFP_MOVABLE) => Event::ALLOCSTALL_MOVABLE,
        ZoneType::Normal => Event::ALLOCSTALL_NORMAL,
    }
}

impl Kernel {
    /// Whether the inactive list is small against the active one (inactive_is_low).
    fn inactive_is_low(&self, nid: usize, inactive_lru: usize) -> bool {
        let lv = self.mm.scan_lruvec(nid);
        let inactive = lv.nr[inactive_lru];
        let active = lv.nr[inactive_lru + 1];
        let gb = (inactive + active) >> (30 - 12);
        let ratio = if gb > 0 {
            super::page_alloc::int_sqrt(10 * gb)
        } else {
            1
        };
        inactive * ratio < active
    }

    /// Whether anonymous pages can be reclaimed at all (can_reclaim_anon_pages): swap has
    /// room, and under cgroup v2 the scanned group and its ancestors are below memory.swap.max
    /// (mem_cgroup_get_nr_swap_pages).
    pub fn can_reclaim_anon_pages(&self) -> bool {
        if self.swap.nr_free() == 0 {
            return false;
        }
        let m = &self.mm.memcg;
        if !m.enabled() || !m.dfl {
            return true;
        }
        let mut g = m.scan_memcg;
        while g != super::memcontrol::ROOT_MEM_CGROUP && g != super::memcontrol::NO_MEMCG {
            let c = m.ext(g).swap;
            if c.usage >= c.max {
                return false;
            }
            g = m.groups[g as usize].parent;
        }
        true
    }

    /// How many pages of each list to scan at this priority (get_scan_count).
    fn get_scan_count(&self, nid: usize, sc: &ScanControl) -> [u64; lru::NR_LRU_LISTS] {
        #[derive(PartialEq)]
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        // mem_cgroup_swappiness() of the group whose lruvec is scanned.
        let swappiness = self
            .mm
            .memcg
            .mem_cgroup_swappiness(self.mm.memcg.scan_memcg, self.mm.kcfg.swappiness);
        let mut fraction = [1u64, 1];
        let mut denominator = 1u64;
        let balance = if !sc.may_swap || !self.can_reclaim_anon_pages() {
            Balance::File
        } else if sc.cgroup_reclaim() && swappiness == 0 {
            // memcg users disable swapping for a group with memory.swappiness = 0.
            Balance::File
        } else if sc.priority == 0 && swappiness > 0 {
            Balance::Equal
        } else if sc.file_is_tiny {
            Balance::Anon
        } else if sc.cache_trim_mode {
            Balance::File
        } else {
            // calculate_pressure_balance()
            let anon_prio = swappiness;
            let file_prio = 200 - anon_prio;
            let total = sc.anon_cost + sc.file_cost;
            let anon_cost = total + sc.anon_cost;
            let file_cost = total + sc.file_cost;
            let total = anon_cost + file_cost;
            let ap = anon_prio * (total + 1) / (anon_cost + 1);
            let fp = file_prio * (total + 1) / (file_cost + 1);
            fraction = [ap, fp];
            denominator = (ap + fp).max(1);
            Balance::Fract
        };
        let mut nr = [0u64; lru::NR_LRU_LISTS];
        for (l, slot) in nr.iter_mut().enumerate().take(lru::UNEVICTABLE) {
            let file = lru::is_file_lru(l);
            let size = self.mm.lruvec_lru_size(nid, l, sc.reclaim_idx);
            let scan = size >> sc.priority;
            *slot = match balance {
                Balance::Equal => scan,
                Balance::Fract => (scan * fraction[file as usize]).div_ceil(denominator),
                Balance::File => {
                    if file {
                        scan
                    } else {
                        0
                    }
                }
                Balance::Anon => {
                    if file {
                        0
                    } else {
                        scan
                    }
                }
            };
        }
        nr
    }

    /// Records what reclaiming a list cost, for the anon/file balance: 6.18's
    /// lru_note_cost_unlock_irq (I/O × SWAP_CLUSTER_MAX + rotations) or, without
    /// `kernel.lru_cost_rotations`, 6.1's lru_note_cost (the pages of I/O alone).
    pub(crate) fn lru_note_cost(&mut self, nid: usize, file: bool, nr_io: u64, nr_rotated: u64) {
        let rotations = self.mm.kcfg.rules().lru_cost_rotations;
        let lv = self.mm.scan_lruvec_mut(nid);
        let cost = if rotations {
            nr_io * SWAP_CLUSTER_MAX + nr_rotated
        } else {
            nr_io
        };
        if file {
            lv.file_cost += cost;
        } else {
            lv.anon_cost += cost;
        }
        let lrusize: u64 = lv.nr[..lru::UNEVICTABLE].iter().sum();
        if lv.anon_cost + lv.file_cost > lrusize / 4 {
            lv.anon_cost /= 2;
            lv.file_cost /= 2;
        }
    }

    /// Takes up to `nr_to_scan` pages from the tail of a list, skipping zones above
    /// reclaim_idx (isolate_lru_folios); returns (isolated folios, pages scanned, pages
    /// taken): a folio counts its folio_nr_pages.
    fn isolate_lru_folios(
        &mut self,
        nr_to_scan: u64,
        nid: usize,
        sc: &ScanControl,
        l: usize,
    ) -> (Vec<Pfn>, u64, u64) {
        let mut taken = Vec::with_capacity(nr_to_scan as usize);
        let mut skipped: Vec<Pfn> = Vec::new();
        let mut scan = 0u64;
        let mut nr_taken = 0u64;
        let mut nr_skipped = [0u64; MAX_NR_ZONES];
        let (mut contig_taken, mut contig_dirty, mut contig_failed) = (0u64, 0u64, 0u64);
        while scan < nr_to_scan && nr_taken < nr_to_scan {
            let pfn = self.mm.scan_lruvec(nid).lists[l].tail;
            if pfn == NIL {
                break;
            }
            let zid = self.mm.page_zone(pfn);
            let zt = self.mm.zones[zid].zone_type as usize;
            self.mm.lruvec_del_folio(pfn);
            if zt > sc.reclaim_idx {
                // Set aside and put back at the head afterwards, as the kernel splices folios_skipped.
                nr_skipped[zt] += 1;
                skipped.push(pfn);
                if skipped.len() as u64 > 32 * nr_to_scan {
                    break;
                }
                continue;
            }
            let nr_pages = self.mm.folio_nr_pages(pfn);
            scan += nr_pages;
            nr_taken += nr_pages;
            taken.push(pfn);
            if sc.lumpy {
                // Lumpy reclaim (2.6.23–3.x isolate_lru_pages): take every LRU page of the
                // aligned 2^order block around the tag page, active or inactive, file or anon.
                let start = pfn & !((1 << sc.order) - 1);
                for q in start..start + (1 << sc.order) {
                    if q == pfn || q as usize >= self.mm.map.len() || self.mm.page_zone(q) != zid {
                        continue;
                    }
                    let page = self.mm.map[q as usize];
                    if page.kind() == PageKind::Anon
                        && page.flags & pg::SWAPCACHE == 0
                        && !self.can_reclaim_anon_pages()
                    {
                        continue;
                    }
                    if page.test(pg::LRU) && !page.test(pg::UNEVICTABLE) {
                        self.mm.lruvec_del_folio(q);
                        taken.push(q);
                        contig_taken += 1;
                        scan += 1;
                        nr_taken += 1;
                        if page.test(pg::DIRTY) {
                            contig_dirty += 1;
                        }
                    } else if page.test(pg::HEAD) {
                        contig_failed += 1;
                    }
                }
            }
        }
        for &p in skipped.iter().rev() {
            self.mm.lruvec_add_folio(p);
        }
        self.lumpy_stats = (contig_taken, contig_dirty, contig_failed);
        for (zt, &n) in nr_skipped.iter().enumerate() {
            if n > 0 {
                let ev = [Event::PGSKIP_DMA, Event::PGSKIP_DMA32, Event::PGSKIP_NORMAL][zt];
                self.mm.count_vm_events(ev, n);
            }
        }
        // lru_lock is held per folio moved (list_move, folio_test_clear_lru), whatever its size.
        let hold = (taken.len() + skipped.len()) as u64 * self.mm.cost.lru_lock_page;
        let at = self.mm.clock();
        self.mm.cur.acc += hold + self.mm.scan_lruvec_mut(nid).lru_lock.acquire(at, hold);
        self.trace(TraceEvent::MmVmscanLruIsolate {
            highest_zoneidx: sc.reclaim_idx as i32,
            order: sc.order as i32,
            nr_requested: nr_to_scan,
            nr_scanned: scan,
            nr_skipped: skipped.len() as u64,
            nr_taken,
            lru: l as i32,
            isolate_mode: if sc.lumpy {
                crate::trace::ISOLATE_BOTH
            } else {
                crate::trace::isolate_mode_for_lru(l as i32)
            },
            contig_taken: self.lumpy_stats.0,
            contig_dirty: self.lumpy_stats.1,
            contig_failed: self.lumpy_stats.2,
        });
        (taken, scan, nr_taken)
    }

    /// Puts isolated pages back on their lists (move_folios_to_lru); returns pages moved.
    fn move_folios_to_lru(&mut self, nid: usize, pages: &[Pfn]) -> u64 {
        // Activations age their lruvec's non-resident clock (workingset_age_nonresident),
        // added up per run of pages of one group.
        let (mut aging, mut nr_aged) = (super::memcontrol::ROOT_MEM_CGROUP, 0u64);
        let workingset = self.mm.kcfg.workingset;
        let memcg_on = self.mm.memcg.enabled();
        let mut nr_moved = 0;
        for &p in pages {
            self.mm.lruvec_add_folio(p);
            let nr_pages = self.mm.folio_nr_pages(p);
            nr_moved += nr_pages;
            if workingset && self.mm.map[p as usize].test(pg::ACTIVE) {
                let page = self.mm.map[p as usize];
                let memcg = if memcg_on {
                    self.mm.memcg.folio_memcg(page.kind(), page.owner)
                } else {
                    super::memcontrol::ROOT_MEM_CGROUP
                };
                if memcg != aging && nr_aged > 0 {
                    self.mm.workingset_age_nonresident(aging, nid, nr_aged);
                    nr_aged = 0;
                }
                aging = memcg;
                nr_aged += nr_pages;
            }
        }
        if nr_aged > 0 {
            self.mm.workingset_age_nonresident(aging, nid, nr_aged);
        }
        let hold = pages.len() as u64 * self.mm.cost.lru_lock_page;
        let at = self.mm.clock();
        self.mm.cur.acc += hold + self.mm.scan_lruvec_mut(nid).lru_lock.acquire(at, hold);
        nr_moved
    }

    /// Tests and clears the young bits of the PTEs mapping a page (folio_referenced).
    fn folio_referenced(&mut self, pfn: Pfn) -> u32 {
        let p = &mut self.mm.map[pfn as usize];
        let mapped = p.kind() == PageKind::Anon || p.test(pg::MAPPED);
        if mapped && p.test(pg::YOUNG) {
            p.flags &= !pg::YOUNG;
            1
        } else {
            0
        }
    }

    /// Whether an inactive page should be kept, activated or reclaimed (folio_check_references).
    fn folio_check_references(&mut self, pfn: Pfn, order: usize) -> FolioRef {
        if self.mm.kcfg.reclaim_scan == crate::config::ReclaimScan::Classic {
            return self.page_referenced_classic(pfn, order);
        }
        let referenced_ptes = self.folio_referenced(pfn);
        if referenced_ptes > 0
            && self.mm.kcfg.new_anon_active
            && self.mm.map[pfn as usize].kind() == PageKind::Anon
        {
            // Before 5.9: "if (PageSwapBacked(page)) return PAGEREF_ACTIVATE;".
            self.mm.map[pfn as usize].flags |= pg::REFERENCED;
            return FolioRef::Activate;
        }
        let p = &mut self.mm.map[pfn as usize];
        let referenced_folio = p.test(pg::REFERENCED);
        p.flags &= !pg::REFERENCED;
        if referenced_ptes > 0 {
            p.flags |= pg::REFERENCED;
            if referenced_folio || referenced_ptes > 1 {
                return FolioRef::Activate;
            }
            return FolioRef::Keep;
        }
        if referenced_folio && p.kind() == PageKind::File {
            return FolioRef::ReclaimClean;
        }
        FolioRef::Reclaim
    }

    /// 2.6.2x page_referenced(): the PTEs' young bits and PG_referenced, each tested and
    /// cleared; true if any was set.
    fn page_referenced(&mut self, pfn: Pfn) -> bool {
        let young = self.folio_referenced(pfn) > 0;
        let p = &mut self.mm.map[pfn as usize];
        let referenced = p.test(pg::REFERENCED);
        p.flags &= !pg::REFERENCED;
        young || referenced
    }

    /// 2.6.2x shrink_page_list()'s reference check: page_referenced() (the PTEs' young
    /// bits and PG_referenced, both cleared) activates a page in use — mapped or in the
    /// swap cache (page_mapping_inuse) — for orders up to PAGE_ALLOC_COSTLY_ORDER; a
    /// referenced page not in use is reclaimed if clean, kept if dirty.
    fn page_referenced_classic(&mut self, pfn: Pfn, order: usize) -> FolioRef {
        if !self.page_referenced(pfn) || order > super::mmzone::PAGE_ALLOC_COSTLY_ORDER {
            return FolioRef::Reclaim;
        }
        let p = &self.mm.map[pfn as usize];
        let in_use = p.kind() == PageKind::Anon || p.test(pg::MAPPED) || p.test(pg::SWAPCACHE);
        if in_use {
            FolioRef::Activate
        } else {
            FolioRef::ReclaimClean
        }
    }

    /// 2.6.25's calc_reclaim_mapped(): whether shrink_active_list may move mapped pages to
    /// the inactive list: swap_tendency = mapped_ratio / 2 + distress + swappiness, plus the
    /// active/inactive imbalance weighted by swappiness and the mapped ratio, is >= 100.
    /// Simplified: distress is the caller's own priority's (100 >> priority; the kernel
    /// takes the lower of it and zone->prev_priority, which other reclaimers lower), no
    /// zone_is_near_oom shortcut, and the mapped pages are the anonymous ones.
    fn calc_reclaim_mapped(&self, nid: usize, sc: &ScanControl) -> bool {
        let total: u64 = self.mm.zones.iter().map(|z| z.managed_pages).sum();
        let anon: i64 = self
            .mm
            .nodes
            .iter()
            .map(|n| n.vm_stat[NodeStat::NR_ANON_PAGES as usize])
            .sum();
        let mapped_ratio = (anon.max(0) as u64 * 100) / total.max(1);
        let distress = 100u64 >> sc.priority.clamp(0, 63);
        let swappiness = self.mm.kcfg.swappiness;
        let lv = self.mm.scan_lruvec(nid);
        let active = lv.nr[lru::ACTIVE_ANON] + lv.nr[lru::ACTIVE_FILE];
        let inactive = lv.nr[lru::INACTIVE_ANON] + lv.nr[lru::INACTIVE_FILE];
        let imbalance = active / (inactive + 1) * (swappiness + 1) / 100 * mapped_ratio / 100;
        mapped_ratio / 2 + distress + swappiness + imbalance >= 100
    }

    /// Deactivates pages from the tail of an active list (shrink_active_list).
    fn shrink_active_list(&mut self, nr_to_scan: u64, nid: usize, sc: &mut ScanControl, l: usize) {
        let (hold, nr_scanned, nr_taken) = self.isolate_lru_folios(nr_to_scan, nid, sc, l);
        if !sc.cgroup_reclaim() {
            self.mm.count_vm_events(Event::PGREFILL, nr_scanned);
        }
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_ISOLATED_ANON, 0);
        let mut l_inactive = Vec::with_capacity(hold.len());
        let mut l_active = Vec::new();
        let mut nr_rotated = 0;
        let classic = self.mm.kcfg.reclaim_scan == crate::config::ReclaimScan::Classic;
        let reclaim_mapped = classic && self.calc_reclaim_mapped(nid, sc);
        // total_swap_pages: the usable size of every device on.
        let swap = self.swap.pages > 0;
        for pfn in hold {
            self.mm.cur.acc += self.mm.cost.shrink_page / 2;
            if classic {
                // 2.6.25: a mapped page stays active unless mapped pages may be reclaimed,
                // it is anonymous with no swap, or it was referenced (page_referenced()).
                let p = &self.mm.map[pfn as usize];
                let anon = p.kind() == PageKind::Anon;
                if anon || p.test(pg::MAPPED) {
                    // Evaluated in the kernel's order: page_referenced() clears the bits
                    // only when it is reached.
                    if !reclaim_mapped || (anon && !swap) || self.page_referenced(pfn) {
                        nr_rotated += self.mm.folio_nr_pages(pfn);
                        l_active.push(pfn);
                        continue;
                    }
                }
            } else if self.folio_referenced(pfn) > 0 {
                // Referenced pages are deactivated too: only executable file pages
                // get another trip, and executables are not modelled.
                nr_rotated += self.mm.folio_nr_pages(pfn);
            }
            let p = &mut self.mm.map[pfn as usize];
            p.flags &= !pg::ACTIVE;
            p.flags |= pg::WORKINGSET;
            l_inactive.push(pfn);
        }
        self.move_folios_to_lru(nid, &l_active);
        let nr_deactivate = self.move_folios_to_lru(nid, &l_inactive);
        self.mm.count_vm_events(Event::PGDEACTIVATE, nr_deactivate);
        // 6.1's shrink_active_list notes no cost: rotations are free there.
        if self.mm.kcfg.rules().lru_cost_rotations {
            self.lru_note_cost(nid, lru::is_file_lru(l), 0, nr_rotated);
        }
        self.trace(TraceEvent::MmVmscanLruShrinkActive {
            nid: nid as i32,
            nr_taken,
            nr_active: 0,
            nr_deactivated: nr_deactivate,
            nr_referenced: nr_rotated,
            priority: sc.priority,
            reclaim_flags: crate::trace::trace_reclaim_flags(lru::is_file_lru(l)),
        });
    }

    /// Frees what can be freed of a batch of isolated inactive pages (shrink_folio_list);
    /// returns pages reclaimed and leaves the rest in `pages` to be put back.
    fn shrink_folio_list(
        &mut self,
        pages: &mut Vec<Pfn>,
        nid: usize,
        sc: &mut ScanControl,
        stat: &mut ReclaimStat,
    ) -> u64 {
        let mut ret = Vec::with_capacity(pages.len());
        let mut nr_reclaimed = 0;
        let may_enter_fs = sc.gfp_mask.has(__GFP_FS);
        let may_io = sc.gfp_mask.has(__GFP_IO);
        let mut todo: std::collections::VecDeque<Pfn> = std::mem::take(pages).into();
        while let Some(pfn) = todo.pop_front() {
            self.mm.cur.acc += self.mm.cost.shrink_page;
            let nr_pages = self.mm.folio_nr_pages(pfn);
            sc.nr_scanned += nr_pages;
            let flags = self.mm.map[pfn as usize].flags;
            let kind = self.mm.map[pfn as usize].kind();
            if flags & pg::SWAPCACHE != 0 && self.swap_read_in_flight(pfn) {
                // folio_trylock() fails: the page is locked until its swap read completes.
                ret.push(pfn);
                continue;
            }
            let file = kind == PageKind::File;
            if file && self.file_read_in_flight(pfn) {
                // folio_trylock() fails: readahead holds the folio locked until its read ends.
                ret.push(pfn);
                continue;
            }
            let (dirty, writeback) = (flags & pg::DIRTY != 0, flags & pg::WRITEBACK != 0);
            if dirty || writeback {
                stat.nr_dirty += nr_pages;
            }
            if dirty && !writeback {
                stat.nr_unqueued_dirty += nr_pages;
            }
            if writeback && flags & pg::RECLAIM != 0 {
                stat.nr_congested += nr_pages;
            }
            let mut activate = false;
            if writeback {
                if sc.kswapd && flags & pg::RECLAIM != 0 && self.mm.nodes[nid].pgdat_writeback {
                    stat.nr_immediate += nr_pages;
                } else if !sc.writeback_throttling_sane()
                    && flags & pg::RECLAIM != 0
                    && may_enter_fs
                    && self.mm.kcfg.reclaim_writeback == crate::config::ReclaimWriteback::Modern
                {
                    // Case 3, cgroup v1 limit reclaim: folio_wait_writeback() on a page it
                    // met before, then "go back and try same folio again": it goes to the
                    // end of the batch, and the reclaim goes on.
                    if self.folio_wait_writeback(pfn) {
                        todo.push_back(pfn);
                        continue;
                    }
                    // Its write is not with the disk: keep it and the rest of the batch.
                    ret.push(pfn);
                    ret.extend(todo.drain(..));
                    break;
                } else {
                    self.mm.map[pfn as usize].flags |= pg::RECLAIM;
                    stat.nr_writeback += nr_pages;
                }
                if self.mm.kcfg.reclaim_scan == crate::config::ReclaimScan::Classic {
                    // 2.6.2x: "if (PageWriteback(page)) goto keep_locked;"
                    ret.push(pfn);
                    continue;
                }
                activate = true;
            }
            let references = if activate {
                FolioRef::Activate
            } else {
                self.folio_check_references(pfn, sc.order)
            };
            match references {
                FolioRef::Activate => activate = true,
                FolioRef::Keep => {
                    stat.nr_ref_keep += nr_pages;
                    ret.push(pfn);
                    continue;
                }
                FolioRef::Reclaim | FolioRef::ReclaimClean => {}
            }
            if !activate && kind == PageKind::Anon && flags & pg::SWAPCACHE == 0 {
                // add_to_swap() and try_to_unmap(): needs I/O, permission to unmap and a free slot.
                if !may_io || !sc.may_swap || !sc.may_unmap {
                    ret.push(pfn);
                    continue;
                }
                if !self.add_to_swap(pfn, sc.cpu) {
                    activate = true;
                }
            } else if !activate && kind == PageKind::Anon && flags & pg::SWAPCACHE != 0 {
                // A page read back and still in the swap cache: try_to_unmap() puts its
                // swap entry back in the PTE; clean, it is freed without a write.
                if !sc.may_unmap {
                    ret.push(pfn);
                    continue;
                }
                self.try_to_unmap_swapcache(pfn);
            }
            if !activate && self.mm.map[pfn as usize].test(pg::DIRTY) {
                if file {
                    // Filesystem pages: reclaim_writeback decides (pageout or defer to the flushers).
                    match self.reclaim_file_dirty(pfn, sc, references) {
                        DirtyAction::Activate => activate = true,
                        DirtyAction::Keep => {
                            ret.push(pfn);
                            continue;
                        }
                        DirtyAction::WrittenKeep => {
                            stat.nr_pageout += nr_pages;
                            ret.push(pfn);
                            continue;
                        }
                    }
                } else if references == FolioRef::ReclaimClean
                    || !may_enter_fs && !may_io
                    || !sc.may_writepage
                {
                    // No may_write_to_queue() here: swap's backing_dev_info (swap_backing_dev_info)
                    // is never marked congested, so reclaim always writes anon pages and
                    // sleeps in the block layer when the disk has no free request.
                    ret.push(pfn);
                    continue;
                } else {
                    // pageout() → swap_writepage(): asynchronous; the page is freed
                    // by a later pass once the write has completed.
                    self.swap_writepage(pfn, false);
                    stat.nr_pageout += 1;
                    if self.mm.map[pfn as usize].flags & (pg::WRITEBACK | pg::DIRTY) != 0 {
                        ret.push(pfn);
                        continue;
                    }
                    // A synchronous device (zram) wrote it already: clean, it is freed
                    // now (pageout() → PAGE_SUCCESS, then __remove_mapping).
                }
            }
            if !activate && file && self.jbd2_buffer_busy(pfn) {
                // filemap_release_folio() fails on a journaled buffer: activate_locked.
                activate = true;
            }
            if activate {
                // activate_locked: a swap-cache page gives its slot up when swap is full.
                if kind == PageKind::Anon
                    && self.mm.map[pfn as usize].test(pg::SWAPCACHE)
                    && self.mem_cgroup_swap_full(pfn)
                {
                    self.folio_free_swap(pfn);
                }
                let p = &mut self.mm.map[pfn as usize];
                p.flags |= pg::ACTIVE;
                stat.nr_activate[file as usize] += nr_pages;
                ret.push(pfn);
                continue;
            }
            // __remove_mapping(): clean and unmapped; free it, leaving a shadow in the
            // page cache or, for an anonymous page (5.9+), in the swap cache.
            if file && self.mm.kcfg.workingset {
                let shadow = self.workingset_eviction(pfn, sc.target_mem_cgroup);
                let slot = self.mm.map[pfn as usize].owner;
                let (owner, index) = self.rmap.owner(slot);
                let ino = match owner {
                    super::rmap::Owner::File { ino, .. } => Some(ino),
                    _ => None,
                };
                self.remove_mapping_and_free(pfn, sc.cpu);
                if let Some(ino) = ino {
                    // A large folio's shadow covers all its indices (a multi-index entry).
                    for i in index..index + nr_pages {
                        if let Some(s) = self.inodes[ino as usize].pages.slot(i) {
                            self.shadow_store(ino, s, shadow);
                        }
                    }
                }
            } else if let Some(swap_slot) =
                (!file && self.mm.kcfg.workingset && self.mm.kcfg.workingset_anon)
                    .then(|| self.swap_slot_of(pfn))
                    .flatten()
            {
                let shadow = self.workingset_eviction(pfn, sc.target_mem_cgroup);
                self.remove_mapping_and_free(pfn, sc.cpu);
                self.shadows.store_swap(swap_slot, shadow);
            } else {
                self.remove_mapping_and_free(pfn, sc.cpu);
            }
            nr_reclaimed += nr_pages;
        }
        *pages = ret;
        self.blk_finish_plug();
        if self.mm.kcfg.reclaim_writeback == crate::config::ReclaimWriteback::Flushforward
            && stat.nr_dirty > 0
            && sc.may_writepage
        {
            // flushforward: kick the flushers for the dirty pages met (nr_writeback_pages:
            // 32 per skipped page, at most 4 MiB; 0, i.e. everything, from kswapd).
            let n = (sc.nr_dirty_skipped * 32).min(1024);
            self.wakeup_flusher_threads(n, crate::mm::page_writeback::WB_REASON_VMSCAN);
        }
        sc.nr_dirty_skipped = 0;
        self.mm
            .count_vm_events(Event::PGACTIVATE, stat.nr_activate[0] + stat.nr_activate[1]);
        nr_reclaimed
    }

    /// Isolates and reclaims a batch from an inactive list (shrink_inactive_list).
    fn shrink_inactive_list(
        &mut self,
        nr_to_scan: u64,
        nid: usize,
        sc: &mut ScanControl,
        l: usize,
    ) -> u64 {
        let file = lru::is_file_lru(l);
        if !sc.kswapd && self.reclaim_throttles() && self.too_many_isolated(nid, file, sc) {
            // Wait a little for the other reclaimers' isolated pages to come back.
            self.reclaim_throttle(nid, VMSCAN_THROTTLE_ISOLATED);
            return 0;
        }
        // Completion interrupts come in between batches: a long pass meets the pages it
        // wrote early in it rotated to the inactive tail (folio_rotate_reclaimable).
        let now = self.mm.clock();
        self.process_io(now);
        let (mut list, nr_scanned, nr_taken) = self.isolate_lru_folios(nr_to_scan, nid, sc, l);
        sc.last_isolated = (nid, file, nr_taken);
        let iso = if file {
            NodeStat::NR_ISOLATED_FILE
        } else {
            NodeStat::NR_ISOLATED_ANON
        };
        self.mm.mod_node_page_state(nid, iso, nr_taken as i64);
        let ev = if sc.kswapd {
            Event::PGSCAN_KSWAPD
        } else {
            Event::PGSCAN_DIRECT
        };
        // Limit reclaim is counted in the group and in pgscan_anon/file only.
        if !sc.cgroup_reclaim() {
            self.mm.count_vm_events(ev, nr_scanned);
        }
        self.mm.count_vm_events(
            if file {
                Event::PGSCAN_FILE
            } else {
                Event::PGSCAN_ANON
            },
            nr_scanned,
        );
        if nr_taken == 0 {
            return 0;
        }
        let mut stat = ReclaimStat::default();
        let nr_reclaimed = self.shrink_folio_list(&mut list, nid, sc, &mut stat);
        self.move_folios_to_lru(nid, &list);
        self.mm.mod_node_page_state(nid, iso, -(nr_taken as i64));
        let ev = if sc.kswapd {
            Event::PGSTEAL_KSWAPD
        } else {
            Event::PGSTEAL_DIRECT
        };
        if !sc.cgroup_reclaim() {
            self.mm.count_vm_events(ev, nr_reclaimed);
        }
        self.mm.count_vm_events(
            if file {
                Event::PGSTEAL_FILE
            } else {
                Event::PGSTEAL_ANON
            },
            nr_reclaimed,
        );
        self.lru_note_cost(nid, file, stat.nr_pageout, nr_scanned - nr_reclaimed);
        if file
            && stat.nr_unqueued_dirty > 0
            && stat.nr_unqueued_dirty == nr_taken
            && self.mm.kcfg.reclaim_flusher_wakeup == FlusherWakeup::UnqueuedDirty
        {
            // Every isolated page was dirty and not queued: the flushers are not keeping up.
            self.wakeup_flusher_threads(0, crate::mm::page_writeback::WB_REASON_VMSCAN);
            // cgroup v1 has no dirty throttling of its own: wait for the flushers here
            // and later on the pages under writeback (shrink_folio_list, case 3).
            if !sc.writeback_throttling_sane() {
                self.reclaim_throttle(nid, VMSCAN_THROTTLE_WRITEBACK);
            }
        }
        sc.nr.nr_dirty += stat.nr_dirty;
        sc.nr.nr_congested += stat.nr_congested;
        sc.nr.nr_unqueued_dirty += stat.nr_unqueued_dirty;
        sc.nr.nr_writeback += stat.nr_writeback;
        sc.nr.nr_immediate += stat.nr_immediate;
        sc.nr.nr_taken += nr_taken;
        if file {
            sc.nr.nr_file_taken += nr_taken;
        }
        self.trace(TraceEvent::MmVmscanLruShrinkInactive {
            nid: nid as i32,
            nr_scanned,
            nr_reclaimed,
            nr_dirty: stat.nr_dirty,
            nr_writeback: stat.nr_writeback,
            nr_congested: stat.nr_congested,
            nr_immediate: stat.nr_immediate,
            nr_activate0: stat.nr_activate[0] as u32,
            nr_activate1: stat.nr_activate[1] as u32,
            nr_ref_keep: stat.nr_ref_keep,
            nr_unmap_fail: stat.nr_unmap_fail,
            priority: sc.priority,
            reclaim_flags: crate::trace::trace_reclaim_flags(file),
            zid: sc.reclaim_idx as i32,
        });
        nr_reclaimed
    }

    /// Scans a node's LRU lists at the current priority (shrink_lruvec).
    pub(crate) fn shrink_lruvec(&mut self, nid: usize, sc: &mut ScanControl) {
        if self.mm.kcfg.reclaim_scan == crate::config::ReclaimScan::Classic {
            self.shrink_zone_classic(nid, sc);
            return;
        }
        let mut nr = self.get_scan_count(nid, sc);
        let nr_to_reclaim = sc.nr_to_reclaim;
        let start = sc.nr_reclaimed;
        let mut reclaimed = 0;
        while nr[lru::INACTIVE_ANON] > 0 || nr[lru::ACTIVE_FILE] > 0 || nr[lru::INACTIVE_FILE] > 0 {
            #[allow(clippy::needless_range_loop)] // shrink_list borrows self mutably
            for l in 0..lru::UNEVICTABLE {
                if nr[l] == 0 {
                    continue;
                }
                let n = nr[l].min(SWAP_CLUSTER_MAX);
                nr[l] -= n;
                reclaimed += self.shrink_list(l, n, nid, sc);
            }
            if self.must_wait_for_io() {
                break;
            }
            if reclaimed < nr_to_reclaim || sc.priority == DEF_PRIORITY && !sc.kswapd {
                continue;
            }
            // Reclaimed enough: stop scanning the other lists (the proportional cut-off).
            break;
        }
        sc.nr_reclaimed = start + reclaimed;
        if self.can_reclaim_anon_pages() && self.inactive_is_low(nid, lru::INACTIVE_ANON) {
            self.shrink_active_list(SWAP_CLUSTER_MAX, nid, sc, lru::ACTIVE_ANON);
        }
    }

    /// The 2.6.2x shrink_zone(): every list gets (size >> priority) + 1 added to its carried
    /// scan count; a list whose count reaches SWAP_CLUSTER_MAX is scanned in full, in batches,
    /// active lists through shrink_active_list — with no stop once enough is reclaimed.
    fn shrink_zone_classic(&mut self, nid: usize, sc: &mut ScanControl) {
        let anon_ok = sc.may_swap && self.can_reclaim_anon_pages();
        let mut nr = [0u64; lru::NR_LRU_LISTS];
        for (l, slot) in nr.iter_mut().enumerate().take(lru::UNEVICTABLE) {
            if !lru::is_file_lru(l) && !anon_ok {
                continue;
            }
            let size = self.mm.lruvec_lru_size(nid, l, sc.reclaim_idx);
            let carry = &mut self.mm.scan_lruvec_mut(nid).nr_scan[l];
            *carry += (size >> sc.priority) + 1;
            if *carry >= SWAP_CLUSTER_MAX {
                *slot = std::mem::take(carry);
            }
        }
        let mut reclaimed = 0;
        while nr[..lru::UNEVICTABLE].iter().any(|&n| n > 0) {
            #[allow(clippy::needless_range_loop)] // the shrinkers borrow self mutably
            for l in 0..lru::UNEVICTABLE {
                if nr[l] == 0 {
                    continue;
                }
                let n = nr[l].min(SWAP_CLUSTER_MAX);
                nr[l] -= n;
                if lru::is_active_lru(l) {
                    self.shrink_active_list(n, nid, sc, l);
                } else {
                    reclaimed += self.shrink_inactive_list(n, nid, sc, l);
                }
            }
            if self.must_wait_for_io() {
                break;
            }
        }
        sc.nr_reclaimed += reclaimed;
    }

    /// Dispatches one list to the active or inactive shrinker (shrink_list).
    fn shrink_list(&mut self, l: usize, nr_to_scan: u64, nid: usize, sc: &mut ScanControl) -> u64 {
        if lru::is_active_lru(l) {
            let bit = if lru::is_file_lru(l) {
                DEACTIVATE_FILE
            } else {
                DEACTIVATE_ANON
            };
            if sc.may_deactivate & bit != 0 {
                self.shrink_active_list(nr_to_scan, nid, sc, l);
            }
            return 0;
        }
        self.shrink_inactive_list(nr_to_scan, nid, sc, l)
    }

    /// Sets the per-pass scan balance hints (prepare_scan_control).
    pub(crate) fn prepare_scan_control(&mut self, nid: usize, sc: &mut ScanControl) {
        sc.anon_cost = self.mm.scan_lruvec(nid).anon_cost;
        sc.file_cost = self.mm.scan_lruvec(nid).file_cost;
        sc.may_deactivate = 0;
        if self.inactive_is_low(nid, lru::INACTIVE_ANON) {
            sc.may_deactivate |= DEACTIVATE_ANON;
        }
        if self.inactive_is_low(nid, lru::INACTIVE_FILE) {
            sc.may_deactivate |= DEACTIVATE_FILE;
        }
        let lv = self.mm.scan_lruvec(nid);
        let file = lv.nr[lru::INACTIVE_FILE];
        sc.cache_trim_mode = file >> sc.priority > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        let free: i64 = self.mm.nodes[nid]
            .zones
            .iter()
            .map(|&z| self.mm.zones[z].free_pages())
            .sum();
        let file_all = lv.nr[lru::INACTIVE_FILE] + lv.nr[lru::ACTIVE_FILE];
        let total_high: u64 = self.mm.nodes[nid]
            .zones
            .iter()
            .map(|&z| self.mm.zones[z].wmark_pages(Wmark::High))
            .sum();
        let anon = lv.nr[lru::INACTIVE_ANON];
        sc.file_is_tiny = (file_all as i64 + free) <= total_high as i64
            && sc.may_deactivate & DEACTIVATE_ANON == 0
            && anon >> sc.priority > 0;
    }

    /// One reclaim pass over a node: LRU lists, then the shrinkers (shrink_node).
    pub fn shrink_node(&mut self, nid: usize, sc: &mut ScanControl) {
        // I/O completes while reclaim runs: pages written meanwhile can be freed.
        let now = self.mm.clock();
        self.process_io(now);
        sc.nr = ReclaimStat::default();
        // set_lumpy_reclaim_mode(): costly orders always, other high orders at raised priority.
        sc.lumpy = self.mm.kcfg.lumpy_reclaim
            && (sc.order > super::mmzone::PAGE_ALLOC_COSTLY_ORDER
                || sc.order > 0 && sc.priority < DEF_PRIORITY - 2);
        loop {
            let before = sc.nr_reclaimed;
            if self.mm.memcg.enabled() {
                self.shrink_node_memcgs(nid, sc);
            } else {
                self.prepare_scan_control(nid, sc);
                self.shrink_lruvec(nid, sc);
                // shrink_slab() for the root memcg: the shadow-node shrinker ("mm-shadow").
                if sc.may_shrinkslab && self.mm.kcfg.workingset {
                    self.shrink_shadow_nodes(
                        super::memcontrol::ROOT_MEM_CGROUP,
                        sc.gfp_mask,
                        sc.priority,
                    );
                }
            }
            let cpu = sc.cpu;
            if sc.may_shrinkslab && !self.mm.memcg.enabled() {
                // With memory cgroups, shrink_node_memcgs shrinks each group's slab.
                let root = super::memcontrol::ROOT_MEM_CGROUP;
                sc.nr_reclaimed += self.shrink_slab(sc.gfp_mask, sc.priority, cpu, root);
            }
            // Reclaim for compaction: go on until compaction can run (should_continue_reclaim).
            if !self.should_continue_reclaim(nid, sc.nr_reclaimed - before, sc) {
                break;
            }
        }
        if sc.kswapd {
            let node = &mut self.mm.nodes[nid];
            if sc.nr.nr_writeback > 0 && sc.nr.nr_writeback == sc.nr.nr_taken {
                node.pgdat_writeback = true;
            }
            // Allow kswapd to start writing pages: 6.18 only after it took unqueued dirty
            // pages; 6.1 also after a pass that took no file pages (0 == 0).
            let needs_unqueued = self.mm.kcfg.rules().pgdat_dirty_needs_unqueued;
            if (sc.nr.nr_unqueued_dirty > 0 || !needs_unqueued)
                && sc.nr.nr_unqueued_dirty == sc.nr.nr_file_taken
            {
                node.pgdat_dirty = true;
            }
            // Pages cycling through the LRU faster than they are written: stall until some complete.
            if sc.nr.nr_immediate > 0 {
                self.reclaim_throttle(nid, VMSCAN_THROTTLE_WRITEBACK);
            }
            // Tag the node congested if all the dirty pages met were queued for writeback.
            if sc.nr.nr_dirty > 0 && sc.nr.nr_dirty == sc.nr.nr_congested {
                self.mm.nodes[nid].lruvec_congested = true;
            }
        } else if self.mm.nodes[nid].lruvec_congested {
            // Stall direct reclaim for I/O completions while the node is congested.
            self.reclaim_throttle(nid, VMSCAN_THROTTLE_CONGESTED);
        }
    }

    /// Sleeps until the disk's async queue is no longer congested or `jiffies` pass
    /// (congestion_wait(BLK_RW_ASYNC, timeout) of the 2.6.3x kernels), after the current step.
    pub fn congestion_wait(&mut self, jiffies: u64) {
        if self.mm.cur.atomic {
            return;
        }
        let timeout = jiffies * (1_000_000_000 / self.mm.kcfg.hz);
        let now = self.mm.clock() + self.mm.cur.sleep;
        let wake = self.disk.congestion_wait(now, timeout);
        self.mm.cur.sleep += wake.saturating_sub(now);
        self.throttle_ns += wake.saturating_sub(now);
    }

    /// Whether today's reclaim throttles (reclaim_throttle(), too_many_isolated()) run:
    /// `kernel.reclaim_throttle = "modern"`; "off" and "limit" are the kernels before them.
    fn reclaim_throttles(&self) -> bool {
        self.mm.kcfg.reclaim_throttle == crate::config::ReclaimThrottle::Modern
    }

    /// Whether NOPROGRESS throttling is pointless (skip_throttle_noprogress): kswapd has
    /// given up on the node, or dirty and writeback pages are few against what can be reclaimed.
    fn skip_throttle_noprogress(&self, nid: usize) -> bool {
        use super::vmstat::ZoneStat;
        if self.mm.nodes[nid].kswapd_failures >= MAX_RECLAIM_RETRIES {
            return true;
        }
        let mut reclaimable = 0u64;
        let mut write_pending = 0u64;
        for &zid in &self.mm.nodes[nid].zones {
            if self.mm.zones[zid].managed_pages == 0 {
                continue;
            }
            reclaimable += self.zone_reclaimable_pages(zid);
            write_pending +=
                self.mm.zones[zid].vm_stat[ZoneStat::NR_ZONE_WRITE_PENDING as usize].max(0) as u64;
        }
        2 * write_pending <= reclaimable
    }

    /// After direct reclaim freed nothing: throttle the reclaimer for a jiffy unless that
    /// is pointless (consider_reclaim_throttle with VMSCAN_THROTTLE_NOPROGRESS); true if throttled.
    pub fn consider_reclaim_throttle(&mut self, ac: &super::page_alloc::AllocContext) -> bool {
        if self.mm.cur.atomic || !self.reclaim_throttles() {
            return false;
        }
        let nid = self.mm.zones[self.mm.zonelists[ac.zonelist][0]].nid;
        if self.skip_throttle_noprogress(nid) {
            return false;
        }
        self.reclaim_throttle(nid, VMSCAN_THROTTLE_NOPROGRESS);
        true
    }

    /// Puts the reclaimer to sleep for the reason's timeout (reclaim_throttle); the
    /// early wake-ups of the kernel (writeback progress, isolation, efficiency) are not modelled yet.
    pub fn reclaim_throttle(&mut self, nid: usize, reason: i32) {
        if self.mm.cur.atomic || !self.reclaim_throttles() {
            return;
        }
        let jiffy = 1_000_000_000 / self.mm.kcfg.hz;
        let timeout = match reason {
            VMSCAN_THROTTLE_WRITEBACK => jiffy * self.mm.kcfg.hz / 10,
            VMSCAN_THROTTLE_ISOLATED => jiffy * self.mm.kcfg.hz / 50,
            _ => jiffy,
        };
        let mut delayed = timeout;
        if reason == VMSCAN_THROTTLE_WRITEBACK {
            // __acct_reclaim_writeback() (5.16+): woken once more than SWAP_CLUSTER_MAX pages per
            // throttled task (this one) have finished writeback since it went to sleep. Only
            // the writes queued now are counted: those the flusher woken just before submits
            // later cannot end the sleep (tiny-memcg's write sleeps its whole 100 ms twice).
            let now = self.mm.clock() + self.mm.cur.sleep;
            if let Some(t) = self.disk.writes_done_at(SWAP_CLUSTER_MAX) {
                delayed = timeout.min(t.saturating_sub(now).max(1));
            }
        }
        // A real sleep after the step even in limit reclaim (`sleep_in_step`): what it
        // waits for (the flushers' writeback) needs other tasks to run.
        self.mm.cur.sleep += delayed;
        self.throttle_ns += delayed;
        self.trace(TraceEvent::MmVmscanThrottled {
            nid: nid as i32,
            usec_timeout: (timeout / 1000) as i32,
            usec_delayed: (delayed / 1000) as i32,
            // __entry->reason = 1U << reason
            reason: 1 << reason,
        });
    }

    /// Waits until a folio's writeback has ended (folio_wait_writeback) and goes on: the
    /// task's clock moves past the disk's completions up to the folio's, which are taken
    /// in the step, and the wait is slept after it (`Current::slept`). False, without
    /// waiting, when no write in flight or queued can end it.
    fn folio_wait_writeback(&mut self, pfn: Pfn) -> bool {
        while self.mm.map[pfn as usize].test(pg::WRITEBACK) {
            let now = self.mm.clock() + self.mm.cur.sleep;
            if self.disk.next_completion_at().is_none() {
                // Requests waiting for a request slot go in first.
                self.process_io(now);
            }
            let Some(done) = self.disk.next_completion_at() else {
                return false;
            };
            self.wait_in_step(done.max(now + 1));
        }
        true
    }

    /// Direct reclaim from the allocator's slow path (try_to_free_pages →
    /// do_try_to_free_pages): the priority loop over the zonelist's nodes; returns pages
    /// reclaimed, or None when the task naps in congestion_wait between priorities (the
    /// seed-era kernels): it sleeps for real and resumes the loop where it left off at its
    /// next allocation attempt, while other tasks run and its writes complete.
    pub fn try_to_free_pages(&mut self, gfp: Gfp, order: usize, tid: TaskId) -> Option<u64> {
        let cpu = self.tasks[tid as usize].cpu;
        let mut sc = ScanControl::new(gfp, order, SWAP_CLUSTER_MAX, tid, cpu);
        self.release_isolated(tid);
        match self.tasks[tid as usize].reclaim.take() {
            Some(r) => {
                sc.priority = r.priority;
                sc.nr_reclaimed = r.nr_reclaimed;
                sc.may_writepage = r.may_writepage;
            }
            None => {
                self.trace(TraceEvent::MmVmscanDirectReclaimBegin {
                    order: order as i32,
                    gfp_flags: gfp.0,
                    may_writepage: 1,
                });
                self.mm.count_vm_events(allocstall_item(gfp), 1);
            }
        }
        let kcfg = &self.mm.kcfg;
        let wake_flushers_for_scanned = kcfg.reclaim_flusher_wakeup == FlusherWakeup::Scanned;
        let naps = kcfg.reclaim_congestion_wait;
        let all_unreclaimable_rule = kcfg.alloc_retry == AllocRetry::ShouldAllocRetry;
        let nid0 = self.mm.cpu_to_node[cpu];
        let nodes: Vec<usize> = (0..self.mm.nodes.len())
            .map(|k| (nid0 + k) % self.mm.nodes.len())
            .collect();
        loop {
            sc.nr_scanned = 0;
            // shrink_zones(): each node of the zonelist once.
            for &nid in &nodes {
                self.mem_cgroup_soft_limit_reclaim(nid, &mut sc);
                self.shrink_node(nid, &mut sc);
                if sc.nr_reclaimed >= sc.nr_to_reclaim || self.must_wait_for_io() {
                    break;
                }
            }
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            if self.must_wait_for_io() && sc.priority > 0 {
                // The pass's writes found the disk without a free request: the reclaimer
                // sleeps in get_request_wait — inside shrink_folio_list, its last batch still
                // isolated — and carries on with the next priority after it.
                self.hold_isolated(tid, sc.last_isolated);
                self.tasks[tid as usize].reclaim = Some(crate::kernel::ReclaimResume {
                    priority: sc.priority - 1,
                    nr_reclaimed: sc.nr_reclaimed,
                    may_writepage: true,
                    gfp,
                    order,
                });
                return None;
            }
            if wake_flushers_for_scanned && sc.nr_scanned > SWAP_CLUSTER_MAX * 3 / 2 {
                // 2.6.35: "Try to write back as many pages as we just scanned".
                self.wakeup_flusher_threads(
                    sc.nr_scanned,
                    crate::mm::page_writeback::WB_REASON_VMSCAN,
                );
                sc.may_writepage = true;
            }
            if sc.priority < DEF_PRIORITY - 2 {
                sc.may_writepage = true;
            }
            let nap = naps && sc.priority < DEF_PRIORITY - 2 && sc.nr_scanned > 0;
            sc.priority -= 1;
            if nap {
                // 2.6.35: "Take a nap, wait for some writeback to complete".
                self.congestion_wait(self.mm.kcfg.hz / 10);
                if sc.priority >= 0 && self.mm.cur.sleep > 0 {
                    self.tasks[tid as usize].reclaim = Some(crate::kernel::ReclaimResume {
                        priority: sc.priority,
                        nr_reclaimed: sc.nr_reclaimed,
                        may_writepage: sc.may_writepage,
                        gfp,
                        order,
                    });
                    return None;
                }
            }
            if sc.priority < 0 {
                if self.retry_with_full_walks(&mut sc) {
                    continue;
                }
                break;
            }
        }
        self.trace(TraceEvent::MmVmscanDirectReclaimEnd {
            nr_reclaimed: sc.nr_reclaimed,
        });
        if sc.nr_reclaimed > 0 {
            self.mm.nodes.iter_mut().for_each(|n| n.kswapd_failures = 0);
        } else if all_unreclaimable_rule && !self.all_unreclaimable() {
            // 2.6.2x/2.6.3x: "top priority shrink_zones still had more to do? don't OOM,
            // then" — progress unless every zone is all_unreclaimable.
            return Some(1);
        }
        Some(sc.nr_reclaimed)
    }

    /// Whether every node is all_unreclaimable as the 2.6.2x kernels kept it: kswapd gave up
    /// on it (MAX_RECLAIM_RETRIES failed runs) and no page has been freed since
    /// (free_pages_bulk cleared the flag on every free).
    fn all_unreclaimable(&self) -> bool {
        let pgfree = self.mm.events[Event::PGFREE as usize];
        self.mm
            .nodes
            .iter()
            .all(|n| n.kswapd_failures >= MAX_RECLAIM_RETRIES && n.pgfree_at_failure == pgfree)
    }

    /// Whether reclaimers hold more isolated pages of this kind than an eighth of the
    /// inactive list — the whole list for reclaimers that may not do I/O (too_many_isolated).
    fn too_many_isolated(&self, nid: usize, file: bool, sc: &ScanControl) -> bool {
        let vs = &self.mm.nodes[nid].vm_stat;
        let (inactive, isolated) = if file {
            (
                vs[NodeStat::NR_INACTIVE_FILE as usize],
                vs[NodeStat::NR_ISOLATED_FILE as usize],
            )
        } else {
            (
                vs[NodeStat::NR_INACTIVE_ANON as usize],
                vs[NodeStat::NR_ISOLATED_ANON as usize],
            )
        };
        let inactive = if sc.gfp_mask.has(__GFP_FS) && sc.gfp_mask.has(__GFP_IO) {
            inactive >> 3
        } else {
            inactive
        };
        isolated > inactive
    }

    /// Whether the current task queued a write the disk had no request for: it sleeps in
    /// get_request_wait and scans nothing more until it wakes.
    fn must_wait_for_io(&self) -> bool {
        self.mm.cur.sleep > 0 && !self.mm.cur.atomic
    }

    /// Direct reclaimers allowed at once under `reclaim_throttle = limit`: `reclaim_limit`,
    /// or RECLAIM_LIMIT = 2 × num_highmem_nodes() (nodes with memory).
    pub fn reclaim_limit(&self) -> u64 {
        match self.mm.kcfg.reclaim_limit {
            0 => {
                2 * self
                    .mm
                    .nodes
                    .iter()
                    .filter(|n| n.zones.iter().any(|&z| self.mm.zones[z].managed_pages > 0))
                    .count() as u64
            }
            l => l,
        }
    }

    /// Direct reclaim behind the parallel-reclaimer gate of `kernel.reclaim_throttle`
    /// (seed 000's try_to_free_pages_throttled). None: the task must sleep and retry —
    /// on the gate's wait queue until a reclaimer finishes (wait_event on
    /// reclaim_throttle_waitq), or in a nap inside reclaim.
    pub fn try_to_free_pages_gated(
        &mut self,
        gfp: Gfp,
        order: usize,
        tid: TaskId,
        ac: &super::page_alloc::AllocContext,
    ) -> Option<u64> {
        use crate::config::ReclaimThrottle;
        let now = self.mm.clock() + self.mm.cur.sleep;
        let gated = self.mm.kcfg.reclaim_throttle == ReclaimThrottle::Limit;
        if self.tasks[tid as usize].reclaim.is_none() {
            if gated && !self.mm.cur.atomic {
                if self.nr_reclaimers >= self.reclaim_limit() {
                    // wait_event(reclaim_throttle_waitq, atomic_add_unless(&nr_reclaimers, 1, RECLAIM_LIMIT))
                    self.tasks[tid as usize].throttled_since.get_or_insert(now);
                    self.reclaim_throttled += 1;
                    if self.reclaim_wq == usize::MAX {
                        // No engine behind this kernel (unit tests): poll once a tick.
                        self.mm.cur.sleep += 1_000_000_000 / self.mm.kcfg.hz;
                    } else {
                        self.mm.cur.block_on = Some(self.reclaim_wq);
                    }
                    return None;
                }
                if let Some(since) = self.tasks[tid as usize].throttled_since.take() {
                    if now.saturating_sub(since) > 1_000_000_000 {
                        // Waited over 1 s: skip reclaim if some zone has 4 × high free.
                        for i in 0..self.mm.zonelists[ac.zonelist].len() {
                            let zid = self.mm.zonelists[ac.zonelist][i];
                            let mark = 4 * self.mm.zones[zid].watermark[Wmark::High as usize];
                            if self
                                .mm
                                .zone_watermark_ok(zid, order, mark, ac.highest_zoneidx, 0)
                            {
                                self.reclaim_skipped += 1;
                                return Some(1);
                            }
                        }
                    }
                }
            }
            self.nr_reclaimers += 1;
            self.max_parallel_reclaimers = self.max_parallel_reclaimers.max(self.nr_reclaimers);
            self.tasks[tid as usize].reclaim_start = now;
        }
        let nr = self.try_to_free_pages(gfp, order, tid)?;
        self.reclaim_done(tid);
        Some(nr)
    }

    /// Counts a sleeping reclaimer's batch as isolated until it wakes (NR_ISOLATED_*).
    fn hold_isolated(&mut self, tid: TaskId, (nid, file, n): (usize, bool, u64)) {
        let item = if file {
            NodeStat::NR_ISOLATED_FILE
        } else {
            NodeStat::NR_ISOLATED_ANON
        };
        self.mm.mod_node_page_state(nid, item, n as i64);
        self.tasks[tid as usize].isolated_held = (nid, file, n);
    }

    /// The batch a reclaimer held isolated while asleep goes back (putback_movable_pages).
    pub fn release_isolated(&mut self, tid: TaskId) {
        let (nid, file, n) = std::mem::take(&mut self.tasks[tid as usize].isolated_held);
        let item = if file {
            NodeStat::NR_ISOLATED_FILE
        } else {
            NodeStat::NR_ISOLATED_ANON
        };
        self.mm.mod_node_page_state(nid, item, -(n as i64));
    }

    /// A direct reclaimer leaves: the count drops and, under the limit, every waiter is
    /// woken (atomic_dec(&nr_reclaimers); wake_up_all(&reclaim_throttle_waitq)).
    pub fn reclaim_done(&mut self, tid: TaskId) {
        let t1 = self.mm.clock() + self.mm.cur.sleep;
        let t0 = self.tasks[tid as usize].reclaim_start;
        self.tasks[tid as usize].reclaim = None;
        self.release_isolated(tid);
        self.nr_reclaimers -= 1;
        self.max_try_to_free_pages_ns = self.max_try_to_free_pages_ns.max(t1.saturating_sub(t0));
        if self.mm.kcfg.reclaim_throttle == crate::config::ReclaimThrottle::Limit
            && self.reclaim_wq != usize::MAX
        {
            self.mm.cur.wake.push(self.reclaim_wq);
        }
    }

    /// Pages reclaim could free in a zone's node: its LRU pages (zone_reclaimable_pages).
    pub fn zone_reclaimable_pages(&self, zid: usize) -> u64 {
        use super::vmstat::ZoneStat;
        let z = &self.mm.zones[zid];
        let s = |i: ZoneStat| z.vm_stat[i as usize].max(0) as u64;
        let mut n = s(ZoneStat::NR_ZONE_INACTIVE_FILE) + s(ZoneStat::NR_ZONE_ACTIVE_FILE);
        if self.can_reclaim_anon_pages() {
            n += s(ZoneStat::NR_ZONE_INACTIVE_ANON) + s(ZoneStat::NR_ZONE_ACTIVE_ANON);
        }
        n
    }

    /// Whether some eligible zone of the node meets the high watermark (pgdat_balanced).
    pub fn pgdat_balanced(&self, nid: usize, order: usize, highest_zoneidx: usize) -> bool {
        let mut any = false;
        for zt in 0..=highest_zoneidx.min(MAX_NR_ZONES - 1) {
            let zid = self.mm.nodes[nid].zones[zt];
            let z = &self.mm.zones[zid];
            if z.managed_pages == 0 {
                continue;
            }
            any = true;
            let mark = z.wmark_pages(Wmark::High);
            let hz = super::mmzone::ZoneType::ALL[highest_zoneidx.min(MAX_NR_ZONES - 1)];
            if self.mm.zone_watermark_ok(zid, order, mark, hz, 0) {
                return true;
            }
        }
        !any
    }

    /// Asks a node's kswapd to balance it for an allocation (wakeup_kswapd).
    pub fn wakeup_kswapd(&mut self, zid: usize, gfp: Gfp, order: usize, highest_zoneidx: usize) {
        let nid = self.mm.zones[zid].nid;
        let node = &mut self.mm.nodes[nid];
        if node.kswapd_highest_zoneidx == MAX_NR_ZONES
            || node.kswapd_highest_zoneidx < highest_zoneidx
        {
            node.kswapd_highest_zoneidx = highest_zoneidx;
        }
        if node.kswapd_order < order {
            node.kswapd_order = order;
        }
        if !node.kswapd_sleeping || node.kswapd_wait == usize::MAX {
            return;
        }
        if node.kswapd_failures >= MAX_RECLAIM_RETRIES
            || (self.pgdat_balanced(nid, order, highest_zoneidx)
                && !self.pgdat_watermark_boosted(nid, highest_zoneidx))
        {
            // Enough free memory, maybe too fragmented: kcompactd may help.
            if !gfp.has(super::gfp::__GFP_DIRECT_RECLAIM) {
                self.wakeup_kcompactd(nid, order, highest_zoneidx);
            }
            return;
        }
        let zone_type = self.mm.zones[zid].zone_type as i32;
        self.trace(TraceEvent::MmVmscanWakeupKswapd {
            nid: nid as i32,
            zid: zone_type,
            order: order as i32,
            gfp_flags: gfp.0,
        });
        let wq = self.mm.nodes[nid].kswapd_wait;
        self.mm.nodes[nid].kswapd_sleeping = false;
        self.mm.cur.wake.push(wq);
    }

    /// Wakes the kswapd of every node in the request's zonelist (wake_all_kswapds).
    pub fn wake_all_kswapds(
        &mut self,
        order: usize,
        gfp: Gfp,
        ac: &super::page_alloc::AllocContext,
    ) {
        let mut last_nid = usize::MAX;
        for i in 0..self.mm.zonelists[ac.zonelist].len() {
            let zid = self.mm.zonelists[ac.zonelist][i];
            let nid = self.mm.zones[zid].nid;
            if nid != last_nid {
                self.wakeup_kswapd(zid, gfp, order, ac.highest_zoneidx as usize);
                last_nid = nid;
            }
        }
    }

    /// One priority pass of kswapd's balance_pgdat(); returns whether balancing is done.
    pub fn balance_pgdat_pass(
        &mut self,
        nid: usize,
        sc: &mut ScanControl,
        highest_zoneidx: usize,
        nr_boost_reclaim: &mut u64,
    ) -> bool {
        let balanced = self.pgdat_balanced(nid, sc.order, highest_zoneidx);
        if !balanced && *nr_boost_reclaim > 0 {
            // Really short of memory: restart as normal reclaim, with writeback and swap.
            *nr_boost_reclaim = 0;
            sc.priority = DEF_PRIORITY;
            sc.may_writepage = true;
            sc.may_swap = true;
            sc.may_shrinkslab = true;
        }
        if balanced && *nr_boost_reclaim == 0 {
            return true;
        }
        sc.reclaim_idx = highest_zoneidx;
        if sc.priority < DEF_PRIORITY - 2 {
            sc.may_writepage = true;
        }
        // kswapd_age_node(): keep the anon inactive list from running dry.
        if self.can_reclaim_anon_pages() && self.inactive_is_low(nid, lru::INACTIVE_ANON) {
            self.shrink_active_list(SWAP_CLUSTER_MAX, nid, sc, lru::ACTIVE_ANON);
        }
        let before = sc.nr_reclaimed;
        sc.nr_scanned = 0;
        // kswapd_shrink_node(): reclaim in proportion to the eligible zones' high watermarks.
        sc.nr_to_reclaim = 0;
        for zt in 0..=highest_zoneidx {
            let z = &self.mm.zones[self.mm.nodes[nid].zones[zt]];
            if z.managed_pages > 0 {
                sc.nr_to_reclaim += z.wmark_pages(Wmark::High).max(SWAP_CLUSTER_MAX);
            }
        }
        // kswapd_shrink_zone() skips a node the soft-limit reclaim balanced (base).
        if !(self.mem_cgroup_soft_limit_reclaim(nid, sc) > 0
            && self.pgdat_balanced(nid, sc.order, highest_zoneidx))
        {
            self.shrink_node(nid, sc);
        }
        if sc.order > 0 && sc.nr_reclaimed >= 2 << sc.order {
            sc.order = 0;
        }
        let mut raise_priority = sc.nr_scanned < sc.nr_to_reclaim;
        let nr_reclaimed = sc.nr_reclaimed - before;
        if *nr_boost_reclaim > 0 {
            // Boost reclaim stays gentle and stops when the boost is reclaimed or nothing is.
            if sc.priority == DEF_PRIORITY - 2 {
                raise_priority = false;
            }
            *nr_boost_reclaim -= (*nr_boost_reclaim).min(nr_reclaimed);
            if *nr_boost_reclaim == 0 || nr_reclaimed == 0 {
                return true;
            }
        }
        if raise_priority || nr_reclaimed == 0 {
            sc.priority -= 1;
        }
        sc.priority < 1
    }

    /// Frees a clean, unmapped page that reclaim isolated (__remove_mapping + free); a
    /// large page-cache folio costs `shrink_large_folio` more (its buffers are charged
    /// by try_to_free_buffers).
    fn remove_mapping_and_free(&mut self, pfn: Pfn, cpu: usize) {
        let kind = self.mm.map[pfn as usize].kind();
        match kind {
            PageKind::Anon => self.delete_from_swap_cache_and_free(pfn, cpu),
            PageKind::File => {
                let nr = self.mm.folio_nr_pages(pfn);
                if nr > 1 {
                    self.mm.cur.acc += self.mm.cost.shrink_large_folio;
                }
                self.remove_file_page_and_free(pfn, cpu)
            }
            _ => unreachable!("only anon and file pages are on the LRU"),
        }
    }
}

/// What reclaim does with a dirty file page (the reclaim_writeback switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirtyAction {
    /// Activate it: writeback is left to the flushers.
    Activate,
    /// Keep it on the inactive list.
    Keep,
    /// It was written by reclaim (pageout) and stays until the write completes.
    WrittenKeep,
}

impl Kernel {
    /// Decides what reclaim does with a dirty file page, per `kernel.reclaim_writeback`
    /// (the dirty branch of shrink_folio_list and pageout()).
    fn reclaim_file_dirty(
        &mut self,
        pfn: Pfn,
        sc: &mut ScanControl,
        references: FolioRef,
    ) -> DirtyAction {
        use crate::config::ReclaimWriteback;
        let nid = self.mm.pfn_to_nid(pfn);
        match self.mm.kcfg.reclaim_writeback {
            ReclaimWriteback::Modern => {
                // Today: only kswapd on a PGDAT_DIRTY node meeting a PG_reclaim page reaches
                // pageout(), which no longer writes filesystem pages; either way it is activated.
                let flags = self.mm.map[pfn as usize].flags;
                if !sc.kswapd || flags & pg::RECLAIM == 0 || !self.mm.nodes[nid].pgdat_dirty {
                    let nr_pages = self.mm.folio_nr_pages(pfn);
                    self.mm.count_node_vm_immediate(nid, nr_pages);
                    self.mm.map[pfn as usize].flags |= pg::RECLAIM;
                }
                DirtyAction::Activate
            }
            ReclaimWriteback::Traceonly
            | ReclaimWriteback::Nodirect
            | ReclaimWriteback::Flushforward => {
                if !sc.kswapd && self.mm.kcfg.reclaim_writeback != ReclaimWriteback::Traceonly {
                    // nodirect: direct reclaim never writes filesystem pages.
                    sc.nr_dirty_skipped += 1;
                    return DirtyAction::Keep;
                }
                if references == FolioRef::ReclaimClean
                    || !sc.gfp_mask.has(__GFP_FS)
                    || !sc.may_writepage
                {
                    return DirtyAction::Keep;
                }
                self.file_writepage(pfn, false);
                DirtyAction::WrittenKeep
            }
        }
    }
}

impl super::Mm {
    /// Counts a folio of `nr` pages marked for immediate reclaim (NR_VMSCAN_IMMEDIATE).
    fn count_node_vm_immediate(&mut self, nid: usize, nr: u64) {
        self.mod_node_page_state(nid, NodeStat::NR_VMSCAN_IMMEDIATE_RECLAIM, nr as i64);
    }
}

/// kswapd's gfp mask.
pub const KSWAPD_GFP: Gfp = GFP_KERNEL;

/// Where kswapd is in its loop (kswapd() and kswapd_try_to_sleep()).
#[derive(Debug, Clone)]
enum KswapdState {
    /// About to check whether the node is balanced and go to sleep.
    TryToSleep,
    /// In the short HZ/10 nap before sleeping for good (started at).
    ShortSleep(u64),
    /// Asleep until wakeup_kswapd().
    Asleep,
    /// Running balance_pgdat() at some priority.
    Balance {
        highest_zoneidx: usize,
        alloc_order: usize,
    },
}

/// A node's kswapd kernel thread (mm/vmscan.c kswapd()).
pub struct Kswapd {
    nid: usize,
    state: KswapdState,
    boost: super::watermark_boost::BoostReclaim,
    sc: ScanControl,
    /// The order kswapd was last asked to balance for (kswapd()'s alloc_order).
    alloc_order: usize,
    /// The order balance_pgdat() ended at (kswapd()'s reclaim_order).
    reclaim_order: usize,
    highest_zoneidx: usize,
}

/// kswapd's short nap before sleeping (HZ/10) [ns].
pub const KSWAPD_SHORT_SLEEP: u64 = 100_000_000;

impl Kswapd {
    /// The kswapd of node `nid`.
    pub fn new(nid: usize) -> Self {
        Kswapd {
            nid,
            state: KswapdState::TryToSleep,
            boost: Default::default(),
            sc: ScanControl::new(KSWAPD_GFP, 0, 0, 0, 0),
            alloc_order: 0,
            reclaim_order: 0,
            highest_zoneidx: MAX_NR_ZONES - 1,
        }
    }

    /// Starts balance_pgdat() for the order and zone asked for by wakeup_kswapd().
    fn wake(&mut self, k: &mut Kernel, tid: TaskId) {
        let node = &mut k.mm.nodes[self.nid];
        let alloc_order = node.kswapd_order;
        let highest = if node.kswapd_highest_zoneidx == MAX_NR_ZONES {
            self.highest_zoneidx
        } else {
            node.kswapd_highest_zoneidx
        };
        node.kswapd_order = 0;
        node.kswapd_highest_zoneidx = MAX_NR_ZONES;
        node.kswapd_sleeping = false;
        k.trace(TraceEvent::MmVmscanKswapdWake {
            nid: self.nid as i32,
            zid: highest as i32,
            order: alloc_order as i32,
        });
        let cpu = k.tasks[tid as usize].cpu;
        let mut sc = ScanControl::new(KSWAPD_GFP, alloc_order, 0, tid, cpu);
        sc.kswapd = true;
        self.boost = k.boost_reclaim_begin(self.nid, highest);
        if self.boost.nr_boost_reclaim > 0 {
            sc.may_writepage = false;
            sc.may_swap = false;
            sc.may_shrinkslab = false;
        }
        self.sc = sc;
        k.mm.count_vm_events(Event::PAGEOUTRUN, 1);
        self.state = KswapdState::Balance {
            highest_zoneidx: highest,
            alloc_order,
        };
    }

    /// Whether kswapd may sleep: the node is balanced or hopeless (prepare_kswapd_sleep).
    fn prepare_kswapd_sleep(&self, k: &Kernel) -> bool {
        k.mm.nodes[self.nid].kswapd_failures >= MAX_RECLAIM_RETRIES
            || k.pgdat_balanced(self.nid, self.reclaim_order, self.highest_zoneidx)
    }
}

impl Program<Kernel> for Kswapd {
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let k = &mut *cx.k;
        let tid = cx.tid;
        let wq = k.mm.nodes[self.nid].kswapd_wait;
        loop {
            match self.state.clone() {
                KswapdState::TryToSleep => {
                    if self.prepare_kswapd_sleep(k) {
                        // kswapd_try_to_sleep(): compaction may succeed again now, and
                        // kcompactd is asked to compact for the order kswapd reclaimed for,
                        // before the short nap.
                        k.reset_isolation_suitable(self.nid);
                        k.wakeup_kcompactd(self.nid, self.alloc_order, self.highest_zoneidx);
                        // clear_pgdat_congested(): the node is balanced.
                        let node = &mut k.mm.nodes[self.nid];
                        node.lruvec_congested = false;
                        node.pgdat_dirty = false;
                        node.pgdat_writeback = false;
                        self.state = KswapdState::ShortSleep(cx.now);
                        k.mm.nodes[self.nid].kswapd_sleeping = true;
                        return StepOut {
                            user_ns: 0,
                            next: Step::Block {
                                wq,
                                timeout: Some(KSWAPD_SHORT_SLEEP),
                            },
                        };
                    }
                    self.wake(k, tid);
                }
                KswapdState::ShortSleep(started) => {
                    let woken_early = !k.mm.nodes[self.nid].kswapd_sleeping
                        || cx.now < started + KSWAPD_SHORT_SLEEP;
                    if woken_early {
                        // Woken from the nap: the order reclaimed for is asked again.
                        let node = &mut k.mm.nodes[self.nid];
                        node.kswapd_order = node.kswapd_order.max(self.reclaim_order);
                    }
                    if !woken_early && self.prepare_kswapd_sleep(k) {
                        k.trace(TraceEvent::MmVmscanKswapdSleep {
                            nid: self.nid as i32,
                        });
                        self.state = KswapdState::Asleep;
                        k.mm.nodes[self.nid].kswapd_sleeping = true;
                        return StepOut {
                            user_ns: 0,
                            next: Step::Block { wq, timeout: None },
                        };
                    }
                    let ev = if woken_early {
                        Event::KSWAPD_LOW_WMARK_HIT_QUICKLY
                    } else {
                        Event::KSWAPD_HIGH_WMARK_HIT_QUICKLY
                    };
                    k.mm.count_vm_events(ev, 1);
                    self.wake(k, tid);
                }
                KswapdState::Asleep => self.wake(k, tid),
                KswapdState::Balance {
                    highest_zoneidx,
                    alloc_order,
                } => {
                    let done = k.balance_pgdat_pass(
                        self.nid,
                        &mut self.sc,
                        highest_zoneidx,
                        &mut self.boost.nr_boost_reclaim,
                    );
                    k.blk_finish_plug();
                    if done {
                        let boost = self.boost;
                        self.boost = Default::default();
                        k.boost_reclaim_finish(&boost, self.nid, highest_zoneidx);
                        if self.sc.nr_reclaimed == 0
                            && !k.pgdat_balanced(self.nid, self.sc.order, highest_zoneidx)
                        {
                            k.mm.nodes[self.nid].kswapd_failures += 1;
                            k.mm.nodes[self.nid].pgfree_at_failure =
                                k.mm.events[Event::PGFREE as usize];
                        }
                        // kswapd(): a high order given up on goes to sleep with the
                        // order asked for; else the loop starts over with the order
                        // asked for meanwhile (pgdat->kswapd_order).
                        self.reclaim_order = self.sc.order.min(alloc_order);
                        if self.reclaim_order < alloc_order {
                            self.alloc_order = alloc_order;
                        } else {
                            self.alloc_order = k.mm.nodes[self.nid].kswapd_order;
                            self.reclaim_order = self.alloc_order;
                        }
                        self.highest_zoneidx = highest_zoneidx;
                        self.state = KswapdState::TryToSleep;
                    }
                    // Each priority pass is one step, so others run between passes.
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
mod version_tests {
    use crate::config::Scenario;
    use crate::kernel::Kernel;
    use crate::mm::gfp::GFP_KERNEL;
    use crate::mm::mmzone::lru;
    use crate::mm::vmscan::ScanControl;

    /// A booted 1 GiB kernel with these `[kernel]` lines.
    fn boot(kernel: &str) -> Kernel {
        let sc = Scenario::from_toml(&format!(
            "[machine]\nmemory = \"1GiB\"\n[kernel]\n{kernel}\n"
        ))
        .unwrap();
        Kernel::boot(&sc.machine, &sc.kernel, &sc.cost)
    }

    /// (anon_cost, file_cost) after one reclaim cost of each kind on a large LRU.
    fn costs(kernel: &str) -> (u64, u64) {
        let mut k = boot(kernel);
        k.mm.scan_lruvec_mut(0).nr[lru::INACTIVE_FILE] = 1 << 20;
        // shrink_inactive_list of file: 2 pages written, 10 rotated; a refault of anon.
        k.lru_note_cost(0, true, 2, 10);
        k.lru_note_cost(0, false, 1, 0);
        let lv = k.mm.scan_lruvec(0);
        (lv.anon_cost, lv.file_cost)
    }

    #[test]
    fn lru_cost_rotations_is_6_18s_io_times_32_plus_rotations_and_6_1s_pages_of_io() {
        assert_eq!(costs(""), (32, 2 * 32 + 10));
        assert_eq!(costs("version = \"6.1\""), (1, 2));
        assert_eq!(
            costs("version = \"6.1\"\nlru_cost_rotations = true"),
            (32, 74)
        );
    }

    /// Whether a kswapd pass over a node with nothing on its LRU tags it PGDAT_DIRTY.
    fn pgdat_dirty_after_empty_kswapd_pass(kernel: &str) -> bool {
        let mut k = boot(kernel);
        let mut sc = ScanControl::new(GFP_KERNEL, 0, 32, 0, 0);
        sc.kswapd = true;
        k.shrink_node(0, &mut sc);
        assert_eq!(sc.nr.nr_file_taken, 0);
        k.mm.nodes[0].pgdat_dirty
    }

    #[test]
    fn kswapd_taking_no_file_pages_tags_the_node_dirty_on_6_1_only() {
        assert!(!pgdat_dirty_after_empty_kswapd_pass(""));
        assert!(pgdat_dirty_after_empty_kswapd_pass("version = \"6.1\""));
        assert!(!pgdat_dirty_after_empty_kswapd_pass(
            "version = \"6.1\"\npgdat_dirty_needs_unqueued = true"
        ));
    }
}

#[cfg(test)]
mod locked_folio_tests {
    use crate::config::Scenario;
    use crate::kernel::{AllocResult, Kernel};
    use crate::mm::gfp::GFP_KERNEL;
    use crate::mm::vmscan::ScanControl;

    /// A 1 GiB kernel holding a file of 1,024 clean cached pages, its inode and a task.
    fn clean_file() -> (Kernel, u32) {
        let sc = Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        let ino = k.lookup_or_create("f");
        for i in 0..1024 {
            let left = (1024 - i) * 4096;
            assert!(matches!(
                k.file_write_folio(tid, ino, i, left),
                AllocResult::Page(_)
            ));
        }
        k.write_inode_pages(ino, u64::MAX);
        k.process_io(u64::MAX / 2);
        assert_eq!(k.inodes[ino as usize].nr_dirty, 0);
        (k, ino)
    }

    /// Pages of the file left after a reclaim pass asked for all of them.
    fn after_reclaim(k: &mut Kernel, ino: u32) -> u64 {
        let mut sc = ScanControl::new(GFP_KERNEL, 0, 4096, 0, 0);
        sc.priority = 0;
        k.shrink_node(0, &mut sc);
        k.inodes[ino as usize].nrpages
    }

    #[test]
    fn reclaim_passes_by_the_folios_a_readahead_is_adding() {
        // __filemap_add_folio adds readahead folios locked, and they stay locked until
        // their read completes: shrink_folio_list's folio_trylock fails on them.
        let (mut k, ino) = clean_file();
        k.ra_locked = Some((ino, 0, 1024));
        assert_eq!(after_reclaim(&mut k, ino), 1024);
        k.ra_locked = None;
        assert_eq!(after_reclaim(&mut k, ino), 0);
    }
}

#[cfg(test)]
mod kswapd_sleep_tests {
    use super::{Kswapd, KswapdState};
    use crate::config::Scenario;
    use crate::engine::{Program, Step, StepCtx};
    use crate::kernel::Kernel;
    use crate::mm::memory::Fault;
    use crate::mm::mmzone::{Wmark, PAGEBLOCK_ORDER};

    /// A 256 MiB kernel whose free memory is plentiful but in pieces of 8 pages: every
    /// other run of 8 anonymous pages unmapped, the whole free blocks left taken away.
    fn fragmented() -> Kernel {
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"256MiB\"\ncpus = 2\n[kernel]\nwatermark_boost_factor = 0\n",
        )
        .unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        let zid = k.mm.nodes[0].zones[crate::mm::mmzone::ZoneType::Dma32 as usize];
        let mut index = 0u64;
        while k.mm.zones[zid].free_pages() >= (k.mm.zones[zid].wmark_pages(Wmark::High) * 4) as i64
        {
            assert_eq!(k.handle_mm_fault(tid, index), Fault::Minor);
            index += 1;
        }
        for i in (0..index).filter(|i| (i / 8) % 2 == 1) {
            let slot = k.tasks[tid as usize].pt.slot(i).unwrap();
            k.zap_slot(tid, slot, 0);
        }
        k.mm.drain_all_pages();
        for z in 0..k.mm.zones.len() {
            for order in PAGEBLOCK_ORDER..k.mm.zones[z].free_area.len() {
                while k.mm.zones[z].free_area[order].nr_free > 0 {
                    let mt = (0..5)
                        .find(|&m| k.mm.zones[z].free_area[order].nr_free_mt[m] > 0)
                        .unwrap();
                    let head = k.mm.free_list_first(
                        z,
                        order,
                        crate::mm::mmzone::MigrateType::from_u8(mt as u8),
                    );
                    assert!(k.mm.__isolate_free_page(head, order));
                }
            }
        }
        k
    }

    /// kswapd about to sleep after balancing for `alloc_order` (it gave the order up
    /// once it had reclaimed enough for compaction: reclaim_order 0); returns whether
    /// the sleeping kcompactd (on wait queue 7) was woken before kswapd's nap.
    fn kcompactd_woken_by_kswapd_going_to_sleep(alloc_order: usize) -> bool {
        let mut k = fragmented();
        let node = k.compact.node(0);
        node.wait = 7;
        node.sleeping = true;
        let mut kswapd = Kswapd::new(0);
        kswapd.state = KswapdState::TryToSleep;
        kswapd.alloc_order = alloc_order;
        let mut cx = StepCtx {
            k: &mut k,
            tid: 0,
            now: 0,
            quantum: 1_000_000,
        };
        let out = kswapd.step(&mut cx);
        // The short nap (HZ/10), not the full sleep.
        assert!(matches!(
            out.next,
            Step::Block {
                timeout: Some(_),
                ..
            }
        ));
        !k.compact.node(0).sleeping && k.mm.cur.wake.contains(&7)
    }

    #[test]
    fn kswapd_wakes_kcompactd_for_the_order_it_was_woken_for_before_its_nap() {
        // kswapd_try_to_sleep(): wakeup_kcompactd(pgdat, alloc_order, ...) before
        // schedule_timeout(HZ/10); no free order-9 block, compaction suitable.
        assert!(kcompactd_woken_by_kswapd_going_to_sleep(PAGEBLOCK_ORDER));
        // Woken for order 0, kswapd has nothing to ask of kcompactd.
        assert!(!kcompactd_woken_by_kswapd_going_to_sleep(0));
    }
}
