//! The simulated kernel: the allocator state plus the tasks whose memory it tracks.
//!
//! `Kernel` is what a workload program sees when it runs a step: it owns the
//! page allocator ([`Mm`]), the slab caches, and every task's memory
//! (kernel/fork.c and kernel/exit.c in the small: a kernel stack on creation,
//! anonymous memory and page tables while running, everything freed on exit
//! or when the OOM killer picks it).

use crate::config::{Cost, Kernel as KernelCfg, Machine};
use crate::engine::lock::TaskId;
use crate::mm::gfp::{Gfp, GFP_HIGHUSER_MOVABLE, GFP_KERNEL};
use crate::mm::page::{PageKind, Pfn};
use crate::mm::slab::Slab;
use crate::mm::vmstat::{Event, NodeStat};
use crate::mm::Mm;
use std::collections::VecDeque;

/// Statistics of one task.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TaskStats {
    /// User time [ns].
    pub user_ns: u64,
    /// System time [ns].
    pub sys_ns: u64,
    /// Time runnable but waiting for a CPU [ns].
    pub runq_wait_ns: u64,
    /// Time spent in the allocator's slow path: reclaim, compaction, OOM, throttling [ns].
    pub alloc_stall_ns: u64,
    /// Allocations that entered the slow path.
    pub alloc_slowpath: u64,
    /// Allocations that failed.
    pub alloc_failed: u64,
    /// Page faults (pgfault).
    pub faults: u64,
    /// Largest resident set [pages].
    pub max_rss: u64,
    /// Start time [ns].
    pub start_ns: u64,
    /// Exit time [ns], 0 if still running.
    pub exit_ns: u64,
}

/// One task's memory and identity (task_struct + mm_struct, reduced).
#[derive(Debug, Clone)]
pub struct TaskStruct {
    /// Process id.
    pub pid: u32,
    /// Command name.
    pub comm: String,
    /// CPU it last ran on.
    pub cpu: usize,
    /// Whether it is a kernel thread (never an OOM victim).
    pub kthread: bool,
    /// Still alive.
    pub alive: bool,
    /// Killed by the OOM killer.
    pub oom_killed: bool,
    /// Resident anonymous pages, in fault order.
    pub anon: Vec<Pfn>,
    /// Highest number of virtual pages ever mapped (sizes the page tables).
    pub vpages: u64,
    /// Page-table pages.
    pub pgtables: Vec<Pfn>,
    /// Explicit allocations held: (pfn, order).
    pub held: VecDeque<(Pfn, u8)>,
    /// Unmovable slab objects held: (cache, slab id), oldest first.
    pub slab_held: VecDeque<(u16, u32)>,
    /// Kernel stack pages.
    pub kstack: Vec<Pfn>,
    /// Statistics.
    pub stats: TaskStats,
}

/// Outcome of an allocation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocResult {
    /// The first frame of the block.
    Page(Pfn),
    /// The request failed (costly order, no reclaimable memory, or no OOM victim).
    Failed,
    /// The requesting task was chosen by the OOM killer and must exit.
    Killed,
}

/// The whole simulated kernel state.
#[derive(Debug)]
pub struct Kernel {
    /// The page allocator.
    pub mm: Mm,
    /// Slab caches.
    pub slab: Slab,
    /// Every task ever created, by id.
    pub tasks: Vec<TaskStruct>,
    /// Tasks killed by the OOM killer that the scheduler has not yet removed.
    pub oom_victims: Vec<TaskId>,
    /// OOM kills that found no victim (the kernel would panic).
    pub oom_no_victim: u64,
    /// Wait queues kernel code asked to wake (wake_up_all) during the current step.
    pub pending_wakeups: Vec<usize>,
}

/// Page-table pages needed to map `v` virtual pages on x86-64 (PTE, PMD, PUD levels plus the PGD).
pub fn pgtable_pages(v: u64) -> u64 {
    if v == 0 {
        return 0;
    }
    1 + v.div_ceil(512) + v.div_ceil(512 * 512) + v.div_ceil(512 * 512 * 512)
}

impl Kernel {
    /// Boots the kernel on a machine.
    pub fn boot(machine: &Machine, kcfg: &KernelCfg, cost: &Cost) -> Kernel {
        Kernel {
            mm: Mm::boot(machine, kcfg, cost),
            slab: Slab::default(),
            tasks: Vec::new(),
            oom_victims: Vec::new(),
            oom_no_victim: 0,
            pending_wakeups: Vec::new(),
        }
    }

