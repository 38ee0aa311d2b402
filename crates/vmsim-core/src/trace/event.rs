//! The simulated tracepoint events.
//!
//! One [`TraceEvent`] variant per kernel tracepoint, with the fields of the
//! event's 6.18 `format` file under their kernel names (`events/<sys>/<event>/format`,
//! KERNEL-FORMATS.md §2.1–2.4). Field types follow the kernel's: `int` is
//! `i32`, `unsigned int` is `u32`, `long` is `i64`, `unsigned long` is `u64`.
//! Printing follows the print fmt, including its casts (a `%ld` of an
//! `unsigned long` prints the value as signed, as the kernel does).
//!
//! Conventions:
//!
//! - **GFP masks** (`gfp_flags`, `gfp_mask`) are `u32` bit sets with vmsim's
//!   own bit values (`crate::mm::gfp::Gfp(..).0`); they are printed with the
//!   kernel's names (see [`super::flags::show_gfp_flags`]).
//! - **Pages** are identified by `pfn`; the `page=%p` column is derived from
//!   it. A `pfn` of [`PFN_NONE`] is the kernel's `-1UL` (failed allocation).
//! - **Pointers** that are not pages (`shr` of the shrinker events) are plain
//!   `u64` identities; only their hash is printed.
//! - **Symbolic fields** (`lru`, compaction `status`/`ret`, zone `idx`,
//!   writeback `reason`, …) are the kernel's integers; the `LRU_*`,
//!   `COMPACT_*`, `ZONE_*`, `WB_REASON_*`, `RECLAIM_WB_*` and
//!   `_VMSCAN_THROTTLE_*` constants below name them.
//! - **Devices** (the writeback `name`/`bdi` and `sb_dev`) are `dev_t` values
//!   in the kernel's encoding `major << 20 | minor` (see [`mkdev`]); a block
//!   device's bdi is named `"major:minor"`, which is what is printed.
//! - **Legacy-only fields** (`may_writepage`, `isolate_mode`, `contig_*`,
//!   the `zid` of `lru_shrink_inactive`) exist only in the 2.6.35-era formats
//!   ([`super::TraceFormat::Legacy`]); the modern rendering ignores them.
//!   Set them to 0 if you never render legacy traces.

/// `-1UL`: the pfn of "no page" (`mm_page_alloc` of a failed allocation,
/// printed as `page=0000000000000000 pfn=0x0`).
pub const PFN_NONE: u64 = u64::MAX;

/// Builds a `dev_t` as the kernel's MKDEV does (`major << 20 | minor`).
pub const fn mkdev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & ((1 << 20) - 1))
}

/// `enum lru_list`: LRU_INACTIVE_ANON.
pub const LRU_INACTIVE_ANON: i32 = 0;
/// `enum lru_list`: LRU_ACTIVE_ANON.
pub const LRU_ACTIVE_ANON: i32 = 1;
/// `enum lru_list`: LRU_INACTIVE_FILE.
pub const LRU_INACTIVE_FILE: i32 = 2;
/// `enum lru_list`: LRU_ACTIVE_FILE.
pub const LRU_ACTIVE_FILE: i32 = 3;
/// `enum lru_list`: LRU_UNEVICTABLE.
pub const LRU_UNEVICTABLE: i32 = 4;

/// RECLAIM_WB_ANON (include/trace/events/vmscan.h).
pub const RECLAIM_WB_ANON: i32 = 0x0001;
/// RECLAIM_WB_FILE.
pub const RECLAIM_WB_FILE: i32 = 0x0002;
/// RECLAIM_WB_MIXED.
pub const RECLAIM_WB_MIXED: i32 = 0x0010;
/// RECLAIM_WB_SYNC.
pub const RECLAIM_WB_SYNC: i32 = 0x0004;
/// RECLAIM_WB_ASYNC.
pub const RECLAIM_WB_ASYNC: i32 = 0x0008;

/// `trace_reclaim_flags(file)`: what `lru_shrink_{in,}active` and
/// `write_folio` report today (always `…|RECLAIM_WB_ASYNC`).
pub const fn trace_reclaim_flags(file: bool) -> i32 {
    (if file {
        RECLAIM_WB_FILE
    } else {
        RECLAIM_WB_ANON
    }) | RECLAIM_WB_ASYNC
}

