//! Page reclaim.
//!
//! Models mm/vmscan.c: `struct scan_control`, try_to_free_pages() and
//! do_try_to_free_pages() with the priority loop from DEF_PRIORITY down to 0,
//! and shrink_slab()/do_shrink_slab() of mm/shrinker.c for the reclaimable slab
//! caches (dentries, inodes). The LRU lists of anonymous and file pages are
//! not modelled yet, so the only memory direct reclaim can free today is
//! unused objects of reclaimable caches; anonymous memory is freed only by
//! its owner or the OOM killer.

use super::gfp::{gfp_zone, Gfp, __GFP_FS};
use super::mmzone::ZoneType;
use super::vmstat::Event;
use crate::kernel::Kernel;

/// Pages direct reclaim tries to free per call (SWAP_CLUSTER_MAX).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// Starting scan priority: scan 1/2^12 of the lists (DEF_PRIORITY).
pub const DEF_PRIORITY: i32 = 12;
/// Objects a shrinker frees per call of scan_objects (SHRINK_BATCH).
pub const SHRINK_BATCH: u64 = 128;
/// shrinker->seeks of the dcache and icache shrinkers (DEFAULT_SEEKS).
pub const DEFAULT_SEEKS: u64 = 2;

/// Settings and results of one reclaim call (struct scan_control).
#[derive(Debug, Clone)]
pub struct ScanControl {
    /// Pages to reclaim before stopping.
    pub nr_to_reclaim: u64,
    /// Allocation context.
    pub gfp_mask: Gfp,
    /// Allocation order.
    pub order: usize,
    /// Scan priority: 1/2^priority of each list is scanned.
    pub priority: i32,
    /// Highest zone reclaim is for.
    pub reclaim_idx: ZoneType,
    /// Objects scanned by shrinkers this call.
    pub nr_scanned: u64,
    /// Pages reclaimed this call.
    pub nr_reclaimed: u64,
}

impl Kernel {
    /// Runs every reclaimable cache's shrinker once at this priority (shrink_slab); returns pages freed.
    pub fn shrink_slab(&mut self, gfp: Gfp, priority: i32, cpu: usize) -> u64 {
        if !gfp.has(__GFP_FS) {
            // super_cache_scan() refuses to recurse into the filesystem.
            return 0;
        }
        let mut pages = 0;
        for cache in 0..self.slab.caches.len() {
            if self.slab.caches[cache].reclaimable {
                pages += self.do_shrink_slab(cache, priority, cpu);
            }
        }
        pages
    }

    /// One shrinker pass over a cache's unused objects, oldest first (do_shrink_slab).
    fn do_shrink_slab(&mut self, cache: usize, priority: i32, cpu: usize) -> u64 {
        let freeable = self.slab.caches[cache].lru.len() as u64;
        if freeable == 0 {
            return 0;
        }
        let delta = (freeable >> priority) * 4 / DEFAULT_SEEKS;
        let mut total_scan = delta.min(2 * freeable);
        let mut pages = 0;
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = SHRINK_BATCH.min(total_scan);
            if nr_to_scan == 0 {
                break;
            }
            let mut scanned = 0;
            while scanned < nr_to_scan {
                let Some(id) = self.slab.caches[cache].lru.pop_front() else {
                    break;
                };
                self.mm.acc += self.mm.cost.shrink_object;
                pages += self.kmem_cache_free(cache, id, cpu);
                scanned += 1;
            }
            self.mm.count_vm_events(Event::SLABS_SCANNED, nr_to_scan);
            total_scan -= nr_to_scan;
            if scanned < nr_to_scan {
                break;
            }
        }
        pages
    }

    /// Direct reclaim from the allocator's slow path (try_to_free_pages → do_try_to_free_pages);
    /// returns pages reclaimed.
    pub fn try_to_free_pages(&mut self, gfp: Gfp, order: usize, cpu: usize) -> u64 {
        let mut sc = ScanControl {
            nr_to_reclaim: SWAP_CLUSTER_MAX,
            gfp_mask: gfp,
            order,
            priority: DEF_PRIORITY,
            reclaim_idx: gfp_zone(gfp),
            nr_scanned: 0,
            nr_reclaimed: 0,
        };
        let stall = match sc.reclaim_idx {
            ZoneType::Dma => Event::ALLOCSTALL_DMA,
            ZoneType::Dma32 => Event::ALLOCSTALL_DMA32,
            ZoneType::Normal => Event::ALLOCSTALL_NORMAL,
        };
        self.mm.count_vm_events(stall, 1);
        loop {
            // shrink_zones → shrink_node: the LRU lists would be scanned here, then the shrinkers.
            sc.nr_reclaimed += self.shrink_slab(sc.gfp_mask, sc.priority, cpu);
            if sc.nr_reclaimed >= sc.nr_to_reclaim {
                break;
            }
            sc.priority -= 1;
            if sc.priority < 0 {
                break;
            }
        }
        sc.nr_reclaimed
    }
}
