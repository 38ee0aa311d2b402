//! Dirty page accounting, the dirty limits, writer throttling and the flusher thread.
//!
//! Models mm/page-writeback.c (folio_account_dirtied, global_dirtyable_memory,
//! domain_dirty_limits with vm.dirty_ratio and vm.dirty_background_ratio,
//! balance_dirty_pages with the setpoint/limit position control and
//! MAX_PAUSE) and fs/fs-writeback.c (one flusher per backing device:
//! wb_workfn → wb_do_writeback → wb_writeback, with background writeback
//! above the background threshold, kupdate writeback of inodes dirtied more
//! than dirty_expire_centisecs ago every dirty_writeback_centisecs, and
//! work queued by wakeup_flusher_threads(); inodes are written oldest
//! dirtied first, MAX_WRITEBACK_PAGES at a time, in file order).
//! Simplifications: one backing device; the dirty ratelimit is the disk's
//! write bandwidth (no per-task rate estimation); no per-cgroup writeback.

use super::memory::BioKind;
use super::page::{pg, Pfn};
use super::rmap::Entry;
use super::vmstat::{NodeStat, ZoneStat};
use crate::block::{Request, WbtKind};
use crate::engine::{Program, Step, StepCtx, StepOut, TaskId};
use crate::kernel::Kernel;
use crate::trace::TraceEvent;
use std::collections::VecDeque;

/// Pages written per inode per pass (MAX_WRITEBACK_PAGES, 4 MiB).
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
/// Longest a dirtier sleeps in one balance_dirty_pages() call (MAX_PAUSE = HZ/5) [ns].
pub const MAX_PAUSE: u64 = 200_000_000;
/// Pages a task dirties between balance_dirty_pages() calls (the ratelimit, 32 pages).
pub const DIRTY_RATELIMIT_PAGES: u64 = 32;
pub use crate::trace::{
    WB_REASON_BACKGROUND, WB_REASON_PERIODIC, WB_REASON_SYNC, WB_REASON_VMSCAN,
};

/// Writeback work queued for the flusher (struct wb_writeback_work).
#[derive(Debug, Clone, Copy)]
pub struct WbWork {
    /// Pages to write; u64::MAX for "everything dirty".
    pub nr_pages: u64,
    /// Why (WB_REASON_*).
    pub reason: i32,
    /// WB_SYNC_ALL work whose caller waits for it (sync_inodes_sb's `done`).
    pub sync_all: bool,
}

/// The backing device's writeback state (struct bdi_writeback).
#[derive(Debug, Default)]
pub struct BdiWriteback {
    /// Dirty inodes, oldest dirtied first (b_dirty).
    pub b_dirty: VecDeque<u32>,
    /// Queued work (work_list).
    pub work_list: VecDeque<WbWork>,
    /// Wait queue id of the flusher thread, or usize::MAX without one.
    pub wq: usize,
    /// Whether the flusher sleeps (not running).
    pub idle: bool,
    /// The writeback being done is background or kupdate writeback: its writes carry
    /// REQ_BACKGROUND (wbc_to_write_flags), which writeback throttling limits most.
    pub for_background: bool,
    /// WB_SYNC_ALL works queued and not yet finished (the `done` counts that
    /// wb_wait_for_completion waits on).
    pub sync_works: u64,
    /// Wait queue of tasks in sync(2) (the completion's waitqueue and jbd2's
    /// j_wait_done_commit), or usize::MAX before the kernel's threads start.
    pub sync_wq: usize,
}

impl Kernel {
    /// Memory that could hold dirty page cache: free plus file LRU pages, less the
    /// reserves (global_dirtyable_memory) [pages].
    pub fn global_dirtyable_memory(&self) -> u64 {
        let mut x: i64 = 0;
        for z in &self.mm.zones {
            x += z.free_pages();
            x -= (z.watermark[super::mmzone::Wmark::High as usize]
                + z.lowmem_reserve.iter().max().copied().unwrap_or(0)) as i64;
            x += z.vm_stat[ZoneStat::NR_ZONE_INACTIVE_FILE as usize]
                + z.vm_stat[ZoneStat::NR_ZONE_ACTIVE_FILE as usize];
        }
        x.max(1) as u64
    }

