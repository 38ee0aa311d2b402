//! Shrinkers of reclaimable slab caches.
//!
//! Models mm/shrinker.c: shrink_slab() runs every SLAB_RECLAIM_ACCOUNT
//! cache's shrinker (the dcache and icache ones, `DEFAULT_SEEKS`) once per
//! reclaim pass, and do_shrink_slab() scans `freeable >> priority * 4 /
//! seeks` unused objects, oldest first, in SHRINK_BATCH batches. The
//! shadow-node shrinker of mm/workingset.c is in workingset.rs.
//!
//! Both shrinkers emit mm_shrink_slab_start/end around their scan.
//!
//! Scan work a call does not do (less than a batch) is deferred to the next
//! call, per node (shrinker->nr_deferred, xchg_nr_deferred/add_nr_deferred).
//!
//! The shrinkers are memcg-aware, as the superblock's is: each group's
//! objects are on its own list and are shrunk when reclaim visits the group
//! (shrink_node_memcgs → shrink_slab(memcg)), the root's list holding what is
//! charged to no group.
//!
//! One superblock shrinker covers the dentry and inode caches (vmsim has one
//! filesystem); any other reclaimable cache's unused objects have a shrinker
//! of their own.

use super::gfp::{Gfp, __GFP_FS};
use super::memcontrol::ROOT_MEM_CGROUP;
use super::vmstat::Event;
use crate::kernel::Kernel;
use crate::trace::{TraceEvent, SHRINK_SUPER_CACHE_SCAN};

/// The simulated `struct shrinker *` of a slab cache's shrinker (the superblock's).
pub fn shrinker_id(cache: usize) -> u64 {
    0x1000 + cache as u64
}

/// Objects a shrinker frees per call of scan_objects (SHRINK_BATCH).
pub const SHRINK_BATCH: u64 = 128;
/// shrinker->seeks of the dcache and icache shrinkers (DEFAULT_SEEKS).
pub const DEFAULT_SEEKS: u64 = 2;

/// The caches the superblock shrinker covers (s_dentry_lru, then s_inode_lru):
/// dentries first, as super_cache_scan prunes them before the inodes they pin.
pub const SUPER_CACHES: [usize; 4] = [
    super::slab::DENTRY,
    super::slab::builtin_index("inode_cache"),
    super::slab::EXT4_INODE_CACHE,
    super::slab::builtin_index("xfs_inode"),
];

/// What a shrinker counts and scans (its count_objects/scan_objects pair).
#[derive(Debug, Clone, Copy)]
pub enum Shrinker<'a> {
    /// Unused objects on slab caches' lists: the superblock's shrinker (its dentry and
    /// inode lists, `super_cache_count`/`super_cache_scan`) or a cache of its own.
    Lists(&'a [usize]),
    /// ext4's extent status entries (`ext4_es_count`/`ext4_es_scan`, fs/ext4_es.rs).
    Ext4Es,
    /// XFS's metadata buffers (`xfs_buftarg_shrink_count`/`xfs_buftarg_shrink_scan`,
    /// fs/xfs.rs): NUMA-aware, not memcg-aware, DEFAULT_SEEKS.
    XfsBuf,
}

/// shrinker->batch of the superblock's shrinker (alloc_super: `s_shrink->batch = 1024`).
pub const SUPER_BATCH: u64 = 1024;

impl Shrinker<'_> {
    /// The slab cache whose `nr_deferred` holds the shrinker's deferred work.
    fn owner(&self) -> usize {
        match self {
            Shrinker::Lists(caches) => caches[0],
            Shrinker::Ext4Es => super::slab::EXT4_EXTENT_STATUS,
            Shrinker::XfsBuf => super::slab::XFS_BUF,
        }
    }

    /// Objects a call of scan_objects is given (shrinker->batch, SHRINK_BATCH when 0).
    fn batch(&self) -> u64 {
        match self {
            Shrinker::Lists(caches) if caches[0] == SUPER_CACHES[0] => SUPER_BATCH,
            _ => SHRINK_BATCH,
        }
    }

    /// The scan function's name as mm_shrink_slab_start prints it.
    fn name(&self) -> &'static str {
        match self {
            Shrinker::Lists(_) => SHRINK_SUPER_CACHE_SCAN,
            Shrinker::Ext4Es => crate::trace::SHRINK_EXT4_ES_SCAN,
            Shrinker::XfsBuf => crate::trace::SHRINK_XFS_BUFTARG_SCAN,
        }
    }
}

