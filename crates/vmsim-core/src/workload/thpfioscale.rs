//! The operations of mmtests' thpfioscale (today's thpchallenge-fio).
//!
//! fio threads create many 64 KiB files (a dentry and an inode each: slab
//! pressure) and write them (page-cache pressure), then read them at random
//! (`readwrite=randread`, `file_service_type=random:16`) until the THP
//! threads are done; the THP threads fault anonymous memory 2 MiB region by
//! region, with or without MADV_HUGEPAGE, and record each region's latency
//! from its first touch to the end of writing the whole region, and whether
//! it got a huge page (thpfioscale.c uses `mincore()` on page 64 of the
//! region for that). The `signal`/`wait` operations order the phases.

use super::{step_unless_allocated, StepCtx};
use crate::config::{Advice, Op};
use crate::engine::rng::Stream;
use crate::engine::{Step, StepOut};
use crate::kernel::AllocResult;
use crate::mm::huge_memory::HPAGE_PMD_NR;
use crate::mm::memory::Fault;
use crate::mm::page::PAGE_SIZE;
use crate::mm::slab::builtin_cache;

/// Reads from one file before fio picks another (`file_service_type=random:16`).
pub const FIO_FILE_SERVICE_IOS: u64 = 16;
/// How often `wait` looks at its counter [ns].
pub const WAIT_POLL_NS: u64 = 1_000_000;

/// Progress of the thpfioscale operations of one task.
#[derive(Debug, Clone, Default)]
pub struct ThpOpState {
    /// First page index of the current `thp_fault` operation.
    pub base: u64,
    /// Start of the current region [ns], if one is open.
    region_start: Option<u64>,
    /// Whether the current region's first fault got a huge page.
    region_huge: bool,
    /// Inodes this task created with `fio_write`.
    files: Vec<u32>,
    /// Pages of each of those files.
    file_pages: u64,
    /// Current file of the reader and reads left on it.
    read_file: usize,
    reads_left_on_file: u64,
    /// Pages dirtied since balance_dirty_pages last ran.
    dirtied: u64,
}