/// `_VMSCAN_THROTTLE_WRITEBACK` of trace/events/vmscan.h: the `mm_vmscan_throttled`
/// reason bit `1 << VMSCAN_THROTTLE_WRITEBACK` (the reason itself is in mm/vmscan.rs).
pub const _VMSCAN_THROTTLE_WRITEBACK: i32 = 1 << crate::mm::vmscan::VMSCAN_THROTTLE_WRITEBACK;
/// `_VMSCAN_THROTTLE_ISOLATED`: `1 << VMSCAN_THROTTLE_ISOLATED`.
pub const _VMSCAN_THROTTLE_ISOLATED: i32 = 1 << crate::mm::vmscan::VMSCAN_THROTTLE_ISOLATED;
/// `_VMSCAN_THROTTLE_NOPROGRESS`: `1 << VMSCAN_THROTTLE_NOPROGRESS`.
pub const _VMSCAN_THROTTLE_NOPROGRESS: i32 = 1 << crate::mm::vmscan::VMSCAN_THROTTLE_NOPROGRESS;
/// `_VMSCAN_THROTTLE_CONGESTED`: `1 << VMSCAN_THROTTLE_CONGESTED`.
pub const _VMSCAN_THROTTLE_CONGESTED: i32 = 1 << crate::mm::vmscan::VMSCAN_THROTTLE_CONGESTED;

/// Legacy `isolate_mode` of an inactive-list isolation. The values are the
/// isolate_mode_t bits (ISOLATE_INACTIVE 1, ISOLATE_ACTIVE 2, both 3) that
/// trace-vmscan-postprocess.pl's "isolate_mode != 2" rule is written for, so
/// that rotations of active pages are not counted as scanning.
pub const ISOLATE_INACTIVE: i32 = 1;
/// Legacy `isolate_mode` of an active-list isolation (ISOLATE_ACTIVE).
pub const ISOLATE_ACTIVE: i32 = 2;
/// Legacy `isolate_mode` of a lumpy isolation taking both lists.
pub const ISOLATE_BOTH: i32 = 3;

/// The legacy `isolate_mode` of an isolation from list `lru`.
pub const fn isolate_mode_for_lru(lru: i32) -> i32 {
    if lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE {
        ISOLATE_ACTIVE
    } else {
        ISOLATE_INACTIVE
    }
}

/// Zone index ZONE_DMA as printed by the compaction events.
pub const ZONE_DMA: u32 = 0;
/// ZONE_DMA32.
pub const ZONE_DMA32: u32 = 1;
/// ZONE_NORMAL.
pub const ZONE_NORMAL: u32 = 2;
/// ZONE_MOVABLE.
pub const ZONE_MOVABLE: u32 = 3;

/// `enum compact_result` COMPACT_NOT_SUITABLE_ZONE.
pub const COMPACT_NOT_SUITABLE_ZONE: i32 = 0;
/// COMPACT_SKIPPED.
pub const COMPACT_SKIPPED: i32 = 1;
/// COMPACT_DEFERRED.
pub const COMPACT_DEFERRED: i32 = 2;
/// COMPACT_NO_SUITABLE_PAGE.
pub const COMPACT_NO_SUITABLE_PAGE: i32 = 3;
/// COMPACT_CONTINUE.
pub const COMPACT_CONTINUE: i32 = 4;
/// COMPACT_COMPLETE.
pub const COMPACT_COMPLETE: i32 = 5;
/// COMPACT_PARTIAL_SKIPPED.
pub const COMPACT_PARTIAL_SKIPPED: i32 = 6;
/// COMPACT_CONTENDED.
pub const COMPACT_CONTENDED: i32 = 7;
/// COMPACT_SUCCESS.
pub const COMPACT_SUCCESS: i32 = 8;

