//! `__print_flags()` and `__print_symbolic()` as the kernel's trace output
//! evaluates them, and the tables the mm tracepoints use (GFP flags, reclaim
//! writeback flags, throttle reasons, lru and zone names, compaction results,
//! writeback reasons).

use crate::mm::gfp::{
    __GFP_COMP, __GFP_DIRECT_RECLAIM, __GFP_DMA, __GFP_DMA32, __GFP_FS, __GFP_HARDWALL, __GFP_HIGH,
    __GFP_IO, __GFP_KSWAPD_RECLAIM, __GFP_MOVABLE, __GFP_NOFAIL, __GFP_NOMEMALLOC, __GFP_NORETRY,
    __GFP_NOWARN, __GFP_RECLAIMABLE, __GFP_RETRY_MAYFAIL, __GFP_THISNODE, __GFP_ZERO,
};

/// `trace_print_flags_seq()`: walk `table` in order; an entry whose whole mask
/// is set in `flags` is printed and its bits cleared; names are joined with
/// `delim`; leftover bits are appended as `0x%lx`. Prints nothing for 0 (the
/// print fmts supply their own "none" text for that case).
pub fn print_flags(mut flags: u64, delim: &str, table: &[(u64, &str)]) -> String {
    let mut out = String::new();
    let mut first = true;
    for &(mask, name) in table {
        if flags == 0 {
            break;
        }
        if flags & mask != mask {
            continue;
        }
        flags &= !mask;
        if !first {
            out.push_str(delim);
        }
        first = false;
        out.push_str(name);
    }
    if flags != 0 {
        if !first {
            out.push_str(delim);
        }
        out.push_str(&format!("0x{flags:x}"));
    }
    out
}

/// `trace_print_symbols_seq()`: the name of the first entry equal to `val`,
/// or `0x%lx` of `val` (as an unsigned long) when there is none.
pub fn print_symbolic(val: i64, table: &[(i64, &str)]) -> String {
    match table.iter().find(|&&(v, _)| v == val) {
        Some(&(_, name)) => name.to_string(),
        None => format!("0x{:x}", val as u64),
    }
}

/// The kernel's GFP table (include/trace/events/mmflags.h `__def_gfpflag_names`),
/// with the values this 6.18 kernel evaluates them to (KERNEL-FORMATS.md §2.0),
/// combinations first.
pub const KERNEL_GFP_TABLE: &[(u64, &str)] = &[
    (0x001c24ca, "GFP_TRANSHUGE"),
    (0x001c20ca, "GFP_TRANSHUGE_LIGHT"),
    (0x00100cca, "GFP_HIGHUSER_MOVABLE"),
    (0x00100cc2, "GFP_HIGHUSER"),
    (0x00100cc0, "GFP_USER"),
    (0x00400cc0, "GFP_KERNEL_ACCOUNT"),
    (0x00000cc0, "GFP_KERNEL"),
    (0x00000c40, "GFP_NOFS"),
    (0x00000820, "GFP_ATOMIC"),
    (0x00000c00, "GFP_NOIO"),
    (0x00002800, "GFP_NOWAIT"),
    (0x00000001, "GFP_DMA"),
    (0x00000004, "GFP_DMA32"),
    (0x00000c00, "__GFP_RECLAIM"),
    (0x00000001, "__GFP_DMA"),
    (0x00000002, "__GFP_HIGHMEM"),
    (0x00000004, "__GFP_DMA32"),
    (0x00000008, "__GFP_MOVABLE"),
    (0x00000010, "__GFP_RECLAIMABLE"),
    (0x00000020, "__GFP_HIGH"),
    (0x00000040, "__GFP_IO"),
    (0x00000080, "__GFP_FS"),
    (0x00000100, "__GFP_ZERO"),
    (0x00000400, "__GFP_DIRECT_RECLAIM"),
    (0x00000800, "__GFP_KSWAPD_RECLAIM"),
    (0x00001000, "__GFP_WRITE"),
    (0x00002000, "__GFP_NOWARN"),
    (0x00004000, "__GFP_RETRY_MAYFAIL"),
    (0x00008000, "__GFP_NOFAIL"),
    (0x00010000, "__GFP_NORETRY"),
    (0x00020000, "__GFP_MEMALLOC"),
    (0x00040000, "__GFP_COMP"),
    (0x00080000, "__GFP_NOMEMALLOC"),
    (0x00100000, "__GFP_HARDWALL"),
    (0x00200000, "__GFP_THISNODE"),
    (0x00400000, "__GFP_ACCOUNT"),
    (0x00800000, "__GFP_ZEROTAGS"),
    (0x01000000, "__GFP_NO_OBJ_EXT"),
];

