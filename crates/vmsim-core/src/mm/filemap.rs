//! The page cache of files.
//!
//! Models mm/filemap.c (filemap_add_folio, __filemap_remove_folio) and the
//! inode's address_space: each file's pages are slots of its [`SlotTable`]
//! in the shared reverse map, so a page finds its file and index at once.
//! Files live on the one disk, each in its own extent, so reading or writing
//! a file in order is sequential I/O. Reads miss into readahead of up to
//! READAHEAD_PAGES pages (one request; the reader sleeps until it completes);
//! writes copy into page-cache pages, dirty them and call
//! balance_dirty_pages every DIRTY_RATELIMIT_PAGES pages.

use super::gfp::{Gfp, __GFP_FS, GFP_HIGHUSER_MOVABLE};
use super::memory::BioKind;
use super::page::{pg, PageKind, Pfn, NIL};
use super::rmap::{Entry, Owner, SlotTable};
use super::vmstat::NodeStat;
use crate::block::Request;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Pages read ahead on a page-cache miss (the default 128 KiB read_ahead_kb).
pub const READAHEAD_PAGES: u64 = 32;
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
}

impl Kernel {
    /// Inserts a page in a file's page cache at `index` and on the LRU (filemap_add_folio):
    /// a shadow entry in the slot is a refault, judged unless the page is for a write
    /// (`__GFP_WRITE`).
    pub fn filemap_add_folio(&mut self, ino: u32, index: u64, p: Pfn, cpu: usize, write: bool) {
        let inode = &mut self.inodes[ino as usize];
        let slot = inode
            .pages
            .slot_or_alloc(&mut self.rmap, index, |i| Owner::File { ino, index: i });
        self.rmap.set(slot, Entry::Page(p));
        inode.nrpages += 1;
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::File);
        page.owner = slot;
        let memcg = self.inode_memcg(ino);
        self.mem_cgroup_commit_charge(p, memcg);
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, 1);
        let shadow = self.shadow_take(ino, slot);
        self.xa_page_added(ino, index, slot, nid, memcg);
        if let Some(shadow) = shadow {
            if !write {
                self.workingset_refault(p, shadow);
            }
        }
        self.mm.folio_add_lru(p, cpu);
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
        self.swap.pages as u64 * 8
    }

    /// Writes page `index` of a file through the page cache (generic_perform_write):
    /// the page is found or allocated, copied into and dirtied. Returns false if no
    /// page could be allocated; [`AllocResult::Retry`] means the caller retries later.
    pub fn file_write_page(&mut self, tid: TaskId, ino: u32, index: u64) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        let existing = self.inodes[ino as usize]
            .pages
            .slot(index)
            .map(|s| self.rmap.get(s));
        let p = match existing {
            Some(Entry::Page(p)) => p,
            _ => {
                // grab_cache_page_write_begin(): the mapping's gfp without __GFP_FS.
                let gfp = Gfp(GFP_HIGHUSER_MOVABLE.0 & !__GFP_FS.0);
                let p = match self.alloc_pages(gfp, 0, tid) {
                    AllocResult::Page(p) => p,
                    other => return other,
                };
                let memcg = self.file_memcg(ino, tid);
                if let Some(r) = self.charge_or_free_alloc(p, memcg, tid) {
                    return r;
                }
                self.filemap_add_folio(ino, index, p, cpu, true);
                if self.fs_is_ext4() {
                    // ext4_da_write_begin → create_empty_buffers(); NOFAIL in the kernel.
                    let _ = self.folio_alloc_buffers(p, tid);
                }
                p
            }
        };
        self.mm.cur.acc += self.mm.cost.copy_page;
        let now = self.mm.clock();
        self.folio_mark_dirty(p, ino, now);
        self.mm.folio_mark_accessed(p, cpu);
        let inode = &mut self.inodes[ino as usize];
        inode.size_pages = inode.size_pages.max(index + 1);
        AllocResult::Page(p)
    }

    /// Reads page `index` of a file through the page cache (filemap_read): a hit marks
    /// it accessed; a miss reads ahead and the reader sleeps until the read completes.
    pub fn file_read_page(&mut self, tid: TaskId, ino: u32, index: u64) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        if let Some(Entry::Page(p)) = self.inodes[ino as usize]
            .pages
            .slot(index)
            .map(|s| self.rmap.get(s))
        {
            self.mm.cur.acc += self.mm.cost.copy_page;
            self.mm.folio_mark_accessed(p, cpu);
            return AllocResult::Page(p);
        }
        // page_cache_sync_readahead(): the missing page and those after it, up to the window.
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
        self.mm.cur.acc += self.mm.cost.copy_page;
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
            self.folio_clear_dirty(p);
            self.mm.cur.acc += self.mm.cost.shrink_page / 4;
            if self.mm.map[p as usize].test(pg::LRU) {
                self.mm.lru_remove_for_free(p, cpu);
            }
            if self.mm.map[p as usize].test(pg::WRITEBACK) {
                // Freed when its write completes.
                self.mem_cgroup_uncharge(p);
                self.rmap.set(slot, Entry::None);
                self.inodes[ino as usize].nrpages -= 1;
                let nid = self.mm.pfn_to_nid(p);
                self.xa_page_removed(ino, slot, nid);
                self.mm
                    .mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, -1);
                let page = &mut self.mm.map[p as usize];
                page.owner = NIL;
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
        let slot = self.mm.map[p as usize].owner;
        if let (Owner::File { ino, .. }, _) = self.rmap.owner(slot) {
            self.rmap.set(slot, Entry::None);
            self.inodes[ino as usize].nrpages -= 1;
            self.xa_page_removed(ino, slot, self.mm.pfn_to_nid(p));
        }
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, -1);
        let page = &mut self.mm.map[p as usize];
        page.flags &= !(pg::ACTIVE | pg::REFERENCED | pg::WORKINGSET | pg::RECLAIM | pg::MAPPED);
        page.owner = NIL;
        self.mm.free_pages(p, 0, cpu);
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
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_VMSCAN_WRITE, 1);
        self.mm.count_vm_events(super::vmstat::Event::PGPGOUT, 4);
        self.trace_write_folio(p, true, sync);
        self.submit_bio(
            Request::write(sector, 1, 0, sync),
            BioKind::FileWrite(vec![p]),
        );
    }
}