/// `enum wb_reason` WB_REASON_BACKGROUND.
pub const WB_REASON_BACKGROUND: i32 = 0;
/// WB_REASON_VMSCAN.
pub const WB_REASON_VMSCAN: i32 = 1;
/// WB_REASON_SYNC.
pub const WB_REASON_SYNC: i32 = 2;
/// WB_REASON_PERIODIC.
pub const WB_REASON_PERIODIC: i32 = 3;
/// WB_REASON_LAPTOP_TIMER.
pub const WB_REASON_LAPTOP_TIMER: i32 = 4;
/// WB_REASON_FS_FREE_SPACE.
pub const WB_REASON_FS_FREE_SPACE: i32 = 5;
/// WB_REASON_FORKER_THREAD.
pub const WB_REASON_FORKER_THREAD: i32 = 6;
/// WB_REASON_FOREIGN_FLUSH.
pub const WB_REASON_FOREIGN_FLUSH: i32 = 7;

/// `%pS` of the workingset shadow-node shrinker, as this 6.18 kernel prints it.
pub const SHRINK_SCAN_SHADOW_NODES: &str = "scan_shadow_nodes+0x0/0x30";
/// `%pS` of the superblock (dentry/inode cache) shrinker.
pub const SHRINK_SUPER_CACHE_SCAN: &str = "super_cache_scan+0x0/0x210";

