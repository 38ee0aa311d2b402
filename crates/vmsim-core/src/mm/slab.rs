//! Slab caches of kernel objects: where unmovable and reclaimable kernel memory comes from.
//!
//! Models the parts of mm/slub.c and mm/shrinker.c that matter to the page
//! allocator: a cache grows by whole slabs (one allocation of the cache's
//! order, GFP_KERNEL, with __GFP_RECLAIMABLE for SLAB_RECLAIM_ACCOUNT caches
//! such as dentry and inode caches), objects fill partial slabs first, and a
//! slab page returns to the buddy allocator only when its last object is
//! freed. Reclaimable caches keep their unused objects on an LRU that a
//! shrinker walks oldest first (do_shrink_slab), so one young object pins a
//! whole slab — the internal fragmentation the seeds' workloads create.
//! Object sizes and slab orders are those of a 6.x x86-64 /proc/slabinfo.
//! Objects of accounted caches are charged to the allocating task's memory
//! cgroup (memcg_slab_post_alloc_hook, mm/memcg_kmem.rs) and remember it.

use super::gfp::{Gfp, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE};
use super::memcontrol::{NO_MEMCG, ROOT_MEM_CGROUP};
use super::page::{Pfn, PAGE_SIZE};
use super::vmstat::NodeStat;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use std::collections::VecDeque;

/// A built-in cache: name, object size [bytes], slab order, reclaimable, accounted to
/// the memory cgroup (SLAB_ACCOUNT, or allocated with __GFP_ACCOUNT by every user vmsim
/// models: buffer_heads by folio_alloc_buffers, xarray nodes of XA_FLAGS_ACCOUNT mappings).
pub const BUILTIN_CACHES: &[(&str, u32, u8, bool, bool)] = &[
    ("dentry", 192, 0, true, true),
    ("inode_cache", 608, 2, true, true),
    ("ext4_inode_cache", 1184, 3, true, true),
    ("xfs_inode", 1024, 3, true, true),
    ("buffer_head", 104, 0, true, true),
    ("radix_tree_node", 576, 2, true, true),
    ("kmalloc-64", 64, 0, false, false),
    ("kmalloc-256", 256, 1, false, false),
    ("kmalloc-1k", 1024, 2, false, false),
    ("kmalloc-4k", 4096, 3, false, false),
    ("skbuff_head_cache", 256, 1, false, false),
    ("anon_vma", 104, 0, false, true),
    ("vm_area_struct", 176, 0, false, true),
    // SLAB_TEMPORARY (= SLAB_RECLAIM_ACCOUNT), 120 bytes, 34 a slab on this machine's 6.18.
    ("jbd2_journal_head", 120, 0, true, false),
    // ext4's extent status entries: KMEM_CACHE(extent_status, SLAB_RECLAIM_ACCOUNT), 40
    // bytes, 102 a slab on this machine's 6.18 (/sys/kernel/slab/extent_status).
    ("extent_status", 40, 0, true, false),
    // XFS's inode log items and buffer heads: 208 and 384 bytes, 19 and 21 a slab of
    // order 0 and 1 on this machine's 6.18 (/proc/slabinfo); 4.20 made both caches
    // without KM_ZONE_RECLAIM (xfs_init_zones), so their slabs are unmovable.
    ("xfs_ili", 208, 0, false, false),
    ("xfs_buf", 384, 1, false, false),
    // 512 bytes, 16 a slab of order 1 on this machine's 6.18.
    ("kmalloc-512", 512, 1, false, false),
];

/// One allocated object: its slab and the group it is charged to (slab_obj_exts()[off].objcg).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabObj {
    /// Slab id in its cache.
    pub id: u32,
    /// Group charged for it, NO_MEMCG when it is not charged.
    pub objcg: u32,
}

impl SlabObj {
    /// An object charged to no group.
    pub const fn unaccounted(id: u32) -> Self {
        SlabObj {
            id,
            objcg: super::memcontrol::NO_MEMCG,
        }
    }
}

/// Index of a built-in cache by name.
pub fn builtin_cache(name: &str) -> Option<usize> {
    BUILTIN_CACHES.iter().position(|c| c.0 == name)
}

