//! posix_fadvise(2) over a whole file (mm/fadvise.c, `generic_fadvise`).
//!
//! `normal` gives the file the device's readahead window back and leaves random
//! mode; `sequential` doubles the window (`file->f_ra.ra_pages = bdi->ra_pages * 2`);
//! `random` sets FMODE_RANDOM, so a miss reads just what the read(2) asked for
//! (`page_cache_sync_ra` → `force_page_cache_ra`); `willneed` reads the file ahead
//! now without waiting (`force_page_cache_readahead`, which reads at most the larger
//! of the device's optimal I/O size and the window from the file's start);
//! `dontneed` starts writeback of the file's dirty pages (`__filemap_fdatawrite_range`,
//! WB_SYNC_NONE) and drops its clean, unmapped pages that are not under writeback
//! (`mapping_try_invalidate`), so the pages it has just sent to the disk stay.
//!
//! Simplifications: the advice covers the whole file (offset 0, len 0); the
//! readahead state is the inode's, so the advice holds for every reader of the
//! file, where the kernel keeps it per open file.

use crate::config::FadviseAdvice;
use crate::engine::TaskId;
use crate::kernel::Kernel;

impl Kernel {
    /// posix_fadvise(fd, 0, 0, advice) by task `tid` on file `ino` (generic_fadvise).
    pub fn generic_fadvise(&mut self, tid: TaskId, ino: u32, advice: FadviseAdvice) {
        let bdi_ra_pages = self.disk.config().ra_pages();
        match advice {
            FadviseAdvice::Normal => {
                let ra = &mut self.inodes[ino as usize].ra;
                ra.ra_pages = None;
                ra.random = false;
            }
            FadviseAdvice::Random => self.inodes[ino as usize].ra.random = true,
            FadviseAdvice::Sequential => {
                let ra = &mut self.inodes[ino as usize].ra;
                ra.ra_pages = Some(bdi_ra_pages * 2);
                ra.random = false;
            }
            FadviseAdvice::Willneed => {
                let size = self.inodes[ino as usize].size_pages;
                self.force_page_cache_ra(tid, ino, 0, size, false);
            }
            FadviseAdvice::Dontneed => {
                // __filemap_fdatawrite_range(WB_SYNC_NONE) over the whole file, from its
                // start (range_cyclic = 0: the flusher's cyclic position is kept).
                let cyclic = self.inodes[ino as usize].writeback_index;
                self.inodes[ino as usize].writeback_index = 0;
                self.write_inode_pages(ino, u64::MAX);
                self.inodes[ino as usize].writeback_index = cyclic;
                let cpu = self.tasks[tid as usize].cpu;
                self.invalidate_mapping_pages(ino, cpu);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::kernel::AllocResult;
    use crate::mm::page::pg;

    /// A 512 MiB machine whose disk has read_ahead_kb = 128 (32 pages), one task, and an
    /// uncached file of `pages` pages on the disk.
    fn boot(pages: u64) -> (Kernel, TaskId, u32) {
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"512MiB\"\ncpus = 1\n[disk]\nread_ahead_kb = 128\n",
        )
        .unwrap();
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("t", 0, false);
        assert!(k.copy_process(tid, 0));
        let ino = k.lookup_or_create("f");
        k.inodes[ino as usize].size_pages = pages;
        (k, tid, ino)
    }

    fn read(k: &mut Kernel, tid: TaskId, ino: u32, index: u64) {
        assert!(matches!(
            k.file_read_folio(tid, ino, index, 1),
            AllocResult::Page(_)
        ));
    }

    #[test]
    fn random_reads_what_is_asked_sequential_doubles_the_window_normal_restores_it() {
        let (mut k, tid, ino) = boot(4096);
        k.generic_fadvise(tid, ino, FadviseAdvice::Random);
        for i in 0..64 {
            read(&mut k, tid, ino, i);
        }
        // FMODE_RANDOM: a 4 KiB read(2) reads its page and nothing ahead.
        assert_eq!(k.inodes[ino as usize].nrpages, 64);
        assert_eq!(k.file_ra_pages(ino), 32);
        k.generic_fadvise(tid, ino, FadviseAdvice::Sequential);
        assert_eq!(k.file_ra_pages(ino), 64);
        assert!(!k.inodes[ino as usize].ra.random);
        // The next miss starts readahead again: the window ramps up to 64 pages.
        for i in 64..1024 {
            read(&mut k, tid, ino, i);
        }
        assert!(k.inodes[ino as usize].nrpages > 1024);
        assert_eq!(k.inodes[ino as usize].ra.size, 64);
        k.generic_fadvise(tid, ino, FadviseAdvice::Normal);
        assert_eq!(k.file_ra_pages(ino), 32);
        k.mm.check_lru().unwrap();
    }

    #[test]
    fn willneed_reads_one_maximum_ahead_and_dontneed_drops_clean_pages_only() {
        let (mut k, tid, ino) = boot(4096);
        k.generic_fadvise(tid, ino, FadviseAdvice::Willneed);
        // force_page_cache_ra: the larger of io_pages and ra_pages from the file's start,
        // without the task waiting.
        let io = k.disk.config().io_pages().max(32);
        assert_eq!(k.inodes[ino as usize].nrpages, io.min(4096));
        assert_eq!(k.mm.cur.sleep, 0);
        k.generic_fadvise(tid, ino, FadviseAdvice::Dontneed);
        assert_eq!(k.inodes[ino as usize].nrpages, 0);
        // Dirty pages are sent to the disk and stay while they are written.
        let w = k.lookup_or_create("w");
        for i in 0..16 {
            assert!(matches!(
                k.file_write_folio(tid, w, i, 4096),
                AllocResult::Page(_)
            ));
        }
        k.generic_fadvise(tid, w, FadviseAdvice::Dontneed);
        assert_eq!(k.inodes[w as usize].nrpages, 16);
        let p = k.filemap_get_folio(w, 0).unwrap();
        assert!(k.mm.map[p as usize].test(pg::WRITEBACK));
        assert_eq!(k.inodes[w as usize].nr_dirty, 0);
        k.mm.check_lru().unwrap();
    }
}
