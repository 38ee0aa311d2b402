//! Rendering an event's details: the text after `event_name: `, as the
//! event's print fmt prints it (modern 6.18) or as the 2.6.35-era kernels did
//! (legacy, the defaults of trace-vmscan-postprocess.pl).

use std::fmt::Write as _;

use super::event::{TraceEvent, PFN_NONE, RECLAIM_WB_FILE};
use super::flags::{
    print_symbolic, show_gfp_flags, show_reclaim_flags, show_throttle_flags,
    COMPACTION_STATUS_TABLE, LRU_TABLE, WB_REASON_TABLE, ZONE_TABLE,
};
use super::TraceFormat;

/// x86-64's `vmemmap_base` (without KASLR): the simulated `struct page *` of
/// pfn `p` is `VMEMMAP_BASE + p * 64`.
pub const VMEMMAP_BASE: u64 = 0xffff_ea00_0000_0000;
/// `sizeof(struct page)`.
pub const STRUCT_PAGE_SIZE: u64 = 64;
/// Base of the simulated addresses of shrinker objects (direct map).
const SHRINKER_BASE: u64 = 0xffff_8880_0400_0000;

/// The simulated `struct page *` of `pfn`.
pub fn page_address(pfn: u64) -> u64 {
    VMEMMAP_BASE.wrapping_add(pfn.wrapping_mul(STRUCT_PAGE_SIZE))
}

/// `%p` with `hash-ptr` on: the kernel prints `siphash(ptr) & 0xffffffff`
/// zero-padded to 16 hex digits (so it always starts with 8 zeros), and NULL
/// as 16 zeros. We use a fixed, keyless 64-bit mixer (splitmix64's
/// finalizer) instead of the boot-time keyed siphash: deterministic, same
/// pointer → same value, and it looks like the real thing.
pub fn hashed_ptr(addr: u64) -> String {
    if addr == 0 {
        return "0000000000000000".to_string();
    }
    let mut z = addr ^ 0x5851_f42d_4c95_7f2d;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    format!("{:016x}", z & 0xffff_ffff)
}

/// `page=%p` of a pfn in the modern format.
fn page_ptr(pfn: u64) -> String {
    hashed_ptr(page_address(pfn))
}

/// The name of a bdi backed by block device `dev` (`dev_name()`: `major:minor`).
fn bdi_name(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & ((1 << 20) - 1))
}

/// The compile-time `pageblock_order` of the extfrag print fmt
/// (`min(HPAGE_PMD_ORDER, PAGE_BLOCK_MAX_ORDER)` = min(21 - 12, 10)).
pub const PAGEBLOCK_ORDER: u32 = crate::mm::mmzone::PAGEBLOCK_ORDER as u32;