    /// Reserves a task record; the task holds nothing and is not alive until
    /// [`Kernel::copy_process`] (the scheduler and the kernel share task ids).
    pub fn alloc_task_struct(&mut self, comm: &str, cpu: usize, kthread: bool) -> TaskId {
        let tid = self.tasks.len() as TaskId;
        self.tasks.push(TaskStruct {
            pid: tid + 100,
            comm: comm.to_string(),
            cpu,
            kthread,
            alive: false,
            oom_killed: false,
            anon: Vec::new(),
            vpages: 0,
            pgtables: Vec::new(),
            held: VecDeque::new(),
            slab_held: VecDeque::new(),
            kstack: Vec::new(),
            stats: TaskStats::default(),
        });
        tid
    }

    /// Gives a reserved task its kernel stack and makes it alive (copy_process,
    /// alloc_thread_stack_node); false if the stack cannot be allocated.
    pub fn copy_process(&mut self, tid: TaskId, now: u64) -> bool {
        let t = tid as usize;
        self.tasks[t].alive = true;
        self.tasks[t].stats.start_ns = now;
        self.mm.acc += self.mm.cost.fork;
        for _ in 0..self.mm.kcfg.kernel_stack_pages {
            match self.alloc_pages(GFP_KERNEL, 0, tid) {
                AllocResult::Page(p) => {
                    self.mm.map[p as usize].set_kind(PageKind::KStack);
                    self.mm.map[p as usize].owner = tid;
                    self.tasks[t].kstack.push(p);
                    let nid = self.mm.pfn_to_nid(p);
                    self.mm
                        .mod_node_page_state(nid, NodeStat::NR_KERNEL_STACK, 4);
                }
                _ => {
                    self.exit_task(tid, now);
                    return false;
                }
            }
        }
        true
    }

    /// Creates a task with its kernel stack at once; None if the stack cannot be allocated.
    pub fn fork(&mut self, comm: &str, cpu: usize, kthread: bool, now: u64) -> Option<TaskId> {
        let tid = self.alloc_task_struct(comm, cpu, kthread);
        self.copy_process(tid, now).then_some(tid)
    }

