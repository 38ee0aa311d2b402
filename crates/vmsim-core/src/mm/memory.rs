//! Page faults and unmapping of anonymous memory, and the swap-in/swap-out paths.
//!
//! Models mm/memory.c (handle_mm_fault, do_anonymous_page, do_swap_page,
//! zap_pte_range), mm/rmap.c (try_to_unmap for anonymous pages), mm/swap_state.c
//! (add_to_swap, delete_from_swap_cache) and mm/page_io.c (swap_writepage,
//! swap_read_folio, end_swap_bio_write). A task's anonymous memory is the
//! page range [0, vsize); each page is a slot of the task's [`SlotTable`]
//! holding a frame or a swap entry. Swap-out writes are gathered per reclaim
//! batch and submitted as runs of consecutive slots (the block plug).
//! A page read back stays in the swap cache, keeping its slot, until it is
//! written, its last mapping goes or swap is more than half full
//! (should_try_to_free_swap, folio_free_swap); reclaim then frees it again
//! without writing it. The swap-in path itself is in swap_state.rs.

use super::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use super::page::{pg, PageKind, Pfn, NIL, NO_OWNER};
use super::rmap::{Entry, Owner};
use super::vmstat::{Event, NodeStat};
use crate::block::{Request, Submitted, WbtKind};
use crate::engine::TaskId;
use crate::kernel::{pgtable_pages, AllocResult, Kernel};

/// What a page fault did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The page was resident: an access, no fault.
    Access,
    /// A minor fault: a new zeroed page, or a page still in the swap cache.
    Minor,
    /// A major fault: the page was read back from swap; the task sleeps until the read completes.
    /// (A minor fault on a page whose readahead read is still in flight sleeps too: `Current::sleep`.)
    Major,
    /// No memory for the page: the fault fails (VM_FAULT_OOM).
    Failed,
    /// The faulting task was chosen by the OOM killer.
    Killed,
    /// Reclaim throttled the task: it sleeps and faults again.
    Retry,
}

/// What an I/O in flight is for.
#[derive(Debug, Clone)]
pub enum BioKind {
    /// Anonymous pages written to swap.
    SwapOut(Vec<Pfn>),
    /// Pages read back from swap (one request of a plugged readahead).
    SwapIn,
    /// File pages written back.
    FileWrite(Vec<Pfn>),
    /// File pages read.
    FileRead,
}

impl Kernel {
    /// Resident anonymous pages of a task (get_mm_counter(MM_ANONPAGES)).
    pub fn task_rss(&self, tid: TaskId) -> u64 {
        self.tasks[tid as usize].rss
    }

    /// Makes sure the task's page tables cover `vsize` pages (pte_alloc, pmd_alloc, …),
    /// each charged to the task's group (GFP_PGTABLE_USER: __memcg_kmem_charge_page).
    fn grow_page_tables(&mut self, tid: TaskId, vsize: u64) -> AllocResult {
        let t = tid as usize;
        while (self.tasks[t].pgtables.len() as u64) < pgtable_pages(vsize) {
            match self.alloc_pages(GFP_KERNEL, 0, tid) {
                AllocResult::Page(p) => {
                    let objcg = match self.memcg_kmem_charge_page(tid, GFP_KERNEL) {
                        Ok(objcg) => objcg,
                        Err(r) => {
                            let cpu = self.tasks[t].cpu;
                            self.mm.free_pages(p, 0, cpu);
                            return r;
                        }
                    };
                    self.tasks[t].pgtables_objcg.push(objcg);
                    self.mm.map[p as usize].set_kind(PageKind::PgTable);
                    self.mm.map[p as usize].owner = tid;
                    let nid = self.mm.pfn_to_nid(p);
                    self.mm
                        .mod_node_page_state(nid, NodeStat::NR_PAGE_TABLE_PAGES, 1);
                    self.tasks[t].pgtables.push(p);
                }
                other => return other,
            }
        }
        AllocResult::Page(NIL)
    }

    /// Handles a write to page `index` of the task's anonymous memory (handle_mm_fault).
    pub fn handle_mm_fault(&mut self, tid: TaskId, index: u64) -> Fault {
        self.handle_mm_fault_rw(tid, index, true)
    }

