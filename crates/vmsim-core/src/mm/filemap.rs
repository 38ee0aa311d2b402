//! The page cache of files.
//!
//! Models mm/filemap.c (filemap_add_folio, __filemap_remove_folio) and the
//! inode's address_space: each file's pages are slots of its [`SlotTable`]
//! in the shared reverse map, so a page finds its file and index at once.
//! The file operations that create and dirty page-cache pages (read, write,
//! unlink) and their writeback arrive with the dirty-writeback model.

use super::memory::BioKind;
use super::page::{pg, PageKind, Pfn, NIL};
use super::rmap::{Entry, Owner, SlotTable};
use super::vmstat::NodeStat;
use crate::block::Request;
use crate::engine::lock::TaskId;
use crate::kernel::Kernel;

/// A file (struct inode with its address_space).
#[derive(Debug, Clone, Default)]
pub struct Inode {
    /// Inode number.
    pub ino: u32,
    /// Pages in the page cache (mapping->nrpages).
    pub nrpages: u64,
    /// Page index → slot.
    pub pages: SlotTable,
    /// First sector of the file on the disk (its extent).
    pub start_sector: u64,
}

impl Kernel {
    /// Inserts a page in a file's page cache at `index` and on the LRU (filemap_add_folio).
    pub fn filemap_add_folio(&mut self, ino: u32, index: u64, p: Pfn, cpu: usize) {
        let inode = &mut self.inodes[ino as usize];
        let slot = inode
            .pages
            .slot_or_alloc(&mut self.rmap, index, |i| Owner::File { ino, index: i });
        self.rmap.set(slot, Entry::Page(p));
        inode.nrpages += 1;
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::File);
        page.owner = slot;
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_FILE_PAGES, 1);
        self.mm.folio_add_lru(p, cpu);
    }

    /// Takes a clean, unmapped page out of its file's page cache and frees it
    /// (__filemap_remove_folio, then the final folio_put).
    pub fn remove_file_page_and_free(&mut self, p: Pfn, cpu: usize) {
        let slot = self.mm.map[p as usize].owner;
        if let (Owner::File { ino, .. }, _) = self.rmap.owner(slot) {
            self.rmap.set(slot, Entry::None);
            self.inodes[ino as usize].nrpages -= 1;
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
    pub fn file_writepage(&mut self, p: Pfn, tid: TaskId, sync: bool) {
        let slot = self.mm.map[p as usize].owner;
        let (owner, index) = self.rmap.owner(slot);
        let Owner::File { ino, .. } = owner else {
            return;
        };
        let sector = self.inodes[ino as usize].start_sector + index * 8;
        let page = &mut self.mm.map[p as usize];
        page.flags &= !pg::DIRTY;
        page.flags |= pg::WRITEBACK | pg::RECLAIM;
        let nid = self.mm.pfn_to_nid(p);
        self.mm.mod_node_page_state(nid, NodeStat::NR_DIRTY, -1);
        self.mm.mod_node_page_state(nid, NodeStat::NR_WRITEBACK, 1);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_VMSCAN_WRITE, 1);
        let flags = crate::trace::RECLAIM_WB_FILE
            | if sync {
                crate::trace::RECLAIM_WB_SYNC
            } else {
                crate::trace::RECLAIM_WB_ASYNC
            };
        self.trace(
            tid,
            crate::trace::TraceEvent::MmVmscanWriteFolio {
                pfn: p as u64,
                reclaim_flags: flags,
            },
        );
        self.submit_bio(
            Request::write(sector, 1, 0, sync),
            BioKind::FileWrite(vec![p]),
        );
    }
}
