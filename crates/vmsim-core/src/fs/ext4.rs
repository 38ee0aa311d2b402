//! What an ext4 file's life allocates (fs/ext4): create, delayed allocation, unlink.
//!
//! A create (`ext4_create` → `__ext4_new_inode` + `ext4_add_nondir`) takes a
//! dentry (`d_alloc`) and an `ext4_inode_cache` object (`ext4_alloc_inode`),
//! both SLAB_RECLAIM_ACCOUNT; picks a block group (`find_group_other`: the
//! parent directory's while it has free inodes; a new directory goes to the
//! next group, as `find_group_orlov` spreads them); reads the group's inode
//! bitmap (`ext4_read_inode_bitmap` → `sb_getblk`: movable); dirties the
//! inode's inode-table block (`__ext4_get_inode_loc` → `sb_getblk`: movable,
//! not read when no other inode of the block is in use) and the group
//! descriptor block (read at mount by `ext4_sb_bread_unmovable`); and adds the
//! name to a directory leaf block (`ext4_add_entry`; a full leaf is split by
//! `do_split` into a new block from `ext4_append` → `ext4_bread` →
//! `ext4_getblk` → `getblk_unmovable`: **unmovable**). Each modified block
//! joins the jbd2 transaction (fs/jbd2.rs). A written file's blocks are
//! allocated at writeback (`ext4_writepages` → `mpage_map_and_submit_extent`
//! → `ext4_map_blocks` → `ext4_mb_new_blocks`): the group's block bitmap is
//! read and dirtied with the descriptor and the inode (its extents fit in the
//! inode: no extent block for files of up to 4 extents). Unlink
//! (`ext4_unlink`, then `ext4_evict_inode` → `ext4_free_inode`,
//! `ext4_free_blocks`) dirties the leaf, the bitmaps and the inode's block and
//! frees the inode and dentry objects; the metadata blocks stay cached.
//!
//! Layout (mke2fs defaults for a large filesystem): 4 KiB blocks, 32,768
//! blocks and 8,192 inodes of 256 bytes a group (16 a block), 64 group
//! descriptors a block. Directory leaves hold `(4096 − 12) / rec_len` entries
//! (rec_len = 8 + name length rounded up to 4; the 12-byte checksum tail);
//! the name's hash picks the leaf (`dx_probe`), a split halves the leaf's
//! hash range and entries. Simplified: no htree index blocks beyond the
//! first, no mballoc buddy cache, no orphan list. The extent status tree is
//! fs/ext4_es.rs.

use super::split_path;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::GFP_KERNEL;
use crate::mm::slab::{DENTRY, EXT4_INODE_CACHE};

/// Blocks in a block group (EXT4_BLOCKS_PER_GROUP with 4 KiB blocks).
pub const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes in a block group (mke2fs's inode_ratio 16384).
pub const INODES_PER_GROUP: u32 = 8_192;
/// Inodes in an inode-table block (256-byte inodes).
pub const INODES_PER_BLOCK: u32 = 16;
/// Group descriptors in a block (64-byte descriptors).
pub const DESC_PER_BLOCK: u64 = 64;
/// Offset of a group's block bitmap in the group (after group 0's descriptors and
/// reserved GDT blocks).
const BLOCK_BITMAP_OFF: u64 = 1_025;
/// Offset of its inode bitmap.
const INODE_BITMAP_OFF: u64 = 1_026;
/// Offset of its inode table.
const INODE_TABLE_OFF: u64 = 1_027;
/// Offset of its first block for directories.
const DATA_OFF: u64 = INODE_TABLE_OFF + (INODES_PER_GROUP / INODES_PER_BLOCK) as u64;
/// Largest file [blocks] whose data goes to the locality group's preallocation
/// (s_mb_stream_request, MB_DEFAULT_STREAM_THRESHOLD in fs/ext4/mballoc.h).
pub const MB_STREAM_REQUEST: u64 = 16;
/// First sector of the locality groups' preallocated space: past every file extent
/// of `filemap::FILE_EXTENT_SECTORS` a run can create.
const LG_BASE_SECTOR: u64 = 1 << 56;
/// Sectors set aside for each CPU's locality group.
const LG_SPAN_SECTORS: u64 = 1 << 48;
/// Usable bytes of a directory leaf block (the 12-byte ext4_dir_entry_tail).
const LEAF_BYTES: u32 = 4096 - 12;

/// Steps of a create, in order; a create that an allocation interrupted resumes at its step.
const STAGE_DENTRY: u8 = 0;
const STAGE_INODE: u8 = 1;
const STAGE_IBITMAP: u8 = 2;
const STAGE_ITABLE: u8 = 3;
const STAGE_DIRENT: u8 = 4;
const STAGE_DONE: u8 = 5;

/// One ext4 inode's state beside vmsim's inode (struct ext4_inode_info, reduced).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ext4Inode {
    /// Next step of its create ([`STAGE_DONE`] when created).
    pub stage: u8,
    /// Whether it has an inode number.
    pub numbered: bool,
    /// Inode number on disk (group × INODES_PER_GROUP + index).
    pub i_ino: u32,
    /// Slab id of its dentry.
    pub dentry: u32,
    /// Slab id of its ext4_inode_cache object.
    pub inode_obj: u32,
    /// That object while it is off the inode shrinker's list: the inode has page cache
    /// (mapping_shrinkable() false, so inode_add_lru() leaves it off).
    pub inode_off_lru: Option<crate::mm::slab::SlabObj>,
    /// Pages with blocks allocated (the rest are delayed allocations).
    pub mapped: u64,
    /// Its directory (index in `Ext4::dirs`).
    pub dir: u32,
}