    /// The background and hard dirty thresholds (global_dirty_limits) [pages].
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        self.domain_dirty_limits(self.global_dirtyable_memory(), None)
    }

    /// The background and hard thresholds of a domain of `available` dirtyable pages
    /// (domain_dirty_limits): vm.dirty_bytes and vm.dirty_background_bytes when set, else
    /// the ratios; a memcg domain (`global_avail` given) turns the byte settings into
    /// ratios of the global dirtyable memory, in 1/PAGE_SIZE [pages].
    pub fn domain_dirty_limits(&self, available: u64, global_avail: Option<u64>) -> (u64, u64) {
        let k = &self.mm.kcfg;
        let page = super::page::PAGE_SIZE;
        let ratio_of = |bytes: u64, ratio: u64| match global_avail {
            Some(g) if bytes > 0 => available * bytes.div_ceil(g.max(1)).min(page) / page,
            None if bytes > 0 => bytes.div_ceil(page),
            _ => available * ratio / 100,
        };
        let thresh = ratio_of(k.dirty_bytes.0, k.dirty_ratio);
        let mut bg = ratio_of(k.dirty_background_bytes.0, k.dirty_background_ratio);
        if bg >= thresh {
            bg = thresh / 2;
        }
        (bg, thresh)
    }

    /// /proc/vmstat with the dirty thresholds filled in (vmstat_start → global_dirty_limits).
    pub fn vmstat_snapshot(&self) -> super::vmstat::VmstatSnapshot {
        let (bg, thresh) = self.global_dirty_limits();
        self.mm.vmstat_snapshot((thresh as i64, bg as i64))
    }

    /// Dirty plus writeback page-cache pages (what the limits are compared with) [pages].
    pub fn nr_dirty_and_writeback(&self) -> u64 {
        let s = |i: NodeStat| {
            self.mm
                .nodes
                .iter()
                .map(|n| n.vm_stat[i as usize])
                .sum::<i64>()
                .max(0) as u64
        };
        s(NodeStat::NR_DIRTY) + s(NodeStat::NR_WRITEBACK)
    }

    /// Marks a page-cache page dirty and accounts it (folio_mark_dirty → folio_account_dirtied).
    pub fn folio_mark_dirty(&mut self, p: Pfn, ino: u32, now: u64) {
        if self.mm.map[p as usize].test(pg::DIRTY) {
            return;
        }
        self.mm.map[p as usize].flags |= pg::DIRTY;
        let nr = self.mm.folio_nr_pages(p);
        self.account_dirty(p, nr as i64);
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_DIRTIED, nr as i64);
        let inode = &mut self.inodes[ino as usize];
        inode.nr_dirty += nr;
        if inode.dirtied_when.is_none() {
            inode.dirtied_when = Some(now);
            self.wb.b_dirty.push_back(ino);
        }
    }

    /// Adjusts NR_DIRTY and NR_ZONE_WRITE_PENDING for a file page.
    fn account_dirty(&mut self, p: Pfn, delta: i64) {
        self.mod_memcg_page_state(p, super::memcontrol::stat::DIRTY, delta);
        let zid = self.mm.page_zone(p);
        self.mm.zones[zid].vm_stat[ZoneStat::NR_ZONE_WRITE_PENDING as usize] += delta;
        let nid = self.mm.zones[zid].nid;
        self.mm.mod_node_page_state(nid, NodeStat::NR_DIRTY, delta);
    }

    /// Clears a page's dirty state before writing or dropping it (folio_clear_dirty_for_io /
    /// folio_cancel_dirty).
    pub fn folio_clear_dirty(&mut self, p: Pfn) {
        if !self.mm.map[p as usize].test(pg::DIRTY) {
            return;
        }
        self.mm.map[p as usize].flags &= !pg::DIRTY;
        let nr = self.mm.folio_nr_pages(p);
        self.account_dirty(p, -(nr as i64));
        let slot = self.mm.map[p as usize].owner;
        if let (super::rmap::Owner::File { ino, .. }, _) = self.rmap.owner(slot) {
            let inode = &mut self.inodes[ino as usize];
            inode.nr_dirty -= nr;
            if inode.nr_dirty == 0 {
                inode.dirtied_when = None;
            }
        }
    }

    /// Starts writeback of a page (folio_start_writeback): NR_WRITEBACK and write-pending up.
    pub fn folio_start_writeback(&mut self, p: Pfn) {
        self.mm.map[p as usize].flags |= pg::WRITEBACK;
        let nr = self.mm.folio_nr_pages(p) as i64;
        self.mod_memcg_page_state(p, super::memcontrol::stat::WRITEBACK, nr);
        let zid = self.mm.page_zone(p);
        self.mm.zones[zid].vm_stat[ZoneStat::NR_ZONE_WRITE_PENDING as usize] += nr;
        let nid = self.mm.zones[zid].nid;
        self.mm.mod_node_page_state(nid, NodeStat::NR_WRITEBACK, nr);
    }

    /// The dirty-throttling domain of a cgroup v2 group (the mdtc of balance_dirty_pages):
    /// its dirty and writeback pages against the dirty ratios of its file pages plus the
    /// clean memory it could still take under its max/high (mem_cgroup_wb_stats,
    /// mdtc_calc_avail, domain_dirty_limits); `(bg_thresh, thresh, dirty)` [pages].
    pub fn memcg_dirty_limits(&self, id: u32) -> (u64, u64, u64) {
        use super::memcontrol::{stat, NO_MEMCG, ROOT_MEM_CGROUP};
        use super::mmzone::lru;
        let m = &self.mm.memcg;
        let (mut filepages, mut dirty) = (0u64, 0u64);
        let mut pos = id;
        while pos != NO_MEMCG {
            let e = m.ext(pos);
            dirty += e.stat[stat::DIRTY] + e.stat[stat::WRITEBACK];
            if m.groups[pos as usize].pn != NO_MEMCG {
                for nid in 0..m.nr_nodes {
                    let lv = super::memcontrol::mem_cgroup_lruvec_ref(&self.mm.nodes, m, pos, nid);
                    filepages += lv.nr[lru::INACTIVE_FILE] + lv.nr[lru::ACTIVE_FILE];
                }
            }
            pos = m.next_pre(pos, id, false);
        }
        // mem_cgroup_wb_stats(): the headroom under every ancestor's min(max, high).
        let mut headroom = u64::MAX;
        let mut g = id;
        while g != ROOT_MEM_CGROUP && g != NO_MEMCG {
            let ceiling = m.groups[g as usize].memory.max.min(m.high(g));
            let used = m.groups[g as usize].memory.usage;
            headroom = headroom.min(ceiling - ceiling.min(used));
            g = m.groups[g as usize].parent;
        }
        // mdtc_calc_avail(): its file pages plus the clean memory elsewhere it could take.
        let global_avail = self.global_dirtyable_memory();
        let global_dirty = self.nr_dirty_and_writeback();
        let clean = filepages - filepages.min(dirty);
        let global_clean = global_avail - global_avail.min(global_dirty);
        let other_clean = global_clean - global_clean.min(clean);
        let avail = filepages + headroom.min(other_clean);
        let (bg, thresh) = self.domain_dirty_limits(avail, Some(global_avail));
        (bg, thresh, dirty)
    }

    /// The group whose dirty domain throttles a writer (the memcg of its wb), cgroup v2 only.
    fn writer_memcg_domain(&self, tid: TaskId) -> Option<u32> {
        let id = self.task_memcg(tid);
        (self.mm.memcg.dfl && id != super::memcontrol::ROOT_MEM_CGROUP).then_some(id)
    }

    /// Whether background writeback should go on (wb_over_bg_thresh): dirty memory over the
    /// global background threshold, or, with cgroup v2, a declared group over its own.
    pub fn wb_over_bg_thresh(&self) -> bool {
        let (bg, _) = self.global_dirty_limits();
        if self.nr_dirty_and_writeback() > bg {
            return true;
        }
        self.mm.memcg.dfl
            && self.mm.memcg.paths.values().any(|&id| {
                let (m_bg, _, m_dirty) = self.memcg_dirty_limits(id);
                m_dirty > m_bg
            })
    }

    /// Throttles a task that dirtied pages when dirty memory is above the setpoint
    /// (balance_dirty_pages); wakes the flusher above the background threshold. With
    /// cgroup v2 the writer's group is a second domain, and the one nearer its limit
    /// sets the pace (sdtc).
    pub fn balance_dirty_pages(&mut self, tid: TaskId, pages_dirtied: u64) {
        let (bg, thresh) = self.global_dirty_limits();
        let dirty = self.nr_dirty_and_writeback();
        let mdtc = self
            .writer_memcg_domain(tid)
            .map(|id| self.memcg_dirty_limits(id));
        if dirty > bg || mdtc.is_some_and(|(m_bg, _, m_dirty)| m_dirty > m_bg) {
            self.wb_start_background_writeback();
        }
        let freerun = (bg + thresh) / 2;
        let m_freerun =
            mdtc.is_none_or(|(m_bg, m_thresh, m_dirty)| m_dirty <= (m_bg + m_thresh) / 2);
        if dirty <= freerun && m_freerun || self.mm.cur.atomic {
            return;
        }
        // Position control: full speed at the setpoint, none at the limit; the domain
        // with the lower position ratio is the one obeyed.
        let pos_ratio = |bg: u64, thresh: u64, dirty: u64| {
            let setpoint = (bg + thresh) / 2;
            let limit = thresh.max(setpoint + 1);
            let pos = if dirty >= limit {
                0.0
            } else {
                ((limit - dirty) as f64 / (limit - setpoint) as f64).min(1.0)
            };
            (pos, setpoint, limit, dirty)
        };
        let mut sdtc = pos_ratio(bg, thresh, dirty);
        if let Some((m_bg, m_thresh, m_dirty)) = mdtc {
            let m = pos_ratio(m_bg, m_thresh, m_dirty);
            if m.0 < sdtc.0 {
                sdtc = m;
            }
        }
        let (pos, setpoint, limit, dirty) = sdtc;
        let thresh = limit;
        let bw = (self.disk.config().write_bandwidth / crate::mm::page::PAGE_SIZE).max(1);
        let pause = if pos <= 0.0 {
            MAX_PAUSE
        } else {
            let rate = (bw as f64 * pos).max(1.0);
            ((pages_dirtied as f64 / rate) * 1e9) as u64
        }
        .min(MAX_PAUSE);
        if pause == 0 {
            return;
        }
        self.mm.cur.sleep += pause;
        self.throttle_ns += pause;
        // bdi->last_bdp_sleep, which writeback throttling reads (wb_recent_wait).
        let now = self.mm.clock();
        self.disk.note_bdp_sleep(now);
        self.trace(TraceEvent::BalanceDirtyPages {
            bdi: crate::trace::mkdev(8, 0),
            limit: thresh,
            setpoint,
            dirty,
            wb_setpoint: setpoint,
            wb_dirty: dirty,
            dirty_ratelimit: bw * 4,
            task_ratelimit: (bw * 4 * (limit.saturating_sub(dirty))) / (limit - setpoint).max(1),
            dirtied: pages_dirtied as u32,
            dirtied_pause: DIRTY_RATELIMIT_PAGES as u32,
            paused: 0,
            pause: (pause / 1_000_000) as i64,
            period: (pause / 1_000_000),
            think: 0,
            cgroup_ino: 1,
        });
    }

    /// Queues writeback work and wakes the flusher (wb_queue_work + wb_wakeup).
    pub fn wb_queue_work(&mut self, work: WbWork) {
        self.wb.work_list.push_back(work);
        self.wb_wakeup();
    }

    /// Wakes the flusher thread if it sleeps (wb_wakeup).
    fn wb_wakeup(&mut self) {
        if self.wb.idle && self.wb.wq != usize::MAX {
            self.wb.idle = false;
            self.mm.cur.wake.push(self.wb.wq);
        }
    }

    /// Starts background writeback (wb_start_background_writeback).
    pub fn wb_start_background_writeback(&mut self) {
        if self.wb.idle {
            self.trace(TraceEvent::WritebackWakeBackground {
                name: crate::trace::mkdev(8, 0),
                cgroup_ino: 1,
            });
        }
        self.wb_wakeup();
    }

    /// A WB_SYNC_ALL work finished: its waiter wakes (finish_writeback_work →
    /// wake_up_all(work->done->waitq)).
    pub fn wb_sync_work_done(&mut self) {
        self.wb.sync_works = self.wb.sync_works.saturating_sub(1);
        self.wake_up_sync_waiters();
    }

    /// Wakes the tasks sleeping in sync(2), which look again at what they wait for.
    pub fn wake_up_sync_waiters(&mut self) {
        if self.wb.sync_wq != usize::MAX {
            self.mm.cur.wake.push(self.wb.sync_wq);
        }
    }

    /// Queues sync_inodes_sb()'s WB_SYNC_ALL work of every dirty page for the flusher
    /// (bdi_split_work_to_wbs → wb_queue_work, traced as writeback_queue); false when
    /// there is no flusher to do it.
    pub fn wb_queue_sync_all(&mut self) -> bool {
        if self.wb.wq == usize::MAX {
            return false;
        }
        self.trace(TraceEvent::WritebackQueue {
            name: crate::trace::mkdev(8, 0),
            nr_pages: i64::MAX,
            sb_dev: 0,
            sync_mode: 1,
            for_kupdate: 0,
            range_cyclic: 0,
            for_background: 0,
            reason: WB_REASON_SYNC,
            cgroup_ino: 1,
        });
        self.wb.sync_works += 1;
        self.wb_queue_work(WbWork {
            nr_pages: u64::MAX,
            reason: WB_REASON_SYNC,
            sync_all: true,
        });
        true
    }

    /// Asks the flushers to write `nr_pages` (0: all dirty pages) because of `reason`
    /// (wakeup_flusher_threads).
    pub fn wakeup_flusher_threads(&mut self, nr_pages: u64, reason: i32) {
        if self.wb.wq == usize::MAX {
            return;
        }
        let nr = if nr_pages == 0 { u64::MAX } else { nr_pages };
        self.trace(TraceEvent::WritebackQueue {
            name: crate::trace::mkdev(8, 0),
            nr_pages: if nr == u64::MAX {
                self.nr_dirty_and_writeback() as i64
            } else {
                nr as i64
            },
            sb_dev: 0,
            sync_mode: 0,
            for_kupdate: 0,
            range_cyclic: 1,
            for_background: 0,
            reason,
            cgroup_ino: 1,
        });
        self.wb_queue_work(WbWork {
            nr_pages: nr,
            reason,
            sync_all: false,
        });
    }

    /// Writes back up to `budget` dirty pages of the oldest dirty inodes, oldest first,
    /// in file order (writeback_sb_inodes → __writeback_single_inode → do_writepages);
    /// returns pages written. `older_than` limits it to inodes dirtied before that time.
    pub fn writeback_inodes(&mut self, budget: u64, older_than: Option<u64>) -> u64 {
        let mut written = 0;
        while written < budget {
            let Some(&ino) = self.wb.b_dirty.front() else {
                break;
            };
            let inode = &self.inodes[ino as usize];
            let Some(when) = inode.dirtied_when else {
                self.wb.b_dirty.pop_front();
                continue;
            };
            if older_than.is_some_and(|t| when > t) {
                break;
            }
            let chunk = (budget - written).min(MAX_WRITEBACK_PAGES);
            let n = self.write_inode_pages(ino, chunk);
            written += n;
            let inode = &self.inodes[ino as usize];
            self.wb.b_dirty.pop_front();
            if inode.nr_dirty > 0 {
                // More left: requeue at the tail, as redirty_tail/requeue_io do.
                self.wb.b_dirty.push_back(ino);
            }
            if n == 0 {
                break;
            }
        }
        written
    }

    /// Starts writeback of up to `max` dirty pages of one file, in index order, as
    /// requests of consecutive pages (do_writepages → write_cache_pages); a folio is
    /// written whole.
    pub(crate) fn write_inode_pages(&mut self, ino: u32, max: u64) -> u64 {
        self.ext4_da_writepages(ino);
        let size = self.inodes[ino as usize].size_pages;
        let start = self.inodes[ino as usize].writeback_index;
        let mut written = 0;
        let mut run: Vec<Pfn> = Vec::new();
        let mut run_start = 0u64;
        let mut idx = start;
        let mut scanned = 0;
        while written < max && scanned < size {
            if idx >= size {
                idx = 0;
                self.flush_file_run(ino, run_start, std::mem::take(&mut run));
            }
            let page = self.inodes[ino as usize]
                .pages
                .slot(idx)
                .map(|s| self.rmap.get(s));
            let mut step = 1;
            match page {
                Some(Entry::Page(p)) => {
                    // From a folio's first index to past its end.
                    let first = self.folio_index(p);
                    step = (first + self.mm.folio_nr_pages(p))
                        .saturating_sub(idx)
                        .max(1);
                    if first + self.mm.folio_nr_pages(p) > size {
                        // A folio a write(2) is still filling (the file ends inside it):
                        // the writer holds its lock until the copy is done, and the flusher
                        // waits for it (folio_lock in writeback_get_folio). Written next pass.
                        self.flush_file_run(ino, run_start, std::mem::take(&mut run));
                        idx = first;
                        break;
                    }
                    if self.mm.map[p as usize].test(pg::DIRTY)
                        && !self.mm.map[p as usize].test(pg::WRITEBACK)
                    {
                        if !run.is_empty() && idx != first {
                            self.flush_file_run(ino, run_start, std::mem::take(&mut run));
                        }
                        if run.is_empty() {
                            run_start = first;
                        }
                        self.folio_clear_dirty(p);
                        self.folio_start_writeback(p);
                        run.push(p);
                        written += self.mm.folio_nr_pages(p);
                    } else {
                        self.flush_file_run(ino, run_start, std::mem::take(&mut run));
                    }
                }
                _ => self.flush_file_run(ino, run_start, std::mem::take(&mut run)),
            }
            idx += step;
            scanned += step;
        }
        self.flush_file_run(ino, run_start, run);
        self.inodes[ino as usize].writeback_index = idx;
        written
    }

    fn flush_file_run(&mut self, ino: u32, first: u64, run: Vec<Pfn>) {
        if run.is_empty() {
            return;
        }
        let sector = self.inodes[ino as usize].start_sector + first * 8;
        let n: u64 = run.iter().map(|&p| self.mm.folio_nr_pages(p)).sum();
        self.mm
            .count_vm_events(super::vmstat::Event::PGPGOUT, 4 * n);
        let n = n as u32;
        let kind = if self.wb.for_background {
            WbtKind::Background
        } else {
            WbtKind::Write
        };
        self.submit_bio(
            Request::write(sector, n, 0, false).wbt(kind),
            BioKind::FileWrite(run),
        );
    }
}

