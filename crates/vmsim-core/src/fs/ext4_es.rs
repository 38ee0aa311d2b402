//! ext4's extent status tree and its shrinker (fs/ext4/extents_status.c).
//!
//! Every ext4 inode caches the extents `ext4_map_blocks` has looked up in a
//! tree of `extent_status` objects (40 bytes, SLAB_RECLAIM_ACCOUNT). A file
//! written sequentially holds at most three: its written blocks, its delayed
//! allocations, and the hole past its end. The first buffered write of a new
//! file finds no extent (`ext4_da_map_blocks` → `ext4_map_query_blocks` →
//! `ext4_ext_map_blocks`, which caches the hole it finds:
//! `ext4_ext_determine_insert_hole`) and inserts a delayed extent
//! (`ext4_insert_delayed_blocks`); later writes find the hole and extend the
//! delayed extent, which merges (`ext4_es_try_to_merge_left/right`).
//! Writeback maps the delayed blocks (`ext4_map_blocks` → `ext4_es_insert_extent`
//! of the written range), replacing the delayed entry by a written one or
//! growing the written one before it. A read maps its blocks too and caches
//! the written extent when the tree lacks it. A lookup that finds an entry
//! marks it referenced (`ext4_es_lookup_extent`). Unlink and eviction free the
//! tree (`ext4_es_remove_extent`).
//!
//! Entries that are not delayed can be reclaimed: they are counted in
//! `es_stats_shk_cnt` and their inodes are on the superblock's `s_es_list`.
//! The shrinker (`ext4_es_count`, `ext4_es_scan` → `__es_shrink` →
//! `es_reclaim_extents`) is neither NUMA- nor memcg-aware and ignores
//! `__GFP_FS`: it walks the list from its head, moving each inode to the tail,
//! and visits its entries in order, each visit using up one of `nr_to_scan`:
//! a delayed entry is kept (`ext4_es_must_keep`), a referenced one loses its
//! bit, any other is freed.
//!
//! Simplified: an inode's scan always starts at its first entry (the kernel
//! resumes at `i_es_shrink_lblk`, which for three entries differs little);
//! entries are not freed when the inode shrinker evicts the inode, only at
//! unlink (vmsim does not know which inode a pruned `ext4_inode_cache`
//! object was); no entry for a read beyond the last block; extents of files
//! rewritten in place are not split.

use crate::engine::TaskId;
use crate::kernel::Kernel;
use crate::mm::gfp::GFP_NOFS;
use crate::mm::slab::{SlabObj, EXT4_EXTENT_STATUS};

/// One extent status entry.
#[derive(Debug, Clone, Copy)]
pub struct Es {
    /// Its extent_status object.
    pub obj: SlabObj,
    /// EXTENT_STATUS_REFERENCED: a lookup found it since the shrinker last passed.
    pub referenced: bool,
}

/// What kind of extent an entry caches, in the order of the blocks they cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EsKind {
    /// Blocks allocated on disk (EXTENT_STATUS_WRITTEN).
    Written = 0,
    /// Blocks waiting for delayed allocation (EXTENT_STATUS_DELAYED): never reclaimed.
    Delayed = 1,
    /// The hole past the file's end (EXTENT_STATUS_HOLE).
    Hole = 2,
}

/// An inode's extent status tree: at most one entry of each kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct EsTree {
    /// The entries by [`EsKind`], in block order.
    pub es: [Option<Es>; 3],
}

impl EsTree {
    /// Reclaimable entries (i_es_shk_nr: all but the delayed one).
    fn shk_nr(&self) -> u64 {
        [EsKind::Written, EsKind::Hole]
            .iter()
            .filter(|&&k| self.es[k as usize].is_some())
            .count() as u64
    }
}

/// The superblock's extent status state (struct ext4_sb_info's s_es_*).
#[derive(Debug, Clone, Default)]
pub struct EsSb {
    /// Per vmsim inode number.
    pub trees: Vec<EsTree>,
    /// Inodes with reclaimable entries, in the shrinker's order (s_es_list).
    pub list: std::collections::VecDeque<u32>,
    /// Reclaimable entries (es_stats_shk_cnt).
    pub shk_cnt: u64,
    /// Entries the shrinker freed (es_stats_shrunk).
    pub shrunk: u64,
}

impl Kernel {
    /// An inode's tree, grown to hold it.
    fn es_tree(&mut self, ino: u32) -> &mut EsTree {
        let t = &mut self.ext4.es.trees;
        if t.len() <= ino as usize {
            t.resize(ino as usize + 1, EsTree::default());
        }
        &mut t[ino as usize]
    }

    /// Whether `ino` is a file ext4 keeps extents for (not the block device's inode).
    fn es_applies(&self, ino: u32) -> bool {
        self.fs_is_ext4() && Some(ino) != self.buffers.bdev_ino
    }

