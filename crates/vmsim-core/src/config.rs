//! The scenario: machine, kernel (sysctls and patch switches), cost model and workload.
//!
//! Every knob is declared once here with its default, unit and a one-line
//! description; `vmsim knobs` and docs/knobs.md are generated from
//! [`knob_table`]. Keys use the kernel's sysctl names where one exists.
//! Unknown keys are errors (`deny_unknown_fields`), never silently ignored.

use crate::error::{Error, Result};
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};

/// One documented knob: where it lives, its unit and what it means.
#[derive(Debug, Clone, Serialize)]
pub struct Knob {
    /// TOML table the key belongs to (`machine`, `kernel`, `cost`, …).
    pub section: &'static str,
    /// The key as written in a scenario.
    pub name: &'static str,
    /// Unit in brackets as printed in docs (`[pages]`, `[ns]`, `[bool]`).
    pub unit: &'static str,
    /// One-line description.
    pub doc: &'static str,
    /// The largest value validation accepts, in the knob's unit (bytes, ns, count); None
    /// when the type bounds it (bool, policy, text).
    pub max: Option<u64>,
}

/// A knob's value as the number its maximum is compared with.
pub trait KnobValue {
    /// The value in the knob's unit (bytes, ns, count).
    fn raw(&self) -> u64;
}

impl KnobValue for u64 {
    fn raw(&self) -> u64 {
        *self
    }
}

impl KnobValue for u32 {
    fn raw(&self) -> u64 {
        *self as u64
    }
}

impl KnobValue for Bytes {
    fn raw(&self) -> u64 {
        self.0
    }
}

impl KnobValue for Nanos {
    fn raw(&self) -> u64 {
        self.0
    }
}

impl Knob {
    /// The maximum as a scenario writes it (`8TiB`, `1s`, `1000000`).
    pub fn max_text(&self) -> Option<String> {
        self.max.map(|m| match self.unit {
            "[bytes]" => Bytes(m).to_string(),
            "[time]" => Nanos(m).to_string(),
            _ => m.to_string(),
        })
    }

    /// What is wrong with a value above the maximum: `kernel.swappiness = 300 is above the
    /// maximum 200`, or for a key of an array table `count: 5000000 is above the maximum
    /// 1000000` (the caller names the table); None when it is within.
    pub fn exceeds(&self, value: u64, shown: &dyn std::fmt::Display) -> Option<String> {
        self.max.filter(|&m| value > m)?;
        let key = if self.section.starts_with('[') {
            format!("{}:", self.name)
        } else if self.section.is_empty() {
            format!("{} =", self.name)
        } else {
            format!("{}.{} =", self.section, self.name)
        };
        Some(format!(
            "{key} {} is above the maximum {}",
            clip(&shown.to_string()),
            self.max_text().unwrap_or_default()
        ))
    }

    /// [`Knob::exceeds`] as an error.
    pub fn check(&self, value: u64, shown: &dyn std::fmt::Display) -> Result<()> {
        match self.exceeds(value, shown) {
            Some(msg) => Err(Error::Invalid(msg)),
            None => Ok(()),
        }
    }
}

/// At most 60 characters of a user's text in a message, then `…`.
pub fn clip(s: &str) -> String {
    const KEEP: usize = 60;
    match s.char_indices().nth(KEEP) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A knob's declared maximum, or None.
macro_rules! knob_max {
    () => {
        None
    };
    ($max:expr) => {
        Some($max)
    };
}

/// Declares a config section once: fields, defaults, units and docs together.
macro_rules! section {
    ($(#[$m:meta])* $name:ident, $sect:literal { $( #[doc = $doc:literal] $field:ident : $ty:ty = $default:expr, $unit:literal $(, max $max:expr)?; )* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $( #[doc = $doc] pub $field: $ty, )*
        }
        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }
        impl $name {
            /// The documented knobs of this section.
            pub const KNOBS: &'static [Knob] = &[
                $( Knob { section: $sect, name: stringify!($field), unit: $unit, doc: $doc,
                          max: knob_max!($($max)?) }, )*
            ];

            /// Refuses any value above its knob's declared maximum.
            pub fn check_maxima(&self) -> Result<()> {
                #[allow(unused_variables)]
                for k in Self::KNOBS {
                    $( $( if k.name == stringify!($field) {
                        let _: u64 = $max;
                        k.check(KnobValue::raw(&self.$field), &self.$field)?;
                    } )? )*
                }
                Ok(())
            }
        }
    };
}