/// The kernel's `__GFP_HIGHMEM` bit.
const KERNEL_GFP_HIGHMEM: u64 = 0x02;

/// vmsim's `__GFP_*` bits and the 6.18 kernel's values for them.
const VMSIM_TO_KERNEL: &[(u32, u64)] = &[
    (__GFP_DMA.0, 0x00000001),
    (__GFP_DMA32.0, 0x00000004),
    (__GFP_MOVABLE.0, 0x00000008),
    (__GFP_RECLAIMABLE.0, 0x00000010),
    (__GFP_HIGH.0, 0x00000020),
    (__GFP_IO.0, 0x00000040),
    (__GFP_FS.0, 0x00000080),
    (__GFP_ZERO.0, 0x00000100),
    (__GFP_DIRECT_RECLAIM.0, 0x00000400),
    (__GFP_KSWAPD_RECLAIM.0, 0x00000800),
    (__GFP_NOWARN.0, 0x00002000),
    (__GFP_RETRY_MAYFAIL.0, 0x00004000),
    (__GFP_NOFAIL.0, 0x00008000),
    (__GFP_NORETRY.0, 0x00010000),
    (__GFP_COMP.0, 0x00040000),
    (__GFP_NOMEMALLOC.0, 0x00080000),
    (__GFP_HARDWALL.0, 0x00100000),
    (__GFP_THISNODE.0, 0x00200000),
];

/// Translates a vmsim gfp mask into the 6.18 kernel's bit values.
///
/// vmsim has no `__GFP_HIGHMEM` (gfp.rs folds it out of
/// `GFP_HIGHUSER_MOVABLE`); on a real kernel every movable allocation carries
/// it (`GFP_HIGHUSER_MOVABLE`, the page-cache mask
/// `GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|…`), so `__GFP_MOVABLE` is
/// translated to `__GFP_HIGHMEM|__GFP_MOVABLE`. Bits vmsim lacks
/// (`__GFP_WRITE`, `__GFP_MEMALLOC`, `__GFP_ACCOUNT`, …) never appear.
/// Returns the kernel mask and the vmsim bits that have no translation.
pub fn gfp_to_kernel(gfp: u32) -> (u64, u32) {
    let mut k = 0u64;
    let mut rest = gfp;
    for &(v, kv) in VMSIM_TO_KERNEL {
        if gfp & v != 0 {
            k |= kv;
            rest &= !v;
        }
    }
    if gfp & __GFP_MOVABLE.0 != 0 {
        k |= KERNEL_GFP_HIGHMEM;
    }
    (k, rest)
}

/// The vmsim gfp mask of a `gfp_flags=` field as the kernel prints it (the inverse of
/// [`show_gfp_flags`]): names of [`KERNEL_GFP_TABLE`] or `0x%x` values joined by `|`,
/// or `none`. Kernel bits vmsim has no flag for (`__GFP_HIGHMEM`, `__GFP_WRITE`,
/// `__GFP_ACCOUNT`, …) are dropped; an unknown name is an error naming it.
pub fn parse_gfp_flags(text: &str) -> Result<u32, String> {
    if text == "none" {
        return Ok(0);
    }
    let mut k = 0u64;
    for name in text.split('|') {
        if let Some(hex) = name.strip_prefix("0x") {
            k |= u64::from_str_radix(hex, 16).map_err(|_| format!("gfp flag {name:?}"))?;
        } else {
            let &(v, _) = KERNEL_GFP_TABLE
                .iter()
                .find(|(_, n)| *n == name)
                .ok_or_else(|| format!("unknown gfp flag {name:?}"))?;
            k |= v;
        }
    }
    Ok(VMSIM_TO_KERNEL
        .iter()
        .filter(|&&(_, kv)| k & kv == kv)
        .fold(0, |g, &(v, _)| g | v))
}