/// Index of a built-in cache by name, at compile time (a name not in the table does
/// not compile).
pub const fn builtin_index(name: &str) -> usize {
    let mut i = 0;
    while i < BUILTIN_CACHES.len() {
        let a = BUILTIN_CACHES[i].0.as_bytes();
        let b = name.as_bytes();
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a built-in cache")
}

/// The dentry cache.
pub const DENTRY: usize = builtin_index("dentry");
/// ext4's inode cache.
pub const EXT4_INODE_CACHE: usize = builtin_index("ext4_inode_cache");
/// The buffer_head cache.
pub const BUFFER_HEAD: usize = builtin_index("buffer_head");
/// jbd2's journal_head cache.
pub const JBD2_JOURNAL_HEAD: usize = builtin_index("jbd2_journal_head");
/// ext4's extent status cache (ext4_es_cachep).
pub const EXT4_EXTENT_STATUS: usize = builtin_index("extent_status");
/// XFS's inode cache (xfs_inode_zone).
pub const XFS_INODE: usize = builtin_index("xfs_inode");
/// XFS's inode log items (xfs_ili_zone).
pub const XFS_ILI: usize = builtin_index("xfs_ili");
/// XFS's buffer heads (xfs_buf_zone).
pub const XFS_BUF: usize = builtin_index("xfs_buf");
/// kmalloc's 512-byte cache.
pub const KMALLOC_512: usize = builtin_index("kmalloc-512");

/// Names of all built-in caches.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN_CACHES.iter().map(|c| c.0).collect()
}

/// One slab: its first frame and objects in use.
#[derive(Debug, Clone, Copy)]
pub struct SlabPage {
    /// First frame of the slab, or NIL if the slot is unused.
    pub pfn: Pfn,
    /// Objects allocated from it.
    pub inuse: u16,
}

/// A cache (struct kmem_cache).
#[derive(Debug, Clone)]
pub struct KmemCache {
    /// Name as /proc/slabinfo shows it.
    pub name: &'static str,
    /// Object size [bytes].
    pub object_size: u32,
    /// Slab order (oo_order).
    pub order: u8,
    /// Objects per slab.
    pub objs_per_slab: u16,
    /// SLAB_RECLAIM_ACCOUNT: slabs are MIGRATE_RECLAIMABLE and a shrinker frees unused objects.
    pub reclaimable: bool,
    /// SLAB_ACCOUNT (or __GFP_ACCOUNT at every allocation): objects are charged to a memcg.
    pub account: bool,
    /// Slabs by id.
    pub slabs: Vec<SlabPage>,
    /// Unused slab ids.
    free_ids: Vec<u32>,
    /// Slabs that may have free objects (checked lazily).
    partial: Vec<u32>,
    /// Unused cached objects, oldest first, per memory cgroup (the shrinker's list_lru).
    pub lru: ListLru,
    /// Objects allocated.
    pub active_objs: u64,
    /// Slabs allocated.
    pub nr_slabs: u64,
    /// The shrinker's scan work deferred to its next call, by (memory cgroup, node)
    /// (shrinker->nr_deferred, and shrinker_info's per-memcg nr_deferred).
    pub nr_deferred: std::collections::BTreeMap<(u32, usize), u64>,
}

/// A reclaimable cache's unused objects as a memcg-aware list_lru: each object on the
/// list of the group it is charged to (memcg_list_lru_alloc, list_lru_add_obj), the
/// root's for an object charged to none; oldest first.
#[derive(Debug, Clone, Default)]
pub struct ListLru {
    lists: Vec<VecDeque<SlabObj>>,
    total: usize,
}

impl ListLru {
    /// The list an object goes on: its group's, or the root's.
    fn list_of(obj: &SlabObj) -> usize {
        if obj.objcg == NO_MEMCG {
            ROOT_MEM_CGROUP as usize
        } else {
            obj.objcg as usize
        }
    }

    /// Adds an unused object at the tail of its group's list (list_lru_add_obj).
    fn push_back(&mut self, obj: SlabObj) {
        let i = Self::list_of(&obj);
        if self.lists.len() <= i {
            self.lists.resize_with(i + 1, VecDeque::new);
        }
        self.lists[i].push_back(obj);
        self.total += 1;
    }