/// Declares [`Scenario`]: its own fields, then the workload kinds registered beside
/// `[[task]]` (one `name: SpecType` line each), which become `[[name]]` tables with
/// their validation and spawning.
macro_rules! scenario {
    (
        $(#[$m:meta])* pub struct $s:ident { $($core:tt)* }
        workloads { $( #[doc = $doc:literal] $name:ident : $spec:ty, )* }
    ) => {
        $(#[$m])*
        pub struct $s {
            $($core)*
            $( #[doc = $doc] #[serde(default)] pub $name: Vec<$spec>, )*
        }
        impl $s {
            /// Checks every registered workload table; returns the tasks they create.
            fn validate_workloads(&self) -> Result<u64> {
                #[allow(unused_mut)]
                let mut tasks = 0u64;
                $( for (i, w) in self.$name.iter().enumerate() {
                    let n = crate::workload::WorkloadSpec::validate(w, i, &self.machine)?;
                    tasks = tasks.saturating_add(n);
                } )*
                Ok(tasks)
            }
            /// Tasks the registered workload tables start (saturating; 0 for an invalid table).
            fn workload_tasks(&self) -> u64 {
                #[allow(unused_mut)]
                let mut tasks = 0u64;
                $( for (i, w) in self.$name.iter().enumerate() {
                    let n = crate::workload::WorkloadSpec::validate(w, i, &self.machine).unwrap_or(0);
                    tasks = tasks.saturating_add(n);
                } )*
                tasks
            }
            /// Registers the tasks of every registered workload table with the engine.
            pub fn spawn_workloads(&self, eng: &mut crate::kernel::Engine) {
                $( for w in &self.$name {
                    crate::workload::WorkloadSpec::spawn(w, self, eng);
                } )*
            }
        }
    };
}

section! {
    /// The simulated machine.
    Machine, "machine" {
        /// Total RAM, split evenly across NUMA nodes (x86-64 layout: DMA < 16MiB, DMA32 < 4GiB, Normal above).
        memory: Bytes = Bytes(8 << 30), "[bytes]", max MAX_MEMORY;
        /// Number of CPUs, spread evenly across nodes.
        cpus: u32 = 8, "[count]", max 4096;
        /// Number of NUMA nodes with memory.
        nodes: u32 = 1, "[count]", max 64;
        /// Memory reserved at boot and never given to the buddy allocator, besides the memmap (kernel image, firmware).
        reserved: Bytes = Bytes(32 << 20), "[bytes]", max MAX_MEMORY / 2;
        /// The free lists start mixed, as on a machine that has been up a while rather than one just booted: the free max-order blocks of every zone swap places on their lists at random once before the run (mm/shuffle.c's __shuffle_zone), so the first allocations land anywhere in the zone and not in pfn order; later frees are not shuffled (unless kernel.shuffle_page_alloc). vmsim fidelity sets it from the allocation probe of each recording (docs/fidelity.md).
        mixed_free_lists: bool = false, "[bool]";
        /// A swap file "/swapfile" of this size on the disk, the first swap device (automatic priority -2); 0 for none. `[[swap]]` tables add files and partitions with priorities.
        swap: Bytes = Bytes(0), "[bytes]", max MAX_SWAP;
    }
}

section! {
    /// The kernel: sysctls and the switches that select the seeds' patches.
    Kernel, "kernel" {
        /// Name printed in reports and comparison tables.
        name: String = "default".to_string(), "[text]";
        /// Which kernel's rules the per-mechanism switches below default to: "6.18" (today's) or "6.1" (the 6.1 LTS, docs/kernel-6.1.md); a switch set explicitly overrides its version default.
        version: KernelVersion = KernelVersion::V6_18, "[version]";
        /// try_charge_memcg() charges a batch of MEMCG_CHARGE_BATCH (64) pages, keeps the rest in a per-CPU stock (consume_stock, refill_stock) and retries a single page when the batch fails. Version default: on for 6.1 and 6.18 (with large page-cache folios, 6.18's folios of more than 64 pages are charged whole: max(MEMCG_CHARGE_BATCH, nr_pages)).
        memcg_charge_batch: Option<bool> = None, "[bool]";
        /// A read fault on untouched anonymous memory maps the shared zero page (do_anonymous_page without FAULT_FLAG_WRITE): no page is allocated, zeroed or charged and RSS does not grow; the first write then gives the task a zeroed page of its own (do_wp_page → wp_page_copy). false: every first touch allocates a page (as 2.6.24–2.6.31, which had no ZERO_PAGE). Version default: on for 6.18 and 6.1.
        zero_page: Option<bool> = None, "[bool]";
        /// How reclaim walks the memory cgroups below its target (shrink_node_memcgs): "cookie" (6.11 on: direct and limit reclaim resume where the last walk stopped and stop once they have enough, kswapd walks in full), "full" (5.5–6.10: every walk visits the whole subtree) or "restart" (vmsim's earlier model, kept for the seeds' kernels: each walk starts at the target, limit reclaim stops once it has enough). Version default: 6.18 cookie, 6.1 full.
        memcg_reclaim_iter: Option<MemcgReclaimIter> = None, "[walk]";
        /// Large folios in the page cache of files (ext4 since 6.16, ext4_set_inode_mapping_order): buffered writes create folios of the order their length and alignment ask for (write_begin_get_folio, up to EXT4_MAX_PAGECACHE_ORDER 9) and readahead folios of growing order (page_cache_ra_order); each folio is charged, on the LRU, written back, reclaimed and freed as one unit. false: every page-cache folio is one page. Version default: 6.18 on, 6.1 off.
        large_folios: Option<bool> = None, "[bool]";
        /// Memory freed to the buddy allocator at boot goes to the tail of the free lists (__free_pages_core with FPI_TO_TAIL, since 5.10), in ascending pfn order, so allocations take the lowest pfns first. false: to the head (__free_pages_bootmem → __free_pages of the seed-era kernels), so they take the highest first. Version default: on for 6.18 and 6.1.
        boot_free_to_tail: Option<bool> = None, "[bool]";
        /// Compaction's free scanner samples pageblocks (5.1's "sample pageblocks for free pages"): it looks at every stride-th frame of a block, the stride starting at 1 in synchronous compaction and COMPACT_CLUSTER_MAX (32) in asynchronous, doubling after each block that gave nothing (up to 32) and back to 1 after one that gave something (isolate_freepages). false: every frame of every block, as the seed-era kernels (5.0 and before). Version default: on for 6.18 and 6.1.
        compaction_free_stride: Option<bool> = None, "[bool]";
        /// Compaction's free-list searches and skip hints of 5.1 (the "increase success rates and reduce latency of compaction" series): for costly orders the migrate scanner starts in a block that already has free pages (fast_find_migrateblock) and the free scanner takes a page off the free lists, round-robin by order, and the rest of its block (fast_isolate_freepages, fast_isolate_around); a scan marks its block skipped as soon as it isolates a folio (test_and_set_skip); a batch in the block the last one came from, or after a failed migration part-way through a block, finishes the block (finish_pageblock); the skip-bit reset walks in from the zone's ends and restarts the scanners at the blocks it found (__reset_isolation_suitable). false: linear scanners only, every skip bit cleared by a reset and the scanners back at the zone's ends, as the seed-era kernels (5.0 and before). Version default: on for 6.18 and 6.1.
        compaction_fast_search: Option<bool> = None, "[bool]";
        /// Every fallback below pageblock order boosts the watermarks, movable allocations' steals of single pages included: 5.0–6.14's steal_suitable_fallback calls boost_watermark() before it looks at the whole block. false: 6.15+'s __rmqueue_steal takes a page without boosting, only try_to_claim_block (unmovable and reclaimable requests, movable ones of order ≥ pageblock_order / 2) boosts. Version default: 6.18 off, 6.1 on.
        boost_on_steal: Option<bool> = None, "[bool]";
        /// Page allocator randomization (page_alloc.shuffle=1, CONFIG_SHUFFLE_PAGE_ALLOCATOR, mm/shuffle.c): at boot the free max-order blocks of every zone swap places on their lists at random (__shuffle_zone), and a freed max-order block goes to the head or the tail at random (shuffle_pick_tail), so allocations land anywhere in the zone, as on a machine whose free lists years of frees have mixed. Off by default, as in the kernel.
        shuffle_page_alloc: bool = false, "[bool]";
        /// On-demand readahead (mm/readahead.c): windows that start at get_init_ra_size() of the read's size and ramp with get_next_ra_size() up to the disk's read_ahead_kb, the next one started asynchronously from the PG_readahead folio. false: every miss reads a fixed window of 32 pages synchronously (vmsim's earlier model, kept for the seeds' kernels). Version default: on for 6.18 and 6.1.
        ondemand_readahead: Option<bool> = None, "[bool]";
        /// Groups a CPU's charge stock holds at once (6.18: NR_MEMCG_STOCK = 7, a full stock evicts a random one; 6.1: 1, refill_stock drains it when another group refills). Needs memcg_charge_batch.
        memcg_stock_groups: Option<u64> = None, "[groups]";
        /// Kernel memory charged to the memory cgroup (mm/memcontrol.c obj_cgroup): objects of SLAB_ACCOUNT caches (dentry, inode caches) and __GFP_ACCOUNT allocations (buffer_heads, user page tables) charged to the allocating task's group through the per-CPU byte stock (obj_stock_pcp), whole pages by try_charge_memcg, uncharged pages returned to the charge stock (refill_stock). false: only user pages are charged (the seed-era kernels). Version default: on for 6.18 and 6.1.
        memcg_kmem: Option<bool> = None, "[bool]";
        /// memory.memsw.failcnt counts the memsw limit's refusals: 6.1's page_counter_try_charge counts failcnt on every counter; 6.18 only on v1's memory counter (memory.track_failcnt), so memsw.failcnt stays 0. Version default: 6.18 off, 6.1 on.
        memsw_failcnt: Option<bool> = None, "[bool]";
        /// Reclaim cost for the anon/file balance counts rotations: 6.18's lru_note_cost_unlock_irq (I/O × SWAP_CLUSTER_MAX plus pages rotated, shrink_active_list too); false is 6.1's lru_note_cost (pages written out and refaulted only). Version default: 6.18 on, 6.1 off.
        lru_cost_rotations: Option<bool> = None, "[bool]";
        /// 6.1's per-CPU swap slot caches (mm/swap_slots.c: folio_alloc_swap takes slots from a per-CPU cache of 64 refilled by get_swap_pages; free_swap_slot returns them 64 at a time; off below 2 × 64 free slots per CPU). Version default: 6.18 off (no slot cache), 6.1 on.
        swap_slot_cache: Option<bool> = None, "[bool]";
        /// kswapd tags a node PGDAT_DIRTY (and may write file pages) only if it took unqueued dirty pages: 6.18's shrink_node (sc->nr.unqueued_dirty && … == file_taken); false is 6.1's, which also tags it when it took no file pages at all. Version default: 6.18 on, 6.1 off.
        pgdat_dirty_needs_unqueued: Option<bool> = None, "[bool]";
        /// Group pages by mobility (2.6.24+). false gives the single-free-list buddy allocator of 2.6.14 ('vanilla' in seed 003).
        mobility_grouping: bool = true, "[bool]";
        /// vm.min_free_kbytes; 0 computes it as calculate_min_free_kbytes() does.
        min_free_kbytes: u64 = 0, "[KiB]", max INT_MAX;
        /// vm.watermark_scale_factor: distance between watermarks in 1/10000 of the zone.
        watermark_scale_factor: u64 = 10, "[1/10000]", max 3000;
        /// vm.lowmem_reserve_ratio for DMA, DMA32, Normal.
        lowmem_reserve_ratio: Vec<u64> = vec![256, 256, 32], "[ratio]";
        /// vm.percpu_pagelist_high_fraction; 0 sizes pcp->high from the low watermark.
        percpu_pagelist_high_fraction: u64 = 0, "[fraction]", max INT_MAX;
        /// pcp->high as a multiple of pcp->batch, as the 2.6-era setup_pageset() set it (2.6.14: 8, its hot list's 6 plus its cold list's 2; seed 003's V19: 4); 0 keeps today's zone_highsize().
        pcp_high_batches: u64 = 0, "[batches]", max 64;
        /// Each per-CPU list drains at pcp->high by itself rather than all of a CPU's lists together (seed 003's V19 006_percpu, whose kernel and easy-reclaim lists each had their own count and high).
        pcp_high_per_list: bool = false, "[bool]";
        /// Reserve MIGRATE_HIGHATOMIC pageblocks for high-order atomic allocations (reserve_highatomic_pageblock).
        highatomic_reserve: bool = true, "[bool]";
        /// ALLOC_NOFRAGMENT for Normal-zone requests when DMA32 is populated (alloc_flags_nofragment, 5.0+).
        alloc_nofragment: bool = true, "[bool]";
        /// Number of order-0 pages of vmap'd kernel stack per task (THREAD_SIZE / PAGE_SIZE).
        kernel_stack_pages: u32 = 4, "[pages]", max 64;
        /// Let the OOM killer run when an allocation of order <= 3 cannot be satisfied.
        oom_killer: bool = true, "[bool]";
        /// vm.swappiness: relative cost of reclaiming anon against file pages (0..=200).
        swappiness: u64 = 60, "[0..200]", max 200;
        /// vm.page-cluster: swap readahead reads up to 2^page_cluster pages per fault (swapin_nr_pages; the VMA window is capped at 2^5, SWAP_RA_ORDER_CEILING); 0 turns swap readahead off.
        page_cluster: u64 = 3, "[log2 pages]", max 31;
        /// /sys/kernel/mm/swap/vma_ra_enabled: swap readahead by virtual address around the fault (swap_vma_readahead) when no swap device is on a rotational disk; false, or a rotational swap disk (disk.rotational), reads the aligned cluster of swap slots around it (swap_cluster_readahead).
        swap_vma_readahead: bool = true, "[bool]";
        /// /sys/module/zswap/parameters/enabled: swap-out compresses a page into zswap's pool in memory (zswap_store) before any device sees it, and a fault decompresses it (zswap_load); false is this machine's default (CONFIG_ZSWAP_DEFAULT_ON=n).
        zswap: bool = false, "[bool]";
        /// /sys/module/zswap/parameters/max_pool_percent: zswap's pool may hold at most this share of RAM (zswap_max_pages); at the limit stores go to the device and shrink_worker writes entries back.
        zswap_max_pool_percent: u64 = 20, "[%]", max 100;
        /// /sys/module/zswap/parameters/accept_threshold_percent: after the pool hit its limit, stores resume once it is under this share of the limit (zswap_accept_thr_pages); shrink_worker writes back down to it.
        zswap_accept_threshold_percent: u64 = 90, "[%]", max 100;
        /// zswap: a page's size over its compressed size (1 to 128); default 2.106, lzo1x 2.10 -1 on the Silesia corpus (facebook/zstd README's table) for this machine's compressor, lzo.
        zswap_comp_ratio: f64 = 2.106, "[ratio]";
        /// zswap: CPU time to compress a page; default 6302 ns (lzo1x -1 at 650 MB/s, same table).
        zswap_compress_ns: u64 = 6_302, "[ns]", max 1_000_000_000;
        /// zswap: CPU time to decompress a page; default 5251 ns (lzo1x at 780 MB/s, same table).
        zswap_decompress_ns: u64 = 5_251, "[ns]", max 1_000_000_000;
        /// Who writes dirty file pages met by reclaim: traceonly (2.6.35: direct reclaim and kswapd write them), nodirect (only kswapd), flushforward (nodirect + kick the flushers), modern (reclaim never writes them).
        reclaim_writeback: ReclaimWriteback = ReclaimWriteback::Modern, "[policy]";
        /// Who wakes the flusher threads from direct reclaim: unqueued_dirty (today's shrink_inactive_list: when every isolated page was dirty and not yet queued for writeback) or scanned (2.6.35's do_try_to_free_pages: after a pass that scanned more than 1.5 × the pages it wants, for as many pages as it scanned, and the pass may then write).
        reclaim_flusher_wakeup: FlusherWakeup = FlusherWakeup::UnqueuedDirty, "[policy]";
        /// 2.6-era naps: direct reclaim sleeps in congestion_wait(BLK_RW_ASYNC, HZ/10) between priorities after a pass that scanned (2.6.35's do_try_to_free_pages), and an allocation retried under alloc_retry = should_alloc_retry first sleeps congestion_wait(HZ/50). Today's kernels have neither (reclaim_throttle replaced them in 5.16).
        reclaim_congestion_wait: bool = false, "[bool]";
        /// When the allocator retries after direct reclaim: should_reclaim_retry (4.7+: up to MAX_RECLAIM_RETRIES passes without progress, while reclaimable memory could meet the watermark) or should_alloc_retry (2.6.35: orders <= 3 retry for as long as reclaim reports progress, and it reports progress unless every zone is all_unreclaimable; no progress means the OOM killer).
        alloc_retry: AllocRetry = AllocRetry::ShouldReclaimRetry, "[policy]";
        /// vm.nr_hugepages at boot: huge pages (2 MiB) of the hugetlb pool, allocated before any task runs (hugetlb_hstate_alloc_pages); the `nr_hugepages` operation changes it during a run.
        nr_hugepages: u64 = 0, "[pages]", max MAX_MEMORY / HPAGE_SIZE;
        /// Run a kswapd thread per node (false: only direct reclaim, as a test of the slow path).
        kswapd: bool = true, "[bool]";
        /// Gate on parallel direct reclaimers: off (any number, and none of today's throttles), limit (seed 000: at most reclaim_limit at once, the rest wait; none of today's throttles), modern (no count limit; today's reclaim_throttle() — NOPROGRESS, WRITEBACK, ISOLATED with too_many_isolated(), CONGESTED).
        reclaim_throttle: ReclaimThrottle = ReclaimThrottle::Modern, "[policy]";
        /// Direct reclaimers allowed at once under reclaim_throttle = "limit"; 0 means RECLAIM_LIMIT = 2 × nodes with memory.
        reclaim_limit: u64 = 0, "[tasks]", max MAX_TASKS;
        /// How a reclaim pass sizes its scan of each LRU list: modern (get_scan_count with swappiness and the proportional cut-off; active anon only deactivated when the inactive list is low) or classic (2.6.2x shrink_zone: every list, active ones included, scanned by (size >> priority) + 1 carried over in zone->nr_scan_*, with no cut-off).
        reclaim_scan: ReclaimScan = ReclaimScan::Modern, "[policy]";
        /// Drain every CPU's per-CPU lists when an allocation still fails after direct reclaim (drain_all_pages in today's __alloc_pages_direct_reclaim); false is 2.6.14 and seed 003's V19, whose __alloc_pages left per-CPU pages where they were (the drain came with the anti-fragmentation patches of November 2005 onwards).
        drain_pcp_on_failure: bool = true, "[bool]";
        /// Direct-reclaim passes an allocation of order >= 5 gets before it fails (highorder_retry of seed 003's 005_largealloc_tryharder: 3); 1 is every mainline kernel.
        highorder_retry: u64 = 1, "[passes]", max 16;
        /// Lumpy reclaim (2.6.23–3.x): for high orders, reclaim also takes the LRU neighbours of each page in its aligned block.
        lumpy_reclaim: bool = false, "[bool]";
        /// Working-set detection of evicted page-cache pages (mm/workingset.c, 3.15+): reclaim leaves a shadow entry; a page read back within the working set's size comes back active (workingset_refault_file, _activate_file, _restore_file). false is the kernels before 3.15.
        workingset: bool = true, "[bool]";
        /// Working-set detection of swapped-out anonymous pages (5.9+, needs workingset): reclaim leaves a shadow in the swap cache; a page read back from swap is judged by its refault distance (workingset_refault_anon, _activate_anon, _restore_anon) and comes back active only within the working set. false: every page read back from swap starts on the active list, counted as an activated refault.
        workingset_anon: bool = true, "[bool]";
        /// New anonymous pages start on the active list (do_anonymous_page's lru_cache_add_active before 2.6.28, lru_cache_add_active_or_unevictable to 5.8), and an inactive anonymous page found referenced is activated at once (page_check_references' PageSwapBacked rule); false: 5.9+, where they start inactive and a first reference only keeps them (lru_cache_add_inactive_or_unevictable).
        new_anon_active: bool = false, "[bool]";
        /// Run the disk's flusher thread (background and periodic writeback); false leaves dirty pages to reclaim.
        flusher: bool = true, "[bool]";
        /// CONFIG_HZ: timer ticks per second; throttling sleeps come in jiffies.
        hz: u64 = 250, "[1/s]", max 1000;
        /// vm.dirty_ratio: dirty page cache (as % of dirtyable memory) at which writers are throttled hard.
        dirty_ratio: u64 = 20, "[%]", max 100;
        /// vm.dirty_background_ratio: dirty page cache at which the flusher starts background writeback.
        dirty_background_ratio: u64 = 10, "[%]", max 100;
        /// vm.dirty_bytes: the hard dirty threshold as an amount; when set (at least two pages) it replaces dirty_ratio (domain_dirty_limits).
        dirty_bytes: Bytes = Bytes(0), "[bytes]", max i64::MAX as u64;
        /// vm.dirty_background_bytes: the background threshold as an amount; when set it replaces dirty_background_ratio.
        dirty_background_bytes: Bytes = Bytes(0), "[bytes]", max i64::MAX as u64;
        /// vm.dirty_expire_centisecs: age at which dirty data is written by periodic writeback.
        dirty_expire_centisecs: u64 = 3000, "[1/100 s]", max INT_MAX;
        /// vm.dirty_writeback_centisecs: interval of the flusher's periodic writeback.
        dirty_writeback_centisecs: u64 = 500, "[1/100 s]", max INT_MAX;
        /// vm.watermark_boost_factor: boost of the watermarks after a fragmenting fallback, in 1/10000 of the high mark; 0 turns boosting off ('lowzone' in seed 004).
        watermark_boost_factor: u64 = 15000, "[1/10000]", max 1_000_000;
        /// vm.vfs_cache_pressure: how hard the dentry and inode shrinkers scan, in percent of their unused objects (super_cache_count → vfs_pressure_ratio); 0 never reclaims them.
        vfs_cache_pressure: u64 = 100, "[%]", max INT_MAX;
        /// vm.compaction_proactiveness (5.9+): kcompactd checks every 500 ms, while kswapd sleeps, whether the node's fragmentation score (the share of free memory not in 2 MiB blocks, weighted by zone size) is above 100 − proactiveness + 10 and, if it is, compacts each zone whole until its score is down to 100 − proactiveness (should_proactive_compact_node, compact_node(pgdat, true)); a pass that lowers nothing waits 64 intervals. 0 turns it off, as in the seed-era kernels.
        compaction_proactiveness: u64 = 20, "[0..100]", max 100;
        /// vm.extfrag_threshold: fragmentation index (0..1000) at or below which a costly order is left to reclaim rather than compaction.
        extfrag_threshold: u64 = 500, "[0..1000]", max 1000;
        /// Memory compaction (CONFIG_COMPACTION): direct compaction for costly orders and kcompactd.
        compaction: bool = true, "[bool]";
        /// Run a kcompactd thread per node (woken by kswapd and by boosted reclaim; needs kswapd = true).
        kcompactd: bool = true, "[bool]";
        /// /sys/kernel/mm/transparent_hugepage/enabled: always, madvise (only MADV_HUGEPAGE regions) or never.
        thp_enabled: ThpEnabled = ThpEnabled::Madvise, "[policy]";
        /// /sys/kernel/mm/transparent_hugepage/defrag: always, defer, defer+madvise, madvise or never.
        thp_defrag: ThpDefrag = ThpDefrag::Madvise, "[policy]";
        /// Soft-limit reclaim of memory cgroups (seed 002): base (the soft-limit tree, largest excess reclaimed first at priority 0 from kswapd and direct reclaim; 3.11 and today's cgroup v1), rework (soft limit folded into the hierarchy walk of shrink_node, eligibility climbing to the root per group), reworkoptim (rework plus children_in_excess skipping subtrees).
        soft_limit_reclaim: SoftLimitReclaim = SoftLimitReclaim::Base, "[policy]";
        /// The filesystem files are created on: ext4 (6.18's default here: a create allocates an ext4_inode_cache object, a dentry and the inode-table, bitmap and directory blocks in the block device's page cache with their buffer_heads; written pages get buffer_heads; jbd2 journals the metadata, docs/ext4.md) xfs (4.20's XFS: a create allocates a dentry, an xfs_inode and its xfs_ili log item; inode chunks and directory blocks are xfs_bufs with unmovable pages of their own, freed by the buffer shrinker; docs/xfs.md) or bare (no filesystem metadata: a create allocates nothing, fio_write a dentry and an xfs_inode; the seed-era templates whose filesystem is not modelled).
        fs: Fs = Fs::Ext4, "[policy]";
        /// ext4's commit= mount option: jbd2 commits the running transaction this long after it started (j_commit_interval, JBD2_DEFAULT_MAX_COMMIT_AGE).
        ext4_commit: u64 = 5, "[s]", max 86_400;
        /// ext4 with a journal (mke2fs's default, has_journal): jbd2 journals the metadata and kjournald2 commits it. false: no journal, as on this project's machine kind (/sys/fs/ext4/vda/journal_task reads <none>): metadata blocks are dirtied in place (ext4_handle_dirty_metadata without a handle → mark_buffer_dirty) and written back by the flusher, there is no kjournald2, sync waits for no commit, and a new inode passes over free inodes deleted in the last 60 s (360 s while their inode-table block is dirty) (find_inode_bit → recently_deleted), each look costing cost.ext4_recently_deleted.
        ext4_journal: bool = true, "[bool]";
    }
}

/// The filesystem files live on (`kernel.fs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fs {
    /// ext4 with its journal (fs/ext4, fs/jbd2, fs/buffer.c): metadata in the block
    /// device's page cache, buffer_heads, journal commits.
    Ext4,
    /// XFS of 4.20 (fs/xfs): a create takes a dentry, an xfs_inode and its log item;
    /// inode chunks and directory blocks are metadata buffers with unmovable pages of
    /// their own, freed by the buffer shrinker (fs/xfs.rs).
    Xfs,
    /// No filesystem metadata (vmsim's older model, kept for the seeds whose filesystem
    /// is not modelled): a create allocates nothing, fio_write a dentry and an xfs_inode
    /// per file.
    Bare,
}

/// The kernel version whose rules the per-mechanism switches default to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KernelVersion {
    /// Linux 6.18, today's kernel.
    #[serde(rename = "6.18")]
    V6_18,
    /// Linux 6.1 LTS.
    #[serde(rename = "6.1")]
    V6_1,
}

impl KernelVersion {
    /// Every version with its name in scenarios.
    pub const ALL: [(&'static str, KernelVersion); 2] =
        [("6.18", KernelVersion::V6_18), ("6.1", KernelVersion::V6_1)];
}

impl<'de> Deserialize<'de> for KernelVersion {
    /// A version's name as a string; anything else names the known ones.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let known = "known: \"6.18\", \"6.1\"";
        let v = toml::Value::deserialize(d)?;
        let Some(name) = v.as_str() else {
            return Err(serde::de::Error::custom(format!(
                "{v} must be a string ({known})"
            )));
        };
        KernelVersion::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, k)| k)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("\"{name}\" is not a modelled kernel ({known})"))
            })
    }
}