impl Kernel {
    /// Runs every shrinker once at this priority for group `memcg` (shrink_slab); below
    /// the root only the memcg-aware ones (shrink_slab_memcg: the superblock's), in the
    /// root's call the others too (ext4's extent status shrinker); returns pages freed.
    #[inline]
    pub fn shrink_slab(&mut self, gfp: Gfp, priority: i32, cpu: usize, memcg: u32) -> u64 {
        let lists = gfp.has(__GFP_FS) && self.slab.lru_objects(memcg) > 0;
        let es =
            memcg == ROOT_MEM_CGROUP && (self.ext4_es_count() > 0 || self.xfs_buftarg_count() > 0);
        if !lists && !es {
            // super_cache_scan() refuses to recurse into the filesystem; a group with
            // nothing on the lists has no shrinker to run.
            return 0;
        }
        self.shrink_slab_objects(gfp, priority, cpu, memcg).1
    }

    /// [`Kernel::shrink_slab`] returning the objects freed as well as the pages:
    /// `(objects, pages)`.
    #[inline(never)]
    fn shrink_slab_objects(
        &mut self,
        gfp: Gfp,
        priority: i32,
        cpu: usize,
        memcg: u32,
    ) -> (u64, u64) {
        let (mut objects, mut pages) = (0, 0);
        if gfp.has(__GFP_FS) && self.slab.lru_objects(memcg) > 0 {
            // The superblock's shrinker: its dentries and inodes together.
            let (o, p) =
                self.do_shrink_slab(Shrinker::Lists(&SUPER_CACHES), gfp, priority, cpu, memcg);
            objects += o;
            pages += p;
            for cache in 0..self.slab.caches.len() {
                if self.slab.caches[cache].reclaimable && !SUPER_CACHES.contains(&cache) {
                    let (o, p) =
                        self.do_shrink_slab(Shrinker::Lists(&[cache]), gfp, priority, cpu, memcg);
                    objects += o;
                    pages += p;
                }
            }
        }
        if memcg == ROOT_MEM_CGROUP {
            // Not memcg-aware: run in the root's call only (shrink_slab's global loop).
            let (o, p) = self.do_shrink_slab(Shrinker::Ext4Es, gfp, priority, cpu, memcg);
            objects += o;
            pages += p;
            let (o, p) = self.do_shrink_slab(Shrinker::XfsBuf, gfp, priority, cpu, memcg);
            objects += o;
            pages += p;
        }
        (objects, pages)
    }

    /// Frees every unused reclaimable slab object, as `echo 2 > /proc/sys/vm/drop_caches`
    /// does (drop_slab): on every node, shrink_slab at priority 0 for every memcg
    /// (drop_slab_node) until a round frees no more than `1 << shift` objects, `shift`
    /// growing by one a round. The memcg-aware shrinkers (the dentry and inode ones, the
    /// shadow-node one) run in every group's pass. Returns the objects freed.
    pub fn drop_slab(&mut self, cpu: usize) -> u64 {
        let gfp = super::gfp::GFP_KERNEL;
        let groups = if self.mm.memcg.enabled() {
            self.mm.memcg.groups.len() as u32
        } else {
            1
        };
        let mut total = 0;
        let mut shift = 0u32;
        loop {
            let mut freed = 0;
            for _nid in 0..self.mm.nodes.len() {
                for memcg in 0..groups {
                    freed += self.shrink_slab_objects(gfp, 0, cpu, memcg).0;
                    if self.mm.kcfg.workingset {
                        freed += self.shrink_shadow_nodes(memcg, gfp, 0);
                    }
                }
            }
            total += freed;
            let more = freed.checked_shr(shift).unwrap_or(0) > 1;
            shift += 1;
            if !more {
                return total;
            }
        }
    }

    /// The unused objects of group `memcg` on each of `caches`' lists (list_lru_count_one).
    fn listed<'a>(&'a self, caches: &'a [usize], memcg: u32) -> impl Iterator<Item = u64> + 'a {
        caches
            .iter()
            .map(move |&c| self.slab.caches[c].lru.count(memcg) as u64)
    }