/// A directory: its group and its leaf blocks by hash range.
#[derive(Debug, Clone, Default)]
pub struct Dir {
    /// Block group its files go to.
    pub group: u32,
    /// Leaves sorted by first hash: (first hash, entries, block).
    pub leaves: Vec<(u32, u32, u64)>,
}

/// A block group's inode use.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// Inodes ever handed out from the group (the bitmap's high-water mark).
    pub used: u32,
    /// Inode indexes freed since, reused lowest first, with the second they were freed
    /// in (the on-disk inode's i_dtime, counted from 1 at boot).
    pub freed: std::collections::BTreeMap<u32, u64>,
    /// Next block of the group for directory blocks.
    pub next_block: u64,
}

/// The mounted filesystem's state.
#[derive(Debug, Clone, Default)]
pub struct Ext4 {
    /// Per vmsim inode number.
    pub inodes: Vec<Ext4Inode>,
    /// Directories by path.
    pub dirs: indexmap::IndexMap<String, Dir>,
    /// Block groups.
    pub groups: Vec<Group>,
    /// Group of the next new directory (find_group_orlov's spreading).
    pub next_dir_group: u32,
    /// Files created.
    pub creates: u64,
    /// Files unlinked.
    pub unlinks: u64,
    /// Delayed allocations mapped at writeback.
    pub da_maps: u64,
    /// Directory leaf splits.
    pub splits: u64,
    /// The directory looked up last.
    pub last_dir: u32,
    /// Per CPU: blocks its locality group has handed out (struct ext4_locality_group's
    /// preallocations, used in order).
    pub lg_used: Vec<u64>,
    /// Files placed in a locality group (group allocation of a small file).
    pub group_allocs: u64,
    /// The extent status trees and their shrinker's list (fs/ext4_es.rs).
    pub es: super::ext4_es::EsSb,
    /// Free inodes passed over as recently deleted (no journal: find_inode_bit).
    pub recently_deleted_passed: u64,
}

/// What the filesystem did in a run (the result's `ext4` object).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ext4Report {
    /// Files created (ext4_create).
    pub creates: u64,
    /// Files unlinked (ext4_unlink).
    pub unlinks: u64,
    /// Directories made.
    pub directories: u64,
    /// Directory leaf splits (do_split).
    pub leaf_splits: u64,
    /// Files whose delayed blocks writeback mapped (ext4_map_blocks).
    pub delalloc_maps: u64,
    /// Small files whose blocks came from a locality group's preallocation
    /// (EXT4_MB_HINT_GROUP_ALLOC).
    pub group_allocs: u64,
    /// Metadata blocks grown into the block device's page cache with `__GFP_MOVABLE`
    /// (sb_getblk) and without (getblk_unmovable, ext4_sb_bread_unmovable).
    pub blocks_movable: u64,
    /// See `blocks_movable`.
    pub blocks_unmovable: u64,
    /// Metadata blocks read from the disk.
    pub blocks_read: u64,
    /// Pages with a buffer_head at the end (metadata and data).
    pub pages_with_buffers: u64,
    /// jbd2 transactions committed.
    pub journal_commits: u64,
    /// Blocks written to the journal (descriptors, metadata, commit blocks).
    pub journal_blocks: u64,
    /// Free inodes new inodes passed over as recently deleted (a filesystem without a
    /// journal: find_inode_bit → recently_deleted).
    pub recently_deleted_passed: u64,
}

/// A name's hash in a directory (ext4fs_dirhash's role: a fixed, well-mixed 32-bit hash;
/// FNV-1a here).
pub fn dirhash(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h ^ (h >> 15)
}

/// Directory entries a leaf holds for names of this length (EXT4_DIR_REC_LEN).
pub fn entries_per_leaf(name_len: usize) -> u32 {
    let rec_len = (8 + name_len as u32 + 3) & !3;
    LEAF_BYTES / rec_len
}

/// First block of a group.
fn group_base(g: u32) -> u64 {
    g as u64 * BLOCKS_PER_GROUP
}

/// The group descriptor block of a group (in group 0, after the superblock).
fn gdt_block(g: u32) -> u64 {
    1 + g as u64 / DESC_PER_BLOCK
}

impl Ext4 {
    /// The state of a vmsim inode, grown on demand.
    fn inode(&mut self, ino: u32) -> &mut Ext4Inode {
        let i = ino as usize;
        if self.inodes.len() <= i {
            self.inodes.resize(i + 1, Ext4Inode::default());
        }
        &mut self.inodes[i]
    }

    /// A group's state, grown on demand.
    fn group(&mut self, g: u32) -> &mut Group {
        let i = g as usize;
        while self.groups.len() <= i {
            self.groups.push(Group {
                next_block: DATA_OFF,
                ..Default::default()
            });
        }
        &mut self.groups[i]
    }

    /// A new block of a group for a directory (ext4_mb_new_blocks near the inode).
    fn new_dir_block(&mut self, g: u32) -> u64 {
        let gr = self.group(g);
        let b = gr.next_block;
        gr.next_block += 1;
        group_base(g) + b
    }
}

/// Seconds an inode freed on a filesystem without a journal is passed over
/// (RECENTCY_MIN, fs/ext4/ialloc.c; 60 since 5.7).
pub const RECENTCY_MIN: u64 = 60;
/// Seconds added while its inode-table block is dirty (RECENTCY_DIRTY).
pub const RECENTCY_DIRTY: u64 = 300;