/// Emits writeback_start (before a chunk of work) or writeback_written (after it);
/// `sync_mode` is WB_SYNC_ALL (1) for sync_inodes_sb's work, else WB_SYNC_NONE (0).
fn trace_wb(
    k: &mut Kernel,
    start: bool,
    nr_pages: i64,
    reason: i32,
    background: bool,
    kupdate: bool,
    sync_mode: i32,
) {
    let (name, sb_dev) = (crate::trace::mkdev(8, 0), 0);
    let (for_kupdate, for_background) = (kupdate as i32, background as i32);
    let ev = if start {
        TraceEvent::WritebackStart {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            // sync_inodes_sb's WB_SYNC_ALL work covers whole files (range_cyclic 0).
            range_cyclic: 1 - sync_mode,
            for_background,
            reason,
            cgroup_ino: 1,
        }
    } else {
        TraceEvent::WritebackWritten {
            name,
            nr_pages,
            sb_dev,
            sync_mode,
            for_kupdate,
            // sync_inodes_sb's WB_SYNC_ALL work covers whole files (range_cyclic 0).
            range_cyclic: 1 - sync_mode,
            for_background,
            reason,
            cgroup_ino: 1,
        }
    };
    k.trace(ev);
}

/// Where the flusher is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlusherState {
    Idle,
    Working,
}

