//! Boot-time setup of the machine's memory.
//!
//! Models mm/mm_init.c: nodes and zones laid out (free_area_init), the frame
//! table, firmware-reserved ranges, and memblock_free_all() freeing memory to
//! the buddy allocator in MAX_PAGE_ORDER-aligned chunks through
//! __free_pages_core(); then the watermarks and per-CPU lists of
//! page_alloc.rs (init_per_zone_wmark_min, setup_per_cpu_pageset).

use super::deferred::FREE_FRAME;
use super::mmzone::*;
use super::page::{Pfn, PAGE_SIZE};
use super::page_alloc::*;
use super::vmstat_items::{Event, NumaStat, ZoneStat};
use super::{FragStats, Mm};
use crate::config::{Cost, Kernel as KernelCfg, Machine};
use crate::engine::lock::ContendedLock;

impl Mm {
    /// Builds the machine's memory at boot: nodes, zones, the frame table,
    /// reserved ranges, free lists, watermarks and per-CPU lists.
    ///
    /// Models free_area_init() and memblock_free_all() (which frees memory in
    /// MAX_PAGE_ORDER-aligned chunks through __free_pages_core()), then
    /// init_per_zone_wmark_min() and setup_per_cpu_pageset().
    pub fn boot(machine: &Machine, kcfg: &KernelCfg, cost: &Cost) -> Mm {
        let nr_nodes = machine.nodes as usize;
        let nr_cpus = machine.cpus as usize;
        let per_node = per_node_frames(machine);
        let nr_frames = nr_frames(machine);
        let grouping = kcfg.mobility_grouping;
        let boot_mt = if grouping {
            MigrateType::Movable
        } else {
            MigrateType::Unmovable
        };

        let mut zones: Vec<Zone> = Vec::new();
        let mut nodes: Vec<PgData> = Vec::new();
        let mut pageblock_zone = vec![0u16; (nr_frames >> PAGEBLOCK_ORDER) as usize];
        let cpu_to_node: Vec<usize> = (0..nr_cpus).map(|c| c * nr_nodes / nr_cpus).collect();
        for nid in 0..nr_nodes {
            let start = nid as u64 * per_node;
            let end = start + per_node;
            let mut zids = [0usize; MAX_NR_ZONES];
            for zt in ZoneType::ALL {
                let (lo, hi) = match zt {
                    ZoneType::Dma => (0, DMA32_START_PFN),
                    ZoneType::Dma32 => (DMA32_START_PFN, NORMAL_START_PFN),
                    ZoneType::Normal => (NORMAL_START_PFN, u64::MAX),
                };
                let zs = start.max(lo);
                let ze = end.min(hi);
                let spanned = ze.saturating_sub(zs);
                let id = zones.len();
                zids[zt as usize] = id;
                for pb in (zs >> PAGEBLOCK_ORDER)..(ze.max(zs) >> PAGEBLOCK_ORDER) {
                    pageblock_zone[pb as usize] = id as u16;
                }
                zones.push(Zone {
                    id,
                    nid,
                    zone_type: zt,
                    zone_start_pfn: if spanned > 0 { zs as Pfn } else { 0 },
                    spanned_pages: spanned,
                    present_pages: spanned,
                    managed_pages: 0,
                    watermark: [0; 4],
                    watermark_boost: 0,
                    boosted_watermark: false,
                    lowmem_reserve: [0; MAX_NR_ZONES],
                    nr_reserved_highatomic: 0,
                    nr_free_highatomic: 0,
                    free_area: Default::default(),
                    nr_free_mt: [0; MIGRATE_TYPES],
                    lock: ContendedLock::new(),
                    vm_stat: [0; ZoneStat::COUNT],
                });
            }
            nodes.push(PgData {
                node_id: nid,
                node_start_pfn: start as Pfn,
                node_spanned_pages: per_node,
                zones: zids,
                cpus: (0..nr_cpus).filter(|&c| cpu_to_node[c] == nid).collect(),
                vm_stat: [0; super::vmstat_items::NodeStat::COUNT],
                lruvec: Default::default(),
                kswapd_order: 0,
                kswapd_highest_zoneidx: MAX_NR_ZONES,
                kswapd_failures: 0,
                pgfree_at_failure: 0,
                kswapd_sleeping: false,
                kswapd_wait: usize::MAX,
                pgdat_dirty: false,
                pgdat_writeback: false,
                lruvec_congested: false,
            });
        }

        // Zonelists (build_zonelists): the local node's zones from highest_zoneidx
        // down, then the other nodes' in order of distance (ring order here).
        let mut zonelists = Vec::with_capacity(nr_nodes * MAX_NR_ZONES);
        for nid in 0..nr_nodes {
            for hz in 0..MAX_NR_ZONES {
                let mut list = Vec::new();
                for k in 0..nr_nodes {
                    let n = (nid + k) % nr_nodes;
                    for zt in (0..=hz).rev() {
                        let z = nodes[n].zones[zt];
                        if zones[z].populated() {
                            list.push(z);
                        }
                    }
                }
                zonelists.push(list);
            }
        }
        // ZONELIST_NOFALLBACK (__GFP_THISNODE): the node's own zones only.
        for node in &nodes {
            for hz in 0..MAX_NR_ZONES {
                let list = (0..=hz)
                    .rev()
                    .map(|zt| node.zones[zt])
                    .filter(|&z| zones[z].populated())
                    .collect();
                zonelists.push(list);
            }
        }

        let pb_stat =
            super::pageblock_stat::PageblockStat::new(zones.len(), &pageblock_zone, boot_mt);
        let deferred = super::deferred::Deferred::new(nr_frames, zones.len(), boot_mt);
        let mut mm = Mm {
            // Frames are written when boot frees or reserves them: a free MAX_PAGE_ORDER
            // block's frames only when it is first used (mm/deferred.rs).
            map: super::memmap::MemMap::zeroed(nr_frames as usize),
            pageblock_mt: vec![boot_mt as u8; (nr_frames >> PAGEBLOCK_ORDER) as usize],
            pageblock_zone,
            pb_stat,
            zones,
            nodes,
            pcp: Vec::new(),
            nr_cpus,
            cpu_to_node,
            zonelists,
            events: [0; Event::COUNT],
            numa: [0; NumaStat::COUNT],
            frag: FragStats::default(),
            grouping,
            min_free_kbytes: 0,
            kcfg: kcfg.clone(),
            cost: cost.clone(),
            cur: Default::default(),
            tracer: None,
            kmem_trace: false,
            lru_batch: vec![0; nr_cpus],
            memcg: super::memcontrol::MemcgState::new(nr_nodes),
            shuffle: None,
            deferred,
        };

        let reserved = memblock_reserved(machine);
        for &(s, e) in &reserved {
            mm.reserve_range(s, e);
        }
        let mut free_ranges = Vec::new();
        let mut cur = 0u64;
        for &(s, e) in &reserved {
            if s > cur {
                free_ranges.push((cur, s));
            }
            cur = cur.max(e);
        }
        if cur < nr_frames {
            free_ranges.push((cur, nr_frames));
        }
        for (s, e) in free_ranges {
            // Split at zone boundaries so each chunk lies in one zone.
            let mut a = s;
            while a < e {
                let zid = mm.page_zone(a as Pfn);
                let zend = mm.zones[zid].zone_end_pfn() as u64;
                let b = e.min(zend);
                mm.memblock_free_range(zid, a, b);
                a = b;
            }
        }
        mm.min_free_kbytes = if kcfg.min_free_kbytes > 0 {
            kcfg.min_free_kbytes
        } else {
            mm.calculate_min_free_kbytes()
        };
        mm.setup_per_zone_wmarks();
        if kcfg.min_free_kbytes == 0 && kcfg.thp_enabled != crate::config::ThpEnabled::Never {
            // khugepaged starts with THP enabled and raises the reserve for it.
            mm.set_recommended_min_free_kbytes();
        }
        mm.setup_per_zone_lowmem_reserve();
        mm.setup_per_cpu_pageset();
        mm
    }