/// Whether an inode freed in second `dtime` is recently deleted at second `now`
/// (recently_deleted()'s test: `dtime && time_before32(dtime, now) &&
/// time_before32(now, dtime + recentcy)`).
pub fn recently_deleted(dtime: u64, now: u64, block_dirty: bool) -> bool {
    let recentcy = RECENTCY_MIN + if block_dirty { RECENTCY_DIRTY } else { 0 };
    dtime != 0 && dtime < now && now < dtime + recentcy
}

/// The inode-table block holding inode `idx` of group `g`.
fn itable_block(g: u32, idx: u32) -> u64 {
    group_base(g) + INODE_TABLE_OFF + (idx / INODES_PER_BLOCK) as u64
}

/// What [`Kernel::take_inode`] found: the inode number and the free inodes it passed
/// over as recently deleted.
struct Taken {
    i_ino: u32,
    passed: u64,
}

impl Kernel {
    /// The wall clock's seconds as an inode's i_dtime holds them (ktime_get_real_seconds;
    /// counted from 1 at boot, as 0 means "never deleted").
    fn ext4_seconds(&self) -> u64 {
        self.mm.clock() / 1_000_000_000 + 1
    }

    /// An inode number in group `g` or the next with a free inode (find_group_other,
    /// find_inode_bit): the lowest free bit of the group, passing over inodes recently
    /// deleted when the filesystem has no journal (and taking the last of them when the
    /// group has nothing else).
    fn take_inode(&mut self, mut g: u32) -> Taken {
        let check = !self.mm.kcfg.ext4_journal;
        let mut passed = 0;
        loop {
            let gr = self.ext4.group(g);
            if gr.freed.is_empty() {
                // No free inode below the high-water mark: the next fresh one, or the
                // next group when this one is full.
                if gr.used < INODES_PER_GROUP {
                    gr.used += 1;
                    return Taken {
                        i_ino: g * INODES_PER_GROUP + gr.used - 1,
                        passed,
                    };
                }
                g += 1;
                continue;
            }
            let now = self.ext4_seconds();
            let mut recent = None;
            let mut found = None;
            let mut block = (u64::MAX, false, false);
            for (&i, &dtime) in &self.ext4.groups[g as usize].freed {
                if !check {
                    found = Some(i);
                    break;
                }
                let b = itable_block(g, i);
                if block.0 != b {
                    // sb_find_get_block(): a block not in the buffer cache was written out.
                    let page = self.find_get_block(b);
                    let dirty = page
                        .is_some_and(|p| self.mm.map[p as usize].test(crate::mm::page::pg::DIRTY));
                    block = (b, page.is_some(), dirty);
                }
                if block.1 && recently_deleted(dtime, now, block.2) {
                    passed += 1;
                    recent = Some(i);
                    continue;
                }
                found = Some(i);
                break;
            }
            if let Some(i) = found {
                self.ext4.groups[g as usize].freed.remove(&i);
                return Taken {
                    i_ino: g * INODES_PER_GROUP + i,
                    passed,
                };
            }
            let gr = self.ext4.group(g);
            if gr.used < INODES_PER_GROUP {
                gr.used += 1;
                return Taken {
                    i_ino: g * INODES_PER_GROUP + gr.used - 1,
                    passed,
                };
            }
            if let Some(i) = recent {
                // Not reusing a recently deleted inode is a preference (find_inode_bit's
                // not_found): the last one looked at is taken.
                gr.freed.remove(&i);
                return Taken {
                    i_ino: g * INODES_PER_GROUP + i,
                    passed,
                };
            }
            g += 1;
        }
    }
}

impl Kernel {
    /// The run's ext4 figures, when a file was created on ext4.
    pub fn ext4_report(&self) -> Option<Ext4Report> {
        if !self.fs_is_ext4() || self.ext4.dirs.is_empty() {
            return None;
        }
        Some(Ext4Report {
            creates: self.ext4.creates,
            unlinks: self.ext4.unlinks,
            directories: self.ext4.dirs.len() as u64,
            leaf_splits: self.ext4.splits,
            delalloc_maps: self.ext4.da_maps,
            group_allocs: self.ext4.group_allocs,
            blocks_movable: self.buffers.grown[0],
            blocks_unmovable: self.buffers.grown[1],
            blocks_read: self.buffers.reads,
            pages_with_buffers: self.buffers.bh.len() as u64,
            journal_commits: self.journal.commits,
            journal_blocks: self.journal.blocks_logged,
            recently_deleted_passed: self.ext4.recently_deleted_passed,
        })
    }

    /// Whether files live on ext4 (`kernel.fs`).
    pub fn fs_is_ext4(&self) -> bool {
        self.mm.kcfg.fs == crate::config::Fs::Ext4
    }

    /// ext4's commit interval [ns] (`commit=0` is the default, 5 s).
    pub fn ext4_commit_interval(&self) -> u64 {
        let s = match self.mm.kcfg.ext4_commit {
            0 => 5,
            s => s,
        };
        s * 1_000_000_000
    }

    /// Creates a file's on-disk inode and directory entry if it is not yet complete
    /// (ext4_create); Page when done, else the allocation's result to retry on.
    pub fn vfs_create(&mut self, tid: TaskId, ino: u32) -> AllocResult {
        if self.fs_is_xfs() {
            return self.xfs_create(tid, ino);
        }
        if !self.fs_is_ext4() {
            return AllocResult::Page(0);
        }
        if self.ext4.inode(ino).stage == STAGE_DONE {
            return AllocResult::Page(0);
        }
        self.ext4_create(tid, ino)
    }