/// The event's name: its directory under `events/<sys>/`. The legacy format
/// renames `mm_vmscan_write_folio` to its 2.6.35 name `mm_vmscan_writepage`;
/// every other name is the same in both formats.
pub fn event_name(ev: &TraceEvent, fmt: TraceFormat) -> &'static str {
    use TraceEvent::*;
    match ev {
        MmVmscanKswapdSleep { .. } => "mm_vmscan_kswapd_sleep",
        MmVmscanKswapdWake { .. } => "mm_vmscan_kswapd_wake",
        MmVmscanWakeupKswapd { .. } => "mm_vmscan_wakeup_kswapd",
        MmVmscanDirectReclaimBegin { .. } => "mm_vmscan_direct_reclaim_begin",
        MmVmscanDirectReclaimEnd { .. } => "mm_vmscan_direct_reclaim_end",
        MmVmscanMemcgReclaimBegin { .. } => "mm_vmscan_memcg_reclaim_begin",
        MmVmscanMemcgReclaimEnd { .. } => "mm_vmscan_memcg_reclaim_end",
        MmVmscanMemcgSoftlimitReclaimBegin { .. } => "mm_vmscan_memcg_softlimit_reclaim_begin",
        MmVmscanMemcgSoftlimitReclaimEnd { .. } => "mm_vmscan_memcg_softlimit_reclaim_end",
        MmShrinkSlabStart { .. } => "mm_shrink_slab_start",
        MmShrinkSlabEnd { .. } => "mm_shrink_slab_end",
        MmVmscanLruIsolate { .. } => "mm_vmscan_lru_isolate",
        MmVmscanWriteFolio { .. } => match fmt {
            TraceFormat::Modern => "mm_vmscan_write_folio",
            TraceFormat::Legacy => "mm_vmscan_writepage",
        },
        MmVmscanLruShrinkInactive { .. } => "mm_vmscan_lru_shrink_inactive",
        MmVmscanLruShrinkActive { .. } => "mm_vmscan_lru_shrink_active",
        MmVmscanReclaimPages { .. } => "mm_vmscan_reclaim_pages",
        MmVmscanNodeReclaimBegin { .. } => "mm_vmscan_node_reclaim_begin",
        MmVmscanNodeReclaimEnd { .. } => "mm_vmscan_node_reclaim_end",
        MmVmscanThrottled { .. } => "mm_vmscan_throttled",
        MmPageAlloc { .. } => "mm_page_alloc",
        MmPageFree { .. } => "mm_page_free",
        MmPageAllocExtfrag { .. } => "mm_page_alloc_extfrag",
        MmPageAllocZoneLocked { .. } => "mm_page_alloc_zone_locked",
        MmPagePcpuDrain { .. } => "mm_page_pcpu_drain",
        MmCompactionBegin { .. } => "mm_compaction_begin",
        MmCompactionEnd { .. } => "mm_compaction_end",
        MmCompactionDeferCompaction { .. } => "mm_compaction_defer_compaction",
        MmCompactionDeferReset { .. } => "mm_compaction_defer_reset",
        MmCompactionDeferred { .. } => "mm_compaction_deferred",
        MmCompactionFastIsolateFreepages { .. } => "mm_compaction_fast_isolate_freepages",
        MmCompactionIsolateFreepages { .. } => "mm_compaction_isolate_freepages",
        MmCompactionIsolateMigratepages { .. } => "mm_compaction_isolate_migratepages",
        MmCompactionFinished { .. } => "mm_compaction_finished",
        MmCompactionSuitable { .. } => "mm_compaction_suitable",
        MmCompactionKcompactdSleep { .. } => "mm_compaction_kcompactd_sleep",
        MmCompactionKcompactdWake { .. } => "mm_compaction_kcompactd_wake",
        MmCompactionWakeupKcompactd { .. } => "mm_compaction_wakeup_kcompactd",
        MmCompactionMigratepages { .. } => "mm_compaction_migratepages",
        MmCompactionTryToCompactPages { .. } => "mm_compaction_try_to_compact_pages",
        WritebackStart { .. } => "writeback_start",
        WritebackWritten { .. } => "writeback_written",
        WritebackQueue { .. } => "writeback_queue",
        WritebackExec { .. } => "writeback_exec",
        WritebackWakeBackground { .. } => "writeback_wake_background",
        GlobalDirtyState { .. } => "global_dirty_state",
        BalanceDirtyPages { .. } => "balance_dirty_pages",
        WbcWritepage { .. } => "wbc_writepage",
    }
}

/// The details text of `ev` (everything after `event_name: `).
///
/// [`TraceFormat::Modern`] prints every event exactly as the 6.18 print fmt
/// does. [`TraceFormat::Legacy`] changes only the vmscan events, to the
/// formats trace-vmscan-postprocess.pl's default regexes expect (KERNEL-FORMATS.md
/// §3.1) and, for the memcg/softlimit reclaim events, the 2.6.37 forms
/// (`order=%d may_writepage=%d gfp_flags=%s`, `nr_reclaimed=%lu`); vmscan
/// events that old kernels did not have (`mm_shrink_slab_*`,
/// `mm_vmscan_node_reclaim_*`, `mm_vmscan_reclaim_pages`,
/// `mm_vmscan_throttled`) return `None`. kmem, compaction and writeback
/// events are printed in their modern form in both formats (the script counts
/// them as unknown events and ignores them).
pub fn render(ev: &TraceEvent, fmt: TraceFormat) -> Option<String> {
    match fmt {
        TraceFormat::Modern => Some(render_modern(ev)),
        TraceFormat::Legacy => render_legacy(ev),
    }
}