    /// Objects on every list.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether every list is empty.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Objects on one group's list (list_lru_count_one).
    pub fn count(&self, memcg: u32) -> usize {
        self.lists.get(memcg as usize).map_or(0, VecDeque::len)
    }

    /// Takes the oldest object of one group's list (list_lru_walk_one's isolate).
    fn pop_front(&mut self, memcg: u32) -> Option<SlabObj> {
        let obj = self.lists.get_mut(memcg as usize)?.pop_front()?;
        self.total -= 1;
        Some(obj)
    }

    /// Takes the oldest object of the first non-empty list, the root's first.
    fn pop_front_any(&mut self) -> Option<SlabObj> {
        let i = self.lists.iter().position(|l| !l.is_empty())?;
        self.pop_front(i as u32)
    }

    /// Takes the object of slab `id` off whichever list holds it (list_lru_del_obj),
    /// searching each list from both ends at once: the owners freed are mostly the
    /// newest (a file made and deleted) or the oldest (a directory emptied in creation
    /// order).
    fn remove_id(&mut self, id: u32) -> Option<SlabObj> {
        for list in &mut self.lists {
            let n = list.len();
            if let Some(i) = (0..n.div_ceil(2))
                .flat_map(|k| [n - 1 - k, k])
                .find(|&i| list[i].id == id)
            {
                self.total -= 1;
                return list.remove(i);
            }
        }
        None
    }
}

impl KmemCache {
    /// A cache from the built-in table.
    pub fn builtin(idx: usize) -> Self {
        let (name, object_size, order, reclaimable, account) = BUILTIN_CACHES[idx];
        KmemCache {
            name,
            object_size,
            order,
            objs_per_slab: ((PAGE_SIZE << order) / object_size as u64) as u16,
            reclaimable,
            account,
            slabs: Vec::new(),
            free_ids: Vec::new(),
            partial: Vec::new(),
            lru: ListLru::default(),
            active_objs: 0,
            nr_slabs: 0,
            nr_deferred: Default::default(),
        }
    }

    /// A slab with a free object, if any (get_partial).
    pub fn get_partial(&mut self) -> Option<u32> {
        while let Some(&id) = self.partial.last() {
            let s = self.slabs[id as usize];
            if s.pfn != super::page::NIL && s.inuse < self.objs_per_slab {
                return Some(id);
            }
            self.partial.pop();
        }
        None
    }

    /// Records a newly allocated slab page and returns its id.
    pub fn add_slab(&mut self, pfn: Pfn) -> u32 {
        let s = SlabPage { pfn, inuse: 0 };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.slabs[id as usize] = s;
                id
            }
            None => {
                self.slabs.push(s);
                (self.slabs.len() - 1) as u32
            }
        };
        self.partial.push(id);
        self.nr_slabs += 1;
        id
    }

    /// Takes one object from slab `id`.
    pub fn take_object(&mut self, id: u32) {
        self.slabs[id as usize].inuse += 1;
        self.active_objs += 1;
    }

    /// Returns one object to slab `id`; Some(pfn) if the slab is now empty and must be freed.
    pub fn put_object(&mut self, id: u32) -> Option<Pfn> {
        let s = &mut self.slabs[id as usize];
        debug_assert!(s.inuse > 0);
        let was_full = s.inuse == self.objs_per_slab;
        s.inuse -= 1;
        self.active_objs -= 1;
        if s.inuse == 0 {
            let pfn = s.pfn;
            s.pfn = super::page::NIL;
            self.free_ids.push(id);
            self.nr_slabs -= 1;
            return Some(pfn);
        }
        if was_full {
            self.partial.push(id);
        }
        None
    }
}

/// All caches.
#[derive(Debug, Clone)]
pub struct Slab {
    /// Caches by id (the built-in table's order).
    pub caches: Vec<KmemCache>,
    /// Objects on the shrinkers' lists of every cache, per memory cgroup: a group with
    /// none is skipped at once, as shrink_slab_memcg skips one whose shrinker_info
    /// map has no bit set.
    lru_objects: Vec<u64>,
}

impl Default for Slab {
    fn default() -> Self {
        Slab {
            caches: (0..BUILTIN_CACHES.len()).map(KmemCache::builtin).collect(),
            lru_objects: Vec::new(),
        }
    }
}

