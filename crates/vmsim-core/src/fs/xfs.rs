//! What an XFS file's create allocates (fs/xfs, the v4.20 code seed 004 ran on).
//!
//! XFS keeps its metadata in buffers of its own (`struct xfs_buf`), not in
//! the block device's page cache: `xfs_buf_allocate_memory` gives a buffer of
//! a page or more its own pages with `alloc_page(xb_to_gfp(flags))`, GFP_NOFS
//! without `__GFP_MOVABLE` — **unmovable** pages — and the `struct xfs_buf`
//! comes from the `xfs_buf` slab cache. A create (`xfs_create`) takes a
//! dentry (`d_alloc`), an `xfs_inode` (`xfs_inode_alloc`, reclaimable) and,
//! when its inode is first logged, an inode log item (`xfs_trans_ijoin` →
//! `xfs_inode_item_init`: `xfs_ili`), freed with the inode (`xfs_inode_free`
//! → `xfs_inode_item_destroy`). The inode number comes from the allocation
//! group's current inode chunk; a full chunk makes a new one of
//! `XFS_INODES_PER_CHUNK` = 64 inodes (`xfs_ialloc_ag_alloc` →
//! `xfs_ialloc_inode_init`, which gets a new buffer for each inode cluster of
//! the chunk with `xfs_trans_get_buf`). The name goes into the directory
//! (`xfs_dir_createname`): entries fill 4 KiB data blocks; past one block the
//! directory keeps its hash index in leaf blocks and, past one leaf, in node
//! form with free-index blocks (`xfs_dir2_node_addname`); each new block is a
//! new buffer (`xfs_da_grow_inode` + `xfs_dir3_data_init` /
//! `xfs_dir3_leaf_get_buf` / `xfs_dir3_free_get_buf`).
//!
//! Cached buffers sit on the buffer target's LRU (`bt_lru`) with a reference
//! count `b_lru_ref` set by their users (`xfs_buf_set_ref`: `XFS_DIR_BTREE_REF`,
//! `XFS_INO_REF`); the buffer shrinker (`xfs_buftarg_shrink_scan` →
//! `xfs_buftarg_isolate`) rotates a buffer while its count is above zero,
//! decrementing it, and frees it (pages and `struct xfs_buf`) at zero. A
//! buffer needed again after that is read back from the disk
//! (`xfs_buf_read_map`).
//!
//! Layout (mkfs.xfs defaults of the v5 format): 4 KiB blocks and directory
//! blocks, 512-byte inodes, so a 16 KiB inode cluster
//! (`XFS_INODE_BIG_CLUSTER_SIZE` × inode size / `XFS_DINODE_MIN_SIZE`) and two
//! cluster buffers a chunk; 64-byte v5 block headers. Simplified: a buffer is
//! on the LRU as soon as it is made (XFS holds a logged buffer, off the LRU,
//! until the AIL has written it); one allocation group; the log's own memory
//! (CIL log vectors, tickets), the AGI/AGF and the free-space and inode btree
//! blocks are not modelled; an unlink frees the inode's objects, its inode number
//! and its entry's space go to later creates, and chunks and directory blocks stay. A data extent allocated at writeback stays in the
//! inode's data fork (no bmap btree block for a small file).

use super::split_path;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::{GFP_KERNEL, GFP_NOFS};
use crate::mm::page::{IntMap, PageKind, Pfn, NO_OWNER, PAGE_SIZE};
use crate::mm::slab::{SlabObj, DENTRY, KMALLOC_512, XFS_BUF, XFS_ILI, XFS_INODE};
use std::collections::VecDeque;

/// Inodes in an inode chunk (XFS_INODES_PER_CHUNK).
pub const INODES_PER_CHUNK: u32 = 64;
/// On-disk inode size [bytes] (mkfs.xfs's default for v5 filesystems).
pub const INODE_SIZE: u64 = 512;
/// Inode cluster size [bytes]: XFS_INODE_BIG_CLUSTER_SIZE (8192) × inode size /
/// XFS_DINODE_MIN_SIZE (256) on v5 filesystems (xfs_mount.c).
pub const INODE_CLUSTER_SIZE: u64 = 8192 * INODE_SIZE / 256;
/// Directory block size [bytes] (the filesystem block size).
pub const DIR_BLOCK: u64 = 4096;
/// A v5 directory block's header [bytes] (xfs_dir3_data_hdr, xfs_dir3_leaf_hdr,
/// xfs_dir3_free_hdr, xfs_da3_node_hdr are each 64 bytes).
const DIR3_HDR: u64 = 64;
/// Entries of a node-form leaf block (8-byte xfs_dir2_leaf_entry: hash and address).
pub const LEAF_ENTRIES: u32 = ((DIR_BLOCK - DIR3_HDR) / 8) as u32;
/// Data blocks one free-index block describes (2-byte bests).
pub const FREE_ENTRIES: u32 = ((DIR_BLOCK - DIR3_HDR) / 2) as u32;
/// b_lru_ref of directory buffers (XFS_DIR_BTREE_REF).
pub const XFS_DIR_BTREE_REF: u8 = 2;
/// First sector of the metadata vmsim places on the disk (past every file's data).
const META_SECTOR: u64 = 1 << 55;

