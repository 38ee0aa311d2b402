//! Nodes, zones, free areas, migratetypes and watermarks.
//!
//! Models include/linux/mmzone.h (`struct zone`, `struct free_area`,
//! `enum migratetype`, `enum zone_type`, `pg_data_t`) and
//! include/linux/pageblock-flags.h. Simplifications: x86-64 zone layout only
//! (DMA below 16 MiB, DMA32 below 4 GiB, Normal above, no PCI hole); no CMA,
//! no ZONE_MOVABLE or ZONE_DEVICE.

use super::page::{ListHead, Pfn};
use crate::engine::lock::ContendedLock;

/// Largest buddy order (MAX_PAGE_ORDER, inclusive).
pub const MAX_PAGE_ORDER: usize = 10;
/// Number of buddy orders (NR_PAGE_ORDERS).
pub const NR_PAGE_ORDERS: usize = MAX_PAGE_ORDER + 1;
/// pageblock_order on x86-64 (HPAGE_PMD_ORDER).
pub const PAGEBLOCK_ORDER: usize = 9;
/// Pages in a pageblock (pageblock_nr_pages).
pub const PAGEBLOCK_NR_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// Orders above this are "costly" (PAGE_ALLOC_COSTLY_ORDER).
pub const PAGE_ALLOC_COSTLY_ORDER: usize = 3;

/// Mobility type of a pageblock or a free list (enum migratetype).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MigrateType {
    /// MIGRATE_UNMOVABLE: kernel allocations that never move.
    Unmovable = 0,
    /// MIGRATE_MOVABLE: user and page-cache pages that reclaim or migration can move.
    Movable = 1,
    /// MIGRATE_RECLAIMABLE: slab caches with shrinkers (dentries, inodes).
    Reclaimable = 2,
    /// MIGRATE_HIGHATOMIC: blocks reserved for high-order atomic allocations.
    HighAtomic = 3,
    /// MIGRATE_ISOLATE: blocks isolated for compaction or offlining.
    Isolate = 4,
}

/// Number of migratetypes (MIGRATE_TYPES, no CMA).
pub const MIGRATE_TYPES: usize = 5;
/// Types with per-CPU lists and fallbacks (MIGRATE_PCPTYPES).
pub const MIGRATE_PCPTYPES: usize = 3;

impl MigrateType {
    /// All types in enum order.
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Isolate,
    ];

    /// The name /proc/pagetypeinfo prints (migratetype_names[]).
    pub fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// Converts from the stored byte.
    #[inline(always)]
    pub fn from_u8(v: u8) -> MigrateType {
        Self::ALL[v as usize]
    }

    /// Whether buddies of this type may merge across pageblocks (migratetype_is_mergeable).
    pub fn is_mergeable(self) -> bool {
        (self as usize) < MIGRATE_PCPTYPES
    }
}

/// The fallback table of mm/page_alloc.c (`fallbacks[MIGRATE_PCPTYPES][MIGRATE_PCPTYPES - 1]`).
pub const FALLBACKS: [[MigrateType; MIGRATE_PCPTYPES - 1]; MIGRATE_PCPTYPES] = [
    [MigrateType::Reclaimable, MigrateType::Movable],
    [MigrateType::Reclaimable, MigrateType::Unmovable],
    [MigrateType::Unmovable, MigrateType::Movable],
];

/// Zone types (enum zone_type) present on x86-64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ZoneType {
    /// ZONE_DMA: below 16 MiB.
    Dma = 0,
    /// ZONE_DMA32: below 4 GiB.
    Dma32 = 1,
    /// ZONE_NORMAL: the rest.
    Normal = 2,
}

/// Number of zone types per node.
pub const MAX_NR_ZONES: usize = 3;

impl ZoneType {
    /// All zone types, lowest first.
    pub const ALL: [ZoneType; MAX_NR_ZONES] = [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal];

    /// Name as /proc/buddyinfo prints it (zone_names[]).
    pub fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
        }
    }
}