    /// What a shrinker reports freeable (count_objects): the superblock's counts
    /// `vm.vfs_cache_pressure` percent of its unused objects (super_cache_count →
    /// vfs_pressure_ratio).
    fn count_objects(&self, s: Shrinker, memcg: u32) -> u64 {
        match s {
            Shrinker::Lists(caches) => {
                let unused: u64 = self.listed(caches, memcg).sum();
                unused * self.mm.kcfg.vfs_cache_pressure / 100
            }
            Shrinker::Ext4Es => self.ext4_es_count(),
            Shrinker::XfsBuf => self.xfs_buftarg_count(),
        }
    }

    /// One call of a shrinker's scan_objects over `nr_to_scan` objects; returns
    /// `(objects freed, pages freed)`. The superblock's shares the batch between its
    /// caches in proportion to what each holds, one object more each, oldest first
    /// (super_cache_scan → prune_dcache_sb, prune_icache_sb).
    fn scan_objects(&mut self, s: Shrinker, nr_to_scan: u64, cpu: usize, memcg: u32) -> (u64, u64) {
        let caches = match s {
            Shrinker::Lists(caches) => caches,
            Shrinker::Ext4Es => return self.ext4_es_scan(nr_to_scan, cpu),
            Shrinker::XfsBuf => return self.xfs_buftarg_scan(nr_to_scan, cpu),
        };
        let held: Vec<u64> = self.listed(caches, memcg).collect();
        let total = held.iter().sum::<u64>().max(1);
        let (mut freed, mut pages) = (0, 0);
        for (i, &cache) in caches.iter().enumerate() {
            if held[i] == 0 {
                continue;
            }
            let share = nr_to_scan * held[i] / total + 1;
            for _ in 0..share {
                let Some(obj) = self.slab.lru_pop(cache, memcg) else {
                    break;
                };
                self.mm.cur.acc += self.mm.cost.shrink_object;
                pages += self.kmem_cache_free(cache, obj, cpu);
                if cache == super::slab::XFS_INODE {
                    // xfs_reclaim_inodes_nr frees the inode with its log item.
                    pages += self.xfs_inode_freed(obj.id, cpu);
                }
                freed += 1;
            }
        }
        (freed, pages)
    }