/// Bytes a directory data entry takes (xfs_dir2_data_entsize with the file type byte:
/// 8-byte inode number, name length, name, file type, 2-byte tag, rounded up to 8).
pub fn data_entsize(name_len: usize) -> u64 {
    (8 + 1 + name_len as u64 + 1 + 2).div_ceil(8) * 8
}

/// Steps of a create, in order; a create an allocation interrupted resumes at its step.
const STAGE_DENTRY: u8 = 0;
const STAGE_INODE: u8 = 1;
const STAGE_CHUNK: u8 = 2;
const STAGE_ILI: u8 = 3;
const STAGE_DIRENT: u8 = 4;
const STAGE_DONE: u8 = 5;

/// One XFS inode's state beside vmsim's inode (struct xfs_inode, reduced).
#[derive(Debug, Clone, Copy, Default)]
pub struct XfsInode {
    /// Next step of its create ([`STAGE_DONE`] when created).
    pub stage: u8,
    /// Whether it has an inode number.
    pub numbered: bool,
    /// Slab of its dentry.
    pub dentry: u32,
    /// Slab of its xfs_inode object.
    pub inode_obj: u32,
    /// Its directory (index in `Xfs::dirs`).
    pub dir: u32,
    /// Its inode log item and that item's shadow log vector, once logged.
    pub ili: Option<(SlabObj, SlabObj)>,
}

/// A directory: its entries and blocks.
#[derive(Debug, Clone, Default)]
pub struct XfsDir {
    /// Entries.
    pub entries: u64,
    /// Bytes left in the last data block.
    pub last_free: u64,
    /// Disk addresses of the data blocks, in order.
    pub data: Vec<u64>,
    /// Entries removed whose space in their data block a new name of their length
    /// takes again (the free index's bestfree, xfs_dir2_node_addname_int).
    pub holes: u64,
    /// Disk addresses of the leaf blocks (none while the index sits in the single
    /// block's tail), in hash order.
    pub leaves: Vec<u64>,
    /// Disk addresses of the free-index blocks (node form).
    pub free_blocks: Vec<u64>,
    /// The da node block above the leaves, in node form.
    pub node: Option<u64>,
}

/// A cached metadata buffer (struct xfs_buf, reduced).
#[derive(Debug, Clone, Default)]
pub struct XfsBuf {
    /// Its disk address (vmsim's numbering).
    pub daddr: u64,
    /// Its pages.
    pub pages: Vec<Pfn>,
    /// Its struct xfs_buf.
    pub obj: Option<SlabObj>,
    /// b_lru_ref.
    pub lru_ref: u8,
}

/// The mounted filesystem's state.
#[derive(Debug, Clone, Default)]
pub struct Xfs {
    /// Per vmsim inode number.
    pub inodes: Vec<XfsInode>,
    /// Directories by path.
    pub dirs: indexmap::IndexMap<String, XfsDir>,
    /// The directory looked up last.
    pub last_dir: u32,
    /// Free inodes left in the current chunk.
    pub chunk_free: u32,
    /// Inodes freed by unlinks in chunks already made, handed out again first
    /// (xfs_dialloc_ag: the free inode btree finds a chunk with a free inode).
    pub ifree: u64,
    /// Chunks made.
    pub chunks: u64,
    /// Cached buffers by id; `None` once freed (ids are reused).
    pub bufs: Vec<Option<XfsBuf>>,
    /// Free buffer ids.
    free_ids: Vec<u32>,
    /// Buffer id by disk address.
    by_daddr: IntMap<u64, u32>,
    /// The buffer LRU (bt_lru), oldest first; an id may be stale (freed since).
    lru: VecDeque<u32>,
    /// Cached buffers on the LRU.
    pub lru_len: u64,
    /// Next disk address for a new metadata block.
    next_daddr: u64,
    /// Inode log items and their shadow log vectors by the slab of their inode's
    /// xfs_inode object: freed with an object of that slab (objects of one slab are
    /// interchangeable).
    ili_by_inode_slab: IntMap<u32, Vec<(SlabObj, SlabObj)>>,
    /// Files created.
    pub creates: u64,
    /// Files unlinked.
    pub unlinks: u64,
    /// Buffers made (new or read back).
    pub bufs_made: u64,
    /// Buffers read back from the disk.
    pub bufs_read: u64,
    /// Buffers freed by the shrinker.
    pub bufs_freed: u64,
    /// Pages given to buffers.
    pub pages_made: u64,
}