/// Watermark indices (enum zone_watermarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wmark {
    /// WMARK_MIN.
    Min = 0,
    /// WMARK_LOW.
    Low = 1,
    /// WMARK_HIGH.
    High = 2,
    /// WMARK_PROMO.
    Promo = 3,
}

/// Free blocks of one order (struct free_area), one list per migratetype.
#[derive(Debug, Clone, Default)]
pub struct FreeArea {
    /// free_list[MIGRATE_TYPES].
    pub free_list: [ListHead; MIGRATE_TYPES],
    /// Blocks on each list (the kernel keeps one nr_free; per-type counts make
    /// /proc/pagetypeinfo O(1)).
    pub nr_free_mt: [u64; MIGRATE_TYPES],
    /// Blocks on all lists (nr_free).
    pub nr_free: u64,
}

/// Per-CPU page lists of one zone on one CPU (struct per_cpu_pages), order 0 only.
#[derive(Debug, Clone, Default)]
pub struct PerCpuPages {
    /// Pages on each list (V19's per-list count[]); their sum is today's pcp->count.
    pub counts: [u32; MIGRATE_PCPTYPES],
    /// Drain to the buddy lists when count reaches this (high).
    pub high: u32,
    /// Pages moved to or from the buddy lists at once (batch).
    pub batch: u32,
    /// One list per pcp migratetype (lists[]).
    pub lists: [ListHead; MIGRATE_PCPTYPES],
}

impl PerCpuPages {
    /// Pages on all lists (pcp->count).
    #[inline]
    pub fn count(&self) -> u32 {
        self.counts.iter().sum()
    }
}

/// A zone (struct zone).
#[derive(Debug)]
pub struct Zone {
    /// Index of this zone in the machine's zone table.
    pub id: usize,
    /// Node it belongs to.
    pub nid: usize,
    /// DMA, DMA32 or Normal.
    pub zone_type: ZoneType,
    /// First frame (zone_start_pfn).
    pub zone_start_pfn: Pfn,
    /// Frames spanned (spanned_pages).
    pub spanned_pages: u64,
    /// Frames present (present_pages).
    pub present_pages: u64,
    /// Frames given to the buddy allocator (managed_pages).
    pub managed_pages: u64,
    /// _watermark[NR_WMARK] [pages].
    pub watermark: [u64; 4],
    /// watermark_boost [pages].
    pub watermark_boost: u64,
    /// ZONE_BOOSTED_WATERMARK: a boost was raised and kswapd is still to be woken for it.
    pub boosted_watermark: bool,
    /// lowmem_reserve[MAX_NR_ZONES] [pages].
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    /// nr_reserved_highatomic [pages].
    pub nr_reserved_highatomic: u64,
    /// nr_free_highatomic [pages].
    pub nr_free_highatomic: u64,
    /// free_area[NR_PAGE_ORDERS].
    pub free_area: [FreeArea; NR_PAGE_ORDERS],
    /// Free pages on each migratetype's lists (per-migratetype accounting of v6.10+).
    pub nr_free_mt: [u64; MIGRATE_TYPES],
    /// zone->lock.
    pub lock: ContendedLock,
    /// vm_stat[NR_VM_ZONE_STAT_ITEMS].
    pub vm_stat: [i64; super::vmstat::ZoneStat::COUNT],
}

impl Zone {
    /// One past the last frame (zone_end_pfn); 2^32 for the last zone of a 16 TiB machine.
    pub fn zone_end_pfn(&self) -> Pfn {
        self.zone_start_pfn + self.spanned_pages
    }

    /// Whether the zone has memory (populated_zone).
    pub fn populated(&self) -> bool {
        self.present_pages > 0
    }

    /// Whether `pfn` lies in the zone (zone_spans_pfn).
    #[inline(always)]
    pub fn spans(&self, pfn: Pfn) -> bool {
        pfn >= self.zone_start_pfn && pfn < self.zone_end_pfn()
    }

    /// A watermark including the boost (wmark_pages) [pages].
    #[inline(always)]
    pub fn wmark_pages(&self, w: Wmark) -> u64 {
        self.watermark[w as usize] + self.watermark_boost
    }