    /// The steps of ext4_create from where the last attempt stopped.
    fn ext4_create(&mut self, tid: TaskId, ino: u32) -> AllocResult {
        self.with_file_name(ino, |k, name| k.ext4_create_steps(tid, ino, name))
    }

    /// [`Kernel::ext4_create`] for the file's name.
    fn ext4_create_steps(&mut self, tid: TaskId, ino: u32, name: &str) -> AllocResult {
        let (dir_path, base) = split_path(name);
        let dir = match self.ext4_dir(tid, dir_path) {
            Ok(d) => d,
            Err(r) => return r,
        };
        self.ext4.inode(ino).dir = dir;
        loop {
            let stage = self.ext4.inode(ino).stage;
            let r = match stage {
                STAGE_DENTRY => self.cached_object(DENTRY, tid, GFP_KERNEL).map(|id| {
                    self.ext4.inode(ino).dentry = id;
                }),
                STAGE_INODE => self
                    .cached_object(EXT4_INODE_CACHE, tid, GFP_KERNEL)
                    .map(|id| {
                        self.ext4.inode(ino).inode_obj = id;
                    }),
                STAGE_IBITMAP => {
                    if !self.ext4.inode(ino).numbered {
                        let g = self.ext4.dirs[dir as usize].group;
                        let t = self.take_inode(g);
                        self.ext4.recently_deleted_passed += t.passed;
                        self.mm.cur.acc += t.passed * self.mm.cost.ext4_recently_deleted;
                        let e = self.ext4.inode(ino);
                        e.i_ino = t.i_ino;
                        e.numbered = true;
                    }
                    let i_ino = self.ext4.inode(ino).i_ino;
                    self.ext4_dirty_bitmap_and_gdt(tid, i_ino / INODES_PER_GROUP, INODE_BITMAP_OFF)
                }
                STAGE_ITABLE => {
                    let i_ino = self.ext4.inode(ino).i_ino;
                    self.ext4_dirty_inode(tid, i_ino)
                }
                STAGE_DIRENT => self.ext4_add_entry(tid, dir, base),
                _ => return AllocResult::Page(0),
            };
            if let Err(r) = r {
                return r;
            }
            self.ext4.inode(ino).stage = stage + 1;
            if stage + 1 == STAGE_DONE {
                self.ext4.creates += 1;
                // The open(O_CREAT) and close around it, once the create is complete.
                self.mm.cur.acc += self.mm.cost.create_call;
                return AllocResult::Page(0);
            }
        }
    }

    /// A file got its first page-cache page: its inode leaves the inode shrinker's list
    /// (an inode with pages is not shrinkable: mapping_shrinkable(), __inode_add_lru).
    pub fn ext4_inode_lru_del(&mut self, ino: u32) {
        if !self.fs_is_ext4() || self.ext4.inode(ino).stage != STAGE_DONE {
            return;
        }
        if self.ext4.inode(ino).inode_off_lru.is_some() {
            return;
        }
        let id = self.ext4.inode(ino).inode_obj;
        if let Some(obj) = self.slab.lru_remove_id(EXT4_INODE_CACHE, id) {
            self.ext4.inode(ino).inode_off_lru = Some(obj);
        }
    }

    /// A file's page cache emptied: its inode goes back on the inode shrinker's list
    /// (__remove_mapping / filemap_remove_folio → inode_add_lru), unless shadow entries
    /// still hold xarray nodes (mapping_shrinkable(); vmsim does not put it back when the
    /// shadow-node shrinker later frees them).
    pub fn ext4_inode_add_lru(&mut self, ino: u32) {
        if !self.fs_is_ext4() || self.inodes[ino as usize].xa_nodes {
            return;
        }
        if let Some(obj) = self.ext4.inode(ino).inode_off_lru.take() {
            self.slab.lru_add(EXT4_INODE_CACHE, obj);
        }
    }

    /// Reads a metadata block and journals it (ext4_journal_get_write_access +
    /// ext4_handle_dirty_metadata).
    fn ext4_journal_block(
        &mut self,
        tid: TaskId,
        block: u64,
        movable: bool,
        read: bool,
    ) -> Result<(), AllocResult> {
        match self.bdev_getblk(tid, block, movable, read) {
            AllocResult::Page(_) => {}
            r => return Err(r),
        }
        match self.ext4_handle_dirty_metadata(tid, block) {
            AllocResult::Page(_) => Ok(()),
            r => Err(r),
        }
    }

    /// Dirties a cached metadata block (__ext4_handle_dirty_metadata): through the
    /// running jbd2 transaction, or without a journal in place (mark_buffer_dirty), for
    /// the flusher to write.
    fn ext4_handle_dirty_metadata(&mut self, tid: TaskId, block: u64) -> AllocResult {
        if self.mm.kcfg.ext4_journal {
            return self.jbd2_journal_dirty_metadata(tid, block);
        }
        self.mark_buffer_dirty(block);
        AllocResult::Page(0)
    }