/// What XFS did in a run (the result's `xfs` object).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct XfsReport {
    /// Files created (xfs_create).
    pub creates: u64,
    /// Files unlinked (xfs_remove).
    pub unlinks: u64,
    /// Directories made.
    pub directories: u64,
    /// Inode chunks allocated (xfs_ialloc_ag_alloc).
    pub inode_chunks: u64,
    /// Directory data blocks.
    pub dir_data_blocks: u64,
    /// Directory leaf and da node blocks.
    pub dir_leaf_blocks: u64,
    /// Directory free-index blocks.
    pub dir_free_blocks: u64,
    /// Metadata buffers made (new, or read back).
    pub buffers_made: u64,
    /// Buffers read back from the disk after the shrinker freed them.
    pub buffers_read: u64,
    /// Buffers the buffer shrinker freed.
    pub buffers_freed: u64,
    /// Unmovable pages given to buffers.
    pub buffer_pages_allocated: u64,
    /// Pages cached buffers hold at the end.
    pub buffer_pages_cached: u64,
}

impl Xfs {
    /// The state of a vmsim inode, grown on demand.
    fn inode(&mut self, ino: u32) -> &mut XfsInode {
        let i = ino as usize;
        if self.inodes.len() <= i {
            self.inodes.resize(i + 1, XfsInode::default());
        }
        &mut self.inodes[i]
    }

    /// A new metadata block's disk address.
    fn new_daddr(&mut self) -> u64 {
        let d = self.next_daddr;
        self.next_daddr += 1;
        d
    }

    /// Pages held by cached buffers.
    pub fn cached_pages(&self) -> u64 {
        self.bufs
            .iter()
            .flatten()
            .map(|b| b.pages.len() as u64)
            .sum()
    }
}

impl Kernel {
    /// Whether files live on xfs with its metadata (`kernel.fs = "xfs"`).
    pub fn fs_is_xfs(&self) -> bool {
        self.mm.kcfg.fs == crate::config::Fs::Xfs
    }

    /// The run's XFS figures, when a file was created on XFS.
    pub fn xfs_report(&self) -> Option<XfsReport> {
        if !self.fs_is_xfs() || self.xfs.dirs.is_empty() {
            return None;
        }
        let dirs = self.xfs.dirs.values();
        Some(XfsReport {
            creates: self.xfs.creates,
            unlinks: self.xfs.unlinks,
            directories: self.xfs.dirs.len() as u64,
            inode_chunks: self.xfs.chunks,
            dir_data_blocks: dirs.clone().map(|d| d.data.len() as u64).sum(),
            dir_leaf_blocks: dirs
                .clone()
                .map(|d| d.leaves.len() as u64 + d.node.is_some() as u64)
                .sum(),
            dir_free_blocks: dirs.map(|d| d.free_blocks.len() as u64).sum(),
            buffers_made: self.xfs.bufs_made,
            buffers_read: self.xfs.bufs_read,
            buffers_freed: self.xfs.bufs_freed,
            buffer_pages_allocated: self.xfs.pages_made,
            buffer_pages_cached: self.xfs.cached_pages(),
        })
    }

    /// Creates a file's inode and directory entry if not yet done (xfs_create); Page when
    /// done, else the allocation's result to retry on.
    pub fn xfs_create(&mut self, tid: TaskId, ino: u32) -> AllocResult {
        if self.xfs.inode(ino).stage == STAGE_DONE {
            return AllocResult::Page(0);
        }
        self.with_file_name(ino, |k, name| k.xfs_create_steps(tid, ino, name))
    }

