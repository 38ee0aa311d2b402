//! The page cache of files.
//!
//! Models mm/filemap.c (filemap_add_folio, __filemap_remove_folio,
//! __filemap_get_folio) and the inode's address_space: each file's pages are
//! slots of its [`SlotTable`] in the shared reverse map, so a page finds its
//! file and index at once. Files live on the one disk, each in its own extent,
//! so reading or writing a file in order is sequential I/O. Reads miss into
//! readahead (mm/readahead.rs; the reader sleeps until the read completes);
//! writes copy into page-cache folios, dirty them and call
//! balance_dirty_pages every DIRTY_RATELIMIT_PAGES pages.
//!
//! Large folios (`kernel.large_folios`, ext4 since 6.16): a folio of order k
//! is one block of 2^k pages whose head frame stands for all of it — every
//! slot of its indices holds the head, and it is charged, put on the LRU,
//! dirtied, written back, reclaimed and freed as one unit of 2^k pages, as the
//! kernel's multi-index xarray entry and struct folio make it. Compaction moves
//! a large folio whole (mm/migrate.rs), and an evicted folio leaves one shadow
//! entry, in the slot of its first index.

use super::gfp::{Gfp, __GFP_FS, GFP_HIGHUSER_MOVABLE};
use super::memory::BioKind;
use super::page::{pg, PageKind, Pfn, NIL, NO_OWNER};
use super::rmap::{Entry, Owner, SlotTable};
use super::vmstat::NodeStat;
use crate::block::{Request, WbtKind};
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Pages read ahead on a page-cache miss under `kernel.ondemand_readahead = false`
/// (a fixed window of the default 128 KiB read_ahead_kb).
pub const READAHEAD_PAGES: u64 = 32;
/// Largest page-cache folio order of ext4 with 4 KiB blocks (EXT4_MAX_PAGECACHE_ORDER:
/// min(MAX_PAGECACHE_ORDER, 11 + i_blkbits - PAGE_SHIFT); MAX_PAGECACHE_ORDER is
/// HPAGE_PMD_ORDER on x86-64).
pub const EXT4_MAX_PAGECACHE_ORDER: usize = 9;
/// Sectors reserved per file on the disk (each file's extent, 64 GiB).
pub const FILE_EXTENT_SECTORS: u64 = (64 << 30) / 512;

/// A file (struct inode with its address_space).
#[derive(Debug, Clone, Default)]
pub struct Inode {
    /// Inode number.
    pub ino: u32,
    /// File name.
    pub name: String,
    /// Size [pages] (i_size).
    pub size_pages: u64,
    /// Pages in the page cache (mapping->nrpages).
    pub nrpages: u64,
    /// Dirty pages.
    pub nr_dirty: u64,
    /// When the inode was first dirtied since it was last clean (dirtied_when).
    pub dirtied_when: Option<u64>,
    /// Where the next writeback of this file continues (mapping->writeback_index).
    pub writeback_index: u64,
    /// Page index → slot.
    pub pages: SlotTable,
    /// First sector of the file on the disk (its extent).
    pub start_sector: u64,
    /// Whether the file still exists (not unlinked).
    pub live: bool,
    /// Its page cache has xarray nodes: it has held an entry beyond index 0 (until
    /// then its one entry sits in the xarray's head, in no node).
    pub xa_nodes: bool,
    /// Its readahead state (struct file_ra_state; the kernel's is per open file).
    pub ra: super::readahead::FileRaState,
}

/// The folio order a write of `len` bytes at page `index` asks for (fgf_set_order in
/// write_begin_get_folio, then __filemap_get_folio): log2 of the length in pages, at
/// most `max_order` (mapping_max_folio_order), lowered to the index's alignment.
pub fn write_begin_order(index: u64, len: u64, max_order: usize) -> usize {
    let shift = if len == 0 {
        0
    } else {
        63 - len.leading_zeros()
    };
    let mut order = (shift.saturating_sub(super::page::PAGE_SHIFT) as usize).min(max_order);
    if order > 0 && index & ((1 << order) - 1) != 0 {
        order = index.trailing_zeros() as usize;
    }
    order
}