impl Slab {
    /// Puts an unused object on its cache's shrinker list (list_lru_add_obj).
    pub fn lru_add(&mut self, cache: usize, obj: SlabObj) {
        let i = ListLru::list_of(&obj);
        if self.lru_objects.len() <= i {
            self.lru_objects.resize(i + 1, 0);
        }
        self.lru_objects[i] += 1;
        self.caches[cache].lru.push_back(obj);
    }

    /// Takes the oldest object of group `memcg`'s list of a cache.
    pub fn lru_pop(&mut self, cache: usize, memcg: u32) -> Option<SlabObj> {
        let obj = self.caches[cache].lru.pop_front(memcg)?;
        self.lru_objects[memcg as usize] -= 1;
        Some(obj)
    }

    /// Takes the oldest object of a cache's first non-empty list.
    pub fn lru_pop_any(&mut self, cache: usize) -> Option<SlabObj> {
        let obj = self.caches[cache].lru.pop_front_any()?;
        self.lru_objects[ListLru::list_of(&obj)] -= 1;
        Some(obj)
    }

    /// Takes the object of slab `id` off its cache's list (list_lru_del_obj).
    pub fn lru_remove_id(&mut self, cache: usize, id: u32) -> Option<SlabObj> {
        let obj = self.caches[cache].lru.remove_id(id)?;
        self.lru_objects[ListLru::list_of(&obj)] -= 1;
        Some(obj)
    }

    /// Objects on group `memcg`'s lists of every cache.
    #[inline]
    pub fn lru_objects(&self, memcg: u32) -> u64 {
        self.lru_objects.get(memcg as usize).copied().unwrap_or(0)
    }

    /// Unused objects the shrinkers could free (the sum of count_objects()).
    pub fn freeable(&self) -> u64 {
        self.caches.iter().map(|c| c.lru.len() as u64).sum()
    }

    /// /proc/slabinfo (version 2.1) for caches with slabs.
    pub fn slabinfo(&self) -> String {
        use std::fmt::Write;
        let mut s = String::from("slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n");
        for c in &self.caches {
            let num_objs = c.nr_slabs * c.objs_per_slab as u64;
            let _ = writeln!(
                s,
                "{:<17} {:6} {:6} {:6} {:4} {:4} : tunables {:4} {:4} {:4} : slabdata {:6} {:6} {:6}",
                c.name, c.active_objs, num_objs, c.object_size, c.objs_per_slab, 1u32 << c.order, 0, 0, 0, c.nr_slabs, c.nr_slabs, 0
            );
        }
        s
    }
}

impl Kernel {
    /// Allocates one object (kmem_cache_alloc → ___slab_alloc → new_slab when no partial slab has room).
    /// Objects of reclaimable caches go to the cache's LRU as unused cached objects;
    /// objects of other caches are held by the task until freed.
    pub fn kmem_cache_alloc(&mut self, cache: usize, tid: TaskId) -> AllocResult {
        self.kmem_cache_alloc_as(cache, tid, false)
    }

    /// [`Kernel::kmem_cache_alloc`]; an object `in_use` is held by the task even in a
    /// reclaimable cache, off the shrinker's list (a dentry or an inode in use, or an
    /// inode with page cache), until the task frees it or exits.
    pub fn kmem_cache_alloc_as(&mut self, cache: usize, tid: TaskId, in_use: bool) -> AllocResult {
        let obj = match self.slab_alloc_object(cache, tid, GFP_KERNEL) {
            Ok(obj) => obj,
            Err(r) => return r,
        };
        if self.slab.caches[cache].reclaimable && !in_use {
            self.slab.lru_add(cache, obj);
        } else {
            self.tasks[tid as usize]
                .slab_held
                .push_back((cache as u16, obj));
        }
        AllocResult::Page(self.slab.caches[cache].slabs[obj.id as usize].pfn)
    }