    /// [`Kernel::xfs_create`] for the file's name, from where the last attempt stopped.
    fn xfs_create_steps(&mut self, tid: TaskId, ino: u32, name: &str) -> AllocResult {
        let (dir_path, base) = split_path(name);
        let dir = self.xfs_dir(dir_path);
        self.xfs.inode(ino).dir = dir;
        loop {
            let stage = self.xfs.inode(ino).stage;
            let r = match stage {
                // d_alloc in the lookup, before the transaction: GFP_KERNEL.
                STAGE_DENTRY => self.cached_object(DENTRY, tid, GFP_KERNEL).map(|id| {
                    self.xfs.inode(ino).dentry = id;
                }),
                // xfs_iget inside the create's transaction (memalloc_nofs): GFP_NOFS.
                STAGE_INODE => self.cached_object(XFS_INODE, tid, GFP_NOFS).map(|id| {
                    self.xfs.inode(ino).inode_obj = id;
                }),
                STAGE_CHUNK => self.xfs_dialloc(tid, ino),
                STAGE_ILI => self.xfs_inode_item_init(tid, ino),
                STAGE_DIRENT => self.xfs_dir_createname(tid, dir, base),
                _ => return AllocResult::Page(0),
            };
            if let Err(r) = r {
                return r;
            }
            self.xfs.inode(ino).stage = stage + 1;
            if stage + 1 == STAGE_DONE {
                self.xfs.creates += 1;
                // The open(O_CREAT) and close around it, once the create is complete.
                self.mm.cur.acc += self.mm.cost.create_call;
                return AllocResult::Page(0);
            }
        }
    }

    /// The directory of a path, made if new (xfs_mkdir, reduced: its shortform entries
    /// live in the inode until the first block).
    fn xfs_dir(&mut self, path: &str) -> u32 {
        let last = self.xfs.last_dir as usize;
        if self
            .xfs
            .dirs
            .get_index(last)
            .is_some_and(|(p, _)| p == path)
        {
            return last as u32;
        }
        let i = match self.xfs.dirs.get_index_of(path) {
            Some(i) => i,
            None => {
                self.xfs
                    .dirs
                    .insert_full(path.to_string(), XfsDir::default())
                    .0
            }
        };
        self.xfs.last_dir = i as u32;
        i as u32
    }

    /// An inode number from the current chunk, allocating a new chunk with its cluster
    /// buffers when it is used up (xfs_dialloc → xfs_ialloc_ag_alloc →
    /// xfs_ialloc_inode_init).
    fn xfs_dialloc(&mut self, tid: TaskId, ino: u32) -> Result<(), AllocResult> {
        if self.xfs.inode(ino).numbered {
            return Ok(());
        }
        if self.xfs.ifree > 0 {
            self.xfs.ifree -= 1;
            self.xfs.inode(ino).numbered = true;
            return Ok(());
        }
        if self.xfs.chunk_free == 0 {
            let chunk = INODES_PER_CHUNK as u64 * INODE_SIZE;
            for _ in 0..chunk / INODE_CLUSTER_SIZE {
                let daddr = self.xfs.new_daddr();
                let pages = (INODE_CLUSTER_SIZE / PAGE_SIZE) as usize;
                // xfs_trans_get_buf: a new buffer (b_lru_ref 1). A failed cluster leaves
                // the chunk to be made again whole.
                self.xfs_buf_get(tid, daddr, pages, 1, false)?;
            }
            self.xfs.chunks += 1;
            self.xfs.chunk_free = INODES_PER_CHUNK;
        }
        self.xfs.chunk_free -= 1;
        self.xfs.inode(ino).numbered = true;
        Ok(())
    }

    /// The inode's log item, made when the create's transaction first joins it
    /// (xfs_trans_ijoin → xfs_inode_item_init), and the shadow log vector the commit
    /// formats it into (xlog_cil_alloc_shadow_bufs: kmem_alloc_large(KM_NOFS) of the
    /// inode log format, the v3 dinode core and the data fork's extent with their iovecs,
    /// 384 bytes: kmalloc-512), kept with the item until the inode is freed
    /// (xfs_inode_item_destroy frees li_lv_shadow).
    fn xfs_inode_item_init(&mut self, tid: TaskId, ino: u32) -> Result<(), AllocResult> {
        let ili = self.slab_alloc_object(XFS_ILI, tid, GFP_NOFS)?;
        let shadow = match self.slab_alloc_object(KMALLOC_512, tid, GFP_NOFS) {
            Ok(o) => o,
            Err(r) => {
                let cpu = self.tasks[tid as usize].cpu;
                self.kmem_cache_free(XFS_ILI, ili, cpu);
                return Err(r);
            }
        };
        let inode_slab = self.xfs.inode(ino).inode_obj;
        self.xfs.inode(ino).ili = Some((ili, shadow));
        self.xfs
            .ili_by_inode_slab
            .entry(inode_slab)
            .or_default()
            .push((ili, shadow));
        Ok(())
    }

