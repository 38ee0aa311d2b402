//! A compressed RAM disk used as a swap device.
//!
//! Models drivers/block/zram/zram_drv.c and mm/zsmalloc.c: a page written
//! to the device is compressed on the writer's CPU (`zram_write_page`) and
//! stored as one object in the zsmalloc pool (`zs_malloc`); a page read is
//! decompressed on the reader's CPU (`zram_read_from_zspool`); a freed swap
//! slot frees its object (`zram_slot_free_notify` → `zram_free_page` →
//! `zs_free`). The pool's pages are real frames taken from the buddy
//! allocator, movable and allowed below the watermarks as the reclaimer's
//! own allocations are (PF_MEMALLOC); an object that cannot get a page
//! fails the write (the page stays dirty in the swap cache). Every object
//! has the one size the configured compression ratio gives, rounded up to
//! its zsmalloc size class, and the pool holds as many zspages of that
//! class as its objects fill (`calculate_zspage_chain`); `mm_stat` reports
//! orig_data_size, compr_data_size and mem_used_total as sysfs does.
//!
//! Simplifications: one compression ratio for every page (no same-filled
//! pages, no incompressible "huge" pages unless the ratio makes every page
//! one); a freed object gives its zspage back when the pool needs fewer
//! zspages (no fragmentation, no compaction); the device reads and writes
//! through the swap cache with readahead as a disk does, where 6.18 skips
//! the swap cache for SWP_SYNCHRONOUS_IO devices.

use crate::mm::page::{PageKind, Pfn, PAGE_SIZE};

/// Default compression ratio: lzo1x 2.10 -1 (the algorithm of this machine's
/// default lzo-rle, CONFIG_ZRAM_DEF_COMP) on the Silesia corpus, 2.106, from the
/// benchmark table of facebook/zstd's README (zstd 1.5.7, lzbench, Core i7-9700K).
pub const ZRAM_COMP_RATIO: f64 = 2.106;

/// Default cost of compressing one 4 KiB page [ns]: lzo1x -1 at 650 MB/s in the same table.
pub const ZRAM_COMPRESS_NS: u64 = 6_302;

/// Default cost of decompressing one 4 KiB page [ns]: lzo1x at 780 MB/s in the same table.
pub const ZRAM_DECOMPRESS_NS: u64 = 5_251;

/// Smallest zsmalloc object (ZS_MIN_ALLOC_SIZE) [bytes].
const ZS_MIN_ALLOC_SIZE: u64 = 32;

/// Size-class step (ZS_SIZE_CLASS_DELTA: PAGE_SIZE >> CLASS_BITS(8)) [bytes].
const ZS_SIZE_CLASS_DELTA: u64 = 16;

/// Most pages in one zspage (CONFIG_ZSMALLOC_CHAIN_SIZE default, ZS_MAX_PAGES_PER_ZSPAGE).
const ZS_MAX_PAGES_PER_ZSPAGE: u64 = 8;

/// One zram device's parameters and pool.
#[derive(Debug, Clone)]
pub struct Zram {
    /// Compressed size of a page is PAGE_SIZE / comp_ratio.
    pub comp_ratio: f64,
    /// CPU time to compress a page [ns].
    pub compress_ns: u64,
    /// CPU time to decompress a page [ns].
    pub decompress_ns: u64,
    /// Whether each slot (by offset) holds a stored object.
    stored: Vec<bool>,
    /// Objects stored.
    pub objects: u64,
    /// The pool's frames (zspages' pages).
    pub pool: Vec<Pfn>,
    /// Most pool pages ever (mem_used_max) [pages].
    pub mem_used_max: u64,
    /// The object size: its size class [bytes].
    class_size: u64,
    /// Pages per zspage of that class.
    pages_per_zspage: u64,
    /// Objects per zspage of that class.
    objs_per_zspage: u64,
}

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

impl Zram {
    /// A device of `slots` slots storing pages at `comp_ratio` (zram_add + disksize_store).
    pub fn new(slots: u32, comp_ratio: f64, compress_ns: u64, decompress_ns: u64) -> Self {
        let comp_len = (PAGE_SIZE as f64 / comp_ratio).ceil() as u64;
        let class_size = comp_len
            .max(ZS_MIN_ALLOC_SIZE)
            .div_ceil(ZS_SIZE_CLASS_DELTA)
            * ZS_SIZE_CLASS_DELTA;
        let class_size = class_size.min(PAGE_SIZE);
        let (pages_per_zspage, objs_per_zspage) = calculate_zspage_chain(class_size);
        Zram {
            comp_ratio,
            compress_ns,
            decompress_ns,
            stored: vec![false; slots as usize],
            objects: 0,
            pool: Vec::new(),
            mem_used_max: 0,
            class_size,
            pages_per_zspage,
            objs_per_zspage,
        }
    }

    /// Pool pages `objects` objects need: whole zspages of the class.
    pub fn pages_for(&self, objects: u64) -> u64 {
        objects.div_ceil(self.objs_per_zspage) * self.pages_per_zspage
    }

