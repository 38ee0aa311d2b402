//! Rendering an event's details: the text after `event_name: `, as the
//! event's print fmt prints it (modern 6.18) or as the 2.6.35-era kernels did
//! (legacy, the defaults of trace-vmscan-postprocess.pl). The formats
//! themselves are declared with the events (event.rs); this module has the
//! entry points and the helpers the formats call (`%p` hashing, page and bdi
//! names).

use super::event::{TraceEvent, PFN_NONE};
use super::flags::{print_symbolic, ZONE_TABLE};
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
pub(super) fn page_ptr(pfn: u64) -> String {
    hashed_ptr(page_address(pfn))
}

/// The name of a bdi backed by block device `dev` (`dev_name()`: `major:minor`).
pub(super) fn bdi_name(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & ((1 << 20) - 1))
}

/// The compile-time `pageblock_order` of the extfrag print fmt
/// (`min(HPAGE_PMD_ORDER, PAGE_BLOCK_MAX_ORDER)` = min(21 - 12, 10)).
pub const PAGEBLOCK_ORDER: u32 = crate::mm::mmzone::PAGEBLOCK_ORDER as u32;

/// The event's name: its directory under `events/<sys>/`. The legacy format
/// renames `mm_vmscan_write_folio` to its 2.6.35 name `mm_vmscan_writepage`;
/// every other name is the same in both formats (the names are declared with
/// the events, in event.rs).
pub fn event_name(ev: &TraceEvent, fmt: TraceFormat) -> &'static str {
    let info = ev.id().info();
    match fmt {
        TraceFormat::Modern => info.name,
        TraceFormat::Legacy => info.legacy_name.unwrap_or(info.name),
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
        TraceFormat::Modern => Some(ev.render_modern()),
        TraceFormat::Legacy => ev.render_legacy(),
    }
}

/// `page=%p` of a pfn that may be `-1UL`: `REC->pfn != -1UL ? page : NULL`.
pub(super) fn nullable_page_ptr(pfn: u64) -> String {
    if pfn == PFN_NONE {
        hashed_ptr(0)
    } else {
        page_ptr(pfn)
    }
}

/// `pfn=0x%lx` of a pfn that may be `-1UL`: `REC->pfn != -1UL ? REC->pfn : 0`.
pub(super) fn nullable_pfn(pfn: u64) -> u64 {
    if pfn == PFN_NONE {
        0
    } else {
        pfn
    }
}

/// `%p` of a shrinker (its simulated address in the direct map, hashed).
pub(super) fn shrinker_ptr(shr: u64) -> String {
    hashed_ptr(SHRINKER_BASE.wrapping_add(shr.wrapping_mul(0x40)))
}

/// The compaction events' `mode=%s`.
pub(super) fn sync_mode(sync: bool) -> &'static str {
    if sync {
        "sync"
    } else {
        "async"
    }
}

/// A zone index as the compaction events print it (`%-8s` pads it).
pub(super) fn zone_name(idx: u32) -> String {
    print_symbolic(idx as i64, ZONE_TABLE)
}