    /// Adds a name to its directory (xfs_dir_createname): into the last data block, a
    /// new one when it is full, with the hash index's leaf (the name's, by hash) and the
    /// free-index block looked up and grown as the directory goes from block to leaf to
    /// node form (xfs_dir2_block_addname, xfs_dir2_leaf_addname, xfs_dir2_node_addname).
    fn xfs_dir_createname(&mut self, tid: TaskId, dir: u32, name: &str) -> Result<(), AllocResult> {
        let need = data_entsize(name.len());
        let di = dir as usize;
        let d = &self.xfs.dirs[di];
        let (entries, blocks, grow) = (
            d.entries,
            d.data.len() as u64,
            d.data.is_empty() || d.last_free < need,
        );
        // The index: its leaf for the name (xfs_da3_node_lookup_int), then its free block.
        if let Some(&node) = self.xfs.dirs[di].node.as_ref() {
            self.xfs_da_read_buf(tid, node)?;
        }
        let nleaves = self.xfs.dirs[di].leaves.len();
        if nleaves > 0 {
            let leaf = self.xfs.dirs[di].leaves[super::ext4::dirhash(name) as usize % nleaves];
            self.xfs_da_read_buf(tid, leaf)?;
        }
        if let Some(&free) = self.xfs.dirs[di].free_blocks.last() {
            self.xfs_da_read_buf(tid, free)?;
        }
        if self.xfs.dirs[di].holes > 0 {
            // A removed entry's space in an earlier data block (the name's hash picks
            // which: vmsim does not track each block's free space).
            let d = &self.xfs.dirs[di];
            let data = d.data[super::ext4::dirhash(name) as usize % d.data.len()];
            self.xfs_da_read_buf(tid, data)?;
            let d = &mut self.xfs.dirs[di];
            d.holes -= 1;
            d.entries += 1;
            return Ok(());
        }
        if grow {
            // xfs_dir2_grow_inode + xfs_dir3_data_init: a new data block.
            let data = self.xfs_dir_new_block(tid)?;
            if blocks == 1 {
                // xfs_dir2_block_to_leaf: the index moves out of the single block.
                let leaf = self.xfs_dir_new_block(tid)?;
                self.xfs.dirs[di].leaves.push(leaf);
            }
            let d = &self.xfs.dirs[di];
            let node_form = d.node.is_some();
            if node_form && (blocks + 1).div_ceil(FREE_ENTRIES as u64) > d.free_blocks.len() as u64
            {
                // xfs_dir3_free_get_buf: the free index grows with the data blocks.
                let free = self.xfs_dir_new_block(tid)?;
                self.xfs.dirs[di].free_blocks.push(free);
            }
            let d = &mut self.xfs.dirs[di];
            d.last_free = DIR_BLOCK - DIR3_HDR;
            d.data.push(data);
        } else if let Some(&data) = self.xfs.dirs[di].data.last() {
            self.xfs_da_read_buf(tid, data)?;
        }
        let d = &self.xfs.dirs[di];
        if d.node.is_none() && d.leaves.len() == 1 && entries + 1 > LEAF_ENTRIES as u64 {
            // xfs_dir2_leaf_to_node: a free-index block, then the leaf splits under a
            // new da node (xfs_da3_split).
            let free = self.xfs_dir_new_block(tid)?;
            self.xfs.dirs[di].free_blocks.push(free);
            let node = self.xfs_dir_new_block(tid)?;
            self.xfs.dirs[di].node = Some(node);
        }
        let d = &self.xfs.dirs[di];
        if d.node.is_some() && entries + 1 > d.leaves.len() as u64 * LEAF_ENTRIES as u64 * 3 / 4 {
            // xfs_da3_split of a full leaf: leaves split in halves, so they run about 3/4
            // full.
            let leaf = self.xfs_dir_new_block(tid)?;
            self.xfs.dirs[di].leaves.push(leaf);
        }
        let d = &mut self.xfs.dirs[di];
        d.last_free -= need;
        d.entries += 1;
        Ok(())
    }

    /// A new directory block with its buffer (xfs_da_grow_inode, then xfs_da_get_buf:
    /// b_lru_ref 1); returns its disk address.
    fn xfs_dir_new_block(&mut self, tid: TaskId) -> Result<u64, AllocResult> {
        let daddr = self.xfs.new_daddr();
        self.xfs_buf_get(tid, daddr, 1, 1, false)?;
        Ok(daddr)
    }

    /// A directory block looked up, read back if the shrinker freed its buffer
    /// (xfs_da_read_buf: b_lru_ref XFS_DIR_BTREE_REF).
    fn xfs_da_read_buf(&mut self, tid: TaskId, daddr: u64) -> Result<(), AllocResult> {
        self.xfs_buf_get(tid, daddr, 1, XFS_DIR_BTREE_REF, true)
    }