    /// One shrinker pass (do_shrink_slab): scans `freeable >> priority * 4 / seeks`
    /// objects and the share of earlier calls' deferred work, a batch per call of
    /// scan_objects, every batch counted in `slabs_scanned` whatever it freed; work
    /// under a batch is deferred. Returns `(objects freed, pages freed)`.
    fn do_shrink_slab(
        &mut self,
        s: Shrinker,
        gfp: Gfp,
        priority: i32,
        cpu: usize,
        memcg: u32,
    ) -> (u64, u64) {
        // A group with nothing on the lists costs no more than the look (its bit clear
        // in shrinker_info's map: shrink_slab_memcg skips the shrinker).
        let freeable = self.count_objects(s, memcg);
        if freeable == 0 {
            return (0, 0);
        }
        // ext4's extent status shrinker is not NUMA-aware: its work is node 0's.
        let node = match s {
            Shrinker::Lists(_) | Shrinker::XfsBuf => self.mm.cpu_to_node[cpu],
            Shrinker::Ext4Es => 0,
        };
        let nid = node as i32;
        let owner = s.owner();
        let batch = s.batch();
        // The work earlier calls deferred, taken so no other call does it too
        // (xchg_nr_deferred).
        let nr = self.slab.caches[owner]
            .nr_deferred
            .remove(&(memcg, node))
            .unwrap_or(0);
        let delta = (freeable >> priority) * 4 / DEFAULT_SEEKS;
        let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
        let shr = shrinker_id(owner);
        self.trace(TraceEvent::MmShrinkSlabStart {
            shr,
            shrink: s.name(),
            nid,
            nr_objects_to_shrink: nr as i64,
            gfp_flags: gfp.0,
            cache_items: freeable,
            delta,
            total_scan,
            priority,
        });
        let first_total = total_scan;
        let (mut freed, mut pages, mut scanned) = (0u64, 0, 0u64);
        while total_scan >= batch || total_scan >= freeable {
            let nr_to_scan = batch.min(total_scan);
            if nr_to_scan == 0 {
                break;
            }
            let (f, p) = self.scan_objects(s, nr_to_scan, cpu, memcg);
            freed += f;
            pages += p;
            self.mm.count_vm_events(Event::SLABS_SCANNED, nr_to_scan);
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        // New work not done is deferred, old deferred work done is taken off; at most
        // twice the freeable objects (add_nr_deferred).
        let next_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
        let new_nr = {
            let d = self.slab.caches[owner]
                .nr_deferred
                .entry((memcg, node))
                .or_insert(0);
            *d += next_deferred;
            *d
        };
        self.trace(TraceEvent::MmShrinkSlabEnd {
            shr,
            nid,
            shrink: s.name(),
            unused_scan: nr as i64,
            new_scan: new_nr as i64,
            retval: freed as i32,
            total_scan: first_total as i64,
        });
        (freed, pages)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;
    use crate::kernel::Kernel;
    use crate::mm::gfp::GFP_KERNEL;
    use crate::mm::slab::DENTRY;
    use crate::mm::vmstat::Event;

    /// A booted kernel whose task has allocated `n` dentries (unused, on the shrinker's list).
    fn with_dentries(n: u64) -> Kernel {
        let sc = Scenario::from_toml("[machine]\nmemory = \"256MiB\"\ncpus = 1\n").unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        for _ in 0..n {
            assert!(matches!(
                k.kmem_cache_alloc(DENTRY, tid),
                crate::kernel::AllocResult::Page(_)
            ));
        }
        k
    }

    #[test]
    fn a_groups_shrinker_pass_frees_only_that_groups_objects() {
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"256MiB\"\ncpus = 1\n[[cgroup]]\npath = \"g\"\n",
        )
        .unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        k.mm.memcg.create_from_specs(&sc.cgroups);
        let g = k.mm.memcg.paths["g"];
        let (root_task, group_task) = (
            k.alloc_task_struct("r", 0, false),
            k.alloc_task_struct("g", 0, false),
        );
        assert!(k.copy_process(root_task, 0) && k.copy_process(group_task, 0));
        k.attach_task_memcg(group_task, g);
        for _ in 0..300 {
            for tid in [root_task, group_task] {
                assert!(matches!(
                    k.kmem_cache_alloc(DENTRY, tid),
                    crate::kernel::AllocResult::Page(_)
                ));
            }
        }
        assert_eq!(k.slab.caches[DENTRY].lru.count(g), 300);
        // Limit reclaim of the group (shrink_slab_memcg) leaves the root's dentries ...
        k.shrink_slab(GFP_KERNEL, 0, 0, g);
        assert_eq!(k.slab.caches[DENTRY].lru.count(g), 0);
        assert_eq!(k.slab.caches[DENTRY].lru.count(0), 300);
        // ... which the root's pass frees.
        k.shrink_slab(GFP_KERNEL, 0, 0, 0);
        assert_eq!(k.slab.caches[DENTRY].lru.len(), 0);
    }

    #[test]
    fn work_under_a_batch_is_deferred_to_the_next_call() {
        let mut k = with_dentries(2000);
        let scanned = |k: &Kernel| k.mm.events[Event::SLABS_SCANNED as usize];
        // Priority 2: delta = (2000 >> 2) * 4 / 2 = 1000, under the superblock shrinker's
        // batch (1024, alloc_super) and the 2000 freeable objects: nothing scanned, 1000
        // deferred.
        k.shrink_slab(GFP_KERNEL, 2, 0, 0);
        assert_eq!(scanned(&k), 0);
        assert_eq!(k.slab.caches[DENTRY].nr_deferred[&(0, 0)], 1000);
        // (1000 >> 2) + 1000 = 1250: one batch of 1024 is scanned, and 1025 dentries freed
        // (super_cache_scan asks each cache for one object more than its share).
        k.shrink_slab(GFP_KERNEL, 2, 0, 0);
        assert_eq!(scanned(&k), 1024);
        assert_eq!(k.slab.caches[DENTRY].lru.len(), 975);
        // What was not done stays deferred: 1000 + 1000 - 1024.
        assert_eq!(k.slab.caches[DENTRY].nr_deferred[&(0, 0)], 976);
    }
}