fn render_modern(ev: &TraceEvent) -> String {
    use TraceEvent::*;
    let mut s = String::with_capacity(160);
    // Writing to a String cannot fail.
    let _ = match *ev {
        MmVmscanKswapdSleep { nid } => write!(s, "nid={nid}"),
        MmVmscanKswapdWake { nid, order, .. } => write!(s, "nid={nid} order={order}"),
        MmVmscanWakeupKswapd {
            nid,
            order,
            gfp_flags,
            ..
        } => write!(
            s,
            "nid={nid} order={order} gfp_flags={}",
            show_gfp_flags(gfp_flags)
        ),
        MmVmscanDirectReclaimBegin {
            order, gfp_flags, ..
        }
        | MmVmscanMemcgReclaimBegin {
            order, gfp_flags, ..
        }
        | MmVmscanMemcgSoftlimitReclaimBegin {
            order, gfp_flags, ..
        } => write!(s, "order={order} gfp_flags={}", show_gfp_flags(gfp_flags)),
        MmVmscanDirectReclaimEnd { nr_reclaimed }
        | MmVmscanMemcgReclaimEnd { nr_reclaimed }
        | MmVmscanMemcgSoftlimitReclaimEnd { nr_reclaimed }
        | MmVmscanNodeReclaimEnd { nr_reclaimed } => write!(s, "nr_reclaimed={nr_reclaimed}"),
        MmShrinkSlabStart {
            shr,
            shrink,
            nid,
            nr_objects_to_shrink,
            gfp_flags,
            cache_items,
            delta,
            total_scan,
            priority,
        } => write!(
            s,
            "{shrink} {}: nid: {nid} objects to shrink {nr_objects_to_shrink} gfp_flags {} \
             cache items {} delta {} total_scan {} priority {priority}",
            shrinker_ptr(shr),
            show_gfp_flags(gfp_flags),
            cache_items as i64,
            delta as i64,
            total_scan as i64,
        ),
        MmShrinkSlabEnd {
            shr,
            nid,
            shrink,
            unused_scan,
            new_scan,
            retval,
            total_scan,
        } => write!(
            s,
            "{shrink} {}: nid: {nid} unused scan count {unused_scan} new scan count {new_scan} \
             total_scan {total_scan} last shrinker return val {retval}",
            shrinker_ptr(shr),
        ),
        MmVmscanLruIsolate {
            highest_zoneidx,
            order,
            nr_requested,
            nr_scanned,
            nr_skipped,
            nr_taken,
            lru,
            ..
        } => write!(
            s,
            "classzone={highest_zoneidx} order={order} nr_requested={nr_requested} \
             nr_scanned={nr_scanned} nr_skipped={nr_skipped} nr_taken={nr_taken} lru={}",
            print_symbolic(lru as i64, LRU_TABLE)
        ),
        MmVmscanWriteFolio { pfn, reclaim_flags } => write!(
            s,
            "page={} pfn=0x{pfn:x} flags={}",
            page_ptr(pfn),
            show_reclaim_flags(reclaim_flags)
        ),
        MmVmscanLruShrinkInactive {
            nid,
            nr_scanned,
            nr_reclaimed,
            nr_dirty,
            nr_writeback,
            nr_congested,
            nr_immediate,
            nr_activate0,
            nr_activate1,
            nr_ref_keep,
            nr_unmap_fail,
            priority,
            reclaim_flags,
            ..
        } => write!(
            s,
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
        ),
        MmVmscanLruShrinkActive {
            nid,
            nr_taken,
            nr_active,
            nr_deactivated,
            nr_referenced,
            priority,
            reclaim_flags,
        } => write!(
            s,
            "nid={nid} nr_taken={} nr_active={} nr_deactivated={} nr_referenced={} \
             priority={priority} flags={}",
            nr_taken as i64,
            nr_active as i64,
            nr_deactivated as i64,
            nr_referenced as i64,
            show_reclaim_flags(reclaim_flags)
        ),
        MmVmscanReclaimPages {
            nid,
            nr_scanned,
            nr_reclaimed,
            nr_dirty,
            nr_writeback,
            nr_congested,
            nr_immediate,
            nr_activate0,
            nr_activate1,
            nr_ref_keep,
            nr_unmap_fail,
        } => write!(
            s,
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
        ),
        MmVmscanNodeReclaimBegin {
            nid,
            order,
            gfp_flags,
        } => write!(
            s,
            "nid={nid} order={order} gfp_flags={}",
            show_gfp_flags(gfp_flags)
        ),
        MmVmscanThrottled {
            nid,
            usec_timeout,
            usec_delayed,
            reason,
        } => write!(
            s,
            "nid={nid} usec_timeout={usec_timeout} usect_delayed={usec_delayed} reason={}",
            show_throttle_flags(reason)
        ),

        MmPageAlloc {
            pfn,
            order,
            gfp_flags,
            migratetype,
        } => {
            let (page, pfn) = nullable_page(pfn);
            write!(
                s,
                "page={page} pfn=0x{pfn:x} order={} migratetype={migratetype} gfp_flags={}",
                order as i32,
                show_gfp_flags(gfp_flags)
            )
        }
        MmPageFree { pfn, order } => write!(
            s,
            "page={} pfn=0x{pfn:x} order={}",
            page_ptr(pfn),
            order as i32
        ),
        MmPageAllocExtfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            change_ownership,
        } => write!(
            s,
            "page={} pfn=0x{pfn:x} alloc_order={alloc_order} fallback_order={fallback_order} \
             pageblock_order={PAGEBLOCK_ORDER} alloc_migratetype={alloc_migratetype} \
             fallback_migratetype={fallback_migratetype} fragmenting={} \
             change_ownership={change_ownership}",
            page_ptr(pfn),
            // `int < unsigned int` compares as unsigned in C.
            ((fallback_order as u32) < PAGEBLOCK_ORDER) as i32,
        ),
        MmPageAllocZoneLocked {
            pfn,
            order,
            migratetype,
            percpu_refill,
        } => {
            let (page, pfn) = nullable_page(pfn);
            write!(
                s,
                "page={page} pfn=0x{pfn:x} order={order} migratetype={migratetype} \
                 percpu_refill={percpu_refill}"
            )
        }
        MmPagePcpuDrain {
            pfn,
            order,
            migratetype,
        } => write!(
            s,
            "page={} pfn=0x{pfn:x} order={} migratetype={migratetype}",
            page_ptr(pfn),
            order as i32
        ),

        MmCompactionBegin {
            zone_start,
            migrate_pfn,
            free_pfn,
            zone_end,
            sync,
        } => write!(
            s,
            "zone_start=0x{zone_start:x} migrate_pfn=0x{migrate_pfn:x} free_pfn=0x{free_pfn:x} \
             zone_end=0x{zone_end:x}, mode={}",
            sync_mode(sync)
        ),
        MmCompactionEnd {
            zone_start,
            migrate_pfn,
            free_pfn,
            zone_end,
            sync,
            status,
        } => write!(
            s,
            "zone_start=0x{zone_start:x} migrate_pfn=0x{migrate_pfn:x} free_pfn=0x{free_pfn:x} \
             zone_end=0x{zone_end:x}, mode={} status={}",
            sync_mode(sync),
            print_symbolic(status as i64, COMPACTION_STATUS_TABLE)
        ),
        MmCompactionDeferCompaction {
            nid,
            idx,
            order,
            considered,
            defer_shift,
            order_failed,
        }
        | MmCompactionDeferReset {
            nid,
            idx,
            order,
            considered,
            defer_shift,
            order_failed,
        }
        | MmCompactionDeferred {
            nid,
            idx,
            order,
            considered,
            defer_shift,
            order_failed,
        } => write!(
            s,
            "node={nid} zone={:<8} order={order} order_failed={order_failed} \
             consider={considered} limit={}",
            zone_name(idx),
            1u64.checked_shl(defer_shift).unwrap_or(0)
        ),
        MmCompactionFastIsolateFreepages {
            start_pfn,
            end_pfn,
            nr_scanned,
            nr_taken,
        }
        | MmCompactionIsolateFreepages {
            start_pfn,
            end_pfn,
            nr_scanned,
            nr_taken,
        }
        | MmCompactionIsolateMigratepages {
            start_pfn,
            end_pfn,
            nr_scanned,
            nr_taken,
        } => write!(
            s,
            "range=(0x{start_pfn:x} ~ 0x{end_pfn:x}) nr_scanned={nr_scanned} nr_taken={nr_taken}"
        ),
        MmCompactionFinished {
            nid,
            idx,
            order,
            ret,
        }
        | MmCompactionSuitable {
            nid,
            idx,
            order,
            ret,
        } => write!(
            s,
            "node={nid} zone={:<8} order={order} ret={}",
            zone_name(idx),
            print_symbolic(ret as i64, COMPACTION_STATUS_TABLE)
        ),
        MmCompactionKcompactdSleep { nid } => write!(s, "nid={nid}"),
        MmCompactionKcompactdWake {
            nid,
            order,
            highest_zoneidx,
        }
        | MmCompactionWakeupKcompactd {
            nid,
            order,
            highest_zoneidx,
        } => write!(
            s,
            "nid={nid} order={order} classzone_idx={:<8}",
            zone_name(highest_zoneidx)
        ),
        MmCompactionMigratepages {
            nr_migrated,
            nr_failed,
        } => write!(s, "nr_migrated={nr_migrated} nr_failed={nr_failed}"),
        MmCompactionTryToCompactPages {
            order,
            gfp_mask,
            prio,
        } => write!(
            s,
            "order={order} gfp_mask={} priority={prio}",
            show_gfp_flags(gfp_mask)
        ),

        WritebackStart {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            range_cyclic,
            for_background,
            reason,
            cgroup_ino,
        }
        | WritebackWritten {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            range_cyclic,
            for_background,
            reason,
            cgroup_ino,
        }
        | WritebackQueue {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            range_cyclic,
            for_background,
            reason,
            cgroup_ino,
        }
        | WritebackExec {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            range_cyclic,
            for_background,
            reason,
            cgroup_ino,
        } => write!(
            s,
            "bdi {}: sb_dev {}:{} nr_pages={nr_pages} sync_mode={sync_mode} \
             kupdate={for_kupdate} range_cyclic={range_cyclic} background={for_background} \
             reason={} cgroup_ino={cgroup_ino}",
            bdi_name(name),
            sb_dev >> 20,
            sb_dev & ((1 << 20) - 1),
            print_symbolic(reason as i64, WB_REASON_TABLE)
        ),
        WritebackWakeBackground { name, cgroup_ino } => {
            write!(s, "bdi {}: cgroup_ino={cgroup_ino}", bdi_name(name))
        }
        GlobalDirtyState {
            nr_dirty,
            nr_writeback,
            background_thresh,
            dirty_thresh,
            dirty_limit,
            nr_dirtied,
            nr_written,
        } => write!(
            s,
            "dirty={nr_dirty} writeback={nr_writeback} bg_thresh={background_thresh} \
             thresh={dirty_thresh} limit={dirty_limit} dirtied={nr_dirtied} written={nr_written}"
        ),
        BalanceDirtyPages {
            bdi,
            limit,
            setpoint,
            dirty,
            wb_setpoint,
            wb_dirty,
            dirty_ratelimit,
            task_ratelimit,
            dirtied,
            dirtied_pause,
            paused,
            pause,
            period,
            think,
            cgroup_ino,
        } => write!(
            s,
            "bdi {}: limit={limit} setpoint={setpoint} dirty={dirty} wb_setpoint={wb_setpoint} \
             wb_dirty={wb_dirty} dirty_ratelimit={dirty_ratelimit} \
             task_ratelimit={task_ratelimit} dirtied={dirtied} dirtied_pause={dirtied_pause} \
             paused={paused} pause={pause} period={period} think={think} cgroup_ino={cgroup_ino}",
            bdi_name(bdi)
        ),
        WbcWritepage {
            name,
            nr_to_write,
            pages_skipped,
            sync_mode,
            for_kupdate,
            for_background,
            range_cyclic,
            range_start,
            range_end,
            cgroup_ino,
        } => write!(
            s,
            "bdi {}: towrt={nr_to_write} skip={pages_skipped} mode={sync_mode} \
             kupd={for_kupdate} bgrd={for_background} cyclic={range_cyclic} start=0x{:x} \
             end=0x{:x} cgroup_ino={cgroup_ino}",
            bdi_name(name),
            range_start as u64,
            range_end as u64
        ),
    };
    s
}