    /// A cached buffer, or a new one with its own unmovable pages (xfs_buf_get_map →
    /// xfs_buf_allocate_memory: alloc_page(GFP_NOFS)), read from the disk when `read`
    /// (xfs_buf_read_map); a new buffer starts with b_lru_ref 1 (_xfs_buf_alloc), a read
    /// one gets `lru_ref` (xfs_buf_set_ref).
    fn xfs_buf_get(
        &mut self,
        tid: TaskId,
        daddr: u64,
        npages: usize,
        lru_ref: u8,
        read: bool,
    ) -> Result<(), AllocResult> {
        if let Some(&id) = self.xfs.by_daddr.get(&daddr) {
            if let Some(b) = self.xfs.bufs[id as usize].as_mut() {
                if read {
                    b.lru_ref = lru_ref;
                }
                return Ok(());
            }
        }
        let cpu = self.tasks[tid as usize].cpu;
        let obj = self.slab_alloc_object(XFS_BUF, tid, GFP_NOFS)?;
        let mut pages = Vec::with_capacity(npages);
        for _ in 0..npages {
            match self.alloc_pages(GFP_NOFS, 0, tid) {
                AllocResult::Page(p) => {
                    self.mm.map[p as usize].set_kind(PageKind::Other);
                    self.mm.map[p as usize].owner = NO_OWNER;
                    pages.push(p);
                }
                other => {
                    for p in pages {
                        self.mm.free_pages(p, 0, cpu);
                    }
                    self.kmem_cache_free(XFS_BUF, obj, cpu);
                    return Err(other);
                }
            }
        }
        self.xfs.pages_made += npages as u64;
        self.xfs.bufs_made += 1;
        if read {
            self.xfs.bufs_read += 1;
            let sector = META_SECTOR + daddr * (DIR_BLOCK / 512);
            self.mm
                .count_vm_events(crate::mm::vmstat::Event::PGPGIN, 4 * npages as u64);
            let done = self.submit_bio(
                crate::block::Request::read(sector, npages as u32, 0),
                crate::mm::memory::BioKind::FileRead,
            );
            self.sleep_until(done);
        }
        let b = XfsBuf {
            daddr,
            pages,
            obj: Some(obj),
            lru_ref,
        };
        let id = match self.xfs.free_ids.pop() {
            Some(id) => {
                self.xfs.bufs[id as usize] = Some(b);
                id
            }
            None => {
                self.xfs.bufs.push(Some(b));
                (self.xfs.bufs.len() - 1) as u32
            }
        };
        self.xfs.by_daddr.insert(daddr, id);
        // xfs_buf_rele: an unheld buffer with b_lru_ref goes on the LRU.
        self.xfs.lru.push_back(id);
        self.xfs.lru_len += 1;
        Ok(())
    }

    /// Buffers the buffer shrinker counts (xfs_buftarg_shrink_count).
    pub fn xfs_buftarg_count(&self) -> u64 {
        if self.fs_is_xfs() {
            self.xfs.lru_len
        } else {
            0
        }
    }

    /// One call of the buffer shrinker's scan over `nr_to_scan` buffers
    /// (xfs_buftarg_shrink_scan → xfs_buftarg_isolate): a buffer with b_lru_ref left is
    /// rotated with its count decremented, one at zero is freed with its pages. Returns
    /// `(buffers freed, pages freed)`.
    pub fn xfs_buftarg_scan(&mut self, nr_to_scan: u64, cpu: usize) -> (u64, u64) {
        let (mut freed, mut pages) = (0, 0);
        for _ in 0..nr_to_scan {
            let Some(id) = self.xfs.lru.pop_front() else {
                break;
            };
            let Some(b) = self.xfs.bufs[id as usize].as_mut() else {
                continue;
            };
            self.mm.cur.acc += self.mm.cost.shrink_object;
            if b.lru_ref > 0 {
                b.lru_ref -= 1;
                self.xfs.lru.push_back(id);
                continue;
            }
            let b = self.xfs.bufs[id as usize].take().unwrap_or_default();
            self.xfs.free_ids.push(id);
            self.xfs.by_daddr.remove(&b.daddr);
            self.xfs.lru_len -= 1;
            self.xfs.bufs_freed += 1;
            for p in b.pages {
                self.mm.free_pages(p, 0, cpu);
                pages += 1;
            }
            if let Some(obj) = b.obj {
                pages += self.kmem_cache_free(XFS_BUF, obj, cpu);
            }
            freed += 1;
        }
        (freed, pages)
    }

