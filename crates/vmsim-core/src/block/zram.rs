//! A compressed RAM disk used as a swap device.
//!
//! Models drivers/block/zram/zram_drv.c and mm/zsmalloc.c: a page written
//! to the device is compressed on the writer's CPU (`zram_write_page`) and
//! stored as one object in the zsmalloc pool (`zs_malloc`); a page read is
//! decompressed on the reader's CPU (`zram_read_from_zspool`); a freed swap
//! slot frees its object (`zram_slot_free_notify` → `zram_free_page` →
//! `zs_free`). The pool's pages are real frames taken from the buddy
//! allocator (`mm/zsmalloc.rs`); an object that cannot get a page fails the
//! write (the page stays dirty in the swap cache). Every object has the one
//! size the configured compression ratio gives, rounded up to its zsmalloc
//! size class; `mm_stat` reports orig_data_size, compr_data_size and
//! mem_used_total as sysfs does.
//!
//! A fault on a zram slot skips the swap cache (SWP_SYNCHRONOUS_IO:
//! `Kernel::swapin_skip_swapcache`).
//!
//! Simplifications: one compression ratio for every page (no same-filled
//! pages, no incompressible "huge" pages unless the ratio makes every page
//! one); a freed object gives its zspage back when the pool needs fewer
//! zspages (no fragmentation, no compaction).

use crate::mm::page::{Pfn, PAGE_SIZE};
use crate::mm::zsmalloc::{compressed_len, PoolId, ZsPool};

/// Default compression ratio: lzo1x 2.10 -1 (the algorithm of this machine's
/// default lzo-rle, CONFIG_ZRAM_DEF_COMP) on the Silesia corpus, 2.106, from the
/// benchmark table of facebook/zstd's README (zstd 1.5.7, lzbench, Core i7-9700K).
pub const ZRAM_COMP_RATIO: f64 = 2.106;

/// Default cost of compressing one 4 KiB page [ns]: lzo1x -1 at 650 MB/s in the same table.
pub const ZRAM_COMPRESS_NS: u64 = 6_302;

/// Default cost of decompressing one 4 KiB page [ns]: lzo1x at 780 MB/s in the same table.
pub const ZRAM_DECOMPRESS_NS: u64 = 5_251;

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
    /// The zsmalloc pool holding the objects.
    pub pool: ZsPool,
}

impl Zram {
    /// A device of `slots` slots storing pages at `comp_ratio` (zram_add + disksize_store).
    pub fn new(slots: u32, comp_ratio: f64, compress_ns: u64, decompress_ns: u64) -> Self {
        Zram {
            comp_ratio,
            compress_ns,
            decompress_ns,
            stored: vec![false; slots as usize],
            pool: ZsPool::new(compressed_len(comp_ratio)),
        }
    }

    /// /sys/block/zramN/mm_stat (mm_stat_show): orig_data_size, compr_data_size,
    /// mem_used_total, mem_limit, mem_used_max, same_pages, pages_compacted, huge_pages,
    /// huge_pages_since.
    pub fn mm_stat(&self) -> String {
        let p = &self.pool;
        let huge = if p.class_size == PAGE_SIZE {
            p.objects
        } else {
            0
        };
        format!(
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            p.objects * PAGE_SIZE,
            p.objects * p.class_size,
            p.total_pages() * PAGE_SIZE,
            0,
            p.pages_max * PAGE_SIZE,
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
    /// each compressed on this CPU and stored in the pool (zs_malloc); the write
    /// completes at once. A page whose object gets no memory is not stored: it stays
    /// dirty (-ENOMEM).
    pub fn zram_write_pages(&mut self, t: usize, run: Vec<Pfn>) {
        for p in run {
            let Some(s) = self.swap_slot_of(p) else {
                self.end_page_writeback(p);
                continue;
            };
            let base = self.swap.devices[t].base;
            let off = (s - base) as usize;
            let (ns, stored) = {
                let z = self.zram_mut(t).expect("a zram device");
                (z.compress_ns, z.stored[off])
            };
            self.mm.cur.acc += ns;
            // A slot written again replaces its object (zram_write_page → zram_free_page).
            if stored || self.zs_malloc(PoolId::Zram(t)) {
                self.zram_mut(t).expect("a zram device").stored[off] = true;
            } else {
                // end_swap_bio_write() with an error: the folio is redirtied.
                self.mm.map[p as usize].flags |= crate::mm::page::pg::DIRTY;
            }
            self.end_page_writeback(p);
        }
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
        let Some(z) = self.zram_mut(t) else {
            return;
        };
        let off = (s - base) as usize;
        if std::mem::take(&mut z.stored[off]) {
            self.zs_free(PoolId::Zram(t));
        }
    }
}