    /// Caches an extent of `kind` (__es_insert_extent → __es_alloc_extent); an
    /// allocation that fails caches nothing, as the kernel's GFP_NOWAIT one may.
    fn es_insert(&mut self, tid: TaskId, ino: u32, kind: EsKind) {
        if self.es_tree(ino).es[kind as usize].is_some() {
            return;
        }
        let Ok(obj) = self.slab_alloc_object(EXT4_EXTENT_STATUS, tid, GFP_NOFS) else {
            return;
        };
        let before = self.es_tree(ino).shk_nr();
        self.es_tree(ino).es[kind as usize] = Some(Es {
            obj,
            referenced: false,
        });
        if kind != EsKind::Delayed {
            // ext4_es_alloc_extent: the inode joins s_es_list with its first such entry.
            if before == 0 {
                self.ext4.es.list.push_back(ino);
            }
            self.ext4.es.shk_cnt += 1;
        }
    }

    /// Frees an entry (ext4_es_free_extent).
    fn es_free(&mut self, ino: u32, kind: EsKind, cpu: usize) -> u64 {
        let Some(es) = self.es_tree(ino).es[kind as usize].take() else {
            return 0;
        };
        if kind != EsKind::Delayed {
            self.ext4.es.shk_cnt -= 1;
            if self.es_tree(ino).shk_nr() == 0 {
                // ext4_es_list_del.
                self.ext4.es.list.retain(|&i| i != ino);
            }
        }
        self.kmem_cache_free(EXT4_EXTENT_STATUS, es.obj, cpu)
    }

    /// A lookup that finds an entry marks it referenced (ext4_es_lookup_extent);
    /// returns whether it found one.
    fn es_lookup(&mut self, ino: u32, kind: EsKind) -> bool {
        match &mut self.es_tree(ino).es[kind as usize] {
            Some(es) => {
                es.referenced = true;
                true
            }
            None => false,
        }
    }

    /// A buffered write maps a new folio's first block (ext4_da_write_begin →
    /// ext4_da_map_blocks): a block already allocated is looked up (and its extent
    /// cached if missing); a new one finds the hole past the end, or caches it
    /// (ext4_ext_determine_insert_hole), and joins the delayed extent
    /// (ext4_insert_delayed_blocks).
    pub fn ext4_es_da_map(&mut self, tid: TaskId, ino: u32, index: u64) {
        if !self.es_applies(ino) || (ino as usize) >= self.ext4.inodes.len() {
            return;
        }
        if index < self.ext4.inodes[ino as usize].mapped {
            if !self.es_lookup(ino, EsKind::Written) {
                self.es_insert(tid, ino, EsKind::Written);
            }
            return;
        }
        if !self.es_lookup(ino, EsKind::Hole) {
            self.es_insert(tid, ino, EsKind::Hole);
        }
        self.es_insert(tid, ino, EsKind::Delayed);
    }

    /// Writeback maps the delayed blocks (ext4_map_blocks → ext4_es_insert_extent of
    /// the written range): the delayed entry goes, the written one is cached or grows.
    pub fn ext4_es_map_written(&mut self, tid: TaskId, ino: u32) {
        if !self.es_applies(ino) {
            return;
        }
        let cpu = self.tasks[tid as usize].cpu;
        self.es_free(ino, EsKind::Delayed, cpu);
        self.es_insert(tid, ino, EsKind::Written);
    }

    /// A read maps the blocks it reads (ext4_mpage_readpages → ext4_map_blocks): the
    /// written extent is found, or looked up in the extent tree and cached.
    pub fn ext4_es_map_read(&mut self, tid: TaskId, ino: u32) {
        if !self.es_applies(ino) {
            return;
        }
        if !self.es_lookup(ino, EsKind::Written) {
            self.es_insert(tid, ino, EsKind::Written);
        }
    }

    /// Frees an inode's whole tree (ext4_evict_inode → ext4_es_remove_extent).
    pub fn ext4_es_remove(&mut self, ino: u32, cpu: usize) {
        if (ino as usize) >= self.ext4.es.trees.len() {
            return;
        }
        for kind in [EsKind::Written, EsKind::Delayed, EsKind::Hole] {
            self.es_free(ino, kind, cpu);
        }
    }

    /// The shrinker's count (ext4_es_count: es_stats_shk_cnt).
    pub fn ext4_es_count(&self) -> u64 {
        self.ext4.es.shk_cnt
    }