/// The per-mechanism switches as one kernel version sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRules {
    /// `kernel.memcg_charge_batch`.
    pub memcg_charge_batch: bool,
    /// `kernel.zero_page`.
    pub zero_page: bool,
    /// `kernel.memcg_reclaim_iter`.
    pub memcg_reclaim_iter: MemcgReclaimIter,
    /// `kernel.memcg_stock_groups`.
    pub memcg_stock_groups: u64,
    /// `kernel.memcg_kmem`.
    pub memcg_kmem: bool,
    /// `kernel.memsw_failcnt`.
    pub memsw_failcnt: bool,
    /// `kernel.lru_cost_rotations`.
    pub lru_cost_rotations: bool,
    /// `kernel.pgdat_dirty_needs_unqueued`.
    pub pgdat_dirty_needs_unqueued: bool,
    /// `kernel.swap_slot_cache`.
    pub swap_slot_cache: bool,
    /// `kernel.large_folios`.
    pub large_folios: bool,
    /// `kernel.ondemand_readahead`.
    pub ondemand_readahead: bool,
    /// `kernel.boot_free_to_tail`.
    pub boot_free_to_tail: bool,
    /// `kernel.compaction_free_stride`.
    pub compaction_free_stride: bool,
    /// `kernel.compaction_fast_search`.
    pub compaction_fast_search: bool,
    /// `kernel.boost_on_steal`.
    pub boost_on_steal: bool,
}

impl KernelVersion {
    /// The switches' defaults under this version (docs/kernel-6.1.md, "The switches").
    pub const fn rules(self) -> VersionRules {
        match self {
            KernelVersion::V6_18 => VersionRules {
                memcg_charge_batch: true,
                zero_page: true,
                memcg_reclaim_iter: MemcgReclaimIter::Cookie,
                memcg_stock_groups: 7,
                memcg_kmem: true,
                memsw_failcnt: false,
                lru_cost_rotations: true,
                pgdat_dirty_needs_unqueued: true,
                swap_slot_cache: false,
                large_folios: true,
                ondemand_readahead: true,
                boot_free_to_tail: true,
                compaction_free_stride: true,
                compaction_fast_search: true,
                boost_on_steal: false,
            },
            KernelVersion::V6_1 => VersionRules {
                memcg_charge_batch: true,
                zero_page: true,
                memcg_reclaim_iter: MemcgReclaimIter::Full,
                memcg_stock_groups: 1,
                memcg_kmem: true,
                memsw_failcnt: true,
                lru_cost_rotations: false,
                pgdat_dirty_needs_unqueued: false,
                swap_slot_cache: true,
                large_folios: false,
                ondemand_readahead: true,
                boot_free_to_tail: true,
                compaction_free_stride: true,
                compaction_fast_search: true,
                boost_on_steal: true,
            },
        }
    }
}

impl Kernel {
    /// Sets every per-mechanism switch left unset to its version's default.
    pub fn apply_version(&mut self) {
        let r = self.version.rules();
        self.memcg_charge_batch.get_or_insert(r.memcg_charge_batch);
        self.zero_page.get_or_insert(r.zero_page);
        self.memcg_reclaim_iter.get_or_insert(r.memcg_reclaim_iter);
        self.memcg_stock_groups.get_or_insert(r.memcg_stock_groups);
        self.memcg_kmem.get_or_insert(r.memcg_kmem);
        self.memsw_failcnt.get_or_insert(r.memsw_failcnt);
        self.lru_cost_rotations.get_or_insert(r.lru_cost_rotations);
        self.pgdat_dirty_needs_unqueued
            .get_or_insert(r.pgdat_dirty_needs_unqueued);
        self.swap_slot_cache.get_or_insert(r.swap_slot_cache);
        self.large_folios.get_or_insert(r.large_folios);
        self.ondemand_readahead.get_or_insert(r.ondemand_readahead);
        self.boot_free_to_tail.get_or_insert(r.boot_free_to_tail);
        self.compaction_free_stride
            .get_or_insert(r.compaction_free_stride);
        self.compaction_fast_search
            .get_or_insert(r.compaction_fast_search);
        self.boost_on_steal.get_or_insert(r.boost_on_steal);
    }

    /// The switches in force: explicit values, else the version's.
    pub fn rules(&self) -> VersionRules {
        let r = self.version.rules();
        VersionRules {
            memcg_charge_batch: self.memcg_charge_batch.unwrap_or(r.memcg_charge_batch),
            zero_page: self.zero_page.unwrap_or(r.zero_page),
            memcg_reclaim_iter: self.memcg_reclaim_iter.unwrap_or(r.memcg_reclaim_iter),
            memcg_stock_groups: self.memcg_stock_groups.unwrap_or(r.memcg_stock_groups),
            memcg_kmem: self.memcg_kmem.unwrap_or(r.memcg_kmem),
            memsw_failcnt: self.memsw_failcnt.unwrap_or(r.memsw_failcnt),
            lru_cost_rotations: self.lru_cost_rotations.unwrap_or(r.lru_cost_rotations),
            pgdat_dirty_needs_unqueued: self
                .pgdat_dirty_needs_unqueued
                .unwrap_or(r.pgdat_dirty_needs_unqueued),
            swap_slot_cache: self.swap_slot_cache.unwrap_or(r.swap_slot_cache),
            large_folios: self.large_folios.unwrap_or(r.large_folios),
            ondemand_readahead: self.ondemand_readahead.unwrap_or(r.ondemand_readahead),
            boot_free_to_tail: self.boot_free_to_tail.unwrap_or(r.boot_free_to_tail),
            compaction_free_stride: self
                .compaction_free_stride
                .unwrap_or(r.compaction_free_stride),
            compaction_fast_search: self
                .compaction_fast_search
                .unwrap_or(r.compaction_fast_search),
            boost_on_steal: self.boost_on_steal.unwrap_or(r.boost_on_steal),
        }
    }
}

/// When anonymous faults try a huge page (transparent_hugepage/enabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpEnabled {
    /// Every anonymous region.
    Always,
    /// Only regions marked with MADV_HUGEPAGE.
    Madvise,
    /// Never.
    Never,
}

/// How hard a huge-page fault tries to get its page (transparent_hugepage/defrag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum ThpDefrag {
    /// Direct reclaim and compaction for every THP fault.
    #[serde(rename = "always")]
    Always,
    /// Wake kswapd and kcompactd, never stall.
    #[serde(rename = "defer")]
    Defer,
    /// Direct reclaim and compaction in MADV_HUGEPAGE regions, wake kswapd/kcompactd elsewhere.
    #[serde(rename = "defer+madvise")]
    DeferMadvise,
    /// Direct reclaim and compaction only in MADV_HUGEPAGE regions.
    #[serde(rename = "madvise")]
    Madvise,
    /// Take a free huge page or fall back at once.
    #[serde(rename = "never")]
    Never,
}

/// How reclaim walks the memory cgroups of its target's subtree (shrink_node_memcgs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemcgReclaimIter {
    /// 6.11 onward (6.18): direct and limit reclaim resume the walk where the previous one
    /// stopped (mem_cgroup_iter with a mem_cgroup_reclaim_cookie, one position per target
    /// and node) and stop once they have reclaimed enough; kswapd walks in full; a
    /// reclaim that got nothing from partial walks retries with full ones (memcg_full_walk).
    Cookie,
    /// 5.5 to 6.10 (6.1): every reclaimer walks the whole subtree from its first group and
    /// never stops early.
    Full,
    /// vmsim's earlier model, kept for the seeds' kernels: every walk starts at the target
    /// and limit reclaim stops once it has enough (3.x kept a cursor per zone and
    /// priority, not modelled).
    Restart,
}

/// How global reclaim honours memory.soft_limit_in_bytes (seed 002's three kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SoftLimitReclaim {
    /// 3.11 (and mm/memcontrol-v1.c today): the per-node soft-limit tree; kswapd and direct
    /// reclaim first reclaim the group with the largest excess at priority 0.
    Base,
    /// The reworked series before seed 002: a filtered walk of the whole hierarchy in
    /// shrink_node, then an unfiltered one if the first scanned nothing.
    Rework,
    /// Seed 002 applied: rework plus children_in_excess, skipping subtrees with no group in excess.
    Reworkoptim,
}

/// How many tasks may be in direct reclaim at once (seed 000's kernels and today's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReclaimThrottle {
    /// 2.6.25 before the patch: any number of direct reclaimers, and none of today's
    /// throttles (reclaim_throttle(), too_many_isolated()).
    Off,
    /// The seed's patch: at most `reclaim_limit` at once; the rest wait and are all woken when
    /// one finishes; a waiter that waited over 1 s skips reclaim if the zone is above 4 × high.
    /// None of today's throttles.
    Limit,
    /// Today: no count limit; reclaim_throttle() and too_many_isolated() slow reclaimers down.
    Modern,
}

/// How a reclaim pass decides how much of each LRU list to scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReclaimScan {
    /// Today's shrink_lruvec/get_scan_count.
    Modern,
    /// 2.6.2x shrink_zone: active and inactive lists scanned at every priority, no early exit.
    Classic,
}

/// Who wakes the flusher threads from direct reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlusherWakeup {
    /// Today: shrink_inactive_list when every isolated page was dirty and unqueued.
    UnqueuedDirty,
    /// 2.6.35: do_try_to_free_pages after a pass that scanned more than 1.5 × nr_to_reclaim.
    Scanned,
}

/// When the page allocator retries after direct reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocRetry {
    /// 4.7+: should_reclaim_retry() with MAX_RECLAIM_RETRIES no-progress loops.
    ShouldReclaimRetry,
    /// 2.6.35: should_alloc_retry() while reclaim reports progress (all_unreclaimable rule).
    ShouldAllocRetry,
}

/// Who writes back dirty file pages that reclaim finds (seed 001's kernels and today's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReclaimWriteback {
    /// traceonly-v6 (2.6.35): direct reclaim and kswapd call ->writepage on dirty file pages.
    Traceonly,
    /// nodirect-v6: direct reclaim never writes file pages; kswapd still does.
    Nodirect,
    /// flushforward-v6: as nodirect, and reclaim wakes the flusher threads for the dirty pages it meets.
    Flushforward,
    /// Today: pageout() writes only swap and shmem; dirty file pages are left to the
    /// flushers; cgroup v1 limit reclaim waits on pages under writeback that it marked for
    /// reclaim before (shrink_folio_list's case 3, 3.6+).
    Modern,
}