    /// Dirties a group's bitmap (inode or block, by offset) and its descriptor
    /// (ext4_read_inode_bitmap / ext4_read_block_bitmap, ext4_group_desc_csum_set).
    fn ext4_dirty_bitmap_and_gdt(
        &mut self,
        tid: TaskId,
        g: u32,
        off: u64,
    ) -> Result<(), AllocResult> {
        self.ext4_journal_block(tid, group_base(g) + off, true, true)?;
        // ext4_sb_bread_unmovable() read the descriptors at mount.
        self.ext4_journal_block(tid, gdt_block(g), false, true)
    }

    /// Dirties an inode's inode-table block (ext4_mark_inode_dirty → __ext4_get_inode_loc:
    /// not read when no other inode of the block is in use).
    fn ext4_dirty_inode(&mut self, tid: TaskId, i_ino: u32) -> Result<(), AllocResult> {
        let g = i_ino / INODES_PER_GROUP;
        let idx = i_ino % INODES_PER_GROUP;
        let block = itable_block(g, idx);
        let others_in_use = !idx.is_multiple_of(INODES_PER_BLOCK);
        self.ext4_journal_block(tid, block, true, others_in_use)
    }

    /// The directory of a path, made with its first block if new (ext4_mkdir, reduced).
    fn ext4_dir(&mut self, tid: TaskId, path: &str) -> Result<u32, AllocResult> {
        // The last directory looked up first (a workload fills one directory at a time).
        let last = self.ext4.last_dir as usize;
        if self
            .ext4
            .dirs
            .get_index(last)
            .is_some_and(|(p, _)| p == path)
        {
            return Ok(last as u32);
        }
        if let Some(i) = self.ext4.dirs.get_index_of(path) {
            self.ext4.last_dir = i as u32;
            return Ok(i as u32);
        }
        let g = self.ext4.next_dir_group;
        let block = self.ext4.new_dir_block(g);
        // ext4_init_new_dir → ext4_append → ext4_bread → getblk_unmovable: a new block.
        match self.bdev_getblk(tid, block, false, false) {
            AllocResult::Page(_) => {}
            r => return Err(r),
        }
        self.ext4.next_dir_group += 1;
        let (i, _) = self.ext4.dirs.insert_full(
            path.to_string(),
            Dir {
                group: g,
                leaves: vec![(0, 0, block)],
            },
        );
        if let Some(&(_, _, b)) = self.ext4.dirs[i].leaves.first() {
            let _ = self.ext4_handle_dirty_metadata(tid, b);
        }
        Ok(i as u32)
    }

    /// Adds a name to its directory leaf (ext4_add_entry → ext4_dx_add_entry), splitting
    /// a full leaf into a new unmovable block (do_split → ext4_append).
    fn ext4_add_entry(&mut self, tid: TaskId, dir: u32, name: &str) -> Result<(), AllocResult> {
        let cap = entries_per_leaf(name.len());
        let h = dirhash(name);
        let d = &self.ext4.dirs[dir as usize];
        let mut li = d.leaves.partition_point(|l| l.0 <= h) - 1;
        let (start, count, _) = d.leaves[li];
        if count >= cap {
            // do_split(): a new leaf takes the upper half of the hash range and entries.
            let end = d.leaves.get(li + 1).map_or(1u64 << 32, |l| l.0 as u64);
            let mid = ((start as u64 + end) / 2) as u32;
            let g = d.group;
            let nb = self.ext4.new_dir_block(g);
            match self.bdev_getblk(tid, nb, false, false) {
                AllocResult::Page(_) => {}
                r => return Err(r),
            }
            let d = &mut self.ext4.dirs[dir as usize];
            let upper = count / 2;
            d.leaves[li].1 = count - upper;
            d.leaves.insert(li + 1, (mid.max(start + 1), upper, nb));
            self.ext4.splits += 1;
            if let AllocResult::Page(_) = self.ext4_handle_dirty_metadata(tid, nb) {}
            if h >= self.ext4.dirs[dir as usize].leaves[li + 1].0 {
                li += 1;
            }
        }
        let block = self.ext4.dirs[dir as usize].leaves[li].2;
        // The leaf is read back if reclaim evicted it.
        self.ext4_journal_block(tid, block, false, true)?;
        self.ext4.dirs[dir as usize].leaves[li].1 += 1;
        Ok(())
    }

    /// Maps a file's delayed allocations as writeback starts (ext4_writepages →
    /// ext4_map_blocks → ext4_mb_new_blocks): the group's block bitmap, its descriptor
    /// and the inode are dirtied.
    pub fn ext4_da_writepages(&mut self, ino: u32) {
        if !self.fs_is_ext4() || Some(ino) == self.buffers.bdev_ino {
            return;
        }
        let size = self.inodes[ino as usize].size_pages;
        let e = *self.ext4.inode(ino);
        if e.stage != STAGE_DONE || e.mapped >= size {
            return;
        }
        let tid = self.mm.cur.tid;
        let g = e.i_ino / INODES_PER_GROUP;
        if self
            .ext4_dirty_bitmap_and_gdt(tid, g, BLOCK_BITMAP_OFF)
            .and_then(|_| self.ext4_dirty_inode(tid, e.i_ino))
            .is_ok()
        {
            if e.mapped == 0 && size <= MB_STREAM_REQUEST {
                self.ext4_mb_use_group_pa(ino, size);
            }
            self.ext4.inode(ino).mapped = size;
            self.ext4.da_maps += 1;
            self.ext4_es_map_written(tid, ino);
        }
    }