    /// Frees a page-table, stack, anonymous or held block and fixes the counters.
    fn release_block(&mut self, pfn: Pfn, order: usize, cpu: usize) {
        let kind = self.mm.map[pfn as usize].kind();
        let nid = self.mm.pfn_to_nid(pfn);
        match kind {
            PageKind::Anon => self
                .mm
                .mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, -1),
            PageKind::PgTable => {
                self.mm
                    .mod_node_page_state(nid, NodeStat::NR_PAGE_TABLE_PAGES, -1)
            }
            PageKind::KStack => self
                .mm
                .mod_node_page_state(nid, NodeStat::NR_KERNEL_STACK, -4),
            _ => {}
        }
        self.mm.free_pages(pfn, order, cpu);
    }

    /// Releases everything a task holds and marks it dead (do_exit → exit_mm, free_task).
    pub fn exit_task(&mut self, tid: TaskId, now: u64) {
        let t = tid as usize;
        if !self.tasks[t].alive {
            return;
        }
        let cpu = self.tasks[t].cpu;
        let anon = std::mem::take(&mut self.tasks[t].anon);
        for p in anon {
            self.release_block(p, 0, cpu);
        }
        let held = std::mem::take(&mut self.tasks[t].held);
        for (p, o) in held {
            self.release_block(p, o as usize, cpu);
        }
        let objs = std::mem::take(&mut self.tasks[t].slab_held);
        for (c, id) in objs {
            self.kmem_cache_free(c as usize, id, cpu);
        }
        let pt = std::mem::take(&mut self.tasks[t].pgtables);
        for p in pt {
            self.release_block(p, 0, cpu);
        }
        let ks = std::mem::take(&mut self.tasks[t].kstack);
        for p in ks {
            self.release_block(p, 0, cpu);
        }
        let task = &mut self.tasks[t];
        task.alive = false;
        task.stats.exit_ns = now;
    }

    /// Handles a user page fault on a not-present anonymous page (do_anonymous_page):
    /// page tables as needed, then a zeroed GFP_HIGHUSER_MOVABLE page.
    pub fn do_anonymous_page(&mut self, tid: TaskId) -> AllocResult {
        let t = tid as usize;
        let want_v = (self.tasks[t].anon.len() as u64 + 1).max(self.tasks[t].vpages);
        while (self.tasks[t].pgtables.len() as u64) < pgtable_pages(want_v) {
            match self.alloc_pages(GFP_KERNEL, 0, tid) {
                AllocResult::Page(p) => {
                    self.mm.map[p as usize].set_kind(PageKind::PgTable);
                    self.mm.map[p as usize].owner = tid;
                    let nid = self.mm.pfn_to_nid(p);
                    self.mm
                        .mod_node_page_state(nid, NodeStat::NR_PAGE_TABLE_PAGES, 1);
                    self.tasks[t].pgtables.push(p);
                }
                other => return other,
            }
        }
        self.tasks[t].vpages = want_v;
        self.mm.acc += self.mm.cost.page_fault;
        self.mm.count_vm_events(Event::PGFAULT, 1);
        self.tasks[t].stats.faults += 1;
        let r = self.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, tid);
        if let AllocResult::Page(p) = r {
            self.mm.acc += self.mm.cost.clear_page;
            let page = &mut self.mm.map[p as usize];
            page.set_kind(PageKind::Anon);
            page.owner = tid;
            let nid = self.mm.pfn_to_nid(p);
            self.mm.mod_node_page_state(nid, NodeStat::NR_ANON_PAGES, 1);
            let task = &mut self.tasks[t];
            task.anon.push(p);
            task.stats.max_rss = task.stats.max_rss.max(task.anon.len() as u64);
        }
        r
    }

    /// Unmaps the task's most recently faulted `n` anonymous pages (munmap → zap_pte_range).
    pub fn unmap_anon(&mut self, tid: TaskId, n: u64) -> u64 {
        let t = tid as usize;
        let cpu = self.tasks[t].cpu;
        let mut done = 0;
        while done < n {
            let Some(p) = self.tasks[t].anon.pop() else {
                break;
            };
            self.release_block(p, 0, cpu);
            done += 1;
        }
        done
    }

    /// Allocates a block the task holds until it frees it (an explicit `alloc` operation).
    pub fn alloc_held(&mut self, tid: TaskId, gfp: Gfp, order: usize) -> AllocResult {
        let r = self.alloc_pages(gfp, order, tid);
        if let AllocResult::Page(p) = r {
            self.mm.map[p as usize].set_kind(PageKind::Held);
            self.mm.map[p as usize].owner = tid;
            self.tasks[tid as usize].held.push_back((p, order as u8));
        }
        r
    }

    /// Frees one held block.
    pub fn free_held(&mut self, tid: TaskId, idx: usize) -> bool {
        let t = tid as usize;
        let Some((p, o)) = self.tasks[t].held.remove(idx) else {
            return false;
        };
        let cpu = self.tasks[t].cpu;
        self.release_block(p, o as usize, cpu);
        true
    }

    /// Resident pages a task would free if killed (the oom_badness points).
    pub fn task_footprint(&self, tid: TaskId) -> u64 {
        let t = &self.tasks[tid as usize];
        t.anon.len() as u64
            + t.pgtables.len() as u64
            + t.held.iter().map(|&(_, o)| 1u64 << o).sum::<u64>()
    }

    /// Checks that per-node counters agree with what tasks hold (expensive).
    pub fn check_accounting(&self) -> Result<(), String> {
        self.mm.check_invariants()?;
        let anon: u64 = self.tasks.iter().map(|t| t.anon.len() as u64).sum();
        let pt: u64 = self.tasks.iter().map(|t| t.pgtables.len() as u64).sum();
        let node_sum = |item: NodeStat| -> i64 {
            self.mm.nodes.iter().map(|n| n.vm_stat[item as usize]).sum()
        };
        if node_sum(NodeStat::NR_ANON_PAGES) != anon as i64 {
            return Err(format!(
                "nr_anon_pages {} but tasks hold {anon}",
                node_sum(NodeStat::NR_ANON_PAGES)
            ));
        }
        if node_sum(NodeStat::NR_PAGE_TABLE_PAGES) != pt as i64 {
            return Err("nr_page_table_pages disagrees with the tasks' page tables".into());
        }
        let slab_pages: u64 = self.slab.caches.iter().map(|c| c.nr_slabs << c.order).sum();
        let counted =
            node_sum(NodeStat::NR_SLAB_RECLAIMABLE) + node_sum(NodeStat::NR_SLAB_UNRECLAIMABLE);
        if counted != slab_pages as i64 {
            return Err(format!(
                "slab counters {counted} but caches hold {slab_pages} pages"
            ));
        }
        Ok(())
    }
}