fn render_legacy(ev: &TraceEvent) -> Option<String> {
    use TraceEvent::*;
    let s = match *ev {
        MmVmscanWakeupKswapd {
            nid, zid, order, ..
        } => format!("nid={nid} zid={zid} order={order}"),
        MmVmscanDirectReclaimBegin {
            order,
            gfp_flags,
            may_writepage,
        }
        | MmVmscanMemcgReclaimBegin {
            order,
            gfp_flags,
            may_writepage,
        }
        | MmVmscanMemcgSoftlimitReclaimBegin {
            order,
            gfp_flags,
            may_writepage,
        } => format!(
            "order={order} may_writepage={may_writepage} gfp_flags={}",
            show_gfp_flags(gfp_flags)
        ),
        MmVmscanLruIsolate {
            order,
            nr_requested,
            nr_scanned,
            nr_taken,
            isolate_mode,
            contig_taken,
            contig_dirty,
            contig_failed,
            ..
        } => format!(
            "isolate_mode={isolate_mode} order={order} nr_requested={nr_requested} \
             nr_scanned={nr_scanned} nr_taken={nr_taken} contig_taken={contig_taken} \
             contig_dirty={contig_dirty} contig_failed={contig_failed}"
        ),
        // 2.6.35 printed raw (unhashed) pointers and a decimal pfn.
        MmVmscanWriteFolio { pfn, reclaim_flags } => format!(
            "page={:016x} pfn={pfn} flags={}",
            page_address(pfn),
            show_reclaim_flags(reclaim_flags)
        ),
        MmVmscanLruShrinkInactive {
            nid,
            nr_scanned,
            nr_reclaimed,
            priority,
            reclaim_flags,
            zid,
            ..
        } => format!(
            "nid={nid} zid={zid} nr_scanned={} nr_reclaimed={} priority={priority} flags={}",
            nr_scanned as i64,
            nr_reclaimed as i64,
            show_reclaim_flags(reclaim_flags)
        ),
        MmVmscanLruShrinkActive {
            nr_taken,
            nr_referenced,
            priority,
            reclaim_flags,
            ..
        } => format!(
            "lru={} nr_scanned={nr_taken} nr_rotated={nr_referenced} priority={priority}",
            if reclaim_flags & RECLAIM_WB_FILE != 0 {
                "LRU_ACTIVE_FILE"
            } else {
                "LRU_ACTIVE_ANON"
            }
        ),
        MmShrinkSlabStart { .. }
        | MmShrinkSlabEnd { .. }
        | MmVmscanReclaimPages { .. }
        | MmVmscanNodeReclaimBegin { .. }
        | MmVmscanNodeReclaimEnd { .. }
        | MmVmscanThrottled { .. } => return None,
        // kswapd_sleep/kswapd_wake/*_reclaim_end are unchanged since 2.6.35;
        // kmem, compaction and writeback keep their modern form.
        _ => render_modern(ev),
    };
    Some(s)
}

/// `REC->pfn != -1UL ? page : NULL` and `REC->pfn != -1UL ? REC->pfn : 0`.
fn nullable_page(pfn: u64) -> (String, u64) {
    if pfn == PFN_NONE {
        (hashed_ptr(0), 0)
    } else {
        (page_ptr(pfn), pfn)
    }
}

fn shrinker_ptr(shr: u64) -> String {
    hashed_ptr(SHRINKER_BASE.wrapping_add(shr.wrapping_mul(0x40)))
}

fn sync_mode(sync: bool) -> &'static str {
    if sync {
        "sync"
    } else {
        "async"
    }
}

fn zone_name(idx: u32) -> String {
    print_symbolic(idx as i64, ZONE_TABLE)
}