    /// Places a small file's first blocks in the current CPU's locality group
    /// (ext4_mb_new_blocks → ext4_mb_group_or_file: a file of at most
    /// s_mb_stream_request blocks takes EXT4_MB_HINT_GROUP_ALLOC; then
    /// ext4_mb_use_preallocated → ext4_mb_use_group_pa). The group's preallocations
    /// hand out blocks in order, so small files written back one after another lie
    /// next to each other on the disk. Simplified: a new preallocation
    /// (ext4_mb_new_group_pa, s_mb_group_prealloc blocks) always starts where the
    /// last one ended.
    fn ext4_mb_use_group_pa(&mut self, ino: u32, blocks: u64) {
        let cpu = self.mm.cur.cpu;
        if self.ext4.lg_used.len() <= cpu {
            self.ext4.lg_used.resize(cpu + 1, 0);
        }
        let start = LG_BASE_SECTOR
            + cpu as u64 * LG_SPAN_SECTORS
            + self.ext4.lg_used[cpu] * (crate::block::PAGE_SIZE / crate::block::SECTOR_SIZE);
        self.ext4.lg_used[cpu] += blocks.max(1);
        self.inodes[ino as usize].start_sector = start;
        self.ext4.group_allocs += 1;
    }

    /// Removes a file's name and frees its inode (ext4_unlink, ext4_evict_inode →
    /// ext4_free_inode, ext4_free_blocks): the leaf, the bitmaps, the descriptor and the
    /// inode's block are dirtied, the inode and dentry objects freed.
    pub fn ext4_unlink(&mut self, tid: TaskId, ino: u32) {
        if !self.fs_is_ext4() || (ino as usize) >= self.ext4.inodes.len() {
            return;
        }
        let e = self.ext4.inodes[ino as usize];
        if e.stage != STAGE_DONE {
            return;
        }
        let name = self.inodes[ino as usize].name.clone();
        let (_, base) = split_path(&name);
        let h = dirhash(base);
        let d = &mut self.ext4.dirs[e.dir as usize];
        let li = d.leaves.partition_point(|l| l.0 <= h) - 1;
        d.leaves[li].1 = d.leaves[li].1.saturating_sub(1);
        let leaf = d.leaves[li].2;
        let g = e.i_ino / INODES_PER_GROUP;
        // NOFAIL in the kernel: a failed step leaves its block undirtied here.
        let _ = self.ext4_journal_block(tid, leaf, false, true);
        let _ = self.ext4_dirty_inode(tid, e.i_ino);
        let _ = self.ext4_dirty_bitmap_and_gdt(tid, g, INODE_BITMAP_OFF);
        if e.mapped > 0 {
            let _ = self.ext4_dirty_bitmap_and_gdt(tid, g, BLOCK_BITMAP_OFF);
        }
        let dtime = self.ext4_seconds();
        self.ext4
            .group(g)
            .freed
            .insert(e.i_ino % INODES_PER_GROUP, dtime);
        let cpu = self.tasks[tid as usize].cpu;
        let ic = EXT4_INODE_CACHE;
        let dc = DENTRY;
        match e.inode_off_lru {
            Some(obj) => {
                self.kmem_cache_free(ic, obj, cpu);
            }
            None => {
                self.kmem_cache_free_cached(ic, e.inode_obj, cpu);
            }
        }
        self.kmem_cache_free_cached(dc, e.dentry, cpu);
        self.ext4_es_remove(ino, cpu);
        self.ext4.inodes[ino as usize] = Ext4Inode::default();
        self.ext4.unlinks += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::mm::mmzone::MigrateType;
    use crate::mm::page::Pfn;
    use crate::mm::slab::builtin_cache;

    /// A booted 1 GiB kernel on ext4 with one task, current.
    fn boot() -> (Kernel, TaskId) {
        boot_with("")
    }

    /// [`boot`] with these scenario lines after `[machine]`'s.
    fn boot_with(more: &str) -> (Kernel, TaskId) {
        let sc = Scenario::from_toml(&format!("[machine]\nmemory = \"1GiB\"\ncpus = 2\n{more}"))
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

    /// Creates a file completely.
    fn create(k: &mut Kernel, tid: TaskId, name: &str) -> u32 {
        let ino = k.lookup_or_create(name);
        assert_eq!(k.vfs_create(tid, ino), AllocResult::Page(0));
        ino
    }

    /// The migratetype of the pageblock a cached block's page is in.
    fn block_mt(k: &Kernel, block: u64) -> MigrateType {
        let p: Pfn = k.find_get_block(block).expect("block cached");
        k.mm.get_pageblock_migratetype(p)
    }

    #[test]
    fn a_create_allocates_the_inode_dentry_and_metadata_blocks_with_their_gfp() {
        let (mut k, tid) = boot();
        let ino = create(&mut k, tid, "d/f0");
        assert_eq!(objs(&k, "dentry"), 1);
        assert_eq!(objs(&k, "ext4_inode_cache"), 1);
        let e = k.ext4.inodes[ino as usize];
        let g = e.i_ino / INODES_PER_GROUP;
        // sb_getblk: movable bitmap and inode table; getblk_unmovable: the directory
        // block; ext4_sb_bread_unmovable: the descriptors.
        assert_eq!(
            block_mt(&k, group_base(g) + INODE_BITMAP_OFF),
            MigrateType::Movable
        );
        assert_eq!(
            block_mt(&k, group_base(g) + INODE_TABLE_OFF),
            MigrateType::Movable
        );
        assert_eq!(block_mt(&k, gdt_block(g)), MigrateType::Unmovable);
        let leaf = k.ext4.dirs[e.dir as usize].leaves[0].2;
        assert_eq!(block_mt(&k, leaf), MigrateType::Unmovable);
        // One buffer_head a block, one journal_head a journaled block.
        assert_eq!(objs(&k, "buffer_head"), 4);
        assert_eq!(objs(&k, "jbd2_journal_head"), 4);
        assert_eq!(k.buffers.grown, [2, 2]);
        // The bitmap and the descriptors exist on disk: read; the rest is new.
        assert_eq!(k.buffers.reads, 2);
        // A second file of the same group shares every block.
        create(&mut k, tid, "d/f1");
        assert_eq!(objs(&k, "buffer_head"), 4);
        assert_eq!(objs(&k, "dentry"), 2);
        assert_eq!(k.ext4.creates, 2);
    }

    #[test]
    fn inode_table_blocks_come_every_16_inodes_and_leaves_split_when_full() {
        let (mut k, tid) = boot();
        let n = 2_000u32;
        for i in 0..n {
            create(&mut k, tid, &format!("d/file{i:06}"));
        }
        let itable_blocks = (0..n.div_ceil(INODES_PER_BLOCK) as u64)
            .filter(|b| k.find_get_block(INODE_TABLE_OFF + b).is_some())
            .count() as u32;
        assert_eq!(itable_blocks, n.div_ceil(INODES_PER_BLOCK));
        let d = &k.ext4.dirs[0];
        let cap = entries_per_leaf("file000000".len());
        assert_eq!(cap, (4096 - 12) / 20);
        assert_eq!(d.leaves.len() as u64, k.ext4.splits + 1);
        assert_eq!(d.leaves.iter().map(|l| l.1).sum::<u32>(), n);
        assert!(d.leaves.iter().all(|l| l.1 <= cap));
        // Splits leave leaves between half and wholly full: more leaves than a packed
        // directory needs, fewer than twice as many.
        let packed = n.div_ceil(cap) as usize;
        assert!(
            d.leaves.len() > packed && d.leaves.len() < 2 * packed + 1,
            "{}",
            d.leaves.len()
        );
        // Every leaf is an unmovable block of the block device's page cache.
        assert_eq!(k.buffers.grown[1] as usize, d.leaves.len() + 1);
    }

    #[test]
    fn the_journal_commit_writes_the_dirtied_blocks_once_each() {
        let (mut k, tid) = boot();
        for i in 0..40 {
            create(&mut k, tid, &format!("d/f{i}"));
        }
        // ibitmap, gdt, 3 inode-table blocks, one leaf.
        assert_eq!(k.journal.running.len(), 6);
        // Journaled, not yet dirty: the flusher cannot write them before the commit, and
        // reclaim cannot free their pages (the journal_head's reference).
        let bdev = k.buffers.bdev_ino.unwrap();
        assert_eq!(k.inodes[bdev as usize].nr_dirty, 0);
        let leaf = k.ext4.dirs[0].leaves[0].2;
        let leaf_page = k.find_get_block(leaf).unwrap();
        assert!(k.jbd2_buffer_busy(leaf_page));
        let written = k.mm.events[crate::mm::vmstat::Event::PGPGOUT as usize];
        k.jbd2_journal_commit_transaction();
        assert_eq!(k.journal.commits, 1);
        assert_eq!(
            k.journal.blocks_logged,
            6 + 1 + 1,
            "descriptor + 6 + commit block"
        );
        assert_eq!(
            k.mm.events[crate::mm::vmstat::Event::PGPGOUT as usize] - written,
            4 * 8
        );
        assert!(k.journal.running.is_empty());
        assert_eq!(k.journal.checkpoint.len(), 6);
        // The checkpointed buffers keep their journal_heads while their pages are dirty.
        k.jbd2_clean_checkpoint_list();
        assert_eq!(objs(&k, "jbd2_journal_head"), 6);
        assert_eq!(k.inodes[bdev as usize].nr_dirty, 6);
        // Written in place, the next commit's clean-up drops the heads: reclaimable again.
        k.folio_clear_dirty(leaf_page);
        k.jbd2_clean_checkpoint_list();
        assert!(!k.jbd2_buffer_busy(leaf_page));
        assert_eq!(objs(&k, "jbd2_journal_head"), 5);
    }

    #[test]
    fn unlink_frees_the_inode_dentry_and_data_buffers_but_keeps_metadata_cached() {
        let (mut k, tid) = boot();
        let ino = create(&mut k, tid, "d/f");
        for i in 0..8 {
            assert!(matches!(
                k.file_write_page(tid, ino, i),
                AllocResult::Page(_)
            ));
        }
        assert_eq!(
            objs(&k, "buffer_head"),
            4 + 8,
            "a buffer_head per data page"
        );
        let cached = k.buffers.grown;
        k.unlink(tid, "d/f");
        assert_eq!(objs(&k, "dentry"), 0);
        assert_eq!(objs(&k, "ext4_inode_cache"), 0);
        assert_eq!(objs(&k, "buffer_head"), 4);
        assert_eq!(k.buffers.grown, cached);
        assert_eq!(k.ext4.unlinks, 1);
        // Its inode number is free again.
        let again = create(&mut k, tid, "d/g");
        assert_eq!(k.ext4.inodes[again as usize].i_ino, 0);
    }

    /// A booted kernel on ext4 without a journal.
    fn boot_no_journal() -> (Kernel, TaskId) {
        boot_with("[kernel]\next4_journal = false\n")
    }

    #[test]
    fn recently_deleted_follows_the_kernels_test() {
        // time_before32(dtime, now): not in the second it was deleted.
        assert!(!recently_deleted(10, 10, false));
        assert!(recently_deleted(10, 11, false));
        assert!(recently_deleted(10, 69, false));
        assert!(!recently_deleted(10, 70, false));
        // A dirty inode-table block: 60 + 300 s.
        assert!(recently_deleted(10, 369, true));
        assert!(!recently_deleted(10, 370, true));
        // dtime 0: never deleted.
        assert!(!recently_deleted(0, 5, false));
    }

    #[test]
    fn without_a_journal_new_inodes_pass_over_recently_deleted_ones() {
        let (mut k, tid) = boot_no_journal();
        let cost = k.mm.cost.ext4_recently_deleted;
        for i in 0..40 {
            create(&mut k, tid, &format!("d/f{i}"));
        }
        for i in 0..40 {
            k.unlink(tid, &format!("d/f{i}"));
        }
        // Two seconds later all 40 are recently deleted: the new inode is a fresh one,
        // after looking at each of them.
        k.mm.cur.now += 2_000_000_000;
        k.mm.cur.acc = 0;
        let ino = create(&mut k, tid, "d/g0");
        assert_eq!(k.ext4.inodes[ino as usize].i_ino, 40);
        assert_eq!(k.ext4.recently_deleted_passed, 40);
        assert!(k.mm.cur.acc >= 40 * cost);
        // No journal: no journal_head objects, no commit thread's work.
        assert_eq!(objs(&k, "jbd2_journal_head"), 0);
        assert!(k.journal.running.is_empty());
        // Once their inode-table blocks are written back and a minute has passed, the
        // lowest free inode is taken again.
        let bdev = k.buffers.bdev_ino.unwrap();
        k.write_inode_pages(bdev, u64::MAX);
        k.mm.cur.now += 400_000_000_000;
        let before = k.ext4.recently_deleted_passed;
        let ino = create(&mut k, tid, "d/g1");
        assert_eq!(k.ext4.inodes[ino as usize].i_ino, 0);
        assert_eq!(k.ext4.recently_deleted_passed, before);
    }

    #[test]
    fn with_a_journal_a_freed_inode_is_reused_at_once() {
        let (mut k, tid) = boot();
        for i in 0..3 {
            create(&mut k, tid, &format!("d/f{i}"));
        }
        k.unlink(tid, "d/f1");
        k.unlink(tid, "d/f0");
        k.mm.cur.now += 2_000_000_000;
        let ino = create(&mut k, tid, "d/g");
        assert_eq!(k.ext4.inodes[ino as usize].i_ino, 0, "the lowest free bit");
        assert_eq!(k.ext4.recently_deleted_passed, 0);
    }

    #[test]
    fn writeback_maps_delayed_blocks_once() {
        let (mut k, tid) = boot();
        let ino = create(&mut k, tid, "d/f");
        for i in 0..4 {
            let _ = k.file_write_page(tid, ino, i);
        }
        let before = k.buffers.grown;
        k.ext4_da_writepages(ino);
        assert_eq!(k.ext4.da_maps, 1);
        // The block bitmap came in (movable, read from disk).
        assert_eq!(k.buffers.grown[0], before[0] + 1);
        k.ext4_da_writepages(ino);
        assert_eq!(k.ext4.da_maps, 1, "nothing new to map");
    }

    #[test]
    fn small_files_written_back_in_turn_lie_side_by_side_and_a_large_one_keeps_its_extent() {
        let (mut k, tid) = boot();
        let write = |k: &mut Kernel, name: &str, pages: u64| {
            let ino = create(k, tid, name);
            for i in 0..pages {
                let _ = k.file_write_page(tid, ino, i);
            }
            ino
        };
        let a = write(&mut k, "d/a", 1);
        let b = write(&mut k, "d/b", 3);
        let c = write(&mut k, "d/c", MB_STREAM_REQUEST);
        let big = write(&mut k, "d/big", MB_STREAM_REQUEST + 1);
        let extent = k.inodes[big as usize].start_sector;
        for ino in [b, a, c, big] {
            k.ext4_da_writepages(ino);
        }
        let at = |k: &Kernel, ino: u32| k.inodes[ino as usize].start_sector;
        // In writeback order: b's 3 blocks, then a's one, then c's 16.
        assert_eq!(at(&k, a), at(&k, b) + 3 * 8);
        assert_eq!(at(&k, c), at(&k, a) + 8);
        assert_eq!(k.ext4.lg_used[k.mm.cur.cpu], 3 + 1 + MB_STREAM_REQUEST);
        assert_eq!(
            at(&k, big),
            extent,
            "a file over s_mb_stream_request streams"
        );
        assert_eq!(k.ext4.group_allocs, 3);
        // A second writeback maps nothing and moves nothing.
        k.ext4_da_writepages(a);
        assert_eq!(at(&k, a), at(&k, b) + 3 * 8);
    }

    #[test]
    fn bare_creates_nothing() {
        let sc =
            Scenario::from_toml("[machine]\nmemory = \"1GiB\"\n[kernel]\nfs = \"bare\"\n").unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("creat", 0, false);
        let ino = k.lookup_or_create("d/f");
        assert_eq!(k.vfs_create(tid, ino), AllocResult::Page(0));
        let _ = k.file_write_page(tid, ino, 0);
        assert_eq!(objs(&k, "dentry") + objs(&k, "buffer_head"), 0);
        assert!(k.buffers.bdev_ino.is_none());
    }
}
