//! The simulated tracepoint events, each declared once (the `tracepoints!`
//! block below; the macro is in tracepoint.rs).
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

use super::flags::{
    print_symbolic, show_gfp_flags, show_reclaim_flags, show_throttle_flags,
    COMPACTION_STATUS_TABLE, LRU_TABLE, WB_REASON_TABLE,
};
use super::format::{
    bdi_name, nullable_page_ptr, nullable_pfn, page_address, page_ptr, shrinker_ptr, sync_mode,
    zone_name, PAGEBLOCK_ORDER,
};
use super::tracepoint::tracepoints;
use super::{LineFlags, TraceEventInfo};

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
/// `%pS` of ext4's extent status shrinker, as this 6.18 kernel prints it.
pub const SHRINK_EXT4_ES_SCAN: &str = "ext4_es_scan+0x0/0x3d0";
/// The XFS buffer shrinker's scan function as mm_shrink_slab_start prints it (offsets
/// as in a 4.20 x86-64 build are not known; 0x0/0x0 marks that).
pub const SHRINK_XFS_BUFTARG_SCAN: &str = "xfs_buftarg_shrink_scan+0x0/0x0";

// The tracepoints: one declaration per event (or per class of events sharing
// fields and formats, as DECLARE_EVENT_CLASS/DEFINE_EVENT do), from which
// `tracepoints!` generates the enum, ids, names, systems, renderings, line
// flags and TRACE_EVENTS (grammar in tracepoint.rs). The print formats are the
// 6.18 format files' (KERNEL-FORMATS.md §2.1–2.4), the legacy ones 2.6.35's
// (§3.1) and, for the memcg/softlimit reclaim pair, 2.6.37's.
tracepoints! {
    /// vmscan (include/trace/events/vmscan.h).
    system vmscan => Vmscan {
        /// `nid=%d`.
        mm_vmscan_kswapd_sleep => MmVmscanKswapdSleep
            fields { nid: i32 }
            printk("nid={nid}")
            legacy same;

        /// `nid=%d order=%d` (`zid` is recorded but not printed).
        mm_vmscan_kswapd_wake => MmVmscanKswapdWake
            fields { nid: i32, zid: i32, order: i32 }
            printk("nid={nid} order={order}")
            legacy same;

        /// `nid=%d order=%d gfp_flags=%s` (`zid` not printed; legacy prints
        /// `nid zid order`).
        mm_vmscan_wakeup_kswapd => MmVmscanWakeupKswapd
            fields { nid: i32, zid: i32, order: i32, gfp_flags: u32 }
            printk("nid={nid} order={order} gfp_flags={}", show_gfp_flags(gfp_flags))
            legacy("nid={nid} zid={zid} order={order}");

        /// `order=%d gfp_flags=%s`. `may_writepage` is legacy-only.
        mm_vmscan_direct_reclaim_begin => MmVmscanDirectReclaimBegin,
        /// Memcg limit reclaim (`may_writepage` legacy-only).
        mm_vmscan_memcg_reclaim_begin => MmVmscanMemcgReclaimBegin,
        /// Memcg v1 soft-limit reclaim (`may_writepage` legacy-only).
        mm_vmscan_memcg_softlimit_reclaim_begin => MmVmscanMemcgSoftlimitReclaimBegin
            fields { order: i32, gfp_flags: u32, may_writepage: i32 }
            printk("order={order} gfp_flags={}", show_gfp_flags(gfp_flags))
            legacy(
                "order={order} may_writepage={may_writepage} gfp_flags={}",
                show_gfp_flags(gfp_flags)
            );

        /// `nr_reclaimed=%lu`.
        mm_vmscan_direct_reclaim_end => MmVmscanDirectReclaimEnd,
        /// End of memcg limit reclaim.
        mm_vmscan_memcg_reclaim_end => MmVmscanMemcgReclaimEnd,
        /// End of memcg v1 soft-limit reclaim.
        mm_vmscan_memcg_softlimit_reclaim_end => MmVmscanMemcgSoftlimitReclaimEnd
            fields { nr_reclaimed: u64 }
            printk("nr_reclaimed={nr_reclaimed}")
            legacy same;

        /// `shr` is the shrinker's identity (its hash is printed as `%p`);
        /// `shrink` is the `%pS` text of its scan function (e.g.
        /// [`SHRINK_SUPER_CACHE_SCAN`]).
        mm_shrink_slab_start => MmShrinkSlabStart
            fields {
                shr: u64,
                shrink: &'static str,
                nid: i32,
                nr_objects_to_shrink: i64,
                gfp_flags: u32,
                cache_items: u64,
                delta: u64,
                total_scan: u64,
                priority: i32,
            }
            printk(
                "{shrink} {}: nid: {nid} objects to shrink {nr_objects_to_shrink} gfp_flags {} \
                 cache items {} delta {} total_scan {} priority {priority}",
                shrinker_ptr(shr),
                show_gfp_flags(gfp_flags),
                cache_items as i64,
                delta as i64,
                total_scan as i64,
            )
            legacy none;

        /// See [`TraceEvent::MmShrinkSlabStart`].
        mm_shrink_slab_end => MmShrinkSlabEnd
            fields {
                shr: u64,
                nid: i32,
                shrink: &'static str,
                unused_scan: i64,
                new_scan: i64,
                retval: i32,
                total_scan: i64,
            }
            printk(
                "{shrink} {}: nid: {nid} unused scan count {unused_scan} new scan count {new_scan} \
                 total_scan {total_scan} last shrinker return val {retval}",
                shrinker_ptr(shr),
            )
            legacy none;

        /// `classzone=%d order=%d nr_requested=%lu nr_scanned=%lu
        /// nr_skipped=%lu nr_taken=%lu lru=%s`. `isolate_mode` (see
        /// [`isolate_mode_for_lru`]) and `contig_*` are legacy-only.
        mm_vmscan_lru_isolate => MmVmscanLruIsolate [flags = LineFlags::IRQ_LOCKED]
            fields {
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
            }
            printk(
                "classzone={highest_zoneidx} order={order} nr_requested={nr_requested} \
                 nr_scanned={nr_scanned} nr_skipped={nr_skipped} nr_taken={nr_taken} lru={}",
                print_symbolic(lru as i64, LRU_TABLE)
            )
            legacy(
                "isolate_mode={isolate_mode} order={order} nr_requested={nr_requested} \
                 nr_scanned={nr_scanned} nr_taken={nr_taken} contig_taken={contig_taken} \
                 contig_dirty={contig_dirty} contig_failed={contig_failed}"
            );

        /// `page=%p pfn=0x%lx flags=%s`; 2.6.35's `mm_vmscan_writepage`
        /// printed raw (unhashed) pointers and a decimal pfn.
        mm_vmscan_write_folio => MmVmscanWriteFolio [legacy_name = mm_vmscan_writepage]
            fields { pfn: u64, reclaim_flags: i32 }
            printk(
                "page={} pfn=0x{pfn:x} flags={}",
                page_ptr(pfn),
                show_reclaim_flags(reclaim_flags)
            )
            legacy(
                "page={:016x} pfn={pfn} flags={}",
                page_address(pfn),
                show_reclaim_flags(reclaim_flags)
            );

        /// `nr_activate0`/`1` are printed as `nr_activate_anon`/`_file`.
        /// `zid` is legacy-only.
        mm_vmscan_lru_shrink_inactive => MmVmscanLruShrinkInactive
            fields {
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
            }
            printk(
                "nid={nid} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} \
                 nr_congested={} nr_immediate={} nr_activate_anon={} nr_activate_file={} \
                 nr_ref_keep={} nr_unmap_fail={} priority={priority} flags={}",
                nr_scanned as i64,
                nr_reclaimed as i64,
                nr_dirty as i64,
                nr_writeback as i64,
                nr_congested as i64,
                nr_immediate as i64,
                nr_activate0 as i32,
                nr_activate1 as i32,
                nr_ref_keep as i64,
                nr_unmap_fail as i64,
                show_reclaim_flags(reclaim_flags)
            )
            legacy(
                "nid={nid} zid={zid} nr_scanned={} nr_reclaimed={} priority={priority} flags={}",
                nr_scanned as i64,
                nr_reclaimed as i64,
                show_reclaim_flags(reclaim_flags)
            );

        /// Legacy prints `lru=%s nr_scanned=%lu nr_rotated=%lu priority=%d`
        /// from `nr_taken`, `nr_referenced` (the old "rotated") and the file
        /// bit of `reclaim_flags`.
        mm_vmscan_lru_shrink_active => MmVmscanLruShrinkActive
            fields {
                nid: i32,
                nr_taken: u64,
                nr_active: u64,
                nr_deactivated: u64,
                nr_referenced: u64,
                priority: i32,
                reclaim_flags: i32,
            }
            printk(
                "nid={nid} nr_taken={} nr_active={} nr_deactivated={} nr_referenced={} \
                 priority={priority} flags={}",
                nr_taken as i64,
                nr_active as i64,
                nr_deactivated as i64,
                nr_referenced as i64,
                show_reclaim_flags(reclaim_flags)
            )
            legacy(
                "lru={} nr_scanned={nr_taken} nr_rotated={nr_referenced} priority={priority}",
                if reclaim_flags & RECLAIM_WB_FILE != 0 {
                    "LRU_ACTIVE_FILE"
                } else {
                    "LRU_ACTIVE_ANON"
                }
            );

        /// Proactive reclaim (`reclaim_pages()`).
        mm_vmscan_reclaim_pages => MmVmscanReclaimPages
            fields {
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
            }
            printk(
                "nid={nid} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} \
                 nr_congested={} nr_immediate={} nr_activate_anon={} nr_activate_file={} \
                 nr_ref_keep={} nr_unmap_fail={}",
                nr_scanned as i64,
                nr_reclaimed as i64,
                nr_dirty as i64,
                nr_writeback as i64,
                nr_congested as i64,
                nr_immediate as i64,
                nr_activate0 as i32,
                nr_activate1 as i32,
                nr_ref_keep as i64,
                nr_unmap_fail as i64,
            )
            legacy none;

        /// Node reclaim (`node_reclaim()`).
        mm_vmscan_node_reclaim_begin => MmVmscanNodeReclaimBegin
            fields { nid: i32, order: i32, gfp_flags: u32 }
            printk("nid={nid} order={order} gfp_flags={}", show_gfp_flags(gfp_flags))
            legacy none;

        /// `nr_reclaimed=%lu`.
        mm_vmscan_node_reclaim_end => MmVmscanNodeReclaimEnd
            fields { nr_reclaimed: u64 }
            printk("nr_reclaimed={nr_reclaimed}")
            legacy none;

        /// `reason` is a `VMSCAN_THROTTLE_*` bit set; the kernel prints
        /// `usect_delayed=`, sic.
        mm_vmscan_throttled => MmVmscanThrottled
            fields { nid: i32, usec_timeout: i32, usec_delayed: i32, reason: i32 }
            printk(
                "nid={nid} usec_timeout={usec_timeout} usect_delayed={usec_delayed} reason={}",
                show_throttle_flags(reason)
            )
            legacy none;
    }

    /// kmem (include/trace/events/kmem.h).
    system kmem => Kmem {
        /// `pfn` may be [`PFN_NONE`] (a failed allocation).
        mm_page_alloc => MmPageAlloc
            fields { pfn: u64, order: u32, gfp_flags: u32, migratetype: i32 }
            printk(
                "page={} pfn=0x{:x} order={} migratetype={migratetype} gfp_flags={}",
                nullable_page_ptr(pfn),
                nullable_pfn(pfn),
                order as i32,
                show_gfp_flags(gfp_flags)
            )
            legacy same;

        /// A page freed to the buddy or per-CPU lists.
        mm_page_free => MmPageFree
            fields { pfn: u64, order: u32 }
            printk("page={} pfn=0x{pfn:x} order={}", page_ptr(pfn), order as i32)
            legacy same;

        /// `pageblock_order` and `fragmenting` are computed by the print fmt.
        mm_page_alloc_extfrag => MmPageAllocExtfrag [flags = LineFlags::ZONE_LOCKED_UNDER_PCP]
            fields {
                pfn: u64,
                alloc_order: i32,
                fallback_order: i32,
                alloc_migratetype: i32,
                fallback_migratetype: i32,
                change_ownership: i32,
            }
            printk(
                "page={} pfn=0x{pfn:x} alloc_order={alloc_order} fallback_order={fallback_order} \
                 pageblock_order={PAGEBLOCK_ORDER} alloc_migratetype={alloc_migratetype} \
                 fallback_migratetype={fallback_migratetype} fragmenting={} \
                 change_ownership={change_ownership}",
                page_ptr(pfn),
                // `int < unsigned int` compares as unsigned in C.
                ((fallback_order as u32) < PAGEBLOCK_ORDER) as i32,
            )
            legacy same;

        /// `pfn` may be [`PFN_NONE`]. Under the zone lock: `d..3.` when
        /// refilling a per-CPU list (inside its pcp lock), `d..1.` otherwise.
        mm_page_alloc_zone_locked => MmPageAllocZoneLocked [flags = if percpu_refill != 0 {
                LineFlags::ZONE_LOCKED_UNDER_PCP
            } else {
                LineFlags::IRQ_LOCKED
            }]
            fields { pfn: u64, order: u32, migratetype: i32, percpu_refill: i32 }
            printk(
                "page={} pfn=0x{:x} order={order} migratetype={migratetype} \
                 percpu_refill={percpu_refill}",
                nullable_page_ptr(pfn),
                nullable_pfn(pfn),
            )
            legacy same;

        /// A page drained from a per-CPU list back to the buddy.
        mm_page_pcpu_drain => MmPagePcpuDrain [flags = LineFlags::ZONE_LOCKED_UNDER_PCP]
            fields { pfn: u64, order: u32, migratetype: i32 }
            printk(
                "page={} pfn=0x{pfn:x} order={} migratetype={migratetype}",
                page_ptr(pfn),
                order as i32
            )
            legacy same;
    }

    /// compaction (include/trace/events/compaction.h).
    system compaction => Compaction {
        /// A compaction run starts.
        mm_compaction_begin => MmCompactionBegin
            fields { zone_start: u64, migrate_pfn: u64, free_pfn: u64, zone_end: u64, sync: bool }
            printk(
                "zone_start=0x{zone_start:x} migrate_pfn=0x{migrate_pfn:x} \
                 free_pfn=0x{free_pfn:x} zone_end=0x{zone_end:x}, mode={}",
                sync_mode(sync)
            )
            legacy same;

        /// `status` is a `COMPACT_*`.
        mm_compaction_end => MmCompactionEnd
            fields {
                zone_start: u64,
                migrate_pfn: u64,
                free_pfn: u64,
                zone_end: u64,
                sync: bool,
                status: i32,
            }
            printk(
                "zone_start=0x{zone_start:x} migrate_pfn=0x{migrate_pfn:x} \
                 free_pfn=0x{free_pfn:x} zone_end=0x{zone_end:x}, mode={} status={}",
                sync_mode(sync),
                print_symbolic(status as i64, COMPACTION_STATUS_TABLE)
            )
            legacy same;

        /// `idx` is a `ZONE_*` (class `mm_compaction_defer_template`).
        mm_compaction_defer_compaction => MmCompactionDeferCompaction,
        /// The deferral is reset after a success.
        mm_compaction_defer_reset => MmCompactionDeferReset,
        /// Compaction skipped because it is deferred.
        mm_compaction_deferred => MmCompactionDeferred
            fields {
                nid: i32,
                idx: u32,
                order: i32,
                considered: u32,
                defer_shift: u32,
                order_failed: i32,
            }
            printk(
                "node={nid} zone={:<8} order={order} order_failed={order_failed} \
                 consider={considered} limit={}",
                zone_name(idx),
                1u64.checked_shl(defer_shift).unwrap_or(0)
            )
            legacy same;

        /// The fast free scanner (class `mm_compaction_isolate_template`).
        mm_compaction_fast_isolate_freepages => MmCompactionFastIsolateFreepages,
        /// The free scanner.
        mm_compaction_isolate_freepages => MmCompactionIsolateFreepages,
        /// The migration scanner.
        mm_compaction_isolate_migratepages => MmCompactionIsolateMigratepages
            fields { start_pfn: u64, end_pfn: u64, nr_scanned: u64, nr_taken: u64 }
            printk(
                "range=(0x{start_pfn:x} ~ 0x{end_pfn:x}) nr_scanned={nr_scanned} \
                 nr_taken={nr_taken}"
            )
            legacy same;

        /// `ret` is a `COMPACT_*` (class `mm_compaction_suitable_template`).
        mm_compaction_finished => MmCompactionFinished,
        /// `ret` is a `COMPACT_*`.
        mm_compaction_suitable => MmCompactionSuitable
            fields { nid: i32, idx: u32, order: i32, ret: i32 }
            printk(
                "node={nid} zone={:<8} order={order} ret={}",
                zone_name(idx),
                print_symbolic(ret as i64, COMPACTION_STATUS_TABLE)
            )
            legacy same;

        /// kcompactd goes to sleep.
        mm_compaction_kcompactd_sleep => MmCompactionKcompactdSleep
            fields { nid: i32 }
            printk("nid={nid}")
            legacy same;

        /// `classzone_idx=%-8s`: note the trailing padding the kernel prints
        /// (class `kcompactd_wake_template`).
        mm_compaction_kcompactd_wake => MmCompactionKcompactdWake,
        /// A wake-up of kcompactd is requested.
        mm_compaction_wakeup_kcompactd => MmCompactionWakeupKcompactd
            fields { nid: i32, order: i32, highest_zoneidx: u32 }
            printk(
                "nid={nid} order={order} classzone_idx={:<8}",
                zone_name(highest_zoneidx)
            )
            legacy same;

        /// Pages migrated by one migrate_pages() call.
        mm_compaction_migratepages => MmCompactionMigratepages
            fields { nr_migrated: u64, nr_failed: u64 }
            printk("nr_migrated={nr_migrated} nr_failed={nr_failed}")
            legacy same;

        /// Direct compaction is tried.
        mm_compaction_try_to_compact_pages => MmCompactionTryToCompactPages
            fields { order: i32, gfp_mask: u32, prio: i32 }
            printk(
                "order={order} gfp_mask={} priority={prio}",
                show_gfp_flags(gfp_mask)
            )
            legacy same;
    }

    /// writeback (include/trace/events/writeback.h).
    system writeback => Writeback {
        /// `name` is the bdi's `dev_t`, `reason` a `WB_REASON_*` (class
        /// `writeback_work_class`); under `wb->list_lock`: `...1.`.
        writeback_start => WritebackStart [flags = LineFlags::LOCKED],
        /// Under `wb->list_lock`: `...1.`.
        writeback_written => WritebackWritten [flags = LineFlags::LOCKED],
        /// Work queued for the flusher.
        writeback_queue => WritebackQueue,
        /// The flusher executes a work item.
        writeback_exec => WritebackExec
            fields {
                name: u32,
                nr_pages: i64,
                sb_dev: u32,
                sync_mode: i32,
                for_kupdate: i32,
                range_cyclic: i32,
                for_background: i32,
                reason: i32,
                cgroup_ino: u64,
            }
            printk(
                "bdi {}: sb_dev {}:{} nr_pages={nr_pages} sync_mode={sync_mode} \
                 kupdate={for_kupdate} range_cyclic={range_cyclic} background={for_background} \
                 reason={} cgroup_ino={cgroup_ino}",
                bdi_name(name),
                sb_dev >> 20,
                sb_dev & ((1 << 20) - 1),
                print_symbolic(reason as i64, WB_REASON_TABLE)
            )
            legacy same;

        /// Background writeback is woken.
        writeback_wake_background => WritebackWakeBackground
            fields { name: u32, cgroup_ino: u64 }
            printk("bdi {}: cgroup_ino={cgroup_ino}", bdi_name(name))
            legacy same;

        /// The global dirty thresholds and counts.
        global_dirty_state => GlobalDirtyState
            fields {
                nr_dirty: u64,
                nr_writeback: u64,
                background_thresh: u64,
                dirty_thresh: u64,
                dirty_limit: u64,
                nr_dirtied: u64,
                nr_written: u64,
            }
            printk(
                "dirty={nr_dirty} writeback={nr_writeback} bg_thresh={background_thresh} \
                 thresh={dirty_thresh} limit={dirty_limit} dirtied={nr_dirtied} \
                 written={nr_written}"
            )
            legacy same;

        /// `bdi` is the bdi's `dev_t`.
        balance_dirty_pages => BalanceDirtyPages
            fields {
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
            }
            printk(
                "bdi {}: limit={limit} setpoint={setpoint} dirty={dirty} \
                 wb_setpoint={wb_setpoint} wb_dirty={wb_dirty} dirty_ratelimit={dirty_ratelimit} \
                 task_ratelimit={task_ratelimit} dirtied={dirtied} dirtied_pause={dirtied_pause} \
                 paused={paused} pause={pause} period={period} think={think} \
                 cgroup_ino={cgroup_ino}",
                bdi_name(bdi)
            )
            legacy same;

        /// `name` is the bdi's `dev_t`.
        wbc_writepage => WbcWritepage
            fields {
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
            }
            printk(
                "bdi {}: towrt={nr_to_write} skip={pages_skipped} mode={sync_mode} \
                 kupd={for_kupdate} bgrd={for_background} cyclic={range_cyclic} start=0x{:x} \
                 end=0x{:x} cgroup_ino={cgroup_ino}",
                bdi_name(name),
                range_start as u64,
                range_end as u64
            )
            legacy same;
    }
}

impl TraceEventId {
    /// Every event id, in order (`TRACE_EVENTS[i].id == ALL[i]`).
    pub fn all() -> impl Iterator<Item = TraceEventId> {
        TRACE_EVENTS.iter().map(|e| e.id)
    }

    /// The id as a number (its index in [`TRACE_EVENTS`]).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The event's row of [`TRACE_EVENTS`].
    #[inline]
    pub const fn info(self) -> &'static TraceEventInfo {
        &TRACE_EVENTS[self as usize]
    }

    /// The event's 6.18 name.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// The event's subsystem.
    pub const fn system(self) -> TraceSystem {
        self.info().system
    }
}

/// Number of declared tracepoints.
pub const NR_TRACE_EVENTS: usize = TRACE_EVENTS.len();

impl TraceEvent {
    /// The subsystem of this event.
    pub fn system(&self) -> TraceSystem {
        self.id().system()
    }

    /// The event's 6.18 name (see [`super::event_name`] for the legacy one).
    pub fn name(&self) -> &'static str {
        self.id().name()
    }
}