/// A simulated tracepoint hit. See the module docs for field conventions.
#[allow(missing_docs)] // fields carry the kernel's names; see the format files
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    // ---------------------------------------------------------------- vmscan
    /// vmscan/mm_vmscan_kswapd_sleep: `nid=%d`.
    MmVmscanKswapdSleep { nid: i32 },
    /// vmscan/mm_vmscan_kswapd_wake: `nid=%d order=%d` (`zid` is recorded
    /// but not printed).
    MmVmscanKswapdWake { nid: i32, zid: i32, order: i32 },
    /// vmscan/mm_vmscan_wakeup_kswapd: `nid=%d order=%d gfp_flags=%s`
    /// (`zid` not printed; legacy prints `nid zid order`).
    MmVmscanWakeupKswapd {
        nid: i32,
        zid: i32,
        order: i32,
        gfp_flags: u32,
    },
    /// vmscan/mm_vmscan_direct_reclaim_begin: `order=%d gfp_flags=%s`.
    /// `may_writepage` is legacy-only.
    MmVmscanDirectReclaimBegin {
        order: i32,
        gfp_flags: u32,
        may_writepage: i32,
    },
    /// vmscan/mm_vmscan_direct_reclaim_end: `nr_reclaimed=%lu`.
    MmVmscanDirectReclaimEnd { nr_reclaimed: u64 },
    /// vmscan/mm_vmscan_memcg_reclaim_begin (`may_writepage` legacy-only).
    MmVmscanMemcgReclaimBegin {
        order: i32,
        gfp_flags: u32,
        may_writepage: i32,
    },
    /// vmscan/mm_vmscan_memcg_reclaim_end.
    MmVmscanMemcgReclaimEnd { nr_reclaimed: u64 },
    /// vmscan/mm_vmscan_memcg_softlimit_reclaim_begin (`may_writepage`
    /// legacy-only).
    MmVmscanMemcgSoftlimitReclaimBegin {
        order: i32,
        gfp_flags: u32,
        may_writepage: i32,
    },
    /// vmscan/mm_vmscan_memcg_softlimit_reclaim_end.
    MmVmscanMemcgSoftlimitReclaimEnd { nr_reclaimed: u64 },
    /// vmscan/mm_shrink_slab_start. `shr` is the shrinker's identity (its
    /// hash is printed as `%p`); `shrink` is the `%pS` text of its scan
    /// function (e.g. [`SHRINK_SUPER_CACHE_SCAN`]).
    MmShrinkSlabStart {
        shr: u64,
        shrink: &'static str,
        nid: i32,
        nr_objects_to_shrink: i64,
        gfp_flags: u32,
        cache_items: u64,
        delta: u64,
        total_scan: u64,
        priority: i32,
    },
    /// vmscan/mm_shrink_slab_end.
    MmShrinkSlabEnd {
        shr: u64,
        nid: i32,
        shrink: &'static str,
        unused_scan: i64,
        new_scan: i64,
        retval: i32,
        total_scan: i64,
    },
    /// vmscan/mm_vmscan_lru_isolate: `classzone=%d order=%d nr_requested=%lu
    /// nr_scanned=%lu nr_skipped=%lu nr_taken=%lu lru=%s`. `isolate_mode`
    /// (see [`isolate_mode_for_lru`]) and `contig_*` are legacy-only.
    MmVmscanLruIsolate {
        highest_zoneidx: i32,
        order: i32,
        nr_requested: u64,
        nr_scanned: u64,
        nr_skipped: u64,
        nr_taken: u64,
        lru: i32,
        isolate_mode: i32,
        contig_taken: u64,
        contig_dirty: u64,
        contig_failed: u64,
    },
    /// vmscan/mm_vmscan_write_folio: `page=%p pfn=0x%lx flags=%s`
    /// (legacy: `mm_vmscan_writepage`, `page=%p pfn=%lu flags=%s`).
    MmVmscanWriteFolio { pfn: u64, reclaim_flags: i32 },
    /// vmscan/mm_vmscan_lru_shrink_inactive (`nr_activate0`/`1` are printed as
    /// `nr_activate_anon`/`_file`). `zid` is legacy-only.
    MmVmscanLruShrinkInactive {
        nid: i32,
        nr_scanned: u64,
        nr_reclaimed: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_congested: u64,
        nr_immediate: u64,
        nr_activate0: u32,
        nr_activate1: u32,
        nr_ref_keep: u64,
        nr_unmap_fail: u64,
        priority: i32,
        reclaim_flags: i32,
        zid: i32,
    },
    /// vmscan/mm_vmscan_lru_shrink_active. Legacy prints
    /// `lru=%s nr_scanned=%lu nr_rotated=%lu priority=%d` from `nr_taken`,
    /// `nr_referenced` (the old "rotated") and the file bit of `reclaim_flags`.
    MmVmscanLruShrinkActive {
        nid: i32,
        nr_taken: u64,
        nr_active: u64,
        nr_deactivated: u64,
        nr_referenced: u64,
        priority: i32,
        reclaim_flags: i32,
    },
    /// vmscan/mm_vmscan_reclaim_pages (proactive / `reclaim_pages()`).
    MmVmscanReclaimPages {
        nid: i32,
        nr_scanned: u64,
        nr_reclaimed: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_congested: u64,
        nr_immediate: u64,
        nr_activate0: u32,
        nr_activate1: u32,
        nr_ref_keep: u64,
        nr_unmap_fail: u64,
    },
    /// vmscan/mm_vmscan_node_reclaim_begin.
    MmVmscanNodeReclaimBegin {
        nid: i32,
        order: i32,
        gfp_flags: u32,
    },
    /// vmscan/mm_vmscan_node_reclaim_end.
    MmVmscanNodeReclaimEnd { nr_reclaimed: u64 },
    /// vmscan/mm_vmscan_throttled (`reason` is a `VMSCAN_THROTTLE_*` bit
    /// set; the kernel prints `usect_delayed=`, sic).
    MmVmscanThrottled {
        nid: i32,
        usec_timeout: i32,
        usec_delayed: i32,
        reason: i32,
    },

    // ------------------------------------------------------------------ kmem
    /// kmem/mm_page_alloc (`pfn` may be [`PFN_NONE`]).
    MmPageAlloc {
        pfn: u64,
        order: u32,
        gfp_flags: u32,
        migratetype: i32,
    },
    /// kmem/mm_page_free.
    MmPageFree { pfn: u64, order: u32 },
    /// kmem/mm_page_alloc_extfrag (`pageblock_order` and `fragmenting` are
    /// computed by the print fmt).
    MmPageAllocExtfrag {
        pfn: u64,
        alloc_order: i32,
        fallback_order: i32,
        alloc_migratetype: i32,
        fallback_migratetype: i32,
        change_ownership: i32,
    },
    /// kmem/mm_page_alloc_zone_locked (`pfn` may be [`PFN_NONE`]).
    MmPageAllocZoneLocked {
        pfn: u64,
        order: u32,
        migratetype: i32,
        percpu_refill: i32,
    },
    /// kmem/mm_page_pcpu_drain.
    MmPagePcpuDrain {
        pfn: u64,
        order: u32,
        migratetype: i32,
    },

    // ------------------------------------------------------------ compaction
    /// compaction/mm_compaction_begin.
    MmCompactionBegin {
        zone_start: u64,
        migrate_pfn: u64,
        free_pfn: u64,
        zone_end: u64,
        sync: bool,
    },
    /// compaction/mm_compaction_end (`status` is a `COMPACT_*`).
    MmCompactionEnd {
        zone_start: u64,
        migrate_pfn: u64,
        free_pfn: u64,
        zone_end: u64,
        sync: bool,
        status: i32,
    },
    /// compaction/mm_compaction_defer_compaction (`idx` is a `ZONE_*`).
    MmCompactionDeferCompaction {
        nid: i32,
        idx: u32,
        order: i32,
        considered: u32,
        defer_shift: u32,
        order_failed: i32,
    },
    /// compaction/mm_compaction_defer_reset.
    MmCompactionDeferReset {
        nid: i32,
        idx: u32,
        order: i32,
        considered: u32,
        defer_shift: u32,
        order_failed: i32,
    },
    /// compaction/mm_compaction_deferred.
    MmCompactionDeferred {
        nid: i32,
        idx: u32,
        order: i32,
        considered: u32,
        defer_shift: u32,
        order_failed: i32,
    },
    /// compaction/mm_compaction_fast_isolate_freepages.
    MmCompactionFastIsolateFreepages {
        start_pfn: u64,
        end_pfn: u64,
        nr_scanned: u64,
        nr_taken: u64,
    },
    /// compaction/mm_compaction_isolate_freepages.
    MmCompactionIsolateFreepages {
        start_pfn: u64,
        end_pfn: u64,
        nr_scanned: u64,
        nr_taken: u64,
    },
    /// compaction/mm_compaction_isolate_migratepages.
    MmCompactionIsolateMigratepages {
        start_pfn: u64,
        end_pfn: u64,
        nr_scanned: u64,
        nr_taken: u64,
    },
    /// compaction/mm_compaction_finished (`ret` is a `COMPACT_*`).
    MmCompactionFinished {
        nid: i32,
        idx: u32,
        order: i32,
        ret: i32,
    },
    /// compaction/mm_compaction_suitable (`ret` is a `COMPACT_*`).
    MmCompactionSuitable {
        nid: i32,
        idx: u32,
        order: i32,
        ret: i32,
    },
    /// compaction/mm_compaction_kcompactd_sleep.
    MmCompactionKcompactdSleep { nid: i32 },
    /// compaction/mm_compaction_kcompactd_wake (`classzone_idx=%-8s`: note the
    /// trailing padding the kernel prints).
    MmCompactionKcompactdWake {
        nid: i32,
        order: i32,
        highest_zoneidx: u32,
    },
    /// compaction/mm_compaction_wakeup_kcompactd.
    MmCompactionWakeupKcompactd {
        nid: i32,
        order: i32,
        highest_zoneidx: u32,
    },
    /// compaction/mm_compaction_migratepages.
    MmCompactionMigratepages { nr_migrated: u64, nr_failed: u64 },
    /// compaction/mm_compaction_try_to_compact_pages.
    MmCompactionTryToCompactPages {
        order: i32,
        gfp_mask: u32,
        prio: i32,
    },

    // ------------------------------------------------------------- writeback
    /// writeback/writeback_start (`name` is the bdi's `dev_t`, `reason` a
    /// `WB_REASON_*`).
    WritebackStart {
        name: u32,
        nr_pages: i64,
        sb_dev: u32,
        sync_mode: i32,
        for_kupdate: i32,
        range_cyclic: i32,
        for_background: i32,
        reason: i32,
        cgroup_ino: u64,
    },
    /// writeback/writeback_written.
    WritebackWritten {
        name: u32,
        nr_pages: i64,
        sb_dev: u32,
        sync_mode: i32,
        for_kupdate: i32,
        range_cyclic: i32,
        for_background: i32,
        reason: i32,
        cgroup_ino: u64,
    },
    /// writeback/writeback_queue.
    WritebackQueue {
        name: u32,
        nr_pages: i64,
        sb_dev: u32,
        sync_mode: i32,
        for_kupdate: i32,
        range_cyclic: i32,
        for_background: i32,
        reason: i32,
        cgroup_ino: u64,
    },
    /// writeback/writeback_exec.
    WritebackExec {
        name: u32,
        nr_pages: i64,
        sb_dev: u32,
        sync_mode: i32,
        for_kupdate: i32,
        range_cyclic: i32,
        for_background: i32,
        reason: i32,
        cgroup_ino: u64,
    },
    /// writeback/writeback_wake_background.
    WritebackWakeBackground { name: u32, cgroup_ino: u64 },
    /// writeback/global_dirty_state.
    GlobalDirtyState {
        nr_dirty: u64,
        nr_writeback: u64,
        background_thresh: u64,
        dirty_thresh: u64,
        dirty_limit: u64,
        nr_dirtied: u64,
        nr_written: u64,
    },
    /// writeback/balance_dirty_pages (`bdi` is the bdi's `dev_t`).
    BalanceDirtyPages {
        bdi: u32,
        limit: u64,
        setpoint: u64,
        dirty: u64,
        wb_setpoint: u64,
        wb_dirty: u64,
        dirty_ratelimit: u64,
        task_ratelimit: u64,
        dirtied: u32,
        dirtied_pause: u32,
        paused: u64,
        pause: i64,
        period: u64,
        think: i64,
        cgroup_ino: u64,
    },
    /// writeback/wbc_writepage (`name` is the bdi's `dev_t`).
    WbcWritepage {
        name: u32,
        nr_to_write: i64,
        pages_skipped: i64,
        sync_mode: i32,
        for_kupdate: i32,
        for_background: i32,
        range_cyclic: i32,
        range_start: i64,
        range_end: i64,
        cgroup_ino: u64,
    },
}

