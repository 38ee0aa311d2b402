//! The swap cache on the swap-in path, and swap readahead.
//!
//! Models 6.18's mm/swap_state.c: `swap_cache_get_folio()` (a fault that
//! finds its page in the swap cache, counting a readahead hit),
//! `swapin_readahead()` choosing, as `swap_use_vma_readahead()` does, between
//! VMA-based readahead (`swap_vma_readahead()` over the window of
//! `swap_vma_ra_win()`) and cluster readahead (`swap_cluster_readahead()`
//! over a `vm.page-cluster`-aligned block of slots sized by
//! `swapin_nr_pages()`), both sized by `__swapin_nr_pages()` from the
//! readahead hits; `__read_swap_cache_async()` putting a new page in the swap
//! cache; and mm/page_io.c's `swap_read_folio()` under a plug, whose reads of
//! consecutive slots reach the disk as one request (`swap_read_unplug()`,
//! the block plug merging contiguous bios).
//!
//! Simplifications: one VMA per task (its anonymous memory), so a task's
//! window is its `vma->swap_readahead_info`; no mempolicy interleave.

use super::gfp::GFP_HIGHUSER_MOVABLE;
use super::memory::{BioKind, Fault};
use super::page::{pg, PageKind, Pfn, NO_OWNER};
use super::rmap::{Entry, Owner};
use super::vmstat::{Event, NodeStat};
use crate::block::Request;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Largest VMA readahead order (SWAP_RA_ORDER_CEILING, 64-bit).
pub const SWAP_RA_ORDER_CEILING: u64 = 5;
/// Most readahead hits remembered per VMA (SWAP_RA_HITS_MAX = SWAP_RA_HITS_MASK, PAGE_SHIFT / 2 bits).
pub const SWAP_RA_HITS_MAX: u32 = (1 << 6) - 1;
/// Pages per PMD: the VMA window never crosses a page-table page (PMD_SIZE / PAGE_SIZE).
const PTRS_PER_PTE: u64 = 512;

/// One VMA's readahead state (vma->swap_readahead_info: address, window, hits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwapRaInfo {
    /// Page index of the last swap fault (SWAP_RA_ADDR).
    pub addr: u64,
    /// Last window [pages] (SWAP_RA_WIN).
    pub win: u32,
    /// Readahead hits since (SWAP_RA_HITS).
    pub hits: u32,
}

/// The readahead state of the swap device and of each task's VMA.
#[derive(Debug, Clone, Default)]
pub struct SwapRaState {
    /// Each task's vma->swap_readahead_info, by task id.
    vma: Vec<SwapRaInfo>,
    /// Hits not yet used by cluster readahead (swapin_readahead_hits).
    hits: u32,
    /// The offset of the last cluster readahead without hits (swapin_nr_pages's prev_offset).
    prev_offset: u64,
    /// The last cluster window [pages] (last_readahead_pages).
    last_readahead_pages: u32,
}

impl SwapRaState {
    /// A task's VMA readahead state.
    pub fn vma(&mut self, tid: TaskId) -> &mut SwapRaInfo {
        let i = tid as usize;
        if self.vma.len() <= i {
            self.vma.resize(i + 1, SwapRaInfo::default());
        }
        &mut self.vma[i]
    }
}