/// `show_gfp_flags()` of a vmsim gfp mask, as the kmem/vmscan/compaction
/// print fmts print it: `(gfp) ? __print_flags(gfp, "|", GFP table) : "none"`.
///
/// The mask is translated with [`gfp_to_kernel`] and walked through
/// [`KERNEL_GFP_TABLE`] exactly as the kernel does, so
/// `GFP_HIGHUSER_MOVABLE|__GFP_COMP` prints `GFP_HIGHUSER_MOVABLE|__GFP_COMP`.
/// vmsim bits with no kernel equivalent (none today) are appended as
/// `0x%x` of their vmsim value.
pub fn show_gfp_flags(gfp: u32) -> String {
    if gfp == 0 {
        return "none".to_string();
    }
    let (k, rest) = gfp_to_kernel(gfp);
    let mut s = print_flags(k, "|", KERNEL_GFP_TABLE);
    if rest != 0 {
        if !s.is_empty() {
            s.push('|');
        }
        s.push_str(&format!("0x{rest:x}"));
    }
    s
}

/// The reclaim writeback flags table of `show_reclaim_flags()`.
pub const RECLAIM_FLAGS_TABLE: &[(u64, &str)] = &[
    (0x0001, "RECLAIM_WB_ANON"),
    (0x0002, "RECLAIM_WB_FILE"),
    (0x0010, "RECLAIM_WB_MIXED"),
    (0x0004, "RECLAIM_WB_SYNC"),
    (0x0008, "RECLAIM_WB_ASYNC"),
];

/// `show_reclaim_flags()`: `RECLAIM_WB_NONE` for 0.
pub fn show_reclaim_flags(flags: i32) -> String {
    if flags == 0 {
        return "RECLAIM_WB_NONE".to_string();
    }
    print_flags(flags as u32 as u64, "|", RECLAIM_FLAGS_TABLE)
}

/// The `mm_vmscan_throttled` reason table.
pub const THROTTLE_TABLE: &[(u64, &str)] = &[
    (1 << 0, "VMSCAN_THROTTLE_WRITEBACK"),
    (1 << 1, "VMSCAN_THROTTLE_ISOLATED"),
    (1 << 2, "VMSCAN_THROTTLE_NOPROGRESS"),
    (1 << 3, "VMSCAN_THROTTLE_CONGESTED"),
];

/// `mm_vmscan_throttled`'s reason: `VMSCAN_THROTTLE_NONE` for 0.
pub fn show_throttle_flags(reason: i32) -> String {
    if reason == 0 {
        return "VMSCAN_THROTTLE_NONE".to_string();
    }
    print_flags(reason as u32 as u64, "|", THROTTLE_TABLE)
}

/// `show_lru_name` (`__print_symbolic` of `enum lru_list`).
pub const LRU_TABLE: &[(i64, &str)] = &[
    (0, "inactive_anon"),
    (1, "active_anon"),
    (2, "inactive_file"),
    (3, "active_file"),
    (4, "unevictable"),
];

/// The zone names of the compaction events (`ZONE_TYPE` in
/// include/trace/events/mmflags.h).
pub const ZONE_TABLE: &[(i64, &str)] = &[(0, "DMA"), (1, "DMA32"), (2, "Normal"), (3, "Movable")];

/// `compaction_status_string`, in the kernel's table order.
pub const COMPACTION_STATUS_TABLE: &[(i64, &str)] = &[
    (1, "skipped"),
    (2, "deferred"),
    (4, "continue"),
    (8, "success"),
    (6, "partial_skipped"),
    (5, "complete"),
    (3, "no_suitable_page"),
    (0, "not_suitable_zone"),
    (7, "contended"),
];

/// `show_reason()` of the writeback events (`enum wb_reason`).
pub const WB_REASON_TABLE: &[(i64, &str)] = &[
    (0, "background"),
    (1, "vmscan"),
    (2, "sync"),
    (3, "periodic"),
    (4, "laptop_timer"),
    (5, "fs_free_space"),
    (6, "forker_thread"),
    (7, "foreign_flush"),
];