impl ThpOpState {
    /// Runs one piece of a thpfioscale operation; Some(out) ends the step.
    pub fn step(
        &mut self,
        op: &Op,
        cx: &mut StepCtx,
        left: &mut u64,
        user: &mut u64,
        rng: &mut Stream,
    ) -> Option<StepOut> {
        let tid = cx.tid;
        let run = |user: u64| StepOut {
            user_ns: user,
            next: Step::Run,
        };
        match op {
            Op::Madvise { advice } => {
                cx.k.madvise_hugepage(tid, *advice == Advice::Hugepage);
                *left = 0;
                None
            }
            Op::Signal { name } => {
                cx.k.signal(name, cx.now + *user + cx.k.mm.cur.acc);
                *left = 0;
                None
            }
            Op::Wait { name, count } => {
                if cx.k.signal_count(name) >= *count {
                    *left = 0;
                    return None;
                }
                Some(StepOut {
                    user_ns: *user,
                    next: Step::Sleep(WAIT_POLL_NS),
                })
            }
            Op::ThpFault { size } => {
                let n = size.0.div_ceil(PAGE_SIZE);
                let i = n - *left;
                let index = self.base + i;
                let now = cx.now + *user + cx.k.mm.cur.acc;
                if self.region_start.is_none() {
                    self.region_start = Some(now);
                    self.region_huge = false;
                }
                let huge_before = cx.k.thp.fault_huge.count;
                match cx.k.handle_mm_fault(tid, index) {
                    Fault::Access | Fault::Minor | Fault::Major => {
                        if cx.k.thp.fault_huge.count > huge_before {
                            self.region_huge = true;
                        }
                        *user += cx.k.mm.cost.touch_page;
                        *left -= 1;
                        if (index + 1).is_multiple_of(HPAGE_PMD_NR) || *left == 0 {
                            let end = cx.now + *user + cx.k.mm.cur.acc + cx.k.mm.cur.sleep;
                            let start = self.region_start.take().unwrap_or(end);
                            cx.k.thp.regions.push((self.region_huge, end - start));
                        }
                        if cx.k.mm.cur.sleep > 0 {
                            return Some(run(*user));
                        }
                        None
                    }
                    Fault::Retry => Some(run(*user)),
                    Fault::Failed | Fault::Killed => Some(StepOut {
                        user_ns: *user,
                        next: Step::Exit,
                    }),
                }
            }
            Op::FioWrite {
                files,
                file_size,
                bs,
            } => {
                let ppf = file_size.0.div_ceil(PAGE_SIZE);
                let total = files * ppf;
                let i = total - *left;
                let f = i / ppf;
                let page = i % ppf;
                if f as usize >= self.files.len() {
                    // create_on_open: a new file, with its dentry and inode (on ext4 and
                    // xfs, vfs_create below makes its inode, directory entry and metadata).
                    if cx.k.mm.kcfg.fs == crate::config::Fs::Bare {
                        for cache in ["dentry", "xfs_inode"] {
                            let c = builtin_cache(cache).unwrap_or(0);
                            let r = cx.k.kmem_cache_alloc(c, tid);
                            if let Some(out) = step_unless_allocated(r, *user, false) {
                                return Some(out);
                            }
                        }
                    }
                    let pid = cx.k.tasks[tid as usize].pid;
                    let name = format!("thpfilescale/{pid}/workfile.{f}");
                    let ino = cx.k.lookup_or_create(&name);
                    self.files.push(ino);
                    self.file_pages = ppf;
                }
                let ino = self.files[f as usize];
                let r = cx.k.vfs_create(tid, ino);
                if let Some(out) = step_unless_allocated(r, *user, true) {
                    return Some(out);
                }
                // Bytes of the current write(2) left from this page (fio's bs).
                let bs = bs.map_or(PAGE_SIZE, |b| b.0);
                let done = page * PAGE_SIZE;
                let len = (bs - done % bs)
                    .min(file_size.0 - done.min(file_size.0))
                    .max(1);
                let r = cx.k.file_write_folio(tid, ino, page, len);
                let folio = match r {
                    AllocResult::Page(p) => Some(p),
                    _ => None,
                };
                if let Some(out) = step_unless_allocated(r, *user, true) {
                    return Some(out);
                }
                if done.is_multiple_of(bs) {
                    // A write(2) started at this page: its fixed part (ksys_write, vfs_write).
                    cx.k.mm.cur.acc += cx.k.mm.cost.write_call;
                }
                *user += cx.k.mm.cost.touch_page;
                *left -= 1;
                self.dirtied += 1;
                // generic_perform_write(): balance_dirty_pages_ratelimited() between folios.
                if self.dirtied >= crate::mm::page_writeback::DIRTY_RATELIMIT_PAGES
                    && folio.is_none_or(|p| cx.k.folio_last_page(p, page))
                    || *left == 0
                {
                    cx.k.balance_dirty_pages(tid, self.dirtied);
                    self.dirtied = 0;
                    if cx.k.mm.cur.sleep > 0 {
                        return Some(run(*user));
                    }
                }
                None
            }
            Op::FioRead { until, count } => {
                if self.files.is_empty() || cx.k.signal_count(until) >= *count {
                    *left = 0;
                    return None;
                }
                if self.reads_left_on_file == 0 {
                    self.read_file = rng.below(self.files.len() as u64) as usize;
                    self.reads_left_on_file = FIO_FILE_SERVICE_IOS;
                }
                let ino = self.files[self.read_file];
                let page = rng.below(self.file_pages.max(1));
                let r = cx.k.file_read_page(tid, ino, page);
                if let Some(out) = step_unless_allocated(r, *user, true) {
                    return Some(out);
                }
                *user += cx.k.mm.cost.touch_page;
                self.reads_left_on_file -= 1;
                if cx.k.mm.cur.sleep > 0 {
                    return Some(run(*user));
                }
                None
            }
            _ => None,
        }
    }
}