    /// Handles a read (`write` false) or a write to page `index` of the task's anonymous
    /// memory (handle_mm_fault with or without FAULT_FLAG_WRITE).
    pub fn handle_mm_fault_rw(&mut self, tid: TaskId, index: u64, write: bool) -> Fault {
        let t = tid as usize;
        let slot = {
            let task = &mut self.tasks[t];
            task.pt
                .slot_or_alloc(&mut self.rmap, index, |i| Owner::Task { tid, index: i })
        };
        let entry = self.rmap.get(slot);
        if entry == Entry::None && (write || !self.mm.kcfg.rules().zero_page) {
            // A fault that may map a huge page allocates its page table after the folio.
            return self.do_anonymous_fault(tid, index, slot);
        }
        if let Err(f) = self.pte_alloc(tid, index + 1) {
            return f;
        }
        match entry {
            Entry::Page(pfn) => {
                self.mm.map[pfn as usize].flags |= pg::YOUNG;
                if write && self.mm.map[pfn as usize].test(pg::SWAPCACHE) {
                    // The first write to a page mapped from the swap cache (do_wp_page →
                    // wp_can_reuse_anon_folio): its swap copy is stale from now on.
                    self.swap_cache_page_written(pfn);
                }
                Fault::Access
            }
            // A read under the zero-page rule (the other empty-slot faults returned above).
            Entry::None => self.do_anonymous_zero_page(tid, slot),
            Entry::Zero if !write => Fault::Access,
            // do_wp_page on the zero page: wp_page_copy gives the task a zeroed page of its own.
            Entry::Zero => self.do_anonymous_page_at(tid, slot),
            Entry::Swap(s) => self.do_swap_page(tid, index, slot, s, write),
        }
    }

    /// Makes the task's page tables cover its first `vsize` pages (pte_alloc in
    /// handle_pte_fault, the upper levels in __handle_mm_fault).
    pub(crate) fn pte_alloc(&mut self, tid: TaskId, vsize: u64) -> Result<(), Fault> {
        let t = tid as usize;
        if vsize <= self.tasks[t].vsize {
            return Ok(());
        }
        match self.grow_page_tables(tid, vsize) {
            AllocResult::Page(_) => {
                self.tasks[t].vsize = vsize;
                Ok(())
            }
            AllocResult::Failed => Err(Fault::Failed),
            AllocResult::Killed => Err(Fault::Killed),
            AllocResult::Retry => Err(Fault::Retry),
        }
    }

    /// A read fault on an empty slot maps the shared zero page (do_anonymous_page's
    /// `!(vmf->flags & FAULT_FLAG_WRITE)` branch): no allocation, no charge, no RSS.
    fn do_anonymous_zero_page(&mut self, tid: TaskId, slot: u32) -> Fault {
        self.mm.cur.acc += self.mm.cost.page_fault;
        self.mm.count_vm_events(Event::PGFAULT, 1);
        self.tasks[tid as usize].stats.faults += 1;
        self.count_memcg_pgfault(tid);
        self.rmap.set(slot, Entry::Zero);
        Fault::Minor
    }

    /// A write to a mapped swap-cache page: its slot goes (folio_free_swap), or, while the
    /// old contents are still being written, the page is dirty and will be written again.
    fn swap_cache_page_written(&mut self, p: Pfn) {
        if !self.folio_free_swap(p) {
            self.mm.map[p as usize].flags |= pg::DIRTY;
        }
    }

    /// Takes a mapped page out of the swap cache and frees its slot (folio_free_swap);
    /// false while it is under writeback or its slot is still referenced by a swap entry.
    pub(crate) fn folio_free_swap(&mut self, p: Pfn) -> bool {
        let page = self.mm.map[p as usize];
        if !page.test(pg::SWAPCACHE) || page.test(pg::WRITEBACK) {
            return false;
        }
        let Some(f) = self.swap.folio(p) else {
            return false;
        };
        if self.rmap.get(page.owner) != Entry::Page(p) {
            // folio_swapped(): a page-table entry still holds the slot.
            return false;
        }
        self.delete_from_swap_cache(p, f.slot);
        let cpu = self.mm.cur.cpu;
        self.swap_entry_free(f.slot, cpu);
        true
    }