section! {
    /// Simulated cost of kernel and user operations. Defaults are the built-in profile
    /// `measured-6.18` (crates/vmsim-core/costs/): measured by `vmsim calibrate` where a
    /// microbenchmark isolates the knob, else the seed-era estimate; docs/cost-model.md.
    /// They are the default cost profile's figures (`costs::DEFAULT_PROFILE`,
    /// crates/vmsim-core/costs/): a test fails when the two differ.
    Cost, "cost" {
        /// An order-0 allocation served from the per-CPU list: the allocator entry, zonelist walk, watermark check, list pop and prep_new_page (__alloc_frozen_pages less the zeroing). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 109.4-143.8 ns over 7 repetitions; docs/cost-model.md.
        pcp_alloc: u64 = 129, "[ns]", max MAX_OP_COST;
        /// An order-0 free onto the per-CPU list (free_unref_folios). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 27.1-34.9 ns over 7 repetitions; docs/cost-model.md.
        pcp_free: u64 = 31, "[ns]", max MAX_OP_COST;
        /// One page taken from the buddy lists under zone->lock (__rmqueue in rmqueue_bulk). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 43.4-106.8 ns over 7 repetitions; docs/cost-model.md.
        buddy_alloc: u64 = 99, "[ns]", max MAX_OP_COST;
        /// One split step of expand() or merge step of __free_one_page. Source: an estimate; docs/cost-model.md.
        buddy_split: u64 = 15, "[ns]", max MAX_OP_COST;
        /// One page returned to the buddy lists under zone->lock (__free_one_page in free_pcppages_bulk). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 31.2-62.2 ns over 7 repetitions; docs/cost-model.md.
        buddy_free: u64 = 48, "[ns]", max MAX_OP_COST;
        /// Entering the allocator slow path (__alloc_pages_slowpath), per pass. Source: an estimate; docs/cost-model.md.
        slowpath: u64 = 500, "[ns]", max MAX_OP_COST;
        /// A page fault's fixed overhead (exception entry, handle_mm_fault, return). Measured by vmsim calibrate on this machine kind (6.18): 668.5-744.2 ns over 7 repetitions; docs/cost-model.md.
        page_fault: u64 = 706, "[ns]", max MAX_OP_COST;
        /// Zeroing one 4 KiB page (clear_page). Measured by vmsim calibrate on this machine kind (6.18): 170.9-218 ns over 7 repetitions; docs/cost-model.md.
        clear_page: u64 = 190, "[ns]", max MAX_OP_COST;
        /// User access to an already-mapped page (cache miss and TLB). Measured by vmsim calibrate on this machine kind (6.18): 17.4-26.3 ns over 7 repetitions; docs/cost-model.md.
        touch_page: u64 = 20, "[ns]", max MAX_OP_COST;
        /// One slab object allocation or free (kmem_cache_alloc, kmem_cache_free, their memcg hooks). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 56-94.5 ns over 7 repetitions; docs/cost-model.md.
        slab_object: u64 = 74, "[ns]", max MAX_OP_COST;
        /// Freeing one dentry or inode in a shrinker (prune_dcache_sb, prune_icache_sb with the filesystem's eviction; the object's own kmem_cache_free is slab_object's); the extent-status and shadow-node shrinkers are charged the same. Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 1130-1525 ns over 7 repetitions; docs/cost-model.md.
        shrink_object: u64 = 1320, "[ns]", max MAX_OP_COST;
        /// A system call's entry and return (entry_SYSCALL_64 to sysret, mitigations included): what a step of program operations that enter the kernel and take no other time costs per operation. Measured by vmsim calibrate on this machine kind (6.18): 166.8-185.8 ns over 7 repetitions; docs/cost-model.md.
        syscall: u64 = 174, "[ns]", max MAX_OP_COST;
        /// A context switch (schedule, switch_mm). Measured by vmsim calibrate on this machine kind (6.18): 1824.3-1913.4 ns over 7 repetitions; docs/cost-model.md.
        context_switch: u64 = 1864, "[ns]", max MAX_OP_COST;
        /// Creating a task (fork: copy_process without memory copy). Measured by vmsim calibrate on this machine kind (6.18): 17366-24016 ns over 7 repetitions; docs/cost-model.md.
        fork: u64 = 19239, "[ns]", max MAX_OP_COST;
        /// Selecting and killing a victim in the OOM killer (out_of_memory). Source: an estimate (scanning the tasks and killing one); docs/cost-model.md.
        oom_kill: u64 = 200000, "[ns]", max MAX_OP_COST;
        /// Adding a page to a per-CPU LRU batch (folio_add_lru, outside lru_lock). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 13.4-18.4 ns over 7 repetitions; docs/cost-model.md.
        lru_add: u64 = 17, "[ns]", max MAX_OP_COST;
        /// Holding lru_lock per page moved on or off an LRU list (lru_add and the LRU counters in folio_batch_move_lru). Measured by vmsim calibrate on this machine kind (6.18), perf samples of the kernel's own functions: 76.3-93.5 ns over 7 repetitions; docs/cost-model.md.
        lru_lock_page: u64 = 85, "[ns]", max MAX_OP_COST;
        /// One page through shrink_folio_list (references, rmap walk, freeing). Measured by vmsim calibrate on this machine kind (6.18): 765.6-1005 ns over 7 repetitions; docs/cost-model.md.
        shrink_page: u64 = 914, "[ns]", max MAX_OP_COST;
        /// What freeing a large page-cache folio in reclaim adds to `shrink_page`, once per folio whatever its size (__remove_mapping of a multi-index entry, the uncharge and the free of a high-order page). Measured by vmsim calibrate --only large-folio-reclaim on this machine kind (6.18): 520.8-1600.6 ns over 7 repetitions; docs/cost-model.md.
        shrink_large_folio: u64 = 1191, "[ns]", max MAX_OP_COST;
        /// Each buffer_head freed with its folio (try_to_free_buffers → drop_buffers, free_buffer_head), beyond the slab free. Measured by vmsim calibrate --only large-folio-reclaim on this machine kind (6.18): 124.4-160.1 ns over 7 repetitions; docs/cost-model.md.
        free_buffer_head: u64 = 130, "[ns]", max MAX_OP_COST;
        /// Unmapping one page (try_to_unmap with the TLB flush share). Measured by vmsim calibrate on this machine kind (6.18): 2130-4756.5 ns over 7 repetitions; docs/cost-model.md.
        unmap_page: u64 = 3047, "[ns]", max MAX_OP_COST;
        /// Building and submitting one block request (submit_bio). Measured by vmsim calibrate on this machine kind (6.18): 16863.2-22527.9 ns over 7 repetitions; docs/cost-model.md.
        submit_bio: u64 = 18638, "[ns]", max MAX_OP_COST;
        /// Copying one 4 KiB page between user and page cache (copy_page_to/from_iter). Measured by vmsim calibrate on this machine kind (6.18): 384.4-428.5 ns over 7 repetitions; docs/cost-model.md.
        copy_page: u64 = 397, "[ns]", max MAX_OP_COST;
        /// The fixed part of a buffered write(2), once per call whatever its length (entry and return, fdget, generic_write_checks, file_update_time, the call's share of ext4's write_begin/write_end). Measured by vmsim calibrate on this machine kind (6.18): 1669.1-2254.2 ns over 7 repetitions; docs/cost-model.md.
        write_call: u64 = 2123, "[ns]", max MAX_OP_COST;
        /// Creating a file beyond what vmsim charges for its objects and metadata: open(O_CREAT) of a new name and its close (path walk, the filesystem's create under its locks — ext4_create's inode bitmap and table updates, ext4_add_nondir —, the struct file, fd_install, __fput). Measured by vmsim calibrate --only ext4 on this machine kind (6.18): 15971.1-20386.4 ns over 7 repetitions on a scratch ext4 filesystem; docs/cost-model.md.
        create_call: u64 = 16447, "[ns]", max MAX_OP_COST;
        /// One free inode passed over as recently deleted when ext4 without a journal allocates an inode (recently_deleted: sb_find_get_block of its inode-table block, the dtime test, brelse). Measured by vmsim calibrate --only ext4 on this machine kind (6.18): 176.3-213.8 ns over 7 repetitions on a scratch ext4 filesystem; docs/cost-model.md.
        ext4_recently_deleted: u64 = 192, "[ns]", max MAX_OP_COST;
        /// A buffered write(2)'s per-page path beyond the allocation and the copy (the delayed-allocation reservation, the buffer heads' state, folio_mark_dirty). Measured by vmsim calibrate on this machine kind (6.18): 294.4-645.1 ns over 7 repetitions; docs/cost-model.md.
        write_page: u64 = 457, "[ns]", max MAX_OP_COST;
        /// The fixed part of a read(2) of cached pages, once per call (entry and return, fdget, filemap_read's set-up, touch_atime). Measured by vmsim calibrate on this machine kind (6.18): 335.5-590.2 ns over 7 repetitions; docs/cost-model.md.
        read_call: u64 = 497, "[ns]", max MAX_OP_COST;
        /// A read(2)'s per-page path beyond the copy (filemap_get_pages' lookup, the folio's reference). Measured by vmsim calibrate on this machine kind (6.18): 0-148 ns over 7 repetitions; docs/cost-model.md.
        read_page: u64 = 0, "[ns]", max MAX_OP_COST;
        /// Migrating one page in compaction: unmap, copy, remap, TLB flush (migrate_folio). Measured by vmsim calibrate on this machine kind (6.18): 1693.1-3759.7 ns over 7 repetitions; docs/cost-model.md.
        migrate_page: u64 = 2138, "[ns]", max MAX_OP_COST;
        /// Looking at one frame in a compaction scanner (isolate_migratepages_block, isolate_freepages_block). Measured by vmsim calibrate on this machine kind (6.18): 2.2-4.1 ns over 7 repetitions; docs/cost-model.md.
        compact_scan_page: u64 = 3, "[ns]", max MAX_OP_COST;
        /// Kernel side of writing one small message to an AF_UNIX stream socket (unix_stream_sendmsg: skb allocation, copy, queueing, waking the reader). Measured by vmsim calibrate on this machine kind (6.18): 878-1001.6 ns over 7 repetitions; docs/cost-model.md.
        unix_sendmsg: u64 = 911, "[ns]", max MAX_OP_COST;
        /// Kernel side of reading one small message from an AF_UNIX stream socket (unix_stream_recvmsg: dequeue, copy, skb free). Measured by vmsim calibrate on this machine kind (6.18): 945.2-1073.2 ns over 7 repetitions; docs/cost-model.md.
        unix_recvmsg: u64 = 980, "[ns]", max MAX_OP_COST;
        /// User time around one write(2) or read(2) of a message (the loop, the libc wrapper). Measured by vmsim calibrate on this machine kind (6.18): 34.8-58.3 ns over 7 repetitions; docs/cost-model.md.
        msg_user: u64 = 40, "[ns]", max MAX_OP_COST;
        /// One step of the memcg hierarchy walk (mem_cgroup_iter: css_next_descendant_pre, css_tryget/put, the reclaim cookie; a few cache misses on a cold mem_cgroup). Measured by vmsim calibrate on this machine kind (6.18): 28.4-52.4 ns over 7 repetitions; docs/cost-model.md.
        memcg_iter: u64 = 49, "[ns]", max MAX_OP_COST;
        /// Visiting one group's lruvec in shrink_node, before any page is scanned (get_scan_count, inactive_is_low and the per-lruvec bookkeeping, even when empty). Measured by vmsim calibrate on this machine kind (6.18): 56.7-104.7 ns over 7 repetitions; docs/cost-model.md.
        memcg_shrink_lruvec: u64 = 98, "[ns]", max MAX_OP_COST;
        /// One level of the soft-limit eligibility climb (res_counter_soft_limit_excess under the counter's spinlock). Source: an estimate (an uncontended lock round trip); docs/cost-model.md.
        memcg_soft_check: u64 = 40, "[ns]", max MAX_OP_COST;
        /// Charging or uncharging one page at one level of the hierarchy (page_counter_try_charge). Measured by vmsim calibrate on this machine kind (6.18): 39.5-115.5 ns over 7 repetitions; docs/cost-model.md.
        memcg_charge: u64 = 66, "[ns]", max MAX_OP_COST;
    }
}

section! {
    /// The CPU scheduler.
    Sched, "sched" {
        /// Time slice before a CPU-bound task is preempted when others wait (sysctl_sched_base_slice).
        slice: Nanos = Nanos(3_000_000), "[time]", max MAX_OP_COST;
        /// Largest chunk of work a task does in one event; smaller is finer interleaving, larger is faster.
        quantum: Nanos = Nanos(50_000), "[time]", max MAX_OP_COST;
    }
}

/// The most samples a run's time series may hold (a few hundred bytes each in memory,
/// about 1 KB each in the JSON result): `duration / sampling.interval` above it is refused.
pub const MAX_SAMPLES: u64 = 200_000;

/// The most `snapshot` operations a run may take, over every task, count and repetition
/// (each keeps /proc/vmstat, buddyinfo, slabinfo, meminfo and memory.stat: ~10 KB).
pub const MAX_SNAPSHOTS: u64 = 10_000;

section! {
    /// What is recorded while the simulation runs.
    Sampling, "sampling" {
        /// Interval of the vmstat/buddyinfo time series.
        interval: Nanos = Nanos(100_000_000), "[time]", max MAX_DURATION;
    }
}

/// How a held allocation is chosen by a `free` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    /// The oldest held allocation first.
    #[default]
    Oldest,
    /// The newest first.
    Newest,
    /// Uniformly at random (from the task's own stream).
    Random,
}

/// The order a `touch` operation visits its pages in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TouchOrder {
    /// Page 0, 1, 2, …
    #[default]
    Sequential,
    /// Every page once, in a random order.
    Random,
}

impl TouchOrder {
    /// Whether this is the default order.
    fn is_sequential(&self) -> bool {
        *self == TouchOrder::Sequential
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Advice of a `madvise` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    /// MADV_HUGEPAGE.
    Hugepage,
    /// MADV_NOHUGEPAGE.
    Nohugepage,
}

/// Advice of a `fadvise` operation (posix_fadvise(2)'s POSIX_FADV_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FadviseAdvice {
    /// POSIX_FADV_NORMAL: the device's readahead window, no random mode.
    Normal,
    /// POSIX_FADV_SEQUENTIAL: twice the device's readahead window.
    Sequential,
    /// POSIX_FADV_RANDOM: no readahead; a miss reads what the read(2) asked for.
    Random,
    /// POSIX_FADV_WILLNEED: read the file ahead now (at most one readahead maximum).
    Willneed,
    /// POSIX_FADV_DONTNEED: start writing its dirty pages and drop its clean ones.
    Dontneed,
}

/// Mobility type of an explicit allocation, as the GFP flags would give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AllocType {
    /// GFP_KERNEL: MIGRATE_UNMOVABLE.
    #[default]
    Unmovable,
    /// GFP_KERNEL | __GFP_RECLAIMABLE: MIGRATE_RECLAIMABLE.
    Reclaimable,
    /// GFP_HIGHUSER_MOVABLE: MIGRATE_MOVABLE.
    Movable,
    /// GFP_ATOMIC: unmovable, may not sleep, may dip into reserves.
    Atomic,
}

/// One operation of a task's program.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Spend user CPU time.
    Compute {
        /// How long [time].
        time: Nanos,
    },
    /// Fault in (first touch) or re-touch anonymous memory of this size.
    Touch {
        /// Amount of the task's anonymous memory to touch [bytes].
        size: Bytes,
        /// Write each page (memset; the default) or only read it (a read fault leaves a
        /// page read back from swap clean in the swap cache).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        write: bool,
        /// The order pages are touched in: sequential (the default) or random (a
        /// permutation from the task's own stream).
        #[serde(default, skip_serializing_if = "TouchOrder::is_sequential")]
        order: TouchOrder,
    },
    /// Release anonymous memory (munmap of the most recently faulted pages).
    Unmap {
        /// Amount to release [bytes].
        size: Bytes,
    },
    /// Explicit page allocations of one order and type, held until freed.
    Alloc {
        /// Buddy order (0..=10).
        #[serde(default)]
        order: u32,
        /// How many allocations.
        #[serde(default = "one")]
        count: u64,
        /// Mobility type (GFP flags).
        #[serde(default, rename = "type")]
        kind: AllocType,
        /// Modifiers added to the type's mask, by their kernel names: `__GFP_RETRY_MAYFAIL`,
        /// `__GFP_NORETRY`, `__GFP_THISNODE`, `__GFP_NOWARN`, `__GFP_COMP`.
        #[serde(default)]
        gfp: Vec<String>,
    },
    /// Free held explicit allocations.
    Free {
        /// How many (default: all).
        #[serde(default)]
        count: Option<u64>,
        /// Which ones.
        #[serde(default)]
        which: Which,
    },
    /// Allocate slab objects from a named cache.
    Slab {
        /// Cache name (`dentry`, `inode_cache`, `kmalloc-256`, …).
        cache: String,
        /// Number of objects.
        objects: u64,
        /// Objects in use: held by the task, off a reclaimable cache's shrinker list (a
        /// dentry or inode in use, or an inode with page cache) until freed or the task
        /// exits. Default false: a reclaimable cache's objects are unused, cached.
        #[serde(default)]
        in_use: bool,
    },
    /// Free slab objects this task holds in a named cache (oldest first).
    SlabFree {
        /// Cache name.
        cache: String,
        /// Number of objects (default: all this task holds).
        #[serde(default)]
        objects: Option<u64>,
    },
    /// Write to a file through the page cache, appending (a buffered write(2)).
    Write {
        /// File name.
        file: String,
        /// Bytes to write [bytes].
        size: Bytes,
        /// Bytes per write(2), a multiple of 4 KiB; a write's length sets the order of the
        /// page-cache folios it creates (kernel.large_folios) [bytes]. Default 4 KiB.
        #[serde(default)]
        bs: Option<Bytes>,
    },
    /// Read a file through the page cache from its start (read(2)); the whole file without a size.
    Read {
        /// File name.
        file: String,
        /// Bytes to read [bytes].
        #[serde(default)]
        size: Option<Bytes>,
        /// Bytes per read(2), a multiple of 4 KiB; a read's length sizes the first
        /// readahead window (kernel.ondemand_readahead) [bytes]. Default 4 KiB.
        #[serde(default)]
        bs: Option<Bytes>,
    },
    /// Delete a file and drop its page cache (unlink(2)).
    Unlink {
        /// File name.
        file: String,
    },
    /// Delete every file under a directory, oldest first, one unlink(2) each (`rm DIR/*`).
    UnlinkDir {
        /// Directory: every file whose name starts with `DIR/`.
        dir: String,
    },
    /// madvise(2) over the task's whole anonymous memory: `hugepage` (MADV_HUGEPAGE) or `nohugepage`.
    Madvise {
        /// The advice.
        advice: Advice,
    },
    /// Fault in anonymous memory 2 MiB region by region, recording each region's latency
    /// (first touch, then the whole region) and whether it got a huge page (thpfioscale).
    ThpFault {
        /// Amount of anonymous memory [bytes].
        size: Bytes,
    },
    /// fio's writer: create `files` files of `file_size` (a dentry and an inode each) and write them.
    FioWrite {
        /// Number of files.
        files: u64,
        /// Size of each file [bytes].
        file_size: Bytes,
        /// Bytes per write(2), a multiple of 4 KiB; a write's length sets the order of the
        /// page-cache folios it creates (kernel.large_folios) [bytes]. Default 4 KiB (fio's
        /// blocksize=4096, as thpfioscale runs it).
        #[serde(default)]
        bs: Option<Bytes>,
    },
    /// fio's random reader over the files this task wrote (4 KiB reads, another file every
    /// 16 reads) until the counter `until` reaches `count`.
    FioRead {
        /// Counter that ends the reading.
        until: String,
        /// Value it must reach.
        #[serde(default = "one")]
        count: u64,
    },
    /// Add one to a named counter.
    Signal {
        /// Counter name.
        name: String,
    },
    /// Sleep until a named counter reaches `count`.
    Wait {
        /// Counter name.
        name: String,
        /// Value it must reach.
        #[serde(default = "one")]
        count: u64,
    },
    /// Write the hugetlb pool's size, as `echo N > /proc/sys/vm/nr_hugepages` (or, with
    /// `node`, to that node's `nr_hugepages` in sysfs) does: the pool grows or shrinks to
    /// `pages` huge pages, or as far as the machine allows.
    NrHugepages {
        /// Huge pages wanted.
        pages: u64,
        /// Only this node's share of the pool.
        #[serde(default)]
        node: Option<u32>,
    },
    /// posix_fadvise(2) over a whole file (offset 0, len 0; generic_fadvise): `normal`,
    /// `sequential`, `random`, `willneed` or `dontneed`.
    Fadvise {
        /// File name.
        file: String,
        /// The advice.
        advice: FadviseAdvice,
    },
    /// `echo VALUE > /proc/sys/vm/drop_caches` as root (drop_caches_sysctl_handler): 1 frees
    /// the clean, unmapped page cache, 2 the unused dentries and inodes, 3 both (4 only
    /// silences the kernel's log line).
    DropCaches {
        /// The value written (1..=4).
        value: u32,
    },
    /// `echo 1 > /proc/sys/vm/compact_memory` as root (sysctl_compaction_handler →
    /// compact_nodes): every zone of every node compacted whole.
    CompactMemory {},
    /// Lays out the free lists as a /proc/buddyinfo text says (a start state, no kernel
    /// counterpart; mm/free_area_layout.rs): in each zone it names, whole free max-order
    /// blocks spread over the zone are broken into the free blocks of lower orders the
    /// line counts, and the pages between them are kept for this task's next movable
    /// order-0 allocations (its movable allocations of higher orders fail meanwhile, so
    /// that they fall back to order 0), until `shape_free_lists_end`.
    ShapeFreeLists {
        /// /proc/buddyinfo lines (`Node 0, zone   Normal  5659 11316 ...`).
        buddyinfo: String,
        /// How much memory in use the pages between the free blocks are to be (the
        /// task's movable allocations that follow); it sets how many max-order blocks
        /// are broken up.
        size: Bytes,
    },
    /// Ends `shape_free_lists`: the pages it kept and the task did not take are freed.
    ShapeFreeListsEnd {},
    /// `sync` as the shell runs it (sync(2), ksys_sync): every dirty page written and
    /// waited for, ext4's journal committed and the block device's metadata written.
    Sync {},
    /// Writes one sysctl as root (`sysctl -w NAME=VALUE`), with the kernel's bounds and its
    /// handler's side effects (docs/operator.md lists the names).
    Sysctl {
        /// The sysctl's name (`vm.dirty_ratio`, `vm.min_free_kbytes`, …).
        name: String,
        /// The value written.
        value: u64,
    },
    /// `echo VALUE > FILE` in a memory cgroup's directory as root: a limit or protection
    /// changed mid-run through the kernel's write handler. A hard limit below the usage
    /// reclaims down to it first (mem_cgroup_resize_max for v1's memory.limit_in_bytes,
    /// memory_max_write and memory_high_write for v2's memory.max and memory.high).
    CgroupWrite {
        /// The group's `[[cgroup]] path`.
        cgroup: String,
        /// The file: v1 `memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`,
        /// `memory.soft_limit_in_bytes`; v2 `memory.max`, `memory.high`, `memory.low`,
        /// `memory.min`, `memory.reclaim` (proactive reclaim of the size written).
        file: String,
        /// A size (`"64MiB"`, or bytes), or no limit: `"max"` (v2) or `-1` (v1).
        value: CgroupValue,
    },
    /// `swapon PATH` as root: enables a `[[swap]]` device declared with `swapon = false`
    /// (or swapped off earlier); EBUSY if it is on.
    Swapon {
        /// The device's `[[swap]] path`.
        path: String,
    },
    /// `swapoff PATH` as root: the device gives no more slots and every page on it is
    /// read back into memory (try_to_unuse); fails (ENOMEM), the device back on, when
    /// memory cannot hold them; EINVAL if it is not on.
    Swapoff {
        /// The device's `[[swap]] path`.
        path: String,
    },
    /// Read /proc/vmstat, /proc/buddyinfo, /proc/slabinfo, /proc/meminfo and every memory cgroup's
    /// memory.stat now, as a person between two steps of an experiment does; the run
    /// result lists them under `snapshots`.
    Snapshot {
        /// Name of the moment (e.g. the phase that just ended).
        name: String,
    },
    /// Sleep.
    Sleep {
        /// How long [time].
        time: Nanos,
    },
    /// Sleep as long as the task has existed so far: a warm-up as long as what came
    /// before it (mmtests' thpfioscale sleeps `THPFIOSCALE_FIO_WARMUP`, which defaults
    /// to the time the files took to write, while the random readers run).
    SleepElapsed {
        /// A `signal` counter: sleep instead as long as from the task's start to that
        /// counter's last signal (mmtests takes INIT_TIME before its `sync`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        upto: Option<String>,
    },
    /// Exit now (the end of the program exits too).
    Exit {},
}