    /// Free pages (zone_page_state(zone, NR_FREE_PAGES)).
    #[inline(always)]
    pub fn free_pages(&self) -> i64 {
        self.vm_stat[super::vmstat::ZoneStat::NR_FREE_PAGES as usize]
    }
}

/// LRU list indices (enum lru_list).
pub mod lru {
    /// LRU_INACTIVE_ANON.
    pub const INACTIVE_ANON: usize = 0;
    /// LRU_ACTIVE_ANON.
    pub const ACTIVE_ANON: usize = 1;
    /// LRU_INACTIVE_FILE.
    pub const INACTIVE_FILE: usize = 2;
    /// LRU_ACTIVE_FILE.
    pub const ACTIVE_FILE: usize = 3;
    /// LRU_UNEVICTABLE.
    pub const UNEVICTABLE: usize = 4;
    /// NR_LRU_LISTS.
    pub const NR_LRU_LISTS: usize = 5;
    /// Whether a list holds file pages (is_file_lru).
    pub const fn is_file_lru(l: usize) -> bool {
        l == INACTIVE_FILE || l == ACTIVE_FILE
    }
    /// Whether a list is an active list (is_active_lru).
    pub const fn is_active_lru(l: usize) -> bool {
        l == ACTIVE_ANON || l == ACTIVE_FILE
    }
}

/// The LRU lists of a node (struct lruvec).
#[derive(Debug, Default)]
pub struct Lruvec {
    /// lists[NR_LRU_LISTS], most recently added at the head.
    pub lists: [ListHead; lru::NR_LRU_LISTS],
    /// Pages on each list.
    pub nr: [u64; lru::NR_LRU_LISTS],
    /// lruvec->lru_lock.
    pub lru_lock: ContendedLock,
    /// Recent cost of reclaiming anon pages (lruvec->anon_cost).
    pub anon_cost: u64,
    /// Recent cost of reclaiming file pages (lruvec->file_cost).
    pub file_cost: u64,
    /// Scan work carried to the next pass, per list (zone->nr_scan_active/inactive, classic scan).
    pub nr_scan: [u64; lru::NR_LRU_LISTS],
    /// Evictions and activations so far, the clock of refault distances (nonresident_age) [pages].
    pub nonresident_age: u64,
}

/// A NUMA node (pg_data_t).
#[derive(Debug)]
pub struct PgData {
    /// Node id.
    pub node_id: usize,
    /// First frame.
    pub node_start_pfn: Pfn,
    /// Frames spanned.
    pub node_spanned_pages: u64,
    /// Indices of this node's zones in the machine's zone table, by ZoneType.
    pub zones: [usize; MAX_NR_ZONES],
    /// CPUs on this node.
    pub cpus: Vec<usize>,
    /// vm_stat[NR_VM_NODE_STAT_ITEMS].
    pub vm_stat: [i64; super::vmstat::NodeStat::COUNT],
    /// The node's LRU lists (pgdat->__lruvec).
    pub lruvec: Lruvec,
    /// Order kswapd is asked to reclaim for (kswapd_order).
    pub kswapd_order: usize,
    /// Highest zone kswapd must balance, MAX_NR_ZONES when unset (kswapd_highest_zoneidx).
    pub kswapd_highest_zoneidx: usize,
    /// Consecutive kswapd runs that reclaimed nothing (kswapd_failures).
    pub kswapd_failures: u32,
    /// pgfree when kswapd last failed: 2.6.2x cleared zone->all_unreclaimable on any free.
    pub pgfree_at_failure: u64,
    /// Whether kswapd is asleep on kswapd_wait (waitqueue_active).
    pub kswapd_sleeping: bool,
    /// Wait queue id of kswapd_wait.
    pub kswapd_wait: usize,
    /// PGDAT_DIRTY: reclaim met many dirty file pages not queued for I/O.
    pub pgdat_dirty: bool,
    /// PGDAT_WRITEBACK: reclaim met many pages under writeback.
    pub pgdat_writeback: bool,
    /// LRUVEC_NODE_CONGESTED: kswapd found every dirty page it met queued for writeback.
    pub lruvec_congested: bool,
}
