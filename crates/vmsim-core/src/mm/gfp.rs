//! GFP flags and allocation flags.
//!
//! Models include/linux/gfp_types.h (the `__GFP_*` bits and the `GFP_*`
//! combinations) and the `ALLOC_*` flags of mm/internal.h. Only the bits the
//! simulated allocator reads are kept; their values are vmsim's own.

use super::mmzone::{MigrateType, ZoneType};

/// A gfp_t.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Gfp(pub u32);

impl std::ops::BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, o: Gfp) -> Gfp {
        Gfp(self.0 | o.0)
    }
}

impl Gfp {
    /// Whether any bit of `f` is set.
    #[inline(always)]
    pub fn has(self, f: Gfp) -> bool {
        self.0 & f.0 != 0
    }
}

/// __GFP_DMA.
pub const __GFP_DMA: Gfp = Gfp(1 << 0);
/// __GFP_DMA32.
pub const __GFP_DMA32: Gfp = Gfp(1 << 1);
/// __GFP_MOVABLE.
pub const __GFP_MOVABLE: Gfp = Gfp(1 << 2);
/// __GFP_RECLAIMABLE.
pub const __GFP_RECLAIMABLE: Gfp = Gfp(1 << 3);
/// __GFP_HIGH: may use part of the min reserve.
pub const __GFP_HIGH: Gfp = Gfp(1 << 4);
/// __GFP_IO: may start physical I/O.
pub const __GFP_IO: Gfp = Gfp(1 << 5);
/// __GFP_FS: may call into the filesystem.
pub const __GFP_FS: Gfp = Gfp(1 << 6);
/// __GFP_DIRECT_RECLAIM: may sleep and reclaim.
pub const __GFP_DIRECT_RECLAIM: Gfp = Gfp(1 << 7);
/// __GFP_KSWAPD_RECLAIM: may wake kswapd.
pub const __GFP_KSWAPD_RECLAIM: Gfp = Gfp(1 << 8);
/// __GFP_NOWARN.
pub const __GFP_NOWARN: Gfp = Gfp(1 << 9);
/// __GFP_RETRY_MAYFAIL.
pub const __GFP_RETRY_MAYFAIL: Gfp = Gfp(1 << 10);
/// __GFP_NORETRY.
pub const __GFP_NORETRY: Gfp = Gfp(1 << 11);
/// __GFP_NOFAIL.
pub const __GFP_NOFAIL: Gfp = Gfp(1 << 12);
/// __GFP_COMP.
pub const __GFP_COMP: Gfp = Gfp(1 << 13);
/// __GFP_ZERO.
pub const __GFP_ZERO: Gfp = Gfp(1 << 14);
/// __GFP_HARDWALL.
pub const __GFP_HARDWALL: Gfp = Gfp(1 << 15);
/// __GFP_NOMEMALLOC.
pub const __GFP_NOMEMALLOC: Gfp = Gfp(1 << 16);
/// __GFP_THISNODE.
pub const __GFP_THISNODE: Gfp = Gfp(1 << 17);

/// __GFP_RECLAIM.
pub const __GFP_RECLAIM: Gfp = Gfp(__GFP_DIRECT_RECLAIM.0 | __GFP_KSWAPD_RECLAIM.0);
/// GFP_ATOMIC.
pub const GFP_ATOMIC: Gfp = Gfp(__GFP_HIGH.0 | __GFP_KSWAPD_RECLAIM.0);
/// GFP_KERNEL.
pub const GFP_KERNEL: Gfp = Gfp(__GFP_RECLAIM.0 | __GFP_IO.0 | __GFP_FS.0);
/// GFP_NOWAIT.
pub const GFP_NOWAIT: Gfp = Gfp(__GFP_KSWAPD_RECLAIM.0 | __GFP_NOWARN.0);
/// GFP_NOIO.
pub const GFP_NOIO: Gfp = __GFP_RECLAIM;
/// GFP_NOFS.
pub const GFP_NOFS: Gfp = Gfp(__GFP_RECLAIM.0 | __GFP_IO.0);
/// GFP_USER.
pub const GFP_USER: Gfp = Gfp(GFP_KERNEL.0 | __GFP_HARDWALL.0);
/// GFP_HIGHUSER_MOVABLE (no highmem on x86-64).
pub const GFP_HIGHUSER_MOVABLE: Gfp = Gfp(GFP_USER.0 | __GFP_MOVABLE.0);
/// GFP_KERNEL_ACCOUNT's reclaimable cousin used by dentry/inode caches.
pub const GFP_KERNEL_RECLAIMABLE: Gfp = Gfp(GFP_KERNEL.0 | __GFP_RECLAIMABLE.0);
/// GFP_TRANSHUGE_LIGHT.
pub const GFP_TRANSHUGE_LIGHT: Gfp = Gfp((GFP_HIGHUSER_MOVABLE.0
    | __GFP_COMP.0
    | __GFP_NOMEMALLOC.0
    | __GFP_NOWARN.0)
    & !__GFP_RECLAIM.0);