fn one() -> u64 {
    1
}

/// A group of identical tasks running one program.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Command name (`comm`), as ps and the tracepoints show it.
    pub name: String,
    /// How many copies to start.
    #[serde(default = "one")]
    pub count: u64,
    /// When to start them.
    #[serde(default)]
    pub start: Nanos,
    /// How many times the program runs before the task exits.
    #[serde(default = "one")]
    pub repeat: u64,
    /// The operations, in order.
    pub program: Vec<Op>,
    /// Memory cgroup the tasks run in (a `[[cgroup]]` path); the root when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Tasks (by name) this one outlives: its program repeats, however often `repeat`
    /// says, until every task of these names has exited (checked after each repetition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub until_exit: Vec<String>,
    /// A task the run does not wait for: the run ends when every other task has
    /// exited, whatever this one is doing (the rest of a system, a background load).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub daemon: bool,
}

/// The placeholders a file name may hold: `{rep}` (the repetition of the program,
/// from 0) and `{pid}` (the task's pid), so that each repetition or copy of a task
/// makes files of its own.
pub const FILE_PLACEHOLDERS: [&str; 2] = ["{rep}", "{pid}"];

/// The first unknown `{…}` placeholder of a file name, if any (an unclosed `{` too).
pub fn bad_file_placeholder(name: &str) -> Option<String> {
    let mut rest = name;
    while let Some(i) = rest.find('{') {
        let tail = &rest[i..];
        let Some(j) = tail.find('}') else {
            return Some(tail.to_string());
        };
        let ph = &tail[..=j];
        if !FILE_PLACEHOLDERS.contains(&ph) {
            return Some(ph.to_string());
        }
        rest = &tail[j + 1..];
    }
    None
}

impl TaskSpec {
    /// Snapshots the task's copies take at most: count x repeat x its `snapshot` operations.
    fn snapshots_taken(&self) -> u64 {
        let ops = self
            .program
            .iter()
            .filter(|op| matches!(op, Op::Snapshot { .. }));
        (ops.count() as u64)
            .saturating_mul(self.repeat)
            .saturating_mul(self.count)
    }
}

/// Shapes of generated empty hierarchies below a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupShape {
    /// Two children per group, filled breadth first (seed 002's "bunch").
    Binary,
    /// All groups children of the declaring one.
    Flat,
}

/// Empty groups generated below a declared group.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupGenerate {
    /// Tree shape.
    pub shape: CgroupShape,
    /// Number of groups [count].
    pub groups: u64,
}

/// A group's cgroup v1 memory+swap files (`memsw.limit_in_bytes = "…"`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MemswSpec {
    /// memory.memsw.limit_in_bytes: the limit on memory plus swap; at least limit_in_bytes.
    pub limit_in_bytes: Bytes,
}

/// A group's cgroup v2 swap files (`swap.max = "…"`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSpec {
    /// memory.swap.max: the limit on the group's swap.
    pub max: Bytes,
}

/// Which cgroup hierarchy the memory controller is mounted on
/// (cgroup_subsys_on_dfl(memory_cgrp_subsys)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupHierarchy {
    /// cgroup v1 (/sys/fs/cgroup/memory): memory.limit_in_bytes, memory.soft_limit_in_bytes.
    #[default]
    V1,
    /// cgroup v2, the default hierarchy: memory.max, memory.high, memory.low, memory.min.
    V2,
}

/// One memory cgroup (a directory of the memory controller), with the file names of
/// its hierarchy.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupSpec {
    /// Path below the root, `/`-separated; the parent must be declared before.
    pub path: String,
    /// The hierarchy the memory controller is on; every group must name the same one.
    #[serde(default)]
    pub hierarchy: CgroupHierarchy,
    /// memory.limit_in_bytes (v1): the hard limit; none when absent.
    #[serde(default)]
    pub limit_in_bytes: Option<Bytes>,
    /// memory.soft_limit_in_bytes (v1); none when absent.
    #[serde(default)]
    pub soft_limit_in_bytes: Option<Bytes>,
    /// memory.memsw.* (v1): `memsw.limit_in_bytes`; no memory+swap limit when absent.
    #[serde(default)]
    pub memsw: Option<MemswSpec>,
    /// memory.swappiness (v1, 0..=200); the parent's when absent.
    #[serde(default)]
    pub swappiness: Option<u64>,
    /// memory.swap.* (v2): `swap.max`; no swap limit when absent.
    #[serde(default)]
    pub swap: Option<SwapSpec>,
    /// memory.max (v2): the hard limit; none when absent.
    #[serde(default)]
    pub max: Option<Bytes>,
    /// memory.high (v2): above it the group's allocators reclaim and are throttled on
    /// their return to user space; none when absent.
    #[serde(default)]
    pub high: Option<Bytes>,
    /// memory.min (v2): usage protected from reclaim.
    #[serde(default)]
    pub min: Option<Bytes>,
    /// memory.low (v2): usage protected unless nothing else can be reclaimed.
    #[serde(default)]
    pub low: Option<Bytes>,
    /// Empty groups to create below this one.
    #[serde(default)]
    pub generate: Option<CgroupGenerate>,
}

/// What a `cgroup_write` operation writes: a size or no limit (page_counter_memparse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupValue {
    /// A size in bytes (rounded down to whole pages, as the kernel does).
    Bytes(u64),
    /// No limit: `max` in cgroup v2, `-1` in v1 (PAGE_COUNTER_MAX).
    Max,
}

impl<'de> Deserialize<'de> for CgroupValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom("cgroup_write value must be a size, \"max\" or -1")
        })? {
            Raw::Int(-1) => Ok(CgroupValue::Max),
            Raw::Int(n) if n >= 0 => Ok(CgroupValue::Bytes(n as u64)),
            Raw::Int(n) => Err(serde::de::Error::custom(format!(
                "cgroup_write value {n} is negative (only -1, no limit, is allowed)"
            ))),
            Raw::Text(t) if t.trim() == "max" || t.trim() == "-1" => Ok(CgroupValue::Max),
            Raw::Text(t) => crate::units::parse_size(&t)
                .map(CgroupValue::Bytes)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for CgroupValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            CgroupValue::Bytes(b) => s.serialize_u64(*b),
            CgroupValue::Max => s.serialize_str("max"),
        }
    }
}

/// A file on the disk when the run starts (`[[file]]`): it exists with its size and has
/// no page in the page cache, so its first read comes from the disk.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// File name, as the `read`, `write` and `unlink` operations name it.
    pub name: String,
    /// Size (i_size, rounded up to whole pages) [bytes].
    pub size: Bytes,
}

/// Where a `[[swap]]` device keeps its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapType {
    /// A swap file on the disk's filesystem.
    File,
    /// A partition of the disk.
    Partition,
    /// A compressed RAM disk (`/dev/zramN`), its pool in the machine's memory.
    Zram,
}

/// A swap device (`[[swap]]`): a file or a partition on the disk, swapped on at boot
/// (`swapon = true`) or later by a `swapon` operation.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwapDeviceSpec {
    /// Its path, as the `swapon` and `swapoff` operations name it.
    pub path: String,
    /// `file`, `partition` or `zram`.
    #[serde(rename = "type")]
    pub kind: SwapType,
    /// Size of a file or partition, the header page included (mkswap) [bytes].
    #[serde(default)]
    pub size: Option<Bytes>,
    /// A zram device's disksize (/sys/block/zramN/disksize) [bytes].
    #[serde(default)]
    pub disksize: Option<Bytes>,
    /// zram: uncompressed / compressed size of a page; default lzo1x's 2.106 (block/zram.rs).
    #[serde(default)]
    pub comp_ratio: Option<f64>,
    /// zram: CPU time to compress a page [ns]; default 6302 (lzo1x at 650 MB/s).
    #[serde(default)]
    pub compress_ns: Option<u64>,
    /// zram: CPU time to decompress a page [ns]; default 5251 (lzo1x at 780 MB/s).
    #[serde(default)]
    pub decompress_ns: Option<u64>,
    /// swapon -p: 0..=32767, higher used first, equal ones in turn; absent: the next
    /// automatic priority (-2, -3, … in swapon order).
    #[serde(default)]
    pub priority: Option<i64>,
    /// Swapped on at boot (default true).
    #[serde(default = "yes")]
    pub swapon: bool,
}

scenario! {
/// A whole scenario as read from TOML.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Scenario name.
    #[serde(default = "default_name")]
    pub name: String,
    /// Seed of all random streams.
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated time limit; the run also ends when every task has exited.
    #[serde(default = "default_duration")]
    pub duration: Nanos,
    /// The machine.
    #[serde(default)]
    pub machine: Machine,
    /// The kernel.
    #[serde(default)]
    pub kernel: Kernel,
    /// The cost profile giving every `[cost]` figure the scenario's own `[cost]` table does
    /// not set: a built-in one's name (crate::costs; absent, `costs::DEFAULT_PROFILE`). The
    /// Python front end reads a profile file (`"NAME.toml"`, relative to the scenario) and
    /// writes its figures into `[cost]` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<String>,
    /// Cost model: the cost profile's figures, with the scenario's own `[cost]` keys on top.
    #[serde(default)]
    pub cost: Cost,
    /// Scheduler.
    #[serde(default)]
    pub sched: Sched,
    /// Recording.
    #[serde(default)]
    pub sampling: Sampling,
    /// The disk holding swap and files.
    #[serde(default)]
    pub disk: crate::block::BlockConfig,
    /// The workload.
    #[serde(default, rename = "task")]
    pub tasks: Vec<TaskSpec>,
    /// Memory cgroups, parents first.
    #[serde(
        default,
        rename = "cgroup",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "cgroup_tables"
    )]
    pub cgroups: Vec<CgroupSpec>,
    /// Files on the disk at the start of the run, none of them cached.
    #[serde(default, rename = "file", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSpec>,
    /// Swap devices, after `machine.swap`'s file if that is set.
    #[serde(default, rename = "swap", skip_serializing_if = "Vec::is_empty")]
    pub swap: Vec<SwapDeviceSpec>,
}
// The workload kinds beside `[[task]]`, each a `[[NAME]]` table of a type in its own file
// under workload/ that implements `workload::WorkloadSpec`: one line each.
workloads {
    /// hackbench runs (`[[hackbench]]`).
    hackbench: crate::workload::hackbench::HackbenchSpec,
}
}

/// Reads `[[cgroup]]` tables; a single `[cgroup]` table is an error naming the right form.
fn cgroup_tables<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<CgroupSpec>, D::Error> {
    struct Tables;
    impl<'de> serde::de::Visitor<'de> for Tables {
        type Value = Vec<CgroupSpec>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("[[cgroup]] tables, one per group")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some(c) = seq.next_element()? {
                v.push(c);
            }
            Ok(v)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            _: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            Err(serde::de::Error::custom(
                "cgroup: write each group as a [[cgroup]] table, not [cgroup]",
            ))
        }
    }
    d.deserialize_any(Tables)
}

fn default_name() -> String {
    "unnamed".to_string()
}

fn default_duration() -> Nanos {
    Nanos(60_000_000_000)
}

/// The built-in default scenario: what `vmsim run` does with no file.
pub const DEFAULT_SCENARIO: &str = include_str!("../scenarios/default.toml");

/// Largest simulated machine (16 TiB) [bytes]: 2^32 frames of 4 KiB, each numbered within
/// a page's 32-bit links (`mm::page::pfn32`). The last frame is always the tail of the
/// last node's reserved memmap (`mm_init::memblock_reserved`), so the list end
/// `NIL` = u32::MAX never names a free, listed or mapped frame.
pub const MAX_MEMORY: u64 = 16 << 40;
/// Largest swap device (4 TiB) [bytes].
pub const MAX_SWAP: u64 = 4 << 40;
/// INT_MAX: the bound of the kernel's `int` sysctls (proc_dointvec_minmax) [count].
pub const INT_MAX: u64 = i32::MAX as u64;
/// A huge page (HPAGE_PMD_SIZE) [bytes].
pub const HPAGE_SIZE: u64 = 2 << 20;
/// Most user tasks of one scenario, over every workload table [tasks].
pub const MAX_TASKS: u64 = 1_000_000;
/// Most memory cgroups of one scenario, generated ones included [groups].
pub const MAX_CGROUPS: u64 = 1_000_000;
/// Largest cost of one operation in the cost model, and largest scheduler slice (1 s) [ns].
pub const MAX_OP_COST: u64 = 1_000_000_000;
/// Longest simulated run (10^6 s, 11.6 days) [ns].
pub const MAX_DURATION: u64 = 1_000_000 * 1_000_000_000;
/// Largest count of one operation: allocations, objects, files, a counter's target [count].
pub const MAX_OP_COUNT: u64 = 1 << 32;
/// Most runs of one task's program [count].
pub const MAX_REPEAT: u64 = 1_000_000_000_000;
/// Largest size of one read or write (1 PiB) [bytes].
pub const MAX_IO_SIZE: u64 = 1 << 50;

