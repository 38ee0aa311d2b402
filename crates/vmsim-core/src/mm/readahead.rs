//! File readahead.
//!
//! Models mm/readahead.c's on-demand readahead (`kernel.ondemand_readahead`):
//! a miss starts synchronous readahead (page_cache_sync_ra) with a window of
//! get_init_ra_size() pages; the folio `async_size` pages before the window's
//! end is marked PG_readahead (the same bit as PG_reclaim, [`pg::RECLAIM`] on a
//! folio not under writeback), and a read reaching it starts the next window
//! at once (page_cache_async_ra), ramped by get_next_ra_size() up to the
//! device's `read_ahead_kb` (bdi->ra_pages) and read without waiting. Under
//! `kernel.large_folios` page_cache_ra_order() reads into folios of an order
//! that starts at 0 and grows by 2 with each asynchronous window, up to the
//! mapping's largest order and the window's size; otherwise (and to fill gaps)
//! do_page_cache_ra() reads order-0 pages. Each contiguous run is one request,
//! split at max_sectors_kb by the block layer.
//!
//! Simplifications: the state is per inode, not per open file; a read of a
//! page whose asynchronous readahead is still in flight waits for the whole
//! window's last request (the kernel waits on that folio's lock).

use super::gfp::{Gfp, __GFP_NORETRY, __GFP_NOWARN, GFP_HIGHUSER_MOVABLE};
use super::memory::BioKind;
use super::page::{pg, Pfn, NO_OWNER};
use super::rmap::Owner;
use crate::block::Request;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Readahead state of a file (struct file_ra_state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileRaState {
    /// First page of the last readahead window.
    pub start: u64,
    /// Pages in that window.
    pub size: u64,
    /// Pages from the PG_readahead mark to the window's end.
    pub async_size: u64,
    /// Folio order the last window used.
    pub order: usize,
    /// Last page read (prev_pos >> PAGE_SHIFT); u64::MAX before the first read.
    pub prev_index: u64,
    /// Pages `io_start..io_end` were read ahead asynchronously and are readable at `io_done` [ns].
    pub io_start: u64,
    /// End of that range.
    pub io_end: u64,
    /// When its last request completes [ns].
    pub io_done: u64,
    /// The file's own largest window (file->f_ra.ra_pages, set by POSIX_FADV_SEQUENTIAL
    /// and NORMAL); None is the device's read_ahead_kb.
    pub ra_pages: Option<u64>,
    /// FMODE_RANDOM (POSIX_FADV_RANDOM): a miss reads what the read(2) asked for.
    pub random: bool,
}

impl Default for FileRaState {
    /// A fresh state (file_ra_state_init: prev_pos = -1).
    fn default() -> Self {
        FileRaState {
            start: 0,
            size: 0,
            async_size: 0,
            order: 0,
            prev_index: u64::MAX,
            io_start: 0,
            io_end: 0,
            io_done: 0,
            ra_pages: None,
            random: false,
        }
    }
}

/// The first window of a sequential read of `size` pages (get_init_ra_size): the size
/// rounded up to a power of two, ×4 when small, ×2 when medium, else the maximum.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// The next window after one of `cur` pages (get_next_ra_size): ×4 while small, ×2 up
/// to half the maximum, then the maximum.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// The readahead gfp (readahead_gfp_mask): the mapping's, without retries or warnings.
const READAHEAD_GFP: Gfp = Gfp(GFP_HIGHUSER_MOVABLE.0 | __GFP_NORETRY.0 | __GFP_NOWARN.0);

impl Kernel {
    /// Whether a page-cache folio is marked PG_readahead (folio_test_readahead: the
    /// PG_reclaim bit on a folio not under writeback).
    pub fn folio_test_readahead(&self, p: Pfn) -> bool {
        let f = self.mm.map[p as usize].flags;
        f & pg::RECLAIM != 0 && f & pg::WRITEBACK == 0
    }

    /// The file's largest readahead window (ra->ra_pages): its own, else the device's.
    pub fn file_ra_pages(&self, ino: u32) -> u64 {
        self.inodes[ino as usize]
            .ra
            .ra_pages
            .unwrap_or_else(|| self.disk.config().ra_pages())
    }

    /// The largest window for a read of `req` pages (ractl_max_pages): the file's
    /// ra_pages, or up to the device's optimal I/O size for a larger request.
    fn ractl_max_pages(&self, ino: u32, req: u64) -> u64 {
        let (ra, io) = (self.file_ra_pages(ino), self.disk.config().io_pages());
        if req > ra && io > ra {
            req.min(io)
        } else {
            ra
        }
    }

    /// A read missed page `index` (page_cache_sync_ra, then filemap_create_folio if the
    /// page is still missing): reads a new window from there and sleeps until the page
    /// is read. Returns the page's folio or the failure of allocating it.
    pub fn page_cache_sync_ra(
        &mut self,
        tid: TaskId,
        ino: u32,
        index: u64,
        req_count: u64,
    ) -> AllocResult {
        let max_pages = self.ractl_max_pages(ino, req_count);
        let ra_pages = self.file_ra_pages(ino);
        if self.inodes[ino as usize].ra.random {
            // FMODE_RANDOM: "be dumb", read what was asked for (force_page_cache_ra).
            self.force_page_cache_ra(tid, ino, index, req_count, true);
        } else if ra_pages > 0 {
            let ra = &mut self.inodes[ino as usize].ra;
            let prev = ra.prev_index;
            if index == 0 || req_count > max_pages || index.wrapping_sub(prev) <= 1 {
                // A start of file, an oversized read or a sequential miss.
                ra.start = index;
                ra.size = get_init_ra_size(req_count, max_pages);
                ra.async_size = if ra.size > req_count {
                    ra.size - req_count
                } else {
                    ra.size >> 1
                };
                ra.order = 0;
                self.page_cache_ra_order(tid, ino, true);
            } else {
                // A random read: the pages asked for, without touching the state (the
                // history search of page_cache_prev_miss is not modelled).
                self.do_page_cache_ra(tid, ino, index, req_count.min(max_pages), 0, true);
            }
        }
        let cpu = self.tasks[tid as usize].cpu;
        let p = match self.filemap_get_folio(ino, index) {
            Some(p) => p,
            None => {
                // filemap_create_folio(): the page alone, with the mapping's gfp.
                let p = match self.filemap_create_folio(
                    tid,
                    ino,
                    index,
                    0,
                    GFP_HIGHUSER_MOVABLE,
                    false,
                ) {
                    AllocResult::Page(p) => p,
                    other => return other,
                };
                self.read_pages(ino, index, 1, true);
                p
            }
        };
        self.mm.cur.acc += self.mm.cost.copy_page + self.mm.cost.read_page;
        self.mm.folio_mark_accessed(p, cpu);
        self.inodes[ino as usize].ra.prev_index = index;
        AllocResult::Page(p)
    }

    /// A read reached a folio marked PG_readahead (page_cache_async_ra): clears the mark
    /// and, on the expected folio of a sequential stream, reads the next window, ramped
    /// up and of folios two orders larger, without waiting.
    pub fn page_cache_async_ra(&mut self, tid: TaskId, ino: u32, folio: Pfn, req_count: u64) {
        let ra_pages = self.file_ra_pages(ino);
        self.mm.map[folio as usize].flags &= !pg::RECLAIM;
        if ra_pages == 0 {
            return;
        }
        let max_pages = self.ractl_max_pages(ino, req_count);
        let index = self.folio_index(folio);
        let nr = self.mm.folio_nr_pages(folio);
        let ra = &mut self.inodes[ino as usize].ra;
        let expected = (ra.start + ra.size - ra.async_size) & !(nr - 1);
        if index != expected {
            // A marked folio without valid state (interleaved streams): not modelled.
            return;
        }
        ra.start += ra.size;
        ra.size = ra.size.max(get_next_ra_size(ra.size, max_pages));
        ra.order += 2;
        // Align the window's end to the folio size it will use.
        let align = 1u64 << ra.order.min(max_pages.trailing_zeros() as usize);
        let end = ra.start + ra.size;
        let aligned_end = end & !(align - 1);
        if aligned_end > ra.start {
            ra.size -= end - aligned_end;
        }
        ra.async_size = ra.size;
        self.page_cache_ra_order(tid, ino, false);
    }

    /// Reads `nr_to_read` pages from `index` whatever the state (force_page_cache_ra): at
    /// most the larger of the device's optimal I/O size and the file's ra_pages, in
    /// chunks of 2 MiB, with no PG_readahead mark; `sync` makes the reader wait.
    pub fn force_page_cache_ra(
        &mut self,
        tid: TaskId,
        ino: u32,
        index: u64,
        nr_to_read: u64,
        sync: bool,
    ) {
        let max_pages = self.disk.config().io_pages().max(self.file_ra_pages(ino));
        let mut left = nr_to_read.min(max_pages);
        let mut at = index;
        while left > 0 {
            let chunk = left.min((2 << 20) / crate::mm::page::PAGE_SIZE);
            self.do_page_cache_ra(tid, ino, at, chunk, 0, sync);
            at += chunk;
            left -= chunk;
        }
    }

    /// Reads the window of the readahead state in folios of its order (page_cache_ra_order
    /// and ra_alloc_folio): stops at a cached page or a failed allocation or charge, then
    /// reads what is left in order-0 pages (do_page_cache_ra); `sync` makes the reader
    /// wait for it.
    fn page_cache_ra_order(&mut self, tid: TaskId, ino: u32, sync: bool) {
        let size_pages = self.inodes[ino as usize].size_pages;
        let ra = self.inodes[ino as usize].ra;
        let start = ra.start;
        if size_pages == 0 || start >= size_pages {
            return;
        }
        let max_order = self.mapping_max_folio_order();
        let mut index = start;
        let mut failed = true;
        if max_order > 0 {
            let limit = (size_pages - 1).min(start + ra.size - 1);
            let mark = start + ra.size - ra.async_size;
            let ilog2 = 63 - ra.size.max(1).leading_zeros() as usize;
            let new_order = max_order.min(ra.order).min(ilog2);
            self.inodes[ino as usize].ra.order = new_order;
            let cpu = self.tasks[tid as usize].cpu;
            failed = false;
            self.ra_locked = Some((ino, start, limit + 1));
            while index <= limit {
                let mut order = new_order;
                if index & ((1 << order) - 1) != 0 {
                    order = index.trailing_zeros() as usize;
                }
                while order > 0 && index + (1 << order) - 1 > limit {
                    order -= 1;
                }
                let Some(p) = self.ra_alloc_folio(tid, ino, index, order) else {
                    failed = true;
                    break;
                };
                if index == mark & !((1 << order) - 1) {
                    self.mm.map[p as usize].flags |= pg::RECLAIM;
                }
                self.filemap_add_folio(ino, index, p, cpu, false);
                index += 1 << order;
            }
            if index > start {
                self.read_pages(ino, start, index - start, sync);
            }
            self.ra_locked = None;
        } else {
            self.inodes[ino as usize].ra.order = 0;
        }
        if failed && ra.size > index - start {
            self.do_page_cache_ra(
                tid,
                ino,
                index,
                ra.size - (index - start),
                ra.async_size,
                sync,
            );
        }
    }

    /// Allocates and charges a readahead folio of `order` at `index` (ractl_alloc_folio
    /// and the charge of filemap_add_folio): None if a page is already there
    /// (-EEXIST) or the allocation or charge fails (-ENOMEM).
    fn ra_alloc_folio(&mut self, tid: TaskId, ino: u32, index: u64, order: usize) -> Option<Pfn> {
        if !self.filemap_range_empty(ino, index, 1 << order) {
            return None;
        }
        let AllocResult::Page(p) = self.alloc_pages(READAHEAD_GFP, order, tid) else {
            return None;
        };
        let memcg = self.file_memcg(ino, tid);
        match self.charge_folio_or_free(p, order, memcg, READAHEAD_GFP, tid) {
            None => Some(p),
            Some(_) => None,
        }
    }

    /// Reads `nr_to_read` pages from `index` in order-0 pages, marking the one
    /// `lookahead` pages before the end PG_readahead (do_page_cache_ra →
    /// page_cache_ra_unbounded): cached pages are skipped, a failed allocation or
    /// charge ends it; each contiguous run is one request.
    fn do_page_cache_ra(
        &mut self,
        tid: TaskId,
        ino: u32,
        index: u64,
        nr_to_read: u64,
        lookahead: u64,
        sync: bool,
    ) {
        let size_pages = self.inodes[ino as usize].size_pages;
        if size_pages == 0 || index >= size_pages {
            return;
        }
        let nr_to_read = nr_to_read.min(size_pages - index);
        let mark = (lookahead <= nr_to_read).then(|| nr_to_read - lookahead);
        let cpu = self.tasks[tid as usize].cpu;
        let mut run_start = index;
        let outer = self.ra_locked.replace((ino, index, index + nr_to_read));
        for i in 0..nr_to_read {
            let at = index + i;
            if self.filemap_get_folio(ino, at).is_some() {
                self.read_pages(ino, run_start, at - run_start, sync);
                run_start = at + 1;
                continue;
            }
            let Some(p) = self.ra_alloc_folio(tid, ino, at, 0) else {
                break;
            };
            if Some(i) == mark {
                self.mm.map[p as usize].flags |= pg::RECLAIM;
            }
            self.filemap_add_folio(ino, at, p, cpu, false);
        }
        let end = (index + nr_to_read).min(self.first_missing(ino, run_start, index + nr_to_read));
        self.read_pages(ino, run_start, end - run_start, sync);
        self.ra_locked = outer;
    }

    /// Whether a page-cache folio is locked for its read (folio_trylock fails): added by
    /// a readahead that has not submitted it yet, or read ahead asynchronously and not
    /// yet read (the read's completion, folio_end_read, unlocks it).
    pub fn file_read_in_flight(&self, pfn: Pfn) -> bool {
        let slot = self.mm.map[pfn as usize].owner;
        if slot == NO_OWNER {
            return false;
        }
        let (Owner::File { ino, .. }, index) = self.rmap.owner(slot) else {
            return false;
        };
        if self
            .ra_locked
            .is_some_and(|(i, s, e)| i == ino && (s..e).contains(&index))
        {
            return true;
        }
        let ra = &self.inodes[ino as usize].ra;
        (ra.io_start..ra.io_end).contains(&index) && ra.io_done > self.mm.clock()
    }

    /// The first page from `from` up to `end` not in a file's page cache (or `end`).
    fn first_missing(&self, ino: u32, from: u64, end: u64) -> u64 {
        (from..end)
            .find(|&i| self.filemap_get_folio(ino, i).is_none())
            .unwrap_or(end)
    }

    /// Submits the read of `nr` pages from `index` as one request (read_pages →
    /// ->readahead); a synchronous read sleeps until it completes, an asynchronous one
    /// records when its pages become readable.
    fn read_pages(&mut self, ino: u32, index: u64, nr: u64, sync: bool) {
        if nr == 0 {
            return;
        }
        let sector = self.inodes[ino as usize].start_sector + index * 8;
        // ext4_mpage_readpages → ext4_map_blocks.
        let tid = self.mm.cur.tid;
        self.ext4_es_map_read(tid, ino);
        self.mm
            .count_vm_events(super::vmstat::Event::PGPGIN, 4 * nr);
        let done = self.submit_bio(Request::read(sector, nr as u32, 0), BioKind::FileRead);
        if sync {
            self.sleep_until(done);
        } else {
            let ra = &mut self.inodes[ino as usize].ra;
            if ra.io_end != index {
                ra.io_start = index;
            }
            ra.io_end = index + nr;
            ra.io_done = ra.io_done.max(done);
        }
    }

    /// A read of page `index` that asynchronous readahead has not finished reading
    /// waits for it (filemap_update_page → folio_wait_locked).
    pub fn wait_on_readahead(&mut self, ino: u32, index: u64) {
        let ra = self.inodes[ino as usize].ra;
        if (ra.io_start..ra.io_end).contains(&index) && ra.io_done > self.mm.clock() {
            self.sleep_until(ra.io_done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_window_follows_the_kernel_table_for_128k() {
        // "1-2 page = 16k, 3-4 page 32k, 5-8 page = 64k, > 8 page = 128k initial".
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(2, 32), 4);
        assert_eq!(get_init_ra_size(3, 32), 8);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(5, 32), 16);
        assert_eq!(get_init_ra_size(8, 32), 16);
        assert_eq!(get_init_ra_size(9, 32), 32);
        // A 1 MiB read on an 8 MiB window: 256 pages doubled.
        assert_eq!(get_init_ra_size(256, 2048), 512);
    }

    #[test]
    fn next_window_ramps_to_the_maximum() {
        let mut cur = 4;
        let mut seen = vec![cur];
        while cur < 2048 {
            cur = get_next_ra_size(cur, 2048);
            seen.push(cur);
        }
        assert_eq!(seen, vec![4, 16, 64, 256, 512, 1024, 2048]);
        assert_eq!(get_next_ra_size(2048, 2048), 2048);
    }
}
