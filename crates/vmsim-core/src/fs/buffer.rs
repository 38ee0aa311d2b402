//! Buffer heads and the block device's page cache (fs/buffer.c).
//!
//! A filesystem that keeps its metadata in buffers reads and writes blocks of
//! the block device through the device's own page cache (`bdev->bd_mapping`,
//! here one [`Inode`](crate::mm::filemap::Inode) named [`BDEV_NAME`]): page
//! index = block number (4 KiB blocks, one block a page). A block not yet
//! cached is grown into a new page (`__getblk_slow` → `grow_dev_folio`) whose
//! gfp is the mapping's (`GFP_USER`, set by `bdev_alloc`) without `__GFP_FS`,
//! with `__GFP_MOVABLE` added by `__getblk`/`sb_getblk` and not by
//! `getblk_unmovable` — that choice is the page's migratetype. Every page
//! with buffers carries one `buffer_head` (a SLAB_RECLAIM_ACCOUNT object,
//! [`folio_alloc_buffers`](crate::kernel::Kernel::folio_alloc_buffers)) until
//! the page leaves the page cache (`try_to_free_buffers`). Data pages of a
//! buffer-head filesystem (ext4's write_begin → `create_empty_buffers`) get
//! one the same way.
//!
//! Simplified: one buffer a page (4 KiB blocks); no per-CPU bh LRU; the block
//! device's pages are charged to the root memory cgroup; a dirty
//! buffer dirties its whole page, which the flusher writes back like any
//! file page; a journaled buffer's page is not pinned against writeback.

use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::{Gfp, __GFP_FS, __GFP_MOVABLE, __GFP_NOFAIL, GFP_NOFS, GFP_USER};
use crate::mm::memory::BioKind;
pub use crate::mm::page::IntMap;
use crate::mm::page::Pfn;
use crate::mm::rmap::Entry;
use crate::mm::slab::{SlabObj, BUFFER_HEAD};

/// Name of the block device's inode in the file table.
pub const BDEV_NAME: &str = "/dev/vda";

/// The buffer heads in the system (folio->private of every page with buffers).
#[derive(Debug, Clone, Default)]
pub struct Buffers {
    /// Page frame (a folio's first) → slab id of its first buffer_head.
    pub bh: IntMap<Pfn, u32>,
    /// A folio's first frame → the group its buffer_heads are charged to (their
    /// objcg), for folios whose buffers are charged.
    pub bh_objcg: IntMap<Pfn, u32>,
    /// A large folio's first frame → slab ids of its other buffer_heads (one per block).
    pub bh_rest: IntMap<Pfn, Vec<u32>>,
    /// The block device's inode, once a block was first read or created.
    pub bdev_ino: Option<u32>,
    /// Blocks grown into the block device's page cache (`grow_dev_folio`), by gfp:
    /// [movable, unmovable].
    pub grown: [u64; 2],
    /// Metadata blocks read from the disk.
    pub reads: u64,
}

impl Kernel {
    /// Attaches a buffer_head per block to a folio (folio_alloc_buffers → alloc_buffer_head),
    /// charged to the allocating task's group (GFP_NOFS | __GFP_ACCOUNT | __GFP_NOFAIL of
    /// create_empty_buffers and grow_dev_folio).
    pub fn folio_alloc_buffers(&mut self, p: Pfn, tid: TaskId) -> AllocResult {
        if self.buffers.bh.contains_key(&p) {
            return AllocResult::Page(p);
        }
        let cache = BUFFER_HEAD;
        let gfp = Gfp(GFP_NOFS.0 | __GFP_NOFAIL.0);
        let first = match self.slab_alloc_object(cache, tid, gfp) {
            Ok(obj) => obj,
            Err(r) => return r,
        };
        self.buffers.bh.insert(p, first.id);
        if first.objcg != crate::mm::memcontrol::NO_MEMCG {
            self.buffers.bh_objcg.insert(p, first.objcg);
        }
        // One buffer_head per block: a large folio of 4 KiB blocks has one per page.
        let nr = self.mm.folio_nr_pages(p);
        if nr > 1 {
            let mut rest = Vec::with_capacity(nr as usize - 1);
            for _ in 1..nr {
                match self.slab_alloc_object(cache, tid, gfp) {
                    // All of a folio's buffers are charged to one group: one task's call.
                    Ok(obj) => rest.push(obj.id),
                    Err(_) => break,
                }
            }
            self.buffers.bh_rest.insert(p, rest);
        }
        AllocResult::Page(p)
    }