/// The flusher thread of the disk (the bdi_writeback work function, wb_workfn).
pub struct Flusher {
    state: FlusherState,
    current: Option<WbWork>,
    last_kupdate: u64,
}

impl Default for Flusher {
    fn default() -> Self {
        Self::new()
    }
}

impl Flusher {
    /// A flusher at rest.
    pub fn new() -> Self {
        Flusher {
            state: FlusherState::Idle,
            current: None,
            last_kupdate: 0,
        }
    }
}

impl Program<Kernel> for Flusher {
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let k = &mut *cx.k;
        let now = cx.now;
        let interval = k.mm.kcfg.dirty_writeback_centisecs * 10_000_000;
        let expire = k.mm.kcfg.dirty_expire_centisecs * 10_000_000;
        self.state = FlusherState::Working;
        k.wb.idle = false;
        // One chunk of work per step (wb_writeback's loop), so others run meanwhile.
        if self.current.is_none() {
            self.current = k.wb.work_list.pop_front();
            if let Some(w) = self.current {
                // wb_do_writeback(): a queued work item starts ("everything" is the dirty
                // and writeback pages of the moment, as writeback_queue showed it).
                let nr_pages = if w.sync_all {
                    // sync_inodes_sb's LONG_MAX.
                    i64::MAX
                } else if w.nr_pages == u64::MAX {
                    k.nr_dirty_and_writeback() as i64
                } else {
                    w.nr_pages as i64
                };
                k.trace(TraceEvent::WritebackExec {
                    name: crate::trace::mkdev(8, 0),
                    nr_pages,
                    sb_dev: 0,
                    sync_mode: w.sync_all as i32,
                    for_kupdate: 0,
                    range_cyclic: 1 - w.sync_all as i32,
                    for_background: 0,
                    reason: w.reason,
                    cgroup_ino: 1,
                });
            }
        }
        let written = if let Some(mut w) = self.current {
            let sync_mode = w.sync_all as i32;
            trace_wb(
                k,
                true,
                w.nr_pages.min(i64::MAX as u64) as i64,
                w.reason,
                false,
                false,
                sync_mode,
            );
            let n = k.writeback_inodes(w.nr_pages.min(MAX_WRITEBACK_PAGES), None);
            w.nr_pages = w.nr_pages.saturating_sub(n.max(1));
            self.current = (n > 0 && w.nr_pages > 0).then_some(w);
            trace_wb(k, false, n as i64, w.reason, false, false, sync_mode);
            if self.current.is_none() && w.sync_all {
                // finish_writeback_work(): the waiter in wb_wait_for_completion wakes.
                k.wb_sync_work_done();
            }
            n
        } else if k.wb_over_bg_thresh()
            && k.wb
                .b_dirty
                .iter()
                .any(|&i| k.inodes[i as usize].nr_dirty > 0)
        {
            // wb_check_background_flush()
            trace_wb(k, true, i64::MAX, WB_REASON_BACKGROUND, true, false, 0);
            k.wb.for_background = true;
            let n = k.writeback_inodes(MAX_WRITEBACK_PAGES, None);
            k.wb.for_background = false;
            trace_wb(k, false, n as i64, WB_REASON_BACKGROUND, true, false, 0);
            n
        } else if now >= self.last_kupdate + interval {
            // wb_check_old_data_flush(): kupdate-style writeback of expired inodes.
            self.last_kupdate = now;
            k.wb.for_background = true;
            let n = k.writeback_inodes(u64::MAX, Some(now.saturating_sub(expire)));
            k.wb.for_background = false;
            if n > 0 {
                trace_wb(k, true, n as i64, WB_REASON_PERIODIC, false, true, 0);
                trace_wb(k, false, n as i64, WB_REASON_PERIODIC, false, true, 0);
            }
            n
        } else {
            0
        };
        // wb_do_writeback() takes the queued works one after another before it sleeps.
        if written > 0 || self.current.is_some() || !k.wb.work_list.is_empty() {
            k.mm.cur.acc = k.mm.cur.acc.max(1);
            return StepOut {
                user_ns: 0,
                next: Step::Run,
            };
        }
        // Nothing to do: sleep until woken or the next periodic flush.
        self.state = FlusherState::Idle;
        k.wb.idle = true;
        let wake_in = (self.last_kupdate + interval)
            .saturating_sub(now)
            .max(1_000_000);
        StepOut {
            user_ns: 0,
            next: Step::Block {
                wq: k.wb.wq,
                timeout: Some(wake_in),
            },
        }
    }
}