    /// Takes a page out of the swap cache (delete_from_swap_cache); its slot stays.
    fn delete_from_swap_cache(&mut self, p: Pfn, s: u32) {
        self.mod_memcg_page_state(p, super::memcontrol::stat::SWAPCACHED, -1);
        self.swap.cache_del(s);
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_SWAPCACHED, -1);
        self.mm.map[p as usize].flags &= !(pg::SWAPCACHE | pg::DIRTY);
    }

    /// Frees a swap slot no page-table entry or swap-cache page holds any more
    /// (swap_entry_free → mem_cgroup_uncharge_swap, swap_range_free).
    pub(crate) fn swap_entry_free(&mut self, s: u32, cpu: usize) {
        self.mem_cgroup_uncharge_swap(s);
        self.swap.set_slot_owner(s, NO_OWNER);
        self.swap.free_swap_slot(cpu, s);
        self.zswap_invalidate(s);
        self.zram_slot_free_notify(s);
    }

    /// Maps a new zeroed page (do_anonymous_page).
    pub(crate) fn do_anonymous_page_at(&mut self, tid: TaskId, slot: u32) -> Fault {
        self.mm.cur.acc += self.mm.cost.page_fault;
        self.mm.count_vm_events(Event::PGFAULT, 1);
        self.tasks[tid as usize].stats.faults += 1;
        self.count_memcg_pgfault(tid);
        match self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, tid) {
            AllocResult::Page(p) => {
                let memcg = self.task_memcg(tid);
                if let Some(f) = self.charge_or_free(p, memcg, tid) {
                    return f;
                }
                self.mm.cur.acc += self.mm.cost.clear_page;
                self.map_anon_page(tid, slot, p);
                self.mem_cgroup_commit_charge(p, memcg);
                let cpu = self.tasks[tid as usize].cpu;
                if self.mm.kcfg.new_anon_active {
                    // Before 5.9: lru_cache_add_active_or_unevictable().
                    self.mm.map[p as usize].flags |= pg::ACTIVE;
                }
                self.mm.folio_add_lru(p, cpu);
                Fault::Minor
            }
            AllocResult::Failed => Fault::Failed,
            AllocResult::Killed => Fault::Killed,
            AllocResult::Retry => Fault::Retry,
        }
    }

    /// Installs a page in a slot and accounts it as mapped anonymous memory (folio_add_new_anon_rmap).
    pub(crate) fn map_anon_page(&mut self, tid: TaskId, slot: u32, p: Pfn) {
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::Anon);
        page.owner = slot;
        page.flags |= pg::YOUNG;
        self.rmap.set(slot, Entry::Page(p));
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, 1);
        let task = &mut self.tasks[tid as usize];
        task.rss += 1;
        task.stats.max_rss = task.stats.max_rss.max(task.rss);
    }

    /// Brings a swapped-out page back (do_swap_page): from the swap cache (a minor fault,
    /// which waits for a readahead read still in flight), or by swapin_readahead (a major
    /// fault). The page keeps its slot in the swap cache unless the fault writes it or
    /// swap is more than half full (should_try_to_free_swap → folio_free_swap).
    fn do_swap_page(&mut self, tid: TaskId, index: u64, slot: u32, s: u32, write: bool) -> Fault {
        self.mm.cur.acc += self.mm.cost.page_fault;
        self.mm.count_vm_events(Event::PGFAULT, 1);
        self.tasks[tid as usize].stats.faults += 1;
        self.count_memcg_pgfault(tid);
        let (p, major) = match self.swap_cache_get_folio(s, tid, index) {
            Some(p) => (p, false),
            None if self.swap_synchronous_io(s) => {
                // A synchronous device's single-user entry skips the swap cache: the page is
                // read privately, and the slot freed once it is mapped (swap_free_nr).
                let p = match self.swapin_skip_swapcache(tid, s) {
                    Ok(p) => p,
                    Err(f) => return f,
                };
                self.mm.count_vm_events(Event::PGMAJFAULT, 1);
                self.tasks[tid as usize].swapents -= 1;
                self.map_anon_page(tid, slot, p);
                let cpu = self.tasks[tid as usize].cpu;
                self.swap_entry_free(s, cpu);
                return Fault::Major;
            }
            None => match self.swapin_readahead(tid, index, s) {
                Ok(p) => (p, true),
                Err(f) => return f,
            },
        };
        if major {
            // Had to read the page from swap area: Major fault.
            self.mm.count_vm_events(Event::PGMAJFAULT, 1);
        }
        // folio_lock_or_retry(): a page whose read is still in flight is waited for.
        let uptodate_at = self.swap.folio(p).map_or(0, |f| f.uptodate_at);
        if uptodate_at > self.mm.clock() {
            self.sleep_until(uptodate_at);
        }
        self.tasks[tid as usize].swapents -= 1;
        self.map_anon_page(tid, slot, p);
        // Mapped, its PTE no longer holds the slot: the folio remembers it (folio->swap).
        self.swap.track(p, s);
        if write {
            // should_try_to_free_swap(): a write fault by the sole user frees the swap copy
            // (or, while it is still being written, dirties the page).
            self.swap_cache_page_written(p);
        } else if self.mem_cgroup_swap_full(p) {
            // should_try_to_free_swap(): swap is full.
            self.folio_free_swap(p);
        }
        if major {
            Fault::Major
        } else {
            Fault::Minor
        }
    }

    /// Faults in the next page past the end of the task's anonymous memory.
    pub fn do_anonymous_page(&mut self, tid: TaskId) -> AllocResult {
        let index = self.tasks[tid as usize].vsize;
        match self.handle_mm_fault(tid, index) {
            Fault::Failed => AllocResult::Failed,
            Fault::Killed => AllocResult::Killed,
            Fault::Retry => AllocResult::Retry,
            _ => AllocResult::Page(NIL),
        }
    }

    /// Unmaps the last `n` pages of the task's anonymous memory (munmap → zap_pte_range); returns pages unmapped.
    pub fn unmap_anon(&mut self, tid: TaskId, n: u64) -> u64 {
        let t = tid as usize;
        let n = n.min(self.tasks[t].vsize);
        let cpu = self.tasks[t].cpu;
        for _ in 0..n {
            let index = self.tasks[t].vsize - 1;
            if let Some(slot) = self.tasks[t].pt.slot(index) {
                self.zap_slot(tid, slot, cpu);
            }
            self.tasks[t].vsize = index;
        }
        n
    }

    /// Clears one slot of a task, freeing its page or swap slot (zap_pte_range for one PTE).
    pub fn zap_slot(&mut self, tid: TaskId, slot: u32, cpu: usize) {
        match self.rmap.get(slot) {
            Entry::None => {}
            Entry::Zero => self.rmap.set(slot, Entry::None),
            Entry::Page(p) => {
                if let Some(f) = self.swap.folio(p) {
                    // free_swap_cache(): the last mapping went, so does the swap copy.
                    self.delete_from_swap_cache(p, f.slot);
                    self.swap_entry_free(f.slot, cpu);
                }
                self.rmap.set(slot, Entry::None);
                self.tasks[tid as usize].rss -= 1;
                let nid = self.mm.pfn_to_nid(p);
                self.mm
                    .mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, -1);
                self.mem_cgroup_uncharge(p);
                self.mm.lru_remove_for_free(p, cpu);
                if self.mm.map[p as usize].test(pg::WRITEBACK) {
                    self.orphan_under_writeback(p);
                } else {
                    self.mm.free_pages(p, 0, cpu);
                }
            }
            Entry::Swap(s) => {
                self.rmap.set(slot, Entry::None);
                self.tasks[tid as usize].swapents -= 1;
                if let Some(p) = self.swap.cache_lookup(s) {
                    self.delete_from_swap_cache(p, s);
                    self.mem_cgroup_uncharge(p);
                    self.mm.lru_remove_for_free(p, cpu);
                    if self.mm.map[p as usize].test(pg::WRITEBACK) {
                        self.orphan_under_writeback(p);
                    } else {
                        self.mm.free_pages(p, 0, cpu);
                    }
                }
                self.swap_entry_free(s, cpu);
                // free_swap_and_cache(): the slot's shadow goes with it.
                self.shadows.take_swap(s);
            }
        }
    }

    /// A page whose owner went away while it was being written: freed when the write completes.
    fn orphan_under_writeback(&mut self, p: Pfn) {
        let page = &mut self.mm.map[p as usize];
        page.owner = NO_OWNER;
        page.flags &= !(pg::LRU | pg::ACTIVE | pg::SWAPCACHE);
    }

    /// Releases every page and swap slot of a task's anonymous memory (exit_mmap).
    pub fn exit_mmap(&mut self, tid: TaskId) {
        let t = tid as usize;
        let n = self.tasks[t].vsize;
        self.unmap_anon(tid, n);
        let mut pt = std::mem::take(&mut self.tasks[t].pt);
        pt.release(&mut self.rmap);
    }

    /// Gives an anonymous page a swap slot, puts it in the swap cache and replaces
    /// its PTE by the swap entry (add_to_swap, then try_to_unmap); false if swap is full
    /// or the group's memory.swap.max is reached.
    /// `cpu` is the reclaimer's (its slot cache under `kernel.swap_slot_cache`).
    pub fn add_to_swap(&mut self, p: Pfn, cpu: usize) -> bool {
        let slot = self.mm.map[p as usize].owner;
        if slot == NO_OWNER || self.rmap.get(slot) != Entry::Page(p) {
            return false;
        }
        let Some(s) = self.swap.folio_alloc_swap(cpu) else {
            return false;
        };
        self.swap.set_slot_owner(s, slot);
        if !self.mem_cgroup_try_charge_swap(p, s) {
            // memory.swap.max reached: the slot goes back (put_swap_folio).
            self.swap_entry_free(s, cpu);
            return false;
        }
        self.swap.cache_add(s, p);
        self.mod_memcg_page_state(p, super::memcontrol::stat::SWAPCACHED, 1);
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_SWAPCACHED, 1);
        self.mm.map[p as usize].flags |= pg::SWAPCACHE | pg::DIRTY;
        // try_to_unmap(): the owner's PTE becomes the swap entry.
        self.rmap.set(slot, Entry::Swap(s));
        if let (Owner::Task { tid, .. }, _) = self.rmap.owner(slot) {
            let task = &mut self.tasks[tid as usize];
            task.rss -= 1;
            task.swapents += 1;
        }
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, -1);
        self.mm.map[p as usize].flags &= !pg::YOUNG;
        self.mm.cur.acc += self.mm.cost.unmap_page;
        true
    }

    /// Replaces the PTE of a mapped swap-cache page by its swap entry (try_to_unmap);
    /// false if the page is not mapped.
    pub fn try_to_unmap_swapcache(&mut self, p: Pfn) -> bool {
        let slot = self.mm.map[p as usize].owner;
        if slot == NO_OWNER || self.rmap.get(slot) != Entry::Page(p) {
            return false;
        }
        let Some(f) = self.swap.folio(p) else {
            return false;
        };
        self.rmap.set(slot, Entry::Swap(f.slot));
        self.swap.untrack(p);
        if let (Owner::Task { tid, .. }, _) = self.rmap.owner(slot) {
            let task = &mut self.tasks[tid as usize];
            task.rss -= 1;
            task.swapents += 1;
        }
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, -1);
        self.mm.map[p as usize].flags &= !pg::YOUNG;
        self.mm.cur.acc += self.mm.cost.unmap_page;
        true
    }

    /// The swap slot of an anonymous page in the swap cache (folio->swap): an unmapped
    /// page's page-table entry holds it, a mapped one's is looked up.
    pub(crate) fn swap_slot_of(&self, p: Pfn) -> Option<u32> {
        let owner = self.mm.map[p as usize].owner;
        if owner != NO_OWNER {
            if let Entry::Swap(s) = self.rmap.get(owner) {
                if self.swap.cache_lookup(s) == Some(p) {
                    return Some(s);
                }
            }
        }
        self.swap.folio(p).map(|f| f.slot)
    }

    /// Writes a dirty swap-cache page (pageout → swap_writeout): zswap takes it if it
    /// can (zswap_store: clean and done at once), else it goes to its device.
    pub fn swap_writepage(&mut self, p: Pfn, sync: bool) {
        self.mm.map[p as usize].flags &= !pg::DIRTY;
        if self.zswap_store(p) {
            let nid = self.mm.pfn_to_nid(p);
            self.mm
                .mod_node_page_state(nid, NodeStat::NR_VMSCAN_WRITE, 1);
            self.trace_write_folio(p, false, sync);
            return;
        }
        self.__swap_writepage(p, sync);
    }

    /// Queues a swap-cache page for writing to its device (__swap_writepage); the write
    /// is submitted with the rest of the batch by [`Kernel::blk_finish_plug`].
    pub fn __swap_writepage(&mut self, p: Pfn, sync: bool) {
        self.mm.map[p as usize].flags &= !pg::DIRTY;
        self.folio_start_writeback(p);
        self.mm.map[p as usize].flags |= pg::RECLAIM;
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_VMSCAN_WRITE, 1);
        self.mm.count_vm_events(Event::PSWPOUT, 1);
        self.mm.count_vm_events(Event::PGPGOUT, 4);
        self.trace_write_folio(p, false, sync);
        if let Some(t) = self.swap_slot_of(p).map(|s| self.swap.swp_type(s)) {
            if self.swap.devices[t].zram.is_some() {
                // zram (SWP_SYNCHRONOUS_IO): written and complete before pageout() returns.
                self.zram_write_pages(t, vec![p]);
                return;
            }
        }
        self.plug.push(p);
    }

    /// Records a page written by reclaim (trace_mm_vmscan_write_folio with trace_reclaim_flags).
    pub fn trace_write_folio(&mut self, p: Pfn, file: bool, sync: bool) {
        use crate::trace::{RECLAIM_WB_ANON, RECLAIM_WB_ASYNC, RECLAIM_WB_FILE, RECLAIM_WB_SYNC};
        let flags = if file {
            RECLAIM_WB_FILE
        } else {
            RECLAIM_WB_ANON
        } | if sync {
            RECLAIM_WB_SYNC
        } else {
            RECLAIM_WB_ASYNC
        };
        self.trace(crate::trace::TraceEvent::MmVmscanWriteFolio {
            pfn: p,
            reclaim_flags: flags,
        });
    }

    /// Submits the gathered swap-out pages as runs of consecutive slots (blk_finish_plug).
    pub fn blk_finish_plug(&mut self) {
        if self.plug.is_empty() {
            return;
        }
        let mut pages = std::mem::take(&mut self.plug);
        pages.sort_by_key(|&p| self.swap_slot_of(p).unwrap_or(u32::MAX));
        let mut run: Vec<Pfn> = Vec::new();
        let mut last: Option<(usize, u32)> = None;
        for p in pages {
            let s = self.swap_slot_of(p).unwrap_or(u32::MAX);
            let t = if s == u32::MAX {
                usize::MAX
            } else {
                self.swap.swp_type(s)
            };
            // Bios of one device at consecutive sectors merge (blk_attempt_plug_merge).
            if last.is_some_and(|(lt, l)| lt != t || l.wrapping_add(1) != s) {
                self.submit_swap_run(std::mem::take(&mut run));
            }
            run.push(p);
            last = Some((t, s));
        }
        self.submit_swap_run(run);
    }

    fn submit_swap_run(&mut self, run: Vec<Pfn>) {
        if run.is_empty() {
            return;
        }
        let first = self.swap_slot_of(run[0]).unwrap_or(0);
        let t = self.swap.swp_type(first);
        if self.swap.devices.get(t).is_some_and(|d| d.zram.is_some()) {
            self.zram_write_pages(t, run);
            return;
        }
        let sector = self.swap_sector(first);
        let n = run.len() as u32;
        self.submit_bio(
            Request::write(sector, n, 0, false).wbt(WbtKind::Swap),
            BioKind::SwapOut(run),
        );
    }

    /// First sector of a swap slot on its device's extent (swap_folio_sector).
    fn swap_sector(&self, s: u32) -> u64 {
        self.swap.swap_sector(s)
    }

    /// Sends a request to the disk (submit_bio). When the queue has no free request
    /// slot the submitter sleeps until one frees (get_request_wait) and the request
    /// waits in order in the kernel; returns when the request is expected to complete [ns].
    pub fn submit_bio(&mut self, mut req: Request, kind: BioKind) -> u64 {
        let tag = match self.free_bios.pop() {
            Some(t) => {
                self.bios[t as usize] = Some(kind);
                t
            }
            None => {
                self.bios.push(Some(kind));
                (self.bios.len() - 1) as u64
            }
        };
        req.tag = tag;
        // The disk sees one non-decreasing clock: a step's I/O may be timed after another
        // CPU's earlier-starting step already talked to it.
        let start = self.mm.clock().max(self.io_clock);
        self.io_clock = start;
        // The request is stamped when it is allocated (blk_mq_rq_ctx_init's start_time_ns,
        // from which blk_account_io_done times /proc/diskstats and so `disk.latency`),
        // before the submission's CPU work: dispatch and the driver's doorbell
        // (virtqueue_notify, an exit to the hypervisor on a virtual machine). That work
        // overlaps the device's time rather than preceding it.
        self.mm.cur.acc += self.mm.cost.submit_bio;
        let now = self.mm.clock().max(start);
        let rqw = req.wbt.rqw();
        if rqw.is_some() && self.wbt_pending.iter().any(|r| r.wbt.rqw() == rqw) {
            // wbt_wait(): a writer sleeping on the same rq_wait goes first.
            let retry_at = self.disk.next_completion_at().unwrap_or(now).max(now);
            return self.wbt_hold(req, retry_at, now);
        }
        if self.pending_reqs.is_empty() {
            match self.disk.submit(start, req) {
                Submitted::Queued { completes_at } => return completes_at,
                Submitted::Throttled { retry_at } => return self.wbt_hold(req, retry_at, now),
                Submitted::Full { retry_at } => {
                    self.pending_reqs.push_back(req);
                    self.sleep_for_queue(retry_at, now);
                    return retry_at + self.disk.config().service_time(req.op, req.pages, false);
                }
            }
        }
        self.pending_reqs.push_back(req);
        // get_request_wait(): the submitter sleeps until its own request gets a slot,
        // after the requests queued before it — one completion each.
        let retry_at = self.disk.next_completion_at().unwrap_or(now);
        let service = self.disk.config().service_time(req.op, req.pages, false);
        let queued = (self.pending_reqs.len() as u64).saturating_sub(1);
        let slot_at = retry_at + service * queued;
        self.sleep_for_queue(slot_at, now);
        slot_at + service
    }

    /// Holds a write back for writeback throttling (rq_qos_wait): it waits in order with
    /// the others held back and the submitter sleeps until `retry_at`; returns when the
    /// write is expected to complete [ns].
    fn wbt_hold(&mut self, req: Request, retry_at: u64, now: u64) -> u64 {
        self.wbt_pending.push_back(req);
        self.sleep_for_queue(retry_at, now);
        retry_at + self.disk.config().service_time(req.op, req.pages, false)
    }

    /// The submitter of a request that could not go in sleeps until `at`
    /// (get_request_wait, rq_qos_wait): inside the step in limit reclaim, after it otherwise.
    fn sleep_for_queue(&mut self, at: u64, now: u64) {
        if self.sleep_in_step {
            self.wait_in_step(at);
        } else {
            self.mm.cur.sleep = self.mm.cur.sleep.max(at.saturating_sub(now));
        }
    }

    /// Waits until `wake` inside the step (io_schedule where the kernel path goes on after
    /// the sleep and vmsim has no point to resume it from: `sleep_in_step`, limit
    /// reclaim): the task's clock moves to `wake` and the disk's completions up to then
    /// are taken at once.
    pub fn wait_in_step(&mut self, wake: u64) {
        let now = self.mm.clock() + self.mm.cur.sleep;
        if wake > now {
            self.mm.cur.slept += wake - now;
            self.process_io(wake);
        }
    }

    /// Makes the current task sleep until `t` after its step (io_schedule).
    pub fn sleep_until(&mut self, t: u64) {
        let now = self.mm.clock() + self.mm.cur.sleep;
        self.mm.cur.sleep += t.saturating_sub(now);
    }

    /// Completes every I/O finished by `now` (the block layer's completion interrupts):
    /// end_page_writeback for writes.
    pub fn process_io(&mut self, now: u64) {
        let now = now.max(self.io_clock);
        self.io_clock = now;
        if self.pending_reqs.is_empty()
            && self.wbt_pending.is_empty()
            && !self.disk.has_completed()
            && self.disk.next_completion_at().is_none_or(|t| t > now)
        {
            return;
        }
        // Writes held back by writeback throttling go in as it wakes them (wbt_rqw_done).
        while let Some(&req) = self.wbt_pending.front() {
            match self.disk.submit(now, req) {
                Submitted::Queued { .. } => {
                    self.wbt_pending.pop_front();
                }
                Submitted::Full { .. } | Submitted::Throttled { .. } => break,
            }
        }
        // Requests waiting for a slot go in as slots free (get_request_wait wake-ups).
        while let Some(&req) = self.pending_reqs.front() {
            match self.disk.submit(now, req) {
                Submitted::Queued { .. } => {
                    self.pending_reqs.pop_front();
                }
                Submitted::Full { .. } | Submitted::Throttled { .. } => break,
            }
        }
        for c in self.disk.complete_until(now) {
            if !c.last {
                continue;
            }
            let Some(kind) = self.bios[c.tag as usize].take() else {
                continue;
            };
            self.free_bios.push(c.tag);
            match kind {
                BioKind::SwapOut(pages) | BioKind::FileWrite(pages) => {
                    for p in pages {
                        self.end_page_writeback(p);
                    }
                }
                BioKind::SwapIn | BioKind::FileRead => {}
            }
        }
    }

    /// Finishes writeback of a page (folio_end_writeback): rotates a page reclaim wants
    /// to the tail of the inactive list, frees a page whose owner is gone.
    pub fn end_page_writeback(&mut self, p: Pfn) {
        let nr = self.mm.folio_nr_pages(p) as i64;
        let zid = self.mm.page_zone(p);
        self.mm.zones[zid].vm_stat[super::vmstat::ZoneStat::NR_ZONE_WRITE_PENDING as usize] -= nr;
        let nid = self.mm.zones[zid].nid;
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_WRITEBACK, -nr);
        self.mm.mod_node_page_state(nid, NodeStat::NR_WRITTEN, nr);
        let flags = self.mm.map[p as usize].flags;
        self.mod_memcg_page_state(p, super::memcontrol::stat::WRITEBACK, -nr);
        self.mm.map[p as usize].flags &= !pg::WRITEBACK;
        if self.mm.map[p as usize].owner == NO_OWNER && flags & pg::LRU == 0 {
            let cpu = 0;
            self.try_to_free_buffers(p, cpu);
            let order = self.mm.map[p as usize].order();
            self.mm.free_pages(p, order, cpu);
            return;
        }
        if flags & pg::RECLAIM != 0 {
            self.mm.map[p as usize].flags &= !pg::RECLAIM;
            // folio_rotate_reclaimable() → lru_move_tail(): to the inactive tail, so the next scan frees it.
            if flags & pg::LRU != 0 && flags & (pg::DIRTY | pg::UNEVICTABLE) == 0 {
                self.mm.lruvec_del_folio(p);
                self.mm.map[p as usize].flags &= !pg::ACTIVE;
                self.mm.lruvec_add_folio_tail(p);
                self.mm.count_vm_events(Event::PGROTATED, nr as u64);
            }
        }
    }

    /// Frees a clean anonymous page in the swap cache that reclaim unmapped (__remove_mapping
    /// for swap): the charge moves to the slot (mem_cgroup_swapout), which the PTE keeps.
    pub fn delete_from_swap_cache_and_free(&mut self, p: Pfn, cpu: usize) {
        match self.swap_slot_of(p) {
            Some(s) => {
                self.mem_cgroup_swapout(p, s);
                self.swap.cache_del(s);
            }
            None => self.mem_cgroup_uncharge(p),
        }
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_SWAPCACHED, -1);
        let page = &mut self.mm.map[p as usize];
        page.flags &= !(pg::SWAPCACHE
            | pg::ACTIVE
            | pg::REFERENCED
            | pg::YOUNG
            | pg::WORKINGSET
            | pg::RECLAIM);
        page.owner = NO_OWNER;
        self.mm.free_pages(p, 0, cpu);
    }
}

impl super::Mm {
    /// Counts a refault of an evicted page (workingset_refault).
    pub(crate) fn count_node_refault(&mut self, p: Pfn) {
        let nid = self.pfn_to_nid(p);
        self.mod_node_page_state(nid, NodeStat::WORKINGSET_REFAULT_ANON, 1);
        self.mod_node_page_state(nid, NodeStat::WORKINGSET_ACTIVATE_ANON, 1);
    }
}