    /// The shrinker's scan of `nr_to_scan` entries (ext4_es_scan → __es_shrink →
    /// es_reclaim_extents): one pass over the listed inodes from the head, each moved to
    /// the tail; returns `(entries freed, pages freed)`.
    pub fn ext4_es_scan(&mut self, nr_to_scan: u64, cpu: usize) -> (u64, u64) {
        let mut left = nr_to_scan;
        let (mut freed, mut pages) = (0, 0);
        let mut nr_to_walk = self.ext4.es.list.len();
        while nr_to_walk > 0 && left > 0 {
            nr_to_walk -= 1;
            let Some(ino) = self.ext4.es.list.pop_front() else {
                break;
            };
            self.ext4.es.list.push_back(ino);
            for kind in [EsKind::Written, EsKind::Delayed, EsKind::Hole] {
                if left == 0 {
                    break;
                }
                let Some(es) = self.es_tree(ino).es[kind as usize] else {
                    continue;
                };
                left -= 1;
                self.mm.cur.acc += self.mm.cost.shrink_object;
                if kind == EsKind::Delayed {
                    continue;
                }
                if es.referenced {
                    if let Some(e) = &mut self.es_tree(ino).es[kind as usize] {
                        e.referenced = false;
                    }
                    continue;
                }
                pages += self.es_free(ino, kind, cpu);
                freed += 1;
            }
        }
        self.ext4.es.shrunk += freed;
        (freed, pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;
    use crate::kernel::Kernel;
    use crate::mm::gfp::GFP_NOFS;
    use crate::mm::slab::EXT4_EXTENT_STATUS;
    use crate::mm::vmstat::Event;

    fn boot() -> (Kernel, crate::engine::TaskId) {
        let sc = Scenario::from_toml("[machine]\nmemory = \"256MiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        (k, tid)
    }

    fn objects(k: &Kernel) -> u64 {
        k.slab.caches[EXT4_EXTENT_STATUS].active_objs
    }

    #[test]
    fn a_new_files_writes_cache_a_hole_and_a_delayed_extent_and_writeback_makes_it_written() {
        let (mut k, tid) = boot();
        let ino = k.lookup_or_create("f");
        assert!(matches!(
            k.vfs_create(tid, ino),
            crate::kernel::AllocResult::Page(_)
        ));
        for index in 0..4 {
            k.ext4_es_da_map(tid, ino, index);
        }
        // One hole and one delayed entry however many blocks were written; only the hole
        // can be reclaimed.
        assert_eq!(objects(&k), 2);
        assert_eq!(k.ext4_es_count(), 1);
        k.ext4_es_map_written(tid, ino);
        assert_eq!(objects(&k), 2);
        assert_eq!(k.ext4_es_count(), 2);
        k.ext4_es_remove(ino, 0);
        assert_eq!((objects(&k), k.ext4_es_count()), (0, 0));
        assert!(k.ext4.es.list.is_empty());
    }

    #[test]
    fn the_shrinker_keeps_delayed_entries_and_gives_referenced_ones_a_second_pass() {
        let (mut k, tid) = boot();
        let mut files = vec![];
        for i in 0..3 {
            let ino = k.lookup_or_create(&format!("f{i}"));
            let _ = k.vfs_create(tid, ino);
            k.ext4_es_da_map(tid, ino, 0);
            files.push(ino);
        }
        // f1's hole is found again by its next write: referenced.
        k.ext4_es_da_map(tid, files[1], 1);
        assert_eq!(k.ext4_es_count(), 3);
        // Six entries visited (a delayed and a hole each): two holes freed, f1's kept.
        assert_eq!(k.ext4_es_scan(6, 0).0, 2);
        assert_eq!(k.ext4_es_count(), 1);
        assert_eq!(objects(&k), 4, "three delayed entries and f1's hole");
        // Its bit is gone: the next pass frees it.
        assert_eq!(k.ext4_es_scan(6, 0).0, 1);
        assert_eq!(k.ext4_es_count(), 0);
        assert!(k.ext4.es.list.is_empty());
    }

    #[test]
    fn the_es_shrinker_runs_for_the_root_without_gfp_fs_and_counts_its_batches() {
        let (mut k, tid) = boot();
        for i in 0..300 {
            let ino = k.lookup_or_create(&format!("f{i}"));
            let _ = k.vfs_create(tid, ino);
            k.ext4_es_da_map(tid, ino, 0);
            k.ext4_es_map_written(tid, ino);
        }
        assert_eq!(k.ext4_es_count(), 600);
        // Priority 0 under GFP_NOFS: 2 x 600 to scan, in batches of 128 (SHRINK_BATCH):
        // the first five free all 600, the four after them nothing, and all nine are
        // counted (do_shrink_slab counts every call's nr_scanned).
        k.shrink_slab(GFP_NOFS, 0, 0, 0);
        assert_eq!(k.mm.events[Event::SLABS_SCANNED as usize], 1152);
        assert_eq!(k.ext4_es_count(), 0);
    }
}