/// The `__GFP_*` modifiers an `alloc` operation may add to its type's mask, by name.
pub const GFP_MODIFIERS: [(&str, Gfp); 5] = [
    ("__GFP_RETRY_MAYFAIL", __GFP_RETRY_MAYFAIL),
    ("__GFP_NORETRY", __GFP_NORETRY),
    ("__GFP_THISNODE", __GFP_THISNODE),
    ("__GFP_NOWARN", __GFP_NOWARN),
    ("__GFP_COMP", __GFP_COMP),
];

/// The mask of the named modifiers, or the first name that is not one.
pub fn gfp_modifiers(names: &[String]) -> Result<Gfp, String> {
    let mut g = Gfp(0);
    for n in names {
        match GFP_MODIFIERS.iter().find(|(name, _)| name == n) {
            Some((_, f)) => g = g | *f,
            None => return Err(n.clone()),
        }
    }
    Ok(g)
}

/// The allocation flags of mm/internal.h.
pub mod alloc_flags {
    /// ALLOC_WMARK_MIN.
    pub const ALLOC_WMARK_MIN: u32 = 0;
    /// ALLOC_WMARK_LOW.
    pub const ALLOC_WMARK_LOW: u32 = 1;
    /// ALLOC_WMARK_HIGH.
    pub const ALLOC_WMARK_HIGH: u32 = 2;
    /// ALLOC_NO_WATERMARKS.
    pub const ALLOC_NO_WATERMARKS: u32 = 4;
    /// ALLOC_WMARK_MASK.
    pub const ALLOC_WMARK_MASK: u32 = ALLOC_NO_WATERMARKS - 1;
    /// ALLOC_OOM.
    pub const ALLOC_OOM: u32 = 0x08;
    /// ALLOC_NON_BLOCK.
    pub const ALLOC_NON_BLOCK: u32 = 0x10;
    /// ALLOC_MIN_RESERVE (== __GFP_HIGH in the kernel).
    pub const ALLOC_MIN_RESERVE: u32 = 0x20;
    /// ALLOC_CPUSET.
    pub const ALLOC_CPUSET: u32 = 0x40;
    /// ALLOC_NOFRAGMENT.
    pub const ALLOC_NOFRAGMENT: u32 = 0x100;
    /// ALLOC_HIGHATOMIC.
    pub const ALLOC_HIGHATOMIC: u32 = 0x200;
    /// ALLOC_KSWAPD (== __GFP_KSWAPD_RECLAIM in the kernel).
    pub const ALLOC_KSWAPD: u32 = 0x800;
    /// ALLOC_RESERVES.
    pub const ALLOC_RESERVES: u32 =
        ALLOC_NON_BLOCK | ALLOC_MIN_RESERVE | ALLOC_HIGHATOMIC | ALLOC_OOM;
}

/// The highest zone a request may use (gfp_zone).
pub fn gfp_zone(gfp: Gfp) -> ZoneType {
    if gfp.has(__GFP_DMA) {
        ZoneType::Dma
    } else if gfp.has(__GFP_DMA32) {
        ZoneType::Dma32
    } else {
        ZoneType::Normal
    }
}

/// The migratetype a request allocates from (gfp_migratetype); with mobility
/// grouping disabled every request is MIGRATE_UNMOVABLE.
#[inline]
pub fn gfp_migratetype(gfp: Gfp, grouping: bool) -> MigrateType {
    if !grouping {
        MigrateType::Unmovable
    } else if gfp.has(__GFP_MOVABLE) {
        MigrateType::Movable
    } else if gfp.has(__GFP_RECLAIMABLE) {
        MigrateType::Reclaimable
    } else {
        MigrateType::Unmovable
    }
}

/// The names the kmem tracepoints print for a gfp mask (show_gfp_flags), most specific first.
pub fn gfp_name(gfp: Gfp) -> &'static str {
    match gfp {
        g if g == GFP_TRANSHUGE_LIGHT => "GFP_TRANSHUGE_LIGHT",
        g if g == GFP_HIGHUSER_MOVABLE => "GFP_HIGHUSER_MOVABLE",
        g if g == GFP_USER => "GFP_USER",
        g if g == GFP_KERNEL_RECLAIMABLE => "GFP_KERNEL|__GFP_RECLAIMABLE",
        g if g == GFP_KERNEL => "GFP_KERNEL",
        g if g == GFP_NOFS => "GFP_NOFS",
        g if g == GFP_ATOMIC => "GFP_ATOMIC",
        g if g == GFP_NOWAIT => "GFP_NOWAIT",
        _ => "GFP_OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migratetypes_follow_gfp() {
        assert_eq!(
            gfp_migratetype(GFP_HIGHUSER_MOVABLE, true),
            MigrateType::Movable
        );
        assert_eq!(
            gfp_migratetype(GFP_KERNEL_RECLAIMABLE, true),
            MigrateType::Reclaimable
        );
        assert_eq!(gfp_migratetype(GFP_KERNEL, true), MigrateType::Unmovable);
        assert_eq!(
            gfp_migratetype(GFP_HIGHUSER_MOVABLE, false),
            MigrateType::Unmovable
        );
        assert_eq!(gfp_zone(GFP_KERNEL | __GFP_DMA32), ZoneType::Dma32);
        assert!(!GFP_TRANSHUGE_LIGHT.has(__GFP_DIRECT_RECLAIM));
    }
}