    /// Frees [start, end) of one zone to the buddy lists in the largest aligned chunks
    /// (__free_pages_memory), each to the lists' tail under `kernel.boot_free_to_tail`
    /// (__free_pages_core's FPI_TO_TAIL), else to their head; a MAX_PAGE_ORDER chunk
    /// without writing its frames yet ([`Mm::defer_free_block`]).
    fn memblock_free_range(&mut self, zid: usize, start: u64, end: u64) {
        let to_tail = self.kcfg.rules().boot_free_to_tail;
        let mut s = start;
        while s < end {
            let mut order = (MAX_PAGE_ORDER as u32).min(s.trailing_zeros());
            while s + (1u64 << order) > end {
                order -= 1;
            }
            self.zones[zid].managed_pages += 1 << order;
            if order as usize == MAX_PAGE_ORDER {
                // To the tail or the head, as __free_one_page puts such a block at boot.
                self.defer_free_block(zid, s as Pfn, to_tail);
            } else {
                self.map[s as usize..(s + (1 << order)) as usize].fill(FREE_FRAME);
                let mt = self.get_pageblock_migratetype(s as Pfn);
                self.__free_one_page(zid, s as Pfn, order as usize, mt, to_tail);
            }
            s += 1 << order;
        }
    }
}

/// An 8 GiB one-CPU machine booted with the `[kernel]` lines `kernel` (for tests).
#[cfg(test)]
pub(crate) fn boot_8gib(kernel: &str) -> Mm {
    let sc = crate::config::Scenario::from_toml(&format!(
        "[machine]\nmemory=\"8GiB\"\ncpus=1\n[kernel]\n{kernel}\n"
    ))
    .unwrap();
    Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
}

/// Frames of a machine: whole nodes of a NODE_ALIGN_PAGES multiple each [frames].
pub fn nr_frames(machine: &Machine) -> u64 {
    per_node_frames(machine) * machine.nodes as u64
}

/// Frames of one node [frames].
fn per_node_frames(machine: &Machine) -> u64 {
    let total_pages = machine.memory.0 / PAGE_SIZE;
    (total_pages / machine.nodes as u64) / NODE_ALIGN_PAGES * NODE_ALIGN_PAGES
}

/// memblock's reserved ranges [start, end) of frames, sorted: firmware pages at the bottom
/// of DMA, the kernel image at 16 MiB (CONFIG_PHYSICAL_START), each node's memmap (64 bytes
/// per frame) at the top of the node (memblock allocates top-down).
pub fn memblock_reserved(machine: &Machine) -> Vec<(u64, u64)> {
    let per_node = per_node_frames(machine);
    let nr_frames = nr_frames(machine);
    let mut reserved: Vec<(u64, u64)> = vec![(0, DMA_FIRMWARE_PAGES.min(per_node))];
    let image = machine.reserved.0.div_ceil(PAGE_SIZE);
    reserved.push((DMA32_START_PFN, DMA32_START_PFN + image));
    for nid in 0..machine.nodes as u64 {
        let end = (nid + 1) * per_node;
        let memmap = (per_node * 64).div_ceil(PAGE_SIZE);
        reserved.push((end - memmap, end));
    }
    reserved.sort();
    for r in &mut reserved {
        *r = (r.0.min(nr_frames), r.1.min(nr_frames));
    }
    reserved
}