    /// One object of a cache, held by its caller by slab id, on no list (slab_alloc_node):
    /// the objects a filesystem keeps by reference (buffer_head, journal_head), which no
    /// shrinker walks.
    /// An object of an accounted cache is charged to the task's group with `gfp`
    /// (memcg_slab_post_alloc_hook); when the charge fails the object is freed again
    /// (memcg_alloc_abort_single) and the charge's failure returned.
    pub fn slab_alloc_object(
        &mut self,
        cache: usize,
        tid: TaskId,
        gfp: Gfp,
    ) -> std::result::Result<SlabObj, AllocResult> {
        self.mm.cur.acc += self.mm.cost.slab_object;
        let id = match self.slab.caches[cache].get_partial() {
            Some(id) => id,
            None => self.new_slab(cache, tid)?,
        };
        self.slab.caches[cache].take_object(id);
        match self.memcg_slab_post_alloc_hook(cache, tid, gfp) {
            Ok(objcg) => Ok(SlabObj { id, objcg }),
            Err(r) => {
                let cpu = self.tasks[tid as usize].cpu;
                self.kmem_cache_free(cache, SlabObj::unaccounted(id), cpu);
                Err(r)
            }
        }
    }

    /// A new slab for a cache (new_slab → allocate_slab): one allocation of the cache's
    /// order, MIGRATE_RECLAIMABLE for SLAB_RECLAIM_ACCOUNT caches; returns its id.
    fn new_slab(&mut self, cache: usize, tid: TaskId) -> std::result::Result<u32, AllocResult> {
        let c = &self.slab.caches[cache];
        let gfp = if c.reclaimable {
            GFP_KERNEL_RECLAIMABLE
        } else {
            GFP_KERNEL
        };
        let order = c.order as usize;
        let pfn = match self.alloc_pages(gfp, order, tid) {
            AllocResult::Page(p) => p,
            other => return Err(other),
        };
        let c = &mut self.slab.caches[cache];
        let page = &mut self.mm.map[pfn as usize];
        page.set_kind(super::page::PageKind::Slab);
        page.owner = cache as u32;
        let item = if c.reclaimable {
            NodeStat::NR_SLAB_RECLAIMABLE
        } else {
            NodeStat::NR_SLAB_UNRECLAIMABLE
        };
        let nid = self.mm.pfn_to_nid(pfn);
        self.mm.mod_node_page_state(nid, item, 1 << order);
        Ok(c.add_slab(pfn))
    }

    /// Frees an unused cached object of slab `id` of a reclaimable cache, if the shrinker
    /// has not freed one already (the object's owner is gone: dentry_kill, evict of an
    /// unlinked inode). Returns the pages freed.
    pub fn kmem_cache_free_cached(&mut self, cache: usize, id: u32, cpu: usize) -> u64 {
        let Some(obj) = self.slab.lru_remove_id(cache, id) else {
            return 0;
        };
        self.kmem_cache_free(cache, obj, cpu)
    }

    /// Frees one object; frees the slab page when it empties (kmem_cache_free →
    /// memcg_slab_free_hook, discard_slab). Returns the pages freed.
    pub fn kmem_cache_free(&mut self, cache: usize, obj: SlabObj, cpu: usize) -> u64 {
        self.mm.cur.acc += self.mm.cost.slab_object;
        self.memcg_slab_free_hook(cache, obj.objcg, cpu);
        let id = obj.id;
        let c = &mut self.slab.caches[cache];
        let Some(pfn) = c.put_object(id) else {
            return 0;
        };
        let order = c.order as usize;
        let item = if c.reclaimable {
            NodeStat::NR_SLAB_RECLAIMABLE
        } else {
            NodeStat::NR_SLAB_UNRECLAIMABLE
        };
        let nid = self.mm.pfn_to_nid(pfn);
        self.mm.mod_node_page_state(nid, item, -(1i64 << order));
        self.mm.free_pages(pfn, order, cpu);
        1 << order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_fill_slabs_and_last_free_releases_the_page() {
        let mut c = KmemCache::builtin(builtin_cache("dentry").unwrap());
        assert_eq!(c.objs_per_slab, 21);
        let id = c.add_slab(100);
        for _ in 0..21 {
            assert_eq!(c.get_partial(), Some(id));
            c.take_object(id);
        }
        assert_eq!(c.get_partial(), None, "a full slab is not partial");
        for _ in 0..20 {
            assert_eq!(c.put_object(id), None);
        }
        assert_eq!(
            c.get_partial(),
            Some(id),
            "a slab with free objects is partial again"
        );
        assert_eq!(c.put_object(id), Some(100));
        assert_eq!(c.nr_slabs, 0);
        assert_eq!(c.get_partial(), None);
    }
}