impl Kernel {
    /// Inserts a folio (the block headed by `p`, of its order) in a file's page cache at
    /// `index` and on the LRU (filemap_add_folio → __filemap_add_folio): every slot of
    /// its indices holds it; the first shadow entry in its range is a refault, judged
    /// unless the folio is for a write (`__GFP_WRITE`).
    pub fn filemap_add_folio(&mut self, ino: u32, index: u64, p: Pfn, cpu: usize, write: bool) {
        let nr = self.mm.folio_nr_pages(p);
        let first = self.inodes[ino as usize]
            .pages
            .slot_or_alloc(&mut self.rmap, index, |i| Owner::File { ino, index: i });
        for q in p + 1..p + nr as Pfn {
            // The tail pages belong to the head (compound_head).
            self.mm.map[q as usize].owner = NO_OWNER;
        }
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::File);
        page.owner = first;
        let memcg = self.inode_memcg(ino);
        self.mem_cgroup_commit_charge(p, memcg);
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, nr as i64);
        if nr >= super::huge_memory::HPAGE_PMD_NR {
            // folio_test_pmd_mappable(): NR_FILE_THPS.
            self.mm
                .mod_node_page_state(nid, NodeStat::NR_FILE_HUGEPAGES, nr as i64);
        }
        let mut shadow = None;
        for i in index..index + nr {
            let slot = self.inodes[ino as usize]
                .pages
                .slot_or_alloc(&mut self.rmap, i, |c| Owner::File { ino, index: c });
            self.rmap.set(slot, Entry::Page(p));
            let s = self.shadow_take(ino, slot);
            shadow = shadow.or(s);
            self.xa_page_added(ino, i, slot, nid, memcg);
        }
        if self.inodes[ino as usize].nrpages == 0 {
            self.ext4_inode_lru_del(ino);
        }
        self.inodes[ino as usize].nrpages += nr;
        if let Some(shadow) = shadow {
            if !write {
                self.workingset_refault(p, shadow);
            }
        }
        self.mm.folio_add_lru(p, cpu);
    }

    /// The largest folio order of a file's mapping (mapping_max_folio_order): ext4's
    /// EXT4_MAX_PAGECACHE_ORDER under `kernel.large_folios`, else 0.
    pub fn mapping_max_folio_order(&self) -> usize {
        if self.mm.kcfg.rules().large_folios {
            EXT4_MAX_PAGECACHE_ORDER
        } else {
            0
        }
    }

    /// A file mapping's gfp mask (mapping_gfp_mask): GFP_HIGHUSER_MOVABLE, without
    /// __GFP_FS on xfs, which sets every inode's mapping so that page-cache allocations
    /// never recurse into the filesystem (xfs_setup_inode); ext4 leaves it whole.
    pub fn mapping_gfp_mask(&self) -> Gfp {
        if self.fs_is_ext4() {
            GFP_HIGHUSER_MOVABLE
        } else {
            Gfp(GFP_HIGHUSER_MOVABLE.0 & !__GFP_FS.0)
        }
    }

    /// Whether pages `index..index + nr` of a file hold no page (a shadow is no conflict,
    /// as in __filemap_add_folio's xas_for_each_conflict).
    pub fn filemap_range_empty(&self, ino: u32, index: u64, nr: u64) -> bool {
        let pages = &self.inodes[ino as usize].pages;
        (index..index + nr).all(|i| {
            !matches!(
                pages.slot(i).map(|s| self.rmap.get(s)),
                Some(Entry::Page(_))
            )
        })
    }

    /// Allocates, charges and inserts a new folio at `index` of at most `order`, falling
    /// back to lower orders (__filemap_get_folio with FGP_CREAT): an order above 0 is
    /// tried with __GFP_NORETRY | __GFP_NOWARN, and a failed allocation or charge, or a
    /// range that is not empty, tries the next lower order; an attempt that must sleep
    /// first (`Retry`) ends it, to start over when the task wakes. Returns the folio's
    /// head, or the failure.
    pub fn filemap_create_folio(
        &mut self,
        tid: TaskId,
        ino: u32,
        index: u64,
        mut order: usize,
        gfp: Gfp,
        write: bool,
    ) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        loop {
            let nr = 1u64 << order;
            if order > 0 && !self.filemap_range_empty(ino, index, nr) {
                order -= 1;
                continue;
            }
            let alloc_gfp = if order > 0 {
                Gfp(gfp.0 | super::gfp::__GFP_NORETRY.0 | super::gfp::__GFP_NOWARN.0)
            } else {
                gfp
            };
            let r = match self.alloc_pages(alloc_gfp, order, tid) {
                AllocResult::Page(p) => {
                    let memcg = self.file_memcg(ino, tid);
                    match self.charge_folio_or_free(p, order, memcg, alloc_gfp, tid) {
                        None => {
                            self.filemap_add_folio(ino, index, p, cpu, write);
                            return AllocResult::Page(p);
                        }
                        Some(r) => r,
                    }
                }
                other => other,
            };
            // Only a failure falls back; a task that must sleep (Retry) or die does so.
            if order == 0 || !matches!(r, AllocResult::Failed) {
                return r;
            }
            order -= 1;
        }
    }

    /// The inode of a file name, created empty if it does not exist (open with O_CREAT).
    pub fn lookup_or_create(&mut self, name: &str) -> u32 {
        if let Some(&ino) = self.files.get(name) {
            return ino;
        }
        let ino = self.inodes.len() as u32;
        self.inodes.push(Inode {
            ino,
            name: name.to_string(),
            start_sector: self.swap_sectors() + ino as u64 * FILE_EXTENT_SECTORS,
            live: true,
            ..Default::default()
        });
        self.files.insert(name.to_string(), ino);
        ino
    }

    /// Sectors taken by the swap area at the start of the disk.
    fn swap_sectors(&self) -> u64 {
        self.swap.disk_sectors()
    }

    /// Writes page `index` of a file through the page cache as a write(2) of one page.
    pub fn file_write_page(&mut self, tid: TaskId, ino: u32, index: u64) -> AllocResult {
        self.file_write_folio(tid, ino, index, super::page::PAGE_SIZE)
    }

    /// Writes page `index` of a file through the page cache, `len` bytes of the write(2)
    /// being left from there (generic_perform_write → ext4_write_begin): the folio holding
    /// the page is found, or created of the order the write's length asks for (its
    /// chunk: at most mapping_max_folio_size from the position), and the page is copied
    /// into it and the folio dirtied. [`AllocResult::Retry`] means the caller retries later.
    pub fn file_write_folio(&mut self, tid: TaskId, ino: u32, index: u64, len: u64) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        let existing = self.inodes[ino as usize]
            .pages
            .slot(index)
            .map(|s| self.rmap.get(s));
        let p = match existing {
            Some(Entry::Page(p)) => p,
            _ => {
                let max_order = self.mapping_max_folio_order();
                let chunk = super::page::PAGE_SIZE << max_order;
                let offset = (index * super::page::PAGE_SIZE) & (chunk - 1);
                let bytes = len.min(chunk - offset);
                let order = write_begin_order(index, bytes, max_order);
                // write_begin_get_folio(): the mapping's gfp.
                let gfp = self.mapping_gfp_mask();
                let p = match self.filemap_create_folio(tid, ino, index, order, gfp, true) {
                    AllocResult::Page(p) => p,
                    other => return other,
                };
                if self.fs_is_ext4() {
                    // ext4_da_write_begin → create_empty_buffers(); NOFAIL in the kernel.
                    let _ = self.folio_alloc_buffers(p, tid);
                    self.ext4_es_da_map(tid, ino, index);
                }
                p
            }
        };
        self.mm.cur.acc += self.mm.cost.copy_page + self.mm.cost.write_page;
        let now = self.mm.clock();
        self.folio_mark_dirty(p, ino, now);
        if self.folio_index(p) == index {
            // Once per folio a write walks into (one write_begin per folio), not per page.
            self.mm.folio_mark_accessed(p, cpu);
        }
        let inode = &mut self.inodes[ino as usize];
        inode.size_pages = inode.size_pages.max(index + 1);
        AllocResult::Page(p)
    }

    /// Whether page `index` is the last of the page-cache folio headed by `p`: a write
    /// that reaches it is done with the folio (generic_perform_write's per-folio chunk).
    pub fn folio_last_page(&self, p: Pfn, index: u64) -> bool {
        self.folio_index(p) + self.mm.folio_nr_pages(p) == index + 1
    }

    /// The first file index of a page-cache folio (folio->index).
    pub fn folio_index(&self, p: Pfn) -> u64 {
        self.rmap.owner(self.mm.map[p as usize].owner).1
    }

    /// The head of the folio holding page `index` of a file, if cached (filemap_get_entry).
    pub fn filemap_get_folio(&self, ino: u32, index: u64) -> Option<Pfn> {
        match self.inodes[ino as usize]
            .pages
            .slot(index)
            .map(|s| self.rmap.get(s))
        {
            Some(Entry::Page(p)) => Some(p),
            _ => None,
        }
    }

    /// Reads page `index` of a file through the page cache as a read(2) of one page.
    pub fn file_read_page(&mut self, tid: TaskId, ino: u32, index: u64) -> AllocResult {
        self.file_read_folio(tid, ino, index, 1)
    }

    /// Reads page `index` of a file through the page cache, `req_pages` pages of the
    /// read(2) being left from there (filemap_read → filemap_get_pages): a hit marks the
    /// folio accessed (once per folio a read walks into) and, on a folio marked
    /// PG_readahead, starts asynchronous readahead; a miss reads ahead synchronously and
    /// the reader sleeps until the read completes. Under `kernel.ondemand_readahead =
    /// false` a miss reads a fixed window of READAHEAD_PAGES.
    pub fn file_read_folio(
        &mut self,
        tid: TaskId,
        ino: u32,
        index: u64,
        req_pages: u64,
    ) -> AllocResult {
        let ondemand = self.mm.kcfg.rules().ondemand_readahead;
        if let Some(p) = self.filemap_get_folio(ino, index) {
            let cpu = self.tasks[tid as usize].cpu;
            if ondemand && self.folio_test_readahead(p) {
                // filemap_readahead() → page_cache_async_ra().
                self.page_cache_async_ra(tid, ino, p, req_pages);
            }
            self.mm.cur.acc += self.mm.cost.copy_page + self.mm.cost.read_page;
            // pos_same_folio(): a read going on within the folio it last read does not
            // mark it again.
            let start = self.folio_index(p);
            let prev = self.inodes[ino as usize].ra.prev_index;
            if !ondemand || !(start..start + self.mm.folio_nr_pages(p)).contains(&prev) {
                self.mm.folio_mark_accessed(p, cpu);
            }
            self.inodes[ino as usize].ra.prev_index = index;
            if ondemand {
                self.wait_on_readahead(ino, index);
            }
            return AllocResult::Page(p);
        }
        if ondemand {
            return self.page_cache_sync_ra(tid, ino, index, req_pages);
        }
        self.readahead_fixed(tid, ino, index)
    }

    /// A miss under `kernel.ondemand_readahead = false`: the missing page and those after
    /// it up to READAHEAD_PAGES, order-0 pages in one request.
    fn readahead_fixed(&mut self, tid: TaskId, ino: u32, index: u64) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        let size = self.inodes[ino as usize].size_pages;
        let end = (index + READAHEAD_PAGES).min(size.max(index + 1));
        let gfp =
            Gfp(GFP_HIGHUSER_MOVABLE.0 | super::gfp::__GFP_NORETRY.0 | super::gfp::__GFP_NOWARN.0);
        let mut run = Vec::new();
        let mut first = None;
        for i in index..end {
            if matches!(
                self.inodes[ino as usize]
                    .pages
                    .slot(i)
                    .map(|s| self.rmap.get(s)),
                Some(Entry::Page(_))
            ) {
                break;
            }
            let p = match self.alloc_pages(
                if i == index {
                    GFP_HIGHUSER_MOVABLE
                } else {
                    gfp
                },
                0,
                tid,
            ) {
                AllocResult::Page(p) => p,
                other if i == index => return other,
                _ => break,
            };
            let memcg = self.file_memcg(ino, tid);
            if let Some(r) = self.charge_or_free_alloc(p, memcg, tid) {
                if i == index {
                    return r;
                }
                break;
            }
            self.filemap_add_folio(ino, i, p, cpu, false);
            first.get_or_insert(p);
            run.push(p);
        }
        let n = run.len() as u32;
        let sector = self.inodes[ino as usize].start_sector + index * 8;
        self.mm
            .count_vm_events(super::vmstat::Event::PGPGIN, 4 * n as u64);
        let done = self.submit_bio(Request::read(sector, n, 0), BioKind::FileRead);
        self.sleep_until(done);
        self.mm.cur.acc += self.mm.cost.copy_page + self.mm.cost.read_page;
        if let Some(p) = first {
            self.mm.folio_mark_accessed(p, cpu);
        }
        AllocResult::Page(first.unwrap_or(NIL))
    }

    /// Removes a file and every page of it from the page cache (unlink → truncate_inode_pages).
    pub fn unlink(&mut self, tid: TaskId, name: &str) {
        let Some(ino) = self.files.shift_remove(name) else {
            return;
        };
        self.ext4_unlink(tid, ino);
        let cpu = self.tasks[tid as usize].cpu;
        self.xfs_unlink(ino, cpu);
        let size = self.inodes[ino as usize].size_pages;
        for i in 0..size {
            let Some(slot) = self.inodes[ino as usize].pages.slot(i) else {
                continue;
            };
            // truncate_inode_pages() deletes the shadow entries too.
            self.shadow_take(ino, slot);
            let Entry::Page(p) = self.rmap.get(slot) else {
                continue;
            };
            // A large folio goes whole, at its first index (the rest of its slots with it).
            self.folio_clear_dirty(p);
            self.mm.cur.acc += self.mm.cost.shrink_page / 4;
            if self.mm.map[p as usize].test(pg::LRU) {
                self.mm.lru_remove_for_free(p, cpu);
            }
            if self.mm.map[p as usize].test(pg::WRITEBACK) {
                // Freed when its write completes.
                self.mem_cgroup_uncharge(p);
                self.filemap_unaccount_folio(p);
                let page = &mut self.mm.map[p as usize];
                page.owner = NO_OWNER;
                page.flags &= !(pg::LRU | pg::ACTIVE);
            } else {
                self.remove_file_page_and_free(p, cpu);
            }
        }
        let inode = &mut self.inodes[ino as usize];
        inode.live = false;
        inode.size_pages = 0;
        inode.dirtied_when = None;
        let mut pages = std::mem::take(&mut inode.pages);
        pages.release(&mut self.rmap);
    }

    /// Takes a clean, unmapped page out of its file's page cache and frees it
    /// (__filemap_remove_folio, then the final folio_put).
    pub fn remove_file_page_and_free(&mut self, p: Pfn, cpu: usize) {
        self.try_to_free_buffers(p, cpu);
        self.mem_cgroup_uncharge(p);
        self.filemap_unaccount_folio(p);
        let order = self.mm.map[p as usize].order();
        let page = &mut self.mm.map[p as usize];
        page.flags &= !(pg::ACTIVE | pg::REFERENCED | pg::WORKINGSET | pg::RECLAIM | pg::MAPPED);
        page.owner = NO_OWNER;
        self.mm.free_pages(p, order, cpu);
    }

    /// Empties every slot of a folio in its file's page cache and drops its counts
    /// (page_cache_delete → filemap_unaccount_folio): nrpages, NR_FILE_PAGES, NR_FILE_THPS.
    fn filemap_unaccount_folio(&mut self, p: Pfn) {
        let nr = self.mm.folio_nr_pages(p);
        let nid = self.mm.pfn_to_nid(p);
        let slot = self.mm.map[p as usize].owner;
        if let (Owner::File { ino, .. }, index) = self.rmap.owner(slot) {
            for i in index..index + nr {
                if let Some(s) = self.inodes[ino as usize].pages.slot(i) {
                    self.rmap.set(s, Entry::None);
                    self.xa_page_removed(ino, s, nid);
                }
            }
            self.inodes[ino as usize].nrpages -= nr;
            if self.inodes[ino as usize].nrpages == 0 {
                self.ext4_inode_add_lru(ino);
            }
        }
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, -(nr as i64));
        if nr >= super::huge_memory::HPAGE_PMD_NR {
            self.mm
                .mod_node_page_state(nid, NodeStat::NR_FILE_HUGEPAGES, -(nr as i64));
        }
    }

    /// Writes one dirty page-cache page from reclaim (pageout → ->writepage), asynchronously.
    pub fn file_writepage(&mut self, p: Pfn, sync: bool) {
        let slot = self.mm.map[p as usize].owner;
        let (owner, index) = self.rmap.owner(slot);
        let Owner::File { ino, .. } = owner else {
            return;
        };
        let sector = self.inodes[ino as usize].start_sector + index * 8;
        // The page leaves the dirty counts (inode, NR_DIRTY) and enters writeback.
        self.folio_clear_dirty(p);
        self.folio_start_writeback(p);
        self.mm.map[p as usize].flags |= pg::RECLAIM;
        let nid = self.mm.pfn_to_nid(p);
        let nr = self.mm.folio_nr_pages(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_VMSCAN_WRITE, nr as i64);
        self.mm
            .count_vm_events(super::vmstat::Event::PGPGOUT, 4 * nr);
        self.trace_write_folio(p, true, sync);
        self.submit_bio(
            // pageout()'s wbc: WB_SYNC_NONE, for_reclaim; REQ_SYNC only for a sync pageout.
            Request::write(sector, nr as u32, 0, sync).wbt(if sync {
                WbtKind::Hiprio
            } else {
                WbtKind::Write
            }),
            BioKind::FileWrite(vec![p]),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::mm::vmstat::Event;

    /// A booted 512 MiB kernel with these `[kernel]` and `[disk]` lines, and a task.
    fn boot(kernel: &str, disk: &str) -> (Kernel, TaskId) {
        let sc = Scenario::from_toml(&format!(
            "[machine]\nmemory = \"512MiB\"\ncpus = 1\n[kernel]\n{kernel}\n[disk]\n{disk}\n"
        ))
        .unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        (k, tid)
    }

    /// Writes `pages` pages from index 0 in write(2) calls of `bs` bytes.
    fn write(k: &mut Kernel, tid: TaskId, ino: u32, pages: u64, bs: u64) {
        for i in 0..pages {
            let left = bs - (i * PAGE_SIZE_U64) % bs;
            let left = left.min((pages - i) * PAGE_SIZE_U64);
            assert!(matches!(
                k.file_write_folio(tid, ino, i, left),
                AllocResult::Page(_)
            ));
        }
    }

    const PAGE_SIZE_U64: u64 = super::super::page::PAGE_SIZE;

    /// The orders of a file's folios in index order.
    fn folio_orders(k: &Kernel, ino: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < k.inodes[ino as usize].size_pages {
            match k.filemap_get_folio(ino, i) {
                Some(p) => {
                    assert_eq!(k.folio_index(p), i, "a folio starts at its first index");
                    out.push(k.mm.map[p as usize].order());
                    i += k.mm.folio_nr_pages(p);
                }
                None => i += 1,
            }
        }
        out
    }

    #[test]
    fn write_order_follows_the_length_and_the_alignment() {
        let mib = 1 << 20;
        assert_eq!(write_begin_order(0, mib, 9), 8);
        assert_eq!(write_begin_order(256, mib, 9), 8);
        // Not aligned to 256 pages: the index's alignment (__ffs).
        assert_eq!(write_begin_order(128, mib, 9), 7);
        assert_eq!(write_begin_order(3, mib, 9), 0);
        // ilog2 of the length: 12 KiB asks for 8 KiB.
        assert_eq!(write_begin_order(0, 12 << 10, 9), 1);
        assert_eq!(write_begin_order(0, 4096, 9), 0);
        assert_eq!(write_begin_order(0, 100, 9), 0);
        // Capped by the mapping's largest order.
        assert_eq!(write_begin_order(0, 64 * mib, 9), 9);
        assert_eq!(write_begin_order(0, mib, 0), 0);
    }

    #[test]
    fn buffered_writes_create_folios_of_the_write_size_only_with_large_folios() {
        let (mut k, tid) = boot("", "");
        let ino = k.lookup_or_create("f");
        write(&mut k, tid, ino, 1024, 1 << 20);
        assert_eq!(folio_orders(&k, ino), vec![8; 4]);
        assert_eq!(k.inodes[ino as usize].nrpages, 1024);
        assert_eq!(k.inodes[ino as usize].nr_dirty, 1024);
        assert_eq!(k.mm.nodes[0].vm_stat[NodeStat::NR_DIRTIED as usize], 1024);
        k.mm.check_lru().unwrap();
        // A write of 4 MiB in one call: folios of 2 MiB (the chunk, order 9), counted in
        // nr_file_hugepages.
        let g = k.lookup_or_create("g");
        write(&mut k, tid, g, 1024, 4 << 20);
        assert_eq!(folio_orders(&k, g), vec![9; 2]);
        assert_eq!(
            k.mm.nodes[0].vm_stat[NodeStat::NR_FILE_HUGEPAGES as usize],
            1024
        );
        let (mut k, tid) = boot("version = \"6.1\"", "");
        let ino = k.lookup_or_create("f");
        write(&mut k, tid, ino, 512, 1 << 20);
        assert_eq!(folio_orders(&k, ino), vec![0; 512]);
    }

    #[test]
    fn a_write_falls_back_to_a_lower_order_when_the_range_or_the_allocation_fails() {
        let (mut k, tid) = boot("", "");
        let ino = k.lookup_or_create("f");
        // Page 5 cached already: orders 8..3 would overlap it, order 2 fits before it.
        assert!(matches!(
            k.file_write_page(tid, ino, 5),
            AllocResult::Page(_)
        ));
        assert!(matches!(
            k.file_write_folio(tid, ino, 0, 1 << 20),
            AllocResult::Page(_)
        ));
        let p = k.filemap_get_folio(ino, 0).unwrap();
        assert_eq!(k.mm.map[p as usize].order(), 2);
        // No free block of order 4 or more left (every other page of them held): the
        // __GFP_NORETRY attempts fail and the write falls back to what is free.
        let (mut k, tid) = boot("compaction = false", "");
        let mut held = Vec::new();
        while let AllocResult::Page(p) = k.alloc_pages(
            crate::mm::gfp::Gfp(
                crate::mm::gfp::GFP_KERNEL.0
                    | crate::mm::gfp::__GFP_NORETRY.0
                    | crate::mm::gfp::__GFP_NOWARN.0,
            ),
            0,
            tid,
        ) {
            held.push(p);
        }
        held.sort_unstable();
        for &p in held.iter().step_by(2) {
            k.mm.free_pages(p, 0, 0);
        }
        k.mm.drain_all_pages();
        // And every free block of order 4 or more that the watermarks kept back.
        let ac = k.mm.prepare_alloc_pages(crate::mm::gfp::GFP_KERNEL, 0, 0);
        for order in (4..=10).rev() {
            while k
                .mm
                .get_page_from_freelist(
                    order,
                    crate::mm::gfp::alloc_flags::ALLOC_NO_WATERMARKS,
                    &ac,
                )
                .is_some()
            {}
        }
        let ino = k.lookup_or_create("f");
        assert!(matches!(
            k.file_write_folio(tid, ino, 0, 1 << 20),
            AllocResult::Page(_)
        ));
        let p = k.filemap_get_folio(ino, 0).unwrap();
        assert!(k.mm.map[p as usize].order() < 4, "fell back below order 4");
        k.mm.check_lru().unwrap();
    }

    /// Reads a file of `pages` uncached pages in read(2) calls of `req` pages; returns
    /// the readahead window after each window change and the orders of the folios read.
    fn sequential_read(kernel: &str, disk: &str, pages: u64, req: u64) -> (Vec<u64>, Vec<usize>) {
        let (mut k, tid) = boot(kernel, disk);
        let ino = k.lookup_or_create("f");
        k.inodes[ino as usize].size_pages = pages;
        let mut windows = Vec::new();
        for i in 0..pages {
            let left = (req - i % req).min(pages - i);
            assert!(matches!(
                k.file_read_folio(tid, ino, i, left),
                AllocResult::Page(_)
            ));
            let size = k.inodes[ino as usize].ra.size;
            if windows.last() != Some(&size) {
                windows.push(size);
            }
        }
        k.mm.check_lru().unwrap();
        assert_eq!(k.inodes[ino as usize].nrpages, pages);
        (windows, folio_orders(&k, ino))
    }

    #[test]
    fn readahead_window_grows_on_a_sequential_read_up_to_read_ahead_kb() {
        // 4 KiB reads, the default 128 KiB: 4 pages (get_init_ra_size), then 8; the
        // third window, of order-4 folios, is cut back to 4 pages to end aligned to 16
        // (page_cache_async_ra's aligned_end), and then it grows again to the maximum.
        let (w, orders) = sequential_read("", "", 512, 1);
        assert_eq!(w, vec![4, 8, 4, 8, 16, 32]);
        assert_eq!(orders[0], 0);
        assert_eq!(*orders.iter().max().unwrap(), 5);
        // 1 MiB reads on read_ahead_kb 8192: 512, 1024, 2048 and never more (later
        // windows are cut to end aligned to their folio order); the largest folio order
        // is ext4's 9.
        let (w, orders) = sequential_read("", "read_ahead_kb = 8192", 16384, 256);
        assert_eq!(w[..3], [512, 1024, 2048]);
        assert_eq!(*w.iter().max().unwrap(), 2048);
        assert_eq!(*orders.iter().max().unwrap(), 9);
        // Without large folios the same windows read order-0 pages.
        let (w, orders) =
            sequential_read("large_folios = false", "read_ahead_kb = 8192", 8192, 256);
        assert_eq!(w, vec![512, 1024, 2048]);
        assert!(orders.iter().all(|&o| o == 0));
        // The fixed window reads 32 pages at every miss.
        let (w, _) = sequential_read("ondemand_readahead = false", "", 256, 1);
        assert_eq!(w, vec![0]);
    }

    #[test]
    fn a_large_folio_is_reclaimed_and_counted_as_its_pages() {
        let (mut k, tid) = boot("", "");
        let ino = k.lookup_or_create("f");
        write(&mut k, tid, ino, 512, 1 << 20);
        for i in [0, 256] {
            let p = k.filemap_get_folio(ino, i).unwrap();
            k.folio_clear_dirty(p);
        }
        let files = |k: &Kernel| k.mm.nodes[0].vm_stat[NodeStat::NR_FILE_PAGES as usize];
        let steal = |k: &Kernel| k.mm.events[Event::PGSTEAL_FILE as usize];
        assert_eq!(files(&k), 512);
        let before = (steal(&k), k.mm.nr_free_pages());
        let nr = k
            .try_to_free_pages(crate::mm::gfp::GFP_KERNEL, 0, tid)
            .unwrap_or(0);
        assert!(nr > 0 && nr % 256 == 0, "reclaimed {nr}: whole folios");
        assert_eq!(steal(&k) - before.0, nr);
        assert_eq!(files(&k), 512 - nr as i64);
        assert_eq!(k.inodes[ino as usize].nrpages, 512 - nr);
        assert!(k.mm.nr_free_pages() + 64 >= before.1 + nr);
        k.mm.check_lru().unwrap();
    }

    #[test]
    fn a_large_folio_is_charged_and_uncharged_as_one() {
        let text = "duration = \"10s\"\n[machine]\nmemory = \"512MiB\"\ncpus = 1\n\
                    [[cgroup]]\npath = \"L\"\nlimit_in_bytes = \"64MiB\"\n\
                    [[task]]\nname = \"dd\"\ncgroup = \"L\"\nprogram = [ \
                    { op = \"write\", file = \"f\", size = \"8MiB\", bs = \"1MiB\" } ]\n";
        let sc = Scenario::from_toml(text).unwrap();
        let mut eng = crate::sim::build(&sc);
        eng.run_until(5_000_000_000);
        let k = &mut eng.kernel;
        k.check_memcg().unwrap();
        let ino = *k.files.get("f").unwrap();
        assert_eq!(folio_orders(k, ino), vec![8; 8]);
        let id = k.inode_memcg(ino);
        let usage = k.mm.memcg.groups[id as usize].memory.usage;
        assert!(usage >= 2048, "{usage}");
        let tid = 0;
        k.unlink(tid, "f");
        k.check_memcg().unwrap();
        assert_eq!(k.mm.memcg.groups[id as usize].memory.usage, usage - 2048);
    }

    #[test]
    fn runs_with_large_folios_and_readahead_are_deterministic() {
        let text = "duration = \"20s\"\nseed = 7\n[machine]\nmemory = \"256MiB\"\ncpus = 2\n\
                    [disk]\nread_ahead_kb = 1024\n\
                    [[cgroup]]\npath = \"L\"\nlimit_in_bytes = \"32MiB\"\n\
                    [[task]]\nname = \"dd\"\ncgroup = \"L\"\nprogram = [ \
                    { op = \"write\", file = \"f\", size = \"96MiB\", bs = \"1MiB\" }, \
                    { op = \"read\", file = \"f\", bs = \"128KiB\" } ]\n";
        let sc = Scenario::from_toml(text).unwrap();
        let a = serde_json::to_string(&crate::sim::run(&sc, &mut |_, _| {})).unwrap();
        let b = serde_json::to_string(&crate::sim::run(&sc, &mut |_, _| {})).unwrap();
        assert_eq!(a, b);
        assert!(a.contains("pgsteal_file"));
    }
}