/// What is wrong with the `bs` of a read or write operation, if anything: a positive
/// multiple of 4 KiB up to MAX_IO_SIZE.
fn bad_bs(op: &str, bs: &Option<Bytes>) -> Option<String> {
    let b = (*bs)?.0;
    if b == 0 || b % crate::mm::page::PAGE_SIZE != 0 || b > MAX_IO_SIZE {
        return Some(format!(
            "{op}: bs {} must be a positive multiple of 4 KiB up to {}",
            Bytes(b),
            Bytes(MAX_IO_SIZE)
        ));
    }
    None
}

/// A key of an array table or of the top level, with its maximum.
const fn table_knob(
    section: &'static str,
    name: &'static str,
    unit: &'static str,
    doc: &'static str,
    max: u64,
) -> Knob {
    Knob {
        section,
        name,
        unit,
        doc,
        max: Some(max),
    }
}

/// The top-level and array-table keys that carry a maximum (`[[task]]`, its operations,
/// `[[cgroup]]`, `[[hackbench]]`), as validation checks them.
pub const TABLE_KNOBS: &[Knob] = &[
    table_knob("", "duration", "[time]", "Simulated time limit; the run also ends when every task has exited.", MAX_DURATION),
    table_knob("[[task]]", "count", "[count]", "Copies of the task to start (every workload table's tasks together: at most the same figure).", MAX_TASKS),
    table_knob("[[task]]", "repeat", "[count]", "Runs of the program before the task exits.", MAX_REPEAT),
    table_knob("[[task]]", "alloc.count", "[count]", "Allocations of one `alloc` operation.", MAX_OP_COUNT),
    table_knob("[[task]]", "free.count", "[count]", "Allocations one `free` operation releases.", MAX_OP_COUNT),
    table_knob("[[task]]", "slab.objects", "[count]", "Objects of one `slab` operation.", MAX_OP_COUNT),
    table_knob("[[task]]", "slab_free.objects", "[count]", "Objects of one `slab_free` operation.", MAX_OP_COUNT),
    table_knob("[[task]]", "write.size", "[bytes]", "Bytes of one `write` operation.", MAX_IO_SIZE),
    table_knob("[[task]]", "read.size", "[bytes]", "Bytes of one `read` operation.", MAX_IO_SIZE),
    table_knob("[[task]]", "write.bs", "[bytes]", "Bytes per write(2) of a `write` operation, a multiple of 4 KiB (default 4 KiB): the order of the page-cache folios it creates (kernel.large_folios).", MAX_IO_SIZE),
    table_knob("[[task]]", "fio_write.bs", "[bytes]", "Bytes per write(2) of a `fio_write` operation, a multiple of 4 KiB (default 4 KiB, fio's blocksize=4096): the order of the page-cache folios it creates (kernel.large_folios).", MAX_IO_SIZE),
    table_knob("[[task]]", "read.bs", "[bytes]", "Bytes per read(2) of a `read` operation, a multiple of 4 KiB (default 4 KiB): the size of the first readahead window (kernel.ondemand_readahead).", MAX_IO_SIZE),
    table_knob("[disk]", "read_ahead_kb", "[KiB]", "Readahead window of files on the disk, /sys/block/*/queue/read_ahead_kb (bdi->ra_pages; default 128).", crate::block::blk_core::MAX_READ_AHEAD_KB as u64),
    table_knob("[[task]]", "fio_write.files", "[count]", "Files of one `fio_write` operation.", 100_000_000),
    table_knob("[[task]]", "fio_read.count", "[count]", "Value of the counter that ends a `fio_read` operation.", MAX_OP_COUNT),
    table_knob("[[task]]", "wait.count", "[count]", "Value of the counter a `wait` operation waits for.", MAX_OP_COUNT),
    table_knob("[[task]]", "nr_hugepages.pages", "[pages]", "Huge pages an `nr_hugepages` operation asks for (also at most the machine's memory).", MAX_MEMORY / HPAGE_SIZE),
    table_knob("[[file]]", "size", "[bytes]", "Size of a file on the disk at the start (each file has its own extent on the disk).", crate::mm::filemap::FILE_EXTENT_SECTORS * 512),
    table_knob("[[swap]]", "size", "[bytes]", "Size of a swap file or partition, its header page included (at least 10 pages; all swap together at most machine.swap's maximum).", MAX_SWAP),
    table_knob("[[swap]]", "disksize", "[bytes]", "A zram device's disksize (type = \"zram\"), as /sys/block/zramN/disksize.", MAX_SWAP),
    table_knob("[[swap]]", "comp_ratio", "[ratio]", "zram: a page's size over its compressed size; default 2.106 (lzo1x 2.10 -1 on Silesia, facebook/zstd README).", 128),
    table_knob("[[swap]]", "compress_ns", "[ns]", "zram: CPU time to compress a page; default 6302 (lzo1x -1 at 650 MB/s, same table).", 1_000_000_000),
    table_knob("[[swap]]", "decompress_ns", "[ns]", "zram: CPU time to decompress a page; default 5251 (lzo1x at 780 MB/s, same table).", 1_000_000_000),
    table_knob("[[swap]]", "priority", "[0..32767]", "swapon -p: higher priorities are used first, equal ones in turn; absent, the next automatic priority (-2, -3, … in swapon order).", 32767),
    table_knob("[[cgroup]]", "generate.groups", "[count]", "Empty groups generated below a group (every group together: at most the same figure).", MAX_CGROUPS),
    table_knob("[[hackbench]]", "groups", "[count]", "hackbench groups (2 × groups × fds + 1 tasks count against the task maximum).", MAX_TASKS),
    table_knob("[[hackbench]]", "fds", "[count]", "Senders and receivers per group.", MAX_TASKS),
    table_knob("[[hackbench]]", "loops", "[count]", "Rounds each sender writes to every receiver.", MAX_OP_COUNT),
];

/// The table knob `section` `name` (a declared row of [`TABLE_KNOBS`]).
pub fn table_knob_named(section: &str, name: &str) -> &'static Knob {
    TABLE_KNOBS
        .iter()
        .find(|k| k.section == section && k.name == name)
        .expect("a declared table knob")
}

/// Every documented knob, in declaration order: the sections' knobs, then the
/// keys of the top level and of array tables that carry a maximum.
pub fn knob_table() -> Vec<Knob> {
    [
        Machine::KNOBS,
        Kernel::KNOBS,
        Cost::KNOBS,
        Sched::KNOBS,
        Sampling::KNOBS,
        TABLE_KNOBS,
    ]
    .concat()
}

impl Scenario {
    /// Parses and validates a scenario from TOML text.
    pub fn from_toml(text: &str) -> Result<Self> {
        Self::from_toml_with(text, None)
    }

    /// Parses and validates a scenario from TOML text whose cost profile is `costs` when
    /// given (one the caller read from a file), else the one its `costs` key names.
    pub fn from_toml_with(text: &str, costs: Option<&crate::costs::CostProfile>) -> Result<Self> {
        let mut sc: Scenario =
            toml::from_str(text).map_err(|e| Error::Parse(one_line_toml_error(&e, text)))?;
        let named;
        let profile = match costs {
            Some(p) => p,
            None => {
                named = crate::costs::scenario_profile(sc.costs.as_deref())?;
                &named
            }
        };
        let explicit = crate::costs::explicit_cost_keys(text)?;
        sc.cost =
            crate::costs::merged_cost(&profile.cost, &sc.cost, explicit.iter().map(String::as_str));
        sc.kernel.apply_version();
        sc.validate()?;
        Ok(sc)
    }