    /// An xfs_inode object of slab `slab` was freed by the inode shrinker: its inode's
    /// log item and shadow log vector go with it (xfs_inode_free →
    /// xfs_inode_item_destroy). Returns the pages freed.
    pub fn xfs_inode_freed(&mut self, slab: u32, cpu: usize) -> u64 {
        let Some(v) = self.xfs.ili_by_inode_slab.get_mut(&slab) else {
            return 0;
        };
        let Some((ili, shadow)) = v.pop() else {
            return 0;
        };
        if v.is_empty() {
            self.xfs.ili_by_inode_slab.remove(&slab);
        }
        self.kmem_cache_free(XFS_ILI, ili, cpu) + self.kmem_cache_free(KMALLOC_512, shadow, cpu)
    }

    /// Removes a file's inode objects (xfs_remove, then xfs_inactive and the reclaim of
    /// the unlinked inode with its log item); its directory's blocks stay.
    pub fn xfs_unlink(&mut self, ino: u32, cpu: usize) {
        if !self.fs_is_xfs() || (ino as usize) >= self.xfs.inodes.len() {
            return;
        }
        let e = self.xfs.inodes[ino as usize];
        if e.stage != STAGE_DONE {
            return;
        }
        if let Some(obj) = self.slab.lru_remove_id(XFS_INODE, e.inode_obj) {
            self.kmem_cache_free(XFS_INODE, obj, cpu);
            self.xfs_inode_freed(e.inode_obj, cpu);
        }
        self.kmem_cache_free_cached(DENTRY, e.dentry, cpu);
        // xfs_dir_removename leaves the entry's space to a later name; xfs_difree frees
        // the inode in its chunk (the chunk stays: vmsim does not free whole chunks).
        if let Some(d) = self.xfs.dirs.get_index_mut(e.dir as usize).map(|(_, d)| d) {
            d.entries -= 1;
            d.holes += 1;
        }
        self.xfs.ifree += 1;
        self.xfs.inodes[ino as usize] = XfsInode::default();
        self.xfs.unlinks += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::mm::mmzone::MigrateType;
    use crate::mm::slab::builtin_cache;

    /// A booted 1 GiB kernel on xfs with one task, current.
    fn boot() -> (Kernel, TaskId) {
        let sc =
            Scenario::from_toml("[machine]\nmemory = \"1GiB\"\ncpus = 2\n[kernel]\nfs = \"xfs\"\n")
                .unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("creat", 0, false);
        k.tasks[tid as usize].alive = true;
        k.mm.cur.tid = tid;
        (k, tid)
    }

    /// Objects in use in a cache.
    fn objs(k: &Kernel, cache: &str) -> u64 {
        k.slab.caches[builtin_cache(cache).unwrap()].active_objs
    }

    /// Creates `n` more files `d/workfile.N` (14-character names: N from 10,000).
    fn create(k: &mut Kernel, tid: TaskId, n: u64) {
        for _ in 0..n {
            let i = k.xfs.creates;
            let ino = k.lookup_or_create(&format!("d/workfile.{}", 10_000 + i));
            assert_eq!(k.vfs_create(tid, ino), AllocResult::Page(0));
        }
    }

    #[test]
    fn a_create_takes_its_objects_and_a_chunk_of_cluster_buffers_with_unmovable_pages() {
        let (mut k, tid) = boot();
        create(&mut k, tid, 1);
        assert_eq!(objs(&k, "dentry"), 1);
        assert_eq!(objs(&k, "xfs_inode"), 1);
        assert_eq!(objs(&k, "xfs_ili"), 1);
        assert_eq!(objs(&k, "kmalloc-512"), 1);
        assert_eq!(k.xfs.chunks, 1);
        // Two 16 KiB cluster buffers and the directory's first block.
        assert_eq!(objs(&k, "xfs_buf"), 3);
        assert_eq!(k.xfs.pages_made, 2 * 4 + 1);
        for b in k.xfs.bufs.iter().flatten() {
            for &p in &b.pages {
                assert_eq!(k.mm.map[p as usize].kind(), PageKind::Other);
                assert_eq!(k.mm.get_pageblock_migratetype(p), MigrateType::Unmovable);
            }
        }
        create(&mut k, tid, 63);
        assert_eq!(k.xfs.chunks, 1, "64 inodes fill one chunk");
        create(&mut k, tid, 1);
        assert_eq!(k.xfs.chunks, 2);
        assert!(k.check_accounting().is_ok());
    }

    #[test]
    fn a_directory_grows_from_block_to_leaf_to_node_form() {
        let (mut k, tid) = boot();
        // 126 entries of 32 bytes fill a data block.
        assert_eq!(data_entsize(14), 32);
        create(&mut k, tid, 126);
        let d = &k.xfs.dirs[0];
        assert_eq!((d.data.len() as u64, d.leaves.len()), (1, 0));
        create(&mut k, tid, 1);
        let d = &k.xfs.dirs[0];
        assert_eq!((d.data.len() as u64, d.leaves.len()), (2, 1), "leaf form");
        assert!(d.node.is_none());
        create(&mut k, tid, LEAF_ENTRIES as u64 - 127 + 1);
        let d = &k.xfs.dirs[0];
        assert!(d.node.is_some(), "node form past one leaf's entries");
        assert_eq!(d.free_blocks.len(), 1);
        assert!(d.leaves.len() >= 2);
        create(&mut k, tid, 10_000);
        let d = &k.xfs.dirs[0];
        let n = d.entries;
        assert_eq!(d.data.len() as u64, n.div_ceil(126));
        // Leaves run at most 3/4 full after splits.
        assert!(
            d.leaves.len() as u64 >= n * 4 / 3 / LEAF_ENTRIES as u64,
            "{}",
            d.leaves.len()
        );
    }

    #[test]
    fn directories_created_in_turn_keep_their_blocks() {
        let (mut k, tid) = boot();
        for i in 0..300 {
            for d in ["a", "b"] {
                let ino = k.lookup_or_create(&format!("{d}/workfile.{}", 10_000 + i));
                assert_eq!(k.vfs_create(tid, ino), AllocResult::Page(0));
            }
        }
        assert_eq!(k.xfs.dirs.len(), 2);
        for d in k.xfs.dirs.values() {
            assert_eq!((d.entries, d.data.len() as u64), (300, 3));
        }
    }

    #[test]
    fn the_buffer_shrinker_ages_buffers_by_their_lru_ref_then_frees_them() {
        let (mut k, tid) = boot();
        create(&mut k, tid, 200);
        let bufs = k.xfs.lru_len;
        let free_before = k.mm.nr_free_pages();
        // Every buffer has b_lru_ref 1 or 2: the first two passes only rotate the ones at 2.
        let (f1, _) = k.xfs_buftarg_scan(bufs, 0);
        let (f2, _) = k.xfs_buftarg_scan(bufs, 0);
        let (f3, p3) = k.xfs_buftarg_scan(bufs, 0);
        assert!(f1 == 0 && f2 > 0 && f3 > 0, "{f1} {f2} {f3}");
        assert_eq!(f1 + f2 + f3, bufs);
        assert_eq!(k.xfs.lru_len, 0);
        assert!(p3 > 0 && k.mm.nr_free_pages() > free_before);
        // The next create reads its directory's blocks back from the disk.
        create(&mut k, tid, 1);
        assert!(k.xfs.bufs_read >= 1);
        assert!(k.check_accounting().is_ok());
    }

    #[test]
    fn an_inode_freed_by_the_shrinker_frees_its_log_item_and_unlink_frees_both() {
        let (mut k, tid) = boot();
        create(&mut k, tid, 40);
        assert_eq!(objs(&k, "xfs_ili"), 40);
        let obj = k
            .slab
            .lru_pop(XFS_INODE, crate::mm::memcontrol::ROOT_MEM_CGROUP)
            .unwrap();
        k.kmem_cache_free(XFS_INODE, obj, 0);
        k.xfs_inode_freed(obj.id, 0);
        assert_eq!(objs(&k, "xfs_ili"), 39);
        let ino = k.lookup_or_create("d/workfile.10039");
        k.unlink(tid, "d/workfile.10039");
        assert_eq!(k.xfs.unlinks, 1, "{ino}");
        assert_eq!(objs(&k, "xfs_ili"), 38);
        assert_eq!(objs(&k, "kmalloc-512"), 38);
        assert_eq!(objs(&k, "xfs_inode"), 38);
        assert_eq!(objs(&k, "dentry"), 39);
        // The freed inode and the entry's space are taken again by the next create.
        let (chunks, blocks) = (k.xfs.chunks, k.xfs.dirs[0].data.len() as u64);
        create(&mut k, tid, 1);
        assert_eq!((k.xfs.chunks, k.xfs.ifree), (chunks, 0));
        assert_eq!(
            (k.xfs.dirs[0].data.len() as u64, k.xfs.dirs[0].holes),
            (blocks, 0)
        );
        assert_eq!(k.xfs.dirs[0].entries, 40);
    }
}