/// Pages to read around a fault from the hits since the last one (__swapin_nr_pages):
/// hits + 2 rounded up to a power of two (at least 4), 1 without hits unless the fault
/// is next to the previous one, at most `max_pages`, and never below half the last window.
pub fn __swapin_nr_pages(
    prev_offset: u64,
    offset: u64,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: an adjacent offset still earns a window of 2.
        if offset != prev_offset + 1 && offset + 1 != prev_offset {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    // Don't shrink readahead too fast.
    pages.max(prev_win / 2)
}

/// The VMA window around a fault at page `faddr` of a VMA of `vma_end` pages
/// (swap_vma_ra_win): updates the VMA's state and returns (window, first page, end page).
pub fn swap_vma_ra_win(
    ra: &mut SwapRaInfo,
    faddr: u64,
    vma_end: u64,
    page_cluster: u64,
) -> (u32, u64, u64) {
    let max_win = 1u32 << page_cluster.min(SWAP_RA_ORDER_CEILING);
    if max_win == 1 {
        return (1, faddr, faddr + 1);
    }
    let (prev_faddr, prev_win, hits) = (ra.addr, ra.win, ra.hits);
    let win = __swapin_nr_pages(prev_faddr, faddr, hits, max_win, prev_win);
    *ra = SwapRaInfo {
        addr: faddr,
        win,
        hits: 0,
    };
    if win == 1 {
        return (1, faddr, faddr + 1);
    }
    let w = win as i64;
    let f = faddr as i64;
    let left = if faddr == prev_faddr + 1 {
        f
    } else if prev_faddr == faddr + 1 {
        f - w + 1
    } else {
        f - (w - 1) / 2
    };
    let right = left + w;
    let pmd = faddr & !(PTRS_PER_PTE - 1);
    let start = (left.max(0) as u64).max(pmd);
    let end = (right.max(0) as u64).min(vma_end).min(pmd + PTRS_PER_PTE);
    (win, start, end.max(faddr + 1))
}

impl Kernel {
    /// Whether swap-in reads ahead by virtual address (swap_use_vma_readahead):
    /// /sys/kernel/mm/swap/vma_ra_enabled and no swap device on a rotational disk.
    pub fn swap_use_vma_readahead(&self) -> bool {
        self.mm.kcfg.swap_vma_readahead
            && !(self.disk.config().rotational && self.swap.nr_rotate_swap())
    }

    /// Whether a swap-cache page is still locked for its read (PG_locked until the read's
    /// end_io; not yet submitted, or submitted and not complete).
    pub fn swap_read_in_flight(&self, p: Pfn) -> bool {
        let now = self.mm.clock();
        // No read submitted completes after now: nothing is locked (the common case).
        self.swap.reads_done_by() > now && self.swap.folio(p).is_some_and(|f| f.uptodate_at > now)
    }

    /// The page of swap slot `s` if it is in the swap cache (swap_cache_get_folio): a page
    /// readahead brought counts a hit (SWAP_RA_HIT) in the faulting VMA's state or, for
    /// cluster readahead, in swapin_readahead_hits.
    pub fn swap_cache_get_folio(&mut self, s: u32, tid: TaskId, index: u64) -> Option<Pfn> {
        let p = self.swap.cache_lookup(s)?;
        let readahead = self.swap.folio_test_clear_readahead(p);
        let vma_ra = self.swap_use_vma_readahead();
        if vma_ra {
            let ra = self.swap.ra.vma(tid);
            let hits = if readahead {
                (ra.hits + 1).min(SWAP_RA_HITS_MAX)
            } else {
                ra.hits
            };
            *ra = SwapRaInfo {
                addr: index,
                win: ra.win,
                hits,
            };
        }
        if readahead {
            self.mm.count_vm_events(Event::SWAP_RA_HIT, 1);
            if !vma_ra {
                self.swap.ra.hits += 1;
            }
        }
        Some(p)
    }

    /// Reads the page of slot `s` and its neighbours into the swap cache (swapin_readahead):
    /// by virtual address around page `index` or by swap offset around `s`. Returns the
    /// faulting page, in the swap cache and on the LRU, its read submitted.
    pub fn swapin_readahead(&mut self, tid: TaskId, index: u64, s: u32) -> Result<Pfn, Fault> {
        if self.swap_use_vma_readahead() {
            self.swap_vma_readahead(tid, index, s)
        } else {
            self.swap_cluster_readahead(tid, s)
        }
    }

    /// Reads slot `s` for swapoff's unuse_pte_range: by swap offset with its neighbours
    /// (swap_cluster_readahead) on a rotational device, else the page alone (the VMA
    /// window of the owner is not walked here).
    pub(crate) fn swapin_for_unuse(&mut self, tid: TaskId, s: u32) -> Result<Pfn, Fault> {
        if self.swap_use_vma_readahead() {
            self.read_swap_slots(tid, s, &[(s, false)])
        } else {
            self.swap_cluster_readahead(tid, s)
        }
    }

    /// Reads the VMA window around a fault (swap_vma_readahead): every swap entry of the
    /// task's page table in the window whose page is not in the swap cache.
    fn swap_vma_readahead(&mut self, tid: TaskId, index: u64, s: u32) -> Result<Pfn, Fault> {
        let vsize = self.tasks[tid as usize].vsize;
        let page_cluster = self.mm.kcfg.page_cluster;
        let (win, start, end) = swap_vma_ra_win(self.swap.ra.vma(tid), index, vsize, page_cluster);
        let mut slots = Vec::with_capacity(win as usize);
        if win > 1 {
            for i in start..end {
                if i == index {
                    slots.push((s, false));
                    continue;
                }
                let Some(rslot) = self.tasks[tid as usize].pt.slot(i) else {
                    continue;
                };
                if let Entry::Swap(e) = self.rmap.get(rslot) {
                    slots.push((e, true));
                }
            }
        } else {
            slots.push((s, false));
        }
        self.read_swap_slots(tid, s, &slots)
    }

    /// Reads the `vm.page-cluster`-aligned block of slots around `s`
    /// (swap_cluster_readahead, sized by swapin_nr_pages).
    fn swap_cluster_readahead(&mut self, tid: TaskId, s: u32) -> Result<Pfn, Fault> {
        let mask = self.swapin_nr_pages(s as u64) as u64 - 1;
        // Offsets within the device: the header is skipped, the end clipped to si->max.
        let (first, last) = self.swap.device_range(s);
        let base = first as u64 - 1;
        let offset = s as u64 - base;
        let start = (offset & !mask).max(1) + base;
        let end = ((offset | mask) + base).min(last as u64);
        let slots: Vec<(u32, bool)> = (start..=end).map(|o| (o as u32, o != s as u64)).collect();
        self.read_swap_slots(tid, s, &slots)
    }

    /// The cluster readahead window (swapin_nr_pages): 1 << vm.page-cluster at most,
    /// grown by the hits since the last call and halved at most each time.
    fn swapin_nr_pages(&mut self, offset: u64) -> u32 {
        let page_cluster = self.mm.kcfg.page_cluster;
        let max_pages = 1u32 << page_cluster;
        if max_pages <= 1 {
            return 1;
        }
        let ra = &mut self.swap.ra;
        let hits = std::mem::take(&mut ra.hits);
        let pages = __swapin_nr_pages(
            ra.prev_offset,
            offset,
            hits,
            max_pages,
            ra.last_readahead_pages,
        );
        if hits == 0 {
            ra.prev_offset = offset;
        }
        ra.last_readahead_pages = pages;
        pages
    }

    /// Reads the slots of a readahead window under one plug; `slots` lists (slot,
    /// readahead) with the faulting slot `target` among them. A readahead page that
    /// cannot be allocated or charged ends the window; the target's failure is the fault's.
    fn read_swap_slots(
        &mut self,
        tid: TaskId,
        target: u32,
        slots: &[(u32, bool)],
    ) -> Result<Pfn, Fault> {
        let mut plug: Vec<(u32, Pfn)> = Vec::new();
        let mut found = None;
        let mut failed = None;
        for &(e, readahead) in slots {
            if readahead && failed.is_some() {
                continue;
            }
            match self.read_swap_cache_async(e, tid, readahead) {
                Ok(Some((p, allocated))) => {
                    if allocated {
                        plug.push((e, p));
                        if readahead {
                            self.mm.count_vm_events(Event::SWAP_RA, 1);
                        }
                    }
                    if e == target {
                        found = Some(p);
                    }
                }
                Ok(None) => {}
                Err(f) => {
                    if e == target || f == Fault::Killed {
                        self.swap_read_unplug(plug);
                        return Err(f);
                    }
                    failed = Some(f);
                }
            }
        }
        self.swap_read_unplug(plug);
        found.ok_or(Fault::Failed)
    }

    /// Finds or allocates the swap-cache page of slot `s` (__read_swap_cache_async):
    /// a free slot is skipped; a new page is charged to the group the slot's owner
    /// belongs to, put in the swap cache and on the LRU (judged by its shadow), and
    /// returned with `true` to be read. Its read is timed by [`Kernel::swap_read_unplug`].
    pub(crate) fn read_swap_cache_async(
        &mut self,
        s: u32,
        tid: TaskId,
        readahead: bool,
    ) -> Result<Option<(Pfn, bool)>, Fault> {
        if let Some(p) = self.swap.cache_lookup(s) {
            return Ok(Some((p, false)));
        }
        let rslot = self.swap.slot_owner(s);
        if !self.swap.in_use(s) || rslot == NO_OWNER || self.rmap.get(rslot) != Entry::Swap(s) {
            return Ok(None);
        }
        let (p, memcg) = self.swapin_alloc_folio(s, tid)?;
        self.mm.map[p as usize].flags |= pg::SWAPCACHE;
        self.swap.cache_add_folio(s, p, readahead, u64::MAX);
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_SWAPCACHED, 1);
        self.mem_cgroup_commit_charge(p, memcg);
        self.mod_memcg_page_state(p, super::memcontrol::stat::SWAPCACHED, 1);
        self.swapin_add_lru(p, s, tid);
        Ok(Some((p, true)))
    }

    /// A new page for swapped-out slot `s`, charged to the group its owner belongs to
    /// (alloc_swap_folio / __read_swap_cache_async: mem_cgroup_swapin_charge_folio);
    /// returns it with the group, to be committed.
    fn swapin_alloc_folio(&mut self, s: u32, tid: TaskId) -> Result<(Pfn, u32), Fault> {
        let rslot = self.swap.slot_owner(s);
        let p = match self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, tid) {
            AllocResult::Page(p) => p,
            AllocResult::Failed => return Err(Fault::Failed),
            AllocResult::Killed => return Err(Fault::Killed),
            AllocResult::Retry => return Err(Fault::Retry),
        };
        // mem_cgroup_swapin_charge_folio(): the group the slot's owner is charged to.
        let memcg = match self.rmap.owner(rslot).0 {
            Owner::Task { .. } => self.mm.memcg.folio_memcg(PageKind::Anon, rslot),
            _ => self.task_memcg(tid),
        };
        if let Some(f) = self.charge_or_free(p, memcg, tid) {
            return Err(f);
        }
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::Anon);
        page.owner = rslot;
        page.flags &= !(pg::DIRTY | pg::YOUNG);
        Ok((p, memcg))
    }

    /// Puts a page read back for slot `s` on the LRU (folio_add_lru), judged by the slot's
    /// shadow; under v1 the page now holds the memsw charge the slot held
    /// (mem_cgroup_swapin_uncharge_swap, memcg1_swapin).
    fn swapin_add_lru(&mut self, p: Pfn, s: u32, tid: TaskId) {
        if self.mm.memcg.do_memsw_account() {
            self.mem_cgroup_uncharge_swap(s);
        }
        if self.mm.kcfg.workingset && self.mm.kcfg.workingset_anon {
            // 5.9+: the swap cache's shadow judges the refault (workingset_refault); a page
            // without one, or evicted too long ago, starts on the inactive list.
            if let Some(shadow) = self.shadows.take_swap(s) {
                self.workingset_refault(p, shadow);
            }
        } else {
            // A page read back is likely in use: it starts on the active list.
            self.mm.map[p as usize].flags |= pg::ACTIVE | pg::WORKINGSET;
            self.mm.count_node_refault(p);
        }
        let cpu = self.tasks[tid as usize].cpu;
        self.mm.folio_add_lru(p, cpu);
    }

    /// Whether slot `s` is on a SWP_SYNCHRONOUS_IO device (zram), whose single-user
    /// entries a fault reads without the swap cache or readahead.
    pub(crate) fn swap_synchronous_io(&self, s: u32) -> bool {
        self.swap
            .devices
            .get(self.swap.swp_type(s))
            .is_some_and(|d| d.zram.is_some())
    }

    /// Reads slot `s` of a synchronous device into a private page, skipping the swap
    /// cache (do_swap_page's SWP_SYNCHRONOUS_IO branch: alloc_swap_folio, then
    /// swap_read_folio): from zswap if it holds the slot, else decompressed from zram.
    /// The caller maps it and frees the slot.
    pub(crate) fn swapin_skip_swapcache(&mut self, tid: TaskId, s: u32) -> Result<Pfn, Fault> {
        let (p, memcg) = self.swapin_alloc_folio(s, tid)?;
        self.mem_cgroup_commit_charge(p, memcg);
        self.swapin_add_lru(p, s, tid);
        if !self.zswap_load(s, p, false) {
            self.mm.count_vm_events(Event::PSWPIN, 1);
            self.mm.count_vm_events(Event::PGPGIN, 4);
            let t = self.swap.swp_type(s);
            self.zram_read_pages(t, 1);
        }
        Ok(p)
    }

    /// Submits the reads gathered under a plug (swap_read_folio + swap_read_unplug):
    /// consecutive slots go as one request; each page is up to date when its request completes.
    fn swap_read_unplug(&mut self, mut plug: Vec<(u32, Pfn)>) {
        // zswap_load(): a slot zswap holds is decompressed here and needs no I/O.
        if !self.zswap.stored_is_empty() {
            plug.retain(|&(s, p)| !self.zswap_load(s, p, true));
        }
        plug.sort_unstable_by_key(|&(s, _)| s);
        let mut i = 0;
        while i < plug.len() {
            let mut j = i + 1;
            while j < plug.len()
                && plug[j].0 == plug[j - 1].0 + 1
                && self.swap.swp_type(plug[j].0) == self.swap.swp_type(plug[i].0)
            {
                j += 1;
            }
            let n = (j - i) as u32;
            self.mm.count_vm_events(Event::PSWPIN, n as u64);
            self.mm.count_vm_events(Event::PGPGIN, 4 * n as u64);
            let t = self.swap.swp_type(plug[i].0);
            let done = if self.swap.devices[t].zram.is_some() {
                self.zram_read_pages(t, n as u64)
            } else {
                let sector = self.swap.swap_sector(plug[i].0);
                self.submit_bio(Request::read(sector, n, 0), BioKind::SwapIn)
            };
            for &(s, p) in &plug[i..j] {
                self.swap.set_uptodate_at(s, p, done);
            }
            i = j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapin_nr_pages_grows_with_hits_and_shrinks_by_half_at_most() {
        // No hits, not adjacent: one page; adjacent: two.
        assert_eq!(__swapin_nr_pages(100, 300, 0, 8, 0), 1);
        assert_eq!(__swapin_nr_pages(100, 101, 0, 8, 0), 2);
        assert_eq!(__swapin_nr_pages(101, 100, 0, 8, 0), 2);
        // Hits: hits + 2 rounded up to a power of two, at least 4, capped by max_pages.
        assert_eq!(__swapin_nr_pages(0, 500, 1, 8, 0), 4);
        assert_eq!(__swapin_nr_pages(0, 500, 3, 8, 0), 8);
        assert_eq!(__swapin_nr_pages(0, 500, 30, 8, 0), 8);
        assert_eq!(__swapin_nr_pages(0, 500, 30, 32, 0), 32);
        // A window of 8 without hits shrinks to 4, then 2, then 1.
        assert_eq!(__swapin_nr_pages(0, 500, 0, 8, 8), 4);
        assert_eq!(__swapin_nr_pages(0, 500, 0, 8, 4), 2);
        assert_eq!(__swapin_nr_pages(0, 500, 0, 8, 2), 1);
    }

    #[test]
    fn vma_window_follows_the_fault_direction_and_stays_in_the_pmd() {
        let mut ra = SwapRaInfo::default();
        // The first fault, not next to address 0: a window of 1.
        assert_eq!(swap_vma_ra_win(&mut ra, 1000, 4096, 3), (1, 1000, 1001));
        // The next page, no hits yet: adjacent earns 2, starting at the fault.
        assert_eq!(swap_vma_ra_win(&mut ra, 1001, 4096, 3), (2, 1001, 1003));
        // Hits grow the window: 3 hits → 8 pages forward from a sequential fault.
        ra.hits = 3;
        assert_eq!(swap_vma_ra_win(&mut ra, 1002, 4096, 3), (8, 1002, 1010));
        assert_eq!(ra.hits, 0, "the window takes the hits");
        // Backwards: the window ends at the fault.
        ra.hits = 3;
        assert_eq!(swap_vma_ra_win(&mut ra, 1001, 4096, 3), (8, 994, 1002));
        // Elsewhere: centred, clipped to the PMD (pages 512..1024) and the VMA.
        ra.hits = 3;
        assert_eq!(swap_vma_ra_win(&mut ra, 513, 4096, 3), (8, 512, 518));
        ra.hits = 3;
        assert_eq!(swap_vma_ra_win(&mut ra, 2000, 2002, 3), (8, 1997, 2002));
        // vm.page-cluster = 0 turns readahead off; a large one is capped at 2^5.
        assert_eq!(swap_vma_ra_win(&mut ra, 100, 4096, 0), (1, 100, 101));
        ra.hits = 60;
        assert_eq!(swap_vma_ra_win(&mut ra, 101, 4096, 9).0, 32);
    }
}
