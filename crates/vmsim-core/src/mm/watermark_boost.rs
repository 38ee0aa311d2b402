//! Watermark boosting: the zone side lives in [`super::page_alloc`]
//! (`boost_watermark()` on a fragmenting claim), the reclaim side here.
//!
//! Models the boosted-watermark parts of mm/page_alloc.c (rmqueue()'s
//! ZONE_BOOSTED_WATERMARK test) and mm/vmscan.c (pgdat_watermark_boost(),
//! wakeup_kswapd()'s boosted case, and balance_pgdat()'s `nr_boost_reclaim`,
//! `zone_boosts[]` and the decay at its end followed by
//! `wakeup_kcompactd(pgdat, pageblock_order, ...)`). While kswapd reclaims
//! only for a boost it does no writeback and no swap (`may_writepage`,
//! `may_swap` off) and never raises its priority beyond DEF_PRIORITY - 2;
//! if the node is really short of memory it restarts as normal reclaim.

use super::mmzone::{MAX_NR_ZONES, PAGEBLOCK_ORDER};
use super::page::Pfn;
use crate::kernel::Kernel;

/// What balance_pgdat() remembers of the boosts it found on entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct BoostReclaim {
    /// Pages still to reclaim for the boost (nr_boost_reclaim).
    pub nr_boost_reclaim: u64,
    /// Each zone type's boost on entry (zone_boosts[]) [pages].
    pub zone_boosts: [u64; MAX_NR_ZONES],
    /// Whether any zone was boosted on entry (boosted).
    pub boosted: bool,
}

impl Kernel {
    /// Wakes kswapd after an allocation from a zone whose watermarks were just boosted
    /// (the ZONE_BOOSTED_WATERMARK test at the end of rmqueue()).
    #[inline(always)]
    pub fn wakeup_kswapd_for_boost(&mut self, p: Pfn) {
        let zid = self.mm.page_zone(p);
        if !self.mm.zones[zid].boosted_watermark {
            return;
        }
        self.mm.zones[zid].boosted_watermark = false;
        let zt = self.mm.zones[zid].zone_type as usize;
        self.wakeup_kswapd(zid, super::gfp::Gfp(0), 0, zt);
    }

    /// Whether any eligible zone of the node has a boost (pgdat_watermark_boosted).
    pub fn pgdat_watermark_boosted(&self, nid: usize, highest_zoneidx: usize) -> bool {
        (0..=highest_zoneidx.min(MAX_NR_ZONES - 1))
            .any(|zt| self.mm.zones[self.mm.nodes[nid].zones[zt]].watermark_boost > 0)
    }

    /// The boosts balance_pgdat() starts with (its entry: nr_boost_reclaim, zone_boosts[]).
    pub fn boost_reclaim_begin(&self, nid: usize, highest_zoneidx: usize) -> BoostReclaim {
        let mut b = BoostReclaim::default();
        for zt in 0..=highest_zoneidx.min(MAX_NR_ZONES - 1) {
            let z = &self.mm.zones[self.mm.nodes[nid].zones[zt]];
            if z.managed_pages == 0 {
                continue;
            }
            b.zone_boosts[zt] = z.watermark_boost;
            b.nr_boost_reclaim += z.watermark_boost;
        }
        b.boosted = b.nr_boost_reclaim > 0;
        b
    }

    /// Removes the boosts found on entry and asks kcompactd to rebuild pageblocks (the
    /// `out:` of balance_pgdat() when boosted).
    pub fn boost_reclaim_finish(&mut self, b: &BoostReclaim, nid: usize, highest_zoneidx: usize) {
        if !b.boosted {
            return;
        }
        for zt in 0..=highest_zoneidx.min(MAX_NR_ZONES - 1) {
            let zid = self.mm.nodes[nid].zones[zt];
            let z = &mut self.mm.zones[zid];
            z.watermark_boost -= z.watermark_boost.min(b.zone_boosts[zt]);
        }
        self.wakeup_kcompactd(nid, PAGEBLOCK_ORDER, highest_zoneidx);
    }
}
