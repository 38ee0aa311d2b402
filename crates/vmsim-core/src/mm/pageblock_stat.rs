//! Pageblock figures kept up to date by the events that change them, as mm/vmstat.c keeps
//! its zone counters: pageblocks of each migratetype per zone (what
//! pagetypeinfo_showblockcount_print() counts by walking the pageblock bitmap) and the
//! pageblocks that hold allocations of more than one mobility. A periodic sample reads
//! them in O(1); [`Mm::check_pageblock_stat`] compares them with a full walk.

use super::mmzone::{MigrateType, MIGRATE_TYPES, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use super::page::{pg, Page, Pfn};
use super::Mm;

/// The incremental pageblock counters.
#[derive(Debug, Clone, Default)]
pub struct PageblockStat {
    /// Pageblocks of each migratetype, per zone (`nr_mt[zid][mt]`).
    pub nr_mt: Vec<[u64; MIGRATE_TYPES]>,
    /// Allocated block heads of each mobility (unmovable, reclaimable, movable) per pageblock.
    heads: Vec<[u16; 3]>,
    /// Pageblocks whose `heads` has more than one non-zero entry.
    pub mixed: u64,
}

/// The mobility an allocated frame counts under, when it counts: the head of an allocated
/// block (not reserved) of an unmovable, reclaimable or movable type.
#[inline(always)]
fn head_kind(p: &Page) -> Option<usize> {
    (p.flags & (pg::HEAD | pg::RESERVED) == pg::HEAD && (p.mt as usize) < 3)
        .then_some(p.mt as usize)
}

impl PageblockStat {
    /// Counters of a machine whose pageblocks (`pageblock_zone`) all have type `mt` and no allocation.
    pub fn new(nr_zones: usize, pageblock_zone: &[u16], mt: MigrateType) -> Self {
        let mut nr_mt = vec![[0u64; MIGRATE_TYPES]; nr_zones];
        for &z in pageblock_zone {
            nr_mt[z as usize][mt as usize] += 1;
        }
        PageblockStat {
            nr_mt,
            heads: vec![[0; 3]; pageblock_zone.len()],
            mixed: 0,
        }
    }

    /// Adds `delta` to pageblock `pb`'s count of heads of mobility `k`, keeping `mixed`.
    #[inline(always)]
    fn mod_heads(&mut self, pb: usize, k: usize, delta: i32) {
        let h = &mut self.heads[pb];
        let old = h[k];
        let new = (old as i32 + delta) as u16;
        h[k] = new;
        // Only a mobility appearing in or leaving the block can change whether it is mixed.
        if (old == 0) != (new == 0) {
            let others = h.iter().filter(|&&c| c > 0).count() - (new > 0) as usize;
            if others > 0 {
                // Mixed before and after unless `k` was or is the second mobility.
                match (others == 1, new > 0) {
                    (true, true) => self.mixed += 1,
                    (true, false) => self.mixed -= 1,
                    _ => {}
                }
            }
        }
    }
}

impl Mm {
    /// Forgets frame `pfn`'s allocated head before its state changes (pairs with [`Mm::pb_account`]).
    #[inline(always)]
    pub fn pb_unaccount(&mut self, pfn: Pfn) {
        if let Some(k) = head_kind(&self.map[pfn as usize]) {
            self.pb_stat
                .mod_heads((pfn >> PAGEBLOCK_ORDER) as usize, k, -1);
        }
    }

    /// Counts frame `pfn` if it is now an allocated head (after its state changed).
    #[inline(always)]
    pub fn pb_account(&mut self, pfn: Pfn) {
        if let Some(k) = head_kind(&self.map[pfn as usize]) {
            self.pb_stat
                .mod_heads((pfn >> PAGEBLOCK_ORDER) as usize, k, 1);
        }
    }

    /// Notes a pageblock's migratetype changing from `old` to `new` in the per-zone counts.
    #[inline(always)]
    pub fn pb_set_mt(&mut self, pb: usize, old: u8, new: u8) {
        let z = &mut self.pb_stat.nr_mt[self.pageblock_zone[pb] as usize];
        z[old as usize] -= 1;
        z[new as usize] += 1;
    }

    /// Pageblocks holding allocations of more than one mobility (unmovable, reclaimable,
    /// movable), by a walk of the frame table: the reference for [`PageblockStat::mixed`].
    pub fn mixed_pageblocks_walk(&self) -> u64 {
        let mut mixed = 0;
        let n = self.map.len() as Pfn;
        let mut start: Pfn = 0;
        while start < n {
            let end = (start + (1 << PAGEBLOCK_ORDER)).min(n);
            let mut kinds = 0u8;
            let mut p = start;
            while p < end {
                let page = &self.frame(p);
                if page.test(pg::HEAD) {
                    if !page.test(pg::RESERVED) && (page.mt as usize) < 3 {
                        kinds |= 1 << page.mt;
                    }
                    p += 1 << page.order();
                } else if page.test(pg::BUDDY) {
                    p += 1 << page.order();
                } else {
                    p += 1;
                }
            }
            if kinds.count_ones() > 1 {
                mixed += 1;
            }
            start = end;
        }
        mixed
    }

    /// Pageblocks of each migratetype in a zone, by a walk of the pageblock bitmap (the
    /// reference for [`PageblockStat::nr_mt`]).
    pub fn pageblock_counts_walk(&self, zid: usize) -> [u64; MIGRATE_TYPES] {
        let z = &self.zones[zid];
        let mut counts = [0u64; MIGRATE_TYPES];
        let first = (z.zone_start_pfn / PAGEBLOCK_NR_PAGES) as usize;
        let last = z.zone_end_pfn().div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        for pb in first..last {
            counts[self.pageblock_mt[pb] as usize] += 1;
        }
        counts
    }

    /// Compares the incremental pageblock counters with full walks.
    pub fn check_pageblock_stat(&self) -> Result<(), String> {
        for z in self.zones.iter().filter(|z| z.populated()) {
            let walk = self.pageblock_counts_walk(z.id);
            if walk != self.pb_stat.nr_mt[z.id] {
                return Err(format!(
                    "zone {}: pageblocks per migratetype {:?} counted, {walk:?} walked",
                    z.id, self.pb_stat.nr_mt[z.id]
                ));
            }
        }
        let walk = self.mixed_pageblocks_walk();
        if walk != self.pb_stat.mixed {
            return Err(format!(
                "mixed pageblocks {} counted, {walk} walked",
                self.pb_stat.mixed
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE};

    /// Mixed allocations and frees, then the counters against the walks.
    #[test]
    fn counters_match_walks_after_mixed_traffic() {
        let sc = Scenario::from_toml("[machine]\nmemory=\"256MiB\"\ncpus=2\n").unwrap();
        let mut mm = Mm::boot(&sc.machine, &sc.kernel, &sc.cost);
        mm.check_pageblock_stat().unwrap();
        let gfps = [GFP_KERNEL, GFP_KERNEL_RECLAIMABLE, GFP_HIGHUSER_MOVABLE];
        let mut held = Vec::new();
        let mut x = 12345u64;
        for i in 0..40_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let order = ((x >> 33) % 4) as usize;
            let gfp = gfps[((x >> 40) % 3) as usize];
            if let (Some(pfn), _) = mm.alloc_pages_fast(gfp, order, 0, (i % 2) as usize) {
                held.push((pfn, order));
            }
            if (x >> 50).is_multiple_of(3) && !held.is_empty() {
                let k = ((x >> 20) as usize) % held.len();
                let (pfn, order) = held.swap_remove(k);
                mm.free_pages(pfn, order, (i % 2) as usize);
            }
        }
        assert!(mm.pb_stat.mixed > 0, "the traffic mixes some pageblocks");
        mm.check_pageblock_stat().unwrap();
        for (pfn, order) in held.drain(..) {
            mm.free_pages(pfn, order, 0);
        }
        mm.drain_all_pages();
        mm.check_pageblock_stat().unwrap();
        assert_eq!(mm.pb_stat.mixed, 0);
    }
}