    /// Frees a folio's buffer_heads as it leaves the page cache
    /// (filemap_release_folio → try_to_free_buffers → free_buffer_head), each for
    /// `free_buffer_head`.
    pub fn try_to_free_buffers(&mut self, p: Pfn, cpu: usize) {
        if self.buffers.bh.is_empty() {
            return;
        }
        if let Some(id) = self.buffers.bh.remove(&p) {
            let cache = BUFFER_HEAD;
            let objcg = self
                .buffers
                .bh_objcg
                .remove(&p)
                .unwrap_or(crate::mm::memcontrol::NO_MEMCG);
            let cost = self.mm.cost.free_buffer_head;
            self.mm.cur.acc += cost;
            self.kmem_cache_free(cache, SlabObj { id, objcg }, cpu);
            for id in self.buffers.bh_rest.remove(&p).unwrap_or_default() {
                self.mm.cur.acc += cost;
                self.kmem_cache_free(cache, SlabObj { id, objcg }, cpu);
            }
        }
    }

    /// Moves a folio's buffers to its new frame (buffer_migrate_folio).
    pub fn buffer_migrate_folio(&mut self, src: Pfn, dst: Pfn) {
        if self.buffers.bh.is_empty() {
            return;
        }
        if let Some(id) = self.buffers.bh.remove(&src) {
            self.buffers.bh.insert(dst, id);
            if let Some(rest) = self.buffers.bh_rest.remove(&src) {
                self.buffers.bh_rest.insert(dst, rest);
            }
            if let Some(objcg) = self.buffers.bh_objcg.remove(&src) {
                self.buffers.bh_objcg.insert(dst, objcg);
            }
        }
    }

    /// The block device's inode (bdev_alloc: its mapping's gfp is GFP_USER).
    pub fn bdev_inode(&mut self) -> u32 {
        if let Some(ino) = self.buffers.bdev_ino {
            return ino;
        }
        let ino = self.lookup_or_create(BDEV_NAME);
        self.buffers.bdev_ino = Some(ino);
        ino
    }

    /// The page of a cached block, if it is in the block device's page cache.
    pub fn find_get_block(&self, block: u64) -> Option<Pfn> {
        let ino = self.buffers.bdev_ino?;
        match self.inodes[ino as usize]
            .pages
            .slot(block)
            .map(|s| self.rmap.get(s))
        {
            Some(Entry::Page(p)) => Some(p),
            _ => None,
        }
    }

    /// Finds or grows a block's buffer in the block device's page cache (bdev_getblk →
    /// __getblk_slow → grow_dev_folio): `movable` is `__getblk`/`sb_getblk`'s
    /// `__GFP_MOVABLE`, false is `getblk_unmovable`; `read` reads a block that exists on
    /// disk (`bh_read`, the task sleeps until it is in), a new block is not read.
    pub fn bdev_getblk(
        &mut self,
        tid: TaskId,
        block: u64,
        movable: bool,
        read: bool,
    ) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        if let Some(p) = self.find_get_block(block) {
            // touch_buffer()
            self.mm.folio_mark_accessed(p, cpu);
            return AllocResult::Page(p);
        }
        let ino = self.bdev_inode();
        let mut gfp = Gfp((GFP_USER.0 & !__GFP_FS.0) | __GFP_NOFAIL.0);
        if movable {
            gfp = Gfp(gfp.0 | __GFP_MOVABLE.0);
        }
        let p = match self.alloc_pages(gfp, 0, tid) {
            AllocResult::Page(p) => p,
            other => return other,
        };
        // Charged to the root group: the block device's page cache is shared by every
        // group (the kernel charges each folio to the task that brought it in).
        let memcg = crate::mm::memcontrol::ROOT_MEM_CGROUP;
        if let Some(r) = self.charge_or_free_alloc(p, memcg, tid) {
            return r;
        }
        self.filemap_add_folio(ino, block, p, cpu, !read);
        self.buffers.grown[(!movable) as usize] += 1;
        if let AllocResult::Page(_) = self.folio_alloc_buffers(p, tid) {
        } else {
            // The page stays cached without buffers; the next lookup attaches them.
        }
        let inode = &mut self.inodes[ino as usize];
        inode.size_pages = inode.size_pages.max(block + 1);
        if read {
            self.buffers.reads += 1;
            let sector = self.inodes[ino as usize].start_sector + block * 8;
            self.mm.count_vm_events(crate::mm::vmstat::Event::PGPGIN, 4);
            let done =
                self.submit_bio(crate::block::Request::read(sector, 1, 0), BioKind::FileRead);
            self.sleep_until(done);
        }
        self.mm.folio_mark_accessed(p, cpu);
        AllocResult::Page(p)
    }

    /// Marks a cached block dirty (mark_buffer_dirty → __folio_mark_dirty): its page
    /// joins the block device inode's dirty pages for the flusher.
    pub fn mark_buffer_dirty(&mut self, block: u64) {
        let (Some(ino), Some(p)) = (self.buffers.bdev_ino, self.find_get_block(block)) else {
            return;
        };
        if self.mm.map[p as usize].test(crate::mm::page::pg::DIRTY) {
            return;
        }
        let now = self.mm.clock();
        self.folio_mark_dirty(p, ino, now);
    }
}
