//! The zsmalloc allocator behind zram and zswap (mm/zsmalloc.c).
//!
//! A pool stores compressed pages as objects of one size class each, packed
//! into zspages of 1 to `ZS_MAX_PAGES_PER_ZSPAGE` frames (`calculate_zspage_chain`
//! picks the chain that wastes least). The frames are real frames from the buddy
//! allocator, movable and taken below the watermarks as the reclaimer's own
//! allocations are (PF_MEMALLOC: `zs_malloc` is called from swap-out, inside
//! reclaim).
//!
//! Simplifications: every object of a pool has the one size its user's
//! compression ratio gives (one size class); a freed object gives its zspage back
//! as soon as the pool needs fewer zspages (no fragmentation, no `zs_compact`).

use super::page::{PageKind, Pfn, PAGE_SIZE};
use crate::kernel::Kernel;

/// Smallest zsmalloc object (ZS_MIN_ALLOC_SIZE) [bytes].
const ZS_MIN_ALLOC_SIZE: u64 = 32;

/// Size-class step (ZS_SIZE_CLASS_DELTA: PAGE_SIZE >> CLASS_BITS(8)) [bytes].
const ZS_SIZE_CLASS_DELTA: u64 = 16;

/// Most pages in one zspage (CONFIG_ZSMALLOC_CHAIN_SIZE default, ZS_MAX_PAGES_PER_ZSPAGE).
const ZS_MAX_PAGES_PER_ZSPAGE: u64 = 8;

/// The zspage chain of a class: the pages per zspage, 1 to ZS_MAX_PAGES_PER_ZSPAGE,
/// that waste the least, and the objects it holds (calculate_zspage_chain).
pub fn calculate_zspage_chain(size: u64) -> (u64, u64) {
    if size.is_power_of_two() {
        return (1, PAGE_SIZE / size);
    }
    let mut best = (1, PAGE_SIZE / size);
    let mut min_waste = u64::MAX;
    for i in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let waste = (i * PAGE_SIZE) % size;
        if waste < min_waste {
            min_waste = waste;
            best = (i, i * PAGE_SIZE / size);
        }
    }
    best
}

/// A page's compressed length at `comp_ratio` (the compressor's dlen) [bytes].
pub fn compressed_len(comp_ratio: f64) -> u64 {
    ((PAGE_SIZE as f64 / comp_ratio).ceil() as u64).min(PAGE_SIZE)
}

/// One zs_pool holding objects of a single size class.
#[derive(Debug, Clone)]
pub struct ZsPool {
    /// The objects' size class [bytes].
    pub class_size: u64,
    /// Pages per zspage of that class.
    pages_per_zspage: u64,
    /// Objects per zspage of that class.
    objs_per_zspage: u64,
    /// Objects stored.
    pub objects: u64,
    /// The pool's frames (zspages' pages).
    pub pages: Vec<Pfn>,
    /// Most pool pages ever (zram's mem_used_max) [pages].
    pub pages_max: u64,
}

impl ZsPool {
    /// A pool for objects of `len` bytes (zs_create_pool; the class of get_size_class_index).
    pub fn new(len: u64) -> Self {
        let class_size = (len.max(ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA)
            * ZS_SIZE_CLASS_DELTA)
            .min(PAGE_SIZE);
        let (pages_per_zspage, objs_per_zspage) = calculate_zspage_chain(class_size);
        ZsPool {
            class_size,
            pages_per_zspage,
            objs_per_zspage,
            objects: 0,
            pages: Vec::new(),
            pages_max: 0,
        }
    }

    /// Pool pages `objects` objects need: whole zspages of the class.
    pub fn pages_for(&self, objects: u64) -> u64 {
        objects.div_ceil(self.objs_per_zspage) * self.pages_per_zspage
    }

    /// Pool pages in use (zs_get_total_pages).
    pub fn total_pages(&self) -> u64 {
        self.pages.len() as u64
    }
}

/// Which pool a zsmalloc call works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolId {
    /// The pool of the zram device of this swap type.
    Zram(usize),
    /// zswap's pool.
    Zswap,
}

impl Kernel {
    /// The pool `id` names.
    fn zs_pool(&mut self, id: PoolId) -> Option<&mut ZsPool> {
        match id {
            PoolId::Zram(t) => self.swap.devices[t].zram.as_mut().map(|z| &mut z.pool),
            PoolId::Zswap => Some(&mut self.zswap.pool),
        }
    }

    /// Stores one object (zs_malloc): a new zspage's frames when the pool's are full
    /// (alloc_zspage); false, with nothing stored, when the zones have no frame left.
    pub fn zs_malloc(&mut self, id: PoolId) -> bool {
        let Some(need) = self.zs_pool(id).map(|p| p.pages_for(p.objects + 1)) else {
            return false;
        };
        while self.zs_pool(id).map_or(0, |p| p.total_pages()) < need {
            match self.zs_alloc_page() {
                Some(f) => self.zs_pool(id).expect("a pool").pages.push(f),
                None => return false,
            }
        }
        let p = self.zs_pool(id).expect("a pool");
        p.objects += 1;
        p.pages_max = p.pages_max.max(p.total_pages());
        true
    }

    /// Frees one object and the zspages the pool no longer needs (zs_free → free_zspage).
    pub fn zs_free(&mut self, id: PoolId) {
        let cpu = self.mm.cur.cpu;
        let Some(p) = self.zs_pool(id) else {
            return;
        };
        p.objects = p.objects.saturating_sub(1);
        let keep = p.pages_for(p.objects) as usize;
        let surplus: Vec<Pfn> = if p.pages.len() > keep {
            p.pages.split_off(keep)
        } else {
            Vec::new()
        };
        for f in surplus {
            self.mm.map[f as usize].set_kind(PageKind::Other);
            self.mm.free_pages(f, 0, cpu);
        }
    }

    /// One frame for a zspage (alloc_zspage → alloc_page): movable, from the reclaimer's
    /// context, so below the watermarks; None when the zones are empty.
    fn zs_alloc_page(&mut self) -> Option<Pfn> {
        use super::gfp::{alloc_flags::ALLOC_NO_WATERMARKS, __GFP_MOVABLE, GFP_NOIO};
        let cpu = self.mm.cur.cpu;
        let nid = self.mm.cpu_to_node[cpu];
        let gfp = super::gfp::Gfp(GFP_NOIO.0 | __GFP_MOVABLE.0);
        let ac = self.mm.prepare_alloc_pages(gfp, nid, cpu);
        let p = self
            .mm
            .get_page_from_freelist(0, ALLOC_NO_WATERMARKS, &ac)?;
        self.mm.map[p as usize].set_kind(PageKind::Other);
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_and_zspage_chains_follow_zsmalloc() {
        // 4096 / 2.106 → 1945 bytes → class 1952; one page (192 bytes wasted) holds two.
        let z = ZsPool::new(compressed_len(2.106));
        assert_eq!(z.class_size, 1952);
        assert_eq!(calculate_zspage_chain(1952), (1, 2));
        assert_eq!(z.pages_for(1), 1);
        assert_eq!(z.pages_for(2), 1);
        assert_eq!(z.pages_for(3), 2);
        // 4096 / 3 → 1366 → class 1376: eight pages (waste 1120, the least) hold 23.
        assert_eq!(calculate_zspage_chain(1376), (8, 23));
        // A ratio of 1 stores whole pages: one page per object.
        let huge = ZsPool::new(compressed_len(1.0));
        assert_eq!(huge.pages_for(3), 3);
        assert_eq!(calculate_zspage_chain(32), (1, 128));
    }
}