/// The tracing subsystem an event belongs to (its `events/<sys>/` directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceSystem {
    /// vmscan.
    Vmscan,
    /// kmem.
    Kmem,
    /// compaction.
    Compaction,
    /// writeback.
    Writeback,
}

impl TraceEvent {
    /// The subsystem of this event.
    pub fn system(&self) -> TraceSystem {
        use TraceEvent::*;
        match self {
            MmVmscanKswapdSleep { .. }
            | MmVmscanKswapdWake { .. }
            | MmVmscanWakeupKswapd { .. }
            | MmVmscanDirectReclaimBegin { .. }
            | MmVmscanDirectReclaimEnd { .. }
            | MmVmscanMemcgReclaimBegin { .. }
            | MmVmscanMemcgReclaimEnd { .. }
            | MmVmscanMemcgSoftlimitReclaimBegin { .. }
            | MmVmscanMemcgSoftlimitReclaimEnd { .. }
            | MmShrinkSlabStart { .. }
            | MmShrinkSlabEnd { .. }
            | MmVmscanLruIsolate { .. }
            | MmVmscanWriteFolio { .. }
            | MmVmscanLruShrinkInactive { .. }
            | MmVmscanLruShrinkActive { .. }
            | MmVmscanReclaimPages { .. }
            | MmVmscanNodeReclaimBegin { .. }
            | MmVmscanNodeReclaimEnd { .. }
            | MmVmscanThrottled { .. } => TraceSystem::Vmscan,
            MmPageAlloc { .. }
            | MmPageFree { .. }
            | MmPageAllocExtfrag { .. }
            | MmPageAllocZoneLocked { .. }
            | MmPagePcpuDrain { .. } => TraceSystem::Kmem,
            MmCompactionBegin { .. }
            | MmCompactionEnd { .. }
            | MmCompactionDeferCompaction { .. }
            | MmCompactionDeferReset { .. }
            | MmCompactionDeferred { .. }
            | MmCompactionFastIsolateFreepages { .. }
            | MmCompactionIsolateFreepages { .. }
            | MmCompactionIsolateMigratepages { .. }
            | MmCompactionFinished { .. }
            | MmCompactionSuitable { .. }
            | MmCompactionKcompactdSleep { .. }
            | MmCompactionKcompactdWake { .. }
            | MmCompactionWakeupKcompactd { .. }
            | MmCompactionMigratepages { .. }
            | MmCompactionTryToCompactPages { .. } => TraceSystem::Compaction,
            WritebackStart { .. }
            | WritebackWritten { .. }
            | WritebackQueue { .. }
            | WritebackExec { .. }
            | WritebackWakeBackground { .. }
            | GlobalDirtyState { .. }
            | BalanceDirtyPages { .. }
            | WbcWritepage { .. } => TraceSystem::Writeback,
        }
    }
}