    /// User tasks every workload table starts (saturating; validation bounds it by [`MAX_TASKS`]).
    pub fn user_tasks(&self) -> u64 {
        let own = self
            .tasks
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.count));
        own.saturating_add(self.workload_tasks())
    }

    /// Memory cgroups the scenario creates, generated ones included (saturating).
    pub fn memcg_count(&self) -> u64 {
        self.cgroups.iter().fold(0u64, |a, c| {
            a.saturating_add(1)
                .saturating_add(c.generate.as_ref().map_or(0, |g| g.groups))
        })
    }

    /// Checks values that parse but cannot describe a machine or a workload.
    pub fn validate(&self) -> Result<()> {
        let inv = |m: String| Err(Error::Invalid(m));
        self.machine.check_maxima()?;
        self.kernel.check_maxima()?;
        self.cost.check_maxima()?;
        self.sched.check_maxima()?;
        self.sampling.check_maxima()?;
        table_knob_named("", "duration").check(self.duration.0, &self.duration)?;
        self.validate_swap()?;
        let m = &self.machine;
        if m.cpus == 0 {
            return inv("machine.cpus = 0 is impossible (1..=4096)".into());
        }
        if m.nodes == 0 {
            return inv("machine.nodes = 0 is impossible (1..=64)".into());
        }
        if m.cpus < m.nodes {
            return inv(format!(
                "machine.cpus = {} is fewer than machine.nodes = {}",
                m.cpus, m.nodes
            ));
        }
        let min = 64u64 << 20;
        if m.memory.0 < min * m.nodes as u64 {
            return inv(format!(
                "machine.memory = {} is too small (at least 64MiB per node)",
                m.memory
            ));
        }
        if !m.memory.0.is_multiple_of(4096) {
            return inv(format!(
                "machine.memory = {} is not a whole number of 4KiB pages",
                m.memory
            ));
        }
        if m.reserved.0 * 2 > m.memory.0 / m.nodes as u64 {
            return inv(format!(
                "machine.reserved = {} leaves too little memory on node 0",
                m.reserved
            ));
        }
        self.validate_kernel()?;
        self.disk.validate()?;
        if self.sched.quantum.0 == 0 || self.sched.slice.0 == 0 {
            return inv("sched.quantum and sched.slice must be > 0".into());
        }
        if self.sampling.interval.0 < 1_000_000 {
            return inv("sampling.interval must be at least 1ms".into());
        }
        if self.duration.0 == 0 {
            return inv("duration must be > 0".into());
        }
        let samples = self.duration.0.div_ceil(self.sampling.interval.0) + 1;
        if samples > MAX_SAMPLES {
            return inv(format!(
                "duration = {} sampled every sampling.interval = {} needs {samples} samples; \
                 the maximum is {MAX_SAMPLES} (raise sampling.interval)",
                self.duration, self.sampling.interval
            ));
        }
        let mut total_tasks = 0u64;
        for (i, t) in self.tasks.iter().enumerate() {
            let n = self.validate_task(i, t)?;
            total_tasks = total_tasks.saturating_add(n);
        }
        total_tasks = total_tasks.saturating_add(self.validate_workloads()?);
        let snapshots = self
            .tasks
            .iter()
            .fold(0u64, |n, t| n.saturating_add(t.snapshots_taken()));
        if snapshots > MAX_SNAPSHOTS {
            return inv(format!(
                "the tasks take up to {snapshots} snapshots together; the maximum is {MAX_SNAPSHOTS} per run"
            ));
        }
        self.validate_cgroups()?;
        self.validate_files()?;
        if total_tasks > MAX_TASKS {
            return inv(format!(
                "{total_tasks} tasks is too many (at most {MAX_TASKS} over every workload table)"
            ));
        }
        Ok(())
    }

    /// Checks the `[kernel]` values whose rule is more than a maximum.
    fn validate_kernel(&self) -> Result<()> {
        let inv = |m: String| Err(Error::Invalid(m));
        let (k, m) = (&self.kernel, &self.machine);
        // The knobs whose rule is a lower bound.
        let lows: [(&str, u64, u64); 3] = [
            ("watermark_scale_factor", k.watermark_scale_factor, 1),
            ("kernel_stack_pages", k.kernel_stack_pages as u64, 1),
            ("highorder_retry", k.highorder_retry, 1),
        ];
        for (name, v, lo) in lows {
            if v < lo {
                return inv(format!("kernel.{name} = {v} is below the minimum {lo}"));
            }
        }
        // min_free_kbytes_sysctl_handler takes any int >= 0; a reserve of the whole
        // machine leaves nothing to allocate, which no run can mean.
        if k.min_free_kbytes.saturating_mul(1024) >= m.memory.0 {
            return inv(format!(
                "kernel.min_free_kbytes = {} ({}) is not below the machine's memory ({})",
                k.min_free_kbytes,
                Bytes(k.min_free_kbytes.saturating_mul(1024)),
                m.memory
            ));
        }
        // percpu_pagelist_high_fraction_sysctl_handler: 0 or >= MIN_PERCPU_PAGELIST_HIGH_FRACTION.
        if (1..8).contains(&k.percpu_pagelist_high_fraction) {
            return inv(format!(
                "kernel.percpu_pagelist_high_fraction = {} must be 0 or at least 8 (MIN_PERCPU_PAGELIST_HIGH_FRACTION)",
                k.percpu_pagelist_high_fraction
            ));
        }
        if !(1..=64).contains(&k.rules().memcg_stock_groups) {
            return inv(format!(
                "kernel.memcg_stock_groups = {} is out of range (1..=64)",
                k.rules().memcg_stock_groups
            ));
        }
        if k.lowmem_reserve_ratio.len() != 3 || k.lowmem_reserve_ratio.contains(&0) {
            return inv(
                "kernel.lowmem_reserve_ratio needs three ratios >= 1 (DMA, DMA32, Normal)".into(),
            );
        }
        if !(1.0..=128.0).contains(&k.zswap_comp_ratio) {
            return inv(format!(
                "kernel.zswap_comp_ratio = {} is outside 1..=128 (a page compresses to at most 4096 and at least 32 bytes)",
                k.zswap_comp_ratio
            ));
        }
        if k.nr_hugepages.saturating_mul(HPAGE_SIZE) > m.memory.0 {
            return inv(format!(
                "kernel.nr_hugepages = {} ({} MiB) is more than the machine's memory ({})",
                k.nr_hugepages,
                k.nr_hugepages.saturating_mul(2),
                m.memory
            ));
        }
        if ![100, 250, 300, 1000].contains(&k.hz) {
            return inv(format!(
                "kernel.hz = {} is not a CONFIG_HZ value (100, 250, 300, 1000)",
                k.hz
            ));
        }
        if k.dirty_ratio == 0 && k.dirty_bytes.0 == 0 {
            return inv(
                "kernel.dirty_ratio = 0 is below the minimum 1 (or set kernel.dirty_bytes)".into(),
            );
        }
        // dirty_bytes_min: two pages (page-writeback.c).
        if (1..2 * crate::mm::page::PAGE_SIZE).contains(&k.dirty_bytes.0) {
            return inv(format!(
                "kernel.dirty_bytes = {} is below the minimum {} (two pages; 0 uses dirty_ratio)",
                k.dirty_bytes.0,
                2 * crate::mm::page::PAGE_SIZE
            ));
        }
        if k.dirty_writeback_centisecs == 0 {
            return inv("kernel.dirty_writeback_centisecs must be > 0".into());
        }
        Ok(())
    }

    /// Checks `[[task]]` number `i`; returns the tasks it starts.
    fn validate_task(&self, i: usize, t: &TaskSpec) -> Result<u64> {
        let m = &self.machine;
        let at = format!("[[task]] #{} \"{}\"", i + 1, clip(&t.name));
        let inv = |msg: String| Err(Error::Invalid(format!("{at}: {msg}")));
        // A key above its maximum; `op` names the operation (`program[3] `) or is empty.
        let max =
            |op: &str, name: &str, v: u64, shown: &dyn std::fmt::Display| match table_knob_named(
                "[[task]]", name,
            )
            .exceeds(v, shown)
            {
                Some(msg) => Err(Error::Invalid(format!("{at}: {op}{msg}"))),
                None => Ok(()),
            };
        if t.name.is_empty() || t.name.len() > 15 || t.name.contains(char::is_whitespace) {
            return inv("name must be 1..15 characters without spaces (TASK_COMM_LEN)".into());
        }
        if t.count == 0 {
            return inv("count must be >= 1".into());
        }
        max("", "count", t.count, &t.count)?;
        if t.repeat == 0 {
            return inv("repeat must be >= 1".into());
        }
        max("", "repeat", t.repeat, &t.repeat)?;
        for name in &t.until_exit {
            if name == &t.name {
                return inv(format!("until_exit: \"{}\" is the task itself", clip(name)));
            }
            if !self.tasks.iter().any(|o| &o.name == name) {
                return inv(format!(
                    "until_exit: no [[task]] is named \"{}\"",
                    clip(name)
                ));
            }
        }
        let taken = t.snapshots_taken();
        if taken > MAX_SNAPSHOTS {
            return inv(format!(
                "takes up to {taken} snapshots (count x repeat x snapshot operations); \
                 the maximum is {MAX_SNAPSHOTS} per run"
            ));
        }
        for (j, op) in t.program.iter().enumerate() {
            let at_op = |msg: String| inv(format!("program[{j}] {msg}"));
            if let Op::Write { file, .. }
            | Op::Read { file, .. }
            | Op::Unlink { file }
            | Op::Fadvise { file, .. } = op
            {
                if let Some(bad) = bad_file_placeholder(file) {
                    return at_op(format!(
                        "file \"{}\": unknown placeholder {} (known: {})",
                        clip(file),
                        clip(&bad),
                        FILE_PLACEHOLDERS.join(", ")
                    ));
                }
            }
            let op_at = format!("program[{j}] ");
            let max_op =
                |name: &str, v: u64, shown: &dyn std::fmt::Display| max(&op_at, name, v, shown);
            match op {
                Op::Alloc {
                    order, count, gfp, ..
                } => {
                    if *order > crate::mm::mmzone::MAX_PAGE_ORDER as u32 {
                        return at_op(format!("alloc order {order} is above MAX_PAGE_ORDER (10)"));
                    }
                    if *count == 0 {
                        return at_op("alloc count must be >= 1".into());
                    }
                    max_op("alloc.count", *count, count)?;
                    if let Err(bad) = crate::mm::gfp::gfp_modifiers(gfp) {
                        return at_op(format!(
                            "alloc gfp: unknown flag '{}' (known: {})",
                            clip(&bad),
                            crate::mm::gfp::GFP_MODIFIERS
                                .iter()
                                .map(|(n, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
                Op::Free { count: Some(c), .. } => max_op("free.count", *c, c)?,
                Op::NrHugepages { pages, node } => {
                    max_op("nr_hugepages.pages", *pages, pages)?;
                    if pages.saturating_mul(HPAGE_SIZE) > m.memory.0 {
                        return at_op(format!(
                            "nr_hugepages {pages} ({} MiB) is more than the machine's memory ({})",
                            pages.saturating_mul(2),
                            m.memory
                        ));
                    }
                    if node.is_some_and(|n| n >= m.nodes) {
                        return at_op(format!(
                            "nr_hugepages node {} does not exist (machine.nodes = {})",
                            node.unwrap_or(0),
                            m.nodes
                        ));
                    }
                }
                Op::Slab { cache, .. } | Op::SlabFree { cache, .. }
                    if crate::mm::slab::builtin_cache(cache).is_none() =>
                {
                    return at_op(format!(
                        "unknown slab cache '{}' (known: {})",
                        clip(cache),
                        crate::mm::slab::builtin_names().join(", ")
                    ));
                }
                Op::Slab { objects, .. } => max_op("slab.objects", *objects, objects)?,
                Op::SlabFree {
                    objects: Some(o), ..
                } => max_op("slab_free.objects", *o, o)?,
                Op::FioWrite {
                    files,
                    file_size,
                    bs,
                } => {
                    if *files == 0 || file_size.0 == 0 {
                        return at_op("fio_write needs files >= 1 and a file_size > 0".into());
                    }
                    if let Some(msg) = bad_bs("fio_write", bs) {
                        return at_op(msg);
                    }
                    max_op("fio_write.files", *files, files)?;
                    if files
                        .checked_mul(file_size.0)
                        .is_none_or(|b| b > MAX_IO_SIZE)
                    {
                        return at_op(format!(
                            "fio_write: {files} files of {file_size} is above the maximum {} in all",
                            Bytes(MAX_IO_SIZE)
                        ));
                    }
                }
                Op::FioRead { count, .. } => max_op("fio_read.count", *count, count)?,
                Op::Wait { count, .. } => max_op("wait.count", *count, count)?,
                Op::SleepElapsed { upto: Some(name) } if !self.signals(name) => {
                    return at_op(format!(
                        "sleep_elapsed: upto \"{}\" is not a counter any task signals",
                        clip(name)
                    ));
                }
                Op::Write { file, size, bs } => {
                    if file.is_empty() {
                        return at_op("write: file must be a non-empty name".into());
                    }
                    max_op("write.size", size.0, size)?;
                    if let Some(msg) = bad_bs("write", bs) {
                        return at_op(msg);
                    }
                }
                Op::Read { file, size, bs } => {
                    if file.is_empty() {
                        return at_op("read: file must be a non-empty name".into());
                    }
                    if let Some(msg) = bad_bs("read", bs) {
                        return at_op(msg);
                    }
                    if let Some(sz) = size {
                        max_op("read.size", sz.0, sz)?;
                    }
                }
                Op::Unlink { file } if file.is_empty() => {
                    return at_op("unlink: file must be a non-empty name".into());
                }
                Op::Fadvise { file, .. } if file.is_empty() => {
                    return at_op("fadvise: file must be a non-empty name".into());
                }
                Op::Swapon { path } | Op::Swapoff { path } if self.swap_type_of(path).is_none() => {
                    let what = if matches!(op, Op::Swapon { .. }) {
                        "swapon"
                    } else {
                        "swapoff"
                    };
                    return at_op(format!(
                        "{what}: no [[swap]] device has path \"{}\"{}",
                        clip(&path.escape_debug().to_string()),
                        if self.machine.swap.0 > 0 {
                            " (machine.swap is \"/swapfile\")"
                        } else {
                            ""
                        }
                    ));
                }
                Op::CgroupWrite {
                    file,
                    value: CgroupValue::Max,
                    ..
                } if file == "memory.reclaim" => {
                    return at_op(
                        "cgroup_write: memory.reclaim takes a size (\"max\" is not one)".into(),
                    );
                }
                Op::CgroupWrite { cgroup, file, .. } => {
                    let Some(spec) = self.cgroups.iter().find(|c| c.path == *cgroup) else {
                        return at_op(format!(
                            "cgroup_write: no [[cgroup]] has path \"{}\"",
                            clip(&cgroup.escape_debug().to_string())
                        ));
                    };
                    let v2 = spec.hierarchy == CgroupHierarchy::V2;
                    if crate::mm::memcg_write::MemcgFile::parse(file, v2).is_none() {
                        return at_op(format!(
                            "cgroup_write: \"{}\" is not a cgroup {} file vmsim can write (one of {})",
                            clip(&file.escape_debug().to_string()),
                            if v2 { "v2" } else { "v1" },
                            crate::mm::memcg_write::MemcgFile::names(v2)
                        ));
                    }
                }
                Op::ShapeFreeLists { buddyinfo, size } => {
                    let targets = match crate::mm::free_area_layout::parse_buddyinfo(buddyinfo) {
                        Ok(t) => t,
                        Err(e) => return at_op(format!("shape_free_lists: {e}")),
                    };
                    for t in &targets {
                        if t.nid >= m.nodes as usize {
                            return at_op(format!(
                                "shape_free_lists: node {} is not one of the machine's {} nodes",
                                t.nid, m.nodes
                            ));
                        }
                        let pages = m.memory.0 / 4096;
                        if let Some((k, n)) = t.counts.iter().enumerate().find(|&(k, &n)| {
                            n.checked_shl(k as u32)
                                .is_none_or(|p| p >> k != n || p > pages)
                        }) {
                            return at_op(format!(
                                "shape_free_lists: {n} free blocks of order {k} are more than the machine's memory ({})",
                                m.memory
                            ));
                        }
                        if !["DMA", "DMA32", "Normal"].contains(&t.zone.as_str()) {
                            return at_op(format!(
                                "shape_free_lists: unknown zone '{}' (DMA, DMA32 or Normal)",
                                clip(&t.zone)
                            ));
                        }
                    }
                    if size.0 > m.memory.0 {
                        return at_op(format!(
                            "shape_free_lists size {size} is more than the machine's memory ({})",
                            m.memory
                        ));
                    }
                }
                Op::DropCaches { value } if !(1..=4).contains(value) => {
                    return at_op(format!(
                        "drop_caches value {value} is outside the kernel's bounds 1..=4"
                    ));
                }
                Op::Sysctl { name, value } => {
                    if let Some(msg) = crate::mm::sysctl::check_vm_sysctl(name, *value) {
                        return at_op(msg);
                    }
                    if name == "vm.nr_hugepages" {
                        max_op("nr_hugepages.pages", *value, value)?;
                        if value.saturating_mul(HPAGE_SIZE) > m.memory.0 {
                            return at_op(format!(
                                "sysctl vm.nr_hugepages = {value} ({} MiB) is more than the machine's memory ({})",
                                value.saturating_mul(2),
                                m.memory
                            ));
                        }
                    }
                    if name == "vm.min_free_kbytes" && value.saturating_mul(1024) >= m.memory.0 {
                        return at_op(format!(
                            "sysctl vm.min_free_kbytes = {value} is not below the machine's memory ({})",
                            m.memory
                        ));
                    }
                }
                Op::UnlinkDir { dir } if dir.is_empty() || dir.contains('{') => {
                    return at_op(
                        "unlink_dir: dir must be a non-empty name without placeholders".into(),
                    );
                }
                Op::Touch { size, .. } | Op::Unmap { size } | Op::ThpFault { size }
                    if size.0 > m.memory.0.saturating_mul(64) =>
                {
                    return at_op(format!(
                        "size {size} is larger than any address space here (at most 64 × machine.memory)"
                    ));
                }
                _ => {}
            }
        }
        Ok(t.count)
    }

    /// Whether some task's program signals the counter `name`.
    fn signals(&self, name: &str) -> bool {
        self.tasks.iter().any(|t| {
            t.program
                .iter()
                .any(|op| matches!(op, Op::Signal { name: n } if n == name))
        })
    }

    /// The swap type (index) of a device path: `machine.swap`'s "/swapfile" first, then
    /// the `[[swap]]` entries in order.
    pub fn swap_type_of(&self, path: &str) -> Option<usize> {
        let legacy = (self.machine.swap.0 > 0) as usize;
        if legacy == 1 && path == "/swapfile" {
            return Some(0);
        }
        self.swap
            .iter()
            .position(|s| s.path == path)
            .map(|i| i + legacy)
    }

    /// Checks the `[[swap]]` tables (sys_swapon's refusals): a path each, not twice, at
    /// least 10 pages (mkswap's minimum), a priority of 0..=32767 (SWAP_FLAG_PRIO_MASK).
    fn validate_swap(&self) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        if self.machine.swap.0 > 0 {
            seen.insert("/swapfile");
        }
        let mut slots = self.machine.swap.0 / crate::mm::page::PAGE_SIZE;
        for (i, sw) in self.swap.iter().enumerate() {
            let at = format!(
                "[[swap]] #{} \"{}\"",
                i + 1,
                clip(&sw.path.escape_debug().to_string())
            );
            let bad = |msg: String| Err(Error::Invalid(format!("{at}: {msg}")));
            if sw.path.is_empty() {
                return bad("path must be a non-empty name".into());
            }
            if !seen.insert(sw.path.as_str()) {
                return bad(if sw.path == "/swapfile" && self.machine.swap.0 > 0 {
                    "machine.swap is already the device \"/swapfile\"".into()
                } else {
                    "a swap device of this path is already declared".into()
                });
            }
            let zram = sw.kind == SwapType::Zram;
            let (key, size) = match (zram, sw.size, sw.disksize) {
                (false, Some(b), None) => ("size", b),
                (true, None, Some(b)) => ("disksize", b),
                (false, _, Some(_)) => {
                    return bad("disksize is a zram key (a file or partition has size)".into())
                }
                (true, Some(_), _) => return bad("a zram device has disksize, not size".into()),
                (false, None, None) => return bad("size is required".into()),
                (true, None, None) => return bad("disksize is required".into()),
            };
            if !zram
                && (sw.comp_ratio.is_some()
                    || sw.compress_ns.is_some()
                    || sw.decompress_ns.is_some())
            {
                return bad("comp_ratio, compress_ns and decompress_ns are zram keys".into());
            }
            if size.0 < 10 * crate::mm::page::PAGE_SIZE {
                return bad(format!(
                    "{key} = {size} is below mkswap's minimum of 10 pages (40 KiB)"
                ));
            }
            if let Some(msg) = table_knob_named("[[swap]]", "size").exceeds(size.0, &size) {
                return bad(msg.replacen("size", key, 1));
            }
            if let Some(r) = sw.comp_ratio.filter(|r| !(1.0..=128.0).contains(r)) {
                return bad(format!(
                    "comp_ratio = {r} is outside 1..=128 (a page compresses to at most 4096 and at least 32 bytes)"
                ));
            }
            for (k, v) in [
                ("compress_ns", sw.compress_ns),
                ("decompress_ns", sw.decompress_ns),
            ] {
                if let Some(v) = v.filter(|&v| v > 1_000_000_000) {
                    return bad(format!(
                        "{k} = {v} is above the maximum 1000000000 (1 s per page)"
                    ));
                }
            }
            if let Some(p) = sw.priority.filter(|p| !(0..=32767).contains(p)) {
                return bad(format!(
                    "priority = {p} is outside 0..=32767 (swapon -p; negative priorities are assigned automatically)"
                ));
            }
            slots += size.0 / crate::mm::page::PAGE_SIZE;
        }
        if slots > MAX_SWAP / crate::mm::page::PAGE_SIZE {
            return Err(Error::Invalid(format!(
                "machine.swap and the [[swap]] devices have {} of swap together; the maximum is {}",
                Bytes(slots * crate::mm::page::PAGE_SIZE),
                Bytes(MAX_SWAP)
            )));
        }
        Ok(())
    }

    /// Checks the `[[file]]` tables: a non-empty name each, no name twice, a size that fits
    /// the file's extent on the disk.
    fn validate_files(&self) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in self.files.iter().enumerate() {
            let at = format!(
                "[[file]] #{} \"{}\"",
                i + 1,
                clip(&f.name.escape_debug().to_string())
            );
            if f.name.is_empty() {
                return Err(Error::Invalid(format!(
                    "{at}: name must be a non-empty file name"
                )));
            }
            if !seen.insert(f.name.as_str()) {
                return Err(Error::Invalid(format!(
                    "{at}: a file of this name is already declared"
                )));
            }
            if let Some(msg) = table_knob_named("[[file]]", "size").exceeds(f.size.0, &f.size) {
                return Err(Error::Invalid(format!(
                    "{at}: {msg} (a file's extent on the disk)"
                )));
            }
        }
        Ok(())
    }

    /// Checks the `[[cgroup]]` entries and the tasks' `cgroup` keys.
    fn validate_cgroups(&self) -> Result<()> {
        let inv = |m: String| Err(Error::Invalid(m));
        let mut known: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        let mut total = 0u64;
        for (i, c) in self.cgroups.iter().enumerate() {
            let p = c.path.as_str();
            let at = format!(
                "[[cgroup]] #{} \"{}\"",
                i + 1,
                clip(&p.escape_debug().to_string())
            );
            if p.is_empty()
                || p.starts_with('/')
                || p.split('/')
                    .any(|part| part.is_empty() || part == "." || part == "..")
            {
                return inv(format!(
                    "{at}: path must be relative names joined by '/', like \"A\" or \"bunch/x\" (no empty, '.' or '..' parts)"
                ));
            }
            // cgroup_mkdir() refuses a '\n', which would make /proc/<pid>/cgroup unparsable.
            if p.contains('\n') {
                return inv(format!(
                    "{at}: path must not contain a newline (cgroup_mkdir refuses it)"
                ));
            }
            if known.contains(p) {
                return inv(format!("{at}: declared twice"));
            }
            if let Some((parent, _)) = p.rsplit_once('/') {
                if !known.contains(parent) {
                    return inv(format!(
                        "{at}: its parent \"{}\" must be declared before it",
                        clip(parent)
                    ));
                }
            }
            let first = &self.cgroups[0];
            if c.hierarchy != first.hierarchy {
                return inv(format!(
                    "{at} is on {:?} but \"{}\" is on {:?}: the memory controller is bound to one hierarchy",
                    c.hierarchy,
                    clip(&first.path),
                    first.hierarchy
                ));
            }
            let (foreign, names) = match c.hierarchy {
                CgroupHierarchy::V1 => (
                    [
                        c.max.is_some(),
                        c.high.is_some(),
                        c.min.is_some(),
                        c.low.is_some(),
                    ],
                    ["max", "high", "min", "low"],
                ),
                CgroupHierarchy::V2 => (
                    [
                        c.limit_in_bytes.is_some(),
                        c.soft_limit_in_bytes.is_some(),
                        false,
                        false,
                    ],
                    [
                        "limit_in_bytes (v2 calls it max)",
                        "soft_limit_in_bytes (v1 only)",
                        "",
                        "",
                    ],
                ),
            };
            if let Some(j) = foreign.iter().position(|&f| f) {
                let other = match c.hierarchy {
                    CgroupHierarchy::V1 => "a cgroup v2 file (set hierarchy = \"v2\")",
                    CgroupHierarchy::V2 => "a cgroup v1 file",
                };
                return inv(format!("{at}: {} is {other}", names[j]));
            }
            if let Some(msg) = c.swap_files_problem() {
                return inv(format!("{at}: {msg}"));
            }
            if let Some(g) = &c.generate {
                if let Some(msg) =
                    table_knob_named("[[cgroup]]", "generate.groups").exceeds(g.groups, &g.groups)
                {
                    return inv(format!("{at}: {msg}"));
                }
            }
            known.insert(p);
            total = total
                .saturating_add(1)
                .saturating_add(c.generate.as_ref().map_or(0, |g| g.groups));
        }
        if total > MAX_CGROUPS {
            return inv(format!(
                "{total} cgroups is too many (at most {MAX_CGROUPS}, generated ones included)"
            ));
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if let Some(cg) = &t.cgroup {
                if !known.contains(cg.as_str()) {
                    return inv(format!(
                        "[[task]] #{} \"{}\": cgroup \"{}\" is not declared in a [[cgroup]] table",
                        i + 1,
                        clip(&t.name),
                        clip(cg)
                    ));
                }
            }
        }
        Ok(())
    }
}

impl CgroupSpec {
    /// What is wrong with the group's swap files, in one line (the kernel's EINVAL cases):
    /// each on its own hierarchy, swappiness at most 200 (MAX_SWAPPINESS), memsw at least
    /// the memory limit (memcg1's mem_cgroup_resize_max).
    fn swap_files_problem(&self) -> Option<String> {
        match self.hierarchy {
            CgroupHierarchy::V1 if self.swap.is_some() => {
                return Some("swap.max is a cgroup v2 file (set hierarchy = \"v2\"; v1 limits memory+swap with memsw.limit_in_bytes)".into());
            }
            CgroupHierarchy::V2 if self.memsw.is_some() => {
                return Some(
                    "memsw.limit_in_bytes is a cgroup v1 file (v2 limits swap alone with swap.max)"
                        .into(),
                );
            }
            CgroupHierarchy::V2 if self.swappiness.is_some() => {
                return Some(
                    "swappiness is a cgroup v1 file (v2 groups follow vm.swappiness)".into(),
                );
            }
            _ => {}
        }
        if let Some(v) = self.swappiness.filter(|&v| v > 200) {
            return Some(format!("swappiness = {v} is above the maximum 200"));
        }
        let memsw = self.memsw.as_ref()?.limit_in_bytes.0;
        match self.limit_in_bytes {
            Some(l) if l.0 <= memsw => None,
            Some(l) => Some(format!(
                "memsw.limit_in_bytes ({memsw}) is below limit_in_bytes ({}); the kernel refuses it (EINVAL)",
                l.0
            )),
            None => Some(format!(
                "memsw.limit_in_bytes ({memsw}) needs limit_in_bytes at or below it (memory+swap cannot be limited below unlimited memory: EINVAL)"
            )),
        }
    }
}

/// Squeezes toml's multi-line diagnostics into one line naming the line, the table (with its
/// number among tables of the same name) and the key, in the words a scenario uses.
pub(crate) fn one_line_toml_error(e: &toml::de::Error, text: &str) -> String {
    let msg = plain_serde_words(&e.message().trim().replace('\n', " "));
    let Some(span) = e.span() else {
        return clip_words(&msg);
    };
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = text[..start].matches('\n').count() + 1;
    let this_line = text[line_start..line_end].trim();
    // An error at a table header is about that table (a missing key) or is a table the
    // top level does not have (an unknown key).
    let header_here = this_line.starts_with('[');
    if header_here && msg.starts_with("unknown field") {
        let rest = msg.trim_start_matches("unknown field ");
        return clip_words(&format!(
            "line {line}: unknown table {}{}",
            header_name(this_line),
            rest.find(',')
                .map_or(String::new(), |i| rest[i..].to_string())
        ));
    }
    let upto = if header_here {
        &text[..line_end]
    } else {
        &text[..line_start]
    };
    let table = upto
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.contains('='))
        .map(|l| {
            let h = header_name(l);
            if h.starts_with("[[") {
                // Which of the tables of that name: the first is #1.
                let n = upto.lines().filter(|x| header_name(x.trim()) == h).count();
                format!(" in {h} #{n}")
            } else {
                format!(" in {h}")
            }
        })
        .unwrap_or_default();
    // The key whose value is wrong: the last `key =` before the error on its line.
    let key = if header_here {
        String::new()
    } else {
        text[line_start..start]
            .rsplit_once('=')
            .map(|(before, _)| {
                before
                    .rsplit(|c: char| c == '{' || c == ',' || c.is_whitespace())
                    .find(|w| !w.is_empty())
                    .unwrap_or("")
                    .trim_matches('"')
                    .to_string()
            })
            .filter(|k| !k.is_empty() && !msg.contains(&format!("`{k}`")))
            .map(|k| format!("{}: ", clip(&k)))
            .unwrap_or_default()
    };
    clip_words(&format!("line {line}{table}: {key}{msg}"))
}

/// The header of a table line without its comment: `[[task]]`, `[machine]`.
fn header_name(line: &str) -> &str {
    line.split('#').next().unwrap_or(line).trim()
}

/// serde's words for types and values as a scenario's reader knows them.
fn plain_serde_words(msg: &str) -> String {
    let whole = "a whole number 0..=18446744073709551615";
    let mut m = msg
        .replace(" as i128", "")
        .replace("expected u64", &format!("expected {whole}"))
        .replace("expected u32", "expected a whole number 0..=4294967295")
        .replace(
            ", there are no fields",
            " (this operation takes no other keys)",
        );
    // "invalid type: boolean `true`, expected X" -> "expected X, got boolean `true`"
    for what in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = m.strip_prefix(what) {
            if let Some((got, expected)) = rest.split_once(", expected ") {
                // serde names a table by its Rust type ("struct Machine").
                let expected = match expected.strip_prefix("struct ") {
                    Some(_) => "a table",
                    None => expected,
                };
                m = format!("expected {expected}, got {got}");
            }
        }
    }
    m
}

/// A message with every word longer than 80 characters clipped (a 1 MB key is not echoed whole).
fn clip_words(msg: &str) -> String {
    msg.split(' ')
        .map(|w| {
            if w.chars().count() > 80 {
                clip(w)
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scenario_parses() {
        let sc = Scenario::from_toml(DEFAULT_SCENARIO).unwrap();
        assert!(!sc.tasks.is_empty());
    }

    #[test]
    fn unknown_key_is_named() {
        let e = Scenario::from_toml("[machine]\nmemroy = \"1GiB\"\n").unwrap_err();
        assert!(e.to_string().contains("memroy"), "{e}");
        assert!(e.to_string().contains("line 2 in [machine]"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn bad_unit_is_named() {
        let e = Scenario::from_toml("[machine]\nmemory = \"8 parsecs\"\n").unwrap_err();
        assert!(e.to_string().contains("parsecs"), "{e}");
    }

    #[test]
    fn impossible_sizes_are_rejected() {
        assert!(Scenario::from_toml("[machine]\ncpus = 0\n").is_err());
        assert!(Scenario::from_toml("[machine]\nmemory = \"1MiB\"\n").is_err());
        assert!(Scenario::from_toml("[machine]\nmemory = \"64TiB\"\n").is_err());
        let e = Scenario::from_toml("[[task]]\nname=\"a\"\nprogram=[{op=\"alloc\", order=11}]\n")
            .unwrap_err();
        assert!(e.to_string().contains("order 11"), "{e}");
    }

    #[test]
    fn seed_era_pcp_and_retry_knobs_are_range_checked() {
        for (knob, bad) in [("pcp_high_batches", 65), ("highorder_retry", 0)] {
            let e = Scenario::from_toml(&format!("[kernel]\n{knob} = {bad}\n")).unwrap_err();
            assert!(
                e.to_string().contains(&format!("kernel.{knob} = {bad}")),
                "{e}"
            );
        }
        let ok = Scenario::from_toml("[kernel]\npcp_high_batches = 8\nhighorder_retry = 3\n");
        assert!(ok.is_ok());
    }

    #[test]
    fn knobs_are_documented() {
        let t = knob_table();
        assert!(t.iter().any(|k| k.name == "min_free_kbytes"));
        assert!(t
            .iter()
            .all(|k| !k.doc.is_empty() && k.unit.starts_with('[')));
    }

    fn err(text: &str) -> String {
        let e = Scenario::from_toml(text)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn counts_past_their_maximum_name_the_table_and_key() {
        let e = err("[[task]]\nname = \"x\"\nprogram = []\n[[task]]\nname = \"cc1\"\ncount = 18446744073709551615\nprogram = []\n");
        assert_eq!(
            e,
            "scenario: [[task]] #2 \"cc1\": count: 18446744073709551615 is above the maximum 1000000"
        );
        // Two counts whose sum passes 2^64 do not wrap.
        let t = "[[task]]\nname = \"a\"\ncount = 900000\nprogram = []\n";
        assert!(err(&format!("{t}{t}")).contains("1800000 tasks is too many"));
        let e = err("[[hackbench]]\ngroups = 4294967296\nfds = 4294967296\n");
        assert!(
            e.contains(
                "[[hackbench]] #1 \"hackbench\": groups: 4294967296 is above the maximum 1000000"
            ),
            "{e}"
        );
        let e = err("[[hackbench]]\ngroups = 1000000\nfds = 1000000\n");
        assert!(e.contains("2000000000001 tasks, above the maximum"), "{e}");
        let e = err("[[cgroup]]\npath = \"A\"\ngenerate = { shape = \"flat\", groups = 18446744073709551615 }\n");
        assert!(
            e.contains("generate.groups: 18446744073709551615 is above the maximum 1000000"),
            "{e}"
        );
        let c = "generate = { shape = \"flat\", groups = 900000 }\n";
        let e = err(&format!(
            "[[cgroup]]\npath = \"A\"\n{c}[[cgroup]]\npath = \"B\"\n{c}"
        ));
        assert!(e.contains("1800002 cgroups is too many"), "{e}");
    }

    #[test]
    fn section_maxima_come_from_the_declaration() {
        let e = err("[cost]\npcp_alloc = 18446744073709551615\n");
        assert_eq!(
            e,
            "scenario: cost.pcp_alloc = 18446744073709551615 is above the maximum 1000000000"
        );
        let k = knob_table();
        let cost = k.iter().find(|k| k.name == "pcp_alloc").unwrap();
        assert_eq!(cost.max_text().as_deref(), Some("1000000000"));
        let mem = k.iter().find(|k| k.name == "memory").unwrap();
        assert_eq!(mem.max_text().as_deref(), Some("16TiB"));
        assert!(err("[machine]\nmemory = \"32TiB\"\n")
            .contains("machine.memory = 32TiB is above the maximum 16TiB"));
        // Every default is within its maximum.
        assert!(Scenario::from_toml("").is_ok());
    }

    #[test]
    fn kernel_sysctl_bounds_mirror_the_kernel() {
        let e = err("[machine]\nmemory = \"1GiB\"\n[kernel]\nmin_free_kbytes = 1000000000000\n");
        assert!(
            e.contains("kernel.min_free_kbytes = 1000000000000 is above the maximum 2147483647"),
            "{e}"
        );
        let e = err("[machine]\nmemory = \"1GiB\"\n[kernel]\nmin_free_kbytes = 1048576\n");
        assert!(
            e.contains("is not below the machine's memory (1GiB)"),
            "{e}"
        );
        for f in 1..8 {
            let e = err(&format!("[kernel]\npercpu_pagelist_high_fraction = {f}\n"));
            assert!(e.contains("must be 0 or at least 8"), "{e}");
        }
        assert!(Scenario::from_toml("[kernel]\npercpu_pagelist_high_fraction = 8\n").is_ok());
    }

    #[test]
    fn odd_names_and_keys_are_refused() {
        assert!(
            err("[[task]]\nname = \"a\"\nprogram = [{op = \"exit\", foo = 1}]\n")
                .contains("unknown field `foo`")
        );
        assert!(err(
            "[[task]]\nname = \"a\"\nprogram = [{op = \"write\", file = \"\", size = \"1MiB\"}]\n"
        )
        .contains("program[0] write: file must be a non-empty name"));
        for p in ["\".\"", "\"A/./B\"", "\"A\\nB\"", "\"A//B\"", "\"..\""] {
            let e = err(&format!("[[cgroup]]\npath = {p}\n"));
            assert!(e.contains("[[cgroup]] #1"), "{e}");
        }
        // memory.min above memory.max: the kernel accepts it (memory_min_write), so do we.
        assert!(Scenario::from_toml(
            "[[cgroup]]\npath = \"A\"\nhierarchy = \"v2\"\nmax = \"1GiB\"\nmin = \"2GiB\"\nlow = \"3GiB\"\n"
        )
        .is_ok());
    }

    #[test]
    fn parse_errors_name_the_right_table_and_key() {
        assert_eq!(
            err("[machine]\nmemory = true\n"),
            "scenario: line 2 in [machine]: memory: expected a size such as \"8GiB\" or a number of bytes, got boolean `true`"
        );
        assert_eq!(
            err("[machine]\ncpus = 2\n[[task]]\ncount = 2\nprogram = []\n"),
            "scenario: line 3 in [[task]] #1: missing field `name`"
        );
        assert!(err("[[task]]\nname = \"a\"\nprogram = []\n[a]\nb = 1\n")
            .starts_with("scenario: line 4: unknown table [a], expected one of `name`"));
        let e = err(&format!("[machine]\n{} = 1\n", "k".repeat(1_000_000)));
        assert!(e.len() < 600 && e.contains('…'), "{}", e.len());
        let e = err(&format!(
            "[[task]]\nname = \"{}\"\nprogram = []\n",
            "n".repeat(1_000_000)
        ));
        assert!(e.len() < 300 && e.contains('…'), "{}", e.len());
        assert!(!err("[machine]\nswap = [1]\n").contains("NumOrStr"));
    }
}