    /// /sys/block/zramN/mm_stat (mm_stat_show): orig_data_size, compr_data_size,
    /// mem_used_total, mem_limit, mem_used_max, same_pages, pages_compacted, huge_pages,
    /// huge_pages_since.
    pub fn mm_stat(&self) -> String {
        let huge = if self.class_size == PAGE_SIZE {
            self.objects
        } else {
            0
        };
        format!(
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            self.objects * PAGE_SIZE,
            self.objects * self.class_size,
            self.pool.len() as u64 * PAGE_SIZE,
            0,
            self.mem_used_max * PAGE_SIZE,
            0,
            0,
            huge,
            huge
        )
    }
}

impl crate::kernel::Kernel {
    /// The zram state of swap type `t`, if it is a zram device.
    fn zram_mut(&mut self, t: usize) -> Option<&mut Zram> {
        self.swap.devices[t].zram.as_mut()
    }

    /// Writes pages being swapped out to zram (zram_submit_bio → zram_write_page):
    /// each compressed on this CPU and stored in the pool, which takes frames from the
    /// buddy allocator below the watermarks (PF_MEMALLOC); the write completes at once.
    /// A page whose object gets no memory is not stored: it stays dirty (-ENOMEM).
    pub fn zram_write_pages(&mut self, t: usize, run: Vec<Pfn>) {
        for p in run {
            let Some(s) = self.swap_slot_of(p) else {
                self.end_page_writeback(p);
                continue;
            };
            let base = self.swap.devices[t].base;
            let (ns, need) = {
                let z = self.zram_mut(t).expect("a zram device");
                (z.compress_ns, z.pages_for(z.objects + 1))
            };
            self.mm.cur.acc += ns;
            let mut ok = true;
            while (self.swap.devices[t]
                .zram
                .as_ref()
                .map_or(0, |z| z.pool.len()) as u64)
                < need
            {
                match self.zs_alloc_page() {
                    Some(f) => self.zram_mut(t).expect("a zram device").pool.push(f),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                let z = self.zram_mut(t).expect("a zram device");
                let off = (s - base) as usize;
                if !z.stored[off] {
                    z.stored[off] = true;
                    z.objects += 1;
                }
                z.mem_used_max = z.mem_used_max.max(z.pool.len() as u64);
            } else {
                // end_swap_bio_write() with an error: the folio is redirtied.
                self.mm.map[p as usize].flags |= crate::mm::page::pg::DIRTY;
            }
            self.end_page_writeback(p);
        }
    }

    /// One frame for a zspage (alloc_zspage → alloc_page): movable, from the reclaimer's
    /// context, so below the watermarks; None when the zones are empty.
    fn zs_alloc_page(&mut self) -> Option<Pfn> {
        use crate::mm::gfp::{alloc_flags::ALLOC_NO_WATERMARKS, __GFP_MOVABLE, GFP_NOIO};
        let cpu = self.mm.cur.cpu;
        let nid = self.mm.cpu_to_node[cpu];
        let gfp = crate::mm::gfp::Gfp(GFP_NOIO.0 | __GFP_MOVABLE.0);
        let ac = self.mm.prepare_alloc_pages(gfp, nid, cpu);
        let p = self
            .mm
            .get_page_from_freelist(0, ALLOC_NO_WATERMARKS, &ac)?;
        self.mm.map[p as usize].set_kind(PageKind::Other);
        Some(p)
    }

    /// Reads `n` slots from zram (zram_read_page): each decompressed on this CPU;
    /// returns when the last is done [ns].
    pub fn zram_read_pages(&mut self, t: usize, n: u64) -> u64 {
        let ns = self.swap.devices[t]
            .zram
            .as_ref()
            .map_or(0, |z| z.decompress_ns);
        self.mm.cur.acc += ns * n;
        self.mm.clock()
    }

    /// Frees the object of a freed slot and the pool's surplus zspages
    /// (zram_slot_free_notify → zram_free_page → zs_free).
    pub fn zram_slot_free_notify(&mut self, s: u32) {
        let t = self.swap.swp_type(s);
        let base = self.swap.devices[t].base;
        let cpu = self.mm.cur.cpu;
        let Some(z) = self.zram_mut(t) else {
            return;
        };
        let off = (s - base) as usize;
        if !std::mem::take(&mut z.stored[off]) {
            return;
        }
        z.objects -= 1;
        let keep = z.pages_for(z.objects) as usize;
        let surplus: Vec<Pfn> = if z.pool.len() > keep {
            z.pool.split_off(keep)
        } else {
            Vec::new()
        };
        for f in surplus {
            self.mm.map[f as usize].set_kind(PageKind::Other);
            self.mm.free_pages(f, 0, cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_and_zspage_chains_follow_zsmalloc() {
        // 4096 / 2.106 → 1945 bytes → class 1952; one page (192 bytes wasted) holds two.
        let z = Zram::new(100, ZRAM_COMP_RATIO, 0, 0);
        assert_eq!(z.class_size, 1952);
        assert_eq!(calculate_zspage_chain(1952), (1, 2));
        assert_eq!(z.pages_for(1), 1);
        assert_eq!(z.pages_for(2), 1);
        assert_eq!(z.pages_for(3), 2);
        // 4096 / 3 → 1366 → class 1376: eight pages (waste 1120, the least) hold 23.
        assert_eq!(calculate_zspage_chain(1376), (8, 23));
        // A ratio of 1 stores whole pages: one page per object.
        let huge = Zram::new(100, 1.0, 0, 0);
        assert_eq!(huge.pages_for(3), 3);
        assert_eq!(calculate_zspage_chain(32), (1, 128));
    }
}
